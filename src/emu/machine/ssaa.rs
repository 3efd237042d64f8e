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
//!
//! [`Supersampler`] renders such a frame from the output's scene ([`sample_scene`]: an OBJ
//! scene loaded with `ObjOptions::ssaa` K is, resolution and partitions aside, the scene
//! fitted at K times the resolution) on one machine in *passes* of sample rows
//! (`machine/passes.rs`), each box-filtered into the output frame as it finishes, so that
//! memory follows one pass's samples (about one output frame's worth, whatever the core
//! count), not the whole sample image. Passes are exact: each core carries its state from
//! one pass into the next, as from one pixel to the next, so every sample is the one a
//! single pass over the sample image computes; and a pass holds whole output rows (K
//! sample rows each), so each output pixel is filtered from one pass's samples.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::atomic::AtomicU64;

use super::accel::TILE;
use super::fingerprint::Fingerprint;
use super::hits::PixelHit;
use super::{frame, Frame, Machine, Render, RenderError, RenderOptions};
use crate::io::scene::{config_row, Partition, Scene};

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
    // Q15.17 holds less than 16384: 16384 << 17 is the sign bit.
    if width >= 1 << 14 || height >= 1 << 14 {
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
    let mut frame = Frame::blank(samples.width / k, samples.height / k, partitions);
    box_filter_into(samples, k, &mut frame, 0);
    frame
}

/// [`box_filter`] of `samples` (a strip of whole sample rows) into `frame`'s rows from
/// `first_row` on.
fn box_filter_into(samples: &Frame, k: u32, frame: &mut Frame, first_row: u32) {
    let (k, width) = (k as usize, frame.width as usize);
    let count = (k * k) as u32;
    let sample_row = samples.width as usize;
    for y in 0..samples.height as usize / k {
        let row = (first_row as usize + y) * width;
        for x in 0..width {
            let block = (0..k).flat_map(|dy| {
                let row = (y * k + dy) * sample_row + x * k;
                row..row + k
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
            let pixel = row + x;
            for c in 0..3 {
                frame.words[3 * pixel + c] = (sums[c] + count / 2) / count;
                frame.written[3 * pixel + c] = written[c];
            }
            frame.hits[pixel] = hit;
        }
    }
}

/// The fewest samples a pass holds (small frames render in one pass).
pub const MIN_PASS_SAMPLES: u64 = 1 << 20;

/// A pass holds about the output's pixels over this many samples: a sample held costs
/// about twice what an output pixel does (its words and hit in a core's output memory,
/// then in the pass's assembled rows), so a pass then holds about half the output frame.
pub const PASS_SHARE: u64 = 4;

/// A frame as [`RenderOptions`] ask for it, supersampled when [`RenderOptions::ssaa`] is
/// over 1: one machine renders the samples ([`sample_scene`] of the output's scene) in
/// passes of sample rows (`machine/passes.rs`) of about a quarter of the output's
/// pixels in samples ([`PASS_SHARE`]; at least [`MIN_PASS_SAMPLES`]), each box-filtered
/// into the output frame as it finishes.
/// A pass is a run of whole multiples of K sample rows (so the K sample rows of an output
/// row are in one pass) and of the structure's tile rows, of one core or of several; every
/// core carries its state from one pass into the next, so the samples are those of one
/// pass over the sample image. Without supersampling it is the one machine of the options.
pub struct Supersampler<'s> {
    /// What the machine renders: the output's scene, or its samples.
    samples: Cow<'s, Scene>,
    /// The machine's options (with the samples, their partitions are in the scene).
    options: RenderOptions,
    factor: u32,
    /// The output's partitions, and those of them rendered (a band's, or all).
    output: Vec<Partition>,
    active: Range<usize>,
    /// The sample rows of each pass, in order.
    passes: Vec<Range<u32>>,
}

impl<'s> Supersampler<'s> {
    /// Checks the options against the scene (the same errors as [`Machine::new`]) and
    /// plans the passes.
    pub fn new(scene: &'s Scene, options: &RenderOptions) -> Result<Self, RenderError> {
        Supersampler::with_pass_rows(scene, options, None)
    }

    /// [`Supersampler::new`] with passes of `rows` sample rows (rounded up to a multiple
    /// of the factor) when given, for tests: passes never change a frame.
    pub fn with_pass_rows(
        scene: &'s Scene,
        options: &RenderOptions,
        rows: Option<u32>,
    ) -> Result<Self, RenderError> {
        let factor = options.ssaa;
        validate_factor(factor).map_err(RenderError::Config)?;
        let output = frame::partitions(scene, options.cores)?;
        let active = match options.band {
            Some(band) => band.cores(output.len()).map_err(RenderError::Config)?,
            None => 0..output.len(),
        };
        let rows_of = |k: u32| {
            let rows = frame::rows_of(&output[active.clone()]);
            rows.start * k..rows.end * k
        };
        if factor == 1 {
            return Ok(Supersampler {
                samples: Cow::Borrowed(scene),
                options: options.clone(),
                factor,
                passes: vec![rows_of(1)],
                output,
                active,
            });
        }
        let samples = sample_scene(scene, factor, &output).map_err(RenderError::Config)?;
        let per_pass = rows.map_or_else(
            || {
                let pixels = u64::from(scene.width()) * u64::from(scene.height());
                let budget =
                    (pixels / PASS_SHARE).max(MIN_PASS_SAMPLES) / u64::from(samples.width());
                // Whole tile rows of the structure too, from the first row as a frame's.
                let step = pass_step(factor);
                (budget.min(u64::from(u32::MAX)) as u32 / step).max(1) * step
            },
            |rows| rows.div_ceil(factor).max(1).saturating_mul(factor),
        );
        let passes = pass_rows(rows_of(factor), per_pass);
        Ok(Supersampler {
            samples: Cow::Owned(samples),
            options: RenderOptions {
                cores: None,
                ..options.clone()
            },
            factor,
            output,
            active,
            passes,
        })
    }

    /// The output's width and height.
    pub fn size(&self) -> (u32, u32) {
        let k = self.factor;
        (self.samples.width() / k, self.samples.height() / k)
    }

    /// Samples per pixel along each side (1: none).
    pub fn factor(&self) -> u32 {
        self.factor
    }

    /// The scene the machine renders: the output's, or its samples.
    pub fn samples(&self) -> &Scene {
        &self.samples
    }

    /// The output's partitions (emulated cores).
    pub fn output_partitions(&self) -> &[Partition] {
        &self.output
    }

    /// The partitions rendered: a band's ([`RenderOptions::band`]) or all.
    pub fn active(&self) -> Range<usize> {
        self.active.clone()
    }

    /// The output rows the rendered partitions cover.
    pub fn active_rows(&self) -> Range<u32> {
        frame::rows_of(&self.output[self.active.clone()])
    }

    /// How many passes the render takes.
    pub fn passes(&self) -> usize {
        self.passes.len()
    }

    /// The sample rows of each pass, in order.
    pub fn pass_rows(&self) -> &[Range<u32>] {
        &self.passes
    }

    /// The samples the render runs, as its progress counter counts them.
    pub fn total_samples(&self) -> u64 {
        let per_pixel = u64::from(self.factor * self.factor);
        let output = &self.output[self.active.clone()];
        output.iter().map(|p| p.pixel_count() as u64).sum::<u64>() * per_pixel
    }

    /// The machine of the whole frame's samples, its acceleration structure made for
    /// all of them (for timing it, or tracing a sample); a render in passes makes the
    /// structure pass by pass instead.
    pub fn machine(&self) -> Result<Machine<'_>, RenderError> {
        Machine::new(&self.samples, &self.options)
    }

    /// The fingerprint of what the machine renders ([`Fingerprint::of_frame`]).
    pub fn fingerprint(&self) -> Fingerprint {
        let partitions = match self.factor {
            1 => &self.output,
            _ => &self.samples.partitions,
        };
        Fingerprint::of_frame(&self.samples, partitions, &self.options)
    }

    /// Renders the frame, pass by pass when supersampled: `prepare` sees the machine
    /// before it renders (notes, checks); `progress` counts the samples done over all
    /// passes; raising [`RenderOptions::cancel`] stops the render with
    /// [`RenderError::Cancelled`].
    pub fn render<E: From<RenderError>>(
        &self,
        progress: Option<&AtomicU64>,
        mut prepare: impl FnMut(&Machine<'_>) -> Result<(), E>,
    ) -> Result<Render, E> {
        let k = self.factor;
        let machine = match self.passes.len() {
            1 => Machine::new(&self.samples, &self.options)?,
            _ => Machine::for_passes(&self.samples, &self.options, self.passes[0].clone())?,
        };
        prepare(&machine)?;
        if k == 1 {
            let render = machine.render(progress);
            machine.release();
            return Ok(render?);
        }
        let (width, height) = self.size();
        let mut output = Frame::blank(width, height, self.output.clone());
        let render = machine.render_passes(progress, &self.passes, &mut |first, strip| {
            box_filter_into(&strip, k, &mut output, first / k);
        });
        machine.release();
        let mut render = render?;
        render.frame = output;
        Ok(render)
    }
}

/// Sample rows `rows` cut into passes of `per_pass` rows (the last may be shorter).
fn pass_rows(rows: Range<u32>, per_pass: u32) -> Vec<Range<u32>> {
    let starts = rows.clone().step_by(per_pass.max(1) as usize);
    let passes: Vec<Range<u32>> = starts
        .map(|y| y..y.saturating_add(per_pass).min(rows.end))
        .collect();
    if passes.is_empty() {
        vec![rows]
    } else {
        passes
    }
}

/// The sample rows a pass is a multiple of: whole output rows (`k` sample rows) and whole
/// tile rows of the structure, the least common multiple of `k` and [`TILE`].
fn pass_step(k: u32) -> u32 {
    let (mut a, mut b) = (k, TILE);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    k * TILE / a
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::machine::Band;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

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

    use crate::emu::core::RomVariant;
    use crate::emu::machine::render;
    use crate::io::scene::obj::{default_scene, ObjOptions};

    /// The built-in scene at 24x16 loaded for `ssaa` (and its samples at 48x32, fitted
    /// there: the scene a supersampled render's samples must be).
    fn scenes(rom: RomVariant) -> (Scene, Scene) {
        let load = |width, height, ssaa| {
            let options = ObjOptions {
                width,
                height,
                ssaa,
                rom,
                ..ObjOptions::default()
            };
            default_scene::load(&options).unwrap().scene
        };
        (load(24, 16, 2), load(48, 32, 1))
    }

    #[test]
    fn an_obj_scene_loaded_for_ssaa_samples_as_the_scene_fitted_at_k_times_the_size() {
        let (output, fitted) = scenes(RomVariant::Fixed);
        let samples = sample_scene(&output, 2, &output.partitions).unwrap();
        assert_eq!(samples.config, fitted.config);
        assert_eq!(samples.partitions, fitted.partitions);
        assert_eq!(samples.triangles, fitted.triangles);
        assert_eq!(samples.texture, fitted.texture);
    }

    #[test]
    fn render_with_ssaa_2_is_the_box_filter_of_the_samples_word_for_word() {
        for rom in [RomVariant::Fixed, RomVariant::Faithful] {
            let (output, fitted) = scenes(rom);
            let options = RenderOptions {
                rom,
                ..RenderOptions::default()
            };
            let samples = render(&fitted, &options).unwrap();
            let expected = box_filter(&samples.frame, 2, output.partitions.clone());
            let ssaa = RenderOptions {
                ssaa: 2,
                ..options.clone()
            };
            let rendered = render(&output, &ssaa).unwrap();
            assert!(expected.words.iter().any(|&w| w != 0));
            assert_eq!(rendered.frame, expected, "{rom:?}");
            assert_eq!(rendered.instructions, samples.instructions);
            // In passes of 2 sample rows (one output row), and for a band of them: the
            // same words.
            let sampler = Supersampler::with_pass_rows(&output, &ssaa, Some(2)).unwrap();
            assert_eq!(sampler.passes(), 16);
            let passes = sampler.render(None, |_| Ok::<_, RenderError>(())).unwrap();
            assert_eq!(passes.frame, expected);
            assert_eq!(passes.instructions, samples.instructions);
            let band = RenderOptions {
                band: Some(Band { index: 1, count: 2 }),
                ..ssaa.clone()
            };
            let sampler = Supersampler::with_pass_rows(&output, &band, Some(2)).unwrap();
            assert_eq!((sampler.passes(), sampler.active_rows()), (8, 8..16));
            let half = sampler.render(None, |_| Ok::<_, RenderError>(()));
            let half = half.unwrap().frame;
            assert_eq!(half.words[24 * 8 * 3..], expected.words[24 * 8 * 3..]);
            assert!(half.written[..24 * 8 * 3].iter().all(|&w| !w));
        }
    }

    #[test]
    fn samples_stay_within_the_resolution_register() {
        let load = |width| {
            let options = ObjOptions {
                width,
                height: 4,
                ssaa: 4,
                ..ObjOptions::default()
            };
            default_scene::load(&options).unwrap().scene
        };
        let wide = load(4096);
        let error = sample_scene(&wide, 4, &wide.partitions).unwrap_err();
        assert!(error.contains("16384x16 samples are beyond"), "{error}");
        let widest = load(4095);
        let samples = sample_scene(&widest, 4, &widest.partitions).unwrap();
        assert_eq!((samples.width(), samples.height()), (16380, 16));
    }

    #[test]
    fn progress_counts_every_sample_of_every_pass() {
        let (output, _) = scenes(RomVariant::Fixed);
        let options = RenderOptions {
            ssaa: 2,
            ..RenderOptions::default()
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let options = RenderOptions {
            cancel: Some(cancel.clone()),
            ..options
        };
        let sampler = Supersampler::with_pass_rows(&output, &options, Some(4)).unwrap();
        assert_eq!(sampler.passes(), 8);
        let done = AtomicU64::new(0);
        sampler
            .render(Some(&done), |_| Ok::<_, RenderError>(()))
            .unwrap();
        assert_eq!(done.into_inner(), sampler.total_samples());
        assert_eq!(sampler.total_samples(), 48 * 32);
        cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        let cancelled = sampler.render(None, |_| Ok::<_, RenderError>(()));
        assert!(matches!(cancelled, Err(RenderError::Cancelled)));
    }

    /// At 1920x1080, whatever the cores and the factor: passes of whole multiples of K
    /// sample rows and of the structure's tile rows, in order over the sample image, none
    /// holding more than its share of the output's pixels (what bounds a render's
    /// memory: [`super::passes`] holds one pass's samples at a time).
    #[test]
    fn passes_hold_a_share_of_the_output_in_whole_output_and_tile_rows() {
        let (width, height) = (1920, 1080);
        for (k, cores) in [
            (4, Some(1)),
            (4, None),
            (4, Some(16)),
            (2, Some(1080)),
            (3, None),
        ] {
            let obj = ObjOptions {
                width,
                height,
                ssaa: k,
                ..ObjOptions::default()
            };
            let scene = default_scene::load(&obj).unwrap().scene;
            let options = RenderOptions {
                ssaa: k,
                cores,
                ..RenderOptions::default()
            };
            let sampler = Supersampler::new(&scene, &options).unwrap();
            let passes = sampler.pass_rows();
            let step = pass_step(k);
            assert_eq!(passes[0].start, 0);
            assert_eq!(passes[passes.len() - 1].end, height * k);
            for (pass, next) in passes.iter().zip(&passes[1..]) {
                assert_eq!(pass.end, next.start);
                assert_eq!(pass.len() as u32 % step, 0, "K {k}: {pass:?}");
            }
            let share = (u64::from(width * height) / PASS_SHARE).max(MIN_PASS_SAMPLES);
            let samples = |pass: &Range<u32>| pass.len() as u64 * u64::from(width * k);
            let most = passes.iter().map(samples).max().unwrap();
            assert!(most <= share, "K {k}, {cores:?} cores: {most} samples");
            assert!(
                most + samples(&(0..step)) > share,
                "K {k}: as large as fits"
            );
        }
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
