//! Lane masks: one bit per lane of a lock-step group (a lone core is lane 0), the sets of
//! cores the interpreter runs, waits and returns.

/// One bit per lane.
pub type LaneMask = u32;

/// The lanes of a mask, lowest first.
#[inline(always)]
pub fn lanes_of(mask: LaneMask) -> LaneIter {
    LaneIter(mask)
}

/// The lanes of a mask, lowest first (see [`lanes_of`]).
#[derive(Clone, Copy, Debug)]
pub struct LaneIter(LaneMask);

impl Iterator for LaneIter {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let lane = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(lane)
    }
}

/// All ones in the lanes of `mask`, zero elsewhere.
#[inline(always)]
pub(super) fn spread<const N: usize>(mask: LaneMask) -> [u32; N] {
    std::array::from_fn(|lane| 0u32.wrapping_sub((mask >> lane) & 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_come_lowest_first_and_spread_to_all_ones() {
        assert_eq!(lanes_of(0b1010_0110).collect::<Vec<_>>(), [1, 2, 5, 7]);
        assert_eq!(lanes_of(0).count(), 0);
        assert_eq!(spread::<4>(0b0101), [!0, 0, !0, 0]);
    }
}
