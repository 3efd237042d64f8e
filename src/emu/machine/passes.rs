//! A frame rendered in *passes* of image rows, each handed over as soon as it is done and
//! then dropped, so that memory follows one pass's pixels rather than the frame's (a
//! supersampled frame's samples: [`super::ssaa`]).
//!
//! Every core boots once and carries its state from pass to pass, exactly as from pixel
//! to pixel: a pass only says where each core stops for a while (the image row the pass
//! ends before), as the acceleration structure's batches do, so the pixels a core
//! computes are those of one pass over the frame, whatever the passes. Within a pass the
//! cores run as in any render: in lock-step groups, or each on its own with its pixels cut
//! into chunks on all threads ([`super::speculate`]). Where the machine makes the
//! structure per pass ([`Machine::for_passes`]), each pass makes it for its own rows,
//! so that the rays of only one pass are held at a time.
//!
//! A pass is exact as long as a core writes the output words of its own pixels in the
//! pass only (as every ROM does: 3 words per pixel, in order); when some core writes
//! elsewhere, the frame is rendered again in one pass, which lays every write where it
//! lands.

use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use super::accel::AccelRefusal;
use super::batches::StructureUse;
use super::speculate::{ChunkStats, CoreRun, Cores};
use super::{Frame, FrameAccel, Machine, Render, RenderError, Stages};

#[cfg(test)]
thread_local! {
    /// The most pixels the cores held at the end of a pass, over the renders of this
    /// thread: what a pass holds at its peak.
    static MOST_HELD: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// What the passes of a render did so far, for its report.
struct Totals {
    structure: Option<StructureUse>,
    chunks: ChunkStats,
    stages: Stages,
    /// Whether the acceleration structure was used (a render that fails with it is
    /// rendered again without: see [`Machine::render_passes`]), or why it was refused.
    accel: Result<bool, AccelRefusal>,
}

/// Why passes stopped before the end.
enum PassStop {
    Failed(RenderError),
    /// A core wrote an output word outside its pixels of a pass.
    Strayed,
}

impl Machine<'_> {
    /// Renders image rows `passes` (in order, apart, each of the active rows) one pass
    /// after another: `sink` receives each pass's rows (their first row and a frame of
    /// them) as soon as they are done. The render's own frame is empty. `progress`
    /// counts finished pixels across all cores and passes.
    pub(super) fn render_passes(
        &self,
        progress: Option<&AtomicU64>,
        passes: &[Range<u32>],
        sink: &mut dyn FnMut(u32, Frame),
    ) -> Result<Render, RenderError> {
        let start = Instant::now();
        // Where the counter stood: a render started again counts on from there.
        let counted = progress.map_or(0, |counter| counter.load(Ordering::Relaxed));
        let mut totals = Totals {
            structure: None,
            chunks: ChunkStats::default(),
            stages: self.stages,
            accel: self
                .accel
                .as_ref()
                .map(Option::is_some)
                .map_err(Clone::clone),
        };
        let outcome = self.run_passes(progress, passes, sink, &mut totals);
        let mut restart = |machine: &Machine<'_>, passes: &[Range<u32>]| {
            if let Some(counter) = progress {
                counter.store(counted, Ordering::Relaxed);
            }
            machine.render_passes(progress, passes, sink)
        };
        let (cores, lockstep_groups) = match outcome {
            Ok(done) => done,
            Err(PassStop::Strayed) => {
                let first = passes.first().map_or(0, |pass| pass.start);
                let all = first..passes.last().map_or(0, |pass| pass.end);
                return restart(self, &[all]);
            }
            // Skipped exits were charged at their most: only per-triangle culling stops a
            // pixel exactly where the hardware's watchdog would.
            Err(PassStop::Failed(error))
                if totals.accel == Ok(true) && !matches!(error, RenderError::Cancelled) =>
            {
                let exact = Machine {
                    accel: Ok(None),
                    structure_per_pass: None,
                    ..self.clone()
                };
                return restart(&exact, passes);
            }
            Err(PassStop::Failed(error)) => return Err(error),
        };
        let mut stages = totals.stages;
        if let Some(structure) = &totals.structure {
            stages.batches = structure.build;
        }
        Ok(Render {
            frame: Frame::blank(0, 0, Vec::new()),
            instructions: cores.iter().map(|c| c.instructions).sum(),
            instructions_exact: cores.iter().all(|c| c.unknown_cost == 0),
            elapsed: start.elapsed(),
            cores: self.active.len(),
            triangles: self.scene.triangles.len(),
            culled: cores.iter().map(|c| c.culled).sum(),
            culling_refused: self.culler.as_ref().err().cloned(),
            lockstep_groups,
            accel: totals.accel.map(|used| used && lockstep_groups == 0),
            structure: totals.structure,
            chunks: totals.chunks,
            stages,
        })
    }

    /// The passes one after another, each core on from where the last pass left it; the
    /// cores' runs (their counts) and the lock-step groups they ran in (0: each on its
    /// own).
    fn run_passes(
        &self,
        progress: Option<&AtomicU64>,
        passes: &[Range<u32>],
        sink: &mut dyn FnMut(u32, Frame),
        totals: &mut Totals,
    ) -> Result<(Vec<CoreRun>, usize), PassStop> {
        let mut grouped = self.lockstep_groups();
        let seeding = Instant::now();
        let tree = match (&self.accel, grouped) {
            (Ok(Some(accel)), None) => Some(&accel.tree),
            _ => None,
        };
        let mut cores = self.cores(grouped.is_none(), tree);
        totals.stages.seeds = seeding.elapsed();
        for (pass, rows) in passes.iter().enumerate() {
            // The last pass runs every core to its end, wherever its NPG leads it.
            let end = (rows.end < passes[passes.len() - 1].end).then_some(rows.end);
            let counted = progress.map_or(0, |counter| counter.load(Ordering::Relaxed));
            if grouped.is_some() && self.advance_grouped(&mut cores, end, progress).is_err() {
                // Core by core from the states the groups started from, which reports the
                // fault exactly; so goes the rest of the frame.
                grouped = None;
                if let Some(counter) = progress {
                    counter.store(counted, Ordering::Relaxed);
                }
            }
            if grouped.is_none() {
                let rows = (pass > 0).then(|| rows.clone());
                self.pass_alone(&mut cores, rows, end, progress, totals)
                    .map_err(PassStop::Failed)?;
            }
            // A render that fails gives no frame: the cores only run on to their ends, so
            // that the error is the lowest-numbered failing core's.
            if !cores.failed() {
                let assembling = Instant::now();
                let frame = self.assemble_pass(&mut cores, rows.clone(), passes.len() > 1)?;
                totals.stages.assemble += assembling.elapsed();
                sink(rows.start, frame);
            }
        }
        let runs = cores.finish().map_err(PassStop::Failed)?;
        Ok((runs, grouped.unwrap_or(0)))
    }

    /// The cores on their own through rows before `end`, with the machine's structure or
    /// (a later pass of [`Machine::for_passes`]) one made for `rows`.
    fn pass_alone<'m>(
        &'m self,
        cores: &mut Cores<'m>,
        rows: Option<Range<u32>>,
        end: Option<u32>,
        progress: Option<&AtomicU64>,
        totals: &mut Totals,
    ) -> Result<(), RenderError> {
        let made;
        let accel: Option<&FrameAccel> = match (self.structure_per_pass, rows) {
            (Some(wanted), Some(rows)) => {
                made = self.structure(wanted, rows, &mut totals.stages);
                // Used in some pass is used; refused in the others, the last refusal.
                if totals.accel != Ok(true) {
                    totals.accel = made.as_ref().map(Option::is_some).map_err(Clone::clone);
                }
                made.as_ref().ok().and_then(Option::as_ref)
            }
            _ => self.accel.as_ref().ok().and_then(Option::as_ref),
        };
        let (structure, chunks, stages) = (
            &mut totals.structure,
            &mut totals.chunks,
            &mut totals.stages,
        );
        self.advance_alone(cores, accel, end, progress, structure, chunks, stages)
    }

    /// The frame of image rows `rows` from the cores' pieces since the last pass (which
    /// are dropped); with `alone` (one pass of several), `PassStop::Strayed` when a core
    /// wrote outside its pixels of these rows.
    fn assemble_pass(
        &self,
        cores: &mut Cores<'_>,
        rows: Range<u32>,
        alone: bool,
    ) -> Result<Frame, PassStop> {
        let runs = cores.take_pieces();
        #[cfg(test)]
        MOST_HELD.with(|most| {
            let held = runs.iter().flat_map(|run| &run.pieces);
            most.set(most.get().max(held.map(|piece| piece.hits.len()).sum()));
        });
        if alone {
            for (run, (_, partition)) in runs.iter().zip(&cores.partitions) {
                let words = 3 * partition.row_start(rows.start)..3 * partition.row_start(rows.end);
                let within =
                    |piece: &super::speculate::Piece| piece.output.written_within(words.clone());
                if !run.pieces.iter().all(within) {
                    return Err(PassStop::Strayed);
                }
            }
        }
        let frame = self.assemble(&runs, rows);
        super::drop_on_the_pool(runs);
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::machine::tests::tiny_scene;
    use crate::emu::machine::{Lockstep, RenderOptions};

    /// The built-in scene at 16x12 on 3 cores, in passes of 2 rows and in one: the passes'
    /// frames, stitched, are the one pass's frame; each holds only its own rows, and the
    /// cores never hold more than one pass's pixels.
    #[test]
    fn passes_hand_over_their_rows_and_hold_no_more() {
        let scene = tiny_scene(16, 12);
        for (culling, lockstep) in [(true, Lockstep::Never), (false, Lockstep::Always)] {
            let options = RenderOptions {
                cores: Some(3),
                culling,
                lockstep,
                ..RenderOptions::default()
            };
            let machine = Machine::new(&scene, &options).expect("a machine");
            let whole = machine.render(None).expect("renders");
            MOST_HELD.with(|most| most.set(0));
            let passes: Vec<Range<u32>> = (0..6).map(|p| 2 * p..2 * p + 2).collect();
            let mut strips = Vec::new();
            let render = machine.render_passes(None, &passes, &mut |first, strip| {
                strips.push((first, strip));
            });
            let render = render.expect("renders");
            let held = MOST_HELD.with(|most| most.get());
            assert_eq!(held, 2 * 16, "{lockstep:?}: two rows at a time");
            assert_eq!(render.instructions, whole.instructions);
            assert_eq!(render.lockstep_groups > 0, lockstep == Lockstep::Always);
            assert_eq!(strips.len(), 6);
            for ((first, strip), pass) in strips.iter().zip(&passes) {
                assert_eq!((*first, strip.width, strip.height), (pass.start, 16, 2));
                let words = 3 * 16 * pass.start as usize..3 * 16 * pass.end as usize;
                assert_eq!(strip.words, whole.frame.words[words.clone()]);
                assert_eq!(strip.written, whole.frame.written[words]);
                let pixels = 16 * pass.start as usize..16 * pass.end as usize;
                assert_eq!(strip.hits, whole.frame.hits[pixels]);
            }
        }
    }
}
