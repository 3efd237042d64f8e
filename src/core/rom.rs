//! The microcode ROM, assembled once (at first use) from our own assembly source,
//! `shaders/rom.shdr`, which is compiled into the library.

use std::path::Path;
use std::sync::OnceLock;

use crate::isa::asm::{assemble_rom, RomAssembly};
use crate::isa::Instruction;

/// The ROM source: the default microcode of the original THEIA, commented.
pub const ROM_SOURCE: &str = include_str!("../../shaders/rom.shdr");

/// Words in the ROM (addresses 0..279); other ROM addresses read an undefined word.
pub const ROM_LEN: usize = 280;

/// The `fixed` variant (README decision 2), as assembly: each line replaces the instruction
/// at a label of `rom.shdr`. Patch lines are assembled on their own in ROM mode.
pub const FIXES: [(&str, &str); 3] = [
    // Missed pixels stay black instead of (3.0, 0, 0), which comes out red.
    ("NPG_MISS_COLOR", "SETX CREG_TEXTURE_COLOR 32'h0"),
    // Bilinear weights w1 and w4 on their own texels: c4 * w1 and c3 * w4.
    ("PSU2_WEIGHT1", "MUL R1 CREG_TEX_COLOR4 CREG_TEXWEIGHT1"),
    ("PSU2_WEIGHT4", "MUL R4 CREG_TEX_COLOR3 CREG_TEXWEIGHT4"),
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RomVariant {
    /// The ROM of the original hardware, defects included.
    #[default]
    Faithful,
    /// The ROM with [`FIXES`] applied.
    Fixed,
}

impl RomVariant {
    pub fn name(self) -> &'static str {
        match self {
            RomVariant::Faithful => "faithful",
            RomVariant::Fixed => "fixed",
        }
    }
}

impl std::str::FromStr for RomVariant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "faithful" => Ok(RomVariant::Faithful),
            "fixed" => Ok(RomVariant::Fixed),
            _ => Err(format!("unknown ROM `{s}`: faithful or fixed")),
        }
    }
}

/// The ROM words of a variant (exactly [`ROM_LEN`] of them).
pub fn rom(variant: RomVariant) -> &'static [Instruction] {
    static FAITHFUL: OnceLock<Vec<Instruction>> = OnceLock::new();
    static FIXED: OnceLock<Vec<Instruction>> = OnceLock::new();
    match variant {
        RomVariant::Faithful => FAITHFUL.get_or_init(|| faithful().words.clone()),
        RomVariant::Fixed => FIXED.get_or_init(fixed),
    }
}

/// The assembled source. It is part of the library, so failing to assemble is a bug (the
/// tests assemble it too).
fn faithful() -> &'static RomAssembly {
    static ASSEMBLY: OnceLock<RomAssembly> = OnceLock::new();
    ASSEMBLY.get_or_init(|| {
        let assembly = assemble_rom(ROM_SOURCE, Path::new("shaders/rom.shdr"))
            .unwrap_or_else(|errors| panic!("the built-in ROM does not assemble:\n{errors}"));
        assert_eq!(assembly.words.len(), ROM_LEN, "built-in ROM length");
        assembly
    })
}

fn fixed() -> Vec<Instruction> {
    let base = faithful();
    let mut words = base.words.clone();
    for (label, line) in FIXES {
        let address = base.labels[label] as usize;
        let patch = assemble_rom(line, Path::new(label))
            .unwrap_or_else(|errors| panic!("ROM fix {label} does not assemble:\n{errors}"));
        words[address] = patch.words[0];
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::isa::Opcode;

    #[test]
    fn variants_by_name() {
        for variant in [RomVariant::Faithful, RomVariant::Fixed] {
            assert_eq!(variant.name().parse::<RomVariant>(), Ok(variant));
        }
        assert_eq!(
            "new".parse::<RomVariant>(),
            Err("unknown ROM `new`: faithful or fixed".to_string())
        );
    }

    #[test]
    fn fixed_variant_differs_exactly_at_the_three_fixes() {
        let (faithful, fixed) = (rom(RomVariant::Faithful), rom(RomVariant::Fixed));
        assert_eq!((faithful.len(), fixed.len()), (ROM_LEN, ROM_LEN));
        let differ: Vec<usize> = (0..ROM_LEN).filter(|&i| faithful[i] != fixed[i]).collect();
        assert_eq!(differ, [56, 268, 271]);
        assert_eq!(fixed[56], Instruction::type2(Opcode::Setx, 110, 0));
        assert_eq!(fixed[268], Instruction::type1(Opcode::Mul, 71, 56, 112));
        assert_eq!(fixed[271], Instruction::type1(Opcode::Mul, 74, 55, 115));
    }
}
