//! Culling is output-identical: every test scene renders the same frame (every output word
//! and which words were written) and the same instruction count with and without it, and
//! with the acceleration structure (`--accel auto`), per-triangle culling (`--accel cull`)
//! and none (`--accel off`).

use crate::common;
use crate::model;

use std::sync::Arc;
use theia::emu::core::RomVariant;
use theia::emu::isa::registers::{register_address, EntryPoint};
use theia::emu::isa::{Opcode, Word};
use theia::io::image::{read_image, Rgb8};

use theia::emu::machine::accel::{check_tile_claims, Accel, Tile};
use theia::emu::machine::cull::{Culler, Refusal};
use theia::emu::machine::hits::{Artifact, PixelHit};
use theia::emu::machine::{render, AccelUse, Machine, Render, RenderOptions};
use theia::io::scene::generate::{displaced_icosphere_obj, uv_sphere_obj};
use theia::io::scene::obj::{default_scene, ObjOptions};
use theia::io::scene::Scene;

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

/// A machine for `scene` that builds the acceleration structure wherever culling applies.
fn machine_with_structure(scene: &Scene, rom: RomVariant) -> Machine<'_> {
    let options = RenderOptions {
        rom,
        accel: AccelUse::Always,
        ..Default::default()
    };
    Machine::new(scene, &options).expect("the machine starts")
}

/// The culler and the structure of a [`machine_with_structure`].
fn structure<'m>(machine: &'m Machine<'_>, label: &str) -> (&'m Culler, Arc<Accel>) {
    let (Ok(culler), Some(accel)) = (machine.culler(), machine.structure_for(0..u32::MAX)) else {
        panic!("{label}: no structure: {:?}", machine.accel().err());
    };
    (culler, accel)
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
    if options.rom == RomVariant::Fixed {
        // The structure also skips triangles behind a covering hit (accel/occlusion.rs),
        // which plain culling interprets: every one of those is checked in the tile claims.
        assert!(accelerated.culled >= on.culled, "{label}: accelerated");
    } else {
        assert_eq!(accelerated.culled, on.culled, "{label}: accelerated");
    }
    println!(
        "{label}: identical; {} of {} MAIN runs culled",
        on.culled,
        on.triangles as u64 * (on.frame.width * on.frame.height) as u64
    );
    on
}

fn conformance_scene(name: &str) -> Scene {
    let dir = common::conformance(name);
    theia::io::scene::mem::load_scene_dir(&dir).expect("conformance scene loads")
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn every_conformance_scene_is_identical_with_both_roms() {
    for name in CONFORMANCE_SCENES {
        let scene = conformance_scene(name);
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
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn other_core_counts_are_identical() {
    let scene = conformance_scene("scenes_example3");
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

/// scenes_example3 culled, and with the acceleration structure, is its Reference.ppm pixel
/// for pixel: the modes agree with the hardware, not merely with each other.
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn example3_culled_and_accelerated_is_its_reference() {
    let dir = common::conformance("scenes_example3");
    let scene = conformance_scene("scenes_example3");
    let reference = read_image(&dir.join("Reference.ppm")).expect("the reference reads");
    for accel in [AccelUse::Never, AccelUse::Always] {
        let options = RenderOptions {
            culling: true,
            accel,
            ..Default::default()
        };
        let rendered = render(&scene, &options).expect("renders");
        assert!(rendered.culled > 0, "{accel:?}: nothing was culled");
        assert!(
            Rgb8::from_frame(&rendered.frame) == reference,
            "{accel:?}: the image is not the reference"
        );
    }
}

/// Brute force, per-triangle culling and the acceleration structure each give every pixel
/// the closest hit (t, u, v) the independent model (tests/model) computes from the spec's
/// formulas.
#[test]
fn every_mode_shows_the_closest_hits_the_model_predicts() {
    let scene = small_sphere(48);
    let predicted = model::hits(&scene);
    let options = RenderOptions {
        imem: Some(model::hit_shader()),
        ..Default::default()
    };
    for (label, culling, accel) in [
        ("brute force", false, AccelUse::Never),
        ("culling", true, AccelUse::Never),
        ("structure", true, AccelUse::Always),
    ] {
        let rendered = render(
            &scene,
            &RenderOptions {
                culling,
                accel,
                ..options.clone()
            },
        )
        .expect("renders");
        assert_eq!(rendered.culled > 0, culling, "{label}");
        assert_eq!(rendered.accel, Ok(accel == AccelUse::Always), "{label}");
        let hits = model::assert_words_show_hits(label, &predicted, &rendered.frame.words);
        assert!(
            hits > 500 && hits < predicted.len() - 500,
            "{label}: {hits} hits"
        );
    }
}

fn address(name: &str) -> u16 {
    register_address(name).unwrap_or_else(|| panic!("{name} is a register"))
}

/// An instruction memory: the default entry table with `entry` at 0x800C, then `code`.
fn imem_with(entry: EntryPoint, code: &[Word]) -> Vec<Word> {
    let mut imem: Vec<Word> = EntryPoint::ALL
        .iter()
        .map(|e| Word(e.default_address() as u64))
        .collect();
    imem[entry as usize] = Word(0x800C);
    imem.extend_from_slice(code);
    imem
}

/// A pixel shader that outputs a mix of everything a skipped MAIN writes (BIU's
/// intermediate values of the last triangle, R1..R3, t, u, v): culling must reproduce
/// them, not merely the image.
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn a_shader_reading_biu_registers_sees_the_same_values() {
    let scene = conformance_scene("scenes_example3");
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let options = RenderOptions {
            rom,
            imem: Some(biu_reading_shader()),
            ..Default::default()
        };
        let label = format!("BIU-reading shader ({})", rom.name());
        let on = assert_identical(&scene, &options, &label);
        // The shader's output really depends on per-pixel BIU state.
        let mut distinct = on.frame.words.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert!(
            distinct.len() > 1000,
            "{label}: {} distinct words",
            distinct.len()
        );
    }
}

/// MAIN replaced by user code (the same algorithm at 0x800C): culling is refused, and the
/// frame is the ROM's.
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn a_user_main_refuses_culling() {
    let scene = conformance_scene("scenes_example3");
    let code = [
        Word::type2(Opcode::Call, 157, 0),
        Word::type1(Opcode::Jeqx, 0x8011, address("R99"), address("CREG_ZERO")),
        Word::type2(Opcode::Call, 190, 0),
        Word::type1(Opcode::Nop, 0, 0, 0),
        Word::type2(Opcode::Return, 0, 1),
        Word::type2(Opcode::Return, 0, 0),
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
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn the_watchdog_fires_at_the_same_instruction() {
    let scene = conformance_scene("scenes_example3");
    let cases = [RomVariant::Faithful, RomVariant::Fixed]
        .into_iter()
        .flat_map(|rom| [1_000, 2_345].map(|max_steps| (rom, max_steps)));
    for (rom, max_steps) in cases {
        let options = RenderOptions {
            rom,
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
    let spin = [Word::type1(Opcode::Jmp, 0x800C, 0, 0)];
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
    common::generated_scene(text, &options)
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
            let (culler, accel) = structure(&machine, name);
            check_tile_claims(culler, &accel, scene.triangles.len(), scene.height())
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            println!("{name}: {:.1} candidates per tile", accel.mean_candidates());
            let options = RenderOptions {
                imem: Some(biu_reading_shader()),
                ..options
            };
            let label = format!("{name} ({}), BIU-reading shader", rom.name());
            assert_identical(&scene, &options, &label);
        }
    }
}

/// A pixel shader that outputs a mix of everything a skipped MAIN writes.
fn biu_reading_shader() -> Vec<Word> {
    let acc = address("R4");
    let mut code = vec![Word::type1(
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
        "R5",
        "R6",
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
        code.push(Word::type1(Opcode::Add, acc, acc, address(name)));
    }
    code.push(Word::type1(
        Opcode::Omwrite,
        address("OREG_PIXEL_COLOR"),
        address("CREG_CURRENT_OUTPUT_PIXEL"),
        acc,
    ));
    code.push(Word::type2(Opcode::Return, 0, 1));
    imem_with(EntryPoint::PixelShader, &code)
}

/// A mesh of at least 65,000 small triangles (the scale): identical in all three
/// modes, leftover registers included, and every tile's claims hold at every pixel.
#[test]
fn a_mesh_of_81920_triangles_is_identical_in_all_three_modes() {
    let scene = generated(&displaced_icosphere_obj(6, 0.08), 20, true);
    assert_eq!(scene.triangles.len(), 81_920);
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let label = format!("81,920 triangles ({})", rom.name());
        let options = RenderOptions {
            rom,
            ..Default::default()
        };
        let render = assert_identical(&scene, &options, &label);
        assert!(render.frame.hits.iter().any(|hit| *hit != PixelHit::Miss));
        let options = RenderOptions {
            imem: Some(biu_reading_shader()),
            ..options
        };
        assert_identical(&scene, &options, &format!("{label}, BIU-reading shader"));
        assert_claims_hold(&scene, rom, &label);
    }
}

/// Every tile's claim (a triangle it skips is rejected, at the exit it books) checked
/// against the exact verdict at every pixel.
fn assert_claims_hold(scene: &Scene, rom: RomVariant, label: &str) {
    let machine = machine_with_structure(scene, rom);
    let (culler, accel) = structure(&machine, label);
    check_tile_claims(culler, &accel, scene.triangles.len(), scene.height())
        .unwrap_or_else(|e| panic!("{label}: {e}"));
}

/// Q15.17 raw word of a coordinate.
fn q(value: f64) -> u32 {
    (value * 131072.0).round() as i32 as u32
}

/// A square scene of `size` pixels whose camera and projection window come from a fitted
/// unit sphere, holding `triangles` (world coordinates) instead.
fn scene_of(triangles: &[[[f64; 3]; 3]], size: u32) -> Scene {
    let mut scene = generated(&uv_sphere_obj(8, 4), size, true);
    let template = scene.triangles[0];
    scene.triangles = triangles
        .iter()
        .map(|vertices| {
            let mut record = template;
            for (k, vertex) in vertices.iter().enumerate() {
                record[2 * k] = vertex.map(q);
            }
            record
        })
        .collect();
    scene
}

/// Where the template scene's camera is, and where it looks (its fitted sphere's centre
/// and radius), in world units.
fn template_view() -> ([f64; 3], [f64; 3], f64) {
    let scene = generated(&uv_sphere_obj(8, 4), 8, true);
    let camera = scene.config[theia::io::scene::config_row::CAMERA_POSITION]
        .map(|w| f64::from(w as i32) / 131072.0);
    let (mut lo, mut hi) = ([f64::MAX; 3], [f64::MIN; 3]);
    for triangle in &scene.triangles {
        for vertex in [triangle[0], triangle[2], triangle[4]] {
            for i in 0..3 {
                let v = f64::from(vertex[i] as i32) / 131072.0;
                lo[i] = lo[i].min(v);
                hi[i] = hi[i].max(v);
            }
        }
    }
    let centre = std::array::from_fn(|i| (lo[i] + hi[i]) / 2.0);
    (camera, centre, (hi[0] - lo[0]) / 2.0)
}

fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|i| a[i] + b[i])
}

fn scale(a: [f64; 3], s: f64) -> [f64; 3] {
    a.map(|v| v * s)
}

/// A hit the hardware reports only because u + v wrapped, built for one pixel: a
/// triangle facing the ray, 0.1 wide and about 820 away from it, so that BIU's u and v
/// are both near 8192.0 and their sum passes 16384.0, where ADD wraps it into [0, 1].
/// The triangle slides in small steps until the ALU's own u + v lands there. Every mode
/// must show the hit, and the structure must keep the triangle a candidate only where
/// its verdict is unsettled.
#[test]
fn a_hit_through_wrap_around_is_the_same_in_every_mode() {
    let size = 16;
    let (camera, _, _) = template_view();
    let probe = scene_of(&[[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], size);
    let machine = machine_with_structure(&probe, RomVariant::Faithful);
    let raw_ray = structure(&machine, "probe").1.ray(8, 8).unwrap();
    let ray = normalise(raw_ray.map(|w| f64::from(w as i32)));
    let a = normalise(cross(ray, [0.0, 1.0, 0.0]));
    let b = cross(ray, a);
    let hit_point = add(camera, scale(ray, 50.0));
    let edge = 0.1;
    let mut found = None;
    for step in 0..4000 {
        // u and v near 8185 + 0.0025·step (truncation adds a few units): u + v crosses 16384.
        let offset = (8185.0 + 0.0025 * step as f64) * edge;
        let v0 = add(hit_point, scale(add(a, b), -offset));
        let triangle = [v0, add(v0, scale(a, edge)), add(v0, scale(b, edge))];
        let scene = scene_of(&[triangle], size);
        let machine = Machine::new(&scene, &RenderOptions::default()).expect("starts");
        let culler = machine.culler().expect("culling applies");
        let biu = culler.reject_state(0, raw_ray);
        if theia::emu::machine::cull::exact_verdict(biu.h2, biu.h3, biu.delta).is_none()
            && (biu.u as i32) > (1 << 17)
        {
            found = Some(scene);
            break;
        }
    }
    let scene = found.expect("the slide passes u + v = 16384.0");
    let render = assert_identical(&scene, &RenderOptions::default(), "wrap-around hit");
    assert_eq!(
        render.frame.hits[8 * size as usize + 8],
        PixelHit::Artifact(Artifact::WrappedSum),
        "pixel (8, 8) shows a hit only u + v wrapping made"
    );
    assert_claims_hold(&scene, RomVariant::Faithful, "wrap-around hit");
}

/// A triangle the bound cannot cover (its vertex 12,000 units from the camera, beyond the
/// multiplier's exact range) is a candidate at every tile, and the frame stays the plain
/// path's.
#[test]
fn an_unbounded_triangle_is_a_candidate_everywhere() {
    let size = 16;
    let (camera, centre, radius) = template_view();
    let near = [
        add(centre, [-radius, -radius, 0.0]),
        add(centre, [radius, -radius, 0.0]),
        add(centre, [0.0, radius, 0.0]),
    ];
    let far_corner = add(camera, [12000.0, 0.0, 0.0]);
    let far = [
        far_corner,
        add(far_corner, [0.0, 1.0, 0.0]),
        add(far_corner, [0.0, 0.0, 1.0]),
    ];
    let scene = scene_of(&[near, far], size);
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let machine = machine_with_structure(&scene, rom);
        let (_, accel) = structure(&machine, "an unbounded triangle");
        for y in 0..size {
            for x in 0..size {
                assert!(
                    accel.tile(x, y).1.contains(&1),
                    "pixel ({x}, {y}), {}: the unbounded triangle is not a candidate",
                    rom.name()
                );
            }
        }
        let options = RenderOptions {
            rom,
            ..Default::default()
        };
        assert_identical(&scene, &options, "an unbounded triangle");
        assert_claims_hold(&scene, rom, "an unbounded triangle");
    }
}

fn normalise(v: [f64; 3]) -> [f64; 3] {
    let length = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
    v.map(|c| c / length)
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

/// One random triangle: its kind, nine coordinates in [-1, 1] and a size exponent.
type RandomTriangle = (u8, [f64; 9], i32);

/// World-space vertices of a random triangle near the template's view: ordinary, tiny,
/// degenerate (a repeated vertex or three collinear ones), or nearly parallel to the rays
/// (its plane holds the line from the camera through a vertex, tilted by a hair).
fn random_triangle(
    (kind, c, exponent): RandomTriangle,
    camera: [f64; 3],
    centre: [f64; 3],
    radius: f64,
) -> [[f64; 3]; 3] {
    let size = radius * 2f64.powi(exponent);
    let v0 = add(centre, [c[0] * radius, c[1] * radius, c[2] * radius]);
    let a = [c[3] * size, c[4] * size, c[5] * size];
    let b = [c[6] * size, c[7] * size, c[8] * size];
    match kind % 4 {
        0 => [v0, add(v0, a), add(v0, b)],
        1 => [v0, add(v0, scale(a, 1e-3)), add(v0, scale(b, 1e-3))],
        2 if c[8] > 0.0 => [v0, v0, add(v0, b)],
        2 => [v0, add(v0, a), add(v0, scale(a, 2.0))],
        _ => {
            let along = add(v0, scale(camera, -1.0));
            let v2 = add(add(v0, scale(along, c[6] * 0.5)), scale(b, 1e-4));
            [v0, add(v0, a), v2]
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 200,
        ..Default::default()
    })]

    /// Random small scenes, cameras and triangle sizes: what the structure prunes, brute
    /// force rejects at every pixel, and frames (with a BIU-reading shader: the leftover
    /// registers too) and instruction counts equal brute force's.
    #[test]
    fn pruning_random_scenes_matches_brute_force(
        triangles in proptest::collection::vec(
            (0u8..4, proptest::array::uniform9(-1.0f64..1.0), -8i32..2),
            1..8,
        ),
        camera_shift in proptest::array::uniform3(-0.5f64..0.5),
        fixed_rom: bool,
        reads_biu: bool,
    ) {
        let (camera, centre, radius) = template_view();
        let camera = add(camera, scale(camera_shift, radius));
        let vertices: Vec<_> = triangles
            .iter()
            .map(|&t| random_triangle(t, camera, centre, radius))
            .collect();
        let mut scene = scene_of(&vertices, 8);
        scene.config[theia::io::scene::config_row::CAMERA_POSITION] = camera.map(q);
        let options = RenderOptions {
            rom: if fixed_rom { RomVariant::Fixed } else { RomVariant::Faithful },
            imem: reads_biu.then(biu_reading_shader),
            ..Default::default()
        };
        let brute = render_with(&scene, &options, false);
        let pruned = render_accelerated(&scene, &options);
        proptest::prop_assert_eq!(&pruned.accel, &Ok(true));
        proptest::prop_assert!(pruned.frame == brute.frame, "the frames differ");
        if pruned.instructions_exact {
            proptest::prop_assert_eq!(pruned.instructions, brute.instructions);
        }
        assert_claims_hold(&scene, options.rom, "random scene");
    }
}

/// A render with the structure built in batches of `batch_candidates` candidates.
fn render_in_batches(
    scene: &Scene,
    options: &RenderOptions,
    batch_candidates: u64,
) -> Result<Render, String> {
    let options = RenderOptions {
        accel: AccelUse::Always,
        ..options.clone()
    };
    Machine::with_batches(scene, &options, batch_candidates)
        .map_err(|e| e.to_string())?
        .render(None)
        .map_err(|e| e.to_string())
}

/// Batches of tile rows change nothing: the frame, the hits, the instruction count (or
/// its bound), the culled MAIN runs and the watchdog's stops are those of the whole
/// frame's structure, for cores whose bands share tile rows, for a band of the cores, and
/// for a BIU-reading shader.
#[test]
fn batches_of_tile_rows_change_nothing() {
    let scene = generated(&displaced_icosphere_obj(5, 0.08), 26, true);
    let biu_reading = RenderOptions {
        imem: Some(biu_reading_shader()),
        ..Default::default()
    };
    let cases = [
        ("4 cores", RenderOptions::default()),
        (
            "3 cores (bands of 9, 9 and 8 rows)",
            RenderOptions {
                cores: Some(3),
                ..Default::default()
            },
        ),
        (
            "5 cores, the second band of 2",
            RenderOptions {
                cores: Some(5),
                band: Some(theia::emu::machine::Band { index: 1, count: 2 }),
                ..Default::default()
            },
        ),
        ("a BIU-reading shader", biu_reading),
    ];
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        for (label, options) in &cases {
            let options = RenderOptions {
                rom,
                ..options.clone()
            };
            let label = format!("{label} ({})", rom.name());
            let whole = render_in_batches(&scene, &options, u64::MAX).expect("renders");
            assert_eq!(whole.structure.map(|s| s.batches), Some(1), "{label}");
            // The fixed ROM's pruned structure holds far fewer candidates: larger budgets
            // may take it in one batch.
            for budget in [1, 500, 5_000, 40_000] {
                let batched = render_in_batches(&scene, &options, budget).expect("renders");
                let batches = batched.structure.expect("used").batches;
                assert!(batches > 1 || budget > 1, "{label}: {budget}: one batch");
                assert!(
                    batched.frame == whole.frame,
                    "{label}: {budget}: frames differ"
                );
                assert_eq!(
                    batched.instructions, whole.instructions,
                    "{label}: {budget}"
                );
                assert_eq!(
                    batched.instructions_exact, whole.instructions_exact,
                    "{label}: {budget}"
                );
                assert_eq!(batched.culled, whole.culled, "{label}: {budget}");
                assert_eq!(batched.accel, Ok(true), "{label}: {budget}");
                println!("{label}: {budget} candidates a batch: {batches} batches, identical");
            }
        }
    }
    // The watchdog stops the same pixel at the same instruction, and a shader that never
    // returns is caught where brute force catches it.
    let spin = [Word::type1(Opcode::Jmp, 0x800C, 0, 0)];
    for options in [
        RenderOptions {
            max_steps: Some(20_000),
            ..Default::default()
        },
        RenderOptions {
            imem: Some(imem_with(EntryPoint::PixelShader, &spin)),
            max_steps: Some(50_000),
            ..Default::default()
        },
    ] {
        let exact = render(
            &scene,
            &RenderOptions {
                culling: false,
                ..options.clone()
            },
        )
        .expect_err("stops")
        .to_string();
        for budget in [1, 5_000, u64::MAX] {
            let error = render_in_batches(&scene, &options, budget).expect_err("stops");
            assert_eq!(error, exact, "{budget}");
        }
    }
}

/// Every tile of a batch is the whole frame's tile: the same candidates and the same
/// skipped exits, whichever rows the batch holds.
#[test]
fn a_batch_holds_the_whole_frames_tiles() {
    let scene = generated(&displaced_icosphere_obj(5, 0.08), 26, true);
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        assert_batches_hold_the_whole_frames_tiles(&scene, rom);
    }
}

fn assert_batches_hold_the_whole_frames_tiles(scene: &Scene, rom: RomVariant) {
    let machine = machine_with_structure(scene, rom);
    let (culler, whole) = structure(&machine, "whole");
    let Ok(Some(frame)) = machine.accel() else {
        panic!("no structure");
    };
    let rows = frame.tree.tile_rows();
    for wanted in [
        vec![0],
        vec![rows - 1],
        vec![1, 2],
        vec![0, 3, 5],
        (0..rows).collect(),
    ] {
        let mut flags = vec![false; rows as usize];
        for &row in &wanted {
            flags[row as usize] = true;
        }
        let batch = frame.tree.build(culler, &flags);
        for y in 0..scene.height() {
            for x in 0..scene.width() {
                let row = frame.tree.tile_row(y).expect("in the tree");
                assert_eq!(batch.covers(x, y), flags[row as usize], "({x}, {y})");
                if batch.covers(x, y) {
                    // Equal but for where the candidates start in each structure.
                    let tile = |accel: &Accel| {
                        let (tile, candidates) = accel.tile(x, y);
                        let tile = Tile { start: 0, ..*tile };
                        (tile, candidates.to_vec())
                    };
                    let label = rom.name();
                    assert!(
                        tile(&batch) == tile(&whole),
                        "{label}: ({x}, {y}) {wanted:?}"
                    );
                    assert_eq!(batch.ray(x, y), whole.ray(x, y));
                }
            }
        }
        check_tile_claims(culler, &batch, scene.triangles.len(), scene.height())
            .unwrap_or_else(|e| panic!("{wanted:?}: {e}"));
    }
}

/// The structure is the same however many threads build it: its parts (a few per thread)
/// are bucketed by ranges of 256 tiles, and a 104x104 frame has 676 tiles, three ranges
/// (the last one short), so candidates cross the ranges' edges.
#[test]
fn the_structure_does_not_depend_on_the_threads() {
    let scene = generated(&displaced_icosphere_obj(4, 0.1), 104, true);
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let built = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool");
            pool.install(|| {
                let machine = machine_with_structure(&scene, rom);
                let (culler, accel) = structure(&machine, rom.name());
                check_tile_claims(culler, &accel, scene.triangles.len(), scene.height())
                    .unwrap_or_else(|e| panic!("{}, {threads} threads: {e}", rom.name()));
                (0..scene.height())
                    .flat_map(|y| (0..scene.width()).map(move |x| (x, y)))
                    .map(|(x, y)| {
                        let (tile, candidates) = accel.tile(x, y);
                        (*tile, candidates.to_vec())
                    })
                    .collect::<Vec<_>>()
            })
        };
        let one = built(1);
        assert!(
            one.iter().any(|(_, candidates)| candidates.len() > 1),
            "{}: no tile with several candidates",
            rom.name()
        );
        for threads in [3, 8] {
            assert!(built(threads) == one, "{}, {threads} threads", rom.name());
        }
    }
}

/// A wall of 128 small coplanar triangles in front of 600 small ones (half listed before
/// the wall, half after, the last one behind it too): with the fixed ROM the structure
/// skips the hidden ones wherever the wall's pieces together cover a tile, and the frame,
/// leftover registers included, is the one every mode renders.
#[test]
fn triangles_behind_a_covering_wall_are_skipped_with_the_same_frame() {
    let size = 48;
    let (camera, centre, radius) = template_view();
    let dir = normalise(add(centre, scale(camera, -1.0)));
    let a = normalise(cross(dir, [0.0, 1.0, 0.0]));
    let b = cross(a, dir);
    let at = |s: f64, t: f64, depth: f64| {
        add(
            add(centre, scale(dir, depth * radius)),
            add(scale(a, s * radius), scale(b, t * radius)),
        )
    };
    let mut wall = Vec::new();
    let cells = 8;
    for i in 0..cells {
        for j in 0..cells {
            let step = 1.6 / cells as f64;
            let (s, t) = (-0.8 + i as f64 * step, -0.8 + j as f64 * step);
            let corner = |di: f64, dj: f64| at(s + di * step, t + dj * step, -0.2);
            wall.push([corner(0.0, 0.0), corner(1.0, 0.0), corner(1.0, 1.0)]);
            wall.push([corner(0.0, 0.0), corner(1.0, 1.0), corner(0.0, 1.0)]);
        }
    }
    let mut behind = Vec::new();
    for n in 0..600 {
        let (s, t) = (
            (n % 25) as f64 / 25.0 * 1.4 - 0.7,
            (n / 25) as f64 / 24.0 * 1.4 - 0.7,
        );
        let depth = 0.3 + 0.5 * ((n * 7) % 11) as f64 / 11.0;
        let small = 0.06;
        behind.push([
            at(s, t, depth),
            at(s + small, t, depth),
            at(s, t + small, depth),
        ]);
    }
    let triangles: Vec<_> = behind[..300]
        .iter()
        .chain(&wall)
        .chain(&behind[300..])
        .copied()
        .collect();
    let scene = scene_of(&triangles, size);
    let options = RenderOptions {
        rom: RomVariant::Fixed,
        ..Default::default()
    };
    let label = "behind a wall";
    assert_identical(&scene, &options, label);
    let reading = RenderOptions {
        imem: Some(biu_reading_shader()),
        ..options
    };
    assert_identical(&scene, &reading, &format!("{label}, BIU-reading shader"));
    assert_claims_hold(&scene, RomVariant::Fixed, label);
    // Where the wall covers every pixel of a tile, no triangle behind it is a candidate
    // but the last one (whose MAIN leaves the pixel's state).
    let machine = machine_with_structure(&scene, RomVariant::Fixed);
    let (culler, accel) = structure(&machine, label);
    let is_wall = |index: usize| (300..300 + wall.len()).contains(&index);
    let last = triangles.len() - 1;
    let mut covered_tiles = 0;
    for ty in (0..size).step_by(4) {
        for tx in (0..size).step_by(4) {
            let covered = (0..16).all(|p| {
                let ray = accel.ray(tx + p % 4, ty + p / 4).unwrap();
                (0..triangles.len()).any(|i| is_wall(i) && culler.fixed_hit(i, ray).is_some())
            });
            if !covered {
                continue;
            }
            covered_tiles += 1;
            let (_, candidates) = accel.tile(tx, ty);
            let hidden: Vec<_> = candidates
                .iter()
                .map(|&i| i as usize)
                .filter(|&i| !is_wall(i) && i != last)
                .collect();
            assert!(hidden.is_empty(), "tile ({tx}, {ty}) keeps {hidden:?}");
        }
    }
    assert!(covered_tiles >= 40, "{covered_tiles} tiles covered");
}
