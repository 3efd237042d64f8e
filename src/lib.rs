//! THEIA: a bit-exact emulator of the 2010 THEIA ray-casting GPU.
//!
//! An OBJ model rendered on four emulated cores and written as PNG (`cargo run --example
//! render_obj` is the same as a program):
//!
//! ```
//! use theia::machine::{render, RenderOptions};
//! use theia::scene::obj::{load_obj, ObjOptions};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let model = dir.path().join("sphere.obj");
//! # std::fs::write(&model, theia::scene::generate::uv_sphere_obj(24, 12))?;
//! # let png = dir.path().join("sphere.png");
//! let options = ObjOptions { width: 64, height: 64, ..ObjOptions::default() };
//! let scene = load_obj(&model, &options)?.scene; // lit by shaders/key_fill.shdr
//! let frame = render(&scene, &RenderOptions { cores: Some(4), ..RenderOptions::default() })?.frame;
//! theia::image::write_frame(&frame, &png)?;
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
//! use theia::isa::asm::assemble;
//! use theia::machine::{render, RenderOptions};
//! use theia::scene::mem::load_scene_dir;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let dir = tempfile::tempdir()?;
//! # let options = theia::scene::obj::ObjOptions { width: 32, height: 32, ..Default::default() };
//! # let obj = theia::scene::generate::uv_sphere_obj(16, 8);
//! # let assets = theia::scene::obj::MemoryAssets(&[]);
//! # let sphere = theia::scene::obj::load_obj_text(&obj, Path::new("s.obj"), &assets, &options)?;
//! # theia::scene::mem::write_scene_dir(&sphere.scene, dir.path())?;
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
//! - [`isa`]: opcodes, encoding, register map, assembler and disassembler (one table).
//! - [`core`]: one emulated core (register banks, ALU, control flow, forwarding) and the ROM.
//! - [`machine`]: the host, swap memory, texture and output memories, partitions on rayon.
//! - [`scene`]: loaders for the original `.mem` scenes and for OBJ scenes.
//! - [`r500`]: ATI R500 fragment programs: decoder, assembler, disassembler, interpreter.
//! - [`pica200`]: PICA200 (3DS) shader programs: assembler, disassembler, SHBIN, interpreter.
//! - [`stage`]: the pixel stage THEIA microcode, R500 and PICA200 programs implement.
//! - [`image`]: PPM/PNG output and image comparison.
//! - [`cpu`]: what the CPU offers the vector paths (AVX2, FMA).
//! - [`trace`]: one pixel instruction by instruction, with cycle estimates.
//! - [`input`]: reading files named by input: regular files only.
//! - [`inspect`]: one pixel's core and output words; where two renders differ.
//! - [`viewer`]: the requests `theia view` answers.
//! - [`bench`](mod@bench): frame benchmarks (one core vs all cores) as a printable table.

pub mod bench;
pub mod core;
pub mod cpu;
pub mod image;
pub mod input;
pub mod inspect;
pub mod isa;
pub mod machine;
pub mod pica200;
pub mod r500;
pub mod scene;
pub mod stage;
pub mod timing;
pub mod trace;
pub mod viewer;
