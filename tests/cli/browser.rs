//! The viewer page in a real browser: headless Chromium (Debian package `chromium`)
//! loads it, the first frame arrives, the shader file is edited on disk, and the page
//! shows the new frame, then an error marker for a broken edit with the last good frame
//! kept. Screenshots are judged by pixel statistics. Chromium is driven over the DevTools
//! protocol on a pipe (`--remote-debugging-pipe`: fd 3 in, fd 4 out, NUL-separated JSON).
//!
//! Without Chromium the tests show as ignored (the build script's cfg `chromium`); in CI
//! (`THEIA_REQUIRE_CONFORMANCE=1`) they run, and fail if it is missing. How long they may
//! wait follows from measured work: Chromium's start, and a render of the scene timed
//! before the page opens. `THEIA_VIEWER_SCREENSHOT=path.png` also saves a screenshot of the page showing
//! `shaders/uv.shdr` (the README's `assets/viewer.png`). A second page starts without
//! `--shader`: it shows the starter, saves it through the page's dialog (confirming the
//! overwrite of an existing file) and re-renders after an edit.

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::FromRawFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Chromium's start and first answer (not the test's work: a cold start on a busy machine
/// can take long, and a browser that never answers fails here).
const BROWSER_START: Duration = Duration::from_secs(120);
/// Renders of the scene the longest test waits for: about six frames, a comparison's two,
/// a trace, with room for the page's own work.
const RENDERS_WAITED_FOR: u32 = 30;
/// Added to the renders: the page's script, screenshots, file-watcher latency.
const FIXED_ALLOWANCE: Duration = Duration::from_secs(20);

struct Browser {
    child: Child,
    to_browser: File,
    from_browser: Receiver<Value>,
    next_id: u64,
    session: Option<String>,
    deadline: Instant,
}

/// Two pipes whose ends the child gets as fds 3 (it reads) and 4 (it writes).
fn pipe() -> (i32, i32) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    let status = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    assert_eq!(status, 0, "pipe2 failed");
    (fds[0], fds[1])
}

fn chromium() -> Option<PathBuf> {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

impl Browser {
    fn start(binary: &Path, profile: &Path) -> std::io::Result<Browser> {
        let (child_reads, parent_writes) = pipe();
        let (parent_reads, child_writes) = pipe();
        let mut command = Command::new(binary);
        command
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--window-size=1400,900",
                "--remote-debugging-pipe",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: only async-signal-safe calls (dup2) between fork and exec.
        unsafe {
            command.pre_exec(move || {
                for (from, to) in [(child_reads, 3), (child_writes, 4)] {
                    if libc::dup2(from, to) < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // dup2 onto itself keeps close-on-exec: clear it.
                    libc::fcntl(to, libc::F_SETFD, 0);
                }
                Ok(())
            });
        }
        let child = command.spawn();
        // SAFETY: these descriptors are ours, from pipe2, and closed only here.
        unsafe {
            libc::close(child_reads);
            libc::close(child_writes);
        }
        let child = child?;
        // SAFETY: each descriptor is owned by exactly one File from here on.
        let (to_browser, from) = unsafe {
            (
                File::from_raw_fd(parent_writes),
                File::from_raw_fd(parent_reads),
            )
        };
        let (sender, from_browser) = channel();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(from);
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                message.pop();
                if let Ok(value) = serde_json::from_slice::<Value>(&message) {
                    if sender.send(value).is_err() {
                        return;
                    }
                }
                message.clear();
            }
        });
        Ok(Browser {
            child,
            to_browser,
            from_browser,
            next_id: 0,
            session: None,
            deadline: Instant::now() + BROWSER_START,
        })
    }

    /// Sends a DevTools command and waits for its answer (events in between are skipped).
    fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({"id": id, "method": method, "params": params});
        if let Some(session) = &self.session {
            message["sessionId"] = json!(session);
        }
        let mut bytes = serde_json::to_vec(&message).unwrap();
        bytes.push(0);
        self.to_browser
            .write_all(&bytes)
            .map_err(|e| format!("{method}: writing to the browser: {e}"))?;
        loop {
            let left = self.deadline.saturating_duration_since(Instant::now());
            let answer = self
                .from_browser
                .recv_timeout(left)
                .map_err(|_| format!("{method}: no answer from the browser in time"))?;
            if answer["id"] == json!(id) {
                if let Some(error) = answer.get("error") {
                    return Err(format!("{method}: {error}"));
                }
                return Ok(answer["result"].clone());
            }
        }
    }

    fn open(&mut self, url: &str) -> Result<(), String> {
        let target = self.call("Target.createTarget", json!({"url": url}))?;
        let attached = self.call(
            "Target.attachToTarget",
            json!({"targetId": target["targetId"], "flatten": true}),
        )?;
        self.session = attached["sessionId"].as_str().map(str::to_string);
        Ok(())
    }

    fn evaluate(&mut self, expression: &str) -> Result<Value, String> {
        let answer = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        )?;
        Ok(answer["result"]["value"].clone())
    }

    /// Polls `expression` until `done` holds for its value.
    fn wait_for(
        &mut self,
        what: &str,
        expression: &str,
        done: impl Fn(&Value) -> bool,
    ) -> Result<Value, String> {
        loop {
            let value = self.evaluate(expression)?;
            if done(&value) {
                return Ok(value);
            }
            if Instant::now() > self.deadline {
                return Err(format!("waited too long for {what}; last {value}"));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn screenshot(&mut self) -> Result<theia::io::image::Rgb8, String> {
        let shot = self.call("Page.captureScreenshot", json!({"format": "png"}))?;
        let bytes = base64(shot["data"].as_str().ok_or("no screenshot data")?);
        theia::io::image::decode_image(&bytes)
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Decodes standard base64 (the screenshot's encoding).
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let digits: Vec<u8> = text.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        let bits = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &d)| acc | u32::from(d) << (18 - 6 * i));
        out.extend_from_slice(&bits.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// Screenshot pixels within 40 of `rgb` in every channel.
fn count_near(image: &theia::io::image::Rgb8, rgb: [u8; 3]) -> usize {
    image
        .data
        .chunks(3)
        .filter(|p| p.iter().zip(rgb).all(|(&a, b)| a.abs_diff(b) <= 40))
        .count()
}

fn solid(r: &str, g: &str, b: &str) -> String {
    format!(
        "// one colour everywhere\nENTRYPOINT_ADRR_USERCONSTANTS:\n        SETX C1 {r}\n        SETY C1 {g}\n        SETZ C1 {b}\n        RETURN RT_TRUE\n\nENTRYPOINT_ADRR_PIXELSHADER:\n        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL C1\n        RETURN RT_TRUE\n"
    )
}

/// A running `theia view` on the built-in scene.
struct View {
    child: Child,
    url: String,
}

impl View {
    /// With `--shader` when given, else with the starter; run in `dir`.
    fn start(shader: Option<&Path>, dir: &Path) -> View {
        let mut command = Command::new(env!("CARGO_BIN_EXE_theia"));
        command.args(["view", "--port", "0", "--cores", "4"]);
        if let Some(shader) = shader {
            command.arg("--shader").arg(shader);
        }
        let mut child = command
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("theia runs");
        let mut url = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut url)
            .unwrap();
        View {
            child,
            url: url.trim().to_string(),
        }
    }
}

impl Drop for View {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const PAGE_STATE: &str = "JSON.stringify({frame: Number(document.body.dataset.frame || 0), \
     error: document.body.dataset.error === '1', \
     marks: document.querySelectorAll('#gutter .err').length, \
     listed: Array.from(document.querySelectorAll('#errors .error-line')).map(e => e.textContent)})";

fn page_state(value: &Value) -> Value {
    serde_json::from_str(value.as_str().unwrap_or("{}")).unwrap_or(Value::Null)
}

/// One browser at a time: two would share the 2 cores with the renders they wait for.
static ONE_BROWSER: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How long `theia render` takes on the scene the page shows (the built-in one, 4 cores).
fn render_time(dir: &Path) -> Duration {
    let start = Instant::now();
    let status = Command::new(env!("CARGO_BIN_EXE_theia"))
        .args(["render", "--quiet", "--cores", "4", "-o", "timed.png"])
        .current_dir(dir)
        .status()
        .expect("theia runs");
    assert!(status.success());
    let elapsed = start.elapsed();
    std::fs::remove_file(dir.join("timed.png")).unwrap();
    elapsed
}

/// Headless Chromium showing `url`, given until a deadline that follows from a measured
/// render of the scene. Chromium is there (the cfg `chromium`, or CI requires it).
fn open_page(url: &str, dir: &Path) -> Browser {
    let binary = chromium().expect("chromium is not installed (CI must install it: see .ci/run)");
    let render = render_time(dir);
    let mut browser = Browser::start(&binary, &dir.join("profile"))
        .unwrap_or_else(|error| panic!("chromium does not start: {error}"));
    browser
        .open(url)
        .unwrap_or_else(|error| panic!("chromium does not answer: {error}"));
    let allowed = FIXED_ALLOWANCE + render * RENDERS_WAITED_FOR;
    println!("one render takes {render:?}: the page is given {allowed:?}");
    browser.deadline = Instant::now() + allowed;
    browser
}

#[test]
#[cfg_attr(not(chromium), ignore = "needs chromium (apt-get install chromium)")]
fn the_page_follows_edits_on_disk_in_headless_chromium() {
    let _alone = ONE_BROWSER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let shader = dir.path().join("paint.shdr");
    std::fs::write(&shader, solid("0.0", "1.0", "0.0")).unwrap();
    let view = View::start(Some(&shader), dir.path());
    let mut browser = open_page(&view.url, dir.path());
    let state = |b: &mut Browser, what: &str, done: &dyn Fn(&Value) -> bool| {
        b.wait_for(what, PAGE_STATE, |v| done(&page_state(v)))
            .map(|v| page_state(&v))
            .unwrap()
    };

    // The first frame: 256x256 at zoom 2, all green.
    let first = state(&mut browser, "the first frame", &|s| {
        s["frame"].as_u64() > Some(0)
    });
    let shot = browser.screenshot().unwrap();
    let frame_area = 512 * 512;
    assert!(
        count_near(&shot, [0, 255, 0]) >= frame_area,
        "no green frame on screen"
    );
    assert_eq!(count_near(&shot, [0, 0, 255]), 0);

    // Edited on disk: the page shows the blue frame without a reload.
    std::fs::write(&shader, solid("0.0", "0.0", "1.0")).unwrap();
    let blue = state(&mut browser, "the blue frame", &|s| {
        s["frame"].as_u64() > first["frame"].as_u64() && s["error"] == json!(false)
    });
    let shot = browser.screenshot().unwrap();
    assert!(
        count_near(&shot, [0, 0, 255]) >= frame_area,
        "no blue frame on screen"
    );
    assert!(
        count_near(&shot, [0, 255, 0]) < 100,
        "the green frame is still shown"
    );

    // A broken edit: an error marker at line 9, the blue frame kept.
    let broken = solid("0.0", "0.0", "1.0").replace(
        "        OMWRITE",
        "        FROBNICATE R1 R2\n        OMWRITE",
    );
    std::fs::write(&shader, broken).unwrap();
    let failed = state(&mut browser, "the error marker", &|s| {
        s["error"] == json!(true) && s["marks"].as_u64() > Some(0)
    });
    assert_eq!(failed["frame"], blue["frame"]);
    let listed = failed["listed"].to_string();
    assert!(listed.contains("line 9:"), "{listed}");
    let shot = browser.screenshot().unwrap();
    assert!(
        count_near(&shot, [0, 0, 255]) >= frame_area,
        "the last good frame is gone"
    );
    // The gutter's marker is the page's only bright red ([255, 107, 107] on white text).
    assert!(
        count_near(&shot, [255, 107, 107]) > 50,
        "no error marker on screen"
    );

    // Hover, click and compare work from the page's own script.
    let hovered = browser
        .wait_for(
            "the hover line",
            "hover(5, 7); document.getElementById('pixel').textContent",
            |v| v.as_str().is_some_and(|t| t.starts_with("(5, 7)")),
        )
        .unwrap();
    let hovered = hovered.as_str().unwrap().to_string();
    assert!(hovered.contains("rgb 0 0 255"), "{hovered}");
    assert!(
        hovered.contains("words 00000000 00000000 00020000"),
        "{hovered}"
    );
    assert!(
        hovered.contains("core 0 of 4, pixel 1798 of 16384"),
        "{hovered}"
    );
    browser.evaluate("trace(5, 7); 1").unwrap();
    browser
        .wait_for(
            "the trace",
            "document.getElementById('trace').textContent",
            |v| v.as_str().is_some_and(|t| t.starts_with("# theia trace")),
        )
        .unwrap();
    browser
        .evaluate("document.getElementById('compare').click(); 1")
        .unwrap();
    let compared = browser
        .wait_for(
            "the comparison",
            "document.body.dataset.compared || ''",
            |v| v != &json!(""),
        )
        .unwrap();
    assert_eq!(
        compared,
        json!("0"),
        "one colour everywhere: no core count differs"
    );

    if let Ok(path) = std::env::var("THEIA_VIEWER_SCREENSHOT") {
        let uv = Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders/uv.shdr");
        std::fs::copy(uv, &shader).unwrap();
        state(&mut browser, "the uv frame", &|s| {
            s["frame"].as_u64() > failed["frame"].as_u64() && s["error"] == json!(false)
        });
        browser
            .evaluate(
                "trace(128, 128); hover(128, 128); document.getElementById('compare').click(); 1",
            )
            .unwrap();
        browser
            .wait_for("the trace and comparison", "document.body.dataset.compared !== undefined && !document.getElementById('trace').textContent.startsWith('tracing')", |v| v == &json!(true))
            .unwrap();
        let shot = browser
            .call("Page.captureScreenshot", json!({"format": "png"}))
            .unwrap();
        std::fs::write(&path, base64(shot["data"].as_str().unwrap())).unwrap();
        println!("wrote {path}");
    }
}

#[test]
#[cfg_attr(not(chromium), ignore = "needs chromium (apt-get install chromium)")]
fn without_shader_the_page_edits_the_starter_and_saves_it_through_the_dialog() {
    let _alone = ONE_BROWSER.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let taken = dir.path().join("taken.shdr");
    std::fs::write(&taken, "// someone's shader\n").unwrap();
    let view = View::start(None, dir.path());
    let mut browser = open_page(&view.url, dir.path());
    let text = |b: &mut Browser, what: &str, expression: &str, done: &dyn Fn(&str) -> bool| {
        b.wait_for(what, expression, |v| v.as_str().is_some_and(done))
            .unwrap()
            .as_str()
            .unwrap()
            .to_string()
    };
    let frame = "String(document.body.dataset.frame || 0)";

    // The built-in scene runs the ROM's pixel shader: the starter is the pass-through
    // program, shown for editing, and the frame is the scene's usual one.
    let passthrough = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders/passthrough.shdr"),
    )
    .unwrap();
    let first = text(&mut browser, "the first frame", frame, &|f| f != "0");
    let source = text(
        &mut browser,
        "the starter's source",
        "document.getElementById('source').value",
        &|s| !s.is_empty(),
    );
    assert!(source.ends_with(&passthrough), "{source}");
    let heading = text(
        &mut browser,
        "the shader heading",
        "document.getElementById('shader-path').textContent",
        &|_| true,
    );
    assert!(heading.contains("not saved yet"), "{heading}");

    // Save: the dialog asks where, with the default filled in; an existing file is
    // replaced only after a second press on "Overwrite".
    let dialog = "JSON.stringify([document.getElementById('save-dialog').open, \
         document.getElementById('save-path').value, \
         document.getElementById('save-as').textContent, \
         document.getElementById('save-message').textContent])";
    browser
        .evaluate("document.getElementById('save').click(); 1")
        .unwrap();
    let asked = text(&mut browser, "the save dialog", dialog, &|d| {
        d.starts_with("[true")
    });
    assert!(asked.contains("\"shaders/my_shader.shdr\""), "{asked}");
    browser
        .evaluate(
            "const p = document.getElementById('save-path'); p.value = 'taken.shdr'; \
             p.dispatchEvent(new Event('input')); document.getElementById('save-as').click(); 1",
        )
        .unwrap();
    let warned = text(&mut browser, "the overwrite question", dialog, &|d| {
        d.contains("Overwrite")
    });
    assert!(warned.contains("taken.shdr exists"), "{warned}");
    assert_eq!(
        std::fs::read_to_string(&taken).unwrap(),
        "// someone's shader\n"
    );
    browser
        .evaluate("document.getElementById('save-as').click(); 1")
        .unwrap();
    text(&mut browser, "the dialog to close", dialog, &|d| {
        d.starts_with("[false")
    });
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), source);
    let heading = text(
        &mut browser,
        "the file's name",
        "document.getElementById('shader-path').textContent",
        &|h| h == "taken.shdr",
    );
    assert_eq!(heading, "taken.shdr");

    // An edit in the page, saved with the ordinary Save: the file and the frame follow.
    let saved_frame = text(&mut browser, "the saved file's frame", frame, &|f| {
        f != first
    });
    let blue = solid("0.0", "0.0", "1.0");
    browser
        .evaluate(&format!(
            "const s = document.getElementById('source'); s.value = {}; \
             s.dispatchEvent(new Event('input')); document.getElementById('save').click(); 1",
            json!(blue)
        ))
        .unwrap();
    let saved: u64 = saved_frame.parse().unwrap();
    text(&mut browser, "the blue frame", frame, &|f| {
        f.parse::<u64>().is_ok_and(|f| f > saved)
    });
    assert_eq!(std::fs::read_to_string(&taken).unwrap(), blue);
    let shot = browser.screenshot().unwrap();
    assert!(
        count_near(&shot, [0, 0, 255]) >= 512 * 512,
        "no blue frame on screen"
    );
}
