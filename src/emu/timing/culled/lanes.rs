//! The vectors the reject-row kernel ([`super::kernel`]) is written over: 64-bit lanes,
//! one triangle each, four to an AVX2 register ([`Avx2`]) and eight to an AVX-512 one
//! ([`Avx512`]). A mask is a vector too, all ones in the lanes it holds, so that one
//! body serves both widths; on AVX-512 the compiler keeps most masks in mask registers.

use std::arch::x86_64::*;

use super::RowEntry;

/// A vector of 64-bit lanes. Every method runs its implementation's instructions, so it
/// is unsafe: call it only where the CPU has them (the kernel's entry points are compiled
/// for them and taken only where `emu::cpu` says the CPU has them).
pub(super) trait Lanes: Copy {
    /// Lanes per vector.
    const WIDTH: usize;
    unsafe fn splat(x: i64) -> Self;
    /// The first [`Lanes::WIDTH`] words of `words`, sign-extended.
    unsafe fn load(words: &[i32]) -> Self;
    unsafe fn add(self, other: Self) -> Self;
    unsafe fn sub(self, other: Self) -> Self;
    unsafe fn and(self, other: Self) -> Self;
    /// `!self & other`.
    unsafe fn and_not(self, other: Self) -> Self;
    unsafe fn or(self, other: Self) -> Self;
    unsafe fn xor(self, other: Self) -> Self;
    /// The mask of the lanes where `self > other` (signed).
    unsafe fn gt(self, other: Self) -> Self;
    /// The mask of the lanes where `self == other`.
    unsafe fn eq(self, other: Self) -> Self;
    unsafe fn shl(self, bits: i32) -> Self;
    /// Logical shift right.
    unsafe fn shr(self, bits: i32) -> Self;
    /// The signed 64-bit products of the lanes' low 32 bits.
    unsafe fn mul_low_words(self, other: Self) -> Self;
    /// Bit `j`: whether lane `j` is negative (set in a mask).
    unsafe fn signs(self) -> u32;
    /// Each lane's low 16 bits into `out[j]`, `out` holding [`Lanes::WIDTH`] entries.
    unsafe fn store_entries(self, out: &mut [RowEntry]);
}

/// Four lanes in an AVX2 register.
#[derive(Clone, Copy)]
pub(super) struct Avx2(__m256i);

impl Lanes for Avx2 {
    const WIDTH: usize = 4;
    #[inline(always)]
    unsafe fn splat(x: i64) -> Self {
        Avx2(_mm256_set1_epi64x(x))
    }
    #[inline(always)]
    unsafe fn load(words: &[i32]) -> Self {
        let words = &words[..Self::WIDTH];
        Avx2(_mm256_cvtepi32_epi64(_mm_loadu_si128(
            words.as_ptr().cast(),
        )))
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        Avx2(_mm256_add_epi64(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn sub(self, other: Self) -> Self {
        Avx2(_mm256_sub_epi64(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn and(self, other: Self) -> Self {
        Avx2(_mm256_and_si256(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn and_not(self, other: Self) -> Self {
        Avx2(_mm256_andnot_si256(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn or(self, other: Self) -> Self {
        Avx2(_mm256_or_si256(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        Avx2(_mm256_xor_si256(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn gt(self, other: Self) -> Self {
        Avx2(_mm256_cmpgt_epi64(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn eq(self, other: Self) -> Self {
        Avx2(_mm256_cmpeq_epi64(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn shl(self, bits: i32) -> Self {
        Avx2(_mm256_sll_epi64(self.0, _mm_cvtsi32_si128(bits)))
    }
    #[inline(always)]
    unsafe fn shr(self, bits: i32) -> Self {
        Avx2(_mm256_srl_epi64(self.0, _mm_cvtsi32_si128(bits)))
    }
    #[inline(always)]
    unsafe fn mul_low_words(self, other: Self) -> Self {
        Avx2(_mm256_mul_epi32(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn signs(self) -> u32 {
        _mm256_movemask_pd(_mm256_castsi256_pd(self.0)) as u32
    }
    #[inline(always)]
    unsafe fn store_entries(self, out: &mut [RowEntry]) {
        // Each lane's low 32 bits, then their low 16 (entries are below 2^16).
        let dwords = _mm256_permutevar8x32_epi32(self.0, _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
        let low = _mm256_castsi256_si128(dwords);
        let words = _mm_cvtsi128_si64(_mm_packus_epi32(low, low)) as u64;
        for (j, slot) in out[..Self::WIDTH].iter_mut().enumerate() {
            *slot = (words >> (16 * j)) as RowEntry;
        }
    }
}

/// Eight lanes in an AVX-512 register.
#[derive(Clone, Copy)]
pub(super) struct Avx512(__m512i);

impl Lanes for Avx512 {
    const WIDTH: usize = 8;
    #[inline(always)]
    unsafe fn splat(x: i64) -> Self {
        Avx512(_mm512_set1_epi64(x))
    }
    #[inline(always)]
    unsafe fn load(words: &[i32]) -> Self {
        let words = &words[..Self::WIDTH];
        Avx512(_mm512_cvtepi32_epi64(_mm256_loadu_si256(
            words.as_ptr().cast(),
        )))
    }
    #[inline(always)]
    unsafe fn add(self, other: Self) -> Self {
        Avx512(_mm512_add_epi64(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn sub(self, other: Self) -> Self {
        Avx512(_mm512_sub_epi64(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn and(self, other: Self) -> Self {
        Avx512(_mm512_and_si512(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn and_not(self, other: Self) -> Self {
        Avx512(_mm512_andnot_si512(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn or(self, other: Self) -> Self {
        Avx512(_mm512_or_si512(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn xor(self, other: Self) -> Self {
        Avx512(_mm512_xor_si512(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn gt(self, other: Self) -> Self {
        let mask = _mm512_cmpgt_epi64_mask(self.0, other.0);
        Avx512(_mm512_maskz_mov_epi64(mask, _mm512_set1_epi64(-1)))
    }
    #[inline(always)]
    unsafe fn eq(self, other: Self) -> Self {
        let mask = _mm512_cmpeq_epi64_mask(self.0, other.0);
        Avx512(_mm512_maskz_mov_epi64(mask, _mm512_set1_epi64(-1)))
    }
    #[inline(always)]
    unsafe fn shl(self, bits: i32) -> Self {
        Avx512(_mm512_sll_epi64(self.0, _mm_cvtsi32_si128(bits)))
    }
    #[inline(always)]
    unsafe fn shr(self, bits: i32) -> Self {
        Avx512(_mm512_srl_epi64(self.0, _mm_cvtsi32_si128(bits)))
    }
    #[inline(always)]
    unsafe fn mul_low_words(self, other: Self) -> Self {
        Avx512(_mm512_mul_epi32(self.0, other.0))
    }
    #[inline(always)]
    unsafe fn signs(self) -> u32 {
        u32::from(_mm512_cmplt_epi64_mask(self.0, _mm512_setzero_si512()))
    }
    #[inline(always)]
    unsafe fn store_entries(self, out: &mut [RowEntry]) {
        let out = &mut out[..Self::WIDTH];
        _mm_storeu_si128(out.as_mut_ptr().cast(), _mm512_cvtepi64_epi16(self.0));
    }
}
