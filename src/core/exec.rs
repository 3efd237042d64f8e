//! One core's execution unit: the register banks with the hardware's address decoding, the
//! swap-memory copies, operand forwarding, CALL/RET and the ALU dispatch.

use super::alu::{self, Vec3};
use super::program::{storage_row, Kind, Program, REGISTER_ARRAY_ROWS, SHADOW_SWAP_ROW, SINK_ROW};
use crate::isa::registers::{EntryPoint, IMEM_WORDS};
use crate::isa::Instruction;
use crate::scene::Triangle;

const ZERO: Vec3 = [0; 3];

/// Swap-memory rows the host writes a triangle into (CREG_V0..CREG_TRI_DIFFUSE).
const TRIANGLE_ROW: usize = 44;

/// How a routine stopped without returning.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The hardware would stall forever here: an opcode it never finishes.
    Hang { address: u16, word: Instruction },
    /// The instruction budget ran out (a shader that never returns).
    Watchdog { address: u16, budget: u64 },
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
        }
    }
}

/// What one executed instruction did, for tracing.
#[derive(Clone, Copy, Debug)]
pub struct Step {
    pub address: u16,
    pub word: Instruction,
    /// ALU inputs A and B, after forwarding.
    pub a: Vec3,
    pub b: Vec3,
    pub result: Vec3,
    /// Whether the result reached the register file.
    pub written: bool,
    /// For conditional jumps: whether the jump was taken.
    pub taken: Option<bool>,
    pub next: u16,
}

/// Sees every instruction when tracing; the default observer compiles away.
pub trait Observer {
    const ENABLED: bool;
    fn routine_start(&mut self, _entry: EntryPoint, _address: u16) {}
    fn step(&mut self, _step: &Step) {}
    fn routine_end(&mut self, _entry: EntryPoint, _return_value: bool) {}
}

/// The observer of normal renders: nothing.
pub struct NoObserver;

impl Observer for NoObserver {
    const ENABLED: bool = false;
}

/// A core's private output memory (OMWRITE target), with which words were ever written.
///
/// Storage grows with the highest address written, up to the capacity: a frame touches
/// only 3 words per pixel, so the 250001-word hardware memory is never zeroed as a whole.
#[derive(Clone, Debug)]
pub struct OutputMemory {
    /// Words up to the highest address written so far (unwritten ones read 0 here).
    pub words: Vec<u32>,
    written: Vec<bool>,
    capacity: usize,
}

impl OutputMemory {
    /// The hardware's OMEM holds 250001 words (`RAM_SINGLE_READ_PORT #(32,32,250000)`).
    pub const HARDWARE_WORDS: usize = 250_001;

    pub fn new(words: usize) -> OutputMemory {
        OutputMemory {
            words: Vec::new(),
            written: Vec::new(),
            capacity: words,
        }
    }

    /// Words the memory holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Writes beyond the memory are lost, as in the RAM.
    #[inline]
    fn write(&mut self, address: u32, value: u32) {
        let address = address as usize;
        if address >= self.words.len() {
            if address >= self.capacity {
                return;
            }
            let len = (address + 1).max(2 * self.words.len()).min(self.capacity);
            self.words.resize(len, 0);
            self.written.resize(len, false);
        }
        self.words[address] = value;
        self.written[address] = true;
    }

    /// The word at `address`, if an OMWRITE ever wrote it.
    pub fn read(&self, address: usize) -> Option<u32> {
        self.written
            .get(address)
            .copied()
            .unwrap_or(false)
            .then(|| self.words[address])
    }

    /// Copies every written word of `other` over this memory (a later run of the same
    /// core overwrites an earlier one).
    pub fn overlay(&mut self, other: &OutputMemory) {
        for (address, (&word, &written)) in other.words.iter().zip(&other.written).enumerate() {
            if written {
                self.write(address as u32, word);
            }
        }
    }
}

/// One THEIA core.
pub struct Core<'a> {
    program: &'a Program,
    texture: &'a [u32],
    /// Storage rows (see [`storage_row`]); rows past the 160 real ones are the write sink
    /// and padding, so that any `u8` row indexes without a bounds check.
    regs: [Vec3; REGISTER_ARRAY_ROWS],
    /// 0 or 1: which copy of the swap memory the execution unit sees.
    parity: usize,
    /// The previous instruction's DST field and ALU result (the forwarding path).
    last_dst: u16,
    last_result: Vec3,
    /// CALL's single return register (no stack), as a program slot.
    return_slot: u32,
    /// Instructions left before the watchdog stops the current pixel.
    budget_left: u64,
    budget: u64,
    /// Instructions executed since the core started (culled routines included).
    pub instructions: u64,
    /// Routines booked without being interpreted (culling).
    pub culled_routines: u64,
    pub output: OutputMemory,
}

impl<'a> Core<'a> {
    pub fn new(program: &'a Program, texture: &'a [u32], output_words: usize) -> Core<'a> {
        Core {
            program,
            texture,
            regs: [ZERO; REGISTER_ARRAY_ROWS],
            parity: 0,
            last_dst: 0,
            last_result: ZERO,
            // The return register starts at address 0 (slot 0).
            return_slot: program.slot_of(0).unwrap_or(0),
            budget_left: u64::MAX,
            budget: u64::MAX,
            instructions: 0,
            culled_routines: 0,
            output: OutputMemory::new(output_words),
        }
    }

    /// A register as the execution unit would read it from the file (no forwarding).
    pub fn register(&self, address: u16) -> Vec3 {
        self.regs[storage_row(address, self.parity)]
    }

    /// A host (IO) write: bank-0 row `address & 31` and the IO-side swap copy's row both
    /// receive it (spec isa_and_formats §2.1).
    pub fn host_write(&mut self, address: u16, value: Vec3) {
        let row = (address & 31) as usize;
        self.regs[row] = value;
        self.regs[self.io_swap_base() + row] = value;
    }

    #[inline(always)]
    fn io_swap_base(&self) -> usize {
        // The copy the execution unit does not see.
        if self.parity == 0 {
            SHADOW_SWAP_ROW
        } else {
            32
        }
    }

    /// The host streams one triangle into the IO side, then the control unit flips the
    /// swap memory so MAIN sees it.
    #[inline]
    pub fn load_triangle(&mut self, triangle: &Triangle) {
        let io = self.io_swap_base() + (TRIANGLE_ROW - 32);
        self.regs[io..io + triangle.len()].copy_from_slice(triangle);
        // IO writes also land in bank 0 rows 12..18 (address bits 4..0).
        let alias = TRIANGLE_ROW & 31;
        self.regs[alias..alias + triangle.len()].copy_from_slice(triangle);
        self.parity ^= 1;
    }

    /// After the last triangle the host sends one more, never announced (words past the
    /// list: undefined in the RTL, zero here). Only the IO side and bank 0 see it.
    pub fn load_dummy_triangle(&mut self) {
        let io = self.io_swap_base() + (TRIANGLE_ROW - 32);
        let alias = TRIANGLE_ROW & 31;
        for row in 0..7 {
            self.regs[io + row] = ZERO;
            self.regs[alias + row] = ZERO;
        }
    }

    /// Sets the per-pixel instruction budget and refills it.
    pub fn set_budget(&mut self, budget: u64) {
        self.budget = budget;
        self.budget_left = budget;
    }

    pub fn refill_budget(&mut self) {
        self.budget_left = self.budget;
    }

    /// Instructions the watchdog still allows the current pixel.
    pub fn budget_left(&self) -> u64 {
        self.budget_left
    }

    /// Writes a register as the execution unit would (bank 0 writes are dropped).
    pub(crate) fn write_register(&mut self, address: u16, value: Vec3) {
        if address & 0x60 != 0 {
            self.regs[storage_row(address, self.parity)] = value;
        }
    }

    /// Books one routine of `instructions` the core is known to have executed without
    /// interpreting it (the caller guarantees the budget covers them).
    pub(crate) fn charge(&mut self, instructions: u64) {
        debug_assert!(instructions <= self.budget_left);
        self.budget_left -= instructions;
        self.instructions += instructions;
        self.culled_routines += 1;
    }

    /// Sets what a routine that ended with `RETURN imm` (DST field `return_dst`) leaves in
    /// the control path: the forwarding latches, and the return register at
    /// `return_address` (a CALL's return point).
    pub(crate) fn set_routine_end_state(
        &mut self,
        return_dst: u16,
        return_imm: u32,
        return_address: u16,
    ) {
        self.last_dst = return_dst;
        self.last_result = [return_imm; 3];
        self.return_slot = self
            .program
            .slot_of(return_address)
            .expect("a CALL's return point has a slot");
    }

    /// The address CALL's return register holds.
    pub fn return_address(&self) -> u16 {
        self.program.slot_info(self.return_slot).address
    }

    /// The previous instruction's ALU result (what address 0 reads at a routine's start).
    pub fn last_result(&self) -> Vec3 {
        self.last_result
    }

    /// Whether two cores are in the same architectural state: every register as the
    /// execution unit and the host see it (so swap parity itself does not matter), the
    /// forwarding latches and the return register. Output memory and counters excluded.
    pub fn same_state(&self, other: &Core<'_>) -> bool {
        let exe = |core: &Core<'_>, row: u16| core.regs[storage_row(row, core.parity)];
        let io = |core: &Core<'_>, row: usize| core.regs[core.io_swap_base() + row];
        (0..128).all(|row| exe(self, row) == exe(other, row))
            && (0..32).all(|row| io(self, row) == io(other, row))
            && self.last_dst == other.last_dst
            && self.last_result == other.last_result
            && self.return_address() == other.return_address()
    }

    /// Runs one routine from the entry-point table until its RETURN; returns bit 0 of it.
    #[inline]
    pub fn run<O: Observer>(&mut self, entry: EntryPoint, observer: &mut O) -> Result<bool, Fault> {
        if O::ENABLED {
            observer.routine_start(entry, self.program.entry(entry));
        }
        // Triggering a routine resets the last-destination latch (not the result latch).
        self.last_dst = 0;
        let value = self.execute(self.program.entry_slot(entry), observer)?;
        if O::ENABLED {
            observer.routine_end(entry, value);
        }
        Ok(value)
    }

    /// The interpreter loop. Operand rows, jump targets and write rows are resolved at
    /// decode time ([`Op`]); the loop keeps the forwarding latches, the return register
    /// and the budget in locals and stores them back when the routine ends.
    fn execute<O: Observer>(&mut self, start: u32, observer: &mut O) -> Result<bool, Fault> {
        let program = self.program;
        let ops = program.ops(self.parity);
        let texture = self.texture;
        let mut pc = start as usize;
        let budget_at_start = self.budget_left;
        let mut budget_left = budget_at_start;
        let mut ld = self.last_dst;
        let mut lr = self.last_result;
        let mut ret = self.return_slot as usize;
        loop {
            if budget_left == 0 {
                self.last_dst = ld;
                self.last_result = lr;
                self.return_slot = ret as u32;
                self.settle(budget_at_start, budget_left);
                return Err(Fault::Watchdog {
                    address: program.slot_info(pc as u32).address,
                    budget: self.budget,
                });
            }
            budget_left -= 1;
            let op = &ops[pc];
            let this = pc;
            pc += 1;
            let regs = &mut self.regs;
            // Operand reads: the previous instruction's result when the address equals its
            // DST field (all 16 bits), whether or not that result was written.
            macro_rules! read_a {
                () => {
                    if op.a_addr == ld {
                        lr
                    } else {
                        regs[op.a_row as usize]
                    }
                };
            }
            macro_rules! read_b {
                () => {
                    if op.b_addr == ld {
                        lr
                    } else {
                        regs[op.b_row as usize]
                    }
                };
            }
            let imm_a = [op.imm, 0, 0];
            macro_rules! branch {
                ($x:expr, $y:expr, $a:expr, $b:expr) => {{
                    let (x, y) = ($x, $y);
                    let greater = (x as i32) > (y as i32);
                    let equal = alu::magnitude32(x) == alu::magnitude32(y);
                    let jump = (op.mask >> ((greater as u8) << 1 | equal as u8)) & 1 != 0;
                    if jump {
                        pc = op.imm as usize;
                    }
                    (ZERO, $a, $b, Some(jump))
                }};
            }
            // (result, A, B, taken): A, B and taken only feed the observer.
            let (result, a, b, taken): (Vec3, Vec3, Vec3, Option<bool>) = match op.kind {
                Kind::Nop => (ZERO, ZERO, ZERO, None),
                Kind::Add => {
                    let (a, b) = (read_a!(), read_b!());
                    (lanes2(a, b, alu::add), a, b, None)
                }
                Kind::Sub => {
                    let (a, b) = (read_a!(), read_b!());
                    (lanes2(a, b, alu::sub), a, b, None)
                }
                Kind::Div => {
                    let (a, b) = (read_a!(), read_b!());
                    (divide(a, b), a, b, None)
                }
                Kind::Mul => {
                    let (a, b) = (read_a!(), read_b!());
                    (lanes2(a, b, alu::mul), a, b, None)
                }
                Kind::Imul => {
                    let (a, b) = (read_a!(), read_b!());
                    (lanes2(a, b, alu::imul), a, b, None)
                }
                Kind::Mag => {
                    let a = read_a!();
                    ([alu::vector_magnitude(a); 3], a, ZERO, None)
                }
                Kind::Copy => {
                    let a = read_a!();
                    (a, a, ZERO, None)
                }
                Kind::Zero => (ZERO, ZERO, ZERO, None),
                Kind::Inc => {
                    let a = read_a!();
                    (a.map(alu::inc), a, ZERO, None)
                }
                Kind::Dec => {
                    let a = read_a!();
                    (a.map(alu::dec), a, ZERO, None)
                }
                Kind::IncX => {
                    let a = read_a!();
                    ([alu::inc(a[0]), a[1], a[2]], a, ZERO, None)
                }
                Kind::IncY => {
                    let a = read_a!();
                    ([a[0], alu::inc(a[1]), a[2]], a, ZERO, None)
                }
                Kind::IncZ => {
                    let a = read_a!();
                    ([a[0], a[1], alu::inc(a[2])], a, ZERO, None)
                }
                Kind::Cross => {
                    let (a, b) = (read_a!(), read_b!());
                    (alu::cross(a, b), a, b, None)
                }
                Kind::Dot => {
                    let (a, b) = (read_a!(), read_b!());
                    ([alu::dot(a, b); 3], a, b, None)
                }
                Kind::Mulp => {
                    let a = read_a!();
                    ([a[0], a[1], alu::mul(a[0], a[1])], a, ZERO, None)
                }
                Kind::Mod => {
                    let (a, b) = (read_a!(), read_b!());
                    (lanes2(a, b, alu::modulo), a, b, None)
                }
                Kind::Frac => {
                    let a = read_a!();
                    (a.map(alu::frac), a, ZERO, None)
                }
                Kind::Intp => {
                    let a = read_a!();
                    (a.map(alu::intp), a, ZERO, None)
                }
                Kind::Neg => {
                    let a = read_a!();
                    (a.map(alu::neg), a, ZERO, None)
                }
                Kind::Unscale => {
                    let a = read_a!();
                    (a.map(alu::unscale), a, ZERO, None)
                }
                Kind::Rescale => {
                    let a = read_a!();
                    (a.map(alu::rescale), a, ZERO, None)
                }
                Kind::ExchangeX => {
                    let (a, b) = (read_a!(), read_b!());
                    ([b[0], a[1], a[2]], a, b, None)
                }
                Kind::ExchangeY => {
                    let (a, b) = (read_a!(), read_b!());
                    ([a[0], b[1], a[2]], a, b, None)
                }
                Kind::ExchangeZ => {
                    let (a, b) = (read_a!(), read_b!());
                    ([a[0], a[1], b[2]], a, b, None)
                }
                Kind::Omwrite => {
                    let (a, b) = (read_a!(), read_b!());
                    for lane in 0..3 {
                        self.output.write(a[lane], b[lane]);
                    }
                    (ZERO, a, b, None)
                }
                Kind::Tmread => {
                    let a = read_a!();
                    let texel = |address: u32| texture.get(address as usize).copied();
                    (a.map(|address| texel(address).unwrap_or(0)), a, ZERO, None)
                }
                Kind::Lea => ([op.imm; 3], ZERO, ZERO, None),
                Kind::SetX => {
                    let b = read_b!();
                    ([op.imm, b[1], b[2]], imm_a, b, None)
                }
                Kind::SetY => {
                    let b = read_b!();
                    ([b[0], op.imm, b[2]], imm_a, b, None)
                }
                Kind::SetZ => {
                    let b = read_b!();
                    ([b[0], b[1], op.imm], imm_a, b, None)
                }
                Kind::Swizzle => {
                    let b = read_b!();
                    (alu::swizzle(b, op.imm), imm_a, b, None)
                }
                Kind::Jmp => {
                    pc = op.imm as usize;
                    (ZERO, ZERO, ZERO, None)
                }
                Kind::Call => {
                    ret = pc;
                    pc = op.imm as usize;
                    (ZERO, ZERO, ZERO, None)
                }
                Kind::Ret => {
                    let b = read_b!();
                    pc = ret;
                    ([op.imm, b[1], b[2]], imm_a, b, None)
                }
                Kind::Return => {
                    let result = [op.imm; 3];
                    regs[op.d_row as usize] = result;
                    if O::ENABLED {
                        let slot = program.slot_info(this as u32);
                        observer.step(&Step {
                            address: slot.address,
                            word: slot.word,
                            a: imm_a,
                            b: ZERO,
                            result,
                            written: op.d_row != SINK_ROW,
                            taken: None,
                            next: program.slot_info(pc as u32).address,
                        });
                    }
                    self.last_dst = op.dst;
                    self.last_result = result;
                    self.return_slot = ret as u32;
                    self.settle(budget_at_start, budget_left);
                    return Ok(op.imm & 1 == 1);
                }
                Kind::BranchX => {
                    let (a, b) = (read_a!(), read_b!());
                    branch!(a[0], b[0], a, b)
                }
                Kind::BranchY => {
                    let (a, b) = (read_a!(), read_b!());
                    branch!(a[1], b[1], a, b)
                }
                Kind::BranchZ => {
                    let (a, b) = (read_a!(), read_b!());
                    branch!(a[2], b[2], a, b)
                }
                Kind::Hang => {
                    self.last_dst = ld;
                    self.last_result = lr;
                    self.return_slot = ret as u32;
                    self.settle(budget_at_start, budget_left + 1);
                    let address = op.imm as u16;
                    return Err(Fault::Hang {
                        address,
                        word: program.word(address),
                    });
                }
            };
            regs[op.d_row as usize] = result;
            ld = op.dst;
            lr = result;
            if O::ENABLED {
                let slot = program.slot_info(this as u32);
                observer.step(&Step {
                    address: slot.address,
                    word: slot.word,
                    a,
                    b,
                    result,
                    written: op.d_row != SINK_ROW,
                    taken,
                    next: program.slot_info(pc as u32).address,
                });
            }
        }
    }
}

impl Core<'_> {
    /// Books the instructions a routine executed.
    #[inline(always)]
    fn settle(&mut self, budget_at_start: u64, budget_left: u64) {
        self.instructions += budget_at_start - budget_left;
        self.budget_left = budget_left;
    }
}

#[inline(always)]
fn lanes2(a: Vec3, b: Vec3, f: impl Fn(u32, u32) -> u32) -> Vec3 {
    [f(a[0], b[0]), f(a[1], b[1]), f(a[2], b[2])]
}

/// DIV per component. The ROM divides replicated scalars (x = y = z) most of the time, so
/// compute such a quotient once: the result is the same bit for bit.
#[inline(always)]
fn divide(a: Vec3, b: Vec3) -> Vec3 {
    if a[0] == a[1] && a[1] == a[2] && b[0] == b[1] && b[1] == b[2] {
        [alu::div(a[0], b[0]); 3]
    } else {
        lanes2(a, b, alu::div)
    }
}

/// Instruction memory capacity for user code, for messages.
pub const USER_INSTRUCTIONS: usize = IMEM_WORDS - 12;
