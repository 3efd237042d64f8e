//! `theia merge PARTS... -o OUT.png|ppm`: the bands of a frame (`render --band K/N`) into
//! the image one process renders; `theia merge --animate FRAMES... -o spin.png|gif`:
//! frames into an animation.

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;

use super::render::create_parent;
use super::Outcome;
use theia::io::image::animation::{apng_stream, gif_stream};
use theia::io::image::partial::{is_partial, merge_files};
use theia::io::image::{decode_image, image_size, write_atomically, write_merged, Rgb8};

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
    // The output's format before any part is read.
    theia::io::image::OutputFormat::from_path(&args.output)?;
    let merged = merge_files(&args.inputs).map_err(anyhow::Error::msg)?;
    create_parent(&args.output)?;
    write_merged(&merged, &args.output)?;
    if !args.quiet {
        println!(
            "{}: {}x{} pixels from {} bands",
            args.output.display(),
            merged.image.width,
            merged.image.height,
            args.inputs.len()
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
    // Every frame's kind and size first, so a wrong one is found before any is decoded.
    let sizes = (args.inputs.iter())
        .map(|path| frame_size(path))
        .collect::<anyhow::Result<Vec<(u32, u32)>>>()?;
    let size = sizes[0];
    if let Some((path, other)) = args.inputs.iter().zip(&sizes).find(|(_, s)| **s != size) {
        bail!(
            "{}: {}x{} pixels, but {} is {}x{}: frames of an animation share one size",
            path.display(),
            other.0,
            other.1,
            args.inputs[0].display(),
            size.0,
            size.1
        );
    }
    // Then one frame at a time: memory holds one decoded frame, whatever their number.
    let frames =
        (args.inputs.iter()).map(|path| read_frame(path).map_err(|e| super::error_message(&e)));
    let bytes = match format {
        Animation::Apng => apng_stream(size, args.inputs.len(), args.fps, frames),
        Animation::Gif => gif_stream(size, args.fps, frames),
    }
    .map_err(|e| anyhow::anyhow!("{}: {e}", args.output.display()))?;
    create_parent(&args.output)?;
    write_atomically(&args.output, &bytes)?;
    if !args.quiet {
        println!(
            "{}: {} frames of {}x{} pixels at {} fps",
            args.output.display(),
            args.inputs.len(),
            size.0,
            size.1,
            args.fps
        );
    }
    Ok(Outcome::Success)
}

/// A whole frame's bytes; a band of one is refused (its bands are merged first).
fn frame_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    let bytes =
        theia::io::input::read(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    if is_partial(&bytes) {
        bail!(
            "{}: a band of a frame, not a frame: merge the frame's bands first (theia merge PARTS... -o FRAME.png)",
            path.display()
        );
    }
    Ok(bytes)
}

/// A whole frame's width and height, from its header (no pixel decoded).
fn frame_size(path: &Path) -> anyhow::Result<(u32, u32)> {
    let bytes = frame_bytes(path)?;
    image_size(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// A whole frame, decoded.
fn read_frame(path: &Path) -> anyhow::Result<Rgb8> {
    let bytes = frame_bytes(path)?;
    decode_image(&bytes).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}
