//! `theia trace`: one pixel of scenes_example3 traced and checked against values computed
//! independently from the spec's formulas (machine_and_microcode §2.2), plus the exact text
//! format and the cycle estimate.

use crate::common;
use crate::model;

use model::{as_f64, closest_hit, primary_ray};
use theia::emu::core::alu::Vec3;
use theia::emu::isa::registers::register_address;
use theia::emu::isa::EntryPoint;
use theia::emu::machine::{render, Machine, RenderOptions};
use theia::io::scene::mem::load_scene_dir;
use theia::io::scene::{config_row, Scene};
use theia::tools::trace::{trace_pixel, PixelTrace, TraceError, TraceOptions};

fn example3() -> Scene {
    load_scene_dir(&common::conformance("scenes_example3")).expect("scenes_example3 loads")
}

/// Traces (x, y) with the scene's own partitions; returns the trace and its text.
fn trace(scene: &Scene, x: u32, y: u32, options: &TraceOptions) -> (PixelTrace, String) {
    let machine = Machine::new(scene, &RenderOptions::default()).unwrap();
    let mut text = Vec::new();
    let trace = trace_pixel(&machine, x, y, options, &mut text).expect("traces");
    (trace, String::from_utf8(text).unwrap())
}

fn reg(name: &str) -> u16 {
    register_address(name).unwrap_or_else(|| panic!("{name} is a register"))
}

/// The R: lanes of a trace line, parsed back from hex.
fn result_of(line: &str) -> Vec3 {
    let r = &line[line.find("R: ").expect("an R column") + 3..];
    let words: Vec<u32> = r
        .split_whitespace()
        .step_by(2)
        .take(3)
        .map(|w| u32::from_str_radix(w, 16).unwrap())
        .collect();
    [words[0], words[1], words[2]]
}

/// The last line of the trace executing `instruction` (its disassembly).
fn last_line<'a>(text: &'a str, instruction: &str) -> &'a str {
    text.lines()
        .rfind(|l| l.ends_with(&format!("  {instruction}")))
        .unwrap_or_else(|| panic!("no `{instruction}` in the trace"))
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn closest_hit_distance_matches_the_spec_formulas() {
    let scene = example3();
    let (x, y) = (80, 80);
    let (traced, text) = trace(&scene, x, y, &TraceOptions::default());

    let ray = primary_ray(&scene, x, y);
    let rgu_ray = result_of(last_line(
        &text,
        "DIV CREG_RAY_DIRECTION CREG_UNORMALIZED_DIRECTION R2",
    ));
    assert_eq!(rgu_ray, ray, "RGU's ray");

    let hit = closest_hit(&scene, ray).expect("the ray hits the head");
    let (t, u, v, triangle) = (hit.t, hit.u, hit.v, hit.triangle);
    let last_t = traced.register(reg("CREG_LAST_t"));
    assert_eq!(last_t, [t; 3], "CREG_LAST_t after the pixel");
    assert_eq!(traced.register(reg("CREG_LAST_u")), [u; 3]);
    assert_eq!(traced.register(reg("CREG_LAST_v")), [v; 3]);
    // The trace's last update of LAST_t is the closest hit's, in the triangle found here.
    assert_eq!(
        result_of(last_line(&text, "COPY CREG_LAST_t CREG_t VOID")),
        [t; 3]
    );
    let copies: Vec<usize> = text
        .lines()
        .filter(|l| l.starts_with(">> MAIN") || l.ends_with("COPY CREG_LAST_t CREG_t VOID"))
        .collect::<Vec<_>>()
        .windows(2)
        .filter(|w| w[1].ends_with("COPY CREG_LAST_t CREG_t VOID"))
        .map(|w| {
            let k = w[0].split("triangle ").nth(1).unwrap();
            k.split(' ').next().unwrap().parse::<usize>().unwrap()
        })
        .collect();
    assert_eq!(copies.last(), Some(&(triangle + 1)));

    // The same intersection in floating point, from the decoded words: the fixed-point
    // distance is within rounding of the real one.
    let f = |v: Vec3| v.map(as_f64);
    let tri = scene.triangles[triangle];
    let (v0, v1, v2) = (f(tri[0]), f(tri[2]), f(tri[4]));
    let cam = f(scene.config[config_row::CAMERA_POSITION]);
    let dir = f(ray);
    let sub = |a: [f64; 3], b: [f64; 3]| [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    let dot = |a: [f64; 3], b: [f64; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    let (e1, e2, tv) = (sub(v1, v0), sub(v2, v0), sub(cam, v0));
    let (p, q) = (cross(dir, e2), cross(tv, e1));
    let real_t = dot(q, e2) / dot(p, e1);
    assert!(
        (as_f64(t) - real_t).abs() < 1e-3,
        "fixed {} vs real {real_t}",
        as_f64(t)
    );
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn traced_pixels_match_the_full_render() {
    let scene = example3();
    let frame = render(&scene, &RenderOptions::default()).unwrap().frame;
    // A hit, a miss in the middle of a partition (red: NPG left TEXTURE_COLOR = 3.0 from the
    // previous pixel), and a miss at a partition start (black: INITIAL zeroed it).
    for (x, y, rgb) in [
        (80, 80, None),
        (1, 80, Some([255, 0, 0])),
        (0, 80, Some([0, 0, 0])),
    ] {
        let (traced, _) = trace(&scene, x, y, &TraceOptions::default());
        let at = (y as usize * 160 + x as usize) * 3;
        let words: Vec<Option<u32>> = (0..3).map(|c| Some(frame.words[at + c])).collect();
        assert_eq!(traced.output.to_vec(), words, "pixel ({x}, {y})");
        let bytes = traced
            .output
            .map(|w| theia::io::image::channel_byte(w.unwrap()));
        if let Some(rgb) = rgb {
            assert_eq!(bytes, rgb, "pixel ({x}, {y})");
        }
        assert_eq!(traced.location.core, 4);
        assert_eq!(traced.location.index, (x + (y - 80) * 160) as usize);
        assert_eq!(traced.more_pixels, Some(true));
        assert!(traced.fault.is_none());
    }
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn a_miss_leaves_last_t_at_rgu_s_start_value() {
    let scene = example3();
    let (traced, text) = trace(&scene, 1, 80, &TraceOptions::default());
    assert_eq!(closest_hit(&scene, primary_ray(&scene, 1, 80)), None);
    // 0x1F40000 is 250.0 in Q15.17 (the ROM comment calls it 500.0).
    assert_eq!(traced.register(reg("CREG_LAST_t"))[0], 0x1F4_0000);
    assert!(!text.contains(">> PSU2"), "no hit, no texture fetch");
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn trace_lines_have_the_documented_format() {
    let scene = example3();
    let (_, text) = trace(&scene, 80, 80, &TraceOptions::default());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "# theia trace, format 1");
    assert_eq!(
        lines[2],
        "# pixel (80, 80): core 4, pixel 81 of 3200 in its partition (80 earlier pixels run untraced)"
    );
    let rgu = lines.iter().position(|l| *l == ">> RGU at 002F").unwrap();
    assert!(
        lines[rgu - 1].starts_with("# "),
        "RGU is the pixel's first routine"
    );
    // DEC CREG_LAST_COL CREG_PIXEL_2D_FINAL_POSITION: core 4 ends at (160, 100).
    assert_eq!(
        lines[rgu + 6],
        "0034 W   0035  A: 01400000    160.000000  00C80000    100.000000  00000000      0.000000  \
         B: -                                                                       \
         R: 013E0000    159.000000  00C60000     99.000000  FFFE0000     -1.000000  \
         DEC CREG_LAST_COL CREG_PIXEL_2D_FINAL_POSITION VOID"
    );
    assert_eq!(
        lines[rgu + 8],
        "0036 .   0037  A: 00000000      0.000000  00000000      0.000000  00000000      0.000000  \
         B: -                                                                       \
         R: 00000000      0.000000  00000000      0.000000  00000000      0.000000  \
         RETURN RT_FALSE"
    );
    assert_eq!(lines[rgu + 9], "<< RGU returns FALSE");
    assert_eq!(lines[rgu + 10], ">> MAIN at 0025 (triangle 1 of 118)");
    assert!(lines[rgu + 11].starts_with("0025 - J 009D  A: -  "));
    assert!(lines[rgu + 11].ends_with("  CALL 0x009D"));
    // Every instruction line has its columns at the same places.
    for line in lines.iter().filter(|l| !l.starts_with(['#', '>', '<'])) {
        assert_eq!(&line[15..18], "A: ", "{line}");
        assert_eq!(&line[90..93], "B: ", "{line}");
        assert_eq!(&line[165..168], "R: ", "{line}");
        assert_eq!(&line[238..240], "  ", "{line}");
        assert!(line[240..].starts_with(|c: char| c.is_ascii_uppercase() || c == '.'));
    }
    assert_eq!(
        lines.last(),
        Some(&"# NPG returned TRUE: more pixels follow")
    );
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn stats_count_every_traced_instruction_with_latency_plus_one_cycles() {
    let scene = example3();
    let (traced, text) = trace(&scene, 80, 80, &TraceOptions::default());
    let stats = &traced.stats;
    let instruction_lines = text
        .lines()
        .filter(|l| !l.starts_with(['#', '>', '<']))
        .count() as u64;
    assert_eq!(stats.instructions(), instruction_lines);
    let rgu = stats.routine(EntryPoint::Rgu, None).unwrap();
    // MUL 2+1, ADD 1+1, SUB 1+1, MAG 40+1, DIV 71+1, DEC 1+1, SETX 1+1, RETURN 1+1.
    assert_eq!((rgu.calls, rgu.instructions, rgu.cycles), (1, 8, 126));
    let main = stats.routine(EntryPoint::Main, None).unwrap();
    assert_eq!(main.calls, 118);
    let biu = stats.routine(EntryPoint::Main, Some(157)).unwrap();
    assert_eq!((biu.name.as_str(), biu.calls), ("MAIN > BIU", 118));
    let shader = stats.routine(EntryPoint::PixelShader, None).unwrap();
    // OMWRITE 3+1, RETURN 1+1.
    assert_eq!((shader.instructions, shader.cycles), (2, 6));
    let table = stats.table();
    assert!(table.starts_with("routine                     calls  instructions        cycles\n"));
    assert!(table.contains("\nRGU                             1             8           126\n"));
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn only_and_boot_select_what_is_printed() {
    let scene = example3();
    let options = TraceOptions {
        boot: true,
        only: Some(vec![EntryPoint::Initial, EntryPoint::PixelShader]),
        ..TraceOptions::default()
    };
    let (traced, text) = trace(&scene, 5, 20, &options);
    let starts: Vec<&str> = text.lines().filter(|l| l.starts_with(">>")).collect();
    assert_eq!(starts, [">> INITIAL at 0000", ">> PIXELSHADER at 800C"]);
    // INITIAL stores the core's first output address; core 1 starts at row 20.
    assert!(text.contains("  COPY CREG_PIXEL_2D_POSITION CREG_PIXEL_2D_INITIAL_POSITION VOID"));
    // The statistics still count everything.
    assert_eq!(
        traced.stats.routine(EntryPoint::Main, None).unwrap().calls,
        118
    );
    assert_eq!(
        traced.stats.routine(EntryPoint::Cppu, None).unwrap().calls,
        1
    );
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn pixels_outside_the_image_are_refused() {
    let scene = example3();
    let machine = Machine::new(&scene, &RenderOptions::default()).unwrap();
    let error =
        trace_pixel(&machine, 160, 3, &TraceOptions::default(), &mut Vec::new()).unwrap_err();
    assert!(matches!(error, TraceError::OutsideImage { .. }));
    assert_eq!(
        error.to_string(),
        "pixel (160, 3) is outside the 160x160 image"
    );
}

// ---------------------------------------------------------------------------------------
// The command as a user runs it.

use common::{text, theia};

/// A pixel shader that never returns.
const SPIN: &str = "ENTRYPOINT_ADRR_PIXELSHADER:\nSPIN:\n        JMP SPIN\n";

/// A pixel shader that counts to 400 (about 800 instructions), then writes the texture.
const COUNT: &str = "\
ENTRYPOINT_ADRR_USERCONSTANTS:
        SETX C1 400.0
        RETURN RT_TRUE
ENTRYPOINT_ADRR_PIXELSHADER:
        ZERO R1 VOID VOID
AGAIN:
        INCX R1 R1
        JLX AGAIN R1 C1
        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR
        RETURN RT_TRUE
";

/// The instruction and cycle counts of the table (2117 BIU instructions, 30902 cycles) were
/// taken from this program's output, not derived independently: a change detector.
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn the_trace_command_prints_a_routine_and_the_cycle_table_change_detector() {
    let dir = common::conformance("scenes_example3");
    let scene = dir.to_str().unwrap();
    let output = theia(
        &dir,
        &[
            "trace",
            scene,
            "--pixel",
            "80,80",
            "--only",
            "pixelshader",
            "--stats",
        ],
    );
    assert!(output.status.success(), "{}", text(&output.stderr));
    let expected = format!(
        "\
# theia trace, format 1
# scene {scene}: 160x160 pixels, 118 triangles, 8 cores
# pixel (80, 80): core 4, pixel 81 of 3200 in its partition (80 earlier pixels run untraced)
# showing only PIXELSHADER
# ADDR F J NEXT  A: ALU input A  B: ALU input B  R: result (each lane: hex word, Q15.17 decimal)  INSTRUCTION
# F: W written . forwarded only - no result; J: T taken N not taken J unconditional
>> PIXELSHADER at 800C
800C .   800D  A: 000000F0      0.001831  000000F1      0.001839  000000F2      0.001846  \
B: 00009820      0.297119  00005B13      0.177879  000028BE      0.079575  \
R: 00000000      0.000000  00000000      0.000000  00000000      0.000000  \
OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR
800D .   800E  A: 00000001      0.000008  00000000      0.000000  00000000      0.000000  \
B: -                                                                       \
R: 00000001      0.000008  00000001      0.000008  00000001      0.000008  \
RETURN RT_TRUE
<< PIXELSHADER returns TRUE
# output: OMEM[240..242] = 00009820 00005B13 000028BE -> RGB 76 45 20
# NPG returned TRUE: more pixels follow

# estimated cycles: ALU latency + 1 per instruction (alu_semantics §7); the control unit and the host's triangle streaming are not counted
routine                     calls  instructions        cycles
RGU                             1             8           126
MAIN                          118           356           712
MAIN > BIU                    118          2117         30902
MAIN > TCC                      1            42            93
PSU2                            1            28            68
PIXELSHADER                     1             2             6
NPG                             1             8            16
total                                      2561         31923

"
    );
    assert_eq!(text(&output.stdout), expected);
    // The pixel's colour is the reference image's.
    let reference = theia::io::image::read_image(&dir.join("Reference.ppm")).unwrap();
    assert_eq!(reference.pixel(80, 80), [76, 45, 20]);
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn a_shader_that_never_returns_is_stopped_by_the_watchdog() {
    let scene_dir = common::conformance("scenes_example1");
    let scene = scene_dir.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spin.shdr"), SPIN).unwrap();
    let render = |extra: &[&str]| {
        let mut args = vec![
            "render",
            scene,
            "--cores",
            "1",
            "--shader",
            "spin.shdr",
            "-o",
            "out.png",
        ];
        args.extend(extra);
        theia(dir.path(), &args)
    };
    // The default budget: 100000 + 1000 per triangle (2 here).
    let output = render(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: core 0, pixel (0, 0), routine PIXELSHADER: no RETURN within 102000 instructions; \
         stopped at 0x800c (raise --max-steps if it is meant to run this long)\n"
    );
    let output = render(&["--max-steps", "5000"]);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        "error: core 0, pixel (0, 0), routine PIXELSHADER: no RETURN within 5000 instructions; \
         stopped at 0x800c (raise --max-steps if it is meant to run this long)\n"
    );
    assert!(!dir.path().join("out.png").exists());
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn max_steps_is_a_per_pixel_budget() {
    let scene_dir = common::conformance("scenes_example1");
    let scene = scene_dir.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("count.shdr"), COUNT).unwrap();
    let render = |max_steps: &str, output: &str| {
        theia(
            dir.path(),
            &[
                "render",
                scene,
                "--shader",
                "count.shdr",
                "--max-steps",
                max_steps,
                "-o",
                output,
                "-q",
            ],
        )
    };
    // About 120 instructions of ROM routines plus 802 of counting per pixel: 1000 is
    // enough for every one of the 40000 pixels, 500 is not enough for the first.
    let output = render("1000", "counted.png");
    assert!(output.status.success(), "{}", text(&output.stderr));
    let plain = theia(dir.path(), &["render", scene, "-o", "plain.png", "-q"]);
    assert!(plain.status.success());
    let read = |name: &str| theia::io::image::read_image(&dir.path().join(name)).unwrap();
    assert_eq!(read("counted.png"), read("plain.png"));

    let output = render("500", "short.png");
    assert_eq!(output.status.code(), Some(2));
    let stderr = text(&output.stderr);
    let stopped_in_the_loop = ["0x800f", "0x8010"].iter().any(|address| {
        stderr.contains(&format!(
            "no RETURN within 500 instructions; stopped at {address} "
        ))
    });
    assert!(
        stderr.contains(", pixel (0, 0), routine PIXELSHADER: "),
        "{stderr}"
    );
    assert!(stopped_in_the_loop, "{stderr}");
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn tracing_a_runaway_shader_prints_up_to_the_stop_and_fails() {
    let scene_dir = common::conformance("scenes_example1");
    let scene = scene_dir.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("spin.shdr"), SPIN).unwrap();
    let trace = |pixel: &str| {
        theia(
            dir.path(),
            &[
                "trace",
                scene,
                "--cores",
                "1",
                "--shader",
                "spin.shdr",
                "--max-steps",
                "300",
                "--pixel",
                pixel,
                "--only",
                "PIXELSHADER",
                "--stats",
            ],
        )
    };
    let output = trace("0,0");
    assert_eq!(output.status.code(), Some(2));
    let message = "core 0, pixel (0, 0), routine PIXELSHADER: no RETURN within 300 instructions; \
                   stopped at 0x800c (raise --max-steps if it is meant to run this long)";
    assert_eq!(text(&output.stderr), format!("error: {message}\n"));
    let stdout = text(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    let start = lines
        .iter()
        .position(|l| *l == ">> PIXELSHADER at 800C")
        .unwrap();
    let spins = lines[start + 1..]
        .iter()
        .take_while(|l| l.starts_with("800C - J 800C  A: -"))
        .count();
    assert!(spins > 100, "{spins}");
    // User code names its source line.
    assert!(
        lines[start + 1].ends_with("  JMP 0x800C  // spin.shdr:3"),
        "{}",
        lines[start + 1]
    );
    assert_eq!(lines[start + 1 + spins], format!("# stopped: {message}"));
    // The stats still come, and the pixel ran exactly its budget.
    let total = lines.iter().find(|l| l.starts_with("total ")).unwrap();
    assert_eq!(total.split_whitespace().nth(1), Some("300"));
    assert!(lines.iter().any(|l| l.starts_with("PIXELSHADER ")
        && l.split_whitespace().nth(2) == Some(&spins.to_string())));

    // A later pixel cannot be reached: the core stops on its first pixel.
    let output = trace("5,0");
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        text(&output.stderr),
        format!("error: before the traced pixel: {message}\n")
    );
}
