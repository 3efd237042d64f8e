//! Partial images: one band of a frame (`theia render --band K/N`), as a PNG any viewer
//! opens, and the merge of a frame's bands into the image one process renders.
//!
//! The PNG is RGBA at the frame's full size. Pixels of the band's partitions have their
//! colour and alpha `255 − unwritten`, where bit c of `unwritten` says that no OMWRITE
//! wrote channel c (so the test bench's PPM, which prints such words as `x`, merges
//! exactly); every other pixel is (0, 0, 0, 0), transparent. A `tEXt` chunk with the
//! keyword [`KEYWORD`] holds what the merge checks, one field a line:
//!
//! ```text
//! theia partial image 1
//! fingerprint <64 hex digits: the render's inputs, see machine::fingerprint>
//! size <width> <height>
//! band <K> <N>
//! partition <x0> <y0> <x1> <y1>      (every partition of the frame, in core order)
//! ```
//!
//! Band K holds the partitions [`Band::cores`] gives; the partitions are the frame's, so
//! the merge knows which pixels each band owns, and the PPM its band-relative rows.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use rayon::prelude::*;

use super::{channel_byte, Rgb8};
use crate::emu::machine::{Band, Frame};
use crate::io::scene::Partition;

/// The `tEXt` keyword of a partial image's description.
pub const KEYWORD: &str = "theia-partial-image";
const MAGIC: &str = "theia partial image 1";

/// Largest image a partial image may claim (pixels), so that a header cannot make a
/// reader allocate without bound.
const MAX_PIXELS: u64 = 1 << 26;

/// What a partial image says about the render it is part of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialHeader {
    /// The render's inputs ([`crate::emu::machine::fingerprint`]), 64 hex digits.
    pub fingerprint: String,
    pub width: u32,
    pub height: u32,
    pub band: Band,
    /// Every partition of the frame, in core order.
    pub partitions: Vec<Partition>,
}

/// A band of a frame: its description and the full-size RGBA pixels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialImage {
    pub header: PartialHeader,
    /// Row-major RGBA; see the module documentation.
    pub rgba: Vec<u8>,
}

impl PartialHeader {
    /// The header's text.
    pub fn to_text(&self) -> String {
        let mut text = format!(
            "{MAGIC}\nfingerprint {}\nsize {} {}\nband {} {}\n",
            self.fingerprint, self.width, self.height, self.band.index, self.band.count
        );
        for partition in &self.partitions {
            let ((x0, y0), (x1, y1)) = (partition.start_pixel(), partition.end_pixel());
            let _ = writeln!(text, "partition {x0} {y0} {x1} {y1}");
        }
        text
    }

    /// Parses and checks a header's text.
    pub fn parse(text: &str) -> Result<PartialHeader, String> {
        let mut lines = text.lines();
        if lines.next() != Some(MAGIC) {
            return Err(format!("the description does not start with `{MAGIC}`"));
        }
        let mut field = |name: &str, count: usize| -> Result<Vec<String>, String> {
            let line = lines
                .next()
                .ok_or_else(|| format!("the description has no `{name}` line"))?;
            let mut words = line.split(' ');
            if words.next() != Some(name) {
                return Err(format!("expected a `{name}` line, found `{line}`"));
            }
            let values: Vec<String> = words.map(str::to_string).collect();
            if values.len() != count {
                return Err(format!(
                    "expected {count} values after `{name}`, found `{line}`"
                ));
            }
            Ok(values)
        };
        let fingerprint = field("fingerprint", 1)?.remove(0);
        if fingerprint.len() != 64 || !fingerprint.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!(
                "the fingerprint `{fingerprint}` is not 64 hex digits"
            ));
        }
        let numbers = |values: Vec<String>| -> Result<Vec<u32>, String> {
            values
                .iter()
                .map(|v| {
                    v.parse::<u32>()
                        .map_err(|_| format!("expected a number, found `{v}`"))
                })
                .collect()
        };
        let [width, height] = numbers(field("size", 2)?)?[..] else {
            unreachable!("two values were checked");
        };
        if width == 0 || height == 0 || u64::from(width) * u64::from(height) > MAX_PIXELS {
            return Err(format!("image size {width}x{height} is out of range"));
        }
        let [index, count] = numbers(field("band", 2)?)?[..] else {
            unreachable!("two values were checked");
        };
        let band = Band { index, count };
        let mut partitions = Vec::new();
        for line in lines {
            let Some(values) = line.strip_prefix("partition ") else {
                return Err(format!("expected a `partition` line, found `{line}`"));
            };
            let values = numbers(values.split(' ').map(str::to_string).collect())?;
            let [x0, y0, x1, y1] = values[..] else {
                return Err(format!(
                    "expected 4 values after `partition`, found `{line}`"
                ));
            };
            if [x0, y0, x1, y1].iter().any(|&v| v > 0x3FFF) {
                return Err(format!("partition `{line}` lies outside any image"));
            }
            let partition = Partition {
                initial: [x0 << 17, y0 << 17, 0],
                end: [x1 << 17, y1 << 17, 0],
            };
            partition
                .validate(width, height)
                .map_err(|e| format!("partition {}: {e}", partitions.len()))?;
            partitions.push(partition);
        }
        band.cores(partitions.len())?;
        check_disjoint(&partitions, width, height)?;
        Ok(PartialHeader {
            fingerprint,
            width,
            height,
            band,
            partitions,
        })
    }

    /// The partitions band K owns.
    fn band_partitions(&self) -> &[Partition] {
        let cores = self
            .band
            .cores(self.partitions.len())
            .expect("checked when the header was made");
        &self.partitions[cores]
    }

    /// Whether two headers describe the same frame split the same way.
    fn same_split(&self, other: &PartialHeader) -> bool {
        (self.width, self.height, self.band.count, &self.partitions)
            == (
                other.width,
                other.height,
                other.band.count,
                &other.partitions,
            )
    }
}

/// Each pixel of `partitions` once, row-major index in a `width`-pixel image.
fn pixels_of(partitions: &[Partition], width: u32) -> impl Iterator<Item = usize> + '_ {
    partitions.iter().flat_map(move |partition| {
        partition
            .pixels()
            .map(move |(x, y)| y as usize * width as usize + x as usize)
    })
}

impl PartialHeader {
    /// The description of the partial image a PNG holds, read from the PNG's chunks before
    /// its pixels (none of which is decoded), with its size and colour type checked.
    pub fn from_png(png: impl std::io::BufRead + std::io::Seek) -> Result<PartialHeader, String> {
        read_description(png).map(|(_, header)| header)
    }
}

/// A PNG decoder past the chunks before the pixels, and the partial image's description.
fn read_description<R: std::io::BufRead + std::io::Seek>(
    png: R,
) -> Result<(png::Reader<R>, PartialHeader), String> {
    // The decoder's own default limit (64 MiB) would refuse 8K frames.
    let limits = png::Limits {
        bytes: MAX_PIXELS as usize * 4 + (1 << 20),
    };
    let decoder = png::Decoder::new_with_limits(png, limits);
    let reader = decoder
        .read_info()
        .map_err(|e| format!("not a readable PNG: {e}"))?;
    let info = reader.info();
    let text = info
        .uncompressed_latin1_text
        .iter()
        .find(|chunk| chunk.keyword == KEYWORD)
        .map(|chunk| chunk.text.clone())
        .ok_or("a PNG without a band description: not made by `theia render --band`")?;
    let header = PartialHeader::parse(&text)?;
    if (info.width, info.height) != (header.width, header.height) {
        return Err(format!(
            "the PNG is {}x{} but its description says {}x{}",
            info.width, info.height, header.width, header.height
        ));
    }
    if (info.color_type, info.bit_depth) != (png::ColorType::Rgba, png::BitDepth::Eight) {
        return Err("the PNG is not 8-bit RGBA".into());
    }
    Ok((reader, header))
}

impl PartialImage {
    /// Band `header.band` of a frame rendered with only that band's cores.
    pub fn from_frame(frame: &Frame, header: PartialHeader) -> PartialImage {
        let mut rgba = vec![0; frame.width as usize * frame.height as usize * 4];
        for pixel in pixels_of(header.band_partitions(), frame.width) {
            let mut unwritten = 0;
            for c in 0..3 {
                let word = pixel * 3 + c;
                if frame.written[word] {
                    rgba[pixel * 4 + c] = channel_byte(frame.words[word]);
                } else {
                    unwritten |= 1 << c;
                }
            }
            rgba[pixel * 4 + 3] = 255 - unwritten;
        }
        PartialImage { header, rgba }
    }

    /// The PNG file: RGBA with the description in a `tEXt` chunk.
    pub fn to_png(&self) -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut encoder = png::Encoder::new(&mut bytes, self.header.width, self.header.height);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Fast);
        encoder
            .add_text_chunk(KEYWORD.to_string(), self.header.to_text())
            .expect("the keyword is valid Latin-1");
        let mut writer = encoder
            .write_header()
            .expect("PNG encoding into memory cannot fail");
        writer
            .write_image_data(&self.rgba)
            .expect("the data has the header's size");
        writer
            .finish()
            .expect("PNG encoding into memory cannot fail");
        bytes
    }

    /// Reads a partial image from a PNG file's bytes, checking that it is one: its
    /// description, its size and colour type, and transparency exactly outside its band.
    pub fn from_png(bytes: &[u8]) -> Result<PartialImage, String> {
        let (mut reader, header) = read_description(std::io::Cursor::new(bytes))?;
        let mut rgba = vec![0; reader.output_buffer_size().ok_or("the PNG is too large")?];
        reader
            .next_frame(&mut rgba)
            .map_err(|e| format!("the pixels cannot be read: {e}"))?;
        let image = PartialImage { header, rgba };
        image.check_alpha()?;
        Ok(image)
    }

    /// Pixels of the band have alpha 248..=255, all others are (0, 0, 0, 0).
    fn check_alpha(&self) -> Result<(), String> {
        let width = self.header.width;
        let mut owned = vec![false; self.rgba.len() / 4];
        for pixel in pixels_of(self.header.band_partitions(), width) {
            owned[pixel] = true;
        }
        for (pixel, (rgba, owned)) in self.rgba.chunks_exact(4).zip(owned).enumerate() {
            let valid = if owned {
                rgba[3] >= 248
            } else {
                rgba == [0; 4]
            };
            if !valid {
                let (x, y) = (pixel as u32 % width, pixel as u32 / width);
                return Err(format!(
                    "pixel ({x}, {y}) has alpha {} where band {} has {}",
                    rgba[3],
                    self.header.band,
                    if owned {
                        "a colour (alpha 248 to 255)"
                    } else {
                        "nothing (transparent black)"
                    }
                ));
            }
        }
        Ok(())
    }
}

/// A frame merged from its bands: what a one-process render writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Merged {
    pub image: Rgb8,
    /// Whether each channel was written (the PPM prints unwritten ones as `x`).
    pub written: Vec<bool>,
    pub partitions: Vec<Partition>,
}

/// Merges named parts into the frame, checking that they are the bands of one render:
/// one fingerprint, one split, each band exactly once. Errors name the files.
pub fn merge(parts: &[(String, PartialImage)]) -> Result<Merged, String> {
    let headers: Vec<(String, PartialHeader)> = (parts.iter())
        .map(|(name, part)| (name.clone(), part.header.clone()))
        .collect();
    let mut merged = Merged::empty(check_headers(&headers)?);
    for (_, part) in parts {
        merged.fill(part);
    }
    Ok(merged)
}

/// Checks that `parts` are every band of one render exactly once, and gives the header
/// they share.
fn check_headers(parts: &[(String, PartialHeader)]) -> Result<&PartialHeader, String> {
    let Some((first_name, header)) = parts.first() else {
        return Err("no parts to merge".into());
    };
    for (name, part) in parts {
        if part.fingerprint != header.fingerprint {
            return Err(format!(
                "{name} is a band of another render than {first_name} (fingerprints {} and \
                 {} differ: other scene, camera, size, shader, ROM or --cores)",
                short(&part.fingerprint),
                short(&header.fingerprint)
            ));
        }
        if !part.same_split(header) {
            return Err(format!(
                "{name} is band {} but {first_name} is band {}: the frame is split \
                 differently",
                part.band, header.band
            ));
        }
    }
    let mut by_band: BTreeMap<u32, &str> = BTreeMap::new();
    for (name, part) in parts {
        if let Some(other) = by_band.insert(part.band.index, name) {
            return Err(format!("{other} and {name} are both band {}", part.band));
        }
    }
    let count = header.band.count;
    let missing: Vec<String> = (0..count)
        .filter(|index| !by_band.contains_key(index))
        .map(|index| format!("{index}/{count}"))
        .collect();
    if !missing.is_empty() {
        let (noun, verb) = match missing.len() {
            1 => ("band", "is"),
            _ => ("bands", "are"),
        };
        return Err(format!(
            "{noun} {} {verb} missing (the parts given hold {})",
            missing.join(", "),
            by_band
                .iter()
                .map(|(index, name)| format!("{index}/{count} in {name}"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(header)
}

impl Merged {
    /// The frame `header` describes, nothing written yet.
    fn empty(header: &PartialHeader) -> Merged {
        let (width, height) = (header.width, header.height);
        let pixels = width as usize * height as usize;
        Merged {
            image: Rgb8 {
                width,
                height,
                data: vec![0; pixels * 3],
            },
            written: vec![false; pixels * 3],
            partitions: header.partitions.clone(),
        }
    }

    /// Copies `part`'s band into the frame.
    fn fill(&mut self, part: &PartialImage) {
        for pixel in pixels_of(part.header.band_partitions(), self.image.width) {
            let rgba = &part.rgba[pixel * 4..pixel * 4 + 4];
            let unwritten = 255 - rgba[3];
            for (c, &value) in rgba[..3].iter().enumerate() {
                self.image.data[pixel * 3 + c] = value;
                self.written[pixel * 3 + c] = unwritten & (1 << c) == 0;
            }
        }
    }
}

/// Merges the partial images in `paths`: every part's description is read and checked
/// (one render, every band once) before any pixel is decoded, then the parts are decoded
/// a few at a time (one per worker thread) into the frame, so memory holds the frame and
/// that many parts whatever the number of files.
pub fn merge_files(paths: &[PathBuf]) -> Result<Merged, String> {
    let headers = paths
        .par_iter()
        .map(|path| {
            let name = path.display().to_string();
            let file = crate::io::input::open(path).map_err(|e| format!("{name}: {e}"))?;
            let header = PartialHeader::from_png(std::io::BufReader::new(file))
                .map_err(|e| format!("{name}: {e}"))?;
            Ok((name, header))
        })
        .collect::<Vec<Result<_, String>>>()
        .into_iter()
        .collect::<Result<Vec<_>, String>>()?;
    let mut merged = Merged::empty(check_headers(&headers)?);
    let batch = rayon::current_num_threads().max(1);
    for (paths, headers) in paths.chunks(batch).zip(headers.chunks(batch)) {
        let parts: Vec<Result<PartialImage, String>> = (paths.par_iter())
            .map(|path| {
                let name = path.display().to_string();
                let bytes = crate::io::input::read(path).map_err(|e| format!("{name}: {e}"))?;
                PartialImage::from_png(&bytes).map_err(|e| format!("{name}: {e}"))
            })
            .collect();
        for (part, (name, header)) in parts.into_iter().zip(headers) {
            let part = part?;
            if &part.header != header {
                return Err(format!("{name} changed while it was being merged"));
            }
            merged.fill(&part);
        }
    }
    Ok(merged)
}

/// Fails unless the partitions cover disjoint pixels. Linear in the image and the
/// partitions: each row a partition spans has at least one pixel, so disjoint partitions
/// span at most one row per pixel, and the first overlap ends the check.
fn check_disjoint(partitions: &[Partition], width: u32, height: u32) -> Result<(), String> {
    let mut taken = vec![0u64; (width as usize * height as usize).div_ceil(64)];
    for (index, partition) in partitions.iter().enumerate() {
        let ((x0, y0), (x1, y1)) = (partition.start_pixel(), partition.end_pixel());
        for y in y0..y1 {
            let first = if y == y0 { x0 } else { 0 };
            let row = y as usize * width as usize;
            if !take(&mut taken, row + first as usize, row + x1 as usize) {
                return Err(format!(
                    "partition {index} overlaps an earlier one in row {y}: the partitions of a frame are disjoint"
                ));
            }
        }
    }
    Ok(())
}

/// Marks bits `start..end` of `bits`; false when one was marked already (those before
/// it stay marked: the caller stops at the first overlap).
fn take(bits: &mut [u64], start: usize, end: usize) -> bool {
    let mut at = start;
    while at < end {
        let (word, bit) = (at / 64, at % 64);
        let span = (64 - bit).min(end - at);
        let mask = if span == 64 {
            u64::MAX
        } else {
            ((1u64 << span) - 1) << bit
        };
        if bits[word] & mask != 0 {
            return false;
        }
        bits[word] |= mask;
        at += span;
    }
    true
}

/// Whether PNG bytes carry a band description (a partial image, readable or not).
pub fn is_partial(bytes: &[u8]) -> bool {
    png::Decoder::new(std::io::Cursor::new(bytes))
        .read_info()
        .is_ok_and(|reader| {
            reader
                .info()
                .uncompressed_latin1_text
                .iter()
                .any(|chunk| chunk.keyword == KEYWORD)
        })
}

/// The first 12 hex digits, enough to tell fingerprints apart in a message.
fn short(fingerprint: &str) -> &str {
    &fingerprint[..12]
}
