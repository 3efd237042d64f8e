//! One register row of `N` cores stored lane by lane ([`Row`]: component `c` of lane `l`
//! is `row.0[c][l]`), with the vector operations the interpreter computes on whole rows
//! (one body for a lone core, `N = 1`, and a lock-step group), and the register array of
//! `N` cores ([`Rows`]).

// Lane loops index several lane-wide arrays at once: the shape the vectoriser wants.
#![allow(clippy::needless_range_loop)]

use super::alu::{self, Vec3};
use super::mask::{lanes_of, LaneMask};
use super::op::REGISTER_ARRAY_ROWS;

/// One register row of `N` cores: component `c` of lane `l` is `self.0[c][l]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Row<const N: usize>(pub [[u32; N]; 3]);

impl<const N: usize> Row<N> {
    pub const ZERO: Row<N> = Row([[0; N]; 3]);

    /// `value` in every lane.
    #[inline(always)]
    pub fn splat(value: Vec3) -> Row<N> {
        Row([[value[0]; N], [value[1]; N], [value[2]; N]])
    }

    #[inline(always)]
    pub fn lane(&self, lane: usize) -> Vec3 {
        [self.0[0][lane], self.0[1][lane], self.0[2][lane]]
    }

    #[inline(always)]
    pub fn set_lane(&mut self, lane: usize, value: Vec3) {
        self.0[0][lane] = value[0];
        self.0[1][lane] = value[1];
        self.0[2][lane] = value[2];
    }

    /// `value` in the lanes of `active` (all ones there, zero elsewhere), `self` elsewhere;
    /// a lone core's only lane is always active.
    #[inline(always)]
    pub fn blend(&mut self, value: &Row<N>, active: &[u32; N]) {
        if N == 1 {
            *self = *value;
            return;
        }
        for component in 0..3 {
            for lane in 0..N {
                let keep = self.0[component][lane] & !active[lane];
                self.0[component][lane] = keep | (value.0[component][lane] & active[lane]);
            }
        }
    }

    /// Each component through `f` lane by lane. A lone core's row is built as one literal:
    /// written as the lane loop, the compiler assembles it in a vector register, which cost
    /// the interpreter 1.7% more host instructions.
    #[inline(always)]
    pub(super) fn zip(&self, other: &Row<N>, f: impl Fn(u32, u32) -> u32) -> Row<N> {
        if N == 1 {
            let (a, b) = (self.lane(0), other.lane(0));
            return Row::splat([f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2])]);
        }
        let mut out = Row::ZERO;
        for component in 0..3 {
            for lane in 0..N {
                out.0[component][lane] = f(self.0[component][lane], other.0[component][lane]);
            }
        }
        out
    }

    /// Each component through `f` (a lone core's as one literal, as in [`Row::zip`]).
    #[inline(always)]
    pub(super) fn map(&self, f: impl Fn(u32) -> u32) -> Row<N> {
        if N == 1 {
            return Row::splat(self.lane(0).map(f));
        }
        let mut out = *self;
        for component in 0..3 {
            for lane in 0..N {
                out.0[component][lane] = f(self.0[component][lane]);
            }
        }
        out
    }

    /// Each lane of `lanes` through `f`, zero elsewhere (a lone core's one lane whatever
    /// the mask): the operations that are not lane-wide arithmetic (MAG, SWIZZLE).
    #[inline(always)]
    pub(super) fn each_lane(&self, lanes: LaneMask, f: impl Fn(Vec3) -> Vec3) -> Row<N> {
        let mut out = Row::ZERO;
        if N == 1 {
            // The constant lane keeps a lone core's row in registers.
            out.set_lane(0, f(self.lane(0)));
            return out;
        }
        for lane in lanes_of(lanes) {
            out.set_lane(lane, f(self.lane(lane)));
        }
        out
    }

    /// INCX/INCY/INCZ: component `C` incremented.
    #[inline(always)]
    pub(super) fn increment<const C: usize>(mut self) -> Row<N> {
        self.0[C] = self.0[C].map(alu::inc);
        self
    }

    /// XCHANGEX/Y/Z: component `C` from `b`, the others from `self` (A).
    #[inline(always)]
    pub(super) fn exchange<const C: usize>(mut self, b: &Row<N>) -> Row<N> {
        self.0[C] = b.0[C];
        self
    }

    /// SETX/Y/Z: component `C` the immediate, the others from `self` (B).
    #[inline(always)]
    pub(super) fn set<const C: usize>(mut self, imm: u32) -> Row<N> {
        self.0[C] = [imm; N];
        self
    }

    /// MULP: z is x times y, x and y kept.
    #[inline(always)]
    pub(super) fn mulp(mut self) -> Row<N> {
        for lane in 0..N {
            self.0[2][lane] = alu::mul(self.0[0][lane], self.0[1][lane]);
        }
        self
    }

    /// Whether every lane of `active` has an exact multiplicand vector.
    #[inline(always)]
    fn exact_multiplicands(&self, active: &[u32; N]) -> bool {
        let mut inexact = 0;
        for lane in 0..N {
            let exact = alu::exact_multiplicand(self.0[0][lane])
                & alu::exact_multiplicand(self.0[1][lane])
                & alu::exact_multiplicand(self.0[2][lane]);
            inexact |= !exact as u32 & active[lane];
        }
        inexact == 0
    }

    /// DOT in every lane ([`alu::dot`]); a group vectorises it when the multiplicands
    /// allow: the sum of [`alu::dot_exact`] built one component at a time, a shape the
    /// vectoriser takes.
    #[inline(always)]
    pub(super) fn dot(&self, b: &Row<N>, active: &[u32; N]) -> Row<N> {
        if N == 1 {
            return Row::splat([alu::dot(self.lane(0), b.lane(0)); 3]);
        }
        let mut word = [0; N];
        if self.exact_multiplicands(active) {
            let mut sum = [0u64; N];
            for component in 0..3 {
                for lane in 0..N {
                    let (x, y) = (self.0[component][lane], b.0[component][lane]);
                    sum[lane] = sum[lane].wrapping_add(alu::exact_scaled_product(x, y));
                }
            }
            for lane in 0..N {
                word[lane] = alu::pack(sum[lane]);
            }
        } else {
            for (lane, word) in word.iter_mut().enumerate() {
                *word = alu::dot(self.lane(lane), b.lane(lane));
            }
        }
        Row([word; 3])
    }

    /// CROSS in every lane ([`alu::cross`]); a group vectorises it when the multiplicands
    /// allow: the components of [`alu::cross_exact`] one at a time.
    #[inline(always)]
    pub(super) fn cross(&self, b: &Row<N>, active: &[u32; N]) -> Row<N> {
        if N == 1 {
            return Row::splat(alu::cross(self.lane(0), b.lane(0)));
        }
        let mut out = Row::ZERO;
        if self.exact_multiplicands(active) {
            for (component, (i, j)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
                for lane in 0..N {
                    let ij = alu::exact_scaled_product(self.0[i][lane], b.0[j][lane]);
                    let ji = alu::exact_scaled_product(self.0[j][lane], b.0[i][lane]);
                    out.0[component][lane] = alu::pack(ij.wrapping_sub(ji));
                }
            }
        } else {
            for lane in 0..N {
                out.set_lane(lane, alu::cross(self.lane(lane), b.lane(lane)));
            }
        }
        out
    }

    /// DIV component by component. The ROM divides replicated scalars (x = y = z) most of
    /// the time: when every lane of `active` does, one quotient per lane serves all three
    /// components. A lone core divides with [`alu::div`] (one hardware division; the float
    /// form's rounding is a library call without SSE4.1), lanes with
    /// [`alu::div_by_float`], its equal, which vectorises.
    #[inline(always)]
    pub(super) fn divide(&self, b: &Row<N>, active: &[u32; N]) -> Row<N> {
        let (a, b) = (&self.0, &b.0);
        let quotient = if N == 1 { alu::div } else { alu::div_by_float };
        let mut mixed = 0;
        for lane in 0..N {
            let differ = (a[0][lane] ^ a[1][lane])
                | (a[1][lane] ^ a[2][lane])
                | (b[0][lane] ^ b[1][lane])
                | (b[1][lane] ^ b[2][lane]);
            mixed |= differ & active[lane];
        }
        let mut out = [[0; N]; 3];
        if mixed == 0 {
            for lane in 0..N {
                out[0][lane] = quotient(a[0][lane], b[0][lane]);
            }
            out[1] = out[0];
            out[2] = out[0];
        } else {
            for component in 0..3 {
                for lane in 0..N {
                    out[component][lane] = quotient(a[component][lane], b[component][lane]);
                }
            }
        }
        Row(out)
    }
}

/// The register array of `N` cores, indexed by storage row (see
/// [`storage_row`](super::program::storage_row)); rows past the 160 real ones are the write
/// sink and padding, so that any `u8` row indexes without a bounds check. Aligned so that a
/// group's rows (`N = 8`: 96 bytes) start on vector boundaries.
#[derive(Clone)]
#[repr(C, align(32))]
pub(crate) struct Rows<const N: usize>(pub [Row<N>; REGISTER_ARRAY_ROWS]);

impl<const N: usize> Rows<N> {
    pub const ZERO: Rows<N> = Rows([Row::ZERO; REGISTER_ARRAY_ROWS]);

    /// A copy of row `row`. A lone core's is read word by word: copied whole, the row the
    /// interpreter carries from an arm to the loop's write stayed in a stack slot (written
    /// in pieces, read back whole: a failed store forward per instruction).
    #[inline(always)]
    pub fn get(&self, row: u8) -> Row<N> {
        if N == 1 {
            return Row::splat(self.0[row as usize].lane(0));
        }
        self.0[row as usize]
    }
}

impl<const N: usize> std::ops::Index<usize> for Rows<N> {
    type Output = Row<N>;

    #[inline(always)]
    fn index(&self, row: usize) -> &Row<N> {
        &self.0[row]
    }
}

impl<const N: usize> std::ops::IndexMut<usize> for Rows<N> {
    #[inline(always)]
    fn index_mut(&mut self, row: usize) -> &mut Row<N> {
        &mut self.0[row]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Replicated scalars (the shortcut) and mixed vectors, zero divisors and signs.
    fn vector() -> impl Strategy<Value = Vec3> {
        let word = prop_oneof![Just(0u32), Just(0x2_0000), Just(0xFFFE_0000), any::<u32>()];
        prop_oneof![
            word.clone().prop_map(|w| [w; 3]),
            [word.clone(), word.clone(), word]
        ]
    }

    proptest! {
        #[test]
        fn divide_is_div_in_every_active_lane_and_component(
            a in prop::collection::vec(vector(), 8),
            b in prop::collection::vec(vector(), 8),
            active in any::<u8>(),
        ) {
            let expected = |lane: usize| -> Vec3 {
                std::array::from_fn(|c| alu::div(a[lane][c], b[lane][c]))
            };
            let wide = |v: &[Vec3]| -> [[u32; 8]; 3] { std::array::from_fn(|c| std::array::from_fn(|lane| v[lane][c])) };
            let mask: [u32; 8] = std::array::from_fn(|lane| 0u32.wrapping_sub((active as u32 >> lane) & 1));
            let quotient = Row(wide(&a)).divide(&Row(wide(&b)), &mask).0;
            for lane in (0..8).filter(|lane| active >> lane & 1 == 1) {
                let got: Vec3 = std::array::from_fn(|c| quotient[c][lane]);
                prop_assert_eq!(got, expected(lane));
            }
            let Row([[x], [y], [z]]) = Row::<1>::splat(a[0]).divide(&Row::splat(b[0]), &[!0]);
            prop_assert_eq!([x, y, z], expected(0));
        }
    }
}
