//! Scene selection shared by the commands that run the machine (`render`, `trace`):
//! which scene, how to frame it, which ROM, which shader.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use anyhow::bail;
use clap::Args;

use super::shader::Shader;
use theia::emu::core::RomVariant;
use theia::emu::machine::ssaa::validate_factor;
use theia::emu::machine::{AccelMode, RenderOptions};
use theia::io::scene::mem::load_scene_dir;
use theia::io::scene::obj::{
    default_scene, load_obj_with_progress, LoadProgress, ObjOptions, UpAxis, ViewPreset,
    DEFAULT_MEMORY_SIDE, INSIDE_FOV_DEGREES,
};
use theia::io::scene::ply::load_ply;
use theia::io::scene::Scene;

/// Row bands an OBJ scene is split into when `--cores` is not given: the hardware's four
/// cores, so the image does not depend on the host's thread count.
const DEFAULT_OBJ_CORES: u32 = 4;

#[derive(Args, Clone, Debug)]
pub struct SceneArgs {
    /// An OBJ or PLY file, or a directory with the test bench's Params.mem, Vertex.mem and
    /// Textures.mem (optional Creg.mem, Instructions.mem); the built-in scene when absent
    pub scene: Option<PathBuf>,
    /// Emulated cores: the image is split into this many row bands [default: the
    /// partitions in Params.mem, or 4 for OBJ scenes]
    #[arg(long, value_name = "N")]
    pub cores: Option<u32>,
    /// Image width in pixels (OBJ scenes)
    #[arg(long, value_name = "W")]
    pub width: Option<u32>,
    /// Image height in pixels (OBJ scenes)
    #[arg(long, value_name = "H")]
    pub height: Option<u32>,
    /// Camera position in the OBJ's coordinates [default: fitted to the model]
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_point, allow_hyphen_values = true)]
    pub camera: Option<[f32; 3]>,
    /// Point the camera looks at [default: the centre of the model]
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_point, allow_hyphen_values = true)]
    pub look_at: Option<[f32; 3]>,
    /// Where the fitted camera looks from: front (+z), back, left (-x), right, top (+y),
    /// bottom or iso (front-right-above at equal angles), for a model with +y up facing +z
    /// [default: front-right-above]
    #[arg(long, value_name = "VIEW", conflicts_with = "camera")]
    pub view: Option<ViewPreset>,
    /// Which of the file's axes points up: x, y, z, -x, -y or -z (z for most scans and CAD
    /// files); views, orbits and the automatic camera follow it [default: y]
    #[arg(long, value_name = "AXIS", allow_hyphen_values = true)]
    pub up: Option<UpAxis>,
    /// Put the camera inside the model, in its most open spot, facing the longest free
    /// way (rooms, buildings, tunnels); with the faithful ROM, triangles behind it are
    /// left out
    #[arg(long, conflicts_with = "camera")]
    pub inside: bool,
    /// Vertical field of view in degrees (OBJ scenes) [default: 40, 60 with --inside]
    #[arg(long, value_name = "DEG")]
    pub fov: Option<f32>,
    /// Side of the texture memory OBJ textures share, in texels: a power of two up to 8192
    /// (256 is the published hardware's; `theia export` warns past it)
    #[arg(long, value_name = "SIDE", default_value_t = DEFAULT_MEMORY_SIDE)]
    pub texture_memory: u32,
    /// OBJ scenes: show the texture and material colours unlit, as the ROM's own pixel
    /// shader does, instead of lighting them with shaders/key_fill.shdr
    #[arg(long)]
    pub flat: bool,
    /// Microcode ROM: `fixed` (correct bilinear texel pairing, black background, a
    /// watertight intersection test, no hits that only wrap-around or a negative t make)
    /// or `faithful` (the hardware's, defects included) [default: fixed for OBJ and PLY
    /// scenes and the built-in one, faithful for the test bench's scene directories]
    #[arg(long, value_name = "ROM")]
    pub rom: Option<RomVariant>,
    /// Colour of the pixels that show no triangle, 0 to 255 a channel (OBJ and PLY
    /// scenes, fixed ROM) [default: 0,0,0]
    #[arg(long, value_name = "R,G,B", value_parser = parse_colour)]
    pub background: Option<[u8; 3]>,
    /// Per-pixel instruction budget before the watchdog stops a runaway shader
    /// [default: 100000 + 1000 per triangle]
    #[arg(long, value_name = "N")]
    pub max_steps: Option<u64>,
    /// How triangle tests the ROM's intersection routine provably rejects are skipped:
    /// `auto` with the acceleration structure (scenes of 512 triangles or more), `cull`
    /// tests each triangle natively, `off` interprets every test. The image is identical in
    /// all three; with the structure the instruction count is not available
    #[arg(long, value_name = "MODE", default_value = "auto")]
    pub accel: AccelMode,
    /// The same as `--accel off`
    #[arg(long)]
    pub no_cull: bool,
    /// Keep huge triangles whole (`theia export`: the published bench holds 332).
    #[arg(skip)]
    pub whole_triangles: bool,
}

impl SceneArgs {
    /// `--rom`, or the scene's default: the hardware's own for its test bench's scene
    /// directories, the fixed one for models (README decision 11).
    pub fn rom(&self) -> RomVariant {
        self.rom.unwrap_or(match &self.scene {
            Some(path) if path.is_dir() => RomVariant::Faithful,
            _ => RomVariant::Fixed,
        })
    }

    /// `--accel`, with `--no-cull` meaning `off`.
    pub fn accel_mode(&self) -> AccelMode {
        if self.no_cull {
            AccelMode::Off
        } else {
            self.accel
        }
    }

    /// Whether triangle tests are interpreted one and all (`--accel off`, `--no-cull`).
    pub fn interprets_everything(&self) -> bool {
        self.accel_mode() == AccelMode::Off
    }
}

/// A scene ready to render, with what the user should hear about it.
pub struct LoadedScene {
    pub scene: Scene,
    /// Loader notes (resampled textures, fallbacks), for stderr.
    pub notes: Vec<String>,
    /// How long loading took.
    pub elapsed: Duration,
}

fn parse_colour(text: &str) -> Result<[u8; 3], String> {
    let values: Vec<u8> = text
        .split(',')
        .map(|p| p.trim().parse::<u8>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("expected three numbers R,G,B from 0 to 255, found `{text}`"))?;
    values
        .try_into()
        .map_err(|_| format!("expected three numbers R,G,B from 0 to 255, found `{text}`"))
}

fn parse_point(text: &str) -> Result<[f32; 3], String> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let values: Vec<f32> = parts
        .iter()
        .map(|p| p.parse::<f32>())
        .collect::<Result<_, _>>()
        .map_err(|_| format!("expected three numbers X,Y,Z, found `{text}`"))?;
    match values[..] {
        [x, y, z] if values.iter().all(|v| v.is_finite()) => Ok([x, y, z]),
        _ => Err(format!("expected three numbers X,Y,Z, found `{text}`")),
    }
}

impl SceneArgs {
    /// Loads the scene the arguments name.
    pub fn load(&self) -> anyhow::Result<LoadedScene> {
        self.load_frame(None, 1, false)
    }

    /// Loads the scene the arguments name, to be rendered `--ssaa factor` supersampled
    /// ([`theia::emu::machine::ssaa`]): an OBJ scene's window is fitted as for `factor` times
    /// the resolution (so CPPU's division stays exact for the samples), an original scene
    /// is as it is. `orbit_degrees`: the camera turned about the vertical axis (`--orbit`;
    /// OBJ scenes only). `progress`: draw a progress bar on stderr while an OBJ file loads
    /// (only on a terminal, only when loading takes over [`LOAD_PROGRESS_DELAY`]).
    pub fn load_frame(
        &self,
        orbit_degrees: Option<f64>,
        factor: u32,
        progress: bool,
    ) -> anyhow::Result<LoadedScene> {
        validate_factor(factor).map_err(anyhow::Error::msg)?;
        let start = Instant::now();
        let (scene, notes) = self.load_scene(orbit_degrees, factor, progress)?;
        Ok(LoadedScene {
            scene,
            notes,
            elapsed: start.elapsed(),
        })
    }

    /// The scene and the loader's notes; OBJ scenes fitted for `factor` times the
    /// resolution, the camera turned `orbit_degrees`.
    fn load_scene(
        &self,
        orbit_degrees: Option<f64>,
        factor: u32,
        progress: bool,
    ) -> anyhow::Result<(Scene, Vec<String>)> {
        let options = ObjOptions {
            orbit_degrees: orbit_degrees.unwrap_or(0.0),
            turntable: orbit_degrees.is_some(),
            ssaa: factor,
            ..self.obj_options()
        };
        let Some(path) = &self.scene else {
            let loaded = default_scene::load(&options)?;
            return Ok((loaded.scene, loaded.notes));
        };
        if path.is_dir() {
            self.reject_obj_only_flags(path, orbit_degrees.is_some())?;
            return Ok((load_scene_dir(path)?, Vec::new()));
        }
        let extension = |name: &str| {
            path.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case(name))
        };
        if extension("ply") {
            let loaded = load_ply(path, &options)?;
            return Ok((loaded.scene, loaded.notes));
        }
        if !extension("obj") {
            if !path.exists() {
                bail!("{}: no such file or directory", path.display());
            }
            bail!(
                "{}: expected an .obj or .ply file or a directory holding Params.mem, Vertex.mem and Textures.mem",
                path.display()
            );
        }
        let counter = LoadProgress::default();
        let loaded = std::thread::scope(|scope| {
            let worker = scope.spawn(|| load_obj_with_progress(path, &options, &counter));
            if progress && std::io::stderr().is_terminal() {
                draw_load_progress(&worker, &counter);
            }
            worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })?;
        Ok((loaded.scene, loaded.notes))
    }

    /// Whether a change to `file` can change the scene: for an original scene a `.mem`
    /// file of its directory, for an OBJ an OBJ, MTL or image file beside it.
    pub fn is_source(&self, file: &Path) -> bool {
        const OBJ_FILES: [&str; 18] = [
            "obj", "ply", "mtl", "png", "jpg", "jpeg", "ppm", "pgm", "bmp", "tga", "tif", "tiff",
            "gif", "webp", "dds", "hdr", "exr", "qoi",
        ];
        let Some(scene) = &self.scene else {
            return false;
        };
        let Some(extension) = file.extension().map(|e| e.to_ascii_lowercase()) else {
            return false;
        };
        let in_dir = |dir: &Path| file.parent().is_some_and(|p| same_path(p, dir));
        if scene.is_dir() {
            extension == "mem" && in_dir(scene)
        } else {
            OBJ_FILES.iter().any(|e| extension == *e)
                && self.watch_dirs().iter().any(|dir| in_dir(dir))
        }
    }

    /// Directories to watch for [`SceneArgs::is_source`] files.
    pub fn watch_dirs(&self) -> Vec<PathBuf> {
        match &self.scene {
            None => Vec::new(),
            Some(scene) if scene.is_dir() => vec![scene.clone()],
            Some(scene) => vec![match scene.parent() {
                Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
                _ => PathBuf::from("."),
            }],
        }
    }

    /// Where the image goes when `--output` is not given: `out/<scene>.png`, and
    /// `out/default.png` for the built-in scene.
    pub fn default_output(&self) -> PathBuf {
        match &self.scene {
            Some(path) => output_for(path),
            None => PathBuf::from("out/default.png"),
        }
    }

    fn obj_options(&self) -> ObjOptions {
        let defaults = ObjOptions::default();
        ObjOptions {
            width: self.width.unwrap_or(defaults.width),
            height: self.height.unwrap_or(defaults.height),
            camera: self.camera,
            look_at: self.look_at,
            view: self.view.unwrap_or_default(),
            up: self.up.unwrap_or_default(),
            inside: self.inside,
            fov_degrees: self.fov.unwrap_or(if self.inside {
                INSIDE_FOV_DEGREES
            } else {
                defaults.fov_degrees
            }),
            cores: self.cores.unwrap_or(DEFAULT_OBJ_CORES),
            flat: self.flat,
            texture_size: self.texture_memory,
            rom: self.rom(),
            background: self.background,
            split_large: !self.whole_triangles,
            ..defaults
        }
    }

    fn reject_obj_only_flags(&self, dir: &Path, orbit: bool) -> anyhow::Result<()> {
        let given: Vec<&str> = [
            ("--orbit", orbit),
            ("--width", self.width.is_some()),
            ("--height", self.height.is_some()),
            ("--camera", self.camera.is_some()),
            ("--look-at", self.look_at.is_some()),
            ("--view", self.view.is_some()),
            ("--up", self.up.is_some()),
            ("--inside", self.inside),
            ("--fov", self.fov.is_some()),
            ("--flat", self.flat),
            ("--background", self.background.is_some()),
            (
                "--texture-memory",
                self.texture_memory != DEFAULT_MEMORY_SIDE,
            ),
        ]
        .iter()
        .filter(|(_, set)| *set)
        .map(|(flag, _)| *flag)
        .collect();
        if !given.is_empty() {
            bail!(
                "{}: {} only apply to OBJ scenes; an original scene takes its camera and resolution from Params.mem",
                dir.display(),
                given.join(", ")
            );
        }
        Ok(())
    }

    /// Machine options, with the `--shader`'s instruction memory (entry table and user
    /// code) or pixel stage when there is one.
    pub fn render_options(&self, shader: Option<&Shader>) -> anyhow::Result<RenderOptions> {
        if self.cores == Some(0) {
            bail!("--cores must be at least 1");
        }
        if let (Some(_), Some(_)) = (self.background, shader) {
            bail!("--background is painted by the scene's pixel shader, which --shader replaces: paint it in yours");
        }
        Ok(RenderOptions {
            rom: self.rom(),
            cores: self.cores,
            imem: shader.and_then(Shader::imem),
            stage: shader.and_then(Shader::stage),
            max_steps: self.max_steps,
            ..self.accel_mode().apply(RenderOptions::default())
        })
    }
}

/// Loads shorter than this never show a progress bar.
pub const LOAD_PROGRESS_DELAY: Duration = Duration::from_millis(500);

/// Draws a bar of `counter` on stderr until `worker` ends, from [`LOAD_PROGRESS_DELAY`] on.
fn draw_load_progress<T>(worker: &std::thread::ScopedJoinHandle<'_, T>, counter: &LoadProgress) {
    let start = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        if bar.is_none() && start.elapsed() >= LOAD_PROGRESS_DELAY {
            let new = ProgressBar::with_draw_target(
                Some(counter.total.load(Ordering::Relaxed)),
                ProgressDrawTarget::stderr(),
            );
            new.set_style(
                ProgressStyle::with_template(
                    "{spinner} loading [{elapsed_precise}] {wide_bar} {percent}%",
                )
                .expect("the template is valid"),
            );
            bar = Some(new);
        }
        if let Some(bar) = &bar {
            bar.set_length(counter.total.load(Ordering::Relaxed));
            bar.set_position(counter.done.load(Ordering::Relaxed));
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}

/// `out/<name>.png` for a scene file or directory.
fn output_for(path: &Path) -> PathBuf {
    // `.` or `..` have no name of their own: use the directory's real name.
    let stem = path
        .file_stem()
        .map(|s| s.to_os_string())
        .or_else(|| path.canonicalize().ok()?.file_name().map(|n| n.to_owned()))
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "scene".into());
    PathBuf::from("out").join(format!("{stem}.png"))
}

/// Whether two paths name the same file or directory (watchers report absolute paths).
pub fn same_path(a: &Path, b: &Path) -> bool {
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_parse_with_or_without_spaces() {
        assert_eq!(parse_point("1,2.5,-3"), Ok([1.0, 2.5, -3.0]));
        assert_eq!(parse_point(" 0 , 0 , 10 "), Ok([0.0, 0.0, 10.0]));
        assert_eq!(
            parse_point("1,2"),
            Err("expected three numbers X,Y,Z, found `1,2`".into())
        );
        assert!(parse_point("1,2,x").is_err());
        assert!(parse_point("1,2,inf").is_err());
    }

    #[test]
    fn colours_are_three_bytes() {
        assert_eq!(parse_colour("255, 128,0"), Ok([255, 128, 0]));
        for bad in ["256,0,0", "1,2", "1,2,3,4", "-1,0,0", "a,b,c"] {
            assert_eq!(
                parse_colour(bad),
                Err(format!(
                    "expected three numbers R,G,B from 0 to 255, found `{bad}`"
                ))
            );
        }
    }

    #[test]
    fn outputs_are_named_after_the_scene() {
        assert_eq!(
            output_for(Path::new("scenes/teapot.obj")),
            PathBuf::from("out/teapot.png")
        );
        assert_eq!(
            output_for(Path::new("../shared/conformance/scenes_example3")),
            PathBuf::from("out/scenes_example3.png")
        );
    }
}
