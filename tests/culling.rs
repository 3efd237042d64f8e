//! Culling is output-identical: every test scene renders the same frame (every output word
//! and which words were written) and the same instruction count with and without it, and
//! with the acceleration structure (`--accel auto`), per-triangle culling (`--accel cull`)
//! and none (`--accel off`).

mod common;

use theia::core::RomVariant;
use theia::isa::registers::{register_address, EntryPoint};
use theia::isa::{Instruction, Opcode};
use theia::machine::accel::check_tile_claims;
use theia::machine::cull::Refusal;
use theia::machine::{render, AccelUse, Machine, Render, RenderOptions};
use theia::scene::generate::{displaced_icosphere_obj, uv_sphere_obj};
use theia::scene::obj::{default_scene, ObjOptions};
use theia::scene::Scene;

const CONFORMANCE_SCENES: [&str; 4] = [
    "scenes_example1",
    "scenes_example2",
    "scenes_example3",
    "shaders_example1",
];

fn render_with(scene: &Scene, options: &RenderOptions, culling: bool) -> Render {
    let accel = if culling {
        AccelUse::Never
    } else {
        options.accel
    };
    render(
        scene,
        &RenderOptions {
            culling,
            accel,
            ..options.clone()
        },
    )
    .expect("renders")
}

fn render_accelerated(scene: &Scene, options: &RenderOptions) -> Render {
    let options = RenderOptions {
        accel: AccelUse::Always,
        ..options.clone()
    };
    render(scene, &options).expect("renders")
}

/// Renders with and without culling and requires identical results; returns the culled
/// render.
fn assert_identical(scene: &Scene, options: &RenderOptions, label: &str) -> Render {
    let off = render_with(scene, options, false);
    let on = render_with(scene, options, true);
    assert_eq!(off.culling_refused, Some(Refusal::Disabled), "{label}");
    assert_eq!(on.culling_refused, None, "{label}");
    assert_eq!(off.culled, 0, "{label}");
    assert!(on.culled > 0, "{label}: nothing was culled");
    assert!(on.frame == off.frame, "{label}: the frames differ");
    assert_eq!(on.instructions, off.instructions, "{label}");
    let accelerated = render_accelerated(scene, options);
    assert_eq!(
        accelerated.accel,
        Ok(true),
        "{label}: the structure was not used"
    );
    assert!(
        accelerated.frame == off.frame,
        "{label}: accelerated, the frames differ"
    );
    if accelerated.instructions_exact {
        assert_eq!(
            accelerated.instructions, off.instructions,
            "{label}: accelerated"
        );
    } else {
        assert!(
            accelerated.instructions > off.instructions,
            "{label}: a bound"
        );
    }
    assert_eq!(accelerated.culled, on.culled, "{label}: accelerated");
    println!(
        "{label}: identical; {} of {} MAIN runs culled",
        on.culled,
        on.triangles as u64 * (on.frame.width * on.frame.height) as u64
    );
    on
}

fn conformance_scene(name: &str) -> Option<Scene> {
    let dir = common::conformance(name)?;
    Some(theia::scene::mem::load_scene_dir(&dir).expect("conformance scene loads"))
}

#[test]
fn every_conformance_scene_is_identical_with_both_roms() {
    for name in CONFORMANCE_SCENES {
        let Some(scene) = conformance_scene(name) else {
            return;
        };
        for rom in [RomVariant::Faithful, RomVariant::Fixed] {
            let options = RenderOptions {
                rom,
                ..Default::default()
            };
            assert_identical(&scene, &options, &format!("{name} ({})", rom.name()));
        }
    }
}

#[test]
fn other_core_counts_are_identical() {
    let Some(scene) = conformance_scene("scenes_example3") else {
        return;
    };
    for cores in [1, 3] {
        let options = RenderOptions {
            cores: Some(cores),
            ..Default::default()
        };
        assert_identical(&scene, &options, &format!("scenes_example3, {cores} cores"));
    }
}

#[test]
fn the_default_obj_scene_is_identical_with_both_roms() {
    let scene = default_scene::load(&ObjOptions {
        width: 96,
        height: 96,
        ..Default::default()
    })
    .expect("the built-in scene loads")
    .scene;
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let options = RenderOptions {
            rom,
            ..Default::default()
        };
        assert_identical(&scene, &options, &format!("default OBJ ({})", rom.name()));
    }
}

fn address(name: &str) -> u16 {
    register_address(name).unwrap_or_else(|| panic!("{name} is a register"))
}

/// An instruction memory: the default entry table with `entry` at 0x800C, then `code`.
fn imem_with(entry: EntryPoint, code: &[Instruction]) -> Vec<Instruction> {
    let mut imem: Vec<Instruction> = EntryPoint::ALL
        .iter()
        .map(|e| Instruction(e.default_address() as u64))
        .collect();
    imem[entry as usize] = Instruction(0x800C);
    imem.extend_from_slice(code);
    imem
}

/// A pixel shader that outputs a mix of everything a skipped MAIN writes (BIU's
/// intermediate values of the last triangle, R1..R3, t, u, v): culling must reproduce
/// them, not merely the image.
#[test]
fn a_shader_reading_biu_registers_sees_the_same_values() {
    let Some(scene) = conformance_scene("scenes_example3") else {
        return;
    };
    let options = RenderOptions {
        imem: Some(biu_reading_shader()),
        ..Default::default()
    };
    let on = assert_identical(&scene, &options, "BIU-reading shader");
    // The shader's output really depends on per-pixel BIU state.
    let mut distinct = on.frame.words.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(distinct.len() > 1000, "{} distinct words", distinct.len());
}

/// MAIN replaced by user code (the same algorithm at 0x800C): culling is refused, and the
/// frame is the ROM's.
#[test]
fn a_user_main_refuses_culling() {
    let Some(scene) = conformance_scene("scenes_example3") else {
        return;
    };
    let code = [
        Instruction::type2(Opcode::Call, 157, 0),
        Instruction::type1(Opcode::Jeqx, 0x8011, address("R99"), address("CREG_ZERO")),
        Instruction::type2(Opcode::Call, 190, 0),
        Instruction::type1(Opcode::Nop, 0, 0, 0),
        Instruction::type2(Opcode::Return, 0, 1),
        Instruction::type2(Opcode::Return, 0, 0),
    ];
    let imem = imem_with(EntryPoint::Main, &code);
    let user = render_with(
        &scene,
        &RenderOptions {
            imem: Some(imem),
            ..Default::default()
        },
        true,
    );
    assert_eq!(
        user.culling_refused,
        Some(Refusal::UserMain { address: 0x800C })
    );
    assert_eq!(user.culled, 0);
    let rom = render_with(&scene, &RenderOptions::default(), true);
    assert!(user.frame == rom.frame);
    assert_eq!(user.instructions, rom.instructions);
}

/// A watchdog that fires inside the triangle loop stops at the same instruction: culling
/// only skips a MAIN whose whole path fits the budget.
#[test]
fn the_watchdog_fires_at_the_same_instruction() {
    let Some(scene) = conformance_scene("scenes_example3") else {
        return;
    };
    for max_steps in [1_000, 2_345] {
        let options = RenderOptions {
            cores: Some(1),
            max_steps: Some(max_steps),
            ..Default::default()
        };
        let error = |culling| {
            render(
                &scene,
                &RenderOptions {
                    culling,
                    ..options.clone()
                },
            )
            .expect_err("the budget is too small for one pixel")
            .to_string()
        };
        let interpreted = error(false);
        assert!(interpreted.contains("routine MAIN"), "{interpreted}");
        assert_eq!(error(true), interpreted);
        let accelerated = render(
            &scene,
            &RenderOptions {
                accel: AccelUse::Always,
                ..options.clone()
            },
        )
        .expect_err("the budget is too small for one pixel");
        assert_eq!(accelerated.to_string(), interpreted);
    }
}

/// A pixel shader that never returns is stopped where brute force stops it, although the
/// structure books skipped exits at their most: the frame is rendered again exactly.
#[test]
fn a_runaway_shader_stops_at_the_same_place_with_the_structure() {
    let scene = small_sphere(32);
    let spin = [Instruction::type1(Opcode::Jmp, 0x800C, 0, 0)];
    let options = RenderOptions {
        imem: Some(imem_with(EntryPoint::PixelShader, &spin)),
        max_steps: Some(50_000),
        ..Default::default()
    };
    let error = |accel, culling| {
        render(
            &scene,
            &RenderOptions {
                accel,
                culling,
                ..options.clone()
            },
        )
        .expect_err("the shader never returns")
        .to_string()
    };
    let interpreted = error(AccelUse::Never, false);
    assert!(interpreted.contains("PIXELSHADER"), "{interpreted}");
    assert_eq!(error(AccelUse::Always, true), interpreted);
}

fn small_sphere(size: u32) -> Scene {
    generated(&uv_sphere_obj(24, 12), size, false)
}

/// A generated OBJ text as a square scene.
fn generated(text: &str, size: u32, flat: bool) -> Scene {
    let options = ObjOptions {
        width: size,
        height: size,
        flat,
        ..Default::default()
    };
    theia::scene::obj::load_obj_text(
        text,
        std::path::Path::new("generated.obj"),
        &theia::scene::obj::MemoryAssets(&[]),
        &options,
    )
    .expect("the generated mesh loads")
    .scene
}

/// Large generated meshes: identical frames in all three modes, every tile's claims hold
/// at every pixel, and a BIU-reading shader sees the same leftover registers.
#[test]
fn generated_meshes_are_identical_in_all_three_modes() {
    let bumpy = generated(&displaced_icosphere_obj(4, 0.1), 48, true);
    for (name, scene) in [("sphere", small_sphere(48)), ("bumpy", bumpy)] {
        for rom in [RomVariant::Faithful, RomVariant::Fixed] {
            let options = RenderOptions {
                rom,
                ..Default::default()
            };
            assert_identical(&scene, &options, &format!("{name} ({})", rom.name()));
            let machine = Machine::new(
                &scene,
                &RenderOptions {
                    accel: AccelUse::Always,
                    ..options.clone()
                },
            )
            .unwrap();
            let (Ok(culler), Ok(Some(accel))) = (&machine.culler, &machine.accel) else {
                panic!("{name}: no structure");
            };
            check_tile_claims(culler, accel, scene.triangles.len(), scene.height())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            println!("{name}: {:.1} candidates per tile", accel.mean_candidates());
        }
        let options = RenderOptions {
            imem: Some(biu_reading_shader()),
            ..Default::default()
        };
        assert_identical(&scene, &options, &format!("{name}, BIU-reading shader"));
    }
}

/// A pixel shader that outputs a mix of everything a skipped MAIN writes.
fn biu_reading_shader() -> Vec<Instruction> {
    let acc = address("R4");
    let mut code = vec![Instruction::type1(
        Opcode::Add,
        acc,
        address("CREG_t"),
        address("CREG_u"),
    )];
    for name in [
        "CREG_v",
        "R2",
        "R1",
        "R3",
        "CREG_P",
        "CREG_Q",
        "CREG_T",
        "CREG_E1",
        "CREG_E2",
        "CREG_DELTA",
        "CREG_H1",
        "CREG_H2",
        "CREG_H3",
    ] {
        code.push(Instruction::type1(Opcode::Add, acc, acc, address(name)));
    }
    code.push(Instruction::type1(
        Opcode::Omwrite,
        address("OREG_PIXEL_COLOR"),
        address("CREG_CURRENT_OUTPUT_PIXEL"),
        acc,
    ));
    code.push(Instruction::type2(Opcode::Return, 0, 1));
    imem_with(EntryPoint::PixelShader, &code)
}
