//! `theia bench`: frame times on one core and on all cores in the same run.

use std::path::PathBuf;

use clap::Args;

mod threads;

use super::Outcome;
use theia::emu::machine::AccelMode;
use theia::tools::bench::{run as run_bench, BenchOptions};

/// Where `scenes_example3` lives in the project's layout.
const CONFORMANCE_SCENE: &str = "../shared/conformance/scenes_example3";

#[derive(Args)]
pub struct BenchArgs {
    /// The scenes_example3 directory [default: ../shared/conformance/scenes_example3 if present]
    #[arg(long, value_name = "DIR")]
    scene: Option<PathBuf>,
    /// Frames per measurement, or with --thread-scaling runs (the fastest counts)
    /// [default: 5; 2 with --thread-scaling]
    #[arg(long, value_name = "N")]
    frames: Option<u32>,
    /// Threads for the "all cores" column, or the most --thread-scaling tries [default: the
    /// machine's]
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Also time the 81,920-triangle mesh with `--accel cull` and `--accel off` (minutes)
    #[arg(long)]
    all_modes: bool,
    /// Time the UV sphere and the mesh in this mode only: auto, cull or off
    #[arg(long, value_name = "MODE")]
    accel: Option<AccelMode>,
    /// Supersample every row: each pixel the mean of K x K samples (1 to 4), as
    /// `theia render --ssaa` renders it
    #[arg(long, value_name = "K", default_value_t = 1,
          conflicts_with_all = ["scaling", "thread_scaling", "hardware"])]
    ssaa: u32,
    /// Print the cost-growth table instead: generated meshes of 5k to 1.3M triangles at
    /// 256x256 and 1920x1080 with both ROMs, each row in a process of its own (minutes)
    #[arg(long, conflicts_with_all = ["scene", "frames", "all_modes", "accel"])]
    scaling: bool,
    /// With --scaling: leave out the meshes of more triangles than this
    #[arg(long, value_name = "N", requires = "scaling")]
    max_triangles: Option<usize>,
    /// Print the thread-scaling table instead: whole-process time, speed-up, efficiency
    /// and CPU time of `theia render` on 1, 2, 4, ... threads (up to --threads) for the
    /// built-in scene and generated meshes of 81,920 and 1,310,720 triangles (minutes)
    #[arg(long, conflicts_with_all = ["scene", "all_modes", "accel", "scaling"])]
    thread_scaling: bool,
    /// With --thread-scaling: emulated cores for every row [default: 16, 4 for the
    /// faithful mesh (the OBJ default)]
    #[arg(long, value_name = "N", requires = "thread_scaling")]
    cores: Option<u32>,
    /// With --thread-scaling: also the 1,310,720-triangle mesh at 1920x1080
    #[arg(long, requires = "thread_scaling")]
    large: bool,
    /// One row of the cost-growth table, measured in this process (what --scaling runs)
    #[arg(long, hide = true, value_name = "SUBDIVISIONS,WIDTH,HEIGHT,ROM")]
    scaling_row: Option<String>,
    /// Print how long the hardware itself takes instead: the frame of SCENE (an OBJ file
    /// or a test-bench directory; the built-in scene when absent) split into 1, 2, 4, 8 and
    /// 16 row bands, each timed as THEIA's RTL built with that many cores takes it
    /// (`theia render --cycles`), with the speed-up plotted
    #[arg(long, value_name = "SCENE", num_args = 0..=1,
          conflicts_with_all = ["scene", "frames", "all_modes", "accel", "scaling"])]
    hardware: Option<Option<PathBuf>>,
    /// With --hardware: also write the plot as SVG
    #[arg(long, value_name = "FILE.svg", requires = "hardware")]
    plot: Option<PathBuf>,
    /// With --hardware: the clock for frame times [default: 100 MHz]
    #[arg(long, value_name = "MHZ", requires = "hardware")]
    clock: Option<f64>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    if let Some(scene) = &args.hardware {
        let clock = args.clock.unwrap_or(theia::emu::timing::DEFAULT_CLOCK_MHZ);
        print!(
            "{}",
            hardware::table(scene.as_deref(), args.plot.as_deref(), clock)?
        );
        return Ok(Outcome::Success);
    }
    if let Some(row) = &args.scaling_row {
        scaling::child(row)?;
        return Ok(Outcome::Success);
    }
    if args.scaling {
        print!("{}", scaling::table(args.max_triangles)?);
        return Ok(Outcome::Success);
    }
    if args.thread_scaling {
        let threads = args.threads.unwrap_or_else(rayon::current_num_threads);
        let runs = args.frames.unwrap_or(2);
        if runs == 0 {
            anyhow::bail!("--frames must be at least 1");
        }
        print!("{}", threads::table(args.cores, threads, runs, args.large)?);
        return Ok(Outcome::Success);
    }
    let conformance_scene = args.scene.or_else(|| {
        let default = PathBuf::from(CONFORMANCE_SCENE);
        if default.is_dir() {
            Some(default)
        } else {
            eprintln!("note: {CONFORMANCE_SCENE} not found: its rows are left out (--scene DIR)");
            None
        }
    });
    theia::emu::machine::ssaa::validate_factor(args.ssaa).map_err(anyhow::Error::msg)?;
    let frames = args.frames.unwrap_or(5);
    if frames == 0 {
        anyhow::bail!("--frames must be at least 1");
    }
    let options = BenchOptions {
        conformance_scene,
        frames,
        threads: args.threads,
        mesh_all_modes: args.all_modes,
        accel: args.accel,
        ssaa: args.ssaa,
        ..BenchOptions::default()
    };
    print!("{}", run_bench(&options)?);
    Ok(Outcome::Success)
}

/// `theia bench --hardware [SCENE]`: the hardware's frame time on 1 to 16 cores.
mod hardware {
    use std::fmt::Write as _;
    use std::path::Path;

    use clap::{Args, FromArgMatches};

    use super::super::cycles::CyclesArgs;
    use super::super::scene_args::SceneArgs;
    use theia::emu::timing::hardware::{self, HardwareRow, CORE_COUNTS};

    /// The table (and the terminal plot) for `scene` (`None`: the built-in scene); the
    /// SVG plot to `plot` when given.
    pub fn table(
        scene: Option<&Path>,
        plot: Option<&Path>,
        clock_mhz: f64,
    ) -> anyhow::Result<String> {
        // The scene loads as `theia render SCENE` loads it, with every default.
        let mut command = SceneArgs::augment_args(clap::Command::new("scene"));
        command = command.no_binary_name(true);
        let given: Vec<&std::ffi::OsStr> = scene.map(Path::as_os_str).into_iter().collect();
        let scene_args = SceneArgs::from_arg_matches(&command.try_get_matches_from(given)?)?;
        let loaded = scene_args.load_frame(None, 1, false)?;
        let options = scene_args.render_options(None)?;
        let dir = scene_args.scene.as_deref().filter(|p| p.is_dir());
        let timing = CyclesArgs::default().options(&loaded.scene, &options, dir);
        let rows = hardware::table(&loaded.scene, &options, &timing, &CORE_COUNTS)?;
        let name = match &scene_args.scene {
            Some(path) => path.display().to_string(),
            None => "the built-in scene".to_string(),
        };
        let title = format!(
            "{name}, {}x{} pixels, {} triangles",
            loaded.scene.width(),
            loaded.scene.height(),
            loaded.scene.triangles.len()
        );
        let mut out = text(&rows, &title, clock_mhz);
        if let Some(file) = plot {
            theia::io::image::write_atomically(file, hardware::svg(&rows, &title).as_bytes())?;
            let _ = writeln!(out, "plot written to {}", file.display());
        }
        Ok(out)
    }

    /// The table and a bar per core count.
    pub fn text(rows: &[HardwareRow], title: &str, clock_mhz: f64) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "the hardware's frame: {title}, at {clock_mhz} MHz");
        let _ = writeln!(
            out,
            "{:>5}  {:>14}  {:>11}  {:>8}  {:>5}  {:>7}",
            "cores", "frame cycles", "frame ms", "speed-up", "busy", "hazards"
        );
        let one = rows.iter().find(|r| r.cores == 1);
        for row in rows {
            let speedup = one.and_then(|one| row.speedup(one));
            let (cycles, ms) = match row.frame_cycles {
                Some(c) => (c.to_string(), format!("{:.3}", c as f64 / clock_mhz / 1e3)),
                None if !row.equal_bands => ("unequal bands".to_string(), "-".to_string()),
                None => ("never ends".to_string(), "-".to_string()),
            };
            let _ = writeln!(
                out,
                "{:>5}  {cycles:>14}  {ms:>11}  {:>8}  {:>4.0}%  {:>7}",
                row.cores,
                speedup.map_or("-".to_string(), |s| format!("{s:.2}x")),
                row.busy_share * 100.0,
                row.hazards
            );
        }
        let most = rows.iter().map(|r| r.cores).max().unwrap_or(1) as f64;
        let _ = writeln!(
            out,
            "speed-up over one core ('#'; '.' up to the ideal, one per core):"
        );
        for row in rows {
            let width = 48.0 / most;
            let bar = one
                .and_then(|one| row.speedup(one))
                .map_or(0, |s| (s * width).round() as usize);
            let ideal = (f64::from(row.cores) * width).round() as usize;
            let _ = writeln!(
                out,
                "{:>5} |{}{}",
                row.cores,
                "#".repeat(bar),
                ".".repeat(ideal.saturating_sub(bar))
            );
        }
        out
    }
}

/// `theia bench --scaling`: how frame time, structure and memory grow with the triangle
/// count. Each row runs in a child process (`--scaling-row`), so that its peak memory is
/// its own.
mod scaling {
    use std::fmt::Write as _;
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    use theia::emu::core::RomVariant;
    use theia::tools::bench::{
        icosphere_triangles, scaling_row, SCALING_SIZES, SCALING_SUBDIVISIONS,
    };

    /// Rows estimated (from the row before, scaled by the triangle count) to take longer
    /// than this are skipped. (Memory needs no limit: the acceleration structure is built
    /// in batches of bounded size.)
    const TIME_LIMIT: Duration = Duration::from_secs(60);

    /// What a child reports of its row.
    struct Measured {
        load_ms: f64,
        build_ms: f64,
        frame_s: f64,
        candidates: Option<f64>,
        peak_mb: Option<f64>,
        whole_s: f64,
    }

    /// Measures one row (`SUBDIVISIONS,WIDTH,HEIGHT,ROM`) and prints it as `key=value`
    /// pairs on one line.
    pub fn child(spec: &str) -> anyhow::Result<()> {
        let fields: Vec<&str> = spec.split(',').collect();
        let [subdivisions, width, height, rom] = fields[..] else {
            anyhow::bail!("--scaling-row: expected SUBDIVISIONS,WIDTH,HEIGHT,ROM, got `{spec}`");
        };
        let rom: RomVariant = rom.parse().map_err(anyhow::Error::msg)?;
        let row = scaling_row(
            subdivisions.parse()?,
            (width.parse()?, height.parse()?),
            rom,
        )?;
        let candidates = row
            .candidates_per_tile
            .map_or("-".to_string(), |c| format!("{c:.0}"));
        let peak = peak_memory_kb().map_or("-".to_string(), |kb| kb.to_string());
        println!(
            "triangles={} load_ms={:.0} build_ms={:.0} frame_s={:.3} candidates={candidates} peak_kb={peak}",
            row.triangles,
            row.load.as_secs_f64() * 1e3,
            row.build.as_secs_f64() * 1e3,
            row.frame.as_secs_f64(),
        );
        Ok(())
    }

    /// The process's peak resident memory (Linux); `None` elsewhere.
    fn peak_memory_kb() -> Option<u64> {
        let status = std::fs::read_to_string("/proc/self/status").ok()?;
        let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// Runs every row in a child process and prints the table.
    pub fn table(max_triangles: Option<usize>) -> anyhow::Result<String> {
        let exe = std::env::current_exe()?;
        let mut out = String::new();
        writeln!(
            out,
            "{:>9}  {:>9}  {:>8}  {:>9}  {:>7}  {:>12}  {:>8}  {:>7}  {:>15}",
            "triangles",
            "size",
            "ROM",
            "process s",
            "load ms",
            "structure ms",
            "frame s",
            "peak MB",
            "candidates/tile"
        )?;
        let mut left_out = false;
        for (width, height) in SCALING_SIZES {
            for rom in [RomVariant::Fixed, RomVariant::Faithful] {
                // (triangles, whole process seconds) of the rows run so far.
                let mut run: Vec<(usize, f64)> = Vec::new();
                let mut skipped = false;
                for subdivisions in SCALING_SUBDIVISIONS {
                    let triangles = icosphere_triangles(subdivisions);
                    if max_triangles.is_some_and(|max| triangles > max) {
                        left_out = true;
                        continue;
                    }
                    let size = format!("{width}x{height}");
                    let lead = format!("{triangles:>9}  {size:>9}  {:>8}", rom.name());
                    if skipped {
                        writeln!(out, "{lead}  skipped: the smaller mesh above was")?;
                        continue;
                    }
                    if let Some(reason) = skip_reason(&run, triangles) {
                        writeln!(out, "{lead}  skipped: {reason}")?;
                        skipped = true;
                        continue;
                    }
                    let spec = format!("{subdivisions},{width},{height},{}", rom.name());
                    let measured = run_child(&exe, &spec)?;
                    writeln!(
                        out,
                        "{lead}  {:>9.2}  {:>7.0}  {:>12.0}  {:>8.3}  {:>7}  {:>15}",
                        measured.whole_s,
                        measured.load_ms,
                        measured.build_ms,
                        measured.frame_s,
                        measured
                            .peak_mb
                            .map_or("n/a".to_string(), |mb| format!("{mb:.0}")),
                        measured
                            .candidates
                            .map_or("-".to_string(), |c| format!("{c:.0}")),
                    )?;
                    run.push((triangles, measured.whole_s));
                }
            }
        }
        if left_out {
            writeln!(
                out,
                "meshes over {} triangles left out (--max-triangles)",
                max_triangles.unwrap_or(0)
            )?;
        }
        writeln!(
            out,
            "bumpy icospheres, unlit; each row one process: load, structure and one frame on all cores"
        )?;
        Ok(out)
    }

    /// Why a row is not run: its estimate from the rows before (same size and ROM) is over
    /// a minute. The time is taken to grow as triangles^k, k from the last two rows (at
    /// least 1: loading alone is linear), or linearly after one row.
    fn skip_reason(run: &[(usize, f64)], triangles: usize) -> Option<String> {
        let seconds = estimate(run, triangles)?;
        (seconds > TIME_LIMIT.as_secs_f64())
            .then(|| format!("about {seconds:.0} s, estimated from the rows above"))
    }

    fn estimate(run: &[(usize, f64)], triangles: usize) -> Option<f64> {
        let &(last_triangles, last_s) = run.last()?;
        let exponent = match run {
            [.., (n1, t1), (n2, t2)] if n2 > n1 && *t1 > 0.0 => {
                ((t2 / t1).ln() / (*n2 as f64 / *n1 as f64).ln()).max(1.0)
            }
            _ => 1.0,
        };
        Some(last_s * (triangles as f64 / last_triangles as f64).powf(exponent))
    }

    fn run_child(exe: &std::path::Path, spec: &str) -> anyhow::Result<Measured> {
        let start = Instant::now();
        let output = Command::new(exe)
            .args(["bench", "--scaling-row", spec])
            .stdin(Stdio::null())
            .output()?;
        let whole_s = start.elapsed().as_secs_f64();
        if !output.status.success() {
            anyhow::bail!(
                "the row {spec} failed: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        let line = String::from_utf8_lossy(&output.stdout);
        let value = |key: &str| -> Option<f64> {
            line.split_whitespace()
                .find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))
                .and_then(|value| value.parse().ok())
        };
        let missing =
            || anyhow::anyhow!("the row {spec} printed no measurement: `{}`", line.trim());
        Ok(Measured {
            load_ms: value("load_ms").ok_or_else(missing)?,
            build_ms: value("build_ms").ok_or_else(missing)?,
            frame_s: value("frame_s").ok_or_else(missing)?,
            candidates: value("candidates"),
            peak_mb: value("peak_kb").map(|kb| kb / 1024.0),
            whole_s,
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_row_is_estimated_from_the_growth_of_the_two_above() {
            // The faithful ROM at 1920x1080 (README's table): 5x for 4x the triangles
            // gives about 67 s for the next 4x, over the minute.
            let run = [(81_920, 2.65), (327_680, 13.33)];
            let estimate_s = estimate(&run, 1_310_720).unwrap();
            assert!((estimate_s - 67.05).abs() < 0.01, "{estimate_s}");
            assert_eq!(
                skip_reason(&run, 1_310_720).as_deref(),
                Some("about 67 s, estimated from the rows above")
            );
            // Slower than linear growth is taken as linear; one row scales linearly.
            assert_eq!(
                estimate(&[(81_920, 1.05), (327_680, 1.66)], 1_310_720),
                Some(6.64)
            );
            assert_eq!(estimate(&[(5_120, 0.5)], 81_920), Some(8.0));
            assert_eq!(skip_reason(&[(5_120, 0.5)], 81_920), None);
            assert_eq!(estimate(&[], 5_120), None);
        }
    }
}
