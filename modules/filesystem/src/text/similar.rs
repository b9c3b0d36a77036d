//! Cheap string similarity for suggestions.

use std::collections::HashMap;

/// Levenshtein distance over chars (for short names).
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Dice coefficient of character bigrams, in 0..=1; linear time, so it can
/// score every line of a large file.
pub fn bigram_similarity(a: &str, b: &str) -> f64 {
    let grams = |s: &str| {
        let chars: Vec<char> = s.chars().collect();
        let mut map: HashMap<(char, char), usize> = HashMap::new();
        for w in chars.windows(2) {
            *map.entry((w[0], w[1])).or_default() += 1;
        }
        (map, chars.len().saturating_sub(1))
    };
    let (ga, na) = grams(a);
    let (gb, nb) = grams(b);
    if na + nb == 0 {
        return if a == b { 1.0 } else { 0.0 };
    }
    let common: usize = ga
        .iter()
        .map(|(g, n)| (*n).min(gb.get(g).copied().unwrap_or(0)))
        .sum();
    2.0 * common as f64 / (na + nb) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("mian.rs", "main.rs"), 2);
        assert_eq!(edit_distance("", "abc"), 3);
        assert!(bigram_similarity("let x = 1;", "let x = 2;") > 0.7);
        assert!(bigram_similarity("let x = 1;", "fn main() {}") < 0.3);
    }
}
