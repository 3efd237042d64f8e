//! Scenes: everything the host streams into the machine (configuration rows, per-core
//! partitions, triangles, texture memory and optionally user code), and their loaders.

pub mod generate;
pub mod mem;
pub mod obj;
pub mod ply;

use std::path::PathBuf;

use crate::emu::isa::Word;

pub use crate::emu::core::alu::Vec3;
pub use crate::emu::core::triangle::{Triangle, TRIANGLE_VECTORS};

/// Configuration rows 0..5 (Params.mem words 1..18): the bank-0 registers of the same
/// addresses, which the host writes before the frame.
pub mod config_row {
    use crate::emu::isa::registers::address;

    pub const LIGHT_INFO: usize = address::CREG_LIGHT_INFO as usize;
    pub const CAMERA_POSITION: usize = address::CREG_CAMERA_POSITION as usize;
    pub const PROJECTION_WINDOW_MIN: usize = address::CREG_PROJECTION_WINDOW_MIN as usize;
    pub const PROJECTION_WINDOW_MAX: usize = address::CREG_PROJECTION_WINDOW_MAX as usize;
    pub const RESOLUTION: usize = address::CREG_RESOLUTION as usize;
    pub const TEXTURE_SIZE: usize = address::CREG_TEXTURE_SIZE as usize;
}

/// The pixels one core renders: CREG_PIXEL_2D_INITIAL_POSITION .. CREG_PIXEL_2D_FINAL_POSITION
/// (raw Q15.17 words as the host sends them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Partition {
    pub initial: Vec3,
    pub end: Vec3,
}

impl Partition {
    /// A band of whole rows `first_row .. end_row` of an image `width` pixels wide.
    pub fn rows(width: u32, first_row: u32, end_row: u32) -> Partition {
        Partition {
            initial: [0, first_row << 17, 0],
            end: [width << 17, end_row << 17, 0],
        }
    }

    /// Splits an image into `cores` row bands as even as possible (the first bands take
    /// the extra rows).
    pub fn bands(width: u32, height: u32, cores: u32) -> Vec<Partition> {
        let cores = cores.clamp(1, height.max(1));
        let (base, extra) = (height / cores, height % cores);
        let mut row = 0;
        (0..cores)
            .map(|core| {
                let rows = base + u32::from(core < extra);
                let band = Partition::rows(width, row, row + rows);
                row += rows;
                band
            })
            .collect()
    }

    /// First pixel (column, row).
    pub fn start_pixel(&self) -> (u32, u32) {
        (self.initial[0] >> 17, self.initial[1] >> 17)
    }

    /// End (column, row), exclusive.
    pub fn end_pixel(&self) -> (u32, u32) {
        (self.end[0] >> 17, self.end[1] >> 17)
    }

    /// Checks that the partition lies inside a `width` x `height` image and holds whole
    /// pixel positions, so that the ROM's next-pixel routine walks it as described.
    pub fn validate(&self, width: u32, height: u32) -> Result<(), String> {
        let whole = |v: u32| v & 0x1FFFF == 0 && (v as i32) >= 0;
        if !self.initial[..2]
            .iter()
            .chain(&self.end[..2])
            .all(|&v| whole(v))
        {
            return Err(
                "positions must be non-negative whole pixels (multiples of 0x20000)".into(),
            );
        }
        let ((x0, y0), (x1, y1)) = (self.start_pixel(), self.end_pixel());
        if !(x0 < x1 && x1 <= width && y0 < y1 && y1 <= height) {
            return Err(format!(
                "start ({x0}, {y0}) and end ({x1}, {y1}) must satisfy start < end <= ({width}, {height})"
            ));
        }
        Ok(())
    }

    /// The pixels in the order the ROM's NPG routine visits them: the first row from the
    /// initial column, then whole rows from column 0 (spec isa_and_formats §5.2).
    pub fn pixels(&self) -> impl Iterator<Item = (u32, u32)> {
        let ((x0, y0), (x1, y1)) = (self.start_pixel(), self.end_pixel());
        (y0..y1).flat_map(move |y| {
            let first = if y == y0 { x0 } else { 0 };
            (first..x1).map(move |x| (x, y))
        })
    }

    /// Where pixel (x, y) comes in [`Partition::pixels`] (the k-th pixel NPG visits, whose
    /// colour the core writes to output words 3k..3k+2), if the partition holds it.
    pub fn index_of(&self, x: u32, y: u32) -> Option<usize> {
        let ((x0, y0), (x1, y1)) = (self.start_pixel(), self.end_pixel());
        let index = if y == y0 && (x0..x1).contains(&x) {
            x - x0
        } else if y > y0 && y < y1 && x < x1 {
            (x1 - x0) + (y - y0 - 1) * x1 + x
        } else {
            return None;
        };
        Some(index as usize)
    }

    /// The `k`-th pixel of [`Partition::pixels`], if there are that many.
    pub fn pixel(&self, k: usize) -> Option<(u32, u32)> {
        let ((x0, y0), (x1, _)) = (self.start_pixel(), self.end_pixel());
        let first = (x1 - x0) as usize;
        let (x, y) = if k < first {
            (x0 + k as u32, y0)
        } else {
            let k = k - first;
            ((k % x1 as usize) as u32, y0 + 1 + (k / x1 as usize) as u32)
        };
        (k < self.pixel_count()).then_some((x, y))
    }

    /// Where the first pixel of row `y` or a later row comes in [`Partition::pixels`]
    /// ([`Partition::pixel_count`] past the last row).
    pub fn row_start(&self, y: u32) -> usize {
        let ((x0, y0), (x1, y1)) = (self.start_pixel(), self.end_pixel());
        match y {
            _ if y <= y0 => 0,
            _ if y >= y1 => self.pixel_count(),
            _ => (x1 - x0) as usize + (y - y0 - 1) as usize * x1 as usize,
        }
    }

    /// Number of pixels in [`Partition::pixels`].
    pub fn pixel_count(&self) -> usize {
        let ((x0, y0), (x1, y1)) = (self.start_pixel(), self.end_pixel());
        (x1 - x0) as usize + (y1 - y0 - 1) as usize * x1 as usize
    }
}

/// Everything the host sends to the machine for one frame.
#[derive(Clone, Debug)]
pub struct Scene {
    /// Where it came from, for messages.
    pub name: String,
    /// Configuration rows 0..5 (see [`config_row`]).
    pub config: [Vec3; 6],
    /// The per-core partitions listed in the scene (Params.mem).
    pub partitions: Vec<Partition>,
    pub triangles: Vec<Triangle>,
    /// Texture memory, one word per channel (`byte << 9`).
    pub texture: Vec<u32>,
    /// Creg.mem: latched by the hardware but read by nothing.
    pub control_register: u32,
    /// Instructions.mem (entry table + user code), if the scene has one.
    pub program: Option<Vec<Word>>,
}

impl Scene {
    pub fn width(&self) -> u32 {
        self.config[config_row::RESOLUTION][0] >> 17
    }

    pub fn height(&self) -> u32 {
        self.config[config_row::RESOLUTION][1] >> 17
    }
}

/// Errors loading a scene. Each names the file and, where there is one, the line.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}:{column}: {message}", file.display())]
    Syntax {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{}:{line}: {message}", file.display())]
    Invalid {
        file: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: {message}", file.display())]
    Unsupported { file: PathBuf, message: String },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bands_cover_the_image_evenly() {
        let bands = Partition::bands(160, 160, 3);
        let rows: Vec<_> = bands
            .iter()
            .map(|b| (b.start_pixel().1, b.end_pixel().1))
            .collect();
        assert_eq!(rows, vec![(0, 54), (54, 107), (107, 160)]);
        assert_eq!(
            bands.iter().map(Partition::pixel_count).sum::<usize>(),
            160 * 160
        );
        assert_eq!(Partition::bands(4, 2, 16).len(), 2);
    }

    #[test]
    fn pixel_order_follows_npg() {
        let p = Partition {
            initial: [2 << 17, 1 << 17, 0],
            end: [4 << 17, 3 << 17, 0],
        };
        let order: Vec<_> = p.pixels().collect();
        assert_eq!(order, vec![(2, 1), (3, 1), (0, 2), (1, 2), (2, 2), (3, 2)]);
        assert_eq!(p.pixel_count(), order.len());
    }

    #[test]
    fn index_of_inverts_the_pixel_order() {
        for p in [
            Partition {
                initial: [2 << 17, 1 << 17, 0],
                end: [4 << 17, 3 << 17, 0],
            },
            Partition::rows(5, 0, 3),
            Partition {
                initial: [3 << 17, 0, 0],
                end: [4 << 17, 1 << 17, 0],
            },
        ] {
            let order: Vec<_> = p.pixels().collect();
            for y in 0..5 {
                for x in 0..6 {
                    let expected = order.iter().position(|&pixel| pixel == (x, y));
                    assert_eq!(p.index_of(x, y), expected, "{p:?} ({x}, {y})");
                }
            }
        }
    }

    #[test]
    fn validation_rejects_out_of_image_partitions() {
        assert!(Partition::rows(10, 0, 5).validate(10, 5).is_ok());
        assert!(Partition::rows(10, 0, 6).validate(10, 5).is_err());
        let fractional = Partition {
            initial: [0x100, 0, 0],
            end: [10 << 17, 5 << 17, 0],
        };
        assert!(fractional.validate(10, 5).is_err());
    }
}
