//! What the timing needs of a core's functional run: for every routine the control unit
//! started, the cycles it kept the execution unit busy, with the instructions whose time
//! or place the machine decides (TMREAD, through the shared texture memory) or that the
//! report shows (OMWRITE, the cycle a pixel's colour is written). An [`Observer`], so the
//! functional emulator's own loop records it, and only when asked: renders without
//! `--cycles` use [`NoObserver`](crate::emu::core::NoObserver), which compiles away.

use std::cell::RefCell;

use super::cost::{div_cycles, kind, CostKind};
use super::culled::{RejectTiming, TimedCulledRuns};
use crate::emu::core::alu::Vec3;
use crate::emu::core::CoreState;
use crate::emu::core::{Core, Fault, Observer, Step};
use crate::emu::isa::registers::EntryPoint;
use crate::emu::machine::cull::Culler;
use crate::emu::machine::triangles::{self, Every};
use crate::emu::machine::Machine;
use crate::io::scene::Partition;

/// One routine as it ran: `events` of [`Recording::events`] from `first_event`, then
/// `tail` cycles to its RETURN.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RoutineRun {
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
    pub runs: Vec<RoutineRun>,
    pub events: Vec<Event>,
    /// Cycles counted since the last event, in the routine being recorded.
    pending: u32,
    first_event: u32,
    hung: bool,
}

impl Recording {
    /// The events of `run`.
    pub fn events_of(&self, run: &RoutineRun) -> &[Event] {
        let first = run.first_event as usize;
        &self.events[first..first + run.events as usize]
    }

    /// A MAIN that returned FALSE after `cycles`, timed without being interpreted.
    pub fn push_main(&mut self, cycles: u32) {
        self.runs.push(RoutineRun {
            entry: EntryPoint::Main,
            value: false,
            first_event: self.events.len() as u32,
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
        self.first_event = self.events.len() as u32;
    }

    fn step(&mut self, step: &Step) {
        if self.hung {
            return;
        }
        match kind(step) {
            CostKind::Fixed(cycles) => self.pending += cycles,
            CostKind::Div => self.pending += div_cycles(step.a, step.b),
            CostKind::Omwrite => {
                self.push_event(EventKind::Omwrite);
                self.pending += 4;
            }
            CostKind::Tmread => self.push_event(EventKind::Tmread(step.a)),
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
            events: self.events.len() as u32 - self.first_event,
            tail: self.pending,
        });
    }
}

/// Core `index`'s whole run of `partition`, recorded: boot (INITIAL, CPPU,
/// USERCONSTANTS), then per pixel RGU, MAIN per triangle (those `culler` proves
/// rejected timed from its values, [`super::culled`]), PSU2 on a hit, the pixel shader and
/// NPG, as [`Machine::run_pixel`] runs them. Stops at NPG's FALSE, a fault (with its
/// routine), or one pixel past the partition (the hardware would go on).
pub fn record_core(
    machine: &Machine<'_>,
    culler: Option<&Culler>,
    index: usize,
    partition: &Partition,
) -> Result<Recording, (EntryPoint, Fault)> {
    let recording = RefCell::new(Recording::default());
    let mut core = machine
        .boot_core(index, partition, &mut *recording.borrow_mut())
        .map_err(|error| match error {
            crate::emu::machine::RenderError::Core { entry, fault, .. } => (entry, fault),
            _ => unreachable!("booting a core fails only in a routine"),
        })?;
    let culled = culler.and_then(|culler| Some((culler, RejectTiming::new(culler)?)));
    let run = |core: &mut Core<'_>, entry| {
        core.run(entry, &mut *recording.borrow_mut())
            .map_err(|fault| (entry, fault))
    };
    for _ in 0..=partition.pixel_count() {
        core.refill_budget();
        run(&mut core, EntryPoint::Rgu)?;
        let triangles = &machine.scene().triangles;
        let main = |core: &mut Core<'_>| run(core, EntryPoint::Main);
        let hit = match culled {
            Some((culler, timing)) => {
                let mut source = TimedCulledRuns {
                    culler,
                    timing,
                    recording: &recording,
                };
                triangles::run(&mut core, triangles, &mut source, main)?
            }
            None => triangles::run(&mut core, triangles, &mut Every, main)?,
        };
        core.load_dummy_triangle();
        if hit {
            run(&mut core, EntryPoint::Psu2)?;
        }
        run(&mut core, EntryPoint::PixelShader)?;
        if !run(&mut core, EntryPoint::Npg)? {
            break;
        }
    }
    Ok(recording.into_inner())
}
