//! `theia view [SCENE] [--shader FILE] [--port P]`: a page on 127.0.0.1 that shows the
//! frame, re-renders on every change of the scene or shader (pushed as server-sent
//! events), tells what a pixel is made of, traces it, and compares two settings.
//!
//! The server answers a fixed set of routes and reads no file but the scene and the
//! shader named on the command line; everything else is a 404. Without `--shader` the page
//! edits a starter held in memory ([`starter`]) until its first save names a new `.shdr`
//! file inside the current directory, which then counts as the shader given.

mod json;
mod save;
mod server;
mod starter;
mod state;

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Context};
use bytes::Bytes;
use clap::Args;
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Request, Response};
use notify::{RecursiveMode, Watcher};
use tokio::sync::{Notify, Semaphore};

use super::scene_args::{same_path, SceneArgs};
use super::shader::ShaderArgs;
use super::watch::{parent_dir, wait_for_change};
use super::Outcome;
use save::SaveRoot;
use server::{read_body, BodyError, Reply};
use state::Viewer;
use theia::tools::inspect::pixel_info;
use theia::tools::viewer::{admit, CompareImage, Route, SaveAs, MAX_BODY_BYTES};

/// The page: HTML, CSS and script in one file, built into the binary.
const PAGE: &str = include_str!("page.html");
/// Largest shader the page may save.
const MAX_SHADER_BYTES: usize = MAX_BODY_BYTES as usize;
/// Traces and comparisons (each renders the frame again) running at once; more get a 503.
const MAX_EXPENSIVE: usize = 2;
/// Saves receiving their bodies at once; more get a 503 (a save takes milliseconds: only
/// slow or stuck uploads fill these).
const MAX_UPLOADS: usize = 8;
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
    /// Supersampling: each pixel is the mean of K x K samples the emulated GPU renders at
    /// K times the resolution (1 to 4)
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub ssaa: u32,
}

/// What every request handler shares.
struct App {
    viewer: Arc<Viewer>,
    port: u16,
    /// The directory `theia view` runs in, opened at start: first saves go below it.
    here: SaveRoot,
    /// `--shader`'s directory, opened at start, and its file name there.
    given: Option<(SaveRoot, OsString)>,
    /// A first save's path below `here`, walked again (links refused) at every save.
    adopted: Mutex<Option<PathBuf>>,
    expensive: Semaphore,
    uploads: Semaphore,
}

pub fn run(args: ViewArgs) -> anyhow::Result<Outcome> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", args.port))
        .map_err(|e| anyhow!("cannot listen on 127.0.0.1:{}: {e}", args.port))?;
    listener.set_nonblocking(true)?;
    server::deepen_backlog(&listener);
    let address = listener.local_addr()?;
    let here = SaveRoot::open(Path::new(".")).context("opening the current directory")?;
    let given = match &args.shader.shader {
        Some(shader) => {
            let name = shader
                .file_name()
                .with_context(|| format!("{}: not a file name", shader.display()))?;
            let root = SaveRoot::open(&parent_dir(shader))
                .with_context(|| format!("{}: cannot open its directory", shader.display()))?;
            Some((root, name.to_os_string()))
        }
        None => None,
    };
    let viewer = Arc::new(Viewer::new(args.scene, args.shader, args.ssaa));

    // Watch before the first render, so an edit made during it is not missed.
    *viewer.watcher.lock().unwrap_or_else(|p| p.into_inner()) = Some(watch(&viewer)?);
    {
        let viewer = viewer.clone();
        std::thread::spawn(move || viewer.render_loop());
    }
    let stop = Arc::new(Notify::new());
    {
        let (viewer, stop) = (viewer.clone(), stop.clone());
        super::on_interrupt(move || {
            viewer.stop();
            stop.notify_one();
        });
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .max_blocking_threads(2 * MAX_EXPENSIVE + MAX_UPLOADS)
        .build()
        .context("starting the server's runtime")?;
    let app = Arc::new(App {
        viewer,
        port: address.port(),
        here,
        given,
        adopted: Mutex::new(None),
        expensive: Semaphore::new(MAX_EXPENSIVE),
        uploads: Semaphore::new(MAX_UPLOADS),
    });

    println!("http://{address}/");
    std::io::stdout().flush()?;
    eprintln!("serving {address} (Ctrl-C to stop)");
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener)?;
        let handler = move |request| {
            let app = app.clone();
            async move { with_safety_headers(handle(app, request).await) }
        };
        server::serve(listener, handler, stop).await;
        anyhow::Ok(())
    })?;
    // A trace or comparison in flight is not waited for: the process is about to exit.
    runtime.shutdown_timeout(Duration::from_millis(100));
    eprintln!("stopped");
    Ok(Outcome::Interrupted)
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

type Answer = Response<Reply>;

fn bytes(status: u16, content_type: &'static str, body: impl Into<Bytes>) -> Answer {
    let mut answer = Response::new(Reply::Bytes(Some(body.into())));
    *answer.status_mut() = hyper::StatusCode::from_u16(status).expect("a valid status code");
    let headers = answer.headers_mut();
    headers.insert("content-type", HeaderValue::from_static(content_type));
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    answer
}

fn text(status: u16, body: &str) -> Answer {
    bytes(status, "text/plain; charset=utf-8", body.to_string())
}

fn json_reply(body: String) -> Answer {
    bytes(200, "application/json", body)
}

fn png(body: &Bytes) -> Answer {
    bytes(200, "image/png", body.clone())
}

/// Every answer: no sniffing, and no other site may frame the page (clickjacking).
fn with_safety_headers(mut answer: Answer) -> Answer {
    let headers = answer.headers_mut();
    for (name, value) in [
        ("x-content-type-options", "nosniff"),
        ("x-frame-options", "DENY"),
        ("content-security-policy", "frame-ancestors 'none'"),
    ] {
        headers.insert(
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        );
    }
    answer
}

fn header<'r>(request: &'r Request<Incoming>, name: &str) -> Option<&'r str> {
    request
        .headers()
        .get(name)
        .map(|v| v.to_str().unwrap_or("\u{fffd}"))
}

async fn handle(app: Arc<App>, request: Request<Incoming>) -> Answer {
    // Decided from the head alone; a refused body is never read (one request per
    // connection: the connection closes after the answer).
    let url = request.uri().to_string();
    let route = match admit(
        request.method().as_str(),
        &url,
        |name| header(&request, name),
        app.port,
    ) {
        Ok(route) => route,
        Err(refusal) => return text(refusal.status, &refusal.message),
    };
    let viewer = &app.viewer;
    match route {
        Route::Page => bytes(200, "text/html; charset=utf-8", PAGE),
        Route::Events => serve_events(viewer),
        Route::State => json_reply(viewer.state_json()),
        Route::Frame => match viewer.latest() {
            Some(rendered) => png(&rendered.png),
            None => text(503, "no frame yet"),
        },
        Route::Pixel { x, y } => pixel(viewer, x, y),
        Route::Trace { x, y } => {
            expensive(&app, move |viewer| match viewer.trace(x, y) {
                Ok(trace) => text(200, &trace),
                Err(error) => text(404, &super::error_message(&error)),
            })
            .await
        }
        Route::ReadShader => read_shader(viewer),
        Route::SaveShader(save_as) => save_shader(app.clone(), request, save_as).await,
        Route::Compare { a, mut b } => {
            b.cores = b.cores.or(viewer.scene.cores);
            expensive(&app, move |viewer| match viewer.compare(a, b) {
                Ok(comparison) => json_reply(comparison.json.clone()),
                Err(error) => text(409, &super::error_message(&error)),
            })
            .await
        }
        Route::Compared(image) => compared(viewer, image),
    }
}

/// Runs `work` (a trace or a comparison: it renders) on a blocking thread, if fewer than
/// [`MAX_EXPENSIVE`] run already.
async fn expensive(app: &App, work: impl FnOnce(&Viewer) -> Answer + Send + 'static) -> Answer {
    let Ok(_permit) = app.expensive.try_acquire() else {
        return text(503, "busy with other traces or comparisons: try again");
    };
    let viewer = app.viewer.clone();
    tokio::task::spawn_blocking(move || work(&viewer))
        .await
        .unwrap_or_else(|_| text(500, "the request failed"))
}

fn pixel(viewer: &Viewer, x: u32, y: u32) -> Answer {
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

fn read_shader(viewer: &Viewer) -> Answer {
    let Some(path) = viewer.shader_file() else {
        return match viewer.starter() {
            Some(starter) => text(200, &starter.source),
            None => text(503, "the starter is made once the scene has loaded"),
        };
    };
    match theia::io::input::read(&path) {
        Ok(source) => match String::from_utf8(source) {
            Ok(source) => text(200, &source),
            Err(_) => text(415, "the shader is a binary file"),
        },
        Err(error) => text(404, &format!("{}: {error}", path.display())),
    }
}

async fn save_shader(app: Arc<App>, request: Request<Incoming>, save_as: Option<SaveAs>) -> Answer {
    let body = {
        let Ok(_permit) = app.uploads.try_acquire() else {
            return text(503, "too many saves at once: try again");
        };
        match read_body(request, MAX_SHADER_BYTES).await {
            Ok(body) => body,
            Err(BodyError::TooLarge) => return text(413, "a shader is at most 256 KiB"),
            Err(BodyError::TooSlow) => return text(408, "the shader took too long to arrive"),
            Err(BodyError::Broken) => return text(400, "the request body could not be read"),
        }
    };
    if std::str::from_utf8(&body).is_err() {
        return text(400, "a shader is UTF-8 text");
    }
    tokio::task::spawn_blocking(move || save(&app, &body, save_as))
        .await
        .unwrap_or_else(|_| text(500, "the save failed"))
}

/// One save at a time, so two first saves cannot both pick the file.
static SAVING: Mutex<()> = Mutex::new(());

fn save(app: &App, body: &[u8], save_as: Option<SaveAs>) -> Answer {
    let _one_at_a_time = SAVING.lock().unwrap_or_else(|p| p.into_inner());
    let viewer = &app.viewer;
    let adopted = app
        .adopted
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    let written = match (viewer.shader_file(), save_as) {
        (Some(path), Some(_)) => {
            return text(
                409,
                &format!("the shader is already saved as {}", path.display()),
            )
        }
        (Some(path), None) => match (&adopted, &app.given) {
            (Some(relative), _) => app.here.write(relative, body, false),
            (None, Some((dir, name))) => dir.write(Path::new(name), body, false),
            (None, None) => return text(500, &format!("{}: no directory open", path.display())),
        },
        (None, None) => {
            return text(
                409,
                "the shader has no file yet: give ?path=FILE.shdr for the first save",
            )
        }
        (None, Some(save_as)) => {
            if let Some(refusal) = refuse_new_file(app, &save_as) {
                return refusal;
            }
            return match app.here.write(&save_as.path, body, true) {
                Ok(()) => {
                    adopt(app, &save_as.path);
                    text(200, "saved")
                }
                Err(error) => save_failed(&save_as.path, error),
            };
        }
    };
    match written {
        Ok(()) => {
            viewer.request_render();
            text(200, "saved")
        }
        Err(error) => save_failed(&viewer.shader_file().unwrap_or_default(), error),
    }
}

/// A failed write: a link on the way is the page's fault (403), anything else the disk's.
fn save_failed(path: &Path, error: std::io::Error) -> Answer {
    let status = if error.kind() == std::io::ErrorKind::PermissionDenied {
        403
    } else {
        500
    };
    text(status, &format!("{}: {error}", path.display()))
}

/// Why a first save's path is refused, if it is: a link on the way, or an existing file
/// without `overwrite`.
fn refuse_new_file(app: &App, save_as: &SaveAs) -> Option<Answer> {
    match app.here.exists(&save_as.path) {
        Ok(false) => None,
        Ok(true) if save_as.overwrite => None,
        Ok(true) => Some(text(
            409,
            &format!(
                "{} exists: confirm to overwrite it (overwrite=1)",
                save_as.path.display()
            ),
        )),
        Err(error) => Some(save_failed(&save_as.path, error)),
    }
}

/// Makes a first save's file the shader: watched, and where later saves go.
fn adopt(app: &App, path: &Path) {
    let viewer = &app.viewer;
    if let Some(watcher) = viewer
        .watcher
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_mut()
    {
        if let Err(error) = watcher.watch(&parent_dir(path), RecursiveMode::NonRecursive) {
            eprintln!("{}: cannot watch: {error}", path.display());
        }
    }
    *app.adopted.lock().unwrap_or_else(|p| p.into_inner()) = Some(path.to_path_buf());
    viewer.adopt_shader_file(path);
}

fn compared(viewer: &Viewer, image: CompareImage) -> Answer {
    match viewer.comparison() {
        Some(comparison) => png(match image {
            CompareImage::A => &comparison.a_png,
            CompareImage::B => &comparison.b_png,
            CompareImage::Difference => &comparison.diff_png,
        }),
        None => text(404, "no comparison yet"),
    }
}

/// A server-sent event stream: the state now, then every push, until the page goes. It
/// is a task's state, not a thread: a page costs its queue and a timer.
fn serve_events(viewer: &Viewer) -> Answer {
    let Some(events) = viewer.subscribe() else {
        return text(503, "too many pages listening");
    };
    let first = format!("event: state\ndata: {}\n\n", viewer.state_json());
    let mut answer = Response::new(Reply::Events(Box::pin(EventStream {
        first: Some(Bytes::from(first)),
        events,
        keepalive: Box::pin(tokio::time::sleep(KEEPALIVE)),
    })));
    let headers = answer.headers_mut();
    headers.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("cache-control", HeaderValue::from_static("no-store"));
    answer
}

/// The body of an event stream: the first state, then each message queued for the page,
/// and a comment after [`KEEPALIVE`] of silence. It ends when the viewer stops.
struct EventStream {
    first: Option<Bytes>,
    events: tokio::sync::mpsc::Receiver<String>,
    keepalive: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl http_body::Body for EventStream {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        use std::future::Future;
        use std::task::Poll;
        let frame = |text: Bytes| Poll::Ready(Some(Ok(http_body::Frame::data(text))));
        if let Some(first) = self.first.take() {
            return frame(first);
        }
        let message = match self.events.poll_recv(cx) {
            Poll::Ready(Some(message)) => Bytes::from(message),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => match self.keepalive.as_mut().poll(cx) {
                Poll::Ready(()) => Bytes::from_static(b": keepalive\n\n"),
                Poll::Pending => return Poll::Pending,
            },
        };
        let next = tokio::time::Instant::now() + KEEPALIVE;
        self.keepalive.as_mut().reset(next);
        frame(message)
    }
}
