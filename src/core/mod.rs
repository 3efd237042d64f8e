//! One emulated THEIA core: register banks, the bit-exact ALU, the control unit and
//! operand forwarding.

pub mod alu;
pub mod rom;
