//! A supersampled frame rendered in passes of sample rows is the frame of one pass over
//! the whole sample image, word for word: every core carries its state from one pass into
//! the next (the faithful ROM's partition-start pixels show that the state matters), for
//! both ROMs, lone cores and lock-step groups, any core count and any thread count; the
//! instruction and culling counts are those of one pass.

use crate::common;

use std::path::Path;

use theia::emu::core::RomVariant;
use theia::emu::isa::asm::assemble;
use theia::emu::machine::ssaa::Supersampler;
use theia::emu::machine::{Band, Lockstep, Render, RenderError, RenderOptions};
use theia::io::scene::generate::displaced_icosphere_obj;
use theia::io::scene::mem::load_scene_dir;
use theia::io::scene::obj::{default_scene, ObjOptions};
use theia::io::scene::Scene;

/// `options` rendered in passes of `rows` sample rows on `threads` host threads with
/// chunks of `pixels` (`None`: the default cut); the passes it took, and the render.
fn in_passes(
    scene: &Scene,
    options: &RenderOptions,
    rows: u32,
    threads: usize,
    pixels: Option<usize>,
) -> (usize, Render) {
    let (pool, options) = crate::chunks::with_chunks(options, threads, pixels);
    let sampler = Supersampler::with_pass_rows(scene, &options, Some(rows)).expect("a sampler");
    let render = pool.install(|| sampler.render(None, |_| Ok::<_, RenderError>(())));
    (sampler.passes(), render.expect("renders"))
}

/// Requires the frame in passes of each of `rows` sample rows, on one thread and on three
/// with tiny chunks, to be the frame of one pass; returns that frame's render.
fn assert_passes_change_nothing(
    scene: &Scene,
    options: &RenderOptions,
    rows: &[u32],
    label: &str,
) -> Render {
    let (passes, whole) = in_passes(scene, options, u32::MAX, 1, None);
    assert_eq!(passes, 1, "{label}");
    assert!(whole.frame.written.iter().any(|&w| w), "{label}");
    for &rows in rows {
        for (threads, pixels) in [(1, None), (3, Some(5))] {
            let label = format!("{label}, passes of {rows} rows, {threads} threads");
            let (passes, cut) = in_passes(scene, options, rows, threads, pixels);
            assert!(passes > 2, "{label}: {passes} passes");
            assert!(cut.frame == whole.frame, "{label}: the frames differ");
            assert_eq!(cut.instructions_exact, whole.instructions_exact, "{label}");
            // Where the structure skips triangles, the count is a bound, and a pass's
            // structure (its own tree over its rows) bounds it differently.
            if whole.instructions_exact {
                assert_eq!(cut.instructions, whole.instructions, "{label}");
            }
            assert_eq!(cut.culled, whole.culled, "{label}");
            assert_eq!(cut.accel, whole.accel, "{label}");
            assert_eq!(
                cut.lockstep_groups > 0,
                whole.lockstep_groups > 0,
                "{label}"
            );
        }
    }
    whole
}

/// Lone cores with culling, lone cores interpreting every test, and lock-step groups.
fn modes(rom: RomVariant) -> [(&'static str, RenderOptions); 3] {
    let options = |culling, lockstep| RenderOptions {
        rom,
        culling,
        lockstep,
        ..RenderOptions::default()
    };
    [
        ("lone cores", options(true, Lockstep::Never)),
        ("lone cores interpreting", options(false, Lockstep::Never)),
        ("lock-step", options(false, Lockstep::Always)),
    ]
}

#[test]
fn the_built_in_scene_in_passes_is_the_one_pass_frame() {
    for (k, rows) in [(2, [2, 6]), (3, [3, 9])] {
        for rom in [RomVariant::Faithful, RomVariant::Fixed] {
            let obj = ObjOptions {
                width: 16,
                height: 12,
                ssaa: k,
                rom,
                ..ObjOptions::default()
            };
            let scene = default_scene::load(&obj).expect("loads").scene;
            for (mode, options) in modes(rom) {
                // All core counts at K = 2; the scene's own 4 cores at K = 3.
                let counts = match k {
                    2 => &[Some(1), Some(3), None, Some(7)][..],
                    _ => &[None][..],
                };
                for &cores in counts {
                    let options = RenderOptions {
                        ssaa: k,
                        cores,
                        ..options.clone()
                    };
                    let label = format!("K {k}, {rom:?}, {mode}, {cores:?} cores");
                    let whole = assert_passes_change_nothing(&scene, &options, &rows, &label);
                    let grouped = mode == "lock-step" && cores != Some(1);
                    assert_eq!(whole.lockstep_groups > 0, grouped, "{label}");
                }
            }
        }
    }
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn the_conformance_scene_in_passes_is_the_one_pass_frame() {
    let scene = load_scene_dir(&common::conformance("scenes_example3")).expect("loads");
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let [lone, _, grouped] = modes(rom);
        for ((mode, options), rows) in [(lone, &[2, 6][..]), (grouped, &[6][..])] {
            // The first quarter of its 8 partitions, 40 sample rows each: passes within
            // and across the two, the second's partition-start pixel inside one.
            let options = RenderOptions {
                ssaa: 2,
                band: Some(Band { index: 0, count: 4 }),
                ..options
            };
            let label = format!("scenes_example3, {rom:?}, {mode}");
            let whole = assert_passes_change_nothing(&scene, &options, rows, &label);
            assert!(!whole.frame.written[3 * 160 * 40..].contains(&true));
        }
    }
}

/// The supersampled mesh whose faithful samples show wrap-around artifacts, with the
/// acceleration structure made pass by pass.
#[test]
fn a_mesh_with_wrap_around_samples_in_passes_is_the_one_pass_frame() {
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        // Fitted at 64x64 samples: 3 wrap-around samples there.
        let obj = ObjOptions {
            width: 32,
            height: 32,
            ssaa: 2,
            cores: 3,
            rom,
            ..ObjOptions::default()
        };
        let scene = common::generated_scene(&displaced_icosphere_obj(5, 0.08), &obj);
        let options = RenderOptions {
            rom,
            ssaa: 2,
            ..RenderOptions::default()
        };
        let label = format!("20,480-triangle mesh, {rom:?}");
        let whole = assert_passes_change_nothing(&scene, &options, &[4, 12], &label);
        assert_eq!(whole.accel, Ok(true), "{label}");
        assert!(
            !whole.instructions_exact,
            "{label}: the structure skips exits"
        );
        if rom == RomVariant::Faithful {
            assert!(whole.frame.artifact_pixels() > 0, "{label}: its artifacts");
        }
        // Passes that cut tile rows cut the structure's tiles: the same frame.
        let (_, cut) = in_passes(&scene, &options, 2, 2, None);
        assert!(cut.frame == whole.frame, "{label}, passes of 2 rows");
        if rom == RomVariant::Fixed {
            continue;
        }
        // Without the structure the count is exact, and the one pass's.
        let culled = RenderOptions {
            accel: theia::emu::machine::AccelUse::Never,
            ..options.clone()
        };
        let exact = assert_passes_change_nothing(&scene, &culled, &[6], &label);
        assert!(
            exact.frame == whole.frame && exact.instructions_exact,
            "{label}"
        );
    }
}

/// Writes the texture colour at the pixel's words and at words 0, 1 and 2: every pixel
/// writes over the first pixel's words.
const OVER_THE_FIRST: &str = "
ENTRYPOINT_ADRR_PIXELSHADER:
        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR
        SETX R1 0.0
        SWIZZLE3D R1 SWIZZLE_XXX
        OMWRITE OREG_PIXEL_COLOR R1 CREG_TEXTURE_COLOR
        RETURN RT_TRUE
";

#[test]
fn a_shader_writing_outside_its_pixel_renders_in_one_pass() {
    let scene = default_scene::load(&ObjOptions {
        width: 16,
        height: 12,
        ssaa: 2,
        ..ObjOptions::default()
    })
    .expect("loads")
    .scene;
    let imem = assemble(OVER_THE_FIRST, Path::new("test.shdr"))
        .expect("the shader assembles")
        .imem;
    let options = RenderOptions {
        ssaa: 2,
        imem: Some(imem),
        ..RenderOptions::default()
    };
    assert_passes_change_nothing(&scene, &options, &[2], "writes over the first");
}
