//! Candidate tests sixteen pixels at a time. The pixels of one tile share the tile's
//! candidates, so BIU's reject test ([`Culler::rejects_candidate`]) runs once per candidate
//! for all of them, one 64-bit vector lane per pixel (`vector`, with AVX-512's eight lanes
//! or AVX2's four): the ALU's exact products, DIV as [`crate::emu::core::alu::div_by_float`]
//! computes it (candidates are mostly nearly parallel rays, where the quotients may wrap),
//! and BIU's three jumps. Each pixel then visits only the candidates BIU accepts for its
//! ray.
//!
//! A core renders row by row, so it meets each tile four times, one pixel row each time:
//! the verdicts of the tiles of the tile row it is in are kept until it leaves that row,
//! and each candidate's constants are loaded and spread over the lanes once per tile.
//! (Measured, the faithful ROM on a 1.3M-triangle sphere at 256x256, 26,044 candidates per
//! tile, whole process in one run: 9.2-9.3 s a tile row at a time with AVX2, 8.1-8.2 s a
//! tile at a time, 5.6-5.7 s with AVX-512; with the ray products' truncation offsets
//! chosen by sign ahead (`vector::RayVector`), 7.6 s with AVX2 and 5.1-5.2 s with AVX-512.
//! The image is the same word for word.)

use super::{Accel, TILE};
use crate::emu::core::alu::Vec3;
use crate::emu::machine::cull::{Biu, Culler, Exit};

#[cfg(target_arch = "x86_64")]
use crate::emu::lanes;
#[cfg(target_arch = "x86_64")]
mod vector;

/// Pixels per tile: one lane each, row by row.
pub const TILE_PIXELS: usize = (TILE * TILE) as usize;

/// A candidate one pixel must look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Open {
    /// Its place in the tile's candidates.
    pub position: u32,
    /// Whether its P was beyond the multiplier's exact range for the vector test, so
    /// [`Culler::rejects_candidate`] must tell; otherwise BIU accepts it and MAIN runs.
    pub untested: bool,
    /// What the candidates BIU rejects between the previous open one and this one cost.
    pub skipped_instructions: u32,
}

/// The candidates' verdicts for the sixteen pixels of one tile.
#[derive(Clone, Debug, Default)]
pub struct TileVerdicts {
    open: [Vec<Open>; TILE_PIXELS],
    /// What the rejected candidates after each lane's last open one cost.
    tail_instructions: [u64; TILE_PIXELS],
}

/// The verdicts of the tiles of the tile row a core is in, each computed when the core
/// first meets it (the allocations are reused from row to row).
#[derive(Clone, Debug, Default)]
pub struct RowVerdicts {
    /// Per tile of the row, the image row its verdicts start at, if computed.
    keys: Vec<Option<u32>>,
    tiles: Vec<TileVerdicts>,
}

impl RowVerdicts {
    /// The verdicts for pixel (x, y), computed now with its tile's if they are not at
    /// hand: its open candidates, and what the rejected ones after the last of them cost.
    pub fn for_pixel(&mut self, accel: &Accel, culler: &Culler, x: u32, y: u32) -> (&[Open], u64) {
        let (top, column) = (y - (y - accel.first_row) % TILE, (x / TILE) as usize);
        if column >= self.tiles.len() {
            self.keys.resize(column + 1, None);
            self.tiles.resize_with(column + 1, TileVerdicts::default);
        }
        let tile = &mut self.tiles[column];
        if self.keys[column] != Some(top) {
            // Lanes past the image's edges repeat its last ray; nobody reads them.
            let (x0, right, bottom) = (x - x % TILE, accel.width - 1, accel.last_row());
            let rays: [Vec3; TILE_PIXELS] = std::array::from_fn(|lane| {
                let x = (x0 + lane as u32 % TILE).min(right);
                let y = (top + lane as u32 / TILE).min(bottom);
                accel.ray(x, y).expect("inside the image")
            });
            tile.compute(culler, accel.candidates_of(accel.tile_index(x, y)), &rays);
            self.keys[column] = Some(top);
        }
        let lane = ((y - top) * TILE + x % TILE) as usize;
        (&tile.open[lane], tile.tail_instructions[lane])
    }
}

impl TileVerdicts {
    /// Tests `candidates` under one ray per lane.
    pub fn compute(&mut self, culler: &Culler, candidates: &[u32], rays: &[Vec3; TILE_PIXELS]) {
        for open in &mut self.open {
            open.clear();
        }
        // The vector test is the faithful BIU's; the fixed one's few candidates per tile
        // take the scalar test.
        #[cfg(target_arch = "x86_64")]
        if culler.biu() == Biu::Faithful {
            if <lanes::Avx512 as lanes::Lanes>::available() {
                // SAFETY: the CPU has AVX-512F, checked just above.
                unsafe { vector::compute_avx512(self, culler, candidates, rays) };
                return;
            }
            if <lanes::Avx2 as lanes::Lanes>::available() {
                // SAFETY: the CPU has AVX2, checked just above.
                unsafe { vector::compute_avx2(self, culler, candidates, rays) };
                return;
            }
        }
        self.compute_portable(culler, candidates, rays);
    }

    /// [`TileVerdicts::compute`] lane by lane, with the scalar test (which leaves nothing
    /// untested).
    fn compute_portable(
        &mut self,
        culler: &Culler,
        candidates: &[u32],
        rays: &[Vec3; TILE_PIXELS],
    ) {
        for (lane, &ray) in rays.iter().enumerate() {
            let mut skipped = 0u64;
            for (position, &index) in candidates.iter().enumerate() {
                match culler.rejects_candidate(index as usize, ray) {
                    Some(exit) => skipped += exit.instructions(),
                    None => {
                        self.open[lane].push(Open {
                            position: position as u32,
                            untested: false,
                            skipped_instructions: skipped as u32,
                        });
                        skipped = 0;
                    }
                }
            }
            self.tail_instructions[lane] = skipped;
        }
    }

    /// Records candidate `position`'s verdicts for the lanes from `first` on, one per entry
    /// of `skipped` (what the rejected candidates since that lane's previous open one
    /// cost): `open` and `untested` are their bit masks.
    #[inline(always)]
    fn push_open(
        &mut self,
        first: usize,
        skipped: &[u64],
        position: usize,
        open: u32,
        untested: u32,
    ) {
        let lists = &mut self.open[first..first + skipped.len()];
        for (lane, (list, &skipped)) in lists.iter_mut().zip(skipped).enumerate() {
            if open >> lane & 1 == 1 {
                list.push(Open {
                    position: position as u32,
                    untested: untested >> lane & 1 == 1,
                    skipped_instructions: skipped as u32,
                });
            }
        }
    }
}

/// What a candidate costs a lane that BIU rejects it on, by exit.
const EXIT_COSTS: [u64; 3] = [
    Exit::U.instructions(),
    Exit::V.instructions(),
    Exit::Sum.instructions(),
];

#[cfg(target_arch = "x86_64")]
#[cfg(test)]
mod tests {
    use super::super::test_rng::Rng;
    use super::*;
    use crate::emu::core::alu;
    use crate::emu::machine::cull::TriangleConstants;

    /// A lane's verdicts as the per-pixel loop reads them, with untested candidates
    /// resolved by BIU's scalar verdict: the open positions, what the rejected candidates
    /// before each cost, and what those after the last cost.
    pub(super) fn resolved(
        rows: &TileVerdicts,
        culler: &Culler,
        candidates: &[u32],
        ray: Vec3,
        lane: usize,
    ) -> (Vec<u32>, Vec<u64>, u64) {
        let (mut open, mut costs, mut pending) = (Vec::new(), Vec::new(), 0);
        for entry in &rows.open[lane] {
            pending += u64::from(entry.skipped_instructions);
            let index = candidates[entry.position as usize] as usize;
            match culler.rejects_candidate(index, ray) {
                Some(exit) if entry.untested => pending += exit.instructions(),
                _ => {
                    open.push(entry.position);
                    costs.push(pending);
                    pending = 0;
                }
            }
        }
        (open, costs, pending + rows.tail_instructions[lane])
    }

    /// The same from BIU's scalar verdict on every candidate.
    pub(super) fn expected(
        culler: &Culler,
        candidates: &[u32],
        ray: Vec3,
    ) -> (Vec<u32>, Vec<u64>, u64) {
        let (mut open, mut costs, mut pending) = (Vec::new(), Vec::new(), 0);
        for (position, &index) in candidates.iter().enumerate() {
            match culler.rejects(index as usize, ray) {
                Some(exit) => pending += exit.instructions(),
                None => {
                    open.push(position as u32);
                    costs.push(pending);
                    pending = 0;
                }
            }
        }
        (open, costs, pending)
    }

    /// A triangle for `ray`: often nearly parallel to it (Δ within a few raw units of 0,
    /// where DIV wraps), sometimes with coordinates past the multiplier's exact range.
    fn triangle(rng: &mut Rng, ray: Vec3) -> TriangleConstants {
        let size = [10, 16, 20, 24, 31][(rng.next() % 5) as usize];
        let e2 = rng.vec(size);
        let e1 = if rng.next().is_multiple_of(3) {
            rng.vec(size)
        } else {
            // a·R + b·E2 + noise: P·E1 = (R × E2)·E1 is then near 0.
            let (a, b) = (rng.raw(8) as i64, rng.raw(8) as i64);
            let noise = rng.raw(4) as i64;
            std::array::from_fn(|i| {
                (a * (ray[i] as i32 as i64) / 256 + b * (e2[i] as i32 as i64) / 256 + noise) as u32
            })
        };
        let t_size = [12, 20, 26, 31][(rng.next() % 4) as usize];
        let t = rng.vec(t_size);
        TriangleConstants {
            e1,
            e2,
            t,
            q: alu::cross(t, e1),
            h1: 0,
        }
    }

    /// The vector test and the lane-by-lane one give every lane exactly BIU's verdicts
    /// (which candidates MAIN must run for, what the others cost, by exit), on triangles
    /// built to sit at the wrap-arounds.
    #[test]
    fn tile_verdicts_are_bius_verdicts_for_each_lane() {
        let mut rng = Rng(0x0D0E_5EED_0001);
        let (mut open_seen, mut untested_seen, mut exits_seen) = (0, 0, [0u32; 3]);
        for case in 0..3_000 {
            let base = rng.vec(17);
            let rays: [Vec3; TILE_PIXELS] = std::array::from_fn(|_| {
                std::array::from_fn(|i| (base[i] as i32).wrapping_add(rng.raw(8)) as u32)
            });
            let constants: Vec<_> = (0..24).map(|_| triangle(&mut rng, rays[0])).collect();
            let culler = Culler::from_constants(constants);
            let candidates: Vec<u32> = (0..24).filter(|_| !rng.next().is_multiple_of(4)).collect();
            let mut rows = TileVerdicts::default();
            let mut portable = TileVerdicts::default();
            rows.compute(&culler, &candidates, &rays);
            portable.compute_portable(&culler, &candidates, &rays);
            // The narrower vector path too, where compute takes the wider one.
            let mut avx2 = None;
            #[cfg(target_arch = "x86_64")]
            if <lanes::Avx2 as lanes::Lanes>::available() {
                let mut tile = TileVerdicts::default();
                // SAFETY: the CPU has AVX2, checked just above.
                unsafe { vector::compute_avx2(&mut tile, &culler, &candidates, &rays) };
                avx2 = Some(tile);
            }
            for (lane, &ray) in rays.iter().enumerate() {
                let want = expected(&culler, &candidates, ray);
                let what = format!("case {case}, lane {lane}");
                for (path, tile) in [
                    ("compute", Some(&rows)),
                    ("portable", Some(&portable)),
                    ("avx2", avx2.as_ref()),
                ] {
                    if let Some(tile) = tile {
                        assert_eq!(
                            resolved(tile, &culler, &candidates, ray, lane),
                            want,
                            "{path}: {what}"
                        );
                    }
                }
                assert!(portable.open[lane].iter().all(|open| !open.untested));
                open_seen += want.0.len();
                untested_seen += rows.open[lane].iter().filter(|open| open.untested).count();
                for &index in &candidates {
                    if let Some(exit) = culler.rejects(index as usize, ray) {
                        exits_seen[exit as usize] += 1;
                    }
                }
            }
        }
        // The cases reach accepted candidates, the scalar fallback and every exit.
        assert!(open_seen > 1_000, "{open_seen} open");
        assert!(untested_seen > 1_000, "{untested_seen} untested");
        assert!(
            exits_seen.iter().all(|&n| n > 1_000),
            "exits {exits_seen:?}"
        );
    }
}
