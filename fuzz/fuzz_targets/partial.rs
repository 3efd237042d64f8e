//! Partial images `theia merge` reads (`theia render --band K/N`'s PNGs) → `PartialImage::
//! from_png`, and the description text alone → `PartialHeader::parse`. Errors are fine;
//! panics are not. A part that reads back holds width × height RGBA pixels, writes back to a
//! PNG that reads as the same part, and merges on its own only if it is the only band.
#![no_main]

use libfuzzer_sys::fuzz_target;
use theia::image::partial::{merge, PartialHeader, PartialImage};

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(header) = PartialHeader::parse(text) {
            assert_eq!(PartialHeader::parse(&header.to_text()), Ok(header));
        }
    }
    if let Ok(part) = PartialImage::from_png(data) {
        let header = &part.header;
        assert_eq!(
            part.rgba.len(),
            header.width as usize * header.height as usize * 4
        );
        assert_eq!(PartialImage::from_png(&part.to_png()).as_ref(), Ok(&part));
        let merged = merge(&[("part".into(), part.clone())]);
        assert_eq!(merged.is_ok(), part.header.band.count == 1);
    }
});
