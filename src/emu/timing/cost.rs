//! What one instruction costs the execution unit, in clock cycles from the cycle the
//! instruction fetch unit hands it to the decoder to the cycle it hands over the next one
//! (measured on the RTL: `tests/rtl/bench.v`'s `TRACE` lines, 40 random cases and the
//! built-in scene, every opcode).
//!
//! The fetch unit announces the next instruction in the cycle the ALU raises OutputReady,
//! and the ALU is triggered one cycle after an instruction is announced (the decoder's
//! flip-flop), so an instruction costs its ALU latency plus one. The latencies are the
//! opcode table's (spec alu_semantics §7) but for three the RTL settles:
//! - MAG: 39, not 40 (the square root samples its input in its first state);
//! - RET: 3, not 1 (the fetch unit waits two cycles after a return from a subroutine,
//!   `Module_InstructionFetch.v`'s `wSubReturnDelay2`);
//! - DIV: 71, or 5 when every lane's divider skips its loop ([`div_is_short`]).
//!
//! Taken and untaken branches, CALL and JMP cost the same 2 cycles: the fetch unit
//! prefetches both successors. TMREAD's cost depends on the texture memory's arbiters,
//! shared by all cores ([`super::tmem`]); OMWRITE always takes 4.

use crate::emu::core::alu::{magnitude32, Vec3};
use crate::emu::core::Step;
use crate::emu::isa::{Hardware, Instr, OpcodeInfo, Operation, OPCODES};

/// How an instruction occupies the execution unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cost {
    /// This many cycles until the next instruction is handed over.
    Fixed(u32),
    /// A texture read of these three word addresses: its cycles depend on the arbiters.
    Tmread(Vec3),
    /// The routine's end: the control unit sees it in this instruction's cycle.
    Return,
    /// An opcode the hardware never finishes: the core waits forever.
    Hang,
}

/// What an opcode costs, before its operands: one entry per 7-bit opcode value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CostKind {
    Fixed(u32),
    Div,
    Omwrite,
    Tmread,
    Return,
    Hang,
}

/// How many operations there are ([`Operation::Hang`] is the last).
const OPERATIONS: usize = Operation::Hang as usize + 1;

/// The cycles of an instruction of `operation` where every opcode of it costs the same
/// fixed number ([`instruction_cost`]); 0 where the cost needs the instruction (an opcode
/// the hardware does not implement, such as DEBUG_PRINT beside NOP) or its operands (DIV,
/// TMREAD), or is no number of cycles (OMWRITE's event, RETURN, a hang).
#[inline(always)]
pub fn fixed_cycles(operation: Operation) -> u32 {
    const CYCLES: [u8; OPERATIONS] = fixed_cycles_by_operation();
    u32::from(CYCLES[operation as usize])
}

/// [`fixed_cycles`] of every operation, from the opcode table ([`row_kind`]).
const fn fixed_cycles_by_operation() -> [u8; OPERATIONS] {
    let mut cycles = [0u8; OPERATIONS];
    let mut varies = [false; OPERATIONS];
    let mut i = 0;
    while i < OPCODES.len() {
        let row = &OPCODES[i];
        let operation = row.operation as usize;
        let fixed = match row_kind(row) {
            CostKind::Fixed(cycles) => cycles as u8,
            _ => 0,
        };
        if fixed == 0 || (cycles[operation] != 0 && cycles[operation] != fixed) {
            varies[operation] = true;
        }
        cycles[operation] = fixed;
        i += 1;
    }
    let mut operation = 0;
    while operation < OPERATIONS {
        if varies[operation] {
            cycles[operation] = 0;
        }
        operation += 1;
    }
    cycles
}

/// [`CostKind`] of every opcode value, from the opcode table (looked up per instruction a
/// timed run interprets, so not searched for).
const KINDS: [CostKind; 128] = {
    let mut kinds = [CostKind::Hang; 128];
    let mut i = 0;
    while i < OPCODES.len() {
        kinds[OPCODES[i].opcode as usize] = row_kind(&OPCODES[i]);
        i += 1;
    }
    kinds
};

/// What an opcode of table row `row` costs whatever its operands: DIV at its long path,
/// TMREAD's addresses zero. The one place the table's latencies become cycles.
const fn row_cost(row: &OpcodeInfo) -> Cost {
    if !matches!(row.hardware, Hardware::Implemented) {
        return Cost::Hang;
    }
    match row.operation {
        Operation::Return => Cost::Return,
        Operation::Tmread => Cost::Tmread([0; 3]),
        Operation::Mag => Cost::Fixed(40),
        Operation::Ret => Cost::Fixed(4),
        _ => Cost::Fixed(row.latency + 1),
    }
}

/// The [`CostKind`] of an opcode of table row `row`.
const fn row_kind(row: &OpcodeInfo) -> CostKind {
    match (row_cost(row), row.operation) {
        (Cost::Fixed(_), Operation::Div) => CostKind::Div,
        (Cost::Fixed(_), Operation::Omwrite) => CostKind::Omwrite,
        (Cost::Fixed(cycles), _) => CostKind::Fixed(cycles),
        (Cost::Tmread(_), _) => CostKind::Tmread,
        (Cost::Return, _) => CostKind::Return,
        (Cost::Hang, _) => CostKind::Hang,
    }
}

/// The [`CostKind`] of the instruction `step` executed.
#[inline]
pub fn kind(step: &Step) -> CostKind {
    kind_of(step.instruction)
}

/// The [`CostKind`] of `instruction`.
#[inline]
pub fn kind_of(instruction: Instr) -> CostKind {
    match instruction.opcode() {
        Some(opcode) => KINDS[opcode as usize],
        None => CostKind::Hang,
    }
}

/// The cost of the instruction `step` executed.
pub fn cost(step: &Step) -> Cost {
    match kind(step) {
        CostKind::Fixed(cycles) => Cost::Fixed(cycles),
        CostKind::Omwrite => Cost::Fixed(4),
        CostKind::Div => Cost::Fixed(div_cycles(step.a, step.b)),
        CostKind::Tmread => Cost::Tmread(step.a),
        CostKind::Return => Cost::Return,
        CostKind::Hang => Cost::Hang,
    }
}

/// The cost of `instruction` whatever its operands: DIV at its long path, TMREAD's
/// addresses zero.
pub fn instruction_cost(instruction: Instr) -> Cost {
    instruction.info().map_or(Cost::Hang, row_cost)
}

/// DIV's cycles on operands `a` and `b`: 72, or 6 on the short path.
pub fn div_cycles(a: Vec3, b: Vec3) -> u32 {
    if div_is_short(a, b) {
        6
    } else {
        72
    }
}

/// Whether DIV takes its short path: every lane's divisor is 0 or at least the dividend
/// (|b| >= |a| << 17), where the unsigned divider goes from its first state straight to
/// its result (`Module_FixedPointDivision.v`). One long lane makes the whole DIV long.
pub fn div_is_short(a: Vec3, b: Vec3) -> bool {
    (0..3).all(|lane| {
        let dividend = u64::from(magnitude32(a[lane])) << 17;
        let divisor = u64::from(magnitude32(b[lane]));
        divisor == 0 || divisor >= dividend
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn div_is_short_only_when_every_lane_skips_its_loop() {
        let one = 1 << 17;
        // 1.0 / 1.0: divisor == dividend >> 17, far below the dividend: long.
        assert!(!div_is_short([one; 3], [one; 3]));
        // x / 0 in every lane: short.
        assert!(div_is_short([one; 3], [0; 3]));
        // One lane whose quotient is 0 (|b| > |a| << 17), the others by zero: short.
        assert!(div_is_short([1, 5, 7], [1 << 18, 0, 0]));
        // |b| == |a| << 17 exactly: short; one less: long.
        assert!(div_is_short([1, 0, 0], [one, 0, 0]));
        assert!(!div_is_short([1, 0, 0], [one - 1, 0, 0]));
        // Signs do not matter: magnitudes are compared (-1 LSB / -2.0).
        assert!(div_is_short([u32::MAX; 3], [(2 * one).wrapping_neg(); 3]));
        // One long lane makes it long.
        assert!(!div_is_short([one, 0, 0], [one, 0, 0]));
    }

    /// An operation's fixed cycles are every one of its opcodes' cost, and there are
    /// none where an opcode of it costs otherwise: DEBUG_PRINT hangs the hardware, so NOP
    /// (the same operation) is looked up; the unfinished XCHANGEY leaves XCHANGEX's alone.
    #[test]
    fn an_operation_s_fixed_cycles_are_each_of_its_opcodes_cost() {
        for row in crate::emu::isa::OPCODES {
            let instruction = Instr::decode(crate::emu::isa::Word::type1(row.opcode, 0, 0, 0));
            let fixed = fixed_cycles(row.operation);
            if fixed != 0 {
                assert_eq!(instruction_cost(instruction), Cost::Fixed(fixed), "{row:?}");
                assert_eq!(kind_of(instruction), CostKind::Fixed(fixed), "{row:?}");
            }
        }
        let cycles = |operation| fixed_cycles(operation);
        assert_eq!(cycles(Operation::Add), 2);
        assert_eq!(cycles(Operation::Mag), 40);
        assert_eq!(cycles(Operation::Ret), 4);
        assert_eq!(cycles(Operation::BranchX), 2);
        assert_eq!(cycles(Operation::ExchangeX), 2);
        for varies in [
            Operation::Nop,
            Operation::ExchangeY,
            Operation::Div,
            Operation::Tmread,
            Operation::Omwrite,
            Operation::Return,
            Operation::Hang,
        ] {
            assert_eq!(cycles(varies), 0, "{varies:?}");
        }
    }
}
