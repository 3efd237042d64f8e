//! One core's execution unit: the register banks with the hardware's address decoding, the
//! swap-memory copies, operand forwarding, CALL/RET and the ALU dispatch.

use super::alu::{self, Vec3};
use super::program::Program;
use crate::isa::registers::{EntryPoint, IMEM_WORDS};
use crate::isa::{Instruction, Opcode};
use crate::scene::Triangle;

const ZERO: Vec3 = [0; 3];

/// Rows 0..127 are the address space as the execution unit sees it; rows 128..159 hold the
/// second swap-memory copy. A flip exchanges which copy answers addresses 32..63.
const SHADOW_SWAP_ROW: usize = 128;
const REGISTER_ROWS: usize = 160;
const SWAP_FLIP_OFFSET: usize = SHADOW_SWAP_ROW - 32;
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
#[derive(Clone, Debug)]
pub struct OutputMemory {
    pub words: Vec<u32>,
    written: Vec<bool>,
}

impl OutputMemory {
    /// The hardware's OMEM holds 250001 words (`RAM_SINGLE_READ_PORT #(32,32,250000)`).
    pub const HARDWARE_WORDS: usize = 250_001;

    pub fn new(words: usize) -> OutputMemory {
        OutputMemory {
            words: vec![0; words],
            written: vec![false; words],
        }
    }

    /// Writes beyond the memory are lost, as in the RAM.
    #[inline]
    fn write(&mut self, address: u32, value: u32) {
        if let Some(slot) = self.words.get_mut(address as usize) {
            *slot = value;
            self.written[address as usize] = true;
        }
    }

    pub fn read(&self, address: usize) -> Option<u32> {
        self.written
            .get(address)
            .copied()
            .unwrap_or(false)
            .then(|| self.words[address])
    }
}

/// One THEIA core.
pub struct Core<'a> {
    program: &'a Program,
    texture: &'a [u32],
    regs: [Vec3; REGISTER_ROWS],
    /// 0 or SWAP_FLIP_OFFSET: which copy of the swap memory the execution unit sees.
    swap_offset: usize,
    /// The previous instruction's DST field and ALU result (the forwarding path).
    last_dst: u16,
    last_result: Vec3,
    /// CALL's single return register (no stack).
    return_address: u16,
    /// Instructions left before the watchdog stops the current pixel.
    budget_left: u64,
    budget: u64,
    /// Instructions executed since the core started.
    pub instructions: u64,
    pub output: OutputMemory,
}

impl<'a> Core<'a> {
    pub fn new(program: &'a Program, texture: &'a [u32], output_words: usize) -> Core<'a> {
        Core {
            program,
            texture,
            regs: [ZERO; REGISTER_ROWS],
            swap_offset: 0,
            last_dst: 0,
            last_result: ZERO,
            return_address: 0,
            budget_left: u64::MAX,
            budget: u64::MAX,
            instructions: 0,
            output: OutputMemory::new(output_words),
        }
    }

    /// The storage row behind a data address: bits 6..5 pick the bank, 4..0 the row;
    /// higher bits are not decoded.
    #[inline(always)]
    fn row(&self, address: u16) -> usize {
        let row = (address & 0x7F) as usize;
        // Branch-free: add the flip offset only for bank 1 (bits 6..5 = 01).
        let in_swap_bank = ((row >> 5) == 1) as usize;
        row + (self.swap_offset & in_swap_bank.wrapping_neg())
    }

    /// Reads an operand: the previous instruction's result when the address equals its
    /// DST field (all 16 bits), whether or not that result was written.
    #[inline(always)]
    fn read(&self, address: u16) -> Vec3 {
        let source = if address == self.last_dst {
            &self.last_result
        } else {
            &self.regs[self.row(address)]
        };
        // Lane by lane: a wide load after narrow stores would stall store forwarding.
        [source[0], source[1], source[2]]
    }

    /// A register as the execution unit would read it from the file (no forwarding).
    pub fn register(&self, address: u16) -> Vec3 {
        self.regs[self.row(address)]
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
        if self.swap_offset == 0 {
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
        self.swap_offset ^= SWAP_FLIP_OFFSET;
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

    /// Runs one routine from the entry-point table until its RETURN; returns bit 0 of it.
    #[inline]
    pub fn run<O: Observer>(&mut self, entry: EntryPoint, observer: &mut O) -> Result<bool, Fault> {
        let start = self.program.entry(entry);
        if O::ENABLED {
            observer.routine_start(entry, start);
        }
        // Triggering a routine resets the last-destination latch (not the result latch).
        self.last_dst = 0;
        let value = self.execute(start, observer)?;
        if O::ENABLED {
            observer.routine_end(entry, value);
        }
        Ok(value)
    }

    fn execute<O: Observer>(&mut self, start: u16, observer: &mut O) -> Result<bool, Fault> {
        let program = self.program;
        let mut pc = start;
        // Counted in locals (registers), settled when the routine ends.
        let budget_at_start = self.budget_left;
        let mut budget_left = self.budget_left;
        loop {
            if budget_left == 0 {
                self.settle(budget_at_start, budget_left);
                return Err(Fault::Watchdog {
                    address: pc,
                    budget: self.budget,
                });
            }
            budget_left -= 1;
            let ins = *program.decoded(pc);
            let Some(op) = ins.op else {
                self.settle(budget_at_start, budget_left + 1);
                return Err(Fault::Hang {
                    address: pc,
                    word: program.word(pc),
                });
            };
            let mut next = pc.wrapping_add(1);
            let mut a = ZERO;
            let mut b = ZERO;
            let mut taken = None;
            // (result, whether the opcode writes DST)
            let (result, writes) = match op {
                Opcode::Nop | Opcode::DebugPrint => (ZERO, false),
                Opcode::Add => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    (lanes2(a, b, alu::add), true)
                }
                Opcode::Sub => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    (lanes2(a, b, alu::sub), true)
                }
                Opcode::Div => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    (divide(a, b), true)
                }
                Opcode::Mul => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    (lanes2(a, b, alu::mul), true)
                }
                Opcode::Imul => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    (lanes2(a, b, alu::imul), true)
                }
                Opcode::Mag => {
                    a = self.read(ins.a_addr);
                    ([alu::vector_magnitude(a); 3], true)
                }
                Opcode::Copy => {
                    a = self.read(ins.a_addr);
                    (a, true)
                }
                Opcode::Zero => (ZERO, true),
                Opcode::Inc => {
                    a = self.read(ins.a_addr);
                    (a.map(alu::inc), true)
                }
                Opcode::Dec => {
                    a = self.read(ins.a_addr);
                    (a.map(alu::dec), true)
                }
                Opcode::Incx => {
                    a = self.read(ins.a_addr);
                    ([alu::inc(a[0]), a[1], a[2]], true)
                }
                Opcode::Incy => {
                    a = self.read(ins.a_addr);
                    ([a[0], alu::inc(a[1]), a[2]], true)
                }
                Opcode::Incz => {
                    a = self.read(ins.a_addr);
                    ([a[0], a[1], alu::inc(a[2])], true)
                }
                Opcode::Cross => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    (alu::cross(a, b), true)
                }
                Opcode::Dot => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    ([alu::dot(a, b); 3], true)
                }
                Opcode::Mulp => {
                    a = self.read(ins.a_addr);
                    ([a[0], a[1], alu::mul(a[0], a[1])], true)
                }
                Opcode::Mod => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    (lanes2(a, b, alu::modulo), true)
                }
                Opcode::Frac => {
                    a = self.read(ins.a_addr);
                    (a.map(alu::frac), true)
                }
                Opcode::Intp => {
                    a = self.read(ins.a_addr);
                    (a.map(alu::intp), true)
                }
                Opcode::Neg => {
                    a = self.read(ins.a_addr);
                    (a.map(alu::neg), true)
                }
                Opcode::Unscale => {
                    a = self.read(ins.a_addr);
                    (a.map(alu::unscale), true)
                }
                Opcode::Rescale => {
                    a = self.read(ins.a_addr);
                    (a.map(alu::rescale), true)
                }
                Opcode::Xchangex => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    ([b[0], a[1], a[2]], true)
                }
                Opcode::Xchangey => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    ([a[0], b[1], a[2]], true)
                }
                Opcode::Xchangez => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    ([a[0], a[1], b[2]], true)
                }
                Opcode::Omwrite => {
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    for lane in 0..3 {
                        self.output.write(a[lane], b[lane]);
                    }
                    (ZERO, true)
                }
                Opcode::Tmread => {
                    a = self.read(ins.a_addr);
                    let texel = |address: u32| self.texture.get(address as usize).copied();
                    (a.map(|address| texel(address).unwrap_or(0)), true)
                }
                Opcode::Lea => ([pc as u32; 3], true),
                Opcode::Setx | Opcode::Sety | Opcode::Setz => {
                    a = [ins.imm, 0, 0];
                    b = self.read(ins.b_addr);
                    let mut r = b;
                    r[op as usize - Opcode::Setx as usize] = ins.imm;
                    (r, true)
                }
                Opcode::Swizzle3d => {
                    a = [ins.imm, 0, 0];
                    b = self.read(ins.b_addr);
                    (alu::swizzle(b, ins.imm), true)
                }
                Opcode::Jmp => {
                    next = ins.dst;
                    (ZERO, false)
                }
                Opcode::Call => {
                    self.return_address = pc.wrapping_add(1);
                    next = ins.dst;
                    (ZERO, false)
                }
                Opcode::Ret => {
                    a = [ins.imm, 0, 0];
                    b = self.read(ins.b_addr);
                    next = self.return_address;
                    ([ins.imm, b[1], b[2]], false)
                }
                Opcode::Return => {
                    a = [ins.imm, 0, 0];
                    ([ins.imm; 3], true)
                }
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
                    (a, b) = (self.read(ins.a_addr), self.read(ins.b_addr));
                    // Opcode bits 4..3 pick the component (01 x, 10 y, 11 z), bits 2..0 the relation.
                    let lane = ((op as usize) >> 3) - 1;
                    let jump = alu::compare(a[lane], b[lane], op as u16 & 7);
                    if jump {
                        next = ins.dst;
                    }
                    taken = Some(jump);
                    (ZERO, false)
                }
            };
            let written = writes && (ins.dst & 0x60) != 0;
            if written {
                let row = self.row(ins.dst);
                let slot = &mut self.regs[row];
                (slot[0], slot[1], slot[2]) = (result[0], result[1], result[2]);
            }
            self.last_dst = ins.dst;
            (
                self.last_result[0],
                self.last_result[1],
                self.last_result[2],
            ) = (result[0], result[1], result[2]);
            if O::ENABLED {
                observer.step(&Step {
                    address: pc,
                    word: program.word(pc),
                    a,
                    b,
                    result,
                    written,
                    taken,
                    next,
                });
            }
            if op == Opcode::Return {
                self.settle(budget_at_start, budget_left);
                return Ok(ins.imm & 1 == 1);
            }
            pc = next;
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
