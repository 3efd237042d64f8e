//! Bit-exact Q15.17 arithmetic of the vector ALU (spec alu_semantics.md).
