//! The `.shdr` assembler.
