//! Frame benchmarks in one call (the library side of `theia bench`): each scene is rendered
//! on one core and on all cores in the same run, so the speed-up is a ratio of two
//! measurements taken under the same conditions. Nothing here prints.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::emu::core::RomVariant;
use crate::emu::machine::ssaa::Supersampler;
use crate::emu::machine::{AccelMode, Lockstep, Machine, Render, RenderError, RenderOptions};
use crate::io::scene::generate::{self, Mesh};
use crate::io::scene::obj::{self, ObjOptions};
use crate::io::scene::{Scene, SceneError};

/// What to measure.
#[derive(Clone, Debug)]
pub struct BenchOptions {
    /// The `scenes_example3` directory; `None` leaves its rows out.
    pub conformance_scene: Option<PathBuf>,
    /// Frames rendered per measurement; the fastest counts.
    pub frames: u32,
    /// Frames for the large sphere scene (slow: thousands of triangles per pixel).
    pub sphere_frames: u32,
    /// The UV sphere's segments and rings (`2 * segments * (rings - 1)` triangles).
    pub sphere: (u32, u32),
    /// Side of the square sphere image.
    pub sphere_size: u32,
    /// Threads for the "all cores" column; `None`: the machine's available parallelism.
    pub threads: Option<usize>,
    /// Subdivisions of the large generated mesh (`20 * 4^n` triangles); `None` leaves
    /// its rows out.
    pub mesh: Option<u32>,
    /// Also measure the large mesh with `--accel cull` and `--accel off` (minutes).
    pub mesh_all_modes: bool,
    /// Measure the sphere and the mesh in this mode only (`theia bench --accel`).
    pub accel: Option<AccelMode>,
    /// Every row supersampled K x K ([`RenderOptions::ssaa`], `theia bench --ssaa`): the
    /// built-in scene fitted for the samples as `theia render --ssaa` loads it, the others
    /// as they are; 1: none.
    pub ssaa: u32,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            conformance_scene: None,
            frames: 5,
            sphere_frames: 1,
            sphere: (64, 41),
            sphere_size: 256,
            threads: None,
            mesh: Some(6),
            mesh_all_modes: false,
            accel: None,
            ssaa: 1,
        }
    }
}

/// One measured scene.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    pub name: String,
    pub triangles: usize,
    /// Frames rendered per column.
    pub frames: u32,
    /// Fastest frame on one core.
    pub one_core: Duration,
    /// Fastest frame on all cores.
    pub all_cores: Duration,
    /// Emulated instructions per frame (culled MAIN runs counted as executed); `None`
    /// where the acceleration structure leaves the count unknown.
    pub instructions: Option<u64>,
    /// Whether MAIN was culled for rejected triangles.
    pub culling: bool,
    /// Whether the cores ran in lock-step groups on one core, and on all cores.
    pub lockstep: (bool, bool),
}

impl BenchRow {
    pub fn ms_one_core(&self) -> f64 {
        self.one_core.as_secs_f64() * 1e3
    }

    pub fn ms_all_cores(&self) -> f64 {
        self.all_cores.as_secs_f64() * 1e3
    }

    /// One-core time over all-cores time.
    pub fn speedup(&self) -> f64 {
        self.one_core.as_secs_f64() / self.all_cores.as_secs_f64().max(1e-12)
    }

    /// Emulated instructions per second on one core, in millions. With culling this is an
    /// effective rate (skipped MAIN runs count as executed).
    pub fn mips_per_core(&self) -> Option<f64> {
        self.instructions
            .map(|n| n as f64 / self.one_core.as_secs_f64().max(1e-12) / 1e6)
    }
}

/// The result of [`run`]: one row per scene; `Display` prints an aligned table.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchTable {
    /// Threads of the "all cores" column.
    pub threads: usize,
    pub rows: Vec<BenchRow>,
}

impl fmt::Display for BenchTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let headers = [
            "scene".to_string(),
            "triangles".into(),
            "frames".into(),
            "ms/frame 1 core".into(),
            format!("ms/frame {} cores", self.threads),
            "speed-up".into(),
            "M instr/s/core".into(),
        ];
        let mark = |lockstep: bool| if lockstep { "+" } else { " " };
        let cells: Vec<[String; 7]> = self
            .rows
            .iter()
            .map(|row| {
                [
                    row.name.clone(),
                    row.triangles.to_string(),
                    row.frames.to_string(),
                    format!("{:.1}{}", row.ms_one_core(), mark(row.lockstep.0)),
                    format!("{:.1}{}", row.ms_all_cores(), mark(row.lockstep.1)),
                    format!("{:.2}x", row.speedup()),
                    match row.mips_per_core() {
                        Some(mips) => format!("{mips:.0}{}", if row.culling { "*" } else { "" }),
                        None => "n/a".to_string(),
                    },
                ]
            })
            .collect();
        let widths: Vec<usize> = (0..headers.len())
            .map(|c| {
                cells
                    .iter()
                    .map(|r| r[c].len())
                    .chain([headers[c].len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let line = |f: &mut fmt::Formatter<'_>, cells: &[String]| -> fmt::Result {
            for (c, cell) in cells.iter().enumerate() {
                if c == 0 {
                    write!(f, "{cell:<width$}", width = widths[c])?;
                } else {
                    write!(f, "  {cell:>width$}", width = widths[c])?;
                }
            }
            writeln!(f)
        };
        line(f, &headers)?;
        let rule: Vec<String> = widths.iter().map(|&w| "-".repeat(w)).collect();
        line(f, &rule)?;
        for row in &cells {
            line(f, row)?;
        }
        if self.rows.iter().any(|r| r.lockstep.0 || r.lockstep.1) {
            writeln!(
                f,
                "+ cores in lock-step groups, one SIMD lane per emulated core"
            )?;
        }
        if self.rows.iter().any(|r| r.instructions.is_none()) {
            writeln!(
                f,
                "n/a: the acceleration structure skips triangles whose cost depends on the pixel"
            )?;
        }
        if self.rows.iter().any(|r| r.culling) {
            writeln!(
                f,
                "* culling on: skipped MAIN runs count as executed instructions"
            )?;
        }
        Ok(())
    }
}

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Scene(#[from] SceneError),
    #[error(transparent)]
    Render(#[from] RenderError),
    #[error("cannot start {threads} worker threads: {message}")]
    Threads { threads: usize, message: String },
}

/// Renders `scene` `frames` times on `pool`; the fastest frame and the last render.
pub fn time_frames(
    scene: &Scene,
    options: &RenderOptions,
    pool: &rayon::ThreadPool,
    frames: u32,
) -> Result<(Duration, Render), BenchError> {
    if options.ssaa > 1 {
        // One machine renders the samples in passes, timed as one render.
        let sampler = Supersampler::new(scene, options)?;
        let mut best = Duration::MAX;
        let mut last = None;
        for _ in 0..frames.max(1) {
            let render = pool.install(|| sampler.render(None, |_| Ok::<_, RenderError>(())))?;
            best = best.min(render.elapsed);
            last = Some(render);
        }
        return Ok((best, last.expect("at least one frame")));
    }
    let machine = Machine::new(scene, options)?;
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..frames.max(1) {
        let render = pool.install(|| machine.render(None))?;
        best = best.min(render.elapsed);
        last = Some(render);
    }
    Ok((best, last.expect("at least one frame")))
}

/// One row: the same scene and options on one core, then on all cores.
pub fn measure(
    name: &str,
    scene: &Scene,
    options: &RenderOptions,
    frames: u32,
    pools: &Pools,
) -> Result<BenchRow, BenchError> {
    let (one_core, render) = time_frames(scene, options, &pools.one, frames)?;
    let (all_cores, render_all) = time_frames(scene, options, &pools.all, frames)?;
    Ok(BenchRow {
        name: match options.ssaa {
            1 => name.to_string(),
            k => format!("{name}, ssaa {k}"),
        },
        triangles: scene.triangles.len(),
        frames: frames.max(1),
        one_core,
        all_cores,
        instructions: render.instructions_exact.then_some(render.instructions),
        culling: render.culled > 0,
        lockstep: (render.lockstep_groups > 0, render_all.lockstep_groups > 0),
    })
}

/// A one-thread pool and an all-cores pool.
pub struct Pools {
    pub one: rayon::ThreadPool,
    pub all: rayon::ThreadPool,
    pub threads: usize,
}

impl Pools {
    pub fn new(threads: Option<usize>) -> Result<Pools, BenchError> {
        let threads = threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        let pool = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .map_err(|e| BenchError::Threads {
                    threads,
                    message: e.to_string(),
                })
        };
        Ok(Pools {
            one: pool(1)?,
            all: pool(threads)?,
            threads,
        })
    }
}

/// The large generated mesh of the benchmarks: a bumpy icosphere.
fn bumpy_icosphere(subdivisions: u32) -> Mesh {
    generate::displaced_icosphere(subdivisions, 0.08)
}

/// The bumpy icosphere as a square scene of `size` pixels, unlit.
pub fn mesh_scene(subdivisions: u32, size: u32) -> Result<Scene, SceneError> {
    bumpy_icosphere_scene(&bumpy_icosphere(subdivisions), (size, size))
}

/// A bumpy icosphere mesh as a scene of `width` x `height` pixels, unlit.
fn bumpy_icosphere_scene(mesh: &Mesh, size: (u32, u32)) -> Result<Scene, SceneError> {
    generated_scene(mesh, "bumpy_icosphere.obj", size, true)
}

/// The UV sphere scene of the large-scene benchmark.
pub fn sphere_scene(segments: u32, rings: u32, size: u32) -> Result<Scene, SceneError> {
    let mesh = generate::uv_sphere(segments, rings);
    generated_scene(&mesh, "uv_sphere.obj", (size, size), false)
}

/// The options a generated mesh is framed with: `width` x `height` pixels.
fn generated_options((width, height): (u32, u32), flat: bool) -> ObjOptions {
    ObjOptions {
        // The fixtures' coarse spheres stay the triangles they are.
        split_large: false,
        width,
        height,
        flat,
        ..Default::default()
    }
}

/// A generated mesh as a scene of `width` x `height` pixels, named `name`.
fn generated_scene(
    mesh: &Mesh,
    name: &str,
    size: (u32, u32),
    flat: bool,
) -> Result<Scene, SceneError> {
    let options = generated_options(size, flat);
    Ok(obj::load_mesh(mesh, Path::new(name), &options)?.scene)
}

/// Runs every benchmark: scenes_example3 interpreted (culling off: the interpreter's
/// speed; as the renderer chooses, each core on its own, and as 16 cores so that both
/// columns can use full lock-step groups) and with culling, the built-in OBJ scene, and
/// the large UV sphere.
pub fn run(options: &BenchOptions) -> Result<BenchTable, BenchError> {
    let pools = Pools::new(options.threads)?;
    let mut rows = Vec::new();
    let defaults = RenderOptions {
        ssaa: options.ssaa,
        ..Default::default()
    };
    let culling_off = RenderOptions {
        culling: false,
        ..defaults.clone()
    };
    if let Some(dir) = &options.conformance_scene {
        let scene = crate::io::scene::mem::load_scene_dir(dir)?;
        let core_by_core = RenderOptions {
            lockstep: Lockstep::Never,
            ..culling_off.clone()
        };
        let sixteen_cores = RenderOptions {
            cores: Some(16),
            ..culling_off.clone()
        };
        for (name, render_options) in [
            ("scenes_example3, interpreted", &culling_off),
            ("  same, each core on its own", &core_by_core),
            ("  same, as 16 cores", &sixteen_cores),
            ("scenes_example3", &defaults),
        ] {
            rows.push(measure(
                name,
                &scene,
                render_options,
                options.frames,
                &pools,
            )?);
        }
    }
    let default_obj = ObjOptions {
        ssaa: options.ssaa,
        ..ObjOptions::default()
    };
    let default_obj = obj::default_scene::load(&default_obj)?.scene;
    rows.push(measure(
        &format!(
            "default OBJ scene {}x{}",
            default_obj.width(),
            default_obj.height()
        ),
        &default_obj,
        &defaults,
        options.frames,
        &pools,
    )?);
    let mut in_modes = |name: &str, scene: &Scene, modes: &[AccelMode]| {
        for &mode in modes {
            let name = format!(
                "{name} {0}x{0}, accel {1}",
                options.sphere_size,
                mode.name()
            );
            rows.push(measure(
                &name,
                scene,
                &mode.apply(defaults.clone()),
                options.sphere_frames,
                &pools,
            )?);
        }
        Ok::<_, BenchError>(())
    };
    let only = options.accel.map(|mode| [mode]);
    let (segments, rings) = options.sphere;
    let sphere = sphere_scene(segments, rings, options.sphere_size)?;
    in_modes(
        "UV sphere",
        &sphere,
        only.as_ref().map_or(&AccelMode::ALL, |m| m),
    )?;
    if let Some(subdivisions) = options.mesh {
        let mesh = mesh_scene(subdivisions, options.sphere_size)?;
        let modes: &[AccelMode] = match (&only, options.mesh_all_modes) {
            (Some(mode), _) => mode,
            (None, true) => &AccelMode::ALL,
            (None, false) => &AccelMode::ALL[..1],
        };
        in_modes("bumpy icosphere", &mesh, modes)?;
    }
    Ok(BenchTable {
        threads: pools.threads,
        rows,
    })
}

/// The meshes of the cost-growth table (`theia bench --scaling`): bumpy icospheres of
/// subdivisions 4, 6, 7 and 8, that is 5,120, 81,920, 327,680 and 1,310,720 triangles.
pub const SCALING_SUBDIVISIONS: [u32; 4] = [4, 6, 7, 8];

/// The sizes of the cost-growth table.
pub const SCALING_SIZES: [(u32, u32); 2] = [(256, 256), (1920, 1080)];

/// Triangles of the bumpy icosphere of `subdivisions` subdivisions.
pub fn icosphere_triangles(subdivisions: u32) -> usize {
    20 << (2 * subdivisions)
}

/// One row of the cost-growth table: a generated mesh at one size with one ROM, loaded,
/// its acceleration structure built, and one frame rendered on all the pool's threads.
#[derive(Clone, Debug)]
pub struct ScalingRow {
    pub triangles: usize,
    /// Turning the generated mesh into a scene (the OBJ loader's work after parsing).
    pub load: Duration,
    /// Building the acceleration structure (zero without one).
    pub build: Duration,
    /// The frame, structure excluded.
    pub frame: Duration,
    /// The structure's mean candidates per 4x4 tile, when it has one.
    pub candidates_per_tile: Option<f64>,
}

/// Measures one row of the cost-growth table (see [`ScalingRow`]).
pub fn scaling_row(
    subdivisions: u32,
    (width, height): (u32, u32),
    rom: RomVariant,
) -> Result<ScalingRow, BenchError> {
    let mesh = bumpy_icosphere(subdivisions);
    let start = Instant::now();
    let scene = bumpy_icosphere_scene(&mesh, (width, height))?;
    let load = start.elapsed();
    drop(mesh);
    let render_options = RenderOptions {
        rom,
        ..Default::default()
    };
    let machine = Machine::new(&scene, &render_options)?;
    let render = machine.render(None)?;
    let batches = render.structure.unwrap_or_default();
    Ok(ScalingRow {
        triangles: scene.triangles.len(),
        load,
        build: render.stages.preparation() + batches.build,
        frame: render.elapsed - batches.build,
        candidates_per_tile: render.structure.map(|s| s.mean_candidates()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, one: u64, all: u64, culling: bool) -> BenchRow {
        BenchRow {
            name: name.into(),
            triangles: 118,
            frames: 5,
            one_core: Duration::from_millis(one),
            all_cores: Duration::from_millis(all),
            instructions: Some(64_000_000),
            culling,
            lockstep: (false, false),
        }
    }

    #[test]
    fn the_table_is_aligned_and_derives_its_ratios() {
        let table = BenchTable {
            threads: 2,
            rows: vec![
                row("scenes_example3, interpreted", 200, 100, false),
                row("x", 50, 40, true),
            ],
        };
        assert_eq!(table.rows[0].speedup(), 2.0);
        assert_eq!(table.rows[0].mips_per_core(), Some(320.0));
        let text = table.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "scene                         triangles  frames  ms/frame 1 core  ms/frame 2 cores  speed-up  M instr/s/core"
        );
        assert_eq!(
            lines[2],
            "scenes_example3, interpreted        118       5           200.0             100.0      2.00x             320"
        );
        assert_eq!(
            lines[3],
            "x                                   118       5            50.0              40.0      1.25x           1280*"
        );
        assert_eq!(
            lines[4],
            "* culling on: skipped MAIN runs count as executed instructions"
        );
        assert!(lines[1].starts_with("-----"));
    }

    /// FNV-1a over every word the host sends, to pin scenes without storing them.
    fn fingerprint(scene: &Scene) -> u64 {
        let partitions = scene
            .partitions
            .iter()
            .flat_map(|p| p.initial.iter().chain(&p.end));
        let program = scene.program.iter().flatten().flat_map(|i| {
            let word = i.0;
            [word as u32, (word >> 32) as u32]
        });
        let words = (scene.triangles.iter().flatten().flatten().copied())
            .chain(scene.config.iter().flatten().copied())
            .chain(partitions.copied())
            .chain(scene.texture.iter().copied())
            .chain([scene.control_register])
            .chain(program);
        words.fold(0xcbf2_9ce4_8422_2325, |hash, word: u32| {
            word.to_le_bytes().iter().fold(hash, |hash, &byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
            })
        })
    }

    /// The fixtures built from meshes are the scenes their OBJ text loads into, word for
    /// word, and the scenes the benchmark measured when it still loaded that text.
    #[test]
    fn fixtures_are_the_scenes_their_obj_text_gives() {
        for (mesh, name, size, flat, pinned) in [
            (
                generate::uv_sphere(8, 5),
                "uv_sphere.obj",
                16,
                false,
                0x4181_01b1_d196_a101,
            ),
            (
                generate::uv_sphere(24, 12),
                "uv_sphere.obj",
                48,
                false,
                0xa3d1_3237_0051_bae6,
            ),
            (
                generate::displaced_icosphere(2, 0.08),
                "bumpy_icosphere.obj",
                32,
                true,
                0x6232_0c56_2343_fda4,
            ),
        ] {
            let direct = generated_scene(&mesh, name, (size, size), flat).unwrap();
            let text = obj::load_obj_text(
                &mesh.to_obj("generated"),
                Path::new(name),
                &obj::MemoryAssets(&[]),
                &generated_options((size, size), flat),
            )
            .unwrap()
            .scene;
            assert_eq!(direct.name, text.name);
            assert_eq!(direct.triangles, text.triangles, "{name}");
            assert_eq!(direct.config, text.config, "{name}");
            assert_eq!(direct.partitions, text.partitions);
            assert_eq!(direct.texture, text.texture);
            assert_eq!(direct.program, text.program);
            assert_eq!(direct.control_register, text.control_register);
            assert_eq!(fingerprint(&direct), pinned, "{name} {size}");
        }
    }

    /// The benchmark's own sizes, pinned the same way (slow in debug builds).
    #[test]
    fn the_benchmark_fixtures_are_unchanged() {
        let sphere = sphere_scene(64, 41, 256).unwrap();
        assert_eq!(fingerprint(&sphere), 0x9a60_be40_6571_7617);
        let mesh = mesh_scene(6, 256).unwrap();
        assert_eq!(mesh.triangles.len(), 81_920);
        assert_eq!(fingerprint(&mesh), 0x148a_4070_890f_2ad2);
    }

    #[test]
    fn a_small_sphere_renders_on_both_pools() {
        let scene = sphere_scene(8, 5, 16).unwrap();
        assert_eq!(scene.triangles.len(), 2 * 8 * 4);
        let pools = Pools::new(Some(2)).unwrap();
        let row = measure("sphere", &scene, &RenderOptions::default(), 1, &pools).unwrap();
        assert_eq!(row.triangles, 64);
        assert!(row.instructions > Some(0) && row.culling);
        assert!(row.one_core > Duration::ZERO && row.all_cores > Duration::ZERO);
    }
}
