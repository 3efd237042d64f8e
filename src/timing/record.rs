//! What the timing needs of a core's functional run: for every routine the control unit
//! started, the cycles it kept the execution unit busy, with the instructions whose time
//! or place the machine decides (TMREAD, through the shared texture memory) or that the
//! report shows (OMWRITE, the cycle a pixel's colour is written). An [`Observer`], so the
//! functional emulator's own loop records it, and only when asked: renders without
//! `--cycles` use [`NoObserver`](crate::core::NoObserver), which compiles away.

use super::cost::{cost, Cost};
use crate::core::alu::Vec3;
use crate::core::exec::{Observer, Step};
use crate::isa::registers::EntryPoint;

/// One routine as it ran: `events` of [`Recording::events`] from `first_event`, then
/// `tail` cycles to its RETURN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub entry: EntryPoint,
    /// Bit 0 of its RETURN.
    pub value: bool,
    pub first_event: u32,
    pub events: u32,
    /// Cycles from the last event (or the routine's first instruction) to the RETURN.
    pub tail: u32,
}

/// An instruction of a routine that the machine times or reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// Cycles from the previous event's end (its next instruction; the routine's first
    /// instruction for the first event) to this instruction.
    pub before: u32,
    pub kind: EventKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// A texture read of three word addresses; the routine goes on when it completes.
    Tmread(Vec3),
    /// A write to the output memory; the next instruction follows 4 cycles later (counted
    /// in the next `before` or `tail`).
    Omwrite,
    /// An opcode the hardware never finishes: the routine never returns.
    Hang,
}

/// A core's routines in the order they ran.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    pub runs: Vec<Run>,
    pub events: Vec<Event>,
    /// Cycles counted since the last event, in the routine being recorded.
    pending: u32,
    first_event: u32,
    hung: bool,
}

impl Recording {
    /// The events of `run`.
    pub fn events_of(&self, run: &Run) -> &[Event] {
        let first = run.first_event as usize;
        &self.events[first..first + run.events as usize]
    }

    fn push_event(&mut self, kind: EventKind) {
        self.events.push(Event {
            before: self.pending,
            kind,
        });
        self.pending = 0;
    }
}

impl Observer for Recording {
    const ENABLED: bool = true;

    fn routine_start(&mut self, _entry: EntryPoint, _address: u16) {
        self.pending = 0;
        self.hung = false;
        self.first_event = self.events.len() as u32;
    }

    fn step(&mut self, step: &Step) {
        if self.hung {
            return;
        }
        match cost(step) {
            Cost::Fixed(cycles) => {
                if matches!(step.instruction.operation(), crate::isa::Operation::Omwrite) {
                    self.push_event(EventKind::Omwrite);
                }
                self.pending += cycles;
            }
            Cost::Tmread(addresses) => self.push_event(EventKind::Tmread(addresses)),
            Cost::Hang => {
                self.push_event(EventKind::Hang);
                self.hung = true;
            }
            Cost::Return => {}
        }
    }

    fn routine_end(&mut self, entry: EntryPoint, value: bool) {
        self.runs.push(Run {
            entry,
            value,
            first_event: self.first_event,
            events: self.events.len() as u32 - self.first_event,
            tail: self.pending,
        });
    }
}
