//! What a stretch of a core's pixels reads of the state it starts from: the ground for
//! running one core's pixels on several host threads at once
//! ([`machine::speculate`](crate::emu::machine::speculate)).
//!
//! A core's state is split into *elements*: each component of each storage row an
//! instruction or the host can reach (the register array with both swap copies, the latch
//! row, the rows dynamic forwarding and stale reads are copied into), CALL's return
//! register, and each component of TMREAD's latch. A [`Footprint`] follows a core through
//! a stretch of execution and records, per element, whether its first access was a read
//! (the element is *live*: the stretch depends on its value at the start) or a write (its
//! start value cannot matter), or whether it was never touched (it passes through).
//!
//! Every access is recorded, wherever it happens:
//! - **Interpreted instructions**, a straight run at a time. Each slot of a decoded
//!   program knows its run's [`RunEffect`] (the elements the run reads before writing
//!   them, and those it writes), computed once per program from the opcode table and the
//!   decoder's rows; the interpreter applies it where the run starts (a routine's entry,
//!   every jump target). Runs end at every change of control flow, so within a run the
//!   order of reads and writes is fixed. Component by component: SETX reads only y and z
//!   of B, a branch only its component, and a component an instruction copies from its
//!   own destination row (SETX's y and z when B is the destination) is neither read nor
//!   written, as its value does not change.
//! - **What depends on run-time values**, where it happens: an operand whose forwarding
//!   source depends on the path (resolved with the op that really came before), the
//!   components TMREAD keeps in its latch ([`super::tmem::kept`]), CALL's write of the
//!   return register (none when a CALL reaches a CALL) and RET's read of it, the result
//!   latch a routine's start may move.
//! - **Native code** (the host's triangle loads, culling, the acceleration structure,
//!   foreign pixel stages, the frame's hit classification) reaches a lone core only
//!   through its [`CoreState`](super::CoreState) rows and the routine-end state, which a
//!   [`Core`](super::Core) with a footprint records (a whole row each time: a component
//!   it does not use counts as read, which can only add comparisons).
//!
//! What is left is not state a pixel can read: the instruction counters, the watchdog's
//! budget (refilled before every pixel), how the next CALL is reached (reset at every
//! routine's start), the output memory (written, never read). The swap parity and the
//! forwarding latches are compared whole by the user of a footprint.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::op::{
    operand_row, Operation, SlotOp, DYNAMIC_FORWARDING, FORWARD_A_ROW, FORWARD_B_ROW, LATCH_ROW,
    OP_TABLE_LEN, SAVES_OLD, STALE_ROW,
};

/// Storage rows an instruction can name (register array, both swap copies, the latch,
/// forwarding and stale rows): 0 ..= `STALE_ROW`.
pub const TRACKED_ROWS: usize = STALE_ROW as usize + 1;
/// The element of CALL's return register.
pub const RETURN_REGISTER: usize = 3 * TRACKED_ROWS;
/// The first of TMREAD's three latch elements (x, y, z).
pub const TMEM_LATCH: usize = 3 * TRACKED_ROWS + 3;
/// Elements in all: three per tracked row, the return register (with two unused), the
/// latch.
pub const ELEMENTS: usize = TMEM_LATCH + 3;
const WORDS: usize = ELEMENTS.div_ceil(64);

/// Component `component` of storage row `row`.
#[inline(always)]
pub const fn element(row: usize, component: usize) -> usize {
    3 * row + component
}

/// A set of state elements.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Elements([u64; WORDS]);

impl Elements {
    pub fn insert(&mut self, element: usize) {
        self.0[element / 64] |= 1 << (element % 64);
    }

    pub fn contains(&self, element: usize) -> bool {
        self.0[element / 64] >> (element % 64) & 1 == 1
    }

    /// The components of `row` in `components` (bit c for component c).
    fn insert_row(&mut self, row: u8, components: u8) {
        debug_assert!((row as usize) < TRACKED_ROWS, "row {row} is not tracked");
        for component in 0..3 {
            if components >> component & 1 == 1 {
                self.insert(element(row as usize, component));
            }
        }
    }

    /// Every element in the set, in order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..ELEMENTS).filter(|&e| self.contains(e))
    }

    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0 == [0; WORDS]
    }
}

/// What a straight run of instructions does to the tracked state, applied at once where
/// the run starts: the elements it reads before writing them, and those it writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunEffect {
    pub reads: Elements,
    pub writes: Elements,
}

impl RunEffect {
    /// One access after the run's others: a read counts only if the run has not written
    /// the element.
    fn read(&mut self, row: u8, components: u8) {
        let mut read = Elements::default();
        read.insert_row(row, components);
        for word in 0..WORDS {
            self.reads.0[word] |= read.0[word] & !self.writes.0[word];
        }
    }

    fn write(&mut self, row: u8, components: u8) {
        self.writes.insert_row(row, components);
    }

    /// The run of `run` ops starting at `ops[0]`. The first op's dynamic operands (if it
    /// has any) are left out: their sources depend on the op that jumped there, which
    /// [`Footprint::enter`] knows.
    pub(crate) fn of_run(ops: &[SlotOp]) -> RunEffect {
        let mut effect = RunEffect::default();
        let run = ops[0].run as usize;
        for (k, op) in ops[..run.min(ops.len())].iter().enumerate() {
            if op.flags & DYNAMIC_FORWARDING != 0 && k > 0 {
                effect.forwarding(op, &ops[k - 1]);
            }
            effect.op(op);
        }
        effect
    }

    /// A dynamic op's operand copies, with `prev` the op executed before it: both operands'
    /// sources read, both forwarding rows written (what the interpreter does).
    fn forwarding(&mut self, op: &SlotOp, prev: &SlotOp) {
        let a = operand_row(op.a_addr, op.a_home, prev.dst, prev.d_row);
        let b = operand_row(op.b_addr, op.b_home, prev.dst, prev.d_row);
        self.read(a, 0b111);
        self.read(b, 0b111);
        self.write(FORWARD_A_ROW, 0b111);
        self.write(FORWARD_B_ROW, 0b111);
    }

    /// One op's reads and writes of rows (its dynamic operands already copied in).
    fn op(&mut self, op: &SlotOp) {
        if op.kind == Operation::Hang {
            // The hung instruction is not executed.
            return;
        }
        if op.flags & SAVES_OLD != 0 {
            self.read(op.d_row, 0b111);
            self.write(STALE_ROW, 0b111);
        }
        let sources = sources(op.kind);
        for (component, source) in sources.iter().enumerate() {
            match *source {
                Source::Const => {}
                Source::A(c) if op.a_row == op.d_row && c == component => {}
                Source::B(c) if op.b_row == op.d_row && c == component => {}
                Source::A(c) => self.read(op.a_row, 1 << c),
                Source::B(c) => self.read(op.b_row, 1 << c),
                Source::Of(a, b) => {
                    self.read(op.a_row, a);
                    self.read(op.b_row, b);
                }
            }
        }
        let (side_a, side_b) = side_reads(op.kind);
        self.read(op.a_row, side_a);
        self.read(op.b_row, side_b);
        let mut written = 0;
        for (component, source) in sources.iter().enumerate() {
            let unchanged = match *source {
                Source::A(c) => op.a_row == op.d_row && c == component,
                Source::B(c) => op.b_row == op.d_row && c == component,
                _ => false,
            };
            if !unchanged {
                written |= 1 << component;
            }
        }
        self.write(op.d_row, written);
        if op.kind == Operation::Return {
            // The RETURN result also stays in the latch row (`control::finish`).
            self.write(LATCH_ROW, 0b111);
        }
    }
}

/// A [`RunEffect`] as the interpreter applies it: only the words of the element sets that
/// it touches (a run touches a few rows, so two to four words of eight).
#[derive(Clone, Copy, Debug, Default)]
pub struct Packed {
    len: u8,
    index: [u8; WORDS],
    reads: [u64; WORDS],
    writes: [u64; WORDS],
}

impl From<&RunEffect> for Packed {
    fn from(effect: &RunEffect) -> Packed {
        let mut packed = Packed::default();
        for word in 0..WORDS {
            let (reads, writes) = (effect.reads.0[word], effect.writes.0[word]);
            if reads | writes != 0 {
                let at = packed.len as usize;
                packed.index[at] = word as u8;
                packed.reads[at] = reads;
                packed.writes[at] = writes;
                packed.len += 1;
            }
        }
        packed
    }
}

/// Where one component of an op's result comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// Nothing read (a constant, the immediate, zero).
    Const,
    /// Component `c` of operand A (or B), unchanged.
    A(usize),
    B(usize),
    /// Computed from these components of A and of B (bit c for component c).
    Of(u8, u8),
}

/// What each result component of `kind` comes from, as its arm in `interp::effect` computes it.
fn sources(kind: Operation) -> [Source; 3] {
    use Operation::*;
    use Source::*;
    let each = |a: bool, b: bool| -> [Source; 3] {
        std::array::from_fn(|c| Of(if a { 1 << c } else { 0 }, if b { 1 << c } else { 0 }))
    };
    let lane = kind.component();
    match kind {
        Nop | Zero | Lea | Jmp | Call | Return | Hang | Omwrite | BranchX | BranchY | BranchZ => {
            [Const; 3]
        }
        Add | Sub | Mul | Imul | Mod | Div => each(true, true),
        Dot | Cross => [Of(0b111, 0b111); 3],
        Mag | Tmread => [Of(0b111, 0); 3],
        Copy => [A(0), A(1), A(2)],
        Inc | Dec | Frac | Intp | Neg | Unscale | Rescale => each(true, false),
        IncX | IncY | IncZ => std::array::from_fn(|c| if c == lane { Of(1 << c, 0) } else { A(c) }),
        ExchangeX | ExchangeY | ExchangeZ => {
            std::array::from_fn(|c| if c == lane { B(c) } else { A(c) })
        }
        SetX | SetY | SetZ => std::array::from_fn(|c| if c == lane { Const } else { B(c) }),
        Mulp => [A(0), A(1), Of(0b011, 0)],
        Swizzle => [Of(0, 0b111); 3],
        Ret => [Const, B(1), B(2)],
    }
}

/// Operand components an op reads besides its result's sources (bit c for component c):
/// OMWRITE's addresses and values, a branch's compared components.
fn side_reads(kind: Operation) -> (u8, u8) {
    match kind {
        Operation::Omwrite => (0b111, 0b111),
        Operation::BranchX | Operation::BranchY | Operation::BranchZ => {
            let c = 1 << kind.component();
            (c, c)
        }
        _ => (0, 0),
    }
}

/// 64 bits of a footprint: an atomic only so that a core stays `Sync` (shared read-only by
/// threads, as the booted cores the ray pass copies); relaxed loads and stores are plain
/// moves.
#[derive(Debug, Default)]
struct BitWord(AtomicU64);

impl BitWord {
    #[inline(always)]
    fn get(&self) -> u64 {
        self.0.load(Relaxed)
    }

    #[inline(always)]
    fn set(&self, value: u64) {
        self.0.store(value, Relaxed);
    }
}

impl Clone for BitWord {
    fn clone(&self) -> BitWord {
        BitWord(AtomicU64::new(self.get()))
    }
}

/// What a stretch of one core's execution read before writing (*live* elements) and
/// wrote; see the module documentation. Interior mutability: native code reads a core's
/// rows through `&self`.
#[derive(Clone, Debug, Default)]
pub struct Footprint {
    live: [BitWord; WORDS],
    written: [BitWord; WORDS],
    /// Per swap parity, one bit per program slot below [`MEMO_SLOTS`]: whether the run
    /// starting there was applied. Applying a run's effect again changes nothing (the sets
    /// only grow, and what it reads first was either written since or is live already),
    /// so each run is applied once: after a chunk's first pixels tracking costs a bit test
    /// per run. (Slots beyond, in programs larger than the ROM and IMEM, apply every time.)
    entered: [[BitWord; MEMO_SLOTS / 64]; 2],
    /// One bit per row whose three elements are all written: native code writes and reads
    /// the same rows pixel after pixel (the host the triangle rows, culling its
    /// registers), and an access to them then changes nothing: it pays one bit test.
    rows_written: [BitWord; TRACKED_ROWS.div_ceil(64)],
    /// The [`NativeWrites`] recorded: each writes the same elements every time.
    noted: BitWord,
}

/// Native code that writes the same elements every time and reads none, recorded once per
/// footprint: the host's triangle loads (per swap parity), the registers a run of culled
/// MAINs leaves (per BIU, and whether the run ends with R2 written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NativeWrites {
    TriangleRows { parity: u8 },
    SkippedMain { fixed: bool, sum: bool },
}

impl NativeWrites {
    fn bit(self) -> u64 {
        match self {
            NativeWrites::TriangleRows { parity } => 1 << (parity & 1),
            NativeWrites::SkippedMain { fixed, sum } => 4 << (2 * fixed as u64 + sum as u64),
        }
    }
}

/// Program slots whose runs a footprint applies once: the ROM's 310-odd words, IMEM's 129
/// and the few extra return points fit.
const MEMO_SLOTS: usize = 1024;

impl Footprint {
    /// Elements read before any write.
    pub fn live(&self) -> Elements {
        Elements(self.live.each_ref().map(BitWord::get))
    }

    /// Elements written.
    pub fn written(&self) -> Elements {
        Elements(self.written.each_ref().map(BitWord::get))
    }

    /// Elements never touched: their value at the end is their value at the start.
    pub fn untouched(&self) -> Elements {
        let (live, written) = (self.live(), self.written());
        Elements(std::array::from_fn(|w| !(live.0[w] | written.0[w])))
    }

    #[inline(always)]
    pub(crate) fn apply(&self, effect: &Packed) {
        for i in 0..effect.len as usize {
            self.access(effect.index[i] as usize, effect.reads[i], effect.writes[i]);
        }
    }

    /// Reads of `reads` (those not written yet become live), then writes of `writes`, in
    /// word `word`.
    #[inline(always)]
    fn access(&self, word: usize, reads: u64, writes: u64) {
        let written = self.written[word].get();
        self.live[word].set(self.live[word].get() | (reads & !written));
        self.written[word].set(written | writes);
    }

    #[inline]
    pub(crate) fn read(&self, element: usize) {
        let (word, bit) = (element / 64, 1u64 << (element % 64));
        if self.written[word].get() & bit == 0 {
            self.live[word].set(self.live[word].get() | bit);
        }
    }

    #[inline]
    pub(crate) fn write(&self, element: usize) {
        let (word, bit) = (element / 64, 1u64 << (element % 64));
        self.written[word].set(self.written[word].get() | bit);
    }

    /// Whether `key` was recorded ([`Footprint::note`]).
    #[inline(always)]
    pub(crate) fn noted(&self, key: NativeWrites) -> bool {
        self.noted.get() & key.bit() != 0
    }

    /// `key`'s writes are recorded: later ones change nothing.
    pub(crate) fn note(&self, key: NativeWrites) {
        self.noted.set(self.noted.get() | key.bit());
    }

    /// Components `reads` of `row` read, then components `writes` written (bit c for
    /// component c; native code). An access to elements already live or written changes
    /// nothing (live stays live, and a write makes no element untouched), and native code
    /// reads and writes the same rows pixel after pixel: it then pays one test.
    #[inline(always)]
    pub(crate) fn native(&self, row: usize, reads: u8, writes: u8) {
        if self.rows_written[row / 64].get() >> (row % 64) & 1 == 1 {
            return;
        }
        let (word, shift) = (3 * row / 64, 3 * row % 64);
        let all = u64::from(reads | writes);
        let known = |word: usize| self.live[word].get() | self.written[word].get();
        let settled = (all << shift) & !known(word) == 0
            && (shift <= 61 || (all >> (64 - shift)) & !known(word + 1) == 0);
        if !settled {
            self.native_unsettled(row, reads, writes);
        }
    }

    #[inline(never)]
    fn native_unsettled(&self, row: usize, reads: u8, writes: u8) {
        for component in 0..3 {
            if reads >> component & 1 == 1 {
                self.read(element(row, component));
            }
        }
        for component in 0..3 {
            if writes >> component & 1 == 1 {
                self.write(element(row, component));
            }
        }
        let written = self.written();
        if (0..3).all(|c| written.contains(element(row, c))) {
            let rows = &self.rows_written[row / 64];
            rows.set(rows.get() | 1 << (row % 64));
        }
    }

    /// A whole row read (native code).
    #[inline(always)]
    pub(crate) fn read_row(&self, row: usize) {
        self.native(row, 0b111, 0);
    }

    /// A whole row written (native code).
    #[inline(always)]
    pub(crate) fn write_row(&self, row: usize) {
        self.native(row, 0, 0b111);
    }

    /// The run starting at `ops[slot]` begins, entered after `prev`: a dynamic first op's
    /// operand copies, then the run's precomputed effect (`effects[slot]`); `ops` and
    /// `effects` are a program's for swap parity `parity`.
    #[inline(always)]
    pub(crate) fn enter(
        &self,
        (ops, effects): (&[SlotOp; OP_TABLE_LEN], &[Packed]),
        parity: usize,
        slot: u16,
        prev: &SlotOp,
    ) {
        let op = &ops[slot as usize];
        if op.flags & DYNAMIC_FORWARDING != 0 {
            let mut effect = RunEffect::default();
            effect.forwarding(op, prev);
            self.apply(&Packed::from(&effect));
        }
        let slot = slot as usize;
        match self.entered[parity & 1].get(slot / 64) {
            Some(entered) if entered.get() >> (slot % 64) & 1 == 1 => {}
            Some(entered) => {
                entered.set(entered.get() | 1 << (slot % 64));
                self.apply(&effects[slot]);
            }
            None => self.apply(&effects[slot]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::program::Program;
    use crate::emu::core::rom::{rom, RomVariant};
    use crate::emu::isa::registers::{address, EntryPoint};

    fn rows(elements: &Elements) -> Vec<(usize, usize)> {
        elements.iter().map(|e| (e / 3, e % 3)).collect()
    }

    #[test]
    fn setx_on_its_own_destination_reads_and_writes_only_x() {
        // RGU 53: SETX CREG_LAST_t 500.0 (B is CREG_LAST_t itself).
        let program = Program::new(rom(RomVariant::Faithful), &Program::default_imem());
        let slot = program.slot_of(53).unwrap();
        let mut effect = RunEffect::default();
        effect.op(&program.ops(0)[slot as usize]);
        let last_t = address::CREG_LAST_T as usize;
        assert_eq!(rows(&effect.writes), vec![(last_t, 0)]);
        assert!(effect.reads.is_empty());
    }

    #[test]
    fn a_run_reads_only_what_it_has_not_written() {
        // RGU: R1 = POS * SCALE; R1 += MIN; DIR = R1 - CAM; ... R1 is read only after it
        // is written, POS, SCALE, MIN and CAMERA are read first.
        let program = Program::new(rom(RomVariant::Faithful), &Program::default_imem());
        let slot = program.entry_slot(EntryPoint::Rgu) as usize;
        let effect = RunEffect::of_run(&program.ops(0)[slot..]);
        let read: Vec<usize> = rows(&effect.reads).iter().map(|&(r, _)| r).collect();
        // CREG_PROJECTION_WINDOW_SCALE is 83, CREG_PIXEL_2D_FINAL_POSITION 7.
        for register in [
            address::CREG_PIXEL_2D_POSITION,
            83,
            address::CREG_PROJECTION_WINDOW_MIN,
            address::CREG_CAMERA_POSITION,
            7,
        ] {
            assert!(read.contains(&(register as usize)), "{register} is read");
        }
        let r1 = address::R1 as usize;
        assert!(!read.contains(&r1));
        assert!(effect.writes.contains(element(r1, 0)));
        assert!(effect
            .writes
            .contains(element(address::CREG_RAY_DIRECTION as usize, 2)));
    }

    #[test]
    fn native_accesses_mark_the_elements_of_their_row() {
        for row in 0..TRACKED_ROWS {
            let footprint = Footprint::default();
            footprint.write_row(row);
            let written: Vec<usize> = footprint.written().iter().collect();
            assert_eq!(
                written,
                vec![element(row, 0), element(row, 1), element(row, 2)]
            );
            // Component 1 read, 2 written: only y is live, and x stays untouched.
            let footprint = Footprint::default();
            footprint.native(row, 0b010, 0b100);
            footprint.native(row, 0b011, 0);
            let live: Vec<usize> = footprint.live().iter().collect();
            assert_eq!(live, vec![element(row, 0), element(row, 1)]);
            assert_eq!(
                footprint.written().iter().collect::<Vec<_>>(),
                vec![element(row, 2)]
            );
            footprint.write_row(row);
            assert_eq!(
                footprint.live().iter().collect::<Vec<_>>(),
                live,
                "a write after a read"
            );
        }
    }

    #[test]
    fn a_footprint_keeps_the_first_access() {
        let footprint = Footprint::default();
        footprint.write(5);
        footprint.read(5);
        footprint.read(7);
        footprint.write(7);
        assert_eq!(footprint.live().iter().collect::<Vec<_>>(), vec![7]);
        assert_eq!(footprint.written().iter().collect::<Vec<_>>(), vec![5, 7]);
        let untouched = footprint.untouched();
        assert!(!untouched.contains(5) && !untouched.contains(7) && untouched.contains(6));
        assert!(untouched.contains(ELEMENTS - 1));
    }
}
