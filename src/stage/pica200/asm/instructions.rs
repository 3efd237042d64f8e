//! One function per instruction format: operands to words.

use super::operands::{comparison, mask_of, source_bits};
use super::{is_identifier, Arg, Block, BlockKind, PicaAssembler, Relocation, Result};
use crate::stage::pica200::decode::PicaWord;
use crate::stage::pica200::opcodes::{by_opcode, info, OpInfo, PicaOp};

impl PicaAssembler {
    /// DST, SRC1, SRC2 (`row` is the plain form; the inverted one when SRC1 must be narrow).
    pub(super) fn format1(&mut self, row: &OpInfo, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 3, at, "destination, source1, source2")?;
        let dest = self.destination(args[0])?;
        let s1 = self.operand(args[1], true)?;
        let s2 = self.operand(args[2], true)?;
        let op = match row.inverted {
            Some(inverted) if s1.reg < 0x20 && s2.reg >= 0x20 => inverted,
            _ => row.op,
        };
        let format = info(op).format;
        let (s1, s2) = if format.is_inverted() {
            (self.narrow(args[1], 1)?, self.wide(args[2], 2)?)
        } else {
            (self.wide(args[1], 1)?, self.narrow(args[2], 2)?)
        };
        self.check_inputs(&[s1.reg, s2.reg], at)?;
        let value = mask_of(dest.swizzle)
            | source_bits(0, s1.negate, s1.swizzle)
            | source_bits(1, s2.negate, s2.swizzle);
        let desc = self.descriptor(row.op, value, 0xF | 0x1FF << 4 | 0x1FF << 13)? as u8;
        self.push(PicaWord::Arith {
            op,
            dst: dest.reg as u8,
            src1: s1.reg as u8,
            src2: s2.reg as u8,
            idx: [s1.idx, s2.idx][format.indexed_source()],
            desc,
        });
        Ok(())
    }

    pub(super) fn format1u(&mut self, op: PicaOp, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 2, at, "destination, source1")?;
        let dest = self.destination(args[0])?;
        let s1 = self.wide(args[1], 1)?;
        let value = mask_of(dest.swizzle) | source_bits(0, s1.negate, s1.swizzle);
        let desc = self.descriptor(op, value, 0xF | 0x1FF << 4)? as u8;
        self.push(PicaWord::Arith {
            op,
            dst: dest.reg as u8,
            src1: s1.reg as u8,
            src2: 0,
            idx: s1.idx,
            desc,
        });
        Ok(())
    }

    pub(super) fn mova(&mut self, args: &[Arg], at: usize) -> Result<()> {
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
            PicaOp::Mova,
            mask | source_bits(0, s1.negate, s1.swizzle),
            0xF | 0x1FF << 4,
        )? as u8;
        self.push(PicaWord::Arith {
            op: PicaOp::Mova,
            dst: 0,
            src1: s1.reg as u8,
            src2: 0,
            idx: s1.idx,
            desc,
        });
        Ok(())
    }

    pub(super) fn cmp(&mut self, args: &[Arg], at: usize) -> Result<()> {
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
        let desc = self.descriptor(PicaOp::Cmp, value, 0x1FF << 4 | 0x1FF << 13)? as u8;
        self.push(PicaWord::Cmp {
            src1: s1.reg as u8,
            src2: s2.reg as u8,
            idx: s1.idx,
            desc,
            cmpx,
            cmpy,
        });
        Ok(())
    }

    /// DST, SRC1, SRC2, SRC3: MAD, or MADI when SRC2 must be narrow.
    pub(super) fn mad(&mut self, row: &OpInfo, args: &[Arg], at: usize) -> Result<()> {
        self.expect_args(args, 4, at, "destination, source1, source2, source3")?;
        let dest = self.destination(args[0])?;
        let s1 = self.narrow(args[1], 1)?;
        let s2 = self.operand(args[2], true)?;
        let s3 = self.operand(args[3], true)?;
        let op = match row.inverted {
            Some(inverted) if s2.reg < 0x20 && (s3.reg >= 0x20 || (s3.idx != 0 && s2.idx == 0)) => {
                inverted
            }
            _ => row.op,
        };
        let format = info(op).format;
        let (s2, s3) = if format.is_inverted() {
            (self.narrow(args[2], 2)?, self.wide(args[3], 3)?)
        } else {
            (self.wide(args[2], 2)?, self.narrow(args[3], 3)?)
        };
        self.check_inputs(&[s1.reg, s2.reg, s3.reg], at)?;
        let value = mask_of(dest.swizzle)
            | source_bits(0, s1.negate, s1.swizzle)
            | source_bits(1, s2.negate, s2.swizzle)
            | source_bits(2, s3.negate, s3.swizzle);
        let desc = self.descriptor(row.op, value, 0xF | 0x1FF << 4 | 0x1FF << 13 | 0x1FF << 22)?;
        let desc = self.low_descriptor(desc, at)?;
        self.push(PicaWord::Mad {
            op,
            dst: dest.reg as u8,
            src1: s1.reg as u8,
            src2: s2.reg as u8,
            src3: s3.reg as u8,
            idx: [s1.idx, s2.idx, s3.idx][format.indexed_source()],
            desc: desc as u8,
        });
        Ok(())
    }

    /// MAD reaches only descriptors 0-31: a higher `desc` swaps with the first low slot no
    /// MAD uses, renumbering the instructions that used either. Returns the slot.
    fn low_descriptor(&mut self, desc: usize, at: usize) -> Result<usize> {
        if desc >= 32 {
            let which = (0..32)
                .find(|&w| self.mad_descriptors >> w & 1 == 0)
                .ok_or_else(|| self.error(at, "no operand descriptor below 32 left for MAD"))?;
            self.descriptors.swap(which, desc);
            for word in &mut self.code {
                let wide = by_opcode((*word >> 26) as u8)
                    .is_some_and(|row| row.format.descriptor_bits() == 7);
                if wide {
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
            self.mad_descriptors |= 1 << which;
            return Ok(which);
        }
        self.mad_descriptors |= 1 << desc;
        Ok(desc)
    }

    pub(super) fn setemit(&mut self, args: &[Arg], at: usize) -> Result<()> {
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
        self.push(PicaWord::SetEmit {
            vertex,
            primitive,
            winding,
        });
        Ok(())
    }

    /// `proc` or `dst, num` of CALL, CALLC, CALLU: records a relocation for a name.
    pub(super) fn call_target(&mut self, args: &[Arg], at: usize) -> Result<(u16, u8)> {
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

    pub(super) fn label_target(&mut self, target: Arg) -> Result<u16> {
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

    pub(super) fn call(&mut self, args: &[Arg], at: usize) -> Result<()> {
        let (dst, num) = self.call_target(args, at)?;
        self.push(PicaWord::Flow {
            op: PicaOp::Call,
            refx: false,
            refy: false,
            condop: 0,
            dst,
            num,
        });
        Ok(())
    }

    pub(super) fn for_loop(&mut self, args: &[Arg], at: usize) -> Result<()> {
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
        self.push(PicaWord::Uniform {
            op: PicaOp::Loop,
            id,
            dst,
            num: 0,
        });
        Ok(())
    }

    /// IFC and IFU's targets: none (a block follows, up to `.end`), or an else address and
    /// a count; `usage` says what else the instruction takes.
    fn if_targets(&mut self, rest: &[Arg], at: usize, usage: &str) -> Result<(u16, u8)> {
        match rest {
            [] => {
                self.stack.push(Block {
                    kind: BlockKind::If { else_at: None },
                    pos: self.code.len(),
                });
                Ok((0, 0))
            }
            [dst, num] => Ok((
                self.number(*dst, 0xFFF)? as u16,
                self.number(*num, 0xFF)? as u8,
            )),
            _ => Err(self.error(at, usage)),
        }
    }

    /// BREAKC, CALLC, IFC, JMPC: a condition on cc, then the operation's targets.
    pub(super) fn format2(&mut self, op: PicaOp, args: &[Arg], at: usize) -> Result<()> {
        let Some(&condition) = args.first() else {
            return Err(self.error(at, "missing condition"));
        };
        let (refx, refy, condop) = self.condition(condition)?;
        let rest = &args[1..];
        let (dst, num) = match op {
            PicaOp::Breakc => {
                self.expect_args(rest, 0, at, "only a condition")?;
                (0, 0)
            }
            PicaOp::Callc => self.call_target(rest, at)?,
            PicaOp::Jmpc => {
                self.expect_args(rest, 1, at, "a condition and a label")?;
                (self.label_target(rest[0])?, 0)
            }
            _ => self.if_targets(
                rest,
                at,
                "ifc takes a condition (and optionally an else address and a count)",
            )?,
        };
        self.push(PicaWord::Flow {
            op,
            refx,
            refy,
            condop,
            dst,
            num,
        });
        Ok(())
    }

    /// CALLU, IFU, JMPU: a bool uniform (JMPU's may be negated), then the targets.
    pub(super) fn format3(&mut self, op: PicaOp, args: &[Arg], at: usize) -> Result<()> {
        let Some(&first) = args.first() else {
            return Err(self.error(at, "missing bool uniform"));
        };
        let mut flag = first;
        let mut invert = false;
        if let Some(rest) = first.text.strip_prefix('!') {
            if op != PicaOp::Jmpu {
                return Err(self.error(
                    first.column,
                    format!(
                        "{} cannot invert its condition (only jmpu can)",
                        info(op).mnemonic
                    ),
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
        let (dst, num) = match op {
            PicaOp::Callu => self.call_target(rest, at)?,
            PicaOp::Jmpu => {
                self.expect_args(rest, 1, at, "a bool uniform and a label")?;
                (self.label_target(rest[0])?, invert as u8)
            }
            _ => self.if_targets(
                rest,
                at,
                "ifu takes a bool uniform (and optionally an else address and a count)",
            )?,
        };
        self.push(PicaWord::Uniform { op, id, dst, num });
        Ok(())
    }
}
