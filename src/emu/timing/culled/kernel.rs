//! [`RejectTiming::row`] several triangles at a time, one per 64-bit lane, for a ray
//! whose lanes are exact multiplicands: every product of BIU's CROSS and DOTs is then
//! `alu::exact_scaled_product` (a signed 32 × 32-bit product, truncated toward zero),
//! provided the other multiplicand, P for Δ and H2 and Q for H3, is exact too. A lane
//! where it is not, or where the faithful BIU's verdict needs its divisions
//! (`cull::verdict`'s exact path), gets the scalar entry ([`RejectTiming::scalar_entry`]).
//! Everything else is decided with masks: the verdict, the exit, and which of the three
//! DIVs are long. The last block ([`ConstantBlock`]) is padded: its extra lanes' entries
//! are computed and dropped.
//!
//! One body over [`Lanes`], entered at two widths: four lanes with AVX2 ([`row_avx2`])
//! and eight with AVX-512F ([`row_avx512`]), each entry point compiled for its features
//! with the whole body inlined into it.
//!
//! Each product lies within 2^62, so a DOT's three truncated products, each within 2^45,
//! sum without wrapping in 64 bits, as in `alu::dot`; each is shifted as the tile test
//! shifts its products ([`biased_product`], the quotient plus [`BIAS`], taken off the
//! sum), at both widths: one body.

use super::{RejectTiming, RowEntry, ROW_CODE_SHIFT};
use crate::emu::core::alu::Vec3;
use crate::emu::lanes::{biased_product, Avx2, Avx512, Lanes, BIAS};
use crate::emu::machine::cull::{
    Biu, ConstantBlock, Culler, BLOCK, FIXED_FLAT, FIXED_TOLERANCE, FIXED_TOLERANCE_G1,
};
use crate::emu::timing::cost::div_cycles;

/// An ALU word in each lane, sign-extended, and its sign (all ones where negative).
#[derive(Clone, Copy)]
struct Word<V> {
    value: V,
    negative: V,
}

/// What a row entry is made of, in lanes: per exit code (1..=4), the code and the exit's
/// path with three short DIVs; and what a long DIV adds to a short one.
struct EntryParts<V> {
    base: [V; 4],
    long_extra: V,
}

/// Comparisons as lanes of all ones, the kernel's masks (so that masks and values mix as
/// on AVX2; on AVX-512 the compiler keeps most of them in mask registers).
trait LaneMasks: Lanes {
    /// Where `self > b` (signed).
    #[inline(always)]
    unsafe fn greater(self, b: Self) -> Self {
        Self::mask_lanes(self.gt(b))
    }
    #[inline(always)]
    unsafe fn equal(self, b: Self) -> Self {
        Self::mask_lanes(self.eq(b))
    }
    /// Bit `j`: lane `j` is negative (set, in a mask).
    #[inline(always)]
    unsafe fn signs(self) -> u32 {
        Self::bits(Self::splat(0).gt(self))
    }
}

impl<V: Lanes> LaneMasks for V {}

/// The rows' entries for `culler`'s triangles under `ray` (its lanes exact
/// multiplicands), into the empty `row`, four triangles at a time.
#[target_feature(enable = "avx2")]
pub(super) fn row_avx2(timing: &RejectTiming, culler: &Culler, ray: Vec3, row: &mut Vec<RowEntry>) {
    // SAFETY: this function runs only where the CPU has AVX2.
    unsafe { entries_into::<Avx2>(timing, culler, ray, row) };
}

/// [`row_avx2`] eight triangles at a time.
#[target_feature(enable = "avx512f")]
pub(super) fn row_avx512(
    timing: &RejectTiming,
    culler: &Culler,
    ray: Vec3,
    row: &mut Vec<RowEntry>,
) {
    // SAFETY: this function runs only where the CPU has AVX-512F.
    unsafe { entries_into::<Avx512>(timing, culler, ray, row) };
}

/// The body of [`row_avx2`] and [`row_avx512`], inlined into each (as is everything it
/// calls: code compiled apart would not have the entry point's features). Only for a CPU
/// with `V`'s features, as every function below.
#[inline(always)]
unsafe fn entries_into<V: Lanes>(
    timing: &RejectTiming,
    culler: &Culler,
    ray: Vec3,
    row: &mut Vec<RowEntry>,
) {
    let triangles = culler.constants().len();
    let (short, long) = (div_cycles([0; 3], [0; 3]), div_cycles([1; 3], [1; 3]));
    // Loops, not closures: a closure is compiled apart, without the entry point's features.
    let mut parts = EntryParts {
        base: [V::splat(0); 4],
        long_extra: V::splat(i64::from(long - short)),
    };
    for (c, base) in parts.base.iter_mut().enumerate() {
        let code = (c as i64 + 1) << ROW_CODE_SHIFT;
        *base = V::splat(code | i64::from(timing.cycles[c] + 3 * short));
    }
    let mut ray_lanes = [V::splat(0); 3];
    for (lanes, &r) in ray_lanes.iter_mut().zip(&ray) {
        *lanes = V::splat(i64::from(r as i32));
    }
    // Whole blocks: the last one's padding lanes are written past the row's end, then cut.
    row.resize(triangles.next_multiple_of(BLOCK), 0);
    let blocks = row.chunks_exact_mut(BLOCK).zip(culler.blocks()).enumerate();
    for (block, (out, k)) in blocks {
        let first = BLOCK * block;
        for at in (0..BLOCK.min(triangles - first)).step_by(V::LANES) {
            let (lanes, scalar) = match timing.biu {
                Biu::Faithful => faithful_block(k, at, ray_lanes, &parts),
                Biu::Fixed => fixed_block(k, at, ray_lanes, &parts),
            };
            let real = triangles - first - at;
            store_entries(lanes, scalar, real, &mut out[at..at + V::LANES], |j| {
                timing.scalar_entry(culler, first + at + j, ray)
            });
        }
    }
    row.truncate(triangles);
}

/// The lanes' entries into `out`, those of the lanes set in the mask `scalar` from
/// `entry`, but for the lanes from `real` on (a block's padding), which are left as the
/// vector has them.
#[inline(always)]
unsafe fn store_entries<V: Lanes>(
    lanes: V,
    scalar: V,
    real: usize,
    out: &mut [RowEntry],
    entry: impl Fn(usize) -> RowEntry,
) {
    lanes.to_low_halfwords(out);
    let mut left = scalar.signs() & (u32::MAX >> (32 - real.min(V::LANES)));
    while left != 0 {
        let j = left.trailing_zeros() as usize;
        out[j] = entry(j);
        left &= left - 1;
    }
}

/// The faithful BIU's entries of the triangles from lane `at` of block `k`, and the lanes
/// left to the scalar entry.
#[inline(always)]
unsafe fn faithful_block<V: Lanes>(
    k: &ConstantBlock,
    at: usize,
    ray: [V; 3],
    parts: &EntryParts<V>,
) -> (V, V) {
    let (p, p_inexact) = ray_cross_e2(k, at, ray);
    let p = [p[0].value, p[1].value, p[2].value];
    let delta = dot(p, triple_lanes(&k.e1, at));
    let h2 = dot(p, triple_lanes(&k.t, at));
    let (q, q_inexact) = multiplicands(triple_lanes(&k.q, at));
    let h3 = dot(q, ray);
    let (exits, undecided) = faithful_exits(delta, h2, h3);
    let h1 = V::from_words(&k.h1[at..]);
    let lanes = entries(parts, exits, delta, [h1, h2.value, h3.value]);
    (lanes, p_inexact.or(q_inexact).or(undecided))
}

/// The fixed BIU's entries of the triangles from lane `at` of block `k`, and the lanes
/// left to the scalar entry.
#[inline(always)]
unsafe fn fixed_block<V: Lanes>(
    k: &ConstantBlock,
    at: usize,
    ray: [V; 3],
    parts: &EntryParts<V>,
) -> (V, V) {
    let (q, q_inexact) = multiplicands(triple_lanes(&k.q, at));
    let h3 = dot(q, ray);
    let g2 = dot(ray, triple_lanes(&k.c2, at));
    let delta_prime = dot(ray, triple_lanes(&k.c_delta, at));
    let exits = fixed_exits(g2, h3, delta_prime);
    let rejected = exits[0].or(exits[1]).or(exits[2].or(exits[3]));
    // Accepted triangles' entries are 0 whatever P is.
    let (p, p_inexact) = ray_cross_e2(k, at, ray);
    let p = [p[0].value, p[1].value, p[2].value];
    let delta = dot(p, triple_lanes(&k.e1, at));
    let h2 = dot(p, triple_lanes(&k.t, at));
    let h1 = V::from_words(&k.h1[at..]);
    let lanes = entries(parts, exits, delta, [h1, h2.value, h3.value]);
    (lanes, q_inexact.or(p_inexact.and(rejected)))
}

/// P = ray × E2 of the triangles from lane `at` of block `k`, and the lanes where a lane
/// of P is not an exact multiplicand.
#[inline(always)]
unsafe fn ray_cross_e2<V: Lanes>(k: &ConstantBlock, at: usize, ray: [V; 3]) -> ([Word<V>; 3], V) {
    let p = cross_lanes(ray, triple_lanes(&k.e2, at));
    let inexact = inexact(p[0]).or(inexact(p[1])).or(inexact(p[2]));
    (p, inexact)
}

/// CROSS of two triples of lanes (`a` exact multiplicands).
#[inline(always)]
unsafe fn cross_lanes<V: Lanes>(a: [V; 3], b: [V; 3]) -> [Word<V>; 3] {
    // Written out: a closure is compiled apart, without the entry point's features.
    [
        pack(biased_product(a[1], b[2]).sub(biased_product(a[2], b[1]))),
        pack(biased_product(a[2], b[0]).sub(biased_product(a[0], b[2]))),
        pack(biased_product(a[0], b[1]).sub(biased_product(a[1], b[0]))),
    ]
}

/// Three lanes of words as multiplicands, and where any is not exact.
#[inline(always)]
unsafe fn multiplicands<V: Lanes>(v: [V; 3]) -> ([V; 3], V) {
    let any = inexact(word(v[0]))
        .or(inexact(word(v[1])))
        .or(inexact(word(v[2])));
    (v, any)
}

/// The faithful BIU's exits (a mask per [`crate::emu::machine::cull::Exit::code`] 1..=3,
/// the fourth empty) as `cull::verdict` decides them without dividing, and the lanes
/// where it divides (Δ = 0, a quotient that may wrap, a sum near 1.0).
#[inline(always)]
unsafe fn faithful_exits<V: Lanes>(delta: Word<V>, h2: Word<V>, h3: Word<V>) -> ([V; 4], V) {
    let d = magnitude(delta);
    // Below d · 2^14 a quotient cannot wrap; d = 0 fails this for every H.
    let wrap = d.shl::<14>();
    let (u_magnitude, v_magnitude) = (magnitude(h2), magnitude(h3));
    let (u_fits, v_fits) = (wrap.greater(u_magnitude), wrap.greater(v_magnitude));
    let u_negative = h2.negative.xor(delta.negative);
    let v_negative = h3.negative.xor(delta.negative);
    let (a, b) = (u_magnitude.shl::<17>(), v_magnitude.shl::<17>());
    // A negative quotient: a negative sign and |H|·2^17 >= d.
    let u_exit = d.greater(a).and_not(u_negative);
    let v_exit = d.greater(b).and_not(v_negative);
    let sum = u_negative.and_not(a).add(v_negative.and_not(b));
    let d_one = d.shl::<17>().add(d);
    let over = d_one
        .add(d)
        .greater(sum)
        .and_not(d.shl::<31>().greater(sum));
    let accepted = d_one.greater(sum);
    // cull::verdict's order: U (where u fits), then V (where v fits), then the sum.
    let u = u_fits.and(u_exit);
    let past_u = u_exit.and_not(u_fits);
    let v = past_u.and(v_fits).and(v_exit);
    let past_v = past_u.and(v_fits).and(not(v_exit));
    // `over` and `accepted` exclude each other.
    let sum_exit = past_v.and(over);
    let decided = u.or(v).or(sum_exit.or(past_v.and(accepted)));
    let none = V::splat(0);
    ([u, v, sum_exit, none], not(decided))
}

/// The fixed BIU's exits (a mask per code 1..=4: flat, g2, g3, g1) from its edge values
/// and orientation, as `cull::fixed_verdict` decides them: flat where |D'| <= 32 (either
/// side); then, with back-facing lanes (D' <= 0) failing a test where the value is above
/// its bound and front-facing ones where it is below minus the bound (the magnitude-equal
/// half of JGEX/JLEX only ever admits values the signed half admits too), g2 and g3
/// against 14 and g1 = D' - (g2 + g3) against 28.
#[inline(always)]
unsafe fn fixed_exits<V: Lanes>(g2: Word<V>, g3: Word<V>, delta_prime: Word<V>) -> [V; 4] {
    let g1 = sub(delta_prime, add(g2, g3));
    let front = delta_prime.value.greater(V::splat(0));
    let flat = V::splat(i64::from(FIXED_FLAT) + 1).greater(magnitude(delta_prime));
    let g2_fails = flat.and_not(fails(g2, front, FIXED_TOLERANCE));
    let earlier = flat.or(g2_fails);
    let g3_fails = earlier.and_not(fails(g3, front, FIXED_TOLERANCE));
    let earlier = earlier.or(g3_fails);
    let g1_fails = earlier.and_not(fails(g1, front, FIXED_TOLERANCE_G1));
    [flat, g2_fails, g3_fails, g1_fails]
}

/// Whether a fixed BIU's edge value `w` fails its test against `bound`: front-facing
/// lanes (`front`) negated, every test becomes "above the bound fails".
#[inline(always)]
unsafe fn fails<V: Lanes>(w: Word<V>, front: V, bound: u32) -> V {
    w.value
        .xor(front)
        .sub(front)
        .greater(V::splat(i64::from(bound)))
}

/// The entries of lanes leaving at the exits `exits` (one mask per code, disjoint; none:
/// 0), their DIVs dividing `dividends` by Δ: long where Δ is not 0 and |Δ| < |H|·2^17.
#[inline(always)]
unsafe fn entries<V: Lanes>(
    parts: &EntryParts<V>,
    exits: [V; 4],
    delta: Word<V>,
    dividends: [V; 3],
) -> V {
    let d = magnitude(delta);
    let divides = not(d.equal(V::splat(0)));
    let mut base = V::splat(0);
    for (exit, part) in exits.iter().zip(&parts.base) {
        base = base.or(exit.and(*part));
    }
    let mut extra = V::splat(0);
    for h in dividends {
        let long = divides.and(magnitude(word(h)).shl::<17>().greater(d));
        extra = extra.add(long.and(parts.long_extra));
    }
    let rejected = exits[0].or(exits[1]).or(exits[2].or(exits[3]));
    base.add(rejected.and(extra))
}

/// DOT of two triples of lanes (`a` exact multiplicands).
#[inline(always)]
unsafe fn dot<V: Lanes>(a: [V; 3], b: [V; 3]) -> Word<V> {
    let sum = biased_product(a[0], b[0])
        .add(biased_product(a[1], b[1]))
        .add(biased_product(a[2], b[2]));
    pack(sum.sub(V::splat(3 * BIAS)))
}

/// ADD of two words: `alu::pack` of the sum of their sign extensions.
#[inline(always)]
unsafe fn add<V: Lanes>(a: Word<V>, b: Word<V>) -> Word<V> {
    pack(a.value.add(b.value))
}

/// SUB of two words: `alu::pack` of the difference of their sign extensions.
#[inline(always)]
unsafe fn sub<V: Lanes>(a: Word<V>, b: Word<V>) -> Word<V> {
    pack(a.value.sub(b.value))
}

/// `alu::pack`: {r[63], r[30:0]}, sign-extended.
#[inline(always)]
unsafe fn pack<V: Lanes>(r: V) -> Word<V> {
    let low = V::splat(0x7FFF_FFFF);
    let negative = V::splat(0).greater(r);
    Word {
        value: r.and(low).or(low.and_not(negative)),
        negative,
    }
}

/// Sign-extended words and their signs.
#[inline(always)]
unsafe fn word<V: Lanes>(value: V) -> Word<V> {
    Word {
        value,
        negative: V::splat(0).greater(value),
    }
}

/// `alu::magnitude32` of sign-extended words.
#[inline(always)]
unsafe fn magnitude<V: Lanes>(w: Word<V>) -> V {
    w.value.xor(w.negative).sub(w.negative)
}

/// Where a word is not an `alu::exact_multiplicand`: |w| above 0x5555_5555.
#[inline(always)]
unsafe fn inexact<V: Lanes>(w: Word<V>) -> V {
    magnitude(w).greater(V::splat(0x5555_5555))
}

/// Word `i` of each triangle from lane `at` of a block's triple `words`, sign-extended.
#[inline(always)]
unsafe fn triple_lanes<V: Lanes>(words: &[[i32; BLOCK]; 3], at: usize) -> [V; 3] {
    [
        V::from_words(&words[0][at..]),
        V::from_words(&words[1][at..]),
        V::from_words(&words[2][at..]),
    ]
}

#[inline(always)]
unsafe fn not<V: Lanes>(a: V) -> V {
    a.xor(V::splat(-1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::alu;
    use crate::emu::machine::cull::{self, Exit};
    use proptest::prelude::*;

    /// Runs `check` at each width this CPU has: `check::<V>()` with `V`'s features.
    macro_rules! at_each_width {
        ($check:ident($($arg:expr),*)) => {
            if <Avx2 as Lanes>::available() {
                // SAFETY: the CPU has AVX2, checked just above.
                unsafe { $check::<Avx2>($($arg),*) }
            }
            if <Avx512 as Lanes>::available() {
                // SAFETY: the CPU has AVX-512F, checked just above.
                unsafe { $check::<Avx512>($($arg),*) }
            }
        };
    }

    /// Each lane's value of `v`.
    unsafe fn values<V: Lanes>(v: V) -> Vec<i64> {
        let mut out = vec![0; V::LANES];
        v.to_lanes(&mut out);
        out.into_iter().map(|lane| lane as i64).collect()
    }

    /// Each lane's code from exit masks (0: none), or `None` where `undecided` is set;
    /// every lane in at most one mask.
    unsafe fn lane_codes<V: Lanes>(exits: [V; 4], undecided: V) -> Vec<Option<u8>> {
        let (exits, undecided) = (exits.map(|m| m.signs()), undecided.signs());
        (0..V::LANES)
            .map(|j| {
                let codes: Vec<u8> = (1..=4u8)
                    .filter(|&code| exits[usize::from(code) - 1] >> j & 1 == 1)
                    .collect();
                assert!(codes.len() <= 1, "lane {j} leaves at {codes:?}");
                (undecided >> j & 1 == 0).then(|| codes.first().copied().unwrap_or(0))
            })
            .collect()
    }

    /// Word `i` of each triple, one triple per lane.
    unsafe fn words<V: Lanes>(triples: &[Vec3], i: usize) -> Word<V> {
        let column: Vec<i32> = triples.iter().map(|t| t[i] as i32).collect();
        let value = V::from_words(&column);
        Word {
            value,
            negative: V::splat(0).greater(value),
        }
    }

    /// [`faithful_exits`] of (H2, H3, Δ) triples, a vector's worth at a time.
    unsafe fn faithful_codes<V: Lanes>(triples: &[Vec3]) -> Vec<Option<u8>> {
        let mut codes = Vec::new();
        for lanes in triples.chunks_exact(V::LANES) {
            let [h2, h3, delta] = [0, 1, 2].map(|i| words::<V>(lanes, i));
            let (exits, undecided) = faithful_exits(delta, h2, h3);
            codes.extend(lane_codes(exits, undecided));
        }
        codes
    }

    /// [`fixed_exits`] of (g2, g3, D') triples, a vector's worth at a time.
    unsafe fn fixed_codes<V: Lanes>(triples: &[Vec3]) -> Vec<Option<u8>> {
        let mut codes = Vec::new();
        for lanes in triples.chunks_exact(V::LANES) {
            let [g2, g3, delta_prime] = [0, 1, 2].map(|i| words::<V>(lanes, i));
            codes.extend(lane_codes(fixed_exits(g2, g3, delta_prime), V::splat(0)));
        }
        codes
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

    /// [`dot`] and [`cross_lanes`] of pairs of triples, as words, a vector's worth at a
    /// time.
    unsafe fn products<V: Lanes>(a: &[Vec3], b: &[Vec3]) -> (Vec<u32>, Vec<Vec3>) {
        let (mut dots, mut crosses) = (Vec::new(), Vec::new());
        for (a, b) in a.chunks_exact(V::LANES).zip(b.chunks_exact(V::LANES)) {
            let a = [0, 1, 2].map(|i| words::<V>(a, i).value);
            let b = [0, 1, 2].map(|i| words::<V>(b, i).value);
            let c = cross_lanes(a, b).map(|w| values(w.value));
            dots.extend(values(dot(a, b).value).into_iter().map(|x| x as u32));
            crosses.extend((0..V::LANES).map(|j| [c[0][j], c[1][j], c[2][j]].map(|x| x as u32)));
        }
        (dots, crosses)
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

    /// Where the lanes decide a faithful (H2, H3, Δ) they decide as `cull::verdict`, and a
    /// fixed (g2, g3, D') (always decided) as `cull::fixed_verdict`.
    unsafe fn check_verdicts<V: Lanes>(faithful: &[Vec3], fixed: &[Vec3]) {
        let codes = faithful_codes::<V>(faithful);
        for (code, &[h2, h3, delta]) in codes.into_iter().zip(faithful) {
            if let Some(code) = code {
                let verdict = cull::verdict(h2, || h3, delta);
                assert_eq!(
                    code,
                    verdict.map_or(0, Exit::code),
                    "{h2:x} {h3:x} {delta:x}"
                );
            }
        }
        let codes = fixed_codes::<V>(fixed);
        for (code, &[g2, g3, delta_prime]) in codes.into_iter().zip(fixed) {
            let verdict = cull::fixed_verdict(g2, g3, delta_prime).map_or(0, Exit::code);
            assert_eq!(code, Some(verdict), "{g2:x} {g3:x} {delta_prime:x}");
        }
    }

    /// The lanes' DOT and CROSS of `a` and `b` are the ALU's.
    unsafe fn check_products<V: Lanes>(a: &[Vec3], b: &[Vec3]) {
        let (dots, crosses) = products::<V>(a, b);
        for j in 0..a.len() {
            assert_eq!(dots[j], alu::dot(a[j], b[j]));
            assert_eq!(crosses[j], alu::cross(a[j], b[j]));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        /// Where the vector decides a faithful lane it decides as `cull::verdict`, and a
        /// fixed lane (always decided) as `cull::fixed_verdict`.
        #[test]
        fn the_vector_verdicts_are_the_scalar_ones(
            faithful in prop::array::uniform8(faithful_triple()),
            fixed in prop::array::uniform8([fixed_word(), fixed_word(), fixed_word()]),
        ) {
            at_each_width!(check_verdicts(&faithful, &fixed));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(5000))]

        /// The lanes' DOT and CROSS are the ALU's (`a` exact multiplicands).
        #[test]
        fn the_vector_products_are_the_alu_ones(
            a in prop::array::uniform8([product_word(), product_word(), product_word()]),
            b in prop::array::uniform8([product_word(), product_word(), product_word()]),
        ) {
            let a = a.map(|t| t.map(|x| if alu::exact_multiplicand(x) { x } else { x >> 2 }));
            at_each_width!(check_products(&a, &b));
        }
    }

    /// The fixed-BIU edge values the verdict proptest once failed on (its regression file,
    /// whose four-lane seeds the eight-lane test no longer replays): D' at the flatness
    /// bound, and g2, g3 and D' past their tolerances.
    #[test]
    fn the_vector_verdicts_hold_where_they_once_failed() {
        let mut fixed = vec![[0; 3]; 8];
        fixed[2] = [0, 0, 32];
        fixed[5] = [19, 30, 33];
        let faithful = vec![[0; 3]; 8];
        at_each_width!(check_verdicts(&faithful, &fixed));
    }

    /// Products just past a multiple of 2^17 truncate toward zero: −(2^17 − 1) and
    /// −(2^17 + 1) raw give 0 and −1 (floor would give −1 and −2).
    #[test]
    fn the_vector_products_truncate_toward_zero() {
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
        unsafe fn check<V: Lanes>(a: &[Vec3], b: &[Vec3]) {
            let (dots, crosses) = products::<V>(&a.repeat(2), &b.repeat(2));
            assert_eq!(dots[..4], [0, 0xFFFF_FFFF, 0xFFFF_FFFF, 0]);
            // Lane 1: (0, 0 − P(−1, 2^17 + 1), 0); lane 3: (P(−1, 2^17 − 1), 0, 0).
            assert_eq!(crosses[1], [0, 1, 0]);
            assert_eq!(crosses[3], [0, 0, 0]);
        }
        at_each_width!(check(&a, &b));
    }

    /// The quotients `cull::verdict` decides without dividing, the vector decides too: u or
    /// v negative, both small, and a sum clearly above 1.0.
    #[test]
    fn the_vector_decides_what_needs_no_division() {
        let one = alu::ONE;
        let half = one / 2;
        let cases = [
            [half.wrapping_neg(), half, one],
            [half, half.wrapping_neg(), one],
            [half, half / 2, one],
            [one, one, one],
        ];
        unsafe fn check<V: Lanes>(cases: &[Vec3]) {
            let codes = faithful_codes::<V>(&cases.repeat(2));
            assert_eq!(codes[..4], [Some(1), Some(2), Some(0), Some(3)]);
        }
        at_each_width!(check(&cases));
    }
}
