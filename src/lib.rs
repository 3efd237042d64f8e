//! THEIA: a bit-exact emulator of the 2010 THEIA ray-casting GPU.
//!
//! An OBJ model rendered on four emulated cores and written as PNG (`cargo run --example
//! render_obj` is the same as a program):
//!
//! ```
//! use theia::emu::machine::{render, RenderOptions};
//! use theia::io::scene::obj::{load_obj, ObjOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let model = dir.path().join("sphere.obj");
//! # std::fs::write(&model, theia::io::scene::generate::uv_sphere_obj(24, 12))?;
//! # let png = dir.path().join("sphere.png");
//! let options = ObjOptions { width: 64, height: 64, ..ObjOptions::default() };
//! let scene = load_obj(&model, &options)?.scene; // lit by shaders/key_fill.shdr
//! let frame = render(&scene, &RenderOptions { cores: Some(4), ..RenderOptions::default() })?.frame;
//! theia::io::image::write_frame(&frame, &png)?;
//! assert_eq!((frame.width, frame.height), (64, 64));
//! # Ok(())
//! # }
//! ```
//!
//! A pixel shader in THEIA assembly run on an original `.mem` scene directory (here one the
//! example writes itself; `cargo run --example shade_mem_scene [DIR]` takes any, such as
//! `../shared/conformance/scenes_example3`):
//!
//! ```
//! use std::path::Path;
//! use theia::emu::isa::asm::assemble;
//! use theia::emu::machine::{render, RenderOptions};
//! use theia::io::scene::mem::load_scene_dir;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let options = theia::io::scene::obj::ObjOptions { width: 32, height: 32, ..Default::default() };
//! # let obj = theia::io::scene::generate::uv_sphere_obj(16, 8);
//! # let assets = theia::io::scene::obj::MemoryAssets(&[]);
//! # let sphere = theia::io::scene::obj::load_obj_text(&obj, Path::new("s.obj"), &assets, &options)?;
//! # theia::io::scene::mem::write_scene_dir(&sphere.scene, dir.path())?;
//! let scene = load_scene_dir(dir.path())?; // Params.mem, Vertex.mem, Textures.mem, ...
//! let source = "ENTRYPOINT_ADRR_PIXELSHADER:
//!         OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR
//!         RETURN RT_TRUE";
//! let shader = assemble(source, Path::new("passthrough.shdr"))?;
//! let options = RenderOptions { imem: Some(shader.imem), ..RenderOptions::default() };
//! let frame = render(&scene, &options)?.frame;
//! assert_eq!(frame.unwritten_pixels(), 0);
//! # Ok(())
//! # }
//! ```
//!
//! The crate in four layers, each using only the ones above it:
//!
//! - [`emu`]: the emulator: the instruction set ([`emu::isa`]), one emulated core
//!   ([`emu::core`]), the host machine that streams a scene through many cores
//!   ([`emu::machine`]), the cycle model ([`emu::timing`]) and the CPU features the vector
//!   paths use ([`emu::cpu`]).
//! - [`stage`]: the pixel stage every pixel's colour comes from, and its plug-ins: THEIA's
//!   own microcode, ATI R500 fragment programs ([`stage::r500`]) and PICA200 shader programs
//!   ([`stage::pica200`]).
//! - [`io`]: input and output: scene loaders (`.mem`, OBJ, PLY, generated; [`io::scene`]),
//!   images ([`io::image`]) and reading files named by input ([`io::input`]).
//! - [`tools`]: what the command line and the viewer offer on top: tracing one pixel
//!   ([`tools::trace`]), inspecting pixels ([`tools::inspect`]), benchmarks
//!   ([`tools::bench`]) and the viewer's requests ([`tools::viewer`]).

pub mod emu;
pub mod io;
pub mod stage;
pub mod tools;
