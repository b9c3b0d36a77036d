//! One file per tool.

pub mod delete_file;
pub mod edit_file;
pub mod glob;
pub mod grep;
mod guarded;
pub mod list_directory;
pub mod read_file;
pub mod undo_edit;
pub mod write_file;

#[cfg(test)]
mod tests;
