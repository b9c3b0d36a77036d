//! The module SDK: what a module author writes against.

pub(crate) mod adapter;
pub mod context;
pub mod coordinator;
pub mod error;
pub mod export;
pub mod granted;
pub mod guard;
mod panic_hook;
pub mod schema;
pub mod session;
pub mod structured;
pub mod testing;
pub mod tool;
