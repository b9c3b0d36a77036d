//! Output capture: bounded buffers, and the JSON a result
//! carries.

pub mod capture;
pub mod report;
pub mod ring;
