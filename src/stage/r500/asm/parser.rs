//! Tokens, the parser's primitives, and the TEX and FC instructions.

use std::path::PathBuf;

use super::{error, Result};
use crate::emu::isa::asm::Diagnostic;
use crate::stage::r500::decode::validate;
use crate::stage::r500::fields::{self as f, kind, Field, Words};

#[derive(Clone, Debug, PartialEq)]
pub(super) enum R500TokenKind {
    /// A run of letters, digits and underscores.
    Word(String),
    /// One punctuation character.
    Punct(char),
    /// End of the file.
    End,
}

#[derive(Clone, Debug)]
pub(super) struct R500Token {
    pub(super) kind: R500TokenKind,
    pub(super) file: usize,
    pub(super) line: usize,
    pub(super) col: usize,
}

pub(super) fn lex(
    text: &str,
    file: usize,
    first_line: usize,
) -> std::result::Result<Vec<R500Token>, (usize, usize, String)> {
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
                tokens.push(R500Token {
                    kind: R500TokenKind::Word(chars[start..i].iter().collect()),
                    file,
                    line: number,
                    col,
                });
            } else if ".,:;=[]()|-*+".contains(c) {
                tokens.push(R500Token {
                    kind: R500TokenKind::Punct(c),
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
    tokens.push(R500Token {
        kind: R500TokenKind::End,
        file,
        line: last.0,
        col: last.1,
    });
    Ok(tokens)
}

pub(super) struct Parser<'a> {
    tokens: Vec<R500Token>,
    position: usize,
    files: &'a [PathBuf],
}

fn describe(kind: &R500TokenKind) -> String {
    match kind {
        R500TokenKind::Word(word) => format!("`{word}`"),
        R500TokenKind::Punct(c) => format!("`{c}`"),
        R500TokenKind::End => "the end of the file".to_string(),
    }
}

/// A decimal or `0x` hexadecimal number.
fn number(text: &str) -> Option<u32> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

impl<'a> Parser<'a> {
    pub(super) fn new(tokens: Vec<R500Token>, files: &'a [PathBuf]) -> Parser<'a> {
        Parser {
            tokens,
            position: 0,
            files,
        }
    }

    pub(super) fn at_end(&self) -> bool {
        self.peek().kind == R500TokenKind::End
    }

    pub(super) fn peek(&self) -> &R500Token {
        &self.tokens[self.position]
    }

    pub(super) fn peek_at(&self, ahead: usize) -> &R500Token {
        &self.tokens[(self.position + ahead).min(self.tokens.len() - 1)]
    }

    pub(super) fn next(&mut self) -> R500Token {
        let token = self.tokens[self.position].clone();
        if token.kind != R500TokenKind::End {
            self.position += 1;
        }
        token
    }

    /// Steps back over the token just read, so that an error points at it.
    pub(super) fn unread(&mut self) {
        self.position = self.position.saturating_sub(1);
    }

    pub(super) fn error_at(&self, token: &R500Token, message: String) -> Diagnostic {
        error(&self.files[token.file], token.line, token.col, message)
    }

    pub(super) fn expected(&self, what: &str) -> Diagnostic {
        let token = self.peek();
        self.error_at(
            token,
            format!("expected {what}, found {}", describe(&token.kind)),
        )
    }

    pub(super) fn punct(&mut self, c: char) -> Result<R500Token> {
        if self.peek().kind == R500TokenKind::Punct(c) {
            Ok(self.next())
        } else {
            Err(self.expected(&format!("`{c}`")))
        }
    }

    pub(super) fn is_punct(&self, c: char) -> bool {
        self.peek().kind == R500TokenKind::Punct(c)
    }

    pub(super) fn word(&mut self, what: &str) -> Result<(String, R500Token)> {
        match &self.peek().kind {
            R500TokenKind::Word(word) => {
                let word = word.clone();
                Ok((word, self.next()))
            }
            _ => Err(self.expected(what)),
        }
    }

    pub(super) fn peek_word(&self) -> Option<&str> {
        match &self.peek().kind {
            R500TokenKind::Word(word) => Some(word),
            _ => None,
        }
    }

    pub(super) fn keyword(&mut self, keyword: &str) -> Result<R500Token> {
        if self.peek_word() == Some(keyword) {
            Ok(self.next())
        } else {
            Err(self.expected(&format!("`{keyword}`")))
        }
    }

    pub(super) fn number(&mut self, what: &str, max: u32) -> Result<u32> {
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
    pub(super) fn index(&mut self, what: &str, max: u32) -> Result<(u32, bool)> {
        let relative =
            self.peek_word() == Some("aL") && self.peek_at(1).kind == R500TokenKind::Punct('+');
        if relative {
            self.next();
            self.next();
        }
        Ok((self.number(what, max)?, relative))
    }

    pub(super) fn set(
        &self,
        words: &mut Words,
        field: Field,
        value: u32,
        token: &R500Token,
    ) -> Result<()> {
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
    pub(super) fn tags(&mut self, words: &mut Words, ty: u32) -> Result<()> {
        while let Some(name) = self.peek_word() {
            let Some(field) = f::CMN
                .iter()
                .chain(f::fields_of(ty))
                .copied()
                .find(|field| {
                    field.name == name && !crate::stage::r500::disasm::covered(ty, *field)
                })
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

    pub(super) fn instruction(&mut self) -> Result<Words> {
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

    pub(super) fn tex(&mut self, words: &mut Words) -> Result<()> {
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

    pub(super) fn tex_swizzle(&mut self) -> Result<[u32; 4]> {
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

    pub(super) fn fc(&mut self, words: &mut Words) -> Result<()> {
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
