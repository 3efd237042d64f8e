//! The emulator as a library, with no command line (no `cli` feature, no `theia` binary):
//! the ISA toolchain, every opcode and the ALU, conformance with the original hardware,
//! the pixel paths (culling, lock-step, chunks), and the OBJ and PLY loaders end to end.
//! One test binary, one module per area: `cargo test --release --test emulator isa::`
//! runs one of them.

#[path = "../common/mod.rs"]
mod common;
#[path = "../model/mod.rs"]
mod model;

mod alu_properties;
mod chunks;
mod conformance;
mod coplanar;
mod culling;
mod fuzz_regressions;
mod isa;
mod lockstep;
mod obj;
mod obj_exact;
mod opcode_table;
mod opcodes;
mod ply;
mod shaders;
mod ssaa;
