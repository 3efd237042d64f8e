//! PICA200 source → assembler. Besides "no panic", every program that assembles must
//! survive the disassembler's listing (same words), a SHBIN write/read (same program),
//! and a short run (a fault is fine, a panic is not).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use theia::stage::pica200::asm::{assemble, assemble_with, Options};
use theia::stage::pica200::{disasm, shbin, PicaShader};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("fuzz.v.pica");
    let Ok(assembly) = assemble(text, file) else {
        return;
    };
    let program = assembly.program;
    let listing = disasm::listing(&program);
    let options = Options {
        allow_input_pairs: true,
        auto_nop: false,
    };
    match assemble_with(&listing, file, options) {
        Ok(again) => assert_eq!(
            again.program.code, program.code,
            "the listing re-assembles to other words:\n{listing}"
        ),
        Err(e) => panic!("the listing does not re-assemble:\n{e}\n--- listing:\n{listing}"),
    }
    let read = shbin::read(&shbin::write(&program), 0).expect("a written SHBIN reads back");
    assert_eq!(read.code, program.code);
    assert_eq!(read.descriptors, program.descriptors);
    if let Ok(shader) = PicaShader::new(program, &[]) {
        let _ = shader.run(&[[0.5; 4]; 4], 10_000);
    }
});
