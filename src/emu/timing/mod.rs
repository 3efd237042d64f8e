//! How long the hardware takes for a frame: a cycle model of the whole machine, proven
//! against THEIA's RTL (`tests/rtl.rs`), beside the functional emulator and out of its
//! way (renders without `--cycles` never run any of it).
//!
//! # How
//!
//! 1. **Each core's routines, from the functional cores** ([`record`]): the control
//!    units of step 2 drive the ordinary interpreter (`Live`), one routine at a time as
//!    each triggers it, with a [`record::Recording`] observer. For every routine it keeps
//!    the cycles its instructions hold the execution unit ([`cost`]: ALU latency + 1,
//!    DIV's short path, MAG 40, RET 4), and, apart, the TMREADs (their time depends on the
//!    other cores) and OMWRITEs (for the report). A MAIN the culler proves rejected is
//!    timed from its values instead ([`culled`]), so the pixels x triangles tests cost
//!    what a culled render's do; and a recording forgets the routines its control unit
//!    is done with, so memory does not grow with the frame.
//! 2. **The machine, clock by clock** ([`sim`]): the host's state machine streams the
//!    configuration and every pixel's triangles, each core's control unit triggers its
//!    routines and waits for the host and the other cores through the 1-bit "latched" and
//!    "committed" flags, and the texture memory's four bank arbiters serve the TMREADs
//!    ([`tmem`]). Only periods where something changes are visited.
//! 3. **Hazards.** Where a core starts MAIN again on a triangle another core has not yet
//!    latched (the published control unit's re-entry hazard), the hardware leaves the
//!    functional pixel sequence; the functional cores follow it, swap-memory flips, stale
//!    triangles and all, and the pixels whose words then differ from the functional
//!    render's are reported ([`Timing::hazard_pixels`]). A frame that can never end (the
//!    published host's STDONE deadlock, a core that waits for a triangle after the last
//!    one) ends in [`sim::SimEnding::Deadlock`] at the period from which nothing moves.
//!    Only that last comparison needs the functional render's image, so
//!    [`simulate_frame`] runs without it (`theia render --cycles` runs it beside the
//!    render, on its own thread) and [`SimulatedFrame::compare`] finishes the timing.
//!
//! Counted as `tests/rtl/bench.v` counts: the bench's `DONE cycles=N` is
//! [`Timing::frame_cycles`]. The published test bench (`TestBench_THEIA.v`) loads the
//! texture memory word by word before it enables the host: [`published_bench_ns`].

pub mod ahead;
pub mod cost;
pub mod culled;
pub mod hardware;
pub mod record;
pub mod sim;
pub mod tmem;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::emu::core::alu::Vec3;
use crate::emu::core::output::OutputMemory;
use crate::emu::core::Core;
use crate::emu::core::CoreState;
use crate::emu::isa::registers::address;
use crate::emu::isa::registers::EntryPoint;
use crate::emu::machine::cull::{self, Culler, Exit};
use crate::emu::machine::{Frame, Machine};
use ahead::RowsAhead;
use culled::{RejectTiming, RowEntry};
use record::Recording;
use sim::{Course, Hazard, HazardKind, Routines, Setup, SimEnding, Stop};

/// The clock the frame time is given at unless `--clock` says otherwise: 100 MHz, the
/// only clock THEIA's sources name (`aDefinitions.v`'s `CLOCK_PERIOD` of 10 ns, which
/// its test bench runs). Neither the spec pack nor the published sources name the FPGA
/// clock of a synthesized build.
pub const DEFAULT_CLOCK_MHZ: f64 = 100.0;

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
    /// Give up when the host waits longer than this for one triangle's latches (a
    /// livelock: 50 million cycles by default, 25 times the longest generated frame).
    pub livelock: u64,
    /// The triangle loop in closed form where it holds (`sim::Setup::fast`); the same
    /// cycles either way.
    pub fast: bool,
}

impl TimingOptions {
    /// The fixed host, a program of `imem_len` instruction-memory words.
    pub fn new(imem_len: usize) -> TimingOptions {
        TimingOptions {
            host: HostKind::Fixed,
            instruction_words: instruction_words(imem_len),
            limit: 1 << 40,
            livelock: 50_000_000,
            fast: true,
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
    #[error("--cycles times at most {most} cores (the texture memory's arbiters keep a bit a core); this frame has {0}", most = MOST_CORES)]
    Cores(usize),
    #[error("{0}")]
    Fault(String),
}

/// A timed frame.
#[derive(Clone, Debug)]
pub struct Timing {
    pub course: Course,
    /// Whether the control units left the functional pixel sequence (a re-entry hazard,
    /// or a core that went on past its partition): the hardware's image may differ.
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
            SimEnding::Done(cycles) => Some(cycles),
            _ => None,
        }
    }

    pub fn hazards(&self) -> &[Hazard] {
        &self.course.hazards
    }
}

/// The pixels the cores of `machine` start in a frame that ends: every partition's.
pub fn timed_pixels(machine: &Machine<'_>) -> u64 {
    let pixels = machine.partitions().iter().map(|p| p.pixel_count() as u64);
    pixels.sum()
}

/// The most cores the cycle model times: [`tmem`]'s arbiters keep the cores requesting a
/// bank, and the ones granted, one bit each.
pub use tmem::MOST_CORES;

/// Whether `machine`'s frame has a hardware timing: a THEIA pixel stage, every partition,
/// at most [`MOST_CORES`] (what [`measure`] refuses, checked before a render spends its
/// time).
pub fn timeable(machine: &Machine<'_>) -> Result<(), TimingError> {
    if machine.stage().microcode_routine().is_none() {
        return Err(TimingError::ForeignStage(machine.stage().isa()));
    }
    if machine.active().len() != machine.partitions().len() {
        return Err(TimingError::Band);
    }
    match machine.partitions().len() {
        cores if cores > MOST_CORES => Err(TimingError::Cores(cores)),
        _ => Ok(()),
    }
}

/// Times `machine`'s frame.
pub fn measure(machine: &Machine<'_>, options: &TimingOptions) -> Result<Timing, TimingError> {
    measure_rendered(machine, options, None)
}

/// [`measure`], given `machine`'s functional frame where the caller has rendered it: a
/// frame the hazards change is then compared with it instead of rendered again. A frame
/// of other partitions (a supersampled render's output) is not `machine`'s and is ignored.
pub fn measure_rendered(
    machine: &Machine<'_>,
    options: &TimingOptions,
    rendered: Option<&Frame>,
) -> Result<Timing, TimingError> {
    simulate_frame(machine, options)?.compare(rendered)
}

/// A frame whose cycles are counted, its image not yet compared with the functional
/// render's ([`SimulatedFrame::compare`]): the simulation needs no render, so a caller
/// can run the two at once and compare once both are done.
pub struct SimulatedFrame<'m> {
    course: Course,
    machine: &'m Machine<'m>,
    /// [`Live::left_the_sequence`].
    left_the_sequence: bool,
    /// The live cores' output memories: the hardware's image.
    outputs: Vec<OutputMemory>,
}

/// The first half of [`measure`]: the machine's frame simulated clock by clock.
pub fn simulate_frame<'m>(
    machine: &'m Machine<'m>,
    options: &TimingOptions,
) -> Result<SimulatedFrame<'m>, TimingError> {
    simulate_frame_with_progress(machine, options, None)
}

/// [`simulate_frame`], counting in `progress` the pixels the cores start (RGU runs), which
/// come to [`timed_pixels`] for a frame that ends: a frame of many triangles takes far
/// longer to time than to render (each pixel's MAIN runs on every triangle).
pub fn simulate_frame_with_progress<'m>(
    machine: &'m Machine<'m>,
    options: &TimingOptions,
    progress: Option<&AtomicU64>,
) -> Result<SimulatedFrame<'m>, TimingError> {
    timeable(machine)?;
    let packets = u64::from(options.instruction_words.saturating_sub(1).div_ceil(2)).max(1);
    let setup = Setup {
        cores: machine.partitions().len(),
        triangles: machine.scene().triangles.len(),
        instruction_packets: packets,
        host_fix: options.host == HostKind::Fixed,
        limit: options.limit,
        livelock: options.livelock,
        fast: options.fast,
    };
    // Culling changes no cycle: the timing culls even when the render does not.
    let own = match machine.culler() {
        Ok(_) => None,
        Err(_) => Culler::new(
            machine.program(),
            &machine.scene().triangles,
            &machine.scene().config,
        )
        .ok(),
    };
    let culler = machine.culler().ok().or(own.as_ref());
    let mut live = Live::new(machine, culler);
    live.progress = progress;
    let course = with_rows_ahead(&mut live, |live| sim::simulate(&setup, live)).map_err(
        |stop| match stop {
            Stop::Fault(message) => TimingError::Fault(message),
        },
    )?;
    Ok(SimulatedFrame {
        course,
        machine,
        left_the_sequence: live.left_the_sequence,
        outputs: live.cores.into_iter().map(Core::into_output).collect(),
    })
}

impl SimulatedFrame<'_> {
    /// The timed frame, its hazard pixels found against `rendered` (the machine's
    /// functional frame, if the caller has it; rendered here if needed, and ignored when
    /// it is another machine's, a supersampled render's).
    pub fn compare(self, rendered: Option<&Frame>) -> Result<Timing, TimingError> {
        // Where the control units ran the functional sequence (no hazard, no core past its
        // partition), the cores wrote what the functional render writes.
        let rendered = rendered.filter(|frame| frame.partitions == self.machine.partitions());
        let hazard_pixels = match (self.left_the_sequence, rendered) {
            (false, _) => Vec::new(),
            (true, Some(frame)) => self.differences(frame),
            (true, None) => self.differences(&functional_frame(self.machine)?),
        };
        Ok(Timing {
            course: self.course,
            live: self.left_the_sequence,
            hazard_pixels,
        })
    }

    /// The pixels (core, k) whose output words differ from `frame`'s.
    fn differences(&self, frame: &Frame) -> Vec<(usize, usize)> {
        let mut pixels = Vec::new();
        let width = frame.width as usize;
        for (core, output) in self.outputs.iter().enumerate() {
            for (k, (x, y)) in self.machine.partitions()[core].pixels().enumerate() {
                let at = (y as usize * width + x as usize) * 3;
                let differs = (0..3).any(|c| {
                    let functional = frame.written[at + c].then_some(frame.words[at + c]);
                    output.read(3 * k + c) != functional
                });
                if differs {
                    pixels.push((core, k));
                }
            }
        }
        pixels
    }
}

/// The functional render's frame (what the cores write when no hazard strikes).
fn functional_frame(machine: &Machine<'_>) -> Result<Frame, TimingError> {
    machine
        .render(None)
        .map(|render| render.frame)
        .map_err(|e| TimingError::Fault(e.to_string()))
}

/// Runs `simulate` on `live` with the rows-ahead workers beside it (where the host has
/// the threads), and stops them when it returns or panics: the scope joins them before a
/// panic goes on, and workers never told to stop would keep it waiting forever.
fn with_rows_ahead<'m, T>(live: &mut Live<'m>, simulate: impl FnOnce(&mut Live<'m>) -> T) -> T {
    std::thread::scope(|scope| {
        let machine = live.machine;
        live.ahead = live
            .culled
            .and_then(|(culler, timing)| RowsAhead::start(scope, machine, culler, timing));
        let stops = StopsAhead(live);
        simulate(&mut *stops.0)
    })
}

/// Drops the rows-ahead workers' handle when it goes (the simulation is done, or a panic
/// unwinds it): they stop at their next row.
struct StopsAhead<'l, 'm>(&'l mut Live<'m>);

impl Drop for StopsAhead<'_, '_> {
    fn drop(&mut self) {
        self.0.ahead = None;
    }
}

/// The functional cores, run as the control units start their routines: the swap memory
/// flips at every MAIN start and the host's triangles land in the IO copies, so a MAIN
/// started twice on one triangle sees what the hardware's sees. Until a hazard, that is
/// the functional render's pixel sequence, watchdog and all: the budget is refilled per
/// pixel, as [`Machine::boot_core`] and the pixel sequence refill it.
struct Live<'m> {
    machine: &'m Machine<'m>,
    /// Whether the control units left the functional pixel sequence: a re-entry hazard
    /// (from then on the watchdog guards each routine: a hazard can make a pixel run MAIN
    /// far more often than it has triangles, and the hardware has no watchdog to stop
    /// it), or a core that went on past its partition's last pixel.
    left_the_sequence: bool,
    /// Per core, the pixels it started (RGU runs).
    pixels: Vec<usize>,
    cores: Vec<Core<'m>>,
    recordings: Vec<Recording>,
    /// Which triangle each core's swap copies hold (by the core's storage order: the copy
    /// the execution unit sees at parity 0, then the other); `None`: none yet, or the one
    /// past the list.
    held: Vec<[Option<usize>; 2]>,
    /// MAINs the culler rejects are timed from its values instead of interpreted.
    culled: Option<(&'m Culler, RejectTiming)>,
    /// Per core, the skipped MAINs whose registers are not written yet: the last one's
    /// triangle, the last that left at 178, and the ray (written before anything else
    /// runs, as the culled render writes a run of them).
    unwritten: Vec<Option<(usize, Option<usize>, Vec3)>>,
    /// Per core, a MAIN run ahead of its trigger ([`Routines::peek_main`]): its triangle
    /// (streamed in and flipped to already) and its run.
    prepared: Vec<Option<(usize, usize)>>,
    /// Per core, the copies whose rows do not hold their triangle yet (streamed while the
    /// core only ran culled MAINs, which read no swap memory), and the copy streamed last
    /// (bank 0's rows 12..18 mirror it).
    unstreamed: Vec<([bool; 2], usize)>,
    /// Per core, [`Live::reject_row`]'s row and the ray it is for.
    rows: Vec<(Option<Vec3>, Vec<RowEntry>)>,
    /// Rows computed ahead on another thread, if it runs.
    ahead: Option<RowsAhead>,
    /// Counts the pixels started, for a progress bar.
    progress: Option<&'m AtomicU64>,
}

impl<'m> Live<'m> {
    fn new(machine: &'m Machine<'m>, culler: Option<&'m Culler>) -> Live<'m> {
        let cores = machine
            .partitions()
            .iter()
            .map(|partition| {
                let words = (partition.pixel_count() * 3).max(OutputMemory::HARDWARE_WORDS);
                let mut core = Core::new(machine.program(), &machine.scene().texture, words);
                core.set_budget(machine.max_steps());
                for (row, value) in machine.scene().config.iter().enumerate() {
                    core.host_write(row as u16, *value);
                }
                core.host_write(6, partition.initial);
                core.host_write(7, partition.end);
                core
            })
            .collect();
        Live {
            machine,
            left_the_sequence: false,
            pixels: vec![0; machine.partitions().len()],
            recordings: vec![Recording::default(); machine.partitions().len()],
            held: vec![[None; 2]; machine.partitions().len()],
            unwritten: vec![None; machine.partitions().len()],
            prepared: vec![None; machine.partitions().len()],
            unstreamed: vec![([false; 2], 0); machine.partitions().len()],
            rows: vec![(None, Vec::new()); machine.partitions().len()],
            ahead: None,
            progress: None,
            culled: culler.and_then(|culler| Some((culler, RejectTiming::new(culler)?))),
            cores,
        }
    }
}

impl Live<'_> {
    /// Runs core `core`'s routine `entry` now: a MAIN the culler rejects is timed from its
    /// values (its registers written before anything else runs), anything else interpreted.
    fn run(&mut self, core: usize, entry: EntryPoint) -> Result<usize, Stop> {
        let per_pixel = matches!(
            entry,
            EntryPoint::Initial | EntryPoint::Cppu | EntryPoint::UserConstants | EntryPoint::Rgu
        );
        if per_pixel || self.left_the_sequence {
            self.cores[core].refill_budget();
        }
        if entry == EntryPoint::Main {
            if let Some(run) = self.skip_main(core) {
                return Ok(run);
            }
        }
        if let (Some((last, last_sum, ray)), Some((culler, _))) =
            (self.unwritten[core].take(), self.culled)
        {
            culler.write_skipped(&mut self.cores[core], last, last_sum, ray);
        }
        self.write_streamed(core);
        let (functional, recording) = (&mut self.cores[core], &mut self.recordings[core]);
        functional.run(entry, recording).map_err(|fault| {
            Stop::Fault(format!("core {core}, routine {}: {fault}", entry.name()))
        })?;
        Ok(recording.len() - 1)
    }

    /// Core `core`'s MAIN on the triangle its swap memory shows, if the culler rejects it
    /// and the budget covers it (as the culled render skips): booked without being
    /// interpreted; its run.
    fn skip_main(&mut self, core: usize) -> Option<usize> {
        let index = self.held[core][self.cores[core].parity()]?;
        let (_, timing) = self.culled?;
        if !cull::main_returns_false(&self.cores[core]) {
            return None;
        }
        let ray = self.cores[core].register(address::CREG_RAY_DIRECTION);
        let entry = self.reject_row(core, ray)[index];
        if entry == 0 || timing.exit_of(entry).instructions() > self.cores[core].budget_left() {
            return None;
        }
        self.book_skipped(core, index, ray, entry);
        self.recordings[core].push_main(RejectTiming::cycles_of(entry));
        Some(self.recordings[core].len() - 1)
    }

    /// Books core `core`'s skipped MAIN on triangle `index` under `ray` (row entry `entry`):
    /// its instructions against the budget, its registers to be written before the core
    /// next interprets code.
    fn book_skipped(&mut self, core: usize, index: usize, ray: Vec3, entry: RowEntry) {
        let Some((_, timing)) = self.culled else {
            unreachable!("only a culler skips MAINs")
        };
        let exit = timing.exit_of(entry);
        let earlier_sum = self.unwritten[core].and_then(|(_, sum, _)| sum);
        let last_sum = (exit == Exit::Sum).then_some(index).or(earlier_sum);
        self.unwritten[core] = Some((index, last_sum, ray));
        self.cores[core].charge(exit.instructions());
    }

    /// Core `core`'s [`RejectTiming::row`] under `ray` (kept while the ray stays).
    fn reject_row(&mut self, core: usize, ray: Vec3) -> &[RowEntry] {
        let Some((culler, timing)) = self.culled else {
            return &[];
        };
        let (seen, row) = &mut self.rows[core];
        if *seen != Some(ray) {
            // The RGU runs so far: this is the core's pixel `pixels - 1`.
            let pixel = self.pixels[core].wrapping_sub(1);
            if !(self.ahead.as_mut()).is_some_and(|a| a.take(core, pixel, ray, row)) {
                timing.row(culler, ray, row);
            }
            *seen = Some(ray);
        }
        row
    }

    /// The host's triangle (`None`: the one past the list) into core `core`'s IO copy:
    /// noted, written before the core next interprets code ([`Live::write_streamed`]).
    fn stream_into(&mut self, core: usize, triangle: Option<usize>) {
        let copy = 1 - self.cores[core].parity();
        self.held[core][copy] = triangle;
        self.unstreamed[core].0[copy] = true;
        self.unstreamed[core].1 = copy;
    }

    /// Writes the triangles streamed into core `core`'s copies since it last interpreted
    /// code, the last one last (bank 0 mirrors it).
    fn write_streamed(&mut self, core: usize) {
        let (stale, last) = self.unstreamed[core];
        for copy in [1 - last, last] {
            if !stale[copy] {
                continue;
            }
            let words =
                self.held[core][copy].map_or([[0; 3]; 7], |t| self.machine.scene().triangles[t]);
            let functional = &mut self.cores[core];
            // The host writes the copy the execution unit does not see.
            let shown = copy == functional.parity();
            if shown {
                functional.flip_parity();
            }
            functional.write_triangle_rows(&words);
            if shown {
                functional.flip_parity();
            }
        }
        self.unstreamed[core].0 = [false; 2];
    }
}

impl Routines for Live<'_> {
    fn start(&mut self, core: usize, entry: EntryPoint) -> Result<usize, Stop> {
        if entry == EntryPoint::Rgu {
            self.pixels[core] += 1;
            if let Some(progress) = self.progress {
                progress.fetch_add(1, Ordering::Relaxed);
            }
            // The functional sequence stops one pixel past the partition.
            self.left_the_sequence |=
                self.pixels[core] > self.machine.partitions()[core].pixel_count() + 1;
        }
        let prepared = match entry {
            EntryPoint::Main => self.prepared[core].take().map(|(_, run)| run),
            _ => None,
        };
        let run = match prepared {
            Some(run) => run,
            None => self.run(core, entry)?,
        };
        // The control unit is done with every routine before this one.
        self.recordings[core].forget_before(run);
        Ok(run)
    }

    fn hazard(&mut self, hazard: &Hazard) -> Result<(), Stop> {
        self.left_the_sequence |= hazard.kind == HazardKind::Reentry;
        Ok(())
    }

    fn peek_main(&mut self, core: usize, triangle: usize) -> Result<Option<(u32, bool)>, Stop> {
        let run = match self.prepared[core] {
            Some((prepared, run)) if prepared == triangle => run,
            Some(_) => return Ok(None),
            None => {
                self.stream_into(core, Some(triangle));
                self.cores[core].flip_parity();
                let run = self.run(core, EntryPoint::Main)?;
                self.prepared[core] = Some((triangle, run));
                run
            }
        };
        let run = self.recordings[core].run(run);
        Ok((run.events == 0).then_some((run.tail, run.value)))
    }

    fn recording(&self, core: usize) -> &Recording {
        &self.recordings[core]
    }

    fn streamed(&mut self, triangle: Option<usize>) {
        for core in 0..self.cores.len() {
            match (self.prepared[core], triangle) {
                (Some((prepared, _)), Some(triangle)) if prepared == triangle => {}
                _ => self.stream_into(core, triangle),
            }
        }
    }

    fn flip(&mut self, core: usize) {
        if self.prepared[core].is_none() {
            self.cores[core].flip_parity();
        }
    }

    fn culled_mains(&mut self, core: usize, first: usize, cycles: &mut [u32]) -> usize {
        let Some((culler, timing)) = self.culled else {
            return 0;
        };
        let functional = &self.cores[core];
        if self.prepared[core].is_some() || !cull::main_returns_false(functional) {
            return 0;
        }
        // Skipped MAINs write nothing before the core next interprets code: each sees
        // this ray and CREG_ZERO, and only the budget moves (refilled per MAIN once the
        // control units left the functional sequence, as `Live::run` refills it).
        let ray = functional.register(address::CREG_RAY_DIRECTION);
        let (mut left, full) = (functional.budget_left(), functional.budget());
        let refill = self.left_the_sequence;
        // Where even the costliest exits all fit the budget, only the accepted triangles
        // stop the run.
        let most = culler.biu().worst_exit().instructions();
        let fits = most
            <= if refill {
                full
            } else {
                left / cycles.len().max(1) as u64
            };
        let row = self.reject_row(core, ray).get(first..).unwrap_or_default();
        if fits {
            let count = cycles.len().min(row.len());
            let taken = row[..count]
                .iter()
                .position(|&entry| entry == 0)
                .unwrap_or(count);
            for (slot, &entry) in cycles.iter_mut().zip(&row[..taken]) {
                *slot = RejectTiming::cycles_of(entry);
            }
            return taken;
        }
        for (n, (slot, &entry)) in cycles.iter_mut().zip(row).enumerate() {
            if refill {
                left = full;
            }
            if entry == 0 || timing.exit_of(entry).instructions() > left {
                return n;
            }
            left -= timing.exit_of(entry).instructions();
            *slot = RejectTiming::cycles_of(entry);
        }
        cycles.len().min(row.len())
    }

    fn start_culled(&mut self, core: usize, first: usize, count: usize) -> usize {
        debug_assert!(count > 0 && self.prepared[core].is_none());
        let Some((_, timing)) = self.culled else {
            unreachable!("only a culler times MAINs ahead")
        };
        let ray = self.cores[core].register(address::CREG_RAY_DIRECTION);
        debug_assert_eq!(self.rows[core].0, Some(ray));
        // Streamed and flipped one after another: the two copies end holding the last two.
        let earlier = count.saturating_sub(2);
        if earlier % 2 == 1 {
            self.cores[core].flip_parity();
        }
        for index in first + earlier..first + count {
            self.stream_into(core, Some(index));
            self.cores[core].flip_parity();
        }
        // Booked as `Live::skip_main` books each (refilled per MAIN once the control
        // units left the functional sequence, as `Live::run` refills).
        let (functional, row) = (&mut self.cores[core], &self.rows[core].1);
        let (instructions, last_sum) = timing.booking(&row[first..first + count]);
        let last_sum = last_sum
            .map(|at| first + at)
            .or(self.unwritten[core].and_then(|(_, sum, _)| sum));
        if self.left_the_sequence {
            // Each refilled, then charged: the budget ends as the last one leaves it.
            let last = timing.exit_of(row[first + count - 1]).instructions();
            functional.book(instructions - last, count as u64 - 1);
            functional.refill_budget();
            functional.charge(last);
        } else {
            functional.charge_skipped(count as u64, instructions);
        }
        self.unwritten[core] = Some((first + count - 1, last_sum, ray));
        // Only the last one's run: the control unit is done with the others.
        let entry = self.rows[core].1[first + count - 1];
        self.recordings[core].push_main(RejectTiming::cycles_of(entry));
        let run = self.recordings[core].len() - 1;
        self.recordings[core].forget_before(run);
        run
    }
}

/// The published test bench's `Simulation.log` end time, in ns, for a frame of
/// `frame_cycles` ([`Timing::frame_cycles`]) on `cores` cores at `height` rows.
/// `TestBench_THEIA.v` runs a 10 ns clock (rising at 5, 15, ... ns), holds reset from 10 to
/// 110 ns, loads the texture memory one word per clock (196,608 words) and enables the
/// host at 1,966,190 ns, so the host's first enabled edge is at 1,966,195 ns where this
/// model's (and `tests/rtl/bench.v`'s) is period 12; the arbiters' phase is the same there
/// (196,608 is a multiple of every core count). `wDone` rises after the edge ending period
/// `frame_cycles - 1`; the bench then dumps `cores` partitions of `height / cores` rows of
/// `3 x height` words (sic: height), 11 ns each, and writes the end time. Measured: the
/// built-in scene at 8x8 on 4 cores, 631,861 cycles here, ends at 8,286,787 ns there.
pub fn published_bench_ns(frame_cycles: u64, cores: u64, height: u64) -> u64 {
    const FIRST_ENABLED_EDGE_NS: u64 = 1_966_195;
    let done = FIRST_ENABLED_EDGE_NS + 10 * (frame_cycles - sim::RESET_END - 1);
    done + cores * (height / cores) * 3 * height * 11
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_published_bench_s_end_time() {
        // The built-in scene at 8x8 on 4 cores (tests/rtl/bench.v: DONE cycles=631861;
        // TestBench_THEIA.v built by ../shared/rtl/build.sh --host-fix: DUMP START at
        // 8,284,675 ns, Simulation end time 8,286,787 ns).
        assert_eq!(published_bench_ns(631_861, 4, 8), 8_286_787);
    }

    /// The built-in scene at 16x16: small, and it meets re-entry hazards.
    pub(super) fn hazard_scene() -> crate::io::scene::Scene {
        builtin_scene(16, 16)
    }

    /// The progress counter counts each pixel a core starts: the frame's pixels once it
    /// ends, hazards and all (the built-in scene at 16x16 meets re-entries).
    #[test]
    fn the_progress_counter_ends_at_the_frame_s_pixels() {
        use crate::emu::core::Program;
        use crate::emu::machine::RenderOptions;
        let scene = hazard_scene();
        let machine = Machine::new(&scene, &RenderOptions::default()).expect("a machine");
        let options = TimingOptions::new(Program::default_imem().len());
        let counted = AtomicU64::new(0);
        let simulated = simulate_frame_with_progress(&machine, &options, Some(&counted));
        let timing = simulated.expect("simulated").compare(None).expect("timed");
        assert!(timing.frame_cycles().is_some() && !timing.hazards().is_empty());
        assert_eq!(timed_pixels(&machine), 256);
        assert_eq!(counted.load(Ordering::Relaxed), 256);
    }

    /// The built-in scene at `width` x `height`.
    fn builtin_scene(width: u32, height: u32) -> crate::io::scene::Scene {
        use crate::io::scene::obj::{default_scene, ObjOptions};
        let obj = ObjOptions {
            width,
            height,
            ..ObjOptions::default()
        };
        default_scene::load(&obj).expect("loads").scene
    }

    /// The built-in scene at 16x16 meets re-entry hazards (the control units leave the
    /// functional sequence): given the render's frame or not, the timing is the same, and
    /// a frame of other partitions is not taken for the machine's.
    #[test]
    fn a_frame_with_hazards_is_timed_the_same_with_the_render_s_frame_or_without() {
        use crate::emu::core::Program;
        use crate::emu::machine::RenderOptions;
        let scene = hazard_scene();
        let machine = Machine::new(&scene, &RenderOptions::default()).expect("a machine");
        let options = TimingOptions::new(Program::default_imem().len());
        let alone = measure(&machine, &options).expect("timed");
        assert!(alone.live);
        assert!(alone
            .hazards()
            .iter()
            .any(|h| h.kind == HazardKind::Reentry));
        let mut frame = machine.render(None).expect("renders").frame;
        let given = measure_rendered(&machine, &options, Some(&frame)).expect("timed");
        assert_eq!(given.frame_cycles(), alone.frame_cycles());
        assert_eq!(given.hazard_pixels, alone.hazard_pixels);
        // A frame whose words the hazards would not explain, but of other partitions:
        // ignored (the machine's own frame is rendered and compared instead).
        frame.words.iter_mut().for_each(|word| *word ^= 1);
        frame.partitions.pop();
        let other = measure_rendered(&machine, &options, Some(&frame)).expect("timed");
        assert_eq!(other.hazard_pixels, alone.hazard_pixels);
    }

    /// A frame that hangs with some cores done ends: they toggle their "latched" flags
    /// every period, so the machine never stands still, but it repeats itself. The
    /// built-in scene at 12x16 on 3 cores: a hazard leaves core 0 waiting for a triangle
    /// after the last one while the host waits for its pixel's commit (this ran to the
    /// 2^40-cycle limit, clock by clock, before), with the closed form or without.
    #[test]
    fn a_hang_beside_done_cores_ends_as_a_deadlock() {
        use crate::emu::core::Program;
        use crate::emu::machine::RenderOptions;
        let scene = builtin_scene(12, 16);
        let render = RenderOptions {
            cores: Some(3),
            ..RenderOptions::default()
        };
        let machine = Machine::new(&scene, &render).expect("a machine");
        let mut options = TimingOptions::new(Program::default_imem().len());
        let fast = measure(&machine, &options).expect("timed");
        let SimEnding::Deadlock { period, states } = &fast.course.ending else {
            panic!("{:?}", fast.course.ending);
        };
        assert_eq!(*period, 2_431_064);
        assert_eq!(states[1..], [sim::cu::DONE; 2]);
        let stranded = fast.hazards().last().expect("a hazard");
        assert_eq!(
            (stranded.kind, stranded.core),
            (HazardKind::WaitsAfterLast, 0)
        );
        assert_eq!(stranded.period, *period);
        options.fast = false;
        let stepped = measure(&machine, &options).expect("timed");
        assert_eq!(everything(&fast), everything(&stepped));
    }

    /// The texture memory's masks hold 32 cores: a frame on 32 is timed (with the closed
    /// form as stepping every period), one on 33 is refused, not timed with cores folded
    /// onto others (a shift past the mask: a panic in a debug build).
    #[test]
    fn the_model_times_32_cores_and_refuses_33() {
        use crate::emu::core::Program;
        use crate::emu::machine::RenderOptions;
        let (square, tall) = (builtin_scene(32, 32), builtin_scene(4, 33));
        let machine = |scene, cores| {
            let render = RenderOptions {
                cores: Some(cores),
                ..RenderOptions::default()
            };
            Machine::new(scene, &render).expect("a machine")
        };
        let mut options = TimingOptions::new(Program::default_imem().len());
        let thirty_two = machine(&square, 32);
        let fast = measure(&thirty_two, &options).expect("timed");
        assert_eq!(fast.course.cores.len(), 32);
        assert!(fast.frame_cycles().is_some(), "{:?}", fast.course.ending);
        options.fast = false;
        let stepped = measure(&thirty_two, &options).expect("timed");
        assert_eq!(everything(&fast), everything(&stepped));
        let refused = measure(&machine(&tall, 33), &options)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "--cycles times at most 32 cores (the texture memory's arbiters keep a bit a core); \
             this frame has 33"
        );
    }

    /// A panic in the simulation reaches the caller: the rows-ahead workers beside it stop
    /// (they waited forever to be called for more rows, and the scope for them). A frame of
    /// more rows than they compute ahead: 1,024 pixels a core.
    #[test]
    fn a_panic_in_the_simulation_stops_the_rows_ahead_workers() {
        use crate::emu::machine::RenderOptions;
        use std::panic::{catch_unwind, AssertUnwindSafe};
        let (sender, outcome) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build();
            let caught = pool.expect("a pool").install(|| {
                let scene = builtin_scene(64, 64);
                let machine = Machine::new(&scene, &RenderOptions::default()).expect("a machine");
                let mut live = Live::new(&machine, machine.culler().ok());
                catch_unwind(AssertUnwindSafe(|| {
                    with_rows_ahead(&mut live, |live| {
                        assert!(live.ahead.is_some(), "no workers to stop");
                        panic!("the simulation's fault");
                    })
                }))
            });
            let message = caught.map_err(|p| p.downcast_ref::<&str>().map(|m| m.to_string()));
            sender.send(message).expect("the test waits");
        });
        let ended = outcome.recv_timeout(std::time::Duration::from_secs(60));
        assert_eq!(ended, Ok(Err(Some("the simulation's fault".to_string()))));
    }

    /// Everything a timing reports, to compare two timings of one frame.
    fn everything(timing: &Timing) -> String {
        format!(
            "{:?} {:?} {:?} {} {:?}",
            timing.course.ending,
            timing.course.cores,
            timing.course.hazards,
            timing.live,
            timing.hazard_pixels
        )
    }

    /// The triangle loop's closed form (`sim::Setup::fast`) gives what stepping every
    /// period gives, on frames with re-entry hazards and livelocks (MAIN started 3 times
    /// or more on a triangle): the built-in scene at 16x16 on 4 cores with either host,
    /// and on 2 and 8 (the closed form also takes a pixel's triangles after a re-entry
    /// earlier in the pixel, from an ACK where every core started MAIN once since the
    /// ACK before).
    #[test]
    fn the_closed_form_times_as_stepping_every_period_does() {
        use crate::emu::core::Program;
        use crate::emu::machine::RenderOptions;
        let scene = hazard_scene();
        let hosts = [HostKind::Fixed, HostKind::Published];
        for (cores, host) in [(None, hosts[0]), (None, hosts[1]), (Some(2), hosts[0])]
            .into_iter()
            .chain([(Some(8), hosts[0])])
        {
            let render = RenderOptions {
                cores,
                ..RenderOptions::default()
            };
            let machine = Machine::new(&scene, &render).expect("a machine");
            let mut options = TimingOptions::new(Program::default_imem().len());
            options.host = host;
            let fast = measure(&machine, &options).expect("timed");
            options.fast = false;
            let stepped = measure(&machine, &options).expect("timed");
            assert_eq!(everything(&fast), everything(&stepped), "{cores:?} cores");
            let kinds =
                |kind: fn(&HazardKind) -> bool| fast.hazards().iter().any(|h| kind(&h.kind));
            assert!(kinds(|k| *k == HazardKind::Reentry), "{cores:?} cores");
            assert!(kinds(|k| matches!(k, HazardKind::Livelock { .. })));
        }
    }
}
