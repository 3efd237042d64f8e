//! The interpreter: one body for a lone core and for a lock-step group of cores, generic
//! over the number of lanes `N` (a lone [`Core`](super::Core) is `N = 1`, a
//! [`CoreGroup`](super::group::CoreGroup) `N = LANES`), as [`Row::divide`] is.
//!
//! Registers are stored lane by lane within each component ([`Row`]), so one decoded
//! instruction ([`SlotOp`]: operand rows with forwarding resolved, jump targets, write
//! rows) executes for every lane at once; for `N = 1` that is a plain `[u32; 3]` per
//! register. What an instruction does is its arm in [`effect`]: one short arm per
//! operation, which computes (the vector arithmetic is [`Row`]'s) and says what follows,
//! an [`Effect`]: write a row, jump, branch with a lane mask, return through the return
//! register, end the routine, hang. [`execute`] is the one loop that applies effects.
//!
//! Every lane goes through exactly the instructions, operand values, forwarding, return
//! register and instruction count it would alone: where lanes' paths split at a branch
//! (or a RET), the lanes at the lowest program counter run first and the others wait, so
//! paths that split at a forward branch meet again at the join (the "minimum PC" rule of
//! SIMT machines; [`Cursor::regroup`], [`Cursor::join`]). A lane outside the running group
//! keeps its registers: results are blended in by mask. With `N = 1` none of that
//! scheduling exists (it is behind `N > 1` tests the compiler folds away).
//!
//! The watchdog: unless `PRECISE`, the budget is charged a whole straight run at a time
//! (at the routine's start and after every jump, branch, CALL and RET); when a lone core's
//! budget does not cover the next run, the rest of its routine runs `PRECISE`, counting
//! instruction by instruction, so the watchdog stops exactly where it would have. A group
//! whose lane would fault gives up instead ([`Interrupted::Abandoned`]) and its caller
//! reruns core by core, where the fault is reported exactly.

use super::alu::{self, Vec3};
use super::control;
use super::mask::{lanes_of, spread, LaneMask};
use super::observer::{lean_operands, Fault, Observer, Step};
use super::op::{
    jump_taken, operand_row, Operation, SlotOp, DYNAMIC_FORWARDING, FORWARD_A_ROW, FORWARD_B_ROW,
    LATCH_ROW, OP_TABLE_LEN, RET_BEFORE_CALL, SAVES_OLD, SLOW_BEFORE_CALL, STALE_ROW,
    TARGET_IS_CALL,
};
use super::program::Program;
use super::row::Row;
use super::state::{Arrival, Lane, LaneState, Latches};
use super::tmem;
use super::track::{Footprint, RETURN_REGISTER, TMEM_LATCH};
use crate::emu::isa::registers::EntryPoint;
use crate::emu::isa::{InputA, InputB, Instr};

/// Why a routine did not return on every lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Interrupted {
    /// A lone core faulted; its state is as the hardware's would be.
    Fault(Fault),
    /// A lane of a group would have faulted; the group is in no useful state.
    Abandoned,
}

/// What an instruction does with the running lanes once it has computed, as its arm in
/// [`effect`] says; the loop in [`execute`] applies it. (Side effects on a lane's latches
/// and output memory, CALL's return register, OMWRITE's words, TMREAD's latch, happen in
/// the arm.)
#[derive(Clone, Copy)]
enum Effect {
    /// The row goes to the destination row; the running lanes go on in sequence.
    Write,
    /// Every running lane continues at the slot (JMP, CALL); zero goes to the destination
    /// (the latch row).
    Jump(u16),
    /// A conditional jump: the lanes of the mask continue at the op's target, the other
    /// running lanes in sequence; zero goes to the destination (the latch row).
    Branch(LaneMask),
    /// RET: the row goes to the destination; each lane continues at its return register.
    Ret,
    /// RETURN: the running lanes' routine ends.
    Return,
    /// An opcode the hardware never finishes: the core stops before executing it.
    Hang,
}

/// An arm's row (zero where the effect writes none) beside its [`Effect`]: apart, not a
/// payload of the enum, so that a lone core's row stays in registers as the ALU left it.
type Done<const N: usize> = (Row<N>, Effect);

/// An arm that writes `row` and goes on in sequence.
#[inline(always)]
fn write<const N: usize>(row: Row<N>) -> Done<N> {
    (row, Effect::Write)
}

/// An arm that writes no row (zero goes to the destination, as the hardware does).
#[inline(always)]
fn flow<const N: usize>(effect: Effect) -> Done<N> {
    (Row::ZERO, effect)
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
    lane_prev: [&'a SlotOp; N],
}

/// Runs `f` for every lane of the running group `group`; for a lone core, for its one lane,
/// whatever the mask, as the constant 0: a lane index the compiler cannot see through
/// would keep a lone core's rows and budget out of registers (3% more host instructions).
#[inline(always)]
fn each_lane<const N: usize>(group: LaneMask, mut f: impl FnMut(usize)) {
    if N == 1 {
        f(0);
    } else {
        for lane in lanes_of(group) {
            f(lane);
        }
    }
}

/// All ones in the running lanes, zero elsewhere: [`spread`], but constant for a lone core,
/// whose one lane always runs.
#[inline(always)]
fn running<const N: usize>(group: LaneMask) -> [u32; N] {
    if N == 1 {
        [!0; N]
    } else {
        spread(group)
    }
}

impl<'a, const N: usize> Cursor<'a, N> {
    /// Charges every running lane the straight run of `run` instructions it starts (see
    /// [`control::charge`]); whether every budget covered it.
    #[inline(always)]
    fn charge(&mut self, run: u64) -> bool {
        let mut covered = true;
        each_lane::<N>(self.group, |lane| {
            covered &= control::charge(&mut self.budget_left[lane], run);
        });
        covered
    }

    /// Where the running lanes go after a conditional jump at `next - 1` to `target`,
    /// taken by the lanes of `jumps`: one slot for all, or `None` when they part (with
    /// `N > 1`), each `lane_pc` set.
    #[inline(always)]
    fn branch(&mut self, jumps: LaneMask, target: u16, next: u16) -> Option<u16> {
        if N == 1 || jumps == self.group || jumps == 0 {
            return Some(if jumps != 0 { target } else { next });
        }
        for lane in lanes_of(self.group) {
            self.lane_pc[lane] = if jumps >> lane & 1 == 1 { target } else { next };
        }
        None
    }

    /// Where the running lanes go after a RET: each to its return register, one slot for
    /// all or `None` when they part (with `N > 1`), each `lane_pc` set.
    #[inline(always)]
    fn ret(&mut self, latches: &[Latches; N]) -> Option<u16> {
        let ret = |lane: usize| latches[lane].return_slot;
        let first = ret(if N == 1 {
            0
        } else {
            self.group.trailing_zeros() as usize
        });
        if N == 1 || lanes_of(self.group).all(|lane| ret(lane) == first) {
            return Some(first);
        }
        for lane in lanes_of(self.group) {
            self.lane_pc[lane] = ret(lane);
        }
        None
    }

    /// The running lanes part after `op` (`N > 1`): each continues at its `lane_pc`, whose
    /// run it is charged; a lane whose budget does not cover it abandons the group.
    #[inline(always)]
    fn part(&mut self, ops: &[SlotOp; OP_TABLE_LEN], op: &'a SlotOp) -> Result<(), Interrupted> {
        for lane in lanes_of(self.group) {
            self.lane_prev[lane] = op;
            let run = ops[self.lane_pc[lane] as usize].run as u64;
            if !control::charge(&mut self.budget_left[lane], run) {
                return Err(Interrupted::Abandoned);
            }
        }
        Ok(())
    }

    /// The running group broke up or ended, its lanes waiting at `lane_pc`: the lanes at
    /// the lowest slot form the next group (the minimum-PC rule); returns that slot and
    /// the new group's lanes all ones.
    #[inline(always)]
    fn regroup(&mut self) -> (u16, [u32; N]) {
        let running_or_waiting = self.group | self.waiting;
        let pc = lowest(&self.lane_pc, running_or_waiting);
        self.group = lanes_at(&self.lane_pc, running_or_waiting, pc);
        self.waiting = running_or_waiting & !self.group;
        self.meeting = lowest(&self.lane_pc, self.waiting);
        self.uniform = false;
        (pc, running(self.group))
    }

    /// The running group went on in sequence after `op` to `pc` (`N > 1`): where lanes
    /// wait there, they join ([`Cursor::join`]); whether they did.
    #[inline(always)]
    fn went_on(&mut self, pc: u16, op: &'a SlotOp) -> bool {
        self.uniform = true;
        if pc != self.meeting {
            return false;
        }
        self.join(pc, op);
        true
    }

    /// The running group jumped after `op` to `pc` (`N > 1`): at or past the lowest slot a
    /// lane waits at, it waits there too, and the group must be formed again
    /// ([`Cursor::regroup`]); whether it must.
    #[inline(always)]
    fn jumped(&mut self, pc: u16, op: &'a SlotOp) -> bool {
        self.uniform = true;
        if pc < self.meeting {
            return false;
        }
        for lane in lanes_of(self.group) {
            (self.lane_pc[lane], self.lane_prev[lane]) = (pc, op);
        }
        true
    }

    /// The running group, after `op`, reached `pc`, where lanes wait: they join. From here
    /// the group's lanes may differ in what they forward, so each keeps its own.
    #[inline(always)]
    fn join(&mut self, pc: u16, op: &'a SlotOp) {
        for lane in lanes_of(self.group) {
            self.lane_prev[lane] = op;
        }
        self.uniform = false;
        let joining = lanes_at(&self.lane_pc, self.waiting, pc);
        self.group |= joining;
        self.waiting &= !joining;
        self.meeting = lowest(&self.lane_pc, self.waiting);
    }
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
        lane_prev: [&SlotOp::ROUTINE_START; N],
    };
    if O::TRACKS {
        let footprint = observer.footprint();
        // `control::start` moves a result latch that is not in the latch row there.
        let last_row = m.latches[0].last_row;
        if last_row != LATCH_ROW {
            footprint.read_row(last_row as usize);
            footprint.write_row(LATCH_ROW as usize);
        }
        let code = (program.ops(parity), program.effects(parity));
        footprint.enter(code, parity, start, &SlotOp::ROUTINE_START);
    }
    each_lane::<N>(lanes, |lane| {
        let mut core = Lane::new(&mut m.rows, &mut m.latches, program, m.budget, lane);
        c.budget_left[lane] = control::start(&mut core);
    });
    if c.charge(start_run) {
        execute::<N, O, false>(m, parity, c, &SlotOp::ROUTINE_START, observer)
    } else if N == 1 {
        execute::<N, O, true>(m, parity, c, &SlotOp::ROUTINE_START, observer)
    } else {
        Err(Interrupted::Abandoned)
    }
}

/// The interpreter loop (see the module documentation): fetch, the op's [`effect`], and
/// applying it: a write goes on in sequence (where waiting lanes may join), every other
/// effect moves the running lanes to one slot (charging the run there) or parts them.
#[inline(always)]
pub(super) fn execute<'a, const N: usize, O: Observer, const PRECISE: bool>(
    m: &mut LaneState<'a, N>,
    parity: usize,
    mut c: Cursor<'a, N>,
    mut prev: &'a SlotOp,
    observer: &mut O,
) -> Result<LaneMask, Interrupted> {
    // Few locals, in registers; `prev` is the op whose DST and row forwarding compares with.
    let program = m.program;
    let ops = program.ops(parity);
    let mut active = running::<N>(c.group);
    let mut pc = c.pc;
    loop {
        if PRECISE && !control::charge(&mut c.budget_left[0], 1) {
            return Err(watchdog(m, prev, pc));
        }
        let op: &SlotOp = &ops[pc as usize];
        let this = pc;
        pc = this.wrapping_add(1);
        // One test for the three rare effects that come before the op computes.
        if op.flags & (DYNAMIC_FORWARDING | SAVES_OLD | SLOW_BEFORE_CALL) != 0 {
            prepare(m, op, pc, &c, prev, &active);
        }
        let seen = if O::ENABLED && (!O::LEAN || lean_operands(op.kind)) {
            operands(m, op)
        } else {
            ([0; 3], [0; 3])
        };
        // Where the running lanes go (`None`: they part), the row written at once; `taken`: a branch's.
        let (result, flow) = effect(m, op, this, c.group, &active, observer);
        let (target, taken) = match flow {
            Effect::Write => {
                m.rows[op.d_row as usize].blend(&result, &active);
                prev = op;
                if O::ENABLED {
                    report(observer, m, this, op, seen, None, pc);
                }
                if N > 1 && c.went_on(pc, op) {
                    active = running(c.group);
                }
                continue;
            }
            Effect::Jump(target) => {
                m.rows[op.d_row as usize].blend(&result, &active);
                (Some(target), None)
            }
            Effect::Branch(jumps) => {
                m.rows[op.d_row as usize].blend(&result, &active);
                (c.branch(jumps, op.imm as u16, pc), Some(jumps != 0))
            }
            Effect::Ret => {
                m.rows[op.d_row as usize].blend(&result, &active);
                (c.ret(&m.latches), None)
            }
            Effect::Return => {
                let returned = finish(m, op, &mut c);
                if O::ENABLED {
                    report(observer, m, this, op, seen, None, pc);
                }
                if let Some(returned) = returned {
                    return Ok(returned);
                }
                (pc, active) = c.regroup();
                continue;
            }
            Effect::Hang if N > 1 => return Err(Interrupted::Abandoned),
            Effect::Hang => return Err(hang(m, prev, op, c.budget_left[0] + 1)),
        };
        let Some(target) = target else {
            // The running lanes parted (`N > 1`): each waits at its `lane_pc`.
            c.part(ops, op)?;
            (pc, active) = c.regroup();
            continue;
        };
        // Every running lane goes to `target`, charged its run unless `PRECISE`; a lone core
        // whose budget does not cover it runs the rest of the routine precisely.
        if O::TRACKS {
            let code = (ops, program.effects(parity));
            observer.footprint().enter(code, parity, target, op);
        }
        if !PRECISE && !c.charge(ops[target as usize].run as u64) {
            if N > 1 {
                return Err(Interrupted::Abandoned);
            }
            if O::ENABLED {
                report(observer, m, this, op, seen, taken, target);
            }
            c.pc = target;
            return execute_precisely(m, parity, c, op, observer);
        }
        prev = op;
        pc = target;
        if O::ENABLED {
            report(observer, m, this, op, seen, taken, pc);
        }
        if N > 1 && c.jumped(pc, op) {
            (pc, active) = c.regroup();
        }
    }
}

/// The rest of a lone core's routine (only a lone core runs precisely), counted instruction
/// by instruction: its budget does not cover the next straight run. Kept out of line, as the rare path it is.
#[inline(never)]
#[cold]
fn execute_precisely<'a, const N: usize, O: Observer>(
    m: &mut LaneState<'a, N>,
    parity: usize,
    c: Cursor<'a, N>,
    prev: &'a SlotOp,
    observer: &mut O,
) -> Result<LaneMask, Interrupted> {
    execute::<N, O, true>(m, parity, c, prev, observer)
}

/// What the running lanes of `group` (all ones in `active`) do for `op` at slot `this`:
/// one arm per operation, each computing with [`Row`]'s arithmetic and saying what
/// follows. Operands are read where the arms use them (a load folded into the
/// arithmetic).
#[inline(always)]
fn effect<const N: usize, O: Observer>(
    m: &mut LaneState<'_, N>,
    op: &SlotOp,
    this: u16,
    group: LaneMask,
    active: &[u32; N],
    observer: &O,
) -> Done<N> {
    use Operation::*;
    let rows = &m.rows;
    let a = || rows.get(op.a_row);
    let b = || rows.get(op.b_row);
    // The lane-specific operations: each arm's component is the table's
    // (`Operation::component`), fixed at compile time, so that the operand stays in
    // registers.
    match op.kind {
        Nop | Zero => write(Row::ZERO),
        Add => write(a().zip(&b(), alu::add)),
        Sub => write(a().zip(&b(), alu::sub)),
        Mul => write(a().zip(&b(), alu::mul)),
        Imul => write(a().zip(&b(), alu::imul)),
        Mod => write(a().zip(&b(), alu::modulo)),
        Div => write(a().divide(&b(), active)),
        Dot => write(a().dot(&b(), active)),
        Cross => write(a().cross(&b(), active)),
        Copy => write(a()),
        Inc => write(a().map(alu::inc)),
        Dec => write(a().map(alu::dec)),
        Frac => write(a().map(alu::frac)),
        Intp => write(a().map(alu::intp)),
        Neg => write(a().map(alu::neg)),
        Unscale => write(a().map(alu::unscale)),
        Rescale => write(a().map(alu::rescale)),
        IncX => write(a().increment::<{ IncX.component() }>()),
        IncY => write(a().increment::<{ IncY.component() }>()),
        IncZ => write(a().increment::<{ IncZ.component() }>()),
        ExchangeX => write(a().exchange::<{ ExchangeX.component() }>(&b())),
        ExchangeY => write(a().exchange::<{ ExchangeY.component() }>(&b())),
        ExchangeZ => write(a().exchange::<{ ExchangeZ.component() }>(&b())),
        SetX => write(b().set::<{ SetX.component() }>(op.imm)),
        SetY => write(b().set::<{ SetY.component() }>(op.imm)),
        SetZ => write(b().set::<{ SetZ.component() }>(op.imm)),
        Mulp => write(a().mulp()),
        Lea => write(Row::splat([op.imm; 3])),
        Mag => write(a().each_lane(group, |a| [alu::vector_magnitude(a); 3])),
        Swizzle => write(b().each_lane(group, |b| alu::swizzle(b, op.imm))),
        Omwrite => write(omwrite(m, op, group)),
        Tmread => write(tmread(m, op, group, observer)),
        Jmp => flow(Effect::Jump(jmp(m, op, this, group))),
        Call => flow(Effect::Jump(call(m, op, this, group, observer))),
        Ret => (ret(m, op, this, group, observer), Effect::Ret),
        BranchX => flow(Effect::Branch(branch::<{ BranchX.component() }, N>(
            m, op, this, group,
        ))),
        BranchY => flow(Effect::Branch(branch::<{ BranchY.component() }, N>(
            m, op, this, group,
        ))),
        BranchZ => flow(Effect::Branch(branch::<{ BranchZ.component() }, N>(
            m, op, this, group,
        ))),
        Return => flow(Effect::Return),
        Hang => flow(Effect::Hang),
    }
}

/// OMWRITE: each running lane writes B's words at A's addresses in its output memory.
#[inline(always)]
fn omwrite<const N: usize>(m: &mut LaneState<'_, N>, op: &SlotOp, group: LaneMask) -> Row<N> {
    let (a, b) = (&m.rows[op.a_row as usize], &m.rows[op.b_row as usize]);
    each_lane::<N>(group, |lane| {
        control::omwrite(&mut m.outputs[lane], a.lane(lane), b.lane(lane));
    });
    Row::ZERO
}

/// TMREAD: each running lane reads texture memory at A's addresses through its latch.
#[inline(always)]
fn tmread<const N: usize, O: Observer>(
    m: &mut LaneState<'_, N>,
    op: &SlotOp,
    group: LaneMask,
    observer: &O,
) -> Row<N> {
    let a = &m.rows[op.a_row as usize];
    let mut result = Row::ZERO;
    each_lane::<N>(group, |lane| {
        if O::TRACKS {
            track_tmread(observer.footprint(), a.lane(lane));
        }
        let latch = &mut m.latches[lane].tmem_latch;
        result.set_lane(lane, tmem::read(m.texture, latch, a.lane(lane)));
    });
    result
}

/// The lanes of `lanes` take a jump at slot `this` to a CALL: it saves the jump's address
/// + 2 ([`Arrival`]).
#[inline(always)]
fn arrive_by_jump<const N: usize>(
    latches: &mut [Latches; N],
    program: &Program,
    this: u16,
    lanes: LaneMask,
) {
    each_lane::<N>(lanes, |lane| {
        if lanes >> lane & 1 == 1 {
            latches[lane].arrival = Arrival::jump(program, this);
        }
    });
}

/// JMP: to its target.
#[inline(always)]
fn jmp<const N: usize>(m: &mut LaneState<'_, N>, op: &SlotOp, this: u16, group: LaneMask) -> u16 {
    if op.flags & TARGET_IS_CALL != 0 {
        // (A lone core's group is its one lane.)
        arrive_by_jump(
            &mut m.latches,
            m.program,
            this,
            if N == 1 { 1 } else { group },
        );
    }
    op.imm as u16
}

/// CALL: each running lane's return register takes what its [`Arrival`] says; to the
/// target.
#[inline(always)]
fn call<const N: usize, O: Observer>(
    m: &mut LaneState<'_, N>,
    op: &SlotOp,
    this: u16,
    group: LaneMask,
    observer: &O,
) -> u16 {
    if O::TRACKS && m.latches[0].arrival != Arrival::Call {
        observer.footprint().write(RETURN_REGISTER);
    }
    let mut target = 0;
    each_lane::<N>(group, |lane| {
        target = control::call(op, this, &mut m.latches[lane]);
    });
    target
}

/// RET's result ([`control::ret_result`]); a CALL after it sets the return register
/// first ([`RET_BEFORE_CALL`]).
#[inline(always)]
fn ret<const N: usize, O: Observer>(
    m: &mut LaneState<'_, N>,
    op: &SlotOp,
    this: u16,
    group: LaneMask,
    observer: &O,
) -> Row<N> {
    let result = Row(control::ret_result([op.imm; N], m.rows.get(op.b_row).0));
    if O::TRACKS {
        let footprint = observer.footprint();
        if op.flags & RET_BEFORE_CALL != 0 {
            footprint.write(RETURN_REGISTER);
        }
        footprint.read(RETURN_REGISTER);
    }
    if op.flags & RET_BEFORE_CALL != 0 {
        let slot = m.program.jump_return_slot(this);
        each_lane::<N>(group, |lane| {
            m.latches[lane].return_slot = slot;
        });
    }
    result
}

/// A conditional jump on component `C`: the running lanes that take it.
#[inline(always)]
fn branch<const C: usize, const N: usize>(
    m: &mut LaneState<'_, N>,
    op: &SlotOp,
    this: u16,
    group: LaneMask,
) -> LaneMask {
    let (x, y) = (
        &m.rows[op.a_row as usize].0[C],
        &m.rows[op.b_row as usize].0[C],
    );
    let mut jumps: LaneMask = 0;
    for lane in 0..N {
        jumps |= (jump_taken(op.mask, x[lane], y[lane]) as LaneMask) << lane;
    }
    let jumps = if N == 1 { jumps } else { jumps & group };
    if op.flags & TARGET_IS_CALL != 0 {
        arrive_by_jump(&mut m.latches, m.program, this, jumps);
    }
    jumps
}

/// The rare work before an op computes, as its flags say: operands whose forwarding
/// depends on the path are copied in (compared with each lane's previous op), the
/// destination's old value is kept for a stale read, a CALL after a slow unit at `next`
/// is reached as by a jump.
#[inline(always)]
fn prepare<const N: usize>(
    m: &mut LaneState<'_, N>,
    op: &SlotOp,
    next: u16,
    c: &Cursor<'_, N>,
    prev: &SlotOp,
    active: &[u32; N],
) {
    let rows = &mut m.rows;
    if op.flags & DYNAMIC_FORWARDING != 0 {
        // Reached by paths that disagree about forwarding: compare addresses now.
        each_lane::<N>(c.group, |lane| {
            let prev = if N == 1 || c.uniform {
                prev
            } else {
                c.lane_prev[lane]
            };
            let a = operand_row(op.a_addr, op.a_home, prev.dst, prev.d_row);
            let b = operand_row(op.b_addr, op.b_home, prev.dst, prev.d_row);
            let (a, b) = (rows[a as usize].lane(lane), rows[b as usize].lane(lane));
            rows[FORWARD_A_ROW as usize].set_lane(lane, a);
            rows[FORWARD_B_ROW as usize].set_lane(lane, b);
        });
    }
    if op.flags & SAVES_OLD != 0 {
        let old = rows[op.d_row as usize];
        rows[STALE_ROW as usize].blend(&old, active);
    }
    if op.flags & SLOW_BEFORE_CALL != 0 {
        // The CALL at `next` saves its own address + 2.
        each_lane::<N>(c.group, |lane| {
            m.latches[lane].arrival = Arrival::jump(m.program, next);
        });
    }
}

/// RETURN on the running lanes: each ends its routine ([`control::finish`]). `Some` with
/// the lanes that returned a set bit 0 when no lane waits any more.
#[inline(always)]
fn finish<const N: usize>(
    m: &mut LaneState<'_, N>,
    op: &SlotOp,
    c: &mut Cursor<'_, N>,
) -> Option<LaneMask> {
    let mut value = false;
    each_lane::<N>(c.group, |lane| {
        let mut core = Lane::new(&mut m.rows, &mut m.latches, m.program, m.budget, lane);
        value = control::finish(&mut core, op, c.budget_left[lane]);
    });
    if N == 1 {
        return Some(value as LaneMask);
    }
    if value {
        c.returned |= c.group;
    }
    if c.waiting == 0 {
        return Some(c.returned);
    }
    c.group = 0;
    None
}

/// A lone core's watchdog fires before slot `pc`, after `prev`.
#[cold]
fn watchdog<const N: usize>(m: &mut LaneState<'_, N>, prev: &SlotOp, pc: u16) -> Interrupted {
    let mut core = Lane::new(&mut m.rows, &mut m.latches, m.program, m.budget, 0);
    control::stop(&mut core, prev.dst, prev.d_row, 0);
    Interrupted::Fault(Fault::Watchdog {
        address: m.program.slot_info(pc as u32).address,
        budget: m.budget,
    })
}

/// A lone core hangs at `op`, after `prev`, with `budget_left` (the hung instruction is
/// not executed).
#[cold]
fn hang<const N: usize>(
    m: &mut LaneState<'_, N>,
    prev: &SlotOp,
    op: &SlotOp,
    budget_left: u64,
) -> Interrupted {
    let mut core = Lane::new(&mut m.rows, &mut m.latches, m.program, m.budget, 0);
    control::stop(&mut core, prev.dst, prev.d_row, budget_left);
    let address = op.imm as u16;
    Interrupted::Fault(Fault::Hang {
        address,
        word: m.program.word(address),
    })
}

/// The operands `op` reads, as a lone core's observer sees them.
#[inline(always)]
fn operands<const N: usize>(m: &LaneState<'_, N>, op: &SlotOp) -> (Vec3, Vec3) {
    let rows = &m.rows;
    (
        rows[op.a_row as usize].lane(0),
        rows[op.b_row as usize].lane(0),
    )
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

/// Reports one executed instruction of a lone core to an enabled observer: a lean one
/// ([`Observer::LEAN`]) gets the instruction and its ALU inputs inline, any other the
/// whole [`Step`] ([`observe`], out of line).
#[inline(always)]
fn report<O: Observer, const N: usize>(
    observer: &mut O,
    m: &LaneState<'_, N>,
    this: u16,
    op: &SlotOp,
    seen: (Vec3, Vec3),
    taken: Option<bool>,
    next: u16,
) {
    if O::LEAN {
        if observer.lean_operation(op.kind) {
            return;
        }
        let instruction = m.program.slot_info(this as u32).instr;
        let (a, b) = alu_inputs(instruction, seen);
        observer.lean_step(instruction, a, b);
    } else {
        observe(observer, m, this, op, seen, taken, next);
    }
}

/// The ALU's inputs A and B of `instruction` from the rows it read (`a`, `b`): type II's
/// A is its immediate; an input the instruction does not use is zero.
#[inline(always)]
fn alu_inputs(instruction: Instr, (a, b): (Vec3, Vec3)) -> (Vec3, Vec3) {
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
    (a, b)
}

/// Reports one executed instruction of a lone core to an enabled observer, with the
/// operands as the ALU saw them (`a`, `b`: the rows read; type II A is the immediate) and,
/// for a CALL, the return register (a slot) it left.
#[allow(clippy::too_many_arguments)]
#[cold]
fn observe<O: Observer, const N: usize>(
    observer: &mut O,
    m: &LaneState<'_, N>,
    this: u16,
    op: &SlotOp,
    (a, b): (Vec3, Vec3),
    taken: Option<bool>,
    next: u16,
) {
    let (program, ret) = (m.program, m.latches[0].return_slot);
    // The row the op wrote (RETURN's result, which `control::finish` wrote, included).
    let result = m.rows[op.d_row as usize].lane(0);
    let slot = program.slot_info(this as u32);
    let instruction = slot.instr;
    let (a, b) = alu_inputs(instruction, (a, b));
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

#[cfg(test)]
pub(super) mod tests {
    //! The interpreter against a reference model written the plain way (decode every word
    //! at every step, compare every operand address with the previous DST, count every
    //! instruction), on random programs that exercise forwarding through every kind of
    //! control flow, swap parity, aliases, CALL/RET, hangs and the watchdog.
    use super::*;
    use crate::emu::core::lone::Core;
    use crate::emu::core::observer::NoObserver;
    use crate::emu::core::op::{storage_row, SHADOW_SWAP_ROW};
    use crate::emu::core::rom::{rom, RomVariant};
    use crate::emu::core::state::CoreState;
    use crate::emu::core::triangle::Triangle;
    use crate::emu::isa::{Opcode, Word, OPCODES};
    use proptest::prelude::*;

    const ZERO: Vec3 = [0; 3];

    fn lanes2(a: Vec3, b: Vec3, f: impl Fn(u32, u32) -> u32) -> Vec3 {
        [f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2])]
    }

    /// The reference core: physical rows as in `Core` (160), decoded by address.
    #[derive(Clone, Debug, PartialEq)]
    struct Reference {
        regs: Vec<Vec3>,
        parity: usize,
        last_dst: u16,
        last_result: Vec3,
        return_address: u16,
        budget_left: u64,
        instructions: u64,
        output: Vec<(u32, u32)>,
        tmem_latch: Vec3,
        /// The row the previous instruction wrote and its value before: the register file
        /// is written one instruction late, so a read of that row through another address
        /// sees the old value.
        stale: Option<(usize, Vec3)>,
    }

    /// How the instruction about to run was reached, for CALL's return address: the fetch
    /// unit captures `pointer + 1` on the rising edge of "a CALL is shown".
    #[derive(Clone, Copy)]
    enum Came {
        InSequence,
        /// A taken branch or JMP at this address (the pointer still holds address + 1).
        Jump(u16),
        /// A CALL (no edge: the register keeps its value).
        Call,
    }

    impl Reference {
        fn row(&self, address: u16) -> usize {
            storage_row(address, self.parity)
        }

        fn read(&self, address: u16) -> Vec3 {
            match self.stale {
                _ if address == self.last_dst => self.last_result,
                Some((row, old)) if row == self.row(address) => old,
                _ => self.regs[self.row(address)],
            }
        }

        fn run(&mut self, program: &Program, texture: &[u32], start: u16) -> Result<bool, Fault> {
            self.last_dst = 0;
            self.stale = None;
            let mut pc = start;
            let mut came = Came::InSequence;
            loop {
                if self.budget_left == 0 {
                    return Err(Fault::Watchdog {
                        address: pc,
                        budget: 0,
                    });
                }
                let word = program.word(pc);
                let d = Fields::of(word);
                let Some(op) = word.opcode() else {
                    return Err(Fault::Hang { address: pc, word });
                };
                self.budget_left -= 1;
                self.instructions += 1;
                let (a, b) = (self.read(d.a_addr), self.read(d.b_addr));
                use Opcode::*;
                let (result, next, taken) = match op {
                    Jmp | Call | Ret => self.control(program, op, &d, b, pc, came),
                    _ if op.is_conditional_jump() => {
                        let code = op as u16;
                        let lane = (code as usize >> 3) - 1;
                        let taken = alu::compare(a[lane], b[lane], code & 7);
                        let next = if taken { d.dst } else { pc.wrapping_add(1) };
                        (ZERO, next, taken)
                    }
                    _ => (
                        self.compute(op, &d, (a, b), pc, texture),
                        pc.wrapping_add(1),
                        false,
                    ),
                };
                let writes =
                    !matches!(op, Nop | DebugPrint | Jmp | Call | Ret) && !op.is_conditional_jump();
                self.stale = None;
                if writes && d.dst & 0x60 != 0 {
                    let row = self.row(d.dst);
                    self.stale = Some((row, self.regs[row]));
                    self.regs[row] = result;
                }
                self.last_dst = d.dst;
                self.last_result = result;
                if op == Return {
                    return Ok(d.imm & 1 == 1);
                }
                came = match op {
                    Call => Came::Call,
                    Jmp => Came::Jump(pc),
                    _ if taken => Came::Jump(pc),
                    // The divider and square root let the pointer run one ahead: a CALL
                    // right after them saves its own address + 2.
                    Div | Mag => Came::Jump(pc.wrapping_add(1)),
                    _ => Came::InSequence,
                };
                pc = next;
            }
        }

        /// What a non-control opcode computes (and writes to output memory or TMREAD's
        /// latch) at `pc`, with operands `a` and `b`.
        fn compute(
            &mut self,
            op: Opcode,
            d: &Fields,
            (a, b): (Vec3, Vec3),
            pc: u16,
            texture: &[u32],
        ) -> Vec3 {
            use Opcode::*;
            let imm_a = [d.imm, 0, 0];
            match op {
                Nop | DebugPrint => ZERO,
                Add => lanes2(a, b, alu::add),
                Sub => lanes2(a, b, alu::sub),
                Div => lanes2(a, b, alu::div),
                Mul => lanes2(a, b, alu::mul),
                Imul => lanes2(a, b, alu::imul),
                Mag => [alu::vector_magnitude(a); 3],
                Copy => a,
                Zero => ZERO,
                Inc => a.map(alu::inc),
                Dec => a.map(alu::dec),
                Incx => [alu::inc(a[0]), a[1], a[2]],
                Incy => [a[0], alu::inc(a[1]), a[2]],
                Incz => [a[0], a[1], alu::inc(a[2])],
                Cross => alu::cross(a, b),
                Dot => [alu::dot(a, b); 3],
                Mulp => [a[0], a[1], alu::mul(a[0], a[1])],
                Mod => lanes2(a, b, alu::modulo),
                Frac => a.map(alu::frac),
                Intp => a.map(alu::intp),
                Neg => a.map(alu::neg),
                Unscale => a.map(alu::unscale),
                Rescale => a.map(alu::rescale),
                Xchangex => [b[0], a[1], a[2]],
                Xchangey => [a[0], b[1], a[2]],
                Xchangez => [a[0], a[1], b[2]],
                Omwrite => {
                    for lane in 0..3 {
                        self.output.push((a[lane], b[lane]));
                    }
                    ZERO
                }
                Tmread => {
                    // Component k is latched unless it shares the bank of k - 1 while
                    // the next address (0 after z) is in another bank; x always is.
                    let banks = [a[0] & 3, a[1] & 3, a[2] & 3, 0];
                    for k in 0..3 {
                        let missed = k > 0 && banks[k] == banks[k - 1] && banks[k + 1] != banks[k];
                        if !missed {
                            self.tmem_latch[k] = texture.get(a[k] as usize).copied().unwrap_or(0);
                        }
                    }
                    self.tmem_latch
                }
                Lea => [pc.wrapping_add(1) as u32; 3],
                Setx => [imm_a[0], b[1], b[2]],
                Sety => [b[0], imm_a[0], b[2]],
                Setz => [b[0], b[1], imm_a[0]],
                Swizzle3d => alu::swizzle(b, d.imm),
                Return => [d.imm; 3],
                _ => unreachable!("{op:?} changes control flow"),
            }
        }

        /// JMP, CALL and RET at `pc`, reached as `came` says: their result and where
        /// they go.
        fn control(
            &mut self,
            program: &Program,
            op: Opcode,
            d: &Fields,
            b: Vec3,
            pc: u16,
            came: Came,
        ) -> (Vec3, u16, bool) {
            use Opcode::*;
            match op {
                Jmp => (ZERO, d.dst, false),
                Call => {
                    match came {
                        Came::InSequence => self.return_address = pc.wrapping_add(1),
                        Came::Jump(at) => self.return_address = at.wrapping_add(2),
                        Came::Call => {}
                    }
                    (ZERO, d.dst, false)
                }
                Ret => {
                    // A CALL right after the RET shows as the RET completes: its edge
                    // loads the return register with its own address + 1.
                    if program.word(pc.wrapping_add(1)).opcode() == Some(Call) {
                        self.return_address = pc.wrapping_add(2);
                    }
                    ([d.imm, b[1], b[2]], self.return_address, false)
                }
                _ => unreachable!("{op:?} is no JMP, CALL or RET"),
            }
        }
    }

    /// A word's fields as the decoder routes them, written out plainly (spec
    /// isa_and_formats §1.2): type I A = SRC1, B = SRC2; type II A = (IMM, 0, 0), B = DST.
    struct Fields {
        dst: u16,
        a_addr: u16,
        b_addr: u16,
        imm: u32,
    }

    impl Fields {
        fn of(word: Word) -> Fields {
            Fields {
                dst: word.dst(),
                a_addr: word.src1(),
                b_addr: if word.is_type2() {
                    word.dst()
                } else {
                    word.src2()
                },
                imm: word.imm(),
            }
        }
    }

    /// Operand addresses: a few registers, their aliases (high bits, other bank copies),
    /// bank 0, the swap bank, address 0.
    fn address() -> impl Strategy<Value = u16> {
        prop_oneof![
            prop::sample::select(vec![
                0u16, 1, 0x0C, 0x2C, 0x2D, 0x47, 0x48, 0x49, 0x76, 0x80, 0x8047, 0x4047, 0xAC,
                0x6C, 0x7F
            ]),
            any::<u16>(),
        ]
    }

    /// A random instruction of a program at 0x800C..0x800C+len: jumps and CALLs land in or
    /// just past it (or on the ROM's RETURN at 36), immediates are small or anything.
    fn instruction(len: u16) -> impl Strategy<Value = Word> {
        let target = prop_oneof![
            4 => 0x800Cu16..0x800C + len + 2,
            1 => Just(36u16),
            1 => any::<u16>(),
        ];
        let opcode = prop::sample::select(OPCODES.iter().map(|o| o.opcode).collect::<Vec<_>>());
        (
            opcode,
            address(),
            address(),
            address(),
            target,
            any::<u32>(),
            0u32..4,
        )
            .prop_map(|(op, dst, a, b, target, imm, small)| {
                let jumps = op.is_conditional_jump() || matches!(op, Opcode::Jmp | Opcode::Call);
                let dst = if jumps { target } else { dst };
                if op.is_type2() {
                    let imm = if op == Opcode::Return || small < 3 {
                        small
                    } else {
                        imm
                    };
                    Word::type2(op, dst, imm)
                } else {
                    Word::type1(op, dst, a, b)
                }
            })
    }

    pub(crate) fn program_strategy() -> impl Strategy<Value = Vec<Word>> {
        (1u16..24).prop_flat_map(|len| {
            prop::collection::vec(instruction(len), len as usize).prop_map(|mut code| {
                // End with a RETURN most of the time so that runs finish.
                code.push(Word::type2(Opcode::Return, 0, 1));
                code
            })
        })
    }

    #[derive(Default)]
    struct Recorder {
        steps: Vec<Step>,
    }

    impl Observer for Recorder {
        const ENABLED: bool = true;
        fn step(&mut self, step: &Step) {
            self.steps.push(*step);
        }
    }

    fn registers(core: &Core<'_>) -> Vec<Vec3> {
        (0..128).map(|a| core.register(a)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn the_interpreter_matches_the_reference(
            code in program_strategy(),
            seeds in prop::collection::vec([any::<u32>(); 3], 8),
            budget in prop_oneof![Just(64u64), 0u64..40],
            triangle in [[any::<u32>(); 3]; 7],
        ) {
            let mut imem = Program::default_imem();
            imem[EntryPoint::PixelShader as usize] = Word(0x800C);
            imem.extend_from_slice(&code);
            let program = Program::new(rom(RomVariant::Faithful), &imem);
            let texture: Vec<u32> = (0..64).map(|i| i * 7).collect();
            let mut core = Core::new(&program, &texture, 4096);
            let mut traced = Core::new(&program, &texture, 4096);
            for c in [&mut core, &mut traced] {
                for (i, &seed) in seeds.iter().enumerate() {
                    c.host_write(i as u16, seed);
                    c.write_register(0x47 + i as u16, seed);
                    c.write_register(0x2C + i as u16, seed);
                }
                c.set_budget(budget);
            }
            let mut reference = Reference {
                regs: (0..160).map(|row| core.row(row)).collect(),
                parity: 0,
                last_dst: 0,
                last_result: ZERO,
                return_address: 0,
                budget_left: budget,
                instructions: 0,
                output: Vec::new(),
                tmem_latch: ZERO,
                stale: None,
            };
            // Two routines with a swap flip between them: the second one sees the first
            // one's result latch, return register and a different swap copy.
            for _round in 0..2 {
                let traced_before = traced.instructions();
                let expected = reference.run(&program, &texture, 0x800C);
                let got = core.run(EntryPoint::PixelShader, &mut NoObserver);
                let mut recorder = Recorder::default();
                let traced_result = traced.run(EntryPoint::PixelShader, &mut recorder);
                let normalise = |r: Result<bool, Fault>| match r {
                    Err(Fault::Watchdog { address, .. }) => Err(Fault::Watchdog { address, budget: 0 }),
                    other => other,
                };
                prop_assert_eq!(normalise(got), expected);
                prop_assert_eq!(normalise(traced_result), expected);
                prop_assert_eq!(core.instructions(), reference.instructions);
                prop_assert_eq!(recorder.steps.len() as u64, traced.instructions() - traced_before);
                prop_assert_eq!(core.budget_left(), reference.budget_left);
                let reference_view: Vec<Vec3> = (0..128).map(|a| reference.regs[reference.row(a)]).collect();
                prop_assert_eq!(registers(&core), reference_view);
                prop_assert!(core.same_state(&traced));
                prop_assert_eq!(core.last_result(), reference.last_result);
                prop_assert_eq!(core.return_address(), reference.return_address);
                prop_assert_eq!(core.latches().tmem_latch, reference.tmem_latch);
                let written: Vec<(usize, u32)> = (0..4096).filter_map(|i| core.output().read(i).map(|w| (i, w))).collect();
                let mut expected_output = std::collections::BTreeMap::new();
                for &(address, value) in &reference.output {
                    if (address as usize) < 4096 {
                        expected_output.insert(address as usize, value);
                    }
                }
                prop_assert_eq!(written, expected_output.into_iter().collect::<Vec<_>>());
                if expected.is_err() {
                    break;
                }
                // The host streams a triangle between routines: swap flip.
                core.load_triangle(&triangle);
                traced.load_triangle(&triangle);
                reference.host_triangle(&triangle);
                core.refill_budget();
                traced.refill_budget();
                reference.budget_left = budget;
            }
        }
    }

    /// Runs the test program's pixel shader twice with a triangle load between, as in
    /// `the_interpreter_matches_the_reference`; what came out (results, counts, output).
    fn two_routines(core: &mut Core<'_>, triangle: &Triangle) -> Vec<(Result<bool, Fault>, u64)> {
        let mut results = Vec::new();
        for _round in 0..2 {
            let result = core.run(EntryPoint::PixelShader, &mut NoObserver);
            results.push((result, core.instructions()));
            if result.is_err() {
                break;
            }
            core.load_triangle(triangle);
            core.refill_budget();
        }
        results
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// The footprint's claim: start values of elements that are not live change
        /// nothing the routines do, and an untouched element ends as it started.
        #[test]
        fn a_footprint_holds_everything_the_routines_depend_on(
            code in program_strategy(),
            start in prop::collection::vec(any::<u32>(), crate::emu::core::track::ELEMENTS),
            other in prop::collection::vec(any::<u32>(), crate::emu::core::track::ELEMENTS),
            budget in prop_oneof![Just(64u64), 0u64..40],
            triangle in [[any::<u32>(); 3]; 7],
            parity in 0u8..2,
        ) {
            let mut imem = Program::default_imem();
            imem[EntryPoint::PixelShader as usize] = Word(0x800C);
            imem.extend_from_slice(&code);
            let program = Program::new(rom(RomVariant::Faithful), &imem);
            let slots = program.slot_count() as u32;
            let texture: Vec<u32> = (0..64).map(|i| i * 7).collect();
            let mut tracked = Core::new(&program, &texture, 4096);
            for (element, &value) in start.iter().enumerate() {
                let value = if element == RETURN_REGISTER { value % slots } else { value };
                tracked.set_element(element, value);
            }
            tracked.lanes.latches[0].parity = parity;
            tracked.set_budget(budget);
            let mut changed = tracked.clone();
            tracked.track();
            let ran = two_routines(&mut tracked, &triangle);
            let footprint = tracked.untrack().expect("tracked");
            let live = footprint.live();
            for (element, &value) in other.iter().enumerate() {
                if !live.contains(element) {
                    let value = if element == RETURN_REGISTER { value % slots } else { value };
                    changed.set_element(element, value);
                }
            }
            let start_changed = changed.clone();
            prop_assert_eq!(&two_routines(&mut changed, &triangle), &ran);
            prop_assert_eq!(changed.output().words.clone(), tracked.output().words.clone());
            prop_assert_eq!(changed.latches().parity, tracked.latches().parity);
            // A fault ends the frame: what the core holds after one does not matter (and a
            // run the watchdog cut short has claimed its writes whole).
            if ran.iter().any(|(result, _)| result.is_err()) {
                return Ok(());
            }
            let untouched = footprint.untouched();
            for element in 0..crate::emu::core::track::ELEMENTS {
                let expected = if untouched.contains(element) {
                    start_changed.element(element)
                } else {
                    tracked.element(element)
                };
                prop_assert_eq!(changed.element(element), expected, "element {}", element);
            }
        }
    }

    impl Reference {
        fn host_triangle(&mut self, triangle: &Triangle) {
            let io = if self.parity == 0 {
                SHADOW_SWAP_ROW
            } else {
                32
            } + 12;
            for (i, v) in triangle.iter().enumerate() {
                self.regs[io + i] = *v;
                self.regs[12 + i] = *v;
            }
            self.parity ^= 1;
        }
    }
}
