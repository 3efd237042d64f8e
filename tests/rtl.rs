//! Differential tests against THEIA's RTL, the hardware itself (spec README decision 10):
//! random scenes and programs ([`gen`]) run on the original Verilog under Verilator
//! ([`oracle`], `tests/rtl/bench.v`) and on the emulator in every way it can render a
//! frame; the raw 32-bit output words of every pixel must be equal.
//!
//! These tests need `../shared/rtl` and Verilator: without them they show as ignored,
//! unless `THEIA_REQUIRE_CONFORMANCE=1` (CI), which makes them run and fail.
//!
//! A failing case prints its seed; `THEIA_RTL_SEEDS=SEED cargo test --release --test rtl
//! random -- --nocapture` runs just it and keeps its scene in `target/tmp/rtl-cases/SEED`
//! (`theia render DIR -o out.words`, `theia trace DIR --pixel X,Y`).
//! `cargo test --release --test rtl campaign -- --ignored --nocapture` with
//! `THEIA_RTL_CASES=N` runs a long campaign and prints its speed and opcode coverage.
//! `THEIA_RTL_KEEP=1` keeps every case's directory, not only the failing ones.

mod common;
#[path = "rtl/gen.rs"]
mod gen;
#[path = "rtl/oracle.rs"]
mod oracle;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use gen::{case, Case, Class, Flavor, Size, Use, CLASSES};
use oracle::{
    compare_cycles, differences, emulate, predict, run_rtl, run_rtl_on, write_case, Build,
    CycleCheck, Host, RtlOutcome, MODES,
};
use rayon::prelude::*;
use theia::emu::machine::Machine;
use theia::io::scene::mem::{load_scene_dir, MemFiles};

/// Cycles after which a case counts as hung: the longest equal case of the 100,000-case
/// campaign ran 816,003 cycles (a hang costs a case the time of about 100 that finish).
const TIMEOUT_CYCLES: u64 = 2_000_000;

/// Cases per CI run.
const CI_CASES: u64 = 200;

/// What one case showed.
enum Verdict {
    Equal {
        cycles: u64,
        timing: CycleCheck,
    },
    Mismatch(String),
    /// An unfinished opcode: what the RTL did, recorded.
    Recorded(String),
    /// The published design's lock-step hazard made the RTL's words differ (or hang): not
    /// comparable. A hazard that changed nothing counts as equal. The cycle model still
    /// predicts the RTL's cycles and hazards, and when the RTL finished, whether the
    /// pixels the hazards changed are the ones the model's live run changed.
    Hazard(CycleCheck, Option<bool>),
}

fn case_dir(seed: u64) -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("rtl-cases")
        .join(seed.to_string())
}

fn files_of(case: &Case) -> MemFiles {
    MemFiles::new(&case.scene, &case.scene.partitions, &case.imem)
}

/// Writes `scene`, which carries its own program, as a case directory for the RTL.
fn write_program_case(dir: &Path, scene: &theia::io::scene::Scene) {
    let program = scene
        .program
        .as_ref()
        .expect("the scene carries its program");
    write_case(dir, &MemFiles::new(scene, &scene.partitions, program));
}

/// Runs one case on the RTL and the emulator. The emulator reads the case back from the
/// files the RTL read, as `theia render DIR` would.
fn check(case: &Case, dir: &Path) -> Verdict {
    write_case(dir, &files_of(case));
    let scene = load_scene_dir(dir).expect("the case reads back");
    let run = run_rtl(Host::Fixed, dir, TIMEOUT_CYCLES);
    if let Some((opcode, code)) = case.unfinished {
        let what = match &run.outcome {
            RtlOutcome::Timeout => "hangs".to_string(),
            RtlOutcome::Words(words) => match emulate(&scene, 3) {
                Ok(ours) if &ours == words => "finishes, as the manual says".to_string(),
                _ => "finishes, unlike the manual".to_string(),
            },
        };
        return Verdict::Recorded(format!("{} {code}: {what}", opcode.mnemonic()));
    }
    let model = predict(dir, Host::Fixed);
    let timing = compare_cycles(&run, &model);
    let RtlOutcome::Words(rtl) = run.outcome else {
        // A core can leave MAIN on the last triangle before the host-fixed STDONE rises:
        // it then waits for a triangle that never comes (docs/rtl-differences.md).
        if run.hazard {
            return Verdict::Hazard(timing, None);
        }
        let ours = emulate(&scene, 0);
        return Verdict::Mismatch(format!(
            "the RTL did not finish in {TIMEOUT_CYCLES} cycles; the emulator: {}",
            ours.map(|_| "finished".to_string()).unwrap_or_else(|e| e)
        ));
    };
    for (mode, (name, ..)) in MODES.iter().enumerate() {
        match emulate(&scene, mode) {
            Ok(ours) if ours == rtl => {}
            _ if run.hazard => {
                let image = hazard_image_predicted(&scene, &model, &rtl);
                return Verdict::Hazard(timing, Some(image));
            }
            Ok(ours) => {
                return Verdict::Mismatch(format!(
                    "{name}:\n  {}",
                    differences(&ours, &rtl, 6).join("\n  ")
                ))
            }
            Err(e) => return Verdict::Mismatch(format!("{name}: the emulator stopped: {e}")),
        }
    }
    let cycles = run.cycles;
    Verdict::Equal { cycles, timing }
}

/// Whether the pixels where the RTL's words `rtl` differ from the emulator's are the ones
/// the model's live run (the functional cores driven by the modelled control units, swap
/// flips and all) found changed by the hazards: the even-MAIN-starts effect predicted.
fn hazard_image_predicted(
    scene: &theia::io::scene::Scene,
    model: &theia::emu::timing::Timing,
    rtl: &str,
) -> bool {
    let Ok(ours) = emulate(scene, 3) else {
        return false;
    };
    let pixel = |line: &str| -> Option<((u32, u32), String)> {
        let mut fields = line.splitn(3, ' ');
        let x = fields.next()?.parse().ok()?;
        let y = fields.next()?.parse().ok()?;
        Some(((x, y), fields.next()?.to_string()))
    };
    let rtl_words: BTreeMap<(u32, u32), String> = rtl.lines().filter_map(pixel).collect();
    let changed: BTreeSet<(u32, u32)> = ours
        .lines()
        .filter_map(pixel)
        .filter(|(at, words)| rtl_words.get(at) != Some(words))
        .map(|(at, _)| at)
        .collect();
    let predicted: BTreeSet<(u32, u32)> = model
        .hazard_pixels
        .iter()
        .filter_map(|&(core, k)| scene.partitions.get(core)?.pixels().nth(k))
        .collect();
    changed == predicted
}

/// Seeds from `THEIA_RTL_SEEDS` (comma-separated), or `default`.
fn seeds(default: std::ops::Range<u64>) -> Vec<u64> {
    match std::env::var("THEIA_RTL_SEEDS") {
        Ok(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse()
                    .expect("THEIA_RTL_SEEDS: comma-separated numbers")
            })
            .collect(),
        Err(_) => default.collect(),
    }
}

struct Report {
    equal: usize,
    mismatches: Vec<(u64, Flavor, String)>,
    recorded: BTreeMap<String, usize>,
    /// Seeds of the cases that met a lock-step hazard.
    hazards: Vec<u64>,
    /// Of the hazard cases the RTL finished, how many changed exactly the pixels the
    /// model's live run changed, and the seeds of the others.
    hazard_images_predicted: usize,
    hazard_images_missed: Vec<u64>,
    /// Every case the cycle model was compared on, with its seed.
    timing: Vec<(u64, CycleCheck)>,
    uses: BTreeSet<Use>,
    cycles: u64,
    /// The longest frame of the equal cases, in cycles (what TIMEOUT_CYCLES must exceed).
    max_cycles: u64,
    seconds: f64,
}

/// Runs `seeds` on all host cores.
fn campaign(seeds: &[u64], size: Size, flavor_of: impl Fn(u64) -> Flavor + Sync) -> Report {
    let start = Instant::now();
    let done = AtomicUsize::new(0);
    let results: Vec<(u64, Flavor, Verdict, Vec<Use>)> = seeds
        .par_iter()
        .map(|&seed| {
            let flavor = flavor_of(seed);
            let case = case(seed, flavor, size);
            let dir = case_dir(seed);
            let verdict = check(&case, &dir);
            let keep = std::env::var_os("THEIA_RTL_KEEP").is_some();
            if !keep && !matches!(verdict, Verdict::Mismatch(_) | Verdict::Hazard(..)) {
                let _ = std::fs::remove_dir_all(&dir);
            }
            let n = done.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_multiple_of(1000) {
                eprintln!("{n} cases, {:.1} s", start.elapsed().as_secs_f64());
            }
            (seed, flavor, verdict, case.uses)
        })
        .collect();
    let mut report = Report {
        equal: 0,
        mismatches: Vec::new(),
        recorded: BTreeMap::new(),
        hazards: Vec::new(),
        hazard_images_predicted: 0,
        hazard_images_missed: Vec::new(),
        timing: Vec::new(),
        uses: BTreeSet::new(),
        cycles: 0,
        max_cycles: 0,
        seconds: 0.0,
    };
    for (seed, flavor, verdict, uses) in results {
        match verdict {
            Verdict::Equal { cycles, timing } => {
                report.timing.push((seed, timing));
                report.equal += 1;
                report.cycles += cycles;
                report.max_cycles = report.max_cycles.max(cycles);
                report.uses.extend(uses);
            }
            Verdict::Mismatch(what) => report.mismatches.push((seed, flavor, what)),
            Verdict::Recorded(what) => *report.recorded.entry(what).or_default() += 1,
            Verdict::Hazard(timing, image) => {
                report.timing.push((seed, timing));
                report.hazards.push(seed);
                match image {
                    Some(true) => report.hazard_images_predicted += 1,
                    Some(false) => report.hazard_images_missed.push(seed),
                    None => {}
                }
            }
        }
    }
    report.seconds = start.elapsed().as_secs_f64();
    report
}

/// The cycle model against the RTL over a campaign's cases.
#[derive(Debug, Default)]
struct CycleSummary {
    compared: usize,
    /// Frame cycles equal (DONE count; or both never end).
    frames_equal: usize,
    /// Frame cycles within 0.5%.
    within: usize,
    finishes_equal: usize,
    omwrites_equal: usize,
    omwrites: usize,
    /// Cases where the RTL named a re-entry hazard, and of those where the model named the
    /// same first one (cycle and core); cases where only the model named one.
    rtl_hazards: usize,
    hazards_predicted: usize,
    false_hazards: usize,
    /// Every case not wholly equal: seed and what differed.
    differing: Vec<(u64, String)>,
}

/// Sums up `checks`.
fn cycle_summary(checks: &[(u64, CycleCheck)]) -> CycleSummary {
    let mut summary = CycleSummary::default();
    for (seed, check) in checks {
        summary.compared += 1;
        summary.frames_equal += usize::from(check.rtl == check.model);
        summary.within += usize::from(check.relative_error() <= 0.005);
        summary.finishes_equal += usize::from(check.finishes_equal);
        summary.omwrites_equal += usize::from(check.omwrites_equal);
        summary.omwrites += check.omwrites;
        if check.rtl_hazard.is_some() {
            summary.rtl_hazards += 1;
            summary.hazards_predicted += usize::from(check.rtl_hazard == check.model_hazard);
        } else if check.model_hazard.is_some() {
            summary.false_hazards += 1;
        }
        if !check.equal() {
            summary.differing.push((*seed, check.describe()));
        }
    }
    summary
}

impl std::fmt::Display for CycleSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "cycle model on {} cases: frame cycles equal in {}, within 0.5% in {}; every core's finish cycle equal in {}; every OMWRITE's cycle equal in {} ({} OMWRITEs); re-entry hazards: {} cases on the RTL, {} predicted at the same cycle and core, {} predicted that the RTL did not show",
            self.compared,
            self.frames_equal,
            self.within,
            self.finishes_equal,
            self.omwrites_equal,
            self.omwrites,
            self.rtl_hazards,
            self.hazards_predicted,
            self.false_hazards
        )?;
        for (seed, what) in self.differing.iter().take(20) {
            write!(f, "\n  seed {seed}: {what}")?;
        }
        Ok(())
    }
}

/// How many hazard cases' images the model predicted.
fn hazard_image_text(report: &Report) -> String {
    format!(
        "hazard images: of {} hazard cases the RTL finished, {} changed exactly the pixels the model's live run changed; the others: {:?}",
        report.hazard_images_predicted + report.hazard_images_missed.len(),
        report.hazard_images_predicted,
        report.hazard_images_missed
    )
}

/// Every mismatch with its seed and the command that runs it again (`test`: the test's name).
fn mismatch_text(report: &Report, test: &str) -> String {
    report
        .mismatches
        .iter()
        .map(|(seed, flavor, what)| {
            format!(
                "seed {seed} ({flavor:?}), kept in {}: {what}\n  reproduce: THEIA_RTL_SEEDS={seed} cargo test --release --test rtl {test} -- --include-ignored --nocapture",
                case_dir(*seed).display()
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// 200 random cases (fixed seeds), every flavour: the RTL's words equal the emulator's in
/// all four render modes.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn random_cases_equal_the_rtl() {
    let seeds = seeds(0..CI_CASES);
    let report = campaign(&seeds, Size::Full, Flavor::of_seed);
    eprintln!(
        "{} cases in {:.1} s: {} equal, {} mismatches, {} lock-step hazards, {:.0} simulated cycles per case, {} at most",
        seeds.len(),
        report.seconds,
        report.equal,
        report.mismatches.len(),
        report.hazards.len(),
        report.cycles as f64 / report.equal.max(1) as f64,
        report.max_cycles
    );
    assert!(
        report.mismatches.is_empty(),
        "the emulator differs from the RTL:\n{}",
        mismatch_text(&report, "random_cases")
    );
    assert!(
        report.hazards.len() * 20 <= seeds.len(),
        "{} of {} cases hit the lock-step hazard: too few were compared",
        report.hazards.len(),
        seeds.len()
    );
    assert_eq!(report.equal + report.hazards.len(), seeds.len());
    let cycles = cycle_summary(&report.timing);
    eprintln!("{cycles}");
    eprintln!("{}", hazard_image_text(&report));
    assert!(
        cycles.frames_equal * 100 >= cycles.compared * 99 && cycles.within == cycles.compared,
        "the cycle model misses the RTL's frame cycles: {cycles}"
    );
    assert!(
        report.hazard_images_missed.is_empty(),
        "{}",
        hazard_image_text(&report)
    );
}

/// A long campaign: `THEIA_RTL_CASES` cases (default 10,000) from `THEIA_RTL_FIRST_SEED`
/// (default 1,000,000); prints speed, coverage and every mismatch with its seed.
#[test]
#[ignore = "long: run with --ignored --nocapture and THEIA_RTL_CASES=N"]
fn campaign_of_random_cases() {
    let count: u64 = std::env::var("THEIA_RTL_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let first: u64 = std::env::var("THEIA_RTL_FIRST_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let seeds = seeds(first..first + count);
    let report = campaign(&seeds, Size::Small, |seed| {
        if seed % 50 == 7 {
            Flavor::Unfinished
        } else {
            Flavor::of_seed(seed)
        }
    });
    println!(
        "{} cases in {:.0} s: {:.1} cases/s on {} threads, {} equal, {} mismatches, {} lock-step hazards, {} simulated cycles at most",
        seeds.len(),
        report.seconds,
        seeds.len() as f64 / report.seconds,
        rayon::current_num_threads(),
        report.equal,
        report.mismatches.len(),
        report.hazards.len(),
        report.max_cycles
    );
    println!("lock-step hazard seeds: {:?}", report.hazards);
    println!("{}", cycle_summary(&report.timing));
    println!("{}", hazard_image_text(&report));
    println!("{}", coverage_table(&report.uses));
    for (what, n) in &report.recorded {
        println!("unfinished: {what} ({n} cases)");
    }
    println!("{}", mismatch_text(&report, "campaign"));
    assert!(report.mismatches.is_empty());
    assert!(report.hazard_images_missed.is_empty());
}

/// The cycle model against RTLs built with 1, 2 and 8 cores (`MAX_CORES` changed in the
/// bench's copy, `oracle::for_core_count`): `THEIA_RTL_CASES` (default 50) 8x8 cases from
/// `THEIA_RTL_FIRST_SEED` (default 5,000,000) split into as many row bands as cores, for
/// each count in `THEIA_RTL_CORE_COUNTS` (default `1,2,8`). Prints the figures; at least
/// 99% of frames equal, all within 0.5%, and the output words equal the emulator's but
/// where the RTL met a lock-step hazard or hung.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn cycles_equal_the_rtl_with_other_core_counts() {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    let count: u64 = env("THEIA_RTL_CASES", "50").parse().expect("a number");
    let first: u64 = env("THEIA_RTL_FIRST_SEED", "5000000")
        .parse()
        .expect("a number");
    let counts: Vec<usize> = env("THEIA_RTL_CORE_COUNTS", "1,2,8")
        .split(',')
        .map(|n| {
            n.trim()
                .parse()
                .expect("core counts: comma-separated numbers")
        })
        .collect();
    for cores in counts {
        let build = Build {
            host: Host::Fixed,
            cores,
        };
        let start = Instant::now();
        let results: Vec<(u64, CycleCheck, bool, bool)> = (first..first + count)
            .into_par_iter()
            .map(|seed| {
                let mut case = case(seed, Flavor::of_seed(seed), Size::Small);
                let (width, height) = (case.scene.width(), case.scene.height());
                case.scene.partitions =
                    theia::io::scene::Partition::bands(width, height, cores as u32);
                let dir = case_dir(seed * 100 + cores as u64);
                write_case(&dir, &files_of(&case));
                let run = run_rtl_on(build, &dir, TIMEOUT_CYCLES);
                let check = compare_cycles(&run, &predict(&dir, Host::Fixed));
                let words_equal = match &run.outcome {
                    RtlOutcome::Words(rtl) => {
                        emulate(&load_scene_dir(&dir).unwrap(), 3).is_ok_and(|ours| &ours == rtl)
                    }
                    RtlOutcome::Timeout => false,
                };
                if check.equal() && words_equal {
                    let _ = std::fs::remove_dir_all(&dir);
                }
                // Words may differ where the hardware leaves the functional sequence (a
                // lock-step hazard) or never finishes (an unfinished opcode).
                let explained = run.hazard || run.outcome == RtlOutcome::Timeout;
                (seed, check, words_equal, explained)
            })
            .collect();
        let checks: Vec<(u64, CycleCheck)> = results
            .iter()
            .map(|(seed, check, ..)| (*seed, check.clone()))
            .collect();
        let summary = cycle_summary(&checks);
        let words = results.iter().filter(|(_, _, equal, _)| *equal).count();
        let other_words: Vec<u64> = results
            .iter()
            .filter(|(_, _, equal, _)| !*equal)
            .map(|(seed, ..)| *seed)
            .collect();
        let unexplained: Vec<u64> = results
            .iter()
            .filter(|(_, _, equal, explained)| !*equal && !*explained)
            .map(|(seed, ..)| *seed)
            .collect();
        println!(
            "{cores} cores, {count} cases in {:.0} s: output words equal the emulator's in {words} (the others: seeds {other_words:?}); {summary}",
            start.elapsed().as_secs_f64()
        );
        assert!(
            summary.frames_equal * 100 >= summary.compared * 99
                && summary.within == summary.compared,
            "{cores} cores: {summary}"
        );
        assert!(
            unexplained.is_empty(),
            "{cores} cores: output words differ without a hazard or a hang: seeds {unexplained:?}"
        );
    }
}

/// `../shared/conformance/scenes_example3` on THEIA's RTL built with 8 cores (one per
/// partition of its Params.mem), measured once with `tests/rtl/bench.v` (`+timing`) by
/// `scenes_example3_on_the_8_core_rtl` below (35 minutes on this project's 2-core machine;
/// the RTL's words equal the emulator's in all 25,600 pixels): `DONE cycles=105063483`,
/// every core's `FINISH`, and the first of its 3,788 `HAZARD` lines (cycle, core).
const EXAMPLE3_RTL_CYCLES: u64 = 105_063_483;
const EXAMPLE3_RTL_FINISHES: [u64; 8] = [
    105_063_373,
    105_063_369,
    105_063_377,
    105_063_383,
    105_063_385,
    105_063_391,
    105_063_397,
    105_063_483,
];
const EXAMPLE3_RTL_FIRST_HAZARD: (u64, usize) = (2_025_805, 6);

fn example3_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/conformance/scenes_example3")
}

/// The cycle model gives scenes_example3 the RTL's frame cycles, finish cycles and first
/// hazard (the facts above).
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared/conformance")]
fn scenes_example3_takes_the_cycles_the_rtl_takes() {
    let timing = predict(&example3_dir(), Host::Fixed);
    assert_eq!(timing.frame_cycles(), Some(EXAMPLE3_RTL_CYCLES));
    let finishes: Vec<u64> = timing
        .course
        .cores
        .iter()
        .map(|c| c.finish.expect("every core finishes"))
        .collect();
    assert_eq!(finishes, EXAMPLE3_RTL_FINISHES);
    let first = timing.hazards().first().expect("the RTL shows hazards");
    assert_eq!(first.kind, theia::emu::timing::sim::HazardKind::Reentry);
    assert_eq!((first.period, first.core), EXAMPLE3_RTL_FIRST_HAZARD);
}

/// scenes_example3 on the 8-core RTL against the model: frame, finish and every OMWRITE's
/// cycle, every hazard, and the words. `THEIA_RTL_OUTPUT=FILE` compares a saved bench
/// output instead of running the RTL (about 35 minutes).
#[test]
#[ignore = "long: 105 million cycles on the RTL; run with --ignored --nocapture"]
fn scenes_example3_on_the_8_core_rtl() {
    let dir = example3_dir();
    let run = match std::env::var("THEIA_RTL_OUTPUT") {
        Ok(file) => oracle::parse_run(
            &std::fs::read_to_string(file).expect("the saved output"),
            &dir,
        ),
        Err(_) => run_rtl_on(
            Build {
                host: Host::Fixed,
                cores: 8,
            },
            &dir,
            400_000_000,
        ),
    };
    let timing = predict(&dir, Host::Fixed);
    let check = compare_cycles(&run, &timing);
    // The bench's HAZARD lines are re-entries; the model also names their effects.
    let model_hazards: Vec<(u64, usize)> = timing
        .hazards()
        .iter()
        .filter(|h| h.kind == theia::emu::timing::sim::HazardKind::Reentry)
        .map(|h| (h.period, h.core))
        .collect();
    let mut rtl_hazards = run.hazards.clone();
    let mut sorted_model = model_hazards.clone();
    rtl_hazards.sort();
    sorted_model.sort();
    println!(
        "scenes_example3, 8 cores: {}; hazards: {} on the RTL, {} in the model, {}",
        check.describe(),
        rtl_hazards.len(),
        sorted_model.len(),
        if rtl_hazards == sorted_model {
            "every one at the same cycle and core"
        } else {
            "they differ"
        }
    );
    assert_eq!(run.cycles, EXAMPLE3_RTL_CYCLES);
    assert!(check.equal(), "{}", check.describe());
    assert_eq!(rtl_hazards, sorted_model);
    let RtlOutcome::Words(rtl) = &run.outcome else {
        panic!("the RTL did not finish")
    };
    let ours = emulate(&load_scene_dir(&dir).unwrap(), 0).unwrap();
    assert_eq!(differences(&ours, rtl, 6), Vec::<String>::new());
}

/// Opcode x operand class x forwarding distance, over the cases that matched.
fn coverage_table(uses: &BTreeSet<Use>) -> String {
    let mut rows: BTreeMap<&str, (BTreeSet<Class>, BTreeSet<u8>)> = BTreeMap::new();
    for u in uses {
        let row = rows.entry(u.opcode).or_default();
        row.0.insert(u.class);
        if u.distance > 0 {
            row.1.insert(u.distance);
        }
    }
    let mut out = String::from("opcode       classes (of 5)  forwarding distances\n");
    for (opcode, (classes, distances)) in rows {
        let classes: Vec<String> = CLASSES
            .iter()
            .map(|c| {
                if classes.contains(c) {
                    format!("{c:?}")
                } else {
                    "-".into()
                }
            })
            .collect();
        out.push_str(&format!(
            "{opcode:<12} {:<45} {distances:?}\n",
            classes.join(",")
        ));
    }
    out
}

/// Every implemented opcode appears in the CI cases, with operands of every class.
#[test]
fn the_ci_cases_use_every_implemented_opcode() {
    use theia::emu::isa::{Hardware, OPCODES};
    let mut seen: BTreeMap<&str, BTreeSet<Class>> = BTreeMap::new();
    for seed in 0..CI_CASES {
        for u in case(seed, Flavor::of_seed(seed), Size::Full).uses {
            seen.entry(u.opcode).or_default().insert(u.class);
        }
    }
    let missing: Vec<&str> = OPCODES
        .iter()
        .filter(|row| row.hardware == Hardware::Implemented)
        .map(|row| row.mnemonic)
        .filter(|m| !seen.contains_key(m))
        .collect();
    assert!(missing.is_empty(), "never generated: {missing:?}");
}

/// A scene the emulator renders from an OBJ (the built-in scene at 16x16, 4 cores) exported
/// with `theia export` runs on the RTL to the words `theia render` gives, both from the
/// export and from the OBJ directly.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn an_exported_obj_scene_runs_on_the_rtl_to_the_emulators_words() {
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export");
    let size = ["--width", "16", "--height", "16", "--cores", "4"];
    let out = common::theia(
        dir.path(),
        &[&["export", "-o", export.to_str().unwrap()][..], &size].concat(),
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    assert!(
        common::text(&out.stderr).is_empty(),
        "no warning for a scene the RTL can run: {}",
        common::text(&out.stderr)
    );
    let render = |args: &[&str], output: &str| -> String {
        let out = common::theia(dir.path(), &[&["render"], args, &["-o", output]].concat());
        assert!(out.status.success(), "{}", common::text(&out.stderr));
        std::fs::read_to_string(dir.path().join(output)).unwrap()
    };
    let exported = render(&[export.to_str().unwrap()], "exported.words");
    // The export is for the hardware's ROM; the OBJ scene defaults to the fixed one.
    let direct = render(
        &[&size[..], &["--rom", "faithful"]].concat(),
        "direct.words",
    );
    assert_eq!(exported, direct, "the export renders as the OBJ scene does");
    // The built-in scene meets the lock-step hazard at 16x16, harmlessly: every word equal.
    // Its 142 triangles take about 2.6 million cycles.
    let run = run_rtl(Host::Fixed, &export, 4 * TIMEOUT_CYCLES);
    let RtlOutcome::Words(rtl) = run.outcome else {
        panic!("the RTL did not finish the exported scene")
    };
    assert_eq!(differences(&exported, &rtl, 6), Vec::<String>::new());
    let lit = exported
        .lines()
        .skip(1)
        .filter(|l| !l.ends_with("00000000 00000000 00000000"))
        .count();
    assert!(
        lit > 200,
        "the scene is mostly visible: {lit} of 256 pixels"
    );
}

/// The machine accepts every generated scene as its own (4 partitions of equal size).
#[test]
fn generated_scenes_have_four_equal_partitions() {
    for seed in 0..50 {
        let case = case(seed, Flavor::of_seed(seed), Size::Full);
        let machine = Machine::new(&case.scene, &Default::default()).expect("valid scene");
        let counts: Vec<usize> = machine
            .partitions()
            .iter()
            .map(|p| p.pixel_count())
            .collect();
        assert_eq!(counts.len(), 4);
        assert!(
            counts.iter().all(|&c| c == counts[0]),
            "seed {seed}: {counts:?}"
        );
    }
}

/// Programs that pin what the RTL does where the spec was silent or wrong, each with the
/// words its first pixel must end with, predicted from the rule (`texture` is the scene's
/// texture memory). Every one runs on the emulator below, and on the RTL in
/// `rule_programs_equal_the_rtl`.
/// A rule program: its rule, its source, and its first pixel's words given the texture.
type RuleProgram = (&'static str, String, fn(&[u32]) -> [u32; 3]);

fn rule_programs() -> Vec<RuleProgram> {
    const OUT: &str = "OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL C2\nRETURN RT_TRUE\n";
    let program = |body: &str| format!("ENTRYPOINT_ADRR_PIXELSHADER:\nZERO C2\n{body}");
    const ONE: u32 = 0x2_0000;
    vec![
        (
            // RET resumes at the branch + 2: the instruction after the branch is skipped,
            // the ONE after it runs, the CALL runs again in sequence.
            "a CALL reached by a taken branch returns to the branch + 2",
            program(&format!(
                "JEQX L CREG_ZERO CREG_ZERO\nSETY C2 0x5\nINCY C2 C2\nL:\nCALL FN\nINCZ C2 C2\n{OUT}FN:\nINCX C2 C2\nRET R99 0x0\n"
            )),
            |_| [2 * ONE, ONE, ONE],
        ),
        (
            "a CALL reached by a JMP returns to the JMP + 2",
            program(&format!(
                "JMP L\nSETY C2 0x5\nINCY C2 C2\nL:\nCALL FN\nINCZ C2 C2\n{OUT}FN:\nINCX C2 C2\nRET R99 0x0\n"
            )),
            |_| [2 * ONE, ONE, ONE],
        ),
        (
            "a CALL reached by a RET returns past itself",
            program(&format!("CALL FN\nCALL FN\nINCZ C2 C2\n{OUT}FN:\nINCX C2 C2\nRET R99 0x0\n")),
            |_| [2 * ONE, 0, ONE],
        ),
        (
            "a CALL reached by a CALL keeps the first CALL's return address",
            program(&format!(
                "CALL T\nINCZ C2 C2\n{OUT}T:\nCALL FN\nSETY C2 0x7\n{OUT}FN:\nINCX C2 C2\nRET R99 0x0\n"
            )),
            |_| [ONE, 0, ONE],
        ),
        (
            "a taken branch over a CALL leaves the return register alone",
            program(&format!(
                "CALL FN\nINCZ C2 C2\n{OUT}FN:\nINCX C2 C2\nJEQX L CREG_ZERO CREG_ZERO\nCALL FN2\nSETY C2 0x9\n{OUT}L:\nRET R99 0x0\nFN2:\nRET R99 0x0\n"
            )),
            |_| [ONE, 0, ONE],
        ),
        (
            "a RET followed by a CALL returns to the RET + 2",
            program(&format!(
                "CALL FN\nINCZ C2 C2\n{OUT}FN:\nINCX C2 C2\nRET R99 0x0\nCALL FN2\nSETY C2 0x9\n{OUT}FN2:\nRET R99 0x0\n"
            )),
            |_| [ONE, 9, 0],
        ),
        (
            // The register file is written one instruction late: only an operand whose
            // address equals the previous DST field is forwarded.
            "a read through another alias of the row just written sees its old value",
            program(&format!(
                "SETX @0x33 0x5\nSETY @0x33 0x0\nSETZ @0x33 0x0\nNOP\nSETX @0xEF33 0x12345\nCOPY C2 @0x33\nADD C2 C2 @0xEF33\n{OUT}"
            )),
            |_| [5 + 0x12345, 0, 0],
        ),
        (
            "LEA gives its own address + 1",
            program(&format!("NOP\nLEA C2\n{OUT}")),
            |_| [0x800F; 3],
        ),
        (
            // (0x40, 0x44, 0x45): banks 0, 0, 1, so y keeps the word of 0x21.
            "TMREAD keeps y when y shares x's bank and z does not",
            program(&format!(
                "SETX C5 0x10\nSETY C5 0x21\nSETZ C5 0x32\nTMREAD C6 C5\nNOP\nSETX C5 0x40\nSETY C5 0x44\nSETZ C5 0x45\nTMREAD C2 C5\n{OUT}"
            )),
            |t| [t[0x40], t[0x21], t[0x45]],
        ),
        (
            // (1, 5, 9): banks 1, 1, 1, so z keeps the word of 0x32.
            "TMREAD keeps z when z shares y's bank outside bank 0",
            program(&format!(
                "SETX C5 0x10\nSETY C5 0x21\nSETZ C5 0x32\nTMREAD C6 C5\nNOP\nSETX C5 0x1\nSETY C5 0x5\nSETZ C5 0x9\nTMREAD C2 C5\n{OUT}"
            )),
            |t| [t[1], t[5], t[0x32]],
        ),
    ]
}

/// The scene the rule programs run on: a small generated one with a texture.
fn rule_scene() -> theia::io::scene::Scene {
    let mut scene = case(2, Flavor::Shader, Size::Small).scene;
    scene.texture = (0..256).map(|k| 0x1_0000 + k * 0x111).collect();
    scene
}

fn assembled(name: &str, source: &str) -> Vec<theia::emu::isa::Word> {
    theia::emu::isa::assemble(source, Path::new(name))
        .unwrap_or_else(|e| panic!("{name}: {e:?}"))
        .imem
}

/// Each rule program's first pixel, on the emulator, is what its rule predicts.
#[test]
fn the_emulator_follows_the_rtl_s_rules() {
    let mut scene = rule_scene();
    for (name, source, expected) in rule_programs() {
        scene.program = Some(assembled(name, &source));
        for (mode, (mode_name, ..)) in MODES.iter().enumerate() {
            let words = emulate(&scene, mode).unwrap_or_else(|e| panic!("{name}: {e}"));
            let first: Vec<u32> = words
                .lines()
                .nth(1)
                .unwrap()
                .split(' ')
                .skip(2)
                .map(|w| u32::from_str_radix(w, 16).unwrap())
                .collect();
            assert_eq!(first, expected(&scene.texture), "{name} ({mode_name})");
        }
    }
}

/// The rule programs on the RTL give the emulator's words at every pixel.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn rule_programs_equal_the_rtl() {
    let mut scene = rule_scene();
    for (index, (name, source, _)) in rule_programs().into_iter().enumerate() {
        scene.program = Some(assembled(name, &source));
        let dir = case_dir(900_000 + index as u64);
        write_program_case(&dir, &scene);
        let run = run_rtl(Host::Fixed, &dir, TIMEOUT_CYCLES);
        let RtlOutcome::Words(rtl) = run.outcome else {
            panic!("{name}: the RTL did not finish")
        };
        let ours = emulate(&load_scene_dir(&dir).unwrap(), 3).unwrap();
        assert_eq!(differences(&ours, &rtl, 4), Vec::<String>::new(), "{name}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// Two TMREADs in a row: the texture interface never restarts, so the second one returns
/// the first one's words or waits forever for a bank grant, by arbitration; a core stuck
/// so holds its bank and starves the others. Recorded (the RTL hangs), not emulated.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn back_to_back_tmreads_hang_the_rtl_and_one_instruction_between_does_not() {
    let mut scene = rule_scene();
    let reads = |between: &str| {
        format!(
            "ENTRYPOINT_ADRR_PIXELSHADER:\nSETX C5 0x10\nSETY C5 0x21\nSETZ C5 0x32\nSETX C4 0x40\nSETY C4 0x41\nSETZ C4 0x42\nTMREAD C6 C5\n{between}TMREAD C7 C4\nADD C6 C6 C7\nOMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL C6\nRETURN RT_TRUE\n"
        )
    };
    for (between, hangs) in [("", true), ("NOP\n", false)] {
        scene.program = Some(assembled("tmread", &reads(between)));
        let dir = case_dir(910_000 + u64::from(hangs));
        write_program_case(&dir, &scene);
        let run = run_rtl(Host::Fixed, &dir, 400_000);
        match (run.outcome, hangs) {
            (RtlOutcome::Timeout, true) => {}
            (RtlOutcome::Words(rtl), false) => {
                let ours = emulate(&load_scene_dir(&dir).unwrap(), 3).unwrap();
                assert_eq!(differences(&ours, &rtl, 4), Vec::<String>::new());
            }
            (outcome, _) => panic!("TMREAD {between:?} TMREAD: {outcome:?}"),
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The published host's STDONE handshake deadlocks when the cores' pixels are skewed
/// (../shared/rtl/README.md): a scene that hangs with it finishes with the host fix, to
/// the emulator's words.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn a_scene_that_deadlocks_the_published_host_finishes_with_the_fix() {
    // The first of these seeds whose scene deadlocks the published host (the RTL is
    // deterministic, so this is always the same seed).
    let (seed, dir) = (0..60)
        .map(|seed| {
            let dir = case_dir(920_000 + seed);
            write_case(
                &dir,
                &files_of(&case(seed, Flavor::of_seed(seed), Size::Full)),
            );
            (seed, dir)
        })
        .find(|(_, dir)| run_rtl(Host::Published, dir, 400_000).outcome == RtlOutcome::Timeout)
        .expect("about one scene in twelve deadlocks the published host");
    eprintln!("seed {seed} deadlocks the published host");
    // The cycle model predicts the deadlock, naming the cores the bench names.
    let published = run_rtl(Host::Published, &dir, 400_000);
    let model = predict(&dir, Host::Published);
    assert!(
        matches!(
            model.course.ending,
            theia::emu::timing::sim::SimEnding::Deadlock { .. }
        ),
        "the model predicts the published host's deadlock"
    );
    assert_eq!(
        stranded_cores(&model),
        stranded_cores_on_the_rtl(&published)
    );
    let fixed_model = predict(&dir, Host::Fixed);
    let fixed = run_rtl(Host::Fixed, &dir, TIMEOUT_CYCLES);
    assert_eq!(fixed_model.frame_cycles(), Some(fixed.cycles));
    let RtlOutcome::Words(rtl) = fixed.outcome else {
        panic!("seed {seed}: the fixed host did not finish")
    };
    let ours = emulate(&load_scene_dir(&dir).unwrap(), 0).unwrap();
    assert_eq!(differences(&ours, &rtl, 4), Vec::<String>::new());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bank 0's rows 12..18 mirror the triangle the host streams, and the host streams the next
/// one (after the last, the dummy) as soon as every core has latched the current one, while
/// MAIN runs: on the RTL a MAIN that reads them after BIU sees the next triangle, here the
/// current one. Recorded (which one a read sees depends on the cycle), not emulated; the
/// generator never reads them.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn bank_0_s_triangle_rows_change_under_main_on_the_rtl() {
    let mut scene = rule_scene();
    // C3 keeps the last MAIN's read of V0's mirror (bank 0, row 12).
    let source = "ENTRYPOINT_ADRR_MAIN:\nCALL 0x009D\nNOP\nCOPY C3 @0xC\nJEQX L R99 CREG_ZERO\nCALL 0x00BE\nNOP\nRETURN RT_TRUE\nL:\nRETURN RT_FALSE\n\
ENTRYPOINT_ADRR_PIXELSHADER:\nOMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL C3\nRETURN RT_TRUE\n";
    scene.program = Some(assembled("bank0", source));
    let dir = case_dir(930_000);
    write_program_case(&dir, &scene);
    let run = run_rtl(Host::Fixed, &dir, TIMEOUT_CYCLES);
    let RtlOutcome::Words(rtl) = run.outcome else {
        panic!("the RTL did not finish")
    };
    let ours = emulate(&load_scene_dir(&dir).unwrap(), 3).unwrap();
    let last_v0 = scene.triangles.last().unwrap()[0];
    assert_ne!(last_v0, [0; 3], "the read is not of zeros on both sides");
    let words = |v: [u32; 3]| {
        v.iter()
            .map(|w| format!("{w:08x}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (line_ours, line_rtl) in ours.lines().zip(rtl.lines()).skip(1) {
        assert!(line_ours.ends_with(&words(last_v0)), "here: {line_ours}");
        assert!(line_rtl.ends_with(&words([0; 3])), "RTL: {line_rtl}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The cores the model finds waiting for a triangle after the last one when the frame
/// stops moving.
fn stranded_cores(timing: &theia::emu::timing::Timing) -> Vec<usize> {
    timing
        .hazards()
        .iter()
        .filter(|h| h.kind == theia::emu::timing::sim::HazardKind::WaitsAfterLast)
        .map(|h| h.core)
        .collect()
}

/// The cores the bench names at its timeout as waiting for a triangle after the last one.
fn stranded_cores_on_the_rtl(run: &oracle::RtlRun) -> Vec<usize> {
    run.stranded.clone()
}

/// A core that leaves MAIN on the last triangle a cycle before STDONE rises (it rises once
/// the slowest core has latched that triangle) waits for a triangle that never comes: the
/// race `Unit_Control.v` names at CU_ACK_MAIN. Here a long pixel shader on one core delays
/// its latch. The bench reports it as a hazard; the emulator has no cycles and finishes.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn a_core_that_leaves_main_before_stdone_rises_hangs_the_rtl() {
    let seed = 3_125_796;
    let case = case(seed, Flavor::Shader, Size::Small);
    let dir = case_dir(seed);
    write_case(&dir, &files_of(&case));
    let run = run_rtl(Host::Fixed, &dir, 300_000);
    assert_eq!(run.outcome, RtlOutcome::Timeout);
    assert!(run.hazard, "the bench names the waiting core");
    // The cycle model predicts the hang, naming the same cores.
    let model = predict(&dir, Host::Fixed);
    assert!(matches!(
        model.course.ending,
        theia::emu::timing::sim::SimEnding::Deadlock { .. }
    ));
    assert_eq!(stranded_cores(&model), stranded_cores_on_the_rtl(&run));
    emulate(&load_scene_dir(&dir).unwrap(), 0).expect("the emulator finishes");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Every ray misses (the built-in scene, the camera looking away), so the four cores run
/// MAIN in step and keep restarting it: each restart flips a core's 1-bit "latched" flag
/// back off and the host never sees all four set (docs/rtl-differences.md, the
/// livelock). The model says the frame never ends; the RTL runs on far past the cycles
/// such a frame takes (one core alone: 2,139,154), and its re-entry hazards up to its
/// timeout are the model's, at the same cycles and cores.
#[test]
#[cfg_attr(not(rtl_oracle), ignore = "needs ../shared/rtl and verilator")]
fn a_livelock_the_model_predicts_keeps_the_rtl_running() {
    let dir = case_dir(940_000);
    let _ = std::fs::remove_dir_all(&dir);
    let look_away = ["--camera", "0,0,500", "--look-at", "0,0,1000"];
    let size = ["--width", "8", "--height", "8", "--cores", "4"];
    let out = common::theia(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        &[
            &["export", "-o", dir.to_str().unwrap()][..],
            &size,
            &look_away,
        ]
        .concat(),
    );
    assert!(out.status.success(), "{}", common::text(&out.stderr));
    let model = predict(&dir, Host::Fixed);
    let theia::emu::timing::sim::SimEnding::Livelock { since, .. } = model.course.ending else {
        panic!("the model predicts a livelock: {:?}", model.course.ending)
    };
    const RUN: u64 = 1_500_000;
    assert!(since < RUN / 4, "{since}");
    let run = run_rtl(Host::Fixed, &dir, RUN);
    assert_eq!(run.outcome, RtlOutcome::Timeout);
    let model_hazards: Vec<(u64, usize)> = model
        .hazards()
        .iter()
        .filter(|h| h.kind == theia::emu::timing::sim::HazardKind::Reentry && h.period < RUN)
        .map(|h| (h.period, h.core))
        .collect();
    let mut rtl_hazards = run.hazards.clone();
    rtl_hazards.sort();
    let mut sorted_model = model_hazards.clone();
    sorted_model.sort();
    assert!(rtl_hazards.len() > 10_000, "{}", rtl_hazards.len());
    assert_eq!(rtl_hazards.len(), sorted_model.len());
    assert!(rtl_hazards == sorted_model, "the hazards differ");
    let _ = std::fs::remove_dir_all(&dir);
}
