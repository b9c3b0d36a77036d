//! A cancel token both sides can use: async code awaits it, a module's
//! blocking thread polls or waits on it through the call context, and code
//! that is neither (a watchdog, a call running on its caller's thread) hooks
//! a callback onto it.
//!
//! It lives in `toolhost-sync`, beside the hand-off slot, where loom checks
//! its races (`cargo xtask loom`); this is where the host's code names it.

pub use toolhost_sync::cancel::{CancelToken, OnCancel};
