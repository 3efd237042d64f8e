//! An OBJ model rendered on four emulated cores and written as PNG (the first example of
//! the library's documentation, as a program).
//!
//!     cargo run --release --example render_obj [MODEL.obj] [OUT.png]
//!
//! Without a model it renders a generated UV sphere.

use std::path::PathBuf;

use theia::emu::machine::{render, RenderOptions};
use theia::io::scene::obj::{load_obj, ObjOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args_os().skip(1).map(PathBuf::from);
    let dir = tempfile::tempdir()?;
    let model = match args.next() {
        Some(model) => model,
        None => {
            let model = dir.path().join("sphere.obj");
            std::fs::write(&model, theia::io::scene::generate::uv_sphere_obj(24, 12))?;
            model
        }
    };
    let png = args
        .next()
        .unwrap_or_else(|| PathBuf::from("out/render_obj.png"));
    let options = ObjOptions {
        width: 256,
        height: 256,
        ..ObjOptions::default()
    };
    let loaded = load_obj(&model, &options)?;
    for note in &loaded.notes {
        eprintln!("{note}");
    }
    let options = RenderOptions {
        cores: Some(4),
        ..RenderOptions::default()
    };
    let rendered = render(&loaded.scene, &options)?;
    if let Some(parent) = png.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    theia::io::image::write_frame(&rendered.frame, &png)?;
    println!(
        "{}: {} triangles in {:.3} s",
        png.display(),
        loaded.scene.triangles.len(),
        rendered.elapsed.as_secs_f64()
    );
    Ok(())
}
