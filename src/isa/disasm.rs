//! The disassembler.
