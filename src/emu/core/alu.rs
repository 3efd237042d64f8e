//! Bit-exact Q15.17 arithmetic of the vector ALU (spec alu_semantics.md §2-§4).
//!
//! Every function works on raw 32-bit two's-complement words (1.0 = 0x20000) and keeps the
//! hardware's truncation, wrap and digit-loop rules explicit.

/// One register: x, y, z.
pub type Vec3 = [u32; 3];

/// 1.0 in Q15.17.
pub const ONE: u32 = 1 << 17;

/// mag(x): two's-complement magnitude as unsigned; mag(0x8000_0000) = 0x8000_0000.
#[inline(always)]
pub fn magnitude32(x: u32) -> u32 {
    if x & 0x8000_0000 != 0 {
        (!x).wrapping_add(1)
    } else {
        x
    }
}

#[inline(always)]
fn sext64(x: u32) -> u64 {
    x as i32 as i64 as u64
}

/// `pack(r) = {r[63], r[30:0]}`: the adder's output packing (bit 31 of the sum is dropped).
#[inline(always)]
pub fn pack(r: u64) -> u32 {
    (((r >> 63) as u32) << 31) | (r as u32 & 0x7FFF_FFFF)
}

/// ADD: pack(sext64(a) + sext64(b)); the low 31 bits wrap, bit 31 is the true sign.
#[inline(always)]
pub fn add(a: u32, b: u32) -> u32 {
    pack(sext64(a).wrapping_add(sext64(b)))
}

/// SUB: pack(sext64(a) - sext64(b)); the low 31 bits wrap, bit 31 is the true sign.
#[inline(always)]
pub fn sub(a: u32, b: u32) -> u32 {
    pack(sext64(a).wrapping_sub(sext64(b)))
}

/// INC lane: add(a, 1.0).
#[inline(always)]
pub fn inc(a: u32) -> u32 {
    add(a, ONE)
}

/// DEC lane: sub(a, 1.0).
#[inline(always)]
pub fn dec(a: u32) -> u32 {
    sub(a, ONE)
}

/// Radix-4 multiplier: sign · Σ digit_i(|b|)·((k·|a|) mod 2^32)·4^i, then >> 17 unless unscaled.
#[inline(always)]
pub fn mul64(a: u32, b: u32, unscaled: bool) -> u64 {
    if exact_multiplicand(a) {
        return if unscaled {
            exact_product(a, b) as u64
        } else {
            exact_scaled_product(a, b)
        };
    }
    radix4_mul64(a, b, unscaled)
}

/// |a| <= 0x5555_5555 (as a signed word): no partial product 3·|a| overflows 32 bits, so
/// the digit sum is the exact product and sign-magnitude truncation is the signed product
/// truncated toward zero.
#[inline(always)]
pub fn exact_multiplicand(a: u32) -> bool {
    a.wrapping_add(0x5555_5555) <= 0xAAAA_AAAA
}

/// [`exact_multiplicand`] for all three lanes, without branches.
#[inline(always)]
pub fn exact_multiplicands(a: Vec3) -> bool {
    exact_multiplicand(a[0]) & exact_multiplicand(a[1]) & exact_multiplicand(a[2])
}

#[inline(always)]
fn exact_product(a: u32, b: u32) -> i64 {
    (a as i32 as i64) * (b as i32 as i64)
}

/// mul64(a, b, false) for an [`exact_multiplicand`] `a`.
#[inline(always)]
pub fn exact_scaled_product(a: u32, b: u32) -> u64 {
    let product = exact_product(a, b);
    // Arithmetic shift rounds toward -inf; adding 2^17 - 1 first to negative products
    // makes it round toward zero.
    ((product + ((product >> 63) & 0x1_FFFF)) >> 17) as u64
}

/// The radix-4 digit loop of [`mul64`] for any operands (the general, slow path).
#[inline(never)]
fn radix4_mul64(a: u32, b: u32, unscaled: bool) -> u64 {
    let negative = (a ^ b) >> 31 == 1;
    let (am, bm) = (magnitude32(a), magnitude32(b));
    let twice = am.wrapping_shl(1);
    let multiples = [0u32, am, twice, twice.wrapping_add(am)];
    let product = (0..16).fold(0u64, |sum, i| {
        sum + ((multiples[((bm >> (2 * i)) & 3) as usize] as u64) << (2 * i))
    });
    let magnitude = if unscaled { product } else { product >> 17 };
    if negative {
        magnitude.wrapping_neg()
    } else {
        magnitude
    }
}

/// MUL lane: `mul64(a, b)[31:0]` — sign-magnitude, truncated toward zero, wraps mod 2^32.
#[inline(always)]
pub fn mul(a: u32, b: u32) -> u32 {
    mul64(a, b, false) as u32
}

/// IMUL lane: (a · b) mod 2^32 (the radix quirk never reaches the low word).
#[inline(always)]
pub fn imul(a: u32, b: u32) -> u32 {
    a.wrapping_mul(b)
}

/// DIV lane: sign · (((|a| << 17) / |b|) mod 2^31), with |b| = 0 giving 0x0FFF_FFFF.
#[inline(always)]
pub fn div(a: u32, b: u32) -> u32 {
    let negative = (a ^ b) >> 31 == 1;
    let (am, bm) = (magnitude32(a) as u64, magnitude32(b) as u64);
    // A zero divisor gives the divider's all-ones 28-bit quotient.
    let quotient = (am << 17).checked_div(bm).map_or(0x0FFF_FFFF, |q| q as u32) & 0x7FFF_FFFF;
    if negative {
        quotient.wrapping_neg()
    } else {
        quotient
    }
}

/// [`div`] in double precision, without branches (it vectorises across cores), for every
/// input: |a|·2^17 <= 2^48 and |b| <= 2^31 are exact doubles, and the correctly rounded
/// quotient never reaches the next integer, since |b|·(q + 1) <= |a|·2^17 + |b| < 2^53, so
/// truncating it gives the integer quotient q; q mod 2^31 is then exact too.
#[inline(always)]
pub fn div_by_float(a: u32, b: u32) -> u32 {
    const TWO_31: f64 = 2_147_483_648.0;
    let negative = (a ^ b) >> 31 == 1;
    let dividend = magnitude32(a) as f64 * (1u32 << 17) as f64;
    let divisor = magnitude32(b) as f64;
    let q = (dividend / divisor).trunc();
    let low = q - (q * (1.0 / TWO_31)).floor() * TWO_31;
    // A zero divisor gives the divider's all-ones 28-bit quotient.
    let quotient = if divisor == 0.0 {
        0x0FFF_FFFF
    } else {
        low as u32
    };
    if negative {
        quotient.wrapping_neg()
    } else {
        quotient
    }
}

/// Square root: the RTL's 33-step digit loop on x = op << 17 with 32-bit sum/diff registers
/// (= floor(sqrt(x)) for x < 2^60; wraps above).
#[inline]
pub fn sqrt_theia(op: u64) -> u32 {
    let x = op << 17;
    let (mut result, mut sum, mut diff) = (0u32, 0u32, 0u32);
    for group in (0..=32u32).rev() {
        sum = sum.wrapping_shl(1).wrapping_add(1);
        let pair = if group == 32 {
            0
        } else {
            ((x >> (2 * group)) & 3) as u32
        };
        diff = diff.wrapping_shl(2).wrapping_add(pair);
        if sum > diff {
            sum = sum.wrapping_sub(1);
        } else {
            if group < 32 {
                result = result.wrapping_add(1 << group);
            }
            diff = diff.wrapping_sub(sum);
            sum = sum.wrapping_add(1);
        }
    }
    result
}

/// Jump condition, relation = opcode bits 2..0: 0 `>`, 1 `<=` (sic), 2 mag==, 3 mag!=,
/// 4 `>` or mag==, 5 `<=` or mag==, 6..7 never.
#[inline(always)]
pub fn compare(x: u32, y: u32, relation: u16) -> bool {
    let greater = (x as i32) > (y as i32);
    let equal = magnitude32(x) == magnitude32(y);
    match relation & 7 {
        0 => greater,
        1 => !greater,
        2 => equal,
        3 => !equal,
        4 => greater || equal,
        5 => !greater || equal,
        _ => false,
    }
}

/// DOT: pack((P(ax,bx) + P(ay,by)) + P(az,bz)), P = mul64 scaled, 64-bit wrapping sums.
#[inline(always)]
pub fn dot(a: Vec3, b: Vec3) -> u32 {
    if exact_multiplicands(a) {
        return dot_exact(a, b);
    }
    pack(
        mul64(a[0], b[0], false)
            .wrapping_add(mul64(a[1], b[1], false))
            .wrapping_add(mul64(a[2], b[2], false)),
    )
}

/// [`dot`] for [`exact_multiplicands`] `a`, without branches (vectorises across cores).
#[inline(always)]
pub fn dot_exact(a: Vec3, b: Vec3) -> u32 {
    let p = |i: usize| exact_scaled_product(a[i], b[i]);
    pack(p(0).wrapping_add(p(1)).wrapping_add(p(2)))
}

/// CROSS: (pack(P(ay,bz) − P(az,by)), pack(P(az,bx) − P(ax,bz)), pack(P(ax,by) − P(ay,bx))).
#[inline(always)]
pub fn cross(a: Vec3, b: Vec3) -> Vec3 {
    if exact_multiplicands(a) {
        return cross_exact(a, b);
    }
    let p = |i: usize, j: usize| mul64(a[i], b[j], false);
    [
        pack(p(1, 2).wrapping_sub(p(2, 1))),
        pack(p(2, 0).wrapping_sub(p(0, 2))),
        pack(p(0, 1).wrapping_sub(p(1, 0))),
    ]
}

/// [`cross`] for [`exact_multiplicands`] `a`, without branches (vectorises across cores).
#[inline(always)]
pub fn cross_exact(a: Vec3, b: Vec3) -> Vec3 {
    let p = |i: usize, j: usize| exact_scaled_product(a[i], b[j]);
    [
        pack(p(1, 2).wrapping_sub(p(2, 1))),
        pack(p(2, 0).wrapping_sub(p(0, 2))),
        pack(p(0, 1).wrapping_sub(p(1, 0))),
    ]
}

/// MAG: sqrt_theia((P(ax,ax) + P(ay,ay)) + P(az,az)).
#[inline(always)]
pub fn vector_magnitude(a: Vec3) -> u32 {
    sqrt_theia(
        mul64(a[0], a[0], false)
            .wrapping_add(mul64(a[1], a[1], false))
            .wrapping_add(mul64(a[2], a[2], false)),
    )
}

/// MOD lane: a & low32(sext64(b) − 1.0): a bit mask, `floor(a) mod b` for b = 2^n · 1.0.
#[inline(always)]
pub fn modulo(a: u32, b: u32) -> u32 {
    a & b.wrapping_sub(ONE)
}

/// FRAC lane: a & 0x1FFFF (no sign handling: a − floor(a)).
#[inline(always)]
pub fn frac(a: u32) -> u32 {
    a & 0x1_FFFF
}

/// INTP lane (manual; unfinished in the RTL): a & 0xFFFE0000 = floor(a).
#[inline(always)]
pub fn intp(a: u32) -> u32 {
    a & 0xFFFE_0000
}

/// NEG lane: (!a) + 1, wrapping; NEG(0x8000_0000) = 0x8000_0000.
#[inline(always)]
pub fn neg(a: u32) -> u32 {
    a.wrapping_neg()
}

/// UNSCALE lane: a >> 17, logical (negative values are not sign-extended).
#[inline(always)]
pub fn unscale(a: u32) -> u32 {
    a >> 17
}

/// RESCALE lane (manual; unfinished in the RTL): a << 17.
#[inline(always)]
pub fn rescale(a: u32) -> u32 {
    a << 17
}

/// SWIZZLE3D: result.c = b\[lanes(code)\[c\]\] for the 22 named codes; other codes give (0,0,0).
#[inline(always)]
pub fn swizzle(b: Vec3, code: u32) -> Vec3 {
    match crate::emu::isa::registers::SWIZZLE_LANES.get(code as usize) {
        Some(lanes) => lanes.map(|lane| b[lane as usize]),
        None => [0; 3],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixed::types::I15F17;
    use proptest::prelude::*;

    fn q(v: f64) -> u32 {
        I15F17::from_num(v).to_bits() as u32
    }

    /// The spec's closed form of ADD/SUB: bit 31 = true sign, low 31 bits mod 2^31.
    fn sign_carrying(s: i64) -> u32 {
        (if s < 0 { 0x8000_0000 } else { 0 }) | (s.rem_euclid(1 << 31) as u32)
    }

    /// An independent radix-4 model written from the RTL description, digit by digit.
    fn radix4(a: u32, b: u32) -> u64 {
        let (am, bm) = (magnitude32(a) as u64, magnitude32(b) as u64);
        let mut sum = 0u64;
        for i in 0..16 {
            let digit = (bm >> (2 * i)) & 3;
            let partial = (digit * am) & 0xFFFF_FFFF;
            sum += partial << (2 * i);
        }
        sum
    }

    /// mul64 from the spec's closed form (§2.3) in i128, without the digit loop: the exact
    /// product of the magnitudes, less 2^32·4^i for every radix-4 digit i of |b| whose
    /// multiple of |a| overflows the 32-bit wire (digit 3 when |a| > 0x5555_5555, digit 2
    /// when |a| = 2^31); then >> 17 unless unscaled, the sign of a ^ b, and mod 2^64.
    fn spec_mul64(a: u32, b: u32, unscaled: bool) -> u64 {
        let magnitude_of = |x: u32| i128::from(x as i32).abs();
        let (am, bm) = (magnitude_of(a), magnitude_of(b));
        let mut product = am * bm;
        for i in 0..16 {
            let lost = match (bm >> (2 * i)) & 3 {
                3 => am > 0x5555_5555,
                2 => am == 1 << 31,
                _ => false,
            };
            if lost {
                product -= 1 << (32 + 2 * i);
            }
        }
        let magnitude = if unscaled { product } else { product >> 17 };
        let negative = ((a as i32) < 0) != ((b as i32) < 0);
        let signed = if negative { -magnitude } else { magnitude };
        signed.rem_euclid(1 << 64) as u64
    }

    /// Words at the edges of the multiplier: zero, ±tiny, ±1.0, the exact-product limit
    /// 0x5555_5555 and its neighbours, and the extremes.
    const MUL_EDGES: [u32; 13] = [
        0,
        1,
        0xFFFF_FFFF,
        0x2_0000,
        0xFFFE_0000,
        0x5555_5555,
        0x5555_5556,
        0xAAAA_AAAB,
        0xAAAA_AAAA,
        0x7FFF_FFFF,
        0x8000_0000,
        0x8000_0001,
        0x6000_0000,
    ];

    #[test]
    fn add_and_sub_wrap_with_the_true_sign() {
        assert_eq!(add(q(1.5), q(2.25)), q(3.75));
        assert_eq!(add(q(-1.0), q(0.5)), q(-0.5));
        assert_eq!(add(0, 0), 0);
        assert_eq!(add(0x7FFF_FFFF, 1), 0x0000_0000);
        assert_eq!(add(0x8000_0000, 0xFFFF_FFFF), 0xFFFF_FFFF);
        assert_eq!(sub(q(1.0), q(3.0)), q(-2.0));
        assert_eq!(sub(0x8000_0000, 1), 0xFFFF_FFFF);
        assert_eq!(inc(q(-1.0)), 0);
        assert_eq!(dec(0), q(-1.0));
        assert_eq!(inc(0x7FFF_FFFF), 0x0001_FFFF);
    }

    #[test]
    fn mul_truncates_toward_zero_on_the_magnitude() {
        assert_eq!(mul(q(1.5), q(2.0)), q(3.0));
        assert_eq!(mul(q(-1.5), q(2.0)), q(-3.0));
        assert_eq!(mul(q(-1.5), q(-2.0)), q(3.0));
        assert_eq!(mul(0xFFFF_FFFF, 0x0001_0000), 0);
        assert_eq!(mul(1, 1), 0);
        assert_eq!(mul(0, q(-7.0)), 0);
        // Overflow wraps mod 2^32: 200 * 200 = 40000 does not fit in Q15.17.
        assert_eq!(
            mul(q(200.0), q(200.0)),
            ((40000u64 << 17) & 0xFFFF_FFFF) as u32
        );
    }

    #[test]
    fn mul_with_a_large_first_operand_loses_partial_product_bits() {
        let (a, b) = (0x6000_0000u32, 0x0000_0003u32);
        // 3·|a| overflows 32 bits in the radix-4 digit: the product is 2^32 too small.
        let naive = a as u64 * b as u64;
        assert_eq!(mul64(a, b, true), naive - (1 << 32));
        assert_eq!(mul64(a, b, true), radix4(a, b));
        // With the operands swapped no digit is 3·|a| with |a| large: exact.
        assert_eq!(mul64(b, a, true), naive);
        // IMUL's low word never notices.
        assert_eq!(imul(a, b), (naive as u32));
        assert_eq!(mul64(a, b, true) as u32, imul(a, b));
        // 0x8000_0000: digit 2 loses bits too.
        assert_eq!(mul64(0x8000_0000, 2, true), radix4(0x8000_0000, 2));
        assert_eq!(radix4(0x8000_0000, 2), 0);
    }

    #[test]
    fn imul_is_the_low_word_of_the_product_at_the_edges() {
        // Hand-derived: (a · b) mod 2^32 with the words read as integers.
        for (a, b, low) in [
            (0, 0xFFFF_FFFF, 0),
            (0xFFFF_FFFF, 0xFFFF_FFFF, 1),           // (-1)·(-1)
            (0xFFFF_FFFE, 3, 0xFFFF_FFFA),           // (-2)·3 = -6
            (0x8000_0000, 2, 0),                     // 2^32 wraps to 0
            (0x8000_0000, 0xFFFF_FFFF, 0x8000_0000), // -2^31 · -1 = 2^31
            (0x7FFF_FFFF, 0x7FFF_FFFF, 1),           // 2^62 - 2^32 + 1
            (0x0001_0000, 0x0001_0000, 0),           // 2^32
            (0x6000_0000, 3, 0x2000_0000),           // the radix quirk's operands
            (12345, 6789, 83_810_205),
        ] {
            assert_eq!(imul(a, b), low, "{a:#x} · {b:#x}");
            assert_eq!(imul(b, a), low, "{b:#x} · {a:#x}");
            assert_eq!(mul64(a, b, true) as u32, low, "{a:#x} · {b:#x}");
        }
    }

    #[test]
    fn the_closed_form_reproduces_the_spec_examples() {
        // §2.3: 3 · 0x6000_0000 loses bit 32 in the digit; swapped it is exact.
        assert_eq!(spec_mul64(0x6000_0000, 3, true), 0x1_2000_0000 - (1 << 32));
        assert_eq!(spec_mul64(3, 0x6000_0000, true), 0x1_2000_0000);
        // 0x8000_0000 · 2: digit 2 of 2^31 is 2^32 on the wire, lost entirely.
        assert_eq!(spec_mul64(0x8000_0000, 2, true), 0);
        // Truncation toward zero, then the sign: -2^-17 · 0.5 is 0, not -1 ulp.
        assert_eq!(spec_mul64(0xFFFF_FFFF, 0x1_0000, false), 0);
        assert_eq!(
            spec_mul64(0xFFFE_0000, 0x4_0000, false),
            (-2i64 << 17) as u64
        );
    }

    #[test]
    fn div_edges() {
        for div in [div, div_by_float] {
            div_edges_of(div);
        }
    }

    fn div_edges_of(div: fn(u32, u32) -> u32) {
        assert_eq!(div(q(3.0), q(2.0)), q(1.5));
        assert_eq!(div(q(-3.0), q(2.0)), q(-1.5));
        assert_eq!(div(q(1.0), q(3.0)), 0xAAAA);
        assert_eq!(div(q(-1.0), q(3.0)), 0xAAAAu32.wrapping_neg());
        assert_eq!(div(q(5.0), 0), 0x0FFF_FFFF);
        assert_eq!(div(0, 0), 0x0FFF_FFFF);
        assert_eq!(div(q(-5.0), 0), 0xF000_0001);
        assert_eq!(div(0x4000_0000, 1), 0);
        assert_eq!(div(q(1.0), q(-1.0)), q(-1.0));
        assert_eq!(div(q(2.0), q(4.0)), q(0.5));
        assert_eq!(div(1, q(100.0)), 0);
    }

    #[test]
    fn comparisons_follow_the_rtl_not_the_manual() {
        let (five, minus_five) = (q(5.0), q(-5.0));
        assert!(compare(five, minus_five, 2)); // JEQ(5, -5)
        assert!(!compare(five, minus_five, 3)); // JNE(5, -5)
        assert!(compare(minus_five, five, 4)); // JGE(-5, 5)
        assert!(compare(five, minus_five, 5)); // JLE(5, -5)
        assert!(compare(q(3.0), q(3.0), 1)); // JL is <=
        assert!(!compare(q(3.0), q(3.0), 0));
        assert!(compare(q(3.0), q(-3.5), 0));
        assert!(!compare(q(3.0), q(3.0), 6));
        assert!(!compare(q(3.0), q(4.0), 7));
        assert!(compare(0, 0, 2));
        assert!(compare(0x8000_0000, 0x8000_0000, 2));
    }

    #[test]
    fn dot_and_cross() {
        let (a, b) = ([q(1.0), q(2.0), q(3.0)], [q(4.0), q(-5.0), q(6.0)]);
        assert_eq!(dot(a, b), q(12.0));
        assert_eq!(cross(a, b), [q(27.0), q(6.0), q(-13.0)]);
        assert_eq!(cross(a, a), [0, 0, 0]);
        // Each product truncates separately: 3 · (tiny · tiny) = 0.
        assert_eq!(dot([1, 1, 1], [1, 1, 1]), 0);
        // Overflow of the sum keeps the true sign in bit 31.
        let big = [q(10000.0), q(10000.0), 0];
        assert_eq!(dot(big, big) >> 31, 0);
    }

    #[test]
    fn bit_operations() {
        assert_eq!(modulo(q(5.75), q(4.0)), q(1.0));
        assert_eq!(modulo(q(-0.25), q(4.0)), q(3.0));
        assert_eq!(modulo(q(5.75), 0), q(5.0));
        assert_eq!(frac(q(5.75)), q(0.75));
        assert_eq!(frac(q(-0.25)), q(0.75));
        assert_eq!(intp(q(-0.25)), q(-1.0));
        assert_eq!(neg(0x8000_0000), 0x8000_0000);
        assert_eq!(neg(q(1.5)), q(-1.5));
        assert_eq!(neg(0), 0);
        assert_eq!(unscale(q(-1.0)), 0x7FFF);
        assert_eq!(unscale(q(200.0)), 200);
        assert_eq!(rescale(3), q(3.0));
    }

    #[test]
    fn swizzles() {
        let b = [1, 2, 3];
        assert_eq!(swizzle(b, 0), [1, 1, 1]);
        assert_eq!(swizzle(b, 1), [2, 2, 2]);
        assert_eq!(swizzle(b, 2), [3, 3, 3]);
        assert_eq!(swizzle(b, 21), [2, 1, 3]);
        assert_eq!(swizzle(b, 3), [1, 2, 2]);
        assert_eq!(swizzle(b, 20), [3, 2, 3]);
        assert_eq!(swizzle(b, 22), [0, 0, 0]);
        assert_eq!(swizzle(b, 0xFFFF_FFFF), [0, 0, 0]);
    }

    proptest! {
        #[test]
        fn add_sub_match_the_closed_form(a: u32, b: u32) {
            prop_assert_eq!(add(a, b), sign_carrying(a as i32 as i64 + b as i32 as i64));
            prop_assert_eq!(sub(a, b), sign_carrying(a as i32 as i64 - b as i32 as i64));
        }

        #[test]
        fn mul_is_sign_magnitude_truncation_for_small_a(a in -0x5555_5555i64..=0x5555_5555, b: i32) {
            let (a, b) = (a as i32, b);
            let magnitude = (a.unsigned_abs() as u64 * b.unsigned_abs() as u64) >> 17;
            let expected = if (a < 0) != (b < 0) { magnitude.wrapping_neg() } else { magnitude };
            prop_assert_eq!(mul64(a as u32, b as u32, false), expected);
        }

        #[test]
        fn mul_matches_the_digit_model(a: u32, b: u32) {
            let expected = radix4(a, b);
            let negative = (a ^ b) >> 31 == 1;
            let signed = if negative { expected.wrapping_neg() } else { expected };
            prop_assert_eq!(mul64(a, b, true), signed);
        }

        #[test]
        fn mul64_is_the_spec_closed_form(a: u32, b: u32, unscaled: bool, small in any::<bool>()) {
            // Half the cases in the exact (fast-path) range, half anywhere.
            let a = if small { (a as i32 / 3) as u32 } else { a };
            prop_assert_eq!(mul64(a, b, unscaled), spec_mul64(a, b, unscaled));
            prop_assert_eq!(radix4_mul64(a, b, unscaled), spec_mul64(a, b, unscaled));
        }

        #[test]
        fn mul64_is_the_spec_closed_form_at_the_edges(
            a in prop::sample::select(MUL_EDGES.to_vec()),
            b in prop_oneof![prop::sample::select(MUL_EDGES.to_vec()), any::<u32>()],
            unscaled: bool,
        ) {
            prop_assert_eq!(mul64(a, b, unscaled), spec_mul64(a, b, unscaled));
            prop_assert_eq!(mul64(b, a, unscaled), spec_mul64(b, a, unscaled));
        }

        #[test]
        fn dot_and_cross_follow_the_closed_form(a: [u32; 3], b: [u32; 3], small in any::<bool>()) {
            // Half the cases in the exact range, half anywhere.
            let a = if small { a.map(|x| (x as i32 / 3) as u32) } else { a };
            let p = |i: usize, j: usize| spec_mul64(a[i], b[j], false);
            prop_assert_eq!(dot(a, b), pack(p(0, 0).wrapping_add(p(1, 1)).wrapping_add(p(2, 2))));
            prop_assert_eq!(cross(a, b), [
                pack(p(1, 2).wrapping_sub(p(2, 1))),
                pack(p(2, 0).wrapping_sub(p(0, 2))),
                pack(p(0, 1).wrapping_sub(p(1, 0))),
            ]);
        }

        #[test]
        fn imul_is_the_product_mod_2_32(a: u32, b: u32) {
            let low = (i128::from(a as i32) * i128::from(b as i32)).rem_euclid(1 << 32) as u32;
            prop_assert_eq!(imul(a, b), low);
            prop_assert_eq!(mul64(a, b, true) as u32, low);
        }

        #[test]
        fn div_is_truncated_quotient_mod_2_31(a: i32, b in any::<i32>().prop_filter("nonzero", |b| *b != 0)) {
            let q = ((a as i128) << 17) / b as i128; // truncates toward zero
            let magnitude = (q.unsigned_abs() % (1u128 << 31)) as u32;
            let expected = if q < 0 { magnitude.wrapping_neg() } else { magnitude };
            prop_assert_eq!(div(a as u32, b as u32), expected);
        }

        #[test]
        fn div_by_float_equals_div(a: u32, b: u32) {
            prop_assert_eq!(div_by_float(a, b), div(a, b));
        }

        #[test]
        fn div_by_float_equals_div_at_whole_quotients(
            b in prop_oneof![1u32..64, any::<u32>(), 0x7FFF_FFC0u32..=0x8000_0000],
            q in any::<u32>(),
            sign_a: bool,
        ) {
            // Dividends whose exact quotient is a whole number, or just below or above one.
            let target = (q as u64 % (1 << 31)) * magnitude32(b) as u64;
            for x in [target.saturating_sub(1 << 17), target, target + (1 << 17)] {
                let a = (x >> 17).min(0x8000_0000) as u32;
                let a = if sign_a { a.wrapping_neg() } else { a };
                prop_assert_eq!(div_by_float(a, b), div(a, b), "a = {:#x}, b = {:#x}", a, b);
            }
        }

        #[test]
        fn compare_matches_its_table(x: u32, y: u32) {
            let gt = (x as i32) > (y as i32);
            let eq = x == y || x == y.wrapping_neg();
            prop_assert_eq!(compare(x, y, 0), gt);
            prop_assert_eq!(compare(x, y, 1), !gt);
            prop_assert_eq!(compare(x, y, 2), eq);
            prop_assert_eq!(compare(x, y, 3), !eq);
            prop_assert_eq!(compare(x, y, 4), gt || eq);
            prop_assert_eq!(compare(x, y, 5), !gt || eq);
        }
    }
}
