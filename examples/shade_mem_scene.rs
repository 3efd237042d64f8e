//! A pixel shader in THEIA assembly run on an original `.mem` scene directory (the second
//! example of the library's documentation, as a program).
//!
//!     cargo run --release --example shade_mem_scene [SCENE_DIR] [SHADER.shdr] [OUT.png]
//!
//! Without a directory it writes a small scene (a UV sphere) as `.mem` files and uses that;
//! without a shader it runs the pass-through shader (the ROM's own pixel shader).

use std::path::{Path, PathBuf};

use theia::emu::isa::asm::assemble;
use theia::emu::machine::{render, RenderOptions};
use theia::io::scene::mem::{load_scene_dir, write_scene_dir};
use theia::io::scene::obj::{load_obj_text, MemoryAssets, ObjOptions};

const PASSTHROUGH: &str = "ENTRYPOINT_ADRR_PIXELSHADER:
        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR
        RETURN RT_TRUE
";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let written = tempfile::tempdir()?;
    let dir = match args.next() {
        Some(dir) => dir,
        None => {
            let obj = theia::io::scene::generate::uv_sphere_obj(16, 8);
            let options = ObjOptions::default();
            let sphere =
                load_obj_text(&obj, Path::new("sphere.obj"), &MemoryAssets(&[]), &options)?;
            write_scene_dir(&sphere.scene, written.path())?;
            written.path().to_path_buf()
        }
    };
    let (source, name) = match args.next() {
        Some(path) => (std::fs::read_to_string(&path)?, path),
        None => (PASSTHROUGH.to_string(), PathBuf::from("passthrough.shdr")),
    };
    let png = args
        .next()
        .unwrap_or_else(|| PathBuf::from("out/shade_mem_scene.png"));
    let scene = load_scene_dir(&dir)?;
    let shader = assemble(&source, &name)?;
    let options = RenderOptions {
        imem: Some(shader.imem),
        ..RenderOptions::default()
    };
    let frame = render(&scene, &options)?.frame;
    if let Some(parent) = png.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    theia::io::image::write_frame(&frame, &png)?;
    println!("{}: {}x{} pixels", png.display(), frame.width, frame.height);
    Ok(())
}
