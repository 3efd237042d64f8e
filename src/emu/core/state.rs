//! A core's state, for both places it can live: a lone [`Core`](super::Core) and one lane
//! of a lock-step [`CoreGroup`](super::group::CoreGroup). Both keep a `LaneState` (registers
//! stored lane by lane, [`Latches`] per lane) that the interpreter runs in place; what the
//! control unit, the host and culling do to one core is written once, against
//! [`CoreState`], which a [`Lane`] of it implements.

// Lane loops index several lane-wide arrays at once: the shape the vectoriser wants.
#![allow(clippy::needless_range_loop)]

use super::alu::Vec3;
use super::op::{storage_row, LATCH_ROW, SHADOW_SWAP_ROW};
use super::output::OutputMemory;
use super::program::Program;
use super::row::Rows;
use super::track::NativeWrites;
use super::triangle::{Triangle, TRIANGLE_VECTORS};
use crate::emu::isa::registers::core_writable;

/// Swap-memory rows the host writes a triangle into (CREG_V0..CREG_TRI_DIFFUSE).
const TRIANGLE_ROW: usize = 44;

/// The first storage rows a triangle streamed by the host lands in, for a core at swap
/// parity `parity`: the IO-side swap copy's, and bank 0's (IO writes also land there,
/// address bits 4..0).
pub(crate) fn triangle_rows(parity: usize) -> (usize, usize) {
    (
        io_swap_base(parity) + (TRIANGLE_ROW - 32),
        TRIANGLE_ROW & 31,
    )
}

/// The first storage row of the swap copy the execution unit does not see (the IO side)
/// at swap parity `parity`.
fn io_swap_base(parity: usize) -> usize {
    if parity == 0 {
        SHADOW_SWAP_ROW
    } else {
        32
    }
}

const ZERO: Vec3 = [0; 3];

/// How a CALL was reached, which decides what its return register takes. The fetch unit
/// captures the register on the rising edge of "the instruction shown is a CALL", as the
/// fetch pointer plus one (Module_InstructionFetch.v:68-69; spec machine §6.3, confirmed
/// on the RTL by tests/rtl.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// In sequence, at a routine's start or by RET: CALL + 1.
    Sequential,
    /// By a taken branch or a JMP at address B, whose fall-through address the pointer
    /// still holds: B + 2, here as its slot. Also a CALL right after a DIV or MAG, whose
    /// units let the pointer run one ahead: the CALL's own address + 2.
    Jump(u16),
    /// By a CALL: "is a CALL" never falls, so there is no edge and the register keeps the
    /// first CALL's return address.
    Call,
}

impl Arrival {
    /// Reached by a taken jump (branch or JMP) at slot `jump`.
    #[cold]
    pub(super) fn jump(program: &Program, jump: u16) -> Arrival {
        Arrival::Jump(program.jump_return_slot(jump))
    }
}

/// What a core keeps besides its register rows: the swap parity, the control path's
/// latches, the texture interface's latch and the watchdog's and the statistics' counters.
/// A lone [`Core`](super::Core) holds one; a lock-step group one per lane, so moving a core
/// into a group and back copies it whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latches {
    /// 0 or 1: which copy of the swap memory the execution unit sees.
    pub(super) parity: u8,
    /// The previous instruction's DST field (the forwarding address), and the row holding
    /// its ALU result: its destination row, or the latch row when it wrote nothing.
    pub(super) last_dst: u16,
    pub(super) last_row: u8,
    /// CALL's single return register (no stack), as a program slot.
    pub(super) return_slot: u16,
    /// How the next CALL of the running routine is reached (what its return register
    /// takes). Kept here rather than in a local of the interpreter: it changes only at
    /// CALLs and jumps to CALLs, and a lone core's loop has no register to spare.
    pub(super) arrival: Arrival,
    /// The words the texture interface last latched for x, y and z ([`tmem::read`]).
    ///
    /// [`tmem::read`]: super::tmem::read
    pub(super) tmem_latch: Vec3,
    /// Instructions left before the watchdog stops the current pixel; while a routine
    /// runs, what was left at its start (the interpreter counts in a local until it stops).
    pub(super) budget_left: u64,
    /// Instructions executed since the core started (culled routines included).
    pub(super) instructions: u64,
    /// Routines booked without being interpreted (culling).
    pub(super) culled_routines: u64,
}

impl Latches {
    /// A core at boot, its return register at slot `return_slot` (address 0's).
    pub(super) fn boot(return_slot: u16) -> Latches {
        Latches {
            parity: 0,
            last_dst: 0,
            last_row: LATCH_ROW,
            return_slot,
            arrival: Arrival::Sequential,
            tmem_latch: ZERO,
            budget_left: u64::MAX,
            instructions: 0,
            culled_routines: 0,
        }
    }
}

/// A core's registers, control-path latches and instruction budget, wherever they are
/// stored (a lone [`Core`](super::Core), one lane of a lock-step group): what the control
/// unit, the host and culling do to a core between and at the ends of routines, written
/// once. Implementors give the storage rows and the [`Latches`]; everything else is
/// provided, in architectural terms (register and code addresses).
pub trait CoreState: Sized {
    /// Storage row `row`: the register array as the core stores it, banks and both swap
    /// copies (addresses map to rows by `program::storage_row`).
    fn row(&self, row: usize) -> Vec3;
    fn set_row(&mut self, row: usize, value: Vec3);
    fn latches(&self) -> &Latches;
    fn latches_mut(&mut self) -> &mut Latches;
    fn program(&self) -> &Program;
    /// The per-pixel budget [`CoreState::refill_budget`] restores.
    fn budget(&self) -> u64;

    /// 0 or 1: which copy of the swap memory the execution unit sees.
    #[inline(always)]
    fn parity(&self) -> usize {
        self.latches().parity as usize
    }

    #[inline(always)]
    fn flip_parity(&mut self) {
        self.latches_mut().parity ^= 1;
    }

    /// The first row of the swap copy the execution unit does not see (the IO side).
    #[inline(always)]
    fn io_swap_base(&self) -> usize {
        io_swap_base(self.parity())
    }

    /// Instructions left before the watchdog stops the current pixel.
    #[inline(always)]
    fn budget_left(&self) -> u64 {
        self.latches().budget_left
    }

    #[inline(always)]
    fn set_budget_left(&mut self, budget_left: u64) {
        self.latches_mut().budget_left = budget_left;
    }

    /// Books `instructions` executed and `culled_routines` routines that were booked
    /// without being interpreted (culling).
    #[inline(always)]
    fn book(&mut self, instructions: u64, culled_routines: u64) {
        let latches = self.latches_mut();
        latches.instructions += instructions;
        latches.culled_routines += culled_routines;
    }

    /// A register as the execution unit would read it from the file (no forwarding).
    #[inline(always)]
    fn register(&self, address: u16) -> Vec3 {
        self.row(storage_row(address, self.parity()))
    }

    /// Writes a register as the execution unit would (bank 0 writes are dropped).
    #[inline(always)]
    fn write_register(&mut self, address: u16, value: Vec3) {
        if core_writable(address) {
            self.set_row(storage_row(address, self.parity()), value);
        }
    }

    /// Writes registers as [`CoreState::write_register`] writes each, in order: for native
    /// code that writes several at once (a lone core then tests once whether it is tracked).
    #[inline(always)]
    fn write_registers<const N: usize>(&mut self, writes: [(u16, Vec3); N]) {
        for (address, value) in writes {
            self.write_register(address, value);
        }
    }

    /// One component of storage row `row` (a tracked core records that component alone).
    #[inline(always)]
    fn row_component(&self, row: usize, component: usize) -> u32 {
        self.row(row)[component]
    }

    /// Sets one component of storage row `row`, the others unchanged.
    #[inline(always)]
    fn set_row_component(&mut self, row: usize, component: usize, value: u32) {
        let mut old = self.row(row);
        old[component] = value;
        self.set_row(row, old);
    }

    /// One component of a register, as [`CoreState::register`] reads it.
    #[inline(always)]
    fn register_component(&self, address: u16, component: usize) -> u32 {
        self.row_component(storage_row(address, self.parity()), component)
    }

    /// Writes one component of a register as the execution unit would, the others
    /// unchanged (what SETX does to its own destination).
    #[inline(always)]
    fn write_register_component(&mut self, address: u16, component: usize, value: u32) {
        if core_writable(address) {
            self.set_row_component(storage_row(address, self.parity()), component, value);
        }
    }

    /// A host (IO) write: bank-0 row `address & 31` and the IO-side swap copy's row both
    /// receive it (spec isa_and_formats §2.1).
    fn host_write(&mut self, address: u16, value: Vec3) {
        let row = (address & 31) as usize;
        self.set_row(row, value);
        let io = self.io_swap_base();
        self.set_row(io + row, value);
    }

    /// The host streams one triangle into the IO side, then the control unit flips the
    /// swap memory so MAIN sees it.
    #[inline]
    fn load_triangle(&mut self, triangle: &Triangle) {
        self.write_triangle_rows(triangle);
        self.flip_parity();
    }

    /// The IO side's triangle rows and their bank-0 aliases take `values`.
    #[inline(always)]
    fn write_triangle_rows(&mut self, values: &Triangle) {
        let (io, alias) = triangle_rows(self.parity());
        for (row, &value) in values.iter().enumerate() {
            self.set_row(io + row, value);
            self.set_row(alias + row, value);
        }
    }

    /// Runs `write`, native code that writes the elements `key` stands for and reads
    /// nothing (a tracked core records them once per footprint).
    #[inline(always)]
    fn native_writes(&mut self, _key: NativeWrites, write: impl FnOnce(&mut Self)) {
        write(self);
    }

    /// Loads `triangles` one after another, as [`CoreState::load_triangle`] each would,
    /// writing only the last two: the loads alternate between the two swap copies and each
    /// fills the same rows (and bank 0's alias rows), so the last two overwrite everything
    /// the earlier ones wrote, and only the number of flips remains of those.
    #[inline(always)]
    fn load_triangles(&mut self, triangles: &[Triangle]) {
        let skipped = triangles.len().saturating_sub(2);
        if skipped & 1 == 1 {
            self.flip_parity();
        }
        for triangle in &triangles[skipped..] {
            self.load_triangle(triangle);
        }
    }

    /// After the last triangle the host sends one more, never announced (words past the
    /// list: undefined in the RTL, zero here). Only the IO side and bank 0 see it.
    fn load_dummy_triangle(&mut self) {
        self.write_triangle_rows(&[ZERO; TRIANGLE_VECTORS]);
    }

    /// Refills the per-pixel instruction budget.
    fn refill_budget(&mut self) {
        self.set_budget_left(self.budget());
    }

    /// Books one routine of `instructions` the core is known to have executed without
    /// interpreting it (the caller guarantees the budget covers them).
    #[inline(always)]
    fn charge(&mut self, instructions: u64) {
        self.charge_skipped(1, instructions);
    }

    /// Books `routines` routines that were not interpreted, together `instructions` long,
    /// against the budget.
    #[inline(always)]
    fn charge_skipped(&mut self, routines: u64, instructions: u64) {
        debug_assert!(instructions <= self.budget_left());
        self.set_budget_left(self.budget_left() - instructions);
        self.book(instructions, routines);
    }

    /// Sets what a routine that ended with `RETURN imm` (DST field `return_dst`) leaves in
    /// the control path: the forwarding latches, and the return register at
    /// `return_address` (a CALL's return point).
    fn set_routine_end_state(&mut self, return_dst: u16, return_imm: u32, return_address: u16) {
        self.set_row(LATCH_ROW as usize, [return_imm; 3]);
        let return_slot = self
            .program()
            .slot_of(return_address)
            .expect("a CALL's return point has a slot") as u16;
        self.set_return_register(return_slot);
        let latches = self.latches_mut();
        latches.last_dst = return_dst;
        latches.last_row = LATCH_ROW;
    }

    /// CALL's return register takes program slot `slot` (native code; the interpreter's
    /// CALL and RET reach the latches themselves).
    fn set_return_register(&mut self, slot: u16) {
        self.latches_mut().return_slot = slot;
    }
}

/// The state of `N` cores, as a lone core (`N = 1`) and a lock-step group keep it and the
/// interpreter runs it: the registers lane by lane, each lane's latches and output memory,
/// and what the lanes share (program, texture memory, per-pixel budget).
// The rows first, at the start of the (aligned) allocation: a group's lock-step rows ran
// 3-5% slower with the rows after the other fields (the same host instructions).
#[derive(Clone)]
#[repr(C)]
pub(super) struct LaneState<'a, const N: usize> {
    pub rows: Rows<N>,
    pub program: &'a Program,
    pub texture: &'a [u32],
    pub budget: u64,
    pub latches: [Latches; N],
    /// One output memory per lane (a group's lanes without a core hold an empty one).
    pub outputs: [OutputMemory; N],
}

/// Lane `lane` of `N` cores' rows with its latches: one core, as the control unit, the host
/// and culling reach it (a lone core's lane inside the interpreter, a group's anywhere).
pub struct Lane<'g, const N: usize> {
    rows: &'g mut Rows<N>,
    latches: &'g mut Latches,
    program: &'g Program,
    budget: u64,
    lane: usize,
}

impl<'g, const N: usize> Lane<'g, N> {
    #[inline(always)]
    pub(super) fn new(
        rows: &'g mut Rows<N>,
        latches: &'g mut [Latches; N],
        program: &'g Program,
        budget: u64,
        lane: usize,
    ) -> Lane<'g, N> {
        let latches = &mut latches[lane];
        Lane {
            rows,
            latches,
            program,
            budget,
            lane,
        }
    }
}

impl<const N: usize> CoreState for Lane<'_, N> {
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
