//! The directives: blocks (`.proc`, `.else`, `.end`), names (`.alias`, uniforms, `.in`,
//! `.out`), constants and settings.

use super::operands::parse_swizzle;
use super::{
    is_identifier, operand_list, split, words_of, Arg, Block, BlockKind, PicaAssembler, Result,
    IDENTITY,
};
use crate::stage::pica200::f24::quantize_f24;
use crate::stage::pica200::{semantic, Constant, PicaOutput, Uniform};

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

impl PicaAssembler {
    pub(super) fn directive(
        &mut self,
        name: &str,
        mnemonic: Arg,
        operands: &str,
        column: usize,
    ) -> Result<()> {
        let at = mnemonic.column;
        let args = || operand_list(operands, column);
        let words = || words_of(operands, column);
        match name {
            "proc" => self.proc(&args(), at),
            "else" => self.else_branch(&args(), at),
            "end" => self.end_block(&args(), at),
            "alias" => self.alias(&words(), at),
            "fvec" | "ivec" | "bool" => self.uniforms(name, &args()),
            "constf" | "consti" | "setf" | "seti" => self.constant(name, operands, column),
            "constfa" => self.constfa(operands, column, at),
            "setb" => self.setb(&words(), at),
            "in" => self.input(&words(), at),
            "out" => self.out(&words(), at),
            "entry" => {
                let words = words();
                self.expect_args(&words, 1, at, "a procedure name")?;
                self.entry_name = words[0].text.to_string();
                Ok(())
            }
            "gsh" => {
                self.program.geometry = true;
                Ok(())
            }
            "nodvle" => Ok(()),
            _ => Err(self.error(at, format!("unknown directive `{}`", mnemonic.text))),
        }
    }

    /// `.proc NAME`: opens a procedure.
    fn proc(&mut self, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 1, at, "a procedure name")?;
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
        Ok(())
    }

    /// `.else` in an IFC/IFU block: the IF branch ends here.
    fn else_branch(&mut self, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 0, at, "nothing")?;
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
        self.pad_block_end(&BlockKind::If { else_at: None }, pos, 2, at);
        let here = self.code.len();
        if let Some(Block {
            kind: BlockKind::If { else_at },
            ..
        }) = self.stack.last_mut()
        {
            *else_at = Some(here);
        }
        self.code[pos] = (self.code[pos] & !(0xFFF << 10)) | (here as u32) << 10;
        Ok(())
    }

    /// picasso's padding NOP before a block ends: right after another block's end, after an
    /// instruction the block must not end on, or in a block shorter than `minimum`.
    fn pad_block_end(&mut self, kind: &BlockKind, pos: usize, minimum: usize, at: usize) {
        if self.last_was_end {
            self.padding_nop(at);
            self.last_was_end = false;
        } else if !self.code.is_empty()
            && (self.ends_badly(kind) || self.code.len() - pos < minimum)
        {
            self.padding_nop(at);
        }
    }

    /// `.end`: closes the innermost block, with picasso's padding NOPs.
    fn end_block(&mut self, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 0, at, "nothing")?;
        let block = self
            .stack
            .pop()
            .ok_or_else(|| self.error(at, ".end without an open block"))?;
        if !matches!(block.kind, BlockKind::Array { .. }) {
            let minimum = if matches!(block.kind, BlockKind::Proc(_)) {
                1
            } else {
                2
            };
            self.pad_block_end(&block.kind, block.pos, minimum, at);
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
        Ok(())
    }

    /// `.alias NAME REGISTER`.
    fn alias(&mut self, words: &[Arg], at: usize) -> Result<()> {
        self.expect_args(words, 2, at, "a name and a register")?;
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
        Ok(())
    }

    /// `.fvec`, `.ivec`, `.bool`: uniforms from the bottom of their register file.
    fn uniforms(&mut self, name: &str, args: &[Arg]) -> Result<()> {
        for &arg in args {
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
        Ok(())
    }

    /// `.constf`/`.consti` (constants from the top of their file), `.setf`/`.seti` (a
    /// register's value).
    fn constant(&mut self, name: &str, operands: &str, column: usize) -> Result<()> {
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
        Ok(())
    }

    /// `.setb bN true|false`.
    fn setb(&mut self, words: &[Arg], at: usize) -> Result<()> {
        self.expect_args(words, 2, at, "a bool uniform and true/false")?;
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
        Ok(())
    }

    /// `.in NAME [REGISTER]`.
    fn input(&mut self, words: &[Arg], at: usize) -> Result<()> {
        if words.is_empty() || words.len() > 2 {
            return Err(self.error(at, "expected a name and optionally an input register"));
        }
        let register = match words.get(1) {
            Some(arg) => {
                let operand = self.operand(*arg, false)?;
                if operand.reg >= 0x10 {
                    return Err(
                        self.error(arg.column, format!("invalid input register `{}`", arg.text))
                    );
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
        Ok(())
    }

    /// `name(a, b, c, d)`.
    pub(super) fn parenthesised<'a>(
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
    pub(super) fn floats4(&self, values: &[Arg]) -> Result<[f32; 4]> {
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

    pub(super) fn constfa(&mut self, operands: &str, column: usize, at: usize) -> Result<()> {
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

    pub(super) fn end_array(&mut self, name: String, size: Option<usize>, at: usize) -> Result<()> {
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
    pub(super) fn out(&mut self, words: &[Arg], at: usize) -> Result<()> {
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
        self.program.outputs.push(PicaOutput {
            semantic,
            register: register as u8,
            mask,
        });
        if words[0].text != "-" {
            self.define(words[0], register, false, IDENTITY)?;
        }
        Ok(())
    }
}
