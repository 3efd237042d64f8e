//! What this CPU offers the vector paths, asked at run time in one place (the standard
//! library caches the answer). Each vector path is compiled for its features with
//! `#[target_feature]` and taken only when these say yes; elsewhere the portable path runs,
//! computing the same words.

/// AVX2: lock-step core groups (8 lanes of 32 bits) and the tile candidate tests.
#[inline]
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// AVX-512F: the tile candidate tests and the timing's reject rows, eight lanes of 64
/// bits.
#[inline]
pub fn has_avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// AVX2 and FMA: the acceleration structure's float kernel.
#[inline]
pub fn has_avx2_and_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        has_avx2() && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}
