//! Image files `theia compare` reads (PNG, other formats the `image` crate knows, plain-text
//! PPM) → `decode_image`, and their headers alone → `image_size` (what `merge --animate`
//! checks before decoding any frame). Errors are fine; panics are not, a decoded image holds
//! exactly width × height pixels, and its size is the one its header gives.
#![no_main]

use libfuzzer_sys::fuzz_target;
use theia::io::image::{decode_image, image_size};

fuzz_target!(|data: &[u8]| {
    let size = image_size(data);
    if let Ok(image) = decode_image(data) {
        assert_eq!(size, Ok((image.width, image.height)));
        assert_eq!(
            image.data.len(),
            image.width as usize * image.height as usize * 3
        );
    }
});
