//! Every opcode executed by the core at its edges, with the expected words written from
//! the spec's formulas (alu_semantics.md §2-§4, isa_and_formats.md §1): negative operands,
//! zero divisors, overflow wrap, magnitudes above 8192.0, equal magnitudes of opposite
//! sign in the jumps, and the core's own rules (forwarding, bank 0, CALL/RET, hangs). Then
//! the cycles the trace charges per opcode against the spec's latency table (§3, §7).

use crate::common;

use theia::emu::core::OutputMemory;
use theia::emu::core::{rom, Core, CoreState, Fault, NoObserver, Program, RomVariant};
use theia::emu::isa::registers::{register_address, EntryPoint};
use theia::emu::isa::{Opcode, Word, OPCODES};
use theia::tools::trace::{RoutineStats, Stats, TraceOptions, Tracer};

type Vec3 = [u32; 3];

/// Q15.17 of a value that is exact in binary.
fn q(v: f64) -> u32 {
    (v * 131072.0) as i64 as i32 as u32
}

fn reg(name: &str) -> u16 {
    register_address(name).unwrap_or_else(|| panic!("register {name}"))
}

fn op3(op: Opcode, d: &str, s1: &str, s2: &str) -> Word {
    Word::type1(op, reg(d), reg(s1), reg(s2))
}

fn op2(op: Opcode, d: &str, s1: &str) -> Word {
    Word::type1(op, reg(d), reg(s1), 0)
}

fn imm(op: Opcode, d: &str, value: u32) -> Word {
    Word::type2(op, reg(d), value)
}

/// SETX/SETY/SETZ of a whole register.
fn set(d: &str, v: Vec3) -> Vec<Word> {
    vec![
        imm(Opcode::Setx, d, v[0]),
        imm(Opcode::Sety, d, v[1]),
        imm(Opcode::Setz, d, v[2]),
    ]
}

fn ret(value: bool) -> Word {
    Word::type2(Opcode::Return, 0, value as u32)
}

struct Run {
    registers: Vec<Vec3>,
    returned: Result<bool, Fault>,
    output: OutputMemory,
    instructions: u64,
}

impl Run {
    fn reg(&self, name: &str) -> Vec3 {
        self.registers[reg(name) as usize]
    }
}

/// Runs `code` as the pixel shader (user code at 0x800C) on a fresh core.
fn run_with(code: &[Word], texture: &[u32], budget: u64) -> Run {
    let mut imem = Program::default_imem();
    imem[EntryPoint::PixelShader as usize] = Word(0x800C);
    imem.extend_from_slice(code);
    let program = Program::new(rom(RomVariant::Faithful), &imem);
    let mut core = Core::new(&program, texture, 64);
    core.set_budget(budget);
    let returned = core.run(EntryPoint::PixelShader, &mut NoObserver);
    Run {
        registers: (0..128).map(|a| core.register(a)).collect(),
        returned,
        output: core.output().clone(),
        instructions: core.instructions(),
    }
}

fn run(code: &[Word]) -> Run {
    run_with(code, &[], 1_000)
}

/// R1 = a, R2 = b, then `op R3 R1 R2`; returns R3.
fn binary(op: Opcode, a: Vec3, b: Vec3) -> Vec3 {
    let mut code = set("R1", a);
    code.extend(set("R2", b));
    code.push(op3(op, "R3", "R1", "R2"));
    code.push(ret(true));
    let result = run(&code);
    assert_eq!(result.returned, Ok(true));
    result.reg("R3")
}

/// R1 = a, then `op R3 R1`; returns R3.
fn unary(op: Opcode, a: Vec3) -> Vec3 {
    let mut code = set("R1", a);
    code.push(op2(op, "R3", "R1"));
    code.push(ret(true));
    run(&code).reg("R3")
}

#[test]
fn add_and_sub_keep_the_true_sign_on_overflow() {
    assert_eq!(
        binary(Opcode::Add, [q(1.5), q(-2.0), 0], [q(2.25), q(0.5), 0]),
        [q(3.75), q(-1.5), 0]
    );
    // pack(r) = {r[63], r[30:0]}: 0x7FFFFFFF + 1 loses bit 31, keeps the sign (+).
    assert_eq!(
        binary(
            Opcode::Add,
            [0x7FFF_FFFF, 0x8000_0000, 0x8000_0000],
            [1, 0xFFFF_FFFF, 0x8000_0000]
        ),
        [0, 0xFFFF_FFFF, 0x8000_0000]
    );
    assert_eq!(
        binary(
            Opcode::Sub,
            [q(1.0), 0x8000_0000, 0x7FFF_FFFF],
            [q(3.0), 1, 0xFFFF_FFFF]
        ),
        [q(-2.0), 0xFFFF_FFFF, 0]
    );
}

#[test]
fn div_truncates_and_has_a_fixed_zero_divisor_result() {
    assert_eq!(
        binary(Opcode::Div, [q(3.0), q(-1.0), q(5.0)], [q(2.0), q(3.0), 0]),
        [q(1.5), 0xAAAAu32.wrapping_neg(), 0x0FFF_FFFF]
    );
    // Negative dividend over zero: the sign comes from the dividend alone.
    // 0x40000000 / 1: (2^30 << 17) / 1 mod 2^31 = 0 (wraps, no saturation).
    assert_eq!(
        binary(Opcode::Div, [q(-5.0), 0x4000_0000, 0], [0, 1, 0]),
        [0xF000_0001, 0, 0x0FFF_FFFF]
    );
}

#[test]
fn mul_is_sign_magnitude_with_truncation_and_the_radix_quirk() {
    // -0.5 * 2^-17: the magnitude truncates to 0 (toward zero, not -1 ulp).
    assert_eq!(
        binary(
            Opcode::Mul,
            [q(-1.5), q(-0.5), q(200.0)],
            [q(2.0), 1, q(200.0)]
        ),
        [q(-3.0), 0, ((40000u64 << 17) & 0xFFFF_FFFF) as u32]
    );
    // |A| > 0x55555555: the 3|A| partial product loses bit 32 (2^32 >> 17 = 2^15 short).
    let exact = (0x6000_0000u64 * 3) >> 17;
    assert_eq!(
        binary(Opcode::Mul, [0x6000_0000, 3, 0], [3, 0x6000_0000, 0])[..2],
        [(exact - (1 << 15)) as u32, exact as u32]
    );
    // IMUL is the plain low word for all inputs.
    assert_eq!(
        binary(
            Opcode::Imul,
            [0x6000_0000, 0xFFFF_FFFF, 7],
            [3, 0xFFFF_FFFF, 6]
        ),
        [0x2000_0000, 1, 42]
    );
}

#[test]
fn mag_is_the_digit_loop_and_wraps_above_8192() {
    let result = unary(Opcode::Mag, [q(3.0), q(-4.0), 0]);
    assert_eq!(result, [q(5.0); 3]);
    // Below 8192.0 the loop is floor(sqrt(s << 17)).
    let s = (8000u64 << 17) * 8000;
    let root = unary(Opcode::Mag, [q(8000.0), 0, 0])[0];
    assert_eq!(root as u64, (((s << 17) as f64).sqrt()) as u64);
    // |(8000, 8000, 8000)| = 13856.4 > 8192: x = s << 17 ≥ 2^60 and the 32-bit sum/diff
    // registers wrap, so the loop ends one ulp below floor(sqrt) = 0x6C40D01B; the
    // expected word comes from a transcription of the spec's loop, not from this crate.
    assert_eq!(unary(Opcode::Mag, [q(8000.0); 3]), [0x6C40_D01A; 3]);
}

#[test]
fn dot_cross_and_mulp() {
    let (a, b) = ([q(1.0), q(2.0), q(3.0)], [q(4.0), q(-5.0), q(6.0)]);
    assert_eq!(binary(Opcode::Dot, a, b), [q(12.0); 3]);
    assert_eq!(binary(Opcode::Cross, a, b), [q(27.0), q(6.0), q(-13.0)]);
    // MULP copies S1.x and S1.y (the manual says they are unchanged; the RTL copies).
    assert_eq!(
        unary(Opcode::Mulp, [q(-1.5), q(2.0), q(9.0)]),
        [q(-1.5), q(2.0), q(-3.0)]
    );
    // Each product truncates on its own before the sum.
    assert_eq!(binary(Opcode::Dot, [1, 1, 1], [1, 1, 1]), [0; 3]);
}

#[test]
fn increments_and_decrements_wrap_with_the_sign() {
    let a = [0x7FFF_FFFF, q(-1.0), q(2.5)];
    assert_eq!(unary(Opcode::Inc, a), [0x0001_FFFF, 0, q(3.5)]);
    assert_eq!(unary(Opcode::Dec, a), [0x7FFD_FFFF, q(-2.0), q(1.5)]);
    assert_eq!(unary(Opcode::Incx, a), [0x0001_FFFF, q(-1.0), q(2.5)]);
    assert_eq!(unary(Opcode::Incy, a), [0x7FFF_FFFF, 0, q(2.5)]);
    assert_eq!(unary(Opcode::Incz, a), [0x7FFF_FFFF, q(-1.0), q(3.5)]);
}

#[test]
fn bitwise_and_shift_opcodes() {
    assert_eq!(
        binary(
            Opcode::Mod,
            [q(5.75), q(-0.25), q(7.0)],
            [q(4.0), q(4.0), 0]
        ),
        [q(1.0), q(3.0), q(7.0)]
    );
    assert_eq!(
        unary(Opcode::Frac, [q(5.75), q(-0.25), 0]),
        [q(0.75), q(0.75), 0]
    );
    assert_eq!(
        unary(Opcode::Neg, [q(1.5), 0x8000_0000, 0]),
        [q(-1.5), 0x8000_0000, 0]
    );
    // UNSCALE is a logical shift: -1.0 becomes 0x7FFF, not -1.
    assert_eq!(
        unary(Opcode::Unscale, [q(-1.0), q(200.0), 0x1FFFF]),
        [0x7FFF, 200, 0]
    );
    assert_eq!(unary(Opcode::Copy, [1, 2, 3]), [1, 2, 3]);
    assert_eq!(unary(Opcode::Zero, [1, 2, 3]), [0, 0, 0]);
    assert_eq!(binary(Opcode::Xchangex, [1, 2, 3], [4, 5, 6]), [4, 2, 3]);
}

#[test]
fn unfinished_opcodes_follow_the_manual() {
    assert_eq!(
        unary(Opcode::Intp, [q(-0.25), q(2.75), 0]),
        [q(-1.0), q(2.0), 0]
    );
    assert_eq!(unary(Opcode::Rescale, [3, 0, 1]), [q(3.0), 0, q(1.0)]);
    assert_eq!(binary(Opcode::Xchangey, [1, 2, 3], [4, 5, 6]), [1, 5, 3]);
    assert_eq!(binary(Opcode::Xchangez, [1, 2, 3], [4, 5, 6]), [1, 2, 6]);
}

#[test]
fn set_and_swizzle_work_in_place() {
    let mut code = set("R1", [1, 2, 3]);
    code.push(imm(Opcode::Swizzle3d, "R1", 21)); // YXZ
    code.extend(set("R2", [1, 2, 3]));
    code.push(imm(Opcode::Swizzle3d, "R2", 2)); // ZZZ
    code.extend(set("R3", [1, 2, 3]));
    code.push(imm(Opcode::Swizzle3d, "R3", 22)); // no such code: zero
    code.extend(set("R4", [1, 2, 3]));
    code.push(imm(Opcode::Swizzle3d, "R4", 3)); // XYY: the manual's meaning
    code.push(ret(true));
    let result = run(&code);
    assert_eq!(result.reg("R1"), [2, 1, 3]);
    assert_eq!(result.reg("R2"), [3, 3, 3]);
    assert_eq!(result.reg("R3"), [0, 0, 0]);
    assert_eq!(result.reg("R4"), [1, 2, 2]);
}

/// `Jcc T R1 R2` over R1 = a, R2 = b: whether the jump was taken.
fn jumps(op: Opcode, a: u32, b: u32) -> bool {
    // 0x800C..: R1, R2 (6), Jcc (0x8012), not taken: RETURN FALSE (0x8013), taken: TRUE.
    let mut code = set("R1", [a, a, a]);
    code.extend(set("R2", [b, b, b]));
    code.push(Word::type1(op, 0x8014, reg("R1"), reg("R2")));
    code.push(ret(false));
    code.push(ret(true));
    run(&code).returned.expect("returns")
}

#[test]
fn jumps_compare_like_the_rtl() {
    let (five, minus_five, three) = (q(5.0), q(-5.0), q(3.0));
    for (x, y, z) in [
        (Opcode::Jgx, Opcode::Jgy, Opcode::Jgz),
        (Opcode::Jlx, Opcode::Jly, Opcode::Jlz),
        (Opcode::Jeqx, Opcode::Jeqy, Opcode::Jeqz),
        (Opcode::Jnex, Opcode::Jney, Opcode::Jnez),
        (Opcode::Jgex, Opcode::Jgey, Opcode::Jgez),
        (Opcode::Jlex, Opcode::Jley, Opcode::Jlez),
    ] {
        for (a, b) in [
            (five, minus_five),
            (minus_five, five),
            (three, three),
            (three, five),
            (0, 0),
        ] {
            let expected = {
                let gt = (a as i32) > (b as i32);
                let eq = a == b || a == b.wrapping_neg();
                match x {
                    Opcode::Jgx => gt,
                    Opcode::Jlx => !gt,
                    Opcode::Jeqx => eq,
                    Opcode::Jnex => !eq,
                    Opcode::Jgex => gt || eq,
                    _ => !gt || eq,
                }
            };
            for op in [x, y, z] {
                assert_eq!(jumps(op, a, b), expected, "{op:?} {a:#x} {b:#x}");
            }
        }
    }
    // The spec's named cases.
    assert!(jumps(Opcode::Jeqx, five, minus_five));
    assert!(jumps(Opcode::Jgex, minus_five, five));
    assert!(jumps(Opcode::Jlex, five, minus_five));
    assert!(jumps(Opcode::Jlx, three, three), "JL is <=");
}

#[test]
fn jumps_test_only_their_component() {
    // R1 = (1, 9, 1), R2 = (1, 1, 1): JGY taken, JGX and JGZ not.
    for (op, expected) in [
        (Opcode::Jgx, false),
        (Opcode::Jgy, true),
        (Opcode::Jgz, false),
    ] {
        let mut code = set("R1", [1, 9, 1]);
        code.extend(set("R2", [1, 1, 1]));
        code.push(Word::type1(op, 0x8014, reg("R1"), reg("R2")));
        code.push(ret(false));
        code.push(ret(true));
        assert_eq!(run(&code).returned, Ok(expected), "{op:?}");
    }
}

#[test]
fn ret_is_seen_only_through_forwarding() {
    // 0x800C CALL 0x800F; 0x800D JEQX 0x8011 R99 CREG_ZERO; 0x800E RETURN TRUE
    // 0x800F RET R99 1 (no write); 0x8010 NOP; 0x8011 RETURN FALSE.
    let code = [
        Word::type2(Opcode::Call, 0x800F, 0),
        Word::type1(Opcode::Jeqx, 0x8011, reg("R99"), reg("CREG_ZERO")),
        ret(true),
        imm(Opcode::Ret, "R99", 1),
        Word(0),
        ret(false),
    ];
    let result = run(&code);
    // The JEQX saw (1, ...) forwarded: not equal to 0, fell through to RETURN TRUE.
    assert_eq!(result.returned, Ok(true));
    assert_eq!(result.reg("R99"), [0, 0, 0], "RET writes nothing");
}

#[test]
fn forwarding_delivers_the_previous_result_even_when_nothing_was_written() {
    // SETX R1 5 writes R1; ADD into bank 0 (CREG_CAMERA_POSITION) is dropped but the next
    // instruction reading address 1 sees the sum; a later read goes to the file.
    let code = [
        imm(Opcode::Setx, "R1", 5),
        op3(Opcode::Add, "CREG_CAMERA_POSITION", "R1", "R1"),
        op2(Opcode::Copy, "R2", "CREG_CAMERA_POSITION"),
        op2(Opcode::Copy, "R3", "CREG_CAMERA_POSITION"),
        ret(true),
    ];
    let result = run(&code);
    assert_eq!(result.reg("R2"), [10, 0, 0]);
    assert_eq!(result.reg("R3"), [0, 0, 0]);
    assert_eq!(result.reg("CREG_CAMERA_POSITION"), [0, 0, 0]);
}

#[test]
fn addresses_alias_modulo_128_and_bank_0_is_read_only() {
    let code = [
        imm(Opcode::Setx, "R1", 7),
        Word(0),
        // 0x8047 decodes as R1 (bits 15..7 ignored).
        Word::type1(Opcode::Copy, reg("R2"), 0x8047, 0),
        // OREG_PIXEL_COLOR (128) aliases bank 0: the write is dropped.
        Word::type2(Opcode::Setx, 128, 9),
        Word(0),
        ret(true),
    ];
    let result = run(&code);
    assert_eq!(result.reg("R2"), [7, 0, 0]);
    assert_eq!(result.registers[0], [0, 0, 0]);
}

#[test]
fn call_keeps_one_return_address_and_jmp_jumps() {
    // 0x800C CALL 0x8010; 0x800D SETX R2 1; 0x800E RETURN TRUE; 0x800F (unused)
    // 0x8010 SETX R1 1; 0x8011 JMP 0x8013; 0x8012 SETX R1 2 (skipped); 0x8013 RET R99 0
    let code = [
        Word::type2(Opcode::Call, 0x8010, 0),
        imm(Opcode::Setx, "R2", 1),
        ret(true),
        ret(false),
        imm(Opcode::Setx, "R1", 1),
        Word::type2(Opcode::Jmp, 0x8013, 0),
        imm(Opcode::Setx, "R1", 2),
        imm(Opcode::Ret, "R99", 0),
    ];
    let result = run(&code);
    assert_eq!(result.returned, Ok(true));
    assert_eq!(result.reg("R1"), [1, 0, 0]);
    assert_eq!(result.reg("R2"), [1, 0, 0]);
}

#[test]
fn return_value_is_bit_0() {
    assert_eq!(run(&[Word::type2(Opcode::Return, 0, 3)]).returned, Ok(true));
    assert_eq!(
        run(&[Word::type2(Opcode::Return, 0, 2)]).returned,
        Ok(false)
    );
}

#[test]
fn omwrite_tmread_and_lea() {
    let texture: Vec<u32> = (0..16).map(|i| i * 0x200).collect();
    let mut code = set("R1", [4, 5, 15]);
    code.push(op2(Opcode::Tmread, "R2", "R1"));
    code.extend(set("R3", [2, 0, 7]));
    code.push(op3(Opcode::Omwrite, "OREG_PIXEL_COLOR", "R3", "R2"));
    code.push(Word::type1(Opcode::Lea, reg("R4"), 0, 0));
    code.push(ret(true));
    let result = run_with(&code, &texture, 100);
    assert_eq!(result.reg("R2"), [4 * 0x200, 5 * 0x200, 15 * 0x200]);
    assert_eq!(result.output.read(2), Some(4 * 0x200));
    assert_eq!(result.output.read(0), Some(5 * 0x200));
    assert_eq!(result.output.read(7), Some(15 * 0x200));
    assert_eq!(result.output.read(1), None);
    // LEA gives the fetch pointer, one past the LEA (at 0x800C + 3 + 1 + 3 + 1 = 0x8014),
    // as the RTL does (tests/rtl.rs, lea_gives_the_next_address).
    assert_eq!(result.reg("R4"), [0x8015; 3]);
}

#[test]
fn nop_and_debug_print_write_nothing() {
    let code = [
        imm(Opcode::Setx, "R1", 1),
        Word::type1(Opcode::Nop, reg("R1"), 0, 0),
        Word::type1(Opcode::DebugPrint, reg("R1"), 0, 0),
        ret(true),
    ];
    assert_eq!(run(&code).reg("R1"), [1, 0, 0]);
}

#[test]
fn undefined_opcodes_hang_and_the_watchdog_stops_loops() {
    let hang = run(&[imm(Opcode::Setx, "R1", 1), Word(0x0006_0000_0000_0000)]);
    assert!(matches!(
        hang.returned,
        Err(Fault::Hang {
            address: 0x800D,
            ..
        })
    ));
    let forever = run_with(&[Word::type2(Opcode::Jmp, 0x800C, 0)], &[], 500);
    assert_eq!(
        forever.returned,
        Err(Fault::Watchdog {
            address: 0x800C,
            budget: 500
        })
    );
    assert_eq!(forever.instructions, 500);
}

// ---------------------------------------------------------------------------------------
// Cycles: what the trace charges for each opcode, against the spec's latency table.

/// An opcode's ALU latency as the spec states it (alu_semantics.md §3, column L).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Latency {
    Cycles(u64),
    /// DIV: `normal` unless every lane is a special case (|b| = 0 or |b| >= |a| << 17).
    Divide {
        normal: u64,
        special: u64,
    },
    /// ∞: the hardware never finishes the opcode.
    Never,
}

/// The spec's latency facts, read from ../shared at test time.
struct SpecLatencies {
    /// (opcode code, name cell, L) for every row of §3's master table that names codes.
    rows: Vec<(u16, String, Latency)>,
    /// The issue rule of §7's handshake bullet: cycles per instruction = L + this.
    handshake: u64,
}

fn spec_text() -> String {
    std::fs::read_to_string(common::shared_path("spec/alu_semantics.md")).expect("spec reads")
}

/// The lines of section `heading` (up to the next `## `).
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    text.lines()
        .skip_while(|l| !l.starts_with(heading))
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .collect()
}

/// The first number after `marker` in `text`.
fn number_after(text: &str, marker: &str) -> u64 {
    let at = text
        .find(marker)
        .unwrap_or_else(|| panic!("the spec says `{marker}`"));
    let digits: String = text[at + marker.len()..]
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("a number after `{marker}`"))
}

fn spec_latencies() -> SpecLatencies {
    let text = spec_text();
    let timing = section(&text, "## 7.")
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    // "TMREAD: memory dependent (≥ 3)": the trace counts the minimum.
    let tmread = number_after(&timing, "TMREAD: memory dependent (≥");
    let mut rows = Vec::new();
    for line in section(&text, "## 3.") {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | op | name | x | y | z | wb | L | RTL |
        if cells.len() != 10 || !cells[1].starts_with(|c: char| c.is_ascii_digit()) {
            continue;
        }
        let codes: Vec<u16> = match cells[1].split_once("..") {
            Some((first, last)) => (first.parse().unwrap()..=last.parse().unwrap()).collect(),
            None => vec![cells[1].split(" / ").next().unwrap().parse().unwrap()],
        };
        let l = cells[7];
        let latency = if l == "∞" {
            Latency::Never
        } else if l == "var." {
            assert_eq!(
                cells[2], "TMREAD",
                "only TMREAD's latency depends on memory"
            );
            Latency::Cycles(tmread)
        } else if let Some(normal) = l.strip_suffix(" if special)") {
            let (normal, special) = normal.split_once(" (").unwrap();
            Latency::Divide {
                normal: normal.parse().unwrap(),
                special: special.parse().unwrap(),
            }
        } else {
            Latency::Cycles(l.trim_start_matches('≈').parse().unwrap())
        };
        for code in codes {
            rows.push((code, cells[2].to_string(), latency));
        }
    }
    // "steady-state issue rate ≈ L+1 cycles per instruction (ADD 2, MUL 3, DOT 5, DIV 72,
    // MAG ≈ 41)": the rule, and its examples agree with the table.
    let rule = timing
        .find("issue rate ≈ L+")
        .expect("§7 states the issue rate");
    let handshake = number_after(&timing[rule..], "issue rate ≈ L+");
    let spec = SpecLatencies { rows, handshake };
    let examples = &timing[rule..];
    let examples = &examples[examples.find('(').unwrap() + 1..examples.find(')').unwrap()];
    let mut checked = 0;
    for example in examples.split(", ") {
        let (name, cycles) = example.split_once(' ').unwrap();
        let cycles: u64 = cycles.trim_start_matches("≈ ").parse().unwrap();
        let latency = spec.latency(Opcode::from_mnemonic(name).expect("an opcode"));
        let l = match latency {
            Latency::Cycles(l) | Latency::Divide { normal: l, .. } => l,
            Latency::Never => panic!("{name} never finishes"),
        };
        assert_eq!(l + spec.handshake, cycles, "§7's example {example}");
        checked += 1;
    }
    assert!(checked >= 4, "{examples}");
    spec
}

impl SpecLatencies {
    fn latency(&self, op: Opcode) -> Latency {
        let rows: Vec<_> = self.rows.iter().filter(|r| r.0 == op.code()).collect();
        assert_eq!(rows.len(), 1, "{op:?}: one row in §3");
        let (_, name, latency) = rows[0];
        // Single rows start with the mnemonic; ranges list the jump family.
        assert!(
            name.starts_with(op.mnemonic()) || name.starts_with('J'),
            "{op:?} is row {name}"
        );
        *latency
    }
}

/// Runs `code` as the pixel shader on a traced core; the routine's result, its statistics
/// and the trace text.
fn traced(code: &[Word]) -> (Result<bool, Fault>, Stats, String) {
    let mut imem = Program::default_imem();
    imem[EntryPoint::PixelShader as usize] = Word(0x800C);
    imem.extend_from_slice(code);
    let program = Program::new(rom(RomVariant::Faithful), &imem);
    let texture: Vec<u32> = (0..16).collect();
    let mut core = Core::new(&program, &texture, 64);
    core.set_budget(1_000);
    let mut text = Vec::new();
    let mut tracer = Tracer::new(&program, 0, &TraceOptions::default(), &mut text);
    let returned = core.run(EntryPoint::PixelShader, &mut tracer);
    let (stats, error) = tracer.finish();
    assert!(error.is_none());
    (returned, stats, String::from_utf8(text).unwrap())
}

/// The pixel shader's own row (not a CALLed subroutine's).
fn shader_row(stats: &Stats) -> &RoutineStats {
    stats
        .routine(EntryPoint::PixelShader, None)
        .expect("the shader ran")
}

/// Cycles the trace charges for `instruction` after `setup`: the whole routine with it,
/// less the same routine without it (one instruction fewer, nothing else changed).
fn charged(setup: &[Word], instruction: Word) -> u64 {
    let run = |with: bool| {
        let mut code = setup.to_vec();
        code.extend(with.then_some(instruction));
        code.push(ret(true));
        let (returned, stats, _) = traced(&code);
        assert_eq!(returned, Ok(true), "{instruction:?}");
        (stats.instructions(), stats.cycles())
    };
    let (with, without) = (run(true), run(false));
    assert_eq!(with.0, without.0 + 1, "{instruction:?}");
    with.1 - without.1
}

/// R1 = (3, 2, 1), R2 = (1, 1, 1): small integers every opcode accepts (texel and output
/// addresses), and a DIV of the normal, slow kind.
fn cycle_setup() -> Vec<Word> {
    let mut code = set("R1", [3, 2, 1]);
    code.extend(set("R2", [1, 1, 1]));
    code
}

/// The instruction that exercises `op` after [`cycle_setup`], at `address`, falling through
/// (a jump's target is the next address). RETURN, CALL and RET are measured on their own.
fn exercise(op: Opcode, address: u16) -> Word {
    let next = address + 1;
    if op == Opcode::Jmp {
        Word::type2(op, next, 0)
    } else if op.is_conditional_jump() {
        Word::type1(op, next, reg("R1"), reg("R2"))
    } else if op.is_type2() {
        imm(op, "R3", 21)
    } else {
        op3(op, "R3", "R1", "R2")
    }
}

/// The cycles the spec's issue rule gives `op` (latency + handshake); the opcodes the
/// hardware never finishes (∞) run the manual's one-cycle semantics in the emulator.
fn expected_cycles(spec: &SpecLatencies, op: Opcode) -> u64 {
    match spec.latency(op) {
        Latency::Cycles(l) => l + spec.handshake,
        Latency::Divide { normal, .. } => normal + spec.handshake,
        Latency::Never => 1 + spec.handshake,
    }
}

#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn every_opcode_is_charged_its_spec_latency_plus_the_handshake() {
    let spec = spec_latencies();
    assert_eq!(spec.handshake, 1);
    let setup = cycle_setup();
    let address = 0x800C + setup.len() as u16;
    let mut checked = Vec::new();
    for row in OPCODES {
        let op = row.opcode;
        if matches!(op, Opcode::Return | Opcode::Call | Opcode::Ret) {
            continue;
        }
        let cycles = charged(&setup, exercise(op, address));
        assert_eq!(cycles, expected_cycles(&spec, op), "{op:?}");
        checked.push(op);
    }
    // A jump costs the same taken (R1.c = 3, 2, 1 > 1 for JG?) or not (operands swapped).
    for row in OPCODES
        .iter()
        .filter(|row| row.opcode.is_conditional_jump())
    {
        let op = row.opcode;
        let swapped = Word::type1(op, address + 1, reg("R2"), reg("R1"));
        assert_eq!(
            charged(&setup, swapped),
            expected_cycles(&spec, op),
            "{op:?}"
        );
    }

    // RETURN alone; CALL and RET through a subroutine, which the trace counts on a row of
    // its own: 0x800C CALL 0x800E; 0x800D RETURN TRUE; 0x800E RET R99 0.
    let (returned, stats, _) = traced(&[ret(true)]);
    assert_eq!(returned, Ok(true));
    let return_cycles = shader_row(&stats).cycles;
    assert_eq!(shader_row(&stats).instructions, 1);
    assert_eq!(return_cycles, expected_cycles(&spec, Opcode::Return));
    let (returned, stats, _) = traced(&[
        Word::type2(Opcode::Call, 0x800E, 0),
        ret(true),
        imm(Opcode::Ret, "R99", 0),
    ]);
    assert_eq!(returned, Ok(true));
    let shader = shader_row(&stats);
    assert_eq!(shader.instructions, 2);
    assert_eq!(
        shader.cycles - return_cycles,
        expected_cycles(&spec, Opcode::Call)
    );
    let subroutine = stats
        .routine(EntryPoint::PixelShader, Some(0x800E))
        .expect("the CALLed code has its row");
    assert_eq!(subroutine.instructions, 1);
    assert_eq!(subroutine.cycles, expected_cycles(&spec, Opcode::Ret));
    checked.extend([Opcode::Return, Opcode::Call, Opcode::Ret]);
    assert_eq!(checked.len(), OPCODES.len());

    // The opcodes the spec says never finish are exactly the manual's unfinished four.
    let never: Vec<&str> = OPCODES
        .iter()
        .filter(|row| spec.latency(row.opcode) == Latency::Never)
        .map(|row| row.mnemonic)
        .collect();
    assert_eq!(never, ["INTP", "XCHANGEY", "XCHANGEZ", "RESCALE"]);
}

/// DIV is 5 cycles (+1) only when every lane's divider skips straight to its result
/// (|b| = 0, |b| > |a| << 17 or |b| = |a| << 17), else the normal 71 (+1): the three lanes
/// divide in parallel and the slowest one counts.
#[test]
#[cfg_attr(not(conformance_data), ignore = "needs ../shared")]
fn div_is_charged_its_special_case_latency_only_when_every_lane_is_special() {
    let spec = spec_latencies();
    let Latency::Divide { normal, special } = spec.latency(Opcode::Div) else {
        panic!("DIV's latency depends on its operands");
    };
    assert_eq!((normal, special), (71, 5));
    let one = q(1.0);
    // (a, b, every lane special), derived by hand from |a| << 17 against |b|.
    let cases: [(Vec3, Vec3, bool); 11] = [
        ([q(3.0), q(-5.0), 0], [0; 3], true),        // divisors 0
        ([0; 3], [1; 3], true),                      // 0 << 17 = 0 < 1
        ([1; 3], [one; 3], true),                    // 1 << 17 = |b|
        ([1; 3], [one + 1; 3], true),                // |b| above
        ([0xFFFF_FFFF; 3], [q(-1.0); 3], true),      // magnitudes: 1 << 17 = |-1.0|
        ([q(5.0), 0, 1], [0, 1, q(1.5)], true),      // a different reason per lane
        ([1; 3], [one - 1; 3], false),               // |b| just below
        ([one; 3], [one; 3], false),                 // 1.0 / 1.0
        ([0x8000_0000; 3], [0x7FFF_FFFF; 3], false), // |a| = 2^31
        ([1, 1, q(3.0)], [0, one, q(2.0)], false),   // only z divides
        ([q(3.0), 1, 1], [q(2.0), 0, one], false),   // only x divides
    ];
    for (a, b, every_lane_special) in cases {
        let mut setup = set("R1", a);
        setup.extend(set("R2", b));
        let cycles = charged(&setup, op3(Opcode::Div, "R3", "R1", "R2"));
        let latency = if every_lane_special { special } else { normal };
        assert_eq!(cycles, latency + spec.handshake, "DIV {a:x?} / {b:x?}");
    }
}

/// The spec gives an undefined opcode no latency (∞: the core stalls): the emulator stops
/// with a hang, and the trace charges nothing for the word it cannot execute.
#[test]
fn undefined_opcodes_are_not_charged() {
    for code in [0x06u64, 0x2E, 0x32, 0x45] {
        let (returned, stats, text) =
            traced(&[imm(Opcode::Setx, "R1", 1), Word(code << 48), ret(true)]);
        assert!(
            matches!(
                returned,
                Err(Fault::Hang {
                    address: 0x800D,
                    ..
                })
            ),
            "{code:#x}: {returned:?}"
        );
        assert_eq!(shader_row(&stats).instructions, 1, "{code:#x}");
        assert_eq!(shader_row(&stats).cycles, 2, "{code:#x}: SETX only");
        assert!(
            !text.lines().any(|line| line.starts_with("800D")),
            "{code:#x}: {text}"
        );
    }
}
