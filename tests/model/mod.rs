//! An independent model of what the ROM computes per pixel, written from the spec's
//! formulas (machine_and_microcode §2.2) with the bit-exact ALU primitives as arithmetic:
//! the primary ray (CPPU + RGU) and the closest hit BIU keeps. Tests use it to predict
//! CREG_LAST_t/u/v without running the microcode.
#![allow(dead_code)]

use theia::emu::core::alu::{self, Vec3};
use theia::io::scene::{config_row, Scene, Triangle};

/// The value RGU gives CREG_LAST_t.x before the triangles: 0x1F40000 (250.0 in Q15.17).
pub const START_T: u32 = 0x1F4_0000;

pub fn lanes2(a: Vec3, b: Vec3, f: fn(u32, u32) -> u32) -> Vec3 {
    [f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2])]
}

/// A word read as Q15.17.
pub fn as_f64(word: u32) -> f64 {
    f64::from(word as i32) / 131072.0
}

/// The primary ray of pixel (x, y): `D0 = POS·SCALE + WMIN − CAM`, `RAY = D0 / |D0|`, with
/// CPPU's `SCALE = (WMAX − WMIN) / RESOLUTION`.
pub fn primary_ray(scene: &Scene, x: u32, y: u32) -> Vec3 {
    let c = &scene.config;
    let scale = lanes2(
        lanes2(
            c[config_row::PROJECTION_WINDOW_MAX],
            c[config_row::PROJECTION_WINDOW_MIN],
            alu::sub,
        ),
        c[config_row::RESOLUTION],
        alu::div,
    );
    let position = [x << 17, y << 17, 0];
    let point = lanes2(
        lanes2(position, scale, alu::mul),
        c[config_row::PROJECTION_WINDOW_MIN],
        alu::add,
    );
    let d0 = lanes2(point, c[config_row::CAMERA_POSITION], alu::sub);
    lanes2(d0, [alu::vector_magnitude(d0); 3], alu::div)
}

/// The hit BIU keeps: distance, barycentrics and the triangle (index into the scene).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hit {
    pub t: u32,
    pub u: u32,
    pub v: u32,
    pub triangle: usize,
}

impl Hit {
    pub fn record<'s>(&self, scene: &'s Scene) -> &'s Triangle {
        &scene.triangles[self.triangle]
    }
}

/// JGEX's relation: `x > y` (signed) or `|x| == |y|`.
pub fn at_least(x: u32, y: u32) -> bool {
    let magnitude = |x: u32| (x as i32).unsigned_abs();
    x as i32 > y as i32 || magnitude(x) == magnitude(y)
}

/// JLEX's relation: `x <= y` (signed) or `|x| == |y|`.
pub fn at_most(x: u32, y: u32) -> bool {
    let magnitude = |x: u32| (x as i32).unsigned_abs();
    x as i32 <= y as i32 || magnitude(x) == magnitude(y)
}

/// The closest hit BIU keeps for `ray`: per triangle `E1 = V1−V0, E2 = V2−V0, T = CAM−V0,
/// P = RAY×E2, Q = T×E1, H1 = Q·E2, H2 = P·T, H3 = Q·RAY, Δ = P·E1, t = H1/Δ, u = H2/Δ,
/// v = H3/Δ`; inside when u ≥ 0, v ≥ 0, u + v ≤ 1.0; kept when t is below the closest so
/// far (starting at [`START_T`]). No test of t > 0, as in the ROM.
pub fn closest_hit(scene: &Scene, ray: Vec3) -> Option<Hit> {
    let camera = scene.config[config_row::CAMERA_POSITION];
    let mut last_t = START_T;
    let mut best = None;
    for (index, triangle) in scene.triangles.iter().enumerate() {
        let (v0, v1, v2) = (triangle[0], triangle[2], triangle[4]);
        let e1 = lanes2(v1, v0, alu::sub);
        let e2 = lanes2(v2, v0, alu::sub);
        let t_vec = lanes2(camera, v0, alu::sub);
        let p = alu::cross(ray, e2);
        let q = alu::cross(t_vec, e1);
        let h1 = alu::dot(q, e2);
        let h2 = alu::dot(p, t_vec);
        let h3 = alu::dot(q, ray);
        let delta = alu::dot(p, e1);
        let (t, u, v) = (
            alu::div(h1, delta),
            alu::div(h2, delta),
            alu::div(h3, delta),
        );
        let inside = at_least(u, 0) && at_least(v, 0) && at_most(alu::add(u, v), alu::ONE);
        if inside && !at_least(t, last_t) {
            last_t = t;
            best = Some(Hit {
                t,
                u,
                v,
                triangle: index,
            });
        }
    }
    best
}

/// [`closest_hit`] for every pixel, row-major.
pub fn hits(scene: &Scene) -> Vec<Option<Hit>> {
    let (width, height) = (scene.width(), scene.height());
    (0..height)
        .flat_map(|y| (0..width).map(move |x| (x, y)))
        .map(|(x, y)| closest_hit(scene, primary_ray(scene, x, y)))
        .collect()
}

/// TCC's interpolated texture coordinates of a hit:
/// `st = UV0 + u·(UV1 − UV0) + v·(UV2 − UV0)` (all three lanes).
pub fn texture_coordinates(scene: &Scene, hit: &Hit) -> Vec3 {
    let record = hit.record(scene);
    let (uv0, uv1, uv2) = (record[1], record[3], record[5]);
    let along_u = lanes2([hit.u; 3], lanes2(uv1, uv0, alu::sub), alu::mul);
    let along_v = lanes2([hit.v; 3], lanes2(uv2, uv0, alu::sub), alu::mul);
    lanes2(lanes2(along_u, along_v, alu::add), uv0, alu::add)
}

/// A pixel shader that writes BIU's closest hit as the pixel's three words:
/// (CREG_LAST_t.x, CREG_LAST_u.x, CREG_LAST_v.x). Renders with it can be checked against
/// [`closest_hit`] without trusting any other render.
pub const HIT_SHADER: &str = "\
ENTRYPOINT_ADRR_PIXELSHADER:
        COPY R1 CREG_LAST_t
        COPY R2 CREG_LAST_u
        SWIZZLE3D R2 SWIZZLE_XXX
        XCHANGEX R3 R2 R1                   // (t, u, u)
        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL R3
        COPY R4 CREG_CURRENT_OUTPUT_PIXEL
        SWIZZLE3D R4 SWIZZLE_ZZZ            // the blue word's address, three times
        COPY R5 CREG_LAST_v
        SWIZZLE3D R5 SWIZZLE_XXX
        OMWRITE OREG_PIXEL_COLOR R4 R5      // blue = v
        RETURN RT_TRUE
";

/// [`HIT_SHADER`] assembled.
pub fn hit_shader() -> Vec<theia::emu::isa::Word> {
    theia::emu::isa::asm::assemble(HIT_SHADER, std::path::Path::new("hits.shdr"))
        .expect("the hit shader assembles")
        .imem
}

/// Every pixel of a frame rendered with [`hit_shader`] (its output words, row-major) shows
/// the predicted hit: (t, u, v) of [`closest_hit`], or t = [`START_T`] for a miss (whose u
/// and v lanes are an older pixel's). Returns the number of hits.
pub fn assert_words_show_hits(label: &str, predicted: &[Option<Hit>], words: &[u32]) -> usize {
    assert_eq!(words.len(), 3 * predicted.len(), "{label}");
    for (k, hit) in predicted.iter().enumerate() {
        let pixel = &words[3 * k..3 * k + 3];
        match hit {
            Some(hit) => assert_eq!(pixel, [hit.t, hit.u, hit.v], "{label}: pixel {k}"),
            None => assert_eq!(pixel[0], START_T, "{label}: pixel {k} is a miss"),
        }
    }
    predicted.iter().flatten().count()
}

/// Whether the ray from the camera along `ray` passes through a triangle of `scene` in
/// front of the camera, in exact integer arithmetic on the words (no rounding at all): with
/// A, B, C the corners relative to the camera, `ray` = αA + βB + γC with α, β, γ > 0,
/// i.e. `ray·(B×C)`, `ray·(C×A)`, `ray·(A×B)` all nonzero with the sign of `A·(B×C)`.
/// The ground truth a watertight BIU is held to; BIU's own (rounded) u and v may disagree
/// with it by far near a silhouette.
pub fn exactly_hit(scene: &Scene, ray: Vec3) -> Option<usize> {
    let wide = |w: [u32; 3]| w.map(|c| i128::from(c as i32));
    let camera = wide(scene.config[config_row::CAMERA_POSITION]);
    let r = wide(ray);
    let sub = |a: [i128; 3], b: [i128; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let cross = |a: [i128; 3], b: [i128; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let dot = |a: [i128; 3], b: [i128; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    scene.triangles.iter().position(|t| {
        let [a, b, c] = [t[0], t[2], t[4]].map(|v| sub(wide(v), camera));
        let volume = dot(a, cross(b, c)).signum();
        volume != 0
            && [cross(b, c), cross(c, a), cross(a, b)]
                .iter()
                .all(|n| dot(r, *n).signum() == volume)
    })
}
