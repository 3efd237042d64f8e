//! PNG encoding on every thread, with bytes that do not depend on the thread count.
//!
//! The frame's rows are cut into bands of a fixed size (a number of rows that depends only
//! on the width, `rows_per_band`). Each band is filtered (the `png` crate's adaptive
//! choice, row by row, against the real row above, so the filtered bytes are those of a
//! serial encoder) and compressed on its own by `fdeflate`, the compressor the `png`
//! crate's `Fast` setting uses, as pigz does with zlib: the pieces are joined into one
//! zlib stream, each but the last ending in an empty stored block (a sync flush) so the
//! next starts on a byte, and the stream's Adler-32 is combined from the bands'.
//!
//! `fdeflate` writes one block with a fixed Huffman table and only distance-1 matches (runs
//! of zeros started in the piece itself), so a piece never refers back into another. Its
//! API has no flush, so the join reads two facts off its fixed table: the block header's
//! first bit is BFINAL, and the end-of-block code's last bit is a 1, so the last byte's
//! leading zeros are the padding after it. Both hold for the table whose header
//! `FDEFLATE_HEADER` is; any other (a future `fdeflate`) sends the image to the serial
//! encoder, which a test would notice.

use rayon::prelude::*;

use super::Rgb8;

/// Filtered bytes per band at least: big enough that a band's own Huffman header and
/// flush (about 60 bytes, 0.1% of the band's raw bytes; measured +0.3% on the built-in
/// scene's 1080p file, +1.7% on a mostly flat mesh render's) stay small and a rayon task is
/// worth its scheduling, small enough that a 1080p frame makes 90 bands, many more than
/// threads. An image of one band (a 160x136 frame, say) is one `fdeflate` stream, the
/// serial encoder's file byte for byte.
const BAND_BYTES: usize = 64 * 1024;

/// Bytes per pixel of [`Rgb8`].
const BPP: usize = 3;

/// The first bytes of every `fdeflate` 0.3 stream: the zlib header (78 01), then the block
/// header with BFINAL set (bit 0 of 0xED) and the lengths of its fixed code, of which the
/// last five bits (01111) share byte 53 with the data.
const FDEFLATE_HEADER: [u8; 54] = [
    120, 1, 237, 192, 3, 160, 36, 89, 150, 198, 241, 255, 119, 238, 141, 200, 204, 167, 114, 75,
    99, 174, 109, 219, 182, 109, 219, 182, 109, 219, 182, 109, 105, 140, 158, 150, 74, 175, 158,
    50, 51, 34, 238, 249, 118, 183, 106, 122, 166, 135, 59, 107, 213, 15,
];

/// Whether `stream` starts with [`FDEFLATE_HEADER`].
fn has_fdeflate_header(stream: &[u8]) -> bool {
    let whole = FDEFLATE_HEADER.len() - 1;
    stream.len() > whole
        && stream[..whole] == FDEFLATE_HEADER[..whole]
        && stream[whole] & 0x1F == FDEFLATE_HEADER[whole]
}

/// Rows per band for rows of `row_bytes` filtered bytes (filter type included): the
/// fewest that fill [`BAND_BYTES`]. The width alone decides it, never the thread count.
fn rows_per_band(row_bytes: usize) -> usize {
    BAND_BYTES.div_ceil(row_bytes).max(1)
}

/// One band compressed: its raw-deflate blocks in `stream[start..]` (the first band's
/// with the zlib header before them), the Adler-32 of its filtered bytes and how many there
/// are.
struct DeflatePiece {
    stream: Vec<u8>,
    start: usize,
    adler: u32,
    len: usize,
}

impl DeflatePiece {
    fn deflate(&self) -> &[u8] {
        &self.stream[self.start..]
    }
}

/// PNG bytes of an RGB image, encoded band by band on the rayon pool; `None` where
/// `fdeflate`'s output is not the one this module knows how to join.
pub fn png_bytes_in_bands(image: &Rgb8) -> Option<Vec<u8>> {
    let row = image.width as usize * BPP;
    let height = image.height as usize;
    let band_rows = rows_per_band(row + 1);
    let bands = height.div_ceil(band_rows);
    let pieces: Vec<DeflatePiece> = (0..bands)
        .into_par_iter()
        .map(|band| {
            let first = band * band_rows;
            let rows = first..(first + band_rows).min(height);
            compress_band(image, rows, band == 0, band + 1 == bands)
        })
        .collect::<Option<_>>()?;
    png_file(image, &pieces)
}

/// The PNG file of the pieces of its zlib stream: signature, IHDR (8-bit RGB, no
/// interlace), one IDAT with the pieces and the stream's Adler-32, IEND. `None` past one
/// IDAT's 2³¹ − 1 bytes.
fn png_file(image: &Rgb8, pieces: &[DeflatePiece]) -> Option<Vec<u8>> {
    let idat_len = pieces.iter().map(|p| p.deflate().len()).sum::<usize>() + 4;
    let idat_len = u32::try_from(idat_len)
        .ok()
        .filter(|&n| n <= i32::MAX as u32)?;
    let mut out = Vec::with_capacity(idat_len as usize + 64);
    out.extend_from_slice(b"\x89PNG\r\n\x1a\n");
    let mut ihdr = [0; 13];
    ihdr[..4].copy_from_slice(&image.width.to_be_bytes());
    ihdr[4..8].copy_from_slice(&image.height.to_be_bytes());
    ihdr[8..10].copy_from_slice(&[8, 2]); // 8 bits per channel, RGB; compression, filter, interlace 0
    png_chunk(&mut out, b"IHDR", &[&ihdr]);
    let mut adler = 1;
    for piece in pieces {
        adler = adler32_combine(adler, piece.adler, piece.len);
    }
    let mut idat: Vec<&[u8]> = pieces.iter().map(DeflatePiece::deflate).collect();
    let adler = adler.to_be_bytes();
    idat.push(&adler);
    png_chunk(&mut out, b"IDAT", &idat);
    png_chunk(&mut out, b"IEND", &[]);
    Some(out)
}

/// Appends a PNG chunk: length, type, the data (given in parts), CRC-32 of type and data.
fn png_chunk(out: &mut Vec<u8>, kind: &[u8; 4], parts: &[&[u8]]) {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    out.extend_from_slice(&(len as u32).to_be_bytes());
    let start = out.len();
    out.extend_from_slice(kind);
    for part in parts {
        out.extend_from_slice(part);
    }
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_be_bytes());
}

/// Filters `rows` of `image` and compresses them as one piece of the zlib stream: with
/// the zlib header if `first`, ending the stream if `last`, else ending in a sync flush.
fn compress_band(
    image: &Rgb8,
    rows: std::ops::Range<usize>,
    first: bool,
    last: bool,
) -> Option<DeflatePiece> {
    let filtered = filter_rows(image, rows.clone());
    let mut compressor = fdeflate::Compressor::new(Vec::with_capacity(filtered.len() / 2)).ok()?;
    // Row by row, as the `png` crate writes: fdeflate ends a run of zeros at each call.
    for line in filtered.chunks_exact(image.width as usize * BPP + 1) {
        compressor.write_data(line).ok()?;
    }
    let mut stream = compressor.finish().ok()?;
    if !has_fdeflate_header(&stream) || stream.len() < FDEFLATE_HEADER.len() + 4 {
        return None;
    }
    // The zero bits after the end-of-block code, whose last bit is a 1.
    let padding = stream[stream.len() - 5].leading_zeros();
    if padding == 8 {
        return None;
    }
    let stored = fdeflate::StoredOnlyCompressor::<()>::compressed_size(filtered.len());
    if stream.len() > stored {
        // Incompressible (noise): stored blocks of the rows unfiltered, as the `png`
        // crate falls back to.
        let unfiltered = unfiltered_rows(image, rows);
        let mut stream = FDEFLATE_HEADER[..2].to_vec();
        stored_blocks(&mut stream, &unfiltered, last);
        return Some(DeflatePiece {
            stream,
            start: if first { 0 } else { 2 },
            adler: simd_adler32::adler32(&unfiltered.as_slice()),
            len: unfiltered.len(),
        });
    }
    let trailer = stream.split_off(stream.len() - 4);
    let adler = u32::from_be_bytes(trailer.try_into().ok()?);
    if !last {
        // Clear BFINAL, then an empty stored block: its three header bits (all 0) in the
        // padding after the end-of-block code where they fit, else in one more byte; LEN,
        // NLEN.
        stream[2] &= !1;
        if padding < 3 {
            stream.push(0);
        }
        stream.extend_from_slice(&[0, 0, 0xFF, 0xFF]);
    }
    Some(DeflatePiece {
        stream,
        start: if first { 0 } else { 2 },
        adler,
        len: filtered.len(),
    })
}

/// Appends `data` as stored deflate blocks, the last one final if `last`.
fn stored_blocks(out: &mut Vec<u8>, data: &[u8], last: bool) {
    let blocks = data.len().div_ceil(0xFFFF);
    out.reserve(data.len() + 5 * blocks);
    for (i, block) in data.chunks(0xFFFF).enumerate() {
        let len = block.len() as u16;
        out.push(u8::from(last && i + 1 == blocks));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
}

/// Adler-32 of A then B from theirs and B's length (zlib's adler32_combine): the sums
/// s1 = 1 + ΣA + ΣB, s2 = s2(A) + s2(B) + len(B)·(s1(A) − 1), modulo 65521.
fn adler32_combine(a: u32, b: u32, b_len: usize) -> u32 {
    const BASE: u64 = 65521;
    let (a1, a2) = (u64::from(a & 0xFFFF), u64::from(a >> 16));
    let (b1, b2) = (u64::from(b & 0xFFFF), u64::from(b >> 16));
    let len = b_len as u64 % BASE;
    let s1 = (a1 + b1 + BASE - 1) % BASE;
    let s2 = (a2 + b2 + len * ((a1 + BASE - 1) % BASE)) % BASE;
    (s2 << 16 | s1) as u32
}

/// The filter type byte and filtered bytes of `rows`, each row filtered against the one
/// above it in the image (zeros above the first).
fn filter_rows(image: &Rgb8, rows: std::ops::Range<usize>) -> Vec<u8> {
    let row = image.width as usize * BPP;
    let zeros = vec![0; row];
    let mut out = vec![0; rows.len() * (row + 1)];
    let mut trial = vec![0; row];
    for (y, filtered) in rows.zip(out.chunks_exact_mut(row + 1)) {
        let current = &image.data[y * row..][..row];
        let above = match y {
            0 => &zeros[..],
            _ => &image.data[(y - 1) * row..][..row],
        };
        let (kind, rest) = filtered.split_first_mut().expect("a filter type byte");
        *kind = adaptive_filter(above, current, rest, &mut trial);
    }
    out
}

/// `rows` of `image` each after a filter type byte 0 (None).
fn unfiltered_rows(image: &Rgb8, rows: std::ops::Range<usize>) -> Vec<u8> {
    let row = image.width as usize * BPP;
    let mut out = Vec::with_capacity(rows.len() * (row + 1));
    for line in image.data[rows.start * row..rows.end * row].chunks_exact(row) {
        out.push(0);
        out.extend_from_slice(line);
    }
    out
}

/// PNG filter types, in the order the `png` crate's adaptive filter tries them.
const ADAPTIVE_ORDER: [u8; 4] = [UP, SUB, AVG, PAETH];
const SUB: u8 = 1;
const UP: u8 = 2;
const AVG: u8 = 3;
const PAETH: u8 = 4;

/// The `png` crate's `Filter::Adaptive`: of Up, Sub, Avg and Paeth, the last with the
/// smallest sum of |byte as i8|, stopping at a sum of 0. Writes the filtered row into
/// `best` and returns its filter type.
fn adaptive_filter(above: &[u8], current: &[u8], best: &mut [u8], trial: &mut [u8]) -> u8 {
    let mut choice = (u64::MAX, 0);
    for kind in ADAPTIVE_ORDER {
        filter_row(kind, above, current, trial);
        let cost = sum_of_magnitudes(trial);
        if cost <= choice.0 {
            choice = (cost, kind);
            best.copy_from_slice(trial);
            if cost == 0 {
                break;
            }
        }
    }
    choice.1
}

/// Σ |byte as i8|, the `png` crate's cost of a filtered row; 32 bytes at a time in 16 bits
/// (at most 32 · 128), so it vectorises.
fn sum_of_magnitudes(row: &[u8]) -> u64 {
    let magnitude = |&b: &u8| u16::from((b as i8).unsigned_abs());
    let chunks = row.chunks_exact(32);
    let tail = chunks.remainder().iter().map(magnitude).sum::<u16>();
    chunks
        .map(|chunk| u64::from(chunk.iter().map(magnitude).sum::<u16>()))
        .sum::<u64>()
        + u64::from(tail)
}

/// One row through PNG filter `kind` (1 to 4).
fn filter_row(kind: u8, above: &[u8], current: &[u8], out: &mut [u8]) {
    match kind {
        SUB => filter_row_with(above, current, out, |a, _, _| a),
        UP => filter_row_with(above, current, out, |_, b, _| b),
        AVG => filter_row_with(above, current, out, |a, b, _| {
            ((u16::from(a) + u16::from(b)) / 2) as u8
        }),
        _ => filter_row_with(above, current, out, paeth),
    }
}

/// Each byte less `predict(a, b, c)`, with `a` the byte one pixel left, `b` the byte above
/// and `c` the byte above `a` (0 outside the image); one body per filter, so each loop
/// vectorises.
#[inline(always)]
fn filter_row_with(
    above: &[u8],
    current: &[u8],
    out: &mut [u8],
    predict: impl Fn(u8, u8, u8) -> u8,
) {
    let lead = BPP.min(current.len());
    for i in 0..lead {
        out[i] = current[i].wrapping_sub(predict(0, above[i], 0));
    }
    let rest = current[lead..]
        .iter()
        .zip(&current[..current.len() - lead])
        .zip(above[lead..].iter().zip(&above[..above.len() - lead]));
    for (o, ((&x, &a), (&b, &c))) in out[lead..].iter_mut().zip(rest) {
        *o = x.wrapping_sub(predict(a, b, c));
    }
}

/// The Paeth predictor (PNG §9.4): of a, b, c the nearest to a + b − c, ties to a then b.
/// In bytes alone, so it vectorises (FPNGE's form, as the `png` crate's): |p − a| = |b − c|,
/// |p − b| = |a − c|, and |p − c| is their difference where c lies between a and b, else
/// larger than both.
fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let pa = b.max(c) - b.min(c);
    let pb = a.max(c) - a.min(c);
    let pc = if (a < c) == (c < b) {
        pa.max(pb) - pa.min(pb)
    } else {
        255
    };
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::image::{decode_image, png_bytes, png_bytes_serial};

    /// An image with flat areas (runs of zeros after filtering), gradients and, below
    /// `noise_from` rows, noise from a linear congruential generator.
    fn test_image(width: u32, height: u32, noise_from: u32) -> Rgb8 {
        let mut state = 0x2545_F491_u32 ^ width ^ height << 16;
        let mut data = Vec::with_capacity(width as usize * height as usize * 3);
        for y in 0..height {
            for x in 0..width {
                state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let noise = (state >> 24) as u8;
                let pixel = match (x / 7 + y / 5) % 3 {
                    _ if y >= noise_from => [noise, noise ^ 0x5A, noise.wrapping_mul(3)],
                    0 => [40, 40, 200],
                    1 => [(x * 3) as u8, (y * 5) as u8, (x + y) as u8],
                    _ => [(x ^ y) as u8, noise & 3, 255],
                };
                data.extend_from_slice(&pixel);
            }
        }
        Rgb8 {
            width,
            height,
            data,
        }
    }

    fn bands_of(image: &Rgb8) -> usize {
        (image.height as usize).div_ceil(rows_per_band(image.width as usize * 3 + 1))
    }

    /// One band is one `fdeflate` stream of the same filtered bytes: the serial encoder's
    /// file byte for byte, which shows the filter choice is the `png` crate's.
    #[test]
    fn one_band_gives_the_serial_encoders_bytes() {
        for (width, height, noise_from) in [
            (1, 1, 1),
            (1, 7, 3),
            (5, 1, 1),
            (3, 3, 1),
            (37, 29, 15),
            (101, 64, 32),
            (300, 70, 35),
            (120, 80, 0), // noise: stored
        ] {
            let image = test_image(width, height, noise_from);
            assert_eq!(bands_of(&image), 1, "{width}x{height}");
            let banded = png_bytes_in_bands(&image).expect("fdeflate's known output");
            assert!(banded == png_bytes_serial(&image), "{width}x{height}");
        }
    }

    /// Many bands, odd widths, bands of one row, a last band short, noisy bands stored:
    /// the file decodes to exactly the pixels.
    #[test]
    fn banded_images_decode_to_their_pixels() {
        for (width, height, noise_from) in [
            (997, 211, 300),
            (997, 211, 150),
            (1, 3000, 3000),
            (22_000, 5, 5),
            (22_000, 4, 1),
            (641, 97, 0),
        ] {
            let image = test_image(width, height, noise_from);
            let bytes = png_bytes_in_bands(&image).expect("fdeflate's known output");
            let decoded = decode_image(&bytes).unwrap();
            assert_eq!((decoded.width, decoded.height), (width, height));
            assert!(decoded.data == image.data, "{width}x{height}");
            if noise_from == 0 {
                // Stored, not fdeflate's third larger.
                assert!(
                    bytes.len() < image.data.len() * 101 / 100,
                    "{}",
                    bytes.len()
                );
            }
        }
        assert_eq!(rows_per_band(22_000 * 3 + 1), 1);
        assert!(bands_of(&test_image(997, 211, 0)) > 8);
    }

    /// A sync flush after the end-of-block code in both of its forms, with the stored
    /// block's header in the padding and in a byte of its own: the two-band file decodes.
    #[test]
    fn both_forms_of_the_sync_flush_join() {
        let mut forms = [0; 2];
        for width in 1..=40 {
            let band_rows = rows_per_band(width as usize * 3 + 1);
            let image = test_image(width, 2 * band_rows as u32, u32::MAX);
            let piece = compress_band(&image, 0..band_rows, true, false).unwrap();
            let extra_byte = piece.stream[piece.stream.len() - 5] == 0;
            forms[usize::from(extra_byte)] += 1;
            let bytes = png_bytes_in_bands(&image).unwrap();
            assert!(
                decode_image(&bytes).unwrap().data == image.data,
                "width {width}"
            );
        }
        assert!(forms[0] > 0 && forms[1] > 0, "{forms:?}");
    }

    /// Bands of a size fixed by the width: the same bytes on pools of 1, 2 and 7 threads.
    #[test]
    fn the_bytes_do_not_depend_on_the_thread_count() {
        let image = test_image(1283, 301, 250);
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            pool.install(|| png_bytes(&image))
        };
        let one = on(1);
        assert_eq!(on(2), one);
        assert_eq!(on(7), one);
        assert_eq!(decode_image(&one).unwrap().data, image.data);
    }

    /// The size a serial encoder would give, within the bands' headers and flushes.
    #[test]
    fn bands_cost_little_size() {
        let image = test_image(1920, 400, 400);
        let (banded, serial) = (png_bytes(&image).len(), png_bytes_serial(&image).len());
        assert!(
            serial < banded && banded < serial + 64 * bands_of(&image),
            "{banded} {serial}"
        );
    }

    fn adler32_bytewise(data: &[u8]) -> u32 {
        let (mut s1, mut s2) = (1u32, 0u32);
        for &b in data {
            s1 = (s1 + u32::from(b)) % 65521;
            s2 = (s2 + s1) % 65521;
        }
        s2 << 16 | s1
    }

    #[test]
    fn adler32_of_a_then_b_combines_theirs() {
        let data: Vec<u8> = (0..200_000u32)
            .map(|i| ((i * 7919) >> 3) as u8 | 0x80)
            .collect();
        for split in [0, 1, 5551, 65521, 65522, 131_042, 199_999, 200_000] {
            let (a, b) = data.split_at(split);
            assert_eq!(
                adler32_combine(adler32_bytewise(a), adler32_bytewise(b), b.len()),
                adler32_bytewise(&data),
                "{split}"
            );
        }
        assert_eq!(adler32_combine(1, 1, 0), 1);
        let ones = vec![0xFF; 300_000];
        // The crate the stored pieces' checksums come from, on the same definition.
        let adler32 = |data: &[u8]| simd_adler32::adler32(&data);
        assert_eq!(adler32(&ones), adler32_bytewise(&ones));
        assert_eq!(adler32(&data), adler32_bytewise(&data));
    }

    /// The byte-only predictor against PNG §9.4's in wider integers, on every a, b, c.
    #[test]
    fn paeth_is_the_specifications() {
        for (a, b, c) in (0..=255u8).flat_map(|a| {
            (0..=255u8).flat_map(move |b| (0..=255u8).step_by(3).map(move |c| (a, b, c)))
        }) {
            let p = i16::from(a) + i16::from(b) - i16::from(c);
            let [pa, pb, pc] = [a, b, c].map(|x| (p - i16::from(x)).abs());
            let spec = if pa <= pb && pa <= pc {
                a
            } else if pb <= pc {
                b
            } else {
                c
            };
            assert_eq!(paeth(a, b, c), spec, "{a} {b} {c}");
        }
    }

    /// Timing against the serial encoder on one thread, on a PNG named by
    /// THEIA_PNG_BENCH: `cargo test --release --lib png_bands_timing -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn png_bands_timing() {
        let path = std::env::var("THEIA_PNG_BENCH").unwrap();
        let image = crate::io::image::read_image(std::path::Path::new(&path)).unwrap();
        let pool = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
        };
        let time = |f: &dyn Fn() -> usize| {
            let t = std::time::Instant::now();
            std::hint::black_box(f());
            t.elapsed().as_secs_f64() * 1e3
        };
        let (one, two) = (pool(1), pool(2));
        let row = image.width as usize * BPP + 1;
        let (height, band_rows) = (image.height as usize, rows_per_band(row));
        let bands = height.div_ceil(band_rows);
        let pieces: Vec<DeflatePiece> = (0..bands)
            .map(|b| {
                let rows = b * band_rows..((b + 1) * band_rows).min(height);
                compress_band(&image, rows, b == 0, b + 1 == bands).unwrap()
            })
            .collect();
        let mut times = [(); 5].map(|_| vec![]);
        for _ in 0..15 {
            one.install(|| {
                times[0].push(time(&|| png_bytes_serial(&image).len()));
                times[1].push(time(&|| png_bytes(&image).len()));
                times[2].push(time(&|| {
                    filter_rows(&image, 0..image.height as usize).len()
                }));
            });
            times[3].push(two.install(|| time(&|| png_bytes(&image).len())));
            times[4].push(time(&|| png_file(&image, &pieces).unwrap().len()));
        }
        let names = [
            "serial",
            "bands",
            "filter alone",
            "bands on 2 threads",
            "joining the bands (serial)",
        ];
        for (name, mut ms) in names.into_iter().zip(times) {
            ms.sort_by(f64::total_cmp);
            let median = ms[ms.len() / 2];
            eprintln!("{name}: min {:.2} ms, median {median:.2} ms", ms[0]);
        }
    }

    #[test]
    fn paeth_prefers_a_then_b_then_c() {
        assert_eq!(paeth(0, 0, 0), 0);
        assert_eq!(paeth(10, 20, 10), 20); // p = 20: b exact
        assert_eq!(paeth(20, 10, 10), 20); // p = 20: a exact
        assert_eq!(paeth(255, 0, 255), 0); // p = 0: b
        assert_eq!(paeth(100, 100, 100), 100);
        assert_eq!(paeth(0, 255, 128), 128); // p = 127: pa 127, pb 128, pc 1
        assert_eq!(paeth(10, 10, 0), 10); // p = 20: pa = pb = 10, ties to a
        assert_eq!(paeth(10, 30, 20), 20); // p = 20: c exact
    }
}
