//! A module's tool names follow MCP's rule too (1 to 128 of `A-Z a-z 0-9
//! _ - .`): the crashy fixture registers one more tool under a name the
//! plan gives, in a worker and in-process. A bad name fails the mount,
//! naming the rule, with the name escaped on stderr.

mod common;

use common::{module_file, Env};

fn plan(isolation: &str, name: &str) -> String {
    format!(
        "[[tools]]\npath = \"{}\"\nisolation = \"{isolation}\"\n[tools.config]\nextra_tool_name = {}\n",
        module_file("toolhost_fixture_crashy").display(),
        serde_json::to_string(name).expect("a TOML basic string is a JSON string")
    )
}

#[test]
fn a_module_tool_with_a_bad_name_fails_the_mount() {
    for isolation in ["process", "in-process"] {
        let env = Env::new(&plan(isolation, "echo_again"));
        let out = env.run(&["list", "--json"]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{isolation}: {}",
            String::from_utf8_lossy(&out.stderr)
        );

        for (name, shown) in [
            ("bad\u{1b}]0;pwned\u{7}name", r"bad\x1b]0;pwned\x07name"),
            ("two\nlines", r"two\nlines"),
            ("r\u{435}ad_file", "r\u{435}ad_file"),
        ] {
            env.set_plan(&plan(isolation, name));
            let out = env.run(&["list"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{isolation} {name:?}: {stderr}");
            assert!(
                stderr.contains(&format!("tool name '{shown}' is not a valid MCP tool name")),
                "{isolation} {name:?}: {stderr}"
            );
            assert!(
                !stderr.contains('\u{1b}'),
                "{isolation}: a raw escape: {stderr:?}"
            );
        }
    }
}
