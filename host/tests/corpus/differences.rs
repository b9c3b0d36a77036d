//! Where a front door or backend does not answer as the reference does
//! (`toolhost call` against the in-process modules), one row per reason:
//! which cases, where, which fields, what they hold instead, and why. The
//! comparison expects exactly those values there, so a row that stops
//! being true fails the test as surely as a new divergence does.
//!
//! Two kinds of row: `Kind::ByDesign` (the wire or the front door cannot
//! carry the reference's answer) and `Kind::Divergence` (it could, and
//! does not today: a known bug, kept visible here until it is fixed, when
//! its row must go).

use crate::backends::Backend;
use crate::doors::Door;

/// What a field holds instead of the reference's value.
pub enum Instead {
    /// This JSON.
    Is(&'static str),
    /// Nothing: the field is absent (no row needs it today).
    #[allow(dead_code)]
    Absent,
}

/// Why a row exists.
#[derive(Debug)]
pub enum Kind {
    /// The front door or the backend cannot by design answer alike.
    ByDesign,
    /// It could, and does not: a known divergence, to be fixed (none is
    /// known today).
    #[allow(dead_code)]
    Divergence,
}

/// One known difference.
pub struct Difference {
    /// The cases it applies to.
    pub cases: &'static [&'static str],
    /// The front doors it applies to (empty: every one).
    pub doors: &'static [Door],
    /// The backends it applies to (empty: every one).
    pub backends: &'static [Backend],
    /// JSON pointers into the observation (a `*` segment is every element
    /// of an array) and what each holds instead.
    pub changes: &'static [(&'static str, Instead)],
    /// By design, or a known divergence.
    pub kind: Kind,
    /// Why.
    pub reason: &'static str,
}

use Backend::Mounted;
use Door::{Batch, Call, Http, Stdio};
use Instead::Is;

const MCP: &[Door] = &[Stdio, Http];
const CLI: &[Door] = &[Call, Batch];

/// Every case whose tool resolves (not `unknown_tool`, nor
/// `denied_by_grant`, refused before resolution).
const RESOLVED: &[&str] = &[
    "success",
    "success_string_output",
    "invalid_input_missing_field",
    "invalid_input_wrong_type",
    "invalid_input_by_the_tool",
    "denied_by_policy",
    "deprecated_past_sunset",
    "tool_error_panic",
    "invalid_output",
    "output_truncated",
    "timeout",
    "progress",
    "cancel",
    "approval_approved",
    "approval_declined",
    "idempotent_replay",
    "redaction",
];

/// Cases whose tool declares the effect `compute`.
const COMPUTE: &[&str] = &[
    "success",
    "success_string_output",
    "invalid_input_missing_field",
    "invalid_input_wrong_type",
    "invalid_input_by_the_tool",
    "deprecated_past_sunset",
    "tool_error_panic",
    "invalid_output",
    "output_truncated",
    "progress",
    "cancel",
    "approval_approved",
    "approval_declined",
    "redaction",
];

/// Every known difference.
pub const DIFFERENCES: &[Difference] = &[
    Difference {
        cases: RESOLVED,
        doors: &[],
        backends: &[Mounted],
        changes: &[
            ("/audit/*/module", Is(r#""mcp:toolhost""#)),
            ("/audit/*/version", Is(r#""""#)),
        ],
        kind: Kind::ByDesign,
        reason: "the host records the source it called, the mounted server (named by its \
                 serverInfo); MCP's tools/list carries neither the module nor its version",
    },
    Difference {
        cases: COMPUTE,
        doors: &[],
        backends: &[Mounted],
        changes: &[("/audit/*/effect", Is(r#""read_only""#))],
        kind: Kind::ByDesign,
        reason: "a mounted tool's effect comes from its MCP annotations, and `compute` \
                 travels as readOnlyHint = true, which reads back as `read_only` \
                 (a plan restores it with [policy.tools.NAME] effect)",
    },
    Difference {
        cases: &["timeout", "idempotent_replay"],
        doors: &[],
        backends: &[Mounted],
        changes: &[("/audit/*/effect", Is(r#""irreversible""#))],
        kind: Kind::ByDesign,
        reason: "`internal_mutation` travels as readOnlyHint = false, destructiveHint = true \
                 (MCP's default for a tool that writes), which reads back as `irreversible`",
    },
    Difference {
        cases: &["progress"],
        doors: MCP,
        backends: &[],
        changes: &[
            ("/progress/reported", Is("true")),
            ("/progress/total", Is("300.0")),
        ],
        kind: Kind::ByDesign,
        reason: "MCP sends notifications/progress; the CLI shows progress only on a terminal",
    },
    Difference {
        cases: &["cancel"],
        doors: MCP,
        backends: &[],
        changes: &[
            ("/progress/reported", Is("true")),
            ("/progress/total", Is("60000.0")),
        ],
        kind: Kind::ByDesign,
        reason: "MCP sends notifications/progress; the CLI shows progress only on a terminal",
    },
    Difference {
        cases: &["cancel"],
        doors: MCP,
        backends: &[],
        changes: &[("/results", Is("[]"))],
        kind: Kind::ByDesign,
        reason: "MCP: a request cancelled by notifications/cancelled gets no response; \
                 the call's end is seen in the audit record only",
    },
    Difference {
        cases: &["cancel"],
        doors: CLI,
        backends: &[Mounted],
        changes: &[
            (
                "/results/0/message",
                Is(r#""the call was cancelled; MCP server 'mcp:toolhost' was sent notifications/cancelled""#),
            ),
            ("/results/0/output", Is("null")),
        ],
        kind: Kind::ByDesign,
        reason: "the mounted server does not answer a cancelled request (MCP's rule), so the \
                 tool's partial output never comes back; the message says what was done",
    },
    Difference {
        cases: &["approval_approved"],
        doors: MCP,
        backends: &[],
        changes: &[
            ("/audit/0/approved_by", Is(r#""approver""#)),
            ("/audit/0/approver", Is(r#""local""#)),
        ],
        kind: Kind::ByDesign,
        reason: "over MCP the client's user approves (elicitation), recorded as the caller's \
                 principal; the CLI approves by flag, which names no approver",
    },
    Difference {
        cases: &["approval_declined"],
        doors: MCP,
        backends: &[],
        changes: &[
            ("/results/0/status", Is(r#""policy_denied""#)),
            ("/results/0/code", Is(r#""denied""#)),
            ("/results/0/message", Is(r#""the user declined to run 'greet'""#)),
            ("/results/0/details/approval", Is(r#""declined""#)),
            ("/audit/0/status", Is(r#""policy_denied""#)),
            ("/audit/0/error_code", Is(r#""denied""#)),
            ("/audit/0/decision", Is(r#""deny""#)),
        ],
        kind: Kind::ByDesign,
        reason: "an MCP client with elicitation is asked and declines (policy_denied); the CLI \
                 off a terminal has nobody to ask (approval_required)",
    },
];
