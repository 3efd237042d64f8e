//! 64-bit vector lanes for AVX2 (four lanes) and AVX-512 (eight), so that one body runs
//! at either width: the acceleration structure's tile test (`machine::accel::rows`) and
//! the timing's reject rows (`timing::culled`).
//!
//! Every method is `#[inline(always)]` and wraps one instruction or two; it may only be
//! called from a function compiled for the implementation's features (the caller's
//! `#[target_feature]`), where it inlines to those instructions.

use std::arch::x86_64::*;

/// What [`biased_product`] adds to each quotient: a sum of three of them stays positive.
pub const BIAS: i64 = 1 << 45;

/// `alu::exact_scaled_product` + [`BIAS`] per lane, of sign-extended words. Without a
/// 64-bit arithmetic shift on AVX2, the product is shifted with 2^62 added (and
/// 2^17 − 1 where it is negative, to truncate toward zero) by a logical shift.
#[inline(always)]
pub unsafe fn biased_product<L: Lanes>(a: L, b: L) -> L {
    let product = a.mul32(b);
    let negative = L::splat(0).gt(product);
    let offset = L::splat(1 << 62).select(negative, L::splat((1 << 62) + 0x1_FFFF));
    product.add(offset).shr::<17>()
}

/// Integer lanes of 64 bits, their comparisons' masks and the same lanes as doubles.
///
/// # Safety
/// The CPU must have the features the implementation names ([`Lanes::available`]).
pub unsafe trait Lanes: Copy {
    type Mask: Copy;
    type Float: Copy;
    const LANES: usize;

    fn available() -> bool;
    unsafe fn splat(x: i64) -> Self;
    /// Lane i from `lanes[i]`.
    unsafe fn from_lanes(lanes: &[i64]) -> Self;
    /// Lane i from `words[i]`, sign-extended.
    unsafe fn from_words(words: &[i32]) -> Self;
    /// Lane i into `out[i]`.
    unsafe fn to_lanes(self, out: &mut [u64]);
    /// Lane i's low 16 bits into `out[i]`.
    unsafe fn to_low_halfwords(self, out: &mut [u16]);
    unsafe fn add(self, b: Self) -> Self;
    unsafe fn sub(self, b: Self) -> Self;
    unsafe fn and(self, b: Self) -> Self;
    /// `!self & b`.
    unsafe fn and_not(self, b: Self) -> Self;
    unsafe fn or(self, b: Self) -> Self;
    unsafe fn xor(self, b: Self) -> Self;
    /// The signed product of each lane's low 32 bits.
    unsafe fn mul32(self, b: Self) -> Self;
    /// |low 32 bits as i32| per lane (zero above).
    unsafe fn abs32(self) -> Self;
    unsafe fn shl<const S: u32>(self) -> Self;
    unsafe fn shr<const S: u32>(self) -> Self;
    /// Signed `self > b`.
    unsafe fn gt(self, b: Self) -> Self::Mask;
    unsafe fn eq(self, b: Self) -> Self::Mask;
    /// All ones in the lanes `mask` sets, zero in the others.
    unsafe fn mask_lanes(mask: Self::Mask) -> Self;
    /// `if_set` where `mask` is set, else `self`.
    unsafe fn select(self, mask: Self::Mask, if_set: Self) -> Self;
    unsafe fn mask_or(a: Self::Mask, b: Self::Mask) -> Self::Mask;
    /// `!a & b`.
    unsafe fn mask_andnot(a: Self::Mask, b: Self::Mask) -> Self::Mask;
    unsafe fn mask_not(a: Self::Mask) -> Self::Mask;
    /// Bit i set for lane i.
    unsafe fn bits(mask: Self::Mask) -> u32;
    unsafe fn splat_f(x: f64) -> Self::Float;
    unsafe fn as_f(self) -> Self::Float;
    unsafe fn from_f(x: Self::Float) -> Self;
    unsafe fn add_f(a: Self::Float, b: Self::Float) -> Self::Float;
    unsafe fn sub_f(a: Self::Float, b: Self::Float) -> Self::Float;
    unsafe fn mul_f(a: Self::Float, b: Self::Float) -> Self::Float;
    unsafe fn div_f(a: Self::Float, b: Self::Float) -> Self::Float;
    unsafe fn trunc_f(a: Self::Float) -> Self::Float;
    unsafe fn floor_f(a: Self::Float) -> Self::Float;
    unsafe fn is_zero_f(a: Self::Float) -> Self::Mask;
}

/// AVX2: four lanes; masks are lanes of all ones.
#[derive(Clone, Copy)]
pub struct Avx2(__m256i);

unsafe impl Lanes for Avx2 {
    type Mask = __m256i;
    type Float = __m256d;
    const LANES: usize = 4;

    fn available() -> bool {
        crate::emu::cpu::has_avx2()
    }
    #[inline(always)]
    unsafe fn splat(x: i64) -> Self {
        Avx2(_mm256_set1_epi64x(x))
    }
    #[inline(always)]
    unsafe fn from_lanes(l: &[i64]) -> Self {
        Avx2(_mm256_set_epi64x(l[3], l[2], l[1], l[0]))
    }
    #[inline(always)]
    unsafe fn from_words(words: &[i32]) -> Self {
        Avx2(_mm256_cvtepi32_epi64(_mm_loadu_si128(
            words[..4].as_ptr().cast(),
        )))
    }
    #[inline(always)]
    unsafe fn to_lanes(self, out: &mut [u64]) {
        _mm256_storeu_si256(out[..4].as_mut_ptr().cast(), self.0)
    }
    #[inline(always)]
    unsafe fn to_low_halfwords(self, out: &mut [u16]) {
        // Each lane's low 32 bits, then their low 16 (a saturating pack: callers' lanes
        // are below 2^16).
        let dwords = _mm256_permutevar8x32_epi32(self.0, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
        let low = _mm256_castsi256_si128(dwords);
        let halfwords = _mm_cvtsi128_si64(_mm_packus_epi32(low, low)) as u64;
        for (j, slot) in out[..4].iter_mut().enumerate() {
            *slot = (halfwords >> (16 * j)) as u16;
        }
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        Avx2(_mm256_add_epi64(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        Avx2(_mm256_sub_epi64(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn and(self, b: Self) -> Self {
        Avx2(_mm256_and_si256(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn and_not(self, b: Self) -> Self {
        Avx2(_mm256_andnot_si256(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn or(self, b: Self) -> Self {
        Avx2(_mm256_or_si256(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn xor(self, b: Self) -> Self {
        Avx2(_mm256_xor_si256(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn mul32(self, b: Self) -> Self {
        Avx2(_mm256_mul_epi32(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn abs32(self) -> Self {
        Avx2(_mm256_abs_epi32(self.0))
    }
    #[inline(always)]
    unsafe fn shl<const S: u32>(self) -> Self {
        Avx2(_mm256_sll_epi64(self.0, _mm_cvtsi32_si128(S as i32)))
    }
    #[inline(always)]
    unsafe fn shr<const S: u32>(self) -> Self {
        Avx2(_mm256_srl_epi64(self.0, _mm_cvtsi32_si128(S as i32)))
    }
    #[inline(always)]
    unsafe fn gt(self, b: Self) -> __m256i {
        _mm256_cmpgt_epi64(self.0, b.0)
    }
    #[inline(always)]
    unsafe fn eq(self, b: Self) -> __m256i {
        _mm256_cmpeq_epi64(self.0, b.0)
    }
    #[inline(always)]
    unsafe fn mask_lanes(mask: __m256i) -> Self {
        Avx2(mask)
    }
    #[inline(always)]
    unsafe fn select(self, mask: __m256i, if_set: Self) -> Self {
        Avx2(_mm256_blendv_epi8(self.0, if_set.0, mask))
    }
    #[inline(always)]
    unsafe fn mask_or(a: __m256i, b: __m256i) -> __m256i {
        _mm256_or_si256(a, b)
    }
    #[inline(always)]
    unsafe fn mask_andnot(a: __m256i, b: __m256i) -> __m256i {
        _mm256_andnot_si256(a, b)
    }
    #[inline(always)]
    unsafe fn mask_not(a: __m256i) -> __m256i {
        _mm256_xor_si256(a, _mm256_set1_epi64x(-1))
    }
    #[inline(always)]
    unsafe fn bits(mask: __m256i) -> u32 {
        _mm256_movemask_pd(_mm256_castsi256_pd(mask)) as u32
    }
    #[inline(always)]
    unsafe fn splat_f(x: f64) -> __m256d {
        _mm256_set1_pd(x)
    }
    #[inline(always)]
    unsafe fn as_f(self) -> __m256d {
        _mm256_castsi256_pd(self.0)
    }
    #[inline(always)]
    unsafe fn from_f(x: __m256d) -> Self {
        Avx2(_mm256_castpd_si256(x))
    }
    #[inline(always)]
    unsafe fn add_f(a: __m256d, b: __m256d) -> __m256d {
        _mm256_add_pd(a, b)
    }
    #[inline(always)]
    unsafe fn sub_f(a: __m256d, b: __m256d) -> __m256d {
        _mm256_sub_pd(a, b)
    }
    #[inline(always)]
    unsafe fn mul_f(a: __m256d, b: __m256d) -> __m256d {
        _mm256_mul_pd(a, b)
    }
    #[inline(always)]
    unsafe fn div_f(a: __m256d, b: __m256d) -> __m256d {
        _mm256_div_pd(a, b)
    }
    #[inline(always)]
    unsafe fn trunc_f(a: __m256d) -> __m256d {
        _mm256_round_pd::<_MM_FROUND_TO_ZERO>(a)
    }
    #[inline(always)]
    unsafe fn floor_f(a: __m256d) -> __m256d {
        _mm256_floor_pd(a)
    }
    #[inline(always)]
    unsafe fn is_zero_f(a: __m256d) -> __m256i {
        _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_EQ_OQ>(a, _mm256_setzero_pd()))
    }
}

/// AVX-512 (the foundation set): eight lanes; masks are mask registers.
#[derive(Clone, Copy)]
pub struct Avx512(__m512i);

unsafe impl Lanes for Avx512 {
    type Mask = __mmask8;
    type Float = __m512d;
    const LANES: usize = 8;

    fn available() -> bool {
        crate::emu::cpu::has_avx512()
    }
    #[inline(always)]
    unsafe fn splat(x: i64) -> Self {
        Avx512(_mm512_set1_epi64(x))
    }
    #[inline(always)]
    unsafe fn from_lanes(l: &[i64]) -> Self {
        Avx512(_mm512_loadu_si512(l[..8].as_ptr().cast()))
    }
    #[inline(always)]
    unsafe fn from_words(words: &[i32]) -> Self {
        Avx512(_mm512_cvtepi32_epi64(_mm256_loadu_si256(
            words[..8].as_ptr().cast(),
        )))
    }
    #[inline(always)]
    unsafe fn to_lanes(self, out: &mut [u64]) {
        _mm512_storeu_si512(out[..8].as_mut_ptr().cast(), self.0)
    }
    #[inline(always)]
    unsafe fn to_low_halfwords(self, out: &mut [u16]) {
        _mm_storeu_si128(out[..8].as_mut_ptr().cast(), _mm512_cvtepi64_epi16(self.0))
    }
    #[inline(always)]
    unsafe fn add(self, b: Self) -> Self {
        Avx512(_mm512_add_epi64(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn sub(self, b: Self) -> Self {
        Avx512(_mm512_sub_epi64(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn and(self, b: Self) -> Self {
        Avx512(_mm512_and_si512(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn and_not(self, b: Self) -> Self {
        Avx512(_mm512_andnot_si512(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn or(self, b: Self) -> Self {
        Avx512(_mm512_or_si512(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn xor(self, b: Self) -> Self {
        Avx512(_mm512_xor_si512(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn mul32(self, b: Self) -> Self {
        Avx512(_mm512_mul_epi32(self.0, b.0))
    }
    #[inline(always)]
    unsafe fn abs32(self) -> Self {
        Avx512(_mm512_abs_epi32(self.0))
    }
    #[inline(always)]
    unsafe fn shl<const S: u32>(self) -> Self {
        Avx512(_mm512_slli_epi64::<S>(self.0))
    }
    #[inline(always)]
    unsafe fn shr<const S: u32>(self) -> Self {
        Avx512(_mm512_srli_epi64::<S>(self.0))
    }
    #[inline(always)]
    unsafe fn gt(self, b: Self) -> __mmask8 {
        _mm512_cmpgt_epi64_mask(self.0, b.0)
    }
    #[inline(always)]
    unsafe fn eq(self, b: Self) -> __mmask8 {
        _mm512_cmpeq_epi64_mask(self.0, b.0)
    }
    #[inline(always)]
    unsafe fn mask_lanes(mask: __mmask8) -> Self {
        Avx512(_mm512_maskz_mov_epi64(mask, _mm512_set1_epi64(-1)))
    }
    #[inline(always)]
    unsafe fn select(self, mask: __mmask8, if_set: Self) -> Self {
        Avx512(_mm512_mask_blend_epi64(mask, self.0, if_set.0))
    }
    #[inline(always)]
    unsafe fn mask_or(a: __mmask8, b: __mmask8) -> __mmask8 {
        a | b
    }
    #[inline(always)]
    unsafe fn mask_andnot(a: __mmask8, b: __mmask8) -> __mmask8 {
        !a & b
    }
    #[inline(always)]
    unsafe fn mask_not(a: __mmask8) -> __mmask8 {
        !a
    }
    #[inline(always)]
    unsafe fn bits(mask: __mmask8) -> u32 {
        u32::from(mask)
    }
    #[inline(always)]
    unsafe fn splat_f(x: f64) -> __m512d {
        _mm512_set1_pd(x)
    }
    #[inline(always)]
    unsafe fn as_f(self) -> __m512d {
        _mm512_castsi512_pd(self.0)
    }
    #[inline(always)]
    unsafe fn from_f(x: __m512d) -> Self {
        Avx512(_mm512_castpd_si512(x))
    }
    #[inline(always)]
    unsafe fn add_f(a: __m512d, b: __m512d) -> __m512d {
        _mm512_add_pd(a, b)
    }
    #[inline(always)]
    unsafe fn sub_f(a: __m512d, b: __m512d) -> __m512d {
        _mm512_sub_pd(a, b)
    }
    #[inline(always)]
    unsafe fn mul_f(a: __m512d, b: __m512d) -> __m512d {
        _mm512_mul_pd(a, b)
    }
    #[inline(always)]
    unsafe fn div_f(a: __m512d, b: __m512d) -> __m512d {
        _mm512_div_pd(a, b)
    }
    #[inline(always)]
    unsafe fn trunc_f(a: __m512d) -> __m512d {
        _mm512_roundscale_pd::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(a)
    }
    #[inline(always)]
    unsafe fn floor_f(a: __m512d) -> __m512d {
        _mm512_roundscale_pd::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(a)
    }
    #[inline(always)]
    unsafe fn is_zero_f(a: __m512d) -> __mmask8 {
        _mm512_cmp_pd_mask::<_CMP_EQ_OQ>(a, _mm512_setzero_pd())
    }
}
