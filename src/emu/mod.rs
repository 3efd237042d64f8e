//! The emulator: THEIA's instruction set, one core, the machine of many cores, and how long
//! the hardware takes.
//!
//! An instruction is decoded once (`core::program`, from the opcode table of [`isa`]) and
//! executes in the interpreter of [`core`]; [`machine`] boots cores on partitions of the
//! frame, streams the scene's triangles into them and assembles their output memories.

pub mod core;
pub mod cpu;
pub mod isa;
#[cfg(target_arch = "x86_64")]
pub(crate) mod lanes;
pub mod machine;
pub mod timing;
