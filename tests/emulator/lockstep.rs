//! Lock-step groups are output-identical: every test scene renders the same frame (every
//! output word and which words were written) and the same instruction count with cores in
//! lock-step groups (which interpret every triangle test) as with every core on its own,
//! with and without culling; a frame that culls runs core by core whatever the option
//! says; a core that faults inside a group gives the very error it gives alone.

use crate::common;
use crate::model;

use std::path::Path;

use theia::emu::core::RomVariant;
use theia::emu::isa::asm::assemble;
use theia::emu::machine::{render, Lockstep, Render, RenderOptions};
use theia::io::image::{read_image, Rgb8};
use theia::io::scene::obj::{default_scene, ObjOptions};
use theia::io::scene::Scene;

fn render_with(scene: &Scene, options: &RenderOptions, lockstep: Lockstep) -> Render {
    render(
        scene,
        &RenderOptions {
            lockstep,
            ..options.clone()
        },
    )
    .expect("renders")
}

fn with_culling(options: &RenderOptions, culling: bool) -> RenderOptions {
    RenderOptions {
        culling,
        ..options.clone()
    }
}

/// Renders in lock-step (every triangle interpreted) and core by core with and without
/// culling, and requires identical results; with culling, lock-step does not apply.
fn assert_identical(scene: &Scene, options: &RenderOptions, label: &str) {
    let grouped = render_with(scene, &with_culling(options, false), Lockstep::Always);
    assert!(grouped.lockstep_groups > 0 || grouped.cores == 1, "{label}");
    assert_eq!(grouped.culled, 0, "{label}");
    for culling in [false, true] {
        let alone = render_with(scene, &with_culling(options, culling), Lockstep::Never);
        let label = format!("{label}, alone with culling {culling}");
        assert!(grouped.frame == alone.frame, "{label}: the frames differ");
        assert_eq!(grouped.instructions, alone.instructions, "{label}");
        assert_eq!(alone.lockstep_groups, 0, "{label}");
        println!(
            "{label}: identical, {} instructions over {} cores",
            alone.instructions, alone.cores
        );
    }
    let culled = render_with(scene, &with_culling(options, true), Lockstep::Always);
    if culled.culling_refused.is_none() {
        assert_eq!(culled.lockstep_groups, 0, "{label}: a frame that culls");
        assert!(culled.frame == grouped.frame, "{label}: the frames differ");
    }
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn every_conformance_scene_is_identical_with_both_roms() {
    for name in [
        "scenes_example1",
        "scenes_example2",
        "scenes_example3",
        "shaders_example1",
    ] {
        let dir = common::conformance(name);
        let scene = theia::io::scene::mem::load_scene_dir(&dir).expect("conformance scene loads");
        for rom in [RomVariant::Faithful, RomVariant::Fixed] {
            let options = RenderOptions {
                rom,
                ..Default::default()
            };
            assert_identical(&scene, &options, &format!("{name} ({})", rom.name()));
        }
    }
}

/// Bands that start on a miss differ from one core count to the next (the hardware's
/// artifact), and groups hold 8 cores: 3, 8, 11 and 16 cores give partial, full and
/// several groups.
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn other_core_counts_are_identical() {
    let dir = common::conformance("scenes_example3");
    let scene = theia::io::scene::mem::load_scene_dir(&dir).expect("conformance scene loads");
    for cores in [3, 8, 11, 16] {
        let options = RenderOptions {
            cores: Some(cores),
            ..Default::default()
        };
        assert_identical(&scene, &options, &format!("scenes_example3, {cores} cores"));
    }
}

/// scenes_example3 rendered in lock-step groups is its Reference.ppm pixel for pixel: the
/// groups agree with the hardware, not merely with the cores run one by one.
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn example3_in_lockstep_is_its_reference() {
    let dir = common::conformance("scenes_example3");
    let scene = theia::io::scene::mem::load_scene_dir(&dir).expect("conformance scene loads");
    let reference = read_image(&dir.join("Reference.ppm")).expect("the reference reads");
    let options = RenderOptions {
        culling: false,
        ..Default::default()
    };
    let grouped = render_with(&scene, &options, Lockstep::Always);
    assert!(grouped.lockstep_groups > 0);
    assert!(
        Rgb8::from_frame(&grouped.frame) == reference,
        "the image is not the reference"
    );
}

/// Lock-step groups give every pixel the closest hit (t, u, v) the independent model
/// (tests/model) computes from the spec's formulas.
#[test]
fn lockstep_groups_show_the_closest_hits_the_model_predicts() {
    let scene = small_default_scene();
    let predicted = model::hits(&scene);
    let options = RenderOptions {
        cores: Some(8),
        imem: Some(model::hit_shader()),
        culling: false,
        ..Default::default()
    };
    let grouped = render_with(&scene, &options, Lockstep::Always);
    assert!(grouped.lockstep_groups > 0);
    let hits = model::assert_words_show_hits("lock-step", &predicted, &grouped.frame.words);
    assert!(hits > 1000, "lock-step: {hits} hits");
}

fn small_default_scene() -> Scene {
    default_scene::load(&ObjOptions {
        width: 64,
        height: 64,
        ..Default::default()
    })
    .expect("the built-in scene loads")
    .scene
}

#[test]
fn every_example_shader_is_identical() {
    let scene = small_default_scene();
    let shaders = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut names: Vec<_> = std::fs::read_dir(&shaders)
        .expect("shaders/ lists")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "shdr"))
        .collect();
    names.sort();
    assert!(names.len() >= 8, "{names:?}");
    for path in names {
        let source = std::fs::read_to_string(&path).expect("shader reads");
        let imem = assemble(&source, &path).expect("shader assembles").imem;
        let options = RenderOptions {
            cores: Some(8),
            imem: Some(imem),
            ..Default::default()
        };
        assert_identical(&scene, &options, &path.display().to_string());
    }
}

/// A core that never returns stops the render with the same error in a group as alone:
/// the lowest failing core, its pixel, routine and address.
#[test]
fn a_fault_in_a_group_is_reported_as_alone() {
    let scene = small_default_scene();
    // Pixels right of column 0 spin: every core reaches one, its band's second pixel.
    let spin = "ENTRYPOINT_ADRR_PIXELSHADER:\n JGX SPIN CREG_PIXEL_2D_POSITION CREG_ZERO\n RETURN RT_TRUE\nSPIN:\n JMP SPIN\n";
    let imem = assemble(spin, Path::new("spin.shdr"))
        .expect("assembles")
        .imem;
    // In a group (every triangle interpreted), and alone with and without culling.
    let errors: Vec<String> = [
        (false, Lockstep::Always),
        (false, Lockstep::Never),
        (true, Lockstep::Never),
    ]
    .into_iter()
    .map(|(culling, lockstep)| {
        let options = RenderOptions {
            cores: Some(8),
            imem: Some(imem.clone()),
            max_steps: Some(5_000),
            culling,
            lockstep,
            ..Default::default()
        };
        render(&scene, &options)
            .expect_err("the shader spins")
            .to_string()
    })
    .collect();
    assert_eq!(errors[0], errors[1]);
    assert_eq!(errors[0], errors[2]);
    assert!(
        errors[0].starts_with("core 0, pixel (1, 0), routine PIXELSHADER: "),
        "{}",
        errors[0]
    );
}

/// A raised cancel flag stops a render with `Cancelled`, grouped or not; a lowered one
/// changes nothing.
#[test]
fn a_raised_cancel_flag_stops_the_render() {
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use theia::emu::machine::{Machine, RenderError};

    let scene = default_scene::load(&ObjOptions {
        width: 32,
        height: 16,
        cores: 4,
        ..ObjOptions::default()
    })
    .unwrap()
    .scene;
    for lockstep in [Lockstep::Always, Lockstep::Never] {
        let flag = Arc::new(AtomicBool::new(false));
        let options = RenderOptions {
            lockstep,
            culling: false,
            cancel: Some(flag.clone()),
            ..RenderOptions::default()
        };
        let machine = Machine::new(&scene, &options).unwrap();
        let whole = machine
            .render(None)
            .expect("renders while the flag is down");
        assert_eq!(whole.frame, render_with(&scene, &options, lockstep).frame);
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
        assert!(
            matches!(machine.render(None), Err(RenderError::Cancelled)),
            "{lockstep:?}"
        );
    }
}
