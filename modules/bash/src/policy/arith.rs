//! Reads an arithmetic expression (`$((…))`, `((…))`, `let`, `[[ a -eq b ]]`,
//! a subscript or a substring offset) for the variables it evaluates.
//!
//! Bash evaluates a variable named in arithmetic as an expression in turn,
//! and an array subscript inside that value runs command substitutions:
//! with `x='a[$(rm y)]'`, `echo $((x))` runs `rm y`. So the policy needs to
//! know which variables an expression reads, and which it only assigns
//! numbers to.

/// What an expression reads and writes.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Refs {
    /// Variables whose values are evaluated (`x`, `$x`, `${x}`); positional
    /// and other run-time parameters as `$1`, `$@`, `$-`.
    pub reads: Vec<String>,
    /// Variables given a number (`i=0`, `i++`, `n+=2`).
    pub writes: Vec<String>,
    /// The expression evaluates text the policy cannot see (a command's output).
    pub hidden: Option<String>,
}

/// Scans `expr` as bash would evaluate it.
pub fn refs(expr: &str) -> Refs {
    let mut out = Refs::default();
    scan(expr, &mut out);
    out
}

fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

fn scan(expr: &str, out: &mut Refs) {
    let b = expr.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'`' || (c == b'$' && b.get(i + 1) == Some(&b'(') && b.get(i + 2) != Some(&b'(')) {
            out.hidden = Some(format!(
                "the arithmetic expression `{}` evaluates the output of a command",
                expr.trim()
            ));
            i += 1;
        } else if c == b'$' && b.get(i + 1) == Some(&b'(') {
            i += 3;
        } else if c == b'$' && b.get(i + 1) == Some(&b'{') {
            let start = i + 2;
            let end = closing_brace(b, start);
            let inner = &expr[start..end];
            parameter(inner, out);
            i = end + 1;
        } else if c == b'$' {
            match b.get(i + 1) {
                Some(&n) if is_ident_start(n) => {
                    let end = ident_end(b, i + 1);
                    out.reads.push(expr[i + 1..end].to_string());
                    i = end;
                }
                Some(&n) if n.is_ascii_digit() || matches!(n, b'@' | b'*' | b'-') => {
                    out.reads.push(format!("${}", n as char));
                    i += 2;
                }
                // `$#`, `$?`, `$$`, `$!` are numbers.
                _ => i += 2,
            }
        } else if c.is_ascii_digit() {
            while i < b.len() && (is_ident(b[i]) || matches!(b[i], b'#' | b'@')) {
                i += 1;
            }
        } else if is_ident_start(c) {
            let end = ident_end(b, i);
            let name = &expr[i..end];
            let pre = expr[..i].trim_end();
            let post = skip_subscript(b, end);
            let post = expr[post..].trim_start();
            let incdec = pre.ends_with("++")
                || pre.ends_with("--")
                || post.starts_with("++")
                || post.starts_with("--");
            let plain = post.starts_with('=') && !post.starts_with("==");
            let compound = ["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]
                .iter()
                .any(|op| post.starts_with(op));
            if incdec || plain || compound {
                out.writes.push(name.to_string());
            }
            if !plain {
                out.reads.push(name.to_string());
            }
            i = end;
        } else {
            i += 1;
        }
    }
}

/// `${…}` inside arithmetic: its value is evaluated, except a length.
fn parameter(inner: &str, out: &mut Refs) {
    let b = inner.as_bytes();
    if let Some(rest) = inner.strip_prefix('#') {
        if !rest.is_empty() && rest.bytes().all(is_ident) {
            return;
        }
    }
    match b.first() {
        Some(&c) if is_ident_start(c) => {
            let end = ident_end(b, 0);
            out.reads.push(inner[..end].to_string());
            scan(&inner[end..], out);
        }
        Some(&c) if c.is_ascii_digit() || matches!(c, b'@' | b'*' | b'-' | b'!') => {
            out.reads.push(format!("${}", c as char));
            scan(&inner[1..], out);
        }
        _ => scan(inner, out),
    }
}

fn ident_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && is_ident(b[i]) {
        i += 1;
    }
    i
}

fn closing_brace(b: &[u8], mut i: usize) -> usize {
    let mut depth = 1;
    while i < b.len() {
        match b[i] {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i;
                }
            }
            _ => {}
        }
        i += 1;
    }
    b.len()
}

/// Past a `[…]` subscript right after a name, if there is one.
fn skip_subscript(b: &[u8], i: usize) -> usize {
    if b.get(i) != Some(&b'[') {
        return i;
    }
    let mut depth = 0;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'[' => depth += 1,
            b']' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            _ => {}
        }
        j += 1;
    }
    b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(e: &str) -> Vec<String> {
        refs(e).reads
    }

    #[test]
    fn reads_and_writes() {
        assert_eq!(reads("x + $y * ${z}"), ["x", "y", "z"]);
        assert_eq!(reads("16#ff + 0x1F + 10"), Vec::<String>::new());
        assert_eq!(reads("${#s} + $# + $?"), Vec::<String>::new());
        assert_eq!(reads("$1 + $@"), ["$1", "$@"]);
        assert_eq!(reads("a[i] + 1"), ["a", "i"]);
        let r = refs("i=0");
        assert_eq!((r.reads, r.writes), (vec![], vec!["i".to_string()]));
        let r = refs("i++, j += 2, --k, n == 1");
        assert_eq!(r.writes, ["i", "j", "k"]);
        assert_eq!(r.reads, ["i", "j", "k", "n"]);
        assert!(refs("$(cat f) + 1").hidden.is_some());
        assert!(refs("`cat f`").hidden.is_some());
        assert!(refs("$((1 + 2)) * 3").hidden.is_none());
    }
}
