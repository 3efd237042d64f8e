//! What each pixel's ray hit, as the control unit and BIU left it: no triangle, a hit, or a
//! hit that only the hardware's arithmetic made possible (issue 9).
//!
//! BIU accepts u >= 0, v >= 0 and u + v <= 1.0 without testing t or the quotients' range.
//! After a pixel's triangle loop, CREG_LAST_t/u/v hold the closest accepted hit, the one
//! the pixel shows. That hit is an artifact when u or v is at least 8192.0 (then
//! u + v <= 1.0 held only because the sum wrapped past 16384.0: unwrapped, BIU's u and v
//! are at most 1.0, or a hair above with the fixed ROM's edge tolerance) or t <= 0 (behind
//! the camera). When BIU accepted triangles but kept none (none was closer than RGU's
//! 250.0), the LAST registers still hold the previous pixel's hit and PSU2 shades with it;
//! in the scenes the loaders fit into view only a wrapped t gets that far, so that counts
//! as an artifact too. A DIV whose quotient wrapped into [0, 1] is not visible in these
//! registers (the dividends are gone); the
//! trace marks it, and `--rom fixed` rejects all of them (shaders/rom/fixed.shdr).

use crate::emu::core::alu;

/// A pixel's ray after its triangle loop.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PixelHit {
    /// No MAIN returned TRUE.
    #[default]
    Miss,
    /// The closest accepted hit is a real one.
    Hit,
    /// The closest accepted hit is one that only wrap-around or a negative t allowed.
    Artifact(Artifact),
}

/// Why a hit is an artifact of the hardware's arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Artifact {
    /// u or v >= 8192.0: u + v wrapped past 16384 into [0, 1].
    WrappedSum,
    /// t <= 0: the triangle is behind the camera (or the camera lies in its plane).
    NotInFront,
    /// Hits were accepted, but none closer than 250.0, so none was kept.
    NoneKept,
}

/// Half the 16384.0 at which ADD wraps: one of u and v is at least this when u + v wrapped.
const WRAPPED: u32 = 8192 * alu::ONE;

/// Whether a hit's u and v (Q15.17 words) passed `u + v <= 1.0` only because the sum
/// wrapped: [`Artifact::WrappedSum`].
pub fn wrapped_sum(u: u32, v: u32) -> bool {
    (u as i32) >= WRAPPED as i32 || (v as i32) >= WRAPPED as i32
}

/// Whether a hit's t (a Q15.17 word) is not in front of the camera: [`Artifact::NotInFront`].
pub fn not_in_front(t: u32) -> bool {
    t as i32 <= 0
}

/// CREG_LAST_t as RGU sets it for every pixel: 250.0, "very far".
pub const FAR: u32 = 0x1F4_0000;

impl PixelHit {
    /// Classifies a pixel from the control unit's hit flag and the closest hit's t, u, v
    /// (Q15.17 words, lane x).
    pub fn classify(hit: bool, t: u32, u: u32, v: u32) -> PixelHit {
        if !hit {
            PixelHit::Miss
        } else if t == FAR {
            PixelHit::Artifact(Artifact::NoneKept)
        } else if wrapped_sum(u, v) {
            PixelHit::Artifact(Artifact::WrappedSum)
        } else if not_in_front(t) {
            PixelHit::Artifact(Artifact::NotInFront)
        } else {
            PixelHit::Hit
        }
    }

    /// Whether the ray hit something, artifacts included.
    pub fn is_hit(self) -> bool {
        self != PixelHit::Miss
    }
}

/// Pixels that are hits with all eight neighbours inside the image misses: stray hits.
pub fn isolated_hits(hits: &[PixelHit], width: u32, height: u32) -> Vec<(u32, u32)> {
    let at = |x: i64, y: i64| -> bool {
        x >= 0
            && y >= 0
            && x < width as i64
            && y < height as i64
            && hits[(y * width as i64 + x) as usize].is_hit()
    };
    let mut isolated = Vec::new();
    for y in 0..height as i64 {
        for x in 0..width as i64 {
            let neighbours = (-1..=1)
                .flat_map(|dy| (-1..=1).map(move |dx| (dx, dy)))
                .filter(|&(dx, dy)| (dx, dy) != (0, 0))
                .any(|(dx, dy)| at(x + dx, y + dy));
            if at(x, y) && !neighbours {
                isolated.push((x as u32, y as u32));
            }
        }
    }
    isolated
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: u32 = alu::ONE;

    #[test]
    fn classification_at_the_edges() {
        assert_eq!(PixelHit::classify(false, 0, 2 * ONE, 0), PixelHit::Miss);
        assert_eq!(PixelHit::classify(true, ONE, ONE, 0), PixelHit::Hit);
        assert_eq!(PixelHit::classify(true, 1, 0, ONE), PixelHit::Hit);
        // A hair past 1.0 (the fixed ROM's edge tolerance), and the least wrapped sum.
        assert_eq!(PixelHit::classify(true, ONE, ONE + 1, 0), PixelHit::Hit);
        assert_eq!(
            PixelHit::classify(true, ONE, 0, 8192 * ONE - 1),
            PixelHit::Hit
        );
        assert_eq!(
            PixelHit::classify(true, ONE, 8192 * ONE, 0),
            PixelHit::Artifact(Artifact::WrappedSum)
        );
        assert_eq!(
            PixelHit::classify(true, ONE, 0, 8192 * ONE),
            PixelHit::Artifact(Artifact::WrappedSum)
        );
        // The teapot's stray pixel: u = 13757.8, v = 2626.4, t = -5171.
        let q = |x: f64| (x * 131072.0) as i32 as u32;
        assert_eq!(
            PixelHit::classify(true, q(-5171.0), q(13757.8), q(2626.4)),
            PixelHit::Artifact(Artifact::WrappedSum)
        );
        assert_eq!(
            PixelHit::classify(true, 250 * ONE, ONE / 4, ONE / 4),
            PixelHit::Artifact(Artifact::NoneKept)
        );
        assert_eq!(PixelHit::classify(true, 250 * ONE - 1, 0, 0), PixelHit::Hit);
        assert_eq!(
            PixelHit::classify(true, 0, 0, 0),
            PixelHit::Artifact(Artifact::NotInFront)
        );
        assert_eq!(
            PixelHit::classify(true, q(-1.0), ONE / 2, ONE / 2),
            PixelHit::Artifact(Artifact::NotInFront)
        );
        // Most negative word: a negative u is not "greater than 1".
        assert_eq!(PixelHit::classify(true, ONE, 0x8000_0000, 0), PixelHit::Hit);
    }

    #[test]
    fn isolated_hits_need_eight_missing_neighbours() {
        use PixelHit::{Hit, Miss};
        #[rustfmt::skip]
        let hits = [
            Hit,  Miss, Miss, Miss,
            Miss, Miss, Miss, Hit,
            Miss, Miss, Miss, Hit,
            Miss, Hit,  Miss, Miss,
        ];
        // (0,0) at a corner and (1,3) on the edge are isolated; (3,1)/(3,2) touch.
        assert_eq!(isolated_hits(&hits, 4, 4), [(0, 0), (1, 3)]);
        assert_eq!(isolated_hits(&[Hit], 1, 1), [(0, 0)]);
        assert!(isolated_hits(&[Miss; 4], 2, 2).is_empty());
    }
}
