//! The disassembler: instruction words back to `.shdr` text that the assembler
//! ([`super::asm`]) turns into the same words again.
//!
//! One word ([`disassemble`]) prints in the original assembler's syntax wherever that syntax
//! can say it exactly: register names, `VOID` in slots the opcode ignores, `SWIZZLE_*` codes,
//! `32'h…` immediates, `RT_TRUE`/`RT_FALSE`, and jump targets in hex (`0x009D`). Three
//! extensions of ours cover what the original syntax cannot express:
//!
//! * `@0x7B`: a data address that has no register name (e.g. 123..127, or bits 15..7 set);
//! * `RETURN D IMM`, `JMP T IMM`: a RETURN/JMP/CALL whose ignored fields are not zero;
//! * `.word 0x…`: any 64-bit word, used for undefined opcodes (the core hangs on them).
//!
//! [`listing`] prints a whole instruction memory image (entry table + user code) as a
//! program: `ENTRYPOINT_ADRR_X:` labels where an entry points into the user code, `L_800F:`
//! labels for branch targets inside it, and a `.entry ENTRYPOINT_ADRR_X 0x00E8` directive
//! for an entry that points anywhere else than its default ROM routine. [`rom_listing`] does
//! the same for a ROM image (ROM-mode source, addresses from 0).

use std::collections::BTreeMap;
use std::fmt::{self, Write as _};

use super::encoding::Word;
use super::instr::Instr;
use super::opcodes::{InputA, InputB, Shape, Writes};
use super::registers::{
    register_name, EntryPoint, ENTRY_TABLE_LEN, SWIZZLES, USER_CODE_BIT, USER_CODE_START, VOID,
};

/// One instruction word in assembler syntax, jump targets in hex.
pub fn disassemble(word: Word) -> String {
    Instr::decode(word).to_string()
}

/// The disassembler's text of one instruction, jump targets in hex; an undefined word
/// gets a comment saying why it is a `.word`.
impl fmt::Display for Instr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text(&|target| format!("0x{target:04X}")))?;
        match self.undefined_note() {
            Some(note) => write!(f, "  // {note}"),
            None => Ok(()),
        }
    }
}

/// A data address as an operand. `used`: whether the opcode reads or writes this slot; an
/// ignored slot holding 0 prints as `VOID`.
fn operand(address: u16, used: bool) -> String {
    if address == VOID && !used {
        return "VOID".to_string();
    }
    match register_name(address) {
        Some(name) => name.to_string(),
        None => format!("@0x{address:X}"),
    }
}

fn immediate(value: u32) -> String {
    format!("32'h{value:X}")
}

impl Instr {
    /// Why a word needs the `.word` form (no colon: the assembler reads a colon in a
    /// trailing comment as the original's line-dropping label quirk).
    fn undefined_note(self) -> Option<String> {
        match self {
            Instr::Undefined(word) => Some(format!(
                "undefined opcode 0x{:04X}, the core hangs here",
                word.opcode_field()
            )),
            _ => None,
        }
    }

    /// The instruction's text; `target` names a jump target (hex, or a label in listings).
    fn text(self, target: &dyn Fn(u16) -> String) -> String {
        let Some(row) = self.info() else {
            return format!(".word 0x{:016X}", self.word().0);
        };
        let op = row.mnemonic;
        let word = self.word();
        let (dst, src1, src2, imm) = (word.dst(), word.src1(), word.src2(), word.imm());
        // A slot the opcode reads or writes prints address 0 by its name, not as VOID.
        let dst_used = row.writes == Writes::Dst || row.b == InputB::Dst;
        let src1_used = row.a == InputA::Src1;
        let src2_used = row.b == InputB::Src2;
        match row.shape {
            Shape::Nop => match (dst, src1, src2) {
                (0, 0, 0) => format!("{op} RT_FALSE"),
                (0, 0, 1) => format!("{op} RT_TRUE"),
                _ => format!(
                    "{op} {} {} {}",
                    operand(dst, dst_used),
                    operand(src1, src1_used),
                    operand(src2, src2_used)
                ),
            },
            Shape::DstSrc1Src2 | Shape::DstSrc1 | Shape::Dst => format!(
                "{op} {} {} {}",
                operand(dst, dst_used),
                operand(src1, src1_used),
                operand(src2, src2_used)
            ),
            Shape::Branch => format!(
                "{op} {} {} {}",
                target(dst),
                operand(src1, src1_used),
                operand(src2, src2_used)
            ),
            Shape::Target => match imm {
                0 => format!("{op} {}", target(dst)),
                _ => format!("{op} {} {}", target(dst), immediate(imm)),
            },
            Shape::DstImm => format!("{op} {} {}", operand(dst, dst_used), immediate(imm)),
            Shape::DstSwizzle => match SWIZZLES.get(imm as usize) {
                Some(name) => format!("{op} {} {name}", operand(dst, dst_used)),
                None => format!("{op} {} {}", operand(dst, dst_used), immediate(imm)),
            },
            // RETURN writes (IMM, IMM, IMM) to D, but its syntax (`RT_TRUE`) leaves D at 0
            // (bank 0: dropped), so a 0 there is the placeholder, not a register.
            Shape::Return => match (dst, imm) {
                (0, 0) => format!("{op} RT_FALSE"),
                (0, 1) => format!("{op} RT_TRUE"),
                _ => format!("{op} {} {}", operand(dst, false), immediate(imm)),
            },
        }
    }
}

fn generated_label(address: u16) -> String {
    format!("L_{address:04X}")
}

/// Lines of code starting at `base`: labels (entry labels first), then the instruction with
/// its address as a comment. Targets inside the code get generated labels.
fn render_code(
    out: &mut String,
    code: &[Word],
    base: u16,
    entry_labels: &BTreeMap<u16, Vec<EntryPoint>>,
) {
    let end = base as usize + code.len();
    let inside = |address: u16| (base as usize..end).contains(&(address as usize));
    let targets: std::collections::BTreeSet<u16> = code
        .iter()
        .filter_map(|&w| Instr::decode(w).target())
        .filter(|&t| inside(t))
        .collect();
    let name_target = |address: u16| {
        if inside(address) {
            generated_label(address)
        } else {
            format!("0x{address:04X}")
        }
    };
    for (k, &word) in code.iter().enumerate() {
        let address = base + k as u16;
        for entry in entry_labels.get(&address).into_iter().flatten() {
            let _ = writeln!(out, "{}:", entry.label());
        }
        if targets.contains(&address) {
            let _ = writeln!(out, "{}:", generated_label(address));
        }
        let instr = Instr::decode(word);
        let text = instr.text(&name_target);
        // Name the ROM routine a jump out of the listed code lands on.
        let note = instr
            .target()
            .filter(|&t| !inside(t) && t & USER_CODE_BIT == 0)
            .and_then(|t| EntryPoint::ALL.iter().find(|e| e.default_address() == t))
            .map(|e| format!(", ROM {}", e.name()))
            .or_else(|| instr.undefined_note().map(|note| format!(", {note}")))
            .unwrap_or_default();
        let _ = writeln!(out, "\t{text}\t// 0x{address:04X}{note}");
    }
}

/// A whole instruction memory image (IMEM word 0.. : the 12-entry table, then user code at
/// 0x800C) as a user program that re-assembles to the same words.
///
/// Entries that hold their default ROM address are left out (the assembler writes the
/// default); an entry pointing into the listed code becomes an `ENTRYPOINT_ADRR_X:` label;
/// any other entry value becomes `.entry ENTRYPOINT_ADRR_X 0x…` (a 64-bit value when the
/// table word's upper bits are set: the hardware uses only the low 16 bits). An image shorter
/// than the table is listed as if its missing entries held their defaults, which is what
/// the machine assumes too; so the re-assembled image then has the full 12 entries.
pub fn listing(imem: &[Word]) -> String {
    let code = imem.get(ENTRY_TABLE_LEN..).unwrap_or(&[]);
    let code_end = USER_CODE_START as usize + code.len();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// THEIA instruction memory: {} user instructions from 0x{USER_CODE_START:04X}",
        code.len()
    );
    let mut entry_labels: BTreeMap<u16, Vec<EntryPoint>> = BTreeMap::new();
    for entry in EntryPoint::ALL {
        let Some(&word) = imem.get(entry as usize) else {
            continue;
        };
        let address = word.0 as u16;
        let in_code = (USER_CODE_START as usize..code_end).contains(&(address as usize));
        if word.0 >> 16 == 0 && in_code {
            entry_labels.entry(address).or_default().push(entry);
        } else if word.0 >> 16 != 0 {
            let _ = writeln!(out, ".entry {} 0x{:016X}", entry.label(), word.0);
        } else if address != entry.default_address() {
            let _ = writeln!(out, ".entry {} 0x{address:04X}", entry.label());
        }
    }
    render_code(&mut out, code, USER_CODE_START, &entry_labels);
    out
}

/// A ROM image (address 0..) as ROM-mode source: entry labels at the default routine
/// addresses, generated labels for branch targets inside the ROM.
pub fn rom_listing(rom: &[Word]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "// THEIA ROM: {} words from address 0", rom.len());
    let mut entry_labels: BTreeMap<u16, Vec<EntryPoint>> = BTreeMap::new();
    for entry in EntryPoint::ALL {
        if (entry.default_address() as usize) < rom.len() {
            entry_labels
                .entry(entry.default_address())
                .or_default()
                .push(entry);
        }
    }
    render_code(&mut out, rom, 0, &entry_labels);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dis(word: u64) -> String {
        disassemble(Word(word))
    }

    #[test]
    fn type1_forms_use_register_names_and_void() {
        assert_eq!(
            dis(0x002F_0080_0078_006E),
            "OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR"
        );
        assert_eq!(dis(0x0007_0047_0004_0000), "COPY R1 CREG_RESOLUTION VOID");
        assert_eq!(dis(0x000F_005F_0000_0000), "ZERO CREG_LAST_t VOID VOID");
        // A slot the opcode reads prints address 0 by its name.
        assert_eq!(dis(0x0001_0047_0000_0048), "ADD R1 CREG_LIGHT_INFO R2");
        assert_eq!(dis(0x0001_0047_007B_8047), "ADD R1 @0x7B @0x8047");
    }

    #[test]
    fn type2_forms() {
        assert_eq!(dis(0x0041_005F_01F4_0000), "SETX CREG_LAST_t 32'h1F40000");
        assert_eq!(dis(0x0044_0048_0000_0015), "SWIZZLE3D R2 SWIZZLE_YXZ");
        assert_eq!(dis(0x0044_0048_0000_0016), "SWIZZLE3D R2 32'h16");
        assert_eq!(dis(0x005A_0076_0000_0001), "RET R99 32'h1");
        assert_eq!(dis(0x0040_0000_0000_0001), "RETURN RT_TRUE");
        assert_eq!(dis(0x0040_0000_0000_0000), "RETURN RT_FALSE");
        assert_eq!(dis(0x0040_0047_0000_0003), "RETURN R1 32'h3");
    }

    #[test]
    fn jumps_print_hex_targets() {
        assert_eq!(dis(0x0059_009D_0000_0000), "CALL 0x009D");
        assert_eq!(dis(0x0058_8010_0000_0007), "JMP 0x8010 32'h7");
        assert_eq!(dis(0x000A_002B_0076_0077), "JEQX 0x002B R99 CREG_ZERO");
    }

    #[test]
    fn nops_and_undefined_words() {
        assert_eq!(dis(0), "NOP RT_FALSE");
        assert_eq!(dis(1), "NOP RT_TRUE");
        assert_eq!(dis(0x0000_0047_0000_0000), "NOP R1 VOID VOID");
        assert_eq!(
            dis(0x00FF_FFFF_FFFF_FFFF),
            ".word 0x00FFFFFFFFFFFFFF  // undefined opcode 0x00FF, the core hangs here"
        );
        assert_eq!(
            dis(0x0006_0000_0000_0000),
            ".word 0x0006000000000000  // undefined opcode 0x0006, the core hangs here"
        );
    }

    #[test]
    fn listing_labels_entries_and_branch_targets() {
        let mut imem: Vec<Word> = EntryPoint::ALL
            .iter()
            .map(|e| Word(e.default_address() as u64))
            .collect();
        imem[EntryPoint::PixelShader as usize] = Word(0x800C);
        imem[EntryPoint::Psu2 as usize] = Word(0x00E8);
        imem.extend([
            Word(0x0009_800E_0047_0040), // JLX 0x800E R1 C1
            Word(0x0059_009D_0000_0000), // CALL 157
            Word(0x0040_0000_0000_0001),
        ]);
        assert_eq!(
            listing(&imem),
            "// THEIA instruction memory: 3 user instructions from 0x800C\n\
             .entry ENTRYPOINT_ADRR_PSU2 0x00E8\n\
             ENTRYPOINT_ADRR_PIXELSHADER:\n\
             \tJLX L_800E R1 C1\t// 0x800C\n\
             \tCALL 0x009D\t// 0x800D, ROM BIU\n\
             L_800E:\n\
             \tRETURN RT_TRUE\t// 0x800E\n"
        );
    }
}
