//! Turns captured streams into the fields of a result: the text of each
//! (head and tail under one shared budget), byte counts, the cut and
//! encoding notes.

use serde_json::{json, Map, Value};

use super::ring::HeadTail;

/// Splits `budget` between two streams: each gets half, and what one does
/// not need goes to the other.
pub fn split_budget(a: usize, b: usize, budget: usize) -> (usize, usize) {
    if a + b <= budget {
        return (a, b);
    }
    let half = budget / 2;
    if a <= half {
        (a, budget - a)
    } else if b <= half {
        (budget - b, b)
    } else {
        (half, budget - half)
    }
}

/// Adds `stdout`, `stderr`, byte totals and the cut to `out`.
pub fn streams(out: &mut Map<String, Value>, stdout: &HeadTail, stderr: &HeadTail, budget: usize) {
    let (b_out, b_err) = split_budget(stdout.kept(), stderr.kept(), budget);
    let o = stdout.render(b_out);
    let e = stderr.render(b_err);
    out.insert("stdout".into(), json!(o.text));
    out.insert("stderr".into(), json!(e.text));
    out.insert("stdout_bytes".into(), json!(stdout.total()));
    out.insert("stderr_bytes".into(), json!(stderr.total()));
    let cut = o.cut + e.cut;
    out.insert("truncated".into(), json!(cut > 0));
    if cut > 0 {
        out.insert("cut_bytes".into(), json!(cut));
        out.insert(
            "cut_note".into(),
            json!(format!(
                "the middle {cut} bytes of the output were dropped (head and tail kept); no copy is kept. To \
                 keep everything, redirect the output to a file in the working folder (cmd > out.log 2>&1) \
                 and read it in parts"
            )),
        );
    }
    if o.lossy || e.lossy {
        out.insert(
            "encoding".into(),
            json!("the output is not valid UTF-8; invalid bytes are shown as U+FFFD"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_goes_where_it_is_needed() {
        assert_eq!(split_budget(10, 10, 100), (10, 10));
        assert_eq!(split_budget(500, 10, 100), (90, 10));
        assert_eq!(split_budget(10, 500, 100), (10, 90));
        assert_eq!(split_budget(500, 500, 100), (50, 50));
    }
}
