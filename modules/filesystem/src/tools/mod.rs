//! One file per tool.

pub mod edit_file;
pub mod glob;
pub mod grep;
mod guarded;
pub mod list_directory;
pub mod read_file;
pub mod write_file;

#[cfg(test)]
mod tests;
