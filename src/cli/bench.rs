//! `theia bench`: frame times on one core and on all cores in the same run.

use std::path::PathBuf;

use clap::Args;

use super::Outcome;
use theia::bench::{run as run_bench, BenchOptions};
use theia::machine::AccelMode;

/// Where `scenes_example3` lives in the project's layout.
const CONFORMANCE_SCENE: &str = "../shared/conformance/scenes_example3";

#[derive(Args)]
pub struct BenchArgs {
    /// The scenes_example3 directory [default: ../shared/conformance/scenes_example3 if present]
    #[arg(long, value_name = "DIR")]
    scene: Option<PathBuf>,
    /// Frames per measurement (the fastest counts)
    #[arg(long, value_name = "N", default_value_t = 5)]
    frames: u32,
    /// Threads for the "all cores" column [default: the machine's]
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Also time the 81,920-triangle mesh with `--accel cull` and `--accel off` (minutes)
    #[arg(long)]
    all_modes: bool,
    /// Time the UV sphere and the mesh in this mode only: auto, cull or off
    #[arg(long, value_name = "MODE")]
    accel: Option<AccelMode>,
}

pub fn run(args: BenchArgs) -> anyhow::Result<Outcome> {
    let conformance_scene = args.scene.or_else(|| {
        let default = PathBuf::from(CONFORMANCE_SCENE);
        if default.is_dir() {
            Some(default)
        } else {
            eprintln!("note: {CONFORMANCE_SCENE} not found: its rows are left out (--scene DIR)");
            None
        }
    });
    if args.frames == 0 {
        anyhow::bail!("--frames must be at least 1");
    }
    let options = BenchOptions {
        conformance_scene,
        frames: args.frames,
        threads: args.threads,
        mesh_all_modes: args.all_modes,
        accel: args.accel,
        ..BenchOptions::default()
    };
    print!("{}", run_bench(&options)?);
    Ok(Outcome::Success)
}
