//! A render that fails, at whatever point, leaves the output that was there byte for byte
//! and no temporary file: errors before rendering, a watchdog, signals while rendering and
//! while writing (stopped there by the binary's test hook, `THEIA_TEST_HOLD`), a full disk;
//! and outputs that cannot be written are refused clearly.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::text;

/// What the output held before each failing render.
const OLD: &[u8] = b"the image that was here before\n";

/// A small render of the built-in scene.
const SMALL: &[&str] = &["--width", "32", "--height", "24", "--cores", "2"];

/// A directory holding `out.png` with [`OLD`] in it.
fn with_old_output() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("out.png"), OLD).unwrap();
    dir
}

/// Everything in `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// The output is as it was, and nothing else was left beside it.
fn assert_untouched(dir: &Path, others: &[&str]) {
    assert_eq!(std::fs::read(dir.join("out.png")).unwrap(), OLD);
    let mut expected: Vec<String> = others.iter().map(|s| s.to_string()).collect();
    expected.push("out.png".into());
    expected.sort();
    assert_eq!(names_in(dir), expected);
}

fn render(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["render", "--quiet", "-o", "out.png"];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(extra);
    common::theia(dir, &args)
}

const SPIN: &str = "ENTRYPOINT_ADRR_PIXELSHADER:\nSPIN:\n JMP SPIN\n";
const BROKEN: &str = "ENTRYPOINT_ADRR_PIXELSHADER:\n FROBNICATE R1 R2\n RETURN RT_TRUE\n";

#[test]
fn a_failing_render_leaves_the_old_output_byte_for_byte() {
    let dir = with_old_output();
    let d = dir.path();
    std::fs::write(d.join("spin.shdr"), SPIN).unwrap();
    std::fs::write(d.join("broken.shdr"), BROKEN).unwrap();
    for (what, extra, message) in [
        ("scene error", &["missing.obj"][..], "missing.obj"),
        (
            "shader error",
            &["--shader", "broken.shdr"][..],
            "broken.shdr:2:",
        ),
        (
            "watchdog",
            &["--shader", "spin.shdr", "--max-steps", "1000"][..],
            "core 0, pixel (0, 0)",
        ),
    ] {
        let output = render(d, extra);
        assert_eq!(output.status.code(), Some(2), "{what}");
        assert!(
            text(&output.stderr).contains(message),
            "{what}: {}",
            text(&output.stderr)
        );
        assert_untouched(d, &["broken.shdr", "spin.shdr"]);
    }
    // And the same command without the fault does replace it.
    assert!(render(d, &[]).status.success());
    assert_ne!(std::fs::read(d.join("out.png")).unwrap(), OLD);
}

/// `theia render` with the test hook holding it at `point` (see src/cli/test_hooks.rs).
struct Held {
    child: Child,
    hold: tempfile::TempDir,
}

impl Held {
    fn start(dir: &Path, point: &str) -> Held {
        let hold = tempfile::tempdir().unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_theia"))
            .args(["render", "--quiet", "-o", "out.png"])
            .args(SMALL)
            .env("THEIA_TEST_HOLD", hold.path())
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut held = Held { child, hold };
        held.wait_until_reached(point);
        held
    }

    /// Waits for the process to stop at `point`; what the hook wrote there.
    fn wait_until_reached(&mut self, point: &str) -> String {
        let reached = self.hold.path().join(format!("{point}.reached"));
        let start = Instant::now();
        while !reached.exists() {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("theia ended ({status}) before reaching {point}");
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{point} not reached"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::fs::read_to_string(reached).unwrap()
    }

    fn signal(&self, signal: i32) {
        // SAFETY: signals our own child process, which has not been waited for yet.
        unsafe {
            libc::kill(self.child.id() as i32, signal);
        }
    }

    fn wait(self) -> Output {
        self.child.wait_with_output().unwrap()
    }
}

#[test]
fn a_signal_while_rendering_leaves_the_old_output() {
    for signal in [libc::SIGKILL, libc::SIGTERM, libc::SIGINT] {
        let dir = with_old_output();
        let held = Held::start(dir.path(), "render");
        held.signal(signal);
        let output = held.wait();
        match signal {
            libc::SIGKILL => assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&output.status),
                Some(libc::SIGKILL)
            ),
            _ => {
                assert_eq!(output.status.code(), Some(130), "signal {signal}");
                assert_eq!(text(&output.stderr), "interrupted\n");
            }
        }
        assert_untouched(dir.path(), &[]);
    }
}

#[test]
fn sigterm_or_sigint_while_writing_removes_the_temporary_file() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        let dir = with_old_output();
        let mut held = Held::start(dir.path(), "render");
        std::fs::write(held.hold.path().join("render.release"), "").unwrap();
        let temporary = PathBuf::from(held.wait_until_reached("write"));
        // Held with the new image whole in the temporary file, beside the old output.
        assert_eq!(
            temporary.parent().unwrap(),
            dir.path().canonicalize().unwrap()
        );
        assert!(theia::io::image::read_image(&temporary).is_ok());
        held.signal(signal);
        let output = held.wait();
        assert_eq!(output.status.code(), Some(130), "signal {signal}");
        assert_untouched(dir.path(), &[]);
    }
}

/// What the README says SIGKILL leaves: the old output, and while writing, the temporary
/// file (no process is left to remove it).
#[test]
fn sigkill_while_writing_leaves_the_old_output_and_the_temporary_file() {
    let dir = with_old_output();
    let mut held = Held::start(dir.path(), "render");
    std::fs::write(held.hold.path().join("render.release"), "").unwrap();
    let temporary = PathBuf::from(held.wait_until_reached("write"));
    held.signal(libc::SIGKILL);
    held.wait();
    let name = temporary.file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(".tmp"), "{name}");
    assert_untouched(dir.path(), &[name]);
}

#[test]
fn released_holds_write_the_image() {
    // The hook itself changes nothing: released at once, the render writes as usual.
    let dir = with_old_output();
    let mut held = Held::start(dir.path(), "render");
    std::fs::write(held.hold.path().join("render.release"), "").unwrap();
    held.wait_until_reached("write");
    std::fs::write(held.hold.path().join("write.release"), "").unwrap();
    let output = held.wait();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let image = theia::io::image::read_image(&dir.path().join("out.png")).unwrap();
    assert_eq!((image.width, image.height), (32, 24));
    assert_eq!(names_in(dir.path()), ["out.png"]);
}

/// A real full disk: a 1 MiB tmpfs, filled, in a mount namespace of the test's own
/// (`unshare`, which needs user namespaces or root).
#[test]
fn a_full_disk_leaves_the_old_output_and_no_temporary_file() {
    let namespaces = Command::new("unshare")
        .args(["--map-root-user", "--mount", "true"])
        .status()
        .is_ok_and(|status| status.success());
    if !namespaces {
        assert!(
            std::env::var("THEIA_REQUIRE_CONFORMANCE").as_deref() != Ok("1"),
            "CI needs `unshare --map-root-user --mount` for the full-disk test"
        );
        eprintln!("no mount namespaces here: the full disk is only simulated (src/io/image.rs)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let disk = dir.path().join("disk");
    std::fs::create_dir(&disk).unwrap();
    std::fs::write(dir.path().join("old.png"), OLD).unwrap();
    let script = format!(
        "set -u
mount -t tmpfs -o size=1m tmpfs disk || exit 100
cp old.png disk/out.png
dd if=/dev/zero of=disk/filler bs=4096 2>/dev/null
'{theia}' render --quiet -o disk/out.png {small}
echo \"status $?\" >&2
cmp -s old.png disk/out.png && echo same >&2
ls -A disk >&2",
        theia = env!("CARGO_BIN_EXE_theia"),
        small = SMALL.join(" "),
    );
    let output = Command::new("unshare")
        .args(["--map-root-user", "--mount", "sh", "-c", &script])
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("error: disk/out.png: No space left on device"),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("status 2\nsame\nfiller\nout.png\n"),
        "{stderr}"
    );
}

#[test]
fn outputs_that_cannot_be_written_are_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::create_dir(d.join("taken.png")).unwrap();
    std::fs::write(d.join("file.txt"), "a file").unwrap();
    for (output, message) in [
        (
            "taken.png",
            "error: taken.png: is a directory, not a file name\n",
        ),
        (
            "file.txt/new/out.png",
            "error: file.txt/new: cannot create the directory: Not a directory (os error 20)\n",
        ),
    ] {
        let result = common::theia(d, &["render", "--quiet", "-o", output]);
        assert_eq!(result.status.code(), Some(2), "{output}");
        assert_eq!(text(&result.stderr), message);
    }
    assert_eq!(names_in(d), ["file.txt", "taken.png"]);
    assert_eq!(names_in(&d.join("taken.png")), Vec::<String>::new());
}

/// A directory the process may not write in: as root (which may write anywhere) the
/// render runs as `nobody`.
#[test]
fn an_unwritable_directory_is_refused_with_exit_2() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755)).unwrap();
    let locked = d.join("locked");
    std::fs::create_dir(&locked).unwrap();
    std::fs::write(locked.join("out.png"), OLD).unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o555)).unwrap();
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    // As root the render runs as `nobody`, who may not reach the build folder (a checkout
    // under a 0700 folder): it runs a copy of the binary in the open temporary folder.
    let binary = if root {
        let copy = d.join("theia");
        std::fs::copy(env!("CARGO_BIN_EXE_theia"), &copy).unwrap();
        copy
    } else {
        env!("CARGO_BIN_EXE_theia").into()
    };
    let mut command = Command::new(binary);
    command
        .args(["render", "--quiet", "-o", "locked/out.png"])
        .args(SMALL)
        .current_dir(d);
    if root {
        command.uid(65534).gid(65534);
    }
    let output = command.output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: locked/out.png: cannot create a file in locked: permission denied\n"
    );
    assert_untouched(&locked, &[]);
}
