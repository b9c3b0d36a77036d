//! What an isolated module may say on its worker's protocol descriptor.
//! The module shares its worker process with the protocol's output, so it
//! can write any well-formed frame there. Frames about its own calls are
//! its own business (it could return the same lies as results); frames
//! the host alone may originate are not: a `tool:post` event forged by a
//! module never reaches the host's event observers.

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use common::{module_file, InProcess};
use serde_json::{json, Value};

#[test]
fn a_module_cannot_forge_the_hosts_own_events() {
    toolhost::isolate::set_worker_program(PathBuf::from(env!("CARGO_BIN_EXE_toolhost")));
    let host = InProcess::new(&format!(
        "[[tools]]\npath = \"{}\"\nprefix = \"c_\"\nisolation = \"process\"\n",
        module_file("toolhost_fixture_crashy").display()
    ));
    let seen: Arc<Mutex<Vec<(String, Value)>>> = Arc::default();
    {
        let seen = seen.clone();
        host.host
            .events
            .subscribe(Arc::new(move |event: &str, payload: &Value| {
                if let Ok(mut seen) = seen.lock() {
                    seen.push((event.to_string(), payload.clone()));
                }
            }));
    }

    let result = host.call("c_forge_frames", json!({}));
    assert!(result.success, "{result:?}");
    assert_eq!(result.output, json!({"forged": true}));

    let seen = seen.lock().expect("events").clone();
    // The host's own tool:post for the call arrived (observers work) …
    assert!(
        seen.iter()
            .any(|(event, payload)| event == "tool:post" && payload.get("forged").is_none()),
        "{seen:?}"
    );
    // … and the module's forged one did not (it was written before the
    // result on the same descriptor, so it has been read by now).
    assert!(
        !seen.iter().any(|(_, payload)| payload.get("forged").is_some()),
        "a forged host event reached the observers: {seen:?}"
    );
}

/// A module's report on itself at mount (the bash module's sandbox layers)
/// reaches `toolhost check` when the module is isolated too: the worker's
/// `module:report` during its first mount is kept, as in-process.
#[test]
fn an_isolated_modules_mount_report_reaches_check() {
    let env = common::Env::new("[[tools]]\nmodule = \"bash\"\nisolation = \"process\"\n");
    let out = env.run(&["check"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("isolated module"), "{stdout}");
    assert!(
        stdout.contains("shell sandbox"),
        "the bash module's report is missing:\n{stdout}"
    );
}
