//! The requests `theia view` answers, parsed from the method and URL a browser sends: one
//! closed set of routes, so anything else (other paths, other methods, malformed queries)
//! is refused before it reaches a file or the machine.

use std::path::{Component, Path, PathBuf};

use crate::emu::core::RomVariant;

/// Where the page saves a shader the viewer holds only in memory (`theia view` without
/// `--shader`), unless the person picks another path.
pub const DEFAULT_SAVE_PATH: &str = "shaders/my_shader.shdr";
/// Longest save path accepted, in bytes.
const MAX_SAVE_PATH: usize = 1024;

/// Which side of a comparison, or the marked difference of both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompareImage {
    A,
    B,
    Difference,
}

/// One side of a comparison: a core count (`None`: the viewer's own) and a ROM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub cores: Option<u32>,
    pub rom: RomVariant,
}

/// What a request asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route {
    Page,
    Events,
    State,
    Frame,
    Pixel {
        x: u32,
        y: u32,
    },
    Trace {
        x: u32,
        y: u32,
    },
    ReadShader,
    /// `PUT /shader`; `Some` with `?path=P` (`&overwrite=1`): the first save of an
    /// in-memory shader.
    SaveShader(Option<SaveAs>),
    /// `a` defaults to 1 core, `b` to the viewer's core count; both to the faithful ROM.
    Compare {
        a: Setting,
        b: Setting,
    },
    Compared(CompareImage),
}

/// A new file for an in-memory shader: a relative `.shdr` path without `..`
/// ([`save_path`]); `overwrite` once the person agreed to replace an existing file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaveAs {
    pub path: PathBuf,
    pub overwrite: bool,
}

/// Why a request is refused: the status code and a message for the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestRefusal {
    pub status: u16,
    pub message: String,
}

fn bad_request(message: &str) -> RequestRefusal {
    RequestRefusal {
        status: 400,
        message: message.into(),
    }
}

/// Largest request body the viewer takes (a shader to save).
pub const MAX_BODY_BYTES: u64 = 256 * 1024;

/// What the server decides from a request's head, before reading anything more: the
/// route, or why the request is refused. `header` looks a header up by its lower-case
/// name (none: absent; a value that is not text reads as U+FFFD); `port` is the one the
/// server listens on.
///
/// In order: a declared body over [`MAX_BODY_BYTES`] is refused (413) before anything
/// else, so it is never read; the `Host` must be a loopback name with this port (a page
/// elsewhere that rebinds its own name to 127.0.0.1 must not reach the server); an
/// `Origin` must be this server's (only its page may change anything); then the route;
/// and anything but the page itself is refused when the browser marks the request as
/// coming from another site (`Sec-Fetch-Site`: a cross-site `<img>` sends no `Origin`).
pub fn admit<'h>(
    method: &str,
    url: &str,
    header: impl Fn(&str) -> Option<&'h str>,
    port: u16,
) -> Result<Route, RequestRefusal> {
    let refuse = |status, message: &str| {
        Err(RequestRefusal {
            status,
            message: message.into(),
        })
    };
    if header("content-length").is_some_and(|length| declared_length(length) > MAX_BODY_BYTES) {
        return refuse(413, "a shader is at most 256 KiB");
    }
    let names = |scheme: &str| {
        ["127.0.0.1", "localhost", "[::1]"].map(|host| format!("{scheme}{host}:{port}"))
    };
    let loopback =
        header("host").is_some_and(|host| names("").contains(&host.to_ascii_lowercase()));
    if !loopback {
        return refuse(403, "only 127.0.0.1 is served");
    }
    let same_origin = header("origin")
        .is_none_or(|origin| names("http://").contains(&origin.to_ascii_lowercase()));
    if !same_origin {
        return refuse(403, "requests from other sites are refused");
    }
    let route = Route::parse(method, url)?;
    let cross_site =
        header("sec-fetch-site").is_some_and(|site| !matches!(site, "same-origin" | "none"));
    if route != Route::Page && cross_site {
        return refuse(403, "requests from other sites are refused");
    }
    Ok(route)
}

/// A `Content-Length` value as a number; one that does not parse counts as too large.
pub fn declared_length(value: &str) -> u64 {
    value.trim().parse().unwrap_or(u64::MAX)
}

impl Route {
    /// The route for `method` and `url` (path and query, as in the request line).
    pub fn parse(method: &str, url: &str) -> Result<Route, RequestRefusal> {
        let (path, query) = url.split_once('?').unwrap_or((url, ""));
        let route = match (method, path) {
            ("GET", "/") => Route::Page,
            ("GET", "/events") => Route::Events,
            ("GET", "/state") => Route::State,
            ("GET", "/frame.png") => Route::Frame,
            ("GET", "/pixel") => {
                let (x, y) = pixel(query)?;
                Route::Pixel { x, y }
            }
            ("GET", "/trace") => {
                let (x, y) = pixel(query)?;
                Route::Trace { x, y }
            }
            ("GET", "/shader") => Route::ReadShader,
            ("PUT", "/shader") => Route::SaveShader(save_as(query)?),
            ("GET", "/compare") => Route::Compare {
                a: setting(query, "a", Some(1))?,
                b: setting(query, "b", None)?,
            },
            ("GET", "/compare/a.png") => Route::Compared(CompareImage::A),
            ("GET", "/compare/b.png") => Route::Compared(CompareImage::B),
            ("GET", "/compare/diff.png") => Route::Compared(CompareImage::Difference),
            _ => {
                return Err(RequestRefusal {
                    status: 404,
                    message: "not found".into(),
                })
            }
        };
        Ok(route)
    }
}

/// The value of `name` in a query of `name=value` pairs (values here are numbers and
/// words, so no escapes); the first one wins.
pub fn query_value<'q>(query: &'q str, name: &str) -> Option<&'q str> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

fn save_as(query: &str) -> Result<Option<SaveAs>, RequestRefusal> {
    let Some(path) = query_value(query, "path") else {
        return Ok(None);
    };
    let path = percent_decode(path)
        .ok_or_else(|| bad_request("the save path is not a valid percent-encoded UTF-8 string"))?;
    let overwrite = match query_value(query, "overwrite") {
        None | Some("0") => false,
        Some("1") => true,
        Some(_) => return Err(bad_request("overwrite is 0 or 1")),
    };
    Ok(Some(SaveAs {
        path: save_path(&path)?,
        overwrite,
    }))
}

/// A URL query value with `%XX` escapes undone (as `encodeURIComponent` writes them);
/// `None` for a broken escape or bytes that are not UTF-8.
pub fn percent_decode(text: &str) -> Option<String> {
    let mut bytes = Vec::with_capacity(text.len());
    let mut rest = text.as_bytes();
    while let Some((&byte, tail)) = rest.split_first() {
        if byte == b'%' {
            let hex = std::str::from_utf8(tail.get(..2)?).ok()?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            bytes.push(u8::from_str_radix(hex, 16).ok()?);
            rest = &tail[2..];
        } else {
            bytes.push(byte);
            rest = tail;
        }
    }
    String::from_utf8(bytes).ok()
}

/// The path a page may save a new shader to: relative, below the directory the viewer
/// runs in (no `..`, no root, no drive), naming a `.shdr` file. Whether a directory on the
/// way is a link leading elsewhere is for the saver to check on disk.
pub fn save_path(text: &str) -> Result<PathBuf, RequestRefusal> {
    let refuse = |why: &str| {
        Err(bad_request(&format!(
            "cannot save to `{}`: {why}; expected a relative path to a .shdr file inside the \
             directory theia view runs in, such as {DEFAULT_SAVE_PATH}",
            text.escape_debug()
        )))
    };
    if text.len() > MAX_SAVE_PATH {
        return refuse("the path is too long");
    }
    if text
        .chars()
        .any(|c| c.is_control() || c == '\\' || c == ':')
    {
        return refuse("control characters, `\\` and `:` are not allowed");
    }
    let path = Path::new(text);
    if path.has_root() {
        return refuse("the path is absolute");
    }
    if path
        .components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return refuse("`..` leaves the directory");
    }
    let is_shdr = path
        .file_name()
        .and_then(|name| name.to_str())
        .and_then(|name| name.strip_suffix(".shdr"))
        .is_some_and(|stem| !stem.is_empty());
    if !is_shdr || text.ends_with('/') {
        return refuse("the file name does not end in .shdr");
    }
    Ok(path.to_path_buf())
}

fn pixel(query: &str) -> Result<(u32, u32), RequestRefusal> {
    let coordinate = |name| {
        query_value(query, name)
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or_else(|| bad_request("expected ?x=COLUMN&y=ROW (whole numbers)"))
    };
    Ok((coordinate("x")?, coordinate("y")?))
}

fn setting(query: &str, side: &str, default_cores: Option<u32>) -> Result<Setting, RequestRefusal> {
    let cores = match query_value(query, &format!("{side}_cores")) {
        None | Some("") => default_cores,
        Some(text) => match text.parse::<u32>() {
            Ok(n) if n >= 1 => Some(n),
            _ => return Err(bad_request("cores must be a whole number of at least 1")),
        },
    };
    let rom = match query_value(query, &format!("{side}_rom")) {
        None | Some("") => RomVariant::default(),
        Some(name) => name.parse::<RomVariant>().map_err(|e| bad_request(&e))?,
    };
    Ok(Setting { cores, rom })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(method: &str, url: &str) -> u16 {
        match Route::parse(method, url) {
            Ok(_) => 200,
            Err(refusal) => refusal.status,
        }
    }

    #[test]
    fn known_routes_parse() {
        assert_eq!(Route::parse("GET", "/"), Ok(Route::Page));
        assert_eq!(Route::parse("GET", "/frame.png?g=7"), Ok(Route::Frame));
        assert_eq!(
            Route::parse("GET", "/pixel?y=5&x=300"),
            Ok(Route::Pixel { x: 300, y: 5 })
        );
        assert_eq!(
            Route::parse("GET", "/trace?x=0&y=0&x=9"),
            Ok(Route::Trace { x: 0, y: 0 })
        );
        assert_eq!(Route::parse("PUT", "/shader"), Ok(Route::SaveShader(None)));
        assert_eq!(
            Route::parse("PUT", "/shader?path=shaders%2Fmy%20shader.shdr&overwrite=1"),
            Ok(Route::SaveShader(Some(SaveAs {
                path: PathBuf::from("shaders/my shader.shdr"),
                overwrite: true
            })))
        );
        assert_eq!(
            Route::parse("GET", "/compare?b_cores=16&b_rom=fixed"),
            Ok(Route::Compare {
                a: Setting {
                    cores: Some(1),
                    rom: RomVariant::Faithful
                },
                b: Setting {
                    cores: Some(16),
                    rom: RomVariant::Fixed
                },
            })
        );
        assert_eq!(
            Route::parse("GET", "/compare/diff.png"),
            Ok(Route::Compared(CompareImage::Difference))
        );
    }

    /// Head checks in their order, each with its status.
    #[test]
    fn admission_checks_body_host_origin_route_and_site() {
        let admit_with = |url: &str, headers: &[(&str, &'static str)]| {
            let headers = headers.to_vec();
            admit(
                "GET",
                url,
                move |name| headers.iter().find(|(n, _)| *n == name).map(|(_, v)| *v),
                7878,
            )
            .map_err(|refusal| refusal.status)
        };
        let host = ("host", "127.0.0.1:7878");
        assert_eq!(admit_with("/state", &[host]), Ok(Route::State));
        assert_eq!(
            admit_with("/state", &[("host", "LOCALHOST:7878")]),
            Ok(Route::State)
        );
        assert_eq!(
            admit_with("/state", &[("host", "[::1]:7878")]),
            Ok(Route::State)
        );
        assert_eq!(admit_with("/state", &[]), Err(403));
        assert_eq!(
            admit_with("/state", &[("host", "127.0.0.1:7879")]),
            Err(403)
        );
        assert_eq!(
            admit_with("/state", &[("host", "evil.example:7878")]),
            Err(403)
        );
        // The body's declared length goes first, whatever the host.
        assert_eq!(
            admit_with("/state", &[("content-length", "262145")]),
            Err(413)
        );
        assert_eq!(
            admit_with("/state", &[host, ("content-length", "x")]),
            Err(413)
        );
        assert_eq!(
            admit_with("/state", &[host, ("content-length", "262144")]),
            Ok(Route::State)
        );
        assert_eq!(
            admit_with("/state", &[host, ("origin", "http://evil.example")]),
            Err(403)
        );
        assert_eq!(
            admit_with("/state", &[host, ("origin", "http://localhost:7878")]),
            Ok(Route::State)
        );
        assert_eq!(admit_with("/nothing", &[host]), Err(404));
        for site in ["cross-site", "same-site", "\u{fffd}"] {
            let site = Box::leak(site.to_string().into_boxed_str());
            assert_eq!(
                admit_with("/compare", &[host, ("sec-fetch-site", site)]),
                Err(403)
            );
            assert_eq!(
                admit_with("/", &[host, ("sec-fetch-site", site)]),
                Ok(Route::Page)
            );
        }
        for site in ["same-origin", "none"] {
            assert!(admit_with("/trace?x=0&y=0", &[host, ("sec-fetch-site", site)]).is_ok());
        }
    }

    #[test]
    fn everything_else_is_refused() {
        for (method, url) in [
            ("GET", "/etc/passwd"),
            ("GET", "/../Cargo.toml"),
            ("GET", "//"),
            ("GET", ""),
            ("POST", "/shader"),
            ("DELETE", "/"),
            ("GET", "/frame.png/"),
            ("get", "/"),
        ] {
            assert_eq!(status(method, url), 404, "{method} {url}");
        }
        for url in [
            "/pixel",
            "/pixel?x=1",
            "/pixel?x=-1&y=0",
            "/pixel?x=4294967296&y=0",
            "/pixel?x=1.5&y=0",
            "/compare?a_cores=0",
            "/compare?b_cores=x",
            "/compare?a_rom=shiny",
        ] {
            assert_eq!(status("GET", url), 400, "{url}");
        }
        for query in [
            "path=/tmp/a.shdr",
            "path=%2Ftmp%2Fa.shdr",
            "path=../a.shdr",
            "path=shaders/../../a.shdr",
            "path=a.txt",
            "path=.shdr",
            "path=a.shdr/",
            "path=",
            "path=C:a.shdr",
            "path=a%5C..%5Cb.shdr",
            "path=a%0A.shdr",
            "path=%zz.shdr",
            "path=%ff.shdr",
            "path=a.shdr&overwrite=yes",
        ] {
            assert_eq!(status("PUT", &format!("/shader?{query}")), 400, "{query}");
        }
        assert_eq!(status("PUT", "/shader?path=./a/b.shdr"), 200);
        // The largest coordinate parses; the frame decides whether it exists.
        assert_eq!(status("GET", "/pixel?x=4294967295&y=0"), 200);
    }
}
