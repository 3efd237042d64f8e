//! One core: its register banks (with the swap-memory copies, stored as the hardware
//! decodes addresses), latches, watchdog budget and output memory, and how it runs a
//! routine, through the interpreter it shares with lock-step groups (`interp`, with
//! `N = 1`), and how it reports faults and steps for tracing.

use super::alu::Vec3;
use super::control;
use super::interp::{self, Interrupted};
use super::output::OutputMemory;
use super::program::{storage_row, Program};
use super::state::{triangle_rows, CoreState, LaneState, Latches, Rows};
use super::track::{Elements, Footprint, NativeWrites, RETURN_REGISTER, TMEM_LATCH};
use super::triangle::{Triangle, TRIANGLE_VECTORS};
use crate::emu::isa::registers::EntryPoint;
use crate::emu::isa::{Instr, Word};

/// How a routine stopped without returning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The hardware would stall forever here: an opcode it never finishes.
    Hang { address: u16, word: Word },
    /// The instruction budget ran out (a shader that never returns).
    Watchdog { address: u16, budget: u64 },
    /// A foreign pixel stage (R500, PICA200) cannot go on at instruction `pc`.
    Stage {
        isa: &'static str,
        pc: u32,
        reason: &'static str,
    },
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Fault::Hang { address, word } => write!(
                f,
                "the core hangs at {address:#06x}: {:016X} is not an instruction the hardware finishes (opcode {:#06x})",
                word.0,
                word.opcode_field()
            ),
            Fault::Watchdog { address, budget } => write!(
                f,
                "no RETURN within {budget} instructions; stopped at {address:#06x} (raise --max-steps if it is meant to run this long)"
            ),
            Fault::Stage { isa, pc, reason } => {
                write!(f, "the {isa} program stops at instruction {pc}: {reason}")
            }
        }
    }
}

impl std::error::Error for Fault {}

/// What one executed instruction did, for tracing.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub address: u16,
    pub instruction: Instr,
    /// ALU inputs A and B, after forwarding; zero where the instruction uses neither a
    /// register nor the immediate (see [`Instr::a`], [`Instr::b`]).
    pub a: Vec3,
    pub b: Vec3,
    pub result: Vec3,
    /// Whether the result reached the register file.
    pub written: bool,
    /// For conditional jumps: whether the jump was taken.
    pub taken: Option<bool>,
    pub next: u16,
    /// For CALL: the address its RET will return to (not always the CALL's address + 1:
    /// it depends on how the CALL was reached, docs/rtl-differences.md).
    pub returns_to: Option<u16>,
}

/// Sees every instruction when tracing; the default observer compiles away.
pub trait Observer {
    const ENABLED: bool;
    /// Whether the interpreter records what the core reads and writes into
    /// [`Observer::footprint`] (a core with a footprint runs its routines so).
    #[doc(hidden)]
    const TRACKS: bool = false;
    fn routine_start(&mut self, _entry: EntryPoint, _address: u16) {}
    fn step(&mut self, _step: &Step) {}
    fn routine_end(&mut self, _entry: EntryPoint, _return_value: bool) {}
    #[doc(hidden)]
    fn footprint(&self) -> &Footprint {
        unreachable!("only an observer that tracks has a footprint")
    }
}

/// Runs a core's routines recording their [`Footprint`] (and sees nothing else: culling
/// and every other shortcut stay on).
struct Tracking<'f>(&'f Footprint);

impl Observer for Tracking<'_> {
    const ENABLED: bool = false;
    const TRACKS: bool = true;

    #[inline(always)]
    fn footprint(&self) -> &Footprint {
        self.0
    }
}

/// The observer of normal renders: nothing.
pub struct NoObserver;

impl Observer for NoObserver {
    const ENABLED: bool = false;
}

/// One THEIA core: one lane of the interpreter's state.
#[derive(Clone)]
pub struct Core<'a> {
    pub(super) lanes: LaneState<'a, 1>,
    /// Of the routines booked without being interpreted, those booked at an upper bound of
    /// their cost because their exit was not known (the acceleration structure):
    /// `instructions` is then not exact.
    pub unknown_cost_routines: u64,
    /// What the core has read and written since [`Core::track`], when it is tracked.
    pub(super) footprint: Option<Box<Footprint>>,
}

impl<'a> Core<'a> {
    pub fn new(program: &'a Program, texture: &'a [u32], output_words: usize) -> Core<'a> {
        Core {
            lanes: LaneState {
                program,
                texture,
                budget: u64::MAX,
                // The return register starts at address 0 (slot 0).
                latches: [Latches::boot(program.slot_of(0).unwrap_or(0) as u16)],
                outputs: [OutputMemory::new(output_words)],
                rows: Rows::ZERO,
            },
            unknown_cost_routines: 0,
            footprint: None,
        }
    }

    /// From now on, records what the core reads of its state before writing it, and what
    /// it writes ([`Footprint`]), until [`Core::untrack`].
    pub fn track(&mut self) {
        self.footprint = Some(Box::default());
    }

    /// What the core read and wrote since [`Core::track`]; it runs untracked again.
    pub fn untrack(&mut self) -> Option<Box<Footprint>> {
        self.footprint.take()
    }

    /// The value of state element `element` ([`track`](super::track)); untracked.
    pub fn element(&self, element: usize) -> u32 {
        let latches = self.latches();
        match element {
            RETURN_REGISTER => latches.return_slot as u32,
            _ if element >= TMEM_LATCH => latches.tmem_latch[element - TMEM_LATCH],
            _ => self.lanes.rows[element / 3].lane(0)[element % 3],
        }
    }

    /// Sets state element `element` (a return register's value must be a slot of the
    /// program); untracked.
    pub fn set_element(&mut self, element: usize, value: u32) {
        let latches = self.latches_mut();
        match element {
            RETURN_REGISTER => latches.return_slot = value as u16,
            _ if element >= TMEM_LATCH => latches.tmem_latch[element - TMEM_LATCH] = value,
            _ => self.lanes.rows[element / 3].0[element % 3][0] = value,
        }
    }

    /// Whether the elements `live` and the latches a routine's start compares or copies
    /// (swap parity, forwarding latches) hold the same values in both cores: then the same
    /// stretch of execution, run from either, reads the same values (its footprint's live
    /// elements being `live`).
    pub fn agrees_on(&self, other: &Core<'_>, live: &Elements) -> bool {
        let (a, b) = (self.latches(), other.latches());
        a.parity == b.parity
            && a.last_dst == b.last_dst
            && a.last_row == b.last_row
            && live.iter().all(|e| self.element(e) == other.element(e))
    }

    /// The output memory OMWRITE writes.
    pub fn output(&self) -> &OutputMemory {
        &self.lanes.outputs[0]
    }

    /// Puts `output` in place of the core's output memory, which it returns.
    pub fn replace_output(&mut self, output: OutputMemory) -> OutputMemory {
        std::mem::replace(&mut self.lanes.outputs[0], output)
    }

    /// The output memory, the core done with.
    pub fn into_output(self) -> OutputMemory {
        let [output] = self.lanes.outputs;
        output
    }

    /// Sets the per-pixel instruction budget and refills it.
    pub fn set_budget(&mut self, budget: u64) {
        self.lanes.budget = budget;
        self.latches_mut().budget_left = budget;
    }

    /// Instructions executed since the core started (culled routines included).
    pub fn instructions(&self) -> u64 {
        self.latches().instructions
    }

    /// Routines booked without being interpreted (culling).
    pub fn culled_routines(&self) -> u64 {
        self.latches().culled_routines
    }

    /// The texture memory TMREAD reads.
    pub fn texture(&self) -> &'a [u32] {
        self.lanes.texture
    }

    /// What OMWRITE does with its operands: output word `addresses[i]` := `values[i]`.
    pub fn omwrite(&mut self, addresses: Vec3, values: Vec3) {
        control::omwrite(&mut self.lanes.outputs[0], addresses, values);
    }

    /// The address CALL's return register holds.
    pub fn return_address(&self) -> u16 {
        self.lanes
            .program
            .slot_info(self.latches().return_slot as u32)
            .address
    }

    /// The previous instruction's ALU result (what address 0 reads at a routine's start).
    pub fn last_result(&self) -> Vec3 {
        self.row(self.latches().last_row as usize)
    }

    /// Whether two cores are in the same architectural state: every register as the
    /// execution unit and the host see it (so swap parity itself does not matter), the
    /// forwarding latches and the return register. Output memory and counters excluded.
    pub fn same_state(&self, other: &Core<'_>) -> bool {
        let exe = |core: &Core<'_>, row: u16| core.row(storage_row(row, core.parity()));
        let io = |core: &Core<'_>, row: usize| core.row(core.io_swap_base() + row);
        (0..128).all(|row| exe(self, row) == exe(other, row))
            && (0..32).all(|row| io(self, row) == io(other, row))
            && self.latches().last_dst == other.latches().last_dst
            && self.last_result() == other.last_result()
            && self.return_address() == other.return_address()
            && self.latches().tmem_latch == other.latches().tmem_latch
    }

    /// Runs one routine from the entry-point table until its RETURN; returns bit 0 of it.
    #[inline]
    pub fn run<O: Observer>(&mut self, entry: EntryPoint, observer: &mut O) -> Result<bool, Fault> {
        if !O::ENABLED && self.footprint.is_some() {
            return self.run_tracked(entry);
        }
        if O::ENABLED {
            observer.routine_start(entry, self.lanes.program.entry(entry));
        }
        let parity = self.parity();
        let value = match interp::run::<1, O>(&mut self.lanes, parity, 1, entry, observer) {
            Ok(returned) => returned != 0,
            Err(Interrupted::Fault(fault)) => return Err(fault),
            Err(Interrupted::Abandoned) => unreachable!("a lone core reports its faults"),
        };
        if O::ENABLED {
            observer.routine_end(entry, value);
        }
        Ok(value)
    }
}

impl Core<'_> {
    /// [`Core::run`] recording the routine's footprint. Out of line: it is another
    /// instance of the interpreter, and the untracked one stays as small as it was.
    #[inline(never)]
    fn run_tracked(&mut self, entry: EntryPoint) -> Result<bool, Fault> {
        let parity = self.parity();
        let footprint = self.footprint.as_deref().expect("a tracked core");
        let mut tracking = Tracking(footprint);
        match interp::run::<1, _>(&mut self.lanes, parity, 1, entry, &mut tracking) {
            Ok(returned) => Ok(returned != 0),
            Err(Interrupted::Fault(fault)) => Err(fault),
            Err(Interrupted::Abandoned) => unreachable!("a lone core reports its faults"),
        }
    }
}

/// Native code (the host, culling, the structure, pixel stages) reaches a core's state
/// here; a tracked core records every row it reads or writes.
impl CoreState for Core<'_> {
    #[inline(always)]
    fn row(&self, row: usize) -> Vec3 {
        if let Some(footprint) = &self.footprint {
            footprint.read_row(row);
        }
        self.lanes.rows[row].lane(0)
    }

    #[inline(always)]
    fn set_row(&mut self, row: usize, value: Vec3) {
        if let Some(footprint) = &self.footprint {
            footprint.write_row(row);
        }
        self.lanes.rows[row].set_lane(0, value);
    }

    /// The host's triangle loads, recorded once per swap parity ([`NativeWrites`]): the
    /// rows as the provided method writes them, with the stores one plain loop.
    #[inline(always)]
    fn write_triangle_rows(&mut self, values: &Triangle) {
        let parity = self.parity();
        let (io, alias) = triangle_rows(parity);
        if let Some(footprint) = &self.footprint {
            let key = NativeWrites::TriangleRows {
                parity: parity as u8,
            };
            if !footprint.noted(key) {
                for row in (io..io + TRIANGLE_VECTORS).chain(alias..alias + TRIANGLE_VECTORS) {
                    footprint.write_row(row);
                }
                footprint.note(key);
            }
        }
        for (row, &value) in values.iter().enumerate() {
            self.lanes.rows[io + row].set_lane(0, value);
            self.lanes.rows[alias + row].set_lane(0, value);
        }
    }

    /// Tracked the first time per footprint, untracked after (debug builds check that
    /// nothing new is written then).
    #[inline(always)]
    fn native_writes(&mut self, key: NativeWrites, write: impl FnOnce(&mut Self)) {
        match self.footprint.as_deref() {
            None => write(self),
            Some(footprint) if footprint.noted(key) && !cfg!(debug_assertions) => {
                let footprint = self.footprint.take();
                write(self);
                self.footprint = footprint;
            }
            Some(footprint) => {
                let before = (footprint.live(), footprint.written(), footprint.noted(key));
                write(self);
                let footprint = self.footprint.as_deref().expect("still tracked");
                if before.2 {
                    assert_eq!(
                        (footprint.live(), footprint.written()),
                        (before.0, before.1),
                        "{key:?} wrote other elements than the first time"
                    );
                }
                footprint.note(key);
            }
        }
    }

    #[inline(always)]
    fn row_component(&self, row: usize, component: usize) -> u32 {
        if let Some(footprint) = &self.footprint {
            footprint.native(row, 1 << component, 0);
        }
        self.lanes.rows[row].0[component][0]
    }

    #[inline(always)]
    fn set_row_component(&mut self, row: usize, component: usize, value: u32) {
        if let Some(footprint) = &self.footprint {
            footprint.native(row, 0, 1 << component);
        }
        self.lanes.rows[row].0[component][0] = value;
    }

    fn set_return_register(&mut self, slot: u16) {
        if let Some(footprint) = &self.footprint {
            footprint.write(RETURN_REGISTER);
        }
        self.latches_mut().return_slot = slot;
    }

    #[inline(always)]
    fn latches(&self) -> &Latches {
        &self.lanes.latches[0]
    }

    #[inline(always)]
    fn latches_mut(&mut self) -> &mut Latches {
        &mut self.lanes.latches[0]
    }

    fn program(&self) -> &Program {
        self.lanes.program
    }

    fn budget(&self) -> u64 {
        self.lanes.budget
    }
}

#[cfg(test)]
pub(crate) mod tests {
    //! The interpreter against a reference model written the plain way (decode every word
    //! at every step, compare every operand address with the previous DST, count every
    //! instruction), on random programs that exercise forwarding through every kind of
    //! control flow, swap parity, aliases, CALL/RET, hangs and the watchdog.
    use super::*;
    use crate::emu::core::alu;
    use crate::emu::core::program::SHADOW_SWAP_ROW;
    use crate::emu::core::rom::{rom, RomVariant};
    use crate::emu::core::triangle::Triangle;
    use crate::emu::isa::{Opcode, OPCODES};
    use proptest::prelude::*;

    const ZERO: Vec3 = [0; 3];

    fn lanes2(a: Vec3, b: Vec3, f: impl Fn(u32, u32) -> u32) -> Vec3 {
        [f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2])]
    }

    /// The reference core: physical rows as in `Core` (160), decoded by address.
    #[derive(Clone, Debug, PartialEq)]
    struct Reference {
        regs: Vec<Vec3>,
        parity: usize,
        last_dst: u16,
        last_result: Vec3,
        return_address: u16,
        budget_left: u64,
        instructions: u64,
        output: Vec<(u32, u32)>,
        tmem_latch: Vec3,
        /// The row the previous instruction wrote and its value before: the register file
        /// is written one instruction late, so a read of that row through another address
        /// sees the old value.
        stale: Option<(usize, Vec3)>,
    }

    /// How the instruction about to run was reached, for CALL's return address: the fetch
    /// unit captures `pointer + 1` on the rising edge of "a CALL is shown".
    #[derive(Clone, Copy)]
    enum Came {
        InSequence,
        /// A taken branch or JMP at this address (the pointer still holds address + 1).
        Jump(u16),
        /// A CALL (no edge: the register keeps its value).
        Call,
    }

    impl Reference {
        fn row(&self, address: u16) -> usize {
            storage_row(address, self.parity)
        }

        fn read(&self, address: u16) -> Vec3 {
            match self.stale {
                _ if address == self.last_dst => self.last_result,
                Some((row, old)) if row == self.row(address) => old,
                _ => self.regs[self.row(address)],
            }
        }

        fn run(&mut self, program: &Program, texture: &[u32], start: u16) -> Result<bool, Fault> {
            self.last_dst = 0;
            self.stale = None;
            let mut pc = start;
            let mut came = Came::InSequence;
            loop {
                if self.budget_left == 0 {
                    return Err(Fault::Watchdog {
                        address: pc,
                        budget: 0,
                    });
                }
                let word = program.word(pc);
                let d = Fields::of(word);
                let Some(op) = word.opcode() else {
                    return Err(Fault::Hang { address: pc, word });
                };
                self.budget_left -= 1;
                self.instructions += 1;
                let mut next = pc.wrapping_add(1);
                let mut taken = false;
                let imm_a = [d.imm, 0, 0];
                let (a, b) = (self.read(d.a_addr), self.read(d.b_addr));
                use Opcode::*;
                let result: Vec3 = match op {
                    Nop | DebugPrint => ZERO,
                    Add => lanes2(a, b, alu::add),
                    Sub => lanes2(a, b, alu::sub),
                    Div => lanes2(a, b, alu::div),
                    Mul => lanes2(a, b, alu::mul),
                    Imul => lanes2(a, b, alu::imul),
                    Mag => [alu::vector_magnitude(a); 3],
                    Copy => a,
                    Zero => ZERO,
                    Inc => a.map(alu::inc),
                    Dec => a.map(alu::dec),
                    Incx => [alu::inc(a[0]), a[1], a[2]],
                    Incy => [a[0], alu::inc(a[1]), a[2]],
                    Incz => [a[0], a[1], alu::inc(a[2])],
                    Cross => alu::cross(a, b),
                    Dot => [alu::dot(a, b); 3],
                    Mulp => [a[0], a[1], alu::mul(a[0], a[1])],
                    Mod => lanes2(a, b, alu::modulo),
                    Frac => a.map(alu::frac),
                    Intp => a.map(alu::intp),
                    Neg => a.map(alu::neg),
                    Unscale => a.map(alu::unscale),
                    Rescale => a.map(alu::rescale),
                    Xchangex => [b[0], a[1], a[2]],
                    Xchangey => [a[0], b[1], a[2]],
                    Xchangez => [a[0], a[1], b[2]],
                    Omwrite => {
                        for lane in 0..3 {
                            self.output.push((a[lane], b[lane]));
                        }
                        ZERO
                    }
                    Tmread => {
                        // Component k is latched unless it shares the bank of k - 1 while
                        // the next address (0 after z) is in another bank; x always is.
                        let banks = [a[0] & 3, a[1] & 3, a[2] & 3, 0];
                        for k in 0..3 {
                            let missed =
                                k > 0 && banks[k] == banks[k - 1] && banks[k + 1] != banks[k];
                            if !missed {
                                self.tmem_latch[k] =
                                    texture.get(a[k] as usize).copied().unwrap_or(0);
                            }
                        }
                        self.tmem_latch
                    }
                    Lea => [pc.wrapping_add(1) as u32; 3],
                    Setx => [imm_a[0], b[1], b[2]],
                    Sety => [b[0], imm_a[0], b[2]],
                    Setz => [b[0], b[1], imm_a[0]],
                    Swizzle3d => alu::swizzle(b, d.imm),
                    Jmp => {
                        next = d.dst;
                        ZERO
                    }
                    Call => {
                        match came {
                            Came::InSequence => self.return_address = pc.wrapping_add(1),
                            Came::Jump(at) => self.return_address = at.wrapping_add(2),
                            Came::Call => {}
                        }
                        next = d.dst;
                        ZERO
                    }
                    Ret => {
                        // A CALL right after the RET shows as the RET completes: its edge
                        // loads the return register with its own address + 1.
                        if program.word(pc.wrapping_add(1)).opcode() == Some(Call) {
                            self.return_address = pc.wrapping_add(2);
                        }
                        next = self.return_address;
                        [d.imm, b[1], b[2]]
                    }
                    Return => [d.imm; 3],
                    _ => {
                        let code = op as u16;
                        let lane = (code as usize >> 3) - 1;
                        if alu::compare(a[lane], b[lane], code & 7) {
                            next = d.dst;
                            taken = true;
                        }
                        ZERO
                    }
                };
                let writes =
                    !matches!(op, Nop | DebugPrint | Jmp | Call | Ret) && !op.is_conditional_jump();
                self.stale = None;
                if writes && d.dst & 0x60 != 0 {
                    let row = self.row(d.dst);
                    self.stale = Some((row, self.regs[row]));
                    self.regs[row] = result;
                }
                self.last_dst = d.dst;
                self.last_result = result;
                if op == Return {
                    return Ok(d.imm & 1 == 1);
                }
                came = match op {
                    Call => Came::Call,
                    Jmp => Came::Jump(pc),
                    _ if taken => Came::Jump(pc),
                    // The divider and square root let the pointer run one ahead: a CALL
                    // right after them saves its own address + 2.
                    Div | Mag => Came::Jump(pc.wrapping_add(1)),
                    _ => Came::InSequence,
                };
                pc = next;
            }
        }
    }

    /// A word's fields as the decoder routes them, written out plainly (spec
    /// isa_and_formats §1.2): type I A = SRC1, B = SRC2; type II A = (IMM, 0, 0), B = DST.
    struct Fields {
        dst: u16,
        a_addr: u16,
        b_addr: u16,
        imm: u32,
    }

    impl Fields {
        fn of(word: Word) -> Fields {
            Fields {
                dst: word.dst(),
                a_addr: word.src1(),
                b_addr: if word.is_type2() {
                    word.dst()
                } else {
                    word.src2()
                },
                imm: word.imm(),
            }
        }
    }

    /// Operand addresses: a few registers, their aliases (high bits, other bank copies),
    /// bank 0, the swap bank, address 0.
    fn address() -> impl Strategy<Value = u16> {
        prop_oneof![
            prop::sample::select(vec![
                0u16, 1, 0x0C, 0x2C, 0x2D, 0x47, 0x48, 0x49, 0x76, 0x80, 0x8047, 0x4047, 0xAC,
                0x6C, 0x7F
            ]),
            any::<u16>(),
        ]
    }

    /// A random instruction of a program at 0x800C..0x800C+len: jumps and CALLs land in or
    /// just past it (or on the ROM's RETURN at 36), immediates are small or anything.
    fn instruction(len: u16) -> impl Strategy<Value = Word> {
        let target = prop_oneof![
            4 => 0x800Cu16..0x800C + len + 2,
            1 => Just(36u16),
            1 => any::<u16>(),
        ];
        let opcode = prop::sample::select(OPCODES.iter().map(|o| o.opcode).collect::<Vec<_>>());
        (
            opcode,
            address(),
            address(),
            address(),
            target,
            any::<u32>(),
            0u32..4,
        )
            .prop_map(|(op, dst, a, b, target, imm, small)| {
                let jumps = op.is_conditional_jump() || matches!(op, Opcode::Jmp | Opcode::Call);
                let dst = if jumps { target } else { dst };
                if op.is_type2() {
                    let imm = if op == Opcode::Return || small < 3 {
                        small
                    } else {
                        imm
                    };
                    Word::type2(op, dst, imm)
                } else {
                    Word::type1(op, dst, a, b)
                }
            })
    }

    pub(crate) fn program_strategy() -> impl Strategy<Value = Vec<Word>> {
        (1u16..24).prop_flat_map(|len| {
            prop::collection::vec(instruction(len), len as usize).prop_map(|mut code| {
                // End with a RETURN most of the time so that runs finish.
                code.push(Word::type2(Opcode::Return, 0, 1));
                code
            })
        })
    }

    proptest! {
        #[test]
        fn loading_many_triangles_at_once_equals_loading_each(
            count in 0usize..6,
            seed in any::<u32>(),
            parity in 0usize..2,
        ) {
            let program = Program::new(rom(RomVariant::Faithful), &Program::default_imem());
            let triangles: Vec<Triangle> = (0..count as u32)
                .map(|t| std::array::from_fn(|v| [seed ^ t, v as u32, t * 7 + v as u32]))
                .collect();
            let mut each = Core::new(&program, &[], 0);
            for row in 0..160 {
                each.set_row(row, [row as u32, seed, 1]);
            }
            each.lanes.latches[0].parity = parity as u8;
            let mut at_once = Core::new(&program, &[], 0);
            at_once.lanes.rows = each.lanes.rows.clone();
            at_once.lanes.latches[0].parity = parity as u8;
            for triangle in &triangles {
                each.load_triangle(triangle);
            }
            at_once.load_triangles(&triangles);
            prop_assert!(each.same_state(&at_once));
            prop_assert_eq!(each.parity(), at_once.parity());
        }
    }

    #[derive(Default)]
    struct Recorder {
        steps: Vec<Step>,
    }

    impl Observer for Recorder {
        const ENABLED: bool = true;
        fn step(&mut self, step: &Step) {
            self.steps.push(*step);
        }
    }

    fn registers(core: &Core<'_>) -> Vec<Vec3> {
        (0..128).map(|a| core.register(a)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn the_interpreter_matches_the_reference(
            code in program_strategy(),
            seeds in prop::collection::vec([any::<u32>(); 3], 8),
            budget in prop_oneof![Just(64u64), 0u64..40],
            triangle in [[any::<u32>(); 3]; 7],
        ) {
            let mut imem = Program::default_imem();
            imem[EntryPoint::PixelShader as usize] = Word(0x800C);
            imem.extend_from_slice(&code);
            let program = Program::new(rom(RomVariant::Faithful), &imem);
            let texture: Vec<u32> = (0..64).map(|i| i * 7).collect();
            let mut core = Core::new(&program, &texture, 4096);
            let mut traced = Core::new(&program, &texture, 4096);
            for c in [&mut core, &mut traced] {
                for (i, &seed) in seeds.iter().enumerate() {
                    c.host_write(i as u16, seed);
                    c.write_register(0x47 + i as u16, seed);
                    c.write_register(0x2C + i as u16, seed);
                }
                c.set_budget(budget);
            }
            let mut reference = Reference {
                regs: (0..160).map(|row| core.row(row)).collect(),
                parity: 0,
                last_dst: 0,
                last_result: ZERO,
                return_address: 0,
                budget_left: budget,
                instructions: 0,
                output: Vec::new(),
                tmem_latch: ZERO,
                stale: None,
            };
            // Two routines with a swap flip between them: the second one sees the first
            // one's result latch, return register and a different swap copy.
            for _round in 0..2 {
                let traced_before = traced.instructions();
                let expected = reference.run(&program, &texture, 0x800C);
                let got = core.run(EntryPoint::PixelShader, &mut NoObserver);
                let mut recorder = Recorder::default();
                let traced_result = traced.run(EntryPoint::PixelShader, &mut recorder);
                let normalise = |r: Result<bool, Fault>| match r {
                    Err(Fault::Watchdog { address, .. }) => Err(Fault::Watchdog { address, budget: 0 }),
                    other => other,
                };
                prop_assert_eq!(normalise(got), expected);
                prop_assert_eq!(normalise(traced_result), expected);
                prop_assert_eq!(core.instructions(), reference.instructions);
                prop_assert_eq!(recorder.steps.len() as u64, traced.instructions() - traced_before);
                prop_assert_eq!(core.budget_left(), reference.budget_left);
                let reference_view: Vec<Vec3> = (0..128).map(|a| reference.regs[reference.row(a)]).collect();
                prop_assert_eq!(registers(&core), reference_view);
                prop_assert!(core.same_state(&traced));
                prop_assert_eq!(core.last_result(), reference.last_result);
                prop_assert_eq!(core.return_address(), reference.return_address);
                prop_assert_eq!(core.latches().tmem_latch, reference.tmem_latch);
                let written: Vec<(usize, u32)> = (0..4096).filter_map(|i| core.output().read(i).map(|w| (i, w))).collect();
                let mut expected_output = std::collections::BTreeMap::new();
                for &(address, value) in &reference.output {
                    if (address as usize) < 4096 {
                        expected_output.insert(address as usize, value);
                    }
                }
                prop_assert_eq!(written, expected_output.into_iter().collect::<Vec<_>>());
                if expected.is_err() {
                    break;
                }
                // The host streams a triangle between routines: swap flip.
                core.load_triangle(&triangle);
                traced.load_triangle(&triangle);
                reference.host_triangle(&triangle);
                core.refill_budget();
                traced.refill_budget();
                reference.budget_left = budget;
            }
        }
    }

    /// Runs the test program's pixel shader twice with a triangle load between, as in
    /// `the_interpreter_matches_the_reference`; what came out (results, counts, output).
    fn two_routines(core: &mut Core<'_>, triangle: &Triangle) -> Vec<(Result<bool, Fault>, u64)> {
        let mut results = Vec::new();
        for _round in 0..2 {
            let result = core.run(EntryPoint::PixelShader, &mut NoObserver);
            results.push((result, core.instructions()));
            if result.is_err() {
                break;
            }
            core.load_triangle(triangle);
            core.refill_budget();
        }
        results
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// The footprint's claim: start values of elements that are not live change
        /// nothing the routines do, and an untouched element ends as it started.
        #[test]
        fn a_footprint_holds_everything_the_routines_depend_on(
            code in program_strategy(),
            start in prop::collection::vec(any::<u32>(), crate::emu::core::track::ELEMENTS),
            other in prop::collection::vec(any::<u32>(), crate::emu::core::track::ELEMENTS),
            budget in prop_oneof![Just(64u64), 0u64..40],
            triangle in [[any::<u32>(); 3]; 7],
            parity in 0u8..2,
        ) {
            let mut imem = Program::default_imem();
            imem[EntryPoint::PixelShader as usize] = Word(0x800C);
            imem.extend_from_slice(&code);
            let program = Program::new(rom(RomVariant::Faithful), &imem);
            let slots = program.slot_count() as u32;
            let texture: Vec<u32> = (0..64).map(|i| i * 7).collect();
            let mut tracked = Core::new(&program, &texture, 4096);
            for (element, &value) in start.iter().enumerate() {
                let value = if element == RETURN_REGISTER { value % slots } else { value };
                tracked.set_element(element, value);
            }
            tracked.lanes.latches[0].parity = parity;
            tracked.set_budget(budget);
            let mut changed = tracked.clone();
            tracked.track();
            let ran = two_routines(&mut tracked, &triangle);
            let footprint = tracked.untrack().expect("tracked");
            let live = footprint.live();
            for (element, &value) in other.iter().enumerate() {
                if !live.contains(element) {
                    let value = if element == RETURN_REGISTER { value % slots } else { value };
                    changed.set_element(element, value);
                }
            }
            let start_changed = changed.clone();
            prop_assert_eq!(&two_routines(&mut changed, &triangle), &ran);
            prop_assert_eq!(changed.output().words.clone(), tracked.output().words.clone());
            prop_assert_eq!(changed.latches().parity, tracked.latches().parity);
            // A fault ends the frame: what the core holds after one does not matter (and a
            // run the watchdog cut short has claimed its writes whole).
            if ran.iter().any(|(result, _)| result.is_err()) {
                return Ok(());
            }
            let untouched = footprint.untouched();
            for element in 0..crate::emu::core::track::ELEMENTS {
                let expected = if untouched.contains(element) {
                    start_changed.element(element)
                } else {
                    tracked.element(element)
                };
                prop_assert_eq!(changed.element(element), expected, "element {}", element);
            }
        }
    }

    impl Reference {
        fn host_triangle(&mut self, triangle: &Triangle) {
            let io = if self.parity == 0 {
                SHADOW_SWAP_ROW
            } else {
                32
            } + 12;
            for (i, v) in triangle.iter().enumerate() {
                self.regs[io + i] = *v;
                self.regs[12 + i] = *v;
            }
            self.parity ^= 1;
        }
    }
}
