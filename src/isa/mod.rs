//! THEIA's instruction set: the opcode table, the register map, instruction encoding, the
//! assembler and the disassembler. One table ([`opcodes::OPCODES`]) drives all of them.

pub mod asm;
pub mod disasm;
pub mod encoding;
pub mod opcodes;
pub mod registers;

pub use asm::{assemble, assemble_rom, AsmErrors, Assembly, Diagnostic, RomAssembly, Severity};
pub use disasm::{disassemble, listing, rom_listing};
pub use encoding::{Instruction, UNDEFINED_ROM_WORD};
pub use opcodes::{Hardware, Opcode, OpcodeInfo, Shape, OPCODES};
pub use registers::{Bank, EntryPoint};
