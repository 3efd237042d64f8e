//! The per-pixel triangle loop and where its triangles come from. The control unit runs
//! MAIN once per triangle; a [`Candidates`] source decides which MAINs must really run
//! and books the others exactly as running them would have (culling's and the
//! structure's arguments: [`super::cull`], [`super::accel`]): every triangle, runs of
//! triangles the culler proves rejected, or a tile's candidates.

use std::ops::BitOrAssign;

use super::accel::{self, Accel, Open, RowVerdicts};
use super::cull::{self, Culler};
use crate::emu::core::alu::Vec3;
use crate::emu::core::{Core, CoreState, Triangle};
use crate::emu::isa::registers::address;

/// Where the next MAIN that must run is, for a core `C`.
pub trait Candidates<C> {
    /// Whether the source ever skips a MAIN (the loop over every triangle is simpler).
    const SKIPS: bool = true;

    /// Books the MAINs it skips from triangle `from` on (their counts and the registers
    /// the last of them leaves) and returns the next triangle whose MAIN must run, or the
    /// triangle count when none must.
    fn next(&mut self, core: &mut C, from: usize) -> usize;

    /// Books what is left once every triangle is loaded.
    fn finish(&mut self, _core: &mut C) {}
}

/// Every triangle: MAIN runs for each.
pub struct Every;

impl<C> Candidates<C> for Every {
    const SKIPS: bool = false;

    #[inline(always)]
    fn next(&mut self, _core: &mut C, from: usize) -> usize {
        from
    }
}

/// Runs of triangles BIU provably rejects, tested one by one under the core's ray.
pub struct CulledRuns<'c>(pub &'c Culler);

impl<C: CoreState> Candidates<C> for CulledRuns<'_> {
    #[inline(always)]
    fn next(&mut self, core: &mut C, from: usize) -> usize {
        // CREG_RAY_DIRECTION and CREG_ZERO change only when code runs.
        if !cull::main_returns_false(core) {
            return from;
        }
        let ray = core.register(address::CREG_RAY_DIRECTION);
        let run = self.0.skippable_run(from, ray, core.budget_left());
        if run.end > from {
            core.charge_skipped((run.end - from) as u64, run.instructions);
            self.0.write_skipped(core, run.end - 1, run.last_sum, ray);
        }
        run.end
    }
}

/// One tile's candidates ([`accel`]): the tile row's verdicts for this pixel's ray, each
/// rejected candidate booked at its exit, the tile's pruned triangles booked at the end.
pub struct TileCandidates<'a> {
    /// Whether some MAIN changed the ray: the verdicts no longer hold.
    ray_changed: bool,
    culler: &'a Culler,
    tile: &'a accel::Tile,
    candidates: &'a [u32],
    open: std::slice::Iter<'a, Open>,
    tail_instructions: u64,
    /// Candidates before this place are booked or run.
    tested_to: usize,
    /// The first triangle of the run skipped since the last MAIN.
    run_start: usize,
    /// The pixel's ray; the verdicts hold while MAIN leaves it (the ROM's does).
    ray: Vec3,
    triangles: usize,
}

impl<'a> TileCandidates<'a> {
    /// The source for the pixel `core` is at, or `None` where a premise fails: a pixel
    /// position that is not whole, a ray or CREG_ZERO some code changed, or a budget that
    /// does not cover the tile's skipped exits and every candidate.
    #[inline]
    pub fn new(
        core: &impl CoreState,
        structure: &'a Accel,
        culler: &'a Culler,
        rows: &'a mut RowVerdicts,
        triangles: usize,
    ) -> Option<TileCandidates<'a>> {
        let position = core.register(address::CREG_PIXEL_2D_POSITION);
        if position[0] & 0x1_FFFF != 0 || position[1] & 0x1_FFFF != 0 {
            return None;
        }
        let (x, y) = (position[0] >> 17, position[1] >> 17);
        let ray = core.register(address::CREG_RAY_DIRECTION);
        if !structure.covers(x, y)
            || structure.ray(x, y) != Some(ray)
            || !cull::main_returns_false(core)
        {
            return None;
        }
        let (tile, candidates) = structure.tile(x, y);
        let worst = tile.skipped_instructions_at_most()
            + candidates.len() as u64 * accel::MAX_MAIN_INSTRUCTIONS;
        if core.budget_left() < worst {
            return None;
        }
        let (open, tail_instructions) = rows.for_pixel(structure, culler, x, y);
        Some(TileCandidates {
            ray_changed: false,
            culler,
            tile,
            candidates,
            open: open.iter(),
            tail_instructions,
            tested_to: 0,
            run_start: 0,
            ray,
            triangles,
        })
    }
}

impl Candidates<Core<'_>> for TileCandidates<'_> {
    #[inline]
    fn next(&mut self, core: &mut Core<'_>, from: usize) -> usize {
        // MAIN ran for triangle `from - 1` (or none yet): the skipped run starts here.
        self.run_start = from;
        let ray = core.register(address::CREG_RAY_DIRECTION);
        // Should some MAIN change the ray (the ROM's does not), the rest are tested one
        // by one.
        self.ray_changed |= ray != self.ray;
        let next = if self.ray_changed {
            self.next_tested(core, ray)
        } else {
            self.next_open(core)
        };
        match next {
            Some(index) => {
                self.culler
                    .write_skipped_run(core, self.run_start, index, ray);
                index
            }
            None => self.triangles,
        }
    }

    fn finish(&mut self, core: &mut Core<'_>) {
        let ray = core.register(address::CREG_RAY_DIRECTION);
        self.culler
            .write_skipped_run(core, self.run_start, self.triangles, ray);
        // Skipped exits that depend on the pixel are charged at their most, so the pixel
        // shader has at most the budget brute force leaves it: a frame that faults is
        // rendered again without the structure (Machine::render).
        let tile = self.tile;
        core.charge_skipped(
            u64::from(tile.skipped) + u64::from(tile.skipped_unknown),
            tile.skipped_instructions_at_most(),
        );
        core.unknown_cost_routines += u64::from(tile.skipped_unknown);
    }
}

impl TileCandidates<'_> {
    /// The next candidate the tile row's verdicts leave open for this pixel's ray.
    #[inline]
    fn next_open(&mut self, core: &mut impl CoreState) -> Option<usize> {
        for open in self.open.by_ref() {
            let position = open.position as usize;
            core.charge_skipped(
                (position - self.tested_to) as u64,
                u64::from(open.skipped_instructions),
            );
            self.tested_to = position + 1;
            let index = self.candidates[position] as usize;
            if open.untested {
                if let Some(exit) = self.culler.rejects_candidate(index, self.ray) {
                    core.charge(exit.instructions());
                    continue;
                }
            }
            return Some(index);
        }
        let rest = self.candidates.len() - self.tested_to;
        core.charge_skipped(rest as u64, self.tail_instructions);
        self.tested_to = self.candidates.len();
        None
    }

    /// The next candidate BIU does not reject under `ray`, testing each.
    fn next_tested(&mut self, core: &mut impl CoreState, ray: Vec3) -> Option<usize> {
        while self.tested_to < self.candidates.len() {
            let index = self.candidates[self.tested_to] as usize;
            self.tested_to += 1;
            match self.culler.rejects_candidate(index, ray) {
                Some(exit) => core.charge(exit.instructions()),
                None => return Some(index),
            }
        }
        None
    }
}

/// What the host streams a pixel's triangles to: a lone core, or the lanes of a
/// lock-step group that take the pixel (one triangle loop for both widths).
pub trait Streamed {
    /// Which of the cores some MAIN hit: `bool` for a lone core, a lane mask for a group.
    type Hits: Copy + Default + BitOrAssign;

    /// The host's load of one triangle into the swap memory.
    fn load(&mut self, triangle: &Triangle);

    /// The loads of consecutive triangles, as many loads one after the other.
    fn load_run(&mut self, triangles: &[Triangle]);
}

impl Streamed for Core<'_> {
    type Hits = bool;

    #[inline(always)]
    fn load(&mut self, triangle: &Triangle) {
        self.load_triangle(triangle);
    }

    #[inline(always)]
    fn load_run(&mut self, triangles: &[Triangle]) {
        self.load_triangles(triangles);
    }
}

/// The triangle loop of one pixel: MAIN for each triangle `source` says must run (`main`
/// runs it and says on which cores it hit), the host's loads caught up only before code
/// runs (skipped MAINs read no swap memory). The cores any MAIN hit.
#[inline(always)]
pub fn run<C: Streamed, S: Candidates<C>, E>(
    cores: &mut C,
    triangles: &[Triangle],
    source: &mut S,
    mut main: impl FnMut(&mut C) -> Result<C::Hits, E>,
) -> Result<C::Hits, E> {
    let (mut hit, mut loaded, mut index) = (C::Hits::default(), 0, 0);
    if !S::SKIPS {
        for triangle in triangles {
            cores.load(triangle);
            hit |= main(cores)?;
        }
        return Ok(hit);
    }
    loop {
        index = source.next(cores, index);
        if index >= triangles.len() {
            break;
        }
        cores.load_run(&triangles[loaded..=index]);
        loaded = index + 1;
        hit |= main(cores)?;
        index += 1;
    }
    cores.load_run(&triangles[loaded..]);
    source.finish(cores);
    Ok(hit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::triangle::TRIANGLE_VECTORS;

    /// A core that notes each load (triangle `k` carries `k` in its first word) and, for
    /// each MAIN, the triangles the host had streamed by then.
    #[derive(Default)]
    struct Recorder {
        loaded: Vec<u32>,
        mains: Vec<usize>,
        finished: bool,
    }

    impl Streamed for Recorder {
        type Hits = bool;

        fn load(&mut self, triangle: &Triangle) {
            self.loaded.push(triangle[0][0]);
        }

        fn load_run(&mut self, triangles: &[Triangle]) {
            triangles.iter().for_each(|triangle| self.load(triangle));
        }
    }

    /// Runs MAIN only for the listed triangles.
    struct Listed(Vec<usize>);

    impl Candidates<Recorder> for Listed {
        fn next(&mut self, _core: &mut Recorder, from: usize) -> usize {
            self.0
                .iter()
                .copied()
                .find(|&k| k >= from)
                .unwrap_or(usize::MAX)
        }

        fn finish(&mut self, core: &mut Recorder) {
            core.finished = true;
        }
    }

    fn triangles(count: u32) -> Vec<Triangle> {
        (0..count).map(|k| [[k, 0, 0]; TRIANGLE_VECTORS]).collect()
    }

    /// MAIN on `core` that hits at `hit` and fails at `fail`.
    fn main_at(hit: usize, fail: usize) -> impl FnMut(&mut Recorder) -> Result<bool, usize> {
        move |core| {
            let index = core.loaded.len() - 1;
            core.mains.push(core.loaded.len());
            if index == fail {
                return Err(index);
            }
            Ok(index == hit)
        }
    }

    #[test]
    fn every_triangle_is_loaded_just_before_its_main() {
        let mut core = Recorder::default();
        let hit = run(&mut core, &triangles(5), &mut Every, main_at(3, 9));
        assert_eq!(hit, Ok(true));
        assert_eq!(core.loaded, [0, 1, 2, 3, 4]);
        assert_eq!(core.mains, [1, 2, 3, 4, 5]);
        assert!(!core.finished);
    }

    #[test]
    fn skipped_mains_are_loaded_before_the_next_run_and_at_the_end() {
        let mut core = Recorder::default();
        let mut source = Listed(vec![2, 3, 6]);
        let hit = run(&mut core, &triangles(9), &mut source, main_at(4, 9));
        // Triangle 4 is skipped, so its "hit" never happens.
        assert_eq!(hit, Ok(false));
        assert_eq!(core.loaded, [0, 1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(core.mains, [3, 4, 7]);
        assert!(core.finished);
    }

    #[test]
    fn a_failing_main_stops_the_loop() {
        let mut core = Recorder::default();
        let mut source = Listed(vec![1, 5, 7]);
        assert_eq!(
            run(&mut core, &triangles(9), &mut source, main_at(9, 5)),
            Err(5)
        );
        assert_eq!(core.mains, [2, 6]);
        assert_eq!(core.loaded.len(), 6);
        assert!(!core.finished);
    }
}
