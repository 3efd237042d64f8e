//! Image files `theia compare` reads (PNG, other formats the `image` crate knows, plain-text
//! PPM) → `decode_image`. Errors are fine; panics are not, and a decoded image holds exactly
//! width × height pixels.
#![no_main]

use libfuzzer_sys::fuzz_target;
use theia::image::decode_image;

fuzz_target!(|data: &[u8]| {
    if let Ok(image) = decode_image(data) {
        assert_eq!(
            image.data.len(),
            image.width as usize * image.height as usize * 3
        );
    }
});
