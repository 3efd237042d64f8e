//! Properties of the bit-exact ALU against the closed forms of the spec (alu_semantics.md §2,
//! §4 and §6), each computed here independently of `theia::emu::core::alu`: wide integer
//! arithmetic, a separate radix-4 multiplier model and the spec's tables.

use proptest::prelude::*;
use theia::emu::core::alu::*;

const ONE_Q: i64 = 1 << 17;

/// mag(x) through i64: |s32(x)|, so mag(0x8000_0000) = 2^31.
fn mag(x: u32) -> u64 {
    (x as i32 as i64).unsigned_abs()
}

/// The radix-4 multiplier of §2.3, written from the description: 16 digits of |b| select a
/// multiple of |a| on a 32-bit wire, summed wide; scaled products drop 17 bits; the sign is
/// applied last. Exact as an i128 (the hardware keeps it mod 2^64).
fn product(a: u32, b: u32, scaled: bool) -> i128 {
    let (am, bm) = (mag(a), mag(b));
    let mut sum: u128 = 0;
    for i in 0..16 {
        let digit = (bm >> (2 * i)) & 3;
        let partial = (digit * am) % (1 << 32);
        sum += (partial as u128) << (2 * i);
    }
    let magnitude = if scaled { sum >> 17 } else { sum } as i128;
    if (a as i32 >= 0) == (b as i32 >= 0) {
        magnitude
    } else {
        -magnitude
    }
}

/// P(a, b) of the spec.
fn p(a: u32, b: u32) -> i128 {
    product(a, b, true)
}

/// An exact sum through the 64-bit adder and the output packing: bit 31 = bit 63 of the
/// sum mod 2^64, bits 30..0 = its bits 30..0.
fn adder_output(sum: i128) -> u32 {
    let r = sum.rem_euclid(1 << 64) as u64;
    let sign = if r >= 1 << 63 { 0x8000_0000 } else { 0 };
    sign | (r % (1 << 31)) as u32
}

/// §2.2 for an exact sum s of two 32-bit operands: the true sign and s mod 2^31.
fn sign_carrying(s: i64) -> u32 {
    (if s < 0 { 0x8000_0000 } else { 0 }) | s.rem_euclid(1 << 31) as u32
}

/// floor(sqrt(x)) by bisection on exact squares.
fn isqrt(x: u128) -> u128 {
    let (mut low, mut high) = (0u128, 1u128 << 64);
    while high - low > 1 {
        let mid = (low + high) / 2;
        if mid * mid <= x {
            low = mid;
        } else {
            high = mid;
        }
    }
    low
}

/// Q15.17 raw words of magnitude below 2^bits.
fn small(bits: u32) -> impl Strategy<Value = u32> + Clone {
    let limit = 1i64 << bits;
    (-limit + 1..limit).prop_map(|v| v as i32 as u32)
}

/// Any word, or one near the edges where wrap and sign rules show (0, ±1.0, 0x7FFF_FFFF,
/// 0x8000_0000), which uniform sampling almost never hits.
fn word() -> impl Strategy<Value = u32> + Clone {
    let near = |centre: u32| {
        (0u32..1 << 19).prop_map(move |d| centre.wrapping_add(d).wrapping_sub(1 << 18))
    };
    prop_oneof![any::<u32>(), near(0), near(0x7FFF_FFFF), near(0x8000_0000),]
}

fn vec3(value: impl Strategy<Value = u32> + Clone) -> impl Strategy<Value = [u32; 3]> {
    [value.clone(), value.clone(), value]
}

/// The signed product of two Q15.17 values, truncated toward zero: the textbook form that
/// the radix-4 multiplier reproduces while |a| <= 0x5555_5555.
fn truncated_product(a: u32, b: u32) -> i64 {
    let exact = (a as i32 as i64) * (b as i32 as i64);
    exact.signum() * (exact.unsigned_abs() >> 17) as i64
}

/// The manual's SWIZZLE3D table (isa_and_formats §1.6): the source lane of x, y, z per code.
const SWIZZLE_PATTERNS: [&str; 22] = [
    "xxx", "yyy", "zzz", "xyy", "xxy", "xzz", "xxz", "yxx", "yyx", "yzz", "yyz", "zxx", "zzx",
    "zyy", "zzy", "xzx", "xyx", "yxy", "yzy", "zxz", "zyz", "yxz",
];

#[test]
fn dot_with_a_large_first_operand_keeps_the_multiplier_quirk() {
    // 3 · 0x6000_0000 loses bit 32 on the digit wire: P = 0x2000_0000 >> 17, not 0x9000.
    assert_eq!(dot([0x6000_0000, 0, 0], [3, 0, 0]), 0x1000);
    assert_eq!(p(0x6000_0000, 3), 0x1000);
    // With the operands swapped the product is exact.
    assert_eq!(dot([3, 0, 0], [0x6000_0000, 0, 0]), 0x9000);
}

#[test]
fn swizzle_covers_every_code_of_the_table() {
    let b = [0x1111, 0x2222, 0x3333];
    let lane = |c: u8| b[(c - b'x') as usize];
    for (code, pattern) in SWIZZLE_PATTERNS.iter().enumerate() {
        let expected: Vec<u32> = pattern.bytes().map(lane).collect();
        assert_eq!(swizzle(b, code as u32).to_vec(), expected, "code {code}");
    }
    for code in [22, 23, 0x100, 0x8000_0000, u32::MAX] {
        assert_eq!(swizzle(b, code), [0, 0, 0], "code {code}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn dot_is_the_packed_sum_of_radix4_products(a in vec3(word()), b in vec3(word())) {
        let sum: i128 = (0..3).map(|i| p(a[i], b[i])).sum();
        prop_assert_eq!(dot(a, b), adder_output(sum));
    }

    #[test]
    fn dot_of_small_vectors_is_the_truncated_fixed_point_sum(
        a in vec3(small(23)),
        b in vec3(small(23)),
    ) {
        // No digit wraps and the sum fits in 32 bits: plain two's complement.
        let sum: i64 = (0..3).map(|i| truncated_product(a[i], b[i])).sum();
        prop_assume!(i32::try_from(sum).is_ok());
        prop_assert_eq!(dot(a, b), sum as i32 as u32);
    }

    #[test]
    fn cross_is_the_packed_difference_of_radix4_products(a in vec3(word()), b in vec3(word())) {
        let expected = [
            adder_output(p(a[1], b[2]) - p(a[2], b[1])),
            adder_output(p(a[2], b[0]) - p(a[0], b[2])),
            adder_output(p(a[0], b[1]) - p(a[1], b[0])),
        ];
        prop_assert_eq!(cross(a, b), expected);
    }

    #[test]
    fn cross_of_small_vectors_is_the_truncated_fixed_point_cross(
        a in vec3(small(23)),
        b in vec3(small(23)),
    ) {
        let t = truncated_product;
        let expected = [
            t(a[1], b[2]) - t(a[2], b[1]),
            t(a[2], b[0]) - t(a[0], b[2]),
            t(a[0], b[1]) - t(a[1], b[0]),
        ];
        prop_assume!(expected.iter().all(|&c| i32::try_from(c).is_ok()));
        prop_assert_eq!(cross(a, b), expected.map(|c| c as i32 as u32));
    }

    #[test]
    fn mag_is_the_root_of_the_sum_of_squares_for_small_operands(a in vec3(small(29))) {
        // Below 4096.0 per component the sum stays under 2^43, where the digit loop is
        // floor(sqrt(S << 17)) and no square loses bits.
        let sum: u128 = a.iter().map(|&c| (mag(c) as u128 * mag(c) as u128) >> 17).sum();
        prop_assert_eq!(vector_magnitude(a) as u128, isqrt(sum << 17));
    }

    #[test]
    fn mag_of_any_vector_is_sqrt_of_the_radix4_sum(a in vec3(word())) {
        // The square root itself is checked against bisection and the spec's loop below;
        // here, that MAG feeds it the radix-4 sum of squares.
        let sum = a.iter().map(|&c| p(c, c)).sum::<i128>().rem_euclid(1 << 64) as u64;
        prop_assert_eq!(vector_magnitude(a), sqrt_theia(sum));
        if sum < 1 << 43 {
            prop_assert_eq!(u128::from(vector_magnitude(a)), isqrt(u128::from(sum) << 17));
        }
    }

    #[test]
    fn mod_masks_with_b_minus_one(a in word(), b in word()) {
        let mask = (b as i32 as i64 - ONE_Q) as u32;
        prop_assert_eq!(modulo(a, b), a & mask);
    }

    #[test]
    fn mod_by_a_power_of_two_is_the_floored_residue(a: i32, n in 0u32..14) {
        // floor(a) mod 2^n, non-negative even for negative a, as a whole Q15.17 number.
        let residue = (a >> 17).rem_euclid(1 << n);
        prop_assert_eq!(modulo(a as u32, (1u32 << n) << 17), (residue << 17) as u32);
    }

    #[test]
    fn frac_is_a_minus_floor_a(a in word().prop_map(|w| w as i32)) {
        let floor = ((a as i64) >> 17) << 17;
        prop_assert_eq!(frac(a as u32) as i64, a as i64 - floor);
    }

    #[test]
    fn neg_is_twos_complement_negation_mod_2_32(a in word().prop_map(|w| w as i32)) {
        prop_assert_eq!(neg(a as u32), (-(a as i64)).rem_euclid(1 << 32) as u32);
    }

    #[test]
    fn unscale_is_a_logical_shift(a in word()) {
        prop_assert_eq!(unscale(a), (a as u64 / (1 << 17)) as u32);
    }

    #[test]
    fn unscale_of_a_non_negative_value_is_its_integer_part(a in 0i32..i32::MAX) {
        prop_assert_eq!(unscale(a as u32) as i64, (a as f64 / ONE_Q as f64).floor() as i64);
    }

    #[test]
    fn imul_is_the_product_mod_2_32(a in word(), b in word()) {
        prop_assert_eq!(imul(a, b), ((a as u64 * b as u64) % (1 << 32)) as u32);
        // The unscaled radix-4 product agrees in its low word for every input.
        prop_assert_eq!(imul(a, b), product(a, b, false).rem_euclid(1 << 32) as u32);
    }

    #[test]
    fn swizzle_follows_the_manual_table(b: [u32; 3], code in 0u32..64) {
        let expected = match SWIZZLE_PATTERNS.get(code as usize) {
            Some(pattern) => {
                let lanes: Vec<usize> = pattern.bytes().map(|c| (c - b'x') as usize).collect();
                [b[lanes[0]], b[lanes[1]], b[lanes[2]]]
            }
            None => [0, 0, 0],
        };
        prop_assert_eq!(swizzle(b, code), expected);
    }

    #[test]
    fn inc_and_dec_add_and_subtract_one_point_zero(a in word()) {
        prop_assert_eq!(inc(a), sign_carrying(a as i32 as i64 + ONE_Q));
        prop_assert_eq!(dec(a), sign_carrying(a as i32 as i64 - ONE_Q));
        prop_assert_eq!(inc(a), add(a, ONE));
        prop_assert_eq!(dec(a), sub(a, ONE));
    }

    #[test]
    fn compare_follows_the_rtl_table_for_all_8_codes(
        x in word(),
        (y, relation) in (word(), 0u16..8),
        pick in 0u8..3,
    ) {
        // Equal and negated pairs are rare at random: force a third of each.
        let y = match pick {
            0 => y,
            1 => x,
            _ => (-(x as i32 as i64)) as u32,
        };
        let (sx, sy) = (x as i32 as i64, y as i32 as i64);
        let greater = sx > sy;
        let equal = sx.abs() == sy.abs();
        let expected = match relation {
            0 => greater,
            1 => sx <= sy,
            2 => equal,
            3 => !equal,
            4 => sx >= sy || equal,
            5 => sx <= sy || equal,
            _ => false,
        };
        prop_assert_eq!(compare(x, y, relation), expected);
        // Only bits 2..0 of the opcode select the relation.
        prop_assert_eq!(compare(x, y, relation | 0x18), expected);
    }
}

/// Q15.17 raw word of a value.
fn q(v: f64) -> u32 {
    (v * 131072.0).round() as i32 as u32
}

#[test]
fn sqrt_is_the_digit_loop() {
    assert_eq!(sqrt_theia(0), 0);
    assert_eq!(sqrt_theia(q(4.0) as u64), q(2.0));
    assert_eq!(sqrt_theia(q(2.0) as u64), 0x2_D413);
    assert_eq!(vector_magnitude([q(3.0), q(-4.0), 0]), q(5.0));
    // Below 8192.0 it is floor(sqrt(x << 17)).
    let op = (8000u64 << 17) * 8000;
    assert_eq!(u128::from(sqrt_theia(op)), isqrt(u128::from(op) << 17));
    assert_eq!(sqrt_theia((1 << 43) - 1), 0x3FFF_FFFF);
    // At and above x = 2^60 the 32-bit registers wrap: the loop ends below the exact
    // root. Words from a transcription of §2.5's loop outside this crate, beside
    // floor(sqrt(x)):
    for (op, word, exact) in [
        (1u64 << 43, 0x4000_0000, 0x4000_0000), // x = 2^60 exactly: still right
        (1 << 44, 0x5A82_7998, 0x5A82_7999),
        (1 << 46, 0xB504_F331, 0xB504_F333),
        (u64::MAX, 0xFFFF_FFFC, 0xFFFF_FFFF), // x = 2^64 - 2^17
        (1 << 63, 0, 0),                      // x = op << 17 loses every bit
    ] {
        assert_eq!(sqrt_theia(op), word, "{op:#x}");
        let x = u128::from(op << 17);
        assert_eq!(isqrt(x), exact, "{op:#x}");
        assert_eq!(spec_sqrt_loop(op), word, "{op:#x}");
    }
    // |(8000, 8000, 8000)| = 13856.4 > 8192: one ulp below floor(sqrt) = 0x6C40D01B.
    assert_eq!(vector_magnitude([q(8000.0); 3]), 0x6C40_D01A);
}

/// The square root of §2.5 from its prose, on wide integers: x = (op << 17) mod 2^64 is
/// cut into 33 base-4 digits (a leading 0, then x's 32 from the top); each brings the
/// remainder up by one digit and tries twice the root plus one against it. Only what the
/// hardware keeps in 32-bit registers (`sum`, `diff`, the result) is reduced mod 2^32.
fn spec_sqrt_loop(op: u64) -> u32 {
    let register = |v: u128| v % (1 << 32);
    let mut x = (u128::from(op) << 17) % (1 << 64);
    let mut digits = Vec::with_capacity(33);
    for _ in 0..32 {
        digits.push(x % 4);
        x /= 4;
    }
    digits.push(0);
    let (mut sum, mut diff, mut root) = (0u128, 0u128, 0u128);
    for (group, digit) in digits.into_iter().enumerate().rev() {
        sum = register(2 * sum + 1);
        diff = register(4 * diff + digit);
        if sum <= diff {
            if group < 32 {
                root = register(root + (1 << group));
            }
            diff -= sum;
            sum += 1;
        } else {
            sum -= 1;
        }
        sum = register(sum);
    }
    root as u32
}

proptest! {
    #[test]
    fn sqrt_is_floor_sqrt_below_8192(op in 0u64..(1u64 << 43)) {
        prop_assert_eq!(u128::from(sqrt_theia(op)), isqrt(u128::from(op) << 17));
    }

    #[test]
    fn sqrt_above_8192_is_the_spec_loop(op in (1u64 << 43)..=u64::MAX) {
        prop_assert_eq!(sqrt_theia(op), spec_sqrt_loop(op));
    }
}
