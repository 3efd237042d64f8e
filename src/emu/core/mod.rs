//! One emulated THEIA core: register banks, the bit-exact ALU, the control unit and
//! operand forwarding.
//!
//! Where an instruction executes: the opcode table (`isa::opcodes`) gives each opcode an
//! [`Operation`](crate::emu::isa::Operation); `program` decodes every word of code memory once,
//! per swap parity, into an `Op` (operand and result rows with forwarding resolved, jump
//! targets as slots, the length of its straight run for the watchdog); `interp::execute`
//! is the one loop that runs them, a `match` on the operation with one arm per operation,
//! written once for any number of lanes: a lone [`Core`] is one lane, a lock-step
//! [`group::CoreGroup`] eight. The arms compute with `alu` (the bit-exact arithmetic,
//! one small function per formula) and `tmem` (TMREAD), and leave what a routine's start,
//! CALL, RET, RETURN, OMWRITE and the watchdog do to a core to `control`. A core's state is
//! `state`'s: the `LaneState` a core or a group owns (registers stored lane by lane, latches and
//! output memory per lane) and [`CoreState`], the one trait the host and culling use.

pub mod alu;
mod control;
pub mod exec;
pub mod group;
mod interp;
pub mod output;
pub mod program;
pub mod rom;
pub mod state;
pub mod tmem;
pub mod track;
pub mod triangle;

pub use exec::{Core, Fault, NoObserver, Observer, Step};
pub use output::OutputMemory;
pub use program::Program;
pub use rom::{rom, RomVariant};
pub use state::CoreState;
pub use triangle::Triangle;
