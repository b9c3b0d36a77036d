//! Filesystem benchmarks: read_file of a 4 KiB file through the pipeline
//! in-process; grep of a fixed pattern over a generated tree of 2,000 files
//! (10 MB) against `rg` on the same tree in the same run; glob `**/*.rs` on
//! that tree; then the crash and memory figures of issue #20 ([`crash`]).

mod crash;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use toolhost::cancel::CancelToken;
use toolhost::context::CallContext;
use toolhost::host::Host;
use toolhost::pipeline::{Call, Pipeline};
use toolhost::plan::Plan;

use crate::report::Bench;

/// The fixed pattern: a word that appears on a few lines of ~1% of files.
const PATTERN: &str = "needle_[0-9]{3}";
const FILES: usize = 2_000;
const FILE_BYTES: usize = 5_000;

pub fn run(b: &mut Bench) -> anyhow::Result<()> {
    if !b.target_dir.join("libtoolhost_filesystem.so").exists() {
        anyhow::bail!(
            "libtoolhost_filesystem.so is not built in {}",
            b.target_dir.display()
        );
    }
    let dir = tempfile::tempdir()?;
    let work = dir.path().canonicalize()?;
    let tree = work.join("tree");
    generate_tree(&tree)?;
    let mut file4k = String::new();
    while file4k.len() < 4096 - 64 {
        file4k.push_str("a line of ordinary source text, about sixty bytes long ok\n");
    }
    std::fs::write(work.join("four_k.txt"), &file4k)?;

    let plan_file = work.join("plan.toml");
    std::fs::write(
        &plan_file,
        format!(
            "[host]\nworking_dir = {:?}\nmodule_path = [{:?}]\nmax_output_bytes = 10000000\n\n\
             [[tools]]\nmodule = \"filesystem\"\n[tools.config]\nrequire_read_before_write = false\n",
            work.display().to_string(),
            b.target_dir.display().to_string()
        ),
    )?;
    let host = Arc::new(Host::open(Plan::load(&plan_file)?)?);
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let pipeline = Pipeline::new(host.clone(), CancelToken::new());
    let call = |name: &str, input: Value| {
        let result = runtime.block_on(pipeline.call(Call {
            name: name.into(),
            input,
            ..Call::default()
        }));
        assert!(result.success, "{name} failed: {:?}", result.error);
        result
    };

    // The module's own cost: a direct FFI call, no pipeline.
    let tool = host
        .tool("read_file")
        .ok_or_else(|| anyhow::anyhow!("read_file is not mounted"))?;
    let request = json!({"tool_call_id": "b", "name": "read_file", "input": {"file_path": "four_k.txt"},
        "working_dir": work.display().to_string()})
    .to_string();
    let ctx = CallContext {
        cancel: CancelToken::new(),
        deadline: None,
        clock: None,
        progress: None,
        ask: None,
        module: "filesystem".into(),
        call_id: "b".into(),
        state: None,
    };
    let direct = b.time(200, b.n(5_000), || {
        std::hint::black_box(tool.execute_blocking(&request, &ctx));
    });
    b.row(
        "filesystem",
        "read_file 4 KiB: direct FFI call (module only)",
        direct,
        None,
    );

    let stats = b.time(200, b.n(5_000), || {
        std::hint::black_box(call("read_file", json!({"file_path": "four_k.txt"})));
    });
    b.row(
        "filesystem",
        "read_file 4 KiB through the pipeline (in-process)",
        stats,
        Some(Duration::from_micros(50)),
    );

    // write_file replacing a 4 KiB file (read-before-write off in this plan;
    // the written content's fingerprint is still taken for the next check).
    let write_input = json!({"file_path": "written_4k.txt", "content": file4k});
    let stats = b.time(100, b.n(2_000), || {
        std::hint::black_box(call("write_file", write_input.clone()));
    });
    b.row(
        "filesystem",
        "write_file 4 KiB (replace) through the pipeline (in-process)",
        stats,
        None,
    );

    let grep_input =
        json!({"pattern": PATTERN, "path": "tree", "output_mode": "content", "head_limit": 10000});
    let first = call("grep", grep_input.clone());
    let ours = b.time(3, b.n(30), || {
        std::hint::black_box(call("grep", grep_input.clone()));
    });
    let found = first.output.as_str().map_or(0, |s| s.lines().count());
    match ripgrep() {
        Some(rg) => {
            let rg_lines = rg_count(&rg, &tree)?;
            let base = b.time(3, b.n(30), || {
                let status = Command::new(&rg)
                    .args(["-n", "--no-heading", PATTERN])
                    .arg(&tree)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .expect("rg runs");
                assert!(status.success());
            });
            b.ratio_row(
                "filesystem",
                format!("grep {FILES} files / 10 MB, {found} lines (rg: {rg_lines}) vs rg process"),
                ours,
                base,
                1.5,
            );
        }
        None => b.row(
            "filesystem",
            format!("grep {FILES} files / 10 MB, {found} lines (rg unavailable: no ratio)"),
            ours,
            None,
        ),
    }

    // Issue #18: paging skips entries before formatting them, and a type
    // filter is checked per file; neither should cost more than the plain
    // search above.
    for (label, input) in [
        (
            "grep content page offset 10, head_limit 5 over the 2,000-file tree",
            json!({"pattern": PATTERN, "path": "tree", "output_mode": "content", "offset": 10, "head_limit": 5}),
        ),
        (
            "grep type=rust, files_with_matches, over the 2,000-file tree",
            json!({"pattern": PATTERN, "path": "tree", "type": "rust"}),
        ),
    ] {
        let stats = b.time(3, b.n(30), || {
            std::hint::black_box(call("grep", input.clone()));
        });
        b.row("filesystem", label, stats, None);
    }

    let glob_input = json!({"pattern": "**/*.rs", "path": "tree"});
    let stats = b.time(3, b.n(50), || {
        std::hint::black_box(call("glob", glob_input.clone()));
    });
    b.row(
        "filesystem",
        "glob **/*.rs over the 2,000-file tree",
        stats,
        Some(Duration::from_millis(20)),
    );
    host.shutdown();
    crash::run(b)
}

/// 2,000 files of ~5 KB in 40 folders two levels deep; half are `.rs`;
/// every 97th file holds the needle.
fn generate_tree(tree: &Path) -> anyhow::Result<()> {
    let words = [
        "alpha", "beta", "gamma", "delta", "fn", "let", "struct", "impl", "match", "return", "self", "value",
        "result", "error", "config", "path", "file", "tool", "host", "module",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for i in 0..FILES {
        let folder = tree.join(format!("d{:02}/e{}", i % 20, i % 2));
        std::fs::create_dir_all(&folder)?;
        let ext = if i % 2 == 0 { "rs" } else { "txt" };
        let mut text = String::with_capacity(FILE_BYTES + 100);
        let mut line = 0;
        while text.len() < FILE_BYTES {
            line += 1;
            for _ in 0..8 {
                text.push_str(words[(next() % words.len() as u64) as usize]);
                text.push(' ');
            }
            if i % 97 == 0 && line % 20 == 0 {
                text.push_str(&format!("needle_{:03}", next() % 1000));
            }
            text.push('\n');
        }
        std::fs::write(folder.join(format!("f{i:04}.{ext}")), text)?;
    }
    Ok(())
}

/// `rg`, installing Debian's ripgrep when missing and running as root.
fn ripgrep() -> Option<String> {
    let works = |bin: &str| {
        Command::new(bin)
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if works("rg") {
        return Some("rg".into());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .ok()
        .is_some_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root {
        eprintln!("bench: installing ripgrep for the grep baseline");
        let started = Instant::now();
        let _ = Command::new("apt-get")
            .args(["install", "-y", "ripgrep"])
            .stdout(Stdio::null())
            .status();
        if !works("rg") {
            let _ = Command::new("apt-get")
                .arg("update")
                .stdout(Stdio::null())
                .status();
            let _ = Command::new("apt-get")
                .args(["install", "-y", "ripgrep"])
                .stdout(Stdio::null())
                .status();
        }
        eprintln!("bench: ripgrep install took {:?}", started.elapsed());
    }
    works("rg").then(|| "rg".into())
}

/// How many lines `rg` finds (to show both searches found the same).
fn rg_count(rg: &str, tree: &Path) -> anyhow::Result<usize> {
    let out = Command::new(rg)
        .args(["-n", "--no-heading", PATTERN])
        .arg(tree)
        .output()?;
    Ok(String::from_utf8_lossy(&out.stdout).lines().count())
}
