//! The three tools.

pub mod bash;
pub mod kill;
pub mod output;
pub mod result;
pub mod schema;
