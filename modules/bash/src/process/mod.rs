//! Processes: starting a command under a subreaper and ending its whole tree.

pub mod raw;
pub mod reaper;
pub mod signals;
pub mod spawn;
pub mod stacks;
pub mod tree;

#[cfg(test)]
mod tests;
