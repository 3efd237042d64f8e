//! `theia render [SCENE] [-o OUT] …`: one frame through the emulated GPU.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use anyhow::bail;

use super::cycles::CyclesArgs;
use super::frames::{AnimationArgs, FrameJob};
use super::scene_args::{LoadedScene, SceneArgs};
use super::shader::{Shader, ShaderArgs};
use super::Outcome;
use theia::emu::core::RomVariant;
use theia::emu::machine::speculate::ChunkStats;
use theia::emu::machine::ssaa::Supersampler;
use theia::emu::machine::{Band, Machine, Render, RenderOptions};
use theia::io::image::partial::{PartialHeader, PartialImage};
use theia::io::image::{write_atomically, write_frame};

#[derive(Args)]
pub struct RenderArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Output image: .png, or .ppm for the test bench's plain-text format
    /// [default: out/<scene>.png, out/default.png for the built-in scene]
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// No progress bar, notes or summary
    #[arg(short, long)]
    pub quiet: bool,
    /// Render again whenever the scene or the shader file changes
    #[arg(long, conflicts_with_all = ["band", "orbit"])]
    pub watch: bool,
    /// Supersampling: each pixel is the mean of K x K samples the emulated GPU renders at
    /// K times the resolution (1 to 4)
    #[arg(long, value_name = "K", default_value_t = 1)]
    pub ssaa: u32,
    #[command(flatten)]
    pub shader: ShaderArgs,
    /// Render only band K (from 0) of N: the emulated cores split into N contiguous
    /// groups, this process running group K. Writes a partial PNG (other rows
    /// transparent) for `theia merge`
    #[arg(long, value_name = "K/N")]
    pub band: Option<Band>,
    #[command(flatten)]
    pub animation: AnimationArgs,
    /// Print where the time went, stage by stage (loading, the acceleration structure,
    /// seeds, pixels, assembly, writing), on stderr
    #[arg(long)]
    pub timings: bool,
    #[command(flatten)]
    pub cycles: CyclesArgs,
}

/// Renders shorter than this never show a progress bar.
const PROGRESS_DELAY: Duration = Duration::from_secs(1);
/// Loading that takes at least this long is named in the summary: a large scan's (a
/// 1.3-million-triangle OBJ loads in about 0.4 s), not the small scenes' whose summary
/// lines tests compare.
const SHOW_LOAD_TIME: Duration = Duration::from_millis(250);

pub fn run(args: RenderArgs) -> anyhow::Result<Outcome> {
    if args.watch {
        return super::watch::run(&args);
    }
    let jobs = args
        .animation
        .jobs(args.output.as_deref(), &args.default_output())?;
    // Every output name is checked before the first render, not after it.
    for job in &jobs {
        theia::io::image::OutputFormat::from_path(&job.output)?;
    }
    if args.band.is_some() {
        for job in &jobs {
            if !job
                .output
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("png"))
            {
                bail!(
                    "{}: a band is written as a partial PNG: give a .png name",
                    job.output.display()
                );
            }
        }
    }
    let mut shader = None;
    let mut noted = std::collections::HashSet::new();
    for job in &jobs {
        let loaded =
            args.scene
                .load_frame(job.index.map(|_| job.degrees), args.ssaa, !args.quiet)?;
        // Most loader notes are the same for every frame of an orbit: each is said once.
        if !args.quiet {
            let new: Vec<String> = loaded
                .notes
                .iter()
                .filter(|note| noted.insert(note.to_string()))
                .cloned()
                .collect();
            print_notes(&new);
        }
        if shader.is_none() {
            shader = Some(args.shader.load(args.quiet)?);
        }
        let shader = shader.as_ref().and_then(Option::as_ref);
        render_frame(&args, &loaded, shader, job)?;
    }
    Ok(Outcome::Success)
}

impl RenderArgs {
    /// `--output`, or the scene's default output.
    pub fn output_path(&self) -> PathBuf {
        self.output.clone().unwrap_or_else(|| self.default_output())
    }

    /// `out/<scene>.png`, or `out/<scene>.bandK-of-N.png` for a band.
    fn default_output(&self) -> PathBuf {
        let still = self.scene.default_output();
        match self.band {
            Some(band) => still.with_extension(format!("band{}-of-{}.png", band.index, band.count)),
            None => still,
        }
    }
}

/// Loads the scene (and shader), renders one frame and writes it.
pub fn render_once(args: &RenderArgs) -> anyhow::Result<()> {
    let loaded = args.scene.load_frame(None, args.ssaa, !args.quiet)?;
    if !args.quiet {
        print_notes(&loaded.notes);
    }
    let shader = args.shader.load(args.quiet)?;
    let job = FrameJob {
        index: None,
        degrees: 0.0,
        output: args.output_path(),
    };
    render_frame(args, &loaded, shader.as_ref(), &job)
}

/// Renders one frame (or its `--band`) of a loaded scene and writes it to `job.output`.
fn render_frame(
    args: &RenderArgs,
    loaded: &LoadedScene,
    shader: Option<&Shader>,
    job: &FrameJob,
) -> anyhow::Result<()> {
    let output = &job.output;
    let options = RenderOptions {
        band: args.band,
        ssaa: args.ssaa,
        ..args.scene.render_options(shader)?
    };
    let sampler = Supersampler::new(&loaded.scene, &options)?;
    let header = partial_header(args, &sampler)?;
    // Refused before the render, not after its image is written. The timing options, which
    // read a scene directory's Instructions.mem, are made only with --cycles.
    let timed = match args.cycles.cycles {
        true => {
            let machine = sampler.machine()?;
            theia::emu::timing::timeable(&machine)?;
            let dir = args.scene.scene.as_deref().filter(|path| path.is_dir());
            Some((
                machine,
                args.cycles.options(sampler.samples(), &options, dir),
            ))
        }
        false => None,
    };
    let mut first = true;
    let mut render = || {
        render_with_progress(&sampler, !args.quiet, |machine| {
            if std::mem::take(&mut first) {
                notes(args, machine, sampler.passes());
                super::test_hooks::hold("render");
            }
            Ok(())
        })
    };
    let (render, simulated) = match &timed {
        Some((machine, timing)) => {
            super::cycles::simulate_beside(machine, timing, !args.quiet, render)
        }
        None => (render(), None),
    };
    let render = render?;
    let writing = Instant::now();
    match header {
        Some(header) => {
            create_parent(output)?;
            let partial = PartialImage::from_frame(&render.frame, header);
            write_atomically(output, &partial.to_png())?;
        }
        None => write_image(&render, output)?,
    }
    if args.timings {
        eprintln!("{}", timings(loaded.elapsed, &render, writing.elapsed()));
    }
    if !args.quiet {
        print_summary(args, output, loaded, &sampler, &render);
    }
    if let Some((machine, timing)) = &timed {
        let simulated = match simulated {
            Some(simulated) => simulated?,
            None => super::cycles::simulate_showing(machine, timing, !args.quiet)?,
        };
        super::cycles::report(
            simulated,
            Some(&render.frame),
            machine.scene().height(),
            args.cycles.clock_mhz(),
        )?;
    }
    Ok(())
}

/// With `--band`, what the partial image says of the frame it belongs to.
fn partial_header(
    args: &RenderArgs,
    sampler: &Supersampler<'_>,
) -> anyhow::Result<Option<PartialHeader>> {
    let Some(band) = args.band else {
        return Ok(None);
    };
    let mut print = sampler.fingerprint();
    args.shader.add_to_fingerprint(&mut print)?;
    let (width, height) = sampler.size();
    Ok(Some(PartialHeader {
        fingerprint: print.hex(),
        width,
        height,
        band,
        partitions: sampler.output_partitions().to_vec(),
    }))
}

/// The summary line on stdout, and what the acceleration structure cost on stderr.
fn print_summary(
    args: &RenderArgs,
    output: &Path,
    loaded: &LoadedScene,
    sampler: &Supersampler<'_>,
    render: &Render,
) {
    let band = args.band.map(|band| BandRun {
        band,
        rows: sampler.active_rows(),
        cores: sampler.active(),
        of: sampler.output_partitions().len(),
    });
    let line = summary(output, loaded, render, band.as_ref(), args.ssaa);
    println!("{line}");
    if let Some(structure) = &render.structure {
        let batches = match structure.batches {
            1 => String::new(),
            n => format!(" in {n} batches of tile rows"),
        };
        eprintln!(
            "note: acceleration structure built in {:.0} ms{batches} ({:.0} candidate triangles per 4x4 tile)",
            (render.stages.preparation() + structure.build).as_secs_f64() * 1e3,
            structure.mean_candidates()
        );
    }
}

/// The notes on how the first pass's `machine` renders: without culling or the
/// acceleration structure, or for long (a faithful frame of many candidates; `passes`
/// passes like it).
fn notes(args: &RenderArgs, machine: &Machine, passes: usize) {
    if args.quiet {
        return;
    }
    if let (Err(refusal), false) = (machine.culler(), args.scene.interprets_everything()) {
        eprintln!("note: {refusal}; every triangle test is interpreted");
    }
    if let Err(refusal) = machine.accel() {
        eprintln!("note: {refusal}; each triangle is tested at each pixel");
    }
    if let Some((seconds, per_tile)) = slow_faithful_render(machine, args.scene.rom(), passes) {
        eprintln!(
            "note: the faithful ROM's wrap-around tests leave {per_tile:.0} candidate triangles per 4x4 tile: this frame will take {} (--rom fixed tests far fewer)",
            duration_words(seconds)
        );
    }
}

/// `--timings`: each stage's wall-clock time in milliseconds, one line.
fn timings(load: Duration, render: &Render, write: Duration) -> String {
    let s = &render.stages;
    let stages = [
        ("load", load),
        ("cull", s.cull),
        ("rays", s.rays),
        ("tree", s.tree),
        ("plan", s.plan),
        ("seeds", s.seeds),
        ("batches", s.batches),
        ("pixels", s.pixels),
        ("check", s.check),
        ("assemble", s.assemble),
        ("write", write),
    ];
    let listed: Vec<String> = stages
        .iter()
        .filter(|(_, time)| !time.is_zero())
        .map(|(name, time)| format!("{name} {:.1}", time.as_secs_f64() * 1e3))
        .collect();
    let mut line = format!("timings (ms): {}", listed.join(", "));
    if s.chunks > 1 {
        let share = s.longest_chunk.as_secs_f64() / s.chunk_time.as_secs_f64().max(1e-9);
        line += &format!(
            "; {} chunks, {:.1} ms in all, the longest {:.1} ms ({:.1}%)",
            s.chunks,
            s.chunk_time.as_secs_f64() * 1e3,
            s.longest_chunk.as_secs_f64() * 1e3,
            share * 100.0
        );
    }
    line
}

/// Host time one candidate triangle of one 4x4 tile costs a faithful render, on one thread.
/// `theia bench --scaling`'s bumpy icospheres cost 43 ns, but real models cost more, their
/// candidates being more often wrap-around hits BIU interprets in full: at 512x512 on the
/// 2-core machine, 262 ns for the Stanford bunny (337 candidates per tile, 0.72 s), 197 ns
/// for Nefertiti (834, 1.35 s), 127 ns for a 347k-triangle walled interior (8,853, 9.2 s,
/// which 43 ns predicted as 3.1 s). The middle of those: estimates within about 1.5x.
const FAITHFUL_NS_PER_CANDIDATE: f64 = 180.0;
/// Renders predicted to take longer than this are announced, with the estimate.
const SLOW_RENDER_SECONDS: f64 = 10.0;

/// The seconds a faithful render's frame should take, when the acceleration structure
/// predicts more than [`SLOW_RENDER_SECONDS`]: its time grows with the candidates, which
/// the ROM's wrap-around tests keep by the thousand per tile on large scenes.
/// Also gives the candidates per tile. A frame in `passes` passes costs about as much in
/// each as in the first, `machine`'s.
fn slow_faithful_render(machine: &Machine, rom: RomVariant, passes: usize) -> Option<(f64, f64)> {
    if rom != RomVariant::Faithful {
        return None;
    }
    let candidates = machine.expected_candidates()? as f64 * passes as f64;
    let tree = &machine.accel().ok()??.tree;
    let tiles = f64::from(tree.tile_rows()) * f64::from(tree.tiles_per_row()) * passes as f64;
    // Every thread renders, whatever the emulated core count.
    let threads = rayon::current_num_threads().max(1) as f64;
    let seconds = faithful_seconds(candidates, threads);
    (seconds > SLOW_RENDER_SECONDS).then_some((seconds, candidates / tiles.max(1.0)))
}

/// A faithful frame's estimated seconds for its candidates (over all 4x4 tiles).
fn faithful_seconds(candidates: f64, threads: f64) -> f64 {
    candidates * FAITHFUL_NS_PER_CANDIDATE * 1e-9 / threads
}

/// "about 40 s", "about 5 minutes".
fn duration_words(seconds: f64) -> String {
    if seconds < 120.0 {
        format!("about {:.0} s", seconds)
    } else {
        format!("about {:.0} minutes", seconds / 60.0)
    }
}

pub fn print_notes(notes: &[String]) {
    for note in notes {
        eprintln!("{note}");
    }
}

/// Writes the frame atomically, creating the output directory if needed.
pub fn write_image(render: &Render, output: &Path) -> anyhow::Result<()> {
    create_parent(output)?;
    write_frame(&render.frame, output)?;
    Ok(())
}

/// Creates the directory a file is to be written in, if needed.
pub fn create_parent(output: &Path) -> anyhow::Result<()> {
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("{}: cannot create the directory: {e}", dir.display()))?;
    }
    Ok(())
}

/// What a `--band` render ran, for the summary.
pub struct BandRun {
    pub band: Band,
    pub rows: std::ops::Range<u32>,
    pub cores: std::ops::Range<usize>,
    /// The frame's partitions (emulated cores).
    pub of: usize,
}

/// One line: what was rendered, by how many cores, at what cost. Culled triangle tests
/// count as executed instructions (they are booked exactly), so with culling the rate is
/// an effective one.
pub fn summary(
    output: &Path,
    loaded: &LoadedScene,
    render: &Render,
    band: Option<&BandRun>,
    ssaa: u32,
) -> String {
    let seconds = render.elapsed.as_secs_f64();
    let frame = &render.frame;
    let rate = render.instructions as f64 / seconds.max(1e-9) / 1e6;
    let (culled, rate_kind) = match (render.culled, &render.accel) {
        (0, _) => (String::new(), ""),
        (runs, Ok(true)) => (
            format!(" ({runs} triangle tests culled, most by the acceleration structure)"),
            " effective",
        ),
        (runs, _) => (format!(" ({runs} triangle tests culled)"), " effective"),
    };
    let mut cores = match render.lockstep_groups {
        0 if render.cores == 1 => "1 core".to_string(),
        0 => format!("{} cores", render.cores),
        1 => format!("{} cores in lock-step", render.cores),
        groups => format!("{} cores in {groups} lock-step groups", render.cores),
    };
    let mut size = format!("{}x{} pixels", frame.width, frame.height);
    if let Some(run) = band {
        size = format!(
            "band {} of {size}, rows {} to {}",
            run.band,
            run.rows.start,
            run.rows.end - 1
        );
        cores = match run.cores.len() {
            1 => format!("{cores} (core {} of {})", run.cores.start, run.of),
            _ => format!(
                "{cores} (cores {} to {} of {})",
                run.cores.start,
                run.cores.end - 1,
                run.of
            ),
        };
    }
    let artifacts = match frame.artifact_pixels() {
        0 => String::new(),
        1 => "; 1 pixel shows a hit that only wrap-around or a negative t made possible \
              (--rom fixed removes it)"
            .to_string(),
        n => format!(
            "; {n} pixels show hits that only wrap-around or a negative t made possible \
             (--rom fixed removes them)"
        ),
    };
    let cost = if render.instructions_exact {
        format!(
            "{} emulated instructions{culled}, {seconds:.3} s ({rate:.0} M instructions/s{rate_kind})",
            render.instructions
        )
    } else {
        format!(
            "instruction count not available with the acceleration structure (--accel cull counts exactly){culled}, {seconds:.3} s"
        )
    };
    let samples = match ssaa {
        1 => String::new(),
        k => format!(
            " ({} samples each, {}x{} rendered)",
            k * k,
            frame.width * k,
            frame.height * k
        ),
    };
    let reruns = match render.chunks {
        ChunkStats { reruns: 0, .. } => String::new(),
        ChunkStats {
            reruns,
            speculative,
        } => format!(
            "; {reruns} of {speculative} chunks run again (their guessed start state was wrong)"
        ),
    };
    let loading = if loaded.elapsed >= SHOW_LOAD_TIME {
        format!(", loaded in {:.2} s", loaded.elapsed.as_secs_f64())
    } else {
        String::new()
    };
    format!(
        "{}: {size}{samples}, {} triangles{loading}, {cores}, {cost}{artifacts}{reruns}",
        output.display(),
        loaded.scene.triangles.len(),
    )
}

/// Renders on the rayon workers while this thread draws a progress bar on stderr (only
/// when stderr is a terminal and the render takes longer than [`PROGRESS_DELAY`]);
/// `prepare` sees each pass's machine before it renders.
pub fn render_with_progress(
    sampler: &Supersampler<'_>,
    progress: bool,
    prepare: impl FnMut(&Machine<'_>) -> anyhow::Result<()> + Send,
) -> anyhow::Result<Render> {
    let done = AtomicU64::new(0);
    let total = sampler.total_samples();
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| sampler.render(Some(&done), prepare));
        join_showing(worker, &done, total, progress, "pixels")
    })
}

/// Joins `worker`, meanwhile drawing on stderr a bar of `done` out of `total` `unit` (only
/// when `show`, stderr is a terminal and the work lasts longer than [`PROGRESS_DELAY`]).
pub fn join_showing<T>(
    worker: std::thread::ScopedJoinHandle<'_, T>,
    done: &AtomicU64,
    total: u64,
    show: bool,
    unit: &str,
) -> T {
    if show && std::io::stderr().is_terminal() {
        let start = Instant::now();
        let mut bar: Option<ProgressBar> = None;
        while !worker.is_finished() {
            std::thread::sleep(Duration::from_millis(50));
            if bar.is_none() && start.elapsed() >= PROGRESS_DELAY {
                bar = Some(progress_bar(total, unit));
            }
            if let Some(bar) = &bar {
                bar.set_position(done.load(Ordering::Relaxed).min(total));
            }
        }
        if let Some(bar) = bar {
            bar.finish_and_clear();
        }
    }
    worker
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn progress_bar(total: u64, unit: &str) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let template = format!(
        "{{spinner}} [{{elapsed_precise}}] {{wide_bar}} {{pos}}/{{len}} {unit} (ETA {{eta}})"
    );
    bar.set_style(ProgressStyle::with_template(&template).expect("the template is valid"));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The frames [`FAITHFUL_NS_PER_CANDIDATE`] was measured on (512x512: 128 x 128 tiles,
    /// 2 threads): the interior's 9.2 s is announced and estimated within 1.5x, the
    /// bunny's 0.72 s is not announced.
    #[test]
    fn the_estimate_announces_the_measured_interior_and_not_the_bunny() {
        let tiles = 128.0 * 128.0;
        let interior = faithful_seconds(8853.0 * tiles, 2.0);
        assert!(
            interior > SLOW_RENDER_SECONDS && interior < 9.2 * 1.5,
            "{interior}"
        );
        let bunny = faithful_seconds(337.0 * tiles, 2.0);
        assert!(bunny < SLOW_RENDER_SECONDS && bunny > 0.72 / 1.5, "{bunny}");
        assert_eq!(duration_words(interior), "about 13 s");
        assert_eq!(duration_words(299.0), "about 5 minutes");
    }
}
