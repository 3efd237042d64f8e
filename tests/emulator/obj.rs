//! OBJ scenes end to end: loading, fitting, the texture atlas and rendering through the
//! emulated GPU.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::model;

use theia::emu::core::RomVariant;
use theia::emu::machine::{render, RenderOptions};
use theia::io::image::Rgb8;
use theia::io::scene::generate::uv_sphere_obj;
use theia::io::scene::obj::{default_scene, load_obj, load_obj_text, ObjOptions, ViewPreset};
use theia::io::scene::{Partition, Scene};

const RED: [u8; 3] = [255, 0, 0];
const BLACK: [u8; 3] = [0, 0, 0];

fn rgb(scene: &Scene, options: &RenderOptions) -> Rgb8 {
    Rgb8::from_frame(&render(scene, options).expect("renders").frame)
}

fn cores(n: u32) -> RenderOptions {
    RenderOptions {
        cores: Some(n),
        ..Default::default()
    }
}

/// Writes a render to `$THEIA_PREVIEW_DIR/<name>.png` when that variable is set, to look at.
fn preview(image: &Rgb8, name: &str) {
    if let Some(dir) = std::env::var_os("THEIA_PREVIEW_DIR") {
        let path = PathBuf::from(dir).join(format!("{name}.png"));
        std::fs::write(&path, theia::io::image::png_bytes(image)).unwrap();
    }
}

/// A directory with the given files (text or PNG images).
fn scene_dir(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in files {
        std::fs::write(dir.path().join(name), bytes).unwrap();
    }
    dir
}

fn png(image: &image::RgbImage) -> Vec<u8> {
    let mut bytes = Vec::new();
    image
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    bytes
}

fn uniform(side: u32, rgb: [u8; 3]) -> Vec<u8> {
    png(&image::RgbImage::from_pixel(side, side, image::Rgb(rgb)))
}

fn error_of(
    result: Result<theia::io::scene::obj::ObjScene, theia::io::scene::SceneError>,
) -> String {
    result.expect_err("an error").to_string()
}

// --- the default scene -----------------------------------------------------------------

/// Every pixel of the default scene hits the room, so no pixel is the ROM's red miss colour
/// or a core's black first-pixel miss, and the image is the same for any core count.
#[test]
fn default_scene_renders_identically_with_1_2_and_4_cores() {
    let loaded = default_scene::load(&ObjOptions::default()).unwrap();
    assert_eq!(loaded.notes, Vec::<String>::new());
    assert_eq!((loaded.scene.width(), loaded.scene.height()), (256, 256));
    let frames: Vec<_> = [1, 2, 4]
        .iter()
        .map(|&n| render(&loaded.scene, &cores(n)).unwrap().frame)
        .collect();
    let image = Rgb8::from_frame(&frames[0]);
    preview(&image, "default");
    assert_eq!(frames[0].unwritten_pixels(), 0);
    let misses = image
        .data
        .chunks(3)
        .filter(|p| *p == RED || *p == BLACK)
        .count();
    assert_eq!(misses, 0);
    for frame in &frames[1..] {
        let differing = (frame.words.iter().zip(&frames[0].words))
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(differing, 0, "words differing from the 1-core render");
    }
}

/// FNV-1a (64-bit) of words, to pin a frame or a scene without storing it.
fn fnv1a(words: impl IntoIterator<Item = u32>) -> u64 {
    words.into_iter().fold(0xcbf2_9ce4_8422_2325, |hash, word| {
        word.to_le_bytes().iter().fold(hash, |h, &b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    })
}

/// The default scene's records, texture memory and frame are exactly what the loader
/// produced when last blessed (issue 38: the fit's scale is no longer a power of two, so
/// the corners round differently and the frame moves by rounding, 11,718 of 65,536
/// faithful pixels by a step or two; the texture memory is the same): a change detector,
/// not an independent check.
#[test]
fn default_scene_is_unchanged_by_the_loader_behind_it_change_detector() {
    let loaded = default_scene::load(&ObjOptions::default()).unwrap();
    let scene = &loaded.scene;
    let records = fnv1a(scene.triangles.iter().flatten().flatten().copied());
    let texture = fnv1a(scene.texture.iter().copied());
    let frame = render(scene, &RenderOptions::default()).unwrap().frame;
    let pixels = fnv1a(frame.words.iter().copied());
    assert_eq!(
        (scene.triangles.len(), records, texture, pixels),
        (
            142,
            0x2db3_de2d_7a17_23b5,
            0x6eab_88b6_544a_ec00,
            0x3e14_9919_e0d5_e82d
        )
    );
}

/// The room is built for square to 16:9 frames: those have no miss either.
#[test]
fn default_scene_fills_wide_and_tall_frames_too() {
    for (width, height) in [(128, 72), (72, 96)] {
        let loaded = default_scene::load(&ObjOptions {
            width,
            height,
            ..Default::default()
        })
        .unwrap();
        let image = rgb(&loaded.scene, &RenderOptions::default());
        let misses = image
            .data
            .chunks(3)
            .filter(|p| *p == RED || *p == BLACK)
            .count();
        assert_eq!(misses, 0, "{width}x{height}");
    }
}

/// The wall fills the top of the frame, the floor the bottom, the crate the middle: the
/// framing the scene was designed for (brick red above, stone below, wood in the centre).
#[test]
fn default_scene_shows_wall_floor_and_crate_where_designed() {
    let loaded = default_scene::load(&ObjOptions {
        width: 64,
        height: 64,
        ..Default::default()
    })
    .unwrap();
    let image = rgb(&loaded.scene, &RenderOptions::default());
    let [r, g, b] = image.pixel(60, 2);
    assert!(
        r > g + 40 && r > b + 40,
        "brick at the top right: {r} {g} {b}"
    );
    let [r, g, b] = image.pixel(32, 62);
    assert!(
        r > 150 && g > 140 && b > 120,
        "stone at the bottom: {r} {g} {b}"
    );
    let [r, g, b] = image.pixel(30, 36);
    assert!(
        r > g && g > b && r - b > 60,
        "wood in the middle: {r} {g} {b}"
    );
}

// --- exact pixels ----------------------------------------------------------------------

/// 8 x 8 texture with distinct texels; texel (u, v) is image pixel (u, 7 - v).
fn test_texture() -> image::RgbImage {
    image::RgbImage::from_fn(8, 8, |x, y| {
        let (u, v) = (x, 7 - y);
        image::Rgb([
            (30 * u + 5) as u8,
            (30 * v + 5) as u8,
            ((37 * u + 91 * v) % 256) as u8,
        ])
    })
}

/// A 4 x 2 quad in z = 0 around the look-at point, as two triangles: (1 2 3) and (1 3 4).
/// The view axis meets the second at barycentric u = v = 1/4, where the UVs interpolate to
/// (9/32, 9/16): texel position F = (2.25, 4.5) in the 8 x 8 texture.
const QUAD_OBJ: &str = "mtllib quad.mtl
v -1 -1 0
v 3 -1 0
v 3 1 0
v -1 1 0
vt 0.03125 0.0625
vt 1.03125 0.0625
vt 1.03125 1.0625
vt 0.03125 1.0625
usemtl checker
f 1/1 2/2 3/3 4/4
";

fn quad_options() -> ObjOptions {
    ObjOptions {
        width: 64,
        height: 64,
        camera: Some([0.0, 0.0, 4.0]),
        look_at: Some([0.0, 0.0, 0.0]),
        // The ROM's own texture colour, unlit.
        flat: true,
        ..Default::default()
    }
}

/// The centre pixel's colour from the scene's words and the texture bytes, per the ROM's
/// formulas (spec machine_and_microcode §2.2, TCC and PSU2) with the ALU functions: the
/// closest hit's u, v (tests/model), st = UV0 + u·(UV1 − UV0) + v·(UV2 − UV0),
/// F = st·8, (a, b) = frac(F), w1 = (1−b)(1−a), w2 = a(1−b), w3 = b(1−a), w4 = ab, and
/// the texels weighed left to right. The fit's scale is not a power of two, so the hit is
/// near, not at, u = v = 1/4 and F near (2.25, 4.5).
fn expected_centre(scene: &Scene, texture: &image::RgbImage, rom: RomVariant) -> [u8; 3] {
    use theia::emu::core::alu::{add, frac, mul, sub, ONE};
    let ray = model::primary_ray(scene, 32, 32);
    let hit = model::closest_hit(scene, ray).expect("the centre pixel hits the quad");
    let quarter = |w: u32| (model::as_f64(w) - 0.25).abs() < 1e-3;
    assert!(
        hit.triangle == 1 && quarter(hit.u) && quarter(hit.v),
        "{hit:?}"
    );
    let st = model::texture_coordinates(scene, &hit);
    let f = [0, 1].map(|k| mul(st[k], 8 << 17));
    let texel = |k: usize| (f[k] >> 17) & 7;
    let (u1, v1) = (texel(0), texel(1));
    let (u2, v2) = ((u1 + 1) & 7, (v1 + 1) & 7);
    let bytes = |u: u32, v: u32| texture.get_pixel(u, 7 - v).0.map(|c| u32::from(c) << 9);
    let (c1, c2, c3, c4) = (bytes(u1, v2), bytes(u2, v1), bytes(u2, v2), bytes(u1, v1));
    let [a, b] = f.map(frac);
    let w1 = mul(sub(ONE, b), sub(ONE, a));
    let (w2, w3, w4) = (mul(a, sub(ONE, b)), mul(b, sub(ONE, a)), mul(a, b));
    // The faithful ROM weighs (u2, v2) by w1 and (u1, v1) by w4; the fixed ROM the other
    // way round (correct bilinear).
    let (first, last) = match rom {
        RomVariant::Faithful => (c3, c4),
        RomVariant::Fixed => (c4, c3),
    };
    [0, 1, 2].map(|c| {
        let sum = add(
            add(add(mul(first[c], w1), mul(c2[c], w2)), mul(c1[c], w3)),
            mul(last[c], w4),
        );
        (sum >> 9) as u8
    })
}

#[test]
fn two_textured_triangles_render_the_predicted_centre_pixel() {
    let texture = test_texture();
    let dir = scene_dir(&[
        ("quad.obj", QUAD_OBJ.as_bytes()),
        (
            "quad.mtl",
            b"newmtl checker\nKd 1 1 1\nmap_Kd checker.png\n",
        ),
        ("checker.png", &png(&texture)),
    ]);
    let loaded = load_obj(&dir.path().join("quad.obj"), &quad_options()).unwrap();
    assert_eq!(loaded.notes, Vec::<String>::new());
    for rom in [RomVariant::Faithful, RomVariant::Fixed] {
        let image = rgb(
            &loaded.scene,
            &RenderOptions {
                rom,
                ..Default::default()
            },
        );
        assert_eq!(
            image.pixel(32, 32),
            expected_centre(&loaded.scene, &texture, rom),
            "{rom:?}"
        );
        // Row 0 looks above the quad (y > 1): a miss, red in the faithful ROM.
        if rom == RomVariant::Faithful {
            assert_eq!(image.pixel(32, 0), RED);
        }
    }
    // Exact weights at F = (2.25, 4.5) would give (80, 147, 76) and (72, 140, 108).
    assert_eq!(
        expected_centre(&loaded.scene, &texture, RomVariant::Faithful),
        [79, 147, 76]
    );
    assert_eq!(
        expected_centre(&loaded.scene, &texture, RomVariant::Fixed),
        [72, 139, 108]
    );
}

/// The records are what Vertex.mem would hold: Q15.17 vertices scaled by the fit, UV with 0 for z (no vertex normals), the face's normal as the diffuse colour.
#[test]
fn triangle_records_hold_the_obj_in_q15_17() {
    let dir = scene_dir(&[
        ("quad.obj", QUAD_OBJ.as_bytes()),
        (
            "quad.mtl",
            b"newmtl checker\nKd 0.5 0.25 1\nmap_Kd checker.png\n",
        ),
        ("checker.png", &png(&test_texture())),
    ]);
    let loaded = load_obj(&dir.path().join("quad.obj"), &quad_options()).unwrap();
    let (scene, scale) = (loaded.scene, loaded.scale);
    // Rounded to nearest: the fit's scale is not a power of two (the same hardware
    // coordinates whatever the file's units).
    let q = |v: f64| (v * 131072.0).round() as i32 as u32;
    assert_eq!(scene.config[1], [0, 0, q(4.0 * scale)]);
    let vertex = |x: f64, y: f64| [q(x * scale), q(y * scale), 0];
    let one = 1 << 17;
    assert_eq!(scene.triangles.len(), 2);
    assert_eq!(
        scene.triangles[1],
        [
            vertex(-1.0, -1.0),
            [q(0.03125), q(0.0625), 0],
            vertex(3.0, 1.0),
            [q(1.03125), q(1.0625), 0],
            vertex(-1.0, 1.0),
            [q(0.03125), q(1.0625), 0],
            // The face's unit normal, towards the camera; UV.z = 0: no vertex normals.
            [0, 0, one],
        ]
    );
    // CREG_TEXTURE_SIZE is the texture's own side: no resampling.
    assert_eq!(scene.config[5], [8 << 17, 8 << 17, 0]);
}

// --- the atlas -------------------------------------------------------------------------

/// Three quads side by side, each with its own material: two textures share the texture
/// memory as atlas tiles and a colour-only material gets a flat tile. Every pixel shows its
/// own material and nothing else: no texel of a neighbouring tile bleeds in.
#[test]
fn each_material_shows_its_own_texture_from_the_atlas() {
    let obj = "mtllib three.mtl
v -3 -1 0
v -1 -1 0
v -1 1 0
v -3 1 0
v 1 -1 0
v 1 1 0
v 3 -1 0
v 3 1 0
vt 0 0
vt 1 0
vt 1 1
vt 0 1
usemtl green
f 1/1 2/2 3/3 4/4
usemtl blue
f 2/1 5/2 6/3 3/4
usemtl yellow
f 5/1 7/2 8/3 6/4
";
    let mtl =
        "newmtl green\nmap_Kd green.png\nnewmtl blue\nmap_Kd blue.png\nnewmtl yellow\nKd 1 1 0\n";
    let dir = scene_dir(&[
        ("three.obj", obj.as_bytes()),
        ("three.mtl", mtl.as_bytes()),
        ("green.png", &uniform(16, [0, 255, 0])),
        ("blue.png", &uniform(32, [0, 0, 255])),
    ]);
    let loaded = load_obj(
        &dir.path().join("three.obj"),
        &ObjOptions {
            width: 96,
            height: 32,
            camera: Some([0.0, 0.0, 6.0]),
            look_at: Some([0.0, 0.0, 0.0]),
            fov_degrees: 25.0,
            flat: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(loaded.notes, Vec::<String>::new());
    assert_eq!(loaded.scene.config[5][0] >> 17, 64, "a 64 x 64 atlas");
    let image = rgb(&loaded.scene, &RenderOptions::default());
    preview(&image, "atlas");
    // The weights' truncation can take a full channel from 255 to 254; flat tiles are
    // sampled where the weights are exact.
    let full = |c: u8| c >= 254;
    let kind = |p: [u8; 3]| match p {
        RED | BLACK => "miss",
        [0, g, 0] if full(g) => "green",
        [0, 0, b] if full(b) => "blue",
        [255, 255, 0] => "yellow",
        _ => "mixed",
    };
    let mut seen = std::collections::BTreeMap::new();
    for y in 0..32 {
        for x in 0..96 {
            *seen.entry(kind(image.pixel(x, y))).or_insert(0) += 1;
        }
    }
    assert_eq!(seen.get("mixed"), None, "{seen:?}");
    // Left, middle and right thirds, on the middle row.
    assert_eq!(kind(image.pixel(20, 16)), "green");
    assert_eq!(kind(image.pixel(48, 16)), "blue");
    assert_eq!(kind(image.pixel(76, 16)), "yellow");
    assert!(seen["green"] > 300 && seen["blue"] > 300 && seen["yellow"] > 300);
}

fn encoded(image: &image::RgbImage, format: image::ImageFormat) -> Vec<u8> {
    let mut bytes = Vec::new();
    image
        .write_to(&mut std::io::Cursor::new(&mut bytes), format)
        .unwrap();
    bytes
}

/// Classic interiors ship BMP and TGA maps (and some TIFF, GIF, WebP): each is decoded into
/// its tile, texel for texel.
#[test]
fn bmp_tga_and_tiff_textures_are_read() {
    let formats = [
        ("bmp", image::ImageFormat::Bmp),
        ("tga", image::ImageFormat::Tga),
        ("tif", image::ImageFormat::Tiff),
    ];
    for (extension, format) in formats {
        let texture = test_texture();
        let name = format!("checker.{extension}");
        let mtl = format!("newmtl checker\nKd 1 1 1\nmap_Kd {name}\n");
        let dir = scene_dir(&[
            ("quad.obj", QUAD_OBJ.as_bytes()),
            ("quad.mtl", mtl.as_bytes()),
            (name.as_str(), &encoded(&texture, format)),
        ]);
        let loaded = load_obj(&dir.path().join("quad.obj"), &quad_options()).unwrap();
        assert_eq!(loaded.notes, Vec::<String>::new(), "{extension}");
        let memory = &loaded.scene.texture;
        for (u, v) in [(0, 0), (3, 5), (7, 7)] {
            let texel = texture.get_pixel(u, 7 - v).0.map(|c| u32::from(c) << 9);
            let at = 3 * (u + 8 * v) as usize;
            assert_eq!(memory[at..at + 3], texel, "{extension} texel ({u}, {v})");
        }
    }
}

// --- errors and warnings ---------------------------------------------------------------

#[test]
fn a_missing_file_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.obj");
    assert_eq!(
        error_of(load_obj(&path, &ObjOptions::default())),
        format!("{}: No such file or directory (os error 2)", path.display())
    );
}

#[test]
fn parse_errors_name_file_line_column_and_what_was_expected() {
    let dir = scene_dir(&[(
        "bad.obj",
        b"# a triangle with a broken vertex\nv 0 0 0\nv 1 0\nv 0 1 0\nf 1 2 3\n",
    )]);
    let path = dir.path().join("bad.obj");
    assert_eq!(
        error_of(load_obj(&path, &ObjOptions::default())),
        format!(
            "{}:3:1: expected `v` followed by three numbers (x y z), found 2 numbers",
            path.display()
        )
    );
    let text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 4\n";
    assert_eq!(
        error_of(load_obj_text(
            text,
            Path::new("t.obj"),
            &theia::io::scene::obj::DirAssets(".".into()),
            &ObjOptions::default()
        )),
        "t.obj:4:7: v index 4 does not exist: 3 `v` lines so far"
    );
}

#[test]
fn normal_indices_without_normals_load_with_a_warning_and_render_the_same() {
    let with_bad_normals = "v -1 -1 0\nv 1 -1 0\nv 0 1 0\nvt 0 0\nf 1/1/1 2/1/1 3/1/1\n";
    let without = "v -1 -1 0\nv 1 -1 0\nv 0 1 0\nvt 0 0\nf 1/1 2/1 3/1\n";
    let load = |text: &str| {
        let options = ObjOptions {
            width: 32,
            height: 32,
            ..ObjOptions::default()
        };
        load_obj_text(
            text,
            Path::new("t.obj"),
            &theia::io::scene::obj::DirAssets(".".into()),
            &options,
        )
        .expect("loads")
    };
    let (bad, good) = (load(with_bad_normals), load(without));
    assert!(
        bad.notes.contains(
            &"warning: t.obj:5:7: vn index 1 does not exist: 0 `vn` lines so far; it is ignored (the face is lit flat) (and 2 more like it)"
                .to_string()
        ),
        "{:?}",
        bad.notes
    );
    assert!(
        !good.notes.iter().any(|n| n.contains("vn")),
        "{:?}",
        good.notes
    );
    assert_eq!(bad.scene.triangles, good.scene.triangles);
    let frame = |scene| render(scene, &RenderOptions::default()).unwrap().frame;
    assert_eq!(frame(&bad.scene), frame(&good.scene));
}

#[test]
fn a_missing_texture_warns_and_shows_the_diffuse_colour() {
    let dir = scene_dir(&[
        ("quad.obj", QUAD_OBJ.as_bytes()),
        (
            "quad.mtl",
            b"newmtl checker\nKd 0.5 0.25 1\nmap_Kd nope.png\n",
        ),
    ]);
    let loaded = load_obj(&dir.path().join("quad.obj"), &quad_options()).unwrap();
    assert_eq!(
        loaded.notes,
        vec![format!(
            "warning: texture {} of material `checker` not found; using its diffuse colour Kd 0.5 0.25 1",
            dir.path().join("nope.png").display()
        )]
    );
    // A flat tile is sampled where the weights are exactly 1/4: Kd * 255, rounded.
    let image = rgb(&loaded.scene, &RenderOptions::default());
    assert_eq!(image.pixel(32, 32), [128, 64, 255]);
}

#[test]
fn a_missing_material_library_warns_and_shows_white() {
    let dir = scene_dir(&[("quad.obj", QUAD_OBJ.as_bytes())]);
    let loaded = load_obj(&dir.path().join("quad.obj"), &quad_options()).unwrap();
    assert_eq!(
        loaded.notes,
        vec![format!(
            "warning: {}:1: material library {} not found; its materials show white",
            dir.path().join("quad.obj").display(),
            dir.path().join("quad.mtl").display()
        )]
    );
    let image = rgb(&loaded.scene, &RenderOptions::default());
    assert_eq!(image.pixel(32, 32), [255, 255, 255]);
}

#[test]
fn a_camera_too_far_for_q15_17_is_refused() {
    let text = "v -1 -1 0\nv 1 -1 0\nv 0 1 0\nf 1 2 3\n";
    let assets = theia::io::scene::obj::DirAssets(".".into());
    let at = |z: f32| ObjOptions {
        camera: Some([0.0, 0.0, z]),
        look_at: Some([0.0, 0.0, 0.0]),
        ..Default::default()
    };
    assert_eq!(
        error_of(load_obj_text(text, Path::new("far.obj"), &assets, &at(1e6))),
        "far.obj: the camera is 1000000 units from a model of radius 1.4142: keeping the model's radius at least 1 (the least that keeps triangles precise) puts its far side 707107 units from the camera, outside the Q15.17 range (-16384 .. 16384) after fitting; move the camera closer"
    );
    assert_eq!(
        error_of(load_obj_text(text, Path::new("far.obj"), &assets, &at(1000.0))),
        "far.obj: the camera is 1000 units from a model of radius 1.4142: keeping the model's radius at least 1 (the least that keeps triangles precise) puts its far side 707 units from the camera, beyond the ROM's horizon (hits at t >= 250 are misses); move the camera closer"
    );
    // 150 model radii away still fits (within 200 units): the model is scaled to radius 1.
    assert!(load_obj_text(text, Path::new("far.obj"), &assets, &at(150.0)).is_ok());
}

/// A model with a dozen 1024 x 1024 maps keeps at least 512 x 512 texels of each in the
/// default 2048 x 2048 texture memory (the published 256 x 256 one left 64 x 64), and the
/// notes name each shrunk map's size and the filter.
#[test]
fn a_dozen_large_maps_keep_512_texels_a_side() {
    let mut obj = String::from("mtllib many.mtl\n");
    let mut mtl = String::new();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for k in 0..12 {
        let x = k as f64 * 2.0;
        obj += &format!(
            "v {x} 0 0\nv {} 0 0\nv {x} 1 0\nvt 0 0\nvt 1 0\nvt 0 1\nusemtl m{k}\nf -3/-3 -2/-2 -1/-1\n",
            x + 1.0
        );
        mtl += &format!("newmtl m{k}\nmap_Kd t{k}.png\n");
        let image = image::RgbImage::from_fn(1024, 1024, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, (k * 20) as u8])
        });
        files.push((format!("t{k}.png"), png(&image)));
    }
    let mut all: Vec<(&str, &[u8])> =
        vec![("many.obj", obj.as_bytes()), ("many.mtl", mtl.as_bytes())];
    all.extend(files.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
    let dir = scene_dir(&all);
    let loaded = load_obj(&dir.path().join("many.obj"), &ObjOptions::default()).unwrap();
    assert_eq!(loaded.scene.config[5][0] >> 17, 2048);
    // Halving stops as soon as they fit: the last map keeps all its 1024 x 1024 texels.
    assert_eq!(loaded.notes.len(), 11, "{:?}", loaded.notes);
    for (k, note) in loaded.notes.iter().enumerate() {
        let name = dir.path().join(format!("t{k}.png"));
        assert_eq!(
            *note,
            format!(
                "note: texture {} resampled from 1024x1024 to 512x512 (Catmull-Rom filter): 12 textures share the 2048x2048 texture memory",
                name.display()
            )
        );
    }
}

#[test]
fn a_texture_too_large_for_texture_memory_is_resampled_or_refused() {
    let dir = scene_dir(&[
        ("quad.obj", QUAD_OBJ.as_bytes()),
        ("quad.mtl", b"newmtl checker\nmap_Kd big.png\n"),
        ("big.png", &uniform(512, [10, 20, 30])),
    ]);
    let path = dir.path().join("quad.obj");
    let big = dir.path().join("big.png");
    // The published hardware's texture memory.
    let published = ObjOptions {
        texture_size: 256,
        ..quad_options()
    };
    let loaded = load_obj(&path, &published).unwrap();
    assert_eq!(
        loaded.notes,
        vec![format!(
            "note: texture {} resampled from 512x512 to 256x256 (Catmull-Rom filter): larger than the 256x256 texture memory",
            big.display()
        )]
    );
    // The default memory keeps it whole.
    let loaded = load_obj(&path, &quad_options()).unwrap();
    assert_eq!(loaded.notes, Vec::<String>::new());
    assert_eq!(loaded.scene.config[5][0] >> 17, 512);
    assert_eq!(loaded.scene.texture.len(), 512 * 512 * 3);
    let strict = ObjOptions {
        resample_textures: false,
        ..published
    };
    assert_eq!(
        error_of(load_obj(&path, &strict)),
        format!(
            "{}: texture {} is 512x512: too large for the 256x256 texture memory, and resampling is off",
            path.display(),
            big.display()
        )
    );
}

#[test]
fn an_obj_without_triangles_is_refused() {
    let assets = theia::io::scene::obj::DirAssets(".".into());
    let text = "v 0 0 0\nv 1 0 0\nv 0 1 0\nl 1 2\n";
    assert_eq!(
        error_of(load_obj_text(
            text,
            Path::new("empty.obj"),
            &assets,
            &ObjOptions::default()
        )),
        "empty.obj: the OBJ has no triangles (no `f` statement with three or more vertices)"
    );
}

// --- a large model ---------------------------------------------------------------------

/// A 5,120-triangle sphere (no material: white) fitted by default.
/// The 5,120-triangle sphere, unlit (`--flat`): white where it is hit.
fn sphere() -> Scene {
    let text = uv_sphere_obj(64, 41);
    let assets = theia::io::scene::obj::DirAssets(".".into());
    let options = ObjOptions {
        flat: true,
        ..ObjOptions::default()
    };
    let loaded = load_obj_text(&text, Path::new("sphere.obj"), &assets, &options).unwrap();
    assert_eq!(loaded.scene.triangles.len(), 5120);
    loaded.scene
}

/// The sphere's silhouette radius in pixels, from the fitted camera and window alone.
fn silhouette_radius(scene: &Scene) -> f64 {
    let distance = scene.config[1][2] as f64 / 131072.0;
    let half_window = scene.config[3][1] as i32 as f64 / -131072.0;
    let radius = sphere_scale(scene);
    let tangent = radius / (distance * distance - radius * radius).sqrt();
    tangent * distance / half_window * (scene.height() as f64 / 2.0)
}

fn sphere_scale(scene: &Scene) -> f64 {
    // Vertex 0 of triangle 0 lies on the sphere: its distance from the sphere's centre (the
    // look-at point, at the origin of hardware space) is the scale.
    let v = scene.triangles[0][0].map(|w| w as i32 as f64 / 131072.0);
    (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt()
}

/// What a render of the sphere shows, against its silhouette computed from the fit alone.
#[derive(Debug, Default)]
struct SphereCount {
    white: usize,
    /// Pixels within the silhouette (less a pixel) that are not white.
    cracks: usize,
    /// Pixels beyond the silhouette (plus a pixel) that are not misses.
    strays: usize,
}

fn count_sphere_pixels(image: &Rgb8, scene: &Scene, rows: std::ops::Range<u32>) -> SphereCount {
    let radius = silhouette_radius(scene);
    let centre = scene.width() as f64 / 2.0;
    let mut count = SphereCount::default();
    for y in rows {
        for x in 0..scene.width() {
            let r = ((x as f64 - centre).powi(2) + (y as f64 - centre).powi(2)).sqrt();
            let pixel = image.pixel(x, y);
            let white = pixel == [255, 255, 255];
            count.white += usize::from(white);
            count.cracks += usize::from(r < radius - 1.0 && !white);
            count.strays += usize::from(r > radius + 1.0 && pixel != RED && pixel != BLACK);
        }
    }
    count
}

/// In debug builds the whole frame takes minutes: render the middle rows only, at the full
/// 256 x 256 resolution and with all 5,120 triangles.
#[test]
fn a_5120_triangle_obj_renders_its_middle_rows() {
    let mut scene = sphere();
    scene.partitions = vec![Partition::rows(256, 126, 130)];
    let frame = render(&scene, &RenderOptions::default()).unwrap().frame;
    let image = Rgb8::from_frame(&frame);
    let count = count_sphere_pixels(&image, &scene, 126..130);
    assert_eq!((count.cracks, count.strays), (0, 0), "{count:?}");
    assert!(count.white > 4 * 200, "{count:?}");
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "minutes in debug builds: cargo test --release --test emulator obj::"
)]
fn a_5120_triangle_obj_renders_at_256x256_timed() {
    let scene = sphere();
    let mut frames = Vec::new();
    for n in [1, 2] {
        let start = Instant::now();
        let frame = render(&scene, &cores(n)).unwrap().frame;
        println!(
            "5120 triangles at 256x256 with {n} core(s): {:.2} s",
            start.elapsed().as_secs_f64()
        );
        frames.push(frame);
    }
    let image = Rgb8::from_frame(&frames[0]);
    preview(&image, "sphere");
    let count = count_sphere_pixels(&image, &scene, 0..256);
    println!("{count:?}");
    // No cracks between the triangles. A ray almost parallel to a triangle's plane can
    // make BIU's u + v wrap past 16384.0 into [0, 1] (ADD keeps 31 bits): the hardware
    // reports a hit there, so a few stray pixels outside the silhouette are faithful.
    assert_eq!(count.cracks, 0, "{count:?}");
    assert!(count.strays <= 4, "{count:?}");
    let radius = silhouette_radius(&scene);
    let disc = std::f64::consts::PI * radius * radius;
    assert!(
        (count.white as f64 - disc).abs() < std::f64::consts::TAU * radius,
        "{count:?}, disc {disc:.0}"
    );
    assert_eq!(image.pixel(128, 128), [255, 255, 255]);
    assert_eq!(image.pixel(255, 255), RED);
    // Decision 7: the only difference between core counts is the second core's first
    // pixel, (0, 128), a miss that INITIAL leaves black instead of red.
    let two = Rgb8::from_frame(&frames[1]);
    let differing: Vec<(u32, u32)> = (0..256)
        .flat_map(|y| (0..256).map(move |x| (x, y)))
        .filter(|&(x, y)| image.pixel(x, y) != two.pixel(x, y))
        .collect();
    assert_eq!(differing, vec![(0, 128)]);
    assert_eq!(two.pixel(0, 128), BLACK);
}

#[test]
fn geometry_behind_the_camera_and_clamped_atlas_coordinates_warn() {
    let assets = theia::io::scene::obj::DirAssets(".".into());
    let behind = ObjOptions {
        camera: Some([0.0, 0.0, 1.0]),
        look_at: Some([0.0, 0.0, 2.0]),
        rom: RomVariant::Faithful,
        ..Default::default()
    };
    let loaded = load_obj_text(QUAD_OBJ, Path::new("q.obj"), &assets, &behind).unwrap();
    assert_eq!(
        loaded.notes[1..],
        ["warning: 4 vertices are at or behind the camera; BIU has no t > 0 test, so faces behind the camera can cover the view"]
    );
    // The fixed ROM's BIU tests t > 0.
    let fixed = ObjOptions {
        rom: RomVariant::Fixed,
        ..behind
    };
    let loaded = load_obj_text(QUAD_OBJ, Path::new("q.obj"), &assets, &fixed).unwrap();
    assert_eq!(loaded.notes.len(), 1, "{:?}", loaded.notes);

    // Two textures make an atlas; a quad repeating its texture twice cannot keep that.
    let obj = "mtllib two.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 2 0\nvt 2 2\nvt 0 2\nvt 1 1\nusemtl a\nf 1/1 2/2 3/3 4/4\nusemtl b\nf 1/1 2/5 3/5\n";
    let dir = scene_dir(&[
        ("two.obj", obj.as_bytes()),
        (
            "two.mtl",
            b"newmtl a\nmap_Kd a.png\nnewmtl b\nmap_Kd b.png\n",
        ),
        ("a.png", &uniform(4, [1, 2, 3])),
        ("b.png", &uniform(4, [4, 5, 6])),
    ]);
    let loaded = load_obj(&dir.path().join("two.obj"), &ObjOptions::default()).unwrap();
    assert_eq!(
        loaded.notes,
        ["warning: 2 triangles span more than one repeat of their texture; an atlas tile cannot repeat, so their texture coordinates are clamped to the tile (repeat with geometry, or use a single texture)"]
    );
}

/// A closed cube from -1 to 1 whose six faces have their own colour, seen from outside
/// and from inside (each quad is one face, both of its sides the same colour).
fn coloured_cube() -> (String, Vec<u8>) {
    /// A face: its name, colour and corners.
    type Face = (&'static str, [u8; 3], [[i32; 3]; 4]);
    let faces: [Face; 6] = [
        (
            "front",
            [255, 0, 0],
            [[-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]],
        ),
        (
            "back",
            [0, 255, 0],
            [[-1, -1, -1], [-1, 1, -1], [1, 1, -1], [1, -1, -1]],
        ),
        (
            "right",
            [0, 0, 255],
            [[1, -1, -1], [1, 1, -1], [1, 1, 1], [1, -1, 1]],
        ),
        (
            "left",
            [255, 255, 0],
            [[-1, -1, -1], [-1, -1, 1], [-1, 1, 1], [-1, 1, -1]],
        ),
        (
            "top",
            [255, 255, 255],
            [[-1, 1, -1], [-1, 1, 1], [1, 1, 1], [1, 1, -1]],
        ),
        (
            "bottom",
            [0, 255, 255],
            [[-1, -1, -1], [1, -1, -1], [1, -1, 1], [-1, -1, 1]],
        ),
    ];
    let mut obj = String::from("mtllib cube.mtl\n");
    let mut mtl = String::new();
    for (n, (name, rgb, corners)) in faces.iter().enumerate() {
        let [r, g, b] = rgb.map(|c| f64::from(c) / 255.0);
        mtl += &format!("newmtl {name}\nKd {r} {g} {b}\n");
        for [x, y, z] in corners {
            obj += &format!("v {x} {y} {z}\n");
        }
        let i = 4 * n + 1;
        obj += &format!("usemtl {name}\nf {i} {} {} {}\n", i + 1, i + 2, i + 3);
    }
    (obj, mtl.into_bytes())
}

#[test]
fn view_presets_look_at_the_named_face_from_outside_and_inside() {
    let (obj, mtl) = coloured_cube();
    let dir = scene_dir(&[("cube.obj", obj.as_bytes()), ("cube.mtl", &mtl)]);
    let image = |view: ViewPreset, inside: bool| {
        let options = ObjOptions {
            width: 32,
            height: 32,
            view,
            inside,
            flat: true,
            rom: RomVariant::Faithful,
            ..ObjOptions::default()
        };
        let scene = load_obj(&dir.path().join("cube.obj"), &options)
            .unwrap()
            .scene;
        let image = rgb(&scene, &RenderOptions::default());
        preview(&image, &format!("cube_{view:?}_{inside}"));
        image
    };
    let centre = |view, inside| image(view, inside).pixel(16, 16);
    // Flat tiles come out exact: Kd 1.0 is 255.
    for (view, outside, inside) in [
        (ViewPreset::Front, [255, 0, 0], [0, 255, 0]),
        (ViewPreset::Back, [0, 255, 0], [255, 0, 0]),
        (ViewPreset::Right, [0, 0, 255], [255, 255, 0]),
        (ViewPreset::Left, [255, 255, 0], [0, 0, 255]),
        (ViewPreset::Top, [255, 255, 255], [0, 255, 255]),
        (ViewPreset::Bottom, [0, 255, 255], [255, 255, 255]),
    ] {
        assert_eq!(centre(view, false), outside, "{view:?} from outside");
        // With the faithful ROM: the face behind the inside camera is left out, or BIU
        // (no t > 0 test) would show it everywhere.
        assert_eq!(centre(view, true), inside, "{view:?} from inside");
    }
    // Iso sees the front, right and top faces from outside; from inside, through the
    // front face, the back, left and bottom ones (among others).
    let colours = |image: Rgb8| {
        let mut seen: Vec<[u8; 3]> = image.data.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
        seen.sort();
        seen.dedup();
        seen
    };
    // (Misses are red or, at a core's first pixel, black.)
    let (near, far) = (
        [[255, 0, 0], [0, 0, 255], [255, 255, 255]],
        [[0, 255, 0], [255, 255, 0], [0, 255, 255]],
    );
    let outside = colours(image(ViewPreset::Iso, false));
    assert!(
        near.iter().all(|face| outside.contains(face)),
        "{outside:?}"
    );
    assert!(
        !far.iter().any(|face| outside.contains(face)),
        "{outside:?}"
    );
    let inside = colours(image(ViewPreset::Iso, true));
    assert!(far.iter().all(|face| inside.contains(face)), "{inside:?}");
    assert!(!inside.contains(&[255, 0, 0]), "{inside:?}");
}

#[test]
fn textured_obj_scenes_are_lit_unless_flat() {
    let scene = |flat: bool| {
        let options = ObjOptions {
            flat,
            ..quad_options()
        };
        load_obj_text(
            QUAD_OBJ,
            Path::new("quad.obj"),
            &theia::io::scene::obj::MemoryAssets(&[]),
            &options,
        )
        .unwrap()
        .scene
    };
    assert_eq!(scene(true).program, None);
    assert_eq!(
        scene(false).program.as_deref(),
        Some(theia::io::scene::obj::lighting_program())
    );
}

/// A ball on a floor 100 units wide: two floor triangles alone would hold the whole scene
/// to a small scale (BIU's |T|·|E1|·|E2| grows with them) and the ball's small triangles,
/// their determinants shrunk, came out with holes the floor showed through. The loader
/// cuts the floor into coplanar pieces first: the scale is the ball's, and every pixel
/// inside the ball's silhouette shows the ball.
#[test]
fn a_huge_floor_does_not_cost_a_small_model_its_triangles() {
    let ball = theia::io::scene::generate::displaced_icosphere_obj(3, 0.0);
    let mut obj = String::from("mtllib m.mtl\nusemtl ball\n");
    let mut count = 0;
    for line in ball.lines() {
        if let Some(rest) = line.strip_prefix("v ") {
            let p: Vec<f64> = rest
                .split_whitespace()
                .map(|c| c.parse().unwrap())
                .collect();
            obj += &format!("v {} {} {}\n", p[0] * 0.5, p[1] * 0.5 + 0.5, p[2] * 0.5);
            count += 1;
        } else if line.starts_with("f ") {
            obj += line;
            obj += "\n";
        }
    }
    let floor = format!(
        "v -50 0 -50\nv 50 0 -50\nv 50 0 50\nv -50 0 50\nusemtl floor\nf {} {} {} {}\n",
        count + 1,
        count + 4,
        count + 3,
        count + 2
    );
    let mtl = b"newmtl ball\nKd 1 1 1\nnewmtl floor\nKd 1 0 0\n";
    let options = |split_large| ObjOptions {
        width: 64,
        height: 64,
        camera: Some([0.0, 2.0, 2.0]),
        look_at: Some([0.0, 0.5, 0.0]),
        flat: true,
        split_large,
        ..ObjOptions::default()
    };
    let fixed = RenderOptions {
        rom: RomVariant::Fixed,
        ..RenderOptions::default()
    };
    let white = |image: &Rgb8, x: u32, y: u32| image.pixel(x, y).iter().all(|&c| c >= 254);
    let dir = scene_dir(&[("alone.obj", obj.as_bytes()), ("m.mtl", mtl)]);
    let alone = load_obj(&dir.path().join("alone.obj"), &options(true)).unwrap();
    let alone = rgb(&alone.scene, &fixed);
    let with_floor = obj.clone() + &floor;
    let dir = scene_dir(&[("floor.obj", with_floor.as_bytes()), ("m.mtl", mtl)]);
    let path = dir.path().join("floor.obj");
    let (cut, whole) = (
        load_obj(&path, &options(true)).unwrap(),
        load_obj(&path, &options(false)).unwrap(),
    );
    // Cut, only the model's radius (half the bounds' diagonal) limits the scale; whole,
    // the floor's |T|·|E1|·|E2| holds it to (4096 / |T|·|E1|·|E2|)^(1/3), 5.7 times less.
    let radius = glam::DVec3::new(100.0, 1.0, 100.0).length() / 2.0;
    assert_eq!(cut.scale, theia::io::scene::obj::MAX_FIT_RADIUS / radius);
    assert!(
        cut.scale > 5.0 * whole.scale,
        "{} vs {}",
        cut.scale,
        whole.scale
    );
    assert!(
        cut.notes
            .iter()
            .any(|n| n.contains("2 triangles longer than 1/32 of the model were cut")),
        "{:?}",
        cut.notes
    );
    let holes = |image: &Rgb8| {
        let inside = |x: u32, y: u32| {
            (x.saturating_sub(1)..=(x + 1).min(63))
                .all(|x| (y.saturating_sub(1)..=(y + 1).min(63)).all(|y| white(&alone, x, y)))
        };
        (0..64u32)
            .flat_map(|y| (0..64u32).map(move |x| (x, y)))
            .filter(|&(x, y)| inside(x, y) && !white(image, x, y))
            .count()
    };
    let (cut_image, whole_image) = (rgb(&cut.scene, &fixed), rgb(&whole.scene, &fixed));
    preview(&cut_image, "ball_on_floor_cut");
    preview(&whole_image, "ball_on_floor_whole");
    assert_eq!(holes(&cut_image), 0);
    assert!(
        holes(&whole_image) > 0,
        "the floor kept whole should show through"
    );
}
