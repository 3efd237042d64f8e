//! One decoded instruction of one program slot, for one swap parity ([`SlotOp`]), and the
//! storage rows the decoder resolves operands and results to: what the interpreter
//! (`interp`) executes and tracking (`track`) reads, with no knowledge of the program
//! they came from (`program` builds them).

use super::alu;

/// What an [`SlotOp`] does: the opcode table's operation column (one variant per lane for the
/// lane-specific ones), with [`Operation::Hang`] for undefined opcodes.
pub(crate) use crate::emu::isa::Operation;

/// Rows 0..127 are the address space as the execution unit sees it with swap parity 0;
/// rows 128..159 hold the second swap-memory copy.
pub(crate) const SHADOW_SWAP_ROW: usize = 128;
/// Where the results of instructions that write no register go (writes the hardware drops,
/// and opcodes that never write): a row no decoded read names. It holds the forwarding
/// latch's value whenever the last instruction wrote no register.
pub(crate) const LATCH_ROW: u8 = 160;
/// The register array has 256 rows so that any `u8` row indexes it without a bounds check.
pub(crate) const REGISTER_ARRAY_ROWS: usize = 256;

/// The storage row behind a data address for swap parity `parity` (0 or 1): bits 6..5 pick
/// the bank, 4..0 the row; higher bits are not decoded.
pub(crate) fn storage_row(address: u16, parity: usize) -> usize {
    let row = (address & 0x7F) as usize;
    if row >> 5 == 1 && parity == 1 {
        row - 32 + SHADOW_SWAP_ROW
    } else {
        row
    }
}

/// One decoded instruction for one swap parity: 20 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SlotOp {
    pub kind: Operation,
    pub mask: u8,
    /// [`DYNAMIC_FORWARDING`] when an operand's source depends on the path taken.
    pub flags: u8,
    /// The rows operands A and B are read from, forwarding already resolved (see
    /// `program::resolve_forwarding`); [`FORWARD_A_ROW`]/[`FORWARD_B_ROW`] for a dynamic operand.
    pub a_row: u8,
    pub b_row: u8,
    /// The row the result goes to; [`LATCH_ROW`] when the hardware writes no register.
    pub d_row: u8,
    /// The operands' own rows (what a dynamic operand reads when not forwarded).
    pub a_home: u8,
    pub b_home: u8,
    /// Full 16-bit operand addresses, compared with the previous DST for forwarding.
    pub a_addr: u16,
    pub b_addr: u16,
    /// The DST field (the next instruction's forwarding address).
    pub dst: u16,
    /// Instructions from here to the end of this straight run (the next jump, CALL, RET,
    /// RETURN or hang, inclusive): the watchdog budget is checked once per run.
    pub run: u16,
    pub imm: u32,
}

impl SlotOp {
    /// What forwarding sees before a routine's first instruction, as if an op had run: the
    /// DST latch reset to 0, the previous result in the latch row.
    pub(crate) const ROUTINE_START: SlotOp = SlotOp {
        kind: Operation::Nop,
        mask: 0,
        flags: 0,
        a_row: LATCH_ROW,
        b_row: LATCH_ROW,
        d_row: LATCH_ROW,
        a_home: LATCH_ROW,
        b_home: LATCH_ROW,
        a_addr: 0,
        b_addr: 0,
        dst: 0,
        run: 1,
        imm: 0,
    };
}

/// [`SlotOp::flags`]: operand rows must be resolved at run time (see
/// `program::resolve_forwarding`).
pub(crate) const DYNAMIC_FORWARDING: u8 = 1;
/// [`SlotOp::flags`]: a jump, branch or CALL whose target is a CALL (which then takes its
/// return address from how it was reached: [`Arrival`](super::state::Arrival)).
pub(crate) const TARGET_IS_CALL: u8 = 2;
/// [`SlotOp::flags`]: a RET whose next address holds a CALL. The fetch unit shows that CALL as
/// the RET completes, and its rising edge sets the return register to RET + 2 before the
/// RET jumps through it (Module_InstructionFetch.v:68-69; confirmed on the RTL).
pub(crate) const RET_BEFORE_CALL: u8 = 4;
/// [`SlotOp::flags`]: a DIV or MAG whose next address holds a CALL. The divider and square
/// root let the fetch pointer run one ahead, so that CALL saves its own address + 2
/// (confirmed on the RTL; after every other opcode it saves + 1).
pub(crate) const SLOW_BEFORE_CALL: u8 = 16;
/// Rows a dynamic operand's value is copied to before the instruction runs.
pub(crate) const FORWARD_A_ROW: u8 = 161;
pub(crate) const FORWARD_B_ROW: u8 = 162;
/// [`SlotOp::flags`]: the next instruction may read this one's destination row through another
/// address, and so must see its old value: the op copies it to [`STALE_ROW`] before it
/// computes (after its dynamic operands are copied in).
pub(crate) const SAVES_OLD: u8 = 8;
/// Where [`SAVES_OLD`] keeps the destination row's value from before the write.
pub(crate) const STALE_ROW: u8 = 163;
/// Slots of the op table: every 16-bit slot number indexes it without a bounds check.
pub(crate) const OP_TABLE_LEN: usize = 1 << 16;

/// The row an operand at `address` (own row `home`) is read from when the previous
/// instruction had DST field `last_dst` and left its result in `last_row`: the forwarding
/// path on an address match (spec machine §1.2); [`STALE_ROW`] when the previous
/// instruction wrote this very row through another address (an alias with other high
/// bits): the register file is written one instruction late, so the RTL reads the row's
/// old value there; the register file otherwise.
#[inline(always)]
pub(crate) fn operand_row(address: u16, home: u8, last_dst: u16, last_row: u8) -> u8 {
    if address == last_dst {
        last_row
    } else if home == last_row && last_row != LATCH_ROW {
        STALE_ROW
    } else {
        home
    }
}

/// Whether a conditional jump with truth table `mask` (see `program::relation_mask`) is taken on
/// components `x` and `y`.
#[inline(always)]
pub(crate) fn jump_taken(mask: u8, x: u32, y: u32) -> bool {
    let greater = (x as i32) > (y as i32);
    let equal = alu::magnitude32(x) == alu::magnitude32(y);
    (mask >> ((greater as u8) << 1 | equal as u8)) & 1 != 0
}
