//! One emulated THEIA core: register banks, the bit-exact ALU, the control unit and
//! operand forwarding.

pub mod alu;
mod control;
pub mod exec;
pub mod group;
pub mod output;
pub mod program;
pub mod rom;
pub mod state;
pub mod tmem;
pub mod triangle;

pub use exec::{Core, Fault, NoObserver, Observer, Step};
pub use output::OutputMemory;
pub use program::Program;
pub use rom::{rom, RomVariant};
pub use state::CoreState;
pub use triangle::Triangle;
