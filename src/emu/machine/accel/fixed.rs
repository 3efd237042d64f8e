//! The structure's verdicts for the fixed ROM's BIU (`shaders/rom/fixed.shdr`), which tests
//! edge values before anything can wrap: every triangle whose edge tests fail for all
//! rays of a node is pruned there, so a tile keeps only the triangles real geometry (plus
//! the tolerance) puts under it, and a triangle's descent stops where its edges leave the
//! node: about O(log n) work per ray, as in any ray tracer's hierarchy.
//!
//! # The bound
//!
//! The fixed BIU computes g2 = DOT(R, c2), g3 = DOT(Q, R) and D' = DOT(R, c_delta) with
//! c2 = E2 × T, c_delta = E2 × E1 and Q constant per triangle, and g1 = D' − (g2 + g3).
//! Each DOT is the sum of three products truncated toward zero, exact before truncating
//! (R's lanes are exact multiplicands: a frame premise; Q's are checked here), so it lies
//! within 3 raw units of the real c·R / 2^17, and g1 within 9 of (c_delta − c2 − Q)·R / 2^17.
//! Over a box of rays each real value lies between the sums of its coefficients times the
//! box's corners, computed exactly in i64: every |c|·|R| sum over the frame's rays is
//! checked below 2^46, so no sum overflows and no DOT, ADD or SUB result wraps.
//!
//! With those intervals BIU's path is followed as far as it is certain: the orientation
//! (`D' <= 0`), then each test (|D'| above 32, g2 and g3 against ∓14, g1 against ∓28).
//! Where every ray fails the same test the exit is known; where each ray fails some test
//! but which one depends on the ray, the triangle is still skipped
//! ([`Verdict::Rejected`]); otherwise it stays a candidate, tested per pixel exactly
//! ([`crate::emu::machine::cull::fixed_verdict`]).
//!
//! # Wedges
//!
//! One test at a time cannot reject a node that an edge's line crosses beyond the
//! triangle: on one side of the line that edge's test fails, on the other a neighbour's,
//! and each test alone holds for some rays. Such nodes surround every triangle, far
//! from it too, so a small triangle used to descend nearly to the leaves along its edges'
//! lines. Past a corner, though, some weighted sum of the corner's two edge values fails
//! everywhere: with whole weights w_a, w_b >= 0, not both 0, if w_a·(g_a + b_a) +
//! w_b·(g_b + b_b) < 0 for a ray (b the tests' bounds, 14 or 28), then g_a < −b_a or
//! g_b < −b_b, and the front-facing path exits at one of them (or earlier, at `D' <= 32`).
//! The sum is a linear form of the ray too, computed within w_a·err_a + w_b·err_b raw units
//! (each computed g within its error of the real value), so its interval over the box
//! bounds it; back-facing rays are the same with signs turned (w·(g − b) > 0 means some
//! g > b). Weights summing to 64 keep every |c|·|R| sum below 2^52, and i64 exact. The
//! weights only decide how often the test settles, never whether it is sound; each corner
//! weighs its two edges inversely to their coefficients' size, the sum's zero line
//! bisecting the corner's outside. A node rejected so is [`Verdict::Rejected`], its exit
//! depending on the ray. Measured: a 367k-triangle interior at 512x512 went from 5
//! candidates per tile to 2, a 1.3M-triangle sphere at 256x256 from 962 to 356, both
//! builds about a third faster. (Three wedges of other weights per corner settled no more
//! and cost more.)
//!
//! # Four nodes at once
//!
//! The build judges a split node's children together ([`avx2::verdicts`], where the CPU
//! has AVX2 and FMA; elsewhere node by node): every form's interval for all four in
//! vectors of doubles, BIU's path through the tests chosen with blends. The doubles hold
//! exactly what the i64 arithmetic above holds: every value is a whole number below 2^53
//! (coefficients, the nodes' doubled centres and extents below 2^34, each |c|·|R| sum below
//! 2^52), so each product, sum and fused multiply-add is exact, and scaling by 2^-18 then
//! rounding down or up is the shift above. The verdicts, and so the structure, are the
//! node-by-node ones (a test compares them on random boxes up to the top nodes' width);
//! only the time differs: the 367k-triangle interior's structure (`--timings`' plan) took
//! about 230 ms at one thread before, about 175 ms with this.

use super::{Around, RayBox, Verdict};
use crate::emu::core::alu;
use crate::emu::machine::cull::{
    Exit, FixedConstants, TriangleConstants, FIXED_FLAT, FIXED_TOLERANCE, FIXED_TOLERANCE_G1,
};

/// A closed interval of a computed value, raw units.
#[derive(Clone, Copy, Debug)]
struct Interval {
    lo: i64,
    hi: i64,
}

/// Whether a test holds for every ray, for none, or for some.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Holds {
    Always,
    Never,
    Sometimes,
}

/// Every |c|·|R| sum stays below this (raw units times 2^17).
const LIMIT: i128 = 1 << 46;

/// The fixed BIU's values of one triangle as linear forms of the ray.
#[derive(Clone, Copy, Debug)]
pub(super) struct FixedForms {
    /// g2, g3, D' and g1: value = c·R / 2^17 within `ERRORS` raw units.
    c: [[i64; 3]; 4],
    c_abs: [[i64; 3]; 4],
    /// Per corner of the triangle, a weighted sum of its two edges' values.
    wedges: [Wedge; 3],
}

/// Each form's truncation error bound, raw units: three truncated products per DOT, and
/// g1 the difference of three DOTs.
const ERRORS: [i64; 4] = [3, 3, 3, 9];

/// The interval of c·R / 2^17 over the box, widened by `error` raw units.
#[inline(always)]
fn span(c: &[i64; 3], c_abs: &[i64; 3], error: i64, rays: &Around) -> Interval {
    let (mut mid, mut half) = (0i64, 0i64);
    for i in 0..3 {
        mid += c[i] * rays.mid2[i];
        half += c_abs[i] * rays.half2[i];
    }
    // Twice the bounds of c·R: one more bit of shift than 2^17.
    Interval {
        lo: ((mid - half) >> 18) - error,
        hi: -((-(mid + half)) >> 18) + error,
    }
}

/// A weighted sum w_a·g_a + w_b·g_b of two edge values (the forms 0, 1 and 3 of
/// [`FixedForms`]) with whole weights: its coefficients, its error bound and the weighted
/// sum of the two tests' bounds.
#[derive(Clone, Copy, Debug)]
struct Wedge {
    c: [i64; 3],
    c_abs: [i64; 3],
    error: i64,
    bound: i64,
}

/// The edge forms' places in [`FixedForms::c`] (g2, g3, g1) and their tests' bounds.
const EDGES: [(usize, i64); 3] = [
    (0, FIXED_TOLERANCE as i64),
    (1, FIXED_TOLERANCE as i64),
    (3, FIXED_TOLERANCE_G1 as i64),
];

/// The weights of a wedge add up to this (at most 2^8: see [`FixedForms::new`]).
const WEDGE_WEIGHT: i64 = 64;

impl FixedForms {
    /// The forms of a triangle, or `None` when they cannot be bounded over `all` rays.
    pub(super) fn new(
        k: &TriangleConstants,
        f: &FixedConstants,
        all: &RayBox,
    ) -> Option<FixedForms> {
        if !alu::exact_multiplicands(k.q) {
            return None;
        }
        let wide = |v: [u32; 3]| v.map(|w| i64::from(w as i32));
        let (c2, q, cd) = (wide(f.c2), wide(k.q), wide(f.c_delta));
        let g1: [i64; 3] = std::array::from_fn(|i| cd[i] - c2[i] - q[i]);
        let c = [c2, q, cd, g1];
        let r = all.magnitude();
        let fits =
            |c: &[i64; 3]| (0..3).map(|i| i128::from(c[i]).abs() * r[i]).sum::<i128>() < LIMIT;
        if !c.iter().all(fits) {
            return None;
        }
        Some(FixedForms {
            c,
            c_abs: c.map(|c| c.map(i64::abs)),
            wedges: std::array::from_fn(|k| wedge(&c, EDGES[k], EDGES[(k + 1) % 3])),
        })
    }

    /// The interval of form `f` over the box.
    #[inline(always)]
    fn interval(&self, f: usize, rays: &Around) -> Interval {
        span(&self.c[f], &self.c_abs[f], ERRORS[f], rays)
    }

    /// Whether every ray of `rays` fails one of the edge tests of one orientation (`back`
    /// or not), which one depending on the ray: some weighted sum of two edge values
    /// past its bounds (see the module documentation).
    #[inline(always)]
    fn wedge_rejects(&self, rays: &Around, back: bool) -> bool {
        self.wedges.iter().any(|wedge| {
            let value = span(&wedge.c, &wedge.c_abs, wedge.error, rays);
            if back {
                value.lo > wedge.bound
            } else {
                value.hi < -wedge.bound
            }
        })
    }

    /// What the fixed BIU does for every ray of `rays`, if that is certain. The edge
    /// values' intervals are computed as BIU's path reaches their tests (most nodes fail
    /// one of the first), each once for both orientations.
    #[inline(always)]
    pub(super) fn verdict(&self, rays: &Around) -> Option<Verdict> {
        let delta = self.interval(2, rays);
        let mut edges: [Option<Interval>; 3] = [None; 3];
        let mut edge =
            |k: usize| *edges[k].get_or_insert_with(|| self.interval([0, 1, 3][k], rays));
        // `JLX D', 0`: D' <= 0 takes the back-facing tests; each side's tests concern only
        // its own rays, which the whole box's intervals bound.
        let front = if delta.hi > 0 {
            match path(delta, &mut edge, false) {
                None if self.wedge_rejects(rays, false) => Some(Some(Verdict::Rejected)),
                // Some front-facing ray is undecided: so is the node.
                None => return None,
                verdict => Some(verdict),
            }
        } else {
            None
        };
        let back = (delta.lo <= 0).then(|| {
            path(delta, &mut edge, true)
                .or_else(|| self.wedge_rejects(rays, true).then_some(Verdict::Rejected))
        });
        match (front, back) {
            (Some(v), None) | (None, Some(v)) => v,
            (Some(Some(a)), Some(Some(b))) if a == b => Some(a),
            (Some(Some(_)), Some(Some(_))) => Some(Verdict::Rejected),
            _ => None,
        }
    }
}

/// A triangle's seven forms (g2, g3, D', g1, then the three wedges) in double precision,
/// for judging four nodes at once ([`avx2::verdicts`]). Every value on the way is a
/// whole number below 2^53 in magnitude (the bounds of [`FixedForms::new`]: every |c|·|R|
/// sum below 2^52, the doubled centre and half-width below 2^53), so each product, sum and
/// rounding to a multiple of 2^18 is exact: the verdicts are [`FixedForms::verdict`]'s,
/// bit for bit, whatever the instruction set (tested).
#[derive(Clone, Copy, Debug)]
pub(super) struct FixedLanes {
    c: [[f64; 3]; 7],
    c_abs: [[f64; 3]; 7],
    errors: [f64; 7],
    /// The wedges' bounds.
    bounds: [f64; 3],
}

/// Four nodes' rays: per ray lane, per node, twice the centre and twice the half-extent
/// (whole numbers below 2^34: exact in double precision).
#[derive(Clone, Copy, Debug)]
pub(super) struct Quad {
    pub(super) mid2: [[f64; 4]; 3],
    pub(super) half2: [[f64; 4]; 3],
}

/// [`Verdict::code`] of each test's exit in [`path`]'s order (flat, g2, g3, g1), and of
/// a rejection whose exit depends on the ray.
const PATH_CODES: [u8; 4] = [
    Verdict::Exit(Exit::Flat).code(),
    Verdict::Exit(Exit::G2).code(),
    Verdict::Exit(Exit::G3).code(),
    Verdict::Exit(Exit::G1).code(),
];
const REJECTED_CODE: u8 = Verdict::Rejected.code();

impl FixedLanes {
    pub(super) fn new(forms: &FixedForms) -> FixedLanes {
        let float = |c: [i64; 3]| c.map(|x| x as f64);
        let c: [[f64; 3]; 7] = std::array::from_fn(|f| match f {
            0..=3 => float(forms.c[f]),
            _ => float(forms.wedges[f - 4].c),
        });
        FixedLanes {
            c,
            c_abs: c.map(|c| c.map(f64::abs)),
            errors: std::array::from_fn(|f| match f {
                0..=3 => ERRORS[f] as f64,
                _ => forms.wedges[f - 4].error as f64,
            }),
            bounds: forms.wedges.map(|wedge| wedge.bound as f64),
        }
    }
}

/// [`FixedForms::verdict`]'s [`Verdict::code`] for each of four nodes (0 where it gives
/// none), in AVX2 and FMA intrinsics, one node per vector lane: every form evaluated for
/// every node (each a fused multiply-add of whole numbers below 2^53, which rounds
/// nothing), and the path through BIU's tests chosen with blends.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use std::arch::x86_64::*;

    use super::{
        FixedLanes, Quad, FIXED_FLAT, FIXED_TOLERANCE, FIXED_TOLERANCE_G1, PATH_CODES,
        REJECTED_CODE, SPAN_SCALE,
    };

    /// The four nodes' codes.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(in super::super) fn verdicts(lanes: &FixedLanes, rays: &Quad) -> [u8; 4] {
        let splat = |x: f64| _mm256_set1_pd(x);
        let load = |a: [f64; 4]| _mm256_set_pd(a[3], a[2], a[1], a[0]);
        let (mid2, half2) = (rays.mid2.map(load), rays.half2.map(load));
        let dot = |c: [f64; 3], r: &[__m256d; 3]| {
            _mm256_fmadd_pd(
                splat(c[2]),
                r[2],
                _mm256_fmadd_pd(splat(c[1]), r[1], _mm256_mul_pd(splat(c[0]), r[0])),
            )
        };
        let scale = splat(SPAN_SCALE);
        let intervals: [(__m256d, __m256d); 7] = std::array::from_fn(|f| {
            let (mid, half) = (dot(lanes.c[f], &mid2), dot(lanes.c_abs[f], &half2));
            let error = splat(lanes.errors[f]);
            let lo = _mm256_round_pd::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(
                _mm256_mul_pd(_mm256_sub_pd(mid, half), scale),
            );
            let hi = _mm256_round_pd::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(
                _mm256_mul_pd(_mm256_add_pd(mid, half), scale),
            );
            (_mm256_sub_pd(lo, error), _mm256_add_pd(hi, error))
        });
        let (front, back) = (
            settled_path(lanes, &intervals, false),
            settled_path(lanes, &intervals, true),
        );
        let zero = _mm256_setzero_pd();
        let eq = |a, b| _mm256_cmp_pd::<_CMP_EQ_OQ>(a, b);
        let blend = |no, yes, mask| _mm256_blendv_pd(no, yes, mask);
        // Both orientations taken: one exit, or a rejection, or nothing if either is open.
        let either_open = _mm256_or_pd(eq(front, zero), eq(back, zero));
        let both = blend(
            blend(splat(f64::from(REJECTED_CODE)), zero, either_open),
            front,
            eq(front, back),
        );
        let (delta_lo, delta_hi) = intervals[2];
        let only_front = _mm256_cmp_pd::<_CMP_GT_OQ>(delta_lo, zero);
        let only_back = _mm256_cmp_pd::<_CMP_LE_OQ>(delta_hi, zero);
        let codes = blend(blend(both, front, only_front), back, only_back);
        let codes = _mm256_cvttpd_epi32(codes);
        let bytes = _mm_packus_epi16(_mm_packus_epi32(codes, codes), codes);
        _mm_cvtsi128_si32(bytes).to_le_bytes()
    }

    /// [`super::path`] for one orientation (`back` or not), then the wedges where it
    /// settles nothing: the first test no ray passes gives its exit, or a rejection
    /// when an earlier test fails for some rays.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    fn settled_path(
        lanes: &FixedLanes,
        intervals: &[(__m256d, __m256d); 7],
        back: bool,
    ) -> __m256d {
        let splat = |x: f64| _mm256_set1_pd(x);
        let tests = [
            (2, -f64::from(FIXED_FLAT + 1)),
            (0, f64::from(FIXED_TOLERANCE)),
            (1, f64::from(FIXED_TOLERANCE)),
            (3, f64::from(FIXED_TOLERANCE_G1)),
        ];
        // Which of (always, never) holds over each node's interval.
        let holds = |(lo, hi): (__m256d, __m256d), bound: f64| {
            if back {
                (
                    _mm256_cmp_pd::<_CMP_LE_OQ>(hi, splat(bound)),
                    _mm256_cmp_pd::<_CMP_GT_OQ>(lo, splat(bound)),
                )
            } else {
                (
                    _mm256_cmp_pd::<_CMP_GE_OQ>(lo, splat(-bound)),
                    _mm256_cmp_pd::<_CMP_LT_OQ>(hi, splat(-bound)),
                )
            }
        };
        let zero = _mm256_setzero_pd();
        let rejected = splat(f64::from(REJECTED_CODE));
        let (mut code, mut done, mut earlier_fail) = (zero, zero, zero);
        for (place, (form, bound)) in tests.into_iter().enumerate() {
            let (always, never) = holds(intervals[form], bound);
            let exit =
                _mm256_blendv_pd(splat(f64::from(PATH_CODES[place])), rejected, earlier_fail);
            code = _mm256_blendv_pd(code, exit, _mm256_andnot_pd(done, never));
            done = _mm256_or_pd(done, never);
            // Some rays fail it and some pass: not always, not never.
            let sometimes = _mm256_cmp_pd::<_CMP_EQ_OQ>(_mm256_or_pd(always, never), zero);
            earlier_fail = _mm256_or_pd(earlier_fail, sometimes);
        }
        let mut wedged = zero;
        for (w, &bound) in lanes.bounds.iter().enumerate() {
            let (_, never) = holds(intervals[4 + w], bound);
            wedged = _mm256_or_pd(wedged, never);
        }
        let open = _mm256_cmp_pd::<_CMP_EQ_OQ>(code, zero);
        _mm256_blendv_pd(code, rejected, _mm256_and_pd(wedged, open))
    }
}

/// 2^-18: the doubled bounds of c·R scaled to raw units (see [`span`]).
const SPAN_SCALE: f64 = 1.0 / (1u64 << 18) as f64;
/// The wedge of edges `a` and `b` (place and bound): weights inversely proportional to
/// the edges' coefficients, so that the sum weighs both alike. Any weights at least 0
/// make a sound test; these only make it decisive where it can be.
fn wedge(c: &[[i64; 3]; 4], (a, bound_a): (usize, i64), (b, bound_b): (usize, i64)) -> Wedge {
    let size = |f: usize| c[f].iter().map(|&x| (x as f64).abs()).sum::<f64>().max(1.0);
    let share = size(b) / (size(a) + size(b));
    // Rounded to nearest, halves up (`f64::round` for a value of 0 to 64, without its
    // library call: the fraction left after truncating is exact).
    let scaled = share * WEDGE_WEIGHT as f64;
    let whole = scaled as i64;
    let rounded = whole + i64::from(scaled - whole as f64 >= 0.5);
    let w_a = rounded.clamp(1, WEDGE_WEIGHT - 1);
    let w_b = WEDGE_WEIGHT - w_a;
    let sum: [i64; 3] = std::array::from_fn(|i| w_a * c[a][i] + w_b * c[b][i]);
    Wedge {
        c: sum,
        c_abs: sum.map(i64::abs),
        error: w_a * ERRORS[a] + w_b * ERRORS[b],
        bound: w_a * bound_a + w_b * bound_b,
    }
}

/// Whether `value >= -bound` (front) or `value <= bound` (back) holds over the interval:
/// fixed.shdr's JGEX/JLEX, whose magnitude tie (|x| = bound) agrees with >= and <= here,
/// and its JGZ (> 32, that is >= 33) and JLZ (<= -33).
fn holds(value: Interval, bound: i64, back: bool) -> Holds {
    let (always, never) = if back {
        (value.hi <= bound, value.lo > bound)
    } else {
        (value.lo >= -bound, value.hi < -bound)
    };
    match (always, never) {
        (true, _) => Holds::Always,
        (_, true) => Holds::Never,
        _ => Holds::Sometimes,
    }
}

/// BIU's tests in order for one orientation, on the interval of D' and those of g2, g3
/// and g1 (`edge(0..3)`, asked for only as the path reaches them): the exit if every ray
/// takes the same one, [`Verdict::Rejected`] if every ray fails some test, otherwise
/// `None`.
#[inline(always)]
fn path(delta: Interval, edge: &mut impl FnMut(usize) -> Interval, back: bool) -> Option<Verdict> {
    // Not flat: D' > 32, that is D' >= 33 (front), or D' <= -33 (back).
    let not_flat = -(i64::from(FIXED_FLAT) + 1);
    let tests = [
        (None, not_flat, Exit::Flat),
        (Some(0), FIXED_TOLERANCE.into(), Exit::G2),
        (Some(1), FIXED_TOLERANCE.into(), Exit::G3),
        (Some(2), FIXED_TOLERANCE_G1.into(), Exit::G1),
    ];
    // The first test no ray passes ends every path that gets there; tests before it that
    // some rays fail send those rays out earlier.
    let mut earlier_fail = false;
    for (which, bound, exit) in tests {
        let value = which.map_or(delta, &mut *edge);
        match holds(value, bound, back) {
            Holds::Never if !earlier_fail => return Some(Verdict::Exit(exit)),
            Holds::Never => return Some(Verdict::Rejected),
            Holds::Sometimes => earlier_fail = true,
            Holds::Always => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::Rng;
    use super::super::UNSETTLED;
    use super::*;
    use crate::emu::machine::cull::fixed_verdict;

    /// A random triangle seen from a random camera, and a small box of rays around a
    /// random one: whatever the structure claims for the box holds for every ray in it,
    /// checked on the box's corners and random rays inside.
    #[test]
    fn claims_hold_for_every_ray_of_the_box() {
        let (cases, claimed, _) = check_claims(0x5EED_F1C5, [1, 4, 8, 12]);
        // The test means something only if the structure often settles.
        assert!(claimed > cases / 4, "{claimed} of {cases} settled");
    }

    /// The same with wide boxes, as the upper nodes of the tree have: the wedges settle
    /// some that the tests one at a time leave open, and what they claim holds too.
    #[test]
    fn wedges_reject_wide_boxes_past_a_corner() {
        let (cases, _, wedged) = check_claims(0x003E_D6E5, [13, 14, 15, 16]);
        assert!(
            wedged > cases / 100,
            "{wedged} of {cases} settled by wedges"
        );
    }

    /// A triangle with vertices of 8 to 20 random bits and a random camera: the cases'
    /// triangles, from tiny to as wide as Q15.17 holds.
    fn random_triangle(rng: &mut Rng) -> TriangleConstants {
        let size = [8, 12, 16, 20][(rng.next() % 4) as usize];
        TriangleConstants::new(rng.vec(size), rng.vec(size), rng.vec(size), rng.vec(20))
    }

    /// Checks 20,000 random cases with box spreads of `spreads` bits: the cases, how many
    /// the verdict settled, and how many of those only the wedges settled.
    fn check_claims(seed: u64, spreads: [u32; 4]) -> (usize, usize, usize) {
        let mut rng = Rng(seed);
        let (mut claimed, mut cases, mut wedged) = (0, 0, 0);
        while cases < 20_000 {
            let k = random_triangle(&mut rng);
            let ray = rng.vec(17);
            let spread = spreads[(rng.next() % 4) as usize];
            let mut rays = RayBox::EMPTY;
            rays.add(ray);
            let other: [u32; 3] =
                std::array::from_fn(|i| (ray[i] as i32).wrapping_add(rng.raw(spread)) as u32);
            rays.add(other);
            let f = FixedConstants::new(&k);
            let Some(forms) = FixedForms::new(&k, &f, &rays) else {
                continue;
            };
            cases += 1;
            let Some(verdict) = forms.verdict(&rays.around()) else {
                continue;
            };
            claimed += 1;
            wedged += usize::from(without_wedges(forms).verdict(&rays.around()).is_none());
            for sample in 0..16 {
                let ray: [u32; 3] = std::array::from_fn(|i| {
                    let (lo, hi) = (rays.lo[i], rays.hi[i]);
                    let pick = if sample < 8 {
                        if sample >> i & 1 == 0 {
                            lo
                        } else {
                            hi
                        }
                    } else {
                        lo + (rng.next() % (hi - lo + 1) as u64) as i32
                    };
                    pick as u32
                });
                let exact = fixed_verdict(
                    alu::dot(ray, f.c2),
                    alu::dot(k.q, ray),
                    alu::dot(ray, f.c_delta),
                );
                match verdict {
                    Verdict::Exit(exit) => assert_eq!(exact, Some(exit), "{k:?} {ray:?}"),
                    Verdict::Rejected => assert!(exact.is_some(), "{k:?} {ray:?}"),
                    Verdict::Occluded => unreachable!("the edge verdict claims no occlusion"),
                }
            }
        }
        (cases, claimed, wedged)
    }

    /// [`avx2::verdicts`] gives each of four nodes what [`FixedForms::verdict`] gives it
    /// (where the CPU has AVX2 and FMA), on boxes from a single ray to the width of the
    /// tree's top nodes; every code comes up.
    #[test]
    fn four_at_once_are_the_node_by_node_verdicts() {
        let mut rng = Rng(0x4A4E_5F0D);
        let mut seen = [0usize; 8];
        let mut cases = 0;
        while cases < 20_000 {
            let k = random_triangle(&mut rng);
            let centre = rng.vec(17);
            let boxes: [RayBox; 4] = std::array::from_fn(|_| {
                let spread = [1, 4, 8, 12, 13, 14, 15, 16][(rng.next() % 8) as usize];
                let mut rays = RayBox::EMPTY;
                for _ in 0..2 {
                    rays.add(std::array::from_fn(|i| {
                        (centre[i] as i32).wrapping_add(rng.raw(spread)) as u32
                    }));
                }
                rays
            });
            let all = boxes
                .iter()
                .fold(RayBox::EMPTY, |a, &b| RayBox::union(a, b));
            let f = FixedConstants::new(&k);
            let Some(forms) = FixedForms::new(&k, &f, &all) else {
                continue;
            };
            cases += 1;
            let arounds = boxes.map(|b| b.around());
            let quad = Quad {
                mid2: std::array::from_fn(|lane| arounds.map(|a| a.mid2[lane] as f64)),
                half2: std::array::from_fn(|lane| arounds.map(|a| a.half2[lane] as f64)),
            };
            let expected = arounds.map(|a| forms.verdict(&a).map_or(UNSETTLED, Verdict::code));
            let lanes = FixedLanes::new(&forms);
            #[cfg(target_arch = "x86_64")]
            if crate::emu::cpu::has_avx2_and_fma() {
                // SAFETY: the CPU has AVX2 and FMA, checked just above.
                let vector = unsafe { avx2::verdicts(&lanes, &quad) };
                assert_eq!(vector, expected, "{k:?} {boxes:?}");
            }
            for code in expected {
                seen[usize::from(code)] += 1;
            }
        }
        for code in [0, 1, 2, 3, 4, 7] {
            assert!(seen[code] > 20, "code {code}: {seen:?}");
        }
    }

    /// `forms` with wedges that never settle anything.
    fn without_wedges(mut forms: FixedForms) -> FixedForms {
        for wedge in &mut forms.wedges {
            // No interval reaches past ±2^62.
            wedge.bound = 1 << 62;
        }
        forms
    }
}
