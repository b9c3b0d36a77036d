//! Every tool the first-party modules and the fixture mount lists schemas
//! that a strict JSON Schema 2020-12 validator accepts: valid against the
//! meta-schema, and only standard formats (an unknown format such as
//! schemars' `uint64` is an error when formats are asserted), through the
//! real `toolhost` binary and real cdylibs.

mod common;

use common::{module_file, Env};
use jsonschema::Draft;
use serde_json::Value;

#[test]
fn every_mounted_schema_is_strict_2020_12() {
    for module in ["filesystem", "bash", "web"] {
        module_file(&format!("toolhost_{module}"));
    }
    let env = Env::new(
        "[[tools]]\nmodule = \"fixture\"\n[[tools]]\nmodule = \"filesystem\"\n\
         [[tools]]\nmodule = \"bash\"\n[[tools]]\nmodule = \"web\"\n",
    );
    let out = env.run(&["list", "--json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).expect("list --json");
    assert!(listed.len() >= 12, "every module mounted: {listed:?}");
    let mut problems = Vec::new();
    for tool in &listed {
        let name = tool["name"].as_str().expect("name");
        let out = env.run(&["describe", name]);
        assert!(out.status.success(), "describe {name}");
        let spec: Value = serde_json::from_slice(&out.stdout).expect("describe is JSON");
        for key in ["input_schema", "output_schema"] {
            let schema = &spec[key];
            if schema.is_null() {
                continue;
            }
            if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
                problems.push(format!("{name}.{key}: not a 2020-12 schema: {e}"));
            }
            let strict = jsonschema::options()
                .with_draft(Draft::Draft202012)
                .should_validate_formats(true)
                .should_ignore_unknown_formats(false)
                .build(schema);
            if let Err(e) = strict {
                problems.push(format!("{name}.{key}: {e}"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}
