//! `theia view`'s request line (method and URL, as a browser or anything else on the
//! machine sends them) → route. Besides "no panic": only the fixed set of paths is ever
//! accepted, so no request can name a file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use theia::tools::viewer::Route;

const PATHS: [&str; 10] = [
    "/",
    "/events",
    "/state",
    "/frame.png",
    "/pixel",
    "/trace",
    "/shader",
    "/compare",
    "/compare/a.png",
    "/compare/b.png",
];

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (method, url) = text.split_once(' ').unwrap_or((text, ""));
    if Route::parse(method, url).is_ok() {
        let path = url.split_once('?').map_or(url, |(path, _)| path);
        assert!(
            PATHS.contains(&path) || path == "/compare/diff.png",
            "accepted {method} {url}"
        );
    }
});
