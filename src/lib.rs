//! THEIA: a bit-exact emulator of the 2010 THEIA ray-casting GPU.

pub mod core;
pub mod isa;
