//! How long the hardware takes for a frame: a cycle model of the whole machine, proven
//! against THEIA's RTL (`tests/rtl.rs`), beside the functional emulator and out of its
//! way (renders without `--cycles` never run any of it).
//!
//! # How
//!
//! 1. **Each core's routines, from the functional run** ([`record`]): every core runs its
//!    partition through the ordinary interpreter with a [`record::Recording`] observer
//!    (partitions in parallel, as a render runs them). For every routine the control unit
//!    starts, it keeps the cycles its instructions hold the execution unit ([`cost`]:
//!    ALU latency + 1, DIV's short path, MAG 40, RET 4), and, apart, the TMREADs (their
//!    time depends on the other cores) and OMWRITEs (for the report).
//! 2. **The machine, clock by clock** ([`sim`]): the host's state machine streams the
//!    configuration and every pixel's triangles, each core's control unit triggers its
//!    routines and waits for the host and the other cores through the 1-bit "latched" and
//!    "committed" flags, and the texture memory's four bank arbiters serve the TMREADs
//!    ([`tmem`]). Only periods where something changes are visited.
//! 3. **Hazards.** Where a core starts MAIN again on a triangle another core has not yet
//!    latched (the published control unit's re-entry hazard), the recorded run no longer
//!    describes what the hardware runs: the frame is simulated again with the functional
//!    cores driven by the control units themselves ([`Live`]), swap-memory flips, stale
//!    triangles and all, one routine at a time. A frame that can never end (the published
//!    host's STDONE deadlock, a core that waits for a triangle after the last one) ends
//!    in [`sim::Ending::Deadlock`] at the period from which nothing moves.
//!
//! Counted as `tests/rtl/bench.v` counts: the bench's `DONE cycles=N` is
//! [`Timing::frame_cycles`]. The published test bench (`TestBench_THEIA.v`) loads the
//! texture memory word by word before it enables the host: [`published_bench_ns`].

pub mod cost;
pub mod record;
pub mod sim;
pub mod tmem;

use std::path::Path;

use rayon::prelude::*;

use crate::core::exec::Core;
use crate::core::output::OutputMemory;
use crate::core::CoreState;
use crate::isa::registers::EntryPoint;
use crate::machine::{Frame, Machine, PixelAccel};
use record::Recording;
use sim::{Course, Ending, Hazard, Routines, Setup, Stop};

/// The THEIA documents' clock for the FPGA the design was built for (a Xilinx
/// Virtex-5 at 50 MHz in the author's reports); `--clock` changes it.
pub const DEFAULT_CLOCK_MHZ: f64 = 50.0;

/// Which host streams the scene.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostKind {
    /// With `../shared/rtl/host-fix.patch` (what the differential tests run).
    #[default]
    Fixed,
    /// The published `Module_Host.v`, whose STDONE handshake deadlocks on skewed cores.
    Published,
}

/// What to time.
#[derive(Clone, Copy, Debug)]
pub struct TimingOptions {
    pub host: HostKind,
    /// Instructions.mem's word 0, as the host reads it (hex): it stops sending code at
    /// that word. [`instruction_words`] gives what `theia export` writes.
    pub instruction_words: u32,
    /// Give up after this many cycles.
    pub limit: u64,
}

impl TimingOptions {
    /// The fixed host, a program of `imem_len` instruction-memory words.
    pub fn new(imem_len: usize) -> TimingOptions {
        TimingOptions {
            host: HostKind::Fixed,
            instruction_words: instruction_words(imem_len),
            limit: 1 << 40,
        }
    }
}

/// Instructions.mem's word 0 for a program of `imem_len` words, as `theia export` writes
/// it: the host starts at word 1 and sends two words per instruction.
pub fn instruction_words(imem_len: usize) -> u32 {
    1 + 2 * imem_len as u32
}

/// Instructions.mem's word 0 in `dir`, read as the test bench reads it (hex), if the file
/// is there and starts with a word.
pub fn instruction_words_in(dir: &Path) -> Option<u32> {
    let text = std::fs::read_to_string(dir.join("Instructions.mem")).ok()?;
    let word = text.split_whitespace().next()?;
    u32::from_str_radix(word, 16).ok()
}

/// Why a frame could not be timed.
#[derive(Debug, thiserror::Error)]
pub enum TimingError {
    #[error("--cycles counts THEIA's own stages only; the {0} pixel stage is not THEIA hardware")]
    ForeignStage(&'static str),
    #[error("--cycles times whole frames: a band of the partitions has no hardware timing")]
    Band,
    #[error("{0}")]
    Fault(String),
}

/// A timed frame.
#[derive(Clone, Debug)]
pub struct Timing {
    pub course: Course,
    /// Whether a hazard made the frame run live (the recorded run no longer held).
    pub live: bool,
    /// Output words that differ from the functional render's because of hazards (the
    /// hardware's image), when the frame ran live: `(core, pixel k)` of each pixel.
    pub hazard_pixels: Vec<(usize, usize)>,
}

impl Timing {
    /// The bench's `DONE cycles=N`: the first period every core is done; `None` when the
    /// frame never ends.
    pub fn frame_cycles(&self) -> Option<u64> {
        match self.course.ending {
            Ending::Done(cycles) => Some(cycles),
            _ => None,
        }
    }

    pub fn hazards(&self) -> &[Hazard] {
        &self.course.hazards
    }
}

/// Times `machine`'s frame.
pub fn measure(machine: &Machine<'_>, options: &TimingOptions) -> Result<Timing, TimingError> {
    if machine.stage.microcode_routine().is_none() {
        return Err(TimingError::ForeignStage(machine.stage.isa()));
    }
    if machine.active.len() != machine.partitions.len() {
        return Err(TimingError::Band);
    }
    let packets = u64::from(options.instruction_words.saturating_sub(1).div_ceil(2)).max(1);
    let setup = Setup {
        cores: machine.partitions.len(),
        triangles: machine.scene.triangles.len(),
        instruction_packets: packets,
        host_fix: options.host == HostKind::Fixed,
        limit: options.limit,
    };
    let recordings = record(machine)?;
    let mut replay = Replay {
        cursors: vec![0; recordings.len()],
        recordings,
    };
    match sim::simulate(&setup, &mut replay) {
        Ok(course) => Ok(Timing {
            course,
            live: false,
            hazard_pixels: Vec::new(),
        }),
        Err(Stop::Fault(message)) => Err(TimingError::Fault(message)),
        Err(Stop::Diverged) => {
            let mut live = Live::new(machine);
            let course = sim::simulate(&setup, &mut live).map_err(|stop| match stop {
                Stop::Fault(message) => TimingError::Fault(message),
                Stop::Diverged => unreachable!("a live run follows the hardware"),
            })?;
            let hazard_pixels = live.differences(&functional_frame(machine)?);
            Ok(Timing {
                course,
                live: true,
                hazard_pixels,
            })
        }
    }
}

/// Every core's routines as the functional emulator runs them (partitions in parallel).
fn record(machine: &Machine<'_>) -> Result<Vec<Recording>, TimingError> {
    machine
        .active_partitions()
        .collect::<Vec<_>>()
        .par_iter()
        .map(|&(index, partition)| {
            let mut recording = Recording::default();
            let fault = |e: &dyn std::fmt::Display| TimingError::Fault(e.to_string());
            let mut core = machine
                .boot_core(index, partition, &mut recording)
                .map_err(|e| fault(&e))?;
            let mut accel = PixelAccel::default();
            for _ in 0..=partition.pixel_count() {
                match machine.run_pixel(&mut core, &mut recording, &mut accel) {
                    Ok(done) if done.more => {}
                    Ok(_) => break,
                    Err((entry, f)) => {
                        return Err(TimingError::Fault(format!(
                            "core {index}, routine {}: {f}",
                            entry.name()
                        )))
                    }
                }
            }
            Ok(recording)
        })
        .collect()
}

/// The functional render's frame (what the cores write when no hazard strikes).
fn functional_frame(machine: &Machine<'_>) -> Result<Frame, TimingError> {
    machine
        .render(None)
        .map(|render| render.frame)
        .map_err(|e| TimingError::Fault(e.to_string()))
}

/// The recorded runs, handed out in order.
struct Replay {
    recordings: Vec<Recording>,
    cursors: Vec<usize>,
}

impl Routines for Replay {
    fn start(&mut self, core: usize, entry: EntryPoint) -> Result<usize, Stop> {
        let index = self.cursors[core];
        match self.recordings[core].runs.get(index) {
            Some(run) if run.entry == entry => {
                self.cursors[core] += 1;
                Ok(index)
            }
            _ => Err(Stop::Diverged),
        }
    }

    fn recording(&self, core: usize) -> &Recording {
        &self.recordings[core]
    }

    fn hazard(&mut self, _hazard: &Hazard) -> Result<(), Stop> {
        Err(Stop::Diverged)
    }
}

/// The functional cores, run as the control units start their routines: the swap memory
/// flips at every MAIN start and the host's triangles land in the IO copies, so a MAIN
/// started twice on one triangle sees what the hardware's sees.
struct Live<'m> {
    machine: &'m Machine<'m>,
    cores: Vec<Core<'m>>,
    recordings: Vec<Recording>,
}

impl<'m> Live<'m> {
    fn new(machine: &'m Machine<'m>) -> Live<'m> {
        let cores = machine
            .partitions
            .iter()
            .map(|partition| {
                let words = (partition.pixel_count() * 3).max(OutputMemory::HARDWARE_WORDS);
                let mut core = Core::new(&machine.program, &machine.scene.texture, words);
                core.set_budget(machine.max_steps);
                for (row, value) in machine.scene.config.iter().enumerate() {
                    core.host_write(row as u16, *value);
                }
                core.host_write(6, partition.initial);
                core.host_write(7, partition.end);
                core
            })
            .collect();
        Live {
            machine,
            recordings: vec![Recording::default(); machine.partitions.len()],
            cores,
        }
    }

    /// The pixels (core, k) whose output words differ from `frame`'s.
    fn differences(&self, frame: &Frame) -> Vec<(usize, usize)> {
        let mut pixels = Vec::new();
        let width = frame.width as usize;
        for (core, live) in self.cores.iter().enumerate() {
            for (k, (x, y)) in self.machine.partitions[core].pixels().enumerate() {
                let at = (y as usize * width + x as usize) * 3;
                let differs = (0..3).any(|c| {
                    let functional = frame.written[at + c].then_some(frame.words[at + c]);
                    live.output().read(3 * k + c) != functional
                });
                if differs {
                    pixels.push((core, k));
                }
            }
        }
        pixels
    }
}

/// The rows the host streams a triangle into (CREG_V0..CREG_TRI_DIFFUSE).
const TRIANGLE_ROW: u16 = 44;

impl Routines for Live<'_> {
    fn start(&mut self, core: usize, entry: EntryPoint) -> Result<usize, Stop> {
        let functional = &mut self.cores[core];
        // The watchdog guards each routine: a hazard can make a pixel run MAIN far more
        // often than it has triangles, and the hardware has no watchdog to stop it.
        functional.refill_budget();
        let recording = &mut self.recordings[core];
        functional.run(entry, recording).map_err(|fault| {
            Stop::Fault(format!("core {core}, routine {}: {fault}", entry.name()))
        })?;
        Ok(recording.runs.len() - 1)
    }

    fn recording(&self, core: usize) -> &Recording {
        &self.recordings[core]
    }

    fn streamed(&mut self, triangle: Option<usize>) {
        let words = triangle.map_or([[0; 3]; 7], |t| self.machine.scene.triangles[t]);
        for core in &mut self.cores {
            for (row, value) in words.iter().enumerate() {
                core.host_write(TRIANGLE_ROW + row as u16, *value);
            }
        }
    }

    fn flip(&mut self, core: usize) {
        self.cores[core].flip_parity();
    }
}

/// The published test bench's `Simulation.log` end time, in ns, for a frame whose own
/// bench count is `frame_cycles` (see `tests/rtl.rs` for the measurement): it loads the
/// texture memory one word per 10 ns clock before it enables the host, and writes the
/// end time after dumping every core's partition (11 ns a word).
pub fn published_bench_ns(frame_cycles: u64, cores: u64, width: u64, height: u64) -> u64 {
    let _ = (cores, width);
    let texture_words: u64 = 256 * 256 * 3;
    let dump = height * 3 * height * 11;
    10 * (frame_cycles + texture_words) + dump
}
