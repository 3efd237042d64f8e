//! OBJ text → the OBJ loader alone: no render, so many more inputs a second than `obj`
//! reaches the reader. Errors are fine, panics are not; and the same text with CRLF line
//! ends loads to the same triangles, notes and scale, or the same error.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use theia::io::scene::obj::{load_obj_text, MemoryAssets, ObjOptions};

/// A library with a flat and a textured material (the texture is missing: a warning).
const ASSETS: MemoryAssets = MemoryAssets(&[(
    "m.mtl",
    b"newmtl a\nKd 1 0 0\nnewmtl b\nmap_Kd t.png\n",
)]);

fn load(text: &str) -> Result<(Vec<theia::io::scene::Triangle>, Vec<String>, u64), String> {
    let options = ObjOptions {
        width: 16,
        height: 16,
        ..Default::default()
    };
    load_obj_text(text, Path::new("fuzz.obj"), &ASSETS, &options)
        .map(|loaded| (loaded.scene.triangles, loaded.notes, loaded.scale.to_bits()))
        .map_err(|error| error.to_string())
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let loaded = load(text);
    if !text.contains('\r') {
        assert_eq!(loaded, load(&text.replace('\n', "\r\n")));
    }
});
