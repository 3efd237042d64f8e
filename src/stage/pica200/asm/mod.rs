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

mod directives;
mod instructions;
mod operands;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::decode::PicaWord;
use super::opcodes::{by_mnemonic, by_opcode, Format, PicaOp};
use super::PicaProgram;
use crate::emu::isa::asm::{AsmErrors, Diagnostic, Severity};

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
pub struct PicaAssembly {
    pub program: PicaProgram,
    pub warnings: Vec<Diagnostic>,
}

/// Assembles picasso source with picasso's defaults; `file` names it in messages.
pub fn assemble(source: &str, file: &Path) -> std::result::Result<PicaAssembly, AsmErrors> {
    assemble_with(source, file, Options::default())
}

/// Assembles picasso source with `options`; `file` names it in messages.
pub fn assemble_with(
    source: &str,
    file: &Path,
    options: Options,
) -> std::result::Result<PicaAssembly, AsmErrors> {
    let mut assembler = PicaAssembler::new(file, options);
    let result = assembler.run(source);
    match result {
        Ok(program) => Ok(PicaAssembly {
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

struct PicaAssembler {
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
    program: PicaProgram,
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

/// The comma-separated operands of a statement (none when `text` is blank).
fn operand_list(text: &str, column: usize) -> Vec<Arg<'_>> {
    if text.trim().is_empty() {
        Vec::new()
    } else {
        split(text, column, ',')
    }
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

impl PicaAssembler {
    fn new(file: &Path, options: Options) -> PicaAssembler {
        PicaAssembler {
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
            program: PicaProgram::default(),
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

    fn run(&mut self, source: &str) -> Result<PicaProgram> {
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
        let args = operand_list(operands, column);
        let at = mnemonic.column;
        let Some(row) = by_mnemonic(&name) else {
            return Err(self.error(at, format!("unknown instruction `{}`", mnemonic.text)));
        };
        match (row.format, row.op) {
            (Format::Zero, op) => {
                self.expect_args(&args, 0, at, "no operands")?;
                self.push(PicaWord::Zero { op });
            }
            // by_mnemonic names plain rows; the handlers pick the inverted forms.
            (Format::One | Format::OneI, _) => self.format1(row, &args, at)?,
            (Format::OneU, op) => self.format1u(op, &args, at)?,
            (Format::Mova, _) => self.mova(&args, at)?,
            (Format::OneC, _) => self.cmp(&args, at)?,
            (Format::Five | Format::FiveI, _) => self.mad(row, &args, at)?,
            (Format::Four, _) => self.setemit(&args, at)?,
            (Format::Two, PicaOp::Call) => self.call(&args, at)?,
            (Format::Two, op) => self.format2(op, &args, at)?,
            (Format::Three, PicaOp::Loop) => self.for_loop(&args, at)?,
            (Format::Three, op) => self.format3(op, &args, at)?,
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

    fn push(&mut self, instruction: PicaWord) {
        self.code.push(instruction.encode());
    }

    fn padding_nop(&mut self, at: usize) {
        if self.options.auto_nop {
            self.push(PicaWord::Zero { op: PicaOp::Nop });
        } else {
            let warning = self.diagnostic(at, Severity::Warning, "a padding NOP is required here");
            self.warnings.push(warning);
        }
    }

    /// Whether the last word is one a block must not end on.
    fn ends_badly(&self, block: &BlockKind) -> bool {
        let Some(row) = self
            .code
            .last()
            .and_then(|&word| by_opcode((word >> 26) as u8))
        else {
            return false;
        };
        matches!(
            row.op,
            PicaOp::Jmpc | PicaOp::Jmpu | PicaOp::Call | PicaOp::Callc | PicaOp::Callu
        ) || (matches!(block, BlockKind::For) && matches!(row.op, PicaOp::Break | PicaOp::Breakc))
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

    fn finish(&mut self) -> Result<PicaProgram> {
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
