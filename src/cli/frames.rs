//! `--orbit DEGREES --frames F [--frame K | --frame A..B]`: a turntable animation, the
//! camera turned about the vertical axis through the look-at point, frame k at
//! DEGREES·k/F, each frame written to `-o`'s name with its number (`out/spin-%04d.png`).

use std::path::{Path, PathBuf};

use anyhow::bail;
use clap::Args;

#[derive(Args, Clone, Debug, Default)]
pub struct AnimationArgs {
    /// Turntable: turn the camera (automatic or --camera) this many degrees about the
    /// vertical axis through the look-at point over --frames frames (OBJ scenes)
    #[arg(
        long,
        value_name = "DEGREES",
        requires = "frames",
        allow_hyphen_values = true
    )]
    pub orbit: Option<f64>,
    /// Frames of the --orbit animation; frame k is turned DEGREES·k/F
    #[arg(long, value_name = "F", requires = "orbit",
          value_parser = clap::value_parser!(u32).range(1..))]
    pub frames: Option<u32>,
    /// Render only frame K, or frames A..B (both included) [default: all of --frames]
    #[arg(long, value_name = "K|A..B", requires = "frames")]
    pub frame: Option<FrameRange>,
}

/// Frames `first..=last` of an animation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameRange {
    pub first: u32,
    pub last: u32,
}

impl std::str::FromStr for FrameRange {
    type Err = String;

    fn from_str(text: &str) -> Result<FrameRange, String> {
        let expected = || format!("expected a frame K or a range A..B, found `{text}`");
        let number = |t: &str| t.trim().parse::<u32>().map_err(|_| expected());
        let range = match text.split_once("..") {
            Some((first, last)) => FrameRange {
                first: number(first)?,
                last: number(last)?,
            },
            None => {
                let frame = number(text)?;
                FrameRange {
                    first: frame,
                    last: frame,
                }
            }
        };
        if range.first > range.last {
            return Err(format!("frame range `{text}` is empty (A..B needs A <= B)"));
        }
        Ok(range)
    }
}

/// One frame to render: its number in the animation (none for a still), the camera's
/// turn, and where the image goes.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameJob {
    pub index: Option<u32>,
    pub degrees: f64,
    pub output: PathBuf,
}

impl AnimationArgs {
    /// The frames to render: one still to `output` without --orbit, else the selected
    /// frames, named by the `%d` / `%0Nd` in `output` (a single frame may have a plain
    /// name). `default_output` is the still's default name (`out/<scene>.png`).
    pub fn jobs(
        &self,
        output: Option<&Path>,
        default_output: &Path,
    ) -> anyhow::Result<Vec<FrameJob>> {
        let (Some(degrees), Some(frames)) = (self.orbit, self.frames) else {
            return Ok(vec![FrameJob {
                index: None,
                degrees: 0.0,
                output: output.unwrap_or(default_output).to_path_buf(),
            }]);
        };
        if !degrees.is_finite() {
            bail!("--orbit {degrees}: expected a number of degrees");
        }
        let range = self.frame.unwrap_or(FrameRange {
            first: 0,
            last: frames - 1,
        });
        if range.last >= frames {
            bail!(
                "--frame {}: the animation has frames 0 to {} (--frames {frames})",
                range.last,
                frames - 1
            );
        }
        let pattern = match output {
            Some(path) => path.to_path_buf(),
            None => numbered(default_output),
        };
        let numbered_name = has_frame_number(&pattern);
        if let Some((_, _, width)) = frame_number_of(&pattern).filter(|n| n.2 > MAX_FRAME_DIGITS) {
            bail!(
                "{}: a frame number {width} digits wide; at most {MAX_FRAME_DIGITS}, such as out/spin-%04d.png",
                pattern.display()
            );
        }
        if !numbered_name && range.first != range.last {
            bail!(
                "{}: {} frames need a file name with a frame number, such as out/spin-%04d.png",
                pattern.display(),
                range.last - range.first + 1
            );
        }
        Ok((range.first..=range.last)
            .map(|index| FrameJob {
                index: Some(index),
                degrees: degrees * f64::from(index) / f64::from(frames),
                output: if numbered_name {
                    frame_path(&pattern, index)
                } else {
                    pattern.clone()
                },
            })
            .collect())
    }
}

/// `out/x.png` -> `out/x-%04d.png`.
fn numbered(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let extension = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    path.with_file_name(format!("{stem}-%04d{extension}"))
}

/// The widest `%0Nd` a pattern may ask for (u32 frame numbers have at most 10 digits).
const MAX_FRAME_DIGITS: usize = 10;

/// [`frame_number_at`] in a path's file name.
fn frame_number_of(path: &Path) -> Option<(usize, usize, usize)> {
    frame_number_at(&path.file_name()?.to_string_lossy())
}

/// The `%d` or `%0Nd` in a file name, as (start, end, width); a width too large to parse
/// is `usize::MAX`.
fn frame_number_at(name: &str) -> Option<(usize, usize, usize)> {
    let start = name.find('%')?;
    let rest = &name[start + 1..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if rest.as_bytes().get(digits) != Some(&b'd') {
        return None;
    }
    let width = match digits {
        0 => 0,
        _ => rest[..digits].parse().unwrap_or(usize::MAX),
    };
    Some((start, start + 1 + digits + 1, width))
}

/// Whether the file name holds a frame number pattern (`%d`, `%04d`).
pub fn has_frame_number(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| frame_number_at(&name.to_string_lossy()).is_some())
}

/// The file name with its frame number pattern replaced by `index`.
pub fn frame_path(pattern: &Path, index: u32) -> PathBuf {
    let name = pattern
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    match frame_number_at(&name) {
        Some((start, end, width)) => {
            let width = width.min(MAX_FRAME_DIGITS);
            pattern.with_file_name(format!("{}{index:0width$}{}", &name[..start], &name[end..]))
        }
        None => pattern.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_ranges_parse_inclusive() {
        assert_eq!("3".parse(), Ok(FrameRange { first: 3, last: 3 }));
        assert_eq!("2..5".parse(), Ok(FrameRange { first: 2, last: 5 }));
        assert!("5..2".parse::<FrameRange>().is_err());
        assert!("x".parse::<FrameRange>().is_err());
    }

    #[test]
    fn frame_numbers_fill_the_pattern() {
        let path = Path::new("out/spin-%04d.png");
        assert!(has_frame_number(path));
        assert_eq!(frame_path(path, 7), PathBuf::from("out/spin-0007.png"));
        assert_eq!(
            frame_path(Path::new("f%d.png"), 12),
            PathBuf::from("f12.png")
        );
        assert!(!has_frame_number(Path::new("out%/spin.png")));
        assert_eq!(
            numbered(Path::new("out/a.png")),
            PathBuf::from("out/a-%04d.png")
        );
    }

    #[test]
    fn jobs_turn_the_camera_by_the_frame_number() {
        let args = AnimationArgs {
            orbit: Some(360.0),
            frames: Some(8),
            frame: Some(FrameRange { first: 2, last: 3 }),
        };
        let jobs = args.jobs(None, Path::new("out/x.png")).unwrap();
        assert_eq!(
            jobs,
            vec![
                FrameJob {
                    index: Some(2),
                    degrees: 90.0,
                    output: "out/x-0002.png".into()
                },
                FrameJob {
                    index: Some(3),
                    degrees: 135.0,
                    output: "out/x-0003.png".into()
                },
            ]
        );
        let error = args
            .jobs(Some(Path::new("a.png")), Path::new("out/x.png"))
            .unwrap_err();
        assert!(error
            .to_string()
            .contains("need a file name with a frame number"));
        let one = AnimationArgs {
            frame: Some(FrameRange { first: 5, last: 5 }),
            ..args.clone()
        };
        assert_eq!(
            one.jobs(Some(Path::new("a.png")), Path::new("x")).unwrap()[0].output,
            PathBuf::from("a.png")
        );
        for pattern in [
            "o-%065536d.png",
            "o-%099999999999999999999999d.png",
            "o-%011d.png",
        ] {
            let error = args
                .jobs(Some(Path::new(pattern)), Path::new("x"))
                .unwrap_err();
            assert!(
                error.to_string().contains("at most 10"),
                "{pattern}: {error}"
            );
        }
        assert_eq!(
            args.jobs(Some(Path::new("o-%010d.png")), Path::new("x"))
                .unwrap()[0]
                .output,
            PathBuf::from("o-0000000002.png")
        );
        let beyond = AnimationArgs {
            frame: Some(FrameRange { first: 8, last: 8 }),
            ..args
        };
        assert!(beyond.jobs(None, Path::new("x.png")).is_err());
    }
}
