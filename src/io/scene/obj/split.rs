//! Huge triangles split into coplanar pieces before the fit. The fit scales the model as
//! large as BIU's products allow without wrapping, and a triangle's |T|·|E1|·|E2| (camera
//! to corner times both edges) grows with its size: one floor or wall triangle spanning a
//! room held a whole interior to a fraction of the scale its other triangles allow, and
//! the chairs' and scans' small triangles, their determinants shrunk with the square of
//! the scale, fell below what the fixed ROM's inside test can tell from edge-on (holes, and
//! specks where a ray went through them). In a model of 512 triangles or more with an edge
//! longer than 1/8 of its bounding diameter, every edge longer than 1/32 of it is cut at its
//! midpoint (red-green refinement: one, two or three cut
//! edges give two, three or four triangles of the same winding), again until none is.
//! The midpoint of an edge is (a + b) / 2 whichever side computes it, and whether an edge
//! is cut depends on its length alone, so two triangles sharing an edge cut it at the same
//! points: no T-junction, and the fixed ROM's watertight test stays watertight. Texture
//! coordinates and normals are cut with the positions.

use std::collections::HashMap;

use glam::DVec3;
use rayon::prelude::*;

use super::load::{Corner, ObjModel, ObjTriangle, NO_INDEX};

/// Edges longer than this share of the bounding diameter are cut,
const LONGEST_SHARE: f64 = 1.0 / 32.0;
/// when some edge is longer than this share
const HUGE_SHARE: f64 = 1.0 / 8.0;
/// and the model has at least this many triangles.
const MIN_TRIANGLES: usize = 512;
/// Cuts of one triangle's pieces, at most (each halves some edge).
const MAX_DEPTH: u32 = 20;
/// Pieces the whole model may gain; past it triangles stay whole.
const MAX_NEW_TRIANGLES: usize = 4 << 20;

/// The model with every huge triangle cut (None when no edge is long enough), and how
/// many triangles were cut into how many pieces.
pub fn split_large(model: &ObjModel) -> Option<(ObjModel, usize, usize)> {
    let position = |c: &Corner| DVec3::from(model.positions[c.position()]);
    // On all threads: the order only decides which of -0.0 and 0.0 a bound keeps, and
    // the limit squares it.
    let (min, max) = (model.triangles.par_iter())
        .fold(
            || (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
            |bounds, t| {
                (t.corners.iter().map(position)).fold(bounds, |(lo, hi), p| (lo.min(p), hi.max(p)))
            },
        )
        .reduce(
            || (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
            |(lo, hi), (a, b)| (lo.min(a), hi.max(b)),
        );
    let limit = (max - min).length() * LONGEST_SHARE;
    if !(limit.is_finite() && limit > 0.0) {
        return None;
    }
    let longest = |t: &ObjTriangle| {
        (0..3)
            .map(|i| (position(&t.corners[i]) - position(&t.corners[(i + 1) % 3])).length())
            .fold(0.0, f64::max)
    };
    let long = |t: &ObjTriangle| longest(t) > limit;
    // Only a model of many triangles, some of them huge, has small ones a huge one costs
    // their precision (a cube or a coarse sphere keeps its triangles).
    let huge = limit * HUGE_SHARE / LONGEST_SHARE;
    if model.triangles.len() < MIN_TRIANGLES
        || !model.triangles.par_iter().any(|t| longest(t) > huge)
    {
        return None;
    }
    let mut cutter = Cutter {
        model: ObjModel {
            positions: model.positions.clone(),
            texcoords: model.texcoords.clone(),
            normals: model.normals.clone(),
            triangles: Vec::with_capacity(model.triangles.len()),
        },
        limit,
        midpoints: [HashMap::new(), HashMap::new(), HashMap::new()],
    };
    let (mut cut, mut pieces) = (0, 0);
    for triangle in &model.triangles {
        let before = cutter.model.triangles.len();
        let room = pieces < MAX_NEW_TRIANGLES;
        if room && long(triangle) {
            cutter.cut(*triangle, 0);
            cut += 1;
            pieces += cutter.model.triangles.len() - before;
        } else {
            cutter.model.triangles.push(*triangle);
        }
    }
    Some((cutter.model, cut, pieces))
}

struct Cutter {
    model: ObjModel,
    limit: f64,
    /// Per kind (position, texture coordinate, normal): the midpoint of each pair.
    midpoints: [HashMap<(u32, u32), u32>; 3],
}

impl Cutter {
    fn length(&self, a: Corner, b: Corner) -> f64 {
        let p = |c: Corner| DVec3::from(self.model.positions[c.position()]);
        (p(a) - p(b)).length()
    }

    /// The corner halfway between two: each of its indices the midpoint of theirs (none
    /// where either has none).
    fn midpoint(&mut self, a: Corner, b: Corner) -> Corner {
        Corner {
            position: self.mid(0, a.position, b.position),
            texcoord: self.mid(1, a.texcoord, b.texcoord),
            normal: self.mid(2, a.normal, b.normal),
        }
    }

    fn mid(&mut self, kind: usize, a: u32, b: u32) -> u32 {
        if a == NO_INDEX || b == NO_INDEX {
            return NO_INDEX;
        }
        let key = (a.min(b), a.max(b));
        if let Some(&index) = self.midpoints[kind].get(&key) {
            return index;
        }
        let model = &mut self.model;
        let index = match kind {
            0 => push_mid(&mut model.positions, a, b),
            1 => push_mid(&mut model.texcoords, a, b),
            _ => push_mid(&mut model.normals, a, b),
        };
        self.midpoints[kind].insert(key, index);
        index
    }

    fn cut(&mut self, triangle: ObjTriangle, depth: u32) {
        let c = triangle.corners;
        let long: Vec<bool> = (0..3)
            .map(|i| self.length(c[i], c[(i + 1) % 3]) > self.limit)
            .collect();
        let count = long.iter().filter(|l| **l).count();
        if count == 0 || depth >= MAX_DEPTH || self.model.positions.len() >= NO_INDEX as usize - 3 {
            self.model.triangles.push(triangle);
            return;
        }
        // Turned so that edge 0 (c0 c1) is cut, and with two cuts, edge 2 (c2 c0) is not.
        let turn = match count {
            1 => long.iter().position(|l| *l).unwrap_or(0),
            2 => (long.iter().position(|l| !*l).unwrap_or(0) + 1) % 3,
            _ => 0,
        };
        let c = [0, 1, 2].map(|j| c[(j + turn) % 3]);
        let piece = |corners: [Corner; 3]| ObjTriangle {
            corners,
            material: triangle.material,
        };
        let m01 = self.midpoint(c[0], c[1]);
        let pieces = match count {
            1 => vec![piece([c[0], m01, c[2]]), piece([m01, c[1], c[2]])],
            2 => {
                let m12 = self.midpoint(c[1], c[2]);
                vec![
                    piece([m01, c[1], m12]),
                    piece([c[0], m01, m12]),
                    piece([c[0], m12, c[2]]),
                ]
            }
            _ => {
                let m12 = self.midpoint(c[1], c[2]);
                let m20 = self.midpoint(c[2], c[0]);
                vec![
                    piece([c[0], m01, m20]),
                    piece([m01, c[1], m12]),
                    piece([m20, m12, c[2]]),
                    piece([m01, m12, m20]),
                ]
            }
        };
        for piece in pieces {
            self.cut(piece, depth + 1);
        }
    }
}

/// Appends the midpoint of items `a` and `b` ((a + b) / 2, exact whichever comes first) and
/// gives its index.
fn push_mid<const N: usize>(items: &mut Vec<[f64; N]>, a: u32, b: u32) -> u32 {
    let (a, b) = (items[a as usize], items[b as usize]);
    items.push(std::array::from_fn(|i| (a[i] + b[i]) / 2.0));
    (items.len() - 1) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corner(i: u32) -> Corner {
        Corner {
            position: i,
            texcoord: NO_INDEX,
            normal: NO_INDEX,
        }
    }

    /// A large square of two triangles next to a small one: the square is cut into pieces
    /// of edges at most 1/32 of the diameter, covering it exactly with the winding kept,
    /// and the shared diagonal is cut at the same points from both sides.
    #[test]
    fn huge_triangles_are_cut_without_t_junctions() {
        let model = ObjModel {
            positions: vec![
                [0.0, 0.0, 0.0],
                [10.0, 0.0, 0.0],
                [10.0, 10.0, 0.0],
                [0.0, 10.0, 0.0],
                [5.0, 5.0, 0.1],
            ],
            texcoords: Vec::new(),
            normals: Vec::new(),
            triangles: [[0, 1, 2], [0, 2, 3], [0, 1, 4]]
                .map(|t| ObjTriangle {
                    corners: t.map(corner),
                    material: NO_INDEX,
                })
                .to_vec(),
        };
        // Enough small triangles (at the fifth point) to count as a detailed model.
        let mut model = model;
        let small = ObjTriangle {
            corners: [4, 4, 4].map(corner),
            material: NO_INDEX,
        };
        model
            .triangles
            .extend(std::iter::repeat_n(small, MIN_TRIANGLES));
        let (split, cut, pieces) = split_large(&model).unwrap();
        assert_eq!(cut, 3);
        assert_eq!(pieces + MIN_TRIANGLES, split.triangles.len());
        let p = |c: Corner| DVec3::from(split.positions[c.position()]);
        let limit = (DVec3::new(10.0, 10.0, 0.1)).length() / 32.0;
        let mut area = 0.0;
        for t in &split.triangles[..pieces] {
            let [a, b, c] = t.corners.map(p);
            for (x, y) in [(a, b), (b, c), (c, a)] {
                assert!((x - y).length() <= limit, "{x} {y}");
            }
            if c.z == 0.0 && a.z == 0.0 && b.z == 0.0 {
                let n = (b - a).cross(c - a);
                assert!(n.z > 0.0, "winding kept");
                area += n.z / 2.0;
            }
        }
        assert!((area - 100.0).abs() < 1e-9, "{area}");
        // Every vertex on the diagonal x = y is a vertex of pieces on both sides.
        let on_diagonal: Vec<DVec3> = (split.positions.iter())
            .map(|p| DVec3::from(*p))
            .filter(|p| p.z == 0.0 && p.x == p.y && p.x > 0.0 && p.x < 10.0)
            .collect();
        assert!(!on_diagonal.is_empty());
        for v in on_diagonal {
            let sides = (split.triangles.iter())
                .filter(|t| t.corners.iter().any(|c| p(*c) == v))
                .map(|t| {
                    t.corners
                        .iter()
                        .map(|c| p(*c))
                        .map(|q| (q.x - q.y).signum())
                        .sum::<f64>()
                        .signum() as i32
                })
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            assert!(sides >= 2, "{v}");
        }
    }
}
