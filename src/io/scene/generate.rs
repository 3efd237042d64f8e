//! Generated test scenes, as meshes and as OBJ text: large meshes for tests and benchmarks
//! whose size and shape are chosen by parameters, not stored in the repository.

use std::fmt::Write;

/// A generated triangle mesh: what an OBJ file of it holds. Coordinates lie on the grid
/// of six decimals its OBJ text writes them at, so the mesh and its text are one model, and
/// a scene built from either has the same words.
#[derive(Clone, Debug, PartialEq)]
pub struct Mesh {
    pub positions: Vec<[f64; 3]>,
    /// Empty, or one texture coordinate per position (each corner uses its position's).
    pub texcoords: Vec<[f64; 2]>,
    /// Triangles as indices into `positions`, in file order.
    pub faces: Vec<[usize; 3]>,
}

impl Mesh {
    /// The mesh as OBJ text, after a `# comment` line.
    pub fn to_obj(&self, comment: &str) -> String {
        let mut obj = format!("# {comment}\n");
        for (i, [x, y, z]) in self.positions.iter().enumerate() {
            let _ = writeln!(obj, "v {x:.6} {y:.6} {z:.6}");
            if let Some([u, v]) = self.texcoords.get(i) {
                let _ = writeln!(obj, "vt {u:.6} {v:.6}");
            }
        }
        let textured = !self.texcoords.is_empty();
        for face in &self.faces {
            let [a, b, c] = face.map(|i| i + 1);
            let _ = if textured {
                writeln!(obj, "f {a}/{a} {b}/{b} {c}/{c}")
            } else {
                writeln!(obj, "f {a} {b} {c}")
            };
        }
        obj
    }
}

/// `value` on the six-decimal grid of the OBJ text: the double nearest a whole number of
/// millionths, as parsing its `{:.6}` text gives.
fn on_grid(value: f64) -> f64 {
    (value * 1e6).round() / 1e6
}

/// A UV sphere of radius 1 with `2 * segments * (rings - 1)` triangles and texture
/// coordinates, for tests and benchmarks of large scenes (no material: white).
pub fn uv_sphere(segments: u32, rings: u32) -> Mesh {
    let mut mesh = Mesh {
        positions: Vec::new(),
        texcoords: Vec::new(),
        faces: Vec::new(),
    };
    for ring in 0..=rings {
        let theta = std::f64::consts::PI * ring as f64 / rings as f64;
        for segment in 0..=segments {
            let phi = std::f64::consts::TAU * segment as f64 / segments as f64;
            mesh.positions.push(
                [
                    theta.sin() * phi.cos(),
                    theta.cos(),
                    theta.sin() * phi.sin(),
                ]
                .map(on_grid),
            );
            mesh.texcoords.push(
                [
                    segment as f64 / segments as f64,
                    1.0 - ring as f64 / rings as f64,
                ]
                .map(on_grid),
            );
        }
    }
    let index = |ring: u32, segment: u32| (ring * (segments + 1) + segment) as usize;
    for ring in 0..rings {
        for segment in 0..segments {
            let (a, b) = (index(ring, segment), index(ring, segment + 1));
            let (c, d) = (index(ring + 1, segment + 1), index(ring + 1, segment));
            // The poles' degenerate halves are left out.
            if ring != 0 {
                mesh.faces.push([a, b, c]);
            }
            if ring != rings - 1 {
                mesh.faces.push([a, c, d]);
            }
        }
    }
    mesh
}

/// [`uv_sphere`] as OBJ text.
pub fn uv_sphere_obj(segments: u32, rings: u32) -> String {
    uv_sphere(segments, rings).to_obj("generated UV sphere")
}

/// A closed, bumpy mesh of `20 * 4^subdivisions` small triangles (81,920 at 6): an
/// icosahedron subdivided `subdivisions` times, its vertices pushed out to radius
/// `1 + amplitude * bumps(direction)`, a smooth function with dents and ridges, so that many
/// triangles are seen nearly edge-on, as on scanned models. No texture coordinates, no
/// material.
pub fn displaced_icosphere(subdivisions: u32, amplitude: f64) -> Mesh {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let mut vertices: Vec<[f64; 3]> = [
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ]
    .map(normalised)
    .to_vec();
    let mut faces: Vec<[usize; 3]> = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    for _ in 0..subdivisions {
        let mut midpoints = std::collections::HashMap::new();
        let mut midpoint = |a: usize, b: usize, vertices: &mut Vec<[f64; 3]>| {
            *midpoints.entry((a.min(b), a.max(b))).or_insert_with(|| {
                let (p, q) = (vertices[a], vertices[b]);
                vertices.push(normalised([0, 1, 2].map(|i| (p[i] + q[i]) / 2.0)));
                vertices.len() - 1
            })
        };
        faces = faces
            .iter()
            .flat_map(|&[a, b, c]| {
                let ab = midpoint(a, b, &mut vertices);
                let bc = midpoint(b, c, &mut vertices);
                let ca = midpoint(c, a, &mut vertices);
                [[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]
            })
            .collect();
    }
    let positions = vertices
        .into_iter()
        .map(|[x, y, z]| {
            let bumps = (5.0 * x).sin() * (7.0 * y).sin() * (3.0 * z + 1.0).sin();
            let r = 1.0 + amplitude * bumps;
            [r * x, r * y, r * z].map(on_grid)
        })
        .collect();
    Mesh {
        positions,
        texcoords: Vec::new(),
        faces,
    }
}

/// [`displaced_icosphere`] as OBJ text.
pub fn displaced_icosphere_obj(subdivisions: u32, amplitude: f64) -> String {
    let mesh = displaced_icosphere(subdivisions, amplitude);
    let comment = format!(
        "generated displaced icosphere, {} triangles",
        mesh.faces.len()
    );
    mesh.to_obj(&comment)
}

fn normalised(p: [f64; 3]) -> [f64; 3] {
    let length = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
    p.map(|c| c / length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn icosphere_sizes() {
        for (subdivisions, triangles) in [(0, 20), (1, 80), (6, 81_920)] {
            let obj = displaced_icosphere_obj(subdivisions, 0.1);
            assert_eq!(
                obj.lines().filter(|l| l.starts_with("f ")).count(),
                triangles
            );
            // A closed mesh: V - E + F = 2, with E = 3F/2.
            let v = obj.lines().filter(|l| l.starts_with("v ")).count();
            assert_eq!(v + triangles - 3 * triangles / 2, 2);
        }
    }
}
