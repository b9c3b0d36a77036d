//! What a line of stdin is, before rmcp sees it, so that every request gets
//! exactly one answer: rmcp answers what it can parse (as
//! [`ClientJsonRpcMessage`], the type it parses with), and drops or answers
//! without an id whatever it cannot, which leaves a client waiting forever.
//! So a line rmcp could not parse is answered here, with the request's id
//! whenever one can be read from it (invalid UTF-8, trailing bytes, a line
//! over the limit, a line that is not a JSON-RPC message), and a
//! notification never gets an answer.

use rmcp::model::{ClientJsonRpcMessage, ErrorData, RequestId};
use serde_json::value::RawValue;
use serde_json::Value;

/// The longest line served: rmcp's own limit for one stdio message.
pub const MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// How much of an oversize line is kept to find its id.
pub const PREFIX: usize = 64 * 1024;

/// A line's fate.
pub enum Verdict {
    /// rmcp can parse it: a request (with its id), or anything else.
    Rmcp(Option<RequestId>),
    /// Answered here with this error (and id, when one could be read).
    Answer(ErrorData, Option<RequestId>),
    /// Dropped silently: a notification rmcp cannot parse, a blank line.
    Drop,
}

/// Judges one complete line (newline, CR and BOM already trimmed).
pub fn judge(line: &[u8]) -> Verdict {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Drop;
    }
    match serde_json::from_slice::<ClientJsonRpcMessage>(line) {
        Ok(ClientJsonRpcMessage::Request(request)) => return Verdict::Rmcp(Some(request.id)),
        Ok(_) => return Verdict::Rmcp(None),
        Err(_) => {}
    }
    let Ok(text) = std::str::from_utf8(line) else {
        let at = std::str::from_utf8(line).err().map_or(0, |e| e.valid_up_to());
        let lossy = String::from_utf8_lossy(line);
        return answer_unless_notification(
            &lossy,
            ErrorData::parse_error(format!("Parse error: invalid UTF-8 at byte {at}"), None),
        );
    };
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match values.next() {
        Some(Ok(first)) => {
            let end = values.byte_offset();
            if !text[end..].trim().is_empty() {
                let error = ErrorData::parse_error(
                    format!("Parse error: unexpected bytes after the message at byte {end}"),
                    None,
                );
                return match request_id(&first) {
                    Some(id) => Verdict::Answer(error, Some(id)),
                    None if is_notification(&first) => Verdict::Drop,
                    None => Verdict::Answer(error, None),
                };
            }
            let error = ErrorData::invalid_request(
                "Invalid request: not a JSON-RPC 2.0 message this server understands \
                 (check jsonrpc, id, method and params)",
                None,
            );
            match request_id(&first) {
                Some(id) => Verdict::Answer(error, Some(id)),
                None if is_notification(&first) => Verdict::Drop,
                None => Verdict::Answer(error, None),
            }
        }
        Some(Err(e)) => {
            answer_unless_notification(text, ErrorData::parse_error(format!("Parse error: {e}"), None))
        }
        None => Verdict::Drop,
    }
}

/// A line over [`MAX_LINE`]; `prefix` is its start.
pub fn oversize(prefix: &[u8], length: usize) -> Verdict {
    let lossy = String::from_utf8_lossy(prefix);
    answer_unless_notification(
        &lossy,
        ErrorData::invalid_request(
            format!(
                "Invalid request: the message is {length} bytes, over this server's limit of {MAX_LINE} bytes \
                 per line; send less (e.g. read a file in parts)"
            ),
            None,
        ),
    )
}

/// Answers with the id found at the top level of the text, drops a
/// message that is plainly a notification, else answers with no id.
fn answer_unless_notification(text: &str, error: ErrorData) -> Verdict {
    let fields = top_level(text);
    match fields.id {
        Some(id) => Verdict::Answer(error, Some(id)),
        None if fields.method && fields.complete => Verdict::Drop,
        None => Verdict::Answer(error, None),
    }
}

fn request_id(value: &Value) -> Option<RequestId> {
    let id = value.as_object()?.get("id")?;
    serde_json::from_value(id.clone()).ok()
}

fn is_notification(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|o| o.contains_key("method") && !o.contains_key("id"))
}

/// What the top level of a (possibly broken or cut) JSON object shows.
#[derive(Default)]
struct TopLevel {
    id: Option<RequestId>,
    method: bool,
    /// Every top-level member was read (so a missing id is really missing).
    complete: bool,
}

/// Reads the members of a top-level object one by one, skipping each value
/// whole, as far as the text allows.
fn top_level(text: &str) -> TopLevel {
    let mut found = TopLevel::default();
    let mut rest = text.trim_start();
    let Some(after) = rest.strip_prefix('{') else {
        return found;
    };
    rest = after;
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('}') {
            found.complete = after.trim().is_empty();
            return found;
        }
        let mut keys = serde_json::Deserializer::from_str(rest).into_iter::<String>();
        let Some(Ok(key)) = keys.next() else { return found };
        rest = rest[keys.byte_offset()..].trim_start();
        let Some(after) = rest.strip_prefix(':') else {
            return found;
        };
        rest = after.trim_start();
        let mut values = serde_json::Deserializer::from_str(rest).into_iter::<&RawValue>();
        let Some(Ok(value)) = values.next() else {
            return found;
        };
        match key.as_str() {
            "id" => found.id = serde_json::from_str(value.get()).ok(),
            "method" => found.method = true,
            _ => {}
        }
        rest = rest[values.byte_offset()..].trim_start();
        match rest.strip_prefix(',') {
            Some(after) => rest = after,
            None => {
                found.complete = rest.strip_prefix('}').is_some_and(|r| r.trim().is_empty());
                return found;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_of(verdict: Verdict) -> Option<Option<RequestId>> {
        match verdict {
            Verdict::Answer(_, id) => Some(id),
            _ => None,
        }
    }

    fn num(n: i64) -> Option<Option<RequestId>> {
        Some(Some(RequestId::Number(n)))
    }

    #[test]
    fn lines_rmcp_cannot_parse_are_answered_with_their_id() {
        let bad_utf8 = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}";
        assert_eq!(id_of(judge(bad_utf8)), num(1));
        assert_eq!(
            id_of(judge(br#"{"jsonrpc":"2.0","id":2,"method":"ping"} trailing"#)),
            num(2)
        );
        assert_eq!(
            id_of(judge(
                br#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":7}"#
            )),
            Some(Some(RequestId::String("s".into())))
        );
        assert_eq!(
            id_of(judge(br#"{"jsonrpc":"1.0","id":3,"method":"ping"}"#)),
            num(3)
        );
        assert_eq!(id_of(judge(b"garbage")), Some(None));
        assert_eq!(
            id_of(judge(br#"[{"jsonrpc":"2.0","id":4,"method":"ping"}]"#)),
            Some(None)
        );
        assert_eq!(
            id_of(judge(br#"{"jsonrpc":"2.0","id":5,"method":"ping","x":[1,{"#)),
            num(5)
        );
    }

    #[test]
    fn notifications_and_parsable_lines_are_not_answered_here() {
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","method":"notifications/x","params":7}"#),
            Verdict::Drop
        ));
        assert!(matches!(judge(b"  "), Verdict::Drop));
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#),
            Verdict::Rmcp(Some(_))
        ));
        assert!(matches!(
            judge(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Verdict::Rmcp(None)
        ));
    }

    #[test]
    fn oversize_lines_name_the_limit() {
        let prefix = br#"{"jsonrpc":"2.0","id":42,"method":"ping","pad":"yyyyyy"#;
        match oversize(prefix, 40 << 20) {
            Verdict::Answer(error, id) => {
                assert_eq!(id, Some(RequestId::Number(42)));
                assert!(error.message.contains(&MAX_LINE.to_string()), "{}", error.message);
            }
            _ => panic!("an oversize request is answered"),
        }
    }
}
