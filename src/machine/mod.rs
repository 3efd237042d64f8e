//! The whole machine: the host configures every core, streams the triangles through the
//! swap memory for every pixel, and the control unit sequences the microcode routines.
//! Each core renders its own partition; partitions run on rayon workers and share nothing
//! writable, as in the hardware. Triangles BIU provably rejects can skip MAIN with
//! identical results ([`cull`]).

pub mod accel;
pub mod band;
pub mod cull;
pub mod fingerprint;
pub mod hits;
pub mod speculate;
pub mod ssaa;
pub mod triangles;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::core::alu::Vec3;
use crate::core::exec::{Core, Fault, NoObserver, Observer};
use crate::core::group::{self, lanes_of, Abandoned, CoreGroup, LaneMask, LANES};
use crate::core::program::Program;
use crate::core::rom::{rom, RomVariant};
use crate::core::CoreState;
use crate::core::OutputMemory;
use crate::isa::registers::{address, EntryPoint};
use crate::isa::Word;
use crate::scene::{Partition, Scene};
use crate::stage::{PixelStage, ShadingCore, TheiaPixelShader};
use accel::{Accel, AccelRefusal, RayTree, RowVerdicts};
pub use band::Band;
use cull::{Culler, Refusal};
use hits::PixelHit;
use speculate::{ChunkStats, Chunking, CoreRun};
use triangles::{Candidates, CulledRuns, Every, TileCandidates};

/// How to run a frame.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    pub rom: RomVariant,
    /// `Some(n)`: split the image into `n` row bands; `None`: the scene's own partitions.
    pub cores: Option<u32>,
    /// Instruction memory (entry table + user code) replacing the scene's.
    pub imem: Option<Vec<Word>>,
    /// Per-pixel instruction budget; `None` picks one from the triangle count.
    pub max_steps: Option<u64>,
    /// Skip MAIN for triangles BIU provably rejects, leaving the core in the state MAIN
    /// would have left (identical output and instruction counts; see [`cull`]). On by
    /// default; refused automatically when MAIN/BIU are not the ROM's.
    pub culling: bool,
    /// Whether cores run in lock-step groups ([`CoreGroup`]); identical output either way.
    pub lockstep: Lockstep,
    /// The program that shades each pixel; `None`: THEIA's PIXELSHADER routine.
    pub stage: Option<Arc<dyn PixelStage>>,
    /// Whether culling uses the acceleration structure ([`accel`]): identical output, but
    /// no instruction count where it skips triangles whose exit depends on the pixel.
    pub accel: AccelUse,
    /// Render only this band of the partitions ([`Band`]); `None`: all of them.
    pub band: Option<Band>,
    /// How each core's pixels are cut into chunks that run on several host threads
    /// ([`speculate`]); the default cuts by the work and the threads.
    pub chunking: Chunking,
    /// Supersampling: each pixel the mean of K x K samples rendered at K times the
    /// resolution ([`ssaa`]); 1: none. [`render`] and [`ssaa::Supersampler`] supersample;
    /// a [`Machine`] renders the scene it is given, at its resolution.
    pub ssaa: u32,
}

/// When culling uses the acceleration structure ([`accel`]) rather than testing every
/// triangle at every pixel. The output is identical either way; only speed differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AccelUse {
    /// For scenes of [`AccelUse::AUTO_TRIANGLES`] triangles or more, where building it
    /// pays off (measured: below that, per-triangle culling is as fast).
    #[default]
    Auto,
    /// Whenever culling applies (for tests and measurements).
    Always,
    /// Never: per-triangle culling only.
    Never,
}

impl AccelUse {
    pub const AUTO_TRIANGLES: usize = 512;
}

/// The user's choice of triangle-test shortcut (`--accel`): `auto` uses the acceleration
/// structure where it pays off, `cull` tests each triangle natively, `off` interprets
/// every test. Frames are identical in all three.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AccelMode {
    #[default]
    Auto,
    Cull,
    Off,
}

impl AccelMode {
    pub const ALL: [AccelMode; 3] = [AccelMode::Auto, AccelMode::Cull, AccelMode::Off];

    pub fn name(self) -> &'static str {
        match self {
            AccelMode::Auto => "auto",
            AccelMode::Cull => "cull",
            AccelMode::Off => "off",
        }
    }

    /// `options` with the culling and acceleration settings of this mode.
    pub fn apply(self, options: RenderOptions) -> RenderOptions {
        RenderOptions {
            culling: self != AccelMode::Off,
            accel: match self {
                AccelMode::Auto => AccelUse::Auto,
                AccelMode::Cull | AccelMode::Off => AccelUse::Never,
            },
            ..options
        }
    }
}

impl std::str::FromStr for AccelMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        AccelMode::ALL
            .into_iter()
            .find(|mode| mode.name() == s)
            .ok_or_else(|| format!("unknown mode `{s}`: auto, cull or off"))
    }
}

/// When to run cores in lock-step groups, one SIMD lane per core ([`CoreGroup`]), rather
/// than each core on its own. The output is identical either way; only speed differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lockstep {
    /// When it is faster: the CPU has the vector unit the groups are compiled for, culling
    /// does not apply (it leaves each core a different set of triangles to interpret, so
    /// lanes would mostly idle), and every worker thread gets a nearly full group.
    #[default]
    Auto,
    /// Whenever there are two cores or more (for tests and measurements).
    Always,
    /// Never: every core on its own.
    Never,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            rom: RomVariant::default(),
            cores: None,
            imem: None,
            max_steps: None,
            culling: true,
            lockstep: Lockstep::Auto,
            stage: None,
            accel: AccelUse::Auto,
            band: None,
            chunking: Chunking::default(),
            ssaa: 1,
        }
    }
}

/// A rendered frame: the output memories assembled into image order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    pub width: u32,
    pub height: u32,
    /// R, G, B output words per pixel, row-major (raw Q15.17 as the shader wrote them).
    pub words: Vec<u32>,
    /// Whether each word was written by an OMWRITE.
    pub written: Vec<bool>,
    /// The partition each core rendered (for the PPM's band-relative row comments).
    pub partitions: Vec<Partition>,
    /// What each pixel's ray hit, row-major ([`PixelHit`]).
    pub hits: Vec<PixelHit>,
}

impl Frame {
    /// Pixels whose closest hit only wrap-around or a negative t made possible.
    pub fn artifact_pixels(&self) -> usize {
        self.hits
            .iter()
            .filter(|hit| matches!(hit, PixelHit::Artifact(_)))
            .count()
    }

    /// Pixels with at least one channel no OMWRITE wrote.
    pub fn unwritten_pixels(&self) -> usize {
        self.written
            .chunks(3)
            .filter(|px| !px.iter().all(|&w| w))
            .count()
    }
}

/// The outcome of a render, with what it cost.
#[derive(Clone, Debug)]
pub struct Render {
    pub frame: Frame,
    /// Instructions executed; an upper bound when `instructions_exact` is false.
    pub instructions: u64,
    /// False when the acceleration structure skipped triangles whose exit (and so cost)
    /// depends on the pixel: then the count is not available, only a bound.
    pub instructions_exact: bool,
    pub elapsed: Duration,
    /// Cores that ran (those of the band, when there is one).
    pub cores: usize,
    pub triangles: usize,
    /// MAIN runs culling skipped (their instructions are counted in `instructions`).
    pub culled: u64,
    /// Why culling did not apply to this frame, if it did not.
    pub culling_refused: Option<Refusal>,
    /// Lock-step groups the cores ran in; 0 when each core ran on its own.
    pub lockstep_groups: usize,
    /// Whether the acceleration structure was used, and why not when it was refused.
    pub accel: Result<bool, AccelRefusal>,
    /// What the structure's batches held and cost, when the cores used it.
    pub structure: Option<StructureUse>,
    /// How the cores' pixels were cut into chunks run in parallel, and how many chunks
    /// had to run again ([`speculate`]).
    pub chunks: ChunkStats,
    /// Where the time went, the machine's preparation included.
    pub stages: Stages,
}

/// Where a frame's time went, stage by stage (wall-clock time; every stage but the seeds
/// of a core whose skeleton cannot be skipped runs on all threads).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stages {
    /// Every pixel's ray for the acceleration structure ([`Machine::new`]).
    pub rays: Duration,
    /// The quadtree of tiles over the rays.
    pub tree: Duration,
    /// Planning the structure's batches (and building it, when it is built whole).
    pub plan: Duration,
    /// Booting the cores and making the chunks' seeds ([`speculate`]).
    pub seeds: Duration,
    /// Building the structure's batches during the render.
    pub batches: Duration,
    /// The chunks' pixels.
    pub pixels: Duration,
    /// Checking chunks against the real state, and running wrong ones again.
    pub check: Duration,
    /// Putting the frame together from the cores' output memories.
    pub assemble: Duration,
    /// How the pixels divided: chunks run, the sum of their times and the longest one
    /// (what one thread alone cannot make shorter).
    pub chunks: u64,
    pub chunk_time: Duration,
    pub longest_chunk: Duration,
}

/// The acceleration structure's batches in one render.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StructureUse {
    /// Building the batches during the render (a structure built with the machine, in
    /// one batch, counts in [`Machine::accel_build`] instead).
    pub build: Duration,
    pub batches: usize,
    /// Tiles and candidates over all batches (a tile row two cores share may be built in
    /// two batches).
    pub tiles: u64,
    pub candidates: u64,
    /// The most candidates one batch held.
    pub most_candidates: u64,
}

impl StructureUse {
    fn add(&mut self, batch: &Accel) {
        self.batches += 1;
        self.tiles += batch.tile_count() as u64;
        self.candidates += batch.candidate_count() as u64;
        self.most_candidates = self.most_candidates.max(batch.candidate_count() as u64);
    }

    /// Candidate tests per pixel, on average over tiles.
    pub fn mean_candidates(&self) -> f64 {
        self.candidates as f64 / self.tiles.max(1) as f64
    }
}

/// A core stopped: which core, at which pixel, in which routine, and why.
#[derive(Debug, thiserror::Error)]
pub enum RenderError {
    #[error("core {core}, pixel ({x}, {y}), routine {routine}: {fault}", routine = entry.name())]
    Core {
        core: usize,
        x: u32,
        y: u32,
        entry: EntryPoint,
        fault: Fault,
    },
    #[error("core {core}: NPG kept asking for pixels after the {pixels} of its partition")]
    Runaway { core: usize, pixels: usize },
    #[error("{0}")]
    Config(String),
    /// [`Machine::cancel`] was raised before every core finished.
    #[error("the render was cancelled")]
    Cancelled,
}

/// The budget the watchdog allows one pixel when none is given: the ROM needs at most
/// about 80 instructions per triangle, so this leaves room for long shaders.
pub fn default_max_steps(triangles: usize) -> u64 {
    100_000 + 1_000 * triangles as u64
}

/// The partitions of a frame of `scene` rendered by `cores` cores (`None`: the scene's).
fn frame_partitions(scene: &Scene, cores: Option<u32>) -> Result<Vec<Partition>, RenderError> {
    let partitions = match cores {
        Some(0) => return Err(RenderError::Config("--cores must be at least 1".into())),
        // Each core renders a band of whole rows: more cores than rows is an error, not
        // a silent cut to the row count.
        Some(cores) if cores > scene.height() => {
            return Err(RenderError::Config(format!(
                "--cores {cores}: at most {} for this frame (each core renders a band of whole rows, and the frame has {})",
                scene.height(),
                scene.height()
            )))
        }
        Some(cores) => Partition::bands(scene.width(), scene.height(), cores),
        None => scene.partitions.clone(),
    };
    for (core, partition) in partitions.iter().enumerate() {
        partition
            .validate(scene.width(), scene.height())
            .map_err(|e| RenderError::Config(format!("partition {core}: {e}")))?;
    }
    Ok(partitions)
}

/// Everything that stays the same for all cores of a frame.
#[derive(Clone)]
pub struct Machine<'a> {
    pub scene: &'a Scene,
    pub program: Program,
    /// Every partition of the frame, whether this machine renders it or not.
    pub partitions: Vec<Partition>,
    /// The partitions this machine renders: all, or a band's ([`RenderOptions::band`]).
    pub active: Range<usize>,
    pub max_steps: u64,
    /// The culling tables, or why this frame is rendered without culling.
    pub culler: Result<Culler, Refusal>,
    /// Whether partitions run as lock-step groups ([`RenderOptions::lockstep`]).
    pub lockstep: Lockstep,
    /// The program that shades each pixel ([`RenderOptions::stage`]).
    pub stage: Arc<dyn PixelStage>,
    /// The acceleration structure (`Ok(None)`: not wanted for this frame).
    pub accel: Result<Option<FrameAccel>, AccelRefusal>,
    /// How long computing the rays and planning the structure took (and building it, when
    /// it is built in one batch with the machine).
    pub accel_build: Duration,
    /// How long preparing the structure took, stage by stage ([`Stages`]).
    pub stages: Stages,
    /// About how many candidates one batch of the structure may hold (4 bytes each):
    /// [`BATCH_CANDIDATES`] unless a test asks for smaller batches.
    batch_candidates: u64,
    /// How each core's pixels are cut into chunks ([`RenderOptions::chunking`]).
    chunking: Chunking,
    /// Raised by another thread to stop a render early ([`RenderError::Cancelled`]), e.g.
    /// when a newer edit makes the frame in flight worthless. Checked once per pixel.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl<'a> Machine<'a> {
    pub fn new(scene: &'a Scene, options: &RenderOptions) -> Result<Machine<'a>, RenderError> {
        Machine::with_batches(scene, options, batch_candidates(scene.triangles.len()))
    }

    /// [`Machine::new`] with batches of the acceleration structure of about
    /// `batch_candidates` candidates (for tests: batches never change a frame).
    pub fn with_batches(
        scene: &'a Scene,
        options: &RenderOptions,
        batch_candidates: u64,
    ) -> Result<Machine<'a>, RenderError> {
        let imem = options
            .imem
            .clone()
            .or_else(|| scene.program.clone())
            .unwrap_or_else(Program::default_imem);
        let partitions = frame_partitions(scene, options.cores)?;
        let active = match options.band {
            Some(band) => band.cores(partitions.len()).map_err(RenderError::Config)?,
            None => 0..partitions.len(),
        };
        let program = Program::new(rom(options.rom), &imem);
        let culler = if options.culling {
            Culler::new(&program, &scene.triangles, &scene.config)
        } else {
            Err(Refusal::Disabled)
        };
        let mut machine = Machine {
            scene,
            program,
            culler,
            accel: Ok(None),
            accel_build: Duration::ZERO,
            stages: Stages::default(),
            batch_candidates,
            partitions,
            active,
            lockstep: options.lockstep,
            stage: options
                .stage
                .clone()
                .unwrap_or_else(|| Arc::new(TheiaPixelShader)),
            max_steps: options
                .max_steps
                .unwrap_or_else(|| default_max_steps(scene.triangles.len())),
            chunking: options.chunking,
            cancel: None,
        };
        let wanted = match options.accel {
            AccelUse::Auto => scene.triangles.len() >= AccelUse::AUTO_TRIANGLES,
            AccelUse::Always => true,
            AccelUse::Never => false,
        };
        if let (true, Ok(culler)) = (wanted, &machine.culler) {
            let rows = machine.active_rows();
            let start = Instant::now();
            let rays = machine.precompute_rays(rows.clone());
            machine.stages.rays = start.elapsed();
            let tree = rays.and_then(|rays| {
                let start = Instant::now();
                let tree = RayTree::new(scene.width(), rows.start, rows.len() as u32, rays);
                machine.stages.tree = start.elapsed();
                tree
            });
            let start = Instant::now();
            machine.accel = tree.map(|tree| Some(machine.plan(tree, culler)));
            machine.stages.plan = start.elapsed();
            machine.accel_build = machine.stages.rays + machine.stages.tree + machine.stages.plan;
        }
        Ok(machine)
    }

    /// The structure's batches: the whole frame's tiles at once (built now) when their
    /// candidates fit [`Machine::batch_candidates`], for certain or by estimate; else each
    /// core's rows cut into as many batches as that budget needs, each holding about the
    /// same share of the core's candidates, so that every batch holds about the budget
    /// over all cores, which render it in parallel.
    fn plan(&self, tree: RayTree, culler: &Culler) -> FrameAccel {
        let cores = self.active.len();
        let tiles = u64::from(tree.tile_rows()) * u64::from(tree.tiles_per_row());
        let triangles = self.scene.triangles.len() as u64;
        let budget = self.batch_candidates.max(1);
        let per_row = (triangles * tiles > budget).then(|| {
            let stride = (triangles / ESTIMATE_SAMPLE).max(1);
            tree.estimate(culler, stride as usize)
        });
        // At most one batch per tile row: a core's batch is at least its next row.
        let batches = per_row.as_ref().map_or(1, |rows| {
            let total: u64 = rows.iter().sum();
            total.div_ceil(budget).clamp(1, u64::from(tree.tile_rows()))
        });
        let (Some(per_row), 2..) = (per_row, batches) else {
            let whole = tree.build_all(culler);
            return FrameAccel {
                tree,
                candidates: whole.candidate_count() as u64,
                whole: Some(Arc::new(whole)),
                ends: vec![vec![u32::MAX; cores]],
            };
        };
        let mut ends = vec![vec![u32::MAX; cores]; batches as usize];
        let weight = |y: u32| tree.tile_row(y).map_or(0, |row| per_row[row as usize]);
        for (core, partition) in self.partitions[self.active.clone()].iter().enumerate() {
            let rows = partition.start_pixel().1..partition.end_pixel().1;
            let total: u64 = rows.clone().map(weight).sum();
            let (mut sum, mut batch) = (0, 0);
            for y in rows {
                // Batch b ends at the first tile row its share of the core's candidates
                // reaches (a tile row split between batches would have its verdicts
                // computed in both).
                while batch + 1 < batches
                    && tree.starts_tile_row(y)
                    && sum * batches >= total * (batch + 1)
                {
                    ends[batch as usize][core] = y;
                    batch += 1;
                }
                sum += weight(y);
            }
        }
        FrameAccel {
            tree,
            whole: None,
            ends,
            candidates: per_row.iter().sum(),
        }
    }

    /// Candidate triangles over the frame's 4x4 tiles, exact or estimated (see
    /// [`FrameAccel::candidates`]), when the machine renders with the acceleration
    /// structure: what the frame's time grows with.
    pub fn expected_candidates(&self) -> Option<u64> {
        match &self.accel {
            Ok(Some(accel)) => Some(accel.candidates),
            _ => None,
        }
    }

    /// The structure for image rows `rows`, to render pixels there one by one as a render
    /// does (e.g. to trace one): the whole frame's, when the machine built it, or one
    /// batch for those rows.
    pub fn structure_for(&self, rows: Range<u32>) -> Option<Arc<Accel>> {
        let (Ok(culler), Ok(Some(accel))) = (&self.culler, &self.accel) else {
            return None;
        };
        if let Some(whole) = &accel.whole {
            return Some(whole.clone());
        }
        let wanted = accel.tree.tile_rows_of([rows]);
        Some(Arc::new(accel.tree.build(culler, &wanted)))
    }

    /// The partitions this machine renders, with their core numbers.
    pub fn active_partitions(&self) -> impl Iterator<Item = (usize, &Partition)> {
        self.partitions
            .iter()
            .enumerate()
            .skip(self.active.start)
            .take(self.active.len())
    }

    /// The image rows the active partitions touch.
    pub fn active_rows(&self) -> Range<u32> {
        let partitions = &self.partitions[self.active.clone()];
        let first = partitions.iter().map(|p| p.start_pixel().1).min();
        let end = partitions.iter().map(|p| p.end_pixel().1).max();
        first.unwrap_or(0)..end.unwrap_or(0)
    }

    /// Every pixel's CREG_RAY_DIRECTION in `rows` as RGU computes it, row by row in
    /// parallel: each active core boots, and for each of its pixels a copy of the booted
    /// core, its CREG_PIXEL_2D_POSITION set to the pixel, runs RGU (row-major result;
    /// pixels of those rows no active core renders keep a zero ray). The ROM's RGU reads
    /// nothing else that changes from pixel to pixel; where other code makes a pixel's ray
    /// differ, that pixel does not use the structure ([`TileCandidates::new`] compares).
    fn precompute_rays(&self, rows: Range<u32>) -> Result<Vec<Vec3>, AccelRefusal> {
        let width = self.scene.width() as usize;
        let booted = self
            .active_partitions()
            .collect::<Vec<_>>()
            .into_par_iter()
            .map(|(index, partition)| {
                let core = self.boot_core(index, partition, &mut NoObserver);
                core.map(|core| (index, partition, core))
                    .map_err(|e| AccelRefusal::Rays(e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut rays = vec![[0; 3]; width * rows.len()];
        rays.par_chunks_mut(width)
            .zip(rows)
            .try_for_each(|(row, y)| {
                for (index, partition, booted) in &booted {
                    let ((x0, y0), (x1, y1)) = (partition.start_pixel(), partition.end_pixel());
                    if y < y0 || y >= y1 {
                        continue;
                    }
                    let mut core = booted.clone();
                    let z = core.register(address::CREG_PIXEL_2D_POSITION)[2];
                    for x in if y == y0 { x0 } else { 0 }..x1 {
                        let position = [x << 17, y << 17, z];
                        core.write_register(address::CREG_PIXEL_2D_POSITION, position);
                        core.refill_budget();
                        core.run(EntryPoint::Rgu, &mut NoObserver)
                            .map_err(|fault| {
                                AccelRefusal::Rays(format!(
                                    "core {index}, pixel ({x}, {y}): {fault}"
                                ))
                            })?;
                        row[x as usize] = core.register(address::CREG_RAY_DIRECTION);
                    }
                }
                Ok(())
            })?;
        Ok(rays)
    }

    /// Renders every partition in parallel and assembles the frame. `progress` counts
    /// finished pixels across all cores.
    pub fn render(&self, progress: Option<&AtomicU64>) -> Result<Render, RenderError> {
        self.render_rows(progress, 0..self.scene.height())
    }

    /// [`Machine::render`] with a frame of image rows `rows` only (those of the active
    /// partitions, for a frame rendered in passes: [`ssaa`]).
    fn render_rows(
        &self,
        progress: Option<&AtomicU64>,
        rows: Range<u32>,
    ) -> Result<Render, RenderError> {
        let start = Instant::now();
        // Where the counter stood: a frame rendered in passes counts on from there.
        let counted = progress.map_or(0, |counter| counter.load(Ordering::Relaxed));
        let mut structure = None;
        let mut chunks = ChunkStats::default();
        let mut stages = self.stages;
        let (cores, lockstep_groups) = match self.render_lockstep(progress) {
            Some(grouped) => grouped,
            None => {
                if let Some(counter) = progress {
                    counter.store(counted, Ordering::Relaxed);
                }
                match self.render_core_by_core(progress, &mut structure, &mut chunks, &mut stages) {
                    Ok(cores) => (cores, 0),
                    // Skipped exits were charged at their most: only per-triangle culling
                    // stops a pixel exactly where the hardware's watchdog would.
                    Err(error)
                        if matches!(self.accel, Ok(Some(_)))
                            && !matches!(error, RenderError::Cancelled) =>
                    {
                        let exact = Machine {
                            accel: Ok(None),
                            ..self.clone()
                        };
                        if let Some(counter) = progress {
                            counter.store(counted, Ordering::Relaxed);
                        }
                        return exact.render_rows(progress, rows);
                    }
                    Err(error) => return Err(error),
                }
            }
        };
        let assembling = Instant::now();
        let frame = self.assemble(&cores, rows);
        stages.assemble = assembling.elapsed();
        Ok(Render {
            frame,
            instructions: cores.iter().map(|c| c.instructions).sum(),
            instructions_exact: cores.iter().all(|c| c.unknown_cost == 0),
            elapsed: start.elapsed(),
            cores: self.active.len(),
            triangles: self.scene.triangles.len(),
            culled: cores.iter().map(|c| c.culled).sum(),
            culling_refused: self.culler.as_ref().err().cloned(),
            lockstep_groups,
            accel: match &self.accel {
                Ok(accel) => Ok(accel.is_some() && lockstep_groups == 0),
                Err(refusal) => Err(refusal.clone()),
            },
            structure,
            chunks,
            stages,
        })
    }

    /// The cores in lock-step groups, one group per worker thread (more when there are
    /// more cores than a group holds); `None` when lock-step does not apply or a core
    /// faulted (the caller then renders core by core, which reports the fault exactly).
    fn render_lockstep(&self, progress: Option<&AtomicU64>) -> Option<(Vec<CoreRun>, usize)> {
        let cores = self.active.len();
        let groups = rayon::current_num_threads()
            .max(cores.div_ceil(LANES))
            .min(cores);
        // Groups run the pixel stage lane-wide, which only THEIA microcode can do.
        self.stage.microcode_routine()?;
        let worthwhile = group::vectorised()
            && self.culler.is_err()
            // Measured: a group pays off from about 6 busy lanes of 8.
            && cores >= groups * LANES * 3 / 4;
        let lockstep = match self.lockstep {
            Lockstep::Auto => worthwhile,
            Lockstep::Always => cores > 1,
            Lockstep::Never => false,
        };
        if !lockstep {
            return None;
        }
        // Group g holds cores g, g + groups, ...: neighbouring bands often cost alike, so
        // spreading them evens out the groups' work.
        let first = self.active.start;
        let members: Vec<Vec<usize>> = (0..groups)
            .map(|g| (first + g..first + cores).step_by(groups).collect())
            .collect();
        let runs: Vec<Result<Vec<CoreRun>, Abandoned>> = members
            .par_iter()
            .map(|indices| self.run_group(indices, progress))
            .collect();
        let mut by_core: Vec<Option<CoreRun>> = (0..cores).map(|_| None).collect();
        for (indices, runs) in members.iter().zip(runs) {
            for (&index, run) in indices.iter().zip(runs.ok()?) {
                by_core[index - first] = Some(run);
            }
        }
        Some((by_core.into_iter().collect::<Option<_>>()?, groups))
    }

    /// Configures a core for `partition` (host writes of the 6 configuration rows and the
    /// core's two partition rows) and runs INITIAL, CPPU and USERCONSTANTS.
    pub fn boot_core<O: Observer>(
        &self,
        index: usize,
        partition: &Partition,
        observer: &mut O,
    ) -> Result<Core<'_>, RenderError> {
        let mut core = Core::new(&self.program, &self.scene.texture, output_words(partition));
        core.set_budget(self.max_steps);
        for (row, value) in self.scene.config.iter().enumerate() {
            core.host_write(row as u16, *value);
        }
        core.host_write(6, partition.initial);
        core.host_write(7, partition.end);
        for entry in [
            EntryPoint::Initial,
            EntryPoint::Cppu,
            EntryPoint::UserConstants,
        ] {
            core.refill_budget();
            core.run(entry, observer)
                .map_err(|fault| self.fault(index, partition, 0, entry, fault))?;
        }
        Ok(core)
    }

    /// One pixel: RGU, MAIN per triangle, PSU2 on a hit, the pixel shader and NPG.
    /// Returns NPG's answer (more pixels to come) and what the ray hit. Culls when the
    /// machine has a culler and the observer is disabled (a trace always sees every
    /// instruction).
    #[inline]
    pub fn run_pixel<O: Observer>(
        &self,
        core: &mut Core<'_>,
        observer: &mut O,
        accel: &mut PixelAccel<'_>,
    ) -> Result<PixelDone, (EntryPoint, Fault)> {
        core.refill_budget();
        let run = |core: &mut Core<'_>, entry, observer: &mut O| {
            core.run(entry, observer).map_err(|fault| (entry, fault))
        };
        run(core, EntryPoint::Rgu, observer)?;
        let triangles = &self.scene.triangles;
        let main = |core: &mut Core<'_>| run(core, EntryPoint::Main, observer);
        // Culling only where nobody watches: a trace shows every instruction.
        let culler = self.culler.as_ref().ok().filter(|_| !O::ENABLED);
        let tile = culler.zip(accel.structure).and_then(|(culler, structure)| {
            TileCandidates::new(&*core, structure, culler, &mut accel.rows, triangles.len())
        });
        let hit = match (tile, culler) {
            (Some(mut tile), _) => triangles::run(core, triangles, &mut tile, main)?,
            (None, Some(culler)) => triangles::run(core, triangles, &mut CulledRuns(culler), main)?,
            (None, None) => triangles::run(core, triangles, &mut Every, main)?,
        };
        core.load_dummy_triangle();
        let pixel_hit = classify(core, hit);
        if hit {
            run(core, EntryPoint::Psu2, observer)?;
        }
        let mut shading = Shading {
            core: &mut *core,
            observer: &mut *observer,
            hit,
        };
        self.stage
            .shade(&mut shading)
            .map_err(|fault| (EntryPoint::PixelShader, fault))?;
        Ok(PixelDone {
            more: run(core, EntryPoint::Npg, observer)?,
            hit: pixel_hit,
        })
    }

    /// One pixel on each lane of `active`, as [`Machine::run_pixel`] on each core; the
    /// lanes whose NPG asks for more pixels. (The same sequence as `run_pixel`, over lane
    /// masks: one generic version of both cost the culled path 6%, measured.)
    fn run_group_pixel(
        &self,
        group: &mut CoreGroup<'_>,
        active: LaneMask,
        hits: &mut [Vec<PixelHit>],
    ) -> Result<LaneMask, Abandoned> {
        for lane in lanes_of(active) {
            group.lane(lane).refill_budget();
        }
        group.run(active, EntryPoint::Rgu)?;
        let mut hit = 0;
        match &self.culler {
            Ok(culler) => {
                let triangles = &self.scene.triangles;
                // Each lane takes its triangles from culled runs as a lone core does
                // (`triangles::run`): `next_main` is the triangle whose MAIN it runs next
                // (`UNDECIDED` until asked, right after its last MAIN), and triangles before
                // `loaded` are in its core.
                const UNDECIDED: usize = usize::MAX;
                let (mut next_main, mut loaded) = ([UNDECIDED; LANES], [0; LANES]);
                let mut source = CulledRuns(culler);
                for index in 0..triangles.len() {
                    let mut main = 0;
                    for lane in lanes_of(active) {
                        if next_main[lane] == UNDECIDED {
                            next_main[lane] = source.next(&mut group.lane(lane), index);
                        }
                        if next_main[lane] != index {
                            continue;
                        }
                        group
                            .lane(lane)
                            .load_triangles(&triangles[loaded[lane]..=index]);
                        loaded[lane] = index + 1;
                        next_main[lane] = UNDECIDED;
                        main |= 1 << lane;
                    }
                    if main != 0 {
                        hit |= group.run(main, EntryPoint::Main)?;
                    }
                }
                for lane in lanes_of(active) {
                    group.lane(lane).load_triangles(&triangles[loaded[lane]..]);
                }
            }
            _ => {
                for triangle in &self.scene.triangles {
                    group.load_triangle(active, triangle);
                    hit |= group.run(active, EntryPoint::Main)?;
                }
            }
        }
        for lane in lanes_of(active) {
            let mut core = group.lane(lane);
            core.load_dummy_triangle();
            hits[lane].push(classify(&core, hit & (1 << lane) != 0));
        }
        group.run(hit, EntryPoint::Psu2)?;
        let shader = self
            .stage
            .microcode_routine()
            .expect("lock-step groups run only microcode pixel stages");
        group.run(active, shader)?;
        group.run(active, EntryPoint::Npg)
    }

    /// The cores `indices` (at most [`LANES`]) from boot to their last pixel in lock-step.
    fn run_group(
        &self,
        indices: &[usize],
        progress: Option<&AtomicU64>,
    ) -> Result<Vec<CoreRun>, Abandoned> {
        let mut cores = Vec::with_capacity(indices.len());
        for &index in indices {
            let core = self
                .boot_core(index, &self.partitions[index], &mut NoObserver)
                .map_err(|_| Abandoned)?;
            cores.push(core);
        }
        let mut group = CoreGroup::new(cores);
        let pixels: Vec<usize> = indices
            .iter()
            .map(|&index| self.partitions[index].pixel_count())
            .collect();
        let mut done = 0;
        let mut active = group.all();
        let mut reporter = ProgressReporter::new(progress);
        let mut hits: Vec<Vec<PixelHit>> = pixels.iter().map(|&n| Vec::with_capacity(n)).collect();
        while active != 0 {
            let more = self.run_group_pixel(&mut group, active, &mut hits)?;
            done += 1;
            reporter.add(active.count_ones() as u64, more == 0);
            for lane in lanes_of(active & more) {
                if done >= pixels[lane] {
                    // NPG runs past the partition: the core-by-core rerun reports it.
                    return Err(Abandoned);
                }
            }
            active &= more;
            if self.cancelled() {
                // The core-by-core rerun stops at once with `Cancelled`.
                return Err(Abandoned);
            }
        }
        Ok(group
            .into_cores()
            .into_iter()
            .zip(hits)
            .map(|(core, hits)| CoreRun::whole(core, hits))
            .collect())
    }

    fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|cancel| cancel.load(Ordering::Relaxed))
    }

    fn fault(
        &self,
        core: usize,
        partition: &Partition,
        pixel: usize,
        entry: EntryPoint,
        fault: Fault,
    ) -> RenderError {
        let (x, y) = partition
            .pixels()
            .nth(pixel)
            .unwrap_or(partition.start_pixel());
        RenderError::Core {
            core,
            x,
            y,
            entry,
            fault,
        }
    }

    /// Core c's output memory holds its k-th pixel (in NPG order) at words 3k..3k+2;
    /// `cores` are the active ones. Pixels of other partitions stay unwritten. Row by row
    /// in parallel; a later core's partition wins where partitions overlap. The frame holds
    /// image rows `rows` only.
    fn assemble(&self, cores: &[CoreRun], rows: Range<u32>) -> Frame {
        let width = self.scene.width();
        let size = width as usize * rows.len() * 3;
        let mut frame = Frame {
            width,
            height: rows.len() as u32,
            words: vec![0; size],
            written: vec![false; size],
            partitions: self.partitions.clone(),
            hits: vec![PixelHit::Miss; size / 3],
        };
        // Pieces that wrote outside their own pixels are laid over each other first.
        let merged: Vec<Option<OutputMemory>> = cores
            .par_iter()
            .map(|core| (!core.pieces_disjoint()).then(|| core.merged()))
            .collect();
        let cores: Vec<_> = self
            .active_partitions()
            .zip(cores.iter().zip(&merged))
            .collect();
        let row = 3 * width as usize;
        frame
            .words
            .par_chunks_mut(row)
            .zip(frame.written.par_chunks_mut(row))
            .zip(frame.hits.par_chunks_mut(width as usize))
            .zip(rows)
            .for_each(|(((words, written), hits), y)| {
                for ((_, partition), (core, merged)) in &cores {
                    let ((x0, y0), (x1, y1)) = (partition.start_pixel(), partition.end_pixel());
                    if y < y0 || y >= y1 {
                        continue;
                    }
                    let first = if y == y0 { x0 } else { 0 };
                    let k0 = partition
                        .index_of(first, y)
                        .expect("a pixel of the partition");
                    let pixels = core.pixels(k0..k0 + (x1 - first) as usize);
                    for ((k, x), (piece, hit)) in (k0..).zip(first..x1).zip(pixels) {
                        if let Some(hit) = hit {
                            hits[x as usize] = hit;
                        }
                        let output = merged.as_ref().unwrap_or(&piece.output);
                        for c in 0..3 {
                            if let Some(word) = output.read(3 * k + c) {
                                words[3 * x as usize + c] = word;
                                written[3 * x as usize + c] = true;
                            }
                        }
                    }
                }
            });
        frame
    }
}

/// A core as its pixel stage sees it (see [`ShadingCore`]): microcode routines run through
/// the machine's observer.
struct Shading<'c, 'a, O> {
    core: &'c mut Core<'a>,
    observer: &'c mut O,
    hit: bool,
}

impl<O: Observer> ShadingCore for Shading<'_, '_, O> {
    fn run_routine(&mut self, entry: EntryPoint) -> Result<bool, Fault> {
        self.core.run(entry, self.observer)
    }

    fn register(&self, address: u16) -> Vec3 {
        self.core.register(address)
    }

    fn hit(&self) -> bool {
        self.hit
    }

    fn texture(&self) -> &[u32] {
        self.core.texture()
    }

    fn omwrite(&mut self, addresses: Vec3, values: Vec3) {
        self.core.omwrite(addresses, values);
    }

    fn budget_left(&self) -> u64 {
        self.core.budget_left()
    }

    fn charge(&mut self, instructions: u64) {
        let left = self.core.budget_left() - instructions.min(self.core.budget_left());
        self.core.set_budget_left(left);
        self.core.book(instructions, 0);
    }
}

/// About how many candidates (4 bytes each) one batch of the acceleration structure holds
/// over all cores; its build holds about twice that at its peak. A frame whose candidates
/// fit is built whole, with the machine, as before batches; larger ones take as many
/// batches as they need. Each batch costs a descent of every triangle from the top of the
/// tree again, so fewer, larger batches are faster; measured on the 1.3M-triangle mesh at
/// 256x256, faithful ROM (26,000 candidates per tile, 107M in all): with batches of 8M,
/// 12M, 16M and 24M candidates, peak memory 358, 396, 418 and 455 MB and structure time
/// 7.4, 5.5, 4.6 and 3.6 s (1.8 s built whole, at 1,125 MB), on one busy host core.
pub const BATCH_CANDIDATES: u64 = 3 << 22;

/// The fewest candidates a batch holds: scenes of fewer triangles than
/// [`BATCH_CANDIDATES`] / [`BATCH_CANDIDATES_PER_TRIANGLE`] take batches of less than the
/// most, down to this, since each batch costs time in proportion to the triangles.
pub const MIN_BATCH_CANDIDATES: u64 = 1 << 22;

/// Candidates a batch may hold per triangle of the scene, between the least and the most.
pub const BATCH_CANDIDATES_PER_TRIANGLE: u64 = 32;

/// About how many candidates one batch of a scene of `triangles` triangles holds: the
/// more triangles, the more a batch costs, so the larger the batches. Measured on the
/// bunny (69,451 triangles) at 1920x1080, 41M candidates: in 4 batches of 12M it peaks at
/// 314 MB, in 10 of 4M at 258 to 279 MB for the same time, in 19 of 2M at 262 to 267 MB
/// and 0.3 s more structure time (the rest is the frame, its rays and the scene).
pub fn batch_candidates(triangles: usize) -> u64 {
    (triangles as u64 * BATCH_CANDIDATES_PER_TRIANGLE).clamp(MIN_BATCH_CANDIDATES, BATCH_CANDIDATES)
}

/// About how many triangles the estimate of a frame's candidates looks at.
const ESTIMATE_SAMPLE: u64 = 4096;

/// A frame's acceleration structure: the rays' tree and the batches of tile rows the
/// render builds from it one at a time, so that memory does not grow with triangles
/// times pixels.
#[derive(Clone, Debug)]
pub struct FrameAccel {
    pub tree: RayTree,
    /// The whole frame's structure, built with the machine when it fits one batch (and
    /// then kept for every render of the machine).
    pub whole: Option<Arc<Accel>>,
    /// Per batch, per active core: the image row the core's pixels of the batch end
    /// before (`u32::MAX` in the last batch).
    pub ends: Vec<Vec<u32>>,
    /// Candidates over all tiles: exact for a whole structure, else the estimate the
    /// batches were planned by.
    pub candidates: u64,
}

/// What a core's pixels read of the acceleration structure: the batch at hand (`None`:
/// per-triangle culling) and its candidates' verdicts for the tile row the core is in.
#[derive(Debug, Default)]
pub struct PixelAccel<'s> {
    structure: Option<&'s Accel>,
    rows: RowVerdicts,
}

impl<'s> PixelAccel<'s> {
    pub fn new(structure: Option<&'s Accel>) -> Self {
        PixelAccel {
            structure,
            rows: RowVerdicts::default(),
        }
    }
}

/// The words of the output memory of a core rendering `partition`: the hardware's, or 3
/// per pixel when the partition has more pixels.
fn output_words(partition: &Partition) -> usize {
    (partition.pixel_count() * 3).max(OutputMemory::HARDWARE_WORDS)
}

/// One pixel done: NPG's answer and what the ray hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelDone {
    /// Whether NPG asks for another pixel.
    pub more: bool,
    pub hit: PixelHit,
}

/// A pixel's [`PixelHit`] from the control unit's hit flag and the closest hit BIU kept.
fn classify(core: &impl CoreState, hit: bool) -> PixelHit {
    // A miss reads nothing: a tracked core must not count the registers as read.
    if !hit {
        return PixelHit::Miss;
    }
    let x = |address| core.register_component(address, 0);
    PixelHit::classify(
        hit,
        x(address::CREG_LAST_T),
        x(address::CREG_LAST_U),
        x(address::CREG_LAST_V),
    )
}

/// Publishes finished pixels in batches: one shared counter bumped per pixel by every
/// worker would bounce its cache line between them.
struct ProgressReporter<'p> {
    counter: Option<&'p AtomicU64>,
    unreported: u64,
}

impl<'p> ProgressReporter<'p> {
    const BATCH: u64 = 32;

    fn new(counter: Option<&'p AtomicU64>) -> Self {
        ProgressReporter {
            counter,
            unreported: 0,
        }
    }

    /// Counts `pixels` more; `last` publishes whatever is left.
    fn add(&mut self, pixels: u64, last: bool) {
        let Some(counter) = self.counter else {
            return;
        };
        self.unreported += pixels;
        if self.unreported >= Self::BATCH || last {
            counter.fetch_add(self.unreported, Ordering::Relaxed);
            self.unreported = 0;
        }
    }
}

/// Renders a scene with the given options.
/// Renders a scene with the given options, supersampled when they say so.
pub fn render(scene: &Scene, options: &RenderOptions) -> Result<Render, RenderError> {
    ssaa::Supersampler::new(scene, options)?.render(None, None, |_| Ok(()))
}
