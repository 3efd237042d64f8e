//! `--cycles`: how long the hardware itself takes for the frame (`theia::timing`).

use std::path::Path;

use clap::{Args, ValueEnum};

use theia::core::Program;
use theia::machine::{Machine, RenderOptions};
use theia::scene::Scene;
use theia::timing::sim::{Ending, HazardKind};
use theia::timing::{self, HostKind, Timing, TimingOptions, DEFAULT_CLOCK_MHZ};

#[derive(Args, Clone, Debug, Default)]
pub struct CyclesArgs {
    /// Also time the frame on the hardware: clock cycles of the whole machine (host
    /// included) and each core's busy, waiting and idle cycles, as THEIA's RTL takes them.
    /// THEIA stages only (not R500 or PICA200)
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

/// Times `machine`'s frame and prints the report on stdout.
pub fn report(
    machine: &Machine<'_>,
    options: &TimingOptions,
    clock_mhz: f64,
) -> anyhow::Result<()> {
    let timing = timing::measure(machine, options)?;
    print!("{}", text(&timing, clock_mhz));
    Ok(())
}

/// The report: the frame, each core, the hazards.
pub fn text(timing: &Timing, clock_mhz: f64) -> String {
    let mut out = String::new();
    match &timing.course.ending {
        Ending::Done(cycles) => out.push_str(&format!(
            "frame cycles {cycles} ({:.3} ms at {clock_mhz} MHz)\n",
            *cycles as f64 / clock_mhz / 1e3
        )),
        Ending::Deadlock { period, states } => out.push_str(&format!(
            "frame never ends: deadlock from cycle {period} (control-unit states {states:?})\n"
        )),
        Ending::Limit(limit) => {
            out.push_str(&format!("frame still running after {limit} cycles\n"))
        }
    }
    out.push_str("core        busy     waiting        idle      finish\n");
    for (index, core) in timing.course.cores.iter().enumerate() {
        let p = core.periods;
        let finish = core.finish.map_or("-".to_string(), |f| f.to_string());
        out.push_str(&format!(
            "{index:>4} {:>11} {:>11} {:>11} {finish:>11}\n",
            p.busy, p.waiting, p.idle
        ));
    }
    for hazard in timing.hazards().iter().take(10) {
        let what = match hazard.kind {
            HazardKind::Reentry => "starts MAIN again before every core latched the triangle",
        };
        out.push_str(&format!(
            "hazard: cycle {}, core {}, pixel {}, MAIN {}: {what}\n",
            hazard.period, hazard.core, hazard.pixel, hazard.main
        ));
    }
    out
}
