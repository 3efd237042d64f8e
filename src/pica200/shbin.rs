//! SHBIN.
