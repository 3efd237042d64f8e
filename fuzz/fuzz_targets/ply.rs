//! Bytes as a PLY file (ASCII or binary) → the PLY loader, then a 16 x 16 render of
//! whatever loads. Errors are fine (a bad file, a core fault, the watchdog); panics are not.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use theia::emu::machine::{render, RenderOptions};
use theia::io::scene::obj::ObjOptions;
use theia::io::scene::ply::load_ply_from;

fuzz_target!(|data: &[u8]| {
    let options = ObjOptions {
        width: 16,
        height: 16,
        ..Default::default()
    };
    let Ok(ply) = load_ply_from(data, Path::new("fuzz.ply"), &options) else {
        return;
    };
    let render_options = RenderOptions {
        max_steps: Some(20_000),
        ..Default::default()
    };
    let _ = render(&ply.scene, &render_options);
});
