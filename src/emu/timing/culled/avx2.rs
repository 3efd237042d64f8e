//! [`RejectTiming::row`] four triangles at a time, one per 64-bit lane of AVX2 vectors,
//! for a ray whose lanes are exact multiplicands: every product of BIU's CROSS and DOTs
//! is then `alu::exact_scaled_product` (a signed 32 × 32-bit product, truncated toward
//! zero), provided the other multiplicand, P for Δ and H2 and Q for H3, is exact too.
//! A lane where it is not, or where the faithful BIU's verdict needs its divisions
//! (`cull::verdict`'s exact path), gets the scalar entry ([`RejectTiming::scalar_entry`]);
//! so do the triangles after the last whole four. Everything else is decided with masks:
//! the verdict, the exit, and which of the three DIVs are long.
//!
//! Each product lies within 2^62, so a DOT's three truncated products, each within 2^45,
//! sum without wrapping in 64 bits, as in `alu::dot`; AVX2 has no 64-bit arithmetic
//! shift, so each product is shifted with 2^63 added (a logical shift then gives the
//! quotient plus 2^46, taken off the sum).

use std::arch::x86_64::*;

use super::{RejectTiming, RowEntry, ROW_CODE_SHIFT};
use crate::emu::core::alu::Vec3;
use crate::emu::machine::cull::{
    Biu, ConstantBlock, Culler, FIXED_FLAT, FIXED_TOLERANCE, FIXED_TOLERANCE_G1,
};
use crate::emu::timing::cost::div_cycles;

/// Four lanes of 64 bits: one triangle each.
type Lanes = __m256i;

/// An ALU word in each lane, sign-extended, and its sign (all ones where negative).
#[derive(Clone, Copy)]
struct Word {
    value: Lanes,
    negative: Lanes,
}

/// What a row entry is made of, in lanes: per exit code (1..=4), the code and the exit's
/// path with three short DIVs; and what a long DIV adds to a short one.
struct EntryParts {
    base: [Lanes; 4],
    long_extra: Lanes,
}

/// The rows' entries for `culler`'s triangles under `ray` (its lanes exact
/// multiplicands), into the empty `row`.
#[target_feature(enable = "avx2")]
pub(super) fn row(timing: &RejectTiming, culler: &Culler, ray: Vec3, row: &mut Vec<RowEntry>) {
    // SAFETY: this function runs only where the CPU has AVX2.
    unsafe { entries_into(timing, culler, ray, row) };
}

/// [`row`] where the CPU has AVX-512VL too: the same code, which the compiler then
/// writes with AVX-512's instructions on the same four lanes (compares into mask
/// registers, three-input logic, 64-bit shifts and absolute values): the rows took 18%
/// less time on an Intel Xeon.
#[target_feature(enable = "avx2,avx512f,avx512vl")]
pub(super) fn row_avx512vl(
    timing: &RejectTiming,
    culler: &Culler,
    ray: Vec3,
    row: &mut Vec<RowEntry>,
) {
    // SAFETY: this function runs only where the CPU has AVX2.
    unsafe { entries_into(timing, culler, ray, row) };
}

/// The body of [`row`] and [`row_avx512vl`], inlined into each (a function compiled for
/// AVX2 alone would be called from both as it is): only for a CPU with AVX2.
#[inline(always)]
unsafe fn entries_into(timing: &RejectTiming, culler: &Culler, ray: Vec3, row: &mut Vec<RowEntry>) {
    let constants = culler.constants();
    let whole = constants.len() / 4 * 4;
    let (short, long) = (div_cycles([0; 3], [0; 3]), div_cycles([1; 3], [1; 3]));
    let parts = EntryParts {
        base: std::array::from_fn(|c| {
            let code = (c as i64 + 1) << ROW_CODE_SHIFT;
            splat(code | i64::from(timing.cycles[c] + 3 * short))
        }),
        long_extra: splat(i64::from(long - short)),
    };
    let ray_lanes = ray.map(|r| splat(i64::from(r as i32)));
    row.resize(whole, 0);
    let blocks = row.chunks_exact_mut(4).enumerate();
    match timing.biu {
        Biu::Faithful => {
            for ((block, out), k) in blocks.zip(culler.blocks()) {
                let (lanes, scalar) = faithful_block(k, ray_lanes, &parts);
                store_entries(lanes, scalar, out, |j| {
                    timing.scalar_entry(culler, 4 * block + j, ray)
                });
            }
        }
        Biu::Fixed => {
            for ((block, out), k) in blocks.zip(culler.blocks()) {
                let (lanes, scalar) = fixed_block(k, ray_lanes, &parts);
                store_entries(lanes, scalar, out, |j| {
                    timing.scalar_entry(culler, 4 * block + j, ray)
                });
            }
        }
    }
    timing.scalar_row(culler, ray, whole, row);
}

/// Four entries into `out`, those of the lanes set in the mask `scalar` from `entry`.
#[inline]
#[target_feature(enable = "avx2")]
fn store_entries(
    lanes: Lanes,
    scalar: Lanes,
    out: &mut [RowEntry],
    entry: impl Fn(usize) -> RowEntry,
) {
    // Each lane's entry (below 2^16) to one 16-bit word, in lane order.
    let dwords = _mm256_permutevar8x32_epi32(lanes, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    let low = _mm256_castsi256_si128(dwords);
    let words = _mm_cvtsi128_si64(_mm_packus_epi32(low, low)) as u64;
    for (j, slot) in out.iter_mut().enumerate() {
        *slot = (words >> (16 * j)) as RowEntry;
    }
    let mut left = _mm256_movemask_pd(_mm256_castsi256_pd(scalar)) as u32;
    while left != 0 {
        let j = left.trailing_zeros() as usize;
        out[j] = entry(j);
        left &= left - 1;
    }
}

/// The faithful BIU's entries of four triangles, and the lanes left to the scalar entry
/// (inlined as [`entries_into`] is: only for a CPU with AVX2).
#[inline(always)]
unsafe fn faithful_block(k: &ConstantBlock, ray: [Lanes; 3], parts: &EntryParts) -> (Lanes, Lanes) {
    let (p, p_inexact) = ray_cross_e2(k, ray);
    let p = [p[0].value, p[1].value, p[2].value];
    let delta = dot(p, triple_lanes(&k.e1));
    let h2 = dot(p, triple_lanes(&k.t));
    let (q, q_inexact) = multiplicands(triple_lanes(&k.q));
    let h3 = dot(q, ray);
    let (exits, undecided) = faithful_exits(delta, h2, h3);
    let h1 = word_lanes(&k.h1);
    let lanes = entries(parts, exits, delta, [h1, h2.value, h3.value]);
    (lanes, or(or(p_inexact, q_inexact), undecided))
}

/// The fixed BIU's entries of four triangles, and the lanes left to the scalar entry
/// (inlined as [`entries_into`] is: only for a CPU with AVX2).
#[inline(always)]
unsafe fn fixed_block(k: &ConstantBlock, ray: [Lanes; 3], parts: &EntryParts) -> (Lanes, Lanes) {
    let (q, q_inexact) = multiplicands(triple_lanes(&k.q));
    let h3 = dot(q, ray);
    let g2 = dot(ray, triple_lanes(&k.c2));
    let delta_prime = dot(ray, triple_lanes(&k.c_delta));
    let exits = fixed_exits(g2, h3, delta_prime);
    let rejected = or(or(exits[0], exits[1]), or(exits[2], exits[3]));
    // Accepted triangles' entries are 0 whatever P is.
    let (p, p_inexact) = ray_cross_e2(k, ray);
    let p = [p[0].value, p[1].value, p[2].value];
    let delta = dot(p, triple_lanes(&k.e1));
    let h2 = dot(p, triple_lanes(&k.t));
    let h1 = word_lanes(&k.h1);
    let lanes = entries(parts, exits, delta, [h1, h2.value, h3.value]);
    (lanes, or(q_inexact, _mm256_and_si256(p_inexact, rejected)))
}

/// P = ray × E2 of four triangles, and the lanes where a lane of P is not an exact
/// multiplicand.
#[inline]
#[target_feature(enable = "avx2")]
fn ray_cross_e2(k: &ConstantBlock, ray: [Lanes; 3]) -> ([Word; 3], Lanes) {
    let p = cross_lanes(ray, triple_lanes(&k.e2));
    let inexact = or(or(inexact(p[0]), inexact(p[1])), inexact(p[2]));
    (p, inexact)
}

/// CROSS of two triples of lanes (`a` exact multiplicands).
#[inline]
#[target_feature(enable = "avx2")]
fn cross_lanes(a: [Lanes; 3], b: [Lanes; 3]) -> [Word; 3] {
    let p = |i: usize, j: usize| offset_product(a[i], b[j]);
    [
        pack(_mm256_sub_epi64(p(1, 2), p(2, 1))),
        pack(_mm256_sub_epi64(p(2, 0), p(0, 2))),
        pack(_mm256_sub_epi64(p(0, 1), p(1, 0))),
    ]
}

/// Three lanes of words as multiplicands, and where any is not exact.
#[inline]
#[target_feature(enable = "avx2")]
fn multiplicands(v: [Lanes; 3]) -> ([Lanes; 3], Lanes) {
    let word = |value| Word {
        value,
        negative: _mm256_cmpgt_epi64(_mm256_setzero_si256(), value),
    };
    let any = or(
        or(inexact(word(v[0])), inexact(word(v[1]))),
        inexact(word(v[2])),
    );
    (v, any)
}

/// The faithful BIU's exits (a mask per [`crate::emu::machine::cull::Exit::code`] 1..=3,
/// the fourth empty) as `cull::verdict` decides them without dividing, and the lanes
/// where it divides (Δ = 0, a quotient that may wrap, a sum near 1.0).
#[inline]
#[target_feature(enable = "avx2")]
fn faithful_exits(delta: Word, h2: Word, h3: Word) -> ([Lanes; 4], Lanes) {
    let gt = |a, b| _mm256_cmpgt_epi64(a, b);
    let d = magnitude(delta);
    // Below d · 2^14 a quotient cannot wrap; d = 0 fails this for every H.
    let wrap = _mm256_slli_epi64::<14>(d);
    let (u_magnitude, v_magnitude) = (magnitude(h2), magnitude(h3));
    let (u_fits, v_fits) = (gt(wrap, u_magnitude), gt(wrap, v_magnitude));
    let u_negative = _mm256_xor_si256(h2.negative, delta.negative);
    let v_negative = _mm256_xor_si256(h3.negative, delta.negative);
    let (a, b) = (
        _mm256_slli_epi64::<17>(u_magnitude),
        _mm256_slli_epi64::<17>(v_magnitude),
    );
    // A negative quotient: a negative sign and |H|·2^17 >= d.
    let u_exit = _mm256_andnot_si256(gt(d, a), u_negative);
    let v_exit = _mm256_andnot_si256(gt(d, b), v_negative);
    let sum = _mm256_add_epi64(
        _mm256_andnot_si256(u_negative, a),
        _mm256_andnot_si256(v_negative, b),
    );
    let d_one = _mm256_add_epi64(_mm256_slli_epi64::<17>(d), d);
    let over = _mm256_andnot_si256(
        gt(_mm256_add_epi64(d_one, d), sum),
        gt(_mm256_slli_epi64::<31>(d), sum),
    );
    let accepted = gt(d_one, sum);
    // cull::verdict's order: U (where u fits), then V (where v fits), then the sum.
    let u = _mm256_and_si256(u_fits, u_exit);
    let past_u = _mm256_andnot_si256(u_exit, u_fits);
    let v = and3(past_u, v_fits, v_exit);
    let past_v = and3(past_u, v_fits, not(v_exit));
    // `over` and `accepted` exclude each other.
    let sum_exit = _mm256_and_si256(past_v, over);
    let decided = or(or(u, v), or(sum_exit, _mm256_and_si256(past_v, accepted)));
    let none = _mm256_setzero_si256();
    ([u, v, sum_exit, none], not(decided))
}

/// The fixed BIU's exits (a mask per code 1..=4: flat, g2, g3, g1) from its edge values
/// and orientation, as `cull::fixed_verdict` decides them: flat where |D'| <= 32 (either
/// side); then, with back-facing lanes (D' <= 0) failing a test where the value is above
/// its bound and front-facing ones where it is below minus the bound (the magnitude-equal
/// half of JGEX/JLEX only ever admits values the signed half admits too), g2 and g3
/// against 14 and g1 = D' - (g2 + g3) against 28.
#[inline]
#[target_feature(enable = "avx2")]
fn fixed_exits(g2: Word, g3: Word, delta_prime: Word) -> [Lanes; 4] {
    let g1 = sub(delta_prime, add(g2, g3));
    let front = _mm256_cmpgt_epi64(delta_prime.value, _mm256_setzero_si256());
    // Front-facing lanes negated: every test becomes "above the bound fails".
    let toward = |w: Word| _mm256_sub_epi64(_mm256_xor_si256(w.value, front), front);
    let fails = |w: Word, bound: u32| _mm256_cmpgt_epi64(toward(w), splat(i64::from(bound)));
    let flat = _mm256_cmpgt_epi64(splat(i64::from(FIXED_FLAT) + 1), magnitude(delta_prime));
    let g2_fails = _mm256_andnot_si256(flat, fails(g2, FIXED_TOLERANCE));
    let earlier = or(flat, g2_fails);
    let g3_fails = _mm256_andnot_si256(earlier, fails(g3, FIXED_TOLERANCE));
    let earlier = or(earlier, g3_fails);
    let g1_fails = _mm256_andnot_si256(earlier, fails(g1, FIXED_TOLERANCE_G1));
    [flat, g2_fails, g3_fails, g1_fails]
}

/// The entries of lanes leaving at the exits `exits` (one mask per code, disjoint; none:
/// 0), their DIVs dividing `dividends` by Δ: long where Δ is not 0 and |Δ| < |H|·2^17.
#[inline]
#[target_feature(enable = "avx2")]
fn entries(parts: &EntryParts, exits: [Lanes; 4], delta: Word, dividends: [Lanes; 3]) -> Lanes {
    let d = magnitude(delta);
    let divides = not(_mm256_cmpeq_epi64(d, _mm256_setzero_si256()));
    let mut base = _mm256_setzero_si256();
    for (exit, part) in exits.iter().zip(&parts.base) {
        base = or(base, _mm256_and_si256(*exit, *part));
    }
    let mut extra = _mm256_setzero_si256();
    for h in dividends {
        let long = _mm256_and_si256(divides, _mm256_cmpgt_epi64(shifted_magnitude(h), d));
        extra = _mm256_add_epi64(extra, _mm256_and_si256(long, parts.long_extra));
    }
    let rejected = or(or(exits[0], exits[1]), or(exits[2], exits[3]));
    _mm256_add_epi64(base, _mm256_and_si256(rejected, extra))
}

/// |h|·2^17 of sign-extended words `h`.
#[inline]
#[target_feature(enable = "avx2")]
fn shifted_magnitude(h: Lanes) -> Lanes {
    let negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), h);
    _mm256_slli_epi64::<17>(_mm256_sub_epi64(_mm256_xor_si256(h, negative), negative))
}

/// `alu::exact_scaled_product` of the low words of `a` and `b`, plus 2^46.
#[inline]
#[target_feature(enable = "avx2")]
fn offset_product(a: Lanes, b: Lanes) -> Lanes {
    let product = _mm256_mul_epi32(a, b);
    let negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), product);
    // 2^17 - 1 added to negative products rounds the shift toward zero; 2^63 added to
    // every product makes the logical shift an arithmetic one, offset by 2^46.
    let bias = _mm256_and_si256(or(negative, splat(i64::MIN)), splat(i64::MIN | 0x1_FFFF));
    _mm256_srli_epi64::<17>(_mm256_add_epi64(product, bias))
}

/// DOT of two triples of lanes (`a` exact multiplicands).
#[inline]
#[target_feature(enable = "avx2")]
fn dot(a: [Lanes; 3], b: [Lanes; 3]) -> Word {
    let sum = _mm256_add_epi64(
        _mm256_add_epi64(offset_product(a[0], b[0]), offset_product(a[1], b[1])),
        offset_product(a[2], b[2]),
    );
    pack(_mm256_sub_epi64(sum, splat(3 << 46)))
}

/// ADD of two words: `alu::pack` of the sum of their sign extensions.
#[inline]
#[target_feature(enable = "avx2")]
fn add(a: Word, b: Word) -> Word {
    pack(_mm256_add_epi64(a.value, b.value))
}

/// SUB of two words: `alu::pack` of the difference of their sign extensions.
#[inline]
#[target_feature(enable = "avx2")]
fn sub(a: Word, b: Word) -> Word {
    pack(_mm256_sub_epi64(a.value, b.value))
}

/// `alu::pack`: {r[63], r[30:0]}, sign-extended.
#[inline]
#[target_feature(enable = "avx2")]
fn pack(r: Lanes) -> Word {
    let low = splat(0x7FFF_FFFF);
    let negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), r);
    Word {
        value: or(_mm256_and_si256(r, low), _mm256_andnot_si256(low, negative)),
        negative,
    }
}

/// `alu::magnitude32` of sign-extended words.
#[inline]
#[target_feature(enable = "avx2")]
fn magnitude(w: Word) -> Lanes {
    _mm256_sub_epi64(_mm256_xor_si256(w.value, w.negative), w.negative)
}

/// Where a word is not an `alu::exact_multiplicand`: |w| above 0x5555_5555.
#[inline]
#[target_feature(enable = "avx2")]
fn inexact(w: Word) -> Lanes {
    _mm256_cmpgt_epi64(magnitude(w), splat(0x5555_5555))
}

/// One word of four triangles ([`ConstantBlock`]), sign-extended, one triangle per lane.
#[inline]
#[target_feature(enable = "avx2")]
fn word_lanes(words: &[i32; 4]) -> Lanes {
    // SAFETY: the load reads the 16 bytes of `words`.
    _mm256_cvtepi32_epi64(unsafe { _mm_loadu_si128(words.as_ptr().cast()) })
}

/// [`word_lanes`] of each word of a triple (written out: a closure handed to a function
/// without AVX2, such as `std::array::from_fn`, is not inlined here).
#[inline]
#[target_feature(enable = "avx2")]
fn triple_lanes(words: &[[i32; 4]; 3]) -> [Lanes; 3] {
    [
        word_lanes(&words[0]),
        word_lanes(&words[1]),
        word_lanes(&words[2]),
    ]
}

#[inline]
#[target_feature(enable = "avx2")]
fn splat(x: i64) -> Lanes {
    _mm256_set1_epi64x(x)
}

#[inline]
#[target_feature(enable = "avx2")]
fn or(a: Lanes, b: Lanes) -> Lanes {
    _mm256_or_si256(a, b)
}

#[inline]
#[target_feature(enable = "avx2")]
fn and3(a: Lanes, b: Lanes, c: Lanes) -> Lanes {
    _mm256_and_si256(_mm256_and_si256(a, b), c)
}

#[inline]
#[target_feature(enable = "avx2")]
fn not(a: Lanes) -> Lanes {
    _mm256_xor_si256(a, _mm256_set1_epi64x(-1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::alu;
    use crate::emu::machine::cull::{self, Exit};
    use proptest::prelude::*;

    /// Each lane's code from exit masks (0: none), or `None` where `undecided` is set;
    /// every lane in at most one mask.
    #[target_feature(enable = "avx2")]
    fn lane_codes(exits: [Lanes; 4], undecided: Lanes) -> [Option<u8>; 4] {
        let bits = |mask: Lanes| _mm256_movemask_pd(_mm256_castsi256_pd(mask));
        let (exits, undecided) = (exits.map(bits), bits(undecided));
        std::array::from_fn(|j| {
            let codes: Vec<u8> = (1..=4u8)
                .filter(|&code| exits[usize::from(code) - 1] >> j & 1 == 1)
                .collect();
            assert!(codes.len() <= 1, "lane {j} leaves at {codes:?}");
            (undecided >> j & 1 == 0).then(|| codes.first().copied().unwrap_or(0))
        })
    }

    /// Word `i` of each of four triples, as a [`ConstantBlock`] holds it.
    fn column(triples: &[Vec3; 4], i: usize) -> [i32; 4] {
        triples.map(|t| t[i] as i32)
    }

    /// Word `i` of four triples, one triple per lane.
    #[target_feature(enable = "avx2")]
    fn words(triples: &[Vec3; 4], i: usize) -> Word {
        let value = word_lanes(&column(triples, i));
        Word {
            value,
            negative: _mm256_cmpgt_epi64(_mm256_setzero_si256(), value),
        }
    }

    /// [`faithful_exits`] of four (H2, H3, Δ).
    #[target_feature(enable = "avx2")]
    fn faithful_codes(triples: [Vec3; 4]) -> [Option<u8>; 4] {
        let [h2, h3, delta] = [0, 1, 2].map(|i| words(&triples, i));
        let (exits, undecided) = faithful_exits(delta, h2, h3);
        lane_codes(exits, undecided)
    }

    /// [`fixed_exits`] of four (g2, g3, D').
    #[target_feature(enable = "avx2")]
    fn fixed_codes(triples: [Vec3; 4]) -> [Option<u8>; 4] {
        let [g2, g3, delta_prime] = [0, 1, 2].map(|i| words(&triples, i));
        lane_codes(fixed_exits(g2, g3, delta_prime), _mm256_setzero_si256())
    }

    /// H2, H3 and Δ clustered at `cull::verdict`'s boundaries: quotients near 0, near a
    /// wrap and summing to near 1.0, Δ zero, tiny, the most negative word or any.
    fn faithful_triple() -> impl Strategy<Value = Vec3> {
        let delta = prop_oneof![
            Just(0u32),
            Just(0x8000_0000),
            1u32..64,
            any::<u32>(),
            (1u32 << 10..1 << 20).prop_map(|v| v.wrapping_neg()),
        ];
        // A quotient in 2^-17: near 0, up to 2^16 (past the wrap check at 2^14), or at
        // the wrap check.
        let fraction = || {
            prop_oneof![
                -0x4_0000i64..0x4_0000,
                -(1i64 << 33)..1 << 33,
                ((1i64 << 31) - 64..(1 << 31) + 64, any::<bool>()).prop_map(|(f, negative)| {
                    if negative {
                        -f
                    } else {
                        f
                    }
                }),
            ]
        };
        let near_one = any::<bool>();
        (delta, fraction(), fraction(), near_one, -4i64..5, -3i64..4).prop_map(
            |(delta, fu, fv, near_one, jitter, noise)| {
                let d = i128::from(alu::magnitude32(delta));
                let fv = if near_one { 0x2_0000 - fu + jitter } else { fv };
                let near = |f: i64| (((d * i128::from(f)) >> 17) as i64 + noise) as i32 as u32;
                [near(fu), near(fv), delta]
            },
        )
    }

    /// Edge values and orientations near the fixed BIU's bounds (±14, ±28, ±32), and the
    /// words whose sums wrap.
    fn fixed_word() -> impl Strategy<Value = u32> {
        prop_oneof![
            4 => (-40i32..40).prop_map(|v| v as u32),
            1 => prop::sample::select(vec![0x7FFF_FFFF, 0x8000_0000, 0x8000_0001, 0x4000_0000]),
            1 => any::<u32>(),
        ]
    }

    /// [`dot`] and [`cross`] of four pairs of triples, as words.
    #[target_feature(enable = "avx2")]
    fn products(a: [Vec3; 4], b: [Vec3; 4]) -> ([u32; 4], [Vec3; 4]) {
        let lanes = |w: Lanes| {
            let mut out = [0i64; 4];
            // SAFETY: the store writes the 32 bytes of `out`.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast(), w) };
            out.map(|x| x as u32)
        };
        let (a, b) = (
            [0, 1, 2].map(|i| word_lanes(&column(&a, i))),
            [0, 1, 2].map(|i| word_lanes(&column(&b, i))),
        );
        let c = cross_lanes(a, b).map(|w| lanes(w.value));
        (
            lanes(dot(a, b).value),
            std::array::from_fn(|j| [c[0][j], c[1][j], c[2][j]]),
        )
    }

    /// A multiplier word whose products land next to a multiple of 2^17 (where truncating
    /// toward zero and rounding down differ), at the exact multiplier's limit, or any.
    fn product_word() -> impl Strategy<Value = u32> {
        let edges = vec![
            0,
            1,
            0xFFFF_FFFF,
            0x1_FFFF,
            0x2_0001,
            0xFFFE_0001,
            0xFFFD_FFFF,
            0x5555_5555,
            0xAAAA_AAAB,
            0x7FFF_FFFF,
            0x8000_0000,
            0x8000_0001,
        ];
        prop_oneof![2 => prop::sample::select(edges), 1 => any::<u32>()]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        /// Where the vector decides a faithful lane it decides as `cull::verdict`, and a
        /// fixed lane (always decided) as `cull::fixed_verdict`.
        #[test]
        fn the_vector_verdicts_are_the_scalar_ones(
            faithful in [faithful_triple(), faithful_triple(), faithful_triple(), faithful_triple()],
            fixed in prop::array::uniform4([fixed_word(), fixed_word(), fixed_word()]),
        ) {
            if !crate::emu::cpu::has_avx2() {
                return Ok(());
            }
            // SAFETY: the CPU has AVX2, checked just above.
            let codes = unsafe { faithful_codes(faithful) };
            for (code, [h2, h3, delta]) in codes.into_iter().zip(faithful) {
                if let Some(code) = code {
                    let verdict = cull::verdict(h2, || h3, delta);
                    prop_assert_eq!(code, verdict.map_or(0, Exit::code), "{:?}", (h2, h3, delta));
                }
            }
            // SAFETY: as above.
            let codes = unsafe { fixed_codes(fixed) };
            for (code, [g2, g3, delta_prime]) in codes.into_iter().zip(fixed) {
                let verdict = cull::fixed_verdict(g2, g3, delta_prime);
                prop_assert_eq!(code, Some(verdict.map_or(0, Exit::code)), "{:?}", (g2, g3, delta_prime));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        /// Four lanes' DOT and CROSS are the ALU's (`a` exact multiplicands).
        #[test]
        fn the_vector_products_are_the_alu_ones(
            a in prop::array::uniform4([product_word(), product_word(), product_word()]),
            b in prop::array::uniform4([product_word(), product_word(), product_word()]),
        ) {
            let a = a.map(|t| t.map(|x| if alu::exact_multiplicand(x) { x } else { x >> 2 }));
            if !crate::emu::cpu::has_avx2() {
                return Ok(());
            }
            // SAFETY: the CPU has AVX2, checked just above.
            let (dots, crosses) = unsafe { products(a, b) };
            for j in 0..4 {
                prop_assert_eq!(dots[j], alu::dot(a[j], b[j]));
                prop_assert_eq!(crosses[j], alu::cross(a[j], b[j]));
            }
        }
    }

    /// Products just past a multiple of 2^17 truncate toward zero: −(2^17 − 1) and
    /// −(2^17 + 1) raw give 0 and −1 (floor would give −1 and −2).
    #[test]
    fn the_vector_products_truncate_toward_zero() {
        if !crate::emu::cpu::has_avx2() {
            return;
        }
        let minus_one = 0xFFFF_FFFF;
        let a = [
            [minus_one, 0, 0],
            [minus_one, 0, 0],
            [1, 0, 0],
            [0, minus_one, 0],
        ];
        let b = [
            [0x1_FFFF, 0, 0],
            [0x2_0001, 0, 0x2_0001],
            [0xFFFD_FFFF, 0, 0],
            [0, 0, 0x1_FFFF],
        ];
        // SAFETY: the CPU has AVX2, checked just above.
        let (dots, crosses) = unsafe { products(a, b) };
        assert_eq!(dots, [0, minus_one, minus_one, 0]);
        // Lane 1: (0, 0 − P(−1, 2^17 + 1), 0); lane 3: (P(−1, 2^17 − 1), 0, 0).
        assert_eq!(crosses[1], [0, 1, 0]);
        assert_eq!(crosses[3], [0, 0, 0]);
    }

    /// The quotients `cull::verdict` decides without dividing, the vector decides too: u or
    /// v negative, both small, and a sum clearly above 1.0.
    #[test]
    fn the_vector_decides_what_needs_no_division() {
        if !crate::emu::cpu::has_avx2() {
            return;
        }
        let one = alu::ONE;
        let half = one / 2;
        let cases = [
            [half.wrapping_neg(), half, one],
            [half, half.wrapping_neg(), one],
            [half, half / 2, one],
            [one, one, one],
        ];
        // SAFETY: the CPU has AVX2, checked just above.
        let codes = unsafe { faithful_codes(cases) };
        assert_eq!(codes, [Some(1), Some(2), Some(0), Some(3)]);
    }
}
