//! R500 fragment programs from untrusted input: `.fs.asm` text through the assembler, and
//! the same bytes as `.fs.bin` words, as `.fs.inc` hex text and as a `.consts` file. Besides
//! "no panic": every program that assembles or decodes survives words -> text -> words, and
//! runs a bounded number of steps without panicking.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use theia::stage::r500::{self, Constants, R500Program, Words};
use theia::stage::ForeignProgram;

fn check(program: &[Words]) {
    let Ok(text) = r500::disassemble(program) else {
        return;
    };
    match r500::assemble(&text, Path::new("fuzz.fs.asm")) {
        Ok(again) => assert_eq!(again.program, program, "the text re-assembles to other words:\n{text}"),
        Err(e) => panic!("the text does not re-assemble:\n{e}\n--- text:\n{text}"),
    }
    let program = R500Program::new(program, Constants::default()).expect("disassembled, so decodes");
    let _ = program.run_once(&[], 10_000);
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(assembly) = r500::assemble(text, Path::new("fuzz.fs.asm")) {
            check(&assembly.program);
        }
        if let Ok(program) = r500::words_from_hex(text, "fuzz.fs.inc") {
            check(&program);
        }
        // The same text as a FILE.consts beside a program.
        let _ = Constants::parse(text, "fuzz.fs.asm.consts");
    }
    if let Ok(program) = r500::words_from_bin(data, "fuzz.fs.bin") {
        check(&program);
    }
});
