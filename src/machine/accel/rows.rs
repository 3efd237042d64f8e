//! Candidate tests four pixels at a time. The pixels of one tile row share the tile's
//! candidates, so BIU's reject test ([`Culler::rejects_candidate`]) runs once per candidate
//! for all four, one 64-bit vector lane per pixel: the ALU's exact products, DIV as
//! [`alu::div_by_float`] computes it (candidates are mostly nearly parallel rays, where
//! the quotients may wrap), and BIU's three jumps. Each pixel then visits only the
//! candidates BIU accepts for its ray.

use super::{Accel, TILE};
use crate::core::alu::{self, Vec3};
use crate::machine::cull::{Biu, Culler, Exit};

/// Pixels per tile row: one lane each.
pub const ROW_PIXELS: usize = TILE as usize;

/// A candidate one pixel must look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Open {
    /// Its place in the tile's candidates.
    pub position: u32,
    /// Whether its P was beyond the multiplier's exact range for the vector test, so
    /// [`Culler::rejects_candidate`] must tell; otherwise BIU accepts it and MAIN runs.
    pub untested: bool,
    /// What the candidates BIU rejects between the previous open one and this one cost.
    pub skipped_instructions: u32,
}

/// The candidates' verdicts for the four pixels of one tile row, kept by each core for
/// the row it is in (the allocation is reused from row to row).
#[derive(Clone, Debug, Default)]
pub struct RowVerdicts {
    /// The tile and the pixel row computed, if any.
    key: Option<(usize, u32)>,
    open: [Vec<Open>; ROW_PIXELS],
    /// What the rejected candidates after each lane's last open one cost.
    tail_instructions: [u64; ROW_PIXELS],
}

impl RowVerdicts {
    /// The verdicts for pixel (x, y)'s tile row, computed now if they are not at hand:
    /// its open candidates, and what the rejected ones after the last of them cost.
    pub fn for_pixel(&mut self, accel: &Accel, culler: &Culler, x: u32, y: u32) -> (&[Open], u64) {
        let tile = accel.tile_index(x, y);
        if self.key != Some((tile, y)) {
            let x0 = x - x % TILE;
            // Lanes past the image's edge repeat its last ray; nobody reads them.
            let last = accel.width - 1;
            let rays: [Vec3; ROW_PIXELS] = std::array::from_fn(|lane| {
                let x = (x0 + lane as u32).min(last);
                accel.ray(x, y).expect("inside the image")
            });
            self.compute(culler, accel.candidates_of(tile), &rays);
            self.key = Some((tile, y));
        }
        let lane = (x % TILE) as usize;
        (&self.open[lane], self.tail_instructions[lane])
    }

    /// Tests `candidates` under one ray per lane.
    pub fn compute(&mut self, culler: &Culler, candidates: &[u32], rays: &[Vec3; ROW_PIXELS]) {
        self.key = None;
        for open in &mut self.open {
            open.clear();
        }
        // The vector test is the faithful BIU's; the fixed one's few candidates per tile
        // take the scalar test.
        #[cfg(target_arch = "x86_64")]
        if crate::cpu::has_avx2() && culler.biu() == Biu::Faithful {
            // SAFETY: the CPU has AVX2, checked just above.
            unsafe { avx2::compute(self, culler, candidates, rays) };
            return;
        }
        self.compute_portable(culler, candidates, rays);
    }

    /// [`RowVerdicts::compute`] lane by lane, with the scalar test (which leaves nothing
    /// untested).
    fn compute_portable(&mut self, culler: &Culler, candidates: &[u32], rays: &[Vec3; ROW_PIXELS]) {
        for (lane, &ray) in rays.iter().enumerate() {
            let mut skipped = 0u64;
            for (position, &index) in candidates.iter().enumerate() {
                match culler.rejects_candidate(index as usize, ray) {
                    Some(exit) => skipped += exit.instructions(),
                    None => {
                        self.open[lane].push(Open {
                            position: position as u32,
                            untested: false,
                            skipped_instructions: skipped as u32,
                        });
                        skipped = 0;
                    }
                }
            }
            self.tail_instructions[lane] = skipped;
        }
    }

    /// Records candidate `position`'s verdicts: `open` and `untested` are lane bit masks, and
    /// `skipped` is, per lane, what the rejected candidates since that lane's previous open
    /// one cost.
    #[inline(always)]
    fn push_open(&mut self, position: usize, open: u32, untested: u32, skipped: [u64; ROW_PIXELS]) {
        for (lane, list) in self.open.iter_mut().enumerate() {
            if open >> lane & 1 == 1 {
                list.push(Open {
                    position: position as u32,
                    untested: untested >> lane & 1 == 1,
                    skipped_instructions: skipped[lane] as u32,
                });
            }
        }
    }
}

/// What a candidate costs a lane that BIU rejects it on, by exit.
const EXIT_COSTS: [u64; 3] = [
    Exit::U.instructions(),
    Exit::V.instructions(),
    Exit::Sum.instructions(),
];

#[cfg(target_arch = "x86_64")]
mod avx2 {
    //! The test in 64-bit lanes, words zero-extended. A scaled product is kept biased by 2^45: for an exact
    //! multiplicand a, |a·b| < 2^62, so a·b + 2^62 (+ 2^17 − 1 when negative: truncation
    //! toward zero) is non-negative and a logical shift by 17 gives the arithmetic one plus
    //! 2^45. Sums drop the biases before [`alu::pack`]'s bit selection.

    use std::arch::x86_64::*;

    use super::{alu, Culler, RowVerdicts, Vec3, EXIT_COSTS, ROW_PIXELS};

    const BIAS: i64 = 1 << 45;

    #[inline]
    #[target_feature(enable = "avx2")]
    fn splat(x: u32) -> __m256i {
        _mm256_set1_epi64x(i64::from(x))
    }

    /// alu::exact_scaled_product + 2^45, per lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn biased_product(a: __m256i, b: __m256i) -> __m256i {
        let product = _mm256_mul_epi32(a, b);
        let negative = _mm256_cmpgt_epi64(_mm256_setzero_si256(), product);
        let offset = _mm256_blendv_epi8(
            _mm256_set1_epi64x(1 << 62),
            _mm256_set1_epi64x((1 << 62) + 0x1_FFFF),
            negative,
        );
        _mm256_srli_epi64::<17>(_mm256_add_epi64(product, offset))
    }

    /// alu::pack, per lane: the result's low 32 bits, zero above.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn pack(r: __m256i) -> __m256i {
        let sign = _mm256_slli_epi64::<31>(_mm256_srli_epi64::<63>(r));
        _mm256_or_si256(sign, _mm256_and_si256(r, _mm256_set1_epi64x(0x7FFF_FFFF)))
    }

    /// alu::cross_exact(a, b) for per-lane `a` and a constant `b`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn cross(a: &[__m256i; 3], b: Vec3) -> [__m256i; 3] {
        let b = b.map(|x| splat(x));
        let term = |i: usize, j: usize, k: usize, l: usize| {
            pack(_mm256_sub_epi64(
                biased_product(a[i], b[j]),
                biased_product(a[k], b[l]),
            ))
        };
        [term(1, 2, 2, 1), term(2, 0, 0, 2), term(0, 1, 1, 0)]
    }

    /// alu::dot_exact(a, b) for exact multiplicands `a`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn dot(a: &[__m256i; 3], b: &[__m256i; 3]) -> __m256i {
        let sum = _mm256_add_epi64(
            _mm256_add_epi64(biased_product(a[0], b[0]), biased_product(a[1], b[1])),
            biased_product(a[2], b[2]),
        );
        pack(_mm256_sub_epi64(sum, _mm256_set1_epi64x(3 * BIAS)))
    }

    /// Per lane, whether a 32-bit word (zero above) is an alu::exact_multiplicand.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn exact_multiplicand(w: __m256i) -> __m256i {
        let shifted = _mm256_and_si256(
            _mm256_add_epi64(w, _mm256_set1_epi64x(0x5555_5555)),
            _mm256_set1_epi64x(0xFFFF_FFFF),
        );
        let beyond = _mm256_cmpgt_epi64(shifted, _mm256_set1_epi64x(0xAAAA_AAAA));
        _mm256_xor_si256(beyond, _mm256_set1_epi64x(-1))
    }

    /// Per lane, whether the 32-bit words x and y have different signs.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn signs_differ(x: __m256i, y: __m256i) -> __m256i {
        _mm256_cmpgt_epi64(_mm256_xor_si256(x, y), _mm256_set1_epi64x(0x7FFF_FFFF))
    }

    /// A 32-bit word (zero above) sign-extended to its lane.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn sign_extend(w: __m256i) -> __m256i {
        let sign = _mm256_set1_epi64x(0x8000_0000);
        _mm256_sub_epi64(_mm256_xor_si256(w, sign), sign)
    }

    /// Per lane, a value below 2^52 as a double (exactly).
    #[inline]
    #[target_feature(enable = "avx2")]
    fn to_f64(x: __m256i) -> __m256d {
        let magic = _mm256_set1_pd(4_503_599_627_370_496.0);
        _mm256_sub_pd(
            _mm256_castsi256_pd(_mm256_or_si256(x, _mm256_castpd_si256(magic))),
            magic,
        )
    }

    /// alu::div per lane for 32-bit words (zero above), the way alu::div_by_float computes
    /// it: |a|·2^17 and |b| are exact doubles, the truncated quotient is the integer one,
    /// and its remainder modulo 2^31 is exact too. `b_magnitude` is |b| as a double.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn div(a: __m256i, b: __m256i, b_magnitude: __m256d) -> __m256i {
        let dividend = _mm256_mul_pd(to_f64(_mm256_abs_epi32(a)), _mm256_set1_pd(131_072.0));
        let q = _mm256_round_pd::<_MM_FROUND_TO_ZERO>(_mm256_div_pd(dividend, b_magnitude));
        let wraps = _mm256_floor_pd(_mm256_mul_pd(q, _mm256_set1_pd(1.0 / 2_147_483_648.0)));
        let low = _mm256_sub_pd(q, _mm256_mul_pd(wraps, _mm256_set1_pd(2_147_483_648.0)));
        let magic = _mm256_set1_pd(4_503_599_627_370_496.0);
        let low = _mm256_and_si256(
            _mm256_castpd_si256(_mm256_add_pd(low, magic)),
            _mm256_set1_epi64x(0xFFFF_FFFF),
        );
        // A zero divisor gives the divider's all-ones 28-bit quotient.
        let by_zero = _mm256_castpd_si256(_mm256_cmp_pd::<_CMP_EQ_OQ>(
            b_magnitude,
            _mm256_setzero_pd(),
        ));
        let quotient = _mm256_blendv_epi8(low, _mm256_set1_epi64x(0x0FFF_FFFF), by_zero);
        let negated = _mm256_and_si256(
            _mm256_sub_epi64(_mm256_setzero_si256(), quotient),
            _mm256_set1_epi64x(0xFFFF_FFFF),
        );
        _mm256_blendv_epi8(quotient, negated, signs_differ(a, b))
    }

    /// Δ, H2 and H3 of one candidate under four rays (cull::Culler::reject_state's), and
    /// the lanes whose P is beyond the multiplier's exact range, where they are not.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn biu_values(k: &crate::machine::cull::TriangleConstants, ray: &[__m256i; 3]) -> [__m256i; 4] {
        let p = cross(ray, k.e2);
        let (e1, t, q) = (
            k.e1.map(|x| splat(x)),
            k.t.map(|x| splat(x)),
            k.q.map(|x| splat(x)),
        );
        let untested = _mm256_xor_si256(
            _mm256_and_si256(
                _mm256_and_si256(exact_multiplicand(p[0]), exact_multiplicand(p[1])),
                exact_multiplicand(p[2]),
            ),
            _mm256_set1_epi64x(-1),
        );
        [dot(&p, &e1), dot(&p, &t), dot(&q, ray), untested]
    }

    /// cull::exact_verdict per lane: the lanes BIU rejects, and what each of them costs.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn verdicts(h2: __m256i, h3: __m256i, delta: __m256i) -> (__m256i, __m256i) {
        let d = to_f64(_mm256_abs_epi32(delta));
        let (u, v) = (div(h2, delta, d), div(h3, delta, d));
        // JGEX u, 0 and JGEX v, 0 fail on a negative word; JLEX R2, 1.0 on R2 > 1.0.
        let negative = |w: __m256i| _mm256_cmpgt_epi64(w, _mm256_set1_epi64x(0x7FFF_FFFF));
        let (u_negative, v_negative) = (negative(u), negative(v));
        let r2 = pack(_mm256_add_epi64(sign_extend(u), sign_extend(v)));
        let beyond_one = _mm256_cmpgt_epi64(sign_extend(r2), _mm256_set1_epi64x(1 << 17));
        let exit_u = u_negative;
        let exit_v = _mm256_andnot_si256(u_negative, v_negative);
        let exit_sum = _mm256_andnot_si256(_mm256_or_si256(u_negative, v_negative), beyond_one);
        let costs = EXIT_COSTS.map(|c| _mm256_set1_epi64x(c as i64));
        let cost = _mm256_or_si256(
            _mm256_or_si256(
                _mm256_and_si256(exit_u, costs[0]),
                _mm256_and_si256(exit_v, costs[1]),
            ),
            _mm256_and_si256(exit_sum, costs[2]),
        );
        let rejected = _mm256_or_si256(_mm256_or_si256(exit_u, exit_v), exit_sum);
        (rejected, cost)
    }

    /// Lane masks of one candidate under four rays: (open, untested, what a rejecting
    /// lane costs), as cull::exact_verdict decides them. Lanes whose P is beyond the
    /// multiplier's exact range are left open and untested.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn lanes(
        k: &crate::machine::cull::TriangleConstants,
        ray: &[__m256i; 3],
    ) -> (__m256i, __m256i, __m256i) {
        let [delta, h2, h3, untested] = biu_values(k, ray);
        let (rejected, cost) = verdicts(h2, h3, delta);
        let rejected = _mm256_andnot_si256(untested, rejected);
        let open = _mm256_xor_si256(rejected, _mm256_set1_epi64x(-1));
        (open, untested, _mm256_and_si256(rejected, cost))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn lanes_of(v: __m256i) -> [u64; ROW_PIXELS] {
        [
            _mm256_extract_epi64::<0>(v) as u64,
            _mm256_extract_epi64::<1>(v) as u64,
            _mm256_extract_epi64::<2>(v) as u64,
            _mm256_extract_epi64::<3>(v) as u64,
        ]
    }

    /// [`RowVerdicts::compute`] with AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) fn compute(
        out: &mut RowVerdicts,
        culler: &Culler,
        candidates: &[u32],
        rays: &[Vec3; ROW_PIXELS],
    ) {
        // Rays are exact multiplicands (Accel::build checks), sign-extended per lane.
        let ray: [__m256i; 3] = std::array::from_fn(|i| {
            let lane = |l: usize| i64::from(rays[l][i] as i32);
            _mm256_set_epi64x(lane(3), lane(2), lane(1), lane(0))
        });
        let constants = culler.constants();
        let mut skipped = _mm256_setzero_si256();
        for (position, &index) in candidates.iter().enumerate() {
            let k = &constants[index as usize];
            let (open, untested, cost) = if alu::exact_multiplicands(k.q) {
                lanes(k, &ray)
            } else {
                let all = _mm256_set1_epi64x(-1);
                (all, all, _mm256_setzero_si256())
            };
            skipped = _mm256_add_epi64(skipped, cost);
            let open_lanes = _mm256_movemask_pd(_mm256_castsi256_pd(open)) as u32;
            if open_lanes != 0 {
                let untested_lanes = _mm256_movemask_pd(_mm256_castsi256_pd(untested)) as u32;
                out.push_open(position, open_lanes, untested_lanes, lanes_of(skipped));
                skipped = _mm256_andnot_si256(open, skipped);
            }
        }
        out.tail_instructions = lanes_of(skipped);
    }

    #[cfg(test)]
    mod tests {
        use super::super::tests as rows_tests;
        use super::*;
        use crate::machine::cull::{exact_verdict, Exit, TriangleConstants};

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

        /// One word per lane, zero-extended.
        #[target_feature(enable = "avx2")]
        fn lanes(words: [u32; ROW_PIXELS]) -> __m256i {
            let w = words.map(i64::from);
            _mm256_set_epi64x(w[3], w[2], w[1], w[0])
        }

        /// The vector verdict is cull::exact_verdict's on every combination of edge words,
        /// and on numerators at the wrap of a nonzero Δ's quotients.
        #[test]
        #[cfg_attr(not(avx2_host), ignore = "needs AVX2")]
        fn vector_verdicts_are_the_exact_ones_at_the_edges() {
            assert!(crate::cpu::has_avx2(), "no AVX2");
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
            for chunk in cases.chunks(ROW_PIXELS) {
                let case = |lane: usize| chunk[lane.min(chunk.len() - 1)];
                let words =
                    |pick: fn((u32, u32, u32)) -> u32| std::array::from_fn(|l| pick(case(l)));
                let (h2, h3, delta) = (words(|c| c.0), words(|c| c.1), words(|c| c.2));
                // SAFETY: the CPU has AVX2, checked above.
                let (rejected, cost) = unsafe {
                    let (rejected, cost) = verdicts(lanes(h2), lanes(h3), lanes(delta));
                    (lanes_of(rejected), lanes_of(cost))
                };
                for lane in 0..chunk.len() {
                    let (h2, h3, delta) = case(lane);
                    let want = exact_verdict(h2, h3, delta);
                    let got = (rejected[lane] != 0).then_some(cost[lane]);
                    assert_eq!(
                        got,
                        want.map(Exit::instructions),
                        "{h2:#x} {h3:#x} {delta:#x}"
                    );
                }
            }
        }

        /// Δ, H2 and H3 are the ALU's, and the lanes beyond the exact range are the ones
        /// marked, for edge rays and constants.
        #[test]
        #[cfg_attr(not(avx2_host), ignore = "needs AVX2")]
        fn vector_products_are_the_alus_at_the_edges() {
            assert!(crate::cpu::has_avx2(), "no AVX2");
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
                    let rays: [Vec3; ROW_PIXELS] = std::array::from_fn(|l| {
                        [
                            exact[l],
                            exact[(l + n) % exact.len()],
                            exact[(l * 3 + 1) % exact.len()],
                        ]
                    });
                    // SAFETY: the CPU has AVX2, checked above.
                    let values = unsafe {
                        // Sign-extended, as RowVerdicts::compute loads rays.
                        let ray = [0, 1, 2].map(|i| sign_extend(lanes(rays.map(|r| r[i]))));
                        biu_values(&k, &ray).map(|v| lanes_of(v))
                    };
                    for (lane, &r) in rays.iter().enumerate() {
                        let p = alu::cross(r, k.e2);
                        let what = format!("{a:#x} {b:#x} lane {lane}");
                        assert_eq!(values[3][lane] != 0, !alu::exact_multiplicands(p), "{what}");
                        assert_eq!(values[2][lane], u64::from(alu::dot(k.q, r)), "{what}");
                        if alu::exact_multiplicands(p) {
                            assert_eq!(values[0][lane], u64::from(alu::dot(p, k.e1)), "{what}");
                            assert_eq!(values[1][lane], u64::from(alu::dot(p, k.t)), "{what}");
                        }
                    }
                    // The whole row test, vector and lane by lane, gives BIU's verdicts.
                    let culler = Culler::from_constants(vec![k; 3]);
                    let candidates = [0, 2];
                    let (mut vector, mut portable) =
                        (RowVerdicts::default(), RowVerdicts::default());
                    // SAFETY: the CPU has AVX2, checked above.
                    unsafe { compute(&mut vector, &culler, &candidates, &rays) };
                    portable.compute_portable(&culler, &candidates, &rays);
                    for (lane, &ray) in rays.iter().enumerate() {
                        let want = rows_tests::expected(&culler, &candidates, ray);
                        for (path, rows) in [("vector", &vector), ("portable", &portable)] {
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
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_rng::Rng;
    use super::*;
    use crate::machine::cull::TriangleConstants;

    /// A lane's verdicts as the per-pixel loop reads them, with untested candidates
    /// resolved by BIU's scalar verdict: the open positions, what the rejected candidates
    /// before each cost, and what those after the last cost.
    pub(super) fn resolved(
        rows: &RowVerdicts,
        culler: &Culler,
        candidates: &[u32],
        ray: Vec3,
        lane: usize,
    ) -> (Vec<u32>, Vec<u64>, u64) {
        let (mut open, mut costs, mut pending) = (Vec::new(), Vec::new(), 0);
        for entry in &rows.open[lane] {
            pending += u64::from(entry.skipped_instructions);
            let index = candidates[entry.position as usize] as usize;
            match culler.rejects_candidate(index, ray) {
                Some(exit) if entry.untested => pending += exit.instructions(),
                _ => {
                    open.push(entry.position);
                    costs.push(pending);
                    pending = 0;
                }
            }
        }
        (open, costs, pending + rows.tail_instructions[lane])
    }

    /// The same from BIU's scalar verdict on every candidate.
    pub(super) fn expected(
        culler: &Culler,
        candidates: &[u32],
        ray: Vec3,
    ) -> (Vec<u32>, Vec<u64>, u64) {
        let (mut open, mut costs, mut pending) = (Vec::new(), Vec::new(), 0);
        for (position, &index) in candidates.iter().enumerate() {
            match culler.rejects(index as usize, ray) {
                Some(exit) => pending += exit.instructions(),
                None => {
                    open.push(position as u32);
                    costs.push(pending);
                    pending = 0;
                }
            }
        }
        (open, costs, pending)
    }

    /// A triangle for `ray`: often nearly parallel to it (Δ within a few raw units of 0,
    /// where DIV wraps), sometimes with coordinates past the multiplier's exact range.
    fn triangle(rng: &mut Rng, ray: Vec3) -> TriangleConstants {
        let size = [10, 16, 20, 24, 31][(rng.next() % 5) as usize];
        let e2 = rng.vec(size);
        let e1 = if rng.next() % 3 == 0 {
            rng.vec(size)
        } else {
            // a·R + b·E2 + noise: P·E1 = (R × E2)·E1 is then near 0.
            let (a, b) = (rng.raw(8) as i64, rng.raw(8) as i64);
            let noise = rng.raw(4) as i64;
            std::array::from_fn(|i| {
                (a * (ray[i] as i32 as i64) / 256 + b * (e2[i] as i32 as i64) / 256 + noise) as u32
            })
        };
        let t_size = [12, 20, 26, 31][(rng.next() % 4) as usize];
        let t = rng.vec(t_size);
        TriangleConstants {
            e1,
            e2,
            t,
            q: alu::cross(t, e1),
            h1: 0,
        }
    }

    /// The vector test and the lane-by-lane one give every lane exactly BIU's verdicts
    /// (which candidates MAIN must run for, what the others cost, by exit), on triangles
    /// built to sit at the wrap-arounds.
    #[test]
    fn row_verdicts_are_bius_verdicts_for_each_lane() {
        let mut rng = Rng(0x0D0E_5EED_0001);
        let (mut open_seen, mut untested_seen, mut exits_seen) = (0, 0, [0u32; 3]);
        for case in 0..3_000 {
            let base = rng.vec(17);
            let rays: [Vec3; ROW_PIXELS] = std::array::from_fn(|_| {
                std::array::from_fn(|i| (base[i] as i32).wrapping_add(rng.raw(8)) as u32)
            });
            let constants: Vec<_> = (0..24).map(|_| triangle(&mut rng, rays[0])).collect();
            let culler = Culler::from_constants(constants);
            let candidates: Vec<u32> = (0..24).filter(|_| rng.next() % 4 != 0).collect();
            let mut rows = RowVerdicts::default();
            let mut portable = RowVerdicts::default();
            rows.compute(&culler, &candidates, &rays);
            portable.compute_portable(&culler, &candidates, &rays);
            for (lane, &ray) in rays.iter().enumerate() {
                let want = expected(&culler, &candidates, ray);
                let what = format!("case {case}, lane {lane}");
                assert_eq!(
                    resolved(&rows, &culler, &candidates, ray, lane),
                    want,
                    "{what}"
                );
                assert_eq!(
                    resolved(&portable, &culler, &candidates, ray, lane),
                    want,
                    "{what}"
                );
                assert!(portable.open[lane].iter().all(|open| !open.untested));
                open_seen += want.0.len();
                untested_seen += rows.open[lane].iter().filter(|open| open.untested).count();
                for &index in &candidates {
                    if let Some(exit) = culler.rejects(index as usize, ray) {
                        exits_seen[exit as usize] += 1;
                    }
                }
            }
        }
        // The cases reach accepted candidates, the scalar fallback and every exit.
        assert!(open_seen > 1_000, "{open_seen} open");
        assert!(untested_seen > 1_000, "{untested_seen} untested");
        assert!(
            exits_seen.iter().all(|&n| n > 1_000),
            "exits {exits_seen:?}"
        );
    }
}
