//! The control unit: what starting a routine, CALL, RET, RETURN and OMWRITE do to a core,
//! and how the watchdog budget is charged, for one lane of the interpreter (`interp`),
//! which decides when to call it.
//!
//! Everything is `#[inline(always)]`: these run inside the hot loops, where a call or a
//! spilled register costs more than the work itself.

// Lane loops index several lane-wide arrays at once: the shape the vectoriser wants.
#![allow(clippy::needless_range_loop)]

use super::alu::Vec3;
use super::op::{SlotOp, LATCH_ROW, TARGET_IS_CALL};
use super::output::OutputMemory;
use super::state::{Arrival, CoreState, Latches};

/// Triggering a routine resets the last-destination latch (not the result latch), and the
/// next CALL is reached in sequence. Decoding assumes a routine starts with the result
/// latch in the latch row (true after every RETURN; moving it covers a core resumed after
/// a fault). Returns the budget left at the start: what the routine executes is the
/// difference.
#[inline(always)]
pub(super) fn start(core: &mut impl CoreState) -> u64 {
    let latches = core.latches_mut();
    latches.last_dst = 0;
    latches.arrival = Arrival::Sequential;
    let last_row = core.latches().last_row;
    if last_row != LATCH_ROW {
        let result = core.row(last_row as usize);
        core.set_row(LATCH_ROW as usize, result);
        core.latches_mut().last_row = LATCH_ROW;
    }
    core.latches().budget_left
}

/// Charges the watchdog a whole straight run of `run` instructions (at a routine's start
/// and at every jump target), if the budget covers it; otherwise leaves the budget as it
/// is and says no: the core would stop within the run, which the caller counts precisely.
#[inline(always)]
pub(super) fn charge(budget_left: &mut u64, run: u64) -> bool {
    if *budget_left < run {
        return false;
    }
    *budget_left -= run;
    true
}

/// CALL at slot `pc`, reached as the latches' `arrival` says (which it resets for the next
/// CALL, setting it to [`Arrival::Call`] when its own target is a CALL): the return
/// register takes the slot [`Arrival`] names; returns the target.
#[inline(always)]
pub(super) fn call(op: &SlotOp, pc: u16, latches: &mut Latches) -> u16 {
    match latches.arrival {
        Arrival::Sequential => latches.return_slot = pc.wrapping_add(1),
        Arrival::Jump(slot) => latches.return_slot = slot,
        Arrival::Call => {}
    }
    latches.arrival = if op.flags & TARGET_IS_CALL != 0 {
        Arrival::Call
    } else {
        Arrival::Sequential
    };
    op.imm as u16
}

/// RET's result, written nowhere but forwarded: the immediate in x, B's y and z. A
/// component is one core's word, or the same component of every lane of a group.
#[inline(always)]
pub(super) fn ret_result<C: Copy>(imm: C, b: [C; 3]) -> [C; 3] {
    [imm, b[1], b[2]]
}

/// OMWRITE: output word `addresses[i]` := `values[i]`, component by component.
#[inline(always)]
pub(super) fn omwrite(output: &mut OutputMemory, addresses: Vec3, values: Vec3) {
    for component in 0..3 {
        output.write(addresses[component], values[component]);
    }
}

/// RETURN: its result `[imm; 3]` goes to its destination and stays in the latch row, where
/// the next routine's first instruction may read it through address 0 after the host has
/// written rows; the routine ends with bit 0 of the immediate.
#[inline(always)]
pub(super) fn finish(core: &mut impl CoreState, op: &SlotOp, budget_left: u64) -> bool {
    let result = [op.imm; 3];
    core.set_row(op.d_row as usize, result);
    core.set_row(LATCH_ROW as usize, result);
    stop(core, op.dst, LATCH_ROW, budget_left);
    op.imm & 1 == 1
}

/// A routine stops (returned or faulted) with `budget_left`: the core keeps its forwarding
/// latches (`last_dst`, `last_row`) and books what the routine executed, the difference
/// from the budget the latches have held since its start.
#[inline(always)]
pub(super) fn stop(core: &mut impl CoreState, last_dst: u16, last_row: u8, budget_left: u64) {
    let latches = core.latches_mut();
    latches.last_dst = last_dst;
    latches.last_row = last_row;
    latches.instructions += latches.budget_left - budget_left;
    latches.budget_left = budget_left;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_is_charged_only_when_the_budget_covers_it() {
        let mut budget_left = 5;
        assert!(charge(&mut budget_left, 5));
        assert_eq!(budget_left, 0);
        assert!(!charge(&mut budget_left, 1));
        assert_eq!(budget_left, 0);
        let mut budget_left = 4;
        assert!(!charge(&mut budget_left, 5));
        assert_eq!(budget_left, 4);
        assert!(charge(&mut budget_left, 0));
        assert_eq!(budget_left, 4);
    }
}
