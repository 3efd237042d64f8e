//! The acceleration structure: for each 4 x 4 tile of pixels, the triangles whose BIU
//! verdict is not settled for every ray of the tile. All other triangles are rejected by
//! the ROM's **Q15.17** arithmetic at a known exit, so the pixel skips them without looking
//! at them, and the core ends each pixel in exactly the state brute force leaves.
//!
//! # The bound
//!
//! BIU computes P = R × E2, Δ = P·E1, H2 = P·T and H3 = Q·R (E1, E2, T, Q are constant per
//! triangle; [`super::cull`]). In real numbers Δ = R·(E2 × E1), H2 = R·(E2 × T) and
//! H3 = R·Q are linear in the ray R, so over a box of rays each lies between the sums of
//! its coefficients times the box's corners: exactly in i128, or, for a triangle whose
//! coefficients are small enough, in double precision with every span widened by a proven
//! rounding margin (`float`, four nodes per call). The ALU truncates
//! each product toward zero (all first operands are exact multiplicands, checked, so the
//! multiplier is exact before truncating), so each of P's lanes is within 2 raw units of
//! the real value, and Δ within `3 + 2·Σ|E1|/2^17` raw units (three truncated products plus
//! P's error times E1), H2 within `3 + 2·Σ|T|/2^17`, H3 within 3. No sum overflows: every
//! |P| and every DOT is checked below 2^30 over all the frame's rays.
//!
//! With those intervals and s = sign(Δ) fixed over the tile (Δ's interval excludes 0),
//! A = s·H2, B = s·H3 and D = |Δ|, BIU exits for every ray of the tile
//! - at `u < 0` when A < 0 and |A|·2^17 >= D (a nonzero quotient) and |A| < 2^14·D (DIV
//!   does not wrap);
//! - at `v < 0` when A >= 0 (u >= 0 whatever the quotient) and the same holds for B;
//! - at `u + v > 1` when A, B >= 0, (A + B)·2^17 >= (2^17 + 2)·D (the truncated quotients
//!   still sum past 1.0) and A + B < 2^14·D (neither DIV nor ADD wraps).
//!
//! Anything else (a ray nearly parallel to the plane, Δ's sign unsettled, a possible
//! wrap-around) leaves the triangle a candidate, tested per pixel exactly (BIU's own
//! integer arithmetic, for the four pixels of a tile row at once: `accel/rows.rs`) or
//! interpreted. Where a triangle cannot be bounded at all (coordinates that
//! could overflow), it is a candidate everywhere.
//!
//! # The fixed ROM
//!
//! The fixed ROM's BIU tests edge values before anything can wrap, so its verdicts need
//! no wrap reasoning and prune every triangle that is not under a tile (`accel/fixed.rs`,
//! with weighted sums of two edges for the nodes past a corner): on a 1.3M-triangle sphere
//! at 256x256, 356 candidates per tile where the faithful ROM keeps 26,111. It also skips, per node, the triangles every ray meets behind a nearer hit
//! that covers the node (`accel/occlusion.rs`): a closed building seen from outside keeps
//! its outer walls as candidates, not the 350k triangles inside.
//!
//! # Premises, per frame and per pixel
//!
//! The culler's premises (ROM MAIN, the reject path's words). The rays of every pixel are
//! computed before the frame by running each core's boot routines, RGU and NPG; a pixel
//! uses the structure only when its CREG_RAY_DIRECTION equals that ray (a user shader could
//! change what RGU reads), CREG_ZERO lets a rejecting MAIN return FALSE, and its budget
//! covers every skipped exit and [`MAX_MAIN_INSTRUCTIONS`] per candidate, so the watchdog
//! cannot stop the triangle loop. Otherwise that pixel runs with per-triangle culling.
//!
//! # State and counts
//!
//! Skipped MAINs leave only the last one's registers (and R2 of the last one that reached
//! `u + v`); [`Culler::write_skipped`] writes them before every interpreted MAIN and at the
//! end of the loop, finding that R2 by testing the skipped run backwards. Each tile knows
//! the exits of the triangles it skips, so the instruction counts stay exact.
//!
//! # Batches of tile rows
//!
//! The frame's rays and the quadtree of tiles over them ([`RayTree`]) are kept for the
//! frame; the tiles' candidates, which grow with triangles times pixels, are built for a
//! set of tile rows at a time ([`RayTree::build`], an [`Accel`]) and dropped once the
//! cores have rendered those rows (`Machine::render`). A batch descends the whole tree,
//! pruned to its rows: every node it judges sits in the same group with the same siblings
//! as in the whole build, so every tile gets the same candidates and skipped exits, and
//! the frame, the instruction count (or its bound) and the watchdog's stops cannot depend
//! on how the rows were batched. What a batch costs beyond its rows is the descent from
//! the top of the tree for every triangle again.

use std::sync::Arc;

use rayon::prelude::*;

mod fixed;
mod float;
mod occlusion;
mod rows;
mod tree;

pub use occlusion::OCCLUDED_MAIN_INSTRUCTIONS;
pub use rows::{Open, RowVerdicts};

use super::cull::{Biu, Culler, Exit, TriangleConstants};
use crate::emu::core::alu::{self, Vec3};
use fixed::FixedForms;
use float::{Below, Collector, FloatForms, Found, WorkerSkips};
use occlusion::{Depth, Depths};

/// Pixels per tile side.
pub const TILE: u32 = 4;

/// More instructions than one interpreted MAIN can execute: MAIN, BIU and TCC are the ROM's
/// (a premise of culling) and run each ROM word at most twice.
pub const MAX_MAIN_INSTRUCTIONS: u64 = 1024;

/// A tile: its candidates (a range of `Accel::candidates`, ascending) and the triangles
/// it skips without testing: those whose exit is known, with their instructions, and
/// those rejected at an exit that depends on the pixel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tile {
    pub start: u32,
    pub len: u32,
    pub skipped_instructions: u64,
    pub skipped: u32,
    pub skipped_unknown: u32,
    /// What the `skipped_unknown` triangles cost at most: each the BIU's costliest exit.
    pub unknown_instructions: u64,
}

impl Tile {
    /// The most instructions the triangles this tile skips can cost.
    pub fn skipped_instructions_at_most(&self) -> u64 {
        self.skipped_instructions + self.unknown_instructions
    }
}

/// Per node during the build: how many triangles it skips, by [`Verdict::code`] (place 0
/// stays unused).
type Skipped = [u32; 8];

/// [`Verdict::code`] of no verdict.
const UNSETTLED: u8 = 0;

/// The frame's rays and the quadtree of tiles over them: what the structure of any set of
/// tile rows is built from ([`RayTree::build`]). Its size grows with the pixels only.
#[derive(Clone, Debug)]
pub struct RayTree {
    width: u32,
    /// The image row the first row of rays is (a band's first row; tiles start there).
    first_row: u32,
    tiles_x: u32,
    tiles_y: u32,
    nodes: Vec<Node>,
    /// Per node, the tile rows it covers: the first and the one past the last.
    node_rows: Vec<[u32; 2]>,
    root: u32,
    /// Each pixel's ray as RGU computes it, row-major.
    rays: Arc<Vec<Vec3>>,
    /// Per node, the depth behind which its rays are covered: found at the first build,
    /// over the whole tree, so that every batch of rows sees the same.
    depths: std::sync::OnceLock<Depths>,
}

/// The groups of every node of a [`RayTree`] (none left out for the rows a build wants):
/// made once for the estimate of the batches and a whole build ([`RayTree::whole_groups`]).
pub struct WholeGroups(Vec<float::Group>);

/// The structure for some tile rows of a [`RayTree`]: their tiles and candidates.
#[derive(Clone, Debug)]
pub struct Accel {
    width: u32,
    first_row: u32,
    /// Per tile row of the tree, where its tiles start in `tiles` ([`NOT_BUILT`]: nowhere).
    row_starts: Vec<u32>,
    tiles: Vec<Tile>,
    candidates: Vec<u32>,
    rays: Arc<Vec<Vec3>>,
}

/// [`Accel::row_starts`] of a tile row the structure was not built for.
const NOT_BUILT: u32 = u32::MAX;

/// Why a frame renders without the structure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccelRefusal {
    /// The per-pixel rays could not be computed before the frame.
    Rays(String),
    /// Some ray's lanes are too large for the multiplier to be exact.
    LargeRays,
}

impl std::fmt::Display for AccelRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AccelRefusal::Rays(why) => write!(f, "acceleration refused: {why}"),
            AccelRefusal::LargeRays => write!(
                f,
                "acceleration refused: ray directions beyond ±10922 (the multiplier is not exact there)"
            ),
        }
    }
}

/// A closed interval of raw Q15.17 values.
#[derive(Clone, Copy, Debug)]
struct Span {
    lo: i128,
    hi: i128,
}

impl Span {
    fn neg(self) -> Span {
        Span {
            lo: -self.hi,
            hi: -self.lo,
        }
    }

    /// The greatest magnitude in the interval.
    fn magnitude(self) -> i128 {
        self.lo.abs().max(self.hi.abs())
    }
}

/// The rays of a node: per lane, the least and greatest raw value.
#[derive(Clone, Copy, Debug)]
struct RayBox {
    lo: [i32; 3],
    hi: [i32; 3],
}

impl RayBox {
    const EMPTY: RayBox = RayBox {
        lo: [i32::MAX; 3],
        hi: [i32::MIN; 3],
    };

    fn add(&mut self, ray: Vec3) {
        for (i, &lane) in ray.iter().enumerate() {
            self.lo[i] = self.lo[i].min(lane as i32);
            self.hi[i] = self.hi[i].max(lane as i32);
        }
    }

    fn union(a: RayBox, b: RayBox) -> RayBox {
        RayBox {
            lo: std::array::from_fn(|i| a.lo[i].min(b.lo[i])),
            hi: std::array::from_fn(|i| a.hi[i].max(b.hi[i])),
        }
    }

    /// The box as twice its centre and twice its half-extent, per lane.
    fn around(&self) -> Around {
        Around {
            mid2: std::array::from_fn(|i| i64::from(self.lo[i]) + i64::from(self.hi[i])),
            half2: std::array::from_fn(|i| i64::from(self.hi[i]) - i64::from(self.lo[i])),
        }
    }

    /// Per lane, the greatest |R|.
    fn magnitude(&self) -> [i128; 3] {
        std::array::from_fn(|i| {
            i128::from(self.lo[i])
                .abs()
                .max(i128::from(self.hi[i]).abs())
        })
    }
}

/// A ray box as the verdict reads it: over the box, c·R lies in
/// [(c·mid2 − |c|·half2) / 2, (c·mid2 + |c|·half2) / 2], exactly (both numerators are even),
/// with three products for the centre and three for the extent and no comparisons.
#[derive(Clone, Copy, Debug)]
struct Around {
    mid2: [i64; 3],
    half2: [i64; 3],
}

impl Around {
    /// Twice the least and twice the greatest of c·R over the box.
    #[inline(always)]
    fn linear2(&self, c: [i128; 3], c_abs: [i128; 3]) -> (i128, i128) {
        let (mut mid, mut half) = (0, 0);
        for i in 0..3 {
            mid += c[i] * i128::from(self.mid2[i]);
            half += c_abs[i] * i128::from(self.half2[i]);
        }
        (mid - half, mid + half)
    }
}

/// A quadtree node over a rectangle of tiles; leaves are single tiles. (Four children per
/// node rather than two halve the verdicts a triangle costs along a line of undecided
/// tiles, the near-parallel triangles' typical shape; measured.)
#[derive(Clone, Debug)]
struct Node {
    rays: RayBox,
    around: Around,
    /// Children, or the tile index for a leaf.
    kind: NodeKind,
}

#[derive(Clone, Copy, Debug)]
enum NodeKind {
    Leaf(u32),
    /// The first `count` entries are the children.
    Split([u32; 4], u8),
}

impl NodeKind {
    fn children(&self) -> &[u32] {
        match self {
            NodeKind::Leaf(_) => &[],
            NodeKind::Split(children, count) => &children[..*count as usize],
        }
    }
}

/// A triangle BIU rejects for every ray of a node: at a known exit, or at one that depends
/// on the ray.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    Exit(Exit),
    Rejected,
    /// Behind a triangle that covers the node ([`occlusion`]): never the hit kept.
    Occluded,
}

impl Verdict {
    /// A small number for each verdict, [`UNSETTLED`] being none: the build counts and
    /// judges four nodes at a time by these.
    const fn code(self) -> u8 {
        match self {
            Verdict::Exit(exit) => exit.code(),
            Verdict::Occluded => 6,
            Verdict::Rejected => 7,
        }
    }
}

/// What BIU computes of one triangle, as linear forms of the ray.
#[derive(Clone, Copy, Debug)]
struct Forms {
    /// Δ = R·delta / 2^34, H2 = R·h2 / 2^34, H3 = R·h3 / 2^17 (raw units).
    delta: [i128; 3],
    h2: [i128; 3],
    h3: [i128; 3],
    /// The coefficients' magnitudes.
    delta_abs: [i128; 3],
    h2_abs: [i128; 3],
    h3_abs: [i128; 3],
    /// Truncation error bounds, raw units.
    delta_error: i128,
    h2_error: i128,
}

const H3_ERROR: i128 = 3;
/// Every |P| lane and DOT is kept below this, far from pack's 2^31.
const SAFE: i128 = 1 << 30;
/// Forms whose |c|·|R| sums stay below this are evaluated in double precision (the bound
/// the rounding argument of `float` starts from; every span then stays below 2^45 raw
/// units).
const NARROW: i128 = 1 << 60;

fn floor_div(a: i128, shift: u32) -> i128 {
    a >> shift
}

fn ceil_div(a: i128, shift: u32) -> i128 {
    -((-a) >> shift)
}

/// The span of c·R / 2^shift over `rays`, widened by `error` raw units.
#[inline(always)]
fn forms_span(rays: &Around, c: [i128; 3], c_abs: [i128; 3], shift: u32, error: i128) -> Span {
    // Twice the bounds: one more bit of shift.
    let (lo, hi) = rays.linear2(c, c_abs);
    Span {
        lo: floor_div(lo, shift + 1) - error,
        hi: ceil_div(hi, shift + 1) + error,
    }
}

impl Forms {
    /// The forms of a triangle, or `None` when it cannot be bounded over `all` rays.
    fn new(k: &TriangleConstants, all: &RayBox) -> Option<Forms> {
        let wide = |v: Vec3| v.map(|w| i128::from(w as i32));
        // H3 = DOT(Q, R): Q is the multiplier's first operand.
        if !alu::exact_multiplicands(k.q) || !alu::exact_multiplicands(k.t) {
            return None;
        }
        let (e1w, e2w, tw, qw) = (wide(k.e1), wide(k.e2), wide(k.t), wide(k.q));
        let cross = |a: [i128; 3], b: [i128; 3]| {
            [
                a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0],
            ]
        };
        // |P| per lane over every ray: |R_j||E2_k| + |R_k||E2_j|, scaled, plus truncation.
        let r = all.magnitude();
        let p_max = [
            (r[1] * e2w[2].abs() + r[2] * e2w[1].abs()) / (1 << 17) + 2,
            (r[2] * e2w[0].abs() + r[0] * e2w[2].abs()) / (1 << 17) + 2,
            (r[0] * e2w[1].abs() + r[1] * e2w[0].abs()) / (1 << 17) + 2,
        ];
        let dot_max = |a: [i128; 3], b: [i128; 3]| {
            (0..3).map(|i| a[i] * b[i].abs()).sum::<i128>() / (1 << 17) + 3
        };
        if p_max.iter().any(|&p| p >= SAFE)
            || dot_max(p_max, e1w) >= SAFE
            || dot_max(p_max, tw) >= SAFE
            || dot_max(r, qw.map(i128::abs)) >= SAFE
        {
            return None;
        }
        let sum_abs = |v: [i128; 3]| v.iter().map(|c| c.abs()).sum::<i128>();
        let (delta, h2) = (cross(e2w, e1w), cross(e2w, tw));
        Some(Forms {
            delta,
            h2,
            h3: qw,
            delta_abs: delta.map(i128::abs),
            h2_abs: h2.map(i128::abs),
            h3_abs: qw.map(i128::abs),
            delta_error: 3 + ceil_div(2 * sum_abs(e1w), 17),
            h2_error: 3 + ceil_div(2 * sum_abs(tw), 17),
        })
    }

    /// Whether every |c|·|R| sum over `all` rays is below [`NARROW`] and the error bounds
    /// below 2^31: the premises of [`FloatForms`].
    fn narrow(&self, all: &RayBox) -> bool {
        let r = all.magnitude();
        let fits = |c: [i128; 3]| (0..3).map(|i| c[i].abs() * r[i]).sum::<i128>() < NARROW;
        let small = |e: i128| e < 1 << 31;
        fits(self.delta)
            && fits(self.h2)
            && fits(self.h3)
            && small(self.delta_error)
            && small(self.h2_error)
    }

    /// The span of Δ over `rays`, raw units.
    #[inline(always)]
    fn delta_span(&self, rays: &Around) -> Span {
        forms_span(rays, self.delta, self.delta_abs, 34, self.delta_error)
    }

    /// What BIU does for every ray of `rays`, if that is certain.
    #[inline(always)]
    fn verdict(&self, rays: &Around) -> Option<Verdict> {
        let zero = 0;
        // Δ first: near-parallel triangles, the bulk of the undecided ones, stop here.
        let delta = self.delta_span(rays);
        let sign_of_delta = if delta.lo > zero {
            false
        } else if delta.hi < zero {
            true
        } else {
            return None;
        };
        let (h2, h3) = (
            forms_span(rays, self.h2, self.h2_abs, 34, self.h2_error),
            forms_span(rays, self.h3, self.h3_abs, 17, H3_ERROR),
        );
        let (d, a, b) = if sign_of_delta {
            (delta.neg(), h2.neg(), h3.neg())
        } else {
            (delta, h2, h3)
        };
        let wrap = d.lo << 14;
        let negative_quotient = |x: Span| x.hi < zero && (-x.hi) << 17 >= d.hi && -x.lo < wrap;
        let no_wrap = |x: Span| x.magnitude() < wrap;
        let beyond_sum = (a.lo + b.lo) << 17 >= ((1 << 17) + 2) * d.hi
            && no_wrap(a)
            && no_wrap(b)
            && a.magnitude() + b.magnitude() < wrap;
        if negative_quotient(a) {
            Some(Verdict::Exit(Exit::U))
        } else if a.lo >= zero && negative_quotient(b) {
            Some(Verdict::Exit(Exit::V))
        } else if a.lo >= zero && b.lo >= zero && beyond_sum {
            Some(Verdict::Exit(Exit::Sum))
        } else if negative_quotient(b) || beyond_sum {
            // v < 0 rejects whatever u is; u + v > 1 rejects whatever the signs are (a
            // negative u or v either exits first or is a zero quotient, and then the other
            // is above 1.0 on its own). Which exit depends on the ray.
            Some(Verdict::Rejected)
        } else {
            None
        }
    }
}

impl RayTree {
    /// The tree over `rays` (row-major, one per pixel of `height` rows of a `width`-pixel
    /// image from row `first_row` on).
    pub fn new(
        width: u32,
        first_row: u32,
        height: u32,
        rays: Vec<Vec3>,
    ) -> Result<RayTree, AccelRefusal> {
        if rays.par_iter().any(|&ray| !alu::exact_multiplicands(ray)) {
            return Err(AccelRefusal::LargeRays);
        }
        let (tiles_x, tiles_y) = (width.div_ceil(TILE), height.div_ceil(TILE));
        let tiles = tile_boxes(&rays, width, height);
        let (nodes, node_rows, root) = tree::build(&tiles, tiles_x, tiles_y);
        Ok(RayTree {
            width,
            first_row,
            tiles_x,
            tiles_y,
            nodes,
            node_rows,
            root,
            // Shared, not copied: a 1080p frame's rays are 25 MB.
            rays: Arc::new(rays),
            depths: std::sync::OnceLock::new(),
        })
    }

    /// Rows of tiles (of [`TILE`] image rows from the tree's first row on).
    pub fn tile_rows(&self) -> u32 {
        self.tiles_y
    }

    /// The tile row image row `y` lies in, if the tree holds it.
    pub fn tile_row(&self, y: u32) -> Option<u32> {
        let row = y.checked_sub(self.first_row)? / TILE;
        (row < self.tiles_y).then_some(row)
    }

    /// The tile rows (one flag each, as [`RayTree::build`] takes them) that image rows
    /// `rows` lie in.
    pub fn tile_rows_of(&self, rows: impl IntoIterator<Item = std::ops::Range<u32>>) -> Vec<bool> {
        let mut wanted = vec![false; self.tiles_y as usize];
        for row in rows.into_iter().flatten().filter_map(|y| self.tile_row(y)) {
            wanted[row as usize] = true;
        }
        wanted
    }

    /// Whether image row `y` is the first of a tile row.
    pub fn starts_tile_row(&self, y: u32) -> bool {
        y.checked_sub(self.first_row)
            .is_some_and(|row| row % TILE == 0)
    }

    /// Tiles per tile row.
    pub fn tiles_per_row(&self) -> u32 {
        self.tiles_x
    }

    /// The nodes' occlusion depths for `culler`'s triangles (one culler per frame).
    fn depths(&self, culler: &Culler) -> &Depths {
        self.depths.get_or_init(|| {
            let all = self.nodes[self.root as usize].rays;
            let pixels = occlusion::Pixels {
                rays: &self.rays,
                width: self.width,
                tiles_x: self.tiles_x,
            };
            Depths::new(&self.nodes, self.root, &all, &pixels, culler)
        })
    }

    /// Every node's groups ([`WholeGroups`]), made while the occlusion depths are: the
    /// groups' order is found on one thread, and the depths' triangles keep the others
    /// busy meanwhile (at 1080p, 15 ms the threads waited for twice, once for the
    /// estimate and again for a whole build).
    pub fn whole_groups(&self, culler: &Culler) -> WholeGroups {
        let (groups, _) = rayon::join(
            || float::groups(&self.nodes, self.root, |_| true),
            || self.depths(culler),
        );
        WholeGroups(groups)
    }

    /// The structure for the whole tree, from its groups when they were made already.
    pub fn build_all(&self, culler: &Culler, groups: Option<WholeGroups>) -> Accel {
        let wanted = vec![true; self.tiles_y as usize];
        self.build_from(culler, &wanted, groups.map(|groups| groups.0))
    }

    /// The structure for the tile rows `wanted` marks (one flag per tile row). Every
    /// triangle descends the whole tree's nodes, pruned to those rows, so each tile gets
    /// exactly the candidates and skipped exits it gets when the whole tree is built:
    /// building in batches of rows changes no verdict, only how much is held at once.
    pub fn build(&self, culler: &Culler, wanted: &[bool]) -> Accel {
        self.build_from(culler, wanted, None)
    }

    /// [`RayTree::build`] from the groups `groups` of the nodes that cover the rows
    /// `wanted` marks, when they were made already (for every row: [`WholeGroups`]).
    fn build_from(
        &self,
        culler: &Culler,
        wanted: &[bool],
        groups: Option<Vec<float::Group>>,
    ) -> Accel {
        let nodes = &self.nodes;
        let root = self.root;
        // Wanted rows before each row, to tell in O(1) whether a node covers any.
        let before: Vec<u32> = std::iter::once(0)
            .chain(wanted.iter().scan(0, |count, &w| {
                *count += u32::from(w);
                Some(*count)
            }))
            .collect();
        let keep = |node: u32| {
            let [first, end] = self.node_rows[node as usize];
            before[end as usize] > before[first as usize]
        };
        let mut row_starts = vec![NOT_BUILT; self.tiles_y as usize];
        let mut tile_count = 0;
        for (start, _) in row_starts.iter_mut().zip(wanted).filter(|(_, &w)| w) {
            *start = tile_count;
            tile_count += self.tiles_x;
        }
        let tiles_x = self.tiles_x;
        let local = |tile: u32| (row_starts[(tile / tiles_x) as usize] + tile % tiles_x) as usize;
        let tile_count = tile_count as usize;
        // The whole tree's ray box: it decides which triangles can be bounded, as it does
        // for the whole tree's build.
        let all = nodes[root as usize].rays;
        let (groups, depths) = match groups {
            Some(groups) => (groups, self.depths(culler)),
            None => rayon::join(|| float::groups(nodes, root, keep), || self.depths(culler)),
        };
        let (parts, skips) = visit_all(&groups, nodes, &all, culler, depths, tile_count, &local);
        // Made on all threads: one thread's writes and page faults took 2 ms at 1080p.
        let mut tiles: Vec<Tile> = (0..tile_count)
            .into_par_iter()
            .map(|_| Tile::default())
            .collect();
        count_per_tile(&parts, &mut tiles);
        push_down(&groups, &skips.total(), culler.biu(), &local, &mut tiles);
        let mut at = 0;
        for tile in &mut tiles {
            tile.start = at;
            at += tile.len;
        }
        let candidates = gather(&tiles, &parts, at as usize);
        Accel {
            width: self.width,
            first_row: self.first_row,
            row_starts,
            tiles,
            candidates,
            rays: self.rays.clone(),
        }
    }

    /// About how many candidates each tile row will hold, from every `stride`-th triangle
    /// (for planning batches of rows; 1 counts them all).
    pub fn estimate(&self, culler: &Culler, stride: usize, groups: &WholeGroups) -> Vec<u64> {
        let nodes = &self.nodes;
        let all = nodes[self.root as usize].rays;
        let groups = &groups.0;
        let depths = self.depths(culler);
        let stride = stride.max(1);
        let sampled = culler.constants().len().div_ceil(stride);
        let rows = self.tiles_y as usize;
        let count = |collector: Collector| {
            let mut per_row = vec![0; rows];
            for tile in collector.finish().tiles {
                per_row[(tile / self.tiles_x) as usize] += stride as u64;
            }
            per_row
        };
        // What the nodes skip is not wanted here, but counted all the same: per worker.
        let skips = WorkerSkips::new(groups);
        (0..sampled)
            .into_par_iter()
            .with_min_len(256)
            .fold(
                || Collector::new(groups),
                |mut collector, k| {
                    skips.counting(&mut collector, |collector| {
                        visit(groups, nodes, &all, culler, depths, k * stride, collector)
                    });
                    collector
                },
            )
            .map(count)
            .reduce(
                || vec![0; rows],
                |a, b| a.iter().zip(&b).map(|(a, b)| a + b).collect(),
            )
    }
}

impl Accel {
    /// Builds the structure for `rays` (row-major, one per pixel of `height` rows of a
    /// `width`-pixel image from row `first_row` on) over the triangles of `culler` (BIU's
    /// per-triangle constants), for every tile at once.
    pub fn build(
        culler: &Culler,
        width: u32,
        first_row: u32,
        height: u32,
        rays: Vec<Vec3>,
    ) -> Result<Accel, AccelRefusal> {
        Ok(RayTree::new(width, first_row, height, rays)?.build_all(culler, None))
    }

    /// The precomputed ray of pixel (x, y).
    pub fn ray(&self, x: u32, y: u32) -> Option<Vec3> {
        if x >= self.width || y < self.first_row {
            return None;
        }
        let y = y - self.first_row;
        self.rays.get((y * self.width + x) as usize).copied()
    }

    /// The last image row with rays.
    fn last_row(&self) -> u32 {
        self.first_row + (self.rays.len() as u32 / self.width) - 1
    }

    /// Whether the structure holds the tile of pixel (x, y).
    pub fn covers(&self, x: u32, y: u32) -> bool {
        x < self.width
            && y >= self.first_row
            && self
                .row_starts
                .get(((y - self.first_row) / TILE) as usize)
                .is_some_and(|&start| start != NOT_BUILT)
    }

    /// The tile pixel (x, y) lies in, and its candidates (the structure must cover it).
    pub fn tile(&self, x: u32, y: u32) -> (&Tile, &[u32]) {
        let index = self.tile_index(x, y);
        (&self.tiles[index], self.candidates_of(index))
    }

    fn tile_index(&self, x: u32, y: u32) -> usize {
        (self.row_starts[((y - self.first_row) / TILE) as usize] + x / TILE) as usize
    }

    fn candidates_of(&self, tile: usize) -> &[u32] {
        let tile = &self.tiles[tile];
        let start = tile.start as usize;
        &self.candidates[start..start + tile.len as usize]
    }

    /// Candidate tests per pixel, on average over tiles (for summaries).
    pub fn mean_candidates(&self) -> f64 {
        self.candidates.len() as f64 / self.tiles.len().max(1) as f64
    }

    /// Tiles built.
    pub fn tile_count(&self) -> usize {
        self.tiles.len()
    }

    /// Candidates held, over all tiles.
    pub fn candidate_count(&self) -> usize {
        self.candidates.len()
    }
}

/// Descends `groups` with one triangle: in double precision where its forms allow, else
/// exactly; a triangle that cannot be bounded over `all` rays is a candidate everywhere.
#[inline(always)]
fn visit(
    groups: &[float::Group],
    nodes: &[Node],
    all: &RayBox,
    culler: &Culler,
    depths: &Depths,
    triangle: usize,
    collector: &mut Collector,
) {
    let constants = &culler.constants()[triangle];
    if culler.biu() == Biu::Fixed {
        let fixed = &culler.fixed_constants()[triangle];
        let Some(forms) = FixedForms::new(constants, fixed, all) else {
            float::mark_all(groups, collector);
            return;
        };
        // The last triangle's MAIN leaves the pixel's state: never skipped as occluded.
        let depth = (triangle + 1 < culler.constants().len())
            .then(|| Depth::new(culler, triangle, all))
            .flatten();
        let occluded = |at: u32, node: &Node| {
            let behind = depth.is_some_and(|depth| {
                depths
                    .of(at)
                    .is_some_and(|covered| depth.behind(node, covered))
            });
            behind.then_some(Verdict::Occluded)
        };
        float::visit_fixed(groups, nodes, &forms, occluded, collector);
        return;
    }
    match Forms::new(constants, all) {
        Some(forms) if forms.narrow(all) => {
            float::visit(groups, &FloatForms::new(&forms), collector)
        }
        Some(wide) => float::visit_exact(groups, nodes, &wide, collector),
        None => float::mark_all(groups, collector),
    }
}

/// The box of each tile's rays, tile rows top to bottom, on all threads.
fn tile_boxes(rays: &[Vec3], width: u32, height: u32) -> Vec<RayBox> {
    let tiles_x = width.div_ceil(TILE);
    let tiles = tiles_x * height.div_ceil(TILE);
    (0..tiles)
        .into_par_iter()
        .map(|tile| {
            let (x0, y0) = (tile % tiles_x * TILE, tile / tiles_x * TILE);
            let mut rays_box = RayBox::EMPTY;
            for y in y0..(y0 + TILE).min(height) {
                let row = (y * width) as usize;
                let xs = row + x0 as usize..row + (x0 + TILE).min(width) as usize;
                rays[xs].iter().for_each(|&ray| rays_box.add(ray));
            }
            rays_box
        })
        .collect()
}

/// Tiles per range: a part's candidates are bucketed by range of tiles, and each range is
/// then counted and gathered on its own thread, so that the work grows with the candidates
/// and parts times ranges, never parts times tiles (at 16 threads, 128 parts of a 1080p
/// frame's 130,000 tiles each cost three tile-long arrays, and the gather read them all).
const RANGE_TILES: usize = 256;

/// One build task's share of the triangles (consecutive ones), bucketed by range of tiles
/// ([`RANGE_TILES`]): in each range its candidates in ascending triangle order, each
/// candidate's triangle and its tile's place in the range.
struct Part {
    triangles: Vec<u32>,
    places: Vec<u8>,
    /// Where each range's candidates start, and the end (ranges + 1 entries).
    range_starts: Vec<u32>,
}

impl Part {
    /// The part's candidates in range `range`: triangles and their tiles' places.
    fn range(&self, range: usize) -> (&[u32], &[u8]) {
        let (start, end) = (
            self.range_starts[range] as usize,
            self.range_starts[range + 1] as usize,
        );
        (&self.triangles[start..end], &self.places[start..end])
    }
}

/// Descends the groups with every triangle: in small runs of consecutive triangles over
/// the threads (triangles cost very differently), each thread's consecutive runs
/// gathered in one collector, so that the parts, which cost memory and merging per tile,
/// number about as many as the threads, not the runs. What the nodes skip is counted per
/// worker, not per part (it is a sum, in any order).
fn visit_all(
    groups: &[float::Group],
    nodes: &[Node],
    all: &RayBox,
    culler: &Culler,
    depths: &Depths,
    tile_count: usize,
    local: &(impl Fn(u32) -> usize + Sync),
) -> (Vec<Part>, WorkerSkips) {
    let triangles = culler.constants().len();
    let skips = WorkerSkips::new(groups);
    let run = triangles.div_ceil(rayon::current_num_threads() * 8).max(64);
    let collected: Vec<(usize, Collector)> = (0..triangles.div_ceil(run))
        .into_par_iter()
        .fold(
            || None,
            |part: Option<(usize, Collector)>, r| {
                let (first, mut collector) =
                    part.unwrap_or_else(|| (r * run, Collector::new(groups)));
                skips.counting(&mut collector, |collector| {
                    for triangle in r * run..((r + 1) * run).min(triangles) {
                        visit(groups, nodes, all, culler, depths, triangle, collector);
                    }
                });
                Some((first, collector))
            },
        )
        .flatten()
        .collect();
    let parts = collected
        .into_par_iter()
        .map(|(first, collector)| bucket_by_range(first, collector.finish(), tile_count, local))
        .collect();
    (parts, skips)
}

/// A part's candidates bucketed by range of tiles (`first` the number of its first
/// triangle): a counting sort by range, so each range keeps its triangles in ascending order.
fn bucket_by_range(
    first: usize,
    mut found: Found,
    tile_count: usize,
    local: &impl Fn(u32) -> usize,
) -> Part {
    let mut range_starts = vec![0u32; tile_count.div_ceil(RANGE_TILES) + 1];
    for tile in &mut found.tiles {
        *tile = local(*tile) as u32;
        range_starts[*tile as usize / RANGE_TILES + 1] += 1;
    }
    for range in 1..range_starts.len() {
        range_starts[range] += range_starts[range - 1];
    }
    let mut next = range_starts.clone();
    let mut triangles = vec![0; found.tiles.len()];
    let mut places = vec![0; found.tiles.len()];
    let mut start = 0;
    for (k, &end) in found.ends.iter().enumerate() {
        let triangle = (first + k) as u32;
        for &tile in &found.tiles[start..end as usize] {
            let slot = &mut next[tile as usize / RANGE_TILES];
            triangles[*slot as usize] = triangle;
            places[*slot as usize] = (tile as usize % RANGE_TILES) as u8;
            *slot += 1;
        }
        start = end as usize;
    }
    Part {
        triangles,
        places,
        range_starts,
    }
}

/// Each tile's candidates over all parts, range by range in parallel.
fn count_per_tile(parts: &[Part], tiles: &mut [Tile]) {
    tiles
        .par_chunks_mut(RANGE_TILES)
        .enumerate()
        .for_each(|(range, tiles)| {
            for part in parts {
                for &place in part.range(range).1 {
                    tiles[usize::from(place)].len += 1;
                }
            }
        });
}

/// The candidates of every tile, each tile's from the parts in part order (ascending,
/// since parts hold consecutive triangles), in parallel over ranges of tiles; `tiles`
/// give each tile's start and count.
fn gather(tiles: &[Tile], parts: &[Part], total: usize) -> Vec<u32> {
    let mut candidates = vec![0; total];
    let mut slices = Vec::with_capacity(tiles.len().div_ceil(RANGE_TILES));
    let mut rest = candidates.as_mut_slice();
    for range in tiles.chunks(RANGE_TILES) {
        let len: usize = range.iter().map(|tile| tile.len as usize).sum();
        let (slice, tail) = std::mem::take(&mut rest).split_at_mut(len);
        slices.push(slice);
        rest = tail;
    }
    slices
        .into_par_iter()
        .zip(tiles.par_chunks(RANGE_TILES))
        .enumerate()
        .for_each(|(range, (slice, range_tiles))| {
            let base = range_tiles[0].start;
            let mut next: Vec<u32> = range_tiles.iter().map(|tile| tile.start - base).collect();
            for part in parts {
                let (triangles, places) = part.range(range);
                for (&triangle, &place) in triangles.iter().zip(places) {
                    let slot = &mut next[usize::from(place)];
                    slice[*slot as usize] = triangle;
                    *slot += 1;
                }
            }
        });
    candidates
}

/// What every built tile skips: each node's counts (`sums`, by group and place) added up
/// along the path from the root, written to its leaf's tile (`local` gives its place in
/// `tiles`). One pass over the groups in their order, breadth first, so a group comes
/// after the one that holds its parent, and only the nodes the build kept are reached.
/// (Counts per node first, then the tree descended node by node: 12 ms on one thread at
/// 1080p, where every other step of a build runs on all threads.)
fn push_down(
    groups: &[float::Group],
    sums: &[float::GroupCounts],
    biu: Biu,
    local: &impl Fn(u32) -> usize,
    tiles: &mut [Tile],
) {
    // Per group, what the nodes above its members skip.
    let mut above = vec![[0; 8]; groups.len()];
    for (at, (group, sum)) in groups.iter().zip(sums).enumerate() {
        let base = above[at];
        // An unused place leads nowhere (`Below::Nothing`).
        for (k, counts) in sum.iter().enumerate() {
            let total: Skipped = std::array::from_fn(|code| base[code] + counts[code]);
            match group.below(k) {
                Below::Group(child) => above[child as usize] = total,
                Below::Tile(tile) => set_skipped(&mut tiles[local(tile)], &total, biu),
                Below::Nothing => {}
            }
        }
    }
}

/// A tile's counts and instructions of what it skips, from the verdicts' `total` along
/// its path.
fn set_skipped(tile: &mut Tile, total: &Skipped, biu: Biu) {
    tile.skipped_instructions = 0;
    tile.skipped = 0;
    for &exit in biu.exits() {
        let count = total[Verdict::Exit(exit).code() as usize];
        tile.skipped_instructions += u64::from(count) * exit.instructions();
        tile.skipped += count;
    }
    let (rejected, occluded) = (
        total[Verdict::Rejected.code() as usize],
        total[Verdict::Occluded.code() as usize],
    );
    tile.skipped_unknown = rejected + occluded;
    tile.unknown_instructions = u64::from(rejected) * biu.worst_exit().instructions()
        + u64::from(occluded) * OCCLUDED_MAIN_INSTRUCTIONS;
}

/// Whether `culler` and a tile agree: for tests, every triangle a tile skips is rejected
/// by BIU at every ray of the tile, or (fixed ROM, never the last triangle) BIU accepts it
/// behind some candidate's hit or not at all, and the tile counts them.
pub fn check_tile_claims(
    culler: &Culler,
    accel: &Accel,
    triangles: usize,
    height: u32,
) -> Result<(), String> {
    for y in 0..height {
        for x in 0..accel.width {
            if !accel.covers(x, y) {
                continue;
            }
            let ray = accel.ray(x, y).expect("in the image");
            let (tile, candidates) = accel.tile(x, y);
            if let Some(pair) = candidates.windows(2).find(|pair| pair[0] >= pair[1]) {
                return Err(format!(
                    "pixel ({x}, {y}): candidates {} then {}, not in ascending order",
                    pair[0], pair[1]
                ));
            }
            // The nearest hit among the candidates: what an occluded triangle is behind.
            let nearest = candidates
                .iter()
                .filter_map(|&index| culler.fixed_hit(index as usize, ray))
                .map(|t| t as i32)
                .min();
            let mut skipped = 0u32;
            for index in 0..triangles {
                if candidates.binary_search(&(index as u32)).is_ok() {
                    continue;
                }
                skipped += 1;
                if culler.rejects(index, ray).is_some() {
                    continue;
                }
                let behind = match culler.fixed_hit(index, ray) {
                    None => true,
                    Some(t) => nearest.is_some_and(|nearest| t as i32 > nearest),
                };
                if culler.biu() != Biu::Fixed || !behind || index + 1 == triangles {
                    return Err(format!(
                        "pixel ({x}, {y}): triangle {index} skipped but BIU does not reject it, nor is it behind a candidate's hit"
                    ));
                }
            }
            if skipped != tile.skipped + tile.skipped_unknown {
                return Err(format!(
                    "pixel ({x}, {y}): {skipped} skipped, the tile says {} + {}",
                    tile.skipped, tile.skipped_unknown
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod test_rng {
    /// xorshift64*: a fixed sequence, so a failure reproduces.
    pub struct Rng(pub u64);

    impl Rng {
        pub fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        /// A raw value of about `bits` bits, either sign.
        pub fn raw(&mut self, bits: u32) -> i32 {
            let magnitude = (self.next() >> (64 - bits)) as i32;
            if self.next() & 1 == 0 {
                magnitude
            } else {
                -magnitude
            }
        }
        pub fn vec(&mut self, bits: u32) -> [u32; 3] {
            std::array::from_fn(|_| self.raw(bits) as u32)
        }
    }
}
