//! The ISA toolchain: the assembler against the original's output for the three example
//! shaders (spec isa_and_formats §7), its diagnostics, and disassembler round trips.

use crate::common;

use std::path::Path;

use proptest::prelude::*;
use theia::emu::core::rom::{rom, RomVariant, ROM_LEN, ROM_SOURCE};
use theia::emu::isa::asm::{assemble, assemble_rom, Assembly, Severity};
use theia::emu::isa::registers::EntryPoint;
use theia::emu::isa::{disassemble, listing, rom_listing, Word, OPCODES};

const EXAMPLES: [(&str, &str, &str); 3] = [
    (
        "Example1.shdr",
        include_str!("../data/example1.shdr"),
        include_str!("../data/example1.Instructions.mem"),
    ),
    (
        "Example2.shdr",
        include_str!("../data/example2.shdr"),
        include_str!("../data/example2.Instructions.mem"),
    ),
    (
        "Example3.shdr",
        include_str!("../data/example3.shdr"),
        include_str!("../data/example3.Instructions.mem"),
    ),
];

fn asm(source: &str) -> Assembly {
    assemble(source, Path::new("t.shdr")).unwrap_or_else(|e| panic!("{e}"))
}

/// The error lines of a source that must not assemble.
fn errors(source: &str) -> Vec<String> {
    match assemble(source, Path::new("t.shdr")) {
        Ok(_) => panic!("assembled, but errors were expected"),
        Err(e) => e.errors.iter().map(|d| d.to_string()).collect(),
    }
}

fn warnings(source: &str) -> Vec<String> {
    asm(source).warnings.iter().map(|d| d.to_string()).collect()
}

/// The 64-bit words of an Instructions.mem text (after the count word).
fn mem_words(text: &str) -> Vec<Word> {
    let hex: Vec<u32> = text
        .lines()
        .map(|l| l.split("//").next().unwrap())
        .flat_map(|l| l.split_whitespace())
        .map(|w| u32::from_str_radix(w, 16).unwrap())
        .collect();
    hex[1..]
        .chunks(2)
        .map(|p| Word::from_words(p[0], p[1]))
        .collect()
}

#[test]
fn examples_assemble_to_the_original_instructions_mem() {
    for (name, source, expected) in EXAMPLES {
        let assembly = assemble(source, Path::new(name)).unwrap();
        assert_eq!(assembly.instructions_mem(), expected, "{name}");
        assert_eq!(assembly.imem, mem_words(expected), "{name}");
        assert!(
            assembly.warnings.is_empty(),
            "{name}: {:?}",
            assembly.warnings
        );
    }
}

#[test]
fn crlf_sources_assemble_alike() {
    for (name, source, expected) in EXAMPLES {
        let crlf = source.replace('\n', "\r\n");
        let assembly = assemble(&crlf, Path::new(name)).unwrap();
        assert_eq!(assembly.instructions_mem(), expected, "{name}");
    }
}

#[test]
fn example3_labels_and_lines() {
    let assembly = asm(EXAMPLES[2].1);
    assert_eq!(assembly.labels["BLACK"], 0x8016);
    assert_eq!(assembly.labels["WHITE"], 0x8012);
    assert_eq!(assembly.labels["ENTRYPOINT_ADRR_PIXELSHADER"], 0x800F);
    assert_eq!(assembly.lines[..4], [2, 3, 4, 6]);
    assert_eq!(assembly.code().len(), 13);
    assert_eq!(assembly.entry_table()[10], Word(0x800F));
}

#[test]
fn examples_round_trip_through_the_listing() {
    for (name, source, _) in EXAMPLES {
        let imem = asm(source).imem;
        let text = listing(&imem);
        let again = assemble(&text, Path::new("listing.shdr"))
            .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"));
        assert_eq!(again.imem, imem, "{name}\n{text}");
    }
}

#[test]
fn example3_listing_text() {
    assert_eq!(
        listing(&asm(EXAMPLES[2].1).imem),
        "// THEIA instruction memory: 13 user instructions from 0x800C\n\
         ENTRYPOINT_ADRR_USERCONSTANTS:\n\
         \tSETX C1 32'h6666\t// 0x800C\n\
         \tSETY C1 32'h1CCCC\t// 0x800D\n\
         \tRETURN RT_TRUE\t// 0x800E\n\
         ENTRYPOINT_ADRR_PIXELSHADER:\n\
         \tMAG R1 CREG_TEXTURE_COLOR VOID\t// 0x800F\n\
         \tJLX L_8016 R1 C1\t// 0x8010\n\
         \tJGEY L_8016 R1 C1\t// 0x8011\n\
         \tSETX R2 32'h20000\t// 0x8012\n\
         \tSWIZZLE3D R2 SWIZZLE_XXX\t// 0x8013\n\
         \tOMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL R2\t// 0x8014\n\
         \tRETURN RT_TRUE\t// 0x8015\n\
         L_8016:\n\
         \tZERO R2 VOID VOID\t// 0x8016\n\
         \tOMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL R2\t// 0x8017\n\
         \tRETURN RT_TRUE\t// 0x8018\n"
    );
}

#[test]
fn quirk1_indented_entry_label_is_an_error() {
    assert_eq!(
        errors("  ENTRYPOINT_ADRR_PIXELSHADER:\n\tRETURN RT_TRUE\n"),
        [
            "t.shdr:1:3: error: `ENTRYPOINT_ADRR_PIXELSHADER:` must start in column 1: the \
          original assembler takes an indented entry label for an ordinary label and leaves \
          the entry at its ROM routine"
        ]
    );
}

#[test]
fn quirk2_colon_in_a_trailing_comment_is_an_error() {
    assert_eq!(
        errors("\tSETX C1 32'h1 // note: one\n"),
        [
            "t.shdr:1:16: error: a colon in this comment makes the original assembler treat the \
          line as a label and drop the instruction; remove the colon"
        ]
    );
    // A colon after a blank, on a comment line, or in a label line's comment is harmless.
    asm("// see: here\nL: // see: there\n\tSETX C1 32'h1 // ratio 1 : 2\n");
}

#[test]
fn quirk3_instruction_after_a_label_is_an_error() {
    assert_eq!(
        errors("BLACK: ZERO R2 VOID VOID\n"),
        [
            "t.shdr:1:8: error: an instruction on the same line as a label: the original \
          assembler drops it; put it on the next line"
        ]
    );
}

#[test]
fn quirk4_call_to_an_overridden_entry_gets_the_right_address() {
    let assembly = asm("ENTRYPOINT_ADRR_BIU:\n\
                        \tRETURN RT_TRUE\n\
                        ENTRYPOINT_ADRR_MAIN:\n\
                        \tCALL ENTRYPOINT_ADRR_BIU\n\
                        \tJMP ENTRYPOINT_ADRR_TCC VOID VOID\n");
    // The original wrote 0x8000 (12 words too early) for the first target.
    assert_eq!(assembly.code()[1], Word(0x0059_800C_0000_0000));
    assert_eq!(assembly.code()[2], Word(0x0058_00BE_0000_0000));
    assert_eq!(
        assembly.entry_table()[EntryPoint::Biu as usize],
        Word(0x800C)
    );
    assert_eq!(
        assembly.entry_table()[EntryPoint::Main as usize],
        Word(0x800D)
    );
}

#[test]
fn quirk5_return_values_outside_the_first_operand_are_errors() {
    assert_eq!(
        errors("\tRET R99 RT_TRUE\n\tADD R1 RT_TRUE R2\n"),
        [
            "t.shdr:1:10: error: `RT_TRUE` fills the DST and IMM fields and the original \
             assembler loses its value here; write 32'h1 instead",
            "t.shdr:2:9: error: `RT_TRUE` is only valid as the first operand of RETURN or NOP \
             (the original assembler loses its value anywhere else); use 32'h1 or 32'h0 as an \
             immediate",
        ]
    );
}

#[test]
fn quirk6_lost_immediates_and_operands_are_errors() {
    assert_eq!(
        errors("\tADD R1 R2 32'h5\n\tADD R1 R2 R3 R4\n\tADD R1 R2\n\tRETURN 32'h1\n"),
        [
            "t.shdr:1:12: error: immediate `32'h5` in a register slot: the original assembler \
             drops it (the field becomes 0); load constants with SETX/SETY/SETZ",
            "t.shdr:2:15: error: too many operands: `R4` and what follows would be ignored by \
             the original assembler",
            "t.shdr:3:2: error: ADD expects `ADD D S1 S2`, found 2 operands",
            "t.shdr:4:9: error: RETURN expects RT_TRUE or RT_FALSE, found `32'h1`",
        ]
    );
}

#[test]
fn quirk7_bare_nop_and_missing_final_newline_are_accepted() {
    let assembly = asm("ENTRYPOINT_ADRR_PIXELSHADER:\n\tNOP\n\tRETURN RT_TRUE");
    assert_eq!(assembly.code(), [Word(0), Word(0x0040_0000_0000_0001)]);
    assert!(assembly.instructions_mem().ends_with(
        "//  IP 00800C (12): NOP   \n00400000 00000001\t\t//  IP 00800D (13): RETURN RT_TRUE  \n"
    ));
}

#[test]
fn all_errors_are_reported_in_source_order() {
    assert_eq!(
        errors("\tJMP NOWHERE\n\tADD R1 R13 r2\n\tadd R1 R2 R3\n\tFOO R1\n\tSETX R1 R2\n"),
        [
            "t.shdr:1:6: error: undefined label `NOWHERE`",
            "t.shdr:2:9: error: unknown register `R13`",
            "t.shdr:2:13: error: unknown register `r2` (names are case-sensitive: `R2`)",
            "t.shdr:3:2: error: unknown opcode `add` (names are case-sensitive: `ADD`)",
            "t.shdr:4:2: error: unknown opcode `FOO`",
            "t.shdr:5:10: error: expected an immediate (32'h…, 0x…, a decimal integer or a \
             fraction like 0.5), found `R2`",
        ]
    );
}

#[test]
fn label_errors() {
    assert_eq!(
        errors("ENTRYPOINT_ADRR_FOO:\n\tNOP\nR1:\n\tNOP\nX:\nX:\n\tNOP\nENTRYPOINT_ADRR_MAIN:\n"),
        [
            "t.shdr:1:1: error: unknown entry point `ENTRYPOINT_ADRR_FOO`: ENTRYPOINT_ADRR_ is \
             followed by one of INITIAL, CPPU, RGU, AABBIU, BIU, PSU, PSU2, TCC, NPG, \
             USERCONSTANTS, PIXELSHADER, MAIN",
            "t.shdr:3:1: error: `R1` cannot be a label: it is a register name",
            "t.shdr:6:1: error: label `X` is already defined on line 5",
            "t.shdr:8:1: error: `ENTRYPOINT_ADRR_MAIN` marks no instruction: the routine would \
             start in unloaded memory",
        ]
    );
}

#[test]
fn number_errors() {
    assert_eq!(
        errors("\tSETX R1 16384.0\n\tSETX R1 32'h123456789\n\tJMP 0x10000\n\tSETX R1 1.2.3\n"),
        [
            "t.shdr:1:10: error: `16384.0` is outside the Q15.17 range (-16384.0 up to \
             16383.99999)",
            "t.shdr:2:10: error: `32'h123456789` does not fit in 32 bits",
            "t.shdr:3:6: error: `0x10000` is not a code address (0 to 0xFFFF)",
            "t.shdr:4:10: error: `1.2.3` is not a valid number",
        ]
    );
}

#[test]
fn more_than_117_instructions_is_an_error() {
    asm(&"\tNOP\n".repeat(117));
    assert_eq!(
        errors(&"\tNOP\n".repeat(118)),
        [
            "t.shdr:118:2: error: more than 117 instructions: IMEM holds 129 words, 12 of them \
          the entry table"
        ]
    );
}

#[test]
fn immediates_in_every_notation() {
    let code = asm(
        "\tSETX R1 0.2\n\tSETX R1 0.9\n\tSETX R1 -1.5\n\tSETX R1 250.0\n\
                    \tSETX R1 -1\n\tSETX R1 .5\n\tSETX R1 0x1CCCC\n\tSETX R1 3\n\
                    \tSETX R1 32'h06666\n",
    )
    .code()
    .iter()
    .map(|w| w.imm())
    .collect::<Vec<_>>();
    // Fractions round to nearest: 0.9 gives 0x1CCCD where the examples' hand value truncates.
    assert_eq!(
        code,
        [
            0x6666,
            0x1CCCD,
            0xFFFD_0000,
            0x1F4_0000,
            0xFFFF_FFFF,
            0x10000,
            0x1CCCC,
            3,
            0x6666
        ]
    );
}

#[test]
fn hardware_warnings() {
    assert_eq!(
        warnings(
            "\tINTP R1 R2\n\tXCHANGEY R1 R2 R3\n\tRESCALE R1 R2\n\tDEBUG_PRINT\n\
             \tSWIZZLE3D R1 SWIZZLE_XYY\n\tSWIZZLE3D R1 32'h40\n\tCOPY OREG_ADDR_O R1\n\
             \tADD CREG_RESOLUTION R1 R2\n\tOMWRITE OREG_PIXEL_COLOR R1 R2\n\tOMWRITE R1 R2 R3\n\
             \tRETURN RT_TRUE\n\t.word 0x00FFFFFFFFFFFFFF\nEND:\n"
        ),
        [
            "t.shdr:1:2: warning: INTP is not implemented by the original hardware, where the \
             core hangs (the emulator runs the manual's semantics)",
            "t.shdr:2:2: warning: XCHANGEY is not implemented by the original hardware, where \
             the core hangs (the emulator runs the manual's semantics)",
            "t.shdr:3:2: warning: RESCALE is not implemented by the original hardware, where \
             the core hangs (the emulator runs the manual's semantics)",
            "t.shdr:4:2: warning: DEBUG_PRINT exists only in DEBUG builds of the original \
             hardware; other builds hang on it",
            "t.shdr:5:15: warning: SWIZZLE_XYY is not implemented by the original hardware, \
             which writes (0,0,0) (only XXX, YYY, ZZZ and YXZ are; the emulator follows the \
             manual)",
            "t.shdr:6:15: warning: swizzle code 64 is not implemented by the original \
             hardware, which writes (0,0,0) (only XXX, YYY, ZZZ and YXZ are; the emulator \
             follows the manual)",
            "t.shdr:7:7: warning: COPY writes OREG_ADDR_O (address 131) in the read-only bank \
             0 (addresses whose bits 6..5 are 00): the hardware drops the write",
            "t.shdr:8:6: warning: ADD writes CREG_RESOLUTION (address 4) in the read-only bank \
             0 (addresses whose bits 6..5 are 00): the hardware drops the write",
            "t.shdr:10:10: warning: OMWRITE also writes (0,0,0) to its destination R1 \
             (address 71); the convention is OREG_PIXEL_COLOR, where the write is dropped",
            "t.shdr:12:2: warning: undefined opcode 0x00FF: the core hangs on this word",
            "t.shdr:13:1: warning: label `END` marks no instruction: a jump to it runs \
             unloaded memory, where the core hangs",
        ]
    );
    assert_eq!(
        asm("\tINTP R1 R2\n").warnings[0].severity,
        Severity::Warning
    );
}

#[test]
fn entry_directive_and_raw_addresses() {
    let assembly = asm(".entry ENTRYPOINT_ADRR_PSU2 0x00E8\n\
                        ENTRYPOINT_ADRR_MAIN:\n\
                        \tCALL ENTRYPOINT_ADRR_PSU2\n\
                        \tADD R1 @0x7B @123\n\
                        .entry ENTRYPOINT_ADRR_NPG L\n\
                        L:\n\
                        \tRETURN RT_TRUE\n");
    assert_eq!(
        assembly.entry_table()[EntryPoint::Psu2 as usize],
        Word(0xE8)
    );
    assert_eq!(
        assembly.entry_table()[EntryPoint::Npg as usize],
        Word(0x800E)
    );
    assert_eq!(assembly.code()[0], Word(0x0059_00E8_0000_0000));
    assert_eq!(assembly.code()[1], Word(0x0001_0047_007B_007B));
    assert_eq!(
        errors(".entry ENTRYPOINT_ADRR_PSU2 1\n.entry ENTRYPOINT_ADRR_PSU2 3\n.bogus 3\n"),
        [
            "t.shdr:2:8: error: entry point ENTRYPOINT_ADRR_PSU2 is already set on line 1",
            "t.shdr:3:1: error: unknown directive `.bogus` (there are `.word` and `.entry`)",
        ]
    );
}

#[test]
fn errors_display_one_a_line() {
    let e = assemble("\tFOO\n\tBAR\n", Path::new("dir/x.shdr")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "dir/x.shdr:1:2: error: unknown opcode `FOO`\ndir/x.shdr:2:2: error: unknown opcode `BAR`"
    );
}

/// Any word of a defined opcode, any field values.
fn valid_word() -> impl Strategy<Value = Word> {
    (0..OPCODES.len(), any::<u64>()).prop_map(|(row, bits)| {
        Word((OPCODES[row].opcode.code() as u64) << 48 | bits & 0xFFFF_FFFF_FFFF)
    })
}

/// Any word at all, undefined opcodes included.
fn any_word() -> impl Strategy<Value = Word> {
    prop_oneof![valid_word(), any::<u64>().prop_map(Word)]
}

proptest! {
    #[test]
    fn every_valid_word_round_trips_through_disassembly(word in valid_word()) {
        let text = disassemble(word);
        let assembly = assemble(&format!("{text}\n"), Path::new("w.shdr"))
            .map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
        prop_assert_eq!(assembly.code(), [word], "{}", text);
    }

    #[test]
    fn every_image_round_trips_through_the_listing(
        table in prop::collection::vec(
            prop_oneof![
                (0usize..12).prop_map(|i| 0x800C + i as u64),
                0u64..0x10000,
                any::<u64>(),
            ],
            12,
        ),
        code in prop::collection::vec(any_word(), 0..40),
        targets in prop::collection::vec((0usize..40, 0u16..40), 0..10),
    ) {
        let mut code = code;
        // Jumps into the code, so that generated labels get exercised.
        for (at, to) in targets {
            if let Some(word) = code.get_mut(at) {
                *word = Word(0x0058_0000_0000_0000 | (0x800C + to as u64) << 32);
            }
        }
        let mut imem: Vec<Word> = table.into_iter().map(Word).collect();
        imem.extend(code);
        let text = listing(&imem);
        let assembly = assemble(&text, Path::new("listing.shdr"))
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(assembly.imem, imem, "{}", text);
    }
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn faithful_rom_equals_the_spec_rom_words() {
    let path = common::shared_path("spec/rom_words.txt");
    let text = std::fs::read_to_string(path).unwrap();
    let expected: Vec<(usize, u64)> = text
        .lines()
        .map(|line| {
            let mut fields = line.split_whitespace();
            let address = fields.next().unwrap().parse().unwrap();
            let word = u64::from_str_radix(fields.next().unwrap(), 16).unwrap();
            (address, word)
        })
        .collect();
    let faithful = rom(RomVariant::Faithful);
    assert_eq!(faithful.len(), ROM_LEN);
    for &(address, word) in &expected {
        // The file also lists the first undefined address (280).
        let ours = faithful
            .get(address)
            .map_or(theia::emu::isa::UNDEFINED_ROM_WORD, |w| *w);
        assert_eq!(
            ours,
            Word(word),
            "ROM word {address}: ours {:016X}, spec {word:016X} ({})",
            ours.0,
            disassemble(ours)
        );
    }
    assert_eq!(expected.len(), ROM_LEN + 1);
}

#[test]
fn rom_source_warns_exactly_about_its_dropped_bank0_writes() {
    let assembly = assemble_rom(ROM_SOURCE, Path::new("shaders/rom/rom.shdr")).unwrap();
    let warned: Vec<usize> = assembly
        .warnings
        .iter()
        .map(|w| assembly.lines.iter().position(|&l| l == w.line).unwrap())
        .collect();
    // ZERO OREG_PIXEL_COLOR (INITIAL, BIU) and COPY OREG_ADDR_O (INITIAL, NPG).
    assert_eq!(warned, [2, 21, 59, 157]);
    assert_eq!(assembly.labels["ENTRYPOINT_ADRR_BIU"], 157);
    assert_eq!(assembly.labels["LABEL_IS_NO_HIT"], 43);
}

#[test]
fn rom_round_trips_through_the_rom_listing() {
    for variant in [RomVariant::Faithful, RomVariant::Fixed] {
        let text = rom_listing(rom(variant));
        let again = assemble_rom(&text, Path::new("rom_listing.shdr"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(again.words, rom(variant), "{}", variant.name());
    }
}

#[test]
fn rom_mode_immediates_and_entry_addresses() {
    let words = assemble_rom(
        "ENTRYPOINT_ADRR_INITIAL:\n\tRET R99 TRUE\n\tRET R99 FALSE\n\tSETX R3 ONE\n\
         \tCALL ENTRYPOINT_ADRR_BIU VOID VOID\n",
        Path::new("r.shdr"),
    )
    .unwrap()
    .words;
    assert_eq!(
        words,
        [
            Word(0x005A_0076_0000_0001),
            Word(0x005A_0076_0000_0000),
            Word(0x0041_0049_0002_0000),
            Word(0x0059_009D_0000_0000),
        ]
    );
    let e = assemble_rom(
        "\tNOP\nENTRYPOINT_ADRR_MAIN:\n\tNOP\n.entry ENTRYPOINT_ADRR_BIU 3\n",
        Path::new("r.shdr"),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "r.shdr:2:1: error: ROM routine MAIN must start at its default address 37 (the entry \
         table and ROM MAIN's CALLs use it), but this label is at 1\n\
         r.shdr:4:1: error: `.entry` sets the user entry table, which ROM code does not have"
    );
    // User programs do not know the ROM's TRUE/FALSE/ONE.
    assert_eq!(
        errors("\tRET R99 TRUE\n"),
        [
            "t.shdr:1:10: error: expected an immediate (32'h…, 0x…, a decimal integer or a \
          fraction like 0.5), found `TRUE`"
        ]
    );
}

/// The scene examples ship the original's output for Example1.shdr (CRLF).
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn example1_equals_the_scenes_instructions_mem() {
    let dir = common::conformance("scenes_example3");
    let shipped = theia::io::scene::mem::read_instructions(&dir.join("Instructions.mem")).unwrap();
    assert_eq!(asm(EXAMPLES[0].1).imem, shipped);
    let text = std::fs::read_to_string(dir.join("Instructions.mem")).unwrap();
    assert_eq!(
        asm(EXAMPLES[0].1).instructions_mem(),
        text.replace("\r\n", "\n")
    );
}
