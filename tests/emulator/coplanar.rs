//! Issue 38: coplanar overlapping faces (a rug lying in the floor's plane). Both ROMs keep
//! a hit only when its t is below the closest so far (`JGEX t, LAST_t` skips the keep), so
//! each pixel shows the face whose computed t is smaller, and on equal t the face that
//! comes first in the file. Each face's t is DIV(H1, Δ) from its own vertices, truncated,
//! so in the overlap the winner changes from pixel to pixel: streaks, the fixed-point form
//! of a float renderer's z-fighting (docs/real-scenes.md).

use crate::model::{self, Hit};

use theia::emu::core::alu::Vec3;
use theia::emu::core::RomVariant;
use theia::emu::machine::{render, RenderOptions};
use theia::io::image::Rgb8;
use theia::io::scene::obj::{load_obj_text, MemoryAssets, ObjOptions};
use theia::io::scene::{config_row, Scene};

const MTL: &str = "newmtl floor\nKd 0.5 0.5 0.5\nnewmtl rug\nKd 0 0 1\n";
const FLOOR: &str = "usemtl floor\nv -2 0 -2\nv 2 0 -2\nv 2 0 2\nv -2 0 2\nf -4 -3 -2 -1\n";
const RUG: &str = "usemtl rug\nv -1 0 -1\nv 1 0 -1\nv 1 0 1\nv -1 0 1\nf -4 -3 -2 -1\n";
const ASSETS: &[(&str, &[u8])] = &[("room.mtl", MTL.as_bytes())];
const SIZE: u32 = 64;

/// The floor and the rug, in the order given, seen from above and in front.
fn scene(first: &str, second: &str) -> Scene {
    let obj = format!("mtllib room.mtl\n{first}{second}");
    let options = ObjOptions {
        width: SIZE,
        height: SIZE,
        camera: Some([0.0, 3.0, 4.0]),
        look_at: Some([0.0, 0.0, 0.0]),
        flat: true,
        ..Default::default()
    };
    load_obj_text(
        &obj,
        std::path::Path::new("room.obj"),
        &MemoryAssets(ASSETS),
        &options,
    )
    .expect("the scene loads")
    .scene
}

/// What a pixel shows: the rug (red), the floor (grey) or nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Face {
    Floor,
    Rug,
    Nothing,
}

fn face_of_colour(pixel: [u8; 3]) -> Face {
    match pixel {
        [0, 0, 255] => Face::Rug,
        [0, 0, 0] | [255, 0, 0] => Face::Nothing,
        [r, g, b] if r == g && g == b && r > 100 => Face::Floor,
        other => panic!("unexpected colour {other:?}"),
    }
}

/// Which face a triangle of the scene belongs to: the rug's corners lie within half the
/// floor's extent.
fn face_of_triangle(scene: &Scene, triangle: usize) -> Face {
    let extent = |k: usize| {
        let t = &scene.triangles[k];
        [t[0], t[2], t[4]]
            .iter()
            .map(|v| (v[0] as i32).unsigned_abs())
            .max()
            .unwrap()
    };
    let floor = (0..scene.triangles.len()).map(extent).max().unwrap();
    if extent(triangle) <= floor / 2 + 1 {
        Face::Rug
    } else {
        Face::Floor
    }
}

/// Each face's nearest hit BIU accepts for `ray` (the model's arithmetic: t = DIV(H1, Δ)),
/// one triangle of the scene at a time.
fn nearest_per_face(scene: &Scene, ray: Vec3) -> [Option<u32>; 2] {
    let mut nearest = [None; 2];
    for triangle in 0..scene.triangles.len() {
        let alone = Scene {
            triangles: vec![scene.triangles[triangle]],
            ..scene.clone()
        };
        if let Some(Hit { t, .. }) = model::closest_hit(&alone, ray) {
            let face = face_of_triangle(scene, triangle) as usize;
            let best: &mut Option<u32> = &mut nearest[face];
            *best = Some(best.map_or(t, |b: u32| (b as i32).min(t as i32) as u32));
        }
    }
    nearest
}

/// Per pixel of the overlap (both faces hit): whether the rug's t is below the floor's,
/// equal to it, or above it.
#[derive(Debug, Default, PartialEq, Eq)]
struct Overlap {
    rug_nearer: usize,
    equal: usize,
    floor_nearer: usize,
}

fn overlap(scene: &Scene) -> (Overlap, Vec<Option<std::cmp::Ordering>>) {
    let mut counts = Overlap::default();
    let mut order = Vec::new();
    for y in 0..SIZE {
        for x in 0..SIZE {
            let ray = model::primary_ray(scene, x, y);
            let [floor, rug] = nearest_per_face(scene, ray);
            let relation = floor.zip(rug).map(|(f, r)| (r as i32).cmp(&(f as i32)));
            match relation {
                Some(std::cmp::Ordering::Less) => counts.rug_nearer += 1,
                Some(std::cmp::Ordering::Equal) => counts.equal += 1,
                Some(std::cmp::Ordering::Greater) => counts.floor_nearer += 1,
                None => {}
            }
            order.push(relation);
        }
    }
    (counts, order)
}

fn faces(scene: &Scene, rom: RomVariant) -> Vec<Face> {
    let options = RenderOptions {
        rom,
        ..Default::default()
    };
    let image = Rgb8::from_frame(&render(scene, &options).expect("renders").frame);
    (0..SIZE * SIZE)
        .map(|k| face_of_colour(image.pixel(k % SIZE, k / SIZE)))
        .collect()
}

/// The same two faces as a float ray tracer sees them: t from each face's plane in single
/// precision (t = n·(V0 − C) / n·R with n from the face's first two edges, as
/// Möller-Trumbore computes it up to the order of operations), on the same rays.
fn float_overlap(scene: &Scene, order: &[Option<std::cmp::Ordering>]) -> Overlap {
    let float = |v: Vec3| v.map(|w| (w as i32) as f32 / 131072.0);
    let camera = float(scene.config[config_row::CAMERA_POSITION]);
    let sub = |a: [f32; 3], b: [f32; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let dot = |a: [f32; 3], b: [f32; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let cross = |a: [f32; 3], b: [f32; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    // The first triangle of each face stands for its plane.
    let plane = |face: Face| {
        let k = (0..scene.triangles.len())
            .find(|&k| face_of_triangle(scene, k) == face)
            .unwrap();
        let t = &scene.triangles[k];
        let (v0, v1, v2) = (float(t[0]), float(t[2]), float(t[4]));
        (v0, cross(sub(v1, v0), sub(v2, v0)))
    };
    let (floor, rug) = (plane(Face::Floor), plane(Face::Rug));
    let t = |(v0, n): ([f32; 3], [f32; 3]), ray: [f32; 3]| dot(n, sub(v0, camera)) / dot(n, ray);
    let mut counts = Overlap::default();
    for (k, relation) in order.iter().enumerate() {
        if relation.is_none() {
            continue;
        }
        let ray = float(model::primary_ray(scene, k as u32 % SIZE, k as u32 / SIZE));
        let (f, r) = (t(floor, ray), t(rug, ray));
        if r < f {
            counts.rug_nearer += 1;
        } else if r == f {
            counts.equal += 1;
        } else {
            counts.floor_nearer += 1;
        }
    }
    counts
}

/// Where the rug overlaps the floor, each pixel shows the face with the smaller computed t,
/// and on a tie the one first in the file, in both ROMs: so the rug wins only some of its
/// pixels (exact counts below), and putting it first in the file gives it the ties too.
/// A float ray tracer splits the same overlap by its own rounding.
#[test]
fn coplanar_faces_split_their_overlap_by_the_truncated_t() {
    let floor_first = scene(FLOOR, RUG);
    let rug_first = scene(RUG, FLOOR);
    let (counts, order) = overlap(&floor_first);
    println!("overlap (model's t): {counts:?}");
    // 790 pixels see both faces: the rug is nearer at 123, the floor at 478, 189 tie.
    let expected = Overlap {
        rug_nearer: 123,
        equal: 189,
        floor_nearer: 478,
    };
    assert_eq!(counts, expected);
    for rom in [RomVariant::Fixed, RomVariant::Faithful] {
        for (scene, rug_wins_ties) in [(&floor_first, false), (&rug_first, true)] {
            let shown = faces(scene, rom);
            let mut tally = std::collections::BTreeMap::new();
            for (k, (&face, relation)) in shown.iter().zip(&order).enumerate() {
                *tally.entry(face).or_insert(0) += 1;
                let Some(relation) = relation else {
                    continue;
                };
                let want = match relation {
                    std::cmp::Ordering::Less => Face::Rug,
                    std::cmp::Ordering::Equal if rug_wins_ties => Face::Rug,
                    _ => Face::Floor,
                };
                assert_eq!(face, want, "{rom:?}, rug first {rug_wins_ties}: pixel {k}");
            }
            println!("{rom:?}, rug first {rug_wins_ties}: {tally:?}");
            let rug = if rug_wins_ties { 123 + 189 } else { 123 };
            assert_eq!(tally[&Face::Rug], rug, "{rom:?}, rug first {rug_wins_ties}");
        }
    }
    let float = float_overlap(&floor_first, &order);
    println!("overlap (f32 t): {float:?}");
    // Single precision splits the same 790 pixels by its own rounding: other pixels, other
    // counts, ties again left to the drawing (or traversal) order.
    let expected = Overlap {
        rug_nearer: 233,
        equal: 126,
        floor_nearer: 431,
    };
    assert_eq!(float, expected);
}
