//! Processes: starting a command under a subreaper and ending its whole tree.

pub mod caps;
pub mod devfs;
pub mod launch;
pub mod netbridge;
pub mod program;
pub mod raw;
pub mod reaper;
pub mod signals;
pub mod spawn;
pub mod spec;
pub mod stacks;
pub mod tree;

#[cfg(test)]
mod status_tests;
#[cfg(test)]
mod tests;
