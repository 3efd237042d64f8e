//! The acceleration structure a frame renders with ([`super::accel`]), made in batches of
//! tile rows so that memory does not grow with triangles times pixels: every pixel's ray,
//! the rays' tree, the plan of the batches ([`FrameAccel`]), and what a core's pixels read
//! of the batch at hand ([`PixelAccel`]).

use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::accel::{Accel, AccelRefusal, RayTree, RowVerdicts};
use super::cull::Culler;
use super::options::AccelUse;
use super::pixel::pixel_ray;
use super::{Machine, Stages};
use crate::emu::core::alu::Vec3;
use crate::emu::core::NoObserver;

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
    pub(super) structure: Option<&'s Accel>,
    pub(super) rows: RowVerdicts,
}

impl<'s> PixelAccel<'s> {
    pub fn new(structure: Option<&'s Accel>) -> Self {
        PixelAccel {
            structure,
            rows: RowVerdicts::default(),
        }
    }
}

/// The acceleration structure's batches in one render.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StructureUse {
    /// Building the batches during the render (a structure built with the machine, in
    /// one batch, counts in the render's [`super::Stages::preparation`] instead).
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
    pub(super) fn add(&mut self, batch: &Accel) {
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

impl Machine<'_> {
    /// When `accel` wants the structure for this scene and culling applies: every active
    /// pixel's ray, their tree and the plan of the batches, each stage timed.
    pub(super) fn prepare_structure(&mut self, accel: AccelUse) {
        let mut stages = self.stages;
        self.accel = self.structure(accel, self.active_rows(), &mut stages);
        self.stages = stages;
    }

    /// The structure for image rows `rows` when `accel` wants it for this scene and
    /// culling applies (`Ok(None)`: not wanted): the active pixels' rays there, their tree
    /// and the plan of the batches, each stage's time added to `stages`.
    pub(super) fn structure(
        &self,
        accel: AccelUse,
        rows: Range<u32>,
        stages: &mut Stages,
    ) -> Result<Option<FrameAccel>, AccelRefusal> {
        let Ok(culler) = &self.culler else {
            return Ok(None);
        };
        if !accel.wanted(self.scene.triangles.len()) {
            return Ok(None);
        }
        let start = Instant::now();
        let rays = self.precompute_rays(rows.clone());
        stages.rays += start.elapsed();
        let tree = rays.and_then(|rays| {
            let start = Instant::now();
            let tree = RayTree::new(self.scene.width(), rows.start, rows.len() as u32, rays);
            stages.tree += start.elapsed();
            tree
        });
        let start = Instant::now();
        let planned = tree.map(|tree| Some(self.plan(tree, culler, rows)));
        stages.plan += start.elapsed();
        planned
    }

    /// The structure's batches over image rows `rows`: their tiles at once (built now)
    /// when their candidates fit the machine's batch budget, for certain or by estimate;
    /// else each core's rows there cut into as many batches as that budget needs, each
    /// holding about the same share of the core's candidates, so that every batch holds
    /// about the budget over all cores, which render it in parallel.
    fn plan(&self, tree: RayTree, culler: &Culler, rows: Range<u32>) -> FrameAccel {
        let cores = self.active.len();
        let tiles = u64::from(tree.tile_rows()) * u64::from(tree.tiles_per_row());
        let triangles = self.scene.triangles.len() as u64;
        let budget = self.batch_candidates.max(1);
        // The estimate's groups serve a whole build too.
        let mut groups = (triangles * tiles > budget).then(|| tree.whole_groups(culler));
        let per_row = groups.as_ref().map(|groups| {
            let stride = (triangles / ESTIMATE_SAMPLE).max(1);
            tree.estimate(culler, stride as usize, groups)
        });
        // At most one batch per tile row: a core's batch is at least its next row.
        let batches = per_row.as_ref().map_or(1, |rows| {
            let total: u64 = rows.iter().sum();
            total.div_ceil(budget).clamp(1, u64::from(tree.tile_rows()))
        });
        let (Some(per_row), 2..) = (per_row, batches) else {
            let whole = tree.build_all(culler, groups.take());
            return FrameAccel {
                tree,
                candidates: whole.candidate_count() as u64,
                whole: Some(Arc::new(whole)),
                ends: vec![vec![u32::MAX; cores]],
            };
        };
        // Batches build their own groups, pruned to their rows.
        drop(groups);
        let mut ends = vec![vec![u32::MAX; cores]; batches as usize];
        let weight = |y: u32| tree.tile_row(y).map_or(0, |row| per_row[row as usize]);
        for (core, partition) in self.partitions[self.active.clone()].iter().enumerate() {
            let (y0, y1) = (partition.start_pixel().1, partition.end_pixel().1);
            let rows = y0.max(rows.start)..y1.min(rows.end);
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

    /// Every pixel's CREG_RAY_DIRECTION in `rows` as RGU computes it, row by row in
    /// parallel: each active core boots, and for each of its pixels a copy of the booted
    /// core, its CREG_PIXEL_2D_POSITION set to the pixel, runs RGU (row-major result;
    /// pixels of those rows no active core renders keep a zero ray). The ROM's RGU reads
    /// nothing else that changes from pixel to pixel; where other code makes a pixel's ray
    /// differ, that pixel does not use the structure
    /// ([`super::triangles::TileCandidates::new`] compares).
    fn precompute_rays(&self, rows: Range<u32>) -> Result<Vec<Vec3>, AccelRefusal> {
        let width = self.scene.width() as usize;
        // Only the cores with pixels in those rows.
        let booted = self
            .active_partitions()
            .filter(|(_, p)| p.start_pixel().1 < rows.end && p.end_pixel().1 > rows.start)
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
                    for x in if y == y0 { x0 } else { 0 }..x1 {
                        row[x as usize] = pixel_ray(&mut core, (x, y)).map_err(|fault| {
                            AccelRefusal::Rays(format!("core {index}, pixel ({x}, {y}): {fault}"))
                        })?;
                    }
                }
                Ok(())
            })?;
        Ok(rays)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::machine::tests::tiny_scene;
    use crate::emu::machine::RenderOptions;

    #[test]
    fn batches_hold_between_the_least_and_the_most_candidates() {
        let per = BATCH_CANDIDATES_PER_TRIANGLE;
        let least = (MIN_BATCH_CANDIDATES / per) as usize;
        let most = (BATCH_CANDIDATES / per) as usize;
        assert_eq!(batch_candidates(0), MIN_BATCH_CANDIDATES);
        assert_eq!(batch_candidates(least), MIN_BATCH_CANDIDATES);
        assert_eq!(batch_candidates(least + 1), MIN_BATCH_CANDIDATES + per);
        assert_eq!(batch_candidates(most - 1), BATCH_CANDIDATES - per);
        assert_eq!(batch_candidates(most), BATCH_CANDIDATES);
        assert_eq!(batch_candidates(1 << 40), BATCH_CANDIDATES);
    }

    #[test]
    fn a_use_of_no_tiles_has_no_mean() {
        assert_eq!(StructureUse::default().mean_candidates(), 0.0);
        let used = StructureUse {
            tiles: 4,
            candidates: 10,
            ..StructureUse::default()
        };
        assert_eq!(used.mean_candidates(), 2.5);
    }

    /// The built-in scene at 32x32 on 3 cores, with the structure in batches of about
    /// `budget` candidates.
    fn machine_with_batches(scene: &crate::io::scene::Scene, budget: u64) -> Machine<'_> {
        let options = RenderOptions {
            cores: Some(3),
            accel: AccelUse::Always,
            ..RenderOptions::default()
        };
        Machine::with_batches(scene, &options, budget).expect("a machine")
    }

    #[test]
    fn a_frame_that_fits_is_built_whole_in_one_batch() {
        let scene = tiny_scene(32, 32);
        let machine = machine_with_batches(&scene, u64::MAX);
        let accel = machine.accel().expect("culling applies").expect("wanted");
        let whole = accel.whole.as_ref().expect("built whole");
        assert_eq!(accel.ends, [[u32::MAX; 3]]);
        assert_eq!(accel.candidates, whole.candidate_count() as u64);
        assert_eq!(machine.expected_candidates(), Some(accel.candidates));
        assert!(Arc::ptr_eq(&machine.structure_for(0..1).unwrap(), whole));
    }

    #[test]
    fn a_tiny_budget_cuts_each_core_at_tile_rows_in_order() {
        let scene = tiny_scene(32, 32);
        let machine = machine_with_batches(&scene, 1);
        let accel = machine.accel().expect("culling applies").expect("wanted");
        assert!(accel.whole.is_none());
        let batches = accel.ends.len();
        // At most one batch per tile row of 4 pixel rows.
        assert!((2..=8).contains(&batches), "{batches} batches");
        assert_eq!(accel.ends[batches - 1], [u32::MAX; 3]);
        for core in 0..3 {
            let ends: Vec<u32> = accel.ends.iter().map(|end| end[core]).collect();
            assert!(
                ends.windows(2).all(|w| w[0] <= w[1]),
                "core {core}: {ends:?}"
            );
            let cut: Vec<u32> = ends.into_iter().filter(|&e| e != u32::MAX).collect();
            assert!(cut.iter().all(|&y| y % 4 == 0), "core {core}: {cut:?}");
        }
        // Batches never change the frame.
        let whole = machine_with_batches(&scene, u64::MAX);
        let (cut, whole) = (machine.render(None).unwrap(), whole.render(None).unwrap());
        assert_eq!(cut.frame, whole.frame);
        // Batches where no core has rows are not built.
        let built = cut.structure.expect("used").batches;
        assert!((2..=batches).contains(&built), "{built} of {batches} built");
    }
}
