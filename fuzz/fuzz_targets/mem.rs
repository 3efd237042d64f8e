//! Test-bench input files → every `.mem` reader and the plain-text PPM reader. Readers may
//! refuse the text, but never panic, and what they accept must be consistent.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use theia::io::image::parse_p3;
use theia::io::scene::mem::{parse_instructions, parse_params, parse_vertices, read_hex_words};

fuzz_target!(|data: &[u8]| {
    // `read_image` decodes PPM text lossily; the .mem readers refuse non-UTF-8 files.
    if let Ok(image) = parse_p3(&String::from_utf8_lossy(data)) {
        assert_eq!(
            image.data.len(),
            image.width as usize * image.height as usize * 3
        );
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let file = Path::new("fuzz.mem");
    let Ok(words) = read_hex_words(text, file) else {
        return;
    };
    if let Ok((config, partitions)) = parse_params(text, file) {
        assert_eq!(config.len(), 6);
        let (width, height) = (config[4][0] >> 17, config[4][1] >> 17);
        for partition in &partitions {
            assert!(partition.validate(width, height).is_ok());
            // Keep the walk cheap: huge partitions are legal but slow to enumerate.
            if partition.pixel_count() <= 4096 {
                assert_eq!(partition.pixels().count(), partition.pixel_count());
            }
        }
    }
    if let Ok(triangles) = parse_vertices(text, file) {
        assert!(words.len() >= 10 + triangles.len() * 21);
    }
    if let Ok(instructions) = parse_instructions(text, file) {
        assert_eq!(instructions.len(), words.len().saturating_sub(1) / 2);
    }
});
