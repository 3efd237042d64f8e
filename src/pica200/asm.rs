//! The PICA200 assembler for picasso's syntax (devkitPro/picasso 2.7.1): `.proc`/`.end`,
//! `.else`, `.alias`, `.fvec`/`.ivec`/`.bool` uniforms, `.constf`/`.consti`/`.constfa`
//! constants, `.setf`/`.seti`/`.setb`, `.in`, `.out`, `.entry`, the flow-control forms,
//! MAD/MADI and relative addressing with `a0.x`/`a0.y`/`aL`.
//!
//! It reproduces picasso's words: the same operand-descriptor sharing (a new descriptor
//! merges into the first one that agrees on every bit both use), the same padding NOPs,
//! constants allocated from the top of their register file and uniforms from the bottom.
//! What picasso refuses is an error at `file:line:col`; [`Options::allow_input_pairs`]
//! lifts the one hardware-erratum check (two different input registers in one
//! instruction) so that the conformance programs marked `picasso_accepts: false` assemble.
//!
//! One extension, so that disassembly listings assemble back word for word: every flow
//! instruction also takes explicit numbers instead of a label or block, `call 12, 3`,
//! `ifc cmp.x, 5, 2`, `for i0, 7`, `jmpu !b1, 9` (see [`super::disasm`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::decode::{selector_byte, Instruction};
use super::f24::quantize_f24;
use super::opcodes::Op;
use super::{semantic, Constant, Output, Program, Uniform};
use crate::isa::asm::{AsmErrors, Diagnostic, Severity};

/// Switches that depart from picasso's defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Options {
    /// Accept two or three different input registers in one instruction (a hardware
    /// erratum picasso refuses; the reference emulators do not model it).
    pub allow_input_pairs: bool,
    /// Insert the padding NOPs picasso inserts (default); without, warn instead.
    pub auto_nop: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            allow_input_pairs: false,
            auto_nop: true,
        }
    }
}

/// An assembled program and the assembler's warnings.
#[derive(Clone, Debug, PartialEq)]
pub struct Assembly {
    pub program: Program,
    pub warnings: Vec<Diagnostic>,
}

/// Assembles picasso source; `file` names it in messages.
pub fn assemble(
    source: &str,
    file: &Path,
    options: Options,
) -> std::result::Result<Assembly, AsmErrors> {
    let mut assembler = Assembler::new(file, options);
    let result = assembler.run(source);
    match result {
        Ok(program) => Ok(Assembly {
            program,
            warnings: assembler.warnings,
        }),
        Err(error) => Err(AsmErrors {
            errors: vec![error],
            warnings: assembler.warnings,
        }),
    }
}

/// A piece of a line with its 1-based column.
#[derive(Clone, Copy, Debug)]
struct Arg<'a> {
    text: &'a str,
    column: usize,
}

/// A resolved register operand: register number in picasso's numbering (0x00-0x0F v/o,
/// 0x10-0x1F r, 0x20-0x7F c, 0x80-0x83 i, 0x88-0x97 b), negation, the four selected
/// components and the index register (0 none, 1 a0.x, 2 a0.y, 3 aL).
#[derive(Clone, Copy, Debug)]
struct Operand {
    reg: u32,
    negate: bool,
    swizzle: [u8; 4],
    idx: u8,
}

const IDENTITY: [u8; 4] = [0, 1, 2, 3];

#[derive(Clone, Copy, Debug)]
struct Alias {
    reg: u32,
    negate: bool,
    swizzle: [u8; 4],
}

#[derive(Clone, Debug)]
enum BlockKind {
    Proc(String),
    For,
    If { else_at: Option<usize> },
    Array { name: String, size: Option<usize> },
}

#[derive(Clone, Debug)]
struct Block {
    kind: BlockKind,
    pos: usize,
}

/// picasso's register-range allocator: globals from the bottom, locals from the top.
#[derive(Clone, Copy, Debug)]
struct Allocator {
    start: u32,
    end: u32,
    bound: u32,
}

impl Allocator {
    fn new(start: u32, end: u32) -> Allocator {
        Allocator {
            start,
            end,
            bound: end,
        }
    }
    fn global(&mut self, size: u32) -> Option<u32> {
        (self.start.checked_add(size)? <= self.bound).then(|| {
            self.start += size;
            self.start - size
        })
    }
    fn local(&mut self, size: u32) -> Option<u32> {
        let pos = self.end.checked_sub(size)?;
        (pos >= self.start).then(|| {
            self.bound = self.bound.min(pos);
            self.end = pos;
            pos
        })
    }
}

struct Relocation {
    word: usize,
    target: String,
    line: usize,
    column: usize,
}

struct Assembler {
    file: PathBuf,
    options: Options,
    warnings: Vec<Diagnostic>,
    line: usize,
    code: Vec<u32>,
    descriptors: Vec<(u32, u32)>,
    mad_descriptors: u32,
    stack: Vec<Block>,
    procs: HashMap<String, (usize, usize)>,
    labels: HashMap<String, usize>,
    proc_relocations: Vec<Relocation>,
    label_relocations: Vec<Relocation>,
    aliases: HashMap<String, Alias>,
    last_was_end: bool,
    floats: Allocator,
    ints: Allocator,
    bools: Allocator,
    array: Vec<[f32; 4]>,
    program: Program,
    entry_name: String,
    used_inputs: u16,
    used_outputs: u16,
}

type Result<T> = std::result::Result<T, Diagnostic>;

/// Splits `text` (starting at 1-based `column`) on `separator`, trimming each piece.
fn split<'a>(text: &'a str, column: usize, separator: char) -> Vec<Arg<'a>> {
    let mut pieces = Vec::new();
    let mut offset = 0;
    for piece in text.split(separator) {
        let leading = piece.len() - piece.trim_start().len();
        pieces.push(Arg {
            text: piece.trim(),
            column: column + offset + leading,
        });
        offset += piece.len() + separator.len_utf8();
    }
    pieces
}

/// The whitespace-separated words of `text` (starting at 1-based `column`).
fn words_of(text: &str, column: usize) -> Vec<Arg<'_>> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text
        .char_indices()
        .chain(std::iter::once((text.len(), ' ')))
    {
        match (c.is_whitespace(), start) {
            (false, None) => start = Some(i),
            (true, Some(s)) => {
                words.push(Arg {
                    text: &text[s..i],
                    column: column + s,
                });
                start = None;
            }
            _ => {}
        }
    }
    words
}

fn is_identifier(text: &str) -> bool {
    !text.is_empty()
        && text.chars().enumerate().all(|(i, c)| {
            c.is_ascii_alphabetic() || c == '_' || c == '.' || (i > 0 && c.is_ascii_digit())
        })
}

/// Parses picasso's swizzle text (`xyzw`, `rgba`, `stpq`); missing components repeat the
/// last one given.
fn parse_swizzle(text: &str) -> Option<[u8; 4]> {
    if text.is_empty() || text.len() > 4 {
        return None;
    }
    let mut components = [0u8; 4];
    let mut chars = text.chars();
    let mut last = 0;
    for slot in components.iter_mut() {
        if let Some(c) = chars.next() {
            last = match c.to_ascii_lowercase() {
                'x' | 'r' | 's' => 0,
                'y' | 'g' | 't' => 1,
                'z' | 'b' | 'p' => 2,
                'w' | 'a' | 'q' => 3,
                _ => return None,
            };
        }
        *slot = last;
    }
    Some(components)
}

/// A destination mask (bit 3 = x … bit 0 = w) from the components a swizzle names.
fn mask_of(swizzle: [u8; 4]) -> u32 {
    swizzle.iter().fold(0, |m, &c| m | 1 << (3 - c))
}

/// Descriptor bits of source `n` (negate + selector).
fn source_bits(n: usize, negate: bool, swizzle: [u8; 4]) -> u32 {
    ((negate as u32) | selector_byte(swizzle) << 1) << (4 + 9 * n)
}

/// The selector bits of components `unused` of source `n`.
fn unused_bits(n: usize, unused: &[usize]) -> u32 {
    unused
        .iter()
        .fold(0, |m, &i| m | (3 << (6 - 2 * i)) << (5 + 9 * n))
}

fn index_register(name: &str) -> u8 {
    match name.to_ascii_lowercase().as_str() {
        "a0" | "a0.x" => 1,
        "a1" | "a0.y" => 2,
        "a2" | "lcnt" | "al" => 3,
        _ => 0,
    }
}

fn comparison(name: &str) -> Option<u8> {
    ["eq", "ne", "lt", "le", "gt", "ge"]
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map(|p| p as u8)
}

fn output_semantic(name: &str) -> Option<u16> {
    Some(match name.to_ascii_lowercase().as_str() {
        "pos" | "position" => semantic::POSITION,
        "nquat" | "normalquat" => semantic::NORMAL_QUATERNION,
        "clr" | "color" => semantic::COLOR,
        "tcoord0" | "texcoord0" => semantic::TEXCOORD0,
        "tcoord0w" | "texcoord0w" => semantic::TEXCOORD0W,
        "tcoord1" | "texcoord1" => semantic::TEXCOORD1,
        "tcoord2" | "texcoord2" => semantic::TEXCOORD2,
        "view" => semantic::VIEW,
        "dummy" => semantic::DUMMY,
        _ => return None,
    })
}

impl Assembler {
    fn new(file: &Path, options: Options) -> Assembler {
        Assembler {
            file: file.to_path_buf(),
            options,
            warnings: Vec::new(),
            line: 0,
            code: Vec::new(),
            descriptors: Vec::new(),
            mad_descriptors: 0,
            stack: Vec::new(),
            procs: HashMap::new(),
            labels: HashMap::new(),
            proc_relocations: Vec::new(),
            label_relocations: Vec::new(),
            aliases: HashMap::new(),
            last_was_end: false,
            floats: Allocator::new(0x20, 0x80),
            ints: Allocator::new(0x80, 0x84),
            bools: Allocator::new(0x88, 0x98),
            array: Vec::new(),
            program: Program::default(),
            entry_name: "main".to_string(),
            used_inputs: 0,
            used_outputs: 0,
        }
    }

    fn error(&self, column: usize, message: impl Into<String>) -> Diagnostic {
        self.diagnostic(column, Severity::Error, message)
    }

    fn diagnostic(
        &self,
        column: usize,
        severity: Severity,
        message: impl Into<String>,
    ) -> Diagnostic {
        Diagnostic {
            file: self.file.clone(),
            line: self.line,
            column,
            severity,
            message: message.into(),
        }
    }

    fn run(&mut self, source: &str) -> Result<Program> {
        for (number, raw) in source.lines().enumerate() {
            self.line = number + 1;
            let text = raw.split(';').next().unwrap_or("");
            let mut column = 1;
            let mut rest = text;
            // Labels: `name:` (several may share a line).
            while let Some(colon) = rest.find(':') {
                let name = rest[..colon].trim();
                let at = column + (rest.len() - rest.trim_start().len());
                if !is_identifier(name) {
                    return Err(self.error(at, format!("invalid label name `{name}`")));
                }
                if self
                    .labels
                    .insert(name.to_string(), self.code.len())
                    .is_some()
                {
                    return Err(self.error(at, format!("duplicate label `{name}`")));
                }
                column += colon + 1;
                rest = &rest[colon + 1..];
            }
            let trimmed = rest.trim_start();
            if trimmed.trim().is_empty() {
                continue;
            }
            column += rest.len() - trimmed.len();
            let end = trimmed.find(char::is_whitespace).unwrap_or(trimmed.len());
            let mnemonic = Arg {
                text: &trimmed[..end],
                column,
            };
            let operands = &trimmed[end..];
            let operands_column = column + end;
            self.statement(mnemonic, operands.trim_end(), operands_column)?;
        }
        if let Some(block) = self.stack.last() {
            let _ = block;
            return Err(self.error(1, "unclosed block(s) at the end of the file"));
        }
        self.finish()
    }

    fn statement(&mut self, mnemonic: Arg, operands: &str, column: usize) -> Result<()> {
        let name = mnemonic.text.to_ascii_lowercase();
        if let Some(directive) = name.strip_prefix('.') {
            return self.directive(directive, mnemonic, operands, column);
        }
        if !self
            .stack
            .iter()
            .any(|b| matches!(b.kind, BlockKind::Proc(_)))
        {
            return Err(self.error(mnemonic.column, "instruction outside a .proc block"));
        }
        self.last_was_end = false;
        let args: Vec<Arg> = if operands.trim().is_empty() {
            Vec::new()
        } else {
            split(operands, column, ',')
        };
        let at = mnemonic.column;
        match name.as_str() {
            "nop" | "end" | "emit" | "break" => {
                self.expect_args(&args, 0, at, "no operands")?;
                let op = match name.as_str() {
                    "nop" => Op::Nop,
                    "end" => Op::End,
                    "emit" => Op::Emit,
                    _ => Op::Break,
                };
                self.push(Instruction::Zero { op });
            }
            "add" | "dp3" | "dp4" | "mul" | "max" | "min" => {
                let op = match name.as_str() {
                    "add" => Op::Add,
                    "dp3" => Op::Dp3,
                    "dp4" => Op::Dp4,
                    "mul" => Op::Mul,
                    "max" => Op::Max,
                    _ => Op::Min,
                };
                self.format1(op, None, &args, at)?;
            }
            "dph" | "dphi" => self.format1(Op::Dph, Some(Op::Dphi), &args, at)?,
            "dst" | "dsti" => self.format1(Op::Dst, Some(Op::Dsti), &args, at)?,
            "sge" | "sgei" => self.format1(Op::Sge, Some(Op::Sgei), &args, at)?,
            "slt" | "slti" => self.format1(Op::Slt, Some(Op::Slti), &args, at)?,
            "ex2" | "lg2" | "litp" | "flr" | "rcp" | "rsq" | "mov" => {
                let op = match name.as_str() {
                    "ex2" => Op::Ex2,
                    "lg2" => Op::Lg2,
                    "litp" => Op::Litp,
                    "flr" => Op::Flr,
                    "rcp" => Op::Rcp,
                    "rsq" => Op::Rsq,
                    _ => Op::Mov,
                };
                self.format1u(op, &args, at)?;
            }
            "mova" => self.mova(&args, at)?,
            "cmp" => self.cmp(&args, at)?,
            "mad" | "madi" => self.mad(&args, at)?,
            "setemit" => self.setemit(&args, at)?,
            "call" => self.call(&args, at)?,
            "for" => self.for_loop(&args, at)?,
            "breakc" | "callc" | "ifc" | "jmpc" => self.format2(&name, &args, at)?,
            "callu" | "ifu" | "jmpu" => self.format3(&name, &args, at)?,
            _ => return Err(self.error(at, format!("unknown instruction `{}`", mnemonic.text))),
        }
        Ok(())
    }

    fn expect_args(&self, args: &[Arg], count: usize, at: usize, what: &str) -> Result<()> {
        if args.len() < count {
            let column = args.last().map_or(at, |a| a.column + a.text.len());
            return Err(self.error(column, format!("missing operand: expected {what}")));
        }
        if args.len() > count {
            return Err(self.error(
                args[count].column,
                format!("too many operands: expected {what}"),
            ));
        }
        Ok(())
    }

    fn push(&mut self, instruction: Instruction) {
        self.code.push(instruction.encode());
    }

    /// Parses `-name[index].swizzle`.
    fn operand(&self, arg: Arg, index_allowed: bool) -> Result<Operand> {
        let mut text = arg.text;
        let mut negate = false;
        if let Some(rest) = text.strip_prefix('-') {
            negate = true;
            text = rest.trim_start();
        }
        let mut offset = 0u32;
        let mut idx = 0u8;
        let tail;
        let mut name = text;
        if let Some(open) = text.find('[') {
            let close = text[open..]
                .find(']')
                .map(|c| c + open)
                .ok_or_else(|| self.error(arg.column, format!("missing `]` in `{}`", arg.text)))?;
            name = &text[..open];
            tail = &text[close + 1..];
            let inside = text[open + 1..close].trim();
            let (register, number) = match inside.split_once('+') {
                Some((r, n)) => (Some(r.trim()), n.trim()),
                None if index_register(inside) > 0 => (Some(inside), ""),
                None => (None, inside),
            };
            if let Some(register) = register {
                if !index_allowed {
                    return Err(self.error(
                        arg.column,
                        format!("index register not allowed here: `{inside}`"),
                    ));
                }
                idx = index_register(register);
                if idx == 0 {
                    return Err(self.error(
                        arg.column,
                        format!("invalid index register `{register}`: expected a0.x, a0.y or aL"),
                    ));
                }
            }
            if !number.is_empty() {
                offset = number.parse().map_err(|_| {
                    self.error(
                        arg.column,
                        format!("invalid register offset `{number}`: expected a number ≥ 0"),
                    )
                })?;
            }
        } else if let Some(dot) = text.find('.') {
            name = &text[..dot];
            tail = &text[dot..];
        } else {
            tail = "";
        }
        let mut swizzle = IDENTITY;
        if let Some(components) = tail.strip_prefix('.') {
            swizzle = parse_swizzle(components).ok_or_else(|| {
                self.error(
                    arg.column,
                    format!("invalid swizzle `.{components}`: expected up to four of x y z w"),
                )
            })?;
        } else if !tail.trim().is_empty() {
            return Err(self.error(
                arg.column,
                format!("unexpected `{tail}` after the register"),
            ));
        }
        let name = name.trim();
        if let Some(alias) = self.aliases.get(name) {
            return Ok(Operand {
                reg: alias.reg + offset,
                negate: negate ^ alias.negate,
                swizzle: swizzle.map(|c| alias.swizzle[c as usize]),
                idx,
            });
        }
        let mut chars = name.chars();
        let kind = chars.next().map(|c| c.to_ascii_lowercase());
        let number: Option<u32> = chars.as_str().parse().ok();
        let (base, limit) = match kind {
            Some('o') | Some('v') => (0x00, 16),
            Some('r') => (0x10, 16),
            Some('c') => (0x20, 96),
            Some('i') => (0x80, 4),
            Some('b') => (0x88, 16),
            _ => (0, 0),
        };
        let Some(number) = number.filter(|_| limit > 0) else {
            return Err(self.error(arg.column, format!("unknown register or alias `{name}`")));
        };
        if number >= limit {
            return Err(self.error(arg.column, format!("register `{name}` out of range")));
        }
        let reg = base + number;
        if idx != 0 && !(0x20..0x80).contains(&reg) {
            return Err(self.error(
                arg.column,
                "an index register only applies to float uniforms (c0..c95)",
            ));
        }
        Ok(Operand {
            reg: reg + offset,
            negate,
            swizzle,
            idx,
        })
    }

    fn destination(&self, arg: Arg) -> Result<Operand> {
        let operand = self.operand(arg, false)?;
        if operand.reg >= 0x20 || operand.negate {
            return Err(self.error(
                arg.column,
                format!(
                    "invalid destination `{}`: expected o0..o15 or r0..r15",
                    arg.text
                ),
            ));
        }
        Ok(operand)
    }

    fn wide(&self, arg: Arg, n: usize) -> Result<Operand> {
        let operand = self.operand(arg, true)?;
        if operand.reg >= 0x80 {
            return Err(self.error(
                arg.column,
                format!(
                    "invalid source{n} `{}`: expected v, r or c registers",
                    arg.text
                ),
            ));
        }
        Ok(operand)
    }

    fn narrow(&self, arg: Arg, n: usize) -> Result<Operand> {
        let operand = self.operand(arg, true)?;
        if operand.reg >= 0x20 {
            return Err(self.error(
                arg.column,
                format!(
                    "invalid source{n} `{}`: this operand can only be v0..v15 or r0..r15",
                    arg.text
                ),
            ));
        }
        if operand.idx != 0 {
            return Err(self.error(
                arg.column,
                format!("index register not allowed in source{n}"),
            ));
        }
        Ok(operand)
    }

    /// picasso's erratum check: two different input registers among `regs`.
    fn check_inputs(&self, regs: &[u32], at: usize) -> Result<()> {
        if self.options.allow_input_pairs {
            return Ok(());
        }
        for (i, &a) in regs.iter().enumerate() {
            for &b in &regs[i + 1..] {
                if a < 0x10 && b < 0x10 && a != b {
                    return Err(self.error(at, "source operands must be different input registers (v0..v15): the hardware reads one input per instruction (picasso's erratum check; lift it with --allow-input-pairs)"));
                }
            }
        }
        Ok(())
    }

    /// Finds or adds a descriptor as picasso does; returns its index.
    fn descriptor(&mut self, op: Op, value: u32, mut mask: u32) -> Result<usize> {
        // Selector slots the operation never reads are don't-cares (picasso's
        // optimizeOpdesc), so descriptors that differ only there are shared.
        let unused_dest: Vec<usize> = (0..4).filter(|&i| value >> (3 - i) & 1 == 0).collect();
        let all3 = |u: &[usize]| unused_bits(0, u) | unused_bits(1, u) | unused_bits(2, u);
        mask &= !match op {
            Op::Add
            | Op::Mul
            | Op::Sge
            | Op::Slt
            | Op::Flr
            | Op::Max
            | Op::Min
            | Op::Mov
            | Op::Mad => all3(&unused_dest),
            Op::Dp3 => unused_bits(0, &[3]) | unused_bits(1, &[3]),
            Op::Dph => unused_bits(0, &[3]),
            Op::Ex2 | Op::Lg2 | Op::Rcp | Op::Rsq => unused_bits(0, &[1, 2, 3]),
            Op::Mova => {
                let mut unused = vec![2, 3];
                unused.extend(unused_dest.iter().filter(|&&i| i < 2));
                unused_bits(0, &unused)
            }
            Op::Cmp => unused_bits(0, &[2, 3]),
            _ => 0,
        };
        for (i, (table, table_mask)) in self.descriptors.iter_mut().enumerate() {
            let both = mask & *table_mask;
            if value & both == *table & both {
                *table = (*table & !mask) | (value & mask);
                *table_mask |= mask;
                return Ok(i);
            }
        }
        if self.descriptors.len() == 128 {
            return Err(self.error(1, "too many operand descriptors (limit is 128)"));
        }
        self.descriptors.push((value, mask));
        Ok(self.descriptors.len() - 1)
    }

    fn format1(&mut self, op: Op, inverted_op: Option<Op>, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 3, at, "destination, source1, source2")?;
        let dest = self.destination(args[0])?;
        let s1 = self.operand(args[1], true)?;
        let s2 = self.operand(args[2], true)?;
        let inverted = inverted_op.is_some() && s1.reg < 0x20 && s2.reg >= 0x20;
        let (s1, s2) = if inverted {
            (self.narrow(args[1], 1)?, self.wide(args[2], 2)?)
        } else {
            (self.wide(args[1], 1)?, self.narrow(args[2], 2)?)
        };
        self.check_inputs(&[s1.reg, s2.reg], at)?;
        let value = mask_of(dest.swizzle)
            | source_bits(0, s1.negate, s1.swizzle)
            | source_bits(1, s2.negate, s2.swizzle);
        let desc = self.descriptor(op, value, 0xF | 0x1FF << 4 | 0x1FF << 13)? as u8;
        let (op, idx) = if inverted {
            (inverted_op.unwrap_or(op), s2.idx)
        } else {
            (op, s1.idx)
        };
        self.push(Instruction::Arith {
            op,
            dst: dest.reg as u8,
            src1: s1.reg as u8,
            src2: s2.reg as u8,
            idx,
            desc,
        });
        Ok(())
    }

    fn format1u(&mut self, op: Op, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 2, at, "destination, source1")?;
        let dest = self.destination(args[0])?;
        let s1 = self.wide(args[1], 1)?;
        let value = mask_of(dest.swizzle) | source_bits(0, s1.negate, s1.swizzle);
        let desc = self.descriptor(op, value, 0xF | 0x1FF << 4)? as u8;
        self.push(Instruction::Arith {
            op,
            dst: dest.reg as u8,
            src1: s1.reg as u8,
            src2: 0,
            idx: s1.idx,
            desc,
        });
        Ok(())
    }

    fn mova(&mut self, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 2, at, "a0.x, a0.y or a0.xy, then source1")?;
        let mask = match args[0].text.to_ascii_lowercase().as_str() {
            "a0" | "a0.x" => 0b1000,
            "a1" | "a0.y" => 0b0100,
            "a01" | "a0.xy" => 0b1100,
            other => {
                return Err(self.error(
                    args[0].column,
                    format!("invalid destination `{other}` for mova: expected a0.x, a0.y or a0.xy"),
                ))
            }
        };
        let s1 = self.wide(args[1], 1)?;
        let desc = self.descriptor(
            Op::Mova,
            mask | source_bits(0, s1.negate, s1.swizzle),
            0xF | 0x1FF << 4,
        )? as u8;
        self.push(Instruction::Arith {
            op: Op::Mova,
            dst: 0,
            src1: s1.reg as u8,
            src2: 0,
            idx: s1.idx,
            desc,
        });
        Ok(())
    }

    fn cmp(&mut self, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 4, at, "source1, x comparison, y comparison, source2")?;
        let s1 = self.wide(args[0], 1)?;
        let compare = |arg: Arg| {
            comparison(arg.text).ok_or_else(|| {
                self.error(
                    arg.column,
                    format!(
                        "invalid comparison `{}`: expected eq, ne, lt, le, gt or ge",
                        arg.text
                    ),
                )
            })
        };
        let cmpx = compare(args[1])?;
        let cmpy = compare(args[2])?;
        let s2 = self.narrow(args[3], 2)?;
        let value = source_bits(0, s1.negate, s1.swizzle) | source_bits(1, s2.negate, s2.swizzle);
        let desc = self.descriptor(Op::Cmp, value, 0x1FF << 4 | 0x1FF << 13)? as u8;
        self.push(Instruction::Cmp {
            src1: s1.reg as u8,
            src2: s2.reg as u8,
            idx: s1.idx,
            desc,
            cmpx,
            cmpy,
        });
        Ok(())
    }

    fn mad(&mut self, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 4, at, "destination, source1, source2, source3")?;
        let dest = self.destination(args[0])?;
        let s1 = self.narrow(args[1], 1)?;
        let s2 = self.operand(args[2], true)?;
        let s3 = self.operand(args[3], true)?;
        let inverted = s2.reg < 0x20 && (s3.reg >= 0x20 || (s3.idx != 0 && s2.idx == 0));
        let (s2, s3) = if inverted {
            (self.narrow(args[2], 2)?, self.wide(args[3], 3)?)
        } else {
            (self.wide(args[2], 2)?, self.narrow(args[3], 3)?)
        };
        self.check_inputs(&[s1.reg, s2.reg, s3.reg], at)?;
        let value = mask_of(dest.swizzle)
            | source_bits(0, s1.negate, s1.swizzle)
            | source_bits(1, s2.negate, s2.swizzle)
            | source_bits(2, s3.negate, s3.swizzle);
        let mut desc =
            self.descriptor(Op::Mad, value, 0xF | 0x1FF << 4 | 0x1FF << 13 | 0x1FF << 22)?;
        if desc >= 32 {
            // MAD reaches only descriptors 0-31: swap this one with the first low slot no
            // MAD uses, renumbering the instructions that used either.
            let which = (0..32)
                .find(|&w| self.mad_descriptors >> w & 1 == 0)
                .ok_or_else(|| self.error(at, "no operand descriptor below 32 left for MAD"))?;
            self.descriptors.swap(which, desc);
            for word in &mut self.code {
                let opcode = *word >> 26;
                if opcode < 0x20 || opcode & !1 == 0x2E {
                    let current = (*word & 0x7F) as usize;
                    let renumbered = if current == which {
                        desc
                    } else if current == desc {
                        which
                    } else {
                        current
                    };
                    *word = (*word & !0x7F) | renumbered as u32;
                }
            }
            desc = which;
        }
        self.mad_descriptors |= 1 << desc;
        let (op, idx) = if inverted {
            (Op::Madi, s3.idx)
        } else {
            (Op::Mad, s2.idx)
        };
        self.push(Instruction::Mad {
            op,
            dst: dest.reg as u8,
            src1: s1.reg as u8,
            src2: s2.reg as u8,
            src3: s3.reg as u8,
            idx,
            desc: desc as u8,
        });
        Ok(())
    }

    fn setemit(&mut self, args: &[Arg], at: usize) -> Result<()> {
        if args.is_empty() || args.len() > 2 {
            return Err(self.error(
                at,
                "expected a vertex id 0..2 and optional flags `prim`, `inv`",
            ));
        }
        let vertex: u8 = args[0]
            .text
            .parse()
            .ok()
            .filter(|&v: &u8| v <= 2)
            .ok_or_else(|| {
                self.error(
                    args[0].column,
                    format!("invalid vertex id `{}`: expected 0, 1 or 2", args[0].text),
                )
            })?;
        let (mut primitive, mut winding) = (false, false);
        if let Some(flags) = args.get(1) {
            for flag in flags.text.split_whitespace() {
                match flag.to_ascii_lowercase().as_str() {
                    "prim" | "primitive" => primitive = true,
                    "inv" | "invert" => winding = true,
                    other => {
                        return Err(self.error(
                            flags.column,
                            format!("unknown setemit flag `{other}`: expected prim or inv"),
                        ))
                    }
                }
            }
        }
        self.program.geometry = true;
        self.push(Instruction::SetEmit {
            vertex,
            primitive,
            winding,
        });
        Ok(())
    }

    /// A number operand of the explicit-target forms.
    fn number(&self, arg: Arg, max: u32) -> Result<u32> {
        arg.text.parse().ok().filter(|&n| n <= max).ok_or_else(|| {
            self.error(
                arg.column,
                format!("invalid number `{}`: expected 0..={max}", arg.text),
            )
        })
    }

    fn starts_with_digit(arg: &Arg) -> bool {
        arg.text.starts_with(|c: char| c.is_ascii_digit())
    }

    /// `proc` or `dst, num` of CALL, CALLC, CALLU: records a relocation for a name.
    fn call_target(&mut self, args: &[Arg], at: usize) -> Result<(u16, u8)> {
        match args {
            [target] if !Self::starts_with_digit(target) => {
                if !is_identifier(target.text) {
                    return Err(self.error(
                        target.column,
                        format!("invalid procedure name `{}`", target.text),
                    ));
                }
                self.proc_relocations.push(Relocation {
                    word: self.code.len(),
                    target: target.text.to_string(),
                    line: self.line,
                    column: target.column,
                });
                Ok((0, 0))
            }
            [dst, num] => Ok((
                self.number(*dst, 0xFFF)? as u16,
                self.number(*num, 0xFF)? as u8,
            )),
            _ => Err(self.error(
                at,
                "expected a procedure name (or a word address and a count)",
            )),
        }
    }

    fn label_target(&mut self, target: Arg) -> Result<u16> {
        if Self::starts_with_digit(&target) {
            return Ok(self.number(target, 0xFFF)? as u16);
        }
        if !is_identifier(target.text) {
            return Err(self.error(target.column, format!("invalid label `{}`", target.text)));
        }
        self.label_relocations.push(Relocation {
            word: self.code.len(),
            target: target.text.to_string(),
            line: self.line,
            column: target.column,
        });
        Ok(0)
    }

    fn call(&mut self, args: &[Arg], at: usize) -> Result<()> {
        let (dst, num) = self.call_target(args, at)?;
        self.push(Instruction::Flow {
            op: Op::Call,
            refx: false,
            refy: false,
            condop: 0,
            dst,
            num,
        });
        Ok(())
    }

    fn int_uniform(&self, arg: Arg) -> Result<u8> {
        let operand = self.operand(arg, false)?;
        if !(0x80..0x84).contains(&operand.reg) {
            return Err(self.error(
                arg.column,
                format!("invalid integer uniform `{}`: expected i0..i3", arg.text),
            ));
        }
        Ok((operand.reg - 0x80) as u8)
    }

    fn bool_uniform(&self, arg: Arg) -> Result<u8> {
        let operand = self.operand(arg, false)?;
        if !(0x88..0x98).contains(&operand.reg) {
            return Err(self.error(
                arg.column,
                format!("invalid bool uniform `{}`: expected b0..b15", arg.text),
            ));
        }
        Ok((operand.reg - 0x88) as u8)
    }

    fn for_loop(&mut self, args: &[Arg], at: usize) -> Result<()> {
        if args.is_empty() || args.len() > 2 {
            return Err(self.error(at, "expected an integer uniform (i0..i3)"));
        }
        let id = self.int_uniform(args[0])?;
        let dst = match args.get(1) {
            Some(dst) => self.number(*dst, 0xFFF)? as u16,
            None => {
                self.stack.push(Block {
                    kind: BlockKind::For,
                    pos: self.code.len(),
                });
                0
            }
        };
        self.push(Instruction::Uniform {
            op: Op::Loop,
            id,
            dst,
            num: 0,
        });
        Ok(())
    }

    /// `[!]cmp.x [&&|||] [!]cmp.y`: (refx, refy, condop).
    fn condition(&self, arg: Arg) -> Result<(bool, bool, u8)> {
        let text = arg.text;
        let bad =
            |what: &str| self.error(arg.column, format!("invalid condition `{text}`: {what}"));
        let (first, second, and) = match text.find(['&', '|']) {
            Some(p) => {
                let and = text[p..].starts_with('&');
                let symbol = if and { '&' } else { '|' };
                let rest = text[p + 1..].strip_prefix(symbol).unwrap_or(&text[p + 1..]);
                (&text[..p], Some(rest), and)
            }
            None => (text, None, false),
        };
        let term = |t: &str| -> Result<(usize, bool)> {
            let t = t.trim();
            let negations = t.len() - t.trim_start_matches('!').len();
            let which = match t.trim_start_matches('!').to_ascii_lowercase().as_str() {
                "cmp.x" => 0,
                "cmp.y" => 1,
                _ => return Err(bad("expected [!]cmp.x or [!]cmp.y, joined by && or ||")),
            };
            Ok((which, negations % 2 == 0))
        };
        let mut refs = [true, true];
        let (a, a_ref) = term(first)?;
        refs[a] = a_ref;
        let condop = match second {
            Some(second) => {
                let (b, b_ref) = term(second)?;
                if a == b {
                    return Err(bad("the same flag is tested twice"));
                }
                refs[b] = b_ref;
                if and {
                    1
                } else {
                    0
                }
            }
            None => 2 + a as u8,
        };
        Ok((refs[0], refs[1], condop))
    }

    fn format2(&mut self, name: &str, args: &[Arg], at: usize) -> Result<()> {
        let Some(&condition) = args.first() else {
            return Err(self.error(at, "missing condition"));
        };
        let (refx, refy, condop) = self.condition(condition)?;
        let rest = &args[1..];
        let (op, dst, num) = match name {
            "breakc" => {
                self.expect_args(rest, 0, at, "only a condition")?;
                (Op::Breakc, 0, 0)
            }
            "callc" => {
                let (dst, num) = self.call_target(rest, at)?;
                (Op::Callc, dst, num)
            }
            "jmpc" => {
                self.expect_args(rest, 1, at, "a condition and a label")?;
                (Op::Jmpc, self.label_target(rest[0])?, 0)
            }
            _ => match rest {
                [] => {
                    self.stack.push(Block {
                        kind: BlockKind::If { else_at: None },
                        pos: self.code.len(),
                    });
                    (Op::Ifc, 0, 0)
                }
                [dst, num] => (
                    Op::Ifc,
                    self.number(*dst, 0xFFF)? as u16,
                    self.number(*num, 0xFF)? as u8,
                ),
                _ => {
                    return Err(self.error(
                        at,
                        "ifc takes a condition (and optionally an else address and a count)",
                    ))
                }
            },
        };
        self.push(Instruction::Flow {
            op,
            refx,
            refy,
            condop,
            dst,
            num,
        });
        Ok(())
    }

    fn format3(&mut self, name: &str, args: &[Arg], at: usize) -> Result<()> {
        let Some(&first) = args.first() else {
            return Err(self.error(at, "missing bool uniform"));
        };
        let mut flag = first;
        let mut invert = false;
        if let Some(rest) = first.text.strip_prefix('!') {
            if name != "jmpu" {
                return Err(self.error(
                    first.column,
                    format!("{name} cannot invert its condition (only jmpu can)"),
                ));
            }
            invert = true;
            flag = Arg {
                text: rest.trim_start(),
                column: first.column + 1,
            };
        }
        let id = self.bool_uniform(flag)?;
        let rest = &args[1..];
        let (op, dst, num) = match name {
            "callu" => {
                let (dst, num) = self.call_target(rest, at)?;
                (Op::Callu, dst, num)
            }
            "jmpu" => {
                self.expect_args(rest, 1, at, "a bool uniform and a label")?;
                (Op::Jmpu, self.label_target(rest[0])?, invert as u8)
            }
            _ => match rest {
                [] => {
                    self.stack.push(Block {
                        kind: BlockKind::If { else_at: None },
                        pos: self.code.len(),
                    });
                    (Op::Ifu, 0, 0)
                }
                [dst, num] => (
                    Op::Ifu,
                    self.number(*dst, 0xFFF)? as u16,
                    self.number(*num, 0xFF)? as u8,
                ),
                _ => {
                    return Err(self.error(
                        at,
                        "ifu takes a bool uniform (and optionally an else address and a count)",
                    ))
                }
            },
        };
        self.push(Instruction::Uniform { op, id, dst, num });
        Ok(())
    }

    fn padding_nop(&mut self, at: usize) {
        if self.options.auto_nop {
            self.push(Instruction::Zero { op: Op::Nop });
        } else {
            let warning = self.diagnostic(at, Severity::Warning, "a padding NOP is required here");
            self.warnings.push(warning);
        }
    }

    /// Whether the last word is one a block must not end on.
    fn ends_badly(&self, block: &BlockKind) -> bool {
        let Some(&last) = self.code.last() else {
            return false;
        };
        let opcode = last >> 26;
        matches!(opcode, 0x2C | 0x2D | 0x24 | 0x25 | 0x26)
            || (matches!(block, BlockKind::For) && matches!(opcode, 0x20 | 0x23))
    }

    fn directive(
        &mut self,
        name: &str,
        mnemonic: Arg,
        operands: &str,
        column: usize,
    ) -> Result<()> {
        let at = mnemonic.column;
        let args = || -> Vec<Arg> {
            if operands.trim().is_empty() {
                Vec::new()
            } else {
                split(operands, column, ',')
            }
        };
        let words = || words_of(operands, column);
        match name {
            "proc" => {
                let args = args();
                self.expect_args(&args, 1, at, "a procedure name")?;
                let proc_name = args[0].text.to_string();
                if !is_identifier(&proc_name) {
                    return Err(self.error(
                        args[0].column,
                        format!("invalid procedure name `{proc_name}`"),
                    ));
                }
                if self.procs.contains_key(&proc_name) {
                    return Err(self.error(
                        args[0].column,
                        format!("procedure `{proc_name}` already exists"),
                    ));
                }
                self.stack.push(Block {
                    kind: BlockKind::Proc(proc_name),
                    pos: self.code.len(),
                });
            }
            "else" => {
                self.expect_args(&args(), 0, at, "nothing")?;
                let Some(Block {
                    kind: BlockKind::If { else_at },
                    pos,
                }) = self.stack.last().cloned()
                else {
                    return Err(self.error(at, ".else without an open ifc/ifu block"));
                };
                if else_at.is_some() {
                    return Err(self.error(at, "a second .else in one block"));
                }
                if self.last_was_end {
                    self.padding_nop(at);
                    self.last_was_end = false;
                } else if self.ends_badly(&BlockKind::If { else_at: None })
                    || self.code.len() - pos < 2
                {
                    self.padding_nop(at);
                }
                let here = self.code.len();
                if let Some(Block {
                    kind: BlockKind::If { else_at },
                    ..
                }) = self.stack.last_mut()
                {
                    *else_at = Some(here);
                }
                self.code[pos] = (self.code[pos] & !(0xFFF << 10)) | (here as u32) << 10;
            }
            "end" => {
                self.expect_args(&args(), 0, at, "nothing")?;
                let block = self
                    .stack
                    .pop()
                    .ok_or_else(|| self.error(at, ".end without an open block"))?;
                let is_array = matches!(block.kind, BlockKind::Array { .. });
                if !is_array && self.last_was_end {
                    self.padding_nop(at);
                    self.last_was_end = false;
                } else if !is_array && !self.code.is_empty() {
                    let minimum = if matches!(block.kind, BlockKind::Proc(_)) {
                        1
                    } else {
                        2
                    };
                    if self.ends_badly(&block.kind) || self.code.len() - block.pos < minimum {
                        self.padding_nop(at);
                    }
                }
                let here = self.code.len();
                match block.kind {
                    BlockKind::Proc(proc_name) => {
                        self.procs.insert(proc_name, (block.pos, here - block.pos));
                    }
                    BlockKind::For => {
                        let word = &mut self.code[block.pos];
                        *word = (*word & !(0xFFF << 10)) | ((here - 1) as u32) << 10;
                        self.last_was_end = true;
                    }
                    BlockKind::If { else_at } => {
                        let word = &mut self.code[block.pos];
                        match else_at {
                            None => *word = (*word & !(0xFFF << 10)) | (here as u32) << 10,
                            Some(else_at) => *word = (*word & !0x3FF) | (here - else_at) as u32,
                        }
                        self.last_was_end = true;
                    }
                    BlockKind::Array { name, size } => self.end_array(name, size, at)?,
                }
            }
            "alias" => {
                let words = words();
                self.expect_args(&words, 2, at, "a name and a register")?;
                let alias_name = words[0].text;
                if !is_identifier(alias_name) {
                    return Err(self.error(
                        words[0].column,
                        format!("invalid alias name `{alias_name}`"),
                    ));
                }
                let register_like = alias_name.len() > 1
                    && "ovrcib".contains(
                        alias_name
                            .chars()
                            .next()
                            .unwrap_or(' ')
                            .to_ascii_lowercase(),
                    )
                    && alias_name[1..].starts_with(|c: char| c.is_ascii_digit());
                if register_like {
                    return Err(self.error(words[0].column, "cannot redefine a register"));
                }
                let operand = self.operand(words[1], false)?;
                self.define(words[0], operand.reg, operand.negate, operand.swizzle)?;
            }
            "fvec" | "ivec" | "bool" => {
                for arg in args() {
                    let (uniform_name, size) = match arg.text.split_once('[') {
                        Some((n, s)) => {
                            let size: u32 = s
                                .trim_end_matches(']')
                                .trim()
                                .parse()
                                .ok()
                                .filter(|&s| s >= 1)
                                .ok_or_else(|| {
                                    self.error(
                                        arg.column,
                                        format!("invalid uniform size in `{}`", arg.text),
                                    )
                                })?;
                            (n.trim(), size)
                        }
                        None => (arg.text, 1),
                    };
                    let allocator = match name {
                        "fvec" => &mut self.floats,
                        "ivec" => &mut self.ints,
                        _ => &mut self.bools,
                    };
                    let first = allocator.global(size).ok_or_else(|| {
                        self.error(
                            arg.column,
                            format!("not enough uniform space for `{}`", arg.text),
                        )
                    })?;
                    let named = Arg {
                        text: uniform_name,
                        column: arg.column,
                    };
                    self.define(named, first, false, IDENTITY)?;
                    if !uniform_name.starts_with('_') {
                        self.program.uniforms.push(Uniform {
                            name: uniform_name.to_string(),
                            first: first as u8,
                            last: (first + size - 1) as u8,
                        });
                    }
                }
            }
            "constf" | "consti" | "setf" | "seti" => {
                let (target, values) = self.parenthesised(operands, column)?;
                let register = if name.starts_with("set") {
                    let operand = self.operand(target, false)?;
                    let valid = if name == "setf" {
                        0x20..0x80
                    } else {
                        0x80..0x84
                    };
                    if !valid.contains(&operand.reg) {
                        return Err(self.error(
                            target.column,
                            format!("invalid register `{}` for .{name}", target.text),
                        ));
                    }
                    operand.reg
                } else {
                    let allocator = if name == "constf" {
                        &mut self.floats
                    } else {
                        &mut self.ints
                    };
                    let register = allocator.local(1).ok_or_else(|| {
                        self.error(
                            target.column,
                            format!("not enough space for constant `{}`", target.text),
                        )
                    })?;
                    self.define(target, register, false, IDENTITY)?;
                    register
                };
                if name.ends_with('f') {
                    let value = self.floats4(&values)?;
                    self.program.constants.push(Constant::Float {
                        index: (register - 0x20) as u8,
                        value,
                    });
                } else {
                    let mut value = [0u8; 4];
                    for (slot, arg) in value.iter_mut().zip(&values) {
                        let n: i64 = arg.text.parse().map_err(|_| {
                            self.error(arg.column, format!("invalid integer `{}`", arg.text))
                        })?;
                        *slot = (n & 0xFF) as u8;
                    }
                    self.program.constants.push(Constant::Int {
                        index: (register - 0x80) as u8,
                        value,
                    });
                }
            }
            "constfa" => self.constfa(operands, column, at)?,
            "setb" => {
                let words = words();
                self.expect_args(&words, 2, at, "a bool uniform and true/false")?;
                let index = self.bool_uniform(words[0])?;
                let value = match words[1].text.to_ascii_lowercase().as_str() {
                    "true" | "on" | "1" => true,
                    "false" | "off" | "0" => false,
                    other => {
                        return Err(self.error(
                            words[1].column,
                            format!("invalid bool `{other}`: expected true or false"),
                        ))
                    }
                };
                self.program.constants.push(Constant::Bool { index, value });
            }
            "in" => {
                let words = words();
                if words.is_empty() || words.len() > 2 {
                    return Err(self.error(at, "expected a name and optionally an input register"));
                }
                let register = match words.get(1) {
                    Some(arg) => {
                        let operand = self.operand(*arg, false)?;
                        if operand.reg >= 0x10 {
                            return Err(self.error(
                                arg.column,
                                format!("invalid input register `{}`", arg.text),
                            ));
                        }
                        operand.reg
                    }
                    None => (0..16)
                        .find(|&n| self.used_inputs >> n & 1 == 0)
                        .ok_or_else(|| self.error(at, "too many inputs"))?,
                };
                self.used_inputs |= 1 << register;
                self.define(words[0], register, false, IDENTITY)?;
                self.program.uniforms.push(Uniform {
                    name: words[0].text.to_string(),
                    first: register as u8,
                    last: register as u8,
                });
            }
            "out" => self.out(&words(), at)?,
            "entry" => {
                let words = words();
                self.expect_args(&words, 1, at, "a procedure name")?;
                self.entry_name = words[0].text.to_string();
            }
            "gsh" => self.program.geometry = true,
            "nodvle" => {}
            _ => return Err(self.error(at, format!("unknown directive `{}`", mnemonic.text))),
        }
        Ok(())
    }

    fn define(&mut self, name: Arg, reg: u32, negate: bool, swizzle: [u8; 4]) -> Result<()> {
        if !is_identifier(name.text) {
            return Err(self.error(name.column, format!("invalid name `{}`", name.text)));
        }
        if self.aliases.contains_key(name.text) {
            return Err(self.error(
                name.column,
                format!("identifier already used: `{}`", name.text),
            ));
        }
        self.aliases.insert(
            name.text.to_string(),
            Alias {
                reg,
                negate,
                swizzle,
            },
        );
        Ok(())
    }

    /// `name(a, b, c, d)`.
    fn parenthesised<'a>(
        &self,
        operands: &'a str,
        column: usize,
    ) -> Result<(Arg<'a>, Vec<Arg<'a>>)> {
        let open = operands
            .find('(')
            .ok_or_else(|| self.error(column, "expected name(x, y, z, w)"))?;
        let close = operands
            .rfind(')')
            .filter(|&c| c > open)
            .ok_or_else(|| self.error(column + open, "missing `)`"))?;
        let name = operands[..open].trim();
        let name_column = column + operands[..open].len() - operands[..open].trim_start().len();
        let values = split(&operands[open + 1..close], column + open + 1, ',');
        if values.len() != 4 {
            return Err(self.error(column + open, "expected four values"));
        }
        Ok((
            Arg {
                text: name,
                column: name_column,
            },
            values,
        ))
    }

    /// Four `.constf` numbers as float24 holds them (the SHBIN stores float24).
    fn floats4(&self, values: &[Arg]) -> Result<[f32; 4]> {
        let mut out = [0.0f32; 4];
        for (slot, arg) in out.iter_mut().zip(values) {
            let v: f64 = arg
                .text
                .parse()
                .map_err(|_| self.error(arg.column, format!("invalid number `{}`", arg.text)))?;
            *slot = quantize_f24(v as f32);
        }
        Ok(out)
    }

    fn constfa(&mut self, operands: &str, column: usize, at: usize) -> Result<()> {
        let column = column + (operands.len() - operands.trim_start().len());
        let in_array = matches!(
            self.stack.last(),
            Some(Block {
                kind: BlockKind::Array { .. },
                ..
            })
        );
        if !in_array {
            let text = operands.trim();
            let (name, size) = text
                .split_once('[')
                .ok_or_else(|| self.error(column, "expected name[size] or name[]"))?;
            let size = size.trim_end_matches(']').trim();
            let size = if size.is_empty() {
                None
            } else {
                Some(
                    size.parse()
                        .ok()
                        .filter(|&s: &usize| (1..=96).contains(&s))
                        .ok_or_else(|| {
                            self.error(
                                column,
                                format!("invalid array size `{size}`: expected 1..=96"),
                            )
                        })?,
                )
            };
            self.stack.push(Block {
                kind: BlockKind::Array {
                    name: name.trim().to_string(),
                    size,
                },
                pos: self.code.len(),
            });
            self.array.clear();
        } else {
            let text = operands.trim();
            let inner = text
                .strip_prefix('(')
                .and_then(|t| t.strip_suffix(')'))
                .ok_or_else(|| self.error(column, "expected (x, y, z, w)"))?;
            let values = split(inner, column + 1, ',');
            if values.len() != 4 {
                return Err(self.error(at, "expected four values"));
            }
            let value = self.floats4(&values)?;
            if self.array.len() == 96 {
                return Err(self.error(column, "an array holds at most 96 vectors"));
            }
            self.array.push(value);
        }
        Ok(())
    }

    fn end_array(&mut self, name: String, size: Option<usize>, at: usize) -> Result<()> {
        let mut values = std::mem::take(&mut self.array);
        if let Some(size) = size {
            if values.len() > size {
                return Err(self.error(
                    at,
                    format!("too many elements in `{name}`: expected {size}"),
                ));
            }
            values.resize(size, [0.0; 4]);
        }
        if values.is_empty() {
            return Err(self.error(at, format!("no elements in array `{name}`")));
        }
        let first = self
            .floats
            .local(values.len() as u32)
            .ok_or_else(|| self.error(at, format!("not enough space for array `{name}`")))?;
        for (i, value) in values.into_iter().enumerate() {
            self.program.constants.push(Constant::Float {
                index: (first - 0x20) as u8 + i as u8,
                value,
            });
        }
        self.define(
            Arg {
                text: &name,
                column: at,
            },
            first,
            false,
            IDENTITY,
        )
    }

    /// `.out name type [register]`.
    fn out(&mut self, words: &[Arg], at: usize) -> Result<()> {
        if words.len() < 2 || words.len() > 3 {
            return Err(self.error(at, "expected .out NAME TYPE [REGISTER]"));
        }
        let (semantic_text, type_mask) = match words[1].text.split_once('.') {
            Some((t, m)) => (t, Some(m)),
            None => (words[1].text, None),
        };
        let semantic = output_semantic(semantic_text).ok_or_else(|| {
            self.error(words[1].column, format!("invalid output type `{semantic_text}`: expected pos, nquat, clr/color, tcoord0, tcoord0w, tcoord1, tcoord2, view or dummy"))
        })?;
        let (register, swizzle) = match words.get(2) {
            Some(arg) => {
                let operand = self.operand(*arg, false)?;
                if operand.reg >= 0x10 {
                    return Err(self.error(
                        arg.column,
                        format!("invalid output register `{}`: expected o0..o15", arg.text),
                    ));
                }
                (operand.reg, operand.swizzle)
            }
            None => {
                let swizzle = match type_mask {
                    Some(m) => parse_swizzle(m).ok_or_else(|| {
                        self.error(words[1].column, format!("invalid output mask `{m}`"))
                    })?,
                    None => IDENTITY,
                };
                let register = (0..16)
                    .find(|&n| self.used_outputs >> n & 1 == 0)
                    .ok_or_else(|| self.error(at, "too many outputs"))?;
                (register, swizzle)
            }
        };
        // Output-table masks count x as bit 0.
        let mask = swizzle.iter().fold(0u8, |m, &c| m | 1 << c);
        self.used_outputs |= 1 << register;
        self.program.outputs.push(Output {
            semantic,
            register: register as u8,
            mask,
        });
        if words[0].text != "-" {
            self.define(words[0], register, false, IDENTITY)?;
        }
        Ok(())
    }

    fn finish(&mut self) -> Result<Program> {
        for relocation in std::mem::take(&mut self.proc_relocations) {
            let Some(&(pos, size)) = self.procs.get(&relocation.target) else {
                self.line = relocation.line;
                return Err(self.error(
                    relocation.column,
                    format!("procedure `{}` is undefined", relocation.target),
                ));
            };
            let word = &mut self.code[relocation.word];
            *word = (*word & !0x3F_FFFF) | (pos as u32) << 10 | size as u32 & 0xFF;
        }
        for relocation in std::mem::take(&mut self.label_relocations) {
            let Some(&pos) = self.labels.get(&relocation.target) else {
                self.line = relocation.line;
                return Err(self.error(
                    relocation.column,
                    format!("label `{}` is undefined", relocation.target),
                ));
            };
            let word = &mut self.code[relocation.word];
            *word = (*word & !(0xFFF << 10)) | (pos as u32) << 10;
        }
        let Some(&(entry, size)) = self.procs.get(&self.entry_name) else {
            self.line = 1;
            return Err(self.error(
                1,
                format!(
                    "entry point `{}` is undefined: expected .proc {}",
                    self.entry_name, self.entry_name
                ),
            ));
        };
        if self.code.len() > 4096 {
            return Err(self.error(
                1,
                format!("{} instructions: code memory holds 4096", self.code.len()),
            ));
        }
        if !self.program.geometry && self.code.len() > 512 {
            return Err(self.error(
                1,
                format!(
                    "{} instructions: a vertex shader holds at most 512",
                    self.code.len()
                ),
            ));
        }
        let mut program = std::mem::take(&mut self.program);
        program.code = std::mem::take(&mut self.code);
        program.descriptors = self.descriptors.iter().map(|&(value, _)| value).collect();
        program.entry = entry as u32;
        program.entry_end = (entry + size) as u32;
        Ok(program)
    }
}
