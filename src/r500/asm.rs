//! Text to words: the syntax of the `.fs.asm` sources plus the tags of [`super::disasm`].
//! Every field is set from the same table ([`super::fields`]); fields the text does not
//! mention stay 0, and an unused source address is inline 0 (`0x80`), as the original
//! assembler leaves them. `#include "file"` inserts another file's instructions.
//! Errors name `file:line:col` and what was expected.

use std::path::{Path, PathBuf};

use super::decode::validate;
use super::fields::{self as f, kind, Field, Words};
use crate::isa::asm::{AsmErrors, Diagnostic, Severity};

/// An assembled program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Assembly {
    /// Six words per instruction.
    pub program: Vec<Words>,
}

type Result<T> = std::result::Result<T, Diagnostic>;

fn error(file: &Path, line: usize, column: usize, message: String) -> Diagnostic {
    Diagnostic {
        file: file.to_path_buf(),
        line,
        column,
        severity: Severity::Error,
        message,
    }
}

/// The first error as the [`AsmErrors`] every assembler returns (R500 has no warnings).
fn errors(error: Diagnostic) -> AsmErrors {
    AsmErrors {
        errors: vec![error],
        warnings: Vec::new(),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Kind {
    /// A run of letters, digits and underscores.
    Word(String),
    /// One punctuation character.
    Punct(char),
    /// End of the file.
    End,
}

#[derive(Clone, Debug)]
struct Token {
    kind: Kind,
    file: usize,
    line: usize,
    col: usize,
}

/// Where `#include` finds its files.
enum Includes<'a> {
    /// Relative to this directory, on disk.
    Dir(&'a Path),
    /// Not allowed (text with no file behind it).
    None,
}

/// Assembles `source`; `file` names it in messages. `#include` is refused: the text may
/// have no file behind it.
pub fn assemble(source: &str, file: &Path) -> std::result::Result<Assembly, AsmErrors> {
    Assembler::new()
        .run(source, file, &Includes::None, 0)
        .map_err(errors)
}

/// Assembles the file at `path`; `#include "x"` reads `x` beside it. A file that cannot
/// be read is an error at line 0.
pub fn assemble_file(path: &Path) -> std::result::Result<Assembly, AsmErrors> {
    let source =
        std::fs::read_to_string(path).map_err(|e| errors(error(path, 0, 0, e.to_string())))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    Assembler::new()
        .run(&source, path, &Includes::Dir(dir), 0)
        .map_err(errors)
}

struct Assembler {
    files: Vec<PathBuf>,
    program: Vec<Words>,
}

/// How deep `#include` may nest before it is taken for a cycle.
const MAX_INCLUDE_DEPTH: usize = 16;

impl Assembler {
    fn new() -> Assembler {
        Assembler {
            files: Vec::new(),
            program: Vec::new(),
        }
    }

    fn run(
        mut self,
        source: &str,
        file: &Path,
        includes: &Includes,
        depth: usize,
    ) -> Result<Assembly> {
        self.file(source, file, includes, depth)?;
        Ok(Assembly {
            program: self.program,
        })
    }

    /// Assembles one file: its lines up to each `#include`, the included file, and so on.
    fn file(&mut self, source: &str, name: &Path, includes: &Includes, depth: usize) -> Result<()> {
        let file = self.files.len();
        self.files.push(name.to_path_buf());
        let error = |line: usize, col: usize, message: String| error(name, line, col, message);
        // Text between includes is lexed as one chunk, keeping its line numbers.
        let mut chunk = String::new();
        let mut chunk_start = 1;
        for (number, line) in source.lines().enumerate().map(|(i, l)| (i + 1, l)) {
            let trimmed = line.trim_start();
            if let Some(rest) = trimmed.strip_prefix("#include") {
                self.chunk(&chunk, file, chunk_start)?;
                chunk.clear();
                chunk_start = number + 1;
                let col = line.len() - trimmed.len() + 1;
                let target = rest.trim();
                let target = target
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix('"'))
                    .ok_or_else(|| error(number, col, "expected #include \"FILE\"".to_string()))?;
                let Includes::Dir(dir) = includes else {
                    return Err(error(
                        number,
                        col,
                        "#include needs a source file (its directory finds the included file)"
                            .to_string(),
                    ));
                };
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(error(
                        number,
                        col,
                        "#include nested too deeply (a cycle?)".into(),
                    ));
                }
                let path: PathBuf = dir.join(target);
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    error(number, col, format!("cannot read {}: {e}", path.display()))
                })?;
                let inner_dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
                self.file(&text, &path, &Includes::Dir(&inner_dir), depth + 1)?;
            } else {
                chunk.push_str(line);
                chunk.push('\n');
            }
        }
        self.chunk(&chunk, file, chunk_start)
    }

    fn chunk(&mut self, text: &str, file: usize, first_line: usize) -> Result<()> {
        let tokens = lex(text, file, first_line)
            .map_err(|(line, col, message)| error(&self.files[file], line, col, message))?;
        let mut parser = Parser {
            tokens,
            position: 0,
            files: &self.files,
        };
        while !parser.at_end() {
            let words = parser.instruction()?;
            self.program.push(words);
        }
        Ok(())
    }
}

fn lex(
    text: &str,
    file: usize,
    first_line: usize,
) -> std::result::Result<Vec<Token>, (usize, usize, String)> {
    let mut tokens = Vec::new();
    let mut last = (first_line, 1);
    for (offset, line) in text.lines().enumerate() {
        let number = first_line + offset;
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let col = i + 1;
            if c.is_whitespace() {
                i += 1;
            } else if c == '-' && chars.get(i + 1) == Some(&'-') {
                break; // A comment to the end of the line.
            } else if c.is_ascii_alphanumeric() || c == '_' {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                tokens.push(Token {
                    kind: Kind::Word(chars[start..i].iter().collect()),
                    file,
                    line: number,
                    col,
                });
            } else if ".,:;=[]()|-*+".contains(c) {
                tokens.push(Token {
                    kind: Kind::Punct(c),
                    file,
                    line: number,
                    col,
                });
                i += 1;
            } else {
                return Err((number, col, format!("unexpected character `{c}`")));
            }
        }
        last = (number, chars.len() + 1);
    }
    tokens.push(Token {
        kind: Kind::End,
        file,
        line: last.0,
        col: last.1,
    });
    Ok(tokens)
}

/// What an operation in an ALU instruction says before its unit is known.
struct Operation {
    token: Token,
    name: String,
    /// (is out, index, relative, mask text, token of the mask)
    dests: Vec<(bool, u32, bool, String, Token)>,
    omod: u32,
    /// (select, swizzle text, modifier, token of the swizzle)
    args: Vec<(u32, String, u32, Token)>,
}

struct Parser<'a> {
    tokens: Vec<Token>,
    position: usize,
    files: &'a [PathBuf],
}

fn describe(kind: &Kind) -> String {
    match kind {
        Kind::Word(word) => format!("`{word}`"),
        Kind::Punct(c) => format!("`{c}`"),
        Kind::End => "the end of the file".to_string(),
    }
}

/// A decimal or `0x` hexadecimal number.
fn number(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

impl Parser<'_> {
    fn at_end(&self) -> bool {
        self.peek().kind == Kind::End
    }

    fn peek(&self) -> &Token {
        &self.tokens[self.position]
    }

    fn peek_at(&self, ahead: usize) -> &Token {
        &self.tokens[(self.position + ahead).min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let token = self.tokens[self.position].clone();
        if token.kind != Kind::End {
            self.position += 1;
        }
        token
    }

    fn error_at(&self, token: &Token, message: String) -> Diagnostic {
        error(&self.files[token.file], token.line, token.col, message)
    }

    fn expected(&self, what: &str) -> Diagnostic {
        let token = self.peek();
        self.error_at(
            token,
            format!("expected {what}, found {}", describe(&token.kind)),
        )
    }

    fn punct(&mut self, c: char) -> Result<Token> {
        if self.peek().kind == Kind::Punct(c) {
            Ok(self.next())
        } else {
            Err(self.expected(&format!("`{c}`")))
        }
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek().kind == Kind::Punct(c)
    }

    fn word(&mut self, what: &str) -> Result<(String, Token)> {
        match &self.peek().kind {
            Kind::Word(word) => {
                let word = word.clone();
                Ok((word, self.next()))
            }
            _ => Err(self.expected(what)),
        }
    }

    fn peek_word(&self) -> Option<&str> {
        match &self.peek().kind {
            Kind::Word(word) => Some(word),
            _ => None,
        }
    }

    fn keyword(&mut self, keyword: &str) -> Result<Token> {
        if self.peek_word() == Some(keyword) {
            Ok(self.next())
        } else {
            Err(self.expected(&format!("`{keyword}`")))
        }
    }

    fn number(&mut self, what: &str, max: u32) -> Result<u32> {
        let (text, token) = self.word(what)?;
        match number(&text) {
            Some(value) if value <= max => Ok(value),
            _ => Err(self.error_at(
                &token,
                format!("expected {what} (0 to {max}), found `{text}`"),
            )),
        }
    }

    /// `n` or `aL+n`, up to `max`.
    fn index(&mut self, what: &str, max: u32) -> Result<(u32, bool)> {
        let relative = self.peek_word() == Some("aL") && self.peek_at(1).kind == Kind::Punct('+');
        if relative {
            self.next();
            self.next();
        }
        Ok((self.number(what, max)?, relative))
    }

    fn set(&self, words: &mut Words, field: Field, value: u32, token: &Token) -> Result<()> {
        if value > field.max() {
            return Err(self.error_at(
                token,
                format!("{} takes 0 to {}, found {value}", field.name, field.max()),
            ));
        }
        field.set(words, value);
        Ok(())
    }

    /// Tags (`NAME`, `NAME=value`) while the next word is a field of type `ty` the syntax
    /// does not cover.
    fn tags(&mut self, words: &mut Words, ty: u32) -> Result<()> {
        while let Some(name) = self.peek_word() {
            let Some(field) = f::CMN
                .iter()
                .chain(f::fields_of(ty))
                .copied()
                .find(|field| field.name == name && !super::disasm::covered(ty, *field))
            else {
                return Ok(());
            };
            let token = self.next();
            let value = if self.is_punct('=') {
                self.next();
                self.number(&format!("a value for {}", field.name), field.max())?
            } else if field.width == 1 {
                1
            } else {
                return Err(self.error_at(&token, format!("expected {}=VALUE", field.name)));
            };
            self.set(words, field, value, &token)?;
        }
        Ok(())
    }

    fn instruction(&mut self) -> Result<Words> {
        let start = self.peek().clone();
        let mut words = [0u32; 6];
        let words = match self.peek_word() {
            Some("TEX") => {
                self.next();
                f::TYPE.set(&mut words, kind::TEX);
                self.tex(&mut words)?;
                words
            }
            Some("FC") => {
                self.next();
                f::TYPE.set(&mut words, kind::FC);
                self.fc(&mut words)?;
                words
            }
            _ => {
                let ty = if self.peek_word() == Some("OUT") {
                    self.next();
                    kind::OUT
                } else {
                    kind::ALU
                };
                f::TYPE.set(&mut words, ty);
                self.alu(&mut words, ty)?;
                words
            }
        };
        validate(&words).map_err(|message| self.error_at(&start, message))?;
        Ok(words)
    }

    fn tex(&mut self, words: &mut Words) -> Result<()> {
        self.tags(words, kind::TEX)?;
        self.keyword("temp")?;
        self.punct('[')?;
        let (dst, dst_rel) = self.index("a temp number", f::DST_ADDR.max())?;
        self.punct(']')?;
        self.punct('.')?;
        let (mask, token) = self.word("a write mask (rgba, rgb, r, none, ...)")?;
        let (rgb, alpha) = tex_mask(&mask).ok_or_else(|| {
            self.error_at(
                &token,
                format!(
                    "expected a write mask of r, g, b, a in that order, or none; found `{mask}`"
                ),
            )
        })?;
        self.punct('=')?;
        let (op, token) = self.word("a TEX op (LD, TEXKILL, PROJ, ...)")?;
        let code = f::code_of(&f::TEX_OPS, &op).ok_or_else(|| {
            self.error_at(
                &token,
                format!(
                    "expected a TEX op (NOP, LD, TEXKILL, PROJ, LODBIAS, LOD, DXDY), found `{op}`"
                ),
            )
        })?;
        self.keyword("tex")?;
        self.punct('[')?;
        let unit = self.number("a texture unit", f::TEX_ID.max())?;
        self.punct(']')?;
        self.punct('.')?;
        let dst_swizzle = self.tex_swizzle()?;
        self.keyword("temp")?;
        self.punct('[')?;
        let (src, src_rel) = self.index("a temp number", f::SRC_ADDR.max())?;
        self.punct(']')?;
        self.punct('.')?;
        let src_swizzle = self.tex_swizzle()?;
        self.tags(words, kind::TEX)?;
        self.punct(';')?;
        f::RGB_WMASK.set(words, rgb);
        f::ALPHA_WMASK.set(words, alpha);
        f::TEX_OP.set(words, code);
        f::TEX_ID.set(words, unit);
        f::DST_ADDR.set(words, dst);
        f::DST_ADDR_REL.set(words, dst_rel as u32);
        f::SRC_ADDR.set(words, src);
        f::SRC_ADDR_REL.set(words, src_rel as u32);
        let dst_fields = [f::DST_R_SWIZ, f::DST_G_SWIZ, f::DST_B_SWIZ, f::DST_A_SWIZ];
        let src_fields = [f::SRC_S_SWIZ, f::SRC_T_SWIZ, f::SRC_R_SWIZ, f::SRC_Q_SWIZ];
        for i in 0..4 {
            dst_fields[i].set(words, dst_swizzle[i]);
            src_fields[i].set(words, src_swizzle[i]);
        }
        Ok(())
    }

    fn tex_swizzle(&mut self) -> Result<[u32; 4]> {
        let (text, token) = self.word("a four-channel swizzle of r, g, b, a")?;
        let codes: Vec<u32> = text
            .chars()
            .filter_map(|c| "rgba".find(c).map(|i| i as u32))
            .collect();
        if codes.len() != 4 || text.chars().count() != 4 {
            return Err(self.error_at(
                &token,
                format!("expected a four-channel swizzle of r, g, b, a, found `{text}`"),
            ));
        }
        Ok([codes[0], codes[1], codes[2], codes[3]])
    }

    fn fc(&mut self, words: &mut Words) -> Result<()> {
        self.tags(words, kind::FC)?;
        let (op, token) = self.word("an FC op (JUMP, LOOP, ENDLOOP, ...)")?;
        let code = f::code_of(&f::FC_OPS, &op).ok_or_else(|| {
            let names: Vec<&str> = f::FC_OPS.iter().flatten().map(|row| row.name).collect();
            self.error_at(
                &token,
                format!("expected an FC op ({}), found `{op}`", names.join(", ")),
            )
        })?;
        f::FC_OP.set(words, code);
        let target = self.number("a jump address", f::JUMP_ADDR.max())?;
        f::JUMP_ADDR.set(words, target);
        self.tags(words, kind::FC)?;
        self.punct(';')?;
        Ok(())
    }

    fn alu(&mut self, words: &mut Words, ty: u32) -> Result<()> {
        self.tags(words, ty)?;
        // Unused source addresses read inline 0.
        for alpha in [false, true] {
            for slot in 0..3 {
                f::source_fields(alpha, slot)[0].set(words, 0x80);
            }
        }
        let mut seen: Vec<(String, String)> = Vec::new();
        if !self.is_punct(':') {
            loop {
                self.source_let(words, &mut seen)?;
                if self.is_punct(',') {
                    self.next();
                    continue;
                }
                break;
            }
        }
        self.punct(':')?;
        let mut operations = Vec::new();
        if !self.is_punct(';') {
            loop {
                operations.push(self.operation()?);
                if self.is_punct(',') {
                    self.next();
                    continue;
                }
                break;
            }
        }
        self.punct(';')?;
        if operations.len() > 2 {
            return Err(self.error_at(
                &operations[2].token,
                "too many operations: one RGB and one alpha per instruction".to_string(),
            ));
        }
        let units = self.units(&operations)?;
        for (operation, alpha) in operations.iter().zip(units) {
            self.emit_operation(words, operation, alpha)?;
        }
        Ok(())
    }

    /// `src0.rgb = temp[0]`, `src1.a = const[3]`, `src2.a = float(48)`, `srcp.rgb = sub`.
    fn source_let(&mut self, words: &mut Words, seen: &mut Vec<(String, String)>) -> Result<()> {
        let (source, token) = self.word("a source (src0, src1, src2, srcp)")?;
        let slot = match source.as_str() {
            "src0" => 0,
            "src1" => 1,
            "src2" => 2,
            "srcp" => 3,
            _ => {
                return Err(self.error_at(
                    &token,
                    format!("expected a source (src0, src1, src2, srcp) or `:`, found `{source}`"),
                ))
            }
        };
        self.punct('.')?;
        let (unit, unit_token) = self.word("`rgb` or `a`")?;
        let alpha = match unit.as_str() {
            "rgb" => false,
            "a" => true,
            _ => {
                return Err(self.error_at(
                    &unit_token,
                    format!("expected `rgb` or `a`, found `{unit}`"),
                ))
            }
        };
        if seen.contains(&(source.clone(), unit.clone())) {
            return Err(self.error_at(&token, format!("{source}.{unit} is set twice")));
        }
        seen.push((source, unit));
        self.punct('=')?;
        if slot == 3 {
            let (op, token) = self.word("a pre-subtract op (neg2, sub, add, neg)")?;
            let code = f::SRCP_OPS
                .iter()
                .position(|name| *name == op)
                .ok_or_else(|| {
                    self.error_at(
                        &token,
                        format!("expected a pre-subtract op (neg2, sub, add, neg), found `{op}`"),
                    )
                })?;
            let field = if alpha {
                f::ALPHA_SRCP_OP
            } else {
                f::RGB_SRCP_OP
            };
            field.set(words, code as u32);
            return Ok(());
        }
        let [addr, constant, rel] = f::source_fields(alpha, slot);
        let (file, _) = self.word("temp[N], const[N] or float(N)")?;
        let (value, relative, is_const) = match file.as_str() {
            "temp" => {
                self.punct('[')?;
                let (n, r) = self.index("a temp number", 127)?;
                self.punct(']')?;
                (n, r, false)
            }
            "const" => {
                self.punct('[')?;
                let (n, r) = self.index("a constant number", 255)?;
                self.punct(']')?;
                (n, r, true)
            }
            "float" => {
                self.punct('(')?;
                let (n, r) = self.index("an inline constant code", 127)?;
                self.punct(')')?;
                (0x80 | n, r, false)
            }
            _ => {
                self.position -= 1;
                return Err(self.expected("temp[N], const[N] or float(N)"));
            }
        };
        addr.set(words, value);
        constant.set(words, is_const as u32);
        rel.set(words, relative as u32);
        Ok(())
    }

    /// `dest = ... [omod *] OP args`.
    fn operation(&mut self) -> Result<Operation> {
        let mut dests = Vec::new();
        while matches!(self.peek_word(), Some("temp" | "out"))
            && self.peek_at(1).kind == Kind::Punct('[')
        {
            let (file, _) = self.word("temp or out")?;
            self.punct('[')?;
            let (index, relative) = if file == "out" {
                (self.number("a render target", 3)?, false)
            } else {
                self.index("a temp number", 127)?
            };
            self.punct(']')?;
            self.punct('.')?;
            let (mask, token) = self.word("a write mask")?;
            self.punct('=')?;
            dests.push((file == "out", index, relative, mask, token));
        }
        let mut omod = 0;
        if self.peek_word() == Some("OMOD_DISABLE") {
            self.next();
            omod = 7;
        } else if self.peek_at(1).kind == Kind::Punct('.')
            && self.peek_at(3).kind == Kind::Punct('*')
        {
            let (whole, token) = self.word("an output modifier")?;
            self.punct('.')?;
            let (fraction, _) = self.word("an output modifier")?;
            self.punct('*')?;
            omod = match (whole.as_str(), fraction.as_str()) {
                ("1", "0") => 0,
                ("2", "0") => 1,
                ("4", "0") => 2,
                ("8", "0") => 3,
                ("0", "5") => 4,
                ("0", "25") => 5,
                ("0", "125") => 6,
                _ => {
                    return Err(self.error_at(
                        &token,
                        format!("expected an output modifier (1.0, 2.0, 4.0, 8.0, 0.5, 0.25, 0.125), found `{whole}.{fraction}`"),
                    ))
                }
            };
        }
        let (name, token) = self.word("an ALU op (MAD, DP3, MAX, RSQ, ...)")?;
        let known =
            f::code_of(&f::RGB_OPS, &name).is_some() || f::code_of(&f::ALPHA_OPS, &name).is_some();
        if !known {
            return Err(self.error_at(&token, format!("expected an ALU op (MAD, DP3, DP4, D2A, MIN, MAX, CND, CMP, FRC, SOP, MDH, MDV, DP, EX2, LN2, RCP, RSQ, SIN, COS), found `{name}`")));
        }
        let mut args = Vec::new();
        while !self.is_punct(',') && !self.is_punct(';') {
            if args.len() == 3 {
                return Err(self.expected("`,` or `;` after three arguments"));
            }
            let mut modifier = 0;
            if self.is_punct('-') {
                self.next();
                modifier |= 1;
            }
            let abs = self.is_punct('|');
            if abs {
                self.next();
                modifier |= 2;
            }
            let (source, source_token) =
                self.word("an argument (src0.rgb, -src1.a, |srcp.r|, ...)")?;
            let select = match source.as_str() {
                "src0" => 0,
                "src1" => 1,
                "src2" => 2,
                "srcp" => 3,
                _ => {
                    return Err(self.error_at(
                        &source_token,
                        format!("expected an argument (src0, src1, src2, srcp), found `{source}`"),
                    ))
                }
            };
            self.punct('.')?;
            let (swizzle, swizzle_token) = self.swizzle_word()?;
            if abs {
                self.punct('|')?;
            }
            args.push((select, swizzle, modifier, swizzle_token));
        }
        Ok(Operation {
            token,
            name,
            dests,
            omod,
            args,
        })
    }

    /// A swizzle: letters and digits, possibly split by the lexer at `_`-free boundaries.
    fn swizzle_word(&mut self) -> Result<(String, Token)> {
        let (text, token) = self.word("a swizzle (r, g, b, a, 0, h, 1, _)")?;
        Ok((text, token))
    }

    /// Which operation is the alpha one: by op name, then mask, then swizzle length.
    fn units(&self, operations: &[Operation]) -> Result<Vec<bool>> {
        let unit = |operation: &Operation| -> Option<bool> {
            let name = operation.name.as_str();
            let rgb_op = f::code_of(&f::RGB_OPS, name).is_some();
            let alpha_op = f::code_of(&f::ALPHA_OPS, name).is_some();
            if rgb_op != alpha_op {
                return Some(alpha_op);
            }
            for (_, _, _, mask, _) in &operation.dests {
                if mask == "a" {
                    return Some(true);
                }
                if mask != "none" {
                    return Some(false);
                }
            }
            operation
                .args
                .first()
                .map(|(_, swizzle, _, _)| swizzle.len() == 1)
        };
        let mut units: Vec<Option<bool>> = operations.iter().map(unit).collect();
        if units.len() == 2 {
            match (units[0], units[1]) {
                (Some(a), Some(b)) if a == b => {
                    return Err(self.error_at(
                        &operations[1].token,
                        format!(
                            "both operations are {} operations",
                            if a { "alpha" } else { "RGB" }
                        ),
                    ))
                }
                (Some(a), None) => units[1] = Some(!a),
                (None, Some(b)) => units[0] = Some(!b),
                _ => {}
            }
        }
        units
            .iter()
            .zip(operations)
            .map(|(unit, operation)| {
                unit.ok_or_else(|| {
                    self.error_at(
                        &operation.token,
                        format!("cannot tell whether {} is the RGB or the alpha operation: give a destination mask or arguments", operation.name),
                    )
                })
            })
            .collect()
    }

    fn emit_operation(&self, words: &mut Words, operation: &Operation, alpha: bool) -> Result<()> {
        let unit = if alpha { "alpha" } else { "RGB" };
        let code = if alpha {
            f::code_of(&f::ALPHA_OPS, &operation.name)
        } else {
            f::code_of(&f::RGB_OPS, &operation.name)
        };
        let code = code.ok_or_else(|| {
            self.error_at(
                &operation.token,
                format!("{} is not an {unit} op", operation.name),
            )
        })?;
        let (op_field, omod_field) = if alpha {
            (f::ALPHA_OP, f::ALPHA_OMOD)
        } else {
            (f::RGB_OP, f::RGB_OMOD)
        };
        op_field.set(words, code);
        omod_field.set(words, operation.omod);
        for (is_out, index, relative, mask, token) in &operation.dests {
            let mask_value = if alpha {
                match mask.as_str() {
                    "a" => Some(1),
                    "none" => Some(0),
                    _ => None,
                }
            } else {
                ["none", "r", "g", "rg", "b", "rb", "gb", "rgb"]
                    .iter()
                    .position(|m| m == mask)
                    .map(|m| m as u32)
            };
            let mask_value = mask_value.ok_or_else(|| {
                self.error_at(
                    token,
                    format!(
                        "expected an {unit} write mask ({}), found `{mask}`",
                        if alpha {
                            "a, none"
                        } else {
                            "r, g, rg, b, rb, gb, rgb, none"
                        }
                    ),
                )
            })?;
            let fields = match (alpha, is_out) {
                (false, false) => (f::RGB_WMASK, f::RGB_ADDRD, Some(f::RGB_ADDRD_REL)),
                (true, false) => (f::ALPHA_WMASK, f::ALPHA_ADDRD, Some(f::ALPHA_ADDRD_REL)),
                (false, true) => (f::RGB_OMASK, f::RGB_TARGET, None),
                (true, true) => (f::ALPHA_OMASK, f::ALPHA_TARGET, None),
            };
            fields.0.set(words, mask_value);
            fields.1.set(words, *index);
            if let Some(rel) = fields.2 {
                rel.set(words, *relative as u32);
            }
        }
        for (arg, (select, swizzle, modifier, token)) in operation.args.iter().enumerate() {
            let codes: Vec<u32> = swizzle
                .chars()
                .filter_map(|c| {
                    f::ALU_SWIZZLES
                        .iter()
                        .position(|&s| s == c)
                        .map(|i| i as u32)
                })
                .collect();
            let length = if alpha { 1 } else { 3 };
            if codes.len() != swizzle.chars().count() || codes.len() != length {
                return Err(self.error_at(
                    token,
                    format!("expected {length} swizzle character(s) of r, g, b, a, 0, h, 1, _ for the {unit} operation, found `{swizzle}`"),
                ));
            }
            if alpha {
                let (sel, swiz, modf) = f::alpha_arg_fields(arg);
                sel.set(words, *select);
                swiz.set(words, codes[0]);
                modf.set(words, *modifier);
            } else {
                let (sel, swizzles, modf) = f::rgb_arg_fields(arg);
                sel.set(words, *select);
                for (field, code) in swizzles.iter().zip(&codes) {
                    field.set(words, *code);
                }
                modf.set(words, *modifier);
            }
        }
        Ok(())
    }
}

/// A TEX write mask: r, g, b, a in that order (any subset), or `none`.
fn tex_mask(mask: &str) -> Option<(u32, u32)> {
    if mask == "none" {
        return Some((0, 0));
    }
    let mut rgb = 0;
    let mut alpha = 0;
    let mut next = 0;
    for c in mask.chars() {
        let position = "rgba".find(c)?;
        if position < next {
            return None;
        }
        next = position + 1;
        if position == 3 {
            alpha = 1;
        } else {
            rgb |= 1 << position;
        }
    }
    Some((rgb, alpha))
}
