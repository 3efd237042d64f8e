//! `.shdr` source → assembler (user and ROM mode). Besides "no panic", every program that
//! assembles must survive the round trip through the disassembler's listing, and its
//! `Instructions.mem` text must read back as the same words.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use theia::emu::isa::{asm, disasm};
use theia::io::scene::mem::parse_instructions;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("fuzz.shdr");
    if let Ok(assembly) = asm::assemble(text, file) {
        let listing = disasm::listing(&assembly.imem);
        match asm::assemble(&listing, file) {
            Ok(again) => assert_eq!(
                again.imem, assembly.imem,
                "the listing re-assembles to other words:\n{listing}"
            ),
            Err(e) => panic!("the listing does not re-assemble:\n{e}\n--- listing:\n{listing}"),
        }
        let mem = assembly.instructions_mem();
        let read = parse_instructions(&mem, Path::new("Instructions.mem"))
            .unwrap_or_else(|e| panic!("Instructions.mem does not read back: {e}\n{mem}"));
        assert_eq!(
            read, assembly.imem,
            "Instructions.mem reads back as other words"
        );
    }
    if let Ok(rom) = asm::assemble_rom(text, file) {
        let listing = disasm::rom_listing(&rom.words);
        match asm::assemble_rom(&listing, file) {
            Ok(again) => assert_eq!(
                again.words, rom.words,
                "the ROM listing re-assembles to other words:\n{listing}"
            ),
            Err(e) => panic!("the ROM listing does not re-assemble:\n{e}\n--- listing:\n{listing}"),
        }
    }
});
