//! The interpreter: one body for a lone core and for a lock-step group of cores, generic
//! over the number of lanes `N` (a lone [`Core`](super::Core) is `N = 1`, a
//! [`CoreGroup`](super::group::CoreGroup) `N = LANES`), as [`control::divide`] is.
//!
//! Registers are stored lane by lane within each component ([`Row`]), so one decoded
//! instruction ([`Op`]: operand rows with forwarding resolved, jump targets, write rows)
//! executes for every lane at once; for `N = 1` that is a plain `[u32; 3]` per register.
//! Every lane goes through exactly the instructions, operand values, forwarding, return
//! register and instruction count it would alone: where lanes' paths split at a branch
//! (or a RET), the lanes at the lowest program counter run first and the others wait, so
//! paths that split at a forward branch meet again at the join (the "minimum PC" rule of
//! SIMT machines). A lane outside the running group keeps its registers: results are
//! blended in by mask. With `N = 1` none of that scheduling exists (it is behind
//! `N > 1` tests the compiler folds away).
//!
//! The watchdog: unless `PRECISE`, the budget is charged a whole straight run at a time
//! (at the routine's start and after every jump, branch, CALL and RET); when a lone core's
//! budget does not cover the next run, the rest of its routine runs `PRECISE`, counting
//! instruction by instruction, so the watchdog stops exactly where it would have. A group
//! whose lane would fault gives up instead ([`Interrupted::Abandoned`]) and its caller
//! reruns core by core, where the fault is reported exactly.

// Lane loops index several lane-wide arrays at once: the shape the vectoriser wants.
#![allow(clippy::needless_range_loop)]

use super::alu::{self, Vec3};
use super::control::{self, Arrival};
use super::exec::{Fault, Observer, Step};
use super::group::{lanes_of, LaneMask};
use super::program::{
    jump_taken, operand_row, Op, Operation, Program, DYNAMIC_FORWARDING, FORWARD_A_ROW,
    FORWARD_B_ROW, LATCH_ROW, RET_BEFORE_CALL, SAVES_OLD, SLOW_BEFORE_CALL, STALE_ROW,
    TARGET_IS_CALL,
};
use super::state::{spread, Lane, LaneState, Row};
use super::tmem;
use super::track::{Footprint, RETURN_REGISTER, TMEM_LATCH};
use crate::emu::isa::registers::EntryPoint;
use crate::emu::isa::{InputA, InputB};

/// Why a routine did not return on every lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Interrupted {
    /// A lone core faulted; its state is as the hardware's would be.
    Fault(Fault),
    /// A lane of a group would have faulted; the group is in no useful state.
    Abandoned,
}

/// The control state the loop carries: where the running lanes are, what they forward,
/// and each lane's budget; with `N > 1` also the lanes that wait and where. (The return
/// register and how the next CALL is reached stay in each lane's `Latches`.)
#[derive(Clone, Copy)]
pub(super) struct Cursor<'a, const N: usize> {
    /// The slot the running group is about to execute.
    pc: u16,
    /// Whether the running lanes share the previous op (what forwarding compares with);
    /// else each has its own in `lane_prev`.
    uniform: bool,
    budget_left: [u64; N],
    /// The lanes running, the lanes waiting (at `lane_pc`), the lowest slot a waiting lane
    /// is at (`u16::MAX` for none), and the lanes that returned a set bit 0.
    group: LaneMask,
    waiting: LaneMask,
    meeting: u16,
    returned: LaneMask,
    lane_pc: [u16; N],
    lane_prev: [&'a Op; N],
}

/// Runs `body` for every lane of `mask`; for a lone core, for its one lane.
macro_rules! each_lane {
    ($lane:ident in $mask:expr => $body:block) => {
        if N == 1 {
            let $lane = 0usize;
            $body
        } else {
            for $lane in lanes_of($mask) $body
        }
    };
}

/// Runs routine `entry` on the lanes of `lanes`, which all see swap copy `parity`, until
/// each has returned; the result has the bit of every lane whose RETURN value had bit 0 set.
#[inline(always)]
pub(super) fn run<const N: usize, O: Observer>(
    m: &mut LaneState<'_, N>,
    parity: usize,
    lanes: LaneMask,
    entry: EntryPoint,
    observer: &mut O,
) -> Result<LaneMask, Interrupted> {
    let program = m.program;
    let start = program.entry_slot(entry) as u16;
    let start_run = program.ops(parity)[start as usize].run as u64;
    let mut c = Cursor {
        pc: start,
        uniform: true,
        budget_left: [0; N],
        group: lanes,
        waiting: 0,
        meeting: u16::MAX,
        returned: 0,
        lane_pc: [start; N],
        lane_prev: [&Op::ROUTINE_START; N],
    };
    if O::TRACKS {
        let footprint = observer.footprint();
        // `control::start` moves a result latch that is not in the latch row there.
        let last_row = m.latches[0].last_row;
        if last_row != LATCH_ROW {
            footprint.read_row(last_row as usize);
            footprint.write_row(LATCH_ROW as usize);
        }
        footprint.enter(program, parity, start, &Op::ROUTINE_START);
    }
    let mut covered = true;
    each_lane!(lane in lanes => {
        c.budget_left[lane] = control::start(&mut Lane::new(&mut m.rows, &mut m.latches, m.program, m.budget, lane));
        covered &= control::charge(&mut c.budget_left[lane], start_run);
    });
    if covered {
        execute::<N, O, false>(m, parity, c, &Op::ROUTINE_START, observer)
    } else if N == 1 {
        execute::<N, O, true>(m, parity, c, &Op::ROUTINE_START, observer)
    } else {
        Err(Interrupted::Abandoned)
    }
}

/// The interpreter loop (see the module documentation). A straight instruction's arm
/// gives its result to the tail of the loop, which writes it; an arm that changes control
/// flow sets the next slot itself (and, for a group whose lanes part, leaves for the
/// scheduling at the bottom).
#[inline(always)]
pub(super) fn execute<'a, const N: usize, O: Observer, const PRECISE: bool>(
    m: &mut LaneState<'a, N>,
    parity: usize,
    mut c: Cursor<'a, N>,
    mut prev: &'a Op,
    observer: &mut O,
) -> Result<LaneMask, Interrupted> {
    // Few locals: the loop keeps its hot state in registers (latches, outputs and the
    // budget are reached through `m` in the arms that need them).
    let program = m.program;
    let ops = program.ops(parity);
    let rows = &mut m.rows;
    let mut active = lanes_running::<N>(c.group);
    // The slot as a local (it goes back into `c` where the precise loop takes over); `prev`
    // is the previous op, whose DST field and result row forwarding compares with.
    let mut pc = c.pc;
    'instructions: loop {
        'step: {
            if PRECISE {
                // Only a lone core runs precisely.
                if c.budget_left[0] == 0 {
                    let mut core = Lane::new(rows, &mut m.latches, program, m.budget, 0);
                    control::stop(&mut core, prev.dst, prev.d_row, 0);
                    return Err(Interrupted::Fault(Fault::Watchdog {
                        address: program.slot_info(pc as u32).address,
                        budget: m.budget,
                    }));
                }
                c.budget_left[0] -= 1;
            }
            let op: &Op = &ops[pc as usize];
            let this = pc;
            pc = this.wrapping_add(1);
            // One test for the three rare effects, which come before the op computes (most
            // ops have none of them).
            if op.flags & (DYNAMIC_FORWARDING | SAVES_OLD | SLOW_BEFORE_CALL) != 0 {
                if op.flags & DYNAMIC_FORWARDING != 0 {
                    // Reached by paths that disagree about forwarding: compare addresses now.
                    each_lane!(lane in c.group => {
                        let prev = if N == 1 || c.uniform { prev } else { c.lane_prev[lane] };
                        let a = operand_row(op.a_addr, op.a_home, prev.dst, prev.d_row);
                        let b = operand_row(op.b_addr, op.b_home, prev.dst, prev.d_row);
                        let (a, b) = (rows[a as usize].lane(lane), rows[b as usize].lane(lane));
                        rows[FORWARD_A_ROW as usize].set_lane(lane, a);
                        rows[FORWARD_B_ROW as usize].set_lane(lane, b);
                    });
                }
                if op.flags & SAVES_OLD != 0 {
                    let old = rows[op.d_row as usize];
                    rows[STALE_ROW as usize].blend(&old, &active);
                }
                if op.flags & SLOW_BEFORE_CALL != 0 {
                    // The CALL at `pc` saves its own address + 2.
                    each_lane!(lane in c.group => {
                        m.latches[lane].arrival = Arrival::jump(program, pc);
                    });
                }
            }
            // Operands are read where the arms use them (a load folded into the arithmetic).
            macro_rules! a {
                () => {
                    rows[op.a_row as usize]
                };
            }
            macro_rules! b {
                () => {
                    rows[op.b_row as usize]
                };
            }
            // The observer gets the operands before the result is written.
            let seen = if O::ENABLED {
                (a!().lane(0), b!().lane(0))
            } else {
                ([0; 3], [0; 3])
            };
            // For the observer: a conditional jump's outcome.
            let mut taken = None;
            // Whether control went to `pc` by a jump (what a group's scheduling needs).
            let mut jumped = false;
            // Every running lane continues at `$target` after an instruction with `$result`
            // (control instructions write the latch row). Unless `PRECISE`, this charges the
            // run that starts there; should a lone core's budget not cover it, the core
            // finishes the instruction and runs the rest of the routine precisely.
            macro_rules! jump {
                ($target:expr, $result:expr) => {{
                    let target: u16 = $target;
                    let result: Row<N> = $result;
                    pc = target;
                    jumped = true;
                    if O::TRACKS {
                        observer.footprint().enter(program, parity, target, op);
                    }
                    if !PRECISE {
                        let run = ops[target as usize].run as u64;
                        let mut covered = true;
                        each_lane!(lane in c.group => {
                            covered &= control::charge(&mut c.budget_left[lane], run);
                        });
                        if !covered {
                            if N > 1 {
                                return Err(Interrupted::Abandoned);
                            }
                            rows[op.d_row as usize] = result;
                            if O::ENABLED {
                                let (step, ret) = ((result.lane(0), taken), m.latches[0].return_slot);
                                observe(observer, program, this, op, seen, step, target, ret);
                            }
                            c.pc = pc;
                            return execute_precisely(m, parity, c, op, observer);
                        }
                    }
                    result
                }};
            }
            // The running lanes part (`N > 1`): each continues at its `lane_pc`.
            macro_rules! split {
                ($result:expr) => {{
                    rows[op.d_row as usize].blend(&$result, &active);
                    for lane in lanes_of(c.group) {
                        c.lane_prev[lane] = op;
                        let run = ops[c.lane_pc[lane] as usize].run as u64;
                        if !control::charge(&mut c.budget_left[lane], run) {
                            return Err(Interrupted::Abandoned);
                        }
                    }
                    break 'step;
                }};
            }
            // A conditional jump on component `$component`.
            macro_rules! branch {
                ($component:expr) => {{
                        let (x, y) = (&a!().0[$component], &b!().0[$component]);
                        let mut jumps: LaneMask = 0;
                        for lane in 0..N {
                            jumps |= (jump_taken(op.mask, x[lane], y[lane]) as LaneMask) << lane;
                        }
                        let jumps = if N == 1 { jumps } else { jumps & c.group };
                        if op.flags & TARGET_IS_CALL != 0 {
                            each_lane!(lane in jumps => {
                                if jumps >> lane & 1 == 1 {
                                    m.latches[lane].arrival = Arrival::jump(program, this);
                                }
                            });
                        }
                        if N == 1 || jumps == c.group || jumps == 0 {
                            taken = Some(jumps != 0);
                            let target = if jumps != 0 { op.imm as u16 } else { pc };
                            jump!(target, Row::ZERO)
                        } else {
                            for lane in lanes_of(c.group) {
                                if jumps >> lane & 1 == 1 {
                                    c.lane_pc[lane] = op.imm as u16;
                                } else {
                                    c.lane_pc[lane] = pc;
                                }
                            }
                            split!(Row::ZERO)
                        }

                }};
            }
            let result: Row<N> = match op.kind {
                Operation::Nop | Operation::Zero => Row::ZERO,
                Operation::Add => a!().zip(&b!(), alu::add),
                Operation::Sub => a!().zip(&b!(), alu::sub),
                Operation::Mul => a!().zip(&b!(), alu::mul),
                Operation::Imul => a!().zip(&b!(), alu::imul),
                Operation::Mod => a!().zip(&b!(), alu::modulo),
                Operation::Div => Row(control::divide(&a!().0, &b!().0, &active)),
                Operation::Dot => dot(&a!(), &b!(), &active),
                Operation::Cross => cross(&a!(), &b!(), &active),
                Operation::Copy => a!(),
                Operation::Inc => a!().map(alu::inc),
                Operation::Dec => a!().map(alu::dec),
                Operation::Frac => a!().map(alu::frac),
                Operation::Intp => a!().map(alu::intp),
                Operation::Neg => a!().map(alu::neg),
                Operation::Unscale => a!().map(alu::unscale),
                Operation::Rescale => a!().map(alu::rescale),
                // The lane-specific operations: each arm's component is the table's
                // (`Operation::component`), fixed at compile time, so that the operand
                // stays in registers.
                Operation::IncX => increment::<{ Operation::IncX.component() }, N>(a!()),
                Operation::IncY => increment::<{ Operation::IncY.component() }, N>(a!()),
                Operation::IncZ => increment::<{ Operation::IncZ.component() }, N>(a!()),
                Operation::ExchangeX => {
                    exchange::<{ Operation::ExchangeX.component() }, N>(a!(), b!())
                }
                Operation::ExchangeY => {
                    exchange::<{ Operation::ExchangeY.component() }, N>(a!(), b!())
                }
                Operation::ExchangeZ => {
                    exchange::<{ Operation::ExchangeZ.component() }, N>(a!(), b!())
                }
                Operation::SetX => set::<{ Operation::SetX.component() }, N>(b!(), op.imm),
                Operation::SetY => set::<{ Operation::SetY.component() }, N>(b!(), op.imm),
                Operation::SetZ => set::<{ Operation::SetZ.component() }, N>(b!(), op.imm),
                Operation::Mulp => {
                    let a = a!();
                    let mut result = a;
                    for lane in 0..N {
                        result.0[2][lane] = alu::mul(a.0[0][lane], a.0[1][lane]);
                    }
                    result
                }
                Operation::Lea => Row::splat([op.imm; 3]),
                Operation::Mag => {
                    let a = a!();
                    let mut result = Row::ZERO;
                    each_lane!(lane in c.group => {
                        result.set_lane(lane, [alu::vector_magnitude(a.lane(lane)); 3]);
                    });
                    result
                }
                Operation::Swizzle => {
                    let b = b!();
                    let mut result = Row::ZERO;
                    each_lane!(lane in c.group => {
                        result.set_lane(lane, alu::swizzle(b.lane(lane), op.imm));
                    });
                    result
                }
                Operation::Omwrite => {
                    let (a, b) = (a!(), b!());
                    each_lane!(lane in c.group => {
                        control::omwrite(&mut m.outputs[lane], a.lane(lane), b.lane(lane));
                    });
                    Row::ZERO
                }
                Operation::Tmread => {
                    let a = a!();
                    let mut result = Row::ZERO;
                    each_lane!(lane in c.group => {
                        if O::TRACKS {
                            track_tmread(observer.footprint(), a.lane(lane));
                        }
                        let latch = &mut m.latches[lane].tmem_latch;
                        result.set_lane(lane, tmem::read(m.texture, latch, a.lane(lane)));
                    });
                    result
                }
                Operation::Jmp => {
                    if op.flags & TARGET_IS_CALL != 0 {
                        each_lane!(lane in c.group => {
                            m.latches[lane].arrival = Arrival::jump(program, this);
                        });
                    }
                    jump!(op.imm as u16, Row::ZERO)
                }
                Operation::Call => {
                    let mut target = 0;
                    if O::TRACKS && m.latches[0].arrival != Arrival::Call {
                        observer.footprint().write(RETURN_REGISTER);
                    }
                    each_lane!(lane in c.group => {
                        target = control::call(op, this, &mut m.latches[lane]);
                    });
                    jump!(target, Row::ZERO)
                }
                Operation::Ret => {
                    let result = Row(control::ret_result([op.imm; N], b!().0));
                    if O::TRACKS {
                        let footprint = observer.footprint();
                        if op.flags & RET_BEFORE_CALL != 0 {
                            footprint.write(RETURN_REGISTER);
                        }
                        footprint.read(RETURN_REGISTER);
                    }
                    if op.flags & RET_BEFORE_CALL != 0 {
                        let slot = program.jump_return_slot(this);
                        each_lane!(lane in c.group => {
                            m.latches[lane].return_slot = slot;
                        });
                    }
                    let ret = |lane: usize| m.latches[lane].return_slot;
                    let first = if N == 1 {
                        ret(0)
                    } else {
                        ret(c.group.trailing_zeros() as usize)
                    };
                    if N == 1 || lanes_of(c.group).all(|lane| ret(lane) == first) {
                        jump!(first, result)
                    } else {
                        for lane in lanes_of(c.group) {
                            c.lane_pc[lane] = ret(lane);
                        }
                        split!(result)
                    }
                }
                Operation::BranchX => branch!(Operation::BranchX.component()),
                Operation::BranchY => branch!(Operation::BranchY.component()),
                Operation::BranchZ => branch!(Operation::BranchZ.component()),
                Operation::Return => {
                    if O::ENABLED {
                        let (step, ret) = (([op.imm; 3], None), m.latches[0].return_slot);
                        observe(observer, program, this, op, seen, step, pc, ret);
                    }
                    let mut value = false;
                    each_lane!(lane in c.group => {
                        let mut core = Lane::new(rows, &mut m.latches, program, m.budget, lane);
                        value = control::finish(&mut core, op, c.budget_left[lane]);
                    });
                    if N == 1 {
                        return Ok(value as LaneMask);
                    }
                    if value {
                        c.returned |= c.group;
                    }
                    if c.waiting == 0 {
                        return Ok(c.returned);
                    }
                    c.group = 0;
                    break 'step;
                }
                Operation::Hang => {
                    if N > 1 {
                        return Err(Interrupted::Abandoned);
                    }
                    // The hung instruction is not executed.
                    let mut core = Lane::new(rows, &mut m.latches, program, m.budget, 0);
                    control::stop(&mut core, prev.dst, prev.d_row, c.budget_left[0] + 1);
                    let address = op.imm as u16;
                    return Err(Interrupted::Fault(Fault::Hang {
                        address,
                        word: program.word(address),
                    }));
                }
            };
            rows[op.d_row as usize].blend(&result, &active);
            prev = op;
            if O::ENABLED {
                let (step, ret) = ((result.lane(0), taken), m.latches[0].return_slot);
                observe(observer, program, this, op, seen, step, pc, ret);
            }
            if N == 1 {
                continue 'instructions;
            }
            c.uniform = true;
            if jumped {
                if pc < c.meeting {
                    continue 'instructions;
                }
                for lane in lanes_of(c.group) {
                    (c.lane_pc[lane], c.lane_prev[lane]) = (pc, op);
                }
                break 'step;
            }
            if pc != c.meeting {
                continue 'instructions;
            }
            // Waiting lanes join: from here the group's lanes may differ in what they
            // forward, so each keeps its own.
            for lane in lanes_of(c.group) {
                c.lane_prev[lane] = op;
            }
            c.uniform = false;
            let joining = lanes_at(&c.lane_pc, c.waiting, pc);
            c.group |= joining;
            c.waiting &= !joining;
            c.meeting = lowest(&c.lane_pc, c.waiting);
            active = lanes_running(c.group);
            continue 'instructions;
        }
        // The group broke up (or ended): every lane of it waits at `lane_pc`, and the
        // lanes at the lowest slot form the next group.
        let running = c.group | c.waiting;
        pc = lowest(&c.lane_pc, running);
        c.group = lanes_at(&c.lane_pc, running, pc);
        c.waiting = running & !c.group;
        c.meeting = lowest(&c.lane_pc, c.waiting);
        active = lanes_running(c.group);
        c.uniform = false;
    }
}

/// The rest of a lone core's routine, counted instruction by instruction: its budget does
/// not cover the next straight run. Kept out of line, as the rare path it is.
#[inline(never)]
#[cold]
fn execute_precisely<'a, const N: usize, O: Observer>(
    m: &mut LaneState<'a, N>,
    parity: usize,
    c: Cursor<'a, N>,
    prev: &'a Op,
    observer: &mut O,
) -> Result<LaneMask, Interrupted> {
    execute::<N, O, true>(m, parity, c, prev, observer)
}

/// TMREAD at `addresses` in a tracked core: the latch components it keeps are read, the
/// others written ([`tmem::kept`]).
#[inline(always)]
fn track_tmread(footprint: &Footprint, addresses: Vec3) {
    for (component, kept) in tmem::kept(addresses).into_iter().enumerate() {
        if kept {
            footprint.read(TMEM_LATCH + component);
        } else {
            footprint.write(TMEM_LATCH + component);
        }
    }
}

/// All ones in the running lanes, zero elsewhere: [`spread`], but constant for a lone core,
/// whose one lane always runs.
#[inline(always)]
fn lanes_running<const N: usize>(group: LaneMask) -> [u32; N] {
    if N == 1 {
        [!0; N]
    } else {
        spread(group)
    }
}

/// INCX/INCY/INCZ: component `C` of A incremented.
#[inline(always)]
fn increment<const C: usize, const N: usize>(mut a: Row<N>) -> Row<N> {
    a.0[C] = a.0[C].map(alu::inc);
    a
}

/// XCHANGEX/Y/Z: component `C` from B, the others from A.
#[inline(always)]
fn exchange<const C: usize, const N: usize>(mut a: Row<N>, b: Row<N>) -> Row<N> {
    a.0[C] = b.0[C];
    a
}

/// SETX/Y/Z: component `C` the immediate, the others from B.
#[inline(always)]
fn set<const C: usize, const N: usize>(mut b: Row<N>, imm: u32) -> Row<N> {
    b.0[C] = [imm; N];
    b
}

/// The lanes of `mask` at slot `pc`.
#[inline(always)]
fn lanes_at<const N: usize>(lane_pc: &[u16; N], mask: LaneMask, pc: u16) -> LaneMask {
    let mut at = 0;
    for lane in lanes_of(mask) {
        at |= ((lane_pc[lane] == pc) as LaneMask) << lane;
    }
    at
}

/// The lowest slot among the lanes of `mask` (`u16::MAX` for none).
#[inline(always)]
fn lowest<const N: usize>(lane_pc: &[u16; N], mask: LaneMask) -> u16 {
    lanes_of(mask)
        .map(|lane| lane_pc[lane])
        .min()
        .unwrap_or(u16::MAX)
}

/// Whether every lane of `active` has an exact multiplicand vector in `a`.
#[inline(always)]
fn exact_multiplicands<const N: usize>(a: &Row<N>, active: &[u32; N]) -> bool {
    let mut inexact = 0;
    for lane in 0..N {
        let exact = alu::exact_multiplicand(a.0[0][lane])
            & alu::exact_multiplicand(a.0[1][lane])
            & alu::exact_multiplicand(a.0[2][lane]);
        inexact |= !exact as u32 & active[lane];
    }
    inexact == 0
}

/// DOT in every lane ([`alu::dot`]); a group vectorises it when the multiplicands allow:
/// the sum of [`alu::dot_exact`] built one component at a time, a shape the vectoriser
/// takes.
#[inline(always)]
fn dot<const N: usize>(a: &Row<N>, b: &Row<N>, active: &[u32; N]) -> Row<N> {
    if N == 1 {
        return Row::splat([alu::dot(a.lane(0), b.lane(0)); 3]);
    }
    let mut word = [0; N];
    if exact_multiplicands(a, active) {
        let mut sum = [0u64; N];
        for component in 0..3 {
            for lane in 0..N {
                let (x, y) = (a.0[component][lane], b.0[component][lane]);
                sum[lane] = sum[lane].wrapping_add(alu::exact_scaled_product(x, y));
            }
        }
        for lane in 0..N {
            word[lane] = alu::pack(sum[lane]);
        }
    } else {
        for (lane, word) in word.iter_mut().enumerate() {
            *word = alu::dot(a.lane(lane), b.lane(lane));
        }
    }
    Row([word; 3])
}

/// CROSS in every lane ([`alu::cross`]); a group vectorises it when the multiplicands
/// allow: the components of [`alu::cross_exact`] one at a time.
#[inline(always)]
fn cross<const N: usize>(a: &Row<N>, b: &Row<N>, active: &[u32; N]) -> Row<N> {
    if N == 1 {
        return Row::splat(alu::cross(a.lane(0), b.lane(0)));
    }
    let mut out = Row::ZERO;
    if exact_multiplicands(a, active) {
        for (component, (i, j)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
            for lane in 0..N {
                let ij = alu::exact_scaled_product(a.0[i][lane], b.0[j][lane]);
                let ji = alu::exact_scaled_product(a.0[j][lane], b.0[i][lane]);
                out.0[component][lane] = alu::pack(ij.wrapping_sub(ji));
            }
        }
    } else {
        for lane in 0..N {
            out.set_lane(lane, alu::cross(a.lane(lane), b.lane(lane)));
        }
    }
    out
}

/// Reports one executed instruction of a lone core to an enabled observer, with the
/// operands as the ALU saw them (`a`, `b`: the rows read; type II A is the immediate) and,
/// for a CALL, the return register `ret` (a slot) it left.
#[allow(clippy::too_many_arguments)]
#[cold]
fn observe<O: Observer>(
    observer: &mut O,
    program: &Program,
    this: u16,
    op: &Op,
    (a, b): (Vec3, Vec3),
    (result, taken): (Vec3, Option<bool>),
    next: u16,
    ret: u16,
) {
    let slot = program.slot_info(this as u32);
    let instruction = slot.instr;
    let a = match instruction.a() {
        InputA::Src1 => a,
        InputA::Imm => [instruction.word().imm(), 0, 0],
        InputA::Unused => [0; 3],
    };
    let b = if instruction.b() == InputB::Unused {
        [0; 3]
    } else {
        b
    };
    observer.step(&Step {
        address: slot.address,
        instruction,
        a,
        b,
        result,
        written: op.d_row != LATCH_ROW,
        taken,
        next: program.slot_info(next as u32).address,
        returns_to: (op.kind == Operation::Call).then(|| program.slot_info(ret as u32).address),
    });
}
