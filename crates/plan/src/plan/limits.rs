//! The plan's caps on what a backend may send the host:
//! `[host.worker_limits]` (an isolated module's worker) and
//! `[host.mcp_limits]` (a mounted MCP server's tool list). The plan owns
//! their keys and defaults; the backends enforce them.

use serde::Deserialize;

/// `[host.worker_limits]`: what one isolated module's worker may send.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkerLimits {
    /// The longest frame (one protocol line), in bytes. A result larger
    /// than this cannot cross; the default matches the MCP transports' own
    /// cap on one message.
    #[serde(default = "default_max_frame_bytes")]
    pub max_frame_bytes: usize,
    /// Frames (progress and log lines) one call may send.
    #[serde(default = "default_max_frames_per_call")]
    pub max_frames_per_call: u64,
    /// Frames of any kind in one second.
    #[serde(default = "default_max_frames_per_second")]
    pub max_frames_per_second: u64,
    /// Log lines one call may send.
    #[serde(default = "default_max_log_lines_per_call")]
    pub max_log_lines_per_call: u64,
    /// Log lines in one second.
    #[serde(default = "default_max_log_lines_per_second")]
    pub max_log_lines_per_second: u64,
    /// Events emitted in one second.
    #[serde(default = "default_max_events_per_second")]
    pub max_events_per_second: u64,
    /// Distinct event names the module may contribute, over the host's
    /// life (the host keeps every name it is given).
    #[serde(default = "default_max_event_names")]
    pub max_event_names: u64,
    /// The longest event name it may contribute, in bytes.
    #[serde(default = "default_max_event_name_bytes")]
    pub max_event_name_bytes: u64,
}

impl Default for WorkerLimits {
    fn default() -> Self {
        WorkerLimits {
            max_frame_bytes: default_max_frame_bytes(),
            max_frames_per_call: default_max_frames_per_call(),
            max_frames_per_second: default_max_frames_per_second(),
            max_log_lines_per_call: default_max_log_lines_per_call(),
            max_log_lines_per_second: default_max_log_lines_per_second(),
            max_events_per_second: default_max_events_per_second(),
            max_event_names: default_max_event_names(),
            max_event_name_bytes: default_max_event_name_bytes(),
        }
    }
}

fn default_max_frame_bytes() -> usize {
    16 * 1024 * 1024
}
fn default_max_frames_per_call() -> u64 {
    200_000
}
fn default_max_frames_per_second() -> u64 {
    50_000
}
fn default_max_log_lines_per_call() -> u64 {
    50_000
}
fn default_max_log_lines_per_second() -> u64 {
    5_000
}
fn default_max_events_per_second() -> u64 {
    5_000
}
fn default_max_event_names() -> u64 {
    1_000
}
fn default_max_event_name_bytes() -> u64 {
    256
}

/// `[host.mcp_limits]`: what one mounted server's tool list may be.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpLimits {
    /// Tools one server may offer.
    #[serde(default = "default_max_tools")]
    pub max_tools: usize,
    /// Pages one `tools/list` walk may take.
    #[serde(default = "default_max_list_pages")]
    pub max_list_pages: u64,
    /// Bytes of tool definitions (as JSON) one walk may bring.
    #[serde(default = "default_max_list_bytes")]
    pub max_list_bytes: u64,
}

impl Default for McpLimits {
    fn default() -> Self {
        McpLimits {
            max_tools: default_max_tools(),
            max_list_pages: default_max_list_pages(),
            max_list_bytes: default_max_list_bytes(),
        }
    }
}

fn default_max_tools() -> usize {
    1_000
}
fn default_max_list_pages() -> u64 {
    100
}
fn default_max_list_bytes() -> u64 {
    8 * 1024 * 1024
}
