//! R500 fragment programs: the conformance programs assemble word-exact and round-trip
//! through the disassembler; the interpreter's ops at their edges; the pixel stage.

use crate::common;
use crate::model;

use std::path::{Path, PathBuf};

use theia::stage::r500::{self, Words};

fn r500_dir(folder: &str) -> PathBuf {
    common::shared_path(&format!("conformance/r500/{folder}"))
}

fn files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect();
    files.sort();
    files
}

/// Words -> text -> words must give the same words.
fn round_trip(program: &[Words], name: &str) {
    let text = r500::disassemble(program).unwrap_or_else(|e| panic!("{name}: {e}"));
    let again = r500::assemble(&text, Path::new(name))
        .unwrap_or_else(|e| panic!("{name}: {e}\n{text}"))
        .program;
    assert_eq!(again, program, "{name} round trip:\n{text}");
}

/// The fields where two encodings of one instruction differ, as `NAME a -> b`.
fn differing_fields(a: &Words, b: &Words) -> Vec<String> {
    use theia::stage::r500::fields as f;
    let ty = f::TYPE.get(a);
    f::CMN
        .iter()
        .chain(f::fields_of(ty))
        .filter(|field| field.get(a) != field.get(b))
        .map(|field| format!("{} {} -> {}", field.name, field.get(a), field.get(b)))
        .collect()
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn every_src_program_assembles_to_its_bin_words_and_round_trips() {
    let dir = r500_dir("src");
    let sources = files(&dir, ".fs.asm");
    assert_eq!(sources.len(), 11);
    for source in sources {
        let name = source.display().to_string();
        let bin = PathBuf::from(name.replace(".fs.asm", ".fs.bin"));
        let expected = r500::load_words(&bin).unwrap();
        let words = r500::assemble_file(&source)
            .unwrap_or_else(|e| panic!("{e}"))
            .program;
        assert_eq!(words, expected, "{name}");
        round_trip(&expected, &name);
    }
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn drm_programs_assemble_to_their_inc_words_and_round_trip() {
    let dir = r500_dir("drm");
    let mut exact = Vec::new();
    let mut differ = Vec::new();
    for source in files(&dir, ".fs.asm") {
        let name = source.display().to_string();
        let words = r500::assemble_file(&source)
            .unwrap_or_else(|e| panic!("{e}"))
            .program;
        round_trip(&words, &name);
        let inc = PathBuf::from(name.replace(".fs.asm", ".fs.inc"));
        if !inc.exists() {
            continue;
        }
        let expected = r500::load_words(&inc).unwrap();
        round_trip(&expected, &inc.display().to_string());
        if words == expected {
            exact.push(name);
        } else {
            let mut report = format!("{name}: {} vs {} instructions", words.len(), expected.len());
            for (i, (a, b)) in words.iter().zip(&expected).enumerate() {
                if a != b {
                    report.push_str(&format!("\n  {i}: {:?}", differing_fields(a, b)));
                }
            }
            differ.push(report);
        }
    }
    assert_eq!(exact.len(), 11, "{exact:#?}\n{differ:#?}");
    // The one pair that disagrees: the source reads const[0] (`time`) where the words
    // that ran read const[3]; decoding shows no other field differs.
    assert_eq!(differ.len(), 1, "{differ:#?}");
    assert!(differ[0].contains("shadertoy_sin.fs.asm"), "{differ:#?}");
    assert!(
        differ[0].ends_with("\n  3: [\"RGB_ADDR2 0 -> 3\"]"),
        "{differ:#?}"
    );
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn every_mesa_program_round_trips_words_text_words() {
    let dir = r500_dir("mesa");
    let programs = files(&dir, ".fs.txt");
    assert_eq!(programs.len(), 13);
    for path in programs {
        let words = r500::load_words(&path).unwrap();
        assert!(!words.is_empty());
        round_trip(&words, &path.display().to_string());
    }
}

// ---------------------------------------------------------------------------------------
// The interpreter, op by op. Expected values are closed forms worked by hand.

use theia::stage::r500::interp::{Constants, Pixel, R500Program, Texture};
use theia::stage::{ForeignProgram, NamedVec4};

fn program(source: &str, constants: Constants) -> R500Program {
    let words = r500::assemble(source, Path::new("test.fs.asm"))
        .unwrap_or_else(|e| panic!("{e}"))
        .program;
    R500Program::new(&words, constants).unwrap()
}

/// Runs `source` once with temp[k] = `temps[k]`; the outputs by name.
fn run_with(source: &str, temps: &[[f32; 4]], constants: Constants) -> Vec<(String, [f32; 4])> {
    let inputs: Vec<NamedVec4> = temps
        .iter()
        .enumerate()
        .map(|(k, &value)| NamedVec4 {
            name: format!("temp{k}"),
            value,
        })
        .collect();
    program(source, constants)
        .run_once(&inputs, 10_000)
        .unwrap()
}

/// out[0] of one run.
fn out0(source: &str, temps: &[[f32; 4]]) -> [f32; 4] {
    let outputs = run_with(source, temps, Constants::default());
    assert_eq!(outputs[0].0, "out[0]", "{outputs:?}");
    outputs[0].1
}

/// Bitwise equality, so that -0 and NaN count.
fn same(a: [f32; 4], b: [f32; 4]) -> bool {
    a.iter()
        .zip(&b)
        .all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

macro_rules! assert_same {
    ($a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        assert!(same(a, b), "{a:?} != {b:?}");
    }};
}

/// One alpha op on temp[0].a, its result replicated to RGB by SOP.
fn alpha_op(op: &str, x: f32) -> f32 {
    let source = format!("OUT\nsrc0.a = temp[0] :\n  {op} src0.a ,\n  out[0].rgb = SOP ;\n");
    let rgb = out0(&source, &[[0.0, 0.0, 0.0, x]]);
    assert!(
        same([rgb[0]; 4], [rgb[1], rgb[2], rgb[0], rgb[0]]),
        "{rgb:?}"
    );
    rgb[0]
}

#[test]
fn clear_writes_opaque_black() {
    let source = "OUT TEX_SEM_WAIT\n:\n  out[0].a = MAX src0.1 src0.1 ,\n  out[0].rgb = MAX src0.000 src0.000 ;\n";
    assert_same!(out0(source, &[]), [0.0, 0.0, 0.0, 1.0]);
}

#[test]
fn mad_with_constant_swizzles_zero_half_one() {
    let source = "OUT\nsrc0.rgb = temp[0], src0.a = temp[0] :\n  out[0].a = MAD src0.a src0.a src0.1 ,\n  out[0].rgb = MAD src0.rgb src0.h1_ src0.00h ;\n";
    // (2·½ + 0, 3·1 + 0, 4·0 + ½) and 5·5 + 1; `_` (unused) reads 0.
    assert_same!(out0(source, &[[2.0, 3.0, 4.0, 5.0]]), [1.0, 3.0, 0.5, 26.0]);
}

#[test]
fn legacy_multiply_makes_zero_times_anything_zero() {
    let source = "OUT\nsrc0.rgb = temp[0], src0.a = temp[0] :\n  out[0].a = MAD src0.a src0.b src0.0 ,\n  out[0].rgb = MAD src0.rgb src0.ggg src0.000 ;\n";
    let inf = f32::INFINITY;
    let out = out0(source, &[[0.0, inf, f32::NAN, 0.0]]);
    // 0·inf = 0; inf·inf = inf; NaN·inf = NaN; 0·NaN = 0.
    assert_same!(out, [0.0, inf, f32::NAN, 0.0]);
    // A negative zero factor still gives +0 (the rule, not IEEE's sign).
    let out = out0(source, &[[-0.0, 5.0, 1.0, -0.0]]);
    assert_same!(out, [0.0, 25.0, 5.0, 0.0]);
}

#[test]
fn dot_products_dp3_dp4_and_the_alpha_dp() {
    let temps = [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]];
    let lets = "src0.rgb = temp[0], src0.a = temp[0], src1.rgb = temp[1], src1.a = temp[1] :";
    // 1·5 + 2·6 + 3·7 = 38; DP4 adds the alpha unit's A·B = 4·8: 70.
    let dp3 = format!("OUT\n{lets}\n  out[0].a = DP ,\n  out[0].rgb = DP3 src0.rgb src1.rgb ;\n");
    assert_same!(out0(&dp3, &temps), [38.0, 38.0, 38.0, 38.0]);
    let dp4 = format!(
        "OUT\n{lets}\n  out[0].a = DP src0.a src1.a ,\n  out[0].rgb = DP4 src0.rgb src1.rgb ;\n"
    );
    assert_same!(out0(&dp4, &temps), [70.0, 70.0, 70.0, 70.0]);
    // D2A: 1·5 + 2·6 + C.b (temp1.b = 7) = 24.
    let d2a = format!("OUT\n{lets}\n  out[0].rgb = D2A src0.rgb src1.rgb src1.rgb ;\n");
    assert_same!(
        out0(&d2a, &temps)[..3]
            .try_into()
            .map(|a: [f32; 3]| [a[0], a[1], a[2], 0.0])
            .unwrap(),
        [24.0, 24.0, 24.0, 0.0]
    );
}

#[test]
fn selects_min_max_cnd_cmp_per_channel() {
    let temps = [[-1.0, 0.5, 0.75, -0.0], [2.0, 2.0, 2.0, 2.0]];
    let lets = "src0.rgb = temp[0], src0.a = temp[0], src1.rgb = temp[1], src1.a = temp[1] :";
    let run = |rgb: &str, alpha: &str| {
        out0(
            &format!("OUT\n{lets}\n  out[0].a = {alpha} ,\n  out[0].rgb = {rgb} ;\n"),
            &temps,
        )
    };
    // CND: C > 0.5 picks A (2) else B (0): only 0.75 passes; 0.5 does not.
    // CMP: C >= 0 picks A: 0.5 and 0.75 pass, and -0 (alpha) does too.
    assert_same!(
        run("CND src1.rgb src1.000 src0.rgb", "CMP src1.a src1.0 src0.a"),
        [0.0, 0.0, 2.0, 2.0]
    );
    assert_same!(
        run("CMP src1.rgb src1.000 src0.rgb", "CND src1.a src1.0 src0.a"),
        [0.0, 2.0, 2.0, 0.0]
    );
    assert_same!(
        run("MIN src0.rgb src0.hhh", "MIN src0.a src1.a"),
        [-1.0, 0.5, 0.5, -0.0]
    );
    assert_same!(
        run("MAX src0.rgb src0.hhh", "MAX src1.a src0.a"),
        [0.5, 0.5, 0.75, 2.0]
    );
    // A NaN condition fails both compares and picks B.
    let nan = out0(
        &format!("OUT\n{lets}\n  out[0].rgb = CMP src1.rgb src1.000 src0.aaa ;\n"),
        &[[0.0, 0.0, 0.0, f32::NAN], [2.0; 4]],
    );
    assert_same!(nan, [0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn frc_keeps_the_fraction_below_one() {
    let source = "OUT\nsrc0.rgb = temp[0], src0.a = temp[0] :\n  out[0].a = FRC src0.a ,\n  out[0].rgb = FRC src0.rgb ;\n";
    // -1.25 - (-2) = 0.75; 2.75 - 2; -0 - (-0) = +0; inf - inf = NaN.
    assert_same!(
        out0(source, &[[-1.25, 2.75, -0.0, f32::INFINITY]]),
        [0.75, 0.75, 0.0, f32::NAN]
    );
    assert_same!(
        out0(source, &[[1e10, 0.5, -0.5, 3.0]]),
        [0.0, 0.5, 0.5, 0.0]
    );
}

#[test]
fn transcendentals_at_their_edges() {
    let inf = f32::INFINITY;
    for (op, x, expected) in [
        ("EX2", 3.0, 8.0),
        ("EX2", -1.0, 0.5),
        ("EX2", -inf, 0.0),
        ("EX2", 128.0, inf),
        ("LN2", 8.0, 3.0),
        ("LN2", 0.0, -inf),
        ("LN2", inf, inf),
        ("RCP", 4.0, 0.25),
        ("RCP", 0.0, inf),
        ("RCP", -0.0, -inf),
        ("RCP", inf, 0.0),
        ("RSQ", 4.0, 0.5),
        ("RSQ", 0.0, inf),
        ("RSQ", inf, 0.0),
        ("SIN", 0.25, 1.0),
        ("SIN", -0.25, -1.0),
        ("COS", 0.0, 1.0),
        ("COS", 0.5, -1.0),
    ] {
        let got = alpha_op(op, x);
        assert_eq!(got, expected, "{op}({x})");
    }
    for (op, x) in [
        ("LN2", -1.0),
        ("RSQ", -4.0),
        ("SIN", inf),
        ("COS", f32::NAN),
    ] {
        assert!(alpha_op(op, x).is_nan(), "{op}({x})");
    }
    // sin(2π·½) and cos(2π·¼) are 0 but for the rounding of π.
    assert!(alpha_op("SIN", 0.5).abs() < 1e-6);
    assert!(alpha_op("COS", 0.25).abs() < 1e-6);
    // sin(2π/12) = ½ to within a few ulps.
    assert!((alpha_op("SIN", 1.0 / 12.0) - 0.5).abs() < 1e-6);
}

#[test]
fn presubtract_and_source_modifiers() {
    let temps = [[0.25, -2.0, 3.0, 0.25], [1.0, 1.0, 1.0, 1.0]];
    let run = |op: &str| {
        out0(
            &format!("OUT\nsrc0.rgb = temp[0], src1.rgb = temp[1], src0.a = temp[0], src1.a = temp[1], srcp.rgb = {op}, srcp.a = {op} :\n  out[0].a = MAD srcp.a src0.1 src0.0 ,\n  out[0].rgb = MAD srcp.rgb src0.111 src0.000 ;\n"),
            &temps,
        )
    };
    // neg2: 1 - 2·s0; sub: s1 - s0; add: s1 + s0; neg: 1 - s0.
    assert_same!(run("neg2"), [0.5, 5.0, -5.0, 0.5]);
    assert_same!(run("sub"), [0.75, 3.0, -2.0, 0.75]);
    assert_same!(run("add"), [1.25, -1.0, 4.0, 1.25]);
    assert_same!(run("neg"), [0.75, 3.0, -2.0, 0.75]);
    let modifier = |arg: &str| {
        out0(
            &format!("OUT\nsrc0.rgb = temp[0] :\n  out[0].rgb = MAD {arg} src0.111 src0.000 ;\n"),
            &[[-2.0, 3.0, 0.0, 0.0]],
        )
    };
    // -0 · 1 is +0 under the multiply rule, so no -0 comes out of these MADs.
    assert_same!(modifier("-src0.rgb"), [2.0, -3.0, 0.0, 0.0]);
    assert_same!(modifier("|src0.rgb|"), [2.0, 3.0, 0.0, 0.0]);
    assert_same!(modifier("-|src0.rgb|"), [-2.0, -3.0, 0.0, 0.0]);
}

#[test]
fn output_modifiers_and_clamping() {
    let run = |head: &str, omod: &str, x: [f32; 4]| {
        out0(
            &format!("OUT {head}\nsrc0.rgb = temp[0] :\n  out[0].rgb = {omod} MAD src0.rgb src0.111 src0.000 ;\n"),
            &[x],
        )
    };
    let x = [0.375, -0.5, 3.0, 0.0];
    assert_same!(run("", "4.0 *", x), [1.5, -2.0, 12.0, 0.0]);
    assert_same!(run("", "0.125 *", x), [0.046875, -0.0625, 0.375, 0.0]);
    assert_same!(run("RGB_CLAMP", "2.0 *", x), [0.75, 0.0, 1.0, 0.0]);
    // OMOD 7: no scale and no clamp even with RGB_CLAMP.
    assert_same!(run("RGB_CLAMP", "OMOD_DISABLE", x), [0.375, -0.5, 3.0, 0.0]);
    // Clamping sends NaN to 0 and keeps the ends.
    assert_same!(
        run("RGB_CLAMP", "", [f32::NAN, 1.0, f32::NEG_INFINITY, 0.0]),
        [0.0, 1.0, 0.0, 0.0]
    );
}

#[test]
fn inline_constants_and_the_slot_model() {
    // float(48) = 0.5, float(61) = 1.625 in every channel.
    let source = "OUT\nsrc0.rgb = float(48), src1.a = float(61) :\n  out[0].a = MAD src1.a src0.1 src0.0 ,\n  out[0].rgb = MAD src0.rgb src1.aaa src0.000 ;\n";
    assert_same!(out0(source, &[]), [0.8125, 0.8125, 0.8125, 1.625]);
    // Slot 0's RGB comes from temp[0], its alpha from temp[1]: src0.a reads temp[1].a and
    // an alpha op's src0.g reads temp[0].g.
    let source = "OUT\nsrc0.rgb = temp[0], src0.a = temp[1] :\n  out[0].a = MAD src0.g src0.1 src0.0 ,\n  out[0].rgb = MAD src0.aar src0.111 src0.000 ;\n";
    assert_same!(
        out0(source, &[[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]]),
        [8.0, 8.0, 1.0, 2.0]
    );
    // Constants follow the same model: const[0].rgb and const[1].a.
    let mut constants = Constants::default();
    constants.floats[0] = [1.0, 2.0, 3.0, 4.0];
    constants.floats[1] = [5.0, 6.0, 7.0, 8.0];
    let source = "OUT\nsrc0.rgb = const[0], src0.a = const[1] :\n  out[0].a = MAX src0.a src0.a ,\n  out[0].rgb = MAX src0.rgb src0.rgb ;\n";
    let outputs = run_with(source, &[], constants);
    assert_same!(outputs[0].1, [1.0, 2.0, 3.0, 8.0]);
}

#[test]
fn write_masks_keep_the_other_channels() {
    let source = "src0.rgb = float(56) :\n  temp[0].g = MAD src0.rgb src0.111 src0.000 ;\nOUT\nsrc0.rgb = temp[0], src0.a = temp[0] :\n  out[0].a = MAX src0.a src0.a ,\n  out[0].rb = MAX src0.rgb src0.rgb ;\n";
    // temp[0].g := 1; out[0].g is never written and stays 0.
    assert_same!(
        out0(source, &[[7.0, 8.0, 9.0, 10.0]]),
        [7.0, 0.0, 9.0, 10.0]
    );
    let rgb_only =
        "OUT\nsrc0.rgb = temp[0] :\n  temp[1].rgb = out[0].g = MAX src0.rgb src0.rgb ;\n";
    assert_same!(
        out0(rgb_only, &[[7.0, 8.0, 9.0, 10.0]]),
        [0.0, 8.0, 0.0, 0.0]
    );
}

#[test]
fn predicates_gate_writes() {
    // An ALU instruction's out[1].r sets predicate r to (value < 0) (TARGET 1 = `<`).
    let run = |x: f32, head: &str| {
        run_with(
            &format!("src0.rgb = temp[0] :\n  out[1].r = MAD src0.rgb src0.111 src0.000 ;\nOUT {head}\n:\n  out[0].rgb = MAX src0.111 src0.111 ;\n"),
            &[[x, 0.0, 0.0, 0.0]],
            Constants::default(),
        )
    };
    let written = |outputs: Vec<(String, [f32; 4])>| outputs.first().map(|o| o.1);
    assert_eq!(
        written(run(-1.0, "RGB_PRED_SEL=2")),
        Some([1.0, 1.0, 1.0, 0.0])
    );
    assert_eq!(written(run(1.0, "RGB_PRED_SEL=2")), None);
    assert_eq!(
        written(run(1.0, "RGB_PRED_SEL=2 RGB_PRED_INV")),
        Some([1.0, 1.0, 1.0, 0.0])
    );
    assert_eq!(written(run(-1.0, "")), Some([1.0, 1.0, 1.0, 0.0]));
}

#[test]
fn alu_result_drives_an_if() {
    // temp0.r < 0 sets the ALU result; JUMP_FUNC 0x0F jumps when it is false (Mesa's IF).
    let source = "ALU_WMASK ALU_RESULT_OP=1\nsrc0.rgb = temp[0] :\n  temp[1].r = MAD src0.rrr src0.111 src0.000 ;\nFC ALU_WAIT\n  JUMP 3 JUMP_FUNC=0x0F ;\nOUT\n:\n  out[0].rgb = MAX src0.111 src0.111 ;\nOUT\n:\n  out[0].a = MAX src0.1 src0.1 ;\n";
    assert_same!(out0(source, &[[-1.0, 0.0, 0.0, 0.0]]), [1.0, 1.0, 1.0, 1.0]);
    assert_same!(out0(source, &[[1.0, 0.0, 0.0, 0.0]]), [0.0, 0.0, 0.0, 1.0]);
    // ALU_RESULT_SEL picks alpha instead: alpha 0 == 0 (op 0) is true, so no jump.
    let alpha = "ALU_WMASK ALU_RESULT_SEL\nsrc0.a = temp[0] :\n  temp[1].a = MAX src0.a src0.a ;\nFC\n  JUMP 3 JUMP_FUNC=0x0F ;\nOUT\n:\n  out[0].rgb = MAX src0.111 src0.111 ;\nOUT\n:\n  out[0].a = MAX src0.1 src0.1 ;\n";
    assert_same!(out0(alpha, &[[0.0; 4]]), [1.0, 1.0, 1.0, 1.0]);
    assert_same!(out0(alpha, &[[0.0, 0.0, 0.0, 2.0]]), [0.0, 0.0, 0.0, 1.0]);
}

#[test]
fn loops_count_step_al_and_break() {
    // sum += const[aL].a over the loop; i0 = (count, initial aL, step).
    let source = "FC\n  LOOP 2 ;\nsrc0.a = temp[4], src1.a = const[aL+0] :\n  temp[4].a = MAD src0.a src0.1 src1.a ;\nFC\n  ENDLOOP 1 ;\nOUT\nsrc0.a = temp[4] :\n  out[0].a = MAX src0.a src0.a ;\n";
    let mut constants = Constants::default();
    for (k, v) in [1.0, 10.0, 100.0, 1000.0].into_iter().enumerate() {
        constants.floats[k][3] = v;
    }
    let sum = |count: f32, init: f32, step: f32| {
        let mut constants = constants.clone();
        constants
            .set(&NamedVec4 {
                name: "i0".into(),
                value: [count, init, step, 0.0],
            })
            .unwrap();
        run_with(source, &[], constants)[0].1[3]
    };
    assert_eq!(sum(3.0, 0.0, 1.0), 111.0);
    assert_eq!(sum(2.0, 1.0, 2.0), 1010.0);
    assert_eq!(sum(4.0, 3.0, -1.0), 1111.0);
    // A count of 0 skips the body and the ENDLOOP.
    assert_eq!(sum(0.0, 0.0, 1.0), 0.0);
    // BREAKLOOP (JUMP_FUNC 0xFF: always) leaves after the first pass of 255.
    let brk = "FC\n  LOOP 3 ;\nsrc0.a = temp[4] :\n  temp[4].a = MAD src0.a src0.1 src0.1 ;\nFC\n  BREAKLOOP 4 JUMP_FUNC=255 ;\nFC\n  ENDLOOP 1 ;\nOUT\nsrc0.a = temp[4] :\n  out[0].a = MAX src0.a src0.a ;\n";
    assert_eq!(run_with(brk, &[], Constants::default())[0].1[3], 1.0);
}

#[test]
fn an_endless_jump_stops_at_the_budget_with_a_fault() {
    let program = program("FC\n  JUMP 0 JUMP_FUNC=255 ;\n", Constants::default());
    let error = program.run_once(&[], 1000).unwrap_err().to_string();
    assert_eq!(
        error,
        "the R500 program stops at instruction 0: the instruction budget ran out (an endless loop?)"
    );
}

/// A texture whose texel at (s, t) is (s, t, ¼, 1), to see coordinates and swizzles.
struct Coordinates;

impl Texture for Coordinates {
    fn sample(&self, unit: u8, s: f32, t: f32) -> [f32; 4] {
        [s, t, 0.25 * (unit + 1) as f32, 1.0]
    }
}

fn run_tex(source: &str, temp0: [f32; 4]) -> Pixel {
    let mut pixel = Pixel::default();
    pixel.temps[0] = temp0;
    program(source, Constants::default())
        .run(&mut pixel, &Coordinates, 100)
        .unwrap();
    pixel
}

#[test]
fn tex_ld_proj_swizzles_masks_and_texkill() {
    let ld = "TEX TEX_SEM_WAIT TEX_SEM_ACQUIRE\n  temp[1].rgba = LD tex[0].bgra temp[0].rgaa ;\n";
    assert_same!(
        run_tex(ld, [0.5, 0.75, 9.0, 2.0]).temps[1],
        [0.25, 0.75, 0.5, 1.0]
    );
    // S and T from other channels; unit 1; only r and a written.
    let masked = "TEX\n  temp[1].ra = LD tex[1].rgba temp[0].abrr ;\n";
    assert_same!(
        run_tex(masked, [0.5, 0.75, 9.0, 2.0]).temps[1],
        [2.0, 0.0, 0.0, 1.0]
    );
    // PROJ divides S and T by Q.
    let proj = "TEX\n  temp[1].rgba = PROJ tex[0].rgba temp[0].rgba ;\n";
    assert_same!(
        run_tex(proj, [1.0, 3.0, 0.0, 4.0]).temps[1],
        [0.25, 0.75, 0.25, 1.0]
    );
    // TEXKILL removes the pixel if any of S, T, R, Q is below 0 (-0 is not).
    let kill = "TEX\n  temp[0].none = TEXKILL tex[0].rgba temp[0].rgba ;\nOUT\n:\n  out[0].a = MAX src0.1 src0.1 ;\n";
    assert!(run_tex(kill, [0.0, 0.0, -0.5, 1.0]).killed);
    let alive = run_tex(kill, [0.0, -0.0, 0.0, 1.0]);
    assert!(!alive.killed);
    assert_eq!(alive.outs[0][3], 1.0);
}

#[test]
fn mdh_of_a_uniform_quad_is_zero() {
    // A·B + C with A = src0 and C = -src0 of equal pixels: src0·1 - src0.
    let source = "OUT\nsrc0.rgb = temp[0] :\n  out[0].rgb = MDH src0.rgb src0.111 -src0.rgb ;\n";
    assert_same!(out0(source, &[[3.0, -2.0, 0.5, 0.0]]), [0.0, 0.0, 0.0, 0.0]);
}

// ---------------------------------------------------------------------------------------
// Reserved encodings and assembler errors.

#[test]
fn reserved_encodings_are_errors() {
    let clear: Words = [
        0x00078005, 0x08020080, 0x08020080, 0x00920490, 0x00c18003, 0x00000005,
    ];
    assert!(r500::decode(&clear).is_ok());
    let with = |word: usize, value: u32| {
        let mut words = clear;
        words[word] = value;
        r500::decode(&words).unwrap_err()
    };
    assert_eq!(with(5, 6), "RGB_OP 6 is reserved");
    assert_eq!(with(5, 13), "RGB_OP 13 is reserved");
    assert_eq!(with(4, 0x00c18004), "ALPHA_OP 4 is reserved");
    assert_eq!(with(0, 0x00078005 | 6 << 3), "RGB_PRED_SEL 6 is reserved");
    // TEX: op 7, and words 4-5 unused.
    let tex: Words = [0x00007807, 0x02400000, 0xe400f400, 0, 0, 0];
    assert!(r500::decode(&tex).is_ok());
    let mut bad = tex;
    bad[1] |= 7 << 22;
    assert_eq!(r500::decode(&bad).unwrap_err(), "TEX_OP 7 is reserved");
    let mut bad = tex;
    bad[4] = 1;
    assert_eq!(
        r500::decode(&bad).unwrap_err(),
        "reserved bits 0x00000001 set in word 4 of a TEX instruction"
    );
    let error = r500::disassemble(&[clear, bad]).unwrap_err().to_string();
    assert!(error.starts_with("instruction 1: reserved bits"), "{error}");
}

#[test]
fn assembler_errors_name_file_line_and_column() {
    let error = |source: &str| {
        r500::assemble(source, Path::new("x.fs.asm"))
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        error("OUT\n:\n  out[0].rgb = MAD src0.rg src0.111 src0.000 ;\n"),
        "x.fs.asm:3:25: error: expected 3 swizzle character(s) of r, g, b, a, 0, h, 1, _ for the RGB operation, found `rg`"
    );
    assert_eq!(
        error("src0.rgb = temp[128] :\n"),
        "x.fs.asm:1:17: error: expected a temp number (0 to 127), found `128`"
    );
    assert_eq!(
        error(":\n  temp[0].a = FOO src0.a ;\n"),
        "x.fs.asm:2:15: error: expected an ALU op (MAD, DP3, DP4, D2A, MIN, MAX, CND, CMP, FRC, SOP, MDH, MDV, DP, EX2, LN2, RCP, RSQ, SIN, COS), found `FOO`"
    );
    assert_eq!(
        error(":\n  temp[0].a = RSQ src0.a ,\n  temp[1].a = RCP src0.a ;\n"),
        "x.fs.asm:3:15: error: both operations are alpha operations"
    );
    assert_eq!(
        error("src0.rgb = temp[0] :\n  temp[0].rgb = MAD src0.rgb src0.rgb src0.rgb"),
        "x.fs.asm:2:47: error: expected `,` or `;` after three arguments, found the end of the file"
    );
    assert_eq!(
        error("#include \"other.fs.asm\"\n"),
        "x.fs.asm:1:1: error: #include needs a source file (its directory finds the included file)"
    );
    assert_eq!(
        error("OUT RGB_PRED_SEL=6\n:\n ;\n"),
        "x.fs.asm:1:1: error: RGB_PRED_SEL 6 is reserved"
    );
    assert_eq!(
        error("FC\n  JUMP 512 ;\n"),
        "x.fs.asm:2:8: error: expected a jump address (0 to 511), found `512`"
    );
}

// ---------------------------------------------------------------------------------------
// The example programs in shaders/r500 as the pixel stage, against pixels predicted
// without the interpreter: from the plain render's colour words, or from the pixel's
// position and the independent model of the ROM's closest hit (tests/model).

use std::sync::Arc;
use theia::emu::core::alu::{Vec3, ONE};
use theia::emu::machine::{render, Frame, RenderOptions};
use theia::io::scene::generate::uv_sphere_obj;
use theia::io::scene::obj::{default_scene, load_obj_text, MemoryAssets, ObjOptions};
use theia::io::scene::Scene;

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("shaders/r500")
        .join(name)
}

fn small_options() -> ObjOptions {
    ObjOptions {
        width: 64,
        height: 48,
        ..ObjOptions::default()
    }
}

/// The built-in scene (every ray hits a wall or a box) and a sphere (with misses).
fn scenes() -> Vec<(&'static str, Scene)> {
    // Unlit, so that the plain render shows the texture colour the stage receives.
    let flat = ObjOptions {
        flat: true,
        ..small_options()
    };
    let sphere = load_obj_text(
        &uv_sphere_obj(16, 8),
        Path::new("sphere.obj"),
        &MemoryAssets(&[]),
        &flat,
    )
    .unwrap()
    .scene;
    vec![
        (
            "default",
            default_scene::load(&small_options()).unwrap().scene,
        ),
        ("sphere", sphere),
    ]
}

fn render_with(scene: &Scene, stage: Option<&Path>) -> Frame {
    let stage = stage.map(|path| {
        let words = r500::load_words(path).unwrap();
        Arc::new(R500Program::new(&words, Constants::default()).unwrap()) as _
    });
    let options = RenderOptions {
        stage,
        ..RenderOptions::default()
    };
    render(scene, &options).unwrap().frame
}

fn pixel_words(frame: &Frame, k: usize) -> Vec3 {
    std::array::from_fn(|c| frame.words[3 * k + c])
}

/// `value` in Q15.17, rounded to nearest.
fn q17(value: f64) -> u32 {
    (value * ONE as f64).round() as i32 as u32
}

#[test]
fn every_example_assembles_and_says_how_to_run_it() {
    let mut names: Vec<String> = std::fs::read_dir(example(""))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["checker.fs.asm", "position.fs.asm", "texture.fs.asm"]
    );
    for name in names {
        let path = example(&name);
        let words = r500::assemble_file(&path)
            .unwrap_or_else(|e| panic!("{e}"))
            .program;
        assert!(r500::decode_program(&words).is_ok());
        let source = std::fs::read_to_string(&path).unwrap();
        assert!(
            source.contains(&format!("theia render --shader shaders/r500/{name}")),
            "{name}"
        );
    }
}

#[test]
fn texture_example_is_the_plain_render_clamped_to_one() {
    for (name, scene) in scenes() {
        let plain = render_with(&scene, None);
        let shaded = render_with(&scene, Some(&example("texture.fs.asm")));
        assert_eq!(shaded.unwritten_pixels(), 0, "{name}");
        let mut clamped = 0;
        for k in 0..(plain.width * plain.height) as usize {
            // The ROM's colour words; the miss colour 3.0 (red) clamps to 1.0.
            let want = pixel_words(&plain, k).map(|w| (w as i32).clamp(0, ONE as i32) as u32);
            clamped += (want != pixel_words(&plain, k)) as usize;
            assert_eq!(pixel_words(&shaded, k), want, "{name}: pixel {k}");
        }
        assert_eq!(
            clamped > 0,
            name == "sphere",
            "{name}: {clamped} pixels clamped"
        );
    }
}

#[test]
fn position_example_shows_the_pixel_centre_and_the_hit_flag() {
    for (name, scene) in scenes() {
        let shaded = render_with(&scene, Some(&example("position.fs.asm")));
        let hits = model::hits(&scene);
        let (w, h) = (scene.width() as usize, scene.height() as usize);
        let mut misses = 0;
        assert_eq!(hits.len(), w * h);
        for (k, hit) in hits.iter().enumerate() {
            let (col, row) = ((k % w) as f64, (k / w) as f64);
            // 0.5·x + 0.5 = (col + ½)/W; 0.5·y + 0.5 = 1 − (row + ½)/H (y up).
            let want = [
                q17((col + 0.5) / w as f64),
                q17(1.0 - (row + 0.5) / h as f64),
                if hit.is_some() { ONE } else { 0 },
            ];
            misses += hit.is_none() as usize;
            assert_eq!(pixel_words(&shaded, k), want, "{name}: pixel {k}");
        }
        assert_eq!(misses > 0, name == "sphere", "{name}");
    }
}

#[test]
fn checker_example_halves_the_colour_on_dark_squares() {
    for (name, scene) in scenes() {
        let plain = render_with(&scene, None);
        let shaded = render_with(&scene, Some(&example("checker.fs.asm")));
        let (w, h) = (scene.width() as usize, scene.height() as usize);
        let mut dark = 0;
        for k in 0..w * h {
            let x = 2.0 * ((k % w) as f64 + 0.5) / w as f64 - 1.0;
            let y = 1.0 - 2.0 * ((k / w) as f64 + 0.5) / h as f64;
            // Squares of side ¼ in [-1, 1]²: frc(2x) >= ½ exactly when floor(4x) is odd, so
            // a square is light when floor(4x) and floor(4y) agree in parity.
            let light = ((4.0 * x).floor() + (4.0 * y).floor()).rem_euclid(2.0) == 0.0;
            dark += !light as usize;
            let want = pixel_words(&plain, k).map(|word| {
                let word = word as i32 as i64;
                // Halving rounds a half unit up (to nearest, ties away from 0); clamp at 1.
                let value = if light {
                    word
                } else {
                    (word + 1).div_euclid(2)
                };
                value.clamp(0, ONE as i64) as u32
            });
            assert_eq!(
                pixel_words(&shaded, k),
                want,
                "{name}: pixel {k} light {light}"
            );
        }
        assert!(dark > w * h / 3, "{name}: {dark}");
    }
}

/// Random valid instructions of all three types: words -> text -> words is the identity,
/// so every field has a way into the text and back (a fixed-seed xorshift, no new crate).
#[test]
fn random_valid_instructions_round_trip_through_the_text() {
    use theia::stage::r500::fields as f;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut random = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u32
    };
    let mut tried = [0; 4];
    for _ in 0..20_000 {
        let mut words: Words = std::array::from_fn(|_| random());
        let ty = words[0] & 3;
        let reserved = f::reserved_bits(ty);
        for (word, mask) in words.iter_mut().zip(reserved) {
            *word &= !mask;
        }
        // Fix up reserved codes so the instruction is valid.
        for field in [f::RGB_PRED_SEL, f::ALPHA_PRED_SEL] {
            let value = field.get(&words) % 6;
            field.set(&mut words, value);
        }
        if ty <= 1 {
            while r500::decode(&words).is_err() {
                f::RGB_OP.set(&mut words, random() % 13);
                f::ALPHA_OP.set(&mut words, random() % 16);
            }
        } else if ty == 3 {
            f::TEX_OP.set(&mut words, random() % 7);
        }
        assert!(r500::decode(&words).is_ok(), "{words:08x?}");
        tried[ty as usize] += 1;
        round_trip(&[words], "random");
    }
    assert!(tried.iter().all(|&n| n > 4000), "{tried:?}");
}

// ---------------------------------------------------------------------------------------
// The command line: run-shader, asm/disasm --isa r500, render --shader with constants.

fn theia_ok(dir: &Path, args: &[&str]) -> String {
    let output = common::theia(dir, args);
    assert!(
        output.status.success(),
        "{args:?}: {}",
        common::text(&output.stderr)
    );
    common::text(&output.stdout)
}

fn theia_error(dir: &Path, args: &[&str]) -> String {
    let output = common::theia(dir, args);
    assert!(!output.status.success(), "{args:?} succeeded");
    common::text(&output.stderr)
}

#[test]
fn run_shader_prints_each_output_in_shortest_form() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // (0.5·-1 + 0.5, 0.5·1 + 0.5, hit 1).
    assert_eq!(
        theia_ok(
            root,
            &[
                "run-shader",
                "shaders/r500/position.fs.asm",
                "--in",
                "temp3=-1,1,0,1",
                "--in",
                "temp[2]=0,0,5,1"
            ]
        ),
        "out[0] = 0 1 1 1\n"
    );
    let dir = tempfile::tempdir().unwrap();
    // out[0] = (c0.r·temp0.r, -0·1 → 0, 1/0 → inf, c0.a) and depth = c0.a: shortest forms.
    std::fs::write(
        dir.path().join("p.fs.asm"),
        "src0.a = temp[0] :\n  temp[1].a = RCP src0.a ;\n\
         OUT W_OMASK\nsrc0.rgb = temp[0], src1.rgb = const[0], src0.a = const[0], src1.a = temp[1] :\n  \
         out[0].a = MAX src0.a src0.a ,\n  out[0].rgb = OMOD_DISABLE MAX src0.r0r src1.r0b ;\n\
         OUT\nsrc0.a = temp[1] :\n  out[0].b = SOP ,\n  MAX src0.a src0.a ;\n",
    )
    .unwrap();
    let out = theia_ok(
        dir.path(),
        &[
            "run-shader",
            "p.fs.asm",
            "--in",
            "temp0=0.1,0,0,0",
            "--const",
            "c0=-0,0,nan,-2.5",
        ],
    );
    assert_eq!(out, "out[0] = 0.1 0 inf -2.5\ndepth = -2.5 0 0 0\n");
    // A constants file beside the program, overridden by --const.
    std::fs::write(
        dir.path().join("p.fs.asm.consts"),
        "# test\nc0=0.5,0,0,7 -- seven\n",
    )
    .unwrap();
    let out = theia_ok(
        dir.path(),
        &["run-shader", "p.fs.asm", "--in", "temp0=0.25,0,0,0"],
    );
    assert_eq!(out, "out[0] = 0.5 0 inf 7\ndepth = 7 0 0 0\n");
    let out = theia_ok(
        dir.path(),
        &[
            "run-shader",
            "p.fs.asm",
            "--in",
            "temp0=0.25,0,0,0",
            "--const",
            "c0=0,0,0,1",
        ],
    );
    assert_eq!(out, "out[0] = 0.25 0 inf 1\ndepth = 1 0 0 0\n");
    // Errors say where and what.
    std::fs::write(dir.path().join("bad.fs.asm.consts"), "c0=1\nz9=1\n").unwrap();
    std::fs::write(dir.path().join("bad.fs.asm"), ":\n ;\n").unwrap();
    let error = theia_error(dir.path(), &["run-shader", "bad.fs.asm"]);
    assert!(
        error.contains("bad.fs.asm.consts:2:1: `z9` is no R500 constant"),
        "{error}"
    );
    let error = theia_error(dir.path(), &["run-shader", "p.fs.asm", "--in", "v0=1"]);
    assert!(error.contains("`v0` is no R500 input"), "{error}");
}

#[test]
fn asm_and_disasm_take_isa_r500() {
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = root.join("shaders/r500/checker.fs.asm");
    let bin = dir.path().join("checker.fs.bin");
    theia_ok(
        root,
        &["asm", source.to_str().unwrap(), "-o", bin.to_str().unwrap()],
    );
    let words = r500::load_words(&bin).unwrap();
    assert_eq!(words, r500::assemble_file(&source).unwrap().program);
    // Hex words on stdout, from a name without the usual extension given --isa.
    std::fs::copy(&source, dir.path().join("checker.txt.src")).unwrap();
    let hex = theia_ok(dir.path(), &["asm", "--isa", "r500", "checker.txt.src"]);
    assert_eq!(hex, r500::words_to_hex(&words));
    let text = theia_ok(dir.path(), &["disasm", "checker.fs.bin"]);
    assert_eq!(
        r500::assemble(&text, Path::new("x")).unwrap().program,
        words
    );
    assert!(
        text.starts_with("src0.rgb = temp[3] :\n  temp[4].rg = 2.0 * MAD"),
        "{text}"
    );
    let error = theia_error(dir.path(), &["asm", "--isa", "r500", "missing.fs.asm"]);
    assert!(error.contains("missing.fs.asm"), "{error}");
}

#[test]
fn render_takes_an_r500_shader_and_its_constants() {
    let dir = tempfile::tempdir().unwrap();
    // out[0].rgb = const[0].rgb everywhere.
    std::fs::write(
        dir.path().join("flat.fs.asm"),
        "OUT\nsrc0.rgb = const[0] :\n  out[0].rgb = MAX src0.rgb src0.rgb ;\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("flat.fs.asm.consts"), "c0=1,0.5,0,1\n").unwrap();
    theia_ok(
        dir.path(),
        &[
            "render",
            "--width",
            "8",
            "--height",
            "6",
            "--shader",
            "flat.fs.asm",
            "-o",
            "flat.png",
        ],
    );
    let image = image::open(dir.path().join("flat.png")).unwrap().to_rgb8();
    assert_eq!(image.dimensions(), (8, 6));
    // 1.0 -> 255, 0.5 (0x10000 >> 9 = 128) -> 128, as any OMWRITE of these words.
    assert!(
        image.pixels().all(|p| p.0 == [255, 128, 0]),
        "{:?}",
        image.get_pixel(0, 0)
    );
    let error = theia_error(
        dir.path(),
        &[
            "render",
            "--shader",
            "flat.fs.asm",
            "--const",
            "c300=1",
            "-o",
            "x.png",
        ],
    );
    assert!(error.contains("--const c300"), "{error}");
}
