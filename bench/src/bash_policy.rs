//! The bash command policy's own cost: one `check` of a typical one-line
//! command and of a 40-line script under a deny-list, in process (no spawn).
//! Compare with the `bash` rows: a spawn of `/bin/bash -c true` is about a
//! millisecond, so the policy should stay in the tens of microseconds.

use std::time::Duration;

use toolhost_bash::policy::CommandPolicy;

use crate::report::Bench;

const ONE_LINE: &str = "cd src && timeout -s KILL 30 cargo test --quiet 2>&1 | tail -n 20; echo \"exit: $?\"";

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    let denied: Vec<String> = ["rm", "sudo", "git push", "curl"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let policy = CommandPolicy::new(&[], &denied, true);
    let script: String = (0..40)
        .map(|i| {
            format!("for f in src/*.rs; do n=$((i + {i})); grep -c fn \"$f\" | xargs -n1 echo $n; done\n")
        })
        .collect();
    let script = format!("i=0\n{script}");
    anyhow::ensure!(policy.check(ONE_LINE).is_ok(), "one-line command refused");
    if let Err(d) = policy.check(&script) {
        anyhow::bail!("script refused: {}", d.0);
    }
    let n = b.n(2000);
    let one = b.time(50, n, || {
        std::hint::black_box(policy.check(std::hint::black_box(ONE_LINE)).is_ok());
    });
    b.row(
        "bash",
        "policy check: one-line command (deny-list, 4 rules)",
        one,
        Some(Duration::from_micros(100)),
    );
    let long = b.time(5, b.n(200), || {
        std::hint::black_box(policy.check(std::hint::black_box(&script)).is_ok());
    });
    b.row(
        "bash",
        "policy check: 40-line script (deny-list, 4 rules)",
        long,
        Some(Duration::from_millis(2)),
    );
    Ok(())
}
