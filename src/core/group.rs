//! Up to [`LANES`] cores running in lock-step, with their registers stored lane by lane so
//! that one decoded instruction executes for every core (*lane*) at once, in SIMD.
//!
//! Cores share nothing writable (the texture memory is read-only), so the order in which
//! lanes take their steps changes nothing: every lane goes through exactly the
//! instructions, operand values, forwarding, return register and instruction count that
//! [`Core::run`] would give it alone. Where lanes' paths split at a branch, the lanes at
//! the lowest program counter run first and the others wait, so paths that split at a
//! forward branch meet again at the join (the usual "minimum PC" rule of SIMT machines).
//! A lane not in the running group keeps its registers: results are blended in by mask.
//! What each instruction does to a lane's control state (routine start, CALL/RET, RETURN,
//! OMWRITE, the watchdog budget) is `control`'s, as for a lone core; only
//! the scheduling of lanes is the group's own.
//!
//! The hot opcodes of the ROM (SUB, ADD, DIV, DOT, CROSS, SET, ZERO, COPY, branches) run
//! as lane-wide loops over the [`alu`] functions, which the compiler vectorises; the rest
//! run lane by lane through the interpreter's own datapath (`exec::datapath!`).
//!
//! Faults are left to [`Core::run`]: when any lane would hang or exhaust its watchdog
//! budget, [`CoreGroup::run`] gives up with [`Abandoned`], leaving the group in no useful
//! state, and the caller reruns core by core to report the fault exactly.

// Lane loops index several lane-wide arrays at once: the shape the vectoriser wants.
#![allow(clippy::needless_range_loop)]

use super::alu::{self, Vec3};
use super::control::{self, Arrival, Routine};
use super::exec::{datapath, Core};
use super::output::OutputMemory;
use super::program::{
    jump_taken, operand_row, Op, Operation, Program, DYNAMIC_FORWARDING, FORWARD_A_ROW,
    FORWARD_B_ROW, LATCH_ROW, REGISTER_ARRAY_ROWS, RET_BEFORE_CALL, SAVES_OLD, SLOW_BEFORE_CALL,
    STALE_ROW, TARGET_IS_CALL,
};
use super::state::{triangle_rows, CoreState, Latches};
use super::tmem;
use super::triangle::Triangle;
use crate::isa::registers::EntryPoint;

/// Cores per group.
pub const LANES: usize = 8;

/// One bit per lane.
pub type LaneMask = u32;

/// A lane would have faulted: lock-step execution was given up part-way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a core faulted; lock-step execution was abandoned")]
pub struct Abandoned;

/// One component of one register, across the lanes.
type Wide = [u32; LANES];

/// One register row, lane by lane: x, y, z.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Row([Wide; 3]);

impl Row {
    const ZERO: Row = Row([[0; LANES]; 3]);

    #[inline(always)]
    fn lane(&self, lane: usize) -> Vec3 {
        [self.0[0][lane], self.0[1][lane], self.0[2][lane]]
    }

    #[inline(always)]
    fn set_lane(&mut self, lane: usize, value: Vec3) {
        for (component, &word) in value.iter().enumerate() {
            self.0[component][lane] = word;
        }
    }

    /// `value` in the lanes of `active` (all ones there, zero elsewhere), `self` elsewhere.
    #[inline(always)]
    fn blend(&mut self, value: &Row, active: &Wide) {
        for component in 0..3 {
            for lane in 0..LANES {
                let keep = self.0[component][lane] & !active[lane];
                self.0[component][lane] = keep | (value.0[component][lane] & active[lane]);
            }
        }
    }

    /// Each component through `f` lane by lane.
    #[inline(always)]
    fn zip(&self, other: &Row, f: impl Fn(u32, u32) -> u32) -> Row {
        let mut out = Row::ZERO;
        for component in 0..3 {
            for lane in 0..LANES {
                out.0[component][lane] = f(self.0[component][lane], other.0[component][lane]);
            }
        }
        out
    }
}

/// The lanes of a mask, lowest first.
#[inline(always)]
pub fn lanes_of(mask: LaneMask) -> LaneIter {
    LaneIter(mask)
}

/// The lanes of a mask, lowest first (see [`lanes_of`]).
#[derive(Clone, Copy, Debug)]
pub struct LaneIter(LaneMask);

impl Iterator for LaneIter {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let lane = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(lane)
    }
}

/// Whether groups run on the vector unit they are compiled for (AVX2); elsewhere they
/// work, lane-wide loops and all, but without the speed that makes them worth it.
pub fn vectorised() -> bool {
    crate::cpu::has_avx2()
}

/// All ones in the lanes of `mask`, zero elsewhere.
#[inline(always)]
fn spread(mask: LaneMask) -> Wide {
    std::array::from_fn(|lane| 0u32.wrapping_sub((mask >> lane) & 1))
}

/// Cores in lock-step: the registers of lane `l` are component `l` of every row.
pub struct CoreGroup<'a> {
    program: &'a Program,
    texture: &'a [u32],
    rows: Box<[Row; REGISTER_ARRAY_ROWS]>,
    lanes: usize,
    /// Lane `l`'s latches, as [`Core`] keeps its own.
    latches: [Latches; LANES],
    budget: u64,
    outputs: Vec<OutputMemory>,
}

/// Lane `lane` of a group's rows with its latches: one core, as the control unit reaches
/// it inside the interpreter loop (which holds the group's fields apart).
struct LaneRegisters<'g> {
    rows: &'g mut [Row; REGISTER_ARRAY_ROWS],
    latches: &'g mut Latches,
    program: &'g Program,
    budget: u64,
    lane: usize,
}

impl CoreState for LaneRegisters<'_> {
    #[inline(always)]
    fn row(&self, row: usize) -> Vec3 {
        self.rows[row].lane(self.lane)
    }

    #[inline(always)]
    fn set_row(&mut self, row: usize, value: Vec3) {
        self.rows[row].set_lane(self.lane, value);
    }

    #[inline(always)]
    fn latches(&self) -> &Latches {
        self.latches
    }

    #[inline(always)]
    fn latches_mut(&mut self) -> &mut Latches {
        self.latches
    }

    fn program(&self) -> &Program {
        self.program
    }

    fn budget(&self) -> u64 {
        self.budget
    }
}

/// One lane of a group, as the host sees a core.
pub struct LaneMut<'g, 'a> {
    group: &'g mut CoreGroup<'a>,
    lane: usize,
}

impl<'a> CoreGroup<'a> {
    /// Takes over up to [`LANES`] cores (booted, between routines) running one program;
    /// lane `l` is `cores[l]`.
    pub fn new(cores: Vec<Core<'a>>) -> CoreGroup<'a> {
        assert!(
            !cores.is_empty() && cores.len() <= LANES,
            "a group holds 1 to {LANES} cores"
        );
        let first = &cores[0];
        let mut group = CoreGroup {
            program: first.program,
            texture: first.texture,
            rows: Box::new([Row::ZERO; REGISTER_ARRAY_ROWS]),
            lanes: cores.len(),
            latches: [first.latches; LANES],
            budget: first.budget,
            outputs: Vec::with_capacity(cores.len()),
        };
        for (lane, core) in cores.into_iter().enumerate() {
            assert!(
                std::ptr::eq(core.program, group.program) && core.budget == group.budget,
                "the cores of a group run one program with one budget"
            );
            for (row, value) in core.regs.iter().enumerate() {
                group.rows[row].set_lane(lane, *value);
            }
            group.latches[lane] = core.latches;
            group.outputs.push(core.output);
        }
        group
    }

    /// Every lane.
    pub fn all(&self) -> LaneMask {
        (1 << self.lanes) - 1
    }

    pub fn lane(&mut self, lane: usize) -> LaneMut<'_, 'a> {
        assert!(lane < self.lanes, "lane {lane} is not in the group");
        LaneMut { group: self, lane }
    }

    /// The lanes of `lanes` that see swap copy 1.
    fn odd_lanes(&self, lanes: LaneMask) -> LaneMask {
        let mut odd = 0;
        for lane in lanes_of(lanes) {
            odd |= (self.latches[lane].parity as LaneMask) << lane;
        }
        odd
    }

    /// [`CoreState::load_triangle`] on every lane of `lanes` at once.
    pub fn load_triangle(&mut self, lanes: LaneMask, triangle: &Triangle) {
        #[cfg(target_arch = "x86_64")]
        if vectorised() {
            // SAFETY: the CPU has AVX2, as just checked.
            return unsafe { self.load_triangle_avx2(lanes, triangle) };
        }
        self.load_triangle_lanes(lanes, triangle)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn load_triangle_avx2(&mut self, lanes: LaneMask, triangle: &Triangle) {
        self.load_triangle_lanes(lanes, triangle)
    }

    #[inline(always)]
    fn load_triangle_lanes(&mut self, lanes: LaneMask, triangle: &Triangle) {
        let odd = self.odd_lanes(lanes);
        for (parity, mask) in [(0, lanes & !odd), (1, odd)] {
            if mask == 0 {
                continue;
            }
            let (io, alias) = triangle_rows(parity);
            // Lanes past the group's own are never read: overwrite them too. (No closures
            // here: they would not inherit the caller's target features.)
            let every_lane = mask == self.all();
            let active = spread(mask);
            for (row, value) in triangle.iter().enumerate() {
                let broadcast = Row([[value[0]; LANES], [value[1]; LANES], [value[2]; LANES]]);
                for target in [io + row, alias + row] {
                    if every_lane {
                        self.rows[target] = broadcast;
                    } else {
                        self.rows[target].blend(&broadcast, &active);
                    }
                }
            }
            for lane in lanes_of(mask) {
                self.latches[lane].parity ^= 1;
            }
        }
    }

    /// The cores back, lane by lane, in the state the group left them.
    pub fn into_cores(self) -> Vec<Core<'a>> {
        self.outputs
            .into_iter()
            .enumerate()
            .map(|(lane, output)| {
                let mut core = Core::new(self.program, self.texture, 0);
                for (row, value) in core.regs.iter_mut().enumerate() {
                    *value = self.rows[row].lane(lane);
                }
                core.latches = self.latches[lane];
                core.budget = self.budget;
                core.output = output;
                core
            })
            .collect()
    }

    /// Runs routine `entry` on the lanes of `lanes` until each has returned; the result
    /// has the bit of every lane whose RETURN value had bit 0 set. Lanes that see
    /// different swap copies run one parity after the other.
    pub fn run(&mut self, lanes: LaneMask, entry: EntryPoint) -> Result<LaneMask, Abandoned> {
        assert!(lanes & !self.all() == 0, "a lane mask names missing lanes");
        let odd = self.odd_lanes(lanes);
        let mut returned = 0;
        for (parity, group) in [(0, lanes & !odd), (1, odd)] {
            if group != 0 {
                returned |= self.run_parity(parity, group, entry)?;
            }
        }
        Ok(returned)
    }

    fn run_parity(
        &mut self,
        parity: usize,
        lanes: LaneMask,
        entry: EntryPoint,
    ) -> Result<LaneMask, Abandoned> {
        #[cfg(target_arch = "x86_64")]
        if vectorised() {
            // SAFETY: the CPU has AVX2, as just checked.
            return unsafe { self.execute_avx2(parity, lanes, entry) };
        }
        self.execute(parity, lanes, entry)
    }

    /// [`CoreGroup::execute`] compiled for AVX2: 8 lanes of 32 bits per vector.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn execute_avx2(
        &mut self,
        parity: usize,
        lanes: LaneMask,
        entry: EntryPoint,
    ) -> Result<LaneMask, Abandoned> {
        self.execute(parity, lanes, entry)
    }

    /// The lock-step interpreter: as [`Core::run`]'s loop, with the control state kept per
    /// lane and the datapath applied to the running group.
    #[inline(always)]
    fn execute(
        &mut self,
        parity: usize,
        lanes: LaneMask,
        entry: EntryPoint,
    ) -> Result<LaneMask, Abandoned> {
        let program = self.program;
        let texture = self.texture;
        let ops = program.ops(parity);
        let rows = &mut *self.rows;
        let latches = &mut self.latches;
        let budget = self.budget;
        let start = program.entry_slot(entry) as u16;
        let start_run = ops[start as usize].run as u64;
        // Per lane: the slot it waits at (lanes outside the group), its previous DST and
        // result row (lanes outside the group, or all when the group is not `uniform`).
        let mut lane_pc = [start; LANES];
        let mut lane_ld = [0u16; LANES];
        let mut lane_row = [LATCH_ROW; LANES];
        let mut ret = [0u16; LANES];
        let mut arrival = [Arrival::Sequential; LANES];
        let mut budget_at_start = [0u64; LANES];
        // The budgets, lane by lane while the routine runs (they go back to the latches
        // when a lane returns).
        let mut budget_left = [0u64; LANES];
        for lane in lanes_of(lanes) {
            let mut core = LaneRegisters {
                rows,
                latches: &mut latches[lane],
                program,
                budget,
                lane,
            };
            Routine {
                ret: ret[lane],
                budget_at_start: budget_at_start[lane],
            } = control::start(&mut core);
            budget_left[lane] = budget_at_start[lane];
            if !control::charge(&mut budget_left[lane], start_run) {
                return Err(Abandoned);
            }
        }
        let mut returned: LaneMask = 0;
        let mut pc = start;
        let mut group = lanes;
        let mut active = spread(group);
        let mut waiting: LaneMask = 0;
        // The lowest slot a waiting lane is at.
        let mut meeting = u16::MAX;
        let (mut ld, mut last_row, mut uniform) = (0u16, LATCH_ROW, true);
        loop {
            let op: &Op = &ops[pc as usize];
            let (a_row, b_row, d_row) = (op.a_row as usize, op.b_row as usize, op.d_row as usize);
            if op.flags & DYNAMIC_FORWARDING != 0 {
                for lane in lanes_of(group) {
                    let (lane_ld, lane_last) = if uniform {
                        (ld, last_row)
                    } else {
                        (lane_ld[lane], lane_row[lane])
                    };
                    let a = operand_row(op.a_addr, op.a_home, lane_ld, lane_last);
                    let b = operand_row(op.b_addr, op.b_home, lane_ld, lane_last);
                    let (a, b) = (rows[a as usize].lane(lane), rows[b as usize].lane(lane));
                    rows[FORWARD_A_ROW as usize].set_lane(lane, a);
                    rows[FORWARD_B_ROW as usize].set_lane(lane, b);
                }
            }
            let (a, b) = (rows[a_row], rows[b_row]);
            // Where each lane of the group goes next: all to one slot, or split.
            let next = match op.kind {
                Operation::Add => Next::Straight(a.zip(&b, alu::add)),
                Operation::Sub => Next::Straight(a.zip(&b, alu::sub)),
                Operation::Copy => Next::Straight(a),
                Operation::Nop | Operation::Zero => Next::Straight(Row::ZERO),
                Operation::SetX | Operation::SetY | Operation::SetZ => {
                    let mut result = b;
                    result.0[op.kind.component()] = [op.imm; LANES];
                    Next::Straight(result)
                }
                Operation::Div => Next::Straight(Row(control::divide(&a.0, &b.0, &active))),
                Operation::Dot => Next::Straight(dot(&a, &b, &active)),
                Operation::Cross => Next::Straight(cross(&a, &b, &active)),
                Operation::Omwrite => {
                    for lane in lanes_of(group) {
                        control::omwrite(&mut self.outputs[lane], a.lane(lane), b.lane(lane));
                    }
                    Next::Straight(Row::ZERO)
                }
                Operation::Tmread => {
                    let mut result = Row::ZERO;
                    for lane in lanes_of(group) {
                        let latch = &mut latches[lane].tmem_latch;
                        result.set_lane(lane, tmem::read(texture, latch, a.lane(lane)));
                    }
                    Next::Straight(result)
                }
                Operation::Jmp => {
                    if op.flags & TARGET_IS_CALL != 0 {
                        for lane in lanes_of(group) {
                            arrival[lane] = Arrival::jump(program, pc);
                        }
                    }
                    Next::Jump(Row::ZERO, op.imm as u16)
                }
                Operation::Call => {
                    let mut target = 0;
                    for lane in lanes_of(group) {
                        target = control::call(op, pc, &mut arrival[lane], &mut ret[lane]);
                    }
                    Next::Jump(Row::ZERO, target)
                }
                Operation::Ret => {
                    let result = Row(control::ret_result([op.imm; LANES], b.0));
                    if op.flags & RET_BEFORE_CALL != 0 {
                        let slot = program.jump_return_slot(pc);
                        for lane in lanes_of(group) {
                            ret[lane] = slot;
                        }
                    }
                    let first = ret[group.trailing_zeros() as usize];
                    if lanes_of(group).all(|lane| ret[lane] == first) {
                        Next::Jump(result, first)
                    } else {
                        for lane in lanes_of(group) {
                            lane_pc[lane] = ret[lane];
                        }
                        Next::Split(result)
                    }
                }
                Operation::BranchX | Operation::BranchY | Operation::BranchZ => {
                    let component = op.kind.component();
                    let taken = branch_taken(&a.0[component], &b.0[component], op.mask) & group;
                    if op.flags & TARGET_IS_CALL != 0 {
                        for lane in lanes_of(taken) {
                            arrival[lane] = Arrival::jump(program, pc);
                        }
                    }
                    if taken == group {
                        Next::Jump(Row::ZERO, op.imm as u16)
                    } else if taken == 0 {
                        Next::Jump(Row::ZERO, pc.wrapping_add(1))
                    } else {
                        for lane in lanes_of(group) {
                            lane_pc[lane] = if taken >> lane & 1 == 1 {
                                op.imm as u16
                            } else {
                                pc.wrapping_add(1)
                            };
                        }
                        Next::Split(Row::ZERO)
                    }
                }
                Operation::Return => Next::Return,
                Operation::Hang => return Err(Abandoned),
                kind => {
                    let mut result = Row::ZERO;
                    for lane in lanes_of(group) {
                        let value = datapath! {
                            match kind, a: a.lane(lane), b: b.lane(lane), imm: op.imm,
                            |value| value, { _ => [0; 3] }
                        };
                        result.set_lane(lane, value);
                    }
                    Next::Straight(result)
                }
            };
            if op.flags & SAVES_OLD != 0 {
                let old = rows[d_row];
                rows[STALE_ROW as usize].blend(&old, &active);
            }
            match next {
                Next::Straight(result) => {
                    rows[d_row].blend(&result, &active);
                    (ld, last_row, uniform) = (op.dst, op.d_row, true);
                    pc = pc.wrapping_add(1);
                    if op.flags & SLOW_BEFORE_CALL != 0 {
                        // The CALL at `pc` saves its own address + 2.
                        for lane in lanes_of(group) {
                            arrival[lane] = Arrival::jump(program, pc);
                        }
                    }
                    if pc != meeting {
                        continue;
                    }
                    // Waiting lanes join: from here the group's lanes may differ in what
                    // they forward, so each keeps its own.
                    for lane in lanes_of(group) {
                        lane_ld[lane] = ld;
                        lane_row[lane] = last_row;
                    }
                    uniform = false;
                    let joining = lanes_at(&lane_pc, waiting, pc);
                    group |= joining;
                    waiting &= !joining;
                    meeting = lowest(&lane_pc, waiting);
                    active = spread(group);
                    continue;
                }
                Next::Jump(result, target) => {
                    rows[d_row].blend(&result, &active);
                    charge(&mut budget_left, group, ops[target as usize].run as u64)?;
                    (ld, last_row, uniform) = (op.dst, op.d_row, true);
                    if target < meeting {
                        pc = target;
                        continue;
                    }
                    for lane in lanes_of(group) {
                        lane_pc[lane] = target;
                    }
                }
                Next::Split(result) => {
                    rows[d_row].blend(&result, &active);
                    for lane in lanes_of(group) {
                        charge(
                            &mut budget_left,
                            1 << lane,
                            ops[lane_pc[lane] as usize].run as u64,
                        )?;
                    }
                }
                Next::Return => {
                    let mut value = false;
                    for lane in lanes_of(group) {
                        let routine = Routine {
                            ret: ret[lane],
                            budget_at_start: budget_at_start[lane],
                        };
                        let left = budget_left[lane];
                        let mut core = LaneRegisters {
                            rows,
                            latches: &mut latches[lane],
                            program,
                            budget,
                            lane,
                        };
                        value = control::finish(&mut core, op, routine, left);
                    }
                    if value {
                        returned |= group;
                    }
                    if waiting == 0 {
                        return Ok(returned);
                    }
                    group = 0;
                }
            }
            // The group breaks up (or ended): every lane of it waits at `lane_pc`, and the
            // lanes at the lowest slot form the next group.
            for lane in lanes_of(group) {
                lane_ld[lane] = op.dst;
                lane_row[lane] = op.d_row;
            }
            let running = group | waiting;
            pc = lowest(&lane_pc, running);
            group = lanes_at(&lane_pc, running, pc);
            waiting = running & !group;
            meeting = lowest(&lane_pc, waiting);
            active = spread(group);
            uniform = false;
        }
    }
}

/// Where the running group goes after an instruction.
enum Next {
    /// To the next slot, with this result.
    Straight(Row),
    /// Every lane to one slot.
    Jump(Row, u16),
    /// Each lane to its `lane_pc`.
    Split(Row),
    Return,
}

/// The lanes of `mask` at slot `pc`.
#[inline(always)]
fn lanes_at(lane_pc: &[u16; LANES], mask: LaneMask, pc: u16) -> LaneMask {
    let mut at = 0;
    for lane in lanes_of(mask) {
        at |= ((lane_pc[lane] == pc) as LaneMask) << lane;
    }
    at
}

/// The lowest slot among the lanes of `mask` (`u16::MAX` for none).
#[inline(always)]
fn lowest(lane_pc: &[u16; LANES], mask: LaneMask) -> u16 {
    lanes_of(mask)
        .map(|lane| lane_pc[lane])
        .min()
        .unwrap_or(u16::MAX)
}

/// [`control::charge`] on every lane of `mask`, which must cover the run: a lane it does
/// not cover faults within that run.
#[inline(always)]
fn charge(budget_left: &mut [u64; LANES], mask: LaneMask, run: u64) -> Result<(), Abandoned> {
    for lane in lanes_of(mask) {
        if !control::charge(&mut budget_left[lane], run) {
            return Err(Abandoned);
        }
    }
    Ok(())
}

/// The lanes whose conditional jump with truth table `mask` is taken.
#[inline(always)]
fn branch_taken(x: &Wide, y: &Wide, mask: u8) -> LaneMask {
    let mut taken = 0;
    for lane in 0..LANES {
        taken |= (jump_taken(mask, x[lane], y[lane]) as LaneMask) << lane;
    }
    taken
}

/// Whether every lane of `active` has an exact multiplicand vector in `a`.
#[inline(always)]
fn exact_multiplicands(a: &Row, active: &Wide) -> bool {
    let mut inexact = 0;
    for lane in 0..LANES {
        let exact = alu::exact_multiplicand(a.0[0][lane])
            & alu::exact_multiplicand(a.0[1][lane])
            & alu::exact_multiplicand(a.0[2][lane]);
        inexact |= !exact as u32 & active[lane];
    }
    inexact == 0
}

/// DOT in every lane ([`alu::dot`]), vectorised when the multiplicands allow: the sum
/// of [`alu::dot_exact`] built one component at a time, a shape the vectoriser takes.
#[inline(always)]
fn dot(a: &Row, b: &Row, active: &Wide) -> Row {
    let mut word = [0; LANES];
    if exact_multiplicands(a, active) {
        let mut sum = [0u64; LANES];
        for component in 0..3 {
            for lane in 0..LANES {
                let (x, y) = (a.0[component][lane], b.0[component][lane]);
                sum[lane] = sum[lane].wrapping_add(alu::exact_scaled_product(x, y));
            }
        }
        for lane in 0..LANES {
            word[lane] = alu::pack(sum[lane]);
        }
    } else {
        for (lane, word) in word.iter_mut().enumerate() {
            *word = alu::dot(a.lane(lane), b.lane(lane));
        }
    }
    Row([word; 3])
}

/// CROSS in every lane ([`alu::cross`]), vectorised when the multiplicands allow: the
/// components of [`alu::cross_exact`] one at a time.
#[inline(always)]
fn cross(a: &Row, b: &Row, active: &Wide) -> Row {
    let mut out = Row::ZERO;
    if exact_multiplicands(a, active) {
        for (component, (i, j)) in [(1, 2), (2, 0), (0, 1)].into_iter().enumerate() {
            for lane in 0..LANES {
                let ij = alu::exact_scaled_product(a.0[i][lane], b.0[j][lane]);
                let ji = alu::exact_scaled_product(a.0[j][lane], b.0[i][lane]);
                out.0[component][lane] = alu::pack(ij.wrapping_sub(ji));
            }
        }
    } else {
        for lane in 0..LANES {
            out.set_lane(lane, alu::cross(a.lane(lane), b.lane(lane)));
        }
    }
    out
}

impl CoreState for LaneMut<'_, '_> {
    #[inline(always)]
    fn row(&self, row: usize) -> Vec3 {
        self.group.rows[row].lane(self.lane)
    }

    #[inline(always)]
    fn set_row(&mut self, row: usize, value: Vec3) {
        self.group.rows[row].set_lane(self.lane, value);
    }

    #[inline(always)]
    fn latches(&self) -> &Latches {
        &self.group.latches[self.lane]
    }

    #[inline(always)]
    fn latches_mut(&mut self) -> &mut Latches {
        &mut self.group.latches[self.lane]
    }

    fn program(&self) -> &Program {
        self.group.program
    }

    fn budget(&self) -> u64 {
        self.group.budget
    }
}

#[cfg(test)]
mod tests {
    //! A group against its cores run one by one ([`Core::run`], itself checked against a
    //! plain reference model), on the random programs of the interpreter's tests: every
    //! kind of control flow, so lanes split and meet, swap parities that differ between
    //! lanes, forwarding, CALL/RET, hangs and the watchdog.
    use super::*;
    use crate::core::exec::tests::program_strategy;
    use crate::core::exec::NoObserver;
    use crate::core::rom::{rom, RomVariant};
    use crate::isa::Word;
    use proptest::prelude::*;

    fn cores<'a>(
        program: &'a Program,
        texture: &'a [u32],
        seeds: &[Vec<Vec3>],
        budget: u64,
    ) -> Vec<Core<'a>> {
        seeds
            .iter()
            .map(|seeds| {
                let mut core = Core::new(program, texture, 4096);
                for (i, &seed) in seeds.iter().enumerate() {
                    core.host_write(i as u16, seed);
                    core.write_register(0x47 + i as u16, seed);
                    core.write_register(0x2C + i as u16, seed);
                }
                core.set_budget(budget);
                core
            })
            .collect()
    }

    fn outputs(core: &Core<'_>) -> Vec<Option<u32>> {
        (0..4096).map(|i| core.output.read(i)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        #[test]
        fn a_group_runs_each_lane_as_its_core_alone(
            code in program_strategy(),
            // Lanes share a few seeds so that some agree on branches and some do not.
            seeds in prop::collection::vec(
                prop::collection::vec(prop_oneof![
                    Just([0u32, 1, 2]),
                    Just([0x2_0000u32; 3]),
                    [any::<u32>(); 3],
                ], 8),
                1..=LANES,
            ),
            budget in prop_oneof![Just(64u64), 0u64..40],
            triangle in [[any::<u32>(); 3]; 7],
            odd_lanes in any::<u8>(),
            run_lanes in any::<u8>(),
        ) {
            let mut imem = Program::default_imem();
            imem[EntryPoint::PixelShader as usize] = Word(0x800C);
            imem.extend_from_slice(&code);
            let program = Program::new(rom(RomVariant::Faithful), &imem);
            let texture: Vec<u32> = (0..64).map(|i| i * 7).collect();
            let mut alone = cores(&program, &texture, &seeds, budget);
            let mut group = CoreGroup::new(cores(&program, &texture, &seeds, budget));
            let all = group.all();
            // Some lanes see the other swap copy; some sit the routine out.
            let odd = odd_lanes as LaneMask & all;
            let lanes = (run_lanes as LaneMask & all).max(1);
            for lane in lanes_of(odd) {
                alone[lane].load_triangle(&triangle);
            }
            group.load_triangle(odd, &triangle);
            for _round in 0..2 {
                let mut expected = Ok(0);
                for lane in lanes_of(lanes) {
                    match alone[lane].run(EntryPoint::PixelShader, &mut NoObserver) {
                        Ok(value) => {
                            if let Ok(mask) = &mut expected {
                                *mask |= (value as LaneMask) << lane;
                            }
                        }
                        Err(_) => expected = Err(Abandoned),
                    }
                }
                let got = group.run(lanes, EntryPoint::PixelShader);
                prop_assert_eq!(got, expected);
                if expected.is_err() {
                    // An abandoned group holds no state worth comparing.
                    return Ok(());
                }
                group.load_triangle(all, &triangle);
                for (lane, core) in alone.iter_mut().enumerate() {
                    core.load_triangle(&triangle);
                    core.refill_budget();
                    group.lane(lane).refill_budget();
                }
            }
            let back = group.into_cores();
            for (core, back) in alone.iter().zip(&back) {
                prop_assert!(core.same_state(back));
                prop_assert_eq!(core.latches, back.latches);
                prop_assert_eq!(outputs(core), outputs(back));
            }
        }
    }
}
