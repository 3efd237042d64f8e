//! One core's pixels split over host threads give the sequential frame word for word:
//! every output word and which words were written, the hits, the instruction counts and
//! the culling counts are those of one thread, for any thread count and any chunk size
//! down to a chunk per pixel; a shader whose output depends on every pixel before makes
//! every guess wrong, and the re-runs still give the sequential frame.

use crate::common;

use std::path::Path;

use theia::emu::core::RomVariant;
use theia::emu::isa::asm::assemble;
use theia::emu::machine::speculate::{ChunkStats, Chunking};
use theia::emu::machine::{render, AccelUse, Band, Lockstep, Machine, Render, RenderOptions};
use theia::io::scene::generate::displaced_icosphere_obj;
use theia::io::scene::mem::load_scene_dir;
use theia::io::scene::obj::{default_scene, ObjOptions};
use theia::io::scene::Scene;

/// `options` rendered on `threads` host threads, with chunks of `pixels` (`None`: the
/// default cut).
fn on_threads(
    scene: &Scene,
    options: &RenderOptions,
    threads: usize,
    pixels: Option<usize>,
) -> Render {
    let (pool, options) = with_chunks(options, threads, pixels);
    pool.install(|| render(scene, &options)).expect("renders")
}

/// A pool of `threads` host threads, and `options` with chunks of `pixels` (`None`: the
/// default cut).
pub(crate) fn with_chunks(
    options: &RenderOptions,
    threads: usize,
    pixels: Option<usize>,
) -> (rayon::ThreadPool, RenderOptions) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    let options = RenderOptions {
        chunking: Chunking { pixels },
        ..options.clone()
    };
    (pool, options)
}

/// Renders on 1 thread and on 2, 3 and 4 with the default cut and with tiny chunks, and
/// requires identical results; returns the chunk statistics of the one-pixel chunks.
fn assert_identical(scene: &Scene, options: &RenderOptions, label: &str) -> ChunkStats {
    let sequential = on_threads(scene, options, 1, None);
    assert_eq!(
        sequential.chunks,
        ChunkStats::default(),
        "{label}: one thread cuts nothing"
    );
    let mut per_pixel = ChunkStats::default();
    for (threads, pixels) in [(2, None), (3, None), (4, Some(1)), (2, Some(7))] {
        let split = on_threads(scene, options, threads, pixels);
        let label = format!("{label}, {threads} threads, chunks of {pixels:?} pixels");
        assert!(
            split.frame == sequential.frame,
            "{label}: the frames differ"
        );
        assert_eq!(split.instructions, sequential.instructions, "{label}");
        assert_eq!(
            split.instructions_exact, sequential.instructions_exact,
            "{label}"
        );
        assert_eq!(split.culled, sequential.culled, "{label}");
        // Lock-step groups are cut by threads too (one group per thread): only whether
        // there are groups is the same.
        assert_eq!(
            split.lockstep_groups > 0,
            sequential.lockstep_groups > 0,
            "{label}"
        );
        println!(
            "{label}: identical; {} of {} speculative chunks run again",
            split.chunks.reruns, split.chunks.speculative
        );
        if pixels == Some(1) {
            per_pixel = split.chunks;
        }
    }
    per_pixel
}

fn obj_scene(obj: &str, size: u32, cores: u32) -> Scene {
    let options = ObjOptions {
        width: size,
        height: size,
        cores,
        ..Default::default()
    };
    common::generated_scene(obj, &options)
}

fn shader(source: &str) -> Vec<theia::emu::isa::Word> {
    assemble(source, Path::new("test.shdr"))
        .expect("the shader assembles")
        .imem
}

/// Adds every pixel's texture colour to R10 and writes R10: each pixel's output depends
/// on every pixel of the core before it.
const RUNNING_SUM: &str = "
ENTRYPOINT_ADRR_PIXELSHADER:
        ADD R10 R10 CREG_TEXTURE_COLOR
        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL R10
        RETURN RT_TRUE
";

/// Writes the sum of this pixel's texture colour and the previous pixel's, which R12
/// carries from one pixel to the next.
const WITH_PREVIOUS: &str = "
ENTRYPOINT_ADRR_PIXELSHADER:
        ADD R11 R12 CREG_TEXTURE_COLOR
        COPY R12 CREG_TEXTURE_COLOR
        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL R11
        RETURN RT_TRUE
";

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn the_conformance_scene_is_identical_split_over_threads() {
    let scene = load_scene_dir(&common::conformance("scenes_example3")).expect("loads");
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let options = RenderOptions {
            rom,
            ..Default::default()
        };
        let stats = assert_identical(&scene, &options, &format!("scenes_example3, {rom:?}"));
        assert!(stats.speculative > 20_000, "a chunk per pixel: {stats:?}");
    }
    // 16 row bands: 15 partition-start pixels differ from the scene's 8, split or not.
    let options = RenderOptions {
        cores: Some(16),
        ..Default::default()
    };
    assert_identical(&scene, &options, "scenes_example3, 16 cores");
}

#[test]
fn the_built_in_scene_is_identical_split_over_threads() {
    let options = ObjOptions {
        width: 96,
        height: 72,
        ..Default::default()
    };
    let scene = default_scene::load(&options).expect("loads").scene;
    for (label, options) in [
        (
            "built-in scene, 1 core",
            RenderOptions {
                cores: Some(1),
                ..Default::default()
            },
        ),
        (
            "built-in scene, 5 cores",
            RenderOptions {
                cores: Some(5),
                ..Default::default()
            },
        ),
        (
            "built-in scene, fixed ROM, no culling",
            RenderOptions {
                cores: Some(3),
                rom: RomVariant::Fixed,
                culling: false,
                lockstep: Lockstep::Never,
                ..Default::default()
            },
        ),
        (
            "built-in scene, lock-step",
            RenderOptions {
                cores: Some(16),
                culling: false,
                lockstep: Lockstep::Always,
                ..Default::default()
            },
        ),
        (
            "built-in scene, band 2 of 3",
            RenderOptions {
                cores: Some(6),
                band: Some(Band { index: 1, count: 3 }),
                ..Default::default()
            },
        ),
    ] {
        assert_identical(&scene, &options, label);
    }
}

/// A mesh whose faithful render shows wrap-around artifacts, with the acceleration
/// structure built whole and in batches of a few tile rows.
#[test]
fn a_mesh_with_wrap_around_pixels_is_identical_split_over_threads() {
    // 64x64: the fit of the un-rounded scale leaves 3 wrap-around pixels there (none at 48).
    let scene = obj_scene(&displaced_icosphere_obj(5, 0.08), 64, 3);
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let options = RenderOptions {
            rom,
            ..Default::default()
        };
        assert_identical(&scene, &options, &format!("20,480-triangle mesh, {rom:?}"));
        let batched = |threads, pixels| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let options = RenderOptions {
                accel: AccelUse::Always,
                chunking: Chunking { pixels },
                ..options.clone()
            };
            pool.install(|| {
                let machine = Machine::with_batches(&scene, &options, 1 << 14).expect("a machine");
                machine.render(None).expect("renders")
            })
        };
        let sequential = batched(1, None);
        assert!(sequential.structure.expect("the structure").batches > 1);
        if rom == RomVariant::Faithful {
            assert!(
                sequential.frame.artifact_pixels() > 0,
                "the faithful ROM's artifacts"
            );
        }
        for (threads, pixels) in [(2, None), (4, Some(5))] {
            let split = batched(threads, pixels);
            assert!(
                split.frame == sequential.frame,
                "{rom:?} in batches, {threads} threads"
            );
        }
    }
}

#[test]
fn a_shader_reading_what_the_previous_pixel_left_is_identical_split_over_threads() {
    let scene = obj_scene(&displaced_icosphere_obj(2, 0.08), 40, 2);
    let options = RenderOptions {
        imem: Some(shader(WITH_PREVIOUS)),
        ..Default::default()
    };
    let stats = assert_identical(&scene, &options, "a shader reading the previous pixel");
    // The warm-up pixel leaves R12 as the previous pixel does.
    assert_eq!(stats.reruns, 0, "{stats:?}");
}

#[test]
fn chunks_whose_guess_is_wrong_run_again_and_give_the_sequential_frame() {
    let scene = obj_scene(&displaced_icosphere_obj(2, 0.08), 40, 2);
    let options = RenderOptions {
        imem: Some(shader(RUNNING_SUM)),
        ..Default::default()
    };
    let stats = assert_identical(&scene, &options, "a running sum");
    // A chunk's first read of R10 sees the sum of every pixel before it, which no warm-up
    // reproduces.
    assert!(stats.reruns > stats.speculative * 9 / 10, "{stats:?}");
}
