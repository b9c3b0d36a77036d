//! The module's tools.

pub mod fetch;
pub mod search;
