//! THEIA's RTL as a test oracle: builds `tests/rtl/bench.v` around the original Verilog in
//! `../shared/rtl` (the published sources with their race patch, and optionally the host
//! fix, applied as `../shared/rtl/build.sh` applies them) with Verilator, once per checkout
//! (cached under `target/tmp/rtl`), and runs cases through it. The published design has 4
//! cores; [`Build::cores`] other than 4 changes `MAX_CORES` and `MAX_CORE_BITS` in the
//! bench's copy of `aDefinitions.v` and generalises the few places the published design
//! wrote for exactly 4 cores ([`for_core_count`]).

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};

use theia::emu::machine::{render, AccelUse, Lockstep, RenderOptions};
use theia::io::scene::mem::{load_scene_dir, MemFiles};
use theia::io::scene::Scene;

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

/// What the RTL is built with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Build {
    pub host: Host,
    /// `MAX_CORES`: 4 in the published design; 1, 2, 8 and 16 also build.
    pub cores: usize,
}

/// The simulator binary for `build`, built on first use (once per build, however many
/// threads ask).
pub fn simulator_for(build: Build) -> PathBuf {
    type Cell = Arc<OnceLock<Result<PathBuf, String>>>;
    static BUILDS: OnceLock<Mutex<HashMap<Build, Cell>>> = OnceLock::new();
    let cell: Cell = BUILDS
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry(build)
        .or_default()
        .clone();
    match cell.get_or_init(|| self::build(build)) {
        Ok(path) => path.clone(),
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
fn build_key(build: Build) -> Result<u64, String> {
    let mut hasher = DefaultHasher::new();
    build.hash(&mut hasher);
    include_str!("oracle.rs").hash(&mut hasher);
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

fn build(build: Build) -> Result<PathBuf, String> {
    let host = build.host;
    let key = build_key(build)?;
    let name = format!("{host:?}-{}-{key:016x}", build.cores).to_lowercase();
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
    if build.cores != 4 {
        for_core_count(&src, build.cores)?;
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

/// Rewrites the bench's copy of the design for `cores` cores. `aDefinitions.v`: MAX_CORES,
/// MAX_CORE_BITS (at least 1) and SELECT_ALL_CORES (written `4'b1111`). `Theia.v` wrote
/// four places for exactly 4 cores, or for as many cores as texture banks: the ANDs of
/// the cores' latched, committed and done flags, each bank arbiter's request vector, each
/// core's one-hot bank request (MAX_CORES bits wide, one per *bank*), and the bank row of
/// an address (`>> MAX_CORE_BITS`, the bank count's bits). `races.patch`'s crossbar
/// multiplexer, too, picks a core's word by its bank number cut to `MAX_CORE_BITS` bits,
/// which on 1 and 2 cores reads bank 0 for bank 2 and bank 1 for bank 3 (the published
/// tristate compared the whole number). With one core, each bank reads
/// that core's address: the arbiter's core index is `MAX_CORE_BITS` (at least 1) wide and
/// counts through a core that does not exist while the bank is idle, and the crossbar
/// (`races.patch`'s multiplexer) would read that core's address in the grant's period.
/// Nothing else changes.
fn for_core_count(src: &Path, cores: usize) -> Result<(), String> {
    let bits = (cores.next_power_of_two().trailing_zeros() as usize).max(1);
    let edit = |file: &str, pairs: &[(&str, String)]| -> Result<(), String> {
        let path = src.join(file);
        let mut text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        for (from, to) in pairs {
            if !text.contains(from) {
                return Err(format!("{file}: `{from}` not found"));
            }
            text = text.replace(from, to);
        }
        std::fs::write(&path, text).map_err(|e| e.to_string())
    };
    edit(
        "aDefinitions.v",
        &[
            ("`define MAX_CORES 4", format!("`define MAX_CORES {cores}")),
            (
                "`define MAX_CORE_BITS 2",
                format!("`define MAX_CORE_BITS {bits}"),
            ),
            ("`MAX_CORES'b1111", "{`MAX_CORES{1'b1}}".to_string()),
        ],
    )?;
    edit(
        "Theia.v",
        &[
            (
                "wRCommited[0] & wRCommited[1] & wRCommited[2] & wRCommited[3]",
                "&wRCommited".to_string(),
            ),
            (
                "wHostDataLatched[0] &  wHostDataLatched[1] &  wHostDataLatched[2] &  wHostDataLatched[3]",
                "&wHostDataLatched".to_string(),
            ),
            ("wDone[0] & wDone[1] & wDone[2] & wDone[3]", "&wDone".to_string()),
            (
                "{wBankReadRequest[3][Bank],wBankReadRequest[2][Bank],wBankReadRequest[1][Bank],wBankReadRequest[0][Bank]}",
                "wBankRequests[Bank]".to_string(),
            ),
            (
                "wire[`MAX_CORE_BITS-1:0] wCurrentCoreSelected[`MAX_TMEM_BANKS-1:0];",
                "wire[`MAX_CORE_BITS-1:0] wCurrentCoreSelected[`MAX_TMEM_BANKS-1:0];\n\
wire [`MAX_CORES-1:0] wBankRequests[`MAX_TMEM_BANKS-1:0];\n\
genvar RqBank, RqCore;\n\
generate for (RqBank = 0; RqBank < `MAX_TMEM_BANKS; RqBank = RqBank + 1) begin: BANK_REQUESTS\n\
for (RqCore = 0; RqCore < `MAX_CORES; RqCore = RqCore + 1) begin: CORE_REQUEST\n\
assign wBankRequests[RqBank][RqCore] = wBankReadRequest[RqCore][RqBank];\n\
end end endgenerate"
                    .to_string(),
            ),
            (
                "SELECT_1_TO_N # ( `WIDTH, `MAX_CORES ) READDRQ",
                "SELECT_1_TO_N # ( `WIDTH, `MAX_TMEM_BANKS ) READDRQ".to_string(),
            ),
            (
                "(wTMemReadAdr[i] >> `MAX_CORE_BITS)",
                "(wTMemReadAdr[i] >> 2)".to_string(),
            ),
            (
                "wCrossBarDataRow[wCoreBankSelect[CbK][`MAX_CORE_BITS-1:0]]",
                "wCrossBarDataRow[wCoreBankSelect[CbK][1:0]]".to_string(),
            ),
        ],
    )?;
    if cores == 1 {
        edit(
            "Theia.v",
            &[(
                "wCrossBarAdressCollumn[wCurrentCoreSelected[CbK]]",
                "wCrossBarAdressCollumn[0]".to_string(),
            )],
        )?;
    }
    Ok(())
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
    /// lock-step hazard (docs/rtl-differences.md). Often harmless (MAIN repeats the
    /// previous triangle).
    pub hazard: bool,
    /// Every hazard the bench named: (cycle, core), in order.
    pub hazards: Vec<(u64, usize)>,
    /// The cycle each core entered CU_DONE (core order).
    pub finishes: Vec<(usize, u64)>,
    /// Every OMWRITE handed to a decoder: (core, cycle), in cycle order.
    pub omwrites: Vec<(usize, u64)>,
    /// The cores named at a timeout as waiting for a triangle after the last one.
    pub stranded: Vec<usize>,
}

/// Writes `files` into `dir` (created).
pub fn write_case(dir: &Path, files: &MemFiles) {
    std::fs::create_dir_all(dir).expect("case directory");
    for (name, text) in files.files() {
        std::fs::write(dir.join(name), text).expect("case file");
    }
}

/// Runs the scene in `dir` on the 4-core RTL with `host`; `timeout` in clock cycles.
pub fn run_rtl(host: Host, dir: &Path, timeout: u64) -> RtlRun {
    run_rtl_on(Build { host, cores: 4 }, dir, timeout)
}

/// `field=value` of a bench line, as a number.
fn field(line: &str, name: &str) -> Option<u64> {
    let rest = &line[line.find(name)? + name.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A bench line starting with `tag` (the host's progress prints may precede it).
fn tagged<'a>(line: &'a str, tag: &str) -> Option<&'a str> {
    line.find(tag).map(|at| &line[at + tag.len()..])
}

/// Runs the scene in `dir` on the RTL of `build`; `timeout` in clock cycles.
pub fn run_rtl_on(build: Build, dir: &Path, timeout: u64) -> RtlRun {
    let output = Command::new(simulator_for(build))
        .arg(format!("+timeout={timeout}"))
        .arg("+timing")
        .current_dir(dir)
        .output()
        .expect("the simulator runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("DONE") || stdout.contains("TIMEOUT"),
        "{}: the simulator ended without DONE or TIMEOUT ({}):\n{stdout}\n{}",
        dir.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    parse_run(&stdout, dir)
}

/// What the bench printed (`+timing`) for the case in `dir`.
pub fn parse_run(stdout: &str, dir: &Path) -> RtlRun {
    let mut run = RtlRun {
        outcome: RtlOutcome::Timeout,
        cycles: 0,
        hazard: false,
        hazards: Vec::new(),
        finishes: Vec::new(),
        omwrites: Vec::new(),
        stranded: Vec::new(),
    };
    let mut pixels: Vec<(u32, u32, &str)> = Vec::new();
    let mut done = false;
    for line in stdout.lines() {
        if let Some(rest) = tagged(line, "OMWRITE ") {
            let cycle = rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap();
            run.omwrites
                .push((field(rest, "core=").unwrap() as usize, cycle));
        } else if let Some(rest) = tagged(line, "FINISH ") {
            let cycle = rest.split(' ').next().and_then(|n| n.parse().ok()).unwrap();
            run.finishes
                .push((field(rest, "core=").unwrap() as usize, cycle));
        } else if let Some(rest) = tagged(line, "HAZARD ") {
            run.hazard = true;
            if rest.contains("MAIN started again") {
                run.hazards.push((
                    field(rest, "cycles=").unwrap(),
                    field(rest, "core=").unwrap() as usize,
                ));
            } else if rest.contains("after the last one") {
                run.stranded.push(field(rest, "core=").unwrap() as usize);
            }
        } else if let Some(rest) = tagged(line, "TIMEOUT ") {
            run.cycles = field(rest, "cycles=").unwrap_or(0);
        } else if let Some(rest) = tagged(line, "DONE ") {
            run.cycles = field(rest, "cycles=").unwrap_or(0);
            done = true;
        } else if let Some(rest) = tagged(line, "WORDS ") {
            let mut fields = rest.splitn(3, ' ');
            let x = fields.next().unwrap().parse().unwrap();
            let y = fields.next().unwrap().parse().unwrap();
            pixels.push((x, y, fields.next().unwrap()));
        }
    }
    run.finishes.sort();
    if !done {
        return run;
    }
    let scene = load_scene_dir(dir).expect("the case reads back");
    pixels.sort_by_key(|&(x, y, _)| (y, x));
    let mut text = theia::io::image::words_header(scene.width(), scene.height());
    for (x, y, words) in pixels {
        text.push_str(&format!("{x} {y} {words}\n"));
    }
    run.outcome = RtlOutcome::Words(text);
    run
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
        .map(|r| theia::io::image::words_text(&r.frame))
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

/// What the cycle model predicts for the scene in `dir` (read as `theia render DIR
/// --cycles` reads it), with `host`.
pub fn predict(dir: &Path, host: Host) -> theia::emu::timing::Timing {
    let scene = load_scene_dir(dir).expect("the case reads back");
    let machine =
        theia::emu::machine::Machine::new(&scene, &RenderOptions::default()).expect("valid");
    let imem_len = scene.program.as_ref().map_or(12, Vec::len);
    let mut options = theia::emu::timing::TimingOptions::new(imem_len);
    if let Some(words) = theia::emu::timing::instruction_words_in(dir) {
        options.instruction_words = words;
    }
    options.host = match host {
        Host::Fixed => theia::emu::timing::HostKind::Fixed,
        Host::Published => theia::emu::timing::HostKind::Published,
    };
    options.limit = 200_000_000;
    theia::emu::timing::measure(&machine, &options).expect("the model times every generated case")
}

/// How the model's cycles compare with the RTL's.
#[derive(Clone, Debug, Default)]
pub struct CycleCheck {
    /// Frame cycles: the RTL's DONE count and the model's (None: no end).
    pub rtl: Option<u64>,
    pub model: Option<u64>,
    /// Every core's finish cycle equal.
    pub finishes_equal: bool,
    /// Every OMWRITE's cycle equal (as a set of (core, cycle)).
    pub omwrites_equal: bool,
    pub omwrites: usize,
    /// The RTL's first re-entry hazard and the model's, (cycle, core).
    pub rtl_hazard: Option<(u64, usize)>,
    pub model_hazard: Option<(u64, usize)>,
}

impl CycleCheck {
    /// Frame cycles, finish and OMWRITE cycles and the first hazard all equal.
    pub fn equal(&self) -> bool {
        self.rtl == self.model
            && self.finishes_equal
            && self.omwrites_equal
            && self.rtl_hazard == self.model_hazard
    }

    /// |model - rtl| / rtl (0 when both never end; 1 when only one does).
    pub fn relative_error(&self) -> f64 {
        match (self.rtl, self.model) {
            (Some(r), Some(m)) => (m as f64 - r as f64).abs() / r as f64,
            (None, None) => 0.0,
            _ => 1.0,
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "frame cycles rtl {:?} model {:?}, finishes {}, OMWRITE cycles {} ({}), first hazard rtl {:?} model {:?}",
            self.rtl,
            self.model,
            if self.finishes_equal { "equal" } else { "differ" },
            if self.omwrites_equal { "equal" } else { "differ" },
            self.omwrites,
            self.rtl_hazard,
            self.model_hazard
        )
    }
}

/// Compares the RTL's run of a case with the model's prediction.
pub fn compare_cycles(run: &RtlRun, timing: &theia::emu::timing::Timing) -> CycleCheck {
    let course = &timing.course;
    let mut model_finishes: Vec<(usize, u64)> = course
        .cores
        .iter()
        .enumerate()
        .filter_map(|(core, c)| c.finish.map(|f| (core, f)))
        .collect();
    model_finishes.sort();
    let mut model_omwrites: Vec<(usize, u64)> = course
        .cores
        .iter()
        .enumerate()
        .flat_map(|(core, c)| c.omwrites.iter().map(move |&(_, t)| (core, t)))
        .collect();
    model_omwrites.sort();
    let mut rtl_omwrites = run.omwrites.clone();
    rtl_omwrites.sort();
    let rtl = match run.outcome {
        RtlOutcome::Words(_) => Some(run.cycles),
        RtlOutcome::Timeout => None,
    };
    // A frame that never ends on the RTL: the model ends too, at the period nothing moves.
    let omwrites_equal = match rtl {
        Some(_) => rtl_omwrites == model_omwrites,
        None => {
            model_omwrites.starts_with(&rtl_omwrites) || rtl_omwrites.starts_with(&model_omwrites)
        }
    };
    CycleCheck {
        rtl,
        model: timing.frame_cycles(),
        finishes_equal: rtl.is_none() || run.finishes == model_finishes,
        omwrites_equal,
        omwrites: rtl_omwrites.len(),
        rtl_hazard: run.hazards.first().copied(),
        model_hazard: timing
            .hazards()
            .iter()
            .find(|h| h.kind == theia::emu::timing::sim::HazardKind::Reentry)
            .map(|h| (h.period, h.core)),
    }
}
