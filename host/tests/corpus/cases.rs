//! The call corpus: every case one entry. Each case runs through every
//! front door against every backend; the reference answer is the CLI's
//! `toolhost call` against the in-process module, and `status` pins what
//! that reference must say, so the corpus cannot agree with itself on a
//! wrong answer.
//!
//! Adding a case: one entry here (and, when a backend or front door cannot
//! by design answer it alike, one row in `differences.rs`).

use serde_json::{json, Value};

/// How a front door drives a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    /// One call.
    Call,
    /// One call of a tool the plan says to ask about, approved by the
    /// caller (`--approve TOOL` on the CLI, an accepted elicitation on MCP).
    Approve,
    /// The same, declined (no approval flag on the CLI, where off a
    /// terminal nobody can be asked; a declined elicitation on MCP).
    Decline,
    /// The same call twice with one idempotency key.
    Replay,
    /// One long call, cancelled once it runs (SIGINT on the CLI,
    /// `notifications/cancelled` on MCP).
    Cancel,
}

/// One entry of the corpus.
pub struct Case {
    /// Names the case in failures and in `differences.rs`.
    pub name: &'static str,
    /// The tool called (as the caller spells it).
    pub tool: &'static str,
    /// Its input.
    pub input: fn() -> Value,
    /// How it is driven.
    pub act: Act,
    /// The status the reference answer must have (the last call's).
    pub status: &'static str,
    /// JSON pointers (into the observation) whose values vary from run to
    /// run (how long a cancelled sleep slept); masked before comparing.
    pub volatile: &'static [&'static str],
}

/// A GitLab token the host's output guardrail knows by its format.
pub fn secret() -> String {
    format!("glpat-{}", "z9x8c7v6b5n4m3l2k1j0")
}

/// Every case, in the order they run.
pub const CASES: &[Case] = &[
    Case {
        name: "success",
        tool: "echo",
        input: || json!({"message": "hello", "data": {"n": 1, "list": [true, null, "x"]}}),
        act: Act::Call,
        status: "success",
        volatile: &[],
    },
    Case {
        name: "success_string_output",
        tool: "huge",
        input: || json!({"bytes": 100}),
        act: Act::Call,
        status: "success",
        volatile: &[],
    },
    Case {
        name: "invalid_input_missing_field",
        tool: "echo",
        input: || json!({}),
        act: Act::Call,
        status: "validation_error",
        volatile: &[],
    },
    Case {
        name: "invalid_input_wrong_type",
        tool: "echo",
        input: || json!({"message": 5, "extra": true}),
        act: Act::Call,
        status: "validation_error",
        volatile: &[],
    },
    Case {
        name: "invalid_input_by_the_tool",
        tool: "huge",
        input: || json!({"bytes": 1u64 << 40}),
        act: Act::Call,
        status: "validation_error",
        volatile: &[],
    },
    Case {
        name: "unknown_tool",
        tool: "ehco",
        input: || json!({"message": "hi"}),
        act: Act::Call,
        status: "error",
        volatile: &[],
    },
    Case {
        name: "denied_by_policy",
        tool: "launch",
        input: || json!({}),
        act: Act::Call,
        status: "policy_denied",
        volatile: &[],
    },
    Case {
        name: "denied_by_grant",
        tool: "vault_read",
        input: || json!({}),
        act: Act::Call,
        status: "policy_denied",
        volatile: &[],
    },
    Case {
        name: "deprecated_past_sunset",
        tool: "old_greet",
        input: || json!({"name": "ada"}),
        act: Act::Call,
        status: "policy_denied",
        volatile: &[],
    },
    Case {
        name: "tool_error_panic",
        tool: "panic",
        input: || json!({"message": "corpus panic"}),
        act: Act::Call,
        status: "error",
        volatile: &[],
    },
    Case {
        name: "invalid_output",
        tool: "shape",
        input: || json!({"valid": false}),
        act: Act::Call,
        status: "error",
        volatile: &[],
    },
    Case {
        name: "output_truncated",
        tool: "huge",
        input: || json!({"bytes": 20000}),
        act: Act::Call,
        status: "success",
        volatile: &[],
    },
    Case {
        name: "timeout",
        tool: "write_key",
        input: || json!({"key": "slow", "ms": 20000}),
        act: Act::Call,
        status: "timeout",
        // How long the call had run when its bound fired: wall time, at
        // least the limit (checked in `sane`), a few ms over under load.
        volatile: &["/results/0/details/after_ms", "/audit/1/timeout/after_ms"],
    },
    Case {
        name: "progress",
        tool: "sleep",
        input: || json!({"ms": 300}),
        act: Act::Call,
        status: "success",
        volatile: &["/results/0/output/slept_ms", "/audit/0/output_bytes"],
    },
    Case {
        name: "cancel",
        tool: "sleep",
        input: || json!({"ms": 60000}),
        act: Act::Cancel,
        status: "cancelled",
        volatile: &["/results/0/output/slept_ms", "/audit/0/output_bytes"],
    },
    Case {
        name: "approval_approved",
        tool: "greet",
        input: || json!({"name": "ada"}),
        act: Act::Approve,
        status: "success",
        volatile: &[],
    },
    Case {
        name: "approval_declined",
        tool: "greet",
        input: || json!({"name": "bob"}),
        act: Act::Decline,
        status: "approval_required",
        volatile: &[],
    },
    Case {
        name: "idempotent_replay",
        tool: "write_key",
        input: || json!({"key": "once", "ms": 1}),
        act: Act::Replay,
        status: "success",
        volatile: &[
            "/results/0/output/start_us",
            "/results/0/output/end_us",
            "/results/1/output/start_us",
            "/results/1/output/end_us",
        ],
    },
    Case {
        name: "redaction",
        tool: "echo",
        input: || json!({"message": format!("token {} here", secret())}),
        act: Act::Call,
        status: "success",
        volatile: &[],
    },
];
