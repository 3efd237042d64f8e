//! Where the lighting shader finds a triangle's normals. The hardware's triangle record
//! has none: V0, UV0, V1, UV1, V2, UV2 and a diffuse colour. Two of its fields carry
//! nothing the ROM reads in an OBJ scene, and the loader puts the normals there:
//! - the diffuse colour (CREG_TRI_DIFFUSE, kept as CREG_TRI_DIFFUSE_LAST for the closest
//!   hit): the only routine that reads it, PSU, is never started (a material's `Kd` reaches
//!   the screen through a flat texture tile instead). It holds the face's unit normal,
//!   computed in double precision from the quantised vertices, so the shader needs no
//!   MAG of an edge (which wraps past 8192.0 squared: long triangles lost their light) and
//!   no CROSS of two edges (which wraps or vanishes for huge or tiny triangles);
//! - the texture coordinates' third component (UV0..UV2 .z, an alpha of 1.0 in the test
//!   bench's scenes): TCC interpolates it with the others, but multiplies it by
//!   TEXTURE_SIZE.z = 0, so it never reaches a texel. For a triangle whose three corners
//!   have `vn` normals it holds, per corner, the word address in texture memory of that
//!   normal (three Q15.17 words, unit length, after the texture atlas); for a flat
//!   triangle 0. The shader reads the three normals with TMREAD and interpolates them with
//!   BIU's u and v, as TCC does the texture coordinates.
//!
//! Texture memory is the one memory a pixel shader can read by address, and the normals'
//! sharing is the OBJ's own: one copy of each `vn` a smooth triangle uses (a 1.3M-triangle
//! scan with 650k normals adds 8 MB), where three normals in each record would need nine
//! words the record does not have.

use glam::DVec3;
use rayon::prelude::*;

use super::first_use;
use super::fit::View;
use super::load::{ObjModel, ObjTriangle, NO_INDEX};
use crate::io::scene::Triangle;

/// The normals smooth triangles use, as texture memory words, and where each went.
pub struct Normals {
    /// Per `vn` index: its first word's address in texture memory (NO_INDEX: unused, or
    /// no direction).
    address: Vec<u32>,
    /// The words to append to texture memory, three per normal.
    pub words: Vec<u32>,
}

impl Normals {
    /// Places every usable normal a smooth triangle uses from word `base` of texture memory
    /// on, turned into the view's coordinates.
    pub fn place(model: &ObjModel, view: &View, base: usize) -> Normals {
        if model.normals.is_empty() {
            return Normals {
                address: Vec::new(),
                words: Vec::new(),
            };
        }
        let usable: Vec<Option<[u32; 3]>> = (model.normals.par_iter())
            .map(|&n| unit_words(view.rotate(DVec3::from(n))))
            .collect();
        let smooth = |t: &ObjTriangle| {
            t.corners
                .iter()
                .all(|c| c.normal().is_some_and(|n| usable[n].is_some()))
        };
        // In the order smooth triangles first use them, while the addresses stay in range.
        let normal = |t: &ObjTriangle, k: usize| smooth(t).then(|| t.corners[k].normal as usize);
        let uses = first_use::first_uses(&model.triangles, model.normals.len(), normal);
        // Ranks r with base + 3r < i32::MAX - 3.
        let room = (i32::MAX as usize - 3).saturating_sub(base).div_ceil(3);
        let placed = uses.order.len().min(room);
        let words: Vec<[u32; 3]> = (uses.order[..placed].par_iter())
            .map(|&n| usable[n].expect("smooth corners have normals"))
            .collect();
        let address = (0..model.normals.len())
            .into_par_iter()
            .map(|n| match uses.rank(n) {
                Some(r) if r < room => (base + 3 * r) as u32,
                _ => NO_INDEX,
            })
            .collect();
        Normals {
            address,
            words: words.into_flattened(),
        }
    }

    /// The word addresses of a triangle's three normals, if it is smooth.
    pub fn addresses(&self, triangle: &ObjTriangle) -> Option<[u32; 3]> {
        let address = |c: super::load::Corner| {
            let a = *self.address.get(c.normal()?)?;
            (a != NO_INDEX).then_some(a)
        };
        let [a, b, c] = triangle.corners.map(address);
        Some([a?, b?, c?])
    }

    /// The normal stored at `address` (for orienting a face by its corners).
    fn at(&self, address: u32, base: usize) -> DVec3 {
        let w = &self.words[address as usize - base..][..3];
        DVec3::new(from_q(w[0]), from_q(w[1]), from_q(w[2]))
    }

    /// The diffuse slot of a record whose vertices are set: the face's unit normal,
    /// turned to the side its corners' normals (at `addresses`) lean to.
    pub fn face_normal(
        &self,
        record: &Triangle,
        addresses: Option<[u32; 3]>,
        base: usize,
    ) -> [u32; 3] {
        let vertex = |slot: usize| DVec3::from(record[slot].map(from_q));
        let (v0, v1, v2) = (vertex(0), vertex(2), vertex(4));
        let mut n = (v1 - v0).cross(v2 - v0);
        if let Some(addresses) = addresses {
            let lean: DVec3 = addresses.iter().map(|&a| self.at(a, base)).sum();
            if lean.dot(n) < 0.0 {
                n = -n;
            }
        }
        unit_words(n).unwrap_or([0; 3])
    }
}

/// A raw Q15.17 word as a number.
fn from_q(word: u32) -> f64 {
    word as i32 as f64 / 131072.0
}

/// `n` at unit length in Q15.17 (rounded to nearest), if it has a direction.
pub fn unit_words(n: DVec3) -> Option<[u32; 3]> {
    let length = n.length();
    (length.is_finite() && length > 0.0).then(|| {
        (n / length)
            .to_array()
            .map(|c| super::to_q(c).expect("a unit vector's lanes are in range"))
    })
}

#[cfg(test)]
mod tests {
    use super::super::to_q;

    /// The library's rounding, as `to_q` was first written.
    fn by_round(value: f64) -> Option<u32> {
        let scaled = (value * 131072.0).round();
        (scaled >= i32::MIN as f64 && scaled <= i32::MAX as f64).then_some(scaled as i32 as u32)
    }

    /// `to_q` rounds as `f64::round` does: halves away from zero, at the ends of the
    /// range, beyond it, and on a spread of random values.
    #[test]
    fn q_conversion_rounds_as_the_library_does() {
        let step = 1.0 / 131072.0;
        let mut values = vec![0.0, -0.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300];
        for whole in [0.0, 1.0, 7.0, 16383.0, -1.0, -16384.0] {
            for half in [0.5, 0.25, 0.75, 0.5 - 1e-9, 0.5 + 1e-9] {
                values.push((whole + half) * step);
                values.push(-(whole + half) * step);
            }
        }
        for edge in [16384.0, -16384.0] {
            for nudge in [-1.0, -0.5, -0.4, 0.0, 0.4, 0.5, 1.0] {
                values.push(edge + nudge * step);
            }
        }
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            values.push(f64::from_bits(state) % 20_000.0);
            values.push((state >> 11) as f64 / (1u64 << 53) as f64 * 40_000.0 - 20_000.0);
        }
        for value in values {
            assert_eq!(to_q(value), by_round(value), "{value:e}");
        }
    }
}
