//! The `.shdr` assembler (spec isa_and_formats §4).
//!
//! It reads the original syntax and produces, for every program the original
//! `theia_compile` assembled correctly, the same words and the same `Instructions.mem` text.
//! Where the original silently dropped or corrupted code (its quirks 1–6), this one reports
//! an error instead; it never drops code.
//!
//! # Syntax
//!
//! * One statement a line: `OP operands…`, `NAME:` (a label: the address of the next
//!   statement), or a directive. `//` starts a comment. Blank lines, tabs and CRLF are fine;
//!   the last line needs no newline. Names are case-sensitive.
//! * `ENTRYPOINT_ADRR_<ROUTINE>:` in column 1 points that entry of the 12-entry table at the
//!   next instruction; entries not mentioned keep their default ROM routine.
//! * Operands: register names (`R1`, `CREG_TEXTURE_COLOR`, …), `VOID` (= 0),
//!   `@0x7B` / `@123` (a data address without a name), labels and `ENTRYPOINT_ADRR_<X>`
//!   (code addresses), `RT_TRUE`/`RT_FALSE` (first operand of RETURN or NOP),
//!   `SWIZZLE_<XYZ>` (second operand of SWIZZLE3D) and immediates.
//! * Immediates (32 bits): `32'h1F40000` (the original form), `0x1F40000`, decimal
//!   integers (`3`, `-1`: raw two's-complement bits, **not** fixed point), and decimal
//!   fractions (`0.2`, `-1.5`, `500.0`: converted to Q15.17, rounded to the nearest
//!   representable value, ties to even; `0.2` → `32'h6666`, `0.9` → `32'h1CCCD`, where the
//!   hand-computed examples truncate to `32'h1CCCC`). A jump target may also be a number
//!   (an absolute code address: `CALL 0x009D`).
//! * Shapes (from the opcode table): `OP D S1 S2`; `OP D S1 [S2]`; `OP D [S1 S2]`;
//!   `Jcc TARGET S1 S2`; `JMP|CALL TARGET [VOID VOID | IMM]`; `SETX|SETY|SETZ|RET D IMM`;
//!   `SWIZZLE3D D SWIZZLE_xxx|IMM`; `RETURN RT_TRUE|RT_FALSE` (or `RETURN D IMM`); `NOP`,
//!   `NOP RT_FALSE`, `NOP RT_TRUE` or `NOP D S1 S2`. Operands the hardware ignores are
//!   encoded as written.
//! * Directives (ours): `.word 0x…` emits any 64-bit word as it is; `.entry
//!   ENTRYPOINT_ADRR_<X> VALUE` sets a table entry to an address (e.g. another ROM routine) or
//!   to a full 64-bit table word.
//!
//! User programs place the k-th instruction at 0x800C + k (IMEM word 12 + k); ROM mode
//! ([`assemble_rom`]) places it at k, has no entry table, and also knows the ROM's own
//! immediates `TRUE` (1), `FALSE` (0) and `ONE` (0x20000, 1.0).

use std::collections::{BTreeMap, HashMap};
use std::fmt::{self, Write as _};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use fixed::types::I15F17;

use super::encoding::Word;
use super::instr::Instr;
use super::opcodes::{Hardware, Opcode, Shape};
use super::registers::{
    core_writable, register_address, swizzle_code, EntryPoint, ENTRY_TABLE_LEN, HARDWARE_SWIZZLES,
    IMEM_WORDS, SWIZZLES, USER_CODE_BIT, USER_CODE_START,
};

/// User instructions IMEM can hold after the entry table: 129 − 12.
pub const MAX_USER_INSTRUCTIONS: usize = IMEM_WORDS - ENTRY_TABLE_LEN;

/// ROM addresses have bit 15 clear.
const MAX_ROM_WORDS: usize = USER_CODE_BIT as usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

/// A message about a place in the source, shown as `file:line:col: error: message`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub file: PathBuf,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters (a tab counts as one).
    pub column: usize,
    pub severity: Severity,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let severity = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{}:{}:{}: {severity}: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

/// Why a source did not assemble: every error found (in source order), plus the warnings.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct AsmErrors {
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
}

impl fmt::Display for AsmErrors {
    /// One error a line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.errors.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

/// An assembled user program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assembly {
    /// IMEM words 0..: the 12-entry table, then the code (ready for `RenderOptions::imem`).
    pub imem: Vec<Word>,
    /// What the original hardware would not do as written (the program still assembles).
    pub warnings: Vec<Diagnostic>,
    /// Every label with its code address (entry labels included).
    pub labels: BTreeMap<String, u16>,
    /// The 1-based source line of each user instruction (IMEM word 12 + k).
    pub lines: Vec<usize>,
    /// Each instruction's first four tokens as `Instructions.mem` comments show them.
    texts: Vec<String>,
}

impl Assembly {
    /// The entry-point table (IMEM words 0..11).
    pub fn entry_table(&self) -> &[Word] {
        &self.imem[..ENTRY_TABLE_LEN]
    }

    /// The user code (IMEM words 12..), starting at 0x800C.
    pub fn code(&self) -> &[Word] {
        &self.imem[ENTRY_TABLE_LEN..]
    }

    /// The `Instructions.mem` text the original assembler writes (spec §4.4): the word count
    /// in decimal (which the test bench reads as hex), the commented table, and one line per
    /// instruction with its IMEM address and its first four source tokens. LF line ends.
    pub fn instructions_mem(&self) -> String {
        let mut out = format!("{} //Number of ioctects in file\n", self.imem.len() * 2);
        out.push_str("//--------------------------------------\n");
        out.push_str("//Subroutine Entry Point Table\n");
        for (entry, word) in EntryPoint::ALL.iter().zip(&self.imem) {
            let (high, low) = word.words();
            let _ = writeln!(out, "{high:08X} {low:08X}\t//{}", entry.label());
        }
        out.push_str("//--------------------------------------\n");
        for (k, (word, text)) in self.code().iter().zip(&self.texts).enumerate() {
            let (high, low) = word.words();
            let index = ENTRY_TABLE_LEN + k;
            let ip = USER_CODE_START as usize + k;
            let _ = writeln!(
                out,
                "{high:08X} {low:08X}\t\t//  IP {ip:06X} ({index}): {text}"
            );
        }
        out
    }
}

/// An assembled ROM image (address 0..).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RomAssembly {
    pub words: Vec<Word>,
    pub warnings: Vec<Diagnostic>,
    pub labels: BTreeMap<String, u16>,
    /// The 1-based source line of each word.
    pub lines: Vec<usize>,
}

/// Assembles a user program: entry table plus code for IMEM.
pub fn assemble(source: &str, file: &Path) -> Result<Assembly, AsmErrors> {
    let out = Assembler::new(Mode::User, file).run(source)?;
    let mut imem: Vec<Word> = out.entries.to_vec();
    imem.extend(&out.words);
    Ok(Assembly {
        imem,
        warnings: out.warnings,
        labels: out.labels,
        lines: out.lines,
        texts: out.texts,
    })
}

/// Assembles microcode for the ROM: the k-th instruction at address k, labels are ROM
/// addresses, no entry table. An `ENTRYPOINT_ADRR_<X>:` label must sit at that routine's
/// default address (the control unit's table and ROM MAIN's CALLs use those addresses).
pub fn assemble_rom(source: &str, file: &Path) -> Result<RomAssembly, AsmErrors> {
    let out = Assembler::new(Mode::Rom, file).run(source)?;
    Ok(RomAssembly {
        words: out.words,
        warnings: out.warnings,
        labels: out.labels,
        lines: out.lines,
    })
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    User,
    Rom,
}

impl Mode {
    /// The code address of the statement with this index.
    fn address(self, index: usize) -> u16 {
        match self {
            Mode::User => USER_CODE_START.wrapping_add(index as u16),
            Mode::Rom => index as u16,
        }
    }
}

/// A whitespace-separated word of source and its 1-based column.
#[derive(Clone, Copy, Debug)]
struct Token<'a> {
    text: &'a str,
    column: usize,
}

/// An instruction or `.word` line, after pass 1.
struct Statement<'a> {
    line: usize,
    tokens: Vec<Token<'a>>,
}

struct LabelDef {
    address: u16,
    line: usize,
}

/// How an entry of the table was set.
#[derive(Clone, Copy)]
enum EntrySetting<'a> {
    /// `ENTRYPOINT_ADRR_X:` before the instruction at this address.
    Label(u16),
    /// `.entry ENTRYPOINT_ADRR_X VALUE`.
    Value(Token<'a>),
}

#[derive(Clone, Copy)]
struct EntryDef<'a> {
    setting: EntrySetting<'a>,
    line: usize,
}

struct Output {
    entries: [Word; ENTRY_TABLE_LEN],
    words: Vec<Word>,
    warnings: Vec<Diagnostic>,
    labels: BTreeMap<String, u16>,
    lines: Vec<usize>,
    texts: Vec<String>,
}

/// A parsed number literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Number {
    /// `32'h…`, `0x…` or decimal: exact integer.
    Integer(i128),
    /// A decimal fraction, already converted to Q15.17 bits.
    Fixed(u32),
}

struct Assembler<'a> {
    mode: Mode,
    file: &'a Path,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    labels: HashMap<&'a str, LabelDef>,
    entries: [Option<EntryDef<'a>>; ENTRY_TABLE_LEN],
}

impl<'a> Assembler<'a> {
    fn new(mode: Mode, file: &'a Path) -> Self {
        Assembler {
            mode,
            file,
            errors: Vec::new(),
            warnings: Vec::new(),
            labels: HashMap::new(),
            entries: Default::default(),
        }
    }

    fn diagnostic(
        &self,
        severity: Severity,
        line: usize,
        column: usize,
        message: String,
    ) -> Diagnostic {
        Diagnostic {
            file: self.file.to_path_buf(),
            line,
            column,
            severity,
            message,
        }
    }

    fn error(&mut self, line: usize, column: usize, message: impl Into<String>) {
        let d = self.diagnostic(Severity::Error, line, column, message.into());
        self.errors.push(d);
    }

    fn warn(&mut self, line: usize, column: usize, message: impl Into<String>) {
        let d = self.diagnostic(Severity::Warning, line, column, message.into());
        self.warnings.push(d);
    }

    fn run(mut self, source: &'a str) -> Result<Output, AsmErrors> {
        let statements = self.pass1(source);
        self.check_capacity(&statements);
        let entries = self.entry_table();
        let mut words = Vec::with_capacity(statements.len());
        let mut lines = Vec::with_capacity(statements.len());
        let mut texts = Vec::with_capacity(statements.len());
        for statement in &statements {
            let word = self.encode(statement).map_or(Word::default(), Instr::word);
            words.push(word);
            lines.push(statement.line);
            let text: Vec<&str> = (0..4)
                .map(|i| statement.tokens.get(i).map_or("", |t| t.text))
                .collect();
            texts.push(text.join(" "));
        }
        self.errors.sort_by_key(|d| (d.line, d.column));
        self.warnings.sort_by_key(|d| (d.line, d.column));
        if !self.errors.is_empty() {
            return Err(AsmErrors {
                errors: self.errors,
                warnings: self.warnings,
            });
        }
        let mut labels: BTreeMap<String, u16> = self
            .labels
            .iter()
            .map(|(name, def)| (name.to_string(), def.address))
            .collect();
        for entry in EntryPoint::ALL {
            if let Some(EntryDef {
                setting: EntrySetting::Label(address),
                ..
            }) = self.entries[entry as usize]
            {
                labels.insert(entry.label(), address);
            }
        }
        Ok(Output {
            entries,
            words,
            warnings: self.warnings,
            labels,
            lines,
            texts,
        })
    }

    /// Pass 1: splits lines into labels, directives and statements, and gives every label
    /// the address of the statement that follows it.
    fn pass1(&mut self, source: &'a str) -> Vec<Statement<'a>> {
        let mut statements = Vec::new();
        // Labels still waiting for their statement, with their line.
        let mut pending: Vec<(Token<'a>, usize)> = Vec::new();
        for (index, raw) in source.lines().enumerate() {
            let line = index + 1;
            let (code, comment) = match raw.find("//") {
                Some(at) => (&raw[..at], Some(at)),
                None => (raw, None),
            };
            let mut tokens = tokenize(code);
            if tokens.is_empty() {
                continue;
            }
            let mut label = None;
            if tokens[0].text.len() > 1 && tokens[0].text.ends_with(':') {
                let token = tokens.remove(0);
                label = Some(Token {
                    text: &token.text[..token.text.len() - 1],
                    column: token.column,
                });
            }
            for token in &tokens {
                if token.text.contains(':') {
                    self.error(
                        line,
                        token.column,
                        format!(
                            "unexpected `:` in `{}`: a label is `NAME:` at the start of its own line",
                            token.text
                        ),
                    );
                }
            }
            if let Some(label) = label {
                if let Some(first) = tokens.first() {
                    self.error(
                        line,
                        first.column,
                        "an instruction on the same line as a label: the original assembler \
                         drops it; put it on the next line",
                    );
                }
                self.define_label(label, line, self.mode.address(statements.len()));
                pending.push((label, line));
            } else if let Some(at) = comment {
                if colon_after_non_blank(raw, at) {
                    let column = raw[..at].chars().count() + 1;
                    self.error(
                        line,
                        column,
                        "a colon in this comment makes the original assembler treat the line as \
                         a label and drop the instruction; remove the colon",
                    );
                }
            }
            if tokens.is_empty() {
                continue;
            }
            if tokens[0].text == ".entry" {
                self.entry_directive(&tokens, line);
                continue;
            }
            pending.clear();
            statements.push(Statement { line, tokens });
        }
        for (label, line) in pending {
            if EntryPoint::from_label(label.text).is_some() {
                self.error(
                    line,
                    label.column,
                    format!(
                        "`{}` marks no instruction: the routine would start in unloaded memory",
                        label.text
                    ),
                );
            } else {
                self.warn(
                    line,
                    label.column,
                    format!(
                        "label `{}` marks no instruction: a jump to it runs unloaded memory, \
                         where the core hangs",
                        label.text
                    ),
                );
            }
        }
        statements
    }

    fn define_label(&mut self, label: Token<'a>, line: usize, address: u16) {
        let name = label.text;
        if name.starts_with("ENTRYPOINT_ADRR_") {
            let Some(entry) = EntryPoint::from_label(name) else {
                self.error(line, label.column, unknown_entry_message(name));
                return;
            };
            if label.column != 1 {
                self.error(
                    line,
                    label.column,
                    format!(
                        "`{name}:` must start in column 1: the original assembler takes an \
                         indented entry label for an ordinary label and leaves the entry at \
                         its ROM routine"
                    ),
                );
                return;
            }
            if self.mode == Mode::Rom && address != entry.default_address() {
                self.error(
                    line,
                    label.column,
                    format!(
                        "ROM routine {} must start at its default address {} (the entry \
                         table and ROM MAIN's CALLs use it), but this label is at {address}",
                        entry.name(),
                        entry.default_address()
                    ),
                );
                return;
            }
            self.set_entry(entry, EntrySetting::Label(address), line, label.column);
            return;
        }
        if let Some(reason) = reserved_name(name, self.mode) {
            self.error(
                line,
                label.column,
                format!("`{name}` cannot be a label: it is {reason}"),
            );
            return;
        }
        if !is_identifier(name) {
            self.error(
                line,
                label.column,
                format!(
                    "`{name}` is not a valid label name (letters, digits and `_`, not starting \
                     with a digit)"
                ),
            );
            return;
        }
        if let Some(previous) = self.labels.get(name) {
            let message = format!(
                "label `{name}` is already defined on line {}",
                previous.line
            );
            self.error(line, label.column, message);
            return;
        }
        self.labels.insert(name, LabelDef { address, line });
    }

    fn set_entry(
        &mut self,
        entry: EntryPoint,
        setting: EntrySetting<'a>,
        line: usize,
        column: usize,
    ) {
        if let Some(previous) = &self.entries[entry as usize] {
            let message = format!(
                "entry point {} is already set on line {}",
                entry.label(),
                previous.line
            );
            self.error(line, column, message);
            return;
        }
        self.entries[entry as usize] = Some(EntryDef { setting, line });
    }

    /// `.entry ENTRYPOINT_ADRR_X VALUE`
    fn entry_directive(&mut self, tokens: &[Token<'a>], line: usize) {
        let directive = tokens[0];
        if self.mode == Mode::Rom {
            self.error(
                line,
                directive.column,
                "`.entry` sets the user entry table, which ROM code does not have",
            );
            return;
        }
        if tokens.len() != 3 {
            let column = tokens.get(3).unwrap_or(&directive).column;
            self.error(
                line,
                column,
                "`.entry` expects an entry point and a value: `.entry ENTRYPOINT_ADRR_X 0x00E8`",
            );
            return;
        }
        let Some(entry) = EntryPoint::from_label(tokens[1].text) else {
            self.error(
                line,
                tokens[1].column,
                unknown_entry_message(tokens[1].text),
            );
            return;
        };
        self.set_entry(
            entry,
            EntrySetting::Value(tokens[2]),
            line,
            tokens[1].column,
        );
    }

    fn check_capacity(&mut self, statements: &[Statement]) {
        let (limit, message) = match self.mode {
            Mode::User => (
                MAX_USER_INSTRUCTIONS,
                format!(
                    "more than {MAX_USER_INSTRUCTIONS} instructions: IMEM holds {IMEM_WORDS} \
                     words, {ENTRY_TABLE_LEN} of them the entry table"
                ),
            ),
            Mode::Rom => (
                MAX_ROM_WORDS,
                format!("more than {MAX_ROM_WORDS} words: ROM addresses have bit 15 clear"),
            ),
        };
        if let Some(statement) = statements.get(limit) {
            let (line, column) = (statement.line, statement.tokens[0].column);
            self.error(line, column, message);
        }
    }

    /// The 12 table words: overridden entries, defaults for the rest. Resolves `.entry`
    /// values (labels are all known now), so operands naming an entry see its address.
    fn entry_table(&mut self) -> [Word; ENTRY_TABLE_LEN] {
        let mut table = [Word::default(); ENTRY_TABLE_LEN];
        for entry in EntryPoint::ALL {
            let i = entry as usize;
            if let Some(EntryDef {
                setting: EntrySetting::Value(token),
                line,
            }) = self.entries[i]
            {
                let value = match self.label_address(token.text) {
                    Some(address) => Ok(address as u64),
                    None => self.table_word(token),
                };
                let value = value.unwrap_or_else(|message| {
                    self.error(line, token.column, message);
                    0
                });
                table[i] = Word(value);
                // The control unit uses the low 16 bits.
                self.entries[i] = Some(EntryDef {
                    setting: EntrySetting::Label(value as u16),
                    line,
                });
            } else {
                table[i] = Word(self.entry_address(entry) as u64);
            }
        }
        table
    }

    fn table_word(&self, token: Token) -> Result<u64, String> {
        match parse_number(token.text) {
            Some(Ok(Number::Integer(v))) if (0..=u64::MAX as i128).contains(&v) => Ok(v as u64),
            Some(Err(message)) => Err(message),
            _ => Err(format!(
                "expected a code address, a label or a 64-bit table word, found `{}`",
                token.text
            )),
        }
    }

    fn label_address(&self, name: &str) -> Option<u16> {
        self.labels.get(name).map(|def| def.address)
    }

    /// Where `ENTRYPOINT_ADRR_X` points: this program's setting, else the ROM routine.
    fn entry_address(&self, entry: EntryPoint) -> u16 {
        match &self.entries[entry as usize] {
            Some(EntryDef {
                setting: EntrySetting::Label(address),
                ..
            }) => *address,
            _ => entry.default_address(),
        }
    }

    /// Pass 2: one statement to one instruction. Errors are recorded; `None` if there were
    /// any.
    fn encode(&mut self, statement: &Statement<'a>) -> Option<Instr> {
        let line = statement.line;
        let head = statement.tokens[0];
        let operands = &statement.tokens[1..];
        if head.text == ".word" {
            return self.encode_word_directive(line, head, operands);
        }
        let Some(opcode) = Opcode::from_mnemonic(head.text) else {
            let message = match Opcode::from_mnemonic(&head.text.to_ascii_uppercase()) {
                Some(op) => format!(
                    "unknown opcode `{}` (names are case-sensitive: `{}`)",
                    head.text,
                    op.mnemonic()
                ),
                None if head.text.starts_with('.') => {
                    format!(
                        "unknown directive `{}` (there are `.word` and `.entry`)",
                        head.text
                    )
                }
                None => format!("unknown opcode `{}`", head.text),
            };
            self.error(line, head.column, message);
            return None;
        };
        if let Some(extra) = operands.get(3) {
            self.error(
                line,
                extra.column,
                format!(
                    "too many operands: `{}` and what follows would be ignored by the original \
                     assembler",
                    extra.text
                ),
            );
            return None;
        }
        let shape = opcode.info().shape;
        let (min, max, syntax) = operand_counts(shape);
        if operands.len() < min || operands.len() > max {
            let column = operands.get(max).map_or(head.column, |t| t.column);
            self.error(
                line,
                column,
                format!(
                    "{} expects `{} {syntax}`, found {} operand{}",
                    opcode.mnemonic(),
                    opcode.mnemonic(),
                    operands.len(),
                    if operands.len() == 1 { "" } else { "s" }
                ),
            );
            return None;
        }
        let instr = self.encode_operands(opcode, shape, line, operands)?;
        self.check_hardware(instr, line, head, operands);
        Some(instr)
    }

    /// The instruction `opcode` makes of `operands` (their count already checked against
    /// `shape`). Every operand is checked and each error recorded, so that all of them are
    /// reported; `None` if there was any.
    fn encode_operands(
        &mut self,
        opcode: Opcode,
        shape: Shape,
        line: usize,
        operands: &[Token<'a>],
    ) -> Option<Instr> {
        let errors_before = self.errors.len();
        let instr = match shape {
            Shape::Nop => self.encode_nop(opcode, line, operands),
            Shape::DstSrc1Src2 | Shape::DstSrc1 | Shape::Dst => {
                self.encode_registers(opcode, line, operands)
            }
            Shape::Branch => {
                let target = self.target_operand(line, operands[0]);
                Instr::Registers {
                    opcode,
                    dst: target,
                    src1: self.register_operand(line, operands[1]),
                    src2: self.register_operand(line, operands[2]),
                }
            }
            Shape::Target => self.encode_jump(opcode, line, operands),
            Shape::DstImm => self.encode_dst_imm(opcode, line, operands),
            Shape::DstSwizzle => {
                let dst = self.register_operand(line, operands[0]);
                let code = match swizzle_code(operands[1].text) {
                    Some(code) => Ok(code),
                    None => self.immediate(operands[1]).map_err(|_| {
                        format!(
                            "expected a swizzle (`SWIZZLE_XXX` … `SWIZZLE_YXZ`) or its code, \
                             found `{}`",
                            operands[1].text
                        )
                    }),
                };
                let imm = self.checked(line, operands[1], code);
                Instr::Immediate { opcode, dst, imm }
            }
            Shape::Return if operands.len() == 1 => {
                let value = return_value(operands[0].text).ok_or_else(|| {
                    format!(
                        "RETURN expects RT_TRUE or RT_FALSE, found `{}`",
                        operands[0].text
                    )
                });
                let imm = self.checked(line, operands[0], value);
                Instr::Immediate {
                    opcode,
                    dst: 0,
                    imm,
                }
            }
            Shape::Return => self.encode_dst_imm(opcode, line, operands),
        };
        (self.errors.len() == errors_before).then_some(instr)
    }

    /// NOP: `NOP RT_TRUE` (its value in SRC2, as RETURN's), or up to three registers.
    fn encode_nop(&mut self, opcode: Opcode, line: usize, operands: &[Token<'a>]) -> Instr {
        let Some(value) = operands.first().and_then(|t| return_value(t.text)) else {
            return self.encode_registers(opcode, line, operands);
        };
        if let Some(extra) = operands.get(1) {
            let message = format!("unexpected `{}` after {}", extra.text, operands[0].text);
            self.checked(line, *extra, Err(message));
        }
        Instr::Registers {
            opcode,
            dst: 0,
            src1: 0,
            src2: value as u16,
        }
    }

    /// Up to three register operands into DST, SRC1 and SRC2 (0 where absent).
    fn encode_registers(&mut self, opcode: Opcode, line: usize, operands: &[Token<'a>]) -> Instr {
        let mut fields = [0u16; 3];
        for (field, token) in fields.iter_mut().zip(operands) {
            *field = self.register_operand(line, *token);
        }
        Instr::Registers {
            opcode,
            dst: fields[0],
            src1: fields[1],
            src2: fields[2],
        }
    }

    /// A jump: its target, then nothing, an immediate, or two register slots.
    fn encode_jump(&mut self, opcode: Opcode, line: usize, operands: &[Token<'a>]) -> Instr {
        let dst = self.target_operand(line, operands[0]);
        let imm = match operands.len() {
            1 => 0,
            2 => {
                let imm = self.immediate(operands[1]);
                self.checked(line, operands[1], imm)
            }
            // `JMP L VOID VOID`: the original puts the two slots in the low word.
            _ => {
                let s1 = self.register_operand(line, operands[1]) as u32;
                let s2 = self.register_operand(line, operands[2]) as u32;
                s1 << 16 | s2
            }
        };
        Instr::Immediate { opcode, dst, imm }
    }

    /// A destination register and a 32-bit immediate.
    fn encode_dst_imm(&mut self, opcode: Opcode, line: usize, operands: &[Token<'a>]) -> Instr {
        let dst = self.register_operand(line, operands[0]);
        let imm = self.immediate(operands[1]);
        let imm = self.checked(line, operands[1], imm);
        Instr::Immediate { opcode, dst, imm }
    }

    /// An operand's value, or 0 with its error recorded at `token`.
    fn checked(&mut self, line: usize, token: Token, result: Result<u32, String>) -> u32 {
        result.unwrap_or_else(|message| {
            self.error(line, token.column, message);
            0
        })
    }

    /// A register operand's address, or 0 with its error recorded.
    fn register_operand(&mut self, line: usize, token: Token) -> u16 {
        let address = self.register(token).map(u32::from);
        self.checked(line, token, address) as u16
    }

    /// A code address operand, or 0 with its error recorded.
    fn target_operand(&mut self, line: usize, token: Token) -> u16 {
        let address = self.target(token).map(u32::from);
        self.checked(line, token, address) as u16
    }

    fn encode_word_directive(
        &mut self,
        line: usize,
        head: Token,
        operands: &[Token],
    ) -> Option<Instr> {
        if operands.len() != 1 {
            let column = operands.get(1).unwrap_or(&head).column;
            self.error(
                line,
                column,
                "`.word` expects one 64-bit value: `.word 0x00FFFFFFFFFFFFFF`",
            );
            return None;
        }
        let token = operands[0];
        let value = match parse_number(token.text) {
            Some(Ok(Number::Integer(v))) if (0..=u64::MAX as i128).contains(&v) => v as u64,
            Some(Err(message)) => {
                self.error(line, token.column, message);
                return None;
            }
            _ => {
                self.error(
                    line,
                    token.column,
                    format!("`.word` expects a 64-bit integer, found `{}`", token.text),
                );
                return None;
            }
        };
        let instr = Instr::decode(Word(value));
        self.check_hardware(instr, line, head, operands);
        Some(instr)
    }

    /// Warnings about what the original hardware does differently with this word.
    fn check_hardware(&mut self, instr: Instr, line: usize, head: Token, operands: &[Token]) {
        let word = instr.word();
        let Some(opcode) = instr.opcode() else {
            self.warn(
                line,
                head.column,
                format!(
                    "undefined opcode 0x{:04X}: the core hangs on this word",
                    word.opcode_field()
                ),
            );
            return;
        };
        let op = opcode.mnemonic();
        match opcode.info().hardware {
            Hardware::Implemented => {}
            Hardware::Unfinished => self.warn(
                line,
                head.column,
                format!(
                    "{op} is not implemented by the original hardware, where the core hangs \
                     (the emulator runs the manual's semantics)"
                ),
            ),
            Hardware::DebugOnly => self.warn(
                line,
                head.column,
                format!(
                    "{op} exists only in DEBUG builds of the original hardware; other builds \
                     hang on it"
                ),
            ),
        }
        // Columns of the fields, where the source has them.
        let column_of = |i: usize| operands.get(i).map_or(head.column, |t| t.column);
        if opcode == Opcode::Swizzle3d && !HARDWARE_SWIZZLES.contains(&word.imm()) {
            let name = SWIZZLES
                .get(word.imm() as usize)
                .map_or(format!("swizzle code {}", word.imm()), |n| n.to_string());
            self.warn(
                line,
                column_of(1),
                format!(
                    "{name} is not implemented by the original hardware, which writes (0,0,0) \
                     (only XXX, YYY, ZZZ and YXZ are; the emulator follows the manual)"
                ),
            );
        }
        let dst = word.dst();
        let is_oreg = (128..=131).contains(&dst);
        if opcode.writes_destination()
            && !core_writable(dst)
            && opcode != Opcode::Return
            && !(opcode == Opcode::Omwrite && is_oreg)
        {
            self.warn(
                line,
                column_of(0),
                format!(
                    "{op} writes {} in the read-only bank 0 (addresses whose bits 6..5 are 00): \
                     the hardware drops the write",
                    describe_address(dst)
                ),
            );
        }
        if opcode == Opcode::Omwrite && core_writable(dst) {
            self.warn(
                line,
                column_of(0),
                format!(
                    "OMWRITE also writes (0,0,0) to its destination {}; the convention is \
                     OREG_PIXEL_COLOR, where the write is dropped",
                    describe_address(dst)
                ),
            );
        }
    }

    /// A register operand: name, `VOID`, or `@address`.
    fn register(&self, token: Token) -> Result<u16, String> {
        let text = token.text;
        if text == "VOID" {
            return Ok(0);
        }
        if let Some(address) = register_address(text) {
            return Ok(address);
        }
        if let Some(raw) = text.strip_prefix('@') {
            return match parse_number(raw) {
                Some(Ok(Number::Integer(v))) if (0..=0xFFFF).contains(&v) => Ok(v as u16),
                _ => Err(format!(
                    "`{text}`: a raw data address is `@` and a 16-bit number, e.g. `@0x7B`"
                )),
            };
        }
        if return_value(text).is_some() {
            return Err(format!(
                "`{text}` is only valid as the first operand of RETURN or NOP (the original \
                 assembler loses its value anywhere else); use 32'h1 or 32'h0 as an immediate"
            ));
        }
        if swizzle_code(text).is_some() {
            return Err(format!(
                "`{text}` is a swizzle, valid only as `SWIZZLE3D D {text}`"
            ));
        }
        if parse_number(text).is_some() || self.rom_macro(text).is_some() {
            return Err(format!(
                "immediate `{text}` in a register slot: the original assembler drops it (the \
                 field becomes 0); load constants with SETX/SETY/SETZ"
            ));
        }
        if self.labels.contains_key(text) || text.starts_with("ENTRYPOINT_ADRR_") {
            return Err(format!("`{text}` is a code label, not a register"));
        }
        if let Some(address) = register_address(&text.to_ascii_uppercase()) {
            let name = super::registers::register_name(address).unwrap_or(text);
            return Err(format!(
                "unknown register `{text}` (names are case-sensitive: `{name}`)"
            ));
        }
        Err(format!("unknown register `{text}`"))
    }

    /// A 32-bit immediate.
    fn immediate(&self, token: Token) -> Result<u32, String> {
        let text = token.text;
        if let Some(value) = self.rom_macro(text) {
            return Ok(value);
        }
        match parse_number(text) {
            Some(Ok(Number::Integer(v))) if (-(1i128 << 31)..1i128 << 32).contains(&v) => {
                Ok(v as i64 as u32)
            }
            Some(Ok(Number::Integer(_))) => Err(format!("`{text}` does not fit in 32 bits")),
            Some(Ok(Number::Fixed(bits))) => Ok(bits),
            Some(Err(message)) => Err(message),
            None if return_value(text).is_some() => Err(format!(
                "`{text}` fills the DST and IMM fields and the original assembler loses its \
                 value here; write 32'h{} instead",
                return_value(text).unwrap_or(0)
            )),
            None => Err(format!(
                "expected an immediate (32'h…, 0x…, a decimal integer or a fraction like 0.5), \
                 found `{text}`"
            )),
        }
    }

    /// ROM mode knows the ROM source's immediates TRUE, FALSE and ONE.
    fn rom_macro(&self, text: &str) -> Option<u32> {
        if self.mode != Mode::Rom {
            return None;
        }
        match text {
            "TRUE" => Some(1),
            "FALSE" => Some(0),
            "ONE" => Some(0x20000),
            _ => None,
        }
    }

    /// A code address: label, `ENTRYPOINT_ADRR_X`, or a number.
    fn target(&self, token: Token) -> Result<u16, String> {
        let text = token.text;
        if let Some(address) = self.label_address(text) {
            return Ok(address);
        }
        if let Some(entry) = EntryPoint::from_label(text) {
            return Ok(self.entry_address(entry));
        }
        if text.starts_with("ENTRYPOINT_ADRR_") {
            return Err(unknown_entry_message(text));
        }
        match parse_number(text) {
            Some(Ok(Number::Integer(v))) if (0..=0xFFFF).contains(&v) => Ok(v as u16),
            Some(Err(message)) => Err(message),
            Some(Ok(_)) => Err(format!("`{text}` is not a code address (0 to 0xFFFF)")),
            None if register_address(text).is_some() || text == "VOID" => Err(format!(
                "expected a label or code address, found register `{text}`"
            )),
            None => Err(format!("undefined label `{text}`")),
        }
    }
}

/// Instruction operands as the lexer sees them: whitespace-separated, with 1-based columns.
fn tokenize(code: &str) -> Vec<Token<'_>> {
    let mut tokens = Vec::new();
    let mut start: Option<(usize, usize)> = None; // (byte, column)
    let mut column = 0;
    for (byte, c) in code.char_indices() {
        column += 1;
        if c.is_whitespace() {
            if let Some((b, col)) = start.take() {
                tokens.push(Token {
                    text: &code[b..byte],
                    column: col,
                });
            }
        } else if start.is_none() {
            start = Some((byte, column));
        }
    }
    if let Some((b, col)) = start {
        tokens.push(Token {
            text: &code[b..],
            column: col,
        });
    }
    tokens
}

/// The original assembler takes any line with a non-blank character before a colon for a
/// label line (quirk 2): is there such a colon in the comment starting at byte `at`?
fn colon_after_non_blank(line: &str, at: usize) -> bool {
    let mut previous = line[..at].chars().next_back().unwrap_or(' ');
    for c in line[at..].chars() {
        if c == ':' && !previous.is_whitespace() {
            return true;
        }
        previous = c;
    }
    false
}

fn return_value(text: &str) -> Option<u32> {
    match text {
        "RT_TRUE" => Some(1),
        "RT_FALSE" => Some(0),
        _ => None,
    }
}

/// (least operands, most operands, syntax) of each shape.
fn operand_counts(shape: Shape) -> (usize, usize, &'static str) {
    match shape {
        Shape::Nop => (0, 3, "[RT_FALSE | D S1 S2]"),
        Shape::DstSrc1Src2 => (3, 3, "D S1 S2"),
        Shape::DstSrc1 => (2, 3, "D S1 [S2]"),
        Shape::Dst => (1, 3, "D [S1 S2]"),
        Shape::Branch => (3, 3, "TARGET S1 S2"),
        Shape::Target => (1, 3, "TARGET [VOID VOID | IMM]"),
        Shape::DstImm => (2, 2, "D IMM"),
        Shape::DstSwizzle => (2, 2, "D SWIZZLE_xxx"),
        Shape::Return => (1, 2, "RT_TRUE|RT_FALSE"),
    }
}

/// Parses a number literal; `None` if the text is not one at all.
fn parse_number(text: &str) -> Option<Result<Number, String>> {
    let hex = |digits: &str| -> Result<Number, String> {
        if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(format!("`{text}` is not a valid hexadecimal number"));
        }
        let digits = digits.trim_start_matches('0');
        if digits.len() > 16 {
            return Err(format!("`{text}` does not fit in 64 bits"));
        }
        Ok(Number::Integer(
            i128::from_str_radix(if digits.is_empty() { "0" } else { digits }, 16)
                .map_err(|_| format!("`{text}` is not a valid hexadecimal number"))?,
        ))
    };
    if let Some(digits) = text.strip_prefix("32'h") {
        return Some(hex(digits).and_then(|n| match n {
            Number::Integer(v) if v > u32::MAX as i128 => {
                Err(format!("`{text}` does not fit in 32 bits"))
            }
            n => Ok(n),
        }));
    }
    if let Some(digits) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        return Some(hex(digits));
    }
    let unsigned = text.strip_prefix('-').unwrap_or(text);
    let first = unsigned.chars().next()?;
    if !(first.is_ascii_digit() || first == '.') {
        return None;
    }
    if unsigned.contains('.') {
        let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
        let digits_only = |s: &str| s.chars().all(|c| c.is_ascii_digit());
        if !digits_only(int) || !digits_only(frac) || (int.is_empty() && frac.is_empty()) {
            return Some(Err(format!("`{text}` is not a valid number")));
        }
        let normal = format!(
            "{}{}.{}",
            if text.starts_with('-') { "-" } else { "" },
            if int.is_empty() { "0" } else { int },
            if frac.is_empty() { "0" } else { frac }
        );
        return Some(
            I15F17::from_str(&normal)
                .map(|v| Number::Fixed(v.to_bits() as u32))
                .map_err(|_| {
                    format!("`{text}` is outside the Q15.17 range (-16384.0 up to 16383.99999)")
                }),
        );
    }
    if !unsigned.chars().all(|c| c.is_ascii_digit()) {
        return Some(Err(format!("`{text}` is not a valid number")));
    }
    Some(
        i128::from_str(text)
            .ok()
            .filter(|v| v.unsigned_abs() <= u64::MAX as u128)
            .map(Number::Integer)
            .ok_or_else(|| format!("`{text}` does not fit in 64 bits")),
    )
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Why a name cannot be a label, if it cannot.
fn reserved_name(name: &str, mode: Mode) -> Option<&'static str> {
    if Opcode::from_mnemonic(name).is_some() {
        Some("an opcode")
    } else if name == "VOID" || register_address(name).is_some() {
        Some("a register name")
    } else if return_value(name).is_some() || swizzle_code(name).is_some() {
        Some("a reserved operand name")
    } else if mode == Mode::Rom && matches!(name, "TRUE" | "FALSE" | "ONE") {
        Some("a ROM immediate")
    } else {
        None
    }
}

fn unknown_entry_message(name: &str) -> String {
    let names: Vec<&str> = EntryPoint::ALL.iter().map(|e| e.name()).collect();
    format!(
        "unknown entry point `{name}`: ENTRYPOINT_ADRR_ is followed by one of {}",
        names.join(", ")
    )
}

/// `OREG_PIXEL_COLOR (address 128)`, or `address 9`.
fn describe_address(address: u16) -> String {
    match super::registers::register_name(address) {
        Some(name) => format!("{name} (address {address})"),
        None => format!("address {address}"),
    }
}
