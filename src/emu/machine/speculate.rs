//! One core's pixels on several host threads, exactly: a core's partition is cut into
//! *chunks* of consecutive pixels, and every chunk but a core's first runs at once from a
//! guessed start, which is checked once the chunk before it has finished.
//!
//! # Why the frame is the one sequential execution gives
//!
//! A core's pixels are not independent: its state carries from one pixel to the next
//! (the pixel position and output address NPG advances, registers a shader leaves, the
//! texture colour of a miss, TMREAD's latch, the return register; the black first pixel of
//! a core shows that it matters). So chunk k (pixels `start..end`) starts from a *seed*:
//! the state a cheap pass of the core's boot routines, RGU, triangle loads and NPG leaves
//! before pixel `start - WARM_UP` (the *skeleton*, which runs no MAIN, PSU2 or shader),
//! warmed up by running the pixels `start - WARM_UP .. start` in full. It then runs its
//! pixels *tracked*: a [`Footprint`] records every element of the core's state (each
//! component of each register row, both swap copies, the latch and forwarding rows, the
//! return register, TMREAD's latch: `core::track`) whose first access in the chunk was a
//! read, and every element it wrote.
//!
//! When chunk k - 1 has finished, its end state S is the real state before pixel `start`
//! (by induction: chunk 0 starts from the booted core, which is exact). Chunk k is
//! accepted when S and the state it assumed agree on every element it read before writing
//! it, and on the swap parity and forwarding latches (compared whole): then every value
//! the chunk read was the value the sequential run reads, so it executed the same
//! instructions on the same values, wrote the same output words, counted the same
//! instructions and stopped (or faulted) at the same pixel. Its end state is then the
//! sequential one once the elements it never touched take S's values (they pass through
//! a chunk unchanged). Otherwise it is run again from S (a *re-run*), which is exact.
//!
//! The comparison covers all a pixel can read: everything an interpreted instruction
//! reads is in the elements (operand rows after forwarding, dynamic sources, stale rows),
//! and native code (the host's loads, culling, the acceleration structure, foreign pixel
//! stages, hit classification) reaches a core only through its rows and return register,
//! which a tracked core records. What is left out is what no pixel reads: the instruction
//! counters (each chunk counts its own, summed), the watchdog budget (refilled before
//! every pixel), how the next CALL is reached (reset when a routine starts), and the
//! output memory, which code only writes (each chunk writes its own window, laid over the
//! others in chunk order).
//!
//! # The split
//!
//! Work, not the emulated core count, decides it: with `T` host threads the pixels of a
//! batch (the whole frame without the acceleration structure) are cut into about
//! `CHUNKS_PER_THREAD * T` chunks over all cores (none smaller than [`MIN_CHUNK_PIXELS`]),
//! at row starts, and at tile-row starts where the structure is used, even where a tile
//! row is longer than a chunk (a chunk that starts inside a tile row would compute that
//! row's candidate verdicts again: with the faithful ROM, most of a pixel's cost). Every batch
//! (and every pass of rows, `machine/passes.rs`) starts each core from its real state and is
//! cut again, so each batch keeps every thread busy to its end; all chunks of all cores go
//! to rayon as one parallel iterator (work stealing). With one thread nothing is cut and a core runs as it always did.
//!
//! # Seeds, pieces and re-runs
//!
//! A seed is made for any pixel (`Made`) from the skeleton's states after a core's first
//! two pixels, when those agree with the skeleton's own at the core's first row starts;
//! otherwise (a user program, a shader that moves state NPG does not) the skeleton runs
//! once in order and leaves a state at each chunk start of the frame. A speculative chunk
//! runs in pieces, each tracked from the state the piece before it left, so a wrong guess
//! costs a piece, not a chunk; the pieces grow from [`FIRST_PIECE`] to [`PIECE`] pixels,
//! so that a stale value the first pixels read (and a later pixel writes again) costs
//! the pixels up to that write. Checking walks each core's pieces in
//! order as above while the batch's other chunks still run (`speculate/check.rs`): a
//! thread that has a core's real state goes on along that core untracked, the others take
//! chunks from the end, and a piece that disagrees runs again at once from the real state.
//! The count of re-runs is in [`ChunkStats`] and `theia render`'s summary.

mod check;

use std::ops::Range;
use std::sync::atomic::AtomicU64;

use rayon::prelude::*;

use std::sync::Arc;
use std::time::Instant;

use super::accel::{Accel, RayTree};
use super::hits::PixelHit;
use super::pixel::{output_words, set_pixel_position};
use super::progress::ProgressReporter;
use super::{FrameAccel, Machine, PixelAccel, PixelDone, RenderError, Stages, StructureUse};
use crate::emu::core::track::Footprint;
use crate::emu::core::{Core, CoreState, Fault, NoObserver, OutputMemory};
use crate::emu::isa::registers::{address, EntryPoint};
use crate::io::scene::Partition;

/// About how many chunks each host thread gets: enough that a thread which drew cheap
/// chunks (background) takes more while another works through the model.
pub const CHUNKS_PER_THREAD: usize = 16;
/// The smallest chunk a frame is cut into by default: each costs a warm-up pixel, a seed
/// and a comparison.
pub const MIN_CHUNK_PIXELS: usize = 256;
/// Pixels a chunk runs in full before its own, from the skeleton's state.
pub const WARM_UP: usize = 1;
/// Pixels of a chunk checked on their own (see `Machine::run_job`): a wrong guess costs
/// this many pixels again.
pub const PIECE: usize = 512;
/// The first piece of a chunk that starts from a seed: the pieces grow from this, each
/// twice the one before, to [`PIECE`]. A wrong guess is nearly always a stale value the
/// chunk's first pixels read before some pixel writes it again (the faithful ROM's
/// misses read BIU's last u and v, which a row's first tests write), and each piece is
/// checked from the state the piece before really left, so a wrong guess costs the
/// pixels up to that write, not a whole piece: at 1080p on the 80k-triangle mesh with
/// the faithful ROM, `--cores 1` on 2 threads, 46 ms of re-runs instead of 115.
pub const FIRST_PIECE: usize = 16;

/// How a frame's pixels are cut into chunks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Chunking {
    /// Pixels per chunk; `None`: from the host threads (one chunk per core and batch with
    /// one thread). Tests force small chunks, down to one pixel, every one but a core's first
    /// a guess (no thread goes on along a core from its real state).
    pub pixels: Option<usize>,
}

/// How far apart a range's chunks are cut toward where its threads meet: a chunk at most
/// this many times shorter than its distance from there, and never longer than the
/// uniform size.
pub const GUIDED: usize = 4;

/// The length from which `chunk` (a candidate chunk of `range`) is cut: `pixels`, but
/// shorter toward `meet`, down to its nearest point's distance from `meet` over
/// [`GUIDED`] (the shortest chunks there a row, or a tile row, long, and never under
/// [`MIN_CHUNK_PIXELS`]). Where threads share a core, one goes along it from its real
/// state while the others take its chunks from the end (`speculate/check.rs`); they meet
/// about where the one has done its share, and the last chunk to run, there, is short:
/// the other threads wait for it at the batch's end. With two threads on the
/// 80k-triangle mesh at 1080p, fixed ROM, `--cores 1`, the threads waited about 75 ms
/// in all (median of 5) at the end of 30 even chunks, 28 ms with 47 guided ones.
fn guided(meet: Option<usize>, chunk: Range<usize>, pixels: usize) -> usize {
    let Some(meet) = meet else {
        return pixels;
    };
    let distance = if chunk.end <= meet {
        meet - chunk.end
    } else {
        chunk.start.saturating_sub(meet)
    };
    (distance / GUIDED).clamp(MIN_CHUNK_PIXELS.min(pixels), pixels)
}

/// A speculative chunk's pieces: [`FIRST_PIECE`] pixels, then each twice the one
/// before up to [`PIECE`].
fn pieces(pixels: Range<usize>) -> Vec<Range<usize>> {
    let mut pieces = Vec::with_capacity(pixels.len() / PIECE + 8);
    let (mut start, mut size) = (pixels.start, FIRST_PIECE);
    while start < pixels.end {
        let end = (start + size).min(pixels.end);
        pieces.push(start..end);
        (start, size) = (end, (2 * size).min(PIECE));
    }
    if pieces.is_empty() {
        pieces.push(pixels);
    }
    pieces
}

/// Where a chunk starts from.
enum Start<'m> {
    /// The core's real state: the chunk is exact as it runs.
    Real(Box<Core<'m>>),
    /// The skeleton's state [`WARM_UP`] pixels before the chunk.
    Seed(Box<Core<'m>>),
    /// No seed (the skeleton stopped before it): the chunk waits for the real state.
    None,
}

/// Where a core's chunks get their seeds.
enum Seeds<'m> {
    /// The skeleton's states before each chunk start's warm-up, in order (taken as chunks
    /// start; `None` past where the skeleton stopped).
    Taken(Vec<Option<Box<Core<'m>>>>),
    /// Made for any pixel ([`Made::seed`]).
    Made(Made<'m>),
}

/// What seeds are made from: the booted core and the skeleton's states after its first
/// and its second pixel. Pixel by pixel, the ROM's NPG adds 1.0 to the position's x (or
/// moves it to the next row), 3 to each output word address and to CREG_PIXEL_PITCH, and
/// leaves everything else as the pixel before: so the state before pixel k is the state
/// after pixel 1 or 2 (whichever has k's swap parity) with those three registers moved on.
/// Seeds are only guesses, so nothing depends on this being so; a core uses made seeds
/// only where they equal the skeleton's at its first rows' starts (else the skeleton's).
struct Made<'m> {
    boot: Box<Core<'m>>,
    after: [Box<Core<'m>>; 2],
}

impl<'m> Made<'m> {
    /// The skeleton's state before pixel `k` of `partition`.
    fn seed(&self, partition: &Partition, k: usize) -> Core<'m> {
        if k == 0 {
            return (*self.boot).clone();
        }
        let template = &self.after[(k - 1) % 2];
        let moved = ((k - 1) / 2 * 2) as u32;
        let mut seed = (**template).clone();
        let (x, y) = partition.pixel(k).expect("a pixel of the partition");
        set_pixel_position(&mut seed, (x, y));
        for register in [
            address::CREG_CURRENT_OUTPUT_PIXEL,
            address::CREG_PIXEL_PITCH,
        ] {
            let words = seed.register(register).map(|w| w.wrapping_add(3 * moved));
            seed.write_register(register, words);
        }
        seed
    }
}

/// A chunk to run: pixels `pixels` of active core `core`.
struct Job<'m> {
    core: usize,
    pixels: Range<usize>,
    start: Start<'m>,
}

/// How a chunk's run ended early.
#[derive(Debug)]
pub(super) enum Ending {
    /// NPG asked for no more pixels.
    Finished,
    Failed(RenderError),
}

/// What one chunk produced.
pub(super) struct ChunkRun<'m> {
    pixels: Range<usize>,
    /// The core after the chunk's last pixel (its output memory taken out).
    core: Box<Core<'m>>,
    pub output: OutputMemory,
    pub hits: Vec<PixelHit>,
    /// `None`: the chunk ran to its end and NPG asked for more.
    ending: Option<Ending>,
    instructions: u64,
    culled: u64,
    unknown_cost: u64,
    /// For a chunk that started from a seed: the state it assumed after the warm-up and
    /// what it read of it. `None` with a seed: the warm-up failed, nothing ran.
    assumed: Option<(Box<Core<'m>>, Box<Footprint>)>,
    speculative: bool,
}

/// The output words and hits of consecutive pixels of one core, from `start` on.
pub(super) struct Piece {
    pub start: usize,
    pub output: OutputMemory,
    pub hits: Vec<PixelHit>,
}

/// A core's whole render: its pieces in pixel order and what it cost.
pub(super) struct CoreRun {
    pub pieces: Vec<Piece>,
    pub instructions: u64,
    pub culled: u64,
    pub unknown_cost: u64,
}

impl CoreRun {
    /// A core run whole, in one piece (for tests of frame assembly).
    #[cfg(test)]
    pub fn whole(core: Core<'_>, hits: Vec<PixelHit>) -> CoreRun {
        CoreRun {
            culled: core.culled_routines(),
            unknown_cost: core.unknown_cost_routines,
            instructions: core.instructions(),
            pieces: vec![Piece {
                start: 0,
                output: core.into_output(),
                hits,
            }],
        }
    }

    /// For each of the consecutive pixels `pixels`, the piece that holds its output words
    /// and what it hit; the pieces are walked in order, not searched for each pixel (a
    /// 1080p frame has thousands of pieces).
    pub fn pixels(
        &self,
        pixels: Range<usize>,
    ) -> impl Iterator<Item = (&Piece, Option<PixelHit>)> + '_ {
        let mut at = self
            .pieces
            .partition_point(|piece| piece.start <= pixels.start);
        at = at.saturating_sub(1);
        pixels.map(move |k| {
            while self.pieces.get(at + 1).is_some_and(|next| next.start <= k) {
                at += 1;
            }
            let piece = &self.pieces[at];
            (piece, piece.hits.get(k - piece.start).copied())
        })
    }

    /// Whether each piece wrote only its own pixels' words (3 per pixel), so that a word
    /// is found in the piece of its pixel; otherwise the pieces are laid over each other
    /// into one ([`CoreRun::merged`]).
    pub fn pieces_disjoint(&self) -> bool {
        // On all threads: a 1080p core has thousands of pieces, each scanned whole.
        self.pieces.par_iter().enumerate().all(|(i, piece)| {
            let end = self
                .pieces
                .get(i + 1)
                .map_or(usize::MAX / 3, |next| next.start);
            piece.output.written_within(3 * piece.start..3 * end)
        })
    }

    /// The core's output memory, its pieces laid over each other in order.
    pub fn merged(&self) -> OutputMemory {
        let mut merged = OutputMemory::new(self.pieces[0].output.capacity());
        for piece in &self.pieces {
            merged.overlay(&piece.output);
        }
        merged
    }
}

/// What the chunks of one frame did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ChunkStats {
    /// Chunks that started from a seed.
    pub speculative: u64,
    /// Of those, the ones run again from the real state.
    pub reruns: u64,
}

impl Machine<'_> {
    /// Pixels per chunk for this frame: the test knob, or from the host threads.
    fn chunk_pixels(&self, total: usize) -> Option<usize> {
        if let Some(pixels) = self.chunking.pixels {
            return Some(pixels.max(1));
        }
        let threads = rayon::current_num_threads();
        if threads <= 1 {
            return None;
        }
        Some((total / (threads * CHUNKS_PER_THREAD)).max(MIN_CHUNK_PIXELS))
    }

    /// Where chunks of `partition`'s pixels `range` start (besides `range.start`), about
    /// `pixels` apart: at row starts, or anywhere when rows are longer than a chunk; but
    /// where the structure is used, only at starts of `tile_rows`' tile rows, however
    /// long a tile row is. A chunk computes the candidates' verdicts of each tile it
    /// meets for all the tile's pixels (its four rows), so chunks cut inside tile rows
    /// compute each tile again for each of them: with the faithful ROM's many candidates
    /// (its wrap-around tests), where the verdicts are most of a pixel's cost, the 80k
    /// mesh at 1080p with `--cores 4` on 16 threads cut into chunks of a third of a row
    /// and spent 10.9 s of CPU instead of 4.2.
    fn chunk_starts(
        &self,
        partition: &Partition,
        range: Range<usize>,
        pixels: usize,
        tile_rows: Option<&RayTree>,
    ) -> Vec<usize> {
        let width = partition.end_pixel().0 as usize;
        if (width > pixels && tile_rows.is_none()) || self.chunking.pixels.is_some() {
            return (range.start + pixels..range.end).step_by(pixels).collect();
        }
        let (y0, y1) = (partition.start_pixel().1, partition.end_pixel().1);
        // Where the thread that goes along the core from its real state meets the others
        // (`guided`): after its share of the threads on each core. None where each thread
        // has a core of its own (they meet at the cores' ends).
        let (cores, threads) = (
            self.active_partitions().count(),
            rayon::current_num_threads(),
        );
        let meet = (threads > cores).then(|| range.start + range.len() * cores / threads);
        let mut starts = Vec::new();
        let mut last = range.start;
        for y in y0 + 1..y1 {
            let k = partition.row_start(y);
            let aligned = tile_rows.is_none_or(|tree| tree.starts_tile_row(y));
            if aligned
                && k > range.start
                && k < range.end
                && k - last >= guided(meet, last..k, pixels)
            {
                starts.push(k);
                last = k;
            }
        }
        starts
    }

    /// Per active core, where its chunks' seeds come from.
    fn seeds(&self, starts: &[Vec<usize>]) -> Vec<Seeds<'_>> {
        self.active_partitions()
            .zip(starts)
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|((index, partition), starts)| self.seeds_of(index, partition, starts))
            .collect()
    }

    /// Seeds for one core's chunk `starts`: made at will when the skeleton's first pixels
    /// show that its state advances as the ROM's NPG advances it ([`Seeds::Made`]), else
    /// the whole skeleton's snapshots.
    fn seeds_of(&self, index: usize, partition: &Partition, starts: &[usize]) -> Seeds<'_> {
        let Some(&last) = starts.last() else {
            return Seeds::Taken(Vec::new());
        };
        let Ok(boot) = self.boot_core(index, partition, &mut NoObserver) else {
            return Seeds::Taken(Vec::new());
        };
        // The skeleton far enough to check made seeds at its second, third and fourth
        // rows' first pixels and the pixels around them.
        let row = partition.end_pixel().0 as usize;
        let first = partition.row_start(partition.start_pixel().1 + 1);
        let checks: Vec<usize> = [
            1,
            2,
            3,
            first - 1,
            first,
            first + 1,
            first + row,
            first + 2 * row,
        ]
        .into_iter()
        .filter(|&k| k >= 1 && k < partition.pixel_count())
        .collect();
        let steps = checks.iter().copied().max().unwrap_or(0);
        let mut snapshots = std::collections::BTreeMap::new();
        self.skeleton(&boot, steps, |k, core| {
            if checks.contains(&k) {
                snapshots.insert(k, core.clone());
            }
        });
        let made = match (snapshots.get(&1), snapshots.get(&2), snapshots.get(&steps)) {
            (Some(first), Some(second), Some(_)) => Some(Made {
                boot: Box::new(boot.clone()),
                after: [Box::new(first.clone()), Box::new(second.clone())],
            }),
            _ => None,
        };
        if let Some(made) = made {
            let agrees = |k: &usize| {
                let (seed, skeleton) = (made.seed(partition, *k), &snapshots[k]);
                seed.same_state(skeleton) && seed.parity() == skeleton.parity()
            };
            if checks.iter().all(agrees) {
                return Seeds::Made(made);
            }
        }
        let mut taken: Vec<Option<Box<Core<'_>>>> = Vec::with_capacity(starts.len());
        self.skeleton(&boot, last - WARM_UP, |k, core| {
            while taken.len() < starts.len() && starts[taken.len()] - WARM_UP == k {
                taken.push(Some(Box::new(core.clone())));
            }
        });
        taken.resize_with(starts.len(), || None);
        Seeds::Taken(taken)
    }

    /// Runs the skeleton from `boot` for `steps` pixels: RGU once (the ROM's NPG reads the
    /// last column it computes), then per pixel the triangle loads (as the swap memory
    /// sees them) and NPG, calling `snapshot` with the state before pixel k (from k = 0),
    /// until NPG ends or a routine faults. (RGU at every pixel would double its cost, and
    /// a chunk's warm-up pixel runs it anyway.)
    fn skeleton<'m>(
        &'m self,
        boot: &Core<'m>,
        steps: usize,
        mut snapshot: impl FnMut(usize, &Core<'m>),
    ) {
        let mut core = boot.clone();
        for k in 0..=steps {
            snapshot(k, &core);
            if k == steps {
                break;
            }
            core.refill_budget();
            let step = |core: &mut Core<'_>| -> Result<bool, Fault> {
                if k == 0 {
                    core.run(EntryPoint::Rgu, &mut NoObserver)?;
                }
                core.load_triangles(&self.scene.triangles);
                core.load_dummy_triangle();
                core.run(EntryPoint::Npg, &mut NoObserver)
            };
            if step(&mut core) != Ok(true) {
                break;
            }
        }
    }

    /// Runs every active core through `ranges` (per core, the pixels of this batch;
    /// `states`: each core's real state at its range's start, `None` for a core that has
    /// ended) with `batch` as the structure (cut from `tree`), chunk by chunk in parallel;
    /// returns each core's chunks in order, checked and re-run where their guess was wrong.
    #[allow(clippy::too_many_arguments)]
    fn run_batch<'m>(
        &'m self,
        batch: Option<&Accel>,
        tree: Option<&RayTree>,
        ranges: &[Range<usize>],
        states: Vec<Option<Box<Core<'m>>>>,
        starts: &[Vec<usize>],
        seeds: &mut [Seeds<'m>],
        progress: Option<&AtomicU64>,
        stats: &mut ChunkStats,
        stages: &mut Stages,
    ) -> Vec<Vec<ChunkRun<'m>>> {
        // Cut by the batch's pixels, where seeds are made for any pixel.
        let total = ranges.iter().map(|range| range.len()).sum();
        let pixels = self.chunk_pixels(total);
        let mut jobs = Vec::new();
        for (core, (state, range)) in states.into_iter().zip(ranges).enumerate() {
            let Some(state) = state else { continue };
            let partition = self.active_partitions().nth(core).expect("active").1;
            let points: Vec<(usize, Start<'m>)> = match &mut seeds[core] {
                Seeds::Taken(taken) => starts[core]
                    .iter()
                    .zip(taken.iter_mut())
                    .filter(|(&k, _)| k > range.start && k < range.end)
                    .map(|(&k, seed)| (k, seed.take().map_or(Start::None, Start::Seed)))
                    .collect(),
                Seeds::Made(made) => pixels
                    .map(|pixels| self.chunk_starts(partition, range.clone(), pixels, tree))
                    .unwrap_or_default()
                    .into_iter()
                    .map(|k| (k, Start::Seed(Box::new(made.seed(partition, k - WARM_UP)))))
                    .collect(),
            };
            let mut from = range.start;
            let mut start = Start::Real(state);
            for (to, next) in points {
                jobs.push(Job {
                    core,
                    pixels: from..to,
                    start,
                });
                (from, start) = (to, next);
            }
            jobs.push(Job {
                core,
                pixels: from..range.end,
                start,
            });
        }
        let running = Instant::now();
        let checked = self.run_and_check(jobs, ranges.len(), batch, progress);
        stages.pixels += running.elapsed();
        stages.chunks += checked.chunks;
        stages.chunk_time += checked.chunk_time;
        stages.longest_chunk = stages.longest_chunk.max(checked.longest);
        stages.check += checked.check_time;
        stats.speculative += checked.stats.speculative;
        stats.reruns += checked.stats.reruns;
        checked.runs
    }

    /// Runs one chunk: from the real state in one piece, from a seed in pieces growing
    /// from [`FIRST_PIECE`] to [`PIECE`] pixels ([`pieces`]), each started from the state
    /// the piece before left and checked on its own, so that a wrong guess (a miss reading
    /// registers a pixel far back left, as the faithful ROM's BIU's last u and v) costs
    /// the pieces up to the pixel that writes them again, not the chunk. A chunk whose
    /// seed cannot warm up runs nothing: its check runs it from the real state.
    fn run_job<'m>(
        &'m self,
        job: Job<'m>,
        batch: Option<&Accel>,
        progress: Option<&AtomicU64>,
    ) -> Vec<ChunkRun<'m>> {
        let mut accel = PixelAccel::new(batch);
        let (core, speculative) = match job.start {
            Start::Real(core) => (core, false),
            Start::None => return vec![self.unstarted(job.pixels)],
            Start::Seed(mut core) => {
                // The warm-up's output words are not the chunk's: a memory of no words
                // drops them (a seed's memory would grow to hold them).
                core.replace_output(OutputMemory::new(0));
                for _ in 0..WARM_UP {
                    core.refill_budget();
                    let warm = self.run_pixel(&mut core, &mut NoObserver, &mut accel);
                    if !matches!(warm, Ok(PixelDone { more: true, .. })) {
                        return vec![self.unstarted(job.pixels)];
                    }
                }
                (core, true)
            }
        };
        let pieces = if speculative {
            pieces(job.pixels.clone())
        } else {
            vec![job.pixels.clone()]
        };
        let mut runs = Vec::with_capacity(pieces.len());
        let mut core = Some(core);
        for pixels in pieces {
            let Some(state) = core.take() else { break };
            let end = pixels.end;
            let run = self.run_piece(job.core, state, pixels, speculative, &mut accel, progress);
            if run.ending.is_none() && end < job.pixels.end {
                core = Some(Box::new((*run.core).clone()));
            }
            runs.push(run);
        }
        runs
    }

    /// Runs pixels `pixels` of active core `index` from `core`, tracked when `tracked`.
    fn run_piece<'m>(
        &'m self,
        core_index: usize,
        mut core: Box<Core<'m>>,
        pixels: Range<usize>,
        tracked: bool,
        accel: &mut PixelAccel<'_>,
        progress: Option<&AtomicU64>,
    ) -> ChunkRun<'m> {
        let (index, partition) = self
            .active_partitions()
            .nth(core_index)
            .expect("active core");
        let assumed = tracked.then(|| {
            let assumed = Box::new((*core).clone());
            core.track();
            assumed
        });
        let counters = (
            core.instructions(),
            core.culled_routines(),
            core.unknown_cost_routines,
        );
        let window = OutputMemory::window(3 * pixels.start, output_words(partition));
        drop(core.replace_output(window));
        let mut reporter = ProgressReporter::new(progress);
        let mut hits = Vec::with_capacity(pixels.len());
        let count = partition.pixel_count();
        let mut ending = None;
        for k in pixels.clone() {
            let more = match self.run_pixel(&mut core, &mut NoObserver, accel) {
                Ok(PixelDone { more, hit }) => {
                    hits.push(hit);
                    more
                }
                Err((entry, fault)) => {
                    ending = Some(Ending::Failed(
                        self.fault(index, partition, k, entry, fault),
                    ));
                    break;
                }
            };
            reporter.add(1, !more || k + 1 == pixels.end);
            ending = if !more {
                Some(Ending::Finished)
            } else if self.cancelled() {
                Some(Ending::Failed(RenderError::Cancelled))
            } else if k + 1 >= count {
                Some(Ending::Failed(RenderError::Runaway {
                    core: index,
                    pixels: count,
                }))
            } else {
                None
            };
            if ending.is_some() {
                break;
            }
        }
        let assumed = assumed.map(|assumed| {
            let footprint = core.untrack().expect("a tracked piece");
            (assumed, footprint)
        });
        let output = core.replace_output(OutputMemory::new(0));
        ChunkRun {
            pixels,
            instructions: core.instructions() - counters.0,
            culled: core.culled_routines() - counters.1,
            unknown_cost: core.unknown_cost_routines - counters.2,
            core,
            output,
            hits,
            ending,
            assumed,
            speculative: tracked,
        }
    }

    /// A chunk that could not start: the check runs it from the real state.
    fn unstarted(&self, pixels: Range<usize>) -> ChunkRun<'_> {
        ChunkRun {
            pixels,
            core: Box::new(Core::new(&self.program, &self.scene.texture, 0)),
            output: OutputMemory::new(0),
            hits: Vec::new(),
            ending: None,
            instructions: 0,
            culled: 0,
            unknown_cost: 0,
            assumed: None,
            speculative: true,
        }
    }
}

impl Machine<'_> {
    /// Every core on its own through the image rows before `end` (`None`: to its end),
    /// its pixels cut into chunks that run in parallel (one chunk per core with one
    /// thread); with the acceleration structure `accel`, batch by batch
    /// ([`FrameAccel`](super::FrameAccel)): each batch is built, every core renders its
    /// pixels of the batch while the next is built (on one thread, after the batch is
    /// dropped), and the batch is dropped. A batch may hold more tile rows than its
    /// cores render (those of a core that ended in the batch before), never fewer, and
    /// the structure only skips tests the intersection routine provably rejects. A core's
    /// state carries over from batch to batch and from pass to pass, so neither changes
    /// anything a core computes. `structure` receives what the batches held, `stats` how
    /// chunks went. A core that fails stops; the others run on (see
    /// [`Cores::finish`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn advance_alone<'m>(
        &'m self,
        cores: &mut Cores<'m>,
        accel: Option<&FrameAccel>,
        end: Option<u32>,
        progress: Option<&AtomicU64>,
        structure: &mut Option<StructureUse>,
        stats: &mut ChunkStats,
        stages: &mut Stages,
    ) -> Result<(), RenderError> {
        let last = end.unwrap_or(u32::MAX);
        if let (Ok(culler), Some(accel)) = (&self.culler, accel) {
            let batches = structure.get_or_insert_with(StructureUse::default);
            let all: Vec<Vec<u32>> = (accel.ends.iter())
                .map(|ends| ends.iter().map(|&row| row.min(last)).collect())
                .collect();
            // Each batch is built while the cores render the one before (a build ends in
            // a tail on one thread, and so does a batch's rendering): the rows a batch
            // holds are each running core's from the end of the batch before, which the
            // core reaches unless it ends first (its rows are then built for nothing).
            let build = |wanted: Option<Vec<bool>>| {
                let start = Instant::now();
                let batch = match (&accel.whole, wanted) {
                    (Some(whole), _) => Some(whole.clone()),
                    (None, Some(wanted)) if wanted.contains(&true) => {
                        Some(Arc::new(accel.tree.build(culler, &wanted)))
                    }
                    (None, _) => None,
                };
                (batch, start.elapsed())
            };
            let first = all
                .first()
                .map(|ends| accel.tree.tile_rows_of(cores.rows_before(ends)));
            let (mut next, mut time) = build(first);
            for (at, ends) in all.iter().enumerate() {
                if self.cancelled() {
                    return Err(RenderError::Cancelled);
                }
                if accel.whole.is_none() {
                    batches.build += time;
                }
                let batch = next.take();
                let wanted = all.get(at + 1).map(|after| {
                    accel
                        .tree
                        .tile_rows_of(cores.rows_between(Some(ends), after))
                });
                let render =
                    |cores: &mut Cores<'m>, stats: &mut ChunkStats, stages: &mut Stages| {
                        if let Some(batch) = &batch {
                            let structure = (Some(&**batch), Some(&accel.tree));
                            self.advance(cores, structure, Some(ends), progress, stats, stages);
                        }
                    };
                if let Some(batch) = &batch {
                    batches.add(batch);
                }
                // One thread renders, drops the batch, then builds the next, holding one
                // batch at a time as it always did.
                if rayon::current_num_threads() == 1 {
                    render(cores, stats, stages);
                    drop(batch);
                    (next, time) = build(wanted);
                    continue;
                }
                match wanted {
                    Some(wanted) => {
                        ((), (next, time)) =
                            rayon::join(|| render(cores, stats, stages), || build(Some(wanted)))
                    }
                    None => render(cores, stats, stages),
                }
            }
            stages.batches = batches.build;
        }
        // Without the structure, or should a core outlast its last batch (its NPG leaving
        // the partition's order), the rest with per-triangle culling.
        let ends = vec![last; cores.partitions.len()];
        self.advance(cores, (None, None), Some(&ends), progress, stats, stages);
        Ok(())
    }

    /// The active cores booted, with where their chunks start and their seeds (none when
    /// `seeded` is false: the cores run in lock-step groups); chunks start at tile rows of
    /// `tree`, where the structure is made with the machine.
    pub(super) fn cores(&self, seeded: bool, tree: Option<&RayTree>) -> Cores<'_> {
        let partitions: Vec<(usize, &Partition)> = self.active_partitions().collect();
        // Fixed for the frame: where made seeds do not apply, the skeleton's snapshots
        // must be taken in one pass (batches cut chunks too, as they come).
        let total = partitions.iter().map(|(_, p)| p.pixel_count()).sum();
        let starts: Vec<Vec<usize>> = match self.chunk_pixels(total).filter(|_| seeded) {
            Some(pixels) => partitions
                .iter()
                .map(|(_, p)| self.chunk_starts(p, 0..p.pixel_count(), pixels, tree))
                .collect(),
            None => vec![Vec::new(); partitions.len()],
        };
        let seeds = self.seeds(&starts);
        let progress = partitions
            .par_iter()
            .map(|&(index, partition)| {
                let booted = self.boot_core(index, partition, &mut NoObserver);
                CoreProgress::new(booted.map(Box::new))
            })
            .collect();
        Cores {
            partitions,
            starts,
            seeds,
            progress,
        }
    }

    /// Runs every core on to the row `ends` names for it (`u32::MAX`: to its end), with
    /// `structure` (a batch and the tree it was cut from) as the structure.
    fn advance<'m>(
        &'m self,
        cores: &mut Cores<'m>,
        structure: (Option<&Accel>, Option<&RayTree>),
        ends: Option<&[u32]>,
        progress: Option<&AtomicU64>,
        stats: &mut ChunkStats,
        stages: &mut Stages,
    ) {
        let ranges: Vec<Range<usize>> = cores
            .progress
            .iter()
            .zip(&cores.partitions)
            .enumerate()
            .map(|(c, (core, (_, partition)))| {
                let end = match ends.map(|ends| ends[c]) {
                    Some(row) if row != u32::MAX => partition.row_start(row),
                    _ => partition.pixel_count(),
                };
                core.done..end.max(core.done)
            })
            .collect();
        let states: Vec<_> = cores
            .progress
            .iter_mut()
            .zip(&ranges)
            // A core with nothing to do keeps its state (and takes no seed).
            .map(|(core, range)| match range.is_empty() {
                true => None,
                false => core.state.take(),
            })
            .collect();
        let (batch, tree) = structure;
        let runs = self.run_batch(
            batch,
            tree,
            &ranges,
            states,
            &cores.starts,
            &mut cores.seeds,
            progress,
            stats,
            stages,
        );
        for ((core, runs), range) in cores.progress.iter_mut().zip(runs).zip(&ranges) {
            if !range.is_empty() {
                core.add(runs);
            }
        }
    }
}

/// The active cores of a frame being rendered.
pub(super) struct Cores<'m> {
    /// Each with its core number.
    pub partitions: Vec<(usize, &'m Partition)>,
    /// Where chunks start, besides batch starts ([`Machine::chunk_starts`]).
    starts: Vec<Vec<usize>>,
    /// Where their chunks' seeds come from.
    seeds: Vec<Seeds<'m>>,
    pub progress: Vec<CoreProgress<'m>>,
}

impl Cores<'_> {
    /// The image rows each running core has left before the row `ends` names for it.
    fn rows_before<'e>(&'e self, ends: &'e [u32]) -> impl Iterator<Item = Range<u32>> + 'e {
        self.rows_between(None, ends)
    }

    /// The image rows each running core has left before the row `ends` names for it,
    /// from the row `from` names for it on (`None`: from its next pixel's).
    fn rows_between<'e>(
        &'e self,
        from: Option<&'e [u32]>,
        ends: &'e [u32],
    ) -> impl Iterator<Item = Range<u32>> + 'e {
        self.progress
            .iter()
            .zip(&self.partitions)
            .zip(ends)
            .enumerate()
            .filter(|(_, ((core, _), _))| core.state.is_some())
            .map(move |(c, ((core, (_, partition)), &end))| {
                let next = partition.pixel(core.done).map_or(u32::MAX, |(_, y)| y);
                let start = from.map_or(next, |from| next.max(from[c]));
                start..partition.end_pixel().1.min(end)
            })
    }

    /// Each core's pieces since the last call, in pixel order (its counts stay).
    pub fn take_pieces(&mut self) -> Vec<CoreRun> {
        self.progress
            .iter_mut()
            .map(|core| CoreRun {
                pieces: std::mem::take(&mut core.run.pieces),
                instructions: 0,
                culled: 0,
                unknown_cost: 0,
            })
            .collect()
    }

    /// Every core's run (its counts, and the pieces not taken), or the lowest-numbered
    /// failing core's error: every core runs to its end or its fault, so that is the
    /// error whatever the threads' timing and however the frame is cut into passes.
    pub fn finish(self) -> Result<Vec<CoreRun>, RenderError> {
        self.progress
            .into_iter()
            .map(CoreProgress::finish)
            .collect()
    }

    /// Whether some core has failed (the render's outcome is then an error).
    pub fn failed(&self) -> bool {
        self.progress.iter().any(|core| core.failed.is_some())
    }
}

/// One core's render so far, from batch to batch and pass to pass.
pub(super) struct CoreProgress<'m> {
    /// Its real state at pixel `done`; `None` once it ended (or did not boot).
    pub state: Option<Box<Core<'m>>>,
    pub done: usize,
    run: CoreRun,
    /// How it failed (booting, or at a pixel).
    failed: Option<RenderError>,
}

impl<'m> CoreProgress<'m> {
    fn new(booted: Result<Box<Core<'m>>, RenderError>) -> Self {
        let mut run = CoreRun {
            pieces: Vec::new(),
            instructions: 0,
            culled: 0,
            unknown_cost: 0,
        };
        let (state, failed) = match booted {
            Ok(core) => {
                // The boot routines count too.
                run.instructions = core.instructions();
                run.culled = core.culled_routines();
                (Some(core), None)
            }
            Err(error) => (None, Some(error)),
        };
        CoreProgress {
            state,
            done: 0,
            run,
            failed,
        }
    }

    /// The checked chunks of a batch, in order: the state after the last goes on, unless
    /// the core ended there.
    fn add(&mut self, runs: Vec<ChunkRun<'m>>) {
        for chunk in runs {
            self.done = chunk.pixels.start + chunk.hits.len();
            self.run.instructions += chunk.instructions;
            self.run.culled += chunk.culled;
            self.run.unknown_cost += chunk.unknown_cost;
            self.run.pieces.push(Piece {
                start: chunk.pixels.start,
                output: chunk.output,
                hits: chunk.hits,
            });
            match chunk.ending {
                None => self.state = Some(chunk.core),
                Some(Ending::Finished) => self.state = None,
                Some(Ending::Failed(error)) => {
                    self.state = None;
                    self.failed = Some(error);
                }
            }
        }
    }

    /// The core's pixels from `done` on as a lock-step group ran them: `core` after
    /// them (its output memory holding their words), with `before` its instruction
    /// counts before; `ended` when NPG asked for no more.
    pub fn add_grouped(
        &mut self,
        mut core: Core<'m>,
        before: (u64, u64),
        hits: Vec<PixelHit>,
        ended: bool,
    ) {
        self.run.instructions += core.instructions() - before.0;
        self.run.culled += core.culled_routines() - before.1;
        let output = core.replace_output(OutputMemory::new(0));
        let start = self.done;
        self.done += hits.len();
        self.run.pieces.push(Piece {
            start,
            output,
            hits,
        });
        self.state = (!ended).then(|| Box::new(core));
    }

    fn finish(self) -> Result<CoreRun, RenderError> {
        match self.failed {
            Some(error) => Err(error),
            None => Ok(self.run),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::machine::tests::tiny_scene;
    use crate::emu::machine::{AccelUse, RenderOptions};

    /// Chunks shorter than a row start anywhere, but never inside a tile row where the
    /// structure is used (each chunk would compute the verdicts of the tiles it meets
    /// again).
    #[test]
    fn chunks_start_at_tile_rows_where_the_structure_is_used_however_short() {
        let scene = tiny_scene(64, 48);
        let options = RenderOptions {
            cores: Some(1),
            accel: AccelUse::Always,
            ..RenderOptions::default()
        };
        let machine = Machine::new(&scene, &options).expect("a machine");
        let tree = &machine.accel().expect("culling").expect("wanted").tree;
        let partition = machine.partitions()[0];
        let all = 0..partition.pixel_count();
        let free = machine.chunk_starts(&partition, all.clone(), 20, None);
        assert_eq!(free[..3], [20, 40, 60], "anywhere without the structure");
        let starts = machine.chunk_starts(&partition, all, 20, Some(tree));
        assert!(starts.len() > 3, "{starts:?}");
        for k in starts {
            let (x, y) = partition.pixel(k).expect("a pixel");
            assert_eq!(x, 0, "pixel {k} starts a row");
            assert!(tree.starts_tile_row(y), "row {y} starts a tile row");
        }
    }

    /// Row-aligned chunks shorten toward where the threads on a core meet (with two
    /// threads on one core, the middle of its range): the last to run is short.
    #[test]
    fn chunks_shorten_toward_the_middle_where_the_threads_meet() {
        let scene = tiny_scene(64, 480);
        let options = RenderOptions {
            cores: Some(1),
            ..RenderOptions::default()
        };
        let machine = Machine::new(&scene, &options).expect("a machine");
        let partition = machine.partitions()[0];
        let all = 0..partition.pixel_count();
        let two = rayon::ThreadPoolBuilder::new().num_threads(2).build();
        let starts = || machine.chunk_starts(&partition, all.clone(), 1024, None);
        let mut cuts = two.expect("a pool").install(starts);
        cuts.insert(0, 0);
        cuts.push(all.end);
        let lengths: Vec<usize> = cuts.windows(2).map(|w| w[1] - w[0]).collect();
        let n = lengths.len();
        assert_eq!(
            lengths[..3],
            [1024; 3],
            "full far from the middle: {lengths:?}"
        );
        assert_eq!(
            lengths[n - 4..n - 1],
            [1024; 3],
            "and near the end: {lengths:?}"
        );
        let middle = cuts.iter().position(|&k| k > all.end / 2).expect("a cut") - 1;
        assert_eq!(
            lengths[middle], MIN_CHUNK_PIXELS,
            "the shortest at the middle"
        );
        // All but the last (the rest of the range) between the shortest and the full length.
        let full = MIN_CHUNK_PIXELS..=1024;
        assert!(
            lengths[..n - 1].iter().all(|n| full.contains(n)),
            "{lengths:?}"
        );
        assert!(cuts.iter().all(|k| k % 64 == 0), "at row starts");
    }

    #[test]
    fn a_speculative_chunk_runs_in_pieces_that_grow_to_the_full_size() {
        let sizes: Vec<usize> = pieces(1000..3000).iter().map(|p| p.len()).collect();
        assert_eq!(sizes, [16, 32, 64, 128, 256, 512, 512, 480]);
        let all = pieces(1000..3000);
        assert!(all.windows(2).all(|w| w[0].end == w[1].start), "{all:?}");
        assert_eq!((all[0].start, all[all.len() - 1].end), (1000, 3000));
        // Shorter than the first piece, and empty: one piece.
        assert_eq!(pieces(5..9), vec![Range { start: 5, end: 9 }]);
        assert_eq!(pieces(5..5), vec![Range { start: 5, end: 5 }]);
    }
}
