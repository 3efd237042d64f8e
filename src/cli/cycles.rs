//! `--cycles`: how long the hardware itself takes for the frame (`theia::emu::timing`).

use std::path::Path;
use std::sync::atomic::AtomicU64;

use clap::{Args, ValueEnum};

use theia::emu::core::Program;
use theia::emu::machine::{Frame, Machine, RenderOptions};
use theia::emu::timing::sim::{HazardKind, SimEnding};
use theia::emu::timing::{
    self, HostKind, SimulatedFrame, Timing, TimingError, TimingOptions, DEFAULT_CLOCK_MHZ,
};
use theia::io::scene::Scene;

use super::render::join_showing;

#[derive(Args, Clone, Debug, Default)]
pub struct CyclesArgs {
    /// Also time the frame on the hardware: clock cycles of the whole machine (host
    /// included) and each core's busy, waiting and idle cycles, as THEIA's RTL takes them.
    /// THEIA stages only (not R500 or PICA200), up to 32 cores
    #[arg(long)]
    pub cycles: bool,
    /// The clock for the frame time [default: 100 MHz, the only clock THEIA's sources name:
    /// its test bench's 10 ns period]
    #[arg(long, value_name = "MHZ", requires = "cycles")]
    pub clock: Option<f64>,
    /// The host that streams the scene: `fixed` (with the RTL's host-fix patch, which the
    /// differential tests run) or `published` (whose STDONE handshake deadlocks on skewed
    /// cores)
    #[arg(
        long,
        value_name = "HOST",
        default_value = "fixed",
        requires = "cycles"
    )]
    pub host: HostArg,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum HostArg {
    #[default]
    Fixed,
    Published,
}

impl CyclesArgs {
    /// The timing options for `scene` rendered with `options`, read from `dir` when the
    /// scene is a test-bench directory (its Instructions.mem's word 0 decides how much
    /// code the host sends).
    pub fn options(
        &self,
        scene: &Scene,
        options: &RenderOptions,
        dir: Option<&Path>,
    ) -> TimingOptions {
        let imem_len = options
            .imem
            .as_ref()
            .or(scene.program.as_ref())
            .map_or_else(|| Program::default_imem().len(), Vec::len);
        let mut timing = TimingOptions::new(imem_len);
        if options.imem.is_none() {
            if let Some(words) = dir.and_then(timing::instruction_words_in) {
                timing.instruction_words = words;
            }
        }
        timing.host = match self.host {
            HostArg::Fixed => HostKind::Fixed,
            HostArg::Published => HostKind::Published,
        };
        timing
    }

    pub fn clock_mhz(&self) -> f64 {
        self.clock.unwrap_or(DEFAULT_CLOCK_MHZ)
    }
}

/// Runs `render` and, where the render may use more than one thread, the frame's cycle
/// simulation beside it on a thread of its own (it needs no rendered image until its
/// hazards are compared): the render's result, and the simulation's if it ran. A
/// simulation still running when the render is done shows its progress (`progress`).
pub fn simulate_beside<'m, R: Send>(
    machine: &'m Machine<'m>,
    options: &TimingOptions,
    progress: bool,
    render: impl FnOnce() -> R + Send,
) -> (R, Option<Result<SimulatedFrame<'m>, TimingError>>) {
    // A render told to use one thread uses one.
    if rayon::current_num_threads() < 2 {
        return (render(), None);
    }
    let (simulated, rendered) = simulate_while(machine, options, progress, render);
    (rendered, Some(simulated))
}

/// The frame's cycle simulation, showing its progress (`progress`): a frame of many
/// triangles takes far longer to time than to render.
pub fn simulate_showing<'m>(
    machine: &'m Machine<'m>,
    options: &TimingOptions,
    progress: bool,
) -> Result<SimulatedFrame<'m>, TimingError> {
    simulate_while(machine, options, progress, || ()).0
}

/// The simulation on a thread of its own while this one runs `meanwhile`, then draws the
/// simulation's progress until it is done.
fn simulate_while<'m, R: Send>(
    machine: &'m Machine<'m>,
    options: &TimingOptions,
    progress: bool,
    meanwhile: impl FnOnce() -> R + Send,
) -> (Result<SimulatedFrame<'m>, TimingError>, R) {
    let started = AtomicU64::new(0);
    std::thread::scope(|scope| {
        let simulate = || timing::simulate_frame_with_progress(machine, options, Some(&started));
        let simulation = scope.spawn(simulate);
        let done = meanwhile();
        let total = timing::timed_pixels(machine);
        let simulated = join_showing(simulation, &started, total, progress, SIMULATED);
        (simulated, done)
    })
}

/// What the simulation's progress bar counts.
const SIMULATED: &str = "pixels timed (--cycles)";

/// Finishes `simulated` (`rendered`: the machine's functional frame, if at hand) and prints
/// the report, for a frame of `height` rows, on stdout.
pub fn report(
    simulated: SimulatedFrame<'_>,
    rendered: Option<&Frame>,
    height: u32,
    clock_mhz: f64,
) -> anyhow::Result<()> {
    let timing = simulated.compare(rendered)?;
    print!("{}", text(&timing, height, clock_mhz));
    Ok(())
}

/// The report: the frame, each core, the hazards.
pub fn text(timing: &Timing, height: u32, clock_mhz: f64) -> String {
    let cores = timing.course.cores.len();
    let mut out = match &timing.course.ending {
        SimEnding::Done(cycles) => format!(
            "frame cycles {cycles}: {:.3} ms at {clock_mhz} MHz (the published test bench would end at {} ns)\n",
            *cycles as f64 / clock_mhz / 1e3,
            timing::published_bench_ns(*cycles, cores as u64, u64::from(height))
        ),
        SimEnding::Deadlock { period, .. } => format!(
            "frame never ends: nothing moves from cycle {period} on (the hardware hangs)\n"
        ),
        SimEnding::Limit(limit) => format!("frame still running after {limit} cycles\n"),
        SimEnding::Livelock { since, period } => format!(
            "frame never ends: from cycle {since} to {period} the host waited for every core to latch one triangle, the cores' 1-bit latched flags never all set at once (a livelock)\n"
        ),
    };
    out.push_str("core        busy     waiting        idle      finish\n");
    for (index, core) in timing.course.cores.iter().enumerate() {
        let p = core.periods;
        let finish = core.finish.map_or("-".to_string(), |f| f.to_string());
        out.push_str(&format!(
            "{index:>4} {:>11} {:>11} {:>11} {finish:>11}\n",
            p.busy, p.waiting, p.idle
        ));
    }
    out.push_str("(busy: in a routine or between routines; waiting: for the host or the other cores' latches; idle: before reset ends and once done)\n");
    out.push_str(&hazards_text(timing));
    out
}

/// Every kind of hazard the frame met: how many, and the first of each.
fn hazards_text(timing: &Timing) -> String {
    let hazards = timing.hazards();
    if hazards.is_empty() {
        return "hazards: none\n".to_string();
    }
    let mut out = String::new();
    type IsKind = fn(&HazardKind) -> bool;
    let kinds: [(&str, IsKind); 4] = [
        ("re-entry: a core starts MAIN again before every core latched the triangle", |k| matches!(k, HazardKind::Reentry)),
        ("even MAIN starts on the pixel's last triangle: its swap memory shows the triangle before, which the pixel's shading reads", |k| matches!(k, HazardKind::EvenStarts { .. })),
        ("livelock: a core starts MAIN 3 times or more on one triangle, the latched flags out of line", |k| matches!(k, HazardKind::Livelock { .. })),
        ("a core waits for a triangle after the last one (it left MAIN before STDONE rose)", |k| matches!(k, HazardKind::WaitsAfterLast)),
    ];
    for (what, is) in kinds {
        let of_kind: Vec<_> = hazards.iter().filter(|h| is(&h.kind)).collect();
        let Some(first) = of_kind.first() else {
            continue;
        };
        let longest = of_kind
            .iter()
            .filter_map(|h| match h.kind {
                HazardKind::Livelock { since, .. } => Some(h.period - since),
                _ => None,
            })
            .max();
        let detail = match (first.kind, longest) {
            (HazardKind::EvenStarts { triangle, .. }, _) => format!(", triangle {triangle}"),
            (HazardKind::Livelock { starts, since }, Some(longest)) => format!(
                ", {starts} starts, flags out of line for {} cycles (at most {longest})",
                first.period - since
            ),
            _ => String::new(),
        };
        let times = match of_kind.len() {
            1 => "once".to_string(),
            n => format!("{n} times"),
        };
        out.push_str(&format!(
            "hazard {what}: {times}; first at cycle {}, core {}, pixel {}, MAIN {}{detail}\n",
            first.period, first.core, first.pixel, first.main
        ));
    }
    if timing.live {
        out.push_str(&match timing.hazard_pixels.len() {
            0 => "the hardware's image equals the emulator's despite the hazards\n".to_string(),
            n => format!("the hardware's image differs from the emulator's in {n} pixels because of the hazards (this image is the emulator's)\n"),
        });
    }
    out
}
