//! What the host (and culling) does to a core between routines, written once for both
//! places a core's state can live: a lone [`Core`](super::Core) and one lane of a
//! lock-step [`CoreGroup`](super::group::CoreGroup).

use super::alu::Vec3;
use super::program::{storage_row, Program, LATCH_ROW, SHADOW_SWAP_ROW};
use super::triangle::{Triangle, TRIANGLE_VECTORS};
use crate::isa::registers::core_writable;

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

/// Where a core's state lives, as the core's own code addresses it: register-array rows
/// (see [`storage_row`]), the swap parity, the latches as program slots. Only `core`
/// implements and names it; everything outside speaks [`CoreState`]'s architectural
/// terms (register addresses, code addresses).
pub(in crate::core) mod storage {
    use super::{Program, Vec3};

    pub trait Storage {
        /// Storage row `row`.
        fn row(&self, row: usize) -> Vec3;
        fn set_row(&mut self, row: usize, value: Vec3);
        /// 0 or 1: which copy of the swap memory the execution unit sees.
        fn parity(&self) -> usize;
        fn flip_parity(&mut self);
        fn program(&self) -> &Program;
        /// Sets the forwarding latches (the previous DST and the row of its result) and
        /// CALL's return register, as a program slot.
        fn set_latches(&mut self, last_dst: u16, last_row: u8, return_slot: u32);

        /// The first row of the swap copy the execution unit does not see (the IO side).
        fn io_swap_base(&self) -> usize {
            super::io_swap_base(self.parity())
        }
    }
}

use storage::Storage;

/// A core's registers, control-path latches and instruction budget, as the host (and
/// culling) sees them: by register and code address.
pub trait CoreState: Storage {
    /// Instructions left before the watchdog stops the current pixel.
    fn budget_left(&self) -> u64;
    fn set_budget_left(&mut self, budget: u64);
    /// The per-pixel budget [`CoreState::refill_budget`] restores.
    fn budget(&self) -> u64;
    /// Books `instructions` executed and `culled_routines` routines that were booked
    /// without being interpreted (culling).
    fn book(&mut self, instructions: u64, culled_routines: u64);

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
        let (io, alias) = triangle_rows(self.parity());
        for (row, &value) in triangle.iter().enumerate() {
            self.set_row(io + row, value);
            self.set_row(alias + row, value);
        }
        self.flip_parity();
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
        let (io, alias) = triangle_rows(self.parity());
        for row in 0..TRIANGLE_VECTORS {
            self.set_row(io + row, ZERO);
            self.set_row(alias + row, ZERO);
        }
    }

    /// Refills the per-pixel instruction budget.
    fn refill_budget(&mut self) {
        let budget = self.budget();
        self.set_budget_left(budget);
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
        let left = self.budget_left() - instructions;
        self.set_budget_left(left);
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
            .expect("a CALL's return point has a slot");
        self.set_latches(return_dst, LATCH_ROW, return_slot);
    }
}

/// A borrowed core is a core.
impl<C: Storage + ?Sized> Storage for &mut C {
    #[inline(always)]
    fn row(&self, row: usize) -> Vec3 {
        (**self).row(row)
    }
    #[inline(always)]
    fn set_row(&mut self, row: usize, value: Vec3) {
        (**self).set_row(row, value)
    }
    #[inline(always)]
    fn parity(&self) -> usize {
        (**self).parity()
    }
    #[inline(always)]
    fn flip_parity(&mut self) {
        (**self).flip_parity()
    }
    #[inline(always)]
    fn program(&self) -> &Program {
        (**self).program()
    }
    #[inline(always)]
    fn set_latches(&mut self, last_dst: u16, last_row: u8, return_slot: u32) {
        (**self).set_latches(last_dst, last_row, return_slot)
    }
}

impl<C: CoreState + ?Sized> CoreState for &mut C {
    #[inline(always)]
    fn budget_left(&self) -> u64 {
        (**self).budget_left()
    }
    #[inline(always)]
    fn set_budget_left(&mut self, budget: u64) {
        (**self).set_budget_left(budget)
    }
    #[inline(always)]
    fn budget(&self) -> u64 {
        (**self).budget()
    }
    #[inline(always)]
    fn book(&mut self, instructions: u64, culled_routines: u64) {
        (**self).book(instructions, culled_routines)
    }
}
