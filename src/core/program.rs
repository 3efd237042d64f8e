//! Code memory decoded once, into a compact table the interpreter indexes directly.
//!
//! The hardware's instruction addresses span 64K (ROM below 0x8000, IMEM above), but only
//! the ROM words, the 129 IMEM words and a handful of undefined addresses that some jump,
//! CALL or entry names can ever execute. Every such address gets one *slot*; jumps, CALL
//! return points and entry points are resolved to slots at decode time, so the
//! interpreter's program counter is a slot index and its working set is a few kilobytes
//! instead of a 64K-entry table.
//!
//! Each slot is decoded twice into an [`Op`], once per swap-memory parity: the register
//! rows an instruction reads and writes are then fixed numbers (bank-1 addresses already
//! pointing at the copy the execution unit sees), and writes the hardware drops (bank 0,
//! or opcodes that never write) go to a sink row nothing reads.

use std::collections::HashMap;

use crate::isa::registers::{EntryPoint, ENTRY_TABLE_LEN, IMEM_WORDS, USER_CODE_BIT};
use crate::isa::{Instruction, Opcode, UNDEFINED_ROM_WORD};

use super::alu;

/// An instruction ready to execute: operand addresses already routed as the decoder does
/// (type I: A = SRC1, B = SRC2; type II: A = (IMM, 0, 0), B = DST).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// `None`: an opcode the hardware never finishes (the core hangs).
    pub op: Option<Opcode>,
    pub dst: u16,
    pub a_addr: u16,
    pub b_addr: u16,
    pub imm: u32,
}

impl Decoded {
    pub fn new(word: Instruction) -> Decoded {
        let type2 = word.is_type2();
        Decoded {
            op: word.opcode(),
            dst: word.dst(),
            a_addr: word.src1(),
            b_addr: if type2 { word.dst() } else { word.src2() },
            imm: word.imm(),
        }
    }
}

/// Rows 0..127 are the address space as the execution unit sees it with swap parity 0;
/// rows 128..159 hold the second swap-memory copy.
pub(crate) const SHADOW_SWAP_ROW: usize = 128;
/// Where writes the hardware drops go: a row no decoded read ever names.
pub(crate) const SINK_ROW: u8 = 160;
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

/// What an [`Op`] does. Lane-specific opcodes get one kind per lane: a lane chosen at run
/// time would force the interpreter's operand triples out of registers into memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    /// NOP, DEBUG_PRINT.
    Nop,
    Add,
    Sub,
    Div,
    Mul,
    Imul,
    Mag,
    Copy,
    Zero,
    Inc,
    Dec,
    IncX,
    IncY,
    IncZ,
    Cross,
    Dot,
    Mulp,
    Mod,
    Frac,
    Intp,
    Neg,
    Unscale,
    Rescale,
    /// XCHANGEX/Y/Z: that lane from B, the others from A.
    ExchangeX,
    ExchangeY,
    ExchangeZ,
    Omwrite,
    Tmread,
    /// LEA: `imm` holds the instruction's address.
    Lea,
    SetX,
    SetY,
    SetZ,
    Swizzle,
    /// JMP: `imm` holds the target slot.
    Jmp,
    /// CALL: `imm` holds the target slot.
    Call,
    Ret,
    Return,
    /// Conditional jumps on one lane; `mask` is the truth table over (greater, equal);
    /// `imm` holds the target slot.
    BranchX,
    BranchY,
    BranchZ,
    /// An opcode the hardware never finishes; `imm` holds the address.
    Hang,
}

/// One decoded instruction for one swap parity: 16 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Op {
    pub kind: Kind,
    pub mask: u8,
    _pad: u8,
    pub a_row: u8,
    pub b_row: u8,
    /// The row the result goes to; [`SINK_ROW`] when the hardware writes nothing.
    pub d_row: u8,
    /// Full 16-bit operand addresses, compared with the previous DST for forwarding.
    pub a_addr: u16,
    pub b_addr: u16,
    /// The DST field (the next instruction's forwarding address).
    pub dst: u16,
    pub imm: u32,
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

/// Whether an opcode's result reaches DST (hardware write rule, spec machine §1.4).
fn writes_dst(op: Opcode) -> bool {
    !matches!(
        op,
        Opcode::Nop | Opcode::DebugPrint | Opcode::Jmp | Opcode::Call | Opcode::Ret
    ) && !op.is_conditional_jump()
}

/// A slot: one executable address.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub address: u16,
    pub word: Instruction,
    pub decoded: Decoded,
    /// The slot a jump or CALL goes to (unused otherwise).
    pub target: u32,
}

/// What one machine runs: the ROM plus the instruction memory (entry table and user code),
/// decoded for every address that can execute.
#[derive(Clone)]
pub struct Program {
    rom: Vec<Instruction>,
    imem: Vec<Instruction>,
    entry: [u16; ENTRY_TABLE_LEN],
    entry_slot: [u32; ENTRY_TABLE_LEN],
    loaded_imem_words: usize,
    slots: Vec<Slot>,
    /// `ops[parity][slot]`.
    ops: [Vec<Op>; 2],
    slot_of: HashMap<u16, u32>,
}

/// Instruction memory words that were never loaded read as undefined (X in the RTL).
const UNLOADED_WORD: Instruction = UNDEFINED_ROM_WORD;

/// What an undefined address decodes to.
const HANG_DECODED: Decoded = Decoded {
    op: None,
    dst: 0,
    a_addr: 0,
    b_addr: 0,
    imm: 0,
};

impl Program {
    /// Builds code memory from the ROM words (address 0..) and the IMEM words (0x8000..):
    /// IMEM words 0..11 are the entry-point table, user code starts at 0x800C.
    pub fn new(rom: &[Instruction], imem: &[Instruction]) -> Program {
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
            ops: [Vec::new(), Vec::new()],
            slot_of: HashMap::new(),
        };
        // Sequential runs first, each followed by the address after it, so that "next
        // instruction" is always "next slot".
        for address in 0..=rom.len() as u16 {
            program.add_slot(address);
        }
        for address in USER_CODE_BIT..=USER_CODE_BIT + IMEM_WORDS as u16 {
            program.add_slot(address);
        }
        for (i, &address) in entry.iter().enumerate() {
            program.entry_slot[i] = program.slot(address);
        }
        // Jump and CALL targets, and CALL return points (RET's only destinations besides
        // address 0, the return register's value before any CALL).
        let mut i = 0;
        while i < program.slots.len() {
            let Slot {
                address, decoded, ..
            } = program.slots[i];
            if let Some(op) = decoded.op {
                if matches!(op, Opcode::Jmp | Opcode::Call) || op.is_conditional_jump() {
                    let target = program.slot(decoded.dst);
                    program.slots[i].target = target;
                }
                if op == Opcode::Call {
                    program.slot(address.wrapping_add(1));
                }
            }
            i += 1;
        }
        program.ops = [0, 1].map(|parity| {
            program
                .slots
                .iter()
                .map(|slot| Program::op(slot, parity))
                .collect()
        });
        program
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
        let word = self.word(address);
        self.slots.push(Slot {
            address,
            word,
            decoded: Decoded::new(word),
            target: 0,
        });
        self.slot_of.insert(address, index);
        index
    }

    fn op(slot: &Slot, parity: usize) -> Op {
        let d = slot.decoded;
        let row = |address: u16| storage_row(address, parity) as u8;
        let mut op = Op {
            kind: Kind::Hang,
            mask: 0,
            _pad: 0,
            a_row: row(d.a_addr),
            b_row: row(d.b_addr),
            d_row: SINK_ROW,
            a_addr: d.a_addr,
            b_addr: d.b_addr,
            dst: d.dst,
            imm: d.imm,
        };
        let Some(opcode) = d.op else {
            op.imm = slot.address as u32;
            return op;
        };
        if writes_dst(opcode) && (d.dst & 0x60) != 0 {
            op.d_row = row(d.dst);
        }
        let code = opcode as u8;
        op.kind = match opcode {
            Opcode::Nop | Opcode::DebugPrint => Kind::Nop,
            Opcode::Add => Kind::Add,
            Opcode::Sub => Kind::Sub,
            Opcode::Div => Kind::Div,
            Opcode::Mul => Kind::Mul,
            Opcode::Imul => Kind::Imul,
            Opcode::Mag => Kind::Mag,
            Opcode::Copy => Kind::Copy,
            Opcode::Zero => Kind::Zero,
            Opcode::Inc => Kind::Inc,
            Opcode::Dec => Kind::Dec,
            Opcode::Incx => Kind::IncX,
            Opcode::Incy => Kind::IncY,
            Opcode::Incz => Kind::IncZ,
            Opcode::Cross => Kind::Cross,
            Opcode::Dot => Kind::Dot,
            Opcode::Mulp => Kind::Mulp,
            Opcode::Mod => Kind::Mod,
            Opcode::Frac => Kind::Frac,
            Opcode::Intp => Kind::Intp,
            Opcode::Neg => Kind::Neg,
            Opcode::Unscale => Kind::Unscale,
            Opcode::Rescale => Kind::Rescale,
            Opcode::Xchangex => Kind::ExchangeX,
            Opcode::Xchangey => Kind::ExchangeY,
            Opcode::Xchangez => Kind::ExchangeZ,
            Opcode::Omwrite => Kind::Omwrite,
            Opcode::Tmread => Kind::Tmread,
            Opcode::Lea => {
                op.imm = slot.address as u32;
                Kind::Lea
            }
            Opcode::Setx => Kind::SetX,
            Opcode::Sety => Kind::SetY,
            Opcode::Setz => Kind::SetZ,
            Opcode::Swizzle3d => Kind::Swizzle,
            Opcode::Jmp => {
                op.imm = slot.target;
                Kind::Jmp
            }
            Opcode::Call => {
                op.imm = slot.target;
                Kind::Call
            }
            Opcode::Ret => Kind::Ret,
            Opcode::Return => Kind::Return,
            Opcode::Jgx
            | Opcode::Jlx
            | Opcode::Jeqx
            | Opcode::Jnex
            | Opcode::Jgex
            | Opcode::Jlex
            | Opcode::Jgy
            | Opcode::Jly
            | Opcode::Jeqy
            | Opcode::Jney
            | Opcode::Jgey
            | Opcode::Jley
            | Opcode::Jgz
            | Opcode::Jlz
            | Opcode::Jeqz
            | Opcode::Jnez
            | Opcode::Jgez
            | Opcode::Jlez => {
                // Opcode bits 4..3 pick the component (01 x, 10 y, 11 z), bits 2..0 the relation.
                op.mask = relation_mask(code as u16 & 7);
                op.imm = slot.target;
                [Kind::BranchX, Kind::BranchY, Kind::BranchZ][((code >> 3) - 1) as usize]
            }
        };
        op
    }

    /// The default entry table (every routine at its ROM address) with no user code.
    pub fn default_imem() -> Vec<Instruction> {
        EntryPoint::ALL
            .iter()
            .map(|e| Instruction(e.default_address() as u64))
            .collect()
    }

    /// The decoded instruction at any address (undefined addresses decode to a hang).
    pub fn decoded(&self, address: u16) -> &Decoded {
        self.slot_of
            .get(&address)
            .map_or(&HANG_DECODED, |&slot| &self.slots[slot as usize].decoded)
    }

    /// The instruction word at any address, as the fetch unit reads it.
    pub fn word(&self, address: u16) -> Instruction {
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

    /// Addresses that can ever execute (ROM, IMEM and every static jump or entry target).
    pub fn executable_addresses(&self) -> impl Iterator<Item = u16> + '_ {
        self.slots.iter().map(|s| s.address)
    }

    pub(crate) fn entry_slot(&self, entry: EntryPoint) -> u32 {
        self.entry_slot[entry as usize]
    }

    /// The slot of an address known to have one (an entry, target or sequential address).
    pub(crate) fn slot_of(&self, address: u16) -> Option<u32> {
        self.slot_of.get(&address).copied()
    }

    #[inline(always)]
    pub(crate) fn ops(&self, parity: usize) -> &[Op] {
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
    use crate::core::rom::{rom, RomVariant};

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
        assert_eq!(call.kind, Kind::Call);
        assert_eq!(program.slot_info(call.imm).address, 157);
        assert_eq!(program.ops(0)[280].kind, Kind::Hang);
        assert_eq!(program.ops(0)[280].imm, 280);
        // IMEM words past the loaded table are unloaded: they hang.
        assert!(program.is_unloaded(0x800C));
        assert_eq!(program.ops(0)[281 + 12].kind, Kind::Hang);
        assert_eq!(program.word(0x9000), UNDEFINED_ROM_WORD);
        assert_eq!(program.decoded(0x1234).op, None);
    }

    #[test]
    fn swap_rows_depend_on_parity_and_dropped_writes_go_to_the_sink() {
        let words = [
            Instruction::type1(Opcode::Sub, 0x64, 0x2E, 0x2C), // E1 <- V1 - V0
            Instruction::type1(Opcode::Add, 0x80, 0x47, 0x47), // write to bank 0: dropped
            Instruction::type1(Opcode::Jgx, 0x8000, 0x47, 0x48),
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
        assert_eq!(program.ops(0)[at + 1].d_row, SINK_ROW);
        let branch = program.ops(0)[at + 2];
        assert_eq!((branch.kind, branch.d_row), (Kind::BranchX, SINK_ROW));
        assert_eq!(program.slot_info(branch.imm).address, 0x8000);
    }
}
