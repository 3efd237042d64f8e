//! One emulated THEIA core: register banks, the bit-exact ALU, the control unit and
//! operand forwarding; and lock-step groups of cores that share its interpreter.
//!
//! Where an instruction executes: the opcode table (`isa::opcodes`) gives each opcode an
//! [`Operation`](crate::emu::isa::Operation); `program` decodes every word of code memory once,
//! per swap parity, into an `op::SlotOp` (operand and result rows with forwarding
//! resolved, jump targets as slots, the length of its straight run for the watchdog);
//! `interp::execute` is the one loop that runs them: `interp::effect` has one short arm per
//! operation, which computes on whole rows (`row`: the vector arithmetic, one body for any
//! number of lanes) and returns what the instruction does (write a row, jump, branch with
//! a lane mask, RET, RETURN, hang), and the loop applies it, regrouping lanes where their
//! paths part and meet. A lone [`Core`] is one lane, a lock-step [`group::CoreGroup`]
//! eight. What a routine's start, CALL, RET, RETURN, OMWRITE and the watchdog do to one
//! core is `control`'s; TMREAD is `tmem`'s.
//!
//! The modules in layers, each using only those above it (no import circle):
//!
//! | layer | module | holds | uses |
//! |---|---|---|---|
//! | 0 | `alu`, `mask`, `output`, `rom` | the arithmetic; lane masks; output memory; the microcode ROMs | - |
//! | 1 | `op`, `tmem`, `triangle` | one decoded instruction and the storage rows; texture reads; a triangle's rows | `alu` |
//! | 2 | `track`, `row` | what a stretch of execution reads and writes; a register row of `N` lanes | `op`; `alu`, `mask` |
//! | 3 | `observer`, `program` | faults and the trace observer; decoded code memory | `track`; `op`, `track` |
//! | 4 | `state` | a core's latches, [`CoreState`], `N` cores' state (`LaneState`) | `program`, `row`, ... |
//! | 5 | `control` | the control unit, for one lane | `state` |
//! | 6 | `interp` | the interpreter, generic over the lane count | `control`, `observer`, `row`, ... |
//! | 7 | `lone` | one core ([`Core`]) | `interp` |
//! | 8 | `group` | up to eight cores in lock-step | `lone`, `interp` |

pub mod alu;
mod control;
pub mod group;
mod interp;
pub mod lone;
pub mod mask;
pub mod observer;
pub(crate) mod op;
pub mod output;
pub mod program;
pub mod rom;
mod row;
pub mod state;
pub mod tmem;
pub mod track;
pub mod triangle;

pub use lone::Core;
pub use observer::{Fault, NoObserver, Observer, Step};
pub use output::OutputMemory;
pub use program::Program;
pub use rom::{rom, RomVariant};
pub use state::CoreState;
pub use triangle::Triangle;
