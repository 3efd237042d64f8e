//! OBJ scenes: triangulated faces, MTL materials and `map_Kd` textures, converted to the
//! hardware's triangle records and texture memory, with the camera and projection window
//! fitted to the model.
//!
//! # Loading
//! The `parse` module reads the OBJ in one pass, checking every statement (a user's mistake
//! gets `file:line:column`) and building the triangles as it goes; tobj reads the MTL
//! libraries (`Kd` and `map_Kd`) after `parse` has checked them. The file's text is dropped
//! before the triangles are converted, so a 1.3-million-triangle scan (50 MB) loads in
//! about 125 bytes per triangle at peak, whole process (the scene's records take 84).
//!
//! # Triangles
//! Every OBJ face becomes a fan of triangles, each a 7-vector record exactly as Vertex.mem
//! holds it (spec isa_and_formats §5.3): V0, UV0, V1, UV1, V2, UV2, diffuse, in Q15.17
//! (rounded to nearest). The ROM shows only the texture: `Kd` reaches the screen through a
//! flat texture tile when a material has no texture. The fields the ROM does not read carry
//! the normals (the `normals` module): the diffuse slot the face's unit normal, UV.z the
//! texture memory address of each corner's `vn` normal (0 when the face is lit flat). The
//! scene's pixel shader ([`LIGHTING_SHADER`]) lights the texture colour with them, textured
//! or not, unless [`ObjOptions::flat`].
//!
//! # Camera and fit
//! The hardware's camera is fixed: CREG_CAMERA_POSITION looks through a window on the plane
//! z = 0 (RGU: point = pixel·scale + window_min, ray = normalize(point − camera)). The loader
//! therefore rotates the model into a view space where the camera sits at (0, 0, d) and looks
//! at the origin (the look-at point), up is OBJ +y, and the window is the rectangle the
//! vertical field of view sees on z = 0. By default the camera looks at the centre of the
//! model's bounds from the front-right, above, far enough for the bounding sphere to fit
//! both fields of view; [`ObjOptions`] overrides the camera, look-at point and field of view.
//!
//! The model is then scaled for the ROM's fixed point, before anything is quantised: as
//! large as possible, because BIU's determinant
//! Δ = (RAY × E2)·E1 shrinks with the square of the scale and DIV/MUL truncate to 2^-17,
//! so u, v and the texel position of small triangles lose bits; but no larger than keeps
//! - every vertex within 200 units of the camera (hits at t ≥ 250.0 are misses),
//! - |T|·|E1|·|E2| and |T|·|E| below 4096, a quarter of the 16384.0 at which BIU's CROSS
//!   and DOT results (Q = T × E1, H1 = Q·E2, ...) wrap, where T = camera − V0,
//! - the model's radius at most 64.
//!
//! Every bound grows with the file's units exactly, and the scale is not rounded, so a model
//! and a copy in other units (centimetres, metres) land on the same hardware coordinates up
//! to the last bit of a double: their images differ only where that bit moves a Q15.17
//! rounding.
//!
//! A model that would have to shrink below radius 1.0 (a camera hundreds of model radii
//! away) is refused. The window's half extents are whole multiples of the pixel count in
//! raw units, so CPPU's division is exact, pixels are square and the centre pixel's ray is
//! the view axis. BIU has no t > 0 test: geometry behind the camera can cover what is in
//! front, so the loader warns when vertices lie at or behind the camera plane.
//!
//! Too small a model and BIU's Δ loses the bits that tell inside from outside (stray
//! hits beyond the silhouette); too large and |T|·|E1|·|E2| wraps (cracks). The fit's
//! choice is pinned by `tests/emulator/obj.rs`
//! (`a_5120_triangle_obj_renders_at_256x256_timed`: no cracks, at most 4 strays on a
//! 5,120-triangle sphere). One artifact is the hardware's at
//! any scale: a ray almost parallel to a triangle's plane gives huge u and v whose sum can
//! wrap past 16384.0 (ADD keeps 31 bits) into [0, 1], and BIU reports a hit; expect a stray
//! pixel now and then.
//!
//! # Texture memory and the atlas
//! Texture memory is S x S texels (at least the published hardware's 256 x 256 words'
//! worth, at most [`ObjOptions::texture_size`], 2048 by default), channel c of texel (u, v)
//! at word 3(u + v·S) + c as
//! `byte << 9`, where S = CREG_TEXTURE_SIZE (spec isa_and_formats §5.4); the ROM wraps texel
//! addresses with S − 1, so S is a power of two. OBJ's v runs up the image, so image row
//! `side − 1 − v` goes to memory row v.
//!
//! Each distinct texture gets a square power-of-two tile (the power of two nearest its larger
//! side); each distinct flat colour (materials without a usable texture) gets a 2 x 2 tile.
//! Tiles are packed largest first in Z (Morton) order into the smallest power-of-two square
//! that holds them, S: each tile then starts at a Morton index that is a multiple of its
//! area, so every tile is an aligned square and the tiles leave no gaps. If they do not fit
//! in [`ObjOptions::texture_size`], the largest texture is halved until they do. Any size change uses the
//! Catmull-Rom filter and adds a note (`resample_textures: false` makes it an error).
//!
//! Every triangle's UVs first lose the integer part its corners share.
//! - One tile: the texture is the whole memory, UVs pass on unchanged, and the hardware's
//!   wrap-around repeats the texture.
//! - Several tiles: UVs are clamped to [0, 1] (with a warning when that changes them) and
//!   mapped affinely onto texel positions [x + 0.5, x + n − 1.5] of their n-texel tile at
//!   (x, y): both ROMs read texels floor(F) and floor(F) + 1 only (the faithful ROM's
//!   swapped weights amount to bilinear filtering at (u1 + 1 − b, v1 + 1 − a) for
//!   (a, b) = frac(F)), so no read ever crosses into another tile, and there are no seams.
//!   Textures do not repeat inside an atlas: repeat them with geometry (the default
//!   scene's floor and wall are grids of quads).
//! - Flat tiles are always sampled at their centre, where the four bilinear weights are
//!   exactly 0.25 and the colour comes out exact.
//!
//! # Messages
//! [`ObjScene::notes`] holds what the user should know (resampling with the filter's name,
//! missing libraries, textures and materials and their fallbacks, geometry behind the
//! camera); errors are [`SceneError`]s naming the file, and the line and column for syntax.

mod atlas;
mod first_use;
mod fit;
mod inside;
mod load;
mod normals;
mod parse;
mod split;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use glam::DVec3;
use rayon::prelude::*;

pub use atlas::{DEFAULT_MEMORY_SIDE, MAX_MEMORY_SIDE, MEMORY_SIDE, MEMORY_WORDS, RESAMPLE_FILTER};
pub use fit::{UpAxis, ViewPreset, FIT_DISTANCE, HORIZON, MAX_FIT_RADIUS, MIN_FIT_RADIUS};

use super::generate::Mesh;
use super::{Partition, Scene, SceneError, Triangle};
use crate::emu::core::RomVariant;
use crate::emu::isa::asm::assemble;
use crate::emu::isa::Word;
use atlas::{Atlas, AtlasError, TileSource};
use fit::{FitError, Framing, View};
use load::Material;
pub use load::{Corner, ObjModel, ObjTriangle, NO_INDEX};

/// Vertical field of view when none is given, in degrees.
pub const DEFAULT_FOV_DEGREES: f32 = 40.0;
/// The same for a camera inside the model ([`ObjOptions::inside`]): wide enough that the
/// side walls of a room show beside the far one.
pub const INSIDE_FOV_DEGREES: f32 = 60.0;

/// How to frame and sample an OBJ scene.
#[derive(Clone, Debug)]
pub struct ObjOptions {
    pub width: u32,
    pub height: u32,
    /// Camera position in the OBJ's coordinates (default: front-right, above, fitted to
    /// the model).
    pub camera: Option<[f32; 3]>,
    /// The point the camera looks at (default: the centre of the model's bounds).
    pub look_at: Option<[f32; 3]>,
    /// Where the fitted camera looks from (when `camera` is not given), for models with +y
    /// up and their front towards +z (after [`ObjOptions::up`] has turned them so).
    pub view: ViewPreset,
    /// Which of the file's axes points up.
    pub up: UpAxis,
    /// The fitted camera sits inside the model: in its most open spot, facing the longest
    /// free way (the `inside` module), or, with the faithful ROM or when nothing is
    /// enclosed, just inside the face `view` looks through (several at an edge or corner),
    /// looking at the centre. With the faithful ROM the triangles between the camera and
    /// those faces are left out (BIU has no t > 0 test, so the wall behind the camera would
    /// cover the view; a triangle straddling the plane through an open-space camera could
    /// be neither kept nor left out).
    pub inside: bool,
    /// Vertical field of view in degrees.
    pub fov_degrees: f32,
    /// Turns the camera about the vertical axis through the look-at point by this many
    /// degrees (counter-clockwise seen from above): one frame of a turntable.
    pub orbit_degrees: f64,
    /// The scene is a frame of a turntable: the automatic camera fits the bounding sphere,
    /// so that every turn sees the whole model at one distance (a still fits what its one
    /// view sees).
    pub turntable: bool,
    /// Largest side of the texture memory the atlas may use, in texels (a power of two,
    /// at most [`MAX_MEMORY_SIDE`]; the published hardware holds [`MEMORY_SIDE`]).
    pub texture_size: u32,
    /// Resample textures that are not square powers of two or do not fit (with a note);
    /// when false, such a texture is an error.
    pub resample_textures: bool,
    /// Row bands (emulated cores) written into the scene's partitions.
    pub cores: u32,
    /// Leave the scene unlit (the ROM's own pixel shader: the texture or material colour
    /// as it is) instead of giving it [`LIGHTING_SHADER`].
    pub flat: bool,
    /// The ROM the scene is meant for. The faithful one has no t > 0 test, so geometry
    /// behind the camera can cover the view: the loader warns of it, and an `inside`
    /// camera leaves out the triangles behind it.
    pub rom: RomVariant,
    /// Cut triangles longer than 1/32 of the model's size into coplanar pieces before the
    /// fit (see the `split` module), so that a huge floor does not cost the rest of the
    /// model its precision. Off for the built-in scene and exports, which keep the
    /// published bench's triangle count.
    pub split_large: bool,
    /// Colour (bytes) of the pixels that show no triangle, painted by the scene's pixel
    /// shader; None keeps the ROM's own (black with the fixed ROM). Not with the faithful
    /// ROM, whose red is the hardware's.
    pub background: Option<[u8; 3]>,
    /// The scene is to be rendered K x K supersampled (`RenderOptions::ssaa`): its
    /// projection window is fitted as for K times the resolution, so that it is a whole
    /// multiple of the samples' count (CPPU's division exact) and the samples are those of
    /// the scene fitted at K times the resolution. 1: no supersampling.
    pub ssaa: u32,
}

/// Where [`LIGHTING_SHADER`] lives in the repository (for messages and the viewer).
pub const LIGHTING_SHADER_PATH: &str = "shaders/key_fill.shdr";

/// The pixel shader of OBJ scenes (unless [`ObjOptions::flat`]): `shaders/key_fill.shdr`,
/// the ROM's filtered texture colour (a flat tile's colour for untextured materials) lit by
/// a key light above and left of the camera and a weaker fill from the right.
pub const LIGHTING_SHADER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/shaders/key_fill.shdr"
));

/// Where [`FLAT_SHADER`] lives in the repository.
pub const FLAT_SHADER_PATH: &str = "shaders/flat.shdr";

/// The pixel shader of `flat` OBJ scenes with a background: the ROM's own colour, unlit,
/// and the background on a miss.
pub const FLAT_SHADER: &str =
    include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/flat.shdr"));

/// The line of [`LIGHTING_SHADER`] and [`FLAT_SHADER`] that paints a miss: its source
/// register becomes C7, which USERCONSTANTS sets to the background.
const BACKGROUND_LINE: &str = "CREG_TEXTURE_COLOR // background";

/// `source` (a shader whose miss colour is the line `CREG_TEXTURE_COLOR // background`, as
/// in [`LIGHTING_SHADER`] and [`FLAT_SHADER`]) painting misses `rgb`.
pub fn with_background(source: &str, rgb: [u8; 3]) -> String {
    let [r, g, b] = rgb.map(|c| u32::from(c) << 9);
    let constants = format!(
        "ENTRYPOINT_ADRR_USERCONSTANTS:\n        SETX C7 0x{r:x}\n        SETY C7 0x{g:x}\n        SETZ C7 0x{b:x}\n"
    );
    source
        .replacen("ENTRYPOINT_ADRR_USERCONSTANTS:\n", &constants, 1)
        .replacen(BACKGROUND_LINE, "C7", 1)
}

/// The instruction memory an OBJ scene gets: none for `flat` (the ROM's own pixel
/// shader), [`LIGHTING_SHADER`] otherwise, either painting misses `background`.
fn scene_program(options: &ObjOptions) -> Option<Vec<Word>> {
    let (source, path) = match (options.flat, options.background) {
        (true, None) => return None,
        (false, None) => return Some(lighting_program().to_vec()),
        (true, Some(_)) => (FLAT_SHADER, FLAT_SHADER_PATH),
        (false, Some(_)) => (LIGHTING_SHADER, LIGHTING_SHADER_PATH),
    };
    let source = with_background(source, options.background?);
    let assembly = assemble(&source, Path::new(path))
        .unwrap_or_else(|errors| panic!("{path} with a background does not assemble:\n{errors}"));
    Some(assembly.imem)
}

/// [`LIGHTING_SHADER`]'s instruction memory image, assembled once.
pub fn lighting_program() -> &'static [Word] {
    static PROGRAM: OnceLock<Vec<Word>> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        assemble(LIGHTING_SHADER, Path::new(LIGHTING_SHADER_PATH))
            .unwrap_or_else(|errors| {
                panic!("the built-in lighting shader does not assemble:\n{errors}")
            })
            .imem
    })
}

impl Default for ObjOptions {
    fn default() -> Self {
        ObjOptions {
            width: 256,
            height: 256,
            camera: None,
            look_at: None,
            view: ViewPreset::Auto,
            up: UpAxis::Y,
            inside: false,
            fov_degrees: DEFAULT_FOV_DEGREES,
            orbit_degrees: 0.0,
            turntable: false,
            texture_size: DEFAULT_MEMORY_SIDE,
            resample_textures: true,
            cores: 4,
            flat: false,
            rom: RomVariant::Fixed,
            background: None,
            ssaa: 1,
            split_large: true,
        }
    }
}

/// A loaded OBJ scene and what the loader wants the user to know (resampling, fallbacks).
#[derive(Debug)]
pub struct ObjScene {
    pub scene: Scene,
    pub notes: Vec<String>,
    /// Hardware units per OBJ unit: coordinates and distances such as
    /// LAST_t that shaders see are the OBJ's times this.
    pub scale: f64,
}

/// Supplies the files an OBJ refers to (MTL libraries, textures), from disk or memory.
pub trait Assets {
    fn read(&self, name: &str) -> Option<Vec<u8>>;
    /// How to name `name` in messages.
    fn display(&self, name: &str) -> String;
    /// Which file `name` is: two names of one file (`./x.png`, `a/../x.png`, a link) give
    /// one key, so the loader reads and decodes it once.
    fn file_key(&self, name: &str) -> String {
        name.to_string()
    }
    /// Why `name` cannot be read, when it names something that is not a regular file (a
    /// device such as /dev/zero never ends, a FIFO blocks): the loader refuses it.
    fn refusal(&self, _name: &str) -> Option<String> {
        None
    }
}

/// Files relative to a directory (the OBJ's).
pub struct DirAssets(pub PathBuf);

impl Assets for DirAssets {
    fn read(&self, name: &str) -> Option<Vec<u8>> {
        crate::io::input::read(&self.0.join(name)).ok()
    }
    fn display(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }
    fn file_key(&self, name: &str) -> String {
        let path = self.0.join(name);
        match crate::io::input::file_key(&path) {
            Some((device, inode)) => format!("file:{device}:{inode}"),
            None => format!("path:{}", path.display()),
        }
    }
    fn refusal(&self, name: &str) -> Option<String> {
        let path = self.0.join(name);
        let metadata = std::fs::metadata(&path).ok()?;
        (!metadata.is_file()).then(|| {
            crate::io::input::read(&path)
                .err()
                .map_or_else(|| "not a regular file".to_string(), |e| e.to_string())
        })
    }
}

/// Files compiled into the binary (the default scene).
pub struct MemoryAssets(pub &'static [(&'static str, &'static [u8])]);

impl Assets for MemoryAssets {
    fn read(&self, name: &str) -> Option<Vec<u8>> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, b)| b.to_vec())
    }
    fn display(&self, name: &str) -> String {
        format!("(built-in) {name}")
    }
}

/// How far loading an OBJ has got, for a progress bar: `done` of `total` units, where
/// reading the text and converting the triangles take half each.
#[derive(Debug, Default)]
pub struct LoadProgress {
    pub done: AtomicU64,
    pub total: AtomicU64,
}

/// Loads an OBJ file from disk, its MTL libraries and textures relative to it.
pub fn load_obj(path: &Path, options: &ObjOptions) -> Result<ObjScene, SceneError> {
    load_obj_with_progress(path, options, &LoadProgress::default())
}

/// [`load_obj`], reporting its progress in `progress` (another thread draws it).
pub fn load_obj_with_progress(
    path: &Path,
    options: &ObjOptions,
    progress: &LoadProgress,
) -> Result<ObjScene, SceneError> {
    let bytes = crate::io::input::read(path).map_err(|source| SceneError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let pieces = parse::utf8_pieces(&bytes, path)?;
    let assets = DirAssets(path.parent().map(Path::to_path_buf).unwrap_or_default());
    let parsed = parse_text(pieces, bytes.len(), path, &assets, options, progress)?;
    // The text is a third of the peak memory of a large load: freed now, on a worker
    // thread (unmapping 50 MB took 4 ms of the serial path), while the scene is built.
    rayon::spawn(move || drop(bytes));
    parsed.build(path, &assets, options, progress)
}

/// Loads OBJ text (`path` names it in messages) whose MTL and textures come from `assets`.
pub fn load_obj_text(
    text: &str,
    path: &Path,
    assets: &dyn Assets,
    options: &ObjOptions,
) -> Result<ObjScene, SceneError> {
    let progress = LoadProgress::default();
    let pieces = parse::text_pieces(text, parse::piece_bytes(text.len()));
    parse_text(pieces, text.len(), path, assets, options, &progress)?
        .build(path, assets, options, &progress)
}

/// An OBJ read and its materials loaded, not yet converted.
struct Parsed {
    loaded: load::Loaded,
    notes: Vec<String>,
    /// Progress units of the conversion (those of the reading are done).
    half: u64,
}

impl Parsed {
    fn build(
        self,
        path: &Path,
        assets: &dyn Assets,
        options: &ObjOptions,
        progress: &LoadProgress,
    ) -> Result<ObjScene, SceneError> {
        let half = self.half;
        let step = |done: usize, of: usize| {
            let converted = (half as u128 * done as u128 / of.max(1) as u128) as u64;
            // Chunks finish in any order: the bar never goes back.
            progress.done.fetch_max(half + converted, Ordering::Relaxed);
        };
        let load::Loaded { model, materials } = self.loaded;
        build_scene(&model, &materials, path, assets, options, self.notes, &step)
    }
}

/// Checks and reads OBJ text (`pieces` of `bytes` in all, see [`parse::utf8_pieces`]) and
/// its materials: everything but the conversion.
fn parse_text(
    pieces: Vec<&str>,
    bytes: usize,
    path: &Path,
    assets: &dyn Assets,
    options: &ObjOptions,
    progress: &LoadProgress,
) -> Result<Parsed, SceneError> {
    let half = bytes as u64 + 1;
    progress.total.store(2 * half, Ordering::Relaxed);
    let unsupported = |message: String| SceneError::Unsupported {
        file: path.to_path_buf(),
        message,
    };
    validate_options(options).map_err(unsupported)?;
    let valid = parse::validate_obj_counting(pieces, path, &progress.done)?;
    progress.done.store(half, Ordering::Relaxed);
    if valid.model.triangles.is_empty() {
        return Err(unsupported(NO_TRIANGLES.into()));
    }
    let mut notes = Vec::new();
    if !valid.unknown.is_empty() {
        notes.push(format!(
            "note: {}: ignored statements the hardware has no use for: {}",
            path.display(),
            valid.unknown.join(", ")
        ));
    }
    if let Some((first, count)) = &valid.ignored {
        notes.push(match count {
            1 => format!("warning: {first}"),
            n => format!("warning: {first} (and {} more like it)", n - 1),
        });
    }
    let loaded = load::load(valid, path, assets, &mut notes)?;
    Ok(Parsed {
        loaded,
        notes,
        half,
    })
}

/// A generated mesh as a scene, framed and converted exactly as an OBJ file of it
/// ([`Mesh::to_obj`]) would be, without writing or parsing the text; `path` names it.
pub fn load_mesh(mesh: &Mesh, path: &Path, options: &ObjOptions) -> Result<ObjScene, SceneError> {
    let unsupported = |message: String| SceneError::Unsupported {
        file: path.to_path_buf(),
        message,
    };
    validate_options(options).map_err(unsupported)?;
    if mesh.faces.is_empty() {
        return Err(unsupported(NO_TRIANGLES.into()));
    }
    let model = ObjModel::from_mesh(mesh)
        .ok_or_else(|| unsupported("the mesh has too many positions to index".into()))?;
    build_scene(
        &model,
        &[],
        path,
        &MemoryAssets(&[]),
        options,
        Vec::new(),
        &|_, _| {},
    )
}

/// A model read from another format (PLY) as a scene, framed and converted exactly as an
/// OBJ of the same mesh (no materials) would be; `notes` are the reader's.
pub fn load_model(
    model: &ObjModel,
    path: &Path,
    options: &ObjOptions,
    notes: Vec<String>,
) -> Result<ObjScene, SceneError> {
    let unsupported = |message: String| SceneError::Unsupported {
        file: path.to_path_buf(),
        message,
    };
    validate_options(options).map_err(unsupported)?;
    if model.triangles.is_empty() {
        return Err(unsupported("the model has no triangles".into()));
    }
    build_scene(
        model,
        &[],
        path,
        &MemoryAssets(&[]),
        options,
        notes,
        &|_, _| {},
    )
}

/// What [`load_obj_text`] and [`load_mesh`] share once the model is loaded: the atlas,
/// the fit and the hardware's words.
fn build_scene(
    model: &ObjModel,
    materials: &[Option<Material>],
    path: &Path,
    assets: &dyn Assets,
    options: &ObjOptions,
    mut notes: Vec<String>,
    step: &(dyn Fn(usize, usize) + Sync),
) -> Result<ObjScene, SceneError> {
    let unsupported = |message: String| SceneError::Unsupported {
        file: path.to_path_buf(),
        message,
    };
    let cut = split_huge_triangles(model, options, &mut notes);
    let model = cut.as_ref().unwrap_or(model);
    let (sources, tile_of_material) =
        tile_sources(model, materials, assets, &mut notes).map_err(unsupported)?;
    let atlas = Atlas::build(
        &sources,
        options.texture_size,
        options.resample_textures,
        &mut notes,
    )
    .map_err(|e| unsupported(atlas_message(e, options.texture_size)))?;

    let view = fit_view(model, options).map_err(|e| unsupported(fit_message(e)))?;
    let base = atlas.memory.len();
    let normals = normals::Normals::place(model, &view, base);
    let converter = TriangleConverter {
        model,
        view: &view,
        atlas: &atlas,
        normals: &normals,
        tile_of_material: &tile_of_material,
        base,
        // The fixed ROM's BIU tests t > 0: what is behind an inside camera cannot cover
        // the view.
        leave_out_behind: options.inside && options.rom == RomVariant::Faithful,
        path,
    };
    let convert = |triangle: &load::ObjTriangle| converter.convert(triangle);
    let (triangles, counts) = convert_all(&model.triangles, &convert, step)?;
    conversion_notes(&mut notes, model.triangles.len(), counts, &view, options);

    let q = |value: f64, what: &str| fitted_q(value, what, path);
    let config = scene_config(&view, options, atlas.side, path, &q)?;
    let (width, height) = (options.width, options.height);
    let program = scene_program(options);
    Ok(ObjScene {
        scene: Scene {
            name: path.display().to_string(),
            config,
            partitions: Partition::bands(width, height, options.cores),
            triangles,
            texture: {
                let mut memory = atlas.memory;
                memory.extend(normals.words);
                memory
            },
            control_register: 7,
            program,
        },
        notes,
        scale: view.scale,
    })
}

/// A value of the fitted scene in Q15.17, or the error naming it (`what`) when it is out
/// of range.
#[inline]
fn fitted_q(value: f64, what: &str, path: &Path) -> Result<u32, SceneError> {
    to_q(value).ok_or_else(|| SceneError::Unsupported {
        file: path.to_path_buf(),
        message: format!(
            "{what} {value} is outside the Q15.17 range (-16384 .. 16384) after fitting"
        ),
    })
}

/// What turns one OBJ triangle into the hardware's record: the fitted view, the atlas,
/// where the normals are.
struct TriangleConverter<'a> {
    model: &'a ObjModel,
    view: &'a View,
    atlas: &'a Atlas,
    normals: &'a normals::Normals,
    tile_of_material: &'a HashMap<Option<usize>, usize>,
    /// The first word after the atlas in texture memory.
    base: usize,
    /// Triangles wholly behind the camera are left out.
    leave_out_behind: bool,
    path: &'a Path,
}

impl TriangleConverter<'_> {
    /// One triangle's record (see [`Converted`]).
    fn convert(&self, triangle: &load::ObjTriangle) -> Converted {
        let (model, view, atlas) = (self.model, self.view, self.atlas);
        let corner = |c: &load::Corner| DVec3::from(model.positions[c.position()]);
        if self.leave_out_behind && view.beyond_camera(triangle.corners.each_ref().map(corner)) {
            return Ok(None);
        }
        let q = |value: f64, what: &str| fitted_q(value, what, self.path);
        let tile = self.tile_of_material[&triangle.material()];
        let (uvs, shift, without_uv, clamped) = corner_uvs(model, triangle, atlas, tile);
        let mut record: Triangle = [[0; 3]; 7];
        let addresses = self.normals.addresses(triangle);
        for (n, (c, uv)) in triangle.corners.iter().zip(uvs).enumerate() {
            let p = view.to_hardware(corner(c));
            let slot = 2 * n;
            record[slot] = [
                q(p.x, "coordinate")?,
                q(p.y, "coordinate")?,
                q(p.z, "coordinate")?,
            ];
            let [u, v] = atlas.map_uv(tile, [uv[0] - shift[0], uv[1] - shift[1]]);
            // The third component: where the corner's normal is (0: lit flat).
            record[slot + 1] = [
                q(u, "texture coordinate")?,
                q(v, "texture coordinate")?,
                addresses.map_or(0, |a| a[n]),
            ];
        }
        record[6] = self.normals.face_normal(&record, addresses, self.base);
        Ok(Some((record, without_uv, clamped)))
    }
}

/// 1.0 in Q15.17.
const ONE: u32 = 1 << 17;

/// A triangle's texture coordinates ((0.5, 0.5) where a corner has none), the integer
/// part its corners share, whether it is textured but some corner has none, and whether
/// its coordinates leave the tile (clamped by the atlas).
fn corner_uvs(
    model: &ObjModel,
    triangle: &load::ObjTriangle,
    atlas: &Atlas,
    tile: usize,
) -> ([[f64; 2]; 3], [f64; 2], bool, bool) {
    let uvs = triangle.corners.map(|c| {
        c.texcoord()
            .map(|i| model.texcoords[i])
            .unwrap_or([0.5, 0.5])
    });
    let without_uv =
        !atlas.tiles[tile].flat && triangle.corners.iter().any(|c| c.texcoord().is_none());
    // Drop the integer part the corners share: it keeps the coordinates small where one
    // texture repeats through the hardware's wrap-around, and lets a triangle of a repeated
    // texture keep its whole texture in an atlas tile.
    let shift = [0, 1].map(|axis| {
        uvs.iter()
            .map(|uv| uv[axis])
            .fold(f64::MAX, f64::min)
            .floor()
    });
    let outside = |uv: &[f64; 2]| (0..2).any(|a| !(0.0..=1.0).contains(&(uv[a] - shift[a])));
    let clamped = !atlas.single() && !atlas.tiles[tile].flat && uvs.iter().any(outside);
    (uvs, shift, without_uv, clamped)
}

/// Configuration rows 0..5: up, the camera, the projection window whose half extents are
/// whole multiples of the pixel count (see the module documentation), the resolution and
/// the texture memory's side.
fn scene_config(
    view: &View,
    options: &ObjOptions,
    texture_side: u32,
    path: &Path,
    q: &dyn Fn(f64, &str) -> Result<u32, SceneError>,
) -> Result<[[u32; 3]; 6], SceneError> {
    let (width, height) = (options.width, options.height);
    // The window fitted for `ssaa` times the pixels, as half pitches of the samples.
    let k = view.half_pitch_raw * i64::from(options.ssaa);
    let raw = |v: i64| v as i32 as u32;
    let window_x = k * width as i64;
    let window_y = k * height as i64;
    if window_x.max(window_y) >= 1 << 31 {
        return Err(SceneError::Unsupported {
            file: path.to_path_buf(),
            message: "the projection window is outside the Q15.17 range after fitting".into(),
        });
    }
    let side = texture_side << 17;
    Ok([
        [0, ONE, 0],
        [
            q(view.camera.x, "camera coordinate")?,
            q(view.camera.y, "camera coordinate")?,
            q(view.camera.z, "camera coordinate")?,
        ],
        [raw(-window_x), raw(window_y), 0],
        [raw(window_x), raw(-window_y), 0],
        [width << 17, height << 17, 0],
        [side, side, 0],
    ])
}

/// The model with its huge triangles cut (see the `split` module), with a note, when
/// `options` allow it and some are huge.
fn split_huge_triangles(
    model: &ObjModel,
    options: &ObjOptions,
    notes: &mut Vec<String>,
) -> Option<ObjModel> {
    let (pieces, triangles, into) = split::split_large(model).filter(|_| options.split_large)?;
    notes.push(format!(
        "note: {triangles} triangles longer than 1/32 of the model were cut into {into} coplanar pieces, so that they do not limit the scale the rest of the model keeps in Q15.17"
    ));
    Some(pieces)
}

/// What [`convert_all`] counted: triangles kept, textured ones with corners without
/// texture coordinates, and ones whose texture coordinates were clamped.
type ConversionCounts = [usize; 3];

/// One triangle's record (None: left out), whether it is textured but has corners
/// without texture coordinates, and whether its texture coordinates are clamped.
type Converted = Result<Option<(Triangle, bool, bool)>, SceneError>;

/// Every triangle's record, in file order, with the counts. Chunks of triangles convert
/// in parallel, each into its own stretch of the records (kept records first), stopping at
/// its first error; the first chunk with an error has the first error in file order. Then
/// the kept records close up.
fn convert_all(
    all: &[load::ObjTriangle],
    convert: &(dyn Fn(&load::ObjTriangle) -> Converted + Sync),
    step: &(dyn Fn(usize, usize) + Sync),
) -> Result<(Vec<Triangle>, ConversionCounts), SceneError> {
    let chunk_len = triangle_chunk_len(all.len());
    let total = all.len();
    let mut triangles: Vec<Triangle> = vec![[[0; 3]; 7]; total];
    let converted = AtomicUsize::new(0);
    let chunks: Vec<Result<ConversionCounts, SceneError>> = (triangles.par_chunks_mut(chunk_len))
        .zip(all.par_chunks(chunk_len))
        .map(|(records, chunk)| {
            let [mut kept, mut without_uv, mut clamped] = [0; 3];
            for triangle in chunk {
                if let Some((record, no_uv, clamp)) = convert(triangle)? {
                    records[kept] = record;
                    kept += 1;
                    without_uv += usize::from(no_uv);
                    clamped += usize::from(clamp);
                }
            }
            step(
                converted.fetch_add(chunk.len(), Ordering::Relaxed) + chunk.len(),
                total,
            );
            Ok([kept, without_uv, clamped])
        })
        .collect();
    let mut counts = [0; 3];
    for (index, chunk) in chunks.into_iter().enumerate() {
        let chunk = chunk?;
        let start = index * chunk_len;
        if start != counts[0] {
            triangles.copy_within(start..start + chunk[0], counts[0]);
        }
        for (count, add) in counts.iter_mut().zip(chunk) {
            *count += add;
        }
    }
    triangles.truncate(counts[0]);
    Ok((triangles, counts))
}

/// How many of `len` items (triangles, bytes) each piece of a parallel pass over them
/// holds: about a quarter of a thread's share, so that a model of 80,000 triangles keeps
/// 16 threads busy too (in pieces of a fixed size it gave 5 of them work), but from
/// `least` to `most` items, where a piece's own cost or memory would tell.
pub(super) fn piece_len(len: usize, least: usize, most: usize) -> usize {
    (len / (4 * rayon::current_num_threads())).clamp(least, most)
}

/// The most triangles a piece of a parallel pass over a model's triangles holds.
const MOST_CHUNK_TRIANGLES: usize = 1 << 14;

/// [`piece_len`] for `len` triangles (the conversion, the first uses): 1,024 to
/// [`MOST_CHUNK_TRIANGLES`] each.
fn triangle_chunk_len(len: usize) -> usize {
    piece_len(len, 1 << 10, MOST_CHUNK_TRIANGLES)
}

/// The notes and warnings the conversion of `total` triangles gives.
fn conversion_notes(
    notes: &mut Vec<String>,
    total: usize,
    [kept, textured_without_uv, clamped]: ConversionCounts,
    view: &View,
    options: &ObjOptions,
) {
    let left_out = total - kept;
    if left_out > 0 {
        notes.push(format!(
            "note: {left_out} triangles between the camera and the face of the bounds it looks through are left out (--inside)"
        ));
    }
    if view.behind_camera > 0 && !options.inside && options.rom == RomVariant::Faithful {
        notes.push(format!(
            "warning: {} vertices are at or behind the camera; BIU has no t > 0 test, so faces behind the camera can cover the view",
            view.behind_camera
        ));
    }
    if clamped > 0 {
        notes.push(format!(
            "warning: {clamped} triangles span more than one repeat of their texture; an atlas tile cannot repeat, so their texture coordinates are clamped to the tile (repeat with geometry, or use a single texture)"
        ));
    }
    if textured_without_uv > 0 {
        notes.push(format!(
            "warning: {textured_without_uv} textured triangles have corners without texture coordinates; those corners use (0.5, 0.5)"
        ));
    }
}

const NO_TRIANGLES: &str =
    "the OBJ has no triangles (no `f` statement with three or more vertices)";

/// Q15.17 of a value (rounded to nearest, halves away from zero), if it is in range.
#[inline]
pub(super) fn to_q(value: f64) -> Option<u32> {
    let scaled = value * 131072.0;
    // Beyond ±2^32 (or NaN) it rounds out of range. Within, `as` truncates exactly and
    // the fraction left is exact (Sterbenz: the two are within a factor of 2, or the
    // whole part is 0), so this is `f64::round` without its library call (a slow generic
    // one on x86-64 without SSE4.1, a few percent of a large model's load).
    if scaled.is_nan() || scaled.abs() >= 4_294_967_296.0 {
        return None;
    }
    let whole = scaled as i64;
    let fraction = scaled - whole as f64;
    let rounded = whole + i64::from(fraction >= 0.5) - i64::from(fraction <= -0.5);
    i32::try_from(rounded).ok().map(|q| q as u32)
}

fn validate_options(options: &ObjOptions) -> Result<(), String> {
    let side = options.texture_size;
    if !side.is_power_of_two() || !(2..=MAX_MEMORY_SIDE).contains(&side) {
        return Err(format!(
            "texture memory side {side} must be a power of two from 2 to {MAX_MEMORY_SIDE} (the ROM's texel arithmetic; the published hardware holds {MEMORY_SIDE}x{MEMORY_SIDE} texels)"
        ));
    }
    if !(1..=4096).contains(&options.width) || !(1..=4096).contains(&options.height) {
        return Err(format!(
            "resolution {}x{} must be between 1x1 and 4096x4096",
            options.width, options.height
        ));
    }
    let fov = options.fov_degrees;
    if !(1.0..=170.0).contains(&fov) {
        return Err(format!(
            "field of view {fov} degrees must be between 1 and 170"
        ));
    }
    for (name, point) in [
        ("camera", options.camera),
        ("look-at point", options.look_at),
    ] {
        if point.is_some_and(|p| p.iter().any(|c| !c.is_finite())) {
            return Err(format!("the {name} must have finite coordinates"));
        }
    }
    if options.cores == 0 {
        return Err("the scene needs at least one core".into());
    }
    if !(1..=16).contains(&options.ssaa) {
        return Err(format!(
            "supersampling factor {} must be between 1 and 16",
            options.ssaa
        ));
    }
    if options.background.is_some() && options.rom == RomVariant::Faithful {
        return Err("a background colour needs the fixed ROM: the faithful ROM paints every miss red, as the hardware does".into());
    }
    Ok(())
}

/// The distinct textures and flat colours, and the tile of each material.
type TileSources = (Vec<TileSource>, HashMap<Option<usize>, usize>);

/// One tile source per distinct texture or flat colour, and the tile of each material
/// (None: no material, white).
fn tile_sources(
    model: &ObjModel,
    materials: &[Option<Material>],
    assets: &dyn Assets,
    notes: &mut Vec<String>,
) -> Result<TileSources, String> {
    let mut texels = 0u64;
    let mut sources = Vec::new();
    let mut by_key: HashMap<String, usize> = HashMap::new();
    let mut tile_of_material = HashMap::new();
    // The materials the triangles use, in order (None first).
    let none = || vec![false; materials.len() + 1];
    let uses = (model.triangles.par_iter())
        .fold(none, |mut uses, triangle| {
            uses[triangle.material().map_or(0, |m| m + 1)] = true;
            uses
        })
        .reduce(none, |mut uses, more| {
            uses.iter_mut()
                .zip(more)
                .for_each(|(used, also)| *used |= also);
            uses
        });
    let used = (uses.iter().enumerate())
        .filter(|(_, used)| **used)
        .map(|(index, _)| index.checked_sub(1));
    for material in used {
        let found = material.and_then(|m| materials[m].as_ref());
        let diffuse = found.map_or([1.0; 3], |m| m.diffuse);
        let mut source = None;
        if let (Some(m), Some(name)) = (found, found.and_then(|m| m.texture.as_ref())) {
            // By the file it is: eight spellings of one texture decode it once.
            let key = format!("image:{}", assets.file_key(name));
            if let Some(&tile) = by_key.get(&key) {
                tile_of_material.insert(material, tile);
                continue;
            }
            let shown = assets.display(name);
            if let Some(why) = assets.refusal(name) {
                return Err(format!("texture {shown} of material `{}`: {why}", m.name));
            }
            let fallback = format!(
                "using its diffuse colour Kd {} {} {}",
                m.diffuse[0], m.diffuse[1], m.diffuse[2]
            );
            let bytes = assets.read(name);
            if let Some(size) = bytes.as_deref().and_then(texture_size) {
                texels += size.0 as u64 * size.1 as u64;
                if texels > TEXTURE_BUDGET {
                    return Err(format!(
                        "texture {shown} ({}x{}) brings the scene's textures to {texels} texels, more than the {TEXTURE_BUDGET} the loader decodes: scale the textures down",
                        size.0, size.1
                    ));
                }
            }
            match bytes.map(|bytes| atlas::decode(&bytes, name)) {
                Some(Ok(image)) => {
                    source = Some((
                        key,
                        TileSource::Image {
                            image: image.to_rgb8(),
                            name: shown,
                        },
                    ))
                }
                Some(Err(error)) => notes.push(format!(
                    "warning: texture {shown} of material `{}` cannot be decoded ({error}); {fallback}",
                    m.name
                )),
                None => notes.push(format!(
                    "warning: texture {shown} of material `{}` not found; {fallback}",
                    m.name
                )),
            }
        }
        let (key, source) = source.unwrap_or_else(|| {
            let rgb = diffuse.map(|c| (c.clamp(0.0, 1.0) * 255.0).round() as u8);
            (format!("flat:{rgb:?}"), TileSource::Flat(rgb))
        });
        let tile = *by_key.entry(key).or_insert_with(|| {
            sources.push(source);
            sources.len() - 1
        });
        tile_of_material.insert(material, tile);
    }
    Ok((sources, tile_of_material))
}

/// Texels the loader decodes for one scene, all its textures together (one 8192x8192
/// texture, or sixteen of 2048x2048): about 200 MB once decoded. Textures larger than
/// the texture memory are resampled to it anyway.
pub const TEXTURE_BUDGET: u64 = 1 << 26;

/// A texture's width and height from its header, without decoding it.
fn texture_size(bytes: &[u8]) -> Option<(u32, u32)> {
    ::image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .ok()?
        .into_dimensions()
        .ok()
}

fn fit_view(model: &ObjModel, options: &ObjOptions) -> Result<View, FitError> {
    // Only vertices that faces use count for the bounds.
    let (positions, triangles) = used_positions(model);
    let point = |p: Option<[f32; 3]>| p.map(|p| DVec3::from(p.map(f64::from)));
    View::fit(
        &positions,
        triangles,
        &Framing {
            camera: point(options.camera),
            look_at: point(options.look_at),
            up: options.up,
            view: options.view,
            inside: options.inside,
            fov_degrees: options.fov_degrees as f64,
            // The same aspect, and the samples' pitch (see [`ObjOptions::ssaa`]).
            width: options.width * options.ssaa,
            height: options.height * options.ssaa,
            orbit_degrees: options.orbit_degrees,
            open_space: options.rom != RomVariant::Faithful,
            turntable: options.turntable,
        },
    )
}

/// The positions the triangles use, in the order of their first use (see the `first_use`
/// module: the fit's sequential folds and the `inside` grid see them in that order), and
/// the triangles' corners as indices into them.
fn used_positions(model: &ObjModel) -> (Vec<DVec3>, Vec<[usize; 3]>) {
    let position = |t: &ObjTriangle, k: usize| Some(t.corners[k].position());
    let uses = first_use::first_uses(&model.triangles, model.positions.len(), position);
    let positions = (uses.order.par_iter())
        .map(|&at| DVec3::from(model.positions[at]))
        .collect();
    // Every corner's position is used: it has a rank.
    let rank = |c: Corner| uses.rank(c.position()).unwrap_or_default();
    let triangles = (model.triangles.par_iter())
        .map(|t| t.corners.map(rank))
        .collect();
    (positions, triangles)
}

fn fit_message(error: FitError) -> String {
    match error {
        FitError::NoExtent => "the model has no extent: all its vertices are at one point".into(),
        FitError::TooLarge { coordinate } => format!(
            "a vertex coordinate is {coordinate:e}: too large to fit the camera to (distances would overflow); scale the model down"
        ),
        FitError::TooSmall { extent } => format!(
            "the model is {extent:e} across: too small to fit the camera to (distances would underflow); scale the model up"
        ),
        FitError::CameraAtTarget => "the camera is at the point it looks at".into(),
        FitError::TooFar {
            camera_distance,
            radius,
            farthest,
        } => {
            let limit = if farthest >= fit::Q_LIMIT {
                "outside the Q15.17 range (-16384 .. 16384) after fitting".to_string()
            } else {
                format!("beyond the ROM's horizon (hits at t >= {HORIZON} are misses)")
            };
            format!(
                "the camera is {} units from a model of radius {}: keeping the model's radius at least {MIN_FIT_RADIUS} (the least that keeps triangles precise) puts its far side {farthest:.0} units from the camera, {limit}; move the camera closer",
                short(camera_distance),
                short(radius)
            )
        }
    }
}

/// A length for messages: at most four decimals, no trailing zeros.
fn short(value: f64) -> String {
    let text = format!("{value:.4}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn atlas_message(error: AtlasError, memory_side: u32) -> String {
    match error {
        AtlasError::NeedsResampling {
            name,
            width,
            height,
        } => {
            let why = if width > memory_side || height > memory_side {
                format!("too large for the {memory_side}x{memory_side} texture memory")
            } else if width != height || !width.is_power_of_two() {
                "not a square power of two".into()
            } else {
                "too large to share the texture memory with the other textures".into()
            };
            format!("texture {name} is {width}x{height}: {why}, and resampling is off")
        }
        AtlasError::TooManyTiles { tiles } => format!(
            "{tiles} textures and colours need more than the {memory_side}x{memory_side} texture memory holds, even at 2x2 texels each"
        ),
    }
}

/// The built-in scene (scenes/default.obj with its textures in assets/), compiled into the
/// binary so `theia render` works from any directory. `python3 assets/generate.py` (run
/// from the repository root) regenerates all of it, byte for byte.
pub mod default_scene {
    use super::*;

    pub const NAME: &str = "scenes/default.obj";
    /// The default view (used unless the options give their own).
    pub const CAMERA: [f32; 3] = [4.6, 2.7, 6.5];
    pub const LOOK_AT: [f32; 3] = [0.0, 1.0, 0.0];
    const OBJ: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/default.obj"));
    /// A texture of the default scene: its name in default.mtl and its bytes.
    macro_rules! texture {
        ($file:literal) => {
            (
                concat!("../assets/", $file),
                include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/", $file)) as &[u8],
            )
        };
    }
    const ASSETS: MemoryAssets = MemoryAssets(&[
        (
            "default.mtl",
            include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/default.mtl")),
        ),
        texture!("floor.png"),
        texture!("floor_shadow_big.png"),
        texture!("floor_shadow_small.png"),
        texture!("wall.png"),
        texture!("crate_top.png"),
        texture!("crate_lit.png"),
        texture!("crate_dark.png"),
    ]);

    /// Loads the default scene; the camera and look-at point the options leave out are the
    /// scene's own. It is framed for the default field of view, 40 degrees. It is always
    /// flat: its textures carry their own light (lit and shaded crate sides, shadows on the
    /// floor), and [`LIGHTING_SHADER`] on top of that only darkens it.
    pub fn load(options: &ObjOptions) -> Result<ObjScene, SceneError> {
        let mut options = options.clone();
        options.flat = true;
        options.split_large = false;
        if options.view == ViewPreset::Auto && !options.inside {
            options.camera = options.camera.or(Some(CAMERA));
            options.look_at = options.look_at.or(Some(LOOK_AT));
        }
        load_obj_text(OBJ, Path::new(NAME), &ASSETS, &options)
    }
}
