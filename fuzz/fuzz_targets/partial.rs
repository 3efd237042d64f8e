//! Partial images `theia merge` reads (`theia render --band K/N`'s PNGs) → `PartialImage::
//! from_png`, the description before the pixels alone → `PartialHeader::from_png` (what
//! merge checks before decoding any part), and the description text → `PartialHeader::
//! parse`. Errors are fine; panics are not. A part that reads back holds width × height
//! RGBA pixels, has the header the header-only reader gives, writes back to a PNG that
//! reads as the same part, and merges on its own only if it is the only band.
#![no_main]

use libfuzzer_sys::fuzz_target;
use theia::io::image::partial::{merge, PartialHeader, PartialImage};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(header) = PartialHeader::parse(text) {
            assert_eq!(PartialHeader::parse(&header.to_text()), Ok(header));
        }
    }
    let header_only = PartialHeader::from_png(std::io::Cursor::new(data));
    if let Ok(part) = PartialImage::from_png(data) {
        let header = &part.header;
        assert_eq!(header_only.as_ref(), Ok(header));
        assert_eq!(
            part.rgba.len(),
            header.width as usize * header.height as usize * 4
        );
        assert_eq!(PartialImage::from_png(&part.to_png()).as_ref(), Ok(&part));
        let merged = merge(&[("part".into(), part.clone())]);
        assert_eq!(merged.is_ok(), part.header.band.count == 1);
    }
});
