//! What the timing needs of a core's functional run: for every routine the control unit
//! started, the cycles it kept the execution unit busy, with the instructions whose time
//! or place the machine decides (TMREAD, through the shared texture memory) or that the
//! report shows (OMWRITE, the cycle a pixel's colour is written). An [`Observer`], so the
//! functional emulator's own loop records it, and only when asked: renders without
//! `--cycles` use [`NoObserver`](crate::emu::core::NoObserver), which compiles away.
//!
//! A recording holds only the routines still in use: the timing forgets each core's runs
//! before the one its control unit starts ([`Recording::forget_before`]), so its memory
//! stays bounded however many pixels and triangles the frame has.

use super::cost::{div_cycles, fixed_cycles, kind_of, CostKind};
use crate::emu::core::alu::Vec3;
use crate::emu::core::{Observer, Step};
use crate::emu::isa::registers::EntryPoint;
use crate::emu::isa::{Instr, Operation};

/// One routine as it ran: its `events` ([`Recording::events_of`]) from `first_event`, then
/// `tail` cycles to its RETURN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoutineRun {
    pub entry: EntryPoint,
    /// Bit 0 of its RETURN.
    pub value: bool,
    /// The index of its first event among every event recorded (forgotten ones included).
    pub first_event: u64,
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

/// A core's routines in the order they ran, from the first one not forgotten.
#[derive(Clone, Debug, Default)]
pub struct Recording {
    /// Runs `forgotten_runs..`.
    runs: Vec<RoutineRun>,
    /// Events `forgotten_events..`.
    events: Vec<Event>,
    forgotten_runs: usize,
    forgotten_events: u64,
    /// Cycles counted since the last event, in the routine being recorded.
    pending: u32,
    first_event: u64,
    hung: bool,
}

/// Forgotten runs are dropped from memory in batches of at least this many (a drain per
/// routine would move the rest every time).
const FORGET_BATCH: usize = 4096;

impl Recording {
    /// Run `index` (counted from the first routine recorded), if recorded and not forgotten.
    pub fn get(&self, index: usize) -> Option<&RoutineRun> {
        self.runs.get(index.checked_sub(self.forgotten_runs)?)
    }

    /// Run `index` (counted from the first routine recorded).
    pub fn run(&self, index: usize) -> &RoutineRun {
        &self.runs[index - self.forgotten_runs]
    }

    /// How many routines were recorded, forgotten ones included.
    pub fn len(&self) -> usize {
        self.forgotten_runs + self.runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The events of `run`.
    pub fn events_of(&self, run: &RoutineRun) -> &[Event] {
        let first = (run.first_event - self.forgotten_events) as usize;
        &self.events[first..first + run.events as usize]
    }

    /// Forgets the runs before run `index` (and their events): nobody reads them again.
    pub fn forget_before(&mut self, index: usize) {
        let dead = index
            .saturating_sub(self.forgotten_runs)
            .min(self.runs.len());
        if dead < FORGET_BATCH {
            return;
        }
        self.runs.drain(..dead);
        self.forgotten_runs += dead;
        let first_kept = self
            .runs
            .first()
            .map_or(self.total_events(), |run| run.first_event);
        self.events
            .drain(..(first_kept - self.forgotten_events) as usize);
        self.forgotten_events = first_kept;
    }

    /// Events recorded, forgotten ones included.
    fn total_events(&self) -> u64 {
        self.forgotten_events + self.events.len() as u64
    }

    /// A MAIN that returned FALSE after `cycles`, timed without being interpreted.
    pub fn push_main(&mut self, cycles: u32) {
        self.runs.push(RoutineRun {
            entry: EntryPoint::Main,
            value: false,
            first_event: self.total_events(),
            events: 0,
            tail: cycles,
        });
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
        self.first_event = self.total_events();
    }

    /// Only the instruction and DIV's and TMREAD's operands: no [`Step`] built.
    const LEAN: bool = true;

    fn step(&mut self, step: &Step) {
        self.lean_step(step.instruction, step.a, step.b);
    }

    /// The operations of one fixed cost ([`fixed_cycles`]) need no instruction.
    #[inline(always)]
    fn lean_operation(&mut self, operation: Operation) -> bool {
        let cycles = fixed_cycles(operation);
        if cycles != 0 && !self.hung {
            self.pending += cycles;
        }
        cycles != 0
    }

    #[inline(always)]
    fn lean_step(&mut self, instruction: Instr, a: Vec3, b: Vec3) {
        if self.hung {
            return;
        }
        match kind_of(instruction) {
            CostKind::Fixed(cycles) => self.pending += cycles,
            CostKind::Div => self.pending += div_cycles(a, b),
            CostKind::Omwrite => {
                self.push_event(EventKind::Omwrite);
                self.pending += 4;
            }
            CostKind::Tmread => self.push_event(EventKind::Tmread(a)),
            CostKind::Hang => {
                self.push_event(EventKind::Hang);
                self.hung = true;
            }
            CostKind::Return => {}
        }
    }

    fn routine_end(&mut self, entry: EntryPoint, value: bool) {
        self.runs.push(RoutineRun {
            entry,
            value,
            first_event: self.first_event,
            events: (self.total_events() - self.first_event) as u32,
            tail: self.pending,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A recording of `runs` MAINs, each of `cycles` = its index, every third with an
    /// OMWRITE event.
    fn recording(runs: usize) -> Recording {
        let mut recording = Recording::default();
        for index in 0..runs {
            if index % 3 == 0 {
                recording.routine_start(EntryPoint::Main, 37);
                recording.pending = index as u32;
                recording.push_event(EventKind::Omwrite);
                recording.routine_end(EntryPoint::Main, true);
            } else {
                recording.push_main(index as u32);
            }
        }
        recording
    }

    #[test]
    fn a_recording_forgets_runs_in_batches_and_keeps_the_rest_and_their_events() {
        let runs = 3 * FORGET_BATCH;
        let mut recording = recording(runs);
        // Too few to drop yet: everything is still there.
        recording.forget_before(FORGET_BATCH - 1);
        assert_eq!(recording.runs.len(), runs);
        assert!(recording.get(0).is_some());
        let kept = 2 * FORGET_BATCH + 1;
        recording.forget_before(kept);
        assert_eq!(recording.len(), runs);
        assert_eq!(recording.runs.len(), runs - kept);
        assert!(recording.get(kept - 1).is_none());
        assert_eq!(recording.events.len(), (runs - kept).div_ceil(3));
        for index in kept..runs {
            let run = *recording.run(index);
            let events = recording.events_of(&run);
            match index % 3 {
                0 => assert_eq!((events.len(), events[0].before), (1, index as u32)),
                _ => assert_eq!((events.len(), run.tail), (0, index as u32)),
            }
        }
        // New runs go on counting from where the forgotten ones left off.
        recording.push_main(7);
        assert_eq!(recording.run(runs).tail, 7);
        recording.forget_before(runs + 1);
        assert_eq!((recording.runs.len(), recording.events.len()), (0, 0));
        assert!(!recording.is_empty());
    }
}
