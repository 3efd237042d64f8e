//! Nintendo 3DS PICA200 shader programs as THEIA's pixel stage (issue 14; spec
//! foreign_isas Part B).
//!
//! - [`opcodes`]: the opcode/format table that drives everything below.
//! - [`decode`]: instruction words and operand descriptors, both ways.
//! - [`disasm`]: words to picasso-syntax text.
//! - [`asm`]: picasso-syntax text to words, descriptors, constants and outputs.
//! - [`shbin`]: the DVLB/DVLP/DVLE container 3DS toolchains write.
//! - [`interp`]: the interpreter.
//! - [`f24`]: float24/20/16 conversions.
//!
//! As a pixel stage the program sees `v0` = (s, t, 0, 1), `v1` = (r, g, b, 1), `v2` =
//! (u, v, t, hit), `v3` = (x, y, 0, 1); the output with semantic `color` (else `o0`) gives
//! the pixel's rgb.

pub mod asm;
pub mod decode;
pub mod disasm;
pub mod f24;
pub mod interp;
pub mod opcodes;
pub mod shbin;

use crate::emu::core::Fault;
use crate::stage::{ForeignProgram, NamedVec4, PixelInputs, PixelRun, RunError, TextureSampler};
use interp::{Code, State};

/// Output semantics of the DVLE output table (picasso's `.out` types).
pub mod semantic {
    pub const POSITION: u16 = 0;
    pub const NORMAL_QUATERNION: u16 = 1;
    pub const COLOR: u16 = 2;
    pub const TEXCOORD0: u16 = 3;
    pub const TEXCOORD0W: u16 = 4;
    pub const TEXCOORD1: u16 = 5;
    pub const TEXCOORD2: u16 = 6;
    pub const VIEW: u16 = 8;
    pub const DUMMY: u16 = 9;
}

/// A constant the program sets itself (`.constf`, `.consti`, `.setb`, SHBIN constant table).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Constant {
    Bool { index: u8, value: bool },
    Int { index: u8, value: [u8; 4] },
    Float { index: u8, value: [f32; 4] },
}

/// One row of the output table: register `o<register>` components `mask` (bit 0 = x)
/// carry `semantic`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PicaOutput {
    pub semantic: u16,
    pub register: u8,
    pub mask: u8,
}

/// A named uniform: registers `first..=last` in source numbering (0x20-0x7F float,
/// 0x80-0x83 integer, 0x88-0x97 bool), or an input (0x00-0x0F) for `.in`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Uniform {
    pub name: String,
    pub first: u8,
    pub last: u8,
}

/// A whole program: what picasso writes into one DVLP + DVLE.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PicaProgram {
    pub code: Vec<u32>,
    pub descriptors: Vec<u32>,
    /// First and one-past-last word of the entry procedure (`main`).
    pub entry: u32,
    pub entry_end: u32,
    pub geometry: bool,
    pub constants: Vec<Constant>,
    pub outputs: Vec<PicaOutput>,
    pub uniforms: Vec<Uniform>,
}

impl PicaProgram {
    /// The output register wired to `color`, else o0.
    pub fn colour_register(&self) -> u8 {
        self.outputs
            .iter()
            .find(|o| o.semantic == semantic::COLOR)
            .map_or(0, |o| o.register)
    }
}

/// A program ready to shade: pre-decoded code and the uniform state every run starts from.
#[derive(Clone, Debug)]
pub struct PicaShader {
    pub program: PicaProgram,
    code: Code,
    initial: Box<State>,
    colour: usize,
}

impl PicaShader {
    /// Prepares `program` with extra uniforms `consts` (`c5`, `i0`, `b3`, or a `.fvec` /
    /// `.ivec` / `.bool` name; bools are true when x ≠ 0). `consts` override the program's
    /// own constants.
    pub fn new(program: PicaProgram, consts: &[NamedVec4]) -> Result<PicaShader, String> {
        let mut initial = Box::<State>::default();
        for constant in &program.constants {
            match *constant {
                Constant::Bool { index, value } => {
                    set_bit(&mut initial.bools, index, value);
                }
                Constant::Int { index, value } => initial.ints[index as usize & 3] = value,
                Constant::Float { index, value } => {
                    if (index as usize) < interp::FLOAT_UNIFORMS {
                        *initial.uniform_mut(index as usize) = value;
                    }
                }
            }
        }
        for named in consts {
            let register = uniform_register(&program, &named.name).ok_or_else(|| {
                format!(
                    "--const {}: expected c0..c95, i0..i3, b0..b15 or a uniform the program declares",
                    named.name
                )
            })?;
            match register {
                0x20..=0x7F => initial.regs[register as usize] = named.value,
                0x80..=0x83 => {
                    initial.ints[register as usize - 0x80] =
                        named.value.map(|v| v.clamp(0.0, 255.0) as u8)
                }
                _ => set_bit(&mut initial.bools, register - 0x88, named.value[0] != 0.0),
            }
        }
        let code = Code::new(&program.code, &program.descriptors, program.entry);
        let colour = program.colour_register() as usize;
        Ok(PicaShader {
            program,
            code,
            initial,
            colour,
        })
    }

    /// Runs once from `state`'s inputs; returns the final state and instructions run.
    pub fn run(&self, inputs: &[[f32; 4]], budget: u64) -> Result<(State, u64), Fault> {
        let mut state = (*self.initial).clone();
        for (n, value) in inputs.iter().enumerate().take(16) {
            *state.input_mut(n) = *value;
        }
        let executed = self.code.run(&mut state, budget)?;
        Ok((state, executed))
    }

    /// The uniform state each invocation starts from.
    pub fn initial_state(&self) -> &State {
        &self.initial
    }

    /// Runs with a prepared `state` (tests set condition codes or uniforms directly).
    pub fn run_state(&self, state: &mut State, budget: u64) -> Result<u64, Fault> {
        self.code.run(state, budget)
    }
}

fn set_bit(bits: &mut u16, index: u8, value: bool) {
    let bit = 1u16 << (index & 15);
    if value {
        *bits |= bit
    } else {
        *bits &= !bit
    }
}

/// The source register a `--const` name means.
fn uniform_register(program: &PicaProgram, name: &str) -> Option<u8> {
    if let Some(uniform) = program.uniforms.iter().find(|u| u.name == name) {
        return (uniform.first >= 0x20).then_some(uniform.first);
    }
    let mut chars = name.chars();
    let kind = chars.next()?;
    let n: u8 = chars.as_str().parse().ok()?;
    match kind {
        'c' if n < 96 => Some(0x20 + n),
        'i' if n < 4 => Some(0x80 + n),
        'b' if n < 16 => Some(0x88 + n),
        _ => None,
    }
}

impl ForeignProgram for PicaShader {
    fn instruction_set(&self) -> &'static str {
        "PICA200"
    }

    fn run_once(
        &self,
        inputs: &[NamedVec4],
        budget: u64,
    ) -> Result<Vec<(String, [f32; 4])>, RunError> {
        let mut registers = [[0.0f32; 4]; 16];
        for input in inputs {
            let n = input
                .name
                .strip_prefix('v')
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n < 16)
                .ok_or_else(|| {
                    RunError::Input(format!("--in {}: PICA200 inputs are v0..v15", input.name))
                })?;
            registers[n] = input.value;
        }
        let (state, _) = self.run(&registers, budget)?;
        Ok((0..16)
            .filter(|&n| state.written >> n & 1 == 1)
            .map(|n| (format!("o{n}"), state.outputs[n]))
            .collect())
    }

    fn run_pixel(
        &self,
        inputs: &PixelInputs,
        _: &TextureSampler,
        budget: u64,
    ) -> Result<PixelRun, Fault> {
        let (state, executed) = self.run(&inputs.registers(), budget)?;
        let [r, g, b, _] = state.outputs[self.colour];
        Ok(PixelRun {
            executed,
            colour: Some([r, g, b]),
        })
    }
}
