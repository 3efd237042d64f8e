//! OBJ scenes: load with `tobj` (triangulated, MTL materials, `map_Kd` textures), place
//! them where Q15.17 holds them, and convert to the hardware's triangle records and
//! texture memory.
//!
//! The hardware's camera is a pinhole at CREG_CAMERA_POSITION looking through a window on
//! the plane z = 0 (RGU: point = pixel * scale + window_min). The loader therefore moves the
//! model into a view space where the camera sits at (0, 0, D) and looks at the origin, and
//! scales it to a radius of [`FIT_RADIUS`], well inside the fixed-point range.
//!
//! Textures share the single texture memory as an atlas: a grid of equal square tiles, one
//! per texture (and one flat tile per untextured material colour). A scene with exactly one
//! tile keeps its UVs untouched, so the hardware's wrap-around (repeat) works; with several
//! tiles UVs are clamped to [0, 1] and mapped inside their tile, one texel in from the edge
//! so the bilinear neighbour never reads the next tile.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use glam::Vec3 as V3;

use super::{config_row, Partition, Scene, SceneError, Triangle, Vec3};

/// Radius of the model's bounding sphere after fitting, in scene units.
pub const FIT_RADIUS: f32 = 4.0;
/// Words of texture memory: 256 x 256 texels x 3 channels (the test bench's buffer).
pub const TEXTURE_MEMORY_WORDS: usize = 256 * 256 * 3;
/// The ROM starts every pixel with a closest hit at t = 500.0: anything farther is a miss.
pub const FARTHEST_HIT: f32 = 500.0;
/// The filter used to resample textures to their atlas tile.
pub const RESAMPLE_FILTER: (::image::imageops::FilterType, &str) =
    (::image::imageops::FilterType::CatmullRom, "Catmull-Rom");

/// How to frame and sample an OBJ scene.
#[derive(Clone, Debug)]
pub struct ObjOptions {
    pub width: u32,
    pub height: u32,
    /// Camera position in the OBJ's coordinates (default: a three-quarter view that fits
    /// the model).
    pub camera: Option<[f32; 3]>,
    /// The point the camera looks at (default: the centre of the model's bounds).
    pub look_at: Option<[f32; 3]>,
    /// Vertical field of view in degrees.
    pub fov_degrees: f32,
    /// Side of the square texture memory image in texels (a power of two).
    pub texture_size: u32,
    /// Row bands (emulated cores) written into the scene's partitions.
    pub cores: u32,
}

impl Default for ObjOptions {
    fn default() -> Self {
        ObjOptions {
            width: 256,
            height: 256,
            camera: None,
            look_at: None,
            fov_degrees: 40.0,
            texture_size: 256,
            cores: 4,
        }
    }
}

/// A loaded OBJ scene and what the loader wants the user to know (resampling, fallbacks).
#[derive(Debug)]
pub struct ObjScene {
    pub scene: Scene,
    pub notes: Vec<String>,
}

/// Supplies the files an OBJ refers to (MTL libraries, textures), from disk or memory.
pub trait Assets {
    fn read(&self, name: &str) -> Option<Vec<u8>>;
    /// How to name `name` in messages.
    fn display(&self, name: &str) -> String;
}

/// Files next to the OBJ on disk.
pub struct DirAssets(pub PathBuf);

impl Assets for DirAssets {
    fn read(&self, name: &str) -> Option<Vec<u8>> {
        std::fs::read(self.0.join(name)).ok()
    }
    fn display(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
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

/// Loads an OBJ file from disk, its MTL and textures relative to it.
pub fn load_obj(path: &Path, options: &ObjOptions) -> Result<ObjScene, SceneError> {
    let text = std::fs::read_to_string(path).map_err(|source| SceneError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    load_obj_text(&text, path, &DirAssets(dir), options)
}

/// Loads OBJ text whose MTL and textures come from `assets`.
pub fn load_obj_text(
    text: &str,
    path: &Path,
    assets: &dyn Assets,
    options: &ObjOptions,
) -> Result<ObjScene, SceneError> {
    validate_options(path, options)?;
    let mut notes = Vec::new();
    let load_options = tobj::LoadOptions {
        triangulate: true,
        single_index: true,
        ignore_points: true,
        ignore_lines: true,
    };
    // tobj wants an `Fn` loader, so the loader records a missing library through a cell.
    let material_error = std::cell::RefCell::new(None);
    let (models, materials) = tobj::load_obj_buf(
        &mut std::io::Cursor::new(text.as_bytes()),
        &load_options,
        |mtl_path| {
            let name = mtl_path.to_string_lossy();
            match assets.read(&name) {
                Some(bytes) => tobj::load_mtl_buf(&mut std::io::Cursor::new(bytes)),
                None => {
                    *material_error.borrow_mut() = Some(format!(
                        "material library {} not found",
                        assets.display(&name)
                    ));
                    Err(tobj::LoadError::OpenFileFailed)
                }
            }
        },
    )
    .map_err(|error| locate_obj_error(text, path, error))?;
    let materials = match materials {
        Ok(materials) => materials,
        Err(_) => {
            if let Some(message) = material_error.take() {
                notes.push(format!("warning: {message}; using white"));
            }
            Vec::new()
        }
    };

    let mut positions = Vec::new();
    let mut uvs = Vec::new();
    let mut triangle_materials = Vec::new();
    for model in &models {
        let mesh = &model.mesh;
        for corner in mesh.indices.chunks_exact(3) {
            for &i in corner {
                let i = i as usize;
                positions.push(V3::new(
                    mesh.positions[3 * i],
                    mesh.positions[3 * i + 1],
                    mesh.positions[3 * i + 2],
                ));
                uvs.push(if mesh.texcoords.len() >= 2 * i + 2 {
                    [mesh.texcoords[2 * i], mesh.texcoords[2 * i + 1]]
                } else {
                    [0.5, 0.5]
                });
            }
            triangle_materials.push(mesh.material_id);
        }
    }
    if triangle_materials.is_empty() {
        return Err(SceneError::Unsupported {
            file: path.to_path_buf(),
            message: "the OBJ has no triangles (no `f` faces with three or more vertices)".into(),
        });
    }

    let atlas = Atlas::build(
        &materials,
        &triangle_materials,
        assets,
        options.texture_size,
        &mut notes,
    );
    let view = View::fit(&positions, options)?;
    let mut triangles = Vec::with_capacity(triangle_materials.len());
    let mut farthest = 0.0f32;
    for (t, material) in triangle_materials.iter().enumerate() {
        let tile = atlas.tile_of(*material);
        let diffuse = material
            .and_then(|m| materials.get(m))
            .and_then(|m| m.diffuse)
            .unwrap_or([1.0, 1.0, 1.0]);
        let mut record: Triangle = [[0; 3]; 7];
        for corner in 0..3 {
            let p = view.transform(positions[3 * t + corner]);
            farthest = farthest.max((p - view.camera).length());
            record[2 * corner] = q_vec(p, path)?;
            let [u, v] = atlas.map_uv(tile, uvs[3 * t + corner]);
            record[2 * corner + 1] = [q(u, path)?, q(v, path)?, q(1.0, path)?];
        }
        record[6] = [
            q(diffuse[0], path)?,
            q(diffuse[1], path)?,
            q(diffuse[2], path)?,
        ];
        triangles.push(record);
    }
    if farthest >= FARTHEST_HIT {
        notes.push(format!(
            "warning: parts of the model are {farthest:.0} units from the camera; the ROM ignores hits beyond {FARTHEST_HIT}"
        ));
    }

    let (hw, hh) = view.half_window(options);
    let size = options.texture_size << 17;
    let config = [
        [0, 1 << 17, 0],
        q_vec(view.camera, path)?,
        [q(-hw, path)?, q(hh, path)?, 0],
        [q(hw, path)?, q(-hh, path)?, 0],
        [options.width << 17, options.height << 17, 0],
        [size, size, 0],
    ];
    debug_assert_eq!(config_row::RESOLUTION, 4);
    Ok(ObjScene {
        scene: Scene {
            name: path.display().to_string(),
            config,
            partitions: Partition::bands(options.width, options.height, options.cores),
            triangles,
            texture: atlas.memory,
            control_register: 7,
            program: None,
        },
        notes,
    })
}

fn validate_options(path: &Path, options: &ObjOptions) -> Result<(), SceneError> {
    let invalid = |message: String| SceneError::Unsupported {
        file: path.to_path_buf(),
        message,
    };
    let size = options.texture_size;
    if !size.is_power_of_two() || size < 2 {
        return Err(invalid(format!(
            "texture size {size} must be a power of two (the ROM wraps texel addresses with a mask)"
        )));
    }
    let words = size as usize * size as usize * 3;
    if words > TEXTURE_MEMORY_WORDS {
        return Err(invalid(format!(
            "texture too large for texture memory: {size}x{size} texels need {words} words, the memory holds {TEXTURE_MEMORY_WORDS} (256x256)"
        )));
    }
    if options.width == 0 || options.height == 0 || options.width > 4096 || options.height > 4096 {
        return Err(invalid(format!(
            "resolution {}x{} must be between 1x1 and 4096x4096",
            options.width, options.height
        )));
    }
    if !(options.fov_degrees > 1.0 && options.fov_degrees < 170.0) {
        return Err(invalid(format!(
            "field of view {} degrees must be between 1 and 170",
            options.fov_degrees
        )));
    }
    Ok(())
}

/// Q15.17 of a value, or the error a user sees when fitting left it out of range.
fn q(value: f32, path: &Path) -> Result<u32, SceneError> {
    let scaled = (value as f64 * 131072.0).round();
    if !(scaled >= i32::MIN as f64 && scaled <= i32::MAX as f64) {
        return Err(SceneError::Unsupported {
            file: path.to_path_buf(),
            message: format!(
                "coordinate {value} is outside the Q15.17 range (-16384 .. 16384) after fitting; move the camera closer"
            ),
        });
    }
    Ok(scaled as i32 as u32)
}

fn q_vec(v: V3, path: &Path) -> Result<Vec3, SceneError> {
    Ok([q(v.x, path)?, q(v.y, path)?, q(v.z, path)?])
}

/// The model-to-hardware transform: camera on +z looking at the origin, model scaled to
/// [`FIT_RADIUS`].
struct View {
    target: V3,
    right: V3,
    up: V3,
    back: V3,
    scale: f32,
    camera: V3,
}

impl View {
    fn fit(positions: &[V3], options: &ObjOptions) -> Result<View, SceneError> {
        let (min, max) = positions
            .iter()
            .fold((V3::splat(f32::MAX), V3::splat(f32::MIN)), |(lo, hi), p| {
                (lo.min(*p), hi.max(*p))
            });
        let centre = (min + max) / 2.0;
        let radius = ((max - min).length() / 2.0).max(1e-6);
        let target = options.look_at.map(V3::from).unwrap_or(centre);
        let half_fov = options.fov_degrees.to_radians() / 2.0;
        let camera = match options.camera {
            Some(c) => V3::from(c),
            None => {
                let distance = radius / half_fov.sin() * 1.1;
                target + V3::new(0.55, 0.45, 1.0).normalize() * distance
            }
        };
        let forward = (target - camera).normalize_or_zero();
        if forward == V3::ZERO {
            return Err(SceneError::Unsupported {
                file: PathBuf::from("--camera"),
                message: "the camera is at the point it looks at".into(),
            });
        }
        let world_up = if forward.cross(V3::Y).length() < 1e-4 {
            V3::Z
        } else {
            V3::Y
        };
        let right = forward.cross(world_up).normalize();
        let up = right.cross(forward);
        let scale = FIT_RADIUS / radius;
        let distance = (camera - target).length() * scale;
        Ok(View {
            target,
            right,
            up,
            back: -forward,
            scale,
            camera: V3::new(0.0, 0.0, distance),
        })
    }

    fn transform(&self, p: V3) -> V3 {
        let d = (p - self.target) * self.scale;
        V3::new(d.dot(self.right), d.dot(self.up), d.dot(self.back))
    }

    /// Half extents of the projection window on z = 0 (the plane through the target).
    fn half_window(&self, options: &ObjOptions) -> (f32, f32) {
        let hh = self.camera.z * (options.fov_degrees.to_radians() / 2.0).tan();
        (hh * options.width as f32 / options.height as f32, hh)
    }
}

/// Texture memory as a grid of tiles.
struct Atlas {
    memory: Vec<u32>,
    size: u32,
    grid: u32,
    tile_size: u32,
    /// Tile of each material (None: the default white tile).
    material_tiles: HashMap<Option<usize>, u32>,
}

impl Atlas {
    fn build(
        materials: &[tobj::Material],
        used: &[Option<usize>],
        assets: &dyn Assets,
        size: u32,
        notes: &mut Vec<String>,
    ) -> Atlas {
        // Decide the tiles: one per distinct texture, one per distinct flat colour.
        enum Source {
            Image(::image::RgbImage, String),
            Flat([f32; 3]),
        }
        let mut sources: Vec<Source> = Vec::new();
        let mut by_key: HashMap<String, u32> = HashMap::new();
        let mut material_tiles = HashMap::new();
        let mut distinct: Vec<Option<usize>> = used.to_vec();
        distinct.sort();
        distinct.dedup();
        for material in distinct {
            let m = material.and_then(|m| materials.get(m));
            let diffuse = m.and_then(|m| m.diffuse).unwrap_or([1.0, 1.0, 1.0]);
            let mut image = None;
            if let Some(name) = m.and_then(|m| m.diffuse_texture.clone()) {
                match assets
                    .read(&name)
                    .map(|bytes| ::image::load_from_memory(&bytes))
                {
                    Some(Ok(decoded)) => image = Some((decoded.to_rgb8(), name)),
                    Some(Err(e)) => notes.push(format!(
                        "warning: texture {} cannot be decoded ({e}); using the diffuse colour",
                        assets.display(&name)
                    )),
                    None => notes.push(format!(
                        "warning: texture {} not found; using the diffuse colour",
                        assets.display(&name)
                    )),
                }
            }
            let key = match &image {
                Some((_, name)) => format!("image:{name}"),
                None => format!("flat:{diffuse:?}"),
            };
            let next = sources.len() as u32;
            let tile = *by_key.entry(key).or_insert_with(|| {
                sources.push(match image {
                    Some((img, name)) => Source::Image(img, name),
                    None => Source::Flat(diffuse),
                });
                next
            });
            material_tiles.insert(material, tile);
        }
        let grid = (sources.len() as f64).sqrt().ceil() as u32;
        let tile_size = size / grid;
        let mut memory = vec![0u32; size as usize * size as usize * 3];
        for (index, source) in sources.iter().enumerate() {
            let (tx, ty) = (
                index as u32 % grid * tile_size,
                index as u32 / grid * tile_size,
            );
            let resized;
            let source = match source {
                Source::Image(img, name)
                    if img.width() != tile_size || img.height() != tile_size =>
                {
                    notes.push(format!(
                        "note: texture {} {}x{} resampled to {tile_size}x{tile_size} ({} filter){}",
                        assets.display(name),
                        img.width(),
                        img.height(),
                        RESAMPLE_FILTER.1,
                        if grid > 1 {
                            format!(", tile {index} of a {grid}x{grid} atlas")
                        } else {
                            String::new()
                        }
                    ));
                    resized = Source::Image(
                        ::image::imageops::resize(img, tile_size, tile_size, RESAMPLE_FILTER.0),
                        name.clone(),
                    );
                    &resized
                }
                other => other,
            };
            for y in 0..tile_size {
                for x in 0..tile_size {
                    let rgb = match source {
                        Source::Image(img, _) => img.get_pixel(x, tile_size - 1 - y).0,
                        Source::Flat(c) => c.map(|v| (v.clamp(0.0, 1.0) * 255.0).round() as u8),
                    };
                    let at = (((ty + y) * size + tx + x) * 3) as usize;
                    for c in 0..3 {
                        // The hardware stores each channel as byte << 9 (byte / 256).
                        memory[at + c] = (rgb[c] as u32) << 9;
                    }
                }
            }
        }
        Atlas {
            memory,
            size,
            grid,
            tile_size,
            material_tiles,
        }
    }

    fn tile_of(&self, material: Option<usize>) -> u32 {
        self.material_tiles[&material]
    }

    /// Maps a UV into its tile (unchanged when the atlas is one tile, so textures repeat).
    fn map_uv(&self, tile: u32, [u, v]: [f32; 2]) -> [f32; 2] {
        if self.grid == 1 {
            return [u, v];
        }
        let (tx, ty) = (
            (tile % self.grid) * self.tile_size,
            (tile / self.grid) * self.tile_size,
        );
        let span = self.tile_size as f32 - 2.0;
        let inside = |origin: u32, t: f32| {
            (origin as f32 + 0.5 + t.clamp(0.0, 1.0) * span) / self.size as f32
        };
        [inside(tx, u), inside(ty, v)]
    }
}

/// Turns tobj's error into one that names the file and the offending line.
fn locate_obj_error(text: &str, path: &Path, error: tobj::LoadError) -> SceneError {
    let (keyword, expected) = match error {
        tobj::LoadError::PositionParseError => ("v", "three numbers (x y z)"),
        tobj::LoadError::NormalParseError => ("vn", "three numbers"),
        tobj::LoadError::TexcoordParseError => ("vt", "two numbers (u v)"),
        tobj::LoadError::FaceParseError | tobj::LoadError::FaceVertexOutOfBounds => {
            ("f", "vertex indices that exist (v, v/vt, v//vn or v/vt/vn)")
        }
        _ => {
            return SceneError::Invalid {
                file: path.to_path_buf(),
                line: 1,
                message: format!("cannot read the OBJ: {error}"),
            }
        }
    };
    let counts = [("v", 3usize), ("vt", 2), ("vn", 3)];
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (number, line) in text.lines().enumerate() {
        let mut fields = line.split_whitespace();
        let Some(head) = fields.next() else { continue };
        let rest: Vec<&str> = fields.collect();
        if let Some(&(_, n)) = counts.iter().find(|(k, _)| *k == head) {
            *seen.entry(head).or_default() += 1;
            let bad =
                rest.len() < n.min(2) || rest.iter().take(n).any(|f| f.parse::<f32>().is_err());
            if head == keyword && bad {
                return SceneError::Invalid {
                    file: path.to_path_buf(),
                    line: number + 1,
                    message: format!("`{line}`: expected `{keyword}` followed by {expected}"),
                };
            }
        }
        if head == "f" && keyword == "f" {
            let valid = |field: &str| {
                let parts: Vec<&str> = field.split('/').collect();
                parts.iter().enumerate().all(|(i, part)| {
                    let kind = ["v", "vt", "vn"][i.min(2)];
                    part.is_empty() && i > 0
                        || part.parse::<i64>().is_ok_and(|index| {
                            let count = seen.get(kind).copied().unwrap_or(0) as i64;
                            index != 0 && index.abs() <= count
                        })
                })
            };
            if rest.len() < 3 || !rest.iter().all(|f| valid(f)) {
                return SceneError::Invalid {
                    file: path.to_path_buf(),
                    line: number + 1,
                    message: format!(
                        "`{line}`: expected `f` followed by at least three {expected}"
                    ),
                };
            }
        }
    }
    SceneError::Invalid {
        file: path.to_path_buf(),
        line: 1,
        message: format!("cannot read the OBJ: {error}"),
    }
}

/// The built-in scene (scenes/default.obj with its textures in assets/), compiled into the
/// binary so `theia render` works from any directory.
pub mod default_scene {
    use super::*;

    pub const NAME: &str = "scenes/default.obj";
    const OBJ: &str = include_str!("../../scenes/default.obj");
    const ASSETS: MemoryAssets = MemoryAssets(&[
        ("default.mtl", include_bytes!("../../scenes/default.mtl")),
        (
            "../assets/crate.png",
            include_bytes!("../../assets/crate.png"),
        ),
        (
            "../assets/floor.png",
            include_bytes!("../../assets/floor.png"),
        ),
    ]);

    pub fn load(options: &ObjOptions) -> Result<ObjScene, SceneError> {
        load_obj_text(OBJ, Path::new(NAME), &ASSETS, options)
    }
}

/// OBJ text of a UV sphere with `2 * segments * (rings - 1)` triangles and texture
/// coordinates, for tests and benchmarks of large scenes (no material: white).
pub fn uv_sphere_obj(segments: u32, rings: u32) -> String {
    let mut obj = String::from("# generated UV sphere\n");
    for ring in 0..=rings {
        let theta = std::f32::consts::PI * ring as f32 / rings as f32;
        for segment in 0..=segments {
            let phi = std::f32::consts::TAU * segment as f32 / segments as f32;
            let (x, y, z) = (
                theta.sin() * phi.cos(),
                theta.cos(),
                theta.sin() * phi.sin(),
            );
            obj.push_str(&format!("v {x:.6} {y:.6} {z:.6}\n"));
            obj.push_str(&format!(
                "vt {:.6} {:.6}\n",
                segment as f32 / segments as f32,
                1.0 - ring as f32 / rings as f32
            ));
        }
    }
    let index = |ring: u32, segment: u32| ring * (segments + 1) + segment + 1;
    for ring in 0..rings {
        for segment in 0..segments {
            let (a, b) = (index(ring, segment), index(ring, segment + 1));
            let (c, d) = (index(ring + 1, segment + 1), index(ring + 1, segment));
            // The poles' degenerate halves are left out.
            if ring != 0 {
                obj.push_str(&format!("f {a}/{a} {b}/{b} {c}/{c}\n"));
            }
            if ring != rings - 1 {
                obj.push_str(&format!("f {a}/{a} {c}/{c} {d}/{d}\n"));
            }
        }
    }
    obj
}
