//! picasso-syntax assembler.
