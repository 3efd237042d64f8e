//! `theia merge PARTS... -o OUT.png|ppm`: the bands of a frame (`render --band K/N`) into
//! the image one process renders; `theia merge --animate FRAMES... -o spin.png|gif`:
//! frames into an animation.

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;

use super::render::create_parent;
use super::Outcome;
use theia::image::animation::{apng_bytes, gif_bytes};
use theia::image::partial::{is_partial, merge, read_parts};
use theia::image::{decode_image, write_atomically, write_merged, Rgb8};

#[derive(Args)]
pub struct MergeArgs {
    /// Partial images of one frame, every band once (any order); with --animate, frames
    /// in playing order
    #[arg(required = true, value_name = "PARTS")]
    inputs: Vec<PathBuf>,
    /// The image: .png, or .ppm for the test bench's format; with --animate .png (APNG)
    /// or .gif
    #[arg(short, long, value_name = "FILE")]
    output: PathBuf,
    /// Assemble whole frames into an animation instead of merging bands
    #[arg(long)]
    animate: bool,
    /// Frames per second of the animation
    #[arg(long, default_value_t = 24, requires = "animate",
          value_parser = clap::value_parser!(u16).range(1..))]
    fps: u16,
    /// No summary on stdout
    #[arg(short, long)]
    quiet: bool,
}

pub fn run(args: MergeArgs) -> anyhow::Result<Outcome> {
    if args.animate {
        return animate(&args);
    }
    let parts = read_parts(&args.inputs).map_err(anyhow::Error::msg)?;
    let merged = merge(&parts).map_err(anyhow::Error::msg)?;
    create_parent(&args.output)?;
    write_merged(&merged, &args.output)?;
    if !args.quiet {
        println!(
            "{}: {}x{} pixels from {} bands",
            args.output.display(),
            merged.image.width,
            merged.image.height,
            parts.len()
        );
    }
    Ok(Outcome::Success)
}

/// The animation's format, by the output's extension.
enum Animation {
    Apng,
    Gif,
}

fn animate(args: &MergeArgs) -> anyhow::Result<Outcome> {
    let extension = args
        .output
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    let format = match extension.as_deref() {
        Some("png") | Some("apng") => Animation::Apng,
        Some("gif") => Animation::Gif,
        _ => bail!(
            "{}: unknown animation format: use a .png (APNG) or .gif file name",
            args.output.display()
        ),
    };
    let frames = args
        .inputs
        .iter()
        .map(|path| read_frame(path))
        .collect::<anyhow::Result<Vec<Rgb8>>>()?;
    if let Some((path, frame)) = args
        .inputs
        .iter()
        .zip(&frames)
        .find(|(_, f)| (f.width, f.height) != (frames[0].width, frames[0].height))
    {
        bail!(
            "{}: {}x{} pixels, but {} is {}x{}: frames of an animation share one size",
            path.display(),
            frame.width,
            frame.height,
            args.inputs[0].display(),
            frames[0].width,
            frames[0].height
        );
    }
    let bytes = match format {
        Animation::Apng => apng_bytes(&frames, args.fps),
        Animation::Gif => gif_bytes(&frames, args.fps),
    }
    .map_err(|e| anyhow::anyhow!("{}: {e}", args.output.display()))?;
    create_parent(&args.output)?;
    write_atomically(&args.output, &bytes)?;
    if !args.quiet {
        println!(
            "{}: {} frames of {}x{} pixels at {} fps",
            args.output.display(),
            frames.len(),
            frames[0].width,
            frames[0].height,
            args.fps
        );
    }
    Ok(Outcome::Success)
}

/// A whole frame; a band of one is refused (its bands are merged first).
fn read_frame(path: &Path) -> anyhow::Result<Rgb8> {
    let bytes = std::fs::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if is_partial(&bytes) {
        bail!(
            "{}: a band of a frame, not a frame: merge the frame's bands first (theia merge PARTS... -o FRAME.png)",
            path.display()
        );
    }
    decode_image(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}
