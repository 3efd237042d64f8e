//! What a viewer shows about the pixels of a frame: the core (partition) that rendered a
//! pixel and its raw output words, and, for two renders that differ, which differing pixels
//! are a core's first pixel (where the hardware's cores disagree, README "ROM variants").

use crate::emu::machine::Frame;
use crate::io::image::{channel_byte, Comparison};
use crate::io::scene::Partition;
use crate::tools::trace::{locate_in, PixelLocation, TraceError};

/// One pixel of a rendered frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelInfo {
    pub location: PixelLocation,
    /// The 8-bit colour the image holds (unwritten channels read 0).
    pub rgb: [u8; 3],
    /// R, G, B output words as the shader wrote them (raw Q15.17).
    pub words: [u32; 3],
    /// Whether an OMWRITE wrote each word.
    pub written: [bool; 3],
}

/// The pixel (x, y) of `frame` and the core that rendered it.
pub fn pixel_info(frame: &Frame, x: u32, y: u32) -> Result<PixelInfo, TraceError> {
    let location = locate_in(&frame.partitions, frame.width, frame.height, x, y)?;
    let at = (y as usize * frame.width as usize + x as usize) * 3;
    let words = [frame.words[at], frame.words[at + 1], frame.words[at + 2]];
    let written = [
        frame.written[at],
        frame.written[at + 1],
        frame.written[at + 2],
    ];
    let byte = |c: usize| {
        if written[c] {
            channel_byte(words[c])
        } else {
            0
        }
    };
    Ok(PixelInfo {
        location,
        rgb: [byte(0), byte(1), byte(2)],
        words,
        written,
    })
}

/// A pixel two renders disagree on, with the core that rendered it in each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Difference {
    pub x: u32,
    pub y: u32,
    /// Its core in render A and in render B (`None`: no partition holds it).
    pub a: Option<PixelLocation>,
    pub b: Option<PixelLocation>,
}

impl Difference {
    /// Whether the pixel is the first one of its core's partition in either render.
    pub fn first_of_partition(&self) -> bool {
        [self.a, self.b].iter().flatten().any(|l| l.index == 0)
    }
}

/// The differing pixels of `comparison`, each located in both renders' partitions.
pub fn differences(
    comparison: &Comparison,
    a_partitions: &[Partition],
    b_partitions: &[Partition],
) -> Vec<Difference> {
    let (width, height) = (comparison.width, comparison.height);
    comparison
        .differing
        .iter()
        .map(|&(x, y)| Difference {
            x,
            y,
            a: locate_in(a_partitions, width, height, x, y).ok(),
            b: locate_in(b_partitions, width, height, x, y).ok(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3x2 image, core 0 renders row 0 from column 1 on, core 1 renders row 1.
    fn frame() -> Frame {
        let mut words = vec![0; 18];
        let mut written = vec![true; 18];
        // Pixel (2, 0): red 1.0 (0x20000 → 255), green 0.5 (0x10000 → 128), blue -1.
        words[6..9].copy_from_slice(&[0x20000, 0x10000, 0xFFFE_0000]);
        // Pixel (0, 1): blue never written.
        words[9] = 0x200;
        written[11] = false;
        Frame {
            width: 3,
            height: 2,
            words,
            written,
            partitions: vec![
                Partition {
                    initial: [1 << 17, 0, 0],
                    end: [3 << 17, 1 << 17, 0],
                },
                Partition::rows(3, 1, 2),
            ],
            hits: vec![Default::default(); 6],
        }
    }

    #[test]
    fn a_pixel_reports_its_words_bytes_and_core() {
        let info = pixel_info(&frame(), 2, 0).unwrap();
        assert_eq!(info.words, [0x20000, 0x10000, 0xFFFE_0000]);
        // min(255, word >> 9); a negative word is huge unsigned, so 255.
        assert_eq!(info.rgb, [255, 128, 255]);
        assert_eq!((info.location.core, info.location.index), (0, 1));
        assert_eq!(info.location.pixels, 2);

        let info = pixel_info(&frame(), 0, 1).unwrap();
        assert_eq!(info.rgb, [1, 0, 0]);
        assert_eq!(info.written, [true, true, false]);
        assert_eq!((info.location.core, info.location.index), (1, 0));
    }

    #[test]
    fn pixels_outside_the_image_or_every_partition_are_refused() {
        assert!(matches!(
            pixel_info(&frame(), 3, 0),
            Err(TraceError::OutsideImage { x: 3, y: 0, .. })
        ));
        assert!(matches!(
            pixel_info(&frame(), 0, 0),
            Err(TraceError::NotRendered { x: 0, y: 0 })
        ));
    }

    #[test]
    fn differences_name_first_pixels_of_either_split() {
        let comparison = Comparison {
            width: 4,
            height: 4,
            differing_pixels: 3,
            max_channel_difference: 255,
            differing: vec![(0, 0), (0, 2), (1, 2)],
        };
        let one = Partition::bands(4, 4, 1);
        let two = Partition::bands(4, 4, 2);
        let found = differences(&comparison, &one, &two);
        let first: Vec<bool> = found.iter().map(Difference::first_of_partition).collect();
        // (0, 0) starts the single band and band 0; (0, 2) starts band 1 of two.
        assert_eq!(first, [true, true, false]);
        assert_eq!(found[1].a.unwrap().core, 0);
        assert_eq!(found[1].b.unwrap().core, 1);
        assert_eq!(found[2].b.unwrap().index, 1);
    }
}
