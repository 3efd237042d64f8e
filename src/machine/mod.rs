//! The whole machine: the host configures every core, streams the triangles through the
//! swap memory for every pixel, and the control unit sequences the microcode routines.
//! Each core renders its own partition; partitions run on rayon workers and share nothing
//! writable, as in the hardware. Triangles BIU provably rejects can skip MAIN with
//! identical results ([`cull`]).

pub mod cull;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::core::exec::{Core, Fault, NoObserver, Observer, OutputMemory};
use crate::core::program::Program;
use crate::core::rom::{rom, RomVariant};
use crate::isa::registers::EntryPoint;
use crate::isa::Instruction;
use crate::scene::{Partition, Scene};
use cull::{Culler, Pending, Refusal};

/// How to run a frame.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    pub rom: RomVariant,
    /// `Some(n)`: split the image into `n` row bands; `None`: the scene's own partitions.
    pub cores: Option<u32>,
    /// Instruction memory (entry table + user code) replacing the scene's.
    pub imem: Option<Vec<Instruction>>,
    /// Per-pixel instruction budget; `None` picks one from the triangle count.
    pub max_steps: Option<u64>,
    /// Skip MAIN for triangles BIU provably rejects, leaving the core in the state MAIN
    /// would have left (identical output and instruction counts; see [`cull`]). On by
    /// default; refused automatically when MAIN/BIU are not the ROM's.
    pub culling: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            rom: RomVariant::default(),
            cores: None,
            imem: None,
            max_steps: None,
            culling: true,
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
}

impl Frame {
    /// 8-bit colour of a word, as the test bench converts it: min(255, word >> 9) on the
    /// unsigned word, so negative values become 255.
    pub fn channel_byte(word: u32) -> u8 {
        (word >> 9).min(255) as u8
    }

    /// RGB bytes of every pixel (unwritten words read as 0).
    pub fn rgb_bytes(&self) -> Vec<u8> {
        self.words
            .iter()
            .zip(&self.written)
            .map(|(&w, &written)| if written { Frame::channel_byte(w) } else { 0 })
            .collect()
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
    pub instructions: u64,
    pub elapsed: Duration,
    pub cores: usize,
    pub triangles: usize,
    /// MAIN runs culling skipped (their instructions are counted in `instructions`).
    pub culled: u64,
    /// Why culling did not apply to this frame, if it did not.
    pub culling_refused: Option<Refusal>,
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
}

/// The budget the watchdog allows one pixel when none is given: the ROM needs at most
/// about 80 instructions per triangle, so this leaves room for long shaders.
pub fn default_max_steps(triangles: usize) -> u64 {
    100_000 + 1_000 * triangles as u64
}

/// Everything that stays the same for all cores of a frame.
pub struct Machine<'a> {
    pub scene: &'a Scene,
    pub program: Program,
    pub partitions: Vec<Partition>,
    pub max_steps: u64,
    /// The culling tables, or why this frame is rendered without culling.
    pub culler: Result<Culler, Refusal>,
}

impl<'a> Machine<'a> {
    pub fn new(scene: &'a Scene, options: &RenderOptions) -> Result<Machine<'a>, RenderError> {
        let imem = options
            .imem
            .clone()
            .or_else(|| scene.program.clone())
            .unwrap_or_else(Program::default_imem);
        let partitions = match options.cores {
            Some(0) => return Err(RenderError::Config("--cores must be at least 1".into())),
            Some(cores) => Partition::bands(scene.width(), scene.height(), cores),
            None => scene.partitions.clone(),
        };
        for (core, partition) in partitions.iter().enumerate() {
            partition
                .validate(scene.width(), scene.height())
                .map_err(|e| RenderError::Config(format!("partition {core}: {e}")))?;
        }
        let program = Program::new(rom(options.rom), &imem);
        let culler = if options.culling {
            Culler::new(&program, &scene.triangles, &scene.config)
        } else {
            Err(Refusal::Disabled)
        };
        Ok(Machine {
            scene,
            program,
            culler,
            partitions,
            max_steps: options
                .max_steps
                .unwrap_or_else(|| default_max_steps(scene.triangles.len())),
        })
    }

    /// Renders every partition in parallel and assembles the frame. `progress` counts
    /// finished pixels across all cores.
    pub fn render(&self, progress: Option<&AtomicU64>) -> Result<Render, RenderError> {
        let start = Instant::now();
        let runs: Vec<Result<CoreRun, RenderError>> = self
            .partitions
            .par_iter()
            .enumerate()
            .map(|(index, partition)| self.run_core(index, partition, progress))
            .collect();
        // Every core runs to its end or its fault, so the error reported is always the
        // lowest-numbered failing core's, whatever the threads' timing.
        let cores = runs.into_iter().collect::<Result<Vec<_>, _>>()?;
        let frame = self.assemble(&cores);
        Ok(Render {
            frame,
            instructions: cores.iter().map(|c| c.instructions).sum(),
            elapsed: start.elapsed(),
            cores: self.partitions.len(),
            triangles: self.scene.triangles.len(),
            culled: cores.iter().map(|c| c.culled).sum(),
            culling_refused: self.culler.as_ref().err().cloned(),
        })
    }

    /// Configures a core for `partition` (host writes of the 6 configuration rows and the
    /// core's two partition rows) and runs INITIAL, CPPU and USERCONSTANTS.
    pub fn boot_core<O: Observer>(
        &self,
        index: usize,
        partition: &Partition,
        observer: &mut O,
    ) -> Result<Core<'_>, RenderError> {
        let output_words = (partition.pixel_count() * 3).max(OutputMemory::HARDWARE_WORDS);
        let mut core = Core::new(&self.program, &self.scene.texture, output_words);
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
    /// Returns NPG's answer (more pixels to come). Culls when the machine has a culler and
    /// the observer is disabled (a trace always sees every instruction).
    #[inline]
    pub fn run_pixel<O: Observer>(
        &self,
        core: &mut Core<'_>,
        observer: &mut O,
    ) -> Result<bool, (EntryPoint, Fault)> {
        core.refill_budget();
        let run = |core: &mut Core<'_>, entry, observer: &mut O| {
            core.run(entry, observer).map_err(|fault| (entry, fault))
        };
        run(core, EntryPoint::Rgu, observer)?;
        let mut hit = false;
        match &self.culler {
            Ok(culler) if !O::ENABLED => {
                let triangles = &self.scene.triangles;
                let mut pending = Pending::default();
                // Triangles before `loaded` are in the core; skipped MAINs do not read the
                // swap memory, so the host's loads are caught up only before code runs.
                let mut loaded = 0;
                for index in 0..triangles.len() {
                    if culler.try_skip(core, index, &mut pending) {
                        continue;
                    }
                    core.load_triangles(&triangles[loaded..=index]);
                    loaded = index + 1;
                    culler.flush(core, &mut pending);
                    hit |= run(core, EntryPoint::Main, observer)?;
                }
                core.load_triangles(&triangles[loaded..]);
                culler.flush(core, &mut pending);
            }
            _ => {
                for triangle in &self.scene.triangles {
                    core.load_triangle(triangle);
                    hit |= run(core, EntryPoint::Main, observer)?;
                }
            }
        }
        core.load_dummy_triangle();
        if hit {
            run(core, EntryPoint::Psu2, observer)?;
        }
        run(core, EntryPoint::PixelShader, observer)?;
        run(core, EntryPoint::Npg, observer)
    }

    fn run_core(
        &self,
        index: usize,
        partition: &Partition,
        progress: Option<&AtomicU64>,
    ) -> Result<CoreRun, RenderError> {
        let mut observer = NoObserver;
        let mut core = self.boot_core(index, partition, &mut observer)?;
        let pixels = partition.pixel_count();
        let mut done = 0;
        // Progress is published in batches: one shared counter bumped per pixel by every
        // core would bounce its cache line between them.
        const PROGRESS_BATCH: u64 = 32;
        let mut unreported = 0;
        loop {
            let more = self
                .run_pixel(&mut core, &mut observer)
                .map_err(|(entry, fault)| self.fault(index, partition, done, entry, fault))?;
            done += 1;
            unreported += 1;
            if let Some(counter) = progress {
                if unreported == PROGRESS_BATCH || !more {
                    counter.fetch_add(unreported, Ordering::Relaxed);
                    unreported = 0;
                }
            }
            if !more {
                break;
            }
            if done >= pixels {
                return Err(RenderError::Runaway {
                    core: index,
                    pixels,
                });
            }
        }
        Ok(CoreRun {
            culled: core.culled_routines,
            output: core.output,
            instructions: core.instructions,
        })
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

    /// Core c's output memory holds its k-th pixel (in NPG order) at words 3k..3k+2.
    fn assemble(&self, cores: &[CoreRun]) -> Frame {
        let (width, height) = (self.scene.width(), self.scene.height());
        let size = width as usize * height as usize * 3;
        let mut frame = Frame {
            width,
            height,
            words: vec![0; size],
            written: vec![false; size],
            partitions: self.partitions.clone(),
        };
        for (partition, core) in self.partitions.iter().zip(cores) {
            for (k, (x, y)) in partition.pixels().enumerate() {
                let at = (y as usize * width as usize + x as usize) * 3;
                for c in 0..3 {
                    if let Some(word) = core.output.read(3 * k + c) {
                        frame.words[at + c] = word;
                        frame.written[at + c] = true;
                    }
                }
            }
        }
        frame
    }
}

struct CoreRun {
    output: OutputMemory,
    instructions: u64,
    culled: u64,
}

/// Renders a scene with the given options.
pub fn render(scene: &Scene, options: &RenderOptions) -> Result<Render, RenderError> {
    Machine::new(scene, options)?.render(None)
}
