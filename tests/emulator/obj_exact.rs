//! The OBJ loader gives exactly the scenes, notes and errors it gave when it read OBJ files
//! through tobj (commit 9a3e23f): a fingerprint of every outcome for generated meshes, the
//! repository's OBJs, hand-written tricky files and 600 random small OBJs (with MTL
//! libraries and textures) is compared with `tests/data/obj_fingerprints.txt`, written by
//! that loader.
//!
//! `THEIA_BLESS_OBJ_FINGERPRINTS=1 cargo test --release --test emulator obj_exact::`
//! rewrites the file: only for a deliberate change of what the loader produces.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

use sha2::{Digest, Sha256};
use theia::io::scene::generate::{displaced_icosphere_obj, uv_sphere_obj};
use theia::io::scene::obj::{
    default_scene, load_obj, load_obj_text, Assets, ObjOptions, ObjScene, ViewPreset,
};
use theia::io::scene::SceneError;

const FINGERPRINTS: &str = "tests/data/obj_fingerprints.txt";

/// Files the OBJs refer to, named as if in a directory `dir`.
struct Files(HashMap<String, Vec<u8>>);

impl Assets for Files {
    fn read(&self, name: &str) -> Option<Vec<u8>> {
        self.0.get(name).cloned()
    }
    fn display(&self, name: &str) -> String {
        format!("dir/{name}")
    }
}

fn png(width: u32, height: u32, seed: u32) -> Vec<u8> {
    let image = image::RgbImage::from_fn(width, height, |x, y| {
        let v = (x * 37 + y * 91 + seed * 53) % 256;
        image::Rgb([v as u8, (v * 7 % 256) as u8, (255 - v) as u8])
    });
    let mut bytes = std::io::Cursor::new(Vec::new());
    image.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    bytes.into_inner()
}

fn files() -> Files {
    let text = |s: &str| s.as_bytes().to_vec();
    Files(HashMap::from([
        (
            "a.mtl".to_string(),
            text("# lib a\nnewmtl m0\nKd 1 0 0\nNs 10\nnewmtl m1\nKd 0.2 0.4 0.6\nmap_Kd t0.png\n\
                  newmtl m2\nmap_Kd -s 1 1 1 -clamp on t1.png\nnewmtl m3\nKd 0.5\nmap_Kd none.png\n\
                  newmtl m 4\nKd 2 -1 0.5\nnewmtl m6\nmap_Kd broken.png\n"),
        ),
        (
            "b.mtl".to_string(),
            text("\u{feff}newmtl m0\r\nKd 0 1 0\r\nnewmtl m5\r\nmap_Kd sub\\t2.png\r\nnewmtl m1\r\nKd 0 0 1\r\n"),
        ),
        ("bad.mtl".to_string(), text("newmtl x\nKd 1 y 0\n")),
        ("t0.png".to_string(), png(2, 2, 0)),
        ("t1.png".to_string(), png(4, 4, 1)),
        ("sub/t2.png".to_string(), png(5, 3, 2)),
        ("broken.png".to_string(), text("not a png")),
    ]))
}

/// A SHA-256 (first 16 hex digits) of everything a load gives: the scene's words, name,
/// partitions and program, the notes and scale, or the error.
fn fingerprint(
    result: &Result<ObjScene, SceneError>,
    replace: &dyn Fn(String) -> String,
) -> String {
    let mut hash = Sha256::new();
    let mut words = |label: &str, words: &mut dyn Iterator<Item = u32>| {
        hash.update(label.as_bytes());
        let bytes: Vec<u8> = words.flat_map(u32::to_le_bytes).collect();
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    };
    match result {
        Ok(loaded) => {
            let scene = &loaded.scene;
            words("config", &mut scene.config.iter().flatten().copied());
            words(
                "triangles",
                &mut scene.triangles.iter().flatten().flatten().copied(),
            );
            words("texture", &mut scene.texture.iter().copied());
            let rest = format!(
                "{} {:?} {} {:?} {:?} {:?}",
                scene.name,
                scene.partitions,
                scene.control_register,
                scene.program,
                loaded.notes,
                loaded.scale.to_bits()
            );
            hash.update(replace(rest).as_bytes());
        }
        Err(error) => hash.update(replace(format!("error {error:?}")).as_bytes()),
    }
    hash.finalize()[..8].iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// xorshift64*: the random OBJs must be the same on every run and machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

fn number(rng: &mut Rng) -> String {
    const WRITTEN: &[&str] = &[
        "0",
        "1",
        "-1",
        "0.5",
        "-0.25",
        "2",
        "1e-1",
        "+1.5",
        ".5",
        "3.",
        "-0",
        "0.000000",
        "-0.000000",
        "1.000001",
        "10",
        "-7.5",
        "1E1",
        "0.333333",
        "1e-320",
    ];
    if rng.chance(30) {
        return rng.pick(WRITTEN).to_string();
    }
    let value = (rng.below(6_000_001) as f64 - 3_000_000.0) / 1e6;
    format!("{value:.6}")
}

fn bad_number(rng: &mut Rng) -> &'static str {
    rng.pick(&["x", "1..2", "nan", "inf", "1e400", "--1", "0x10", ""])
}

/// A small random OBJ: statements of every kind the loader reads or skips; two files in
/// five may have mistakes.
fn random_obj(rng: &mut Rng) -> String {
    let faulty = rng.chance(40);
    let eol = if rng.chance(15) { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = Vec::new();
    if rng.chance(5) {
        lines.push("\u{feff}# bom".into());
    }
    if rng.chance(60) {
        let libraries = rng.pick(&[
            "a.mtl",
            "a.mtl b.mtl",
            "b.mtl a.mtl",
            "missing.mtl",
            "missing.mtl a.mtl",
            "bad.mtl",
            "a.mtl",
        ]);
        let libraries = if libraries == "bad.mtl" && !faulty {
            "b.mtl"
        } else {
            libraries
        };
        lines.push(format!("mtllib {libraries}"));
    }
    let (mut v, mut vt, mut vn) = (0i64, 0i64, 0i64);
    let statements = 4 + rng.below(40);
    for _ in 0..statements {
        let sep = if rng.chance(10) {
            "\t"
        } else if rng.chance(5) {
            "  "
        } else {
            " "
        };
        let kind = rng.below(100);
        let line = match kind {
            0..=29 => {
                v += 1;
                let mut fields: Vec<String> = (0..3).map(|_| number(rng)).collect();
                if rng.chance(5) {
                    fields.push(rng.pick(&["1", "2", "0.5"]).into());
                } else if rng.chance(3) {
                    fields.extend(["0.1", "0.2", "0.3"].map(String::from));
                }
                if faulty && rng.chance(3) {
                    fields[rng.below(3)] = bad_number(rng).into();
                }
                if faulty && rng.chance(3) {
                    fields.truncate(rng.below(3));
                }
                let comment = if rng.chance(5) { " # note" } else { "" };
                format!("v{sep}{}{comment}", fields.join(sep))
            }
            30..=39 => {
                vt += 1;
                let count = 1 + rng.below(3);
                let mut fields: Vec<String> = (0..count)
                    .map(|_| {
                        if rng.chance(70) {
                            format!("{:.6}", rng.below(1_000_001) as f64 / 1e6)
                        } else {
                            number(rng)
                        }
                    })
                    .collect();
                if faulty && rng.chance(3) {
                    fields[0] = bad_number(rng).into();
                }
                format!("vt{sep}{}", fields.join(sep))
            }
            40..=44 => {
                vn += 1;
                format!("vn 0 0 {}", number(rng))
            }
            45..=74 if v == 0 && !faulty => "# no vertices yet".into(),
            45..=74 => {
                let corners = if rng.chance(70) { 3 } else { 3 + rng.below(4) };
                let corners = if faulty && rng.chance(3) {
                    rng.below(3)
                } else {
                    corners
                };
                let forms = if vt > 0 || faulty { 5 } else { 2 };
                let form = |rng: &mut Rng| match rng.below(forms) {
                    1 if forms == 2 => 3,
                    form => form,
                };
                let first = form(rng);
                let index = |rng: &mut Rng, count: i64| -> String {
                    if faulty && rng.chance(2) {
                        return rng.pick(&["0", "x", "99999999999999999999", "-0"]).into();
                    }
                    let count = count.max(1);
                    let i = 1 + rng.below(count as usize) as i64;
                    if rng.chance(30) {
                        format!("{}", i - count - 1)
                    } else if faulty && rng.chance(2) {
                        format!("{}", count + 1)
                    } else {
                        format!("{i}")
                    }
                };
                let fields: Vec<String> = (0..corners)
                    .map(|_| {
                        let p = index(rng, v);
                        let form = if rng.chance(10) { form(rng) } else { first };
                        match form {
                            0 | 1 => p,
                            2 => format!("{p}/{}", index(rng, vt)),
                            3 => format!("{p}//{}", index(rng, vn)),
                            _ => {
                                if faulty && rng.chance(5) {
                                    rng.pick(&["1/", "/1", "1/1/1/1", "1//"]).into()
                                } else {
                                    format!("{p}/{}/{}", index(rng, vt), index(rng, vn))
                                }
                            }
                        }
                    })
                    .collect();
                format!("f{sep}{}", fields.join(sep))
            }
            75..=84 => format!(
                "usemtl {}",
                rng.pick(&["m0", "m1", "m2", "m3", "m 4", "m5", "m6", "undefined", "m1"])
            ),
            85..=86 => "# comment f 1 2 3".into(),
            87 => String::new(),
            88 => "o thing".into(),
            89 => "g group".into(),
            90 => "s off".into(),
            91 => "l 1 2".into(),
            92 => "p 1".into(),
            93 => rng
                .pick(&["curv 0 1", "bevel on", "cstype bezier", "\u{a0}v 1 2 3"])
                .into(),
            94 if faulty => rng
                .pick(&["mtllib", "usemtl", "f 1 2", "vt", "v 1 2"])
                .into(),
            94 => format!("mtllib {}", rng.pick(&["b.mtl", "a.mtl"])),
            _ => "   ".into(),
        };
        lines.push(line);
    }
    let mut text = lines.join(eol);
    if rng.chance(80) {
        text.push_str(eol);
    }
    text
}

fn random_options(rng: &mut Rng) -> ObjOptions {
    let mut options = ObjOptions {
        width: 32,
        height: 24,
        ..ObjOptions::default()
    };
    match rng.below(10) {
        0 => options.view = ViewPreset::Back,
        1 => {
            options.inside = true;
            options.view = ViewPreset::Front;
        }
        2 => options.camera = Some([0.0, 0.0, 5.0]),
        3 => options.flat = true,
        4 => {
            options.texture_size = 4;
            options.resample_textures = false;
        }
        5 => options.orbit_degrees = 30.0,
        6 => options.camera = Some([0.5, 0.25, 0.0]),
        _ => {}
    }
    options
}

/// Tricky OBJs written by hand: (name, text, options).
fn hand_written() -> Vec<(&'static str, String, ObjOptions)> {
    let small = ObjOptions {
        width: 40,
        height: 30,
        ..ObjOptions::default()
    };
    let with = |f: &dyn Fn(&mut ObjOptions)| {
        let mut options = small.clone();
        f(&mut options);
        options
    };
    let texts: Vec<(&str, &str, ObjOptions)> = vec![
        (
            "quads_pentagon_negative",
            "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0.5 1.5 0.25\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n\
             f -5/-4 -4/-3 -3/-2 -2/-1\nf 1/1 2/2 3/3 5/4 4\nf 1 2 3 4 5 1\n",
            small.clone(),
        ),
        (
            "crlf_bom_tabs_comments",
            "\u{feff}# header\r\nv\t0 0 0 # a\r\nv 2\t0 0\r\n\r\nv 0 2 0#b\r\n  f 1 2 3 # face\r\n# end",
            small.clone(),
        ),
        (
            "materials_across_libraries",
            "mtllib a.mtl b.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 0\nvt 1 1\nvt 0 1\n\
             usemtl m0\nf 1/1 2/2 3/3\nusemtl m1\nf 1/1 3/3 4/4\nusemtl m 4\nf 1 2 4\nusemtl m5\nf 2/2 3/3 4/4\n\
             usemtl undefined\nf 1 2 3\nusemtl m2\nf 1/1 2/2 3/3 4/4\nusemtl m3\nf 4 3 2\nusemtl m6\nf 1 3 4\n",
            small.clone(),
        ),
        (
            "materials_before_library",
            "usemtl m1\nv 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0 0\nvt 2.5 3\nf 1/1 2/2 3/2\nmtllib a.mtl\nusemtl m2\nf 1/2 2/1 3/1\n",
            small.clone(),
        ),
        (
            "missing_library",
            "mtllib missing.mtl a.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nusemtl m0\nf 1 2 3\nusemtl nothing\nf 3 2 1\n",
            small.clone(),
        ),
        (
            "bad_library",
            "mtllib missing.mtl bad.mtl a.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\n",
            small.clone(),
        ),
        (
            "w_and_colours",
            "v 0 0 0 2\nv 1 0 0 0.5 0.5 0.5\nv 1 1 0 1\nvt 0.5\nvt 0.25 0.75 1\nf 1/1 2/2 3/1\n",
            small.clone(),
        ),
        (
            "normals_out_of_range",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//1 2//2 3//x\nf 1//-1 2//-2 3//1\n",
            small.clone(),
        ),
        (
            "duplicate_and_signed_zero_positions_behind_camera",
            "v 0 0 1\nv 0 0 1\nv 0 0 1.0\nv -0 0 1\nv 1 0 1\nv 0 1 1\nv 0 0 -1\nv 1 0 -1\nv 0 1 -1\n\
             f 1 5 6\nf 2 5 6\nf 3 5 6\nf 4 5 6\nf 7 8 9\n",
            with(&|o| {
                o.camera = Some([0.2, 0.2, 0.0]);
                o.look_at = Some([0.2, 0.2, -1.0]);
            }),
        ),
        (
            "inside_room",
            "v -1 -1 -1\nv 1 -1 -1\nv 1 1 -1\nv -1 1 -1\nv -1 -1 1\nv 1 -1 1\nv 1 1 1\nv -1 1 1\n\
             f 1 2 3 4\nf 5 6 7 8\nf 1 2 6 5\nf 4 3 7 8\nf 1 4 8 5\nf 2 3 7 6\n",
            with(&|o| o.inside = true),
        ),
        (
            "atlas_clamps_and_missing_uvs",
            "mtllib a.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt -0.5 0\nvt 1.5 0\nvt 1 1\nvt 0 1\n\
             usemtl m1\nf 1/1 2/2 3/3\nf 1 3/3 4/4\nusemtl m2\nf 1/3 2/3 3/4\nf 1/1 2/2 3/3 4/4\n",
            small.clone(),
        ),
        (
            "single_texture_repeats",
            "mtllib a.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nvt 2 2\nvt 5.5 2\nvt 3 4.25\nusemtl m2\nf 1/1 2/2 3/3\n",
            small.clone(),
        ),
        (
            "unicode_whitespace",
            "v\u{a0}0 0 0\nv 1\u{b}0 0\nv 0 1\u{3000}0\nf 1 2\r3\nusemtl é ü\nf 3 2 1\nbével x\n",
            small.clone(),
        ),
        ("empty", "", small.clone()),
        ("only_comments", "# nothing\n\n# here\n", small.clone()),
        ("points_and_lines_only", "v 0 0 0\nv 1 0 0\nl 1 2\np 1\n", small.clone()),
        ("no_extent", "v 1 1 1\nv 1 1 1\nv 1 1 1\nf 1 2 3\n", small.clone()),
        ("bad_number", "v 0 0 0\nv 1 x 0\n", small.clone()),
        ("too_few_coordinates", "v 0 0\n", small.clone()),
        ("vt_without_numbers", "vt\n", small.clone()),
        ("vt_bad_v", "vt 0 y\n", small.clone()),
        ("face_two_corners", "v 0 0 0\nf 1 1\n", small.clone()),
        ("face_index_zero", "v 0 0 0\nf 0 1 1\n", small.clone()),
        ("face_index_too_large", "v 0 0 0\nf 1 2 1\n", small.clone()),
        ("face_negative_too_far", "v 0 0 0\nf -2 1 1\n", small.clone()),
        ("face_huge_index", "v 0 0 0\nf 99999999999999999999 1 1\n", small.clone()),
        ("face_bad_shape", "v 0 0 0\nf 1/1/1/1 1 1\n", small.clone()),
        ("face_trailing_slash", "v 0 0 0\nf 1/ 1 1\n", small.clone()),
        ("face_leading_slash", "v 0 0 0\nf /1 1 1\n", small.clone()),
        ("face_vt_missing", "v 4 0 4\nvt 0 8\nf 1/-7 1 1\n", small.clone()),
        ("face_plus_sign", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf +1 +2/ 3\n", small.clone()),
        ("face_plus_index", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf +1 +2 3\n", small.clone()),
        ("usemtl_empty", "usemtl   # x\n", small.clone()),
        ("mtllib_empty", "mtllib\n", small.clone()),
        ("far_camera", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", with(&|o| o.camera = Some([0.0, 0.0, 1e6]))),
        ("camera_at_target", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", with(&|o| {
            o.camera = Some([0.0, 0.0, 0.0]);
            o.look_at = Some([0.0, 0.0, 0.0]);
        })),
        ("bad_options", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n", with(&|o| o.width = 0)),
        ("strict_textures", "mtllib b.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nusemtl m5\nf 1/1 2/1 3/1\n", with(&|o| o.resample_textures = false)),
        ("huge_coordinates", "v 0 0 0\nv 1e300 0 0\nv 0 1 0\nf 1 2 3\n", small.clone()),
        ("lone_cr_line_ends", "v 0 0 0\rv 1 0 0\nv 0 1 0\nf 1 2 3\n", small.clone()),
        ("slash_and_backslash_libraries", "mtllib .\\a.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nusemtl m0\nf 1 2 3\n", small.clone()),
    ];
    texts
        .into_iter()
        .map(|(name, text, options)| (name, text.to_string(), options))
        .collect()
}

/// Every case's name and fingerprint, in a fixed order.
fn fingerprints() -> Vec<(String, String)> {
    let files = files();
    let same = |s: String| s;
    let mut out = Vec::new();
    let mut add = |name: String, result: Result<ObjScene, SceneError>| {
        out.push((name, fingerprint(&result, &same)));
    };
    for (name, text, options) in hand_written() {
        add(
            format!("hand/{name}"),
            load_obj_text(&text, Path::new("dir/t.obj"), &files, &options),
        );
    }
    let small = ObjOptions {
        width: 48,
        height: 32,
        ..ObjOptions::default()
    };
    for (name, text) in [
        ("uv_sphere_24_12", uv_sphere_obj(24, 12)),
        ("icosphere_5", displaced_icosphere_obj(5, 0.08)),
        ("icosphere_3", displaced_icosphere_obj(3, 0.15)),
    ] {
        add(
            format!("generated/{name}"),
            load_obj_text(&text, Path::new(name), &files, &small),
        );
    }
    // More triangles than one chunk of the parallel conversion (16,384): triangles left out
    // across chunks, and the first of two errors in later chunks.
    let inside = ObjOptions {
        inside: true,
        ..small.clone()
    };
    add(
        "generated/icosphere_5_inside".into(),
        load_obj_text(
            &displaced_icosphere_obj(5, 0.08),
            Path::new("i.obj"),
            &files,
            &inside,
        ),
    );
    let sphere = uv_sphere_obj(200, 100);
    // One texture (so texture coordinates pass unchanged) and, when `bad`, two triangles
    // whose u is beyond Q15.17, after the 20,000th and the 30,000th face.
    let textured = |bad: bool| {
        let mut text = "mtllib a.mtl\nusemtl m2\n".to_string();
        let mut faces = 0;
        for line in sphere.lines() {
            if line.starts_with('f') {
                if faces == 0 {
                    text.push_str("vt 0 0\nvt 30000.25 0\nvt 20000.5 0\n");
                }
                if bad && faces == 20_000 {
                    text.push_str("f 1/-3 2/-2 3/-2\n");
                }
                if bad && faces == 30_000 {
                    text.push_str("f 1/-3 2/-1 3/-1\n");
                }
                faces += 1;
            }
            text.push_str(line);
            text.push('\n');
        }
        text
    };
    add(
        "generated/uv_sphere_textured_inside".into(),
        load_obj_text(&textured(false), Path::new("u.obj"), &files, &inside),
    );
    add(
        "generated/uv_sphere_two_bad_triangles".into(),
        load_obj_text(&textured(true), Path::new("u.obj"), &files, &small),
    );
    for (name, options) in [
        ("default", ObjOptions::default()),
        (
            "inside",
            ObjOptions {
                inside: true,
                ..small.clone()
            },
        ),
        (
            "top",
            ObjOptions {
                view: ViewPreset::Top,
                texture_size: 64,
                ..small.clone()
            },
        ),
    ] {
        add(
            format!("default_scene/{name}"),
            default_scene::load(&options),
        );
        add(
            format!("scenes_default_obj/{name}"),
            load_obj(Path::new("scenes/default.obj"), &options),
        );
    }
    for seed in ["default.obj", "textured.obj"] {
        add(
            format!("fuzz_seed/{seed}"),
            load_obj(&Path::new("fuzz/seeds/obj").join(seed), &small),
        );
    }
    add(
        "file/missing".into(),
        load_obj(Path::new("no/such/file.obj"), &small),
    );
    let dir = tempfile::tempdir().unwrap();
    let shown = dir.path().display().to_string();
    let relative = |s: String| s.replace(&shown, "DIR");
    for (name, bytes) in [
        (
            "not_utf8",
            b"v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n# \xff\n".to_vec(),
        ),
        ("not_utf8_after_error", b"v 0 0\n# \xff\n".to_vec()),
        (
            "textured",
            b"mtllib a.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nvt 1 1\nusemtl m1\nf 1/1 2/2 3/1\n"
                .to_vec(),
        ),
    ] {
        let path = dir.path().join(format!("{name}.obj"));
        std::fs::write(&path, bytes).unwrap();
        for (file, bytes) in &files.0 {
            let target = dir.path().join(file);
            std::fs::create_dir_all(target.parent().unwrap()).unwrap();
            std::fs::write(target, bytes).unwrap();
        }
        let result = load_obj(&path, &small);
        out.push((format!("file/{name}"), fingerprint(&result, &relative)));
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for n in 0..600 {
        let text = random_obj(&mut rng);
        let options = random_options(&mut rng);
        let result = load_obj_text(&text, Path::new("dir/r.obj"), &files, &options);
        out.push((format!("random/{n}"), fingerprint(&result, &same)));
    }
    out
}

#[test]
fn every_obj_loads_exactly_as_with_the_tobj_loader() {
    let actual = fingerprints();
    let text: String = actual
        .iter()
        .map(|(name, print)| format!("{name} {print}\n"))
        .collect();
    if std::env::var_os("THEIA_BLESS_OBJ_FINGERPRINTS").is_some() {
        std::fs::write(FINGERPRINTS, &text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(FINGERPRINTS).unwrap();
    let expected: HashMap<&str, &str> = expected
        .lines()
        .filter_map(|line| line.split_once(' '))
        .collect();
    let differing: Vec<&str> = actual
        .iter()
        .filter(|(name, print)| expected.get(name.as_str()) != Some(&print.as_str()))
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(expected.len(), actual.len());
    assert!(differing.is_empty(), "outcomes differ: {differing:?}");
}

/// The random OBJs reach every outcome: scenes with and without materials and textures,
/// syntax errors and refusals, so the fingerprints above cover more than one path.
#[test]
fn the_random_objs_cover_scenes_and_errors() {
    let files = files();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut scenes, mut syntax, mut other, mut warned) = (0, 0, 0, 0);
    for _ in 0..600 {
        let text = random_obj(&mut rng);
        let options = random_options(&mut rng);
        match load_obj_text(&text, Path::new("dir/r.obj"), &files, &options) {
            Ok(loaded) => {
                scenes += 1;
                warned += usize::from(!loaded.notes.is_empty());
            }
            Err(SceneError::Syntax { .. }) => syntax += 1,
            Err(_) => other += 1,
        }
    }
    assert!(
        scenes >= 100 && syntax >= 100 && other >= 30 && warned >= 50,
        "{scenes} scenes ({warned} with notes), {syntax} syntax errors, {other} other errors"
    );
}
