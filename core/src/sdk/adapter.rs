//! Turns a typed [`Tool`] into the ABI's [`FfiTool`]: derives the schema,
//! parses the call, guards against panics and serializes the result.

use std::path::PathBuf;
use std::time::Instant;

use abi_stable::std_types::{RStr, RString};
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::Context;
use super::context::Level;
use super::error::{MountError, ToolError};
use super::guard::guard;
use super::panic_hook::{take_pending, CallScope};
use super::session::SessionHooks;
use super::tool::Tool;
use crate::abi::{FfiContextRef, FfiTool};
use crate::wire::{codes, CallRequest, Metadata, Status, ToolResult};

/// A tool plus its spec, serialized once at registration.
pub(crate) struct ToolAdapter<T: Tool> {
    tool: T,
    name: String,
    spec_json: RString,
    session: SessionHooks,
}

impl<T: Tool> ToolAdapter<T> {
    pub(crate) fn new(tool: T, module_version: &str, session: SessionHooks) -> Result<Self, MountError> {
        let mut spec = guard(|| tool.spec())
            .map_err(|panic| MountError::new(format!("a tool's spec() panicked: {panic}")))?;
        if spec.input_schema.is_null() {
            spec.input_schema = input_schema::<T::Input>();
        }
        if spec.version.is_empty() {
            spec.version = module_version.to_string();
        }
        let spec_json = serde_json::to_string(&spec)
            .map_err(|e| MountError::new(format!("tool '{}': spec does not serialize: {e}", spec.name)))?;
        Ok(ToolAdapter {
            name: spec.name,
            tool,
            spec_json: RString::from(spec_json),
            session,
        })
    }
}

/// The JSON Schema of an input type, with standard formats only
/// ([`super::schema`]) and without the generator's `title` (it names a Rust
/// type, which means nothing to a model).
pub(crate) fn input_schema<I: schemars::JsonSchema>() -> Value {
    let mut schema = super::schema::standard_formats::<I>().to_value();
    if let Some(map) = schema.as_object_mut() {
        map.remove("title");
    }
    schema
}

impl<T: Tool> FfiTool for ToolAdapter<T> {
    fn spec(&self) -> RString {
        self.spec_json.clone()
    }

    fn execute(&self, call: RStr<'_>, ctx: FfiContextRef<'_>) -> RString {
        let mut result = run_call(&self.tool, &self.name, call.as_str(), ctx);
        // Not a call (no id): perhaps the host's session-end notification.
        if result.tool_call_id.is_empty() {
            if let Some(answer) = self.session.intercept(call.as_str()) {
                result = answer;
            }
        }
        let text = serde_json::to_string(&result).unwrap_or_else(|e| {
            json!({
                "tool_call_id": result.tool_call_id,
                "status": "error",
                "success": false,
                "output": null,
                "error": {"code": codes::INVALID_OUTPUT, "message": format!("the result does not serialize: {e}"), "retryable": false},
                "metadata": {"duration_ms": result.metadata.duration_ms},
            })
            .to_string()
        });
        RString::from(text)
    }
}

/// A [`CallRequest`] with the input parsed straight into the tool's type,
/// without an intermediate `Value`: the common case in one pass. Any failure
/// falls back to the two-step parse, which names the problem precisely.
#[derive(Deserialize)]
struct TypedCall<I> {
    tool_call_id: String,
    #[serde(rename = "name")]
    _name: String,
    input: I,
    #[serde(default, rename = "deadline_ms")]
    _deadline_ms: Option<u64>,
    working_dir: String,
    #[serde(default)]
    session_id: Option<String>,
    #[serde(default)]
    principal: Option<String>,
    #[serde(default)]
    context: crate::wire::RequestContext,
}

/// Parses, runs and packages one call. Never panics.
pub(crate) fn run_call<T: Tool>(tool: &T, name: &str, call_json: &str, ffi: FfiContextRef<'_>) -> ToolResult {
    let started = Instant::now();
    // Under the guard: the input type's Deserialize is the author's code.
    let typed = guard(|| serde_json::from_str::<TypedCall<T::Input>>(call_json).ok())
        .ok()
        .flatten();
    // The input: typed already, or the raw value to parse with a precise error.
    let (tool_call_id, working_dir, session_id, caller, input) = match typed {
        Some(call) => (
            call.tool_call_id,
            call.working_dir,
            call.session_id,
            (call.principal, call.context),
            Ok(call.input),
        ),
        None => match serde_json::from_str::<CallRequest>(call_json) {
            Ok(call) => (
                call.tool_call_id,
                call.working_dir,
                call.session_id,
                (call.principal, call.context),
                Err(call.input),
            ),
            Err(e) => {
                return ToolResult::failure(
                    "",
                    Status::Error,
                    codes::INTERNAL,
                    format!("the host sent a malformed call request to '{name}': {e}"),
                )
            }
        },
    };
    let ctx = Context::new(ffi, tool_call_id.clone(), PathBuf::from(working_dir))
        .with_session(session_id)
        .with_caller(caller.0, caller.1);
    let scope = CallScope::enter();
    let outcome = guard(|| {
        let parsed = match input {
            Ok(input) => Ok(input),
            Err(raw) => parse_input::<T::Input>(raw),
        };
        let result = parsed.and_then(|input| {
            let output = tool.execute(input, &ctx)?;
            serde_json::to_value(output).map_err(|e| {
                ToolError::new(
                    codes::INVALID_OUTPUT,
                    format!("the output does not serialize: {e}"),
                )
            })
        });
        (result, ctx.take_metadata())
    });
    let mut result =
        match outcome {
            Ok((Ok(output), extra)) => {
                let (output, structured) = super::structured::split(output);
                let mut r = ToolResult::success(&tool_call_id, output).with_content(ctx.take_content());
                r.structured = structured;
                r.metadata.extra = extra;
                r
            }
            Ok((Err(error), extra)) => {
                let mut r = from_error(&tool_call_id, error);
                r.metadata.extra = extra;
                r
            }
            Err(panic) => {
                // Logged through the call's context, so the line names the call.
                if let Some(line) = take_pending() {
                    ctx.log(Level::Warn, line);
                }
                ToolResult::failure(
            &tool_call_id,
            Status::Error,
            codes::PANICKED,
            format!("tool '{name}' panicked: {panic}. This is a bug in the tool; the host is still running."),
        )
            }
        };
    drop(scope);
    result.metadata = Metadata {
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        ..result.metadata
    };
    result
}

/// A failed result from a `ToolError`, keeping any partial output.
pub(crate) fn from_error(tool_call_id: &str, error: ToolError) -> ToolResult {
    let (status, info, output) = error.into_parts();
    ToolResult {
        tool_call_id: tool_call_id.to_string(),
        status,
        success: status == Status::Success,
        output: output.unwrap_or(Value::Null),
        error: Some(info),
        metadata: Metadata::default(),
        content: Vec::new(),
        structured: None,
    }
}

/// Deserializes the input, naming the offending field as a JSON pointer.
pub(crate) fn parse_input<I: serde::de::DeserializeOwned>(input: Value) -> Result<I, ToolError> {
    serde_path_to_error::deserialize(input).map_err(|e| {
        let pointer = json_pointer(e.path());
        let inner = e.into_inner().to_string();
        let location = if pointer.is_empty() {
            "the input".to_string()
        } else {
            pointer.clone()
        };
        ToolError::invalid_input(format!("invalid input at {location}: {inner}"))
            .with_details(json!({ "violations": [{ "pointer": pointer, "message": inner }] }))
    })
}

/// `serde_path_to_error`'s path as an RFC 6901 JSON pointer.
fn json_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        out.push('/');
        match segment {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;

    use super::*;
    use crate::abi::FfiContext_TO;
    use crate::sdk::testing::TestContext;
    use crate::wire::ToolSpec;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Input {
        n: u32,
        #[serde(default)]
        s: Option<String>,
    }

    struct Echo;

    impl Tool for Echo {
        type Input = Input;
        type Output = String;

        fn spec(&self) -> ToolSpec {
            ToolSpec::new("echo", "Echoes its input.")
        }

        fn execute(&self, input: Input, ctx: &Context<'_>) -> Result<String, ToolError> {
            Ok(format!(
                "{} {:?} in {}",
                input.n,
                input.s,
                ctx.working_dir().display()
            ))
        }
    }

    /// Adds an image and a text block, then fails when `n` is 0.
    struct Pictures;

    impl Tool for Pictures {
        type Input = Input;
        type Output = String;

        fn spec(&self) -> ToolSpec {
            ToolSpec::new("pictures", "Returns blocks.")
        }

        fn execute(&self, input: Input, ctx: &Context<'_>) -> Result<String, ToolError> {
            ctx.add_content(crate::ContentBlock::image("image/png", "AAAA"));
            ctx.add_content(crate::ContentBlock::text("caption"));
            if input.n == 0 {
                return Err(ToolError::invalid_input("n is 0"));
            }
            Ok("two blocks".into())
        }
    }

    #[test]
    fn content_blocks_travel_beside_the_output_only_on_success() {
        let ctx = TestContext::new();
        let r = ctx.call(&Pictures, json!({"n": 1}), Path::new("/w"));
        assert!(r.success, "{:?}", r.error);
        assert_eq!(r.output, json!("two blocks"));
        assert_eq!(
            r.content,
            vec![
                crate::ContentBlock::image("image/png", "AAAA"),
                crate::ContentBlock::text("caption")
            ]
        );
        let json = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(json["content"][0]["type"], "image", "{json}");
        let r = ctx.call(&Pictures, json!({"n": 0}), Path::new("/w"));
        assert!(!r.success);
        assert!(r.content.is_empty(), "{:?}", r.content);
        // A tool that adds none has no `content` on the wire.
        let r = ctx.call(&Echo, json!({"n": 1}), Path::new("/w"));
        let json = serde_json::to_value(&r).unwrap_or_default();
        assert!(json.get("content").is_none(), "{json}");
    }

    #[test]
    fn inputs_parse_in_one_pass_and_bad_ones_name_the_field() {
        let ctx = TestContext::new();
        let r = ctx.call(&Echo, json!({"n": 7, "s": "x"}), Path::new("/w"));
        assert!(r.success, "{:?}", r.error);
        assert_eq!(r.output, json!("7 Some(\"x\") in /w"));
        assert_eq!(r.tool_call_id, "test");
        for (bad, pointer) in [
            (json!({"n": "seven"}), "/n"),
            (json!({"n": 1, "s": 2}), "/s"),
            (json!({"n": 1, "extra": true}), "/extra"),
            (json!({}), ""),
            (json!(null), ""),
        ] {
            let r = ctx.call(&Echo, bad.clone(), Path::new("/w"));
            assert_eq!(r.status, Status::ValidationError, "{bad}");
            let error = r.error.unwrap_or_else(|| panic!("no error for {bad}"));
            let details = error.details.unwrap_or_default();
            assert_eq!(details["violations"][0]["pointer"], json!(pointer), "{bad}");
            assert_eq!(r.tool_call_id, "test");
        }
        // A request that is not a call at all.
        let ffi = FfiContext_TO::from_ptr(
            abi_stable::sabi_types::RRef::new(&ctx),
            abi_stable::sabi_trait::TD_Opaque,
        );
        let r = run_call(&Echo, "echo", r#"{"input": {"n": 1}}"#, ffi);
        assert_eq!(r.status, Status::Error);
        assert!(r.message().contains("malformed call request"), "{}", r.message());
    }
}
