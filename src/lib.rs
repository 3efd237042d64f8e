//! THEIA: a bit-exact emulator of the 2010 THEIA ray-casting GPU.
//!
//! - [`isa`]: opcodes, encoding, register map, assembler and disassembler (one table).
//! - [`core`]: one emulated core (register banks, ALU, control flow, forwarding) and the ROM.
//! - [`machine`]: the host, swap memory, texture and output memories, partitions on rayon.
//! - [`scene`]: loaders for the original `.mem` scenes and for OBJ scenes.
//! - [`r500`]: ATI R500 fragment programs: decoder, assembler, disassembler, interpreter.
//! - [`pica200`]: PICA200 (3DS) shader programs: assembler, disassembler, SHBIN, interpreter.
//! - [`stage`]: the pixel stage THEIA microcode, R500 and PICA200 programs implement.
//! - [`image`]: PPM/PNG output and image comparison.
//! - [`trace`]: one pixel instruction by instruction, with cycle estimates.
//! - [`inspect`]: one pixel's core and output words; where two renders differ.
//! - [`viewer`]: the requests `theia view` answers.
//! - [`bench`]: frame benchmarks (one core vs all cores) as a printable table.

pub mod bench;
pub mod core;
pub mod image;
pub mod inspect;
pub mod isa;
pub mod machine;
pub mod pica200;
pub mod r500;
pub mod scene;
pub mod stage;
pub mod trace;
pub mod viewer;
