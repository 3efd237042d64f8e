//! THEIA's RTL as a test oracle: builds `tests/rtl/bench.v` around the original Verilog in
//! `../shared/rtl` (the published sources with their race patch, and optionally the host
//! fix, applied as `../shared/rtl/build.sh` applies them) with Verilator, once per checkout
//! (cached under `target/tmp/rtl`), and runs cases through it.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use theia::machine::{render, AccelUse, Lockstep, RenderOptions};
use theia::scene::mem::{load_scene_dir, MemFiles};
use theia::scene::Scene;

/// Which host the bench's RTL streams the scene with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Host {
    /// The published Module_Host, whose STDONE handshake deadlocks on skewed cores.
    Published,
    /// With `../shared/rtl/host-fix.patch`: every scene finishes.
    Fixed,
}

pub fn rtl_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/rtl")
}

fn bench_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/rtl")
}

/// The simulator binary for `host`, built on first use.
pub fn simulator(host: Host) -> &'static Path {
    static FIXED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static PUBLISHED: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let cell = match host {
        Host::Fixed => &FIXED,
        Host::Published => &PUBLISHED,
    };
    match cell.get_or_init(|| build(host)) {
        Ok(path) => path,
        Err(message) => panic!("building the RTL test bench failed: {message}"),
    }
}

fn run(command: &mut Command, what: &str) -> Result<String, String> {
    let output = command
        .output()
        .map_err(|e| format!("{what}: cannot start: {e}"))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let tail: Vec<&str> = stdout.lines().chain(stderr.lines()).collect();
        let tail = tail[tail.len().saturating_sub(30)..].join("\n");
        return Err(format!("{what} failed ({}):\n{tail}", output.status));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Everything the build depends on, hashed: a change to the RTL, the patches, the bench or
/// the Verilator version makes a new build.
fn build_key(host: Host) -> Result<u64, String> {
    let mut hasher = DefaultHasher::new();
    host.hash(&mut hasher);
    let rtl = rtl_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(rtl.join("original"))
        .map_err(|e| format!("{}: {e}", rtl.join("original").display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    files.sort();
    files.extend([
        rtl.join("races.patch"),
        rtl.join("host-fix.patch"),
        bench_dir().join("bench.v"),
        bench_dir().join("main.cpp"),
    ]);
    for file in files {
        let bytes = std::fs::read(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        bytes.hash(&mut hasher);
    }
    run(
        Command::new("verilator").arg("--version"),
        "verilator --version",
    )?
    .hash(&mut hasher);
    Ok(hasher.finish())
}

fn build(host: Host) -> Result<PathBuf, String> {
    let key = build_key(host)?;
    let name = format!("{host:?}-{key:016x}").to_lowercase();
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rtl");
    let done = root.join(&name);
    let binary = done.join("vtheia");
    if binary.is_file() {
        return Ok(binary);
    }
    let partial = root.join(format!("{name}.partial"));
    let _ = std::fs::remove_dir_all(&partial);
    let src = partial.join("src");
    std::fs::create_dir_all(&src).map_err(|e| format!("{}: {e}", src.display()))?;
    // As ../shared/rtl/build.sh prepares its copy: line endings stripped, patches applied.
    let rtl = rtl_dir();
    for entry in std::fs::read_dir(rtl.join("original")).map_err(|e| e.to_string())? {
        let path = entry.map_err(|e| e.to_string())?.path();
        if path.extension().is_some_and(|e| e == "v") {
            let text = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let text: Vec<u8> = text.into_iter().filter(|&b| b != b'\r').collect();
            std::fs::write(src.join(path.file_name().unwrap()), text).map_err(|e| e.to_string())?;
        }
    }
    let mut patches = vec![rtl.join("races.patch")];
    if host == Host::Fixed {
        patches.push(rtl.join("host-fix.patch"));
    }
    for patch in patches {
        run(
            Command::new("patch")
                .args(["-p1", "-s", "-i"])
                .arg(&patch)
                .current_dir(&src),
            "patch",
        )?;
    }
    let mut sources: Vec<String> = ["Collaterals.v", "Theia.v", "Theia_Core.v", "aDefinitions.v"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for entry in std::fs::read_dir(&src).map_err(|e| e.to_string())? {
        let name = entry
            .map_err(|e| e.to_string())?
            .file_name()
            .to_string_lossy()
            .into_owned();
        if name.starts_with("Module_") || name.starts_with("Unit_") {
            sources.push(name);
        }
    }
    sources.sort();
    run(
        Command::new("verilator")
            .args([
                "--cc",
                "--exe",
                "--build",
                "-Wno-fatal",
                "-Wno-lint",
                "-Wno-style",
            ])
            .args([
                "--top-module",
                "theia_bench",
                "-j",
                "2",
                "-O3",
                "--x-assign",
                "fast",
            ])
            .arg("--Mdir")
            .arg(partial.join("obj"))
            .arg("-o")
            .arg(partial.join("vtheia"))
            .args(&sources)
            .arg(bench_dir().join("bench.v"))
            .arg(bench_dir().join("main.cpp"))
            .current_dir(&src),
        "verilator",
    )?;
    let _ = std::fs::remove_dir_all(&done);
    std::fs::rename(&partial, &done).map_err(|e| format!("{}: {e}", done.display()))?;
    Ok(binary)
}

/// What the RTL did with a case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RtlOutcome {
    /// Every core finished: the output words in the emulator's `.words` layout.
    Words(String),
    /// Still running after the cycle limit (a deadlock or a hung core).
    Timeout,
}

/// A run of the RTL.
#[derive(Clone, Debug)]
pub struct RtlRun {
    pub outcome: RtlOutcome,
    pub cycles: u64,
    /// Whether a core started MAIN twice on one triangle: the published control unit's
    /// lock-step hazard, which no emulator without a cycle model reproduces
    /// (docs/rtl-differences.md). Often harmless (MAIN repeats the previous triangle).
    pub hazard: bool,
}

/// Writes `files` into `dir` (created).
pub fn write_case(dir: &Path, files: &MemFiles) {
    std::fs::create_dir_all(dir).expect("case directory");
    for (name, text) in files.files() {
        std::fs::write(dir.join(name), text).expect("case file");
    }
}

/// Runs the scene in `dir` on the RTL; `timeout` in clock cycles.
pub fn run_rtl(host: Host, dir: &Path, timeout: u64) -> RtlRun {
    let output = Command::new(simulator(host))
        .arg(format!("+timeout={timeout}"))
        .current_dir(dir)
        .output()
        .expect("the simulator runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let cycles = |line: &str| -> u64 {
        line.split("cycles=")
            .nth(1)
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    let hazard = stdout.lines().any(|l| l.starts_with("HAZARD"));
    if let Some(line) = stdout.lines().find(|l| l.starts_with("TIMEOUT")) {
        return RtlRun {
            outcome: RtlOutcome::Timeout,
            cycles: cycles(line),
            hazard,
        };
    }
    let done = stdout
        .lines()
        .find(|l| l.starts_with("DONE"))
        .unwrap_or_else(|| {
            panic!(
                "{}: the simulator ended without DONE or TIMEOUT ({}):\n{stdout}\n{}",
                dir.display(),
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
        });
    let scene = load_scene_dir(dir).expect("the case reads back");
    let mut pixels: Vec<(u32, u32, &str)> = stdout
        .lines()
        .filter_map(|line| line.strip_prefix("WORDS "))
        .map(|rest| {
            let mut fields = rest.splitn(3, ' ');
            let x = fields.next().unwrap().parse().unwrap();
            let y = fields.next().unwrap().parse().unwrap();
            (x, y, fields.next().unwrap())
        })
        .collect();
    pixels.sort_by_key(|&(x, y, _)| (y, x));
    let mut text = theia::image::words_header(scene.width(), scene.height());
    for (x, y, words) in pixels {
        text.push_str(&format!("{x} {y} {words}\n"));
    }
    RtlRun {
        outcome: RtlOutcome::Words(text),
        cycles: cycles(done),
        hazard,
    }
}

/// The ways the emulator can run a frame; all must give the RTL's words.
pub const MODES: [(&str, bool, AccelUse, Lockstep); 4] = [
    (
        "acceleration structure",
        true,
        AccelUse::Always,
        Lockstep::Auto,
    ),
    (
        "per-triangle culling",
        true,
        AccelUse::Never,
        Lockstep::Never,
    ),
    (
        "interpreted, lock-step groups",
        false,
        AccelUse::Never,
        Lockstep::Always,
    ),
    (
        "interpreted, each core alone",
        false,
        AccelUse::Never,
        Lockstep::Never,
    ),
];

/// The emulator's `.words` text for `scene` in one of [`MODES`], or the error it stopped with.
pub fn emulate(scene: &Scene, mode: usize) -> Result<String, String> {
    let (_, culling, accel, lockstep) = MODES[mode];
    let options = RenderOptions {
        culling,
        accel,
        lockstep,
        ..RenderOptions::default()
    };
    render(scene, &options)
        .map(|r| theia::image::words_text(&r.frame))
        .map_err(|e| e.to_string())
}

/// The first pixels where two `.words` texts differ, as lines `emulator | rtl`.
pub fn differences(emulator: &str, rtl: &str, limit: usize) -> Vec<String> {
    let rtl_lines: Vec<&str> = rtl.lines().collect();
    let emulator_lines: Vec<&str> = emulator.lines().collect();
    let mut out: Vec<String> = emulator_lines
        .iter()
        .zip(&rtl_lines)
        .filter(|(a, b)| a != b)
        .take(limit)
        .map(|(a, b)| format!("emulator {a} | rtl {b}"))
        .collect();
    if emulator_lines.len() != rtl_lines.len() {
        out.push(format!(
            "{} lines from the emulator, {} from the RTL",
            emulator_lines.len(),
            rtl_lines.len()
        ));
    }
    out
}
