//! The control unit: what starting a routine, CALL, RET, RETURN and OMWRITE do to a core,
//! and how the watchdog budget is charged, for one lane of the interpreter (`interp`),
//! which decides when to call it. DIV's lane-wide shortcut is here too.
//!
//! Everything is `#[inline(always)]`: these run inside the hot loops, where a call or a
//! spilled register costs more than the work itself.

// Lane loops index several lane-wide arrays at once: the shape the vectoriser wants.
#![allow(clippy::needless_range_loop)]

use super::alu::{self, Vec3};
use super::output::OutputMemory;
use super::program::{Op, Program, LATCH_ROW, TARGET_IS_CALL};
use super::state::{CoreState, Latches};

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

/// How a CALL was reached, which decides what its return register takes. The fetch unit
/// captures the register on the rising edge of "the instruction shown is a CALL", as the
/// fetch pointer plus one (Module_InstructionFetch.v:68-69; spec machine §6.3, confirmed
/// on the RTL by tests/rtl.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arrival {
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

/// CALL at slot `pc`, reached as the latches' `arrival` says (which it resets for the next
/// CALL, setting it to [`Arrival::Call`] when its own target is a CALL): the return
/// register takes the slot [`Arrival`] names; returns the target.
#[inline(always)]
pub(super) fn call(op: &Op, pc: u16, latches: &mut Latches) -> u16 {
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
pub(super) fn finish(core: &mut impl CoreState, op: &Op, budget_left: u64) -> bool {
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

/// DIV for `N` cores at once, component by component (`a[c][lane]`); a lone core is
/// `N = 1`. The ROM divides replicated scalars (x = y = z) most of the time: when every
/// lane of `active` does, one quotient per lane serves all three components. A lone core
/// divides with [`alu::div`] (one hardware division; the float form's rounding is a
/// library call without SSE4.1), lanes with [`alu::div_by_float`], its equal, which
/// vectorises.
#[inline(always)]
pub(super) fn divide<const N: usize>(
    a: &[[u32; N]; 3],
    b: &[[u32; N]; 3],
    active: &[u32; N],
) -> [[u32; N]; 3] {
    let quotient = if N == 1 { alu::div } else { alu::div_by_float };
    let mut mixed = 0;
    for lane in 0..N {
        let differ = (a[0][lane] ^ a[1][lane])
            | (a[1][lane] ^ a[2][lane])
            | (b[0][lane] ^ b[1][lane])
            | (b[1][lane] ^ b[2][lane]);
        mixed |= differ & active[lane];
    }
    let mut out = [[0; N]; 3];
    if mixed == 0 {
        for lane in 0..N {
            out[0][lane] = quotient(a[0][lane], b[0][lane]);
        }
        out[1] = out[0];
        out[2] = out[0];
    } else {
        for component in 0..3 {
            for lane in 0..N {
                out[component][lane] = quotient(a[component][lane], b[component][lane]);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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

    /// Replicated scalars (the shortcut) and mixed vectors, zero divisors and signs.
    fn vector() -> impl Strategy<Value = Vec3> {
        let word = prop_oneof![Just(0u32), Just(0x2_0000), Just(0xFFFE_0000), any::<u32>()];
        prop_oneof![
            word.clone().prop_map(|w| [w; 3]),
            [word.clone(), word.clone(), word]
        ]
    }

    proptest! {
        #[test]
        fn divide_is_div_in_every_active_lane_and_component(
            a in prop::collection::vec(vector(), 8),
            b in prop::collection::vec(vector(), 8),
            active in any::<u8>(),
        ) {
            let expected = |lane: usize| -> Vec3 {
                std::array::from_fn(|c| alu::div(a[lane][c], b[lane][c]))
            };
            let wide = |v: &[Vec3]| -> [[u32; 8]; 3] { std::array::from_fn(|c| std::array::from_fn(|lane| v[lane][c])) };
            let mask: [u32; 8] = std::array::from_fn(|lane| 0u32.wrapping_sub((active as u32 >> lane) & 1));
            let quotient = divide(&wide(&a), &wide(&b), &mask);
            for lane in (0..8).filter(|lane| active >> lane & 1 == 1) {
                let got: Vec3 = std::array::from_fn(|c| quotient[c][lane]);
                prop_assert_eq!(got, expected(lane));
            }
            let [[x], [y], [z]] = divide(&[[a[0][0]], [a[0][1]], [a[0][2]]], &[[b[0][0]], [b[0][1]], [b[0][2]]], &[!0]);
            prop_assert_eq!([x, y, z], expected(0));
        }
    }
}
