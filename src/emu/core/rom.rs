//! The microcode ROM, assembled once (at first use) from our own assembly source,
//! `shaders/rom/rom.shdr`, which is compiled into the library.

use std::path::Path;
use std::sync::OnceLock;

use crate::emu::isa::asm::{assemble_rom, RomAssembly};
use crate::emu::isa::Word;

/// The ROM source: the default microcode of the original THEIA, commented.
pub const ROM_SOURCE: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/rom/rom.shdr"));

/// Words in the ROM (addresses 0..279); other ROM addresses read an undefined word.
pub const ROM_LEN: usize = 280;

/// The `fixed` ROM's BIU tests, assembled after [`ROM_SOURCE`] (addresses 280..).
pub const FIXED_EXTENSION_SOURCE: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/shaders/rom/fixed.shdr"
));

/// The `fixed` variant (README decision 2; issue 9), as assembly: each line replaces the
/// instruction at a label of `rom.shdr`, and [`FIXED_EXTENSION_SOURCE`] is appended. Patch
/// lines are assembled in ROM mode at the end of the combined source, so they may name
/// labels of either file.
pub const FIXES: [(&str, &str); 4] = [
    // Missed pixels stay black instead of (3.0, 0, 0), which comes out red.
    ("NPG_MISS_COLOR", "SETX CREG_TEXTURE_COLOR 32'h0"),
    // Bilinear weights w1 and w4 on their own texels: c4 * w1 and c3 * w4.
    ("PSU2_WEIGHT1", "MUL R1 CREG_TEX_COLOR4 CREG_TEXWEIGHT1"),
    ("PSU2_WEIGHT4", "MUL R4 CREG_TEX_COLOR3 CREG_TEXWEIGHT4"),
    // BIU: a watertight inside test, and no hit that only wrap-around or a negative t
    // makes (fixed.shdr).
    ("LABEL_BIU_TESTS", "JMP FIXED_BIU_EDGES VOID VOID"),
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

/// The ROM words of a variant: [`ROM_LEN`] of them, then the fixed variant's extension.
pub fn rom(variant: RomVariant) -> &'static [Word] {
    static FAITHFUL: OnceLock<Vec<Word>> = OnceLock::new();
    static FIXED: OnceLock<Vec<Word>> = OnceLock::new();
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
        let assembly = assemble_rom(ROM_SOURCE, Path::new("shaders/rom/rom.shdr"))
            .unwrap_or_else(|errors| panic!("the built-in ROM does not assemble:\n{errors}"));
        assert_eq!(assembly.words.len(), ROM_LEN, "built-in ROM length");
        assembly
    })
}

/// One assembly of the combined source with every patch line after it: lines appended
/// change no word before them, and a patch's word does not depend on its address (its
/// operands are registers, immediates and labels). Assembling the source once per patch,
/// as before, made a fixed render's start six assemblies long.
fn fixed() -> Vec<Word> {
    let mut source = format!("{ROM_SOURCE}\n{FIXED_EXTENSION_SOURCE}");
    for (_, line) in FIXES {
        source.push('\n');
        source.push_str(line);
    }
    let file = Path::new("shaders/rom/rom.shdr + shaders/rom/fixed.shdr + FIXES");
    let assembly = assemble_rom(&source, file)
        .unwrap_or_else(|errors| panic!("the fixed ROM does not assemble:\n{errors}"));
    let (words, patches) = assembly.words.split_at(assembly.words.len() - FIXES.len());
    let mut words = words.to_vec();
    for ((label, _), &patch) in FIXES.iter().zip(patches) {
        words[usize::from(assembly.labels[*label])] = patch;
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::isa::Opcode;

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
    fn fixed_variant_differs_exactly_at_the_fixes_and_appends_biu_tests() {
        let (faithful, fixed) = (rom(RomVariant::Faithful), rom(RomVariant::Fixed));
        assert_eq!((faithful.len(), fixed.len()), (ROM_LEN, ROM_LEN + 48));
        let differ: Vec<usize> = (0..ROM_LEN).filter(|&i| faithful[i] != fixed[i]).collect();
        assert_eq!(differ, [56, 172, 268, 271]);
        assert_eq!(fixed[56], Word::type2(Opcode::Setx, 110, 0));
        assert_eq!(fixed[268], Word::type1(Opcode::Mul, 71, 56, 112));
        assert_eq!(fixed[271], Word::type1(Opcode::Mul, 74, 55, 115));
        // 172 (LABEL_BIU_TESTS) jumps to the first appended word, CROSS R5 E2 T; the last
        // three are the "not closer" test, the jump back to 180 (LABEL_BIU_KEEP) and the
        // wrap exit.
        assert_eq!(fixed[172], Word::type1(Opcode::Jmp, 280, 0, 0));
        assert_eq!(fixed[280], Word::type1(Opcode::Cross, 75, 101, 88));
        assert_eq!(fixed[325], faithful[179]);
        assert_eq!(fixed[326], Word::type1(Opcode::Jmp, 180, 0, 0));
        assert_eq!(fixed[327], Word::type1(Opcode::Ret, 118, 0, 0));
    }
}
