//! `theia view [SCENE] [--shader FILE] [--port P]`: a page on 127.0.0.1 that shows the
//! frame, re-renders on every change of the scene or shader (pushed as server-sent
//! events), tells what a pixel is made of, traces it, and compares two settings.
//!
//! The server answers a fixed set of routes and reads no file but the scene and the
//! shader named on the command line; everything else is a 404. Without `--shader` the page
//! edits a starter held in memory ([`starter`]) until its first save names a new `.shdr`
//! file inside the current directory, which then counts as the shader given.

mod json;
mod starter;
mod state;

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context};
use clap::Args;
use notify::{RecursiveMode, Watcher};
use tiny_http::{Header, Request, Response, Server};

use super::scene_args::{same_path, SceneArgs};
use super::shader::ShaderArgs;
use super::watch::{parent_dir, wait_for_change};
use super::Outcome;
use state::Viewer;
use theia::image::write_atomically;
use theia::inspect::pixel_info;
use theia::viewer::{CompareImage, Route, SaveAs};

/// The page: HTML, CSS and script in one file, built into the binary.
const PAGE: &str = include_str!("page.html");
/// Largest shader the page may save.
const MAX_SHADER_BYTES: usize = 256 * 1024;
/// Requests served at once (event streams included, up to [`state::MAX_SUBSCRIBERS`] of
/// them); more get a 503.
const MAX_REQUESTS: usize = 2 * state::MAX_SUBSCRIBERS;
/// An idle event stream sends a comment this often, so a closed page is noticed.
const KEEPALIVE: Duration = Duration::from_secs(10);

#[derive(Args)]
pub struct ViewArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    #[command(flatten)]
    pub shader: ShaderArgs,
    /// Port on 127.0.0.1 (0 picks a free one)
    #[arg(long, value_name = "P", default_value_t = 7878)]
    pub port: u16,
}

pub fn run(args: ViewArgs) -> anyhow::Result<Outcome> {
    let server = Server::http(("127.0.0.1", args.port))
        .map_err(|e| anyhow!("cannot listen on 127.0.0.1:{}: {e}", args.port))?;
    let address = server
        .server_addr()
        .to_ip()
        .context("the server has no IP address")?;
    let server = Arc::new(server);
    let viewer = Arc::new(Viewer::new(args.scene, args.shader));

    // Watch before the first render, so an edit made during it is not missed.
    *viewer.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(watch(&viewer)?);
    {
        let viewer = viewer.clone();
        std::thread::spawn(move || viewer.render_loop());
    }
    {
        let (viewer, server) = (viewer.clone(), server.clone());
        super::on_interrupt(move || {
            viewer.stop();
            server.unblock();
        });
    }

    println!("http://{address}/");
    std::io::stdout().flush()?;
    eprintln!("serving {address} (Ctrl-C to stop)");

    let active = Arc::new(AtomicUsize::new(0));
    for request in server.incoming_requests() {
        if active.fetch_add(1, Ordering::SeqCst) >= MAX_REQUESTS {
            active.fetch_sub(1, Ordering::SeqCst);
            let _ = request.respond(text(503, "too many requests at once"));
            continue;
        }
        let (viewer, active) = (viewer.clone(), active.clone());
        std::thread::spawn(move || {
            handle(&viewer, request, address.port());
            active.fetch_sub(1, Ordering::SeqCst);
        });
    }
    eprintln!("stopped");
    Ok(Outcome::Success)
}

/// Starts watching the scene's and shader's directories; each relevant change asks for a
/// render. The shader file may come later (the starter's first save adds its directory).
fn watch(viewer: &Arc<Viewer>) -> anyhow::Result<notify::RecommendedWatcher> {
    let mut dirs = viewer.scene.watch_dirs();
    if let Some(shader) = viewer.shader_file() {
        dirs.push(parent_dir(&shader));
    }
    dirs.sort();
    dirs.dedup();
    let (events, changes) = std::sync::mpsc::channel();
    let mut watcher = notify::recommended_watcher(events).context("starting the file watcher")?;
    for dir in &dirs {
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .with_context(|| format!("{}: cannot watch", dir.display()))?;
    }
    let viewer = viewer.clone();
    std::thread::spawn(move || {
        let relevant = |path: &Path| {
            viewer.scene.is_source(path)
                || viewer
                    .shader_file()
                    .is_some_and(|shader| same_path(path, &shader))
        };
        while wait_for_change(&changes, &relevant).is_ok() {
            viewer.request_render();
        }
    });
    Ok(watcher)
}

type Reply = Response<std::io::Cursor<Vec<u8>>>;

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("header names are ASCII")
}

fn bytes(status: u16, content_type: &str, body: Vec<u8>) -> Reply {
    Response::from_data(body)
        .with_status_code(status)
        .with_header(header("Content-Type", content_type))
        .with_header(header("Cache-Control", "no-store"))
        .with_header(header("X-Content-Type-Options", "nosniff"))
}

fn text(status: u16, body: &str) -> Reply {
    bytes(
        status,
        "text/plain; charset=utf-8",
        body.as_bytes().to_vec(),
    )
}

fn json_reply(body: String) -> Reply {
    bytes(200, "application/json", body.into_bytes())
}

fn png(body: &[u8]) -> Reply {
    bytes(200, "image/png", body.to_vec())
}

/// Only requests addressed to the loopback name: a page elsewhere that rebinds its own
/// host name to 127.0.0.1 must not reach the server.
fn loopback_host(request: &Request, port: u16) -> bool {
    let host = request
        .headers()
        .iter()
        .find(|h| h.field.equiv("Host"))
        .map(|h| h.value.as_str().to_string());
    match host {
        Some(host) => [
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
        ]
        .contains(&host.to_ascii_lowercase()),
        None => false,
    }
}

/// A request from another site's page (which a browser marks with its `Origin`) is refused:
/// only the page this server serves may change anything. Requests without one (command-line
/// tools, and a browser's own same-origin GETs) pass.
fn same_origin(request: &Request, port: u16) -> bool {
    let origin = request.headers().iter().find(|h| h.field.equiv("Origin"));
    origin.is_none_or(|origin| {
        [
            format!("http://127.0.0.1:{port}"),
            format!("http://localhost:{port}"),
            format!("http://[::1]:{port}"),
        ]
        .contains(&origin.value.as_str().to_ascii_lowercase())
    })
}

fn handle(viewer: &Viewer, mut request: Request, port: u16) {
    // Before anything else: whatever the answer, a body left unread would be read whole.
    if request
        .body_length()
        .is_some_and(|length| length > MAX_SHADER_BYTES)
    {
        refuse_body(request, port);
        return;
    }
    if !loopback_host(&request, port) {
        let _ = request.respond(text(403, "only 127.0.0.1 is served"));
        return;
    }
    if !same_origin(&request, port) {
        let _ = request.respond(text(403, "requests from other sites are refused"));
        return;
    }
    let route = match Route::parse(request.method().as_str(), request.url()) {
        Ok(route) => route,
        Err(refusal) => {
            let _ = request.respond(text(refusal.status, &refusal.message));
            return;
        }
    };
    let reply = match route {
        Route::Page => bytes(200, "text/html; charset=utf-8", PAGE.into()),
        Route::Events => return serve_events(viewer, request),
        Route::State => json_reply(viewer.state_json()),
        Route::Frame => match viewer.latest() {
            Some(rendered) => png(&rendered.png),
            None => text(503, "no frame yet"),
        },
        Route::Pixel { x, y } => pixel(viewer, x, y),
        Route::Trace { x, y } => match viewer.trace(x, y) {
            Ok(trace) => text(200, &trace),
            Err(error) => text(404, &super::error_message(&error)),
        },
        Route::ReadShader => read_shader(viewer),
        Route::SaveShader(save_as) => save_shader(viewer, &mut request, save_as),
        Route::Compare { a, mut b } => {
            b.cores = b.cores.or(viewer.scene.cores);
            match viewer.compare(a, b) {
                Ok(comparison) => json_reply(comparison.json.clone()),
                Err(error) => text(409, &super::error_message(&error)),
            }
        }
        Route::Compared(image) => compared(viewer, image),
    };
    let _ = request.respond(reply);
}

fn pixel(viewer: &Viewer, x: u32, y: u32) -> Reply {
    let Some(rendered) = viewer.latest() else {
        return text(503, "no frame yet");
    };
    match pixel_info(&rendered.render.frame, x, y) {
        Ok(info) => {
            let numbers = |values: [String; 3]| json::array(values);
            json_reply(json::object(&[
                ("x", x.to_string()),
                ("y", y.to_string()),
                ("generation", rendered.generation.to_string()),
                ("rgb", numbers(info.rgb.map(|c| c.to_string()))),
                (
                    "words",
                    numbers(info.words.map(|w| json::string(&format!("{w:08x}")))),
                ),
                (
                    "values",
                    numbers(
                        info.words
                            .map(|w| format!("{:.6}", w as i32 as f64 / 131072.0)),
                    ),
                ),
                ("written", numbers(info.written.map(|w| w.to_string()))),
                ("core", info.location.core.to_string()),
                ("cores", info.location.cores.to_string()),
                ("index", info.location.index.to_string()),
                ("pixels", info.location.pixels.to_string()),
            ]))
        }
        Err(error) => text(404, &error.to_string()),
    }
}

fn read_shader(viewer: &Viewer) -> Reply {
    let Some(path) = viewer.shader_file() else {
        return match viewer.starter() {
            Some(starter) => text(200, &starter.source),
            None => text(503, "the starter is made once the scene has loaded"),
        };
    };
    match std::fs::read(&path) {
        Ok(source) => match String::from_utf8(source) {
            Ok(source) => text(200, &source),
            Err(_) => text(415, "the shader is a binary file"),
        },
        Err(error) => text(404, &format!("{}: {error}", path.display())),
    }
}

/// Refuses a request whose declared body is larger than any the server takes, without
/// reading it: tiny_http 0.12 reads a body left unread to its declared end when the request
/// is dropped (allocating that much at once, tiny-http#290), so the connection's reading
/// side is shut first. The answer still goes out; then the connection ends.
fn refuse_body(request: Request, port: u16) {
    let peer = request.remote_addr().copied();
    if let Some(peer) = peer {
        shut(peer, port, Shutdown::Read);
    }
    let reply = text(413, "a shader is at most 256 KiB").with_header(header("Connection", "close"));
    if request.body_length() > Some(MAX_DRAIN_ALLOCATION) {
        // Dropped, this request would allocate its declared length at once, and a failed
        // allocation aborts the process: it is never dropped. That keeps one of tiny_http's
        // threads waiting for good, for a request no browser sends.
        std::mem::forget(request.upgrade("close", reply));
        // The answer is out: the client sees the connection end.
        if let Some(peer) = peer {
            shut(peer, port, Shutdown::Write);
        }
    } else {
        let _ = request.respond(reply);
    }
}

/// The largest declared body whose unread rest tiny_http may allocate when a refused
/// request is dropped (the allocation is zeroed lazily: only its size can hurt).
const MAX_DRAIN_ALLOCATION: usize = 1 << 30;

/// Shuts one side of this process's connection from `peer` to `port`, found among the open
/// descriptors (tiny_http does not hand out its sockets).
#[cfg(target_os = "linux")]
fn shut(peer: SocketAddr, port: u16, how: Shutdown) {
    use std::mem::ManuallyDrop;
    use std::net::TcpStream;
    use std::os::fd::FromRawFd;
    let Ok(descriptors) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    for entry in descriptors.flatten() {
        let Some(fd) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let is_socket = std::fs::read_link(entry.path())
            .is_ok_and(|target| target.to_string_lossy().starts_with("socket:"));
        if !is_socket {
            continue;
        }
        // SAFETY: the descriptor is open (just listed; if it closed since, the calls below
        // fail) and is never closed here: ManuallyDrop keeps it the server's. Only
        // getpeername, getsockname and shutdown touch it.
        let socket = ManuallyDrop::new(unsafe { TcpStream::from_raw_fd(fd) });
        if socket.peer_addr().ok() == Some(peer)
            && socket.local_addr().is_ok_and(|local| local.port() == port)
        {
            let _ = socket.shutdown(how);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn shut(_peer: SocketAddr, _port: u16, _how: Shutdown) {}

/// One save at a time, so two first saves cannot both pick the file.
static SAVING: Mutex<()> = Mutex::new(());

fn save_shader(viewer: &Viewer, request: &mut Request, save_as: Option<SaveAs>) -> Reply {
    let mut body = Vec::new();
    let read = request
        .as_reader()
        .take(MAX_SHADER_BYTES as u64 + 1)
        .read_to_end(&mut body);
    if read.is_err() {
        return text(400, "the request body could not be read");
    }
    if body.len() > MAX_SHADER_BYTES {
        return text(413, "a shader is at most 256 KiB");
    }
    if std::str::from_utf8(&body).is_err() {
        return text(400, "a shader is UTF-8 text");
    }
    let _one_at_a_time = SAVING.lock().unwrap_or_else(|p| p.into_inner());
    let path = match (viewer.shader_file(), save_as) {
        (Some(path), None) => path,
        (Some(path), Some(_)) => {
            return text(
                409,
                &format!("the shader is already saved as {}", path.display()),
            )
        }
        (None, None) => {
            return text(
                409,
                "the shader has no file yet: give ?path=FILE.shdr for the first save",
            )
        }
        (None, Some(save_as)) => match new_shader_file(&save_as) {
            Ok(path) => path,
            Err(refusal) => return refusal,
        },
    };
    if let Err(error) = write_atomically(&path, &body) {
        return text(500, &error.to_string());
    }
    if viewer.shader_file().is_none() {
        if let Some(watcher) = viewer
            .watcher
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            if let Err(error) = watcher.watch(&parent_dir(&path), RecursiveMode::NonRecursive) {
                eprintln!("{}: cannot watch: {error}", path.display());
            }
        }
        viewer.adopt_shader_file(&path);
    } else {
        viewer.request_render();
    }
    text(200, "saved")
}

/// Checks a first save's path on disk: it stays inside the current directory even through
/// links (missing directories are made), and an existing file is replaced only with
/// `overwrite`.
fn new_shader_file(save_as: &SaveAs) -> Result<PathBuf, Reply> {
    let failed = |error: std::io::Error| text(500, &format!("{}: {error}", save_as.path.display()));
    let outside = || {
        text(
            403,
            &format!(
                "{}: outside the directory theia view runs in",
                save_as.path.display()
            ),
        )
    };
    let here = std::env::current_dir()
        .and_then(|dir| dir.canonicalize())
        .map_err(failed)?;
    let inside = |dir: &Path| dir.canonicalize().is_ok_and(|dir| dir.starts_with(&here));
    let parent = parent_dir(&save_as.path);
    // The deepest directory on the way that exists decides where new ones would be made
    // (the relative path's last ancestor, "", does not exist: that is the current one).
    let existing = parent
        .ancestors()
        .find(|dir| dir.exists())
        .unwrap_or(Path::new("."));
    if !inside(existing) {
        return Err(outside());
    }
    std::fs::create_dir_all(&parent).map_err(failed)?;
    if !inside(&parent) {
        return Err(outside());
    }
    if save_as.path.symlink_metadata().is_ok() && !save_as.overwrite {
        return Err(text(
            409,
            &format!(
                "{} exists: confirm to overwrite it (overwrite=1)",
                save_as.path.display()
            ),
        ));
    }
    Ok(save_as.path.clone())
}

fn compared(viewer: &Viewer, image: CompareImage) -> Reply {
    match viewer.comparison() {
        Some(comparison) => png(match image {
            CompareImage::A => &comparison.a_png,
            CompareImage::B => &comparison.b_png,
            CompareImage::Difference => &comparison.diff_png,
        }),
        None => text(404, "no comparison yet"),
    }
}

/// A server-sent event stream: the state now, then every push, until the page goes.
fn serve_events(viewer: &Viewer, request: Request) {
    let Some(events) = viewer.subscribe() else {
        let _ = request.respond(text(503, "too many pages listening"));
        return;
    };
    let mut out = request.into_writer();
    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n";
    let first = format!("{head}event: state\ndata: {}\n\n", viewer.state_json());
    if out
        .write_all(first.as_bytes())
        .and_then(|()| out.flush())
        .is_err()
    {
        return;
    }
    loop {
        let message = match events.recv_timeout(KEEPALIVE) {
            Ok(message) if message.is_empty() => continue,
            Ok(message) => message,
            Err(RecvTimeoutError::Timeout) => ": keepalive\n\n".to_string(),
            Err(RecvTimeoutError::Disconnected) => return,
        };
        if out
            .write_all(message.as_bytes())
            .and_then(|()| out.flush())
            .is_err()
        {
            return;
        }
    }
}
