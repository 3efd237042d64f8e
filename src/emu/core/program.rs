//! Code memory decoded once, into a compact table the interpreter indexes directly.
//!
//! The hardware's instruction addresses span 64K (ROM below 0x8000, IMEM above), but only
//! the ROM words, the 129 IMEM words and a handful of undefined addresses that some jump,
//! CALL or entry names can ever execute. Every such address gets one *slot*; jumps, CALL
//! return points and entry points are resolved to slots at decode time, so the
//! interpreter's program counter is a slot index and its working set is a few kilobytes
//! instead of a 64K-entry table.
//!
//! Each slot is decoded twice into a `SlotOp` (`op`), once per swap-memory parity: the register
//! rows an instruction reads and writes are then fixed numbers (bank-1 addresses already
//! pointing at the copy the execution unit sees), and results the hardware writes nowhere
//! (bank 0, or opcodes that never write) go to a latch row only forwarding reads.

use std::collections::HashMap;

use crate::emu::isa::registers::{
    core_writable, EntryPoint, ENTRY_TABLE_LEN, IMEM_WORDS, USER_CODE_BIT,
};
use crate::emu::isa::{Flow, Instr, Word, Writes, UNDEFINED_ROM_WORD};

use super::alu;
use super::op::{
    operand_row, storage_row, Operation, SlotOp, DYNAMIC_FORWARDING, FORWARD_A_ROW, FORWARD_B_ROW,
    LATCH_ROW, OP_TABLE_LEN, RET_BEFORE_CALL, SAVES_OLD, SLOW_BEFORE_CALL, STALE_ROW,
    TARGET_IS_CALL,
};
use super::track::{Packed, RunEffect};

/// Resolves operand forwarding at decode time, for one parity's op table.
///
/// The hardware forwards the previous instruction's result to an operand whose address
/// equals the previous DST field (spec machine §1.2). That result sits in the previous
/// instruction's `d_row` (its destination row, or the latch row when it wrote nothing). An
/// instruction can be entered only from: the slot before it (if that one falls through),
/// a jump, branch or CALL naming it, a RET (if it is a CALL's return point, or address 0,
/// the return register's initial value), or a routine start (DST latch reset to 0; the
/// latch row then holds the previous routine's RETURN result). When every way in gives
/// the operand the same row, that row is fixed here; otherwise the op is marked dynamic
/// and compares addresses at run time.
fn resolve_forwarding(ops: &mut [SlotOp], slots: &[Slot], entries: &[u32], return_points: &[u32]) {
    // (DST field, result row, the predecessor's slot when it is an instruction that can
    // write a register).
    const ENTRY: (u16, u8, Option<usize>) = (0, LATCH_ROW, None);
    let mut preds: Vec<Vec<(u16, u8, Option<usize>)>> = vec![Vec::new(); ops.len()];
    let rets: Vec<(u16, u8, Option<usize>)> = ops
        .iter()
        .filter(|op| op.kind.flow() == Flow::Ret)
        .map(|op| (op.dst, op.d_row, None))
        .collect();
    for (i, op) in ops.iter().enumerate() {
        let flow = op.kind.flow();
        if flow.falls_through() && i + 1 < ops.len() {
            preds[i + 1].push((op.dst, op.d_row, Some(i)));
        }
        if flow.has_target() {
            preds[slots[i].target as usize].push((op.dst, op.d_row, Some(i)));
        }
    }
    for &entry in entries {
        preds[entry as usize].push(ENTRY);
    }
    for &point in return_points {
        preds[point as usize].extend_from_slice(&rets);
    }
    let mut saves_old = vec![false; ops.len()];
    for (j, (preds, slot)) in preds.iter().zip(slots).enumerate() {
        let mut source = |address: u16, home: u8| -> Option<u8> {
            // Every predecessor is visited: each one a read may see stale must save.
            let rows: Vec<u8> = preds
                .iter()
                .map(|&(dst, row, pred)| {
                    let read = operand_row(address, home, dst, row);
                    if read == STALE_ROW {
                        saves_old[pred.expect("only instructions write rows")] = true;
                    }
                    read
                })
                .collect();
            let first = rows.first().copied().unwrap_or(home);
            rows.iter().all(|&row| row == first).then_some(first)
        };
        let (reads_a, reads_b) = slot.instr.reads();
        let op = ops[j];
        let a = reads_a.then(|| source(op.a_addr, op.a_home));
        let b = reads_b.then(|| source(op.b_addr, op.b_home));
        let op = &mut ops[j];
        // An operand read (`Some`) from one row whatever the path, or from a row copied in
        // at run time (`Some(None)`).
        for (source, row, forward_row) in [
            (a, &mut op.a_row, FORWARD_A_ROW),
            (b, &mut op.b_row, FORWARD_B_ROW),
        ] {
            match source {
                Some(Some(fixed)) => *row = fixed,
                Some(None) => {
                    *row = forward_row;
                    op.flags |= DYNAMIC_FORWARDING;
                }
                None => {}
            }
        }
    }
    for (op, saves) in ops.iter_mut().zip(saves_old) {
        if saves {
            op.flags |= SAVES_OLD;
            // The save happens before the op computes, so an operand it reads from the
            // stale row itself is copied aside first, as a dynamic one is.
            for (row, forward_row) in [
                (&mut op.a_row, FORWARD_A_ROW),
                (&mut op.b_row, FORWARD_B_ROW),
            ] {
                if *row == STALE_ROW {
                    *row = forward_row;
                    op.flags |= DYNAMIC_FORWARDING;
                }
            }
        }
    }
    // Straight runs, from the back; any change of control flow (or a hang) ends one.
    for i in (0..ops.len()).rev() {
        ops[i].run = if ops[i].kind.flow() != Flow::Next || i + 1 == ops.len() {
            1
        } else {
            ops[i + 1].run.saturating_add(1)
        };
    }
}

/// The opcodes whose units (divider, square root) let the fetch pointer run ahead.
fn slow(kind: Operation) -> bool {
    matches!(kind, Operation::Div | Operation::Mag)
}

/// Truth table of a jump relation over `(greater, magnitude-equal)`, bit `2g + e`, read off
/// [`alu::compare`] itself so the two can never disagree.
fn relation_mask(relation: u16) -> u8 {
    // (x, y) pairs giving each (greater, equal) combination.
    let samples: [(u32, u32); 4] = [(0, 1), (0, 0), (1, 0), (1, u32::MAX)];
    samples
        .iter()
        .enumerate()
        .map(|(bit, &(x, y))| (alu::compare(x, y, relation) as u8) << bit)
        .sum()
}

/// A slot: one executable address.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub address: u16,
    pub instr: Instr,
    /// The slot a jump or CALL goes to (unused otherwise).
    pub target: u32,
}

/// What one machine runs: the ROM plus the instruction memory (entry table and user code),
/// decoded for every address that can execute.
#[derive(Clone)]
pub struct Program {
    rom: Vec<Word>,
    imem: Vec<Word>,
    entry: [u16; ENTRY_TABLE_LEN],
    entry_slot: [u32; ENTRY_TABLE_LEN],
    loaded_imem_words: usize,
    slots: Vec<Slot>,
    /// `ops[parity][slot]`.
    ops: Vec<Box<[SlotOp; OP_TABLE_LEN]>>,
    /// `effects[parity][slot]`: what the straight run starting at the slot reads and
    /// writes, for tracking ([`track`](super::track)).
    effects: Vec<Vec<Packed>>,
    slot_of: HashMap<u16, u32>,
}

/// Instruction memory words that were never loaded read as undefined (X in the RTL).
const UNLOADED_WORD: Word = UNDEFINED_ROM_WORD;

impl Program {
    /// Builds code memory from the ROM words (address 0..) and the IMEM words (0x8000..):
    /// IMEM words 0..11 are the entry-point table, user code starts at 0x800C.
    pub fn new(rom: &[Word], imem: &[Word]) -> Program {
        let mut program = Program::sequential(rom, imem);
        program.add_targets();
        let return_points = program.return_points();
        program.ops = (0..2)
            .map(|parity| program.decode(parity, &return_points))
            .collect();
        program.effects = program
            .ops
            .iter()
            .map(|ops| {
                (0..program.slots.len())
                    .map(|slot| Packed::from(&RunEffect::of_run(&ops[slot..])))
                    .collect()
            })
            .collect();
        program
    }

    /// The code memory with slots for the sequential runs only, each followed by the
    /// address after it, so that "next instruction" is always "next slot"; and the entry
    /// points.
    fn sequential(rom: &[Word], imem: &[Word]) -> Program {
        assert!(
            rom.len() < USER_CODE_BIT as usize,
            "the ROM ends below 0x8000"
        );
        let loaded = imem.len().min(IMEM_WORDS);
        // The control unit starts a routine at the low 16 bits of its table word.
        let entry = std::array::from_fn(|i| {
            imem.get(i)
                .map_or(EntryPoint::ALL[i].default_address(), |w| w.0 as u16)
        });
        let mut program = Program {
            rom: rom.to_vec(),
            imem: imem[..loaded].to_vec(),
            entry,
            entry_slot: [0; ENTRY_TABLE_LEN],
            loaded_imem_words: loaded,
            slots: Vec::new(),
            ops: Vec::new(),
            effects: Vec::new(),
            slot_of: HashMap::new(),
        };
        for address in 0..=rom.len() as u16 {
            program.add_slot(address);
        }
        for address in USER_CODE_BIT..=USER_CODE_BIT + IMEM_WORDS as u16 {
            program.add_slot(address);
        }
        for (i, &address) in entry.iter().enumerate() {
            program.entry_slot[i] = program.slot(address);
        }
        program
    }

    /// Slots for jump and CALL targets, and CALL return points (RET's only destinations
    /// besides address 0, the return register's value before any CALL).
    fn add_targets(&mut self) {
        let mut i = 0;
        while i < self.slots.len() {
            let Slot { address, instr, .. } = self.slots[i];
            if let Some(target) = instr.target() {
                self.slots[i].target = self.slot(target);
            }
            if instr.flow() == Flow::Call {
                self.slot(address.wrapping_add(1));
            }
            i += 1;
        }
    }

    /// Every slot a RET can go to, sorted: CALL return points, address 0, and the jump
    /// returns (given slots here). A CALL reached by a taken branch or JMP at B returns to
    /// B + 2 (control::Arrival), and so does a RET at B whose next address holds a CALL
    /// (RET_BEFORE_CALL); a CALL after a slow unit at B returns to B + 3.
    fn return_points(&mut self) -> Vec<u32> {
        let mut jump_returns = Vec::new();
        for i in 0..self.slots.len() {
            let Slot {
                address,
                instr,
                target,
            } = self.slots[i];
            let jumps = matches!(instr.flow(), Flow::Branch | Flow::Jump);
            let before_call =
                Instr::decode(self.word(address.wrapping_add(1))).flow() == Flow::Call;
            if (before_call && instr.flow() == Flow::Ret)
                || (jumps && self.slots[target as usize].instr.flow() == Flow::Call)
            {
                jump_returns.push(address.wrapping_add(2));
            }
            if before_call && slow(instr.operation()) {
                jump_returns.push(address.wrapping_add(3));
            }
        }
        for &address in &jump_returns {
            self.slot(address);
        }
        let mut return_points: Vec<u32> = self
            .slots
            .iter()
            .filter(|slot| slot.instr.flow() == Flow::Call)
            .map(|slot| slot.address.wrapping_add(1))
            .chain(jump_returns)
            .chain([0])
            .map(|address| self.slot_of[&address])
            .collect();
        return_points.sort_unstable();
        return_points.dedup();
        return_points
    }

    /// The op table for swap parity `parity`: every slot's op with its flags and
    /// forwarding resolved, padded to 2^16 slots so that a u16 slot number needs no
    /// bounds check.
    fn decode(&self, parity: usize, return_points: &[u32]) -> Box<[SlotOp; OP_TABLE_LEN]> {
        let mut ops: Vec<SlotOp> = self
            .slots
            .iter()
            .map(|slot| Program::op(slot, parity))
            .collect();
        for (op, slot) in ops.iter_mut().zip(&self.slots) {
            let target = self.slots[slot.target as usize].instr.flow();
            if slot.instr.flow().has_target() && target == Flow::Call {
                op.flags |= TARGET_IS_CALL;
            }
            let next = Instr::decode(self.word(slot.address.wrapping_add(1)));
            if slot.instr.flow() == Flow::Ret && next.flow() == Flow::Call {
                op.flags |= RET_BEFORE_CALL;
            }
            if slow(slot.instr.operation()) && next.flow() == Flow::Call {
                op.flags |= SLOW_BEFORE_CALL;
            }
        }
        resolve_forwarding(&mut ops, &self.slots, &self.entry_slot, return_points);
        let hang = Program::op(&self.slots[self.slots.len() - 1], parity);
        ops.resize(OP_TABLE_LEN, hang);
        ops.into_boxed_slice()
            .try_into()
            .expect("the op table has 2^16 slots")
    }

    /// The slot of `address`, adding one if the address was never seen.
    fn slot(&mut self, address: u16) -> u32 {
        if let Some(&slot) = self.slot_of.get(&address) {
            return slot;
        }
        self.add_slot(address)
    }

    fn add_slot(&mut self, address: u16) -> u32 {
        let index = self.slots.len() as u32;
        self.slots.push(Slot {
            address,
            instr: Instr::decode(self.word(address)),
            target: 0,
        });
        self.slot_of.insert(address, index);
        index
    }

    /// The op of one slot for swap parity `parity`, from its instruction's table row.
    fn op(slot: &Slot, parity: usize) -> SlotOp {
        let instr = slot.instr;
        let kind = instr.operation();
        let (a_addr, b_addr) = instr.input_addresses();
        let dst = instr.dst();
        let row = |address: u16| storage_row(address, parity) as u8;
        // Results the hardware writes nowhere go to the latch row (forwarding only).
        let d_row = if instr.writes() == Writes::Dst && core_writable(dst) {
            row(dst)
        } else {
            LATCH_ROW
        };
        // What `imm` holds besides the word's immediate: see the variants of [`Operation`].
        let imm = match kind.flow() {
            Flow::Branch | Flow::Jump | Flow::Call => slot.target,
            Flow::Hang => slot.address as u32,
            // LEA reads the fetch pointer, already one past it (the RTL, tests/rtl.rs).
            _ if kind == Operation::Lea => slot.address.wrapping_add(1) as u32,
            _ => instr.word().imm(),
        };
        // Opcode bits 2..0 name a conditional jump's relation.
        let mask = match kind.flow() {
            Flow::Branch => relation_mask(instr.word().opcode_field() & 7),
            _ => 0,
        };
        SlotOp {
            kind,
            mask,
            flags: 0,
            a_row: row(a_addr),
            b_row: row(b_addr),
            d_row,
            a_home: row(a_addr),
            b_home: row(b_addr),
            a_addr,
            b_addr,
            dst,
            run: 1,
            imm,
        }
    }

    /// The default entry table (every routine at its ROM address) with no user code.
    pub fn default_imem() -> Vec<Word> {
        EntryPoint::ALL
            .iter()
            .map(|e| Word(e.default_address() as u64))
            .collect()
    }

    /// Where a CALL reached by the taken jump at slot `jump` returns to, and where a RET at
    /// `jump` followed by a CALL goes: the address plus 2 (every such address has a slot).
    pub(crate) fn jump_return_slot(&self, jump: u16) -> u16 {
        let address = self.slots[jump as usize].address.wrapping_add(2);
        self.slot_of[&address] as u16
    }

    /// The instruction memory as loaded: the entry-point table, then user code.
    pub fn imem(&self) -> &[Word] {
        &self.imem
    }

    /// The instruction at any address, as the fetch unit reads and the decoder decodes it.
    pub fn instruction(&self, address: u16) -> Instr {
        Instr::decode(self.word(address))
    }

    /// The instruction word at any address, as the fetch unit reads it.
    pub fn word(&self, address: u16) -> Word {
        if address & USER_CODE_BIT == 0 {
            self.rom
                .get(address as usize)
                .copied()
                .unwrap_or(UNDEFINED_ROM_WORD)
        } else {
            let index = (address & !USER_CODE_BIT) as usize;
            if index < IMEM_WORDS {
                self.imem.get(index).copied().unwrap_or(UNLOADED_WORD)
            } else {
                UNDEFINED_ROM_WORD
            }
        }
    }

    /// Start address of a routine, as the entry-point table says.
    pub fn entry(&self, entry: EntryPoint) -> u16 {
        self.entry[entry as usize]
    }

    /// Whether `address` is an instruction memory word the host never loaded.
    pub fn is_unloaded(&self, address: u16) -> bool {
        address & USER_CODE_BIT != 0
            && (address & !USER_CODE_BIT) as usize >= self.loaded_imem_words
    }

    /// Slots: every address that can execute has one, numbered from 0.
    #[cfg(test)]
    pub(crate) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn entry_slot(&self, entry: EntryPoint) -> u32 {
        self.entry_slot[entry as usize]
    }

    /// The slot of an address known to have one (an entry, target or sequential address).
    pub(crate) fn slot_of(&self, address: u16) -> Option<u32> {
        // ROM addresses (and the one after the ROM) got slots 0.. in order, first.
        if (address as usize) <= self.rom.len() {
            return Some(address as u32);
        }
        self.slot_of.get(&address).copied()
    }

    /// What the straight run starting at each slot reads and writes, for swap parity
    /// `parity` ([`track`](super::track)).
    pub(crate) fn effects(&self, parity: usize) -> &[Packed] {
        &self.effects[parity]
    }

    #[inline(always)]
    pub(crate) fn ops(&self, parity: usize) -> &[SlotOp; OP_TABLE_LEN] {
        &self.ops[parity]
    }

    #[inline(always)]
    pub(crate) fn slot_info(&self, slot: u32) -> &Slot {
        &self.slots[slot as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::rom::{rom, RomVariant};
    use crate::emu::isa::Opcode;

    #[test]
    fn relation_masks_follow_compare() {
        // > : (g,!e) and (g,e)
        assert_eq!(relation_mask(0), 0b1100);
        assert_eq!(relation_mask(1), 0b0011);
        assert_eq!(relation_mask(2), 0b1010);
        assert_eq!(relation_mask(3), 0b0101);
        assert_eq!(relation_mask(4), 0b1110);
        assert_eq!(relation_mask(5), 0b1011);
        assert_eq!(relation_mask(6), 0);
    }

    #[test]
    fn slots_are_sequential_and_targets_resolved() {
        let imem = Program::default_imem();
        let program = Program::new(rom(RomVariant::Faithful), &imem);
        // ROM 0..279, then 280 (undefined), then IMEM 0x8000..=0x8081.
        assert_eq!(program.slot_of(0), Some(0));
        assert_eq!(program.slot_of(279), Some(279));
        assert_eq!(program.slot_of(280), Some(280));
        assert_eq!(program.slot_of(0x8000), Some(281));
        assert_eq!(program.slot_of(0x8081), Some(281 + 129));
        // MAIN's CALL BIU (37 -> 157) and its return point 38.
        let call = program.ops(0)[37];
        assert_eq!(call.kind, Operation::Call);
        assert_eq!(program.slot_info(call.imm).address, 157);
        assert_eq!(program.ops(0)[280].kind, Operation::Hang);
        assert_eq!(program.ops(0)[280].imm, 280);
        // IMEM words past the loaded table are unloaded: they hang.
        assert!(program.is_unloaded(0x800C));
        assert_eq!(program.ops(0)[281 + 12].kind, Operation::Hang);
        assert_eq!(program.word(0x9000), UNDEFINED_ROM_WORD);
        assert_eq!(
            program.instruction(0x1234),
            Instr::Undefined(UNDEFINED_ROM_WORD)
        );
    }

    #[test]
    fn swap_rows_depend_on_parity_and_dropped_writes_go_to_the_sink() {
        let words = [
            Word::type1(Opcode::Sub, 0x64, 0x2E, 0x2C), // E1 <- V1 - V0
            Word::type1(Opcode::Add, 0x80, 0x47, 0x47), // write to bank 0: dropped
            Word::type1(Opcode::Jgx, 0x8000, 0x47, 0x48),
        ];
        let mut imem = Program::default_imem();
        imem.extend_from_slice(&words);
        let program = Program::new(rom(RomVariant::Faithful), &imem);
        let at = program.slot_of(0x800C).unwrap() as usize;
        let (even, odd) = (program.ops(0)[at], program.ops(1)[at]);
        assert_eq!((even.a_row, even.b_row, even.d_row), (0x2E, 0x2C, 0x64));
        assert_eq!(
            (odd.a_row, odd.b_row, odd.d_row),
            (0x2E + 96, 0x2C + 96, 0x64)
        );
        assert_eq!(program.ops(0)[at + 1].d_row, LATCH_ROW);
        let branch = program.ops(0)[at + 2];
        assert_eq!((branch.kind, branch.d_row), (Operation::BranchX, LATCH_ROW));
        assert_eq!(program.slot_info(branch.imm).address, 0x8000);
    }
}
