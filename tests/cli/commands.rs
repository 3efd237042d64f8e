//! The `theia` command as a user runs it: outputs, exit codes, stdout/stderr.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{text, theia, theia_fails};

#[test]
fn render_without_a_scene_writes_the_built_in_scene_to_out_default_png() {
    let dir = tempfile::tempdir().unwrap();
    let output = theia(dir.path(), &["render"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert!(
        stdout.starts_with("out/default.png: 256x256 pixels, "),
        "{stdout}"
    );
    assert!(stdout.contains(" cores, "), "{stdout}");
    // No progress bar when stderr is not a terminal.
    assert!(!text(&output.stderr).contains("pixels (ETA"));
    let image = theia::io::image::read_image(&dir.path().join("out/default.png")).unwrap();
    assert_eq!((image.width, image.height), (256, 256));
}

#[test]
fn quiet_prints_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let output = theia(dir.path(), &["render", "--quiet", "-o", "a.png"]);
    assert!(output.status.success());
    assert!(output.stdout.is_empty() && output.stderr.is_empty());
    assert!(dir.path().join("a.png").is_file());
}

#[test]
fn errors_exit_2_name_the_file_and_leave_no_output() {
    let dir = tempfile::tempdir().unwrap();
    let output = theia(dir.path(), &["render", "missing.obj", "-o", "x.png"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: missing.obj: No such file or directory (os error 2)\n"
    );
    assert!(!dir.path().join("x.png").exists());

    std::fs::write(dir.path().join("scene.txt"), "v 0 0 0\n").unwrap();
    let output = theia(dir.path(), &["render", "scene.txt"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: scene.txt: expected an .obj or .ply file or a directory holding Params.mem, Vertex.mem and Textures.mem\n"
    );

    let output = theia(dir.path(), &["render", "--cores", "0", "-o", "x.png"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(!dir.path().join("x.png").exists());
}

#[test]
fn obj_flags_are_refused_for_original_scenes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("scene")).unwrap();
    let output = theia(
        dir.path(),
        &["render", "scene", "--width", "64", "--fov", "30"],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: scene: --width, --fov only apply to OBJ scenes; an original scene takes its camera and resolution from Params.mem\n"
    );
}

#[test]
fn compare_follows_cmp_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, pixels: &str| {
        std::fs::write(dir.path().join(name), format!("P3\n2 1\n255\n{pixels}\n")).unwrap()
    };
    write("a.ppm", "0 0 0 10 20 30");
    write("b.ppm", "0 0 0 10 20 30");
    write("c.ppm", "0 0 0 10 27 30");
    let same = theia(dir.path(), &["compare", "a.ppm", "b.ppm"]);
    assert_eq!(same.status.code(), Some(0));
    assert_eq!(text(&same.stdout), "identical (2x1)\n");

    let differ = theia(dir.path(), &["compare", "a.ppm", "c.ppm", "-o", "d.png"]);
    assert_eq!(differ.status.code(), Some(1));
    assert_eq!(
        text(&differ.stdout),
        "1 of 2 pixels differ, largest channel difference 7\n  (1, 0): 10 20 30 vs 10 27 30\n"
    );
    // A dimmed to a quarter where equal, magenta where different.
    let diff = theia::io::image::read_image(&dir.path().join("d.png")).unwrap();
    assert_eq!(diff.data, vec![0, 0, 0, 255, 0, 255]);

    let missing = theia(dir.path(), &["compare", "a.ppm", "nope.png"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(text(&missing.stderr).starts_with("error: nope.png: "));
}

#[test]
fn compare_lists_twenty_pixels_and_marks_band_starts() {
    let dir = tempfile::tempdir().unwrap();
    // 2x30 images; every pixel of column 0 differs (30 pixels).
    let image = |value: u8| {
        let pixels: Vec<String> = (0..30).map(|_| format!("{value} 0 0 9 9 9")).collect();
        format!("P3\n2 30\n255\n{}\n", pixels.join("\n"))
    };
    std::fs::write(dir.path().join("a.ppm"), image(0)).unwrap();
    std::fs::write(dir.path().join("b.ppm"), image(255)).unwrap();
    let output = theia(dir.path(), &["compare", "a.ppm", "b.ppm", "--cores", "2"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines[0],
        "30 of 60 pixels differ, largest channel difference 255"
    );
    assert_eq!(
        lines[1],
        "  (0, 0): 0 0 0 vs 255 0 0, first pixel of core 0 of 2"
    );
    assert_eq!(lines[2], "  (0, 1): 0 0 0 vs 255 0 0");
    // Two bands of 15 rows: the second starts at row 15.
    assert_eq!(
        lines[16],
        "  (0, 15): 0 0 0 vs 255 0 0, first pixel of core 1 of 2"
    );
    assert_eq!(lines.len(), 1 + 20 + 1);
    assert_eq!(lines[21], "  … and 10 more");
}

/// The acceptance check: render scenes_example3 to PPM, then compare it with the
/// reference; 0 differing pixels, and the text is the test bench's but for line ends.
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn example3_renders_to_its_reference_from_the_command_line() {
    let scene = common::conformance("scenes_example3");
    let dir = tempfile::tempdir().unwrap();
    let scene = scene.to_str().unwrap();
    let output = theia(dir.path(), &["render", scene, "-o", "out/ex3.ppm"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let reference = Path::new(scene).join("Reference.ppm");
    let compared = theia(
        dir.path(),
        &["compare", "out/ex3.ppm", reference.to_str().unwrap()],
    );
    assert_eq!(text(&compared.stdout), "identical (160x160)\n");
    let ours = std::fs::read_to_string(dir.path().join("out/ex3.ppm")).unwrap();
    let theirs = std::fs::read_to_string(&reference).unwrap();
    assert_eq!(ours, theirs.replace("\r\n", "\n"));
}

const BAD_SHADER: &str = "ENTRYPOINT_ADRR_PIXELSHADER:\n  INTP R1 R1\n  FOO R1\n  SETX CREG_CAMERA_POSITION 3\n  RETURN RT_TRUE\n";

#[test]
fn shader_errors_are_reported_at_file_line_column_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.shdr"), BAD_SHADER).unwrap();
    let output = theia(
        dir.path(),
        &["render", "--shader", "bad.shdr", "-o", "bad.png"],
    );
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "bad.shdr:2:3: warning: INTP is not implemented by the original hardware, where the core hangs (the emulator runs the manual's semantics)\n\
         bad.shdr:4:8: warning: SETX writes CREG_CAMERA_POSITION (address 1) in the read-only bank 0 (addresses whose bits 6..5 are 00): the hardware drops the write\n\
         bad.shdr:3:3: error: unknown opcode `FOO`\n"
    );
    assert!(!dir.path().join("bad.png").exists());
}

#[test]
fn asm_writes_the_original_format_and_disasm_reads_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let source = "ENTRYPOINT_ADRR_PIXELSHADER:\n\tOMWRITE  OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR\n\tRETURN  RT_TRUE\n";
    std::fs::write(dir.path().join("pass.shdr"), source).unwrap();
    let output = theia(dir.path(), &["asm", "pass.shdr", "-o", "Instructions.mem"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let mem = std::fs::read_to_string(dir.path().join("Instructions.mem")).unwrap();
    assert!(
        mem.starts_with("28 //Number of ioctects in file\n"),
        "{mem}"
    );
    assert!(mem.contains("00000000 0000800C\t//ENTRYPOINT_ADRR_PIXELSHADER\n"));
    assert!(mem.ends_with("00400000 00000001\t\t//  IP 00800D (13): RETURN RT_TRUE  \n"));

    let listing = theia(dir.path(), &["disasm", "Instructions.mem"]);
    assert!(listing.status.success());
    std::fs::write(dir.path().join("again.shdr"), &listing.stdout).unwrap();
    let again = theia(dir.path(), &["asm", "again.shdr"]);
    assert_eq!(text(&again.stdout), mem);
}

#[test]
fn asm_rom_reproduces_the_rom_listing() {
    let dir = tempfile::tempdir().unwrap();
    let rom = theia(dir.path(), &["disasm", "--rom", "faithful"]);
    std::fs::write(dir.path().join("rom.shdr"), &rom.stdout).unwrap();
    let words = theia(dir.path(), &["asm", "--rom", "rom.shdr"]);
    assert!(words.status.success(), "{}", text(&words.stderr));
    let words = text(&words.stdout);
    assert_eq!(words.lines().count(), 280);
    assert!(words.starts_with("0 000F005F00000000\n1 0041005F01F40000\n"));
    assert!(words.ends_with("278 002F00800078006E\n279 0040000000000001\n"));
}

/// `--watch`: a new image appears when the shader is rewritten; a broken shader prints
/// its error and leaves the last good image in place.
#[test]
fn watch_re_renders_when_the_shader_changes() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let shader = dir.path().join("s.shdr");
    let pass_through = "ENTRYPOINT_ADRR_PIXELSHADER:\n OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR\n RETURN RT_TRUE\n";
    let black = "ENTRYPOINT_ADRR_PIXELSHADER:\n ZERO R1 VOID VOID\n OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL R1\n RETURN RT_TRUE\n";
    std::fs::write(&shader, pass_through).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_theia"))
        .args(["render", "--shader", "s.shdr", "--watch", "-o", "w.png"])
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = Arc::new(Mutex::new(String::new()));
    let sink = Arc::clone(&stderr);
    let reader = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            let mut text = sink.lock().unwrap();
            text.push_str(&line);
            text.push('\n');
        }
    });
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done() {
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; stderr:\n{}",
                stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let watching = |n: usize| {
        stderr
            .lock()
            .unwrap()
            .matches("watching for changes")
            .count()
            >= n
    };
    let image = dir.path().join("w.png");

    wait_for("the first image", &|| watching(1));
    let first = std::fs::read(&image).unwrap();

    std::fs::write(&shader, "ENTRYPOINT_ADRR_PIXELSHADER:\n FOO R1\n").unwrap();
    wait_for("the error", &|| watching(2));
    assert!(stderr
        .lock()
        .unwrap()
        .contains("s.shdr:2:2: error: unknown opcode `FOO`"));
    assert_eq!(
        std::fs::read(&image).unwrap(),
        first,
        "last good image kept"
    );

    std::fs::write(&shader, black).unwrap();
    wait_for("the second image", &|| watching(3));
    let second = theia::io::image::read_image(&image).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert_ne!(std::fs::read(&image).unwrap(), first);
    assert!(
        second.data.iter().all(|&c| c == 0),
        "the black shader's image"
    );
}

/// With several cores failing, the error names the lowest-numbered one, every time.
#[test]
fn a_runaway_shader_on_every_core_reports_core_0() {
    use theia::emu::isa::asm::assemble;
    use theia::emu::machine::{render, RenderOptions};
    use theia::io::scene::obj::{default_scene, ObjOptions};

    let spin = "ENTRYPOINT_ADRR_PIXELSHADER:\nSPIN:\n JMP SPIN\n";
    let imem = assemble(spin, Path::new("spin.shdr")).unwrap().imem;
    let options = ObjOptions {
        width: 16,
        height: 16,
        ..ObjOptions::default()
    };
    let scene = default_scene::load(&options).unwrap().scene;
    for _ in 0..5 {
        let error = render(
            &scene,
            &RenderOptions {
                cores: Some(4),
                imem: Some(imem.clone()),
                max_steps: Some(20_000),
                ..RenderOptions::default()
            },
        )
        .unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("core 0, pixel (0, 0), routine PIXELSHADER: "),
            "{error}"
        );
    }
}

#[test]
fn ssaa_averages_the_samples_of_a_render_at_k_times_the_resolution() {
    use theia::emu::machine::{render, RenderOptions};
    use theia::io::scene::obj::{load_obj_text, MemoryAssets, ObjOptions};

    let obj = theia::io::scene::generate::uv_sphere_obj(16, 8);
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("sphere.obj"), &obj).unwrap();
    let output = theia(
        dir.path(),
        &[
            "render",
            "sphere.obj",
            "--rom",
            "fixed",
            "--width",
            "40",
            "--height",
            "30",
            "--ssaa",
            "2",
            "-o",
            "ssaa.png",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let summary = text(&output.stdout);
    assert!(
        summary.starts_with("ssaa.png: 40x30 pixels (4 samples each, 80x60 rendered), "),
        "{summary}"
    );
    let image = theia::io::image::read_image(&dir.path().join("ssaa.png")).unwrap();

    // The samples: the same model at 80x60 through the library (the fixed ROM's images do
    // not depend on the bands), each output word the rounded mean of its four samples'
    // words clamped to what a channel shows.
    let options = ObjOptions {
        width: 80,
        height: 60,
        ..ObjOptions::default()
    };
    let scene = load_obj_text(&obj, Path::new("sphere.obj"), &MemoryAssets(&[]), &options)
        .unwrap()
        .scene;
    let samples = render(
        &scene,
        &RenderOptions {
            rom: theia::emu::core::RomVariant::Fixed,
            ..RenderOptions::default()
        },
    )
    .unwrap()
    .frame;
    let mut lit = 0;
    for y in 0..30 {
        for x in 0..40 {
            let expected = [0, 1, 2].map(|c| {
                let sample = |dx: usize, dy: usize| {
                    let word = samples.words[((2 * y + dy) * 80 + 2 * x + dx) * 3 + c];
                    if word as i32 >= 0 {
                        word.min(0x1FFFF)
                    } else {
                        0x1FFFF
                    }
                };
                let sum = sample(0, 0) + sample(1, 0) + sample(0, 1) + sample(1, 1);
                theia::io::image::channel_byte((sum + 2) / 4)
            });
            lit += usize::from(expected != [0; 3]);
            assert_eq!(image.pixel(x as u32, y as u32), expected, "({x}, {y})");
        }
    }
    assert!(lit > 200, "{lit} pixels show the sphere");
    let output = theia(dir.path(), &["render", "sphere.obj", "--ssaa", "5"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("1 to 4"),
        "{}",
        text(&output.stderr)
    );
}

/// `--ssaa 4` at 1920x1080: 7680x4320 samples, beyond the 4096 an OBJ scene may be
/// loaded at, rendered in passes (each a core's rows) into the output frame. One triangle
/// keeps it to seconds in release builds.
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "33 million samples take minutes in debug builds: cargo test --release --test cli"
)]
fn ssaa_4_at_1920x1080_renders_past_the_loaders_resolution_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("triangle.obj"),
        "v -1 -1 0\nv 1 -1 0\nv 0 1 0\nf 1 2 3\n",
    )
    .unwrap();
    let size = ["--width", "1920", "--height", "1080", "--flat"];
    let output = theia(
        dir.path(),
        &[
            &["render", "triangle.obj", "--ssaa", "4", "-o", "big.png"],
            &size[..],
        ]
        .concat(),
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let summary = text(&output.stdout);
    assert!(
        summary.starts_with("big.png: 1920x1080 pixels (16 samples each, 7680x4320 rendered), "),
        "{summary}"
    );
    let image = theia::io::image::read_image(&dir.path().join("big.png")).unwrap();
    assert_eq!((image.width, image.height), (1920, 1080));
    // Lit inside, black outside, and edge pixels in between (some of their 16 samples hit).
    let levels: std::collections::BTreeSet<[u8; 3]> = (0..1920 * 1080)
        .map(|i| image.pixel(i % 1920, i / 1920))
        .collect();
    assert!(levels.contains(&[0, 0, 0]), "{levels:?}");
    assert!(levels.len() > 10, "{} levels", levels.len());
    // The loader's own limit still holds for the output.
    let output = theia(
        dir.path(),
        &["render", "triangle.obj", "--ssaa", "2", "--width", "4097"],
    );
    assert!(
        text(&output.stderr).contains("resolution 4097x256 must be between 1x1 and 4096x4096"),
        "{}",
        text(&output.stderr)
    );
}

/// `theia render` with `options` in `dir`, writing `out.png`; its bytes and stdout.
fn rendered(dir: &Path, scene: &[&str], options: &[&str]) -> (Vec<u8>, String) {
    let mut args = vec!["render", "-o", "out.png"];
    args.extend_from_slice(scene);
    args.extend_from_slice(options);
    let stdout = common::theia_ok(dir, &args);
    (std::fs::read(dir.join("out.png")).unwrap(), stdout)
}

/// The repository's OBJ scene, small.
const SMALL_OBJ: &[&str] = &[
    concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/default.obj"),
    "--width",
    "48",
    "--height",
    "36",
];

#[test]
fn the_fixed_rom_is_the_same_image_on_any_number_of_cores_for_an_obj() {
    let dir = tempfile::tempdir().unwrap();
    let one = rendered(dir.path(), SMALL_OBJ, &["--rom", "fixed", "--cores", "1"]);
    for cores in ["3", "16"] {
        let (image, summary) =
            rendered(dir.path(), SMALL_OBJ, &["--rom", "fixed", "--cores", cores]);
        assert_eq!(image, one.0, "{cores} cores");
        assert!(summary.contains(&format!("{cores} cores")), "{summary}");
    }
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn the_fixed_rom_is_the_same_image_on_any_number_of_cores_for_a_mem_scene() {
    let dir = tempfile::tempdir().unwrap();
    let scene = common::conformance("scenes_example3");
    let scene = [scene.to_str().unwrap()];
    let one = rendered(dir.path(), &scene, &["--rom", "fixed", "--cores", "1"]);
    for cores in ["3", "16"] {
        let (image, _) = rendered(dir.path(), &scene, &["--rom", "fixed", "--cores", cores]);
        assert_eq!(image, one.0, "{cores} cores");
    }
    // The faithful ROM differs exactly there: each core's first pixel (the known artifact).
    let faithful = rendered(dir.path(), &scene, &["--cores", "3"]);
    assert_ne!(faithful.0, one.0);
}

#[test]
fn accel_modes_and_no_cull_give_the_same_image() {
    let dir = tempfile::tempdir().unwrap();
    // Enough triangles (AccelUse::AUTO_TRIANGLES) for auto to build the structure.
    let sphere = theia::io::scene::generate::uv_sphere_obj(32, 16);
    std::fs::write(dir.path().join("sphere.obj"), sphere).unwrap();
    let scene = ["sphere.obj", "--width", "48", "--height", "36"];
    let (auto, summary) = rendered(dir.path(), &scene, &["--accel", "auto"]);
    assert!(summary.contains("acceleration structure"), "{summary}");
    for options in [
        &["--accel", "cull"][..],
        &["--accel", "off"],
        &["--no-cull"],
    ] {
        let (image, summary) = rendered(dir.path(), &scene, options);
        assert_eq!(image, auto, "{options:?}");
        assert!(
            !summary.contains("acceleration structure"),
            "{options:?}: {summary}"
        );
    }
}

/// `theia bench --scaling`: one row per mesh, size and ROM, each measured in a child
/// process; here only the smallest mesh (the whole table takes over a minute).
#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "a 1920x1080 frame takes most of a minute in debug builds: cargo test --release --test cli commands::"
)]
fn bench_scaling_prints_a_row_per_mesh_size_and_rom() {
    let dir = tempfile::tempdir().unwrap();
    let output = theia(
        dir.path(),
        &["bench", "--scaling", "--max-triangles", "5120"],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines[0].starts_with("triangles       size       ROM  process s"),
        "{stdout}"
    );
    let rows: Vec<Vec<&str>> = lines[1..5]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    let keys: Vec<(&str, &str, &str)> = rows.iter().map(|r| (r[0], r[1], r[2])).collect();
    assert_eq!(
        keys,
        [
            ("5120", "256x256", "fixed"),
            ("5120", "256x256", "faithful"),
            ("5120", "1920x1080", "fixed"),
            ("5120", "1920x1080", "faithful"),
        ]
    );
    for row in &rows {
        // process s, load ms, structure ms, frame s, peak MB, candidates per tile
        assert_eq!(row.len(), 9, "{row:?}");
        for value in &row[3..] {
            assert!(value.parse::<f64>().is_ok(), "{row:?}");
        }
    }
    // The fixed ROM's structure keeps only the triangles under a tile; the faithful one
    // also those whose quotients might wrap there.
    let candidates = |row: &Vec<&str>| row[8].parse::<f64>().unwrap();
    assert!(candidates(&rows[0]) < candidates(&rows[1]), "{stdout}");
    assert!(candidates(&rows[2]) < candidates(&rows[3]), "{stdout}");
    assert_eq!(
        lines[5],
        "meshes over 5120 triangles left out (--max-triangles)"
    );
}

#[test]
fn bench_scaling_row_names_what_it_expected() {
    let dir = tempfile::tempdir().unwrap();
    let stderr = theia_fails(dir.path(), &["bench", "--scaling-row", "4,16"]);
    assert!(
        stderr.contains("--scaling-row: expected SUBDIVISIONS,WIDTH,HEIGHT,ROM, got `4,16`"),
        "{stderr}"
    );
    let stderr = theia_fails(dir.path(), &["bench", "--max-triangles", "10"]);
    assert!(stderr.contains("--scaling"), "{stderr}");
}

/// Issue 38: `--up z` turns a z-up file upright, and numbers after `--camera` may be
/// negative. A bumpy (asymmetric) mesh and its z-up copy, whose every point (x, y, z) is
/// written as (x, -z, y), give the same bytes, each seen from its own coordinates of one
/// camera; a mirror or a wrong turn would move the bumps.
#[test]
fn up_z_renders_a_z_up_copy_as_the_y_up_original() {
    let dir = tempfile::tempdir().unwrap();
    let obj = theia::io::scene::generate::displaced_icosphere_obj(2, 0.08);
    let negated = |c: &str| c.strip_prefix('-').map_or(format!("-{c}"), str::to_string);
    let z_up: String = obj
        .lines()
        .map(|line| match line.strip_prefix("v ") {
            Some(rest) => {
                let c: Vec<&str> = rest.split_whitespace().collect();
                format!("v {} {} {}\n", c[0], negated(c[2]), c[1])
            }
            None => format!("{line}\n"),
        })
        .collect();
    assert_ne!(obj, z_up);
    std::fs::write(dir.path().join("y.obj"), &obj).unwrap();
    std::fs::write(dir.path().join("z.obj"), &z_up).unwrap();
    let size = ["--width", "48", "--height", "40"];
    let (y_image, _) = rendered(
        dir.path(),
        &["y.obj"],
        &[&["--camera", "-2,0.6,1.5"][..], &size].concat(),
    );
    let (z_image, _) = rendered(
        dir.path(),
        &["z.obj"],
        &[&["--up", "z", "--camera", "-2,-1.5,0.6"][..], &size].concat(),
    );
    assert!(y_image == z_image, "the z-up copy renders differently");
    // Without --up the copy lies on its side.
    let (side, _) = rendered(
        dir.path(),
        &["z.obj"],
        &[&["--camera", "-2,-1.5,0.6"][..], &size].concat(),
    );
    assert!(side != y_image);
}

/// With more than one thread, `render --cycles` simulates the frame beside the render:
/// its report (hazards included: this frame meets re-entries) and image are those of the
/// one-thread run, which simulates after it.
#[test]
fn cycles_simulated_beside_the_render_report_what_they_report_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let run = |threads: &str, output: &str| -> (String, Vec<u8>) {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_theia"))
            .args([
                "render", "--width", "24", "--height", "24", "--cycles", "-o", output,
            ])
            .env("RAYON_NUM_THREADS", threads)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", common::text(&out.stderr));
        let report = common::text(&out.stdout);
        // The summary's first line names the file and the render's own time.
        let report = report.lines().skip(1).collect::<Vec<_>>().join("\n");
        (report, std::fs::read(dir.path().join(output)).unwrap())
    };
    let (after, after_png) = run("1", "after.png");
    let (beside, beside_png) = run("2", "beside.png");
    assert!(after.contains("hazard re-entry: "), "{after}");
    assert_eq!(beside, after);
    assert_eq!(beside_png, after_png);
}

/// `render --cycles` prints the hardware's frame and each core's cycles, and
/// `bench --hardware` times the same frame on 1 to 16 cores with the same model; a foreign
/// pixel stage is refused before anything is written.
#[test]
fn cycles_and_the_hardware_bench_agree_and_foreign_stages_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("scene");
    let scene = scene.to_str().unwrap();
    let size = ["--width", "16", "--height", "16"];
    common::theia_ok(dir.path(), &[&["export", "-o", scene][..], &size].concat());
    let frame_cycles = |cores: &str| -> u64 {
        let out = common::theia_ok(
            dir.path(),
            &["render", scene, "--cycles", "--cores", cores, "-o", "x.png"],
        );
        let line = out
            .lines()
            .find(|l| l.starts_with("frame cycles "))
            .unwrap();
        let cores_listed = out.lines().skip_while(|l| !l.starts_with("core ")).skip(1);
        assert_eq!(
            cores_listed.take_while(|l| !l.starts_with('(')).count(),
            cores.parse::<usize>().unwrap(),
            "{out}"
        );
        line["frame cycles ".len()..line.find(':').unwrap()]
            .parse()
            .unwrap()
    };
    let (two, eight) = (frame_cycles("2"), frame_cycles("8"));
    let table = common::theia_ok(
        dir.path(),
        &["bench", "--hardware", scene, "--plot", "p.svg"],
    );
    let row = |cores: u64| -> Vec<String> {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&cores.to_string()));
        line.unwrap_or_else(|| panic!("{table}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    assert_eq!(row(2)[1], two.to_string(), "{table}");
    assert_eq!(row(8)[1], eight.to_string(), "{table}");
    assert!(eight * 3 < two && eight * 4 > two, "{two} {eight}");
    assert_eq!(row(1)[3], "1.00x", "{table}");
    let svg = std::fs::read_to_string(dir.path().join("p.svg")).unwrap();
    assert_eq!(svg.matches("fill=\"#3b6fb6\"").count(), 5, "{svg}");
    let r500 = concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/r500/checker.fs.asm");
    let stderr = theia_fails(
        dir.path(),
        &[
            "render", scene, "--cycles", "--shader", r500, "-o", "r500.png",
        ],
    );
    assert!(
        stderr.contains("--cycles counts THEIA's own stages only; the R500"),
        "{stderr}"
    );
    assert!(!dir.path().join("r500.png").exists());
}
