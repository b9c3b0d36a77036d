//! Networking plumbing: the runtime, the HTTP clients and the checked resolver.

pub mod client;
pub mod resolver;
pub mod runtime;
