//! Bytes → SHBIN reader. Besides "no panic", a program that reads must write back to
//! bytes that read as the same program, list without panicking, and run a short budget.
#![no_main]

use libfuzzer_sys::fuzz_target;
use theia::stage::pica200::{disasm, shbin, PicaShader};

fuzz_target!(|data: &[u8]| {
    let Ok(program) = shbin::read(data, 0) else {
        return;
    };
    let again = shbin::read(&shbin::write(&program), 0).expect("a written SHBIN reads back");
    assert_eq!(again.code, program.code);
    let _ = disasm::listing(&program);
    if let Ok(shader) = PicaShader::new(program, &[]) {
        let _ = shader.run(&[[1.0; 4]; 4], 10_000);
    }
});
