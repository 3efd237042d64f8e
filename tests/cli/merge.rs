//! `theia render --band K/N` and `theia merge`: bands merge into exactly the bytes of the
//! one-process render; merge refuses anything that is not every band of one render once;
//! `--orbit` frames and `merge --animate`.

use crate::common;

use std::path::Path;

use common::{text, theia, theia_ok as ok};
use theia::io::image::partial::PartialImage;

/// Runs theia in `dir`, expecting exit status 2; returns stderr.
fn fails(dir: &Path, args: &[&str]) -> String {
    let output = theia(dir, args);
    assert_eq!(
        output.status.code(),
        Some(2),
        "theia {}: {}",
        args.join(" "),
        text(&output.stderr)
    );
    text(&output.stderr)
}

fn read(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap()
}

/// Renders the built-in scene with `options` in one process (full.png, full.ppm) and as
/// `bands` bands (band0.png ...).
fn render_split(dir: &Path, bands: u32, options: &[&str]) {
    for output in ["full.png", "full.ppm"] {
        let mut args = vec!["render", "-q", "-o", output];
        args.extend(options);
        ok(dir, &args);
    }
    for k in 0..bands {
        let (band, output) = (format!("{k}/{bands}"), format!("band{k}.png"));
        let mut args = vec!["render", "-q", "--band", &band, "-o", &output];
        args.extend(options);
        ok(dir, &args);
    }
}

/// Merges band0.png .. band{count - 1}.png into `output`.
fn merge_bands(dir: &Path, count: u32, output: &str) {
    let parts: Vec<String> = (0..count).map(|k| format!("band{k}.png")).collect();
    let mut args = vec!["merge", "-q", "-o", output];
    args.extend(parts.iter().map(String::as_str));
    ok(dir, &args);
}

#[test]
fn supersampled_bands_merge_into_the_bytes_of_the_one_process_render() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // Each band's samples are rendered and filtered on their own (in passes, within the
    // band); the faithful ROM's first pixels show where each core's samples start.
    let options = [
        "--width", "48", "--height", "40", "--cores", "5", "--rom", "faithful", "--ssaa", "3",
    ];
    render_split(dir, 2, &options);
    merge_bands(dir, 2, "m.png");
    assert_eq!(read(dir, "m.png"), read(dir, "full.png"));
    merge_bands(dir, 2, "m.ppm");
    assert_eq!(read(dir, "m.ppm"), read(dir, "full.ppm"));
}

#[test]
fn bands_merge_into_the_bytes_of_the_one_process_render() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // 7 cores in 3 bands: uneven groups (3, 2, 2), and the faithful ROM's black first pixel
    // of every core.
    let size = ["--width", "96", "--height", "80"];
    render_split(
        dir,
        3,
        &[&["--cores", "7", "--rom", "faithful"][..], &size].concat(),
    );
    // Any order.
    let stdout = ok(
        dir,
        &[
            "merge",
            "band2.png",
            "band0.png",
            "band1.png",
            "-o",
            "m.png",
        ],
    );
    assert_eq!(stdout, "m.png: 96x80 pixels from 3 bands\n");
    assert_eq!(read(dir, "m.png"), read(dir, "full.png"));
    merge_bands(dir, 3, "m.ppm");
    assert_eq!(read(dir, "m.ppm"), read(dir, "full.ppm"));
}

#[test]
fn bands_with_the_acceleration_structure_merge_identically_whatever_their_first_row() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // 1,280 triangles: the structure is built (512 or more), per band for its own rows;
    // 5 cores of 9 rows in 3 bands start at rows 0, 18 and 36, not on the 4-row tiles of the
    // whole frame.
    let mesh = theia::io::scene::generate::displaced_icosphere_obj(3, 0.15);
    std::fs::write(dir.join("mesh.obj"), mesh).unwrap();
    render_split(
        dir,
        3,
        &[
            "mesh.obj", "--cores", "5", "--width", "70", "--height", "45",
        ],
    );
    let stdout = ok(
        dir,
        &[
            "render", "mesh.obj", "--cores", "5", "--width", "70", "--height", "45", "--band",
            "1/3", "-o", "b.png",
        ],
    );
    assert!(
        stdout.contains(
            "rows 18 to 35, 1280 triangles, 2 cores (cores 2 to 3 of 5), instruction count not available"
        ),
        "{stdout}"
    );
    merge_bands(dir, 3, "m.png");
    assert_eq!(read(dir, "m.png"), read(dir, "full.png"));
}

#[test]
fn a_band_is_a_png_transparent_outside_its_rows_with_a_summary_of_what_it_ran() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let stdout = ok(
        dir,
        &[
            "render", "--band", "1/2", "--cores", "4", "--width", "64", "--height", "40", "-o",
            "b.png",
        ],
    );
    assert!(
        stdout.starts_with(
            "b.png: band 1/2 of 64x40 pixels, rows 20 to 39, 142 triangles, 2 cores (cores 2 to 3 of 4), "
        ),
        "{stdout}"
    );
    assert!(stdout.contains(" emulated instructions "), "{stdout}");
    let image = ::image::open(dir.join("b.png")).unwrap().to_rgba8();
    assert_eq!(image.dimensions(), (64, 40));
    assert!((0..20).all(|y| (0..64).all(|x| image.get_pixel(x, y).0 == [0; 4])));
    assert!((20..40).all(|y| (0..64).all(|x| image.get_pixel(x, y).0[3] == 255)));
    let part = PartialImage::from_png(&read(dir, "b.png")).unwrap();
    assert_eq!(part.header.partitions.len(), 4);
    assert_eq!(part.header.fingerprint.len(), 64);
}

#[test]
fn merge_refuses_missing_duplicate_foreign_and_damaged_parts_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let small = ["--width", "48", "--height", "32"];
    render_split(dir, 3, &small);
    // The same band of another render: another ROM (the built-in scene's is the fixed one).
    let mut other = vec![
        "render",
        "-q",
        "--band",
        "1/3",
        "--rom",
        "faithful",
        "-o",
        "other1.png",
    ];
    other.extend(small);
    ok(dir, &other);
    // The same frame split into another number of bands.
    let mut halves = vec!["render", "-q", "--band", "1/2", "-o", "half1.png"];
    halves.extend(small);
    ok(dir, &halves);
    let band1 = read(dir, "band1.png");
    std::fs::write(dir.join("truncated.png"), &band1[..band1.len() / 2]).unwrap();
    // One byte of the pixel data changed: the chunk's CRC no longer matches.
    let mut corrupted = band1.clone();
    let at = corrupted.len() - 40;
    corrupted[at] ^= 0x55;
    std::fs::write(dir.join("corrupted.png"), &corrupted).unwrap();
    std::fs::write(dir.join("text.png"), "not a picture").unwrap();

    let refusals: [(&[&str], &str); 8] = [
        (
            &["band0.png", "band2.png"],
            "error: band 1/3 is missing (the parts given hold 0/3 in band0.png, 2/3 in band2.png)\n",
        ),
        (
            &["band0.png", "band1.png", "band1.png", "band2.png"],
            "error: band1.png and band1.png are both band 1/3\n",
        ),
        (
            &["band0.png", "other1.png", "band2.png"],
            "error: other1.png is a band of another render than band0.png",
        ),
        (
            &["band0.png", "half1.png"],
            "error: half1.png is band 1/2 but band0.png is band 0/3: the frame is split differently\n",
        ),
        (
            &["band0.png", "truncated.png", "band2.png"],
            "error: truncated.png: ",
        ),
        (
            &["band0.png", "corrupted.png", "band2.png"],
            "error: corrupted.png: the pixels cannot be read: ",
        ),
        (
            &["band0.png", "full.png", "band2.png"],
            "error: full.png: a PNG without a band description: not made by `theia render --band`\n",
        ),
        (
            &["band0.png", "text.png", "missing.png"],
            "error: ",
        ),
    ];
    for (parts, expected) in refusals {
        let mut args = vec!["merge"];
        args.extend(parts);
        args.extend(["-o", "merged.png"]);
        let stderr = fails(dir, &args);
        assert!(stderr.starts_with(expected), "{parts:?}: {stderr}");
        assert!(!dir.join("merged.png").exists(), "{parts:?}");
    }
    // A file that cannot be read is named, whichever of two bad files is met first.
    let stderr = fails(
        dir,
        &["merge", "band0.png", "missing.png", "-o", "merged.png"],
    );
    assert_eq!(
        stderr,
        "error: missing.png: No such file or directory (os error 2)\n"
    );
    let stderr = fails(dir, &["merge", "text.png", "-o", "merged.png"]);
    assert!(
        stderr.starts_with("error: text.png: not a readable PNG: "),
        "{stderr}"
    );
    assert!(!dir.join("merged.png").exists());
}

#[test]
fn a_part_whose_pixels_stray_outside_its_band_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    ok(
        dir,
        &[
            "render", "-q", "--band", "0/2", "--width", "16", "--height", "8", "-o", "b.png",
        ],
    );
    let mut part = PartialImage::from_png(&read(dir, "b.png")).unwrap();
    // Pixel (3, 6) belongs to band 1.
    part.rgba[(6 * 16 + 3) * 4 + 3] = 255;
    let error = PartialImage::from_png(&part.to_png()).unwrap_err();
    assert_eq!(
        error,
        "pixel (3, 6) has alpha 255 where band 0/2 has nothing (transparent black)"
    );
}

#[test]
fn band_options_are_checked_before_rendering() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let stderr = fails(dir, &["render", "--band", "4/4", "-o", "b.png"]);
    assert!(
        stderr.contains("expected K/N (band K of N, 0 <= K < N), found `4/4`"),
        "{stderr}"
    );
    let stderr = fails(dir, &["render", "--band", "0/5", "-o", "b.png"]);
    assert_eq!(
        stderr,
        "error: band 0/5: the frame has only 4 partitions (emulated cores) to split into 5 bands; give --cores 5 or more\n"
    );
    let stderr = fails(dir, &["render", "--band", "0/2", "-o", "b.ppm"]);
    assert_eq!(
        stderr,
        "error: b.ppm: a band is written as a partial PNG: give a .png name\n"
    );
    assert!(std::fs::read_dir(dir).unwrap().next().is_none());
}

#[test]
fn orbit_frames_are_numbered_selectable_and_combine_with_bands() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let small = [
        "--width", "40", "--height", "32", "--orbit", "90", "--frames", "3",
    ];
    let mut all = vec!["render", "-q", "-o", "spin/f-%03d.png"];
    all.extend(small);
    ok(dir, &all);
    let frames: Vec<Vec<u8>> = (0..3)
        .map(|k| read(dir, &format!("spin/f-{k:03}.png")))
        .collect();
    assert_ne!(frames[0], frames[1]);
    // Frame 0 is the still.
    ok(
        dir,
        &[
            "render",
            "-q",
            "--width",
            "40",
            "--height",
            "32",
            "-o",
            "still.png",
        ],
    );
    assert_eq!(read(dir, "still.png"), frames[0]);
    // A range, and a single frame to a plain name.
    let mut some = vec!["render", "-q", "--frame", "1..2", "-o", "some-%d.png"];
    some.extend(small);
    ok(dir, &some);
    assert_eq!(read(dir, "some-1.png"), frames[1]);
    assert_eq!(read(dir, "some-2.png"), frames[2]);
    assert!(!dir.join("some-0.png").exists());
    // Frame 2's two bands, merged.
    for k in 0..2 {
        let (band, output) = (format!("{k}/2"), format!("f2-b{k}.png"));
        let mut args = vec![
            "render", "-q", "--frame", "2", "--band", &band, "-o", &output,
        ];
        args.extend(small);
        ok(dir, &args);
    }
    ok(
        dir,
        &["merge", "-q", "f2-b1.png", "f2-b0.png", "-o", "f2.png"],
    );
    assert_eq!(read(dir, "f2.png"), frames[2]);
    // Bands of different frames are different renders.
    let mut other = vec![
        "render",
        "-q",
        "--frame",
        "1",
        "--band",
        "1/2",
        "-o",
        "f1-b1.png",
    ];
    other.extend(small);
    ok(dir, &other);
    let stderr = fails(dir, &["merge", "f2-b0.png", "f1-b1.png", "-o", "x.png"]);
    assert!(
        stderr.starts_with("error: f1-b1.png is a band of another render than f2-b0.png"),
        "{stderr}"
    );

    let mut unnumbered = vec!["render", "-o", "spin.png"];
    unnumbered.extend(small);
    assert_eq!(
        fails(dir, &unnumbered),
        "error: spin.png: 3 frames need a file name with a frame number, such as out/spin-%04d.png\n"
    );
    let mut beyond = vec!["render", "--frame", "3", "-o", "x.png"];
    beyond.extend(small);
    assert_eq!(
        fails(dir, &beyond),
        "error: --frame 3: the animation has frames 0 to 2 (--frames 3)\n"
    );
}

#[test]
fn frames_assemble_into_apng_and_gif() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    ok(
        dir,
        &[
            "render", "-q", "--width", "24", "--height", "16", "--orbit", "360", "--frames", "4",
            "-o", "f%d.png",
        ],
    );
    let frames = ["f0.png", "f1.png", "f2.png", "f3.png"];
    let mut args = vec!["merge", "--animate"];
    args.extend(frames);
    args.extend(["-o", "spin.png"]);
    assert_eq!(
        ok(dir, &args),
        "spin.png: 4 frames of 24x16 pixels at 24 fps\n"
    );
    let bytes = read(dir, "spin.png");
    let mut reader = png::Decoder::new(std::io::Cursor::new(&bytes))
        .read_info()
        .unwrap();
    assert_eq!(reader.info().animation_control.unwrap().num_frames, 4);
    for frame in frames {
        let mut data = vec![0; reader.output_buffer_size().unwrap()];
        reader.next_frame(&mut data).unwrap();
        let expected = ::image::open(dir.join(frame)).unwrap().to_rgb8();
        assert_eq!(data, expected.into_raw(), "{frame}");
    }
    let mut gif = vec!["merge", "--animate", "--fps", "10"];
    gif.extend(frames);
    gif.extend(["-o", "spin.gif"]);
    ok(dir, &gif);
    assert!(read(dir, "spin.gif").starts_with(b"GIF89a"));

    // A band is not a frame; frames share one size.
    ok(
        dir,
        &[
            "render", "-q", "--width", "24", "--height", "16", "--band", "0/2", "-o", "b.png",
        ],
    );
    let stderr = fails(
        dir,
        &["merge", "--animate", "f0.png", "b.png", "-o", "x.png"],
    );
    assert!(
        stderr.starts_with(
            "error: b.png: a band of a frame, not a frame: merge the frame's bands first"
        ),
        "{stderr}"
    );
    ok(
        dir,
        &[
            "render",
            "-q",
            "--width",
            "20",
            "--height",
            "16",
            "-o",
            "small.png",
        ],
    );
    assert_eq!(
        fails(dir, &["merge", "--animate", "f0.png", "small.png", "-o", "x.gif"]),
        "error: small.png: 20x16 pixels, but f0.png is 24x16: frames of an animation share one size\n"
    );
    assert!(!dir.join("x.png").exists() && !dir.join("x.gif").exists());
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn an_original_scene_merges_by_its_own_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let scene = common::conformance("scenes_example3");
    let scene = scene.to_str().unwrap();
    ok(dir, &["render", "-q", scene, "-o", "full.ppm"]);
    let mut parts = Vec::new();
    for k in 0..3 {
        let (band, output) = (format!("{k}/3"), format!("b{k}.png"));
        ok(
            dir,
            &["render", "-q", scene, "--band", &band, "-o", &output],
        );
        parts.push(output);
    }
    let mut args = vec!["merge", "-q", "-o", "m.ppm"];
    args.extend(parts.iter().map(String::as_str));
    ok(dir, &args);
    assert_eq!(read(dir, "m.ppm"), read(dir, "full.ppm"));
    let stderr = fails(
        dir,
        &[
            "render", scene, "--orbit", "90", "--frames", "2", "-o", "f%d.png",
        ],
    );
    assert!(
        stderr.contains("--orbit only apply to OBJ scenes"),
        "{stderr}"
    );
}

/// A crafted part: 100,000 partition lines each covering the whole frame. Refused at the
/// second line, in milliseconds (checking each line against the others took hours).
#[test]
fn overlapping_partition_lines_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    ok(
        dir,
        &[
            "render", "-q", "--band", "0/2", "--width", "64", "--height", "64", "-o", "b.png",
        ],
    );
    let mut part = PartialImage::from_png(&read(dir, "b.png")).unwrap();
    part.header.partitions = vec![part.header.partitions[0]; 100_000];
    part.header.partitions[0] = theia::io::scene::Partition::rows(64, 0, 64);
    // to_png writes whatever header it is given; the reader must refuse it.
    let crafted = part.to_png();
    std::fs::write(dir.join("crafted.png"), &crafted).unwrap();
    let start = std::time::Instant::now();
    let error = PartialImage::from_png(&crafted).unwrap_err();
    assert_eq!(
        error,
        "partition 1 overlaps an earlier one in row 0: the partitions of a frame are disjoint"
    );
    let stderr = fails(dir, &["merge", "crafted.png", "crafted.png", "-o", "m.png"]);
    assert!(
        stderr.contains("crafted.png: partition 1 overlaps"),
        "{stderr}"
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    assert!(!dir.join("m.png").exists());
}

/// One part given sixteen times is refused from the descriptions alone: no pixel of any
/// part is decoded first (decoding all sixteen 8K parts took gigabytes).
#[test]
fn a_part_given_many_times_is_refused_before_any_is_decoded() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    ok(
        dir,
        &[
            "render", "-q", "--band", "0/2", "--width", "32", "--height", "16", "-o", "b.png",
        ],
    );
    // The pixels past the description are cut off: a part that were decoded would fail
    // with "the pixels cannot be read".
    let bytes = read(dir, "b.png");
    let idat = bytes.windows(4).position(|w| w == b"IDAT").unwrap();
    std::fs::write(dir.join("cut.png"), &bytes[..idat + 8]).unwrap();
    let parts = vec!["cut.png"; 16];
    let mut args = vec!["merge", "-o", "m.png"];
    args.extend(parts);
    let stderr = fails(dir, &args);
    assert_eq!(stderr, "error: cut.png and cut.png are both band 0/2\n");
    assert!(!dir.join("m.png").exists());
}
