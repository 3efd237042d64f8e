//! `theia compare A B [-o diff.png]`

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::Outcome;
use theia::image::{compare, difference_image, png_bytes, read_image, write_atomically};

#[derive(Args)]
pub struct CompareArgs {
    /// First image (PNG, or plain-text PPM such as a test bench Reference.ppm)
    a: PathBuf,
    /// Second image
    b: PathBuf,
    /// Write a difference image here (black where equal)
    #[arg(short, long, value_name = "DIFF.png")]
    output: Option<PathBuf>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<Outcome> {
    let a = read_image(&args.a)?;
    let b = read_image(&args.b)?;
    let result = compare(&a, &b).map_err(|message| {
        anyhow::anyhow!("{} and {}: {message}", args.a.display(), args.b.display())
    })?;
    if let Some(path) = &args.output {
        write_atomically(path, &png_bytes(&difference_image(&a, &b)))
            .with_context(|| "writing the difference image")?;
    }
    if result.identical() {
        println!("identical ({}x{})", result.width, result.height);
        return Ok(Outcome::Success);
    }
    println!(
        "{} of {} pixels differ, largest channel difference {}",
        result.differing_pixels,
        result.width as usize * result.height as usize,
        result.max_channel_difference
    );
    Ok(Outcome::Different)
}
