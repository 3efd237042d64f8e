//! OBJ text → the OBJ loader, then a small render of whatever loads. Errors are fine
//! (a bad model, a core fault, the watchdog); panics are not.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use theia::emu::machine::{render, RenderOptions};
use theia::io::scene::obj::{load_obj_text, MemoryAssets, ObjOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let options = ObjOptions {
        width: 16,
        height: 16,
        ..Default::default()
    };
    let Ok(obj) = load_obj_text(text, Path::new("fuzz.obj"), &MemoryAssets(&[]), &options) else {
        return;
    };
    let render_options = RenderOptions {
        max_steps: Some(20_000),
        ..Default::default()
    };
    let _ = render(&obj.scene, &render_options);
});
