//! The build's verdicts in double precision, four nodes at a time: several times faster
//! than the exact integers, and sound by construction.
//!
//! For a triangle whose |c|·|R| sums are below [`NARROW`] (checked per triangle), every
//! span is widened past the exact one. Over a node, |c·mid2| + |c|·half2 <= 4·Σ|c|·|R| <
//! 2^62, so each of the 17 roundings on the way to a bound (six coefficients, six products,
//! five sums) is off by at most 2^62·2^-53 = 2^9: under 2^14 units of the doubled
//! numerator, under 2^-4 raw units after the scale of 2^-18 or less. Subtracting the margin
//! and rounding to the nearest integer move a bound by at most 2^-9 + 0.5 more, so a margin
//! of error + 2 raw units on each side contains the exact span (floor and ceil, ± error),
//! and its endpoints are integers. Those are below 2^45 in magnitude; the verdict adds at
//! most three of them and scales by powers of two, which is exact in f64.
//!
//! A wider span can only make the verdict less decisive (each condition must hold for
//! every value of its spans), so every claim is also the exact verdict's; a unit test
//! checks that too. With AVX2 (detected at run time) the four nodes are judged in one
//! vector each; without it lane by lane, with the same operations in the same order, so
//! the two give identical verdicts (tested).
//!
//! The descent over the tree's [`Group`]s lives here too, and also serves the rare wide
//! triangle (the exact verdict, lane by lane) and the unbounded one (a candidate
//! everywhere).

use super::{Exit, Forms, Node, NodeKind, Skipped, Verdict, H3_ERROR, UNSETTLED};

/// 1.5 · 2^52: adding and subtracting it rounds an f64 below 2^51 in magnitude to the
/// nearest integer (ties to even).
const ROUNDING: f64 = 6_755_399_441_055_744.0;

/// The doubled numerators' scales: one more halving than the forms' (2^-34 and 2^-17).
/// [`FloatForms`] holds its coefficients scaled: a power of two commutes with every
/// rounding of the sums (no value comes near the subnormals), so the spans are the same
/// to the bit as scaling after summing, one multiplication fewer per span.
const DELTA_SCALE: f64 = 1.0 / (1u64 << 35) as f64;
const H3_SCALE: f64 = 1.0 / (1u64 << 18) as f64;

/// A triangle's [`Forms`] in double precision, scaled (`DELTA_SCALE`, `H3_SCALE`), with
/// each error bound widened by the rounding margin.
#[derive(Clone, Copy, Debug)]
pub(super) struct FloatForms {
    delta: [f64; 3],
    h2: [f64; 3],
    h3: [f64; 3],
    delta_abs: [f64; 3],
    h2_abs: [f64; 3],
    h3_abs: [f64; 3],
    delta_margin: f64,
    h2_margin: f64,
    h3_margin: f64,
}

impl FloatForms {
    /// `forms` must satisfy [`Forms::narrow`].
    pub(super) fn new(forms: &Forms) -> FloatForms {
        // Through i64 where it fits: i128 to f64 is a slow library call, which the
        // optimiser puts back in place of the i64 conversion unless kept from seeing it.
        let to_f64 = |v: i128| match i64::try_from(v) {
            Ok(v) => std::hint::black_box(v) as f64,
            Err(_) => v as f64,
        };
        let float = |c: [i128; 3], scale: f64| c.map(|v| to_f64(v) * scale);
        let margin = |error: i128| to_f64(error) + 2.0;
        FloatForms {
            delta: float(forms.delta, DELTA_SCALE),
            h2: float(forms.h2, DELTA_SCALE),
            h3: float(forms.h3, H3_SCALE),
            delta_abs: float(forms.delta_abs, DELTA_SCALE),
            h2_abs: float(forms.h2_abs, DELTA_SCALE),
            h3_abs: float(forms.h3_abs, H3_SCALE),
            delta_margin: margin(forms.delta_error),
            h2_margin: margin(forms.h2_error),
            h3_margin: margin(H3_ERROR),
        }
    }
}

/// Up to four nodes judged together: the children of a split node, or the root alone.
#[derive(Clone, Copy, Debug)]
pub(super) struct Group {
    nodes: [u32; 4],
    /// Each node's tile when it is a leaf, else [`NOT_A_LEAF`].
    tiles: [u32; 4],
    /// Each split node's own group (its children), by place in the groups.
    children: [u32; 4],
    count: u8,
    /// [ray lane][node]: twice the centre and twice the half-extent of the node's rays.
    mid2: [[f64; 4]; 3],
    half2: [[f64; 4]; 3],
}

const NOT_A_LEAF: u32 = u32::MAX;

impl Group {
    fn new(nodes: &[Node], members: &[u32]) -> Group {
        let mut group = Group {
            nodes: [0; 4],
            tiles: [NOT_A_LEAF; 4],
            children: [0; 4],
            count: members.len() as u8,
            mid2: [[0.0; 4]; 3],
            half2: [[0.0; 4]; 3],
        };
        // Unused places repeat the first node; their verdicts are ignored.
        for k in 0..4 {
            let member = members[k.min(members.len() - 1)];
            let node = &nodes[member as usize];
            group.nodes[k] = member;
            if let NodeKind::Leaf(tile) = node.kind {
                group.tiles[k] = tile;
            }
            for lane in 0..3 {
                // Below 2^33 in magnitude: exact.
                group.mid2[lane][k] = node.around.mid2[lane] as f64;
                group.half2[lane][k] = node.around.half2[lane] as f64;
            }
        }
        group
    }
}

/// The root alone, then each split node's children as a [`Group`], breadth first: the
/// order the descent visits them in, so that the groups one triangle needs lie close
/// together, and leaves take no place.
pub(super) fn groups(nodes: &[Node], root: u32) -> Vec<Group> {
    let mut groups = vec![Group::new(nodes, &[root])];
    let mut next = 0;
    while next < groups.len() {
        for k in 0..groups[next].count as usize {
            if let NodeKind::Split(children, count) = nodes[groups[next].nodes[k] as usize].kind {
                groups[next].children[k] = groups.len() as u32;
                groups.push(Group::new(nodes, &children[..count as usize]));
            }
        }
        next += 1;
    }
    groups
}

const EXIT_U: u8 = Verdict::Exit(Exit::U).code();
const EXIT_V: u8 = Verdict::Exit(Exit::V).code();
const EXIT_SUM: u8 = Verdict::Exit(Exit::Sum).code();
const REJECTED: u8 = Verdict::Rejected.code();

/// The verdict from the conditions of [`Forms::verdict`], evaluated on one node's spans.
#[inline(always)]
fn code(
    settled: bool,
    u_negative: bool,
    v_negative: bool,
    u_sure: bool,
    v_sure: bool,
    beyond_sum: bool,
) -> u8 {
    if !settled {
        UNSETTLED
    } else if u_negative {
        EXIT_U
    } else if u_sure && v_negative {
        EXIT_V
    } else if u_sure && v_sure && beyond_sum {
        EXIT_SUM
    } else if v_negative || beyond_sum {
        REJECTED
    } else {
        UNSETTLED
    }
}

/// The nearest integer to `x` (|x| < 2^51).
#[inline(always)]
fn round(x: f64) -> f64 {
    (x + ROUNDING) - ROUNDING
}

/// The verdicts for the nodes of `group`, lane by lane.
#[inline(always)]
fn verdicts_portable(forms: &FloatForms, group: &Group) -> [u8; 4] {
    let span = |c: [f64; 3], c_abs: [f64; 3], margin: f64, k: usize| {
        let mid = c[0] * group.mid2[0][k] + c[1] * group.mid2[1][k] + c[2] * group.mid2[2][k];
        let half = c_abs[0] * group.half2[0][k]
            + c_abs[1] * group.half2[1][k]
            + c_abs[2] * group.half2[2][k];
        (round((mid - half) - margin), round((mid + half) + margin))
    };
    std::array::from_fn(|k| {
        let f = forms;
        let delta = span(f.delta, f.delta_abs, f.delta_margin, k);
        let h2 = span(f.h2, f.h2_abs, f.h2_margin, k);
        let h3 = span(f.h3, f.h3_abs, f.h3_margin, k);
        let negative = delta.1 < 0.0;
        let settled = negative || delta.0 > 0.0;
        let flip = |(lo, hi): (f64, f64)| if negative { (-hi, -lo) } else { (lo, hi) };
        let ((d_lo, d_hi), (a_lo, a_hi), (b_lo, b_hi)) = (flip(delta), flip(h2), flip(h3));
        let wrap = d_lo * 16384.0;
        let negative_quotient = |lo: f64, hi: f64| hi < 0.0 && -hi * 131072.0 >= d_hi && -lo < wrap;
        let magnitude = |lo: f64, hi: f64| if -lo > hi { -lo } else { hi };
        let (a_magnitude, b_magnitude) = (magnitude(a_lo, a_hi), magnitude(b_lo, b_hi));
        // (A + B)·2^17 >= (2^17 + 2)·D, rearranged so that every step is exact.
        let beyond_sum = (a_lo + b_lo - d_hi) * 131072.0 >= 2.0 * d_hi
            && a_magnitude < wrap
            && b_magnitude < wrap
            && a_magnitude + b_magnitude < wrap;
        code(
            settled,
            negative_quotient(a_lo, a_hi),
            negative_quotient(b_lo, b_hi),
            a_lo >= 0.0,
            b_lo >= 0.0,
            beyond_sum,
        )
    })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{FloatForms, Group, EXIT_SUM, EXIT_U, EXIT_V, REJECTED, ROUNDING};

    /// [`super::verdicts_portable`], one node per vector lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn verdicts(forms: &FloatForms, group: &Group) -> [u8; 4] {
        let load = |a: [f64; 4]| _mm256_set_pd(a[3], a[2], a[1], a[0]);
        let splat = |x: f64| _mm256_set1_pd(x);
        let (mid2, half2) = (group.mid2.map(load), group.half2.map(load));
        let rounding = splat(ROUNDING);
        let round = |x: __m256d| _mm256_sub_pd(_mm256_add_pd(x, rounding), rounding);
        let dot = |c: [f64; 3], r: &[__m256d; 3]| {
            let p = |i: usize| _mm256_mul_pd(splat(c[i]), r[i]);
            _mm256_add_pd(_mm256_add_pd(p(0), p(1)), p(2))
        };
        let span = |c: [f64; 3], c_abs: [f64; 3], margin: f64| {
            let (mid, half) = (dot(c, &mid2), dot(c_abs, &half2));
            let margin = splat(margin);
            let lo = _mm256_sub_pd(_mm256_sub_pd(mid, half), margin);
            let hi = _mm256_add_pd(_mm256_add_pd(mid, half), margin);
            (round(lo), round(hi))
        };
        let f = forms;
        let delta = span(f.delta, f.delta_abs, f.delta_margin);
        let h2 = span(f.h2, f.h2_abs, f.h2_margin);
        let h3 = span(f.h3, f.h3_abs, f.h3_margin);

        let zero = _mm256_setzero_pd();
        let sign = splat(-0.0);
        let neg = |x: __m256d| _mm256_xor_pd(x, sign);
        let lt = |a: __m256d, b: __m256d| _mm256_cmp_pd::<_CMP_LT_OQ>(a, b);
        let ge = |a: __m256d, b: __m256d| _mm256_cmp_pd::<_CMP_GE_OQ>(a, b);
        let and = |a: __m256d, b: __m256d| _mm256_and_pd(a, b);
        let negative = lt(delta.1, zero);
        let settled = _mm256_or_pd(negative, _mm256_cmp_pd::<_CMP_GT_OQ>(delta.0, zero));
        let flip = |(lo, hi): (__m256d, __m256d)| {
            (
                _mm256_blendv_pd(lo, neg(hi), negative),
                _mm256_blendv_pd(hi, neg(lo), negative),
            )
        };
        let ((d_lo, d_hi), (a_lo, a_hi), (b_lo, b_hi)) = (flip(delta), flip(h2), flip(h3));
        let wrap = _mm256_mul_pd(d_lo, splat(16384.0));
        let scaled = |x: __m256d| _mm256_mul_pd(x, splat(131072.0));
        let negative_quotient = |lo: __m256d, hi: __m256d| {
            and(
                and(lt(hi, zero), ge(scaled(neg(hi)), d_hi)),
                lt(neg(lo), wrap),
            )
        };
        let magnitude = |lo: __m256d, hi: __m256d| _mm256_blendv_pd(hi, neg(lo), lt(hi, neg(lo)));
        let (a_magnitude, b_magnitude) = (magnitude(a_lo, a_hi), magnitude(b_lo, b_hi));
        let beyond_sum = and(
            and(
                ge(
                    scaled(_mm256_sub_pd(_mm256_add_pd(a_lo, b_lo), d_hi)),
                    _mm256_mul_pd(splat(2.0), d_hi),
                ),
                lt(a_magnitude, wrap),
            ),
            and(
                lt(b_magnitude, wrap),
                lt(_mm256_add_pd(a_magnitude, b_magnitude), wrap),
            ),
        );
        // The verdict codes, one per lane: the conditions of `code`, made exclusive, each
        // selecting its code, converted to bytes.
        let andnot = |a: __m256d, b: __m256d| _mm256_andnot_pd(a, b);
        let or = |a: __m256d, b: __m256d| _mm256_or_pd(a, b);
        let (u_negative, v_negative) =
            (negative_quotient(a_lo, a_hi), negative_quotient(b_lo, b_hi));
        let u_sure = and(settled, andnot(u_negative, ge(a_lo, zero)));
        let exit_u = and(settled, u_negative);
        let exit_v = and(u_sure, v_negative);
        let exit_sum = and(andnot(v_negative, u_sure), and(ge(b_lo, zero), beyond_sum));
        let exits = or(or(exit_u, exit_v), exit_sum);
        let rejected = andnot(exits, and(settled, or(v_negative, beyond_sum)));
        let code = |mask: __m256d, code: u8| and(mask, splat(f64::from(code)));
        let codes = or(
            or(code(exit_u, EXIT_U), code(exit_v, EXIT_V)),
            or(code(exit_sum, EXIT_SUM), code(rejected, REJECTED)),
        );
        let codes = _mm256_cvttpd_epi32(codes);
        let bytes = _mm_packus_epi16(_mm_packus_epi32(codes, codes), codes);
        _mm_cvtsi128_si32(bytes).to_le_bytes()
    }
}

/// What one build task gathers as its triangles descend the tree: (tile, triangle)
/// candidates, what each node skips (by group and place in it, so that a group's counts
/// share a cache line), and the descent's queue (kept for its allocation).
///
/// The candidates and the queue are written one place past their ends whatever the
/// verdict, and their lengths advanced by it: a branch per node is mispredicted too
/// often (with the batches in [`descend`], 11% less build CPU time than branching).
pub(super) struct Collector {
    found: Vec<(u32, u32)>,
    found_len: usize,
    skipped: Vec<[Skipped; 4]>,
    queue: Vec<u32>,
}

/// Places a batch of groups can write past the candidates' or the queue's end.
const SLACK: usize = 4 * BATCH;

impl Collector {
    pub(super) fn new(groups: &[Group]) -> Collector {
        Collector {
            found: Vec::new(),
            found_len: 0,
            skipped: vec![[[0; 5]; 4]; groups.len()],
            // A triangle queues each group at most once.
            queue: vec![0; groups.len() + SLACK],
        }
    }

    /// The candidates, and adds what each node skipped to `per_node`.
    pub(super) fn finish(mut self, groups: &[Group], per_node: &mut [Skipped]) -> Vec<(u32, u32)> {
        for (group, skipped) in groups.iter().zip(&self.skipped) {
            for k in 0..group.count as usize {
                let total = &mut per_node[group.nodes[k] as usize];
                for (sum, count) in total.iter_mut().zip(&skipped[k]) {
                    *sum += count;
                }
            }
        }
        self.found.truncate(self.found_len);
        self.found
    }
}

/// Descends from the root's group while `forms`' verdict is unsettled: candidates at the
/// leaves, and per node what it skips.
pub(super) fn visit(groups: &[Group], forms: &FloatForms, triangle: u32, into: &mut Collector) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        unsafe { visit_avx2(groups, forms, triangle, into) };
        return;
    }
    descend(groups, triangle, into, |group| {
        verdicts_portable(forms, group)
    });
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn visit_avx2(groups: &[Group], forms: &FloatForms, triangle: u32, into: &mut Collector) {
    descend(groups, triangle, into, |group| avx2::verdicts(forms, group));
}

/// [`visit`] with the exact integer verdict, node by node: for the rare triangle whose
/// forms are too wide for double precision.
pub(super) fn visit_exact(
    groups: &[Group],
    nodes: &[Node],
    forms: &Forms,
    triangle: u32,
    into: &mut Collector,
) {
    descend(groups, triangle, into, |group| {
        group.nodes.map(|at| {
            let around = &nodes[at as usize].around;
            forms.verdict(around).map_or(UNSETTLED, Verdict::code)
        })
    });
}

/// A candidate at every tile: for a triangle that cannot be bounded at all.
pub(super) fn mark_all(groups: &[Group], triangle: u32, into: &mut Collector) {
    descend(groups, triangle, into, |_| [UNSETTLED; 4]);
}

#[inline(always)]
fn descend(
    groups: &[Group],
    triangle: u32,
    into: &mut Collector,
    verdicts: impl Fn(&Group) -> [u8; 4],
) {
    // Breadth first: the next group to judge was queued long before, so the processor can
    // load and judge it while the verdicts of the one before are still being worked out (a
    // stack makes each step wait for the last; measured slower).
    let Collector {
        found,
        found_len,
        skipped,
        queue,
    } = into;
    queue[0] = 0;
    let (mut next, mut queued) = (0, 1);
    while next < queued {
        // Up to BATCH queued groups judged before any of their verdicts is acted on: the
        // verdicts are long dependency chains, which a mispredicted branch between them
        // would discard (measured).
        let batch = (queued - next).min(BATCH);
        let mut codes = [[UNSETTLED; 4]; BATCH];
        for (j, codes) in codes.iter_mut().enumerate().take(batch) {
            *codes = verdicts(&groups[queue[next + j] as usize]);
        }
        if *found_len + SLACK > found.len() {
            found.resize(found.len() * 2 + SLACK, (0, 0));
        }
        for (j, codes) in codes.iter().enumerate().take(batch) {
            let at = queue[next + j] as usize;
            let group = &groups[at];
            for k in 0..group.count as usize {
                skipped[at][k][codes[k] as usize] += 1;
                let (unsettled, leaf) = (codes[k] == UNSETTLED, group.tiles[k] != NOT_A_LEAF);
                queue[queued] = group.children[k];
                queued += usize::from(unsettled & !leaf);
                found[*found_len] = (group.tiles[k], triangle);
                *found_len += usize::from(unsettled & leaf);
            }
        }
        next += batch;
    }
}

/// How many groups [`descend`] judges before acting on their verdicts.
const BATCH: usize = 4;

#[cfg(test)]
mod tests {
    use super::super::test_rng::Rng;
    use super::super::{RayBox, Verdict};
    use super::*;
    use crate::core::alu;
    use crate::machine::cull::TriangleConstants;

    /// A random triangle and a small box of rays, with the verdicts the exact integers and
    /// the double-precision kernels give for it (`None` when the forms are not narrow).
    fn case(rng: &mut Rng) -> Option<(Option<Verdict>, u8, Option<u8>)> {
        let size = [8, 14, 18, 22][(rng.next() % 4) as usize];
        let (e1, e2) = (rng.vec(size), rng.vec(size));
        let t = rng.vec(20);
        let k = TriangleConstants {
            e1,
            e2,
            t,
            q: alu::cross(t, e1),
            h1: 0,
        };
        let ray = rng.vec(18);
        let spread = [0, 4, 10, 14][(rng.next() % 4) as usize];
        let mut rays = RayBox::EMPTY;
        rays.add(ray);
        rays.add(std::array::from_fn(|i| {
            (ray[i] as i32).wrapping_add(rng.raw(spread.max(1)) / 2) as u32
        }));
        let forms = Forms::new(&k, &rays)?;
        if !forms.narrow(&rays) {
            return None;
        }
        let node = Node {
            rays,
            around: rays.around(),
            kind: NodeKind::Leaf(0),
        };
        let group = Group::new(std::slice::from_ref(&node), &[0]);
        let float = FloatForms::new(&forms);
        let portable = verdicts_portable(&float, &group)[0];
        #[cfg(target_arch = "x86_64")]
        let vector = std::arch::is_x86_feature_detected!("avx2")
            // SAFETY: the CPU has AVX2, checked just before.
            .then(|| unsafe { avx2_verdicts(&float, &group) }[0]);
        #[cfg(not(target_arch = "x86_64"))]
        let vector = None;
        Some((forms.verdict(&node.around), portable, vector))
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2_verdicts(forms: &FloatForms, group: &Group) -> [u8; 4] {
        avx2::verdicts(forms, group)
    }

    /// Every claim of the double-precision verdict is the exact verdict's (the same exit,
    /// or a rejection), the vector kernel agrees with the lane-by-lane one exactly, and
    /// the cases reach every verdict.
    #[test]
    fn float_verdicts_claim_only_what_the_exact_one_does() {
        let mut rng = Rng(0x5EED_0F7E_1A00);
        let mut seen = [0u32; 5];
        let mut unsettled_by_float_only = 0;
        for _ in 0..400_000 {
            let Some((exact, float, vector)) = case(&mut rng) else {
                continue;
            };
            if let Some(vector) = vector {
                assert_eq!(vector, float, "AVX2 and portable kernels differ");
            }
            seen[float as usize] += 1;
            match (exact, float) {
                (_, UNSETTLED) => unsettled_by_float_only += u32::from(exact.is_some()),
                (Some(Verdict::Exit(exit)), code) if code < REJECTED => {
                    assert_eq!(code, Verdict::Exit(exit).code())
                }
                (Some(_), REJECTED) => {}
                (exact, code) => panic!("float claims {code}, exact says {exact:?}"),
            }
        }
        assert!(seen.iter().all(|&n| n > 100), "verdicts reached: {seen:?}");
        // The margin costs little: few verdicts the exact spans settle are left open.
        let settled: u32 = seen[1..].iter().sum();
        assert!(
            unsettled_by_float_only * 100 < settled,
            "{unsettled_by_float_only} of {settled}"
        );
    }
}
