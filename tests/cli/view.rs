//! `theia view` over HTTP, as a page (or anything else on the machine) talks to it; and
//! the page itself in headless Chromium.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A shader painting every pixel one colour (components 0 or 1).
fn solid(r: &str, g: &str, b: &str) -> String {
    format!(
        "// one colour everywhere\nENTRYPOINT_ADRR_USERCONSTANTS:\n        SETX C1 {r}\n        SETY C1 {g}\n        SETZ C1 {b}\n        RETURN RT_TRUE\n\nENTRYPOINT_ADRR_PIXELSHADER:\n        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL C1\n        RETURN RT_TRUE\n"
    )
}

/// [`solid`] with an unknown opcode on line 9.
fn broken() -> String {
    solid("1.0", "0.0", "0.0").replace(
        "        OMWRITE",
        "        FROBNICATE R1 R2\n        OMWRITE",
    )
}

/// The built-in scene, small: 64x48 in four 12-row bands.
const SMALL: &[&str] = &["--width", "64", "--height", "48", "--cores", "4"];

/// A running `theia view`, stopped when dropped.
struct View {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
    shader: PathBuf,
}

impl View {
    /// `theia view` on a small built-in scene with a shader file in a fresh directory.
    fn start(shader_source: &str) -> View {
        View::start_with(shader_source, SMALL)
    }

    /// [`View::start`] with other scene options.
    fn start_with(shader_source: &str, options: &[&str]) -> View {
        View::launch(Some(shader_source), options)
    }

    /// `theia view` in a fresh directory, with `paint.shdr` as `--shader` when a source is
    /// given, else with the starter in memory.
    fn launch(shader_source: Option<&str>, options: &[&str]) -> View {
        View::launch_held(shader_source, options, None)
    }

    /// [`View::launch`] with the binary's test hook holding renders (`THEIA_TEST_HOLD`).
    fn launch_held(shader_source: Option<&str>, options: &[&str], hold: Option<&Path>) -> View {
        let dir = tempfile::tempdir().unwrap();
        let shader = dir.path().join("paint.shdr");
        let mut command = Command::new(env!("CARGO_BIN_EXE_theia"));
        command.args(["view", "--port", "0"]).args(options);
        if let Some(hold) = hold {
            command.env("THEIA_TEST_HOLD", hold);
        }
        if let Some(source) = shader_source {
            std::fs::write(&shader, source).unwrap();
            command.arg("--shader").arg(&shader);
        }
        let mut child = command
            .current_dir(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("theia runs");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let port = first
            .trim()
            .strip_prefix("http://127.0.0.1:")
            .and_then(|rest| rest.strip_suffix('/'))
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("the first line is the URL, found {first:?}"));
        View {
            child,
            port,
            _dir: dir,
            shader,
        }
    }

    fn request(&self, method: &str, path: &str, host: &str, body: &[u8]) -> Reply {
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        self.raw(&head, body)
    }

    /// Sends `head` (request line and headers, blank line included) and `body` as they are.
    fn raw(&self, head: &str, body: &[u8]) -> Reply {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        // A body the server refuses unread may be cut off: the answer is what counts.
        let _ = stream.write_all(body);
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw);
        Reply::parse(&raw)
    }

    fn get(&self, path: &str) -> Reply {
        self.request("GET", path, &format!("127.0.0.1:{}", self.port), b"")
    }

    fn put(&self, path: &str, body: &str) -> Reply {
        let host = format!("127.0.0.1:{}", self.port);
        self.request("PUT", path, &host, body.as_bytes())
    }

    /// `/shader` without `--shader`, once the scene has loaded (503 until then).
    fn starter(&self) -> String {
        self.wait_for("the starter", |s| s.contains("\"starter\":\""));
        let reply = self.get("/shader");
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.text()
    }

    /// The directory the viewer runs in.
    fn dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    /// `/state` once `done` holds for it (renders take well under a second here).
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let state = self.get("/state").text();
            if done(&state) {
                return state;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "waited 20 s for {what}; last state {state}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Reply {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Reply {
    /// Status, headers and body of an HTTP/1.1 answer (chunked or not).
    fn parse(raw: &[u8]) -> Reply {
        let split = raw
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a header block");
        let head = String::from_utf8_lossy(&raw[..split]).into_owned();
        let status = head[9..12].parse().unwrap();
        let mut body = raw[split + 4..].to_vec();
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body = dechunk(&body);
        }
        Reply { status, head, body }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn content_type(&self) -> String {
        self.head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-type: ")
                    .map(str::to_string)
            })
            .unwrap_or_default()
    }
}

fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    loop {
        let line_end = body.windows(2).position(|w| w == b"\r\n").unwrap();
        let size =
            usize::from_str_radix(std::str::from_utf8(&body[..line_end]).unwrap().trim(), 16)
                .unwrap();
        if size == 0 {
            return out;
        }
        out.extend_from_slice(&body[line_end + 2..line_end + 2 + size]);
        body = &body[line_end + 4 + size..];
    }
}

/// The number after `"key":` in a JSON text (the first occurrence).
fn number(json: &str, key: &str) -> Option<u64> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let digits: String = json[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The frame generation on show in a `/state` answer.
fn frame_generation(state: &str) -> Option<u64> {
    number(&state[state.find("\"frame\":{")?..], "generation")
}

fn png_pixels(reply: &Reply) -> theia::io::image::Rgb8 {
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.content_type(), "image/png");
    theia::io::image::decode_image(&reply.body).unwrap()
}

#[test]
fn serves_the_page_frame_state_pixel_and_trace() {
    let view = View::start(&solid("0.0", "1.0", "0.0"));
    let page = view.get("/");
    assert_eq!(page.status, 200);
    assert!(page.content_type().starts_with("text/html"));
    assert!(page.text().contains("new EventSource(\"/events\")"));

    let state = view.wait_for("the first frame", |s| frame_generation(s).is_some());
    assert!(state.contains("\"cores\":4"), "{state}");
    assert!(state.contains("\"error\":null"), "{state}");
    let frame = png_pixels(&view.get("/frame.png"));
    assert_eq!((frame.width, frame.height), (64, 48));
    assert!(frame.data.chunks(3).all(|p| p == [0, 255, 0]));

    // Row 12 starts the second of four 12-row bands.
    let pixel = view.get("/pixel?x=0&y=12").text();
    assert!(pixel.contains("\"rgb\":[0,255,0]"), "{pixel}");
    assert!(
        pixel.contains("\"words\":[\"00000000\",\"00020000\",\"00000000\"]"),
        "{pixel}"
    );
    assert!(
        pixel.contains("\"values\":[0.000000,1.000000,0.000000]"),
        "{pixel}"
    );
    assert_eq!(number(&pixel, "core"), Some(1));
    assert_eq!(number(&pixel, "index"), Some(0));
    assert_eq!(view.get("/pixel?x=64&y=0").status, 404);
    assert_eq!(view.get("/pixel?x=-1&y=0").status, 400);
    assert_eq!(view.get("/pixel").status, 400);

    // The trace is the command's text.
    let trace = view.get("/trace?x=3&y=20");
    assert_eq!(trace.status, 200);
    let cli = common::theia(
        view.shader.parent().unwrap(),
        &[
            "trace",
            "--width",
            "64",
            "--height",
            "48",
            "--cores",
            "4",
            "--shader",
            "paint.shdr",
            "--pixel",
            "3,20",
        ],
    );
    assert!(cli.status.success(), "{}", common::text(&cli.stderr));
    let body = trace.text();
    assert!(body.starts_with("# theia trace"), "{body}");
    // Only the shader's file name may differ (the server names it by its full path).
    let strip = |t: &str| t.replace(&view.shader.display().to_string(), "paint.shdr");
    assert_eq!(strip(&body), common::text(&cli.stdout));
    assert_eq!(view.get("/trace?x=99&y=0").status, 404);

    let shader = view.get("/shader");
    assert_eq!(shader.text(), solid("0.0", "1.0", "0.0"));
}

#[test]
fn refuses_everything_else() {
    let view = View::start(&solid("0.0", "1.0", "0.0"));
    for path in [
        "/etc/passwd",
        "/../Cargo.toml",
        "/paint.shdr",
        "/frame.png/../paint.shdr",
        "/%2e%2e/paint.shdr",
        "/compare/x.png",
        "/index.html",
    ] {
        assert_eq!(view.get(path).status, 404, "{path}");
    }
    let host = format!("127.0.0.1:{}", view.port);
    assert_eq!(view.request("POST", "/", &host, b"x").status, 404);
    assert_eq!(view.request("DELETE", "/shader", &host, b"").status, 404);
    // DNS rebinding: another name for this address is refused.
    let rebound = view.request("GET", "/state", &format!("evil.example:{}", view.port), b"");
    assert_eq!(rebound.status, 403);
    // Too large or not text: the file is left as it was.
    let huge = vec![b'a'; 300 * 1024];
    assert_eq!(view.request("PUT", "/shader", &host, &huge).status, 413);
    assert_eq!(
        view.request("PUT", "/shader", &host, &[0xff, 0xfe]).status,
        400
    );
    assert_eq!(
        std::fs::read_to_string(&view.shader).unwrap(),
        solid("0.0", "1.0", "0.0")
    );
}

#[test]
fn an_edit_re_renders_and_a_broken_one_keeps_the_last_good_frame() {
    let view = View::start(&solid("0.0", "1.0", "0.0"));
    let first =
        frame_generation(&view.wait_for("the first frame", |s| frame_generation(s).is_some()))
            .unwrap();

    // Listen for pushes before editing.
    let mut events = listen(&view);
    let mut line = String::new();

    // An edit in the person's own editor: the watcher notices.
    std::fs::write(&view.shader, broken()).unwrap();
    let state = view.wait_for("the error", |s| {
        s.contains("FROBNICATE") || s.contains("\"lines\":[{")
    });
    assert!(state.contains("\"line\":9"), "{state}");
    assert_eq!(
        frame_generation(&state),
        Some(first),
        "the last good frame stays"
    );
    assert!(png_pixels(&view.get("/frame.png"))
        .data
        .chunks(3)
        .all(|p| p == [0, 255, 0]));

    // The push arrived too.
    let mut pushed = String::new();
    while !pushed.contains("\"line\":9") {
        line.clear();
        assert!(events.read_line(&mut line).unwrap() > 0, "the stream ended");
        pushed.push_str(&line);
    }

    // A save from the page: the file is written and the frame follows.
    let host = format!("127.0.0.1:{}", view.port);
    let blue = solid("0.0", "0.0", "1.0");
    let saved = view.request("PUT", "/shader", &host, blue.as_bytes());
    assert_eq!(saved.status, 200, "{}", saved.text());
    assert_eq!(std::fs::read_to_string(&view.shader).unwrap(), blue);
    view.wait_for("the blue frame", |s| {
        s.contains("\"error\":null") && frame_generation(s).is_some_and(|g| g > first)
    });
    // The save and the watcher may each ask for a render: once every request is rendered,
    // none is in flight.
    view.wait_for("no render in flight", |s| {
        s.contains("\"rendering\":null") && frame_generation(s) == number(s, "requested")
    });
    assert!(png_pixels(&view.get("/frame.png"))
        .data
        .chunks(3)
        .all(|p| p == [0, 0, 255]));
}

#[test]
fn compare_renders_two_settings_and_marks_partition_starts() {
    // The faithful ROM paints misses red but a core's first pixel black: with the camera
    // looking away every ray misses, so 1 core and 4 cores differ exactly at band starts.
    let own_shader = "// the scene's own pixel shader\n";
    let view = View::start_with(
        own_shader,
        &[
            SMALL,
            &["--camera", "0,0,500", "--look-at", "0,0,1000"],
            &["--rom", "faithful"],
        ]
        .concat(),
    );
    view.wait_for("the first frame", |s| frame_generation(s).is_some());
    let reply = view.get("/compare?a_cores=1&b_cores=4&a_rom=faithful&b_rom=faithful");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let result = reply.text();
    // The loader's warning about faces behind the camera (the faithful ROM's: it has no
    // t > 0 test) reaches the page.
    let state = view.get("/state").text();
    assert!(state.contains("behind the camera"), "{state}");
    let count = number(&result, "count").unwrap();
    assert_eq!(count, 3, "{result}");
    assert_eq!(
        number(&result, "first_of_partition"),
        Some(count),
        "{result}"
    );
    let a = png_pixels(&view.get("/compare/a.png"));
    let b = png_pixels(&view.get("/compare/b.png"));
    let diff = png_pixels(&view.get("/compare/diff.png"));
    let differing: Vec<(u32, u32)> = (0..48)
        .flat_map(|y| (0..64).map(move |x| (x, y)))
        .filter(|&(x, y)| a.pixel(x, y) != b.pixel(x, y))
        .collect();
    assert_eq!(differing.len() as u64, count);
    for &(x, y) in &differing {
        assert_eq!(x, 0);
        assert!([12, 24, 36].contains(&y), "({x}, {y})");
        assert_eq!(diff.pixel(x, y), [255, 0, 255]);
        assert!(
            result.contains(&format!("{{\"x\":{x},\"y\":{y},")),
            "{result}"
        );
    }
    assert_cycle_bars(&result);
    assert_eq!(view.get("/compare?a_cores=0").status, 400);
    assert_eq!(view.get("/compare?b_rom=shiny").status, 400);
}

/// Each side of a compare answer carries the hardware's timing: one `[busy, waiting,
/// idle]` per core, which add up to the cycle the frame ends (or stops moving) at. Every
/// ray misses, so the 4 cores run MAIN in step and the model finds the livelock the RTL
/// shows on this scene at 8x8 (tests/rtl.rs): B never ends.
fn assert_cycle_bars(result: &str) {
    let json: serde_json::Value = serde_json::from_str(result).unwrap();
    let end_of = |side: &str, cores: usize| {
        let per_core = json[side]["cycles"]["cores"].as_array().unwrap();
        assert_eq!(per_core.len(), cores, "{result}");
        let sums: Vec<u64> = per_core
            .iter()
            .map(|core| {
                core.as_array()
                    .unwrap()
                    .iter()
                    .map(|n| n.as_u64().unwrap())
                    .sum()
            })
            .collect();
        assert!(sums.iter().all(|&s| s == sums[0]), "{result}");
        sums[0]
    };
    let one = end_of("a", 1);
    assert_eq!(json["a"]["cycles"]["frame"].as_u64(), Some(one), "{result}");
    end_of("b", 4);
    assert!(json["b"]["cycles"]["frame"].is_null(), "{result}");
}

/// Opens `/events` and returns the stream after its status line.
fn listen(view: &View) -> BufReader<TcpStream> {
    let mut events = TcpStream::connect(("127.0.0.1", view.port)).unwrap();
    events
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        events,
        "GET /events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        view.port
    )
    .unwrap();
    let mut events = BufReader::new(events);
    let mut line = String::new();
    events.read_line(&mut line).unwrap();
    assert_eq!(line, "HTTP/1.1 200 OK\r\n");
    events
}

#[test]
fn a_newer_edit_cancels_the_render_in_flight_which_reports_progress() {
    // The test hook holds the first render until the edit has been seen, however fast the
    // machine renders.
    let hold = tempfile::tempdir().unwrap();
    let view = View::launch_held(Some(&solid("0.0", "1.0", "0.0")), SMALL, Some(hold.path()));
    let start = Instant::now();
    while !hold.path().join("render.reached").exists() {
        assert!(start.elapsed() < Duration::from_secs(30), "no render began");
        std::thread::sleep(Duration::from_millis(5));
    }
    let state = view.get("/state").text();
    assert!(state.contains("\"rendering\":1,"), "{state}");
    assert!(state.contains("\"frame\":null"), "{state}");
    let mut events = listen(&view);
    std::fs::write(&view.shader, solid("1.0", "0.0", "0.0")).unwrap();
    view.wait_for("the edit to be seen", |s| number(s, "requested") >= Some(2));
    // Two progress ticks after that: the render loop has checked for a newer request since.
    let mut progress = 0;
    let mut line = String::new();
    while progress < 2 {
        line.clear();
        assert!(events.read_line(&mut line).unwrap() > 0, "the stream ended");
        progress += usize::from(line.starts_with("event: progress"));
    }
    std::fs::write(hold.path().join("render.release"), "").unwrap();
    let shown = loop {
        line.clear();
        assert!(events.read_line(&mut line).unwrap() > 0, "the stream ended");
        if let Some(state) = line.strip_prefix("data: ") {
            if let Some(generation) = frame_generation(state) {
                break generation;
            }
        }
    };
    assert!(shown >= 2, "the first, superseded render was shown");
    let frame = png_pixels(&view.get("/frame.png"));
    assert!(frame.data.chunks(3).all(|p| p == [255, 0, 0]));
}

#[test]
fn ctrl_c_and_sigterm_stop_the_server_cleanly_with_status_130() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        stops_cleanly_on(signal);
    }
}

fn stops_cleanly_on(signal: i32) {
    let mut view = View::start(&solid("0.0", "1.0", "0.0"));
    view.wait_for("the first frame", |s| frame_generation(s).is_some());
    let mut events = listen(&view);
    // SAFETY: signals our own child process.
    unsafe {
        libc::kill(view.child.id() as i32, signal);
    }
    let start = Instant::now();
    let status = loop {
        if let Some(status) = view.child.try_wait().unwrap() {
            break status;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "still running");
        std::thread::sleep(Duration::from_millis(20));
    };
    // As the README says: 130, as shells report Ctrl-C.
    assert_eq!(status.code(), Some(130), "{status}");
    // The open event stream ends with the server.
    let mut rest = String::new();
    let _ = events.read_to_string(&mut rest);
    assert!(TcpStream::connect(("127.0.0.1", view.port)).is_err());
}

fn repository_file(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).unwrap()
}

/// The frame `theia render` makes of the same scene, in `dir`.
fn rendered_by_cli(dir: &std::path::Path, options: &[&str]) -> theia::io::image::Rgb8 {
    let mut args = vec!["render", "--output", "cli.png"];
    args.extend_from_slice(options);
    common::theia_ok(dir, &args);
    theia::io::image::decode_image(&std::fs::read(dir.join("cli.png")).unwrap()).unwrap()
}

#[test]
fn without_shader_the_starter_is_the_scenes_own_shader_and_looks_the_same() {
    let obj = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/default.obj");
    for (options, starter) in [
        // The built-in scene is always flat: its textures carry their own light.
        (SMALL.to_vec(), "shaders/passthrough.shdr"),
        ([&[obj], SMALL].concat(), "shaders/key_fill.shdr"),
        (
            [&[obj, "--flat"], SMALL].concat(),
            "shaders/passthrough.shdr",
        ),
    ] {
        let view = View::launch(None, &options);
        let state = view.wait_for("the first frame", |s| frame_generation(s).is_some());
        assert!(state.contains("\"shader\":null"), "{state}");
        assert!(
            state.contains(&format!("\"starter\":\"{starter} (the scene's own")),
            "{state}"
        );
        assert!(state.contains("\"error\":null"), "{state}");
        let source = view.get("/shader");
        assert_eq!(source.status, 200);
        assert!(
            source.text().ends_with(&repository_file(starter)),
            "{options:?}: {}",
            source.text()
        );
        let frame = png_pixels(&view.get("/frame.png"));
        assert_eq!(frame, rendered_by_cli(view.dir(), &options), "{options:?}");
        // Traces name the starter.
        assert!(view.get("/trace?x=32&y=24").text().contains(starter));
    }
}

#[test]
fn ssaa_shows_the_supersampled_frame_theia_render_makes() {
    let obj = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/default.obj");
    let options = [&[obj], SMALL, &["--ssaa", "2"]].concat();
    let view = View::launch(None, &options);
    let state = view.wait_for("the first frame", |s| frame_generation(s).is_some());
    assert!(state.contains("\"error\":null"), "{state}");
    let frame = png_pixels(&view.get("/frame.png"));
    assert_eq!((frame.width, frame.height), (64, 48));
    assert_eq!(frame, rendered_by_cli(view.dir(), &options));
    // Not the frame without supersampling: the edges are smoothed.
    let plain = rendered_by_cli(view.dir(), &[&[obj], SMALL].concat());
    assert_ne!(frame, plain);
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn a_scene_directory_starts_with_its_own_program_disassembled_or_the_pass_through() {
    let scene = common::conformance("scenes_example3");
    let view = View::launch(None, &[scene.to_str().unwrap()]);
    let source = view.starter();
    assert!(source.starts_with("// The program of"), "{source}");
    let words = theia::io::scene::mem::read_instructions(&scene.join("Instructions.mem")).unwrap();
    let assembled = theia::emu::isa::asm::assemble(&source, std::path::Path::new("starter"))
        .unwrap_or_else(|e| panic!("{e}\n{source}"))
        .imem;
    assert_eq!(assembled, words);
    drop(view);

    // Without Instructions.mem: the pass-through program.
    let copy = tempfile::tempdir().unwrap();
    for name in ["Params.mem", "Vertex.mem", "Textures.mem", "Creg.mem"] {
        std::fs::copy(scene.join(name), copy.path().join(name)).unwrap();
    }
    let view = View::launch(None, &[copy.path().to_str().unwrap()]);
    let source = view.starter();
    assert!(
        source.contains("has no pixel shader of its own"),
        "{source}"
    );
    assert!(source.ends_with(&repository_file("shaders/passthrough.shdr")));
}

#[test]
fn the_first_save_names_a_new_file_which_is_then_watched() {
    let view = View::launch(None, SMALL);
    let first =
        frame_generation(&view.wait_for("the first frame", |s| frame_generation(s).is_some()))
            .unwrap();
    let blue = solid("0.0", "0.0", "1.0");
    // No path: the server does not guess one.
    assert_eq!(view.put("/shader", &blue).status, 409);
    let saved = view.put("/shader?path=shaders%2Fmy_shader.shdr", &blue);
    assert_eq!(saved.status, 200, "{}", saved.text());
    let file = view.dir().join("shaders/my_shader.shdr");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), blue);
    let state = view.wait_for("the blue frame", |s| {
        frame_generation(s).is_some_and(|g| g > first) && s.contains("\"rendering\":null")
    });
    assert!(
        state.contains("\"shader\":\"shaders/my_shader.shdr\""),
        "{state}"
    );
    assert!(state.contains("\"starter\":null"), "{state}");
    assert!(png_pixels(&view.get("/frame.png"))
        .data
        .chunks(3)
        .all(|p| p == [0, 0, 255]));
    assert_eq!(view.get("/shader").text(), blue);

    // From now on it is the shader file: edits on disk re-render, saves go to it, and
    // another path is refused.
    let blue_frame = frame_generation(&state).unwrap();
    std::fs::write(&file, solid("1.0", "0.0", "0.0")).unwrap();
    view.wait_for("the red frame", |s| {
        frame_generation(s).is_some_and(|g| g > blue_frame) && s.contains("\"rendering\":null")
    });
    assert!(png_pixels(&view.get("/frame.png"))
        .data
        .chunks(3)
        .all(|p| p == [255, 0, 0]));
    assert_eq!(view.put("/shader?path=other.shdr", &blue).status, 409);
    assert!(!view.dir().join("other.shdr").exists());
    assert_eq!(view.put("/shader", &blue).status, 200);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), blue);
}

#[test]
fn the_first_save_overwrites_only_when_confirmed_and_stays_inside_the_directory() {
    let view = View::launch(None, SMALL);
    let green = solid("0.0", "1.0", "0.0");
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), view.dir().join("elsewhere")).unwrap();
    for (query, status) in [
        (
            format!("path={}", outside.path().join("a.shdr").display()),
            400,
        ),
        ("path=..%2Fa.shdr".to_string(), 400),
        ("path=shaders/../../a.shdr".to_string(), 400),
        ("path=notes.txt".to_string(), 400),
        ("path=a.shdr.txt".to_string(), 400),
        ("path=a.shdr&overwrite=maybe".to_string(), 400),
        // A link on the way that leads out of the directory.
        ("path=elsewhere%2Fa.shdr".to_string(), 403),
        ("path=elsewhere%2Fnew%2Fa.shdr".to_string(), 403),
    ] {
        let reply = view.put(&format!("/shader?{query}"), &green);
        assert_eq!(reply.status, status, "{query}: {}", reply.text());
    }
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);

    let taken = view.dir().join("taken.shdr");
    std::fs::write(&taken, "// mine\n").unwrap();
    let refused = view.put("/shader?path=taken.shdr", &green);
    assert_eq!(refused.status, 409);
    assert!(
        refused.text().contains("taken.shdr exists"),
        "{}",
        refused.text()
    );
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), "// mine\n");
    assert!(view.get("/state").text().contains("\"shader\":null"));

    let confirmed = view.put("/shader?path=taken.shdr&overwrite=1", &green);
    assert_eq!(confirmed.status, 200, "{}", confirmed.text());
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), green);
    assert!(view
        .get("/state")
        .text()
        .contains("\"shader\":\"taken.shdr\""));
}

#[test]
fn a_scene_that_does_not_load_starts_with_the_pass_through_and_the_reason() {
    let view = View::launch(None, &["missing.obj"]);
    view.wait_for("the error", |s| s.contains("\"error\":{"));
    let source = view.get("/shader").text();
    assert!(
        source.starts_with("// the scene did not load: missing.obj"),
        "{source}"
    );
    assert!(source.ends_with(&repository_file("shaders/passthrough.shdr")));
}

#[test]
fn only_the_loopback_names_with_this_port_are_served() {
    let view = View::start(&solid("0.0", "1.0", "0.0"));
    let port = view.port;
    let state = |host: &str| view.request("GET", "/state", host, b"").status;
    for host in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("LocalHost:{port}"),
        format!("[::1]:{port}"),
    ] {
        assert_eq!(state(&host), 200, "{host}");
    }
    for host in [
        format!("127.0.0.1:{}", port.wrapping_add(1)),
        format!("127.0.0.1:{port}.evil.example"),
        format!("evil.example:{port}"),
        format!("localhost.evil.example:{port}"),
        format!("x127.0.0.1:{port}"),
        "evil.example".to_string(),
        "127.0.0.1".to_string(),
        String::new(),
    ] {
        assert_eq!(state(&host), 403, "{host:?}");
    }
    // No Host header at all.
    let missing = view.raw("GET /state HTTP/1.1\r\nConnection: close\r\n\r\n", b"");
    assert_eq!(missing.status, 403);
    // Nor may a refused Host save.
    let saved = view.request(
        "PUT",
        "/shader",
        &format!("127.0.0.1:{port}.evil.example"),
        solid("1.0", "0.0", "0.0").as_bytes(),
    );
    assert_eq!(saved.status, 403);
    assert_eq!(
        std::fs::read_to_string(&view.shader).unwrap(),
        solid("0.0", "1.0", "0.0")
    );
}

#[test]
fn another_sites_page_cannot_save() {
    let view = View::start(&solid("0.0", "1.0", "0.0"));
    let port = view.port;
    // The browser's preflight for a cross-origin PUT is refused: no CORS grant.
    let preflight = view.raw(
        &format!(
            "OPTIONS /shader HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://evil.example\r\n\
             Access-Control-Request-Method: PUT\r\nConnection: close\r\n\r\n"
        ),
        b"",
    );
    assert!(preflight.status >= 400, "{}", preflight.status);
    assert!(!preflight
        .head
        .to_ascii_lowercase()
        .contains("access-control-allow"));
    // A PUT carrying another site's Origin (a browser that skipped the preflight) is
    // refused too, and the file stays.
    let red = solid("1.0", "0.0", "0.0");
    for origin in [
        "http://evil.example".to_string(),
        format!("http://127.0.0.1:{port}.evil.example"),
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        "null".to_string(),
    ] {
        let put = view.raw(
            &format!(
                "PUT /shader HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {origin}\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                red.len()
            ),
            red.as_bytes(),
        );
        assert_eq!(put.status, 403, "{origin}");
        assert_eq!(
            std::fs::read_to_string(&view.shader).unwrap(),
            solid("0.0", "1.0", "0.0")
        );
    }
    // The page's own origin may.
    let blue = solid("0.0", "0.0", "1.0");
    let put = view.raw(
        &format!(
            "PUT /shader HTTP/1.1\r\nHost: localhost:{port}\r\nOrigin: http://localhost:{port}\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            blue.len()
        ),
        blue.as_bytes(),
    );
    assert_eq!(put.status, 200, "{}", put.text());
    assert_eq!(std::fs::read_to_string(&view.shader).unwrap(), blue);
}

#[test]
fn traversal_plain_or_encoded_reaches_no_file() {
    let view = View::start(&solid("0.0", "1.0", "0.0"));
    let secret = view.dir().join("secret.txt");
    std::fs::write(&secret, "secret").unwrap();
    for path in [
        "/../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E%2Fsecret.txt",
        "/./secret.txt",
        "/shader/../secret.txt",
        "/shader%2f..%2fsecret.txt",
        "/frame.png/%2e%2e/%2e%2e/etc/passwd",
        "//etc/passwd",
        "/secret.txt",
    ] {
        let reply = view.get(path);
        assert_eq!(reply.status, 404, "{path}");
        assert!(!reply.text().contains("secret"), "{path}");
    }
    // Saving through a path that climbs out, plain or encoded, is refused.
    let parent = view.dir().parent().unwrap().to_path_buf();
    for query in [
        "path=..%2Fescaped.shdr",
        "path=%2e%2e%2Fescaped.shdr",
        "path=%2E%2E/escaped.shdr",
        "path=shaders%2F..%2F..%2Fescaped.shdr",
    ] {
        let reply = view.put(&format!("/shader?{query}"), "// x\n");
        assert!(
            [400, 403, 409].contains(&reply.status),
            "{query}: {}",
            reply.status
        );
        assert!(!parent.join("escaped.shdr").exists(), "{query}");
    }
}

/// A 100 MB body is refused from its declared length, without the server reading it: the
/// connection is cut long before the client has sent it all, and the server goes on.
#[test]
fn an_oversized_body_is_refused_without_reading_it() {
    const DECLARED: usize = 100_000_000;
    let view = View::start(&solid("0.0", "1.0", "0.0"));
    let mut stream = TcpStream::connect(("127.0.0.1", view.port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    stream
        .set_write_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(
        stream,
        "PUT /shader HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {DECLARED}\r\n\r\n",
        view.port
    )
    .unwrap();
    let mut reader = stream.try_clone().unwrap();
    let answer = std::thread::spawn(move || {
        let mut raw = Vec::new();
        let _ = reader.read_to_end(&mut raw);
        raw
    });
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0;
    while sent < DECLARED {
        match stream.write(&chunk[..chunk.len().min(DECLARED - sent)]) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    let raw = answer.join().unwrap();
    // Socket buffers hold a few MB at most; a server reading it all takes the whole 100.
    assert!(
        sent < DECLARED / 4,
        "the client sent {sent} bytes of {DECLARED}"
    );
    if !raw.is_empty() {
        assert_eq!(Reply::parse(&raw).status, 413);
    }
    // A declared length no machine could hold is refused the same way.
    let huge = view.raw(
        &format!(
            "PUT /shader HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\n\r\n",
            view.port,
            u64::MAX / 2
        ),
        b"abc",
    );
    assert_eq!(huge.status, 413);
    assert_eq!(view.get("/state").status, 200, "the server goes on");
    assert_eq!(
        std::fs::read_to_string(&view.shader).unwrap(),
        solid("0.0", "1.0", "0.0")
    );
}

/// Fifty pages listen while the shader is edited again and again: the server stays up and
/// every page hears of the last frame.
#[test]
fn fifty_pages_listening_through_edits_all_get_the_final_frame() {
    const PAGES: usize = 50;
    let view = View::start(&solid("0.0", "1.0", "0.0"));
    view.wait_for("the first frame", |s| frame_generation(s).is_some());
    let pages: Vec<_> = (0..PAGES).map(|_| listen(&view)).collect();
    let colours = [
        ("1.0", "0.0", "0.0"),
        ("0.0", "0.0", "1.0"),
        ("1.0", "1.0", "0.0"),
    ];
    for (r, g, b) in colours.iter().cycle().take(7) {
        let saved = view.put("/shader", &solid(r, g, b));
        assert_eq!(saved.status, 200, "{}", saved.text());
        std::thread::sleep(Duration::from_millis(30));
    }
    let last = view.wait_for("the last frame", |s| {
        s.contains("\"rendering\":null") && frame_generation(s) == number(s, "requested")
    });
    let last = frame_generation(&last).unwrap();
    // Red, blue, yellow, red, blue, yellow, red: the last edit is red.
    assert!(png_pixels(&view.get("/frame.png"))
        .data
        .chunks(3)
        .all(|p| p == [255, 0, 0]));
    let heard: Vec<_> = pages
        .into_iter()
        .map(|mut page| {
            std::thread::spawn(move || {
                let mut line = String::new();
                loop {
                    line.clear();
                    if page.read_line(&mut line).unwrap_or(0) == 0 {
                        return None;
                    }
                    if let Some(state) = line.strip_prefix("data: ") {
                        if frame_generation(state) == Some(last) {
                            return Some(last);
                        }
                    }
                }
            })
        })
        .collect();
    for (page, thread) in heard.into_iter().enumerate() {
        assert_eq!(thread.join().unwrap(), Some(last), "page {page}");
    }
    assert_eq!(view.get("/state").status, 200);
}
