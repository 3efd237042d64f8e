//! The example shaders in shaders/: each assembles cleanly, the tutorial's three give the
//! spec's words (isa_and_formats §7), and each renders to pixels predicted without running
//! it: from the plain render's colour words, or from the independent model of the ROM's ray
//! and closest hit (tests/model).

use crate::common;
use crate::model;

use std::path::{Path, PathBuf};

use model::{as_f64, hits, lanes2, primary_ray, texture_coordinates, Hit, START_T};
use theia::emu::core::alu::{self, Vec3, ONE};
use theia::emu::isa::asm::{assemble, Assembly, MAX_USER_INSTRUCTIONS};
use theia::emu::isa::{EntryPoint, Word};
use theia::emu::machine::{render, Frame, RenderOptions};
use theia::io::image::channel_byte;
use theia::io::scene::generate::{displaced_icosphere_obj, uv_sphere_obj};
use theia::io::scene::mem::load_scene_dir;
use theia::io::scene::obj::{default_scene, load_obj_text, MemoryAssets, ObjOptions};
use theia::io::scene::Scene;

fn shader_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("shaders")
        .join(name)
}

fn shader(name: &str) -> Assembly {
    let path = shader_path(name);
    let source = std::fs::read_to_string(&path).unwrap();
    let assembly = assemble(&source, &path).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        assembly.warnings.is_empty(),
        "{name}: {:?}",
        assembly.warnings
    );
    assembly
}

fn conformance(name: &str) -> (&str, Scene) {
    (name, load_scene_dir(&common::conformance(name)).unwrap())
}

/// The built-in scene, small enough for a test.
fn default_scene_small() -> Scene {
    let options = ObjOptions {
        width: 96,
        height: 96,
        ..ObjOptions::default()
    };
    default_scene::load(&options).unwrap().scene
}

fn frame(scene: &Scene, imem: Option<Vec<Word>>) -> Frame {
    let options = RenderOptions {
        imem,
        ..RenderOptions::default()
    };
    render(scene, &options).unwrap().frame
}

fn with_shader(scene: &Scene, name: &str) -> Frame {
    frame(scene, Some(shader(name).imem))
}

/// The output words of pixel `k` (row-major).
fn pixel(frame: &Frame, k: usize) -> Vec3 {
    [
        frame.words[3 * k],
        frame.words[3 * k + 1],
        frame.words[3 * k + 2],
    ]
}

/// Every pixel of `shaded` equals `expected(k, plain words of k)` (and was written).
fn assert_pixels(
    name: &str,
    plain: &Frame,
    shaded: &Frame,
    expected: impl Fn(usize, Vec3) -> Vec3,
) {
    assert_eq!(shaded.unwritten_pixels(), 0, "{name}");
    let pixels = (plain.width * plain.height) as usize;
    for k in 0..pixels {
        let want = expected(k, pixel(plain, k));
        let (x, y) = (k as u32 % plain.width, k as u32 / plain.width);
        assert_eq!(pixel(shaded, k), want, "{name}: pixel ({x}, {y})");
    }
}

/// The code words of a user program as the spec lists them (entry table first).
fn imem_words(assembly: &Assembly) -> Vec<u64> {
    assembly.imem.iter().map(|w| w.0).collect()
}

fn default_table(overrides: &[(EntryPoint, u64)]) -> Vec<u64> {
    EntryPoint::ALL
        .iter()
        .map(|&e| {
            overrides
                .iter()
                .find(|(o, _)| *o == e)
                .map_or(u64::from(e.default_address()), |&(_, a)| a)
        })
        .collect()
}

/// A Q15.17 constant as the assembler rounds a decimal (to nearest).
fn q(value: f64) -> u32 {
    (value * 131072.0).round() as i32 as u32
}

#[test]
fn every_example_shader_assembles_cleanly_and_says_how_to_run_it() {
    let mut names: Vec<String> = std::fs::read_dir(shader_path(""))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".shdr"))
        .collect();
    names.sort();
    assert!(names.len() >= 6, "{names:?}");
    for name in &names {
        let assembly = shader(name);
        assert!(
            assembly.code().len() <= MAX_USER_INSTRUCTIONS,
            "{name}: {} instructions",
            assembly.code().len()
        );
        let source = std::fs::read_to_string(shader_path(name)).unwrap();
        assert!(
            source.starts_with(&format!("// {name}: ")),
            "{name} starts with a header comment naming it"
        );
        assert!(
            source.contains(&format!("theia render --shader shaders/{name}")),
            "{name} says how to run it"
        );
        assert!(source.contains("What it shows"), "{name}");
    }
}

#[test]
fn the_tutorial_shaders_assemble_to_the_spec_words() {
    let mut example1 = default_table(&[(EntryPoint::PixelShader, 0x800C)]);
    example1.extend([0x002F_0080_0078_006E, 0x0040_0000_0000_0001]);
    assert_eq!(imem_words(&shader("passthrough.shdr")), example1);

    let mut example2 = default_table(&[
        (EntryPoint::UserConstants, 0x800C),
        (EntryPoint::PixelShader, 0x8010),
    ]);
    example2.extend([
        0x0041_0040_0002_0000,
        0x0042_0040_0002_0000,
        0x0043_0040_0004_0000,
        0x0040_0000_0000_0001,
        0x0004_006E_006E_0040,
        0x002F_0080_0078_006E,
        0x0040_0000_0000_0001,
    ]);
    assert_eq!(imem_words(&shader("double_blue.shdr")), example2);

    let mut example3 = default_table(&[
        (EntryPoint::UserConstants, 0x800C),
        (EntryPoint::PixelShader, 0x800F),
    ]);
    example3.extend([
        0x0041_0040_0000_6666,
        0x0042_0040_0001_CCCC,
        0x0040_0000_0000_0001,
        0x0005_0047_006E_0000,
        0x0009_8016_0047_0040,
        0x0014_8016_0047_0040,
        0x0041_0048_0002_0000,
        0x0044_0048_0000_0000,
        0x002F_0080_0078_0048,
        0x0040_0000_0000_0001,
        0x000F_0048_0000_0000,
        0x002F_0080_0078_0048,
        0x0040_0000_0000_0001,
    ]);
    assert_eq!(imem_words(&shader("threshold.shdr")), example3);
}

#[test]
fn passthrough_renders_exactly_like_no_shader() {
    let scene = default_scene_small();
    assert_eq!(frame(&scene, None), with_shader(&scene, "passthrough.shdr"));
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn passthrough_is_the_program_scenes_example1_ships() {
    let (_, scene) = conformance("scenes_example1");
    // The scene ships the same program as its Instructions.mem.
    let shipped: Vec<u64> = scene
        .program
        .as_ref()
        .unwrap()
        .iter()
        .map(|w| w.0)
        .collect();
    assert_eq!(shipped, imem_words(&shader("passthrough.shdr")));
    let plain = frame(
        &Scene {
            program: None,
            ..scene.clone()
        },
        None,
    );
    assert_eq!(plain, with_shader(&scene, "passthrough.shdr"));
}

/// Blue doubled: the word relation is exact (doubling a non-negative Q15.17 word loses
/// nothing); the byte is min(255, (2·word) >> 9), which is not always 2·(plain byte).
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn double_blue_doubles_the_blue_word_exactly() {
    let (_, scene) = conformance("scenes_example1");
    let plain = frame(&scene, None);
    let shaded = with_shader(&scene, "double_blue.shdr");
    assert!(plain.words.iter().all(|&w| (w as i32) >= 0 && w < 1 << 30));
    assert_pixels("double_blue", &plain, &shaded, |_, [r, g, b]| [r, g, 2 * b]);
    let mut odd_bytes = 0;
    for k in 0..(plain.width * plain.height) as usize {
        let blue = plain.words[3 * k + 2];
        let byte = channel_byte(shaded.words[3 * k + 2]);
        assert_eq!(u32::from(byte), ((2 * blue) >> 9).min(255));
        let naive = (2 * u32::from(channel_byte(blue))).min(255);
        odd_bytes += usize::from(u32::from(byte) != naive);
    }
    println!("double_blue: {odd_bytes} pixels are 2·B + 1 rather than 2·B");
    assert!(odd_bytes > 0, "the truncation to bytes shows somewhere");
}

/// floor(sqrt(x)) of a 128-bit integer.
fn isqrt(x: u128) -> u128 {
    let mut root = (x as f64).sqrt() as u128;
    while root * root > x {
        root -= 1;
    }
    while (root + 1) * (root + 1) <= x {
        root += 1;
    }
    root
}

/// |c| of a colour with non-negative lanes as MAG computes it: each square truncated to
/// Q15.17, the sum's square root in Q15.17 (floor).
fn magnitude(c: Vec3) -> u32 {
    let squares: u128 = c
        .iter()
        .map(|&w| (u128::from(w) * u128::from(w)) >> 17)
        .sum();
    isqrt(squares << 17) as u32
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn threshold_is_white_between_0_2_and_0_9_of_brightness() {
    let (_, scene) = conformance("scenes_example1");
    let plain = frame(&scene, None);
    let shaded = with_shader(&scene, "threshold.shdr");
    let (dark, bright) = (0x6666, 0x1CCCC);
    let mut whites = 0;
    assert_pixels("threshold", &plain, &shaded, |_, colour| {
        let m = magnitude(colour);
        if m <= dark || m >= bright {
            [0; 3]
        } else {
            [ONE; 3]
        }
    });
    for k in 0..(plain.width * plain.height) as usize {
        whites += usize::from(pixel(&shaded, k) == [ONE; 3]);
    }
    let pixels = (plain.width * plain.height) as usize;
    println!("threshold: {whites} white pixels of {pixels}");
    assert!(
        whites > 1000 && whites < pixels - 1000,
        "both colours occur"
    );
}

/// Depth: (far − t) / (far − near) from the model's closest hit; black beyond far.
#[test]
fn depth_is_a_linear_ramp_of_the_closest_hit_distance() {
    check_depth_ramp(&[("default", default_scene_small())]);
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn depth_is_a_linear_ramp_in_scenes_example3() {
    check_depth_ramp(&[conformance("scenes_example3")]);
}

fn check_depth_ramp(scenes: &[(&str, Scene)]) {
    let assembly = shader("depth.shdr");
    let (far, inverse_range) = (q(40.0), q(1.0 / 32.0));
    // The constants the test assumes are the ones in the shader.
    let code = imem_words(&assembly);
    assert!(code.contains(&(0x0041_0040_0000_0000 | u64::from(far))));
    assert!(code.contains(&(0x0041_0041_0000_0000 | u64::from(inverse_range))));
    let expected = |hit: Option<Hit>| match hit {
        Some(hit) if !model::at_least(hit.t, far) => {
            [alu::mul(alu::sub(far, hit.t), inverse_range); 3]
        }
        _ => [0; 3],
    };
    for (name, scene) in scenes {
        let plain = frame(scene, None);
        let shaded = frame(scene, Some(assembly.imem.clone()));
        let hits = hits(scene);
        assert!(hits.iter().flatten().count() > 1000, "{name}");
        assert_pixels(name, &plain, &shaded, |k, _| expected(hits[k]));
        // And in real numbers: grey = (40 - t) / 32 within rounding, for hits before far.
        for (k, hit) in hits.iter().enumerate() {
            if let Some(hit) = hit.filter(|hit| !model::at_least(hit.t, far)) {
                let grey = as_f64(shaded.words[3 * k]);
                let real = (40.0 - as_f64(hit.t)) / 32.0;
                assert!((grey - real).abs() < 1e-3, "{name}: {grey} vs {real}");
            }
        }
    }
}

#[test]
fn depth_paints_misses_black_because_last_t_keeps_250() {
    // A sphere with background around it (the built-in scene has no misses by design).
    let options = ObjOptions {
        width: 64,
        height: 64,
        ..ObjOptions::default()
    };
    let sphere = uv_sphere_obj(16, 8);
    let scene = load_obj_text(
        &sphere,
        Path::new("sphere.obj"),
        &MemoryAssets(&[]),
        &options,
    )
    .unwrap()
    .scene;
    let shaded = with_shader(&scene, "depth.shdr");
    let hits = hits(&scene);
    let misses: Vec<usize> = (0..hits.len()).filter(|&k| hits[k].is_none()).collect();
    assert!(misses.len() > 1000);
    assert_eq!(START_T, q(250.0));
    for k in misses {
        assert_eq!(pixel(&shaded, k), [0; 3]);
    }
}

/// UV: (s, t, 0) = TCC's interpolation of the hit triangle's texture coordinates.
#[test]
fn uv_shows_the_interpolated_texture_coordinates() {
    check_uv(&[("default", default_scene_small())]);
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn uv_shows_the_texture_coordinates_of_scenes_example1() {
    let example1 = conformance("scenes_example1");
    check_uv(std::slice::from_ref(&example1));
    // The quad of scenes_example1 spans the whole texture: s runs from about 0 to 1.0.
    let shaded = with_shader(&example1.1, "uv.shdr");
    let reds: Vec<u8> = (0..40000)
        .map(|k| channel_byte(shaded.words[3 * k]))
        .collect();
    assert!(reds.iter().max() >= Some(&250), "{:?}", reds.iter().max());
    assert!(reds.iter().any(|&r| r <= 5));
}

fn check_uv(scenes: &[(&str, Scene)]) {
    for (name, scene) in scenes {
        let plain = frame(scene, None);
        let shaded = with_shader(scene, "uv.shdr");
        let hits = hits(scene);
        assert_pixels(name, &plain, &shaded, |k, _| match &hits[k] {
            Some(hit) => {
                let [s, t, _] = texture_coordinates(scene, hit);
                [s, t, 0]
            }
            None => [0; 3],
        });
    }
}

/// Checker: odd squares of (8s, 8t) keep the texture colour, even ones get 30 % of it.
#[test]
fn checker_alternates_on_the_parity_of_the_scaled_coordinates() {
    check_checker(&[("default", default_scene_small())]);
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn checker_alternates_in_scenes_example1() {
    check_checker(&[conformance("scenes_example1")]);
}

fn check_checker(scenes: &[(&str, Scene)]) {
    let (eight, dim) = (q(8.0), q(0.3));
    for (name, scene) in scenes {
        let plain = frame(scene, None);
        let shaded = with_shader(scene, "checker.shdr");
        let hits = hits(scene);
        let (mut odd, mut even) = (0, 0);
        assert_pixels(name, &plain, &shaded, |k, colour| match &hits[k] {
            Some(hit) => {
                let [s, t, _] = texture_coordinates(scene, hit);
                let column = (alu::mul(s, eight) as i32) >> 17;
                let row = (alu::mul(t, eight) as i32) >> 17;
                if (column + row) & 1 == 1 {
                    colour
                } else {
                    colour.map(|c| alu::mul(c, dim))
                }
            }
            None => [0; 3],
        });
        for hit in hits.iter().flatten() {
            let [s, t, _] = texture_coordinates(scene, hit);
            let parity = ((as_f64(s) * 8.0).floor() + (as_f64(t) * 8.0).floor()) as i64 & 1;
            if parity == 1 {
                odd += 1;
            } else {
                even += 1;
            }
        }
        assert!(odd > 500 && even > 500, "{name}: {odd} odd, {even} even");
    }
}

/// Wireframe: yellow where min(u, v, 1 − u − v) <= 0.03 (JLX is <=), texture elsewhere.
#[test]
fn wireframe_marks_points_near_the_edges() {
    check_wireframe(&[("default", default_scene_small())]);
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn wireframe_marks_the_edges_in_the_conformance_scenes() {
    check_wireframe(&[
        conformance("scenes_example1"),
        conformance("scenes_example3"),
    ]);
}

fn check_wireframe(scenes: &[(&str, Scene)]) {
    let width = q(0.03);
    let edge_colour = [ONE, q(0.85), q(0.1)];
    let at_most = |x: u32, y: u32| x as i32 <= y as i32;
    for (name, scene) in scenes {
        let plain = frame(scene, None);
        let shaded = with_shader(scene, "wireframe.shdr");
        let hits = hits(scene);
        let mut edges = 0;
        assert_pixels(name, &plain, &shaded, |k, colour| match &hits[k] {
            Some(hit) => {
                let w = alu::sub(ONE, alu::add(hit.u, hit.v));
                if at_most(hit.u, width) || at_most(hit.v, width) || at_most(w, width) {
                    edge_colour
                } else {
                    colour
                }
            }
            None => [0; 3],
        });
        for k in 0..hits.len() {
            edges += usize::from(pixel(&shaded, k) == edge_colour);
        }
        assert!(edges > 100, "{name}: {edges} edge pixels");
    }
}

/// Lambert: texture · (0.25 + 0.75 · max(0, n · l)), n the hit triangle's unit normal turned
/// towards the camera; checked bit for bit and against floating point.
#[test]
fn lambert_lights_the_texture_by_the_triangle_normal() {
    check_lambert(&[("default", default_scene_small())]);
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn lambert_lights_scenes_example3() {
    check_lambert(&[conformance("scenes_example3")]);
}

fn check_lambert(scenes: &[(&str, Scene)]) {
    let light = [q(0.36), q(0.48), q(0.8)];
    let (ambient, diffuse) = (q(0.25), q(0.75));
    for (name, scene) in scenes {
        let plain = frame(scene, None);
        let shaded = with_shader(scene, "lambert.shdr");
        let hits = hits(scene);
        let ray = |k: usize| primary_ray(scene, k as u32 % scene.width(), k as u32 / scene.width());
        let factor = |k: usize, hit: &Hit| {
            let record = hit.record(scene);
            let e1 = lanes2(record[2], record[0], alu::sub);
            let e2 = lanes2(record[4], record[0], alu::sub);
            let normal = alu::cross(e1, e2);
            let length = alu::vector_magnitude(normal);
            let mut n = normal.map(|c| alu::div(c, length));
            if alu::dot(n, ray(k)) as i32 > 0 {
                n = n.map(alu::neg);
            }
            let lit = alu::dot(n, light);
            let lit = if lit as i32 > 0 { lit } else { 0 };
            alu::add(alu::mul(lit, diffuse), ambient)
        };
        assert_pixels(name, &plain, &shaded, |k, colour| match &hits[k] {
            Some(hit) => {
                let f = factor(k, hit);
                colour.map(|c| alu::mul(c, f))
            }
            None => [0; 3],
        });
        // The same light in floating point, from the triangle's vertices.
        for (k, hit) in hits.iter().enumerate() {
            let Some(hit) = hit else { continue };
            let record = hit.record(scene);
            let v = |i: usize| record[i].map(as_f64);
            let (a, b) = (
                [v(2)[0] - v(0)[0], v(2)[1] - v(0)[1], v(2)[2] - v(0)[2]],
                [v(4)[0] - v(0)[0], v(4)[1] - v(0)[1], v(4)[2] - v(0)[2]],
            );
            let n = [
                a[1] * b[2] - a[2] * b[1],
                a[2] * b[0] - a[0] * b[2],
                a[0] * b[1] - a[1] * b[0],
            ];
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            let d = ray(k).map(as_f64);
            let facing = if n[0] * d[0] + n[1] * d[1] + n[2] * d[2] > 0.0 {
                -1.0
            } else {
                1.0
            };
            let lit = facing * (n[0] * 0.36 + n[1] * 0.48 + n[2] * 0.8) / len;
            let real = 0.25 + 0.75 * lit.max(0.0);
            let fixed = as_f64(factor(k, hit));
            assert!(
                (fixed - real).abs() < 2e-3,
                "{name}: pixel {k}: {fixed} vs {real}"
            );
        }
    }
}

/// An OBJ scene (textures from `assets`), lit (its default) or flat.
fn obj_scene(obj: &str, assets: &MemoryAssets, size: u32, flat: bool) -> Scene {
    let options = ObjOptions {
        width: size,
        height: size,
        flat,
        ..ObjOptions::default()
    };
    load_obj_text(obj, Path::new("model.obj"), assets, &options)
        .unwrap()
        .scene
}

/// The unit vector of `v` as the shaders compute it: MAG, then DIV in each lane.
fn unit(v: Vec3) -> Vec3 {
    let length = alu::vector_magnitude(v);
    v.map(|c| alu::div(c, length))
}

/// The shaders' face normal of the triangle `hit` names: both edges to unit length, their
/// CROSS to unit length.
fn unit_normal(scene: &Scene, hit: &Hit) -> Vec3 {
    let record = hit.record(scene);
    let e1 = unit(lanes2(record[2], record[0], alu::sub));
    let e2 = unit(lanes2(record[4], record[0], alu::sub));
    unit(alu::cross(e1, e2))
}

/// The same normal in floating point, from the triangle's vertices, unit length.
fn real_normal(scene: &Scene, hit: &Hit) -> [f64; 3] {
    let record = hit.record(scene);
    let v = |i: usize| record[i].map(as_f64);
    let (a, b) = (
        [0, 1, 2].map(|i| v(2)[i] - v(0)[i]),
        [0, 1, 2].map(|i| v(4)[i] - v(0)[i]),
    );
    let n = [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ];
    let length = dot_f64(n, n).sqrt();
    n.map(|c| c / length)
}

fn dot_f64(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

/// Every hit pixel of `lit` is `plain`'s colour times `factor(k, hit)` (MUL per lane),
/// every miss keeps `plain`'s colour; `real(k, hit)` is the factor in floating point,
/// which the fixed-point one must stay within `tolerance` of.
fn assert_lit(
    name: &str,
    (plain, lit): (&Scene, &Scene),
    factor: impl Fn(usize, &Hit) -> u32,
    real: impl Fn(usize, &Hit) -> f64,
    tolerance: f64,
) {
    let hits = hits(lit);
    assert!(hits.iter().filter(|h| h.is_some()).count() > 1000, "{name}");
    let (unlit, shaded) = (frame(plain, None), frame(lit, None));
    assert_pixels(name, &unlit, &shaded, |k, colour| match &hits[k] {
        Some(hit) => {
            let f = factor(k, hit);
            colour.map(|c| alu::mul(c, f))
        }
        None => colour,
    });
    for (k, hit) in hits.iter().enumerate() {
        let Some(hit) = hit else { continue };
        let (fixed, real) = (as_f64(factor(k, hit)), real(k, hit));
        assert!(
            (fixed - real).abs() < tolerance,
            "{name}: pixel {k}: {fixed} vs {real}"
        );
    }
}

#[test]
fn headlight_lights_by_the_angle_to_the_eye() {
    let (ambient, headlight) = (q(0.2), q(0.8));
    let objs = [
        ("sphere", uv_sphere_obj(24, 12)),
        ("bumpy", displaced_icosphere_obj(3, 0.1)),
    ];
    for (name, obj) in objs {
        let plain = obj_scene(&obj, &MemoryAssets(&[]), 64, true);
        let lit = Scene {
            program: Some(shader("headlight.shdr").imem),
            ..plain.clone()
        };
        let ray = |k: usize| primary_ray(&lit, k as u32 % 64, k as u32 / 64);
        let factor = |k: usize, hit: &Hit| {
            let cosine = alu::dot(unit_normal(&lit, hit), unit(ray(k)));
            let cosine = if cosine as i32 > 0 {
                cosine
            } else {
                alu::neg(cosine)
            };
            alu::add(alu::mul(cosine, headlight), ambient)
        };
        let real = |k: usize, hit: &Hit| {
            let d = ray(k).map(as_f64);
            let cosine = dot_f64(real_normal(&lit, hit), d) / dot_f64(d, d).sqrt();
            0.2 + 0.8 * cosine.abs()
        };
        assert_lit(name, (&plain, &lit), factor, real, 0.01);
    }
}

/// A 16x16 PNG of coloured stripes, for a textured test model.
fn stripes_png() -> &'static [u8] {
    let mut image = ::image::RgbImage::new(16, 16);
    for (x, y, pixel) in image.enumerate_pixels_mut() {
        *pixel = ::image::Rgb([
            (x * 16) as u8,
            255 - (y * 12) as u8,
            40 + ((x + y) % 4 * 50) as u8,
        ]);
    }
    let mut bytes = Vec::new();
    image
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            ::image::ImageFormat::Png,
        )
        .unwrap();
    Box::leak(bytes.into_boxed_slice())
}

#[test]
fn obj_scenes_textured_or_not_are_lit_by_key_and_fill_lights() {
    let key = [q(-0.6), q(0.64), q(0.48)];
    let fill = [q(0.64), q(-0.48), q(0.6)];
    let (ambient, key_weight, fill_weight) = (q(0.15), q(0.8), q(0.3));
    let textured = format!(
        "mtllib stripes.mtl\nusemtl stripes\n{}",
        uv_sphere_obj(24, 12)
    );
    let assets = MemoryAssets(Box::leak(Box::new([
        (
            "stripes.mtl",
            b"newmtl stripes\nKd 1 1 1\nmap_Kd stripes.png\n" as &[u8],
        ),
        ("stripes.png", stripes_png()),
    ])));
    let objs = [
        ("textured sphere", textured),
        ("bumpy", displaced_icosphere_obj(3, 0.1)),
    ];
    for (name, obj) in objs {
        let plain = obj_scene(&obj, &assets, 64, true);
        let lit = obj_scene(&obj, &assets, 64, false);
        assert_eq!(plain.program, None, "{name}: --flat keeps the ROM's shader");
        assert_eq!(
            lit.program.as_deref(),
            Some(&shader("key_fill.shdr").imem[..]),
            "{name}"
        );
        let ray = |k: usize| primary_ray(&lit, k as u32 % 64, k as u32 / 64);
        let positive = |x: u32| if x as i32 > 0 { x } else { 0 };
        let factor = |k: usize, hit: &Hit| {
            // The loader's face normal, in the record's diffuse slot.
            let face = hit.record(&lit)[6];
            let mut n = face;
            if alu::dot(face, ray(k)) as i32 > 0 {
                n = n.map(alu::neg);
            }
            let keyed = alu::mul(positive(alu::dot(n, key)), key_weight);
            let filled = alu::mul(positive(alu::dot(n, fill)), fill_weight);
            alu::add(alu::add(keyed, filled), ambient)
        };
        let real = |k: usize, hit: &Hit| {
            let mut n = real_normal(&lit, hit);
            if dot_f64(n, ray(k).map(as_f64)) > 0.0 {
                n = n.map(|c| -c);
            }
            let light = |l: [f64; 3]| dot_f64(n, l).max(0.0);
            0.15 + 0.8 * light([-0.6, 0.64, 0.48]) + 0.3 * light([0.64, -0.48, 0.6])
        };
        assert_lit(name, (&plain, &lit), factor, real, 0.01);
    }
}

/// key_fill's light, as the shader computes it, for the hit pixel `k` of `lit` and the
/// normal `n` before it is turned to the camera: the loader's face normal (the record's
/// diffuse slot) decides the side.
fn key_fill_factor(lit: &Scene, k: usize, hit: &Hit, n: Vec3) -> u32 {
    let key = [q(-0.6), q(0.64), q(0.48)];
    let fill = [q(0.64), q(-0.48), q(0.6)];
    let (ambient, key_weight, fill_weight) = (q(0.15), q(0.8), q(0.3));
    let size = lit.width();
    let ray = primary_ray(lit, k as u32 % size, k as u32 / size);
    let n = if alu::dot(hit.record(lit)[6], ray) as i32 > 0 {
        n.map(alu::neg)
    } else {
        n
    };
    let positive = |x: u32| if x as i32 > 0 { x } else { 0 };
    let keyed = alu::mul(positive(alu::dot(n, key)), key_weight);
    let filled = alu::mul(positive(alu::dot(n, fill)), fill_weight);
    alu::add(alu::add(keyed, filled), ambient)
}

/// The same light in floating point for a unit normal `n` turned as `face` says.
fn real_key_fill(n: [f64; 3], face: [f64; 3], ray: [f64; 3]) -> f64 {
    let n = if dot_f64(face, ray) > 0.0 {
        n.map(|c| -c)
    } else {
        n
    };
    let light = |l: [f64; 3]| dot_f64(n, l).max(0.0);
    0.15 + 0.8 * light([-0.6, 0.64, 0.48]) + 0.3 * light([0.64, -0.48, 0.6])
}

/// A wall of a long tunnel seen from near one end: eight teeth 500 units long, 2 wide at
/// the near end and pointed at the far one, 128 hardware units long after fitting (V0 at
/// the near end, so the fit's bounds on BIU's products leave them long). The shader used
/// to take the CROSS of the two edges at unit length, nearly parallel in a sliver, and
/// light came out in streaks from triangle to triangle. With the loader's face
/// normal every pixel is predicted from the ALU functions, and the coplanar triangles are
/// lit alike.
#[test]
fn key_fill_lights_a_500_unit_strip_of_long_triangles_evenly() {
    let mut obj = String::new();
    for k in 0..=8 {
        let y = f64::from(k) * 2.0;
        obj += &format!("v -250 {y} 0\nv 250 {} 0\n", y + 1.0);
    }
    for k in 0..8 {
        let (near, far) = (2 * k + 1, 2 * k + 2);
        obj += &format!("f {near} {} {far}\n", near + 2);
    }
    let options = ObjOptions {
        width: 128,
        height: 96,
        camera: Some([-250.0, 8.0, 25.0]),
        look_at: Some([-200.0, 8.0, 0.0]),
        fov_degrees: 60.0,
        ..ObjOptions::default()
    };
    let load = |flat| {
        let options = ObjOptions {
            flat,
            ..options.clone()
        };
        load_obj_text(&obj, Path::new("strip.obj"), &MemoryAssets(&[]), &options)
            .unwrap()
            .scene
    };
    let (plain, lit) = (load(true), load(false));
    assert_eq!(lit.triangles.len(), 8);
    let e1 = lanes2(lit.triangles[0][4], lit.triangles[0][0], alu::sub);
    let length = as_f64(e1[0]).hypot(as_f64(e1[1])).hypot(as_f64(e1[2]));
    assert!(length > 120.0, "{length}");
    let factor = |k: usize, hit: &Hit| key_fill_factor(&lit, k, hit, hit.record(&lit)[6]);
    let real = |k: usize, hit: &Hit| {
        let ray = primary_ray(&lit, k as u32 % 128, k as u32 / 128).map(as_f64);
        real_key_fill(real_normal(&lit, hit), real_normal(&lit, hit), ray)
    };
    assert_lit("strip", (&plain, &lit), factor, real, 0.005);
    // Even: every hit pixel gets one light, whichever triangle it shows.
    let lights: std::collections::BTreeSet<u32> = (hits(&lit).iter().enumerate())
        .filter_map(|(k, hit)| hit.as_ref().map(|hit| factor(k, hit)))
        .collect();
    let spread = lights.last().unwrap() - lights.first().unwrap();
    assert!(spread <= 4, "{lights:?}");
}

/// A sphere with `vn` normals (its own centre directions) is shaded smooth: each hit
/// pixel's normal is the three corners' normals from texture memory, interpolated with
/// BIU's u and v and brought to unit length, with the ALU's functions, as the shader does;
/// in floating point it is within 0.01 of Phong's interpolation.
#[test]
fn key_fill_interpolates_vn_normals_with_u_and_v() {
    let mut obj = String::new();
    let mut normals = String::new();
    for line in uv_sphere_obj(24, 12).lines() {
        let mut fields = line.split_whitespace();
        match fields.next() {
            Some("v") => {
                let p: Vec<f64> = fields.map(|f| f.parse().unwrap()).collect();
                let length = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
                normals += &format!("vn {} {} {}\n", p[0] / length, p[1] / length, p[2] / length);
                obj += line;
                obj += "\n";
            }
            Some("f") => {
                let corners: Vec<String> = fields
                    .map(|f| {
                        let v = f.split('/').next().unwrap();
                        format!("{v}//{v}")
                    })
                    .collect();
                obj += &format!("f {}\n", corners.join(" "));
            }
            _ => {}
        }
    }
    let obj = normals + &obj;
    let load = |flat| obj_scene(&obj, &MemoryAssets(&[]), 64, flat);
    let (plain, lit) = (load(true), load(false));
    let words = |address: u32| -> Vec3 {
        let at = address as usize;
        [lit.texture[at], lit.texture[at + 1], lit.texture[at + 2]]
    };
    let corners = |hit: &Hit| {
        let record = hit.record(&lit);
        [1, 3, 5].map(|slot| {
            assert_ne!(record[slot][2], 0, "every corner has a normal");
            words(record[slot][2])
        })
    };
    let interpolated = |hit: &Hit| {
        let [n0, n1, n2] = corners(hit);
        let du = lanes2(n1, n0, alu::sub).map(|c| alu::mul(c, hit.u));
        let dv = lanes2(n2, n0, alu::sub).map(|c| alu::mul(c, hit.v));
        unit(lanes2(lanes2(n0, du, alu::add), dv, alu::add))
    };
    let factor = |k: usize, hit: &Hit| key_fill_factor(&lit, k, hit, interpolated(hit));
    let real = |k: usize, hit: &Hit| {
        let [n0, n1, n2] = corners(hit).map(|n| n.map(as_f64));
        let (u, v) = (as_f64(hit.u), as_f64(hit.v));
        let n: [f64; 3] = [0, 1, 2].map(|i| n0[i] + u * (n1[i] - n0[i]) + v * (n2[i] - n0[i]));
        let length = dot_f64(n, n).sqrt();
        let ray = primary_ray(&lit, k as u32 % 64, k as u32 / 64).map(as_f64);
        let face = hit.record(&lit)[6].map(as_f64);
        real_key_fill(n.map(|c| c / length), face, ray)
    };
    assert_lit("smooth sphere", (&plain, &lit), factor, real, 0.01);
    // Smooth, not faceted: neighbouring hit pixels on one triangle and across edges differ
    // little; the flat sphere of the same mesh has jumps at every edge.
    let flat_lit = obj_scene(&uv_sphere_obj(24, 12), &MemoryAssets(&[]), 64, false);
    let jumps = |scene: &Scene, light: &dyn Fn(usize, &Hit) -> u32| {
        let hits = hits(scene);
        let mut jumps = 0;
        for k in 0..hits.len() - 1 {
            if let (Some(a), Some(b), true) = (&hits[k], &hits[k + 1], (k + 1) % 64 != 0) {
                let step = (as_f64(light(k, a)) - as_f64(light(k + 1, b))).abs();
                jumps += usize::from(step > 0.05);
            }
        }
        jumps
    };
    let flat_factor =
        |k: usize, hit: &Hit| key_fill_factor(&flat_lit, k, hit, hit.record(&flat_lit)[6]);
    let (smooth, faceted) = (jumps(&lit, &factor), jumps(&flat_lit, &flat_factor));
    assert!(
        smooth * 5 < faceted,
        "steps over 0.05: smooth {smooth}, flat {faceted}"
    );
}

/// `--background R,G,B`: with the fixed ROM, key_fill.shdr and flat.shdr paint every miss
/// the colour (byte << 9 a channel) and leave every hit as it was.
#[test]
fn a_background_colour_paints_the_misses_only() {
    let fixed = RenderOptions {
        rom: theia::emu::core::RomVariant::Fixed,
        ..RenderOptions::default()
    };
    let obj = uv_sphere_obj(24, 12);
    for flat in [false, true] {
        let load = |background| {
            let options = ObjOptions {
                width: 48,
                height: 48,
                flat,
                background,
                ..ObjOptions::default()
            };
            load_obj_text(&obj, Path::new("s.obj"), &MemoryAssets(&[]), &options)
                .unwrap()
                .scene
        };
        let (plain, painted) = (load(None), load(Some([10, 200, 255])));
        let misses: Vec<bool> = hits(&plain).iter().map(Option::is_none).collect();
        assert!(misses.iter().filter(|m| **m).count() > 500);
        let before = render(&plain, &fixed).unwrap().frame;
        let after = render(&painted, &fixed).unwrap().frame;
        assert_pixels("background", &before, &after, |k, colour| {
            if misses[k] {
                [10 << 9, 200 << 9, 255 << 9]
            } else {
                colour
            }
        });
    }
    // The faithful ROM's red is the hardware's.
    let options = ObjOptions {
        background: Some([1, 2, 3]),
        rom: theia::emu::core::RomVariant::Faithful,
        ..ObjOptions::default()
    };
    let error = load_obj_text(&obj, Path::new("s.obj"), &MemoryAssets(&[]), &options)
        .unwrap_err()
        .to_string();
    assert_eq!(error, "s.obj: a background colour needs the fixed ROM: the faithful ROM paints every miss red, as the hardware does");
}
