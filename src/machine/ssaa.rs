//! Supersampling (`--ssaa K`): the emulated GPU renders a K times wider and taller image
//! (every sample bit-exact, as any frame of that size), and the host averages each K x K
//! block of samples into one output pixel (a box filter).
//!
//! The sample image keeps the scene's projection window and only multiplies the resolution,
//! so samples sit on a K times finer grid over the same view. Its partitions are the output
//! partitions scaled by K ([`sample_partitions`]): output rows `y0 .. y1` of a core become
//! sample rows `K·y0 .. K·y1` of the same core, so the K sample rows of an output row are
//! always computed by one core and one band. A partial render of some bands (rows of the
//! output) therefore supersamples each band on its own and the bands join exactly as they
//! do without supersampling.
//!
//! With the faithful ROM a core's first pixel is black on a miss instead of red (NPG's
//! colour is not set yet): in the sample image that is the first sample of each band, the
//! top-left sample of the band's first output pixel, so on a miss that output pixel is
//! (K² − 1)/K² red (for K = 2, the red channel is 192 instead of 255) rather than black.

use super::hits::PixelHit;
use super::Frame;
use crate::scene::{config_row, Partition, Scene};

/// The largest supported factor: 16 samples per pixel.
pub const MAX_SSAA: u32 = 4;

/// Largest word a channel shows as less than full: words from 255 << 9 up (and negative
/// words, which the test bench's `min(255, word >> 9)` shows as 255) are full intensity.
const FULL: u32 = 0x1FFFF;

/// Checks a supersampling factor.
pub fn validate_factor(k: u32) -> Result<(), String> {
    if (1..=MAX_SSAA).contains(&k) {
        Ok(())
    } else {
        Err(format!("--ssaa {k}: the factor must be 1 to {MAX_SSAA}"))
    }
}

/// The sample image's partitions for output partitions of whole rows: rows `y0 .. y1`
/// become sample rows `K·y0 .. K·y1` (see the module documentation).
pub fn sample_partitions(output: &[Partition], k: u32) -> Result<Vec<Partition>, String> {
    output
        .iter()
        .enumerate()
        .map(|(core, partition)| {
            let ((x0, y0), (x1, y1)) = (partition.start_pixel(), partition.end_pixel());
            if x0 != 0 {
                return Err(format!(
                    "partition {core} starts in the middle of row {y0}: supersampling needs partitions of whole rows (give --cores N)"
                ));
            }
            Ok(Partition::rows(x1 * k, y0 * k, y1 * k))
        })
        .collect()
}

/// The scene rendered at K times its resolution over the same projection window, with
/// `output` (whole-row partitions of the scene's resolution) scaled to the samples.
pub fn sample_scene(scene: &Scene, k: u32, output: &[Partition]) -> Result<Scene, String> {
    let mut samples = scene.clone();
    let (width, height) = (scene.width() * k, scene.height() * k);
    if width > 1 << 14 || height > 1 << 14 {
        return Err(format!(
            "--ssaa {k}: {width}x{height} samples are beyond the Q15.17 range of the resolution"
        ));
    }
    samples.config[config_row::RESOLUTION] = [width << 17, height << 17, 0];
    samples.partitions = sample_partitions(output, k)?;
    Ok(samples)
}

/// Averages each K x K block of `samples` into one pixel. Each channel word is the mean of
/// its samples' words, rounded to nearest, each sample first clamped to the range an 8-bit
/// channel distinguishes (0 ..= 0x1FFFF: brighter and negative words show as 255); an
/// unwritten word counts as 0, as in the image files, and the pixel is written when all
/// its samples were. A pixel's hit is an artifact when any sample's is (the first such in
/// row order), else a hit when any sample hit. `partitions` are the output's.
pub fn box_filter(samples: &Frame, k: u32, partitions: Vec<Partition>) -> Frame {
    let (width, height) = (samples.width / k, samples.height / k);
    let pixels = width as usize * height as usize;
    let mut frame = Frame {
        width,
        height,
        words: Vec::with_capacity(pixels * 3),
        written: Vec::with_capacity(pixels * 3),
        partitions,
        hits: Vec::with_capacity(pixels),
    };
    let count = k * k;
    let sample_row = samples.width as usize;
    for y in 0..height as usize {
        for x in 0..width as usize {
            let block = (0..k as usize).flat_map(|dy| {
                let row = (y * k as usize + dy) * sample_row + x * k as usize;
                row..row + k as usize
            });
            let mut sums = [0u32; 3];
            let mut written = [true; 3];
            let mut hit = PixelHit::Miss;
            for s in block {
                for c in 0..3 {
                    let w = samples.written[3 * s + c];
                    written[c] &= w;
                    let word = if w { samples.words[3 * s + c] } else { 0 };
                    sums[c] += if word as i32 >= 0 {
                        word.min(FULL)
                    } else {
                        FULL
                    };
                }
                hit = match (hit, samples.hits[s]) {
                    (PixelHit::Artifact(a), _) => PixelHit::Artifact(a),
                    (_, PixelHit::Artifact(a)) => PixelHit::Artifact(a),
                    (PixelHit::Hit, _) | (_, PixelHit::Hit) => PixelHit::Hit,
                    _ => PixelHit::Miss,
                };
            }
            frame
                .words
                .extend(sums.map(|sum| (sum + count / 2) / count));
            frame.written.extend(written);
            frame.hits.push(hit);
        }
    }
    frame
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(width: u32, height: u32, words: Vec<u32>) -> Frame {
        let n = words.len();
        Frame {
            width,
            height,
            words,
            written: vec![true; n],
            partitions: Vec::new(),
            hits: vec![PixelHit::Miss; n / 3],
        }
    }

    #[test]
    fn a_block_averages_to_its_rounded_mean_with_channels_clamped() {
        // 2x2 samples: red channel 0, 1, 1, 1 (mean 0.75 rounds to 1); green at full
        // intensity twice, once far beyond it and once negative, all counting as 0x1FFFF;
        // blue 0x20000 (1.0, shown as 255) clamped too.
        let samples = frame(
            2,
            2,
            vec![
                0,
                0x1FFFF,
                0x20000,
                1,
                0x7FFF_FFFF,
                0, //
                1,
                0x1FFFF,
                0,
                1,
                0xFFFF_0000,
                0,
            ],
        );
        let out = box_filter(&samples, 2, Vec::new());
        assert_eq!((out.width, out.height), (1, 1));
        assert_eq!(out.words, vec![1, 0x1FFFF, (0x1FFFF + 2) / 4]);
        assert_eq!(out.written, vec![true; 3]);
    }

    #[test]
    fn unwritten_samples_count_as_zero_and_leave_the_pixel_unwritten() {
        let mut samples = frame(2, 1, vec![0x400, 0x400, 0x400, 0x400, 0x400, 0x400]);
        samples.written[0] = false;
        let out = box_filter(&samples, 1, Vec::new());
        assert_eq!((out.words[0], out.written[0]), (0, false));
        assert_eq!((out.words[3], out.written[3]), (0x400, true));
        let mut wide = frame(2, 2, vec![0x400; 12]);
        wide.written[0] = false;
        let out = box_filter(&wide, 2, Vec::new());
        assert_eq!(out.words, vec![0x300, 0x400, 0x400]);
        assert_eq!(out.written, vec![false, true, true]);
    }

    #[test]
    fn sample_rows_of_an_output_row_stay_in_its_band() {
        let bands = Partition::bands(5, 7, 3);
        let samples = sample_partitions(&bands, 3).unwrap();
        for (band, sampled) in bands.iter().zip(&samples) {
            assert_eq!(sampled.start_pixel(), (0, band.start_pixel().1 * 3));
            assert_eq!(sampled.end_pixel(), (15, band.end_pixel().1 * 3));
        }
        let mid_row = Partition {
            initial: [2 << 17, 0, 0],
            end: [5 << 17, 2 << 17, 0],
        };
        assert!(sample_partitions(&[mid_row], 2)
            .unwrap_err()
            .contains("whole rows"));
        assert!(validate_factor(0).is_err() && validate_factor(5).is_err());
        assert!(validate_factor(4).is_ok());
    }
}
