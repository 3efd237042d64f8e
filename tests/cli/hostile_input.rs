//! Inputs crafted to exhaust memory or time, or to hang a reader: each ends with a clear
//! error or a normal result, quickly. (The viewer's hostile clients are in hostile.rs.)

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{text, theia};
use theia::io::scene::obj::{load_obj, ObjOptions};

/// Runs theia in `dir`, expecting exit status 2 within `seconds`; returns stderr.
fn fails_within(dir: &Path, seconds: u64, args: &[&str]) -> String {
    let start = Instant::now();
    let output = theia(dir, args);
    let stderr = text(&output.stderr);
    assert_eq!(
        output.status.code(),
        Some(2),
        "theia {}: {stderr}",
        args.join(" ")
    );
    assert!(
        start.elapsed() < Duration::from_secs(seconds),
        "theia {} took {:?}",
        args.join(" "),
        start.elapsed()
    );
    stderr
}

fn small() -> ObjOptions {
    ObjOptions {
        width: 16,
        height: 16,
        ..ObjOptions::default()
    }
}

const TRIANGLE: &str = "v 0 0 0\nv 1 0 0\nv 1 1 0\nvt 0 0\nvt 1 0\nvt 1 1\n";

fn mkfifo(path: &Path) {
    let name = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

/// A 100 KB OBJ naming one MTL 10,000 times, spelled three ways: the MTL is read once
/// (reading it each time and appending its materials took 3.66 GB).
#[test]
fn a_library_named_ten_thousand_times_is_read_once() {
    let dir = tempfile::tempdir().unwrap();
    let mtl: String = (0..1000)
        .map(|i| format!("newmtl m{i}\nKd 0.5 0.25 1\n"))
        .collect();
    std::fs::write(dir.path().join("m.mtl"), mtl).unwrap();
    let names = ["m.mtl", "./m.mtl", "././m.mtl"];
    let mut obj: String = (0..10_000)
        .map(|i| format!("mtllib {}\n", names[i % 3]))
        .collect();
    obj += TRIANGLE;
    obj += "usemtl m999\nf 1/1 2/2 3/3\n";
    std::fs::write(dir.path().join("a.obj"), obj).unwrap();
    let start = Instant::now();
    let loaded = load_obj(&dir.path().join("a.obj"), &small()).unwrap();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(loaded.notes, Vec::<String>::new());
}

/// A library named again after another one overrides its definitions, as when each
/// mention was read again.
#[test]
fn the_last_mention_of_a_library_wins() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.mtl"), "newmtl m\nKd 1 0 0\n").unwrap();
    std::fs::write(dir.path().join("b.mtl"), "newmtl m\nKd 0 0 1\n").unwrap();
    let scene = |libraries: &str| {
        let obj = format!("{libraries}{TRIANGLE}usemtl m\nf 1 2 3\n");
        std::fs::write(dir.path().join("s.obj"), obj).unwrap();
        load_obj(&dir.path().join("s.obj"), &small())
            .unwrap()
            .scene
            .texture
    };
    let (a, b) = (scene("mtllib a.mtl\n"), scene("mtllib b.mtl\n"));
    assert_ne!(a, b);
    assert_eq!(scene("mtllib a.mtl b.mtl a.mtl\n"), a);
    assert_eq!(scene("mtllib a.mtl\nmtllib b.mtl ./a.mtl ./b.mtl\n"), b);
}

/// One texture named eight ways is decoded once, and the atlas holds one tile for it.
#[test]
fn a_texture_named_eight_ways_is_one_texture() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    let image = image::RgbImage::from_fn(8, 8, |x, y| image::Rgb([x as u8 * 30, y as u8 * 30, 9]));
    image.save(dir.path().join("x.png")).unwrap();
    let names = [
        "x.png",
        "./x.png",
        "././x.png",
        "sub/../x.png",
        "./sub/../x.png",
        "sub/.././x.png",
        "./././x.png",
        "sub/../sub/../x.png",
    ];
    let mtl: String = (names.iter().enumerate())
        .map(|(i, name)| format!("newmtl t{i}\nmap_Kd {name}\n"))
        .collect();
    std::fs::write(dir.path().join("t.mtl"), mtl).unwrap();
    let faces = |count: usize| -> String {
        (0..count)
            .map(|i| format!("usemtl t{i}\nf 1/1 2/2 3/3\n"))
            .collect()
    };
    let load = |faces: String| {
        std::fs::write(
            dir.path().join("t.obj"),
            format!("mtllib t.mtl\n{TRIANGLE}{faces}"),
        )
        .unwrap();
        load_obj(&dir.path().join("t.obj"), &small()).unwrap()
    };
    let eight = load(faces(8));
    let one = load(faces(1));
    assert_eq!(eight.scene.texture, one.scene.texture);
    assert_eq!(eight.notes, one.notes);
}

/// Devices, FIFOs and directories named as a texture or library are refused by kind,
/// at once (/dev/zero read until memory ran out; a FIFO blocked for ever).
#[test]
fn device_fifo_and_directory_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    mkfifo(&path.join("fifo.mtl"));
    mkfifo(&path.join("fifo.png"));
    std::fs::create_dir(path.join("dir.png")).unwrap();
    std::fs::write(
        path.join("t.mtl"),
        "newmtl zero\nmap_Kd /dev/zero\nnewmtl fifo\nmap_Kd fifo.png\nnewmtl dir\nmap_Kd dir.png\n",
    )
    .unwrap();
    let error = |obj: &str| {
        let obj = format!("{obj}{TRIANGLE}f 1/1 2/2 3/3\n");
        std::fs::write(path.join("s.obj"), obj).unwrap();
        let start = Instant::now();
        let error = load_obj(&path.join("s.obj"), &small())
            .expect_err("refused")
            .to_string();
        assert!(start.elapsed() < Duration::from_secs(2));
        error.replace(&path.display().to_string(), "DIR")
    };
    assert_eq!(
        error("mtllib /dev/zero\n"),
        "DIR/s.obj:1: material library /dev/zero: not a regular file (a character device)"
    );
    assert_eq!(
        error("\nmtllib fifo.mtl\n"),
        "DIR/s.obj:2: material library DIR/fifo.mtl: not a regular file (a FIFO)"
    );
    for (material, file, kind) in [
        ("zero", "/dev/zero", "a character device"),
        ("fifo", "DIR/fifo.png", "a FIFO"),
        ("dir", "DIR/dir.png", "a directory"),
    ] {
        assert_eq!(
            error(&format!("mtllib t.mtl\nusemtl {material}\n")),
            format!(
                "DIR/s.obj: texture {file} of material `{material}`: not a regular file ({kind})"
            ),
        );
    }
    // The same through the command line: an error, not a warning and exit status 0.
    let stderr = fails_within(path, 5, &["render", "s.obj", "-q", "-o", "o.png"]);
    assert!(
        stderr.contains("not a regular file (a directory)"),
        "{stderr}"
    );
    assert!(!path.join("o.png").exists());
}

/// A texture whose header claims more texels than the loader decodes is refused before
/// any pixel is decoded, naming the budget.
#[test]
fn textures_beyond_the_budget_are_refused_from_their_headers() {
    let dir = tempfile::tempdir().unwrap();
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    let ihdr = [
        &9000u32.to_be_bytes()[..],
        &9000u32.to_be_bytes(),
        &[8, 2, 0, 0, 0],
    ]
    .concat();
    // A header for 9000 x 9000 and a few bytes of pixels: only the header is read.
    for (kind, data) in [
        (&b"IHDR"[..], &ihdr[..]),
        (b"IDAT", b"\x78\x9c\x00"),
        (b"IEND", b""),
    ] {
        let chunk = [kind, data].concat();
        png.extend((data.len() as u32).to_be_bytes());
        png.extend(&chunk);
        png.extend(crc32(&chunk).to_be_bytes());
    }
    std::fs::write(dir.path().join("huge.png"), png).unwrap();
    std::fs::write(dir.path().join("t.mtl"), "newmtl h\nmap_Kd huge.png\n").unwrap();
    std::fs::write(
        dir.path().join("s.obj"),
        format!("mtllib t.mtl\n{TRIANGLE}usemtl h\nf 1/1 2/2 3/3\n"),
    )
    .unwrap();
    let error = load_obj(&dir.path().join("s.obj"), &small())
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.ends_with("huge.png (9000x9000) brings the scene's textures to 81000000 texels, more than the 67108864 the loader decodes: scale the textures down"),
        "{error}"
    );
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in bytes {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// 200,000 distinct material names load in well under the 72 s a linear lookup took.
#[test]
fn two_hundred_thousand_materials_load_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    const N: usize = 200_000;
    let mtl: String = (0..N)
        .map(|i| format!("newmtl m{i}\nKd 0.5 0.5 0.5\n"))
        .collect();
    std::fs::write(dir.path().join("m.mtl"), mtl).unwrap();
    let mut obj = String::from("mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\n");
    for i in 0..N {
        obj += &format!("usemtl m{i}\nf 1 2 3\n");
    }
    std::fs::write(dir.path().join("m.obj"), obj).unwrap();
    let start = Instant::now();
    // Whole triangles: 200,000 copies of one spanning the model would be cut into pieces.
    let options = ObjOptions {
        split_large: false,
        ..small()
    };
    let loaded = load_obj(&dir.path().join("m.obj"), &options).unwrap();
    assert_eq!(loaded.scene.triangles.len(), N);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "{:?}",
        start.elapsed()
    );
}

/// One Latin-1 byte: an error naming its line and column, not a bare "not UTF-8".
#[test]
fn a_byte_that_is_not_utf8_is_reported_with_its_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("l.obj"),
        b"v 0 0 0\nv 1 0 0\nv 1 1 0\no caf\xe9\nf 1 2 3\n",
    )
    .unwrap();
    let error = load_obj(&dir.path().join("l.obj"), &small())
        .err()
        .unwrap()
        .to_string();
    assert!(
        error.ends_with("l.obj:4:6: byte 0xE9 is not UTF-8 text (a Latin-1 or other 8-bit name?): save the file as UTF-8"),
        "{error}"
    );
}

/// R500 `#include` fan-out: 16 files each including the next 16 times. Depth alone was
/// capped, so this ran past 60 s at 735 MB and rising; now the count is capped too.
#[test]
fn r500_includes_are_capped_in_count() {
    let dir = tempfile::tempdir().unwrap();
    for i in 0..16 {
        let body: String = if i < 15 {
            (0..16)
                .map(|_| format!("#include \"f{}.fs.asm\"\n", i + 1))
                .collect()
        } else {
            "-- nothing\n".into()
        };
        std::fs::write(dir.path().join(format!("f{i}.fs.asm")), body).unwrap();
    }
    let stderr = fails_within(
        dir.path(),
        5,
        &["asm", "--isa", "r500", "f0.fs.asm", "-o", "x.fs.bin"],
    );
    assert!(
        stderr.contains("error: more than 256 #includes in all"),
        "{stderr}"
    );
    assert!(!dir.path().join("x.fs.bin").exists());
}

/// FIFOs and devices given to the assembler, the disassembler or an `#include` are
/// refused by kind at once (each hung for ever).
#[test]
fn fifos_and_devices_are_refused_by_every_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    mkfifo(&path.join("fifo.bin"));
    mkfifo(&path.join("Instructions.mem"));
    std::fs::write(path.join("inc.fs.asm"), "#include \"fifo.bin\"\n").unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["disasm", "fifo.bin", "--isa", "r500"],
            "fifo.bin: not a regular file (a FIFO)",
        ),
        (
            &["disasm", "Instructions.mem"],
            "Instructions.mem: not a regular file (a FIFO)",
        ),
        (
            &["disasm", "/dev/zero"],
            "/dev/zero: not a regular file (a character device)",
        ),
        (
            &["asm", "--isa", "r500", "inc.fs.asm"],
            "inc.fs.asm:1:1: error: cannot read fifo.bin: not a regular file (a FIFO)",
        ),
        (
            &["asm", "fifo.bin"],
            "fifo.bin: not a regular file (a FIFO)",
        ),
    ];
    for (args, expected) in cases {
        let stderr = fails_within(path, 5, args);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// A 1 KB Params.mem asking for 16383x16383 is refused with the cap (it rendered for
/// minutes and ran out of memory).
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
#[test]
fn a_mem_scene_larger_than_the_cap_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let scene = common::conformance("scenes_example3");
    for name in ["Vertex.mem", "Textures.mem", "Params.mem"] {
        std::fs::copy(scene.join(name), dir.path().join(name)).unwrap();
    }
    let params = std::fs::read_to_string(dir.path().join("Params.mem")).unwrap();
    let mut lines: Vec<&str> = params.lines().take(7).collect();
    lines[5] = "7ffe0000 7ffe0000 0";
    lines.extend(["0 0 0", "7ffe0000 7ffe0000 0"]);
    std::fs::write(dir.path().join("Params.mem"), lines.join("\n") + "\n").unwrap();
    let stderr = fails_within(dir.path(), 5, &["render", ".", "-q", "-o", "o.png"]);
    assert_eq!(
        stderr,
        "error: ./Params.mem:6: resolution 16383x16383: at most 4096x4096, as for OBJ scenes\n"
    );
}

/// Clean errors before any work: more cores than rows, an output name the renderer cannot
/// write, a frame pattern too wide, a model out of floating-point range.
#[test]
fn bad_options_are_refused_before_rendering() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let stderr = fails_within(
        path,
        5,
        &[
            "render", "--cores", "1000000", "--band", "300/400", "-o", "b.png",
        ],
    );
    assert_eq!(
        stderr,
        "error: --cores 1000000: at most 256 for this frame (each core renders a band of whole rows, and the frame has 256)\n"
    );
    // The cycle model's masks hold 32 cores: more are refused before the render, not
    // timed with cores folded onto others.
    let stderr = fails_within(
        path,
        5,
        &[
            "render", "--height", "40", "--cores", "33", "--cycles", "-o", "c.png",
        ],
    );
    assert_eq!(
        stderr,
        "error: --cycles times at most 32 cores (the texture memory's arbiters keep a bit a core); this frame has 33\n"
    );
    // Reported at once, not after a 2048x2048 render.
    let stderr = fails_within(
        path,
        2,
        &[
            "render", "--width", "2048", "--height", "2048", "-o", "o.jpg",
        ],
    );
    assert!(stderr.contains("o.jpg: unknown output format"), "{stderr}");
    std::fs::write(path.join("c.obj"), format!("{TRIANGLE}f 1 2 3\n")).unwrap();
    let stderr = fails_within(
        path,
        5,
        &[
            "render",
            "c.obj",
            "--orbit",
            "360",
            "--frames",
            "2",
            "-o",
            "o-%065536d.png",
        ],
    );
    assert!(
        stderr.contains("a frame number 65536 digits wide; at most 10"),
        "{stderr}"
    );
    for (scale, expected) in [
        ("1e300", "a vertex coordinate is 1e300: too large"),
        ("1e-300", "the model is 1e-300 across: too small"),
    ] {
        let obj = format!("v 0 0 0\nv {scale} 0 0\nv {scale} {scale} 0\nf 1 2 3\n");
        std::fs::write(path.join("s.obj"), obj).unwrap();
        let stderr = fails_within(path, 5, &["render", "s.obj", "-o", "s.png"]);
        assert!(stderr.contains(expected), "{scale}: {stderr}");
    }
    let names: Vec<_> = std::fs::read_dir(path)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 2, "no output, no temporary file: {names:?}");
}
