//! The tile test in 64-bit lanes, words zero-extended, one body for any [`Lanes`] width.
//! A scaled product is kept biased by 2^45: for an exact multiplicand a, |a·b| < 2^62, so
//! a·b + 2^62 (+ 2^17 − 1 when negative: truncation toward zero) is non-negative and a
//! logical shift by 17 gives the arithmetic one plus 2^45. Sums drop the biases before
//! [`alu::pack`]'s bit selection.
//!
//! Every function here is `unsafe` for one reason: it must run inside an entry point
//! compiled for `L`'s features ([`compute_avx2`], [`compute_avx512`]) on a CPU that has
//! them.

use super::{TileVerdicts, EXIT_COSTS, TILE_PIXELS};
use crate::emu::core::alu::{self, Vec3};
use crate::emu::lanes::{biased_product, Avx2, Avx512, Lanes, BIAS};
use crate::emu::machine::cull::{Culler, TriangleConstants};

/// A word, zero-extended, in every lane.
#[inline(always)]
unsafe fn splat<L: Lanes>(x: u32) -> L {
    L::splat(i64::from(x))
}

/// [`biased_product`] where the product's sign is known beforehand: `offset` is 2^62, plus
/// 2^17 − 1 when a and b have different signs. (Where a product is 0 its signs may differ,
/// but 0 + 2^17 − 1 shifts to the same 0: the offset may be chosen by the operands' signs.)
#[inline(always)]
unsafe fn biased_product_with<L: Lanes>(a: L, b: L, offset: L) -> L {
    a.mul32(b).add(offset).shr::<17>()
}

/// One vector of rays (sign-extended) and, per component, the offset of
/// [`biased_product_with`] for a constant factor of either sign: `[≥ 0, < 0]`.
pub(super) struct RayVector<L> {
    ray: [L; 3],
    offsets: [[L; 2]; 3],
}

impl<L: Lanes> RayVector<L> {
    #[inline(always)]
    pub(super) unsafe fn new(ray: [L; 3]) -> RayVector<L> {
        RayVector {
            ray,
            offsets: [offsets(ray[0]), offsets(ray[1]), offsets(ray[2])],
        }
    }
}

/// [`RayVector::offsets`] of one component.
#[inline(always)]
unsafe fn offsets<L: Lanes>(component: L) -> [L; 2] {
    let (same, different) = (L::splat(1 << 62), L::splat((1 << 62) + 0x1_FFFF));
    let negative = L::splat(0).gt(component);
    [
        same.select(negative, different),
        different.select(negative, same),
    ]
}

/// Which of [`RayVector::offsets`] goes with a constant factor `word`.
#[inline(always)]
fn sign_of(word: u32) -> usize {
    (word >> 31) as usize
}

/// alu::pack, per lane: the result's low 32 bits, zero above.
#[inline(always)]
unsafe fn pack<L: Lanes>(r: L) -> L {
    let sign = r.shr::<63>().shl::<31>();
    sign.or(r.and(L::splat(0x7FFF_FFFF)))
}

/// alu::cross_exact(ray, b) for a constant `b` (`words`, spread in `b`).
#[inline(always)]
unsafe fn cross_ray<L: Lanes>(ray: &RayVector<L>, b: &[L; 3], words: Vec3) -> [L; 3] {
    // No closure: it would not be compiled for L's features.
    [
        pack(ray_product(ray, 1, b, words, 2).sub(ray_product(ray, 2, b, words, 1))),
        pack(ray_product(ray, 2, b, words, 0).sub(ray_product(ray, 0, b, words, 2))),
        pack(ray_product(ray, 0, b, words, 1).sub(ray_product(ray, 1, b, words, 0))),
    ]
}

/// [`biased_product`] of the ray's component `i` and the constant's component `j`.
#[inline(always)]
unsafe fn ray_product<L: Lanes>(
    ray: &RayVector<L>,
    i: usize,
    b: &[L; 3],
    words: Vec3,
    j: usize,
) -> L {
    biased_product_with(ray.ray[i], b[j], ray.offsets[i][sign_of(words[j])])
}

/// alu::dot_exact(q, ray) for a constant `q` (`words`, spread in `q`).
#[inline(always)]
unsafe fn dot_ray<L: Lanes>(q: &[L; 3], words: Vec3, ray: &RayVector<L>) -> L {
    let sum = ray_product(ray, 0, q, words, 0)
        .add(ray_product(ray, 1, q, words, 1))
        .add(ray_product(ray, 2, q, words, 2));
    pack(sum.sub(L::splat(3 * BIAS)))
}

/// alu::dot_exact(a, b) for exact multiplicands `a`.
#[inline(always)]
unsafe fn dot<L: Lanes>(a: &[L; 3], b: &[L; 3]) -> L {
    let sum = biased_product(a[0], b[0])
        .add(biased_product(a[1], b[1]))
        .add(biased_product(a[2], b[2]));
    pack(sum.sub(L::splat(3 * BIAS)))
}

/// Per lane, whether a 32-bit word (zero above) is not an alu::exact_multiplicand.
#[inline(always)]
unsafe fn inexact_multiplicand<L: Lanes>(w: L) -> L::Mask {
    let shifted = w.add(L::splat(0x5555_5555)).and(L::splat(0xFFFF_FFFF));
    shifted.gt(L::splat(0xAAAA_AAAA))
}

/// Per lane, whether the 32-bit words x and y have different signs.
#[inline(always)]
unsafe fn signs_differ<L: Lanes>(x: L, y: L) -> L::Mask {
    x.xor(y).gt(L::splat(0x7FFF_FFFF))
}

/// A 32-bit word (zero above) sign-extended to its lane.
#[inline(always)]
pub(super) unsafe fn sign_extend<L: Lanes>(w: L) -> L {
    let sign = L::splat(0x8000_0000);
    w.xor(sign).sub(sign)
}

/// 2^52: below it, a double's low mantissa bits are an integer's.
const MAGIC: f64 = 4_503_599_627_370_496.0;

/// Per lane, a value below 2^52 as a double (exactly).
#[inline(always)]
unsafe fn to_f64<L: Lanes>(x: L) -> L::Float {
    let magic = L::splat_f(MAGIC);
    L::sub_f(x.or(L::from_f(magic)).as_f(), magic)
}

/// alu::div per lane for 32-bit words (zero above), the way alu::div_by_float computes
/// it: |a|·2^17 and |b| are exact doubles, the truncated quotient is the integer one,
/// and its remainder modulo 2^31 is exact too. `b_magnitude` is |b| as a double.
#[inline(always)]
unsafe fn div<L: Lanes>(a: L, b: L, b_magnitude: L::Float) -> L {
    const TWO_31: f64 = 2_147_483_648.0;
    let dividend = L::mul_f(to_f64(a.abs32()), L::splat_f(131_072.0));
    let q = L::trunc_f(L::div_f(dividend, b_magnitude));
    let wraps = L::floor_f(L::mul_f(q, L::splat_f(1.0 / TWO_31)));
    let low = L::sub_f(q, L::mul_f(wraps, L::splat_f(TWO_31)));
    let low = L::from_f(L::add_f(low, L::splat_f(MAGIC))).and(L::splat(0xFFFF_FFFF));
    // A zero divisor gives the divider's all-ones 28-bit quotient.
    let quotient = low.select(L::is_zero_f(b_magnitude), L::splat(0x0FFF_FFFF));
    let negated = L::splat(0).sub(quotient).and(L::splat(0xFFFF_FFFF));
    quotient.select(signs_differ(a, b), negated)
}

/// A vector of words, each in every lane of its own vector.
#[inline(always)]
unsafe fn spread<L: Lanes>(v: Vec3) -> [L; 3] {
    [splat(v[0]), splat(v[1]), splat(v[2])]
}

/// One candidate's constants, each spread over the lanes.
pub(super) struct Splat<L> {
    e1: [L; 3],
    e2: [L; 3],
    t: [L; 3],
    q: [L; 3],
    /// E2 and Q as words, for the signs [`RayVector::offsets`] are chosen by.
    e2_words: Vec3,
    q_words: Vec3,
}

impl<L: Lanes> Splat<L> {
    #[inline(always)]
    pub(super) unsafe fn new(k: &TriangleConstants) -> Splat<L> {
        Splat {
            e1: spread(k.e1),
            e2: spread(k.e2),
            t: spread(k.t),
            q: spread(k.q),
            e2_words: k.e2,
            q_words: k.q,
        }
    }
}

/// Δ, H2 and H3 of one candidate per lane's ray (cull::Culler::reject_state's), and the
/// lanes whose P is beyond the multiplier's exact range, where they are not.
#[inline(always)]
pub(super) unsafe fn biu_values<L: Lanes>(k: &Splat<L>, ray: &RayVector<L>) -> ([L; 3], L::Mask) {
    let p = cross_ray(ray, &k.e2, k.e2_words);
    let untested = L::mask_or(
        L::mask_or(inexact_multiplicand(p[0]), inexact_multiplicand(p[1])),
        inexact_multiplicand(p[2]),
    );
    (
        [dot(&p, &k.e1), dot(&p, &k.t), dot_ray(&k.q, k.q_words, ray)],
        untested,
    )
}

/// cull::exact_verdict per lane: the lanes BIU rejects, and what each of them costs.
#[inline(always)]
pub(super) unsafe fn verdicts<L: Lanes>(h2: L, h3: L, delta: L) -> (L::Mask, L) {
    let d = to_f64(delta.abs32());
    let (u, v) = (div(h2, delta, d), div(h3, delta, d));
    // JGEX u, 0 and JGEX v, 0 fail on a negative word; JLEX R2, 1.0 on R2 > 1.0.
    let (u_negative, v_negative) = (u.gt(L::splat(0x7FFF_FFFF)), v.gt(L::splat(0x7FFF_FFFF)));
    let r2 = pack(sign_extend(u).add(sign_extend(v)));
    let beyond_one = sign_extend(r2).gt(L::splat(1 << 17));
    let exit_u = u_negative;
    let exit_v = L::mask_andnot(u_negative, v_negative);
    let exit_sum = L::mask_andnot(L::mask_or(u_negative, v_negative), beyond_one);
    // The exits exclude each other.
    let costs = L::splat(0)
        .select(exit_u, L::splat(EXIT_COSTS[0] as i64))
        .select(exit_v, L::splat(EXIT_COSTS[1] as i64))
        .select(exit_sum, L::splat(EXIT_COSTS[2] as i64));
    (L::mask_or(L::mask_or(exit_u, exit_v), exit_sum), costs)
}

/// One candidate's lanes: (open, untested, what each rejecting lane costs), as
/// cull::exact_verdict decides them. Lanes whose P is beyond the multiplier's exact range
/// are left open and untested.
#[inline(always)]
unsafe fn lanes<L: Lanes>(k: &Splat<L>, ray: &RayVector<L>) -> (L::Mask, L::Mask, L) {
    let ([delta, h2, h3], untested) = biu_values(k, ray);
    let (rejected, cost) = verdicts(h2, h3, delta);
    let rejected = L::mask_andnot(untested, rejected);
    (
        L::mask_not(rejected),
        untested,
        L::splat(0).select(rejected, cost),
    )
}

/// [`TileVerdicts::compute`] in vectors of `L::LANES` pixels, every candidate's constants
/// spread once for the tile.
#[inline(always)]
unsafe fn compute<L: Lanes>(
    out: &mut TileVerdicts,
    culler: &Culler,
    candidates: &[u32],
    rays: &[Vec3; TILE_PIXELS],
) {
    const MAX_VECTORS: usize = TILE_PIXELS / 4;
    let vectors = TILE_PIXELS / L::LANES;
    // Rays are exact multiplicands (Accel::build checks), sign-extended per lane.
    let mut ray = [[L::splat(0); 3]; MAX_VECTORS];
    for (vector, ray) in ray.iter_mut().take(vectors).enumerate() {
        for (i, lane) in ray.iter_mut().enumerate() {
            let mut words = [0i64; 8];
            for (l, word) in words.iter_mut().take(L::LANES).enumerate() {
                *word = i64::from(rays[vector * L::LANES + l][i] as i32);
            }
            *lane = L::from_lanes(&words);
        }
    }
    let ray = [
        RayVector::new(ray[0]),
        RayVector::new(ray[1]),
        RayVector::new(ray[2]),
        RayVector::new(ray[3]),
    ];
    let constants = culler.constants();
    let mut skipped = [L::splat(0); MAX_VECTORS];
    let mut costs = [0u64; 8];
    for (position, &index) in candidates.iter().enumerate() {
        let k = &constants[index as usize];
        let exact = alu::exact_multiplicands(k.q);
        let splat = Splat::new(k);
        for vector in 0..vectors {
            let (open, untested, open_mask) = if exact {
                let (open, untested, cost) = lanes(&splat, &ray[vector]);
                skipped[vector] = skipped[vector].add(cost);
                (L::bits(open), L::bits(untested), Some(open))
            } else {
                let all = (1 << L::LANES) - 1;
                (all, all, None)
            };
            if open != 0 {
                skipped[vector].to_lanes(&mut costs);
                let first = vector * L::LANES;
                out.push_open(first, &costs[..L::LANES], position, open, untested);
                skipped[vector] = match open_mask {
                    Some(open) => skipped[vector].select(open, L::splat(0)),
                    None => L::splat(0),
                };
            }
        }
    }
    for (vector, skipped) in skipped.iter().take(vectors).enumerate() {
        skipped.to_lanes(&mut costs);
        let first = vector * L::LANES;
        out.tail_instructions[first..first + L::LANES].copy_from_slice(&costs[..L::LANES]);
    }
}

/// [`TileVerdicts::compute`] with AVX2: a vector per tile row.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn compute_avx2(
    out: &mut TileVerdicts,
    culler: &Culler,
    candidates: &[u32],
    rays: &[Vec3; TILE_PIXELS],
) {
    compute::<Avx2>(out, culler, candidates, rays)
}

/// [`TileVerdicts::compute`] with AVX-512: a vector per two tile rows.
///
/// # Safety
/// The CPU must have AVX-512F.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn compute_avx512(
    out: &mut TileVerdicts,
    culler: &Culler,
    candidates: &[u32],
    rays: &[Vec3; TILE_PIXELS],
) {
    compute::<Avx512>(out, culler, candidates, rays)
}

#[cfg(test)]
mod tests {
    use super::super::tests as rows_tests;
    use super::*;
    use crate::emu::machine::cull::{exact_verdict, Exit};

    /// Words at the edges of the ALU's truncation, wrap and sign rules.
    const EDGES: [u32; 18] = [
        0,
        1,
        0xFFFF_FFFF,
        2,
        0x1_FFFF,
        0x2_0000,
        0x2_0001,
        0xFFFE_0001,
        0xFFFE_0000,
        0xFFFD_FFFF,
        0x1_0000,
        0x3FFF,
        0x4000,
        0x5555_5555,
        0xAAAA_AAAB,
        0x4000_0000,
        0x7FFF_FFFF,
        0x8000_0000,
    ];

    /// One word per lane, zero-extended (lanes past `words` repeat its last).
    unsafe fn from_words<L: Lanes>(words: &[u32]) -> L {
        let lane = |l: usize| i64::from(words[l.min(words.len() - 1)]);
        L::from_lanes(&std::array::from_fn::<i64, 8, _>(lane))
    }

    unsafe fn words_of<L: Lanes>(v: L) -> [u64; 8] {
        let mut out = [0; 8];
        v.to_lanes(&mut out);
        out
    }

    /// The vector verdict is cull::exact_verdict's on every combination of edge words,
    /// and on numerators at the wrap of a nonzero Δ's quotients.
    ///
    /// # Safety
    /// The CPU must have `L`'s features.
    unsafe fn verdicts_at_the_edges<L: Lanes>() {
        let mut cases = Vec::new();
        for &delta in &EDGES {
            for &h2 in &EDGES {
                for &h3 in &EDGES {
                    cases.push((h2, h3, delta));
                }
            }
            let d = alu::magnitude32(delta);
            for shift in [14u32, 13] {
                let wrap = d.wrapping_shl(shift);
                for h in [wrap.wrapping_sub(1), wrap, wrap.wrapping_add(1)] {
                    cases.push((h, alu::ONE, delta));
                    cases.push((h, h.wrapping_neg(), delta));
                    cases.push((0, h, delta));
                }
            }
        }
        for chunk in cases.chunks(L::LANES) {
            let words =
                |pick: fn(&(u32, u32, u32)) -> u32| chunk.iter().map(pick).collect::<Vec<_>>();
            let (h2, h3, delta) = (words(|c| c.0), words(|c| c.1), words(|c| c.2));
            let (rejected, cost) =
                verdicts::<L>(from_words(&h2), from_words(&h3), from_words(&delta));
            let (rejected, cost) = (L::bits(rejected), words_of(cost));
            for (lane, &(h2, h3, delta)) in chunk.iter().enumerate() {
                let want = exact_verdict(h2, h3, delta);
                let got = (rejected >> lane & 1 == 1).then_some(cost[lane]);
                assert_eq!(
                    got,
                    want.map(Exit::instructions),
                    "{h2:#x} {h3:#x} {delta:#x}"
                );
            }
        }
    }

    /// Δ, H2 and H3 are the ALU's, and the lanes beyond the exact range are the ones
    /// marked, for edge rays and constants; the whole tile test, vector and lane by lane,
    /// gives BIU's verdicts.
    ///
    /// # Safety
    /// The CPU must have `L`'s features.
    unsafe fn products_at_the_edges<L: Lanes>(
        compute: unsafe fn(&mut TileVerdicts, &Culler, &[u32], &[Vec3; TILE_PIXELS]),
    ) {
        let exact: Vec<u32> = EDGES
            .into_iter()
            .filter(|&w| alu::exact_multiplicand(w))
            .collect();
        for (n, &a) in EDGES.iter().enumerate() {
            for &b in &EDGES {
                let k = TriangleConstants {
                    e1: [a, b, EDGES[(n + 3) % EDGES.len()]],
                    e2: [b, a, 0x1_FFFF],
                    t: [a, 1, b],
                    q: [
                        exact[n % exact.len()],
                        0xFFFE_0001,
                        exact[(n + 5) % exact.len()],
                    ],
                    h1: 0,
                };
                let rays: [Vec3; TILE_PIXELS] = std::array::from_fn(|l| {
                    [
                        exact[l % exact.len()],
                        exact[(l + n) % exact.len()],
                        exact[(l * 3 + 1) % exact.len()],
                    ]
                });
                let vector = &rays[..L::LANES];
                // Sign-extended, as compute loads rays.
                let ray = [0, 1, 2].map(|i| {
                    sign_extend::<L>(from_words(&vector.iter().map(|r| r[i]).collect::<Vec<_>>()))
                });
                let (values, untested) = biu_values(&Splat::new(&k), &RayVector::new(ray));
                let (values, untested) = (values.map(|v| words_of(v)), L::bits(untested));
                for (lane, &r) in vector.iter().enumerate() {
                    let p = alu::cross(r, k.e2);
                    let what = format!("{a:#x} {b:#x} lane {lane}");
                    assert_eq!(
                        untested >> lane & 1 == 1,
                        !alu::exact_multiplicands(p),
                        "{what}"
                    );
                    assert_eq!(values[2][lane], u64::from(alu::dot(k.q, r)), "{what}");
                    if alu::exact_multiplicands(p) {
                        assert_eq!(values[0][lane], u64::from(alu::dot(p, k.e1)), "{what}");
                        assert_eq!(values[1][lane], u64::from(alu::dot(p, k.t)), "{what}");
                    }
                }
                let culler = Culler::from_constants(vec![k; 3]);
                let candidates = [0, 2];
                let (mut tile, mut portable) = (TileVerdicts::default(), TileVerdicts::default());
                compute(&mut tile, &culler, &candidates, &rays);
                portable.compute_portable(&culler, &candidates, &rays);
                for (lane, &ray) in rays.iter().enumerate() {
                    let want = rows_tests::expected(&culler, &candidates, ray);
                    for (path, rows) in [("vector", &tile), ("portable", &portable)] {
                        assert_eq!(
                            rows_tests::resolved(rows, &culler, &candidates, ray, lane),
                            want,
                            "{path}: {a:#x} {b:#x} lane {lane}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    #[cfg_attr(not(avx2_host), ignore = "needs AVX2")]
    fn avx2_verdicts_are_the_exact_ones_at_the_edges() {
        assert!(Avx2::available(), "no AVX2");
        // SAFETY: the CPU has AVX2, checked above.
        unsafe { verdicts_at_the_edges::<Avx2>() }
    }

    #[test]
    #[cfg_attr(not(avx512_host), ignore = "needs AVX-512F")]
    fn avx512_verdicts_are_the_exact_ones_at_the_edges() {
        assert!(Avx512::available(), "no AVX-512F");
        // SAFETY: the CPU has AVX-512F, checked above.
        unsafe { verdicts_at_the_edges::<Avx512>() }
    }

    #[test]
    #[cfg_attr(not(avx2_host), ignore = "needs AVX2")]
    fn avx2_products_are_the_alus_at_the_edges() {
        assert!(Avx2::available(), "no AVX2");
        // SAFETY: the CPU has AVX2, checked above.
        unsafe { products_at_the_edges::<Avx2>(compute_avx2) }
    }

    #[test]
    #[cfg_attr(not(avx512_host), ignore = "needs AVX-512F")]
    fn avx512_products_are_the_alus_at_the_edges() {
        assert!(Avx512::available(), "no AVX-512F");
        // SAFETY: the CPU has AVX-512F, checked above.
        unsafe { products_at_the_edges::<Avx512>(compute_avx512) }
    }
}
