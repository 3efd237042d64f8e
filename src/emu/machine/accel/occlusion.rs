//! Occlusion for the fixed ROM: a triangle every ray of a node meets behind a triangle
//! that covers the node is skipped there, as a rejected one is.
//!
//! # Why skipping it leaves the frame as it was
//!
//! MAIN keeps a hit only when its t is below `CREG_LAST_t` (`JGEX t, LAST_t` in
//! `shaders/rom/fixed.shdr`), and the state the pixel ends with is the kept triangle's
//! `*_LAST` registers and its TCC. Say triangle o is accepted by the fixed BIU for every
//! ray of a tile (every edge test passes, t > 0, no quotient wraps) with t at most Z, and
//! triangle j's t is above Z for every ray BIU could accept it for (or never positive).
//! - o before j: when j comes, `LAST_t <= t_o <= Z < t_j`, so j is not kept and TCC exits
//!   at its first word; or BIU rejects j. Either way j changes only registers every later
//!   MAIN writes again (BIU's E1..v, R1.x, R2, R3, R5, R6, the return state), and the hit
//!   flag, which o sets anyway.
//! - o after j: j may be kept, but then `t_o < t_j`, so o is kept after it and its KEEP and
//!   whole TCC write every register j's did. Triangles in between may keep or not because
//!   of j; o overwrites that too, and o is kept with j exactly when it is kept without j.
//!
//! So j is skipped (its registers are those of the next MAIN, skipped or interpreted)
//! unless it is the scene's last triangle, whose MAIN's state the pixel ends with. Only the
//! instruction count changes, which the structure does not report; the budget premise
//! books each skipped one at [`OCCLUDED_MAIN_INSTRUCTIONS`].
//!
//! # Depths
//!
//! BIU computes t = DIV(H1, Δ): H1 is constant per triangle and Δ = (R × E2)·E1 lies in
//! the span the faithful forms bound (`Forms`), so over a node with Δ's sign settled t
//! lies between the truncated quotients at Δ's ends. A pixel's depth is the least t the
//! fixed BIU accepts among the triangles tried for it, computed exactly
//! ([`Culler::fixed_hit`]), so the triangles covering a tile may be many small ones; a
//! node's depth is the greatest of its pixels'. Its triangle o is never skipped there:
//! the lower bound of o's t over any node holding the pixel is at most that depth. Which
//! triangles are tried ([`Depths::new`]: those whose solid angle exceeds a tile's) changes
//! only the speed, never the frame.

use super::fixed::{self, FixedForms, FixedLanes, Quad};
use super::{Forms, Node, NodeKind, RayBox, TILE, UNSETTLED};
use crate::emu::core::alu::Vec3;
use crate::emu::machine::cull::{Biu, Culler};
use rayon::prelude::*;
use std::sync::atomic::{AtomicI64, Ordering};

/// An upper bound on the instructions of a MAIN whose BIU accepts the triangle: BIU's
/// 157..=172 (16), the fixed edge tests, t > 0 and the residual guards (29), the closer
/// test, JMP, KEEP's nine COPYs and RET (12), MAIN's CALL, JEQX, CALL, NOP and RETURN (5),
/// a whole TCC (42): 104, rounded up.
pub const OCCLUDED_MAIN_INSTRUCTIONS: u64 = 128;

/// No depth: some pixel of the node is not covered.
const OPEN: i64 = i64::MAX;

/// What t a triangle can have: its H1 and the forms bounding Δ, H2 and H3.
#[derive(Clone, Copy, Debug)]
pub(super) struct Depth {
    forms: Forms,
    h1: i128,
}

impl Depth {
    /// The triangle's depth forms, or `None` when it cannot be bounded over `all` rays.
    pub(super) fn new(culler: &Culler, triangle: usize, all: &RayBox) -> Option<Depth> {
        let k = &culler.constants()[triangle];
        Some(Depth {
            forms: Forms::new(k, all)?,
            h1: i128::from(k.h1 as i32),
        })
    }

    /// Whether every ray of `node` that BIU accepts has t above `depth`, or none has a
    /// positive t: the computed Δ has one sign, and H1 the other (t <= 0), or |H1|·2^17 is
    /// at least (depth + 1)·|Δ| at Δ's greatest magnitude.
    #[inline(always)]
    pub(super) fn behind(&self, node: &Node, depth: i64) -> bool {
        let delta = self.forms.delta_span(&node.around);
        if delta.lo <= 0 && delta.hi >= 0 {
            return false;
        }
        if (self.h1 > 0) != (delta.lo > 0) || self.h1 == 0 {
            return true;
        }
        (self.h1.abs() << 17) >= (i128::from(depth) + 1) * delta.magnitude()
    }
}

/// Per node of a tree, the depth behind which every ray of the node is covered.
#[derive(Clone, Debug)]
pub(super) struct Depths {
    per_node: Vec<i64>,
}

/// The frame's rays as the depths read them: row-major, `width` to a row, `tiles_x` tiles
/// to a tile row.
pub(super) struct Pixels<'a> {
    pub(super) rays: &'a [Vec3],
    pub(super) width: u32,
    pub(super) tiles_x: u32,
}

impl Pixels<'_> {
    /// The pixels of `tile`: their places in `rays`.
    fn of(&self, tile: u32) -> impl Iterator<Item = usize> + '_ {
        let (x0, y0) = (tile % self.tiles_x * TILE, tile / self.tiles_x * TILE);
        let height = self.rays.len() as u32 / self.width;
        (y0..(y0 + TILE).min(height)).flat_map(move |y| {
            (x0..(x0 + TILE).min(self.width)).map(move |x| (y * self.width + x) as usize)
        })
    }
}

impl Depths {
    /// The depths of `nodes` (children before parents, `root` last) over `pixels`, whose
    /// box is `all`.
    pub(super) fn new(
        nodes: &[Node],
        root: u32,
        all: &RayBox,
        pixels: &Pixels,
        culler: &Culler,
    ) -> Depths {
        let mut per_node = vec![OPEN; nodes.len()];
        if culler.biu() != Biu::Fixed {
            return Depths { per_node };
        }
        // A tile may be covered by several triangles: those down to a quarter of its
        // solid angle are tried.
        let least_angle = tile_solid_angle(nodes) / 4.0;
        // One shared depth per pixel, lowered atomically: a frame's worth of words however
        // many threads try triangles (the least t does not depend on their order).
        let nearest: Vec<AtomicI64> = (0..pixels.rays.len())
            .into_par_iter()
            .map(|_| AtomicI64::new(OPEN))
            .collect();
        (0..culler.constants().len())
            .into_par_iter()
            .filter(|&triangle| solid_angle(culler, triangle) >= least_angle)
            .for_each(|triangle| {
                let fixed = &culler.fixed_constants()[triangle];
                let k = &culler.constants()[triangle];
                if let Some(forms) = FixedForms::new(k, fixed, all) {
                    let mut hit = |at: usize| {
                        if let Some(t) = culler.fixed_hit(triangle, pixels.rays[at]) {
                            // Most hits lie behind one found already: reading first keeps
                            // the line shared between the cores instead of taking it
                            // exclusive for every write (the minimum is the same).
                            let t = i64::from(t as i32);
                            if t < nearest[at].load(Ordering::Relaxed) {
                                nearest[at].fetch_min(t, Ordering::Relaxed);
                            }
                        }
                    };
                    cover_tree(nodes, root, &forms, pixels, &mut hit);
                }
            });
        // The leaves (a frame's pixels) on all threads, then the split nodes above them.
        per_node
            .par_iter_mut()
            .zip(nodes)
            .for_each(|(depth, node)| {
                if let NodeKind::Leaf(tile) = node.kind {
                    *depth = pixels
                        .of(tile)
                        .map(|p| nearest[p].load(Ordering::Relaxed))
                        .max()
                        .unwrap_or(OPEN);
                }
            });
        for (at, node) in nodes.iter().enumerate() {
            if let NodeKind::Split(..) = node.kind {
                per_node[at] = node
                    .kind
                    .children()
                    .iter()
                    .map(|&child| per_node[child as usize])
                    .max()
                    .unwrap_or(OPEN);
            }
        }
        Depths { per_node }
    }

    /// The depth of node `at` (`None`: some pixel of it is not covered).
    #[inline(always)]
    pub(super) fn of(&self, at: u32) -> Option<i64> {
        let depth = self.per_node[at as usize];
        (depth != OPEN).then_some(depth)
    }
}

/// [`cover`] from the root: with AVX2, each split node's children judged four at once
/// ([`fixed::avx2::verdicts`], the same verdicts exactly).
fn cover_tree(
    nodes: &[Node],
    root: u32,
    forms: &FixedForms,
    pixels: &Pixels,
    hit: &mut impl FnMut(usize),
) {
    #[cfg(target_arch = "x86_64")]
    if crate::emu::cpu::has_avx2_and_fma() {
        if forms.verdict(&nodes[root as usize].around).is_none() {
            let lanes = FixedLanes::new(forms);
            // SAFETY: the CPU has AVX2 and FMA, checked just above.
            unsafe { cover_below_avx2(nodes, root, &lanes, pixels, hit) };
        }
        return;
    }
    cover(nodes, root, forms, pixels, hit);
}

/// Below node `at`, whose verdict is unsettled: its pixels if it is a leaf, else its
/// children's four at once, descending where they are unsettled.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn cover_below_avx2(
    nodes: &[Node],
    at: u32,
    lanes: &FixedLanes,
    pixels: &Pixels,
    hit: &mut impl FnMut(usize),
) {
    match nodes[at as usize].kind {
        NodeKind::Leaf(tile) => pixels.of(tile).for_each(hit),
        NodeKind::Split(children, count) => {
            // Unused places repeat the first child; their verdicts are ignored.
            let child = |k: usize| &nodes[children[k.min(usize::from(count) - 1)] as usize];
            let lane = |lane: usize, twice: fn(&Node, usize) -> i64| {
                std::array::from_fn(|k| twice(child(k), lane) as f64)
            };
            let quad = Quad {
                // Below 2^34 in magnitude: exact.
                mid2: std::array::from_fn(|l| lane(l, |node, l| node.around.mid2[l])),
                half2: std::array::from_fn(|l| lane(l, |node, l| node.around.half2[l])),
            };
            let codes = fixed::avx2::verdicts(lanes, &quad);
            for (k, &code) in codes.iter().enumerate().take(usize::from(count)) {
                if code == UNSETTLED {
                    cover_below_avx2(nodes, children[k], lanes, pixels, hit);
                }
            }
        }
    }
}

/// Descends from node `at` where the triangle is not rejected for every ray, calling `hit`
/// with every pixel of each leaf it reaches.
fn cover(
    nodes: &[Node],
    at: u32,
    forms: &FixedForms,
    pixels: &Pixels,
    hit: &mut impl FnMut(usize),
) {
    let node = &nodes[at as usize];
    if forms.verdict(&node.around).is_some() {
        return;
    }
    match node.kind {
        NodeKind::Leaf(tile) => pixels.of(tile).for_each(hit),
        NodeKind::Split(..) => {
            for &child in node.kind.children() {
                cover(nodes, child, forms, pixels, hit);
            }
        }
    }
}

/// About the solid angle a tile's rays span: the first leaf's extent over its centre,
/// squared (only which triangles are tried as occluders depends on it).
fn tile_solid_angle(nodes: &[Node]) -> f64 {
    let Some(leaf) = nodes
        .iter()
        .find(|node| matches!(node.kind, NodeKind::Leaf(_)))
    else {
        return f64::INFINITY;
    };
    let norm = |v: [i64; 3]| v.iter().map(|&x| (x as f64).powi(2)).sum::<f64>().sqrt();
    let (mid, half) = (norm(leaf.around.mid2), norm(leaf.around.half2));
    if mid == 0.0 {
        return f64::INFINITY;
    }
    (2.0 * half / mid).powi(2)
}

/// About the solid angle the triangle spans from the camera: twice its area over its first
/// vertex's squared distance, halved.
fn solid_angle(culler: &Culler, triangle: usize) -> f64 {
    let k = &culler.constants()[triangle];
    let f = |v: [u32; 3]| v.map(|x| f64::from(x as i32));
    let (e1, e2, t) = (f(k.e1), f(k.e2), f(k.t));
    let cross = [
        e1[1] * e2[2] - e1[2] * e2[1],
        e1[2] * e2[0] - e1[0] * e2[2],
        e1[0] * e2[1] - e1[1] * e2[0],
    ];
    let area2 = cross.iter().map(|x| x * x).sum::<f64>().sqrt();
    let distance2 = t.iter().map(|x| x * x).sum::<f64>();
    if distance2 == 0.0 {
        return 0.0;
    }
    area2 / (2.0 * distance2)
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::Rng;
    use super::super::RayTree;
    use super::*;
    use crate::emu::machine::cull::{FixedConstants, TriangleConstants};

    /// [`cover_tree`] (four children at once where the CPU has AVX2 and FMA) reaches the
    /// pixels [`cover`] (node by node) reaches, for random triangles in front of a
    /// pinhole's 40 x 28 rays, and often reaches some.
    #[test]
    fn cover_reaches_the_same_pixels_four_at_once() {
        let (width, height) = (40u32, 28u32);
        let rays: Vec<Vec3> = (0..height)
            .flat_map(|y| {
                (0..width).map(move |x| {
                    let lane = |at: u32, middle: u32| ((at as i32 - middle as i32) * 3000) as u32;
                    [
                        lane(x, width / 2),
                        lane(y, height / 2),
                        (-131_072i32) as u32,
                    ]
                })
            })
            .collect();
        let tree = RayTree::new(width, 0, height, rays.clone()).expect("small rays");
        let all = tree.nodes[tree.root as usize].rays;
        let pixels = Pixels {
            rays: &rays,
            width,
            tiles_x: tree.tiles_x,
        };
        let mut rng = Rng(0xC0BE_4A11);
        let mut reached = 0;
        for _ in 0..3000 {
            let size = [10, 14, 18][(rng.next() % 3) as usize];
            let mut vertex = || {
                let depth = (1 << 19) + (rng.next() >> 45) as i32;
                [rng.raw(size), rng.raw(size), -depth].map(|lane| lane as u32)
            };
            let k = TriangleConstants::new(vertex(), vertex(), vertex(), [0; 3]);
            let f = FixedConstants::new(&k);
            let Some(forms) = FixedForms::new(&k, &f, &all) else {
                continue;
            };
            let (mut one, mut four) = (Vec::new(), Vec::new());
            cover(&tree.nodes, tree.root, &forms, &pixels, &mut |p| {
                one.push(p)
            });
            cover_tree(&tree.nodes, tree.root, &forms, &pixels, &mut |p| {
                four.push(p)
            });
            one.sort_unstable();
            four.sort_unstable();
            assert_eq!(one, four, "{k:?}");
            reached += usize::from(!one.is_empty());
        }
        assert!(reached > 300, "{reached} triangles reached pixels");
    }
}
