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
use theia::image::partial::{PartialHeader, PartialImage};
use theia::image::{write_atomically, write_frame};
use theia::machine::fingerprint::Fingerprint;
use theia::machine::ssaa::box_filter;
use theia::machine::{Band, Machine, Render, RenderError, RenderOptions};

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
    let mut options = RenderOptions {
        band: args.band,
        ..args.scene.render_options(shader)?
    };
    if loaded.ssaa.is_some() {
        // The sample scene's partitions are already the output's bands, scaled.
        options.cores = None;
    }
    let machine = Machine::new(&loaded.scene, &options)?;
    if let (Err(refusal), false) = (
        &machine.culler,
        args.quiet || args.scene.interprets_everything(),
    ) {
        eprintln!("note: {refusal}; every triangle test is interpreted");
    }
    if let (Err(refusal), false) = (&machine.accel, args.quiet) {
        eprintln!("note: {refusal}; each triangle is tested at each pixel");
    }
    // With --ssaa the machine renders samples; the image and its bands are the output's.
    let (width, height, output_partitions, factor) = match &loaded.ssaa {
        Some(ssaa) => (
            loaded.scene.width() / ssaa.factor,
            loaded.scene.height() / ssaa.factor,
            ssaa.output_partitions.clone(),
            ssaa.factor,
        ),
        None => (
            loaded.scene.width(),
            loaded.scene.height(),
            machine.partitions.clone(),
            1,
        ),
    };
    let band = match args.band {
        Some(band) => {
            let mut print = Fingerprint::of_render(&machine, &options);
            args.shader.add_to_fingerprint(&mut print)?;
            Some(PartialHeader {
                fingerprint: print.hex(),
                width,
                height,
                band,
                partitions: output_partitions,
            })
        }
        None => None,
    };
    if args.cycles.cycles {
        // Refused before the render, not after its image is written.
        theia::timing::timeable(&machine)?;
    }
    super::test_hooks::hold("render");
    let mut render = render_with_progress(&machine, !args.quiet)?;
    if let Some(ssaa) = &loaded.ssaa {
        render.frame = box_filter(&render.frame, ssaa.factor, ssaa.output_partitions.clone());
    }
    match band {
        Some(header) => {
            create_parent(output)?;
            let partial = PartialImage::from_frame(&render.frame, header);
            write_atomically(output, &partial.to_png())?;
        }
        None => write_image(&render, output)?,
    }
    let timing = args.cycles.cycles.then(|| {
        let dir = args.scene.scene.as_deref().filter(|path| path.is_dir());
        args.cycles.options(&loaded.scene, &options, dir)
    });
    if !args.quiet {
        let band = args.band.map(|band| BandRun {
            band,
            rows: {
                let rows = machine.active_rows();
                rows.start / factor..rows.end / factor
            },
            cores: machine.active.clone(),
            of: machine.partitions.len(),
        });
        println!("{}", summary(output, loaded, &render, band.as_ref()));
        if let Some(structure) = &render.structure {
            let batches = match structure.batches {
                1 => String::new(),
                n => format!(" in {n} batches of tile rows"),
            };
            eprintln!(
                "note: acceleration structure built in {:.0} ms{batches} ({:.0} candidate triangles per 4x4 tile)",
                (machine.accel_build + structure.build).as_secs_f64() * 1e3,
                structure.mean_candidates()
            );
        }
    }
    if let Some(timing) = timing {
        super::cycles::report(&machine, &timing, args.cycles.clock_mhz())?;
    }
    Ok(())
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
    let samples = match &loaded.ssaa {
        Some(ssaa) => format!(
            " ({} samples each, {}x{} rendered)",
            ssaa.factor * ssaa.factor,
            loaded.scene.width(),
            loaded.scene.height()
        ),
        None => String::new(),
    };
    let loading = if loaded.elapsed >= SHOW_LOAD_TIME {
        format!(", loaded in {:.2} s", loaded.elapsed.as_secs_f64())
    } else {
        String::new()
    };
    format!(
        "{}: {size}{samples}, {} triangles{loading}, {cores}, {cost}{artifacts}",
        output.display(),
        loaded.scene.triangles.len(),
    )
}

/// Renders on the rayon workers while this thread draws a progress bar on stderr (only
/// when stderr is a terminal and the render takes longer than [`PROGRESS_DELAY`]).
pub fn render_with_progress(machine: &Machine<'_>, progress: bool) -> Result<Render, RenderError> {
    let done = AtomicU64::new(0);
    let total: u64 = machine
        .active_partitions()
        .map(|(_, p)| p.pixel_count() as u64)
        .sum();
    let show = progress && std::io::stderr().is_terminal();
    std::thread::scope(|scope| {
        let worker = scope.spawn(|| machine.render(Some(&done)));
        if show {
            let start = Instant::now();
            let mut bar: Option<ProgressBar> = None;
            while !worker.is_finished() {
                std::thread::sleep(Duration::from_millis(50));
                if bar.is_none() && start.elapsed() >= PROGRESS_DELAY {
                    bar = Some(progress_bar(total));
                }
                if let Some(bar) = &bar {
                    bar.set_position(done.load(Ordering::Relaxed));
                }
            }
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
        }
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {pos}/{len} pixels (ETA {eta})",
        )
        .expect("the template is valid"),
    );
    bar
}
