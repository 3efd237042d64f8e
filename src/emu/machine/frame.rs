//! The frame a render returns: the cores' output memories assembled into image order
//! ([`Frame`]), with what the render cost ([`Render`], [`Stages`]), and the partitions a
//! frame is cut into.

use std::ops::Range;
use std::time::Duration;

use rayon::prelude::*;

use super::batches::StructureUse;
use super::cull::Refusal;
use super::hits::PixelHit;
use super::speculate::{ChunkStats, CoreRun};
use super::{Machine, RenderError};
use crate::emu::core::OutputMemory;
use crate::emu::machine::accel::AccelRefusal;
use crate::io::scene::{Partition, Scene};

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
    /// A frame of nothing written yet.
    pub(super) fn blank(width: u32, height: u32, partitions: Vec<Partition>) -> Frame {
        let pixels = width as usize * height as usize;
        Frame {
            width,
            height,
            words: vec![0; pixels * 3],
            written: vec![false; pixels * 3],
            partitions,
            hits: vec![PixelHit::Miss; pixels],
        }
    }

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
    /// had to run again ([`super::speculate`]).
    pub chunks: ChunkStats,
    /// Where the time went, the machine's preparation included.
    pub stages: Stages,
}

impl Render {
    /// How long the acceleration structure took to make, when the cores used it: its
    /// rays, tree and plan (made with the machine) and the batches built during the
    /// render.
    pub fn structure_time(&self) -> Option<Duration> {
        let structure = self.structure.as_ref()?;
        Some(self.stages.preparation() + structure.build)
    }
}

/// Where a frame's time went, stage by stage (wall-clock time, but for `check`; every stage
/// but the seeds of a core whose skeleton cannot be skipped runs on all threads).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stages {
    /// The culler's constants of every triangle ([`Machine::new`]).
    pub cull: Duration,
    /// Every pixel's ray for the acceleration structure ([`Machine::new`]).
    pub rays: Duration,
    /// The quadtree of tiles over the rays.
    pub tree: Duration,
    /// Planning the structure's batches (and building it, when it is built whole).
    pub plan: Duration,
    /// Booting the cores and making the chunks' seeds ([`super::speculate`]).
    pub seeds: Duration,
    /// Building the structure's batches during the render.
    pub batches: Duration,
    /// The chunks' pixels.
    pub pixels: Duration,
    /// Checking chunks against the real state, and running wrong ones again: the time
    /// all threads spent on it while the chunks ran (it overlaps `pixels`).
    pub check: Duration,
    /// Putting the frame together from the cores' output memories.
    pub assemble: Duration,
    /// How the pixels divided: chunks run, the sum of their times and the longest one
    /// (what one thread alone cannot make shorter).
    pub chunks: u64,
    pub chunk_time: Duration,
    pub longest_chunk: Duration,
}

impl Stages {
    /// The stages the machine runs before any render: the structure's rays, tree and plan
    /// (and its build, when it is built whole).
    pub fn preparation(&self) -> Duration {
        self.rays + self.tree + self.plan
    }
}

impl Machine<'_> {
    /// Core c's output memory holds its k-th pixel (in NPG order) at words 3k..3k+2;
    /// `cores` are the active ones. Pixels of other partitions stay unwritten. Row by row
    /// in parallel; a later core's partition wins where partitions overlap. The frame holds
    /// image rows `rows` only.
    pub(super) fn assemble(&self, cores: &[CoreRun], rows: Range<u32>) -> Frame {
        let width = self.scene.width();
        let mut frame = Frame::blank(width, rows.len() as u32, self.partitions.clone());
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
                    // A core that ended before these rows has no pieces here.
                    if y < y0 || y >= y1 || core.pieces.is_empty() {
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

/// The frame's partitions: `cores` row bands, or the scene's own; each checked.
pub(super) fn partitions(scene: &Scene, cores: Option<u32>) -> Result<Vec<Partition>, RenderError> {
    let (width, height) = (scene.width(), scene.height());
    let partitions = match cores {
        Some(0) => return Err(RenderError::Config("--cores must be at least 1".into())),
        // Each core renders a band of whole rows: more cores than rows is an error, not
        // a silent cut to the row count.
        Some(cores) if cores > height => {
            return Err(RenderError::Config(format!(
                "--cores {cores}: at most {height} for this frame (each core renders a band of whole rows, and the frame has {height})",
            )))
        }
        Some(cores) => Partition::bands(width, height, cores),
        None => scene.partitions.clone(),
    };
    for (core, partition) in partitions.iter().enumerate() {
        partition
            .validate(width, height)
            .map_err(|e| RenderError::Config(format!("partition {core}: {e}")))?;
    }
    Ok(partitions)
}

/// The rows whole-row `partitions` cover, from the first's first to the last's end.
pub(super) fn rows_of(partitions: &[Partition]) -> Range<u32> {
    let first = partitions.iter().map(|p| p.start_pixel().1).min();
    let end = partitions.iter().map(|p| p.end_pixel().1).max();
    first.unwrap_or(0)..end.unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::NoObserver;
    use crate::emu::machine::tests::tiny_scene;
    use crate::emu::machine::RenderOptions;

    /// Two cores of a 4x3 frame: core 0 the first two rows, core 1 from (2, 1) to the end,
    /// over core 0's last two pixels. Each core writes, for its k-th pixel, 100k + its
    /// number + 1 into the words `channels` of it; core c's even (c = 0) or odd (c = 1)
    /// pixels hit.
    fn assembled(channels: [[usize; 3]; 2]) -> Frame {
        let mut scene = tiny_scene(4, 3);
        scene.partitions = vec![
            Partition::rows(4, 0, 2),
            Partition {
                initial: [2 << 17, 1 << 17, 0],
                end: [4 << 17, 3 << 17, 0],
            },
        ];
        let options = RenderOptions {
            culling: false,
            ..RenderOptions::default()
        };
        let machine = Machine::new(&scene, &options).expect("a machine");
        let runs: Vec<CoreRun> = (0..2)
            .map(|index| {
                let partition = &machine.partitions[index];
                let mut core = machine
                    .boot_core(index, partition, &mut NoObserver)
                    .expect("boots");
                let mut hits = Vec::new();
                for k in 0..partition.pixel_count() {
                    let word = (100 * k + index + 1) as u32;
                    core.omwrite(channels[index].map(|c| (3 * k + c) as u32), [word; 3]);
                    let hit = k % 2 == index;
                    hits.push(if hit { PixelHit::Hit } else { PixelHit::Miss });
                }
                CoreRun::whole(core, hits)
            })
            .collect();
        machine.assemble(&runs, 0..machine.scene().height())
    }

    #[test]
    fn pixels_land_in_image_order_and_a_later_core_wins_overlaps() {
        let frame = assembled([[0, 1, 2], [0, 1, 2]]);
        assert_eq!(
            (frame.width, frame.height, frame.partitions.len()),
            (4, 3, 2)
        );
        let reds: Vec<u32> = frame.words.iter().step_by(3).copied().collect();
        // Row 0: core 0's pixels 0..4; row 1: core 0's 4 and 5, then core 1's 0 and 1
        // over core 0's 6 and 7; row 2: core 1's 2..6.
        let expected = [1, 101, 201, 301, 401, 501, 2, 102, 202, 302, 402, 502];
        assert_eq!(reds, expected);
        assert_eq!(frame.words[3 * 6..3 * 7], [2, 2, 2]);
        assert!(frame.written.iter().all(|&w| w));
        assert_eq!(frame.unwritten_pixels(), 0);
        use PixelHit::{Hit, Miss};
        let hits = [
            Hit, Miss, Hit, Miss, Hit, Miss, Miss, Hit, Miss, Hit, Miss, Hit,
        ];
        assert_eq!(frame.hits, hits);
        assert_eq!(frame.artifact_pixels(), 0);
    }

    #[test]
    fn unwritten_words_stay_zero_and_unwritten() {
        // Core 0 writes only red, core 1 only blue.
        let frame = assembled([[0, 0, 0], [2, 2, 2]]);
        let written: Vec<[bool; 3]> = frame
            .written
            .chunks(3)
            .map(|c| [c[0], c[1], c[2]])
            .collect();
        assert_eq!(&written[..6], [[true, false, false]; 6]);
        // Where the partitions overlap, core 1's blue joins core 0's red.
        assert_eq!(&written[6..8], [[true, false, true]; 2]);
        assert_eq!(&written[8..], [[false, false, true]; 4]);
        assert_eq!(frame.unwritten_pixels(), 12);
        assert_eq!(frame.words[3 * 6..3 * 7], [601, 0, 2]);
    }
}
