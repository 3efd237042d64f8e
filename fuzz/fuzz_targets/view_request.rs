//! `theia view`'s admission of a request from its head (request line and headers, as any
//! program on the machine may send them) → `viewer::admit`. Besides "no panic": a request
//! is admitted only with a loopback `Host` for the port, no foreign `Origin`, a declared
//! body of at most 256 KiB, and (but for the page) no cross-site `Sec-Fetch-Site`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use theia::tools::viewer::{admit, declared_length, Route, MAX_BODY_BYTES};

const PORT: u16 = 7878;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut words = request_line.split(' ');
    let (method, url) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let headers: Vec<(String, &str)> = lines
        .take_while(|line| !line.is_empty())
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim()))
        .collect();
    // The first of a repeated header, as hyper's HeaderMap::get gives it.
    let header = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| *v);
    let Ok(route) = admit(method, url, header, PORT) else {
        return;
    };
    let host = header("host").unwrap().to_ascii_lowercase();
    assert!(
        ["127.0.0.1", "localhost", "[::1]"].iter().any(|name| host == format!("{name}:{PORT}")),
        "admitted Host {host:?}"
    );
    if let Some(origin) = header("origin") {
        assert!(origin.to_ascii_lowercase().ends_with(&format!(":{PORT}")), "admitted Origin {origin:?}");
    }
    if let Some(length) = header("content-length") {
        assert!(declared_length(length) <= MAX_BODY_BYTES, "admitted a body of {length}");
    }
    if route != Route::Page {
        let site = header("sec-fetch-site");
        assert!(matches!(site, None | Some("same-origin" | "none")), "admitted {site:?}");
    }
});
