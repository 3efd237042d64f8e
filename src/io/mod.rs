//! Input and output: the scenes the machine renders and the images it writes.

pub mod image;
pub mod input;
pub mod scene;
