//! The whole machine: the host configures every core, streams the triangles through the
//! swap memory for every pixel, and the control unit sequences the microcode routines.
//! Each core renders its own partition; partitions run on rayon workers and share nothing
//! writable, as in the hardware. Triangles BIU provably rejects can skip MAIN with
//! identical results ([`cull`]).
//!
//! Where things are: the options a frame runs with (`options.rs`); the pixel sequence from
//! boot to NPG, written once for every width (`pixel.rs`) over the triangle loop and its
//! sources ([`triangles`]); cores in lock-step groups (`lockstep.rs`) or each core's pixels
//! cut into chunks run in parallel ([`speculate`]); the acceleration structure's batches
//! (`batches.rs`, [`accel`]); the frame put together from the output memories
//! (`frame.rs`), or handed over in passes of rows (`passes.rs`: supersampling, [`ssaa`]);
//! progress and cancellation (`progress.rs`).

pub mod accel;
pub mod band;
mod batches;
pub mod cull;
pub mod fingerprint;
mod frame;
pub mod hits;
mod lockstep;
mod options;
mod passes;
mod pixel;
mod progress;
pub mod speculate;
pub mod ssaa;
pub mod triangles;

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Instant;

use crate::emu::core::program::Program;
use crate::emu::core::rom::rom;
use crate::emu::core::Fault;
use crate::emu::isa::registers::EntryPoint;
use crate::io::scene::{Partition, Scene};
use crate::stage::{PixelStage, TheiaPixelShader};
use accel::AccelRefusal;
pub use band::Band;
pub use batches::{
    batch_candidates, FrameAccel, PixelAccel, StructureUse, BATCH_CANDIDATES,
    BATCH_CANDIDATES_PER_TRIANGLE, MIN_BATCH_CANDIDATES,
};
use cull::{Culler, Refusal};
pub use frame::{Frame, Render, Stages};
pub use options::{AccelMode, AccelUse, Lockstep, RenderOptions};
pub use pixel::{pixel_ray, PixelDone};
use speculate::Chunking;

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
    /// [`RenderOptions::cancel`] was raised before every core finished.
    #[error("the render was cancelled")]
    Cancelled,
}

/// The budget the watchdog allows one pixel when none is given: the ROM needs at most
/// about 80 instructions per triangle, so this leaves room for long shaders.
pub fn default_max_steps(triangles: usize) -> u64 {
    100_000 + 1_000 * triangles as u64
}

/// Everything that stays the same for all cores of a frame.
#[derive(Clone)]
pub struct Machine<'a> {
    scene: &'a Scene,
    program: Program,
    /// Every partition of the frame, whether this machine renders it or not.
    partitions: Vec<Partition>,
    /// The partitions this machine renders: all, or a band's ([`RenderOptions::band`]).
    active: Range<usize>,
    max_steps: u64,
    /// The culling tables, or why this frame is rendered without culling.
    culler: Result<Culler, Refusal>,
    /// Whether partitions run as lock-step groups ([`RenderOptions::lockstep`]).
    lockstep: Lockstep,
    /// The program that shades each pixel ([`RenderOptions::stage`]).
    stage: Arc<dyn PixelStage>,
    /// The acceleration structure (`Ok(None)`: not wanted for this frame, or made per
    /// pass).
    accel: Result<Option<FrameAccel>, AccelRefusal>,
    /// `Some`: the structure, when this use wants it, is made for each pass's rows after
    /// the first ([`Machine::for_passes`]) rather than with the machine.
    structure_per_pass: Option<AccelUse>,
    /// How long preparing the structure took, stage by stage ([`Stages::preparation`]).
    stages: Stages,
    /// About how many candidates one batch of the structure may hold (4 bytes each):
    /// [`batch_candidates`] unless a test asks for smaller batches.
    batch_candidates: u64,
    /// How each core's pixels are cut into chunks ([`RenderOptions::chunking`]).
    chunking: Chunking,
    /// Raised by another thread to stop a render early ([`RenderOptions::cancel`]).
    cancel: Option<Arc<AtomicBool>>,
}

impl<'a> Machine<'a> {
    pub fn new(scene: &'a Scene, options: &RenderOptions) -> Result<Machine<'a>, RenderError> {
        Machine::with_batches(scene, options, batch_candidates(scene.triangles.len()))
    }

    /// [`Machine::new`] for a render in passes ([`passes`]) whose first pass is image rows
    /// `first`: the machine makes the acceleration structure for those rows only, and
    /// the render makes it for each later pass's rows, so that one pass's rays are held
    /// at a time, not the frame's.
    fn for_passes(
        scene: &'a Scene,
        options: &RenderOptions,
        first: Range<u32>,
    ) -> Result<Machine<'a>, RenderError> {
        let deferred = RenderOptions {
            accel: AccelUse::Never,
            ..options.clone()
        };
        let mut machine = Machine::new(scene, &deferred)?;
        let mut stages = machine.stages;
        machine.accel = machine.structure(options.accel, first, &mut stages);
        machine.stages = stages;
        machine.structure_per_pass = Some(options.accel);
        Ok(machine)
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
        let partitions = frame::partitions(scene, options.cores)?;
        let active = match options.band {
            Some(band) => band.cores(partitions.len()).map_err(RenderError::Config)?,
            None => 0..partitions.len(),
        };
        let program = Program::new(rom(options.rom), &imem);
        let culling = Instant::now();
        let culler = if options.culling {
            Culler::new(&program, &scene.triangles, &scene.config)
        } else {
            Err(Refusal::Disabled)
        };
        let stages = Stages {
            cull: culling.elapsed(),
            ..Stages::default()
        };
        let mut machine = Machine {
            scene,
            program,
            culler,
            accel: Ok(None),
            structure_per_pass: None,
            stages,
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
            cancel: options.cancel.clone(),
        };
        machine.prepare_structure(options.accel);
        Ok(machine)
    }

    pub fn scene(&self) -> &'a Scene {
        self.scene
    }

    /// The ROM and instruction memory every core runs.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// Every partition of the frame, whether this machine renders it or not.
    pub fn partitions(&self) -> &[Partition] {
        &self.partitions
    }

    /// The partitions this machine renders: all, or a band's ([`RenderOptions::band`]).
    pub fn active(&self) -> Range<usize> {
        self.active.clone()
    }

    /// The per-pixel instruction budget.
    pub fn max_steps(&self) -> u64 {
        self.max_steps
    }

    /// The culling tables, or why this frame is rendered without culling.
    pub fn culler(&self) -> Result<&Culler, &Refusal> {
        self.culler.as_ref()
    }

    /// The program that shades each pixel.
    pub fn stage(&self) -> &dyn PixelStage {
        &*self.stage
    }

    /// The acceleration structure (`Ok(None)`: not wanted for this frame), or why it was
    /// refused.
    pub fn accel(&self) -> Result<Option<&FrameAccel>, &AccelRefusal> {
        self.accel.as_ref().map(Option::as_ref)
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
        frame::rows_of(&self.partitions[self.active.clone()])
    }

    /// Renders every partition in parallel and assembles the frame. `progress` counts
    /// finished pixels across all cores.
    pub fn render(&self, progress: Option<&AtomicU64>) -> Result<Render, RenderError> {
        self.render_rows(progress, 0..self.scene.height())
    }

    /// [`Machine::render`] with a frame of image rows `rows` only (in one pass).
    fn render_rows(
        &self,
        progress: Option<&AtomicU64>,
        rows: Range<u32>,
    ) -> Result<Render, RenderError> {
        let mut frame = None;
        let mut render = self.render_passes(progress, &[rows], &mut |_, rendered| {
            frame = Some(rendered);
        })?;
        render.frame = frame.expect("a render that succeeds assembles its one pass");
        Ok(render)
    }
}

#[cfg(test)]
mod tests;

/// Drops `value` on a rayon worker while this thread goes on: the cores' output pieces and
/// the acceleration structure are hundreds of megabytes at 1080p, and freeing them (their
/// pages handed back) took one thread about 8 ms at the end of a render while the others
/// had nothing to do.
pub(crate) fn drop_on_the_pool<T: Send + 'static>(value: T) {
    rayon::spawn(move || drop(value));
}

impl Machine<'_> {
    /// Drops the machine, its acceleration structure on the pool ([`drop_on_the_pool`]).
    pub(crate) fn release(mut self) {
        drop_on_the_pool(std::mem::replace(&mut self.accel, Ok(None)));
    }
}

/// Renders a scene in one call: its size from the scene, the rest from `options` (cores,
/// ROM, shortcuts, supersampling, band, pixel stage, cancellation, progress); returns the
/// frame at the scene's resolution with what the render cost.
pub fn render(scene: &Scene, options: &RenderOptions) -> Result<Render, RenderError> {
    let progress = options.progress.as_deref();
    ssaa::Supersampler::new(scene, options)?.render(progress, |_| Ok(()))
}
