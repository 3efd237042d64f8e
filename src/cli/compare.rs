//! `theia compare A B [-o diff.png] [--cores N]`

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::Outcome;
use theia::io::image::{
    compare, marked_difference_image, png_bytes, read_image, write_atomically, Comparison, Rgb8,
};
use theia::io::scene::Partition;
use theia::tools::inspect::differences;

/// Differing pixels listed on stdout; the rest are only counted.
const LISTED: usize = 20;

#[derive(Args)]
pub struct CompareArgs {
    /// First image (PNG, or plain-text PPM such as a test bench Reference.ppm)
    a: PathBuf,
    /// Second image
    b: PathBuf,
    /// Write a difference image here: A dimmed, every differing pixel magenta
    #[arg(short, long, value_name = "DIFF.png")]
    output: Option<PathBuf>,
    /// The core count one image was rendered with: listed pixels that start one of its N
    /// row bands are marked (a core's first pixel is where core counts may differ)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    cores: Option<u32>,
}

pub fn run(args: CompareArgs) -> anyhow::Result<Outcome> {
    let a = read_image(&args.a)?;
    let b = read_image(&args.b)?;
    let result = compare(&a, &b).map_err(|message| {
        anyhow::anyhow!("{} and {}: {message}", args.a.display(), args.b.display())
    })?;
    if let Some(path) = &args.output {
        write_atomically(path, &png_bytes(&marked_difference_image(&a, &b)))
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
    // `theia compare … | head` is normal use: a closed pipe ends the listing quietly.
    match list_differences(&args, &a, &b, &result) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        other => other?,
    }
    Ok(Outcome::Different)
}

/// The first [`LISTED`] differing pixels, one a line, with both colours.
fn list_differences(
    args: &CompareArgs,
    a: &Rgb8,
    b: &Rgb8,
    result: &Comparison,
) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let bands = args
        .cores
        .map(|n| Partition::bands(result.width, result.height, n))
        .unwrap_or_default();
    for difference in differences(result, &bands, &bands).iter().take(LISTED) {
        let (x, y) = (difference.x, difference.y);
        let pa = a.pixel(x, y);
        let pb = b.pixel(x, y);
        let mut line = format!(
            "  ({x}, {y}): {} {} {} vs {} {} {}",
            pa[0], pa[1], pa[2], pb[0], pb[1], pb[2]
        );
        if let Some(location) = difference.a.filter(|_| difference.first_of_partition()) {
            line += &format!(
                ", first pixel of core {} of {}",
                location.core, location.cores
            );
        }
        writeln!(out, "{line}")?;
    }
    if result.differing_pixels > LISTED {
        writeln!(out, "  … and {} more", result.differing_pixels - LISTED)?;
    }
    out.flush()
}
