//! The texture memory interface (Module_TMemInterface.v): TMREAD's three words come through
//! a four-bank crossbar one after another, and the interface latches each word with the
//! bank grant of the address it shows *next* (spec machine_and_microcode §6.3). So a
//! component can miss its latch and keep what that core's interface last latched for it.

use super::alu::Vec3;

/// What TMREAD at `addresses` (word addresses x, y, z) returns, given the words the core's
/// interface last latched; updates the latch.
///
/// With bank b = address & 3 for x, y, z and b = 0 after z (the idle address 0x20): x is
/// always latched; y keeps its latch when b(y) == b(x) and b(z) != b(y); z keeps its latch
/// when b(z) == b(y) and b(z) != 0. Words past the texture read 0.
#[inline(always)]
pub fn read(texture: &[u32], latch: &mut Vec3, addresses: Vec3) -> Vec3 {
    let kept = kept(addresses);
    for component in 0..3 {
        if !kept[component] {
            let address = addresses[component] as usize;
            latch[component] = texture.get(address).copied().unwrap_or(0);
        }
    }
    *latch
}

/// Which components of a TMREAD at `addresses` keep the interface's latch ([`read`]'s rule).
#[inline(always)]
pub fn kept(addresses: Vec3) -> [bool; 3] {
    let bank = addresses.map(|a| a & 3);
    [
        false,
        bank[1] == bank[0] && bank[2] != bank[1],
        bank[2] == bank[1] && bank[2] != 0,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Word k of this texture is 1000 + k.
    fn texture() -> Vec<u32> {
        (0..0x8000).map(|k| 1000 + k).collect()
    }

    fn after(previous: Vec3, addresses: Vec3) -> Vec3 {
        let mut latch = previous;
        read(&texture(), &mut latch, addresses)
    }

    const OLD: Vec3 = [7, 8, 9];

    #[test]
    fn consecutive_words_are_all_latched() {
        // The ROM's own reads: (A, A+1, A+2), banks all different.
        assert_eq!(after(OLD, [0x40, 0x41, 0x42]), [1064, 1065, 1066]);
        assert_eq!(after(OLD, [0, 4, 8]), [1000, 1004, 1008]);
        assert_eq!(after(OLD, [0, 1, 4]), [1000, 1001, 1004]);
    }

    #[test]
    fn y_keeps_its_latch_when_it_shares_x_s_bank_and_z_does_not() {
        // The spec's example (0x968, 0x1930, 0x7C79): banks 0, 0, 1.
        assert_eq!(
            after(OLD, [0x968, 0x1930, 0x7C79]),
            [1000 + 0x968, 8, 1000 + 0x7C79]
        );
        // Banks 2, 2, 2: y is latched (z shares its bank), and z is not (bank 2 != 0).
        assert_eq!(after(OLD, [2, 6, 10]), [1002, 1006, 9]);
    }

    #[test]
    fn z_keeps_its_latch_when_it_shares_y_s_bank_outside_bank_0() {
        // (1, 5, 9): banks 1, 1, 1.
        assert_eq!(after(OLD, [1, 5, 9]), [1001, 1005, 9]);
        // Banks 0, 0, 0: z shares bank 0 with the idle address, so it is latched.
        assert_eq!(after(OLD, [0, 4, 8]), [1000, 1004, 1008]);
        // Banks 3, 1, 1: z kept.
        assert_eq!(after(OLD, [3, 5, 9]), [1003, 1005, 9]);
    }

    #[test]
    fn the_latch_carries_over_and_past_the_texture_reads_zero() {
        let texture = texture();
        let mut latch = [0; 3];
        assert_eq!(read(&texture, &mut latch, [0, 1, 2]), [1000, 1001, 1002]);
        // y kept from the read before, z read past the end.
        assert_eq!(read(&texture, &mut latch, [4, 8, 0x9001]), [1004, 1001, 0]);
        assert_eq!(latch, [1004, 1001, 0]);
        // Negative and huge addresses are past the end too.
        assert_eq!(
            read(&texture, &mut latch, [u32::MAX, 1, 2]),
            [0, 1001, 1002]
        );
    }
}
