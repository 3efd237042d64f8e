//! Tools built on the emulator: one pixel traced instruction by instruction, pixel
//! inspection, frame benchmarks and the viewer's requests. Nothing here prints.

pub mod bench;
pub mod inspect;
pub mod trace;
pub mod viewer;
