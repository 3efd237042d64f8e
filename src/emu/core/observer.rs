//! What the interpreter tells the world: how a routine stopped without returning
//! ([`Fault`]), and, for tracing, every instruction it executes ([`Step`], to an
//! [`Observer`]).

use super::alu::Vec3;
use super::track::Footprint;
use crate::emu::isa::registers::EntryPoint;
use crate::emu::isa::{Instr, Operation, Word};

/// How a routine stopped without returning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The hardware would stall forever here: an opcode it never finishes.
    Hang { address: u16, word: Word },
    /// The instruction budget ran out (a shader that never returns).
    Watchdog { address: u16, budget: u64 },
    /// A foreign pixel stage (R500, PICA200) cannot go on at instruction `pc`.
    Stage {
        isa: &'static str,
        pc: u32,
        reason: &'static str,
    },
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Fault::Hang { address, word } => write!(
                f,
                "the core hangs at {address:#06x}: {:016X} is not an instruction the hardware finishes (opcode {:#06x})",
                word.0,
                word.opcode_field()
            ),
            Fault::Watchdog { address, budget } => write!(
                f,
                "no RETURN within {budget} instructions; stopped at {address:#06x} (raise --max-steps if it is meant to run this long)"
            ),
            Fault::Stage { isa, pc, reason } => {
                write!(f, "the {isa} program stops at instruction {pc}: {reason}")
            }
        }
    }
}

impl std::error::Error for Fault {}

/// What one executed instruction did, for tracing.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub address: u16,
    pub instruction: Instr,
    /// ALU inputs A and B, after forwarding; zero where the instruction uses neither a
    /// register nor the immediate (see [`Instr::a`], [`Instr::b`]).
    pub a: Vec3,
    pub b: Vec3,
    pub result: Vec3,
    /// Whether the result reached the register file.
    pub written: bool,
    /// For conditional jumps: whether the jump was taken.
    pub taken: Option<bool>,
    pub next: u16,
    /// For CALL: the address its RET will return to (not always the CALL's address + 1:
    /// it depends on how the CALL was reached, docs/rtl-differences.md).
    pub returns_to: Option<u16>,
}

/// Sees every instruction when tracing; the default observer compiles away.
pub trait Observer {
    const ENABLED: bool;
    /// Whether the interpreter records what the core reads and writes into
    /// [`Observer::footprint`] (a core with a footprint runs its routines so).
    #[doc(hidden)]
    const TRACKS: bool = false;
    /// Whether the observer needs of each instruction only what [`Observer::lean_step`]
    /// gives (the cycle model's recording): then the interpreter builds no [`Step`] and
    /// reads the operands only of the operations whose cost depends on them.
    const LEAN: bool = false;
    fn routine_start(&mut self, _entry: EntryPoint, _address: u16) {}
    fn step(&mut self, _step: &Step) {}
    /// A lean observer's [`Observer::step`]: the instruction, and its ALU inputs as
    /// [`Step::a`] and [`Step::b`] give them where [`lean_operands`] says it needs them
    /// (zero elsewhere).
    fn lean_step(&mut self, _instruction: Instr, _a: Vec3, _b: Vec3) {}
    /// A lean observer's shortcut: it may take an instruction of `operation` from the
    /// operation alone (whether it did; [`Observer::lean_step`] is then not called), so the
    /// interpreter looks nothing up for the common ones.
    fn lean_operation(&mut self, _operation: Operation) -> bool {
        false
    }
    fn routine_end(&mut self, _entry: EntryPoint, _return_value: bool) {}
    #[doc(hidden)]
    fn footprint(&self) -> &Footprint {
        unreachable!("only an observer that tracks has a footprint")
    }
}

/// Whether a lean observer ([`Observer::LEAN`]) is given the operands of an operation:
/// DIV (its latency depends on them) and TMREAD (its addresses).
#[inline(always)]
pub fn lean_operands(operation: Operation) -> bool {
    matches!(operation, Operation::Div | Operation::Tmread)
}

/// The observer of normal renders: nothing.
pub struct NoObserver;

impl Observer for NoObserver {
    const ENABLED: bool = false;
}
