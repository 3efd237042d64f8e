//! THEIA's instruction set: the opcode table, the register map, instruction encoding, the
//! typed instruction, the assembler and the disassembler. One table ([`opcodes::OPCODES`])
//! drives all of them.

pub mod asm;
pub mod disasm;
pub mod encoding;
pub mod instr;
pub mod opcodes;
pub mod registers;

pub use asm::{assemble, assemble_rom, AsmErrors, Assembly, Diagnostic, RomAssembly, Severity};
pub use disasm::{disassemble, listing, rom_listing};
pub use encoding::{Word, UNDEFINED_ROM_WORD};
pub use instr::Instr;
pub use opcodes::{
    Flow, Hardware, InputA, InputB, Opcode, OpcodeInfo, Operation, Shape, Writes, OPCODES,
};
pub use registers::{core_writable, Bank, EntryPoint};
