//! Placeholder.
pub struct Program;
pub struct Constants;
