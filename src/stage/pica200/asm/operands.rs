//! Operands: registers with negation, index and swizzle, operand descriptors, numbers,
//! uniforms and flow conditions.

use super::{Arg, Operand, PicaAssembler, Result, IDENTITY};
use crate::stage::pica200::decode::selector_byte;
use crate::stage::pica200::opcodes::PicaOp;

/// Parses picasso's swizzle text (`xyzw`, `rgba`, `stpq`); missing components repeat the
/// last one given.
pub(super) fn parse_swizzle(text: &str) -> Option<[u8; 4]> {
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
pub(super) fn mask_of(swizzle: [u8; 4]) -> u32 {
    swizzle.iter().fold(0, |m, &c| m | 1 << (3 - c))
}

/// Descriptor bits of source `n` (negate + selector).
pub(super) fn source_bits(n: usize, negate: bool, swizzle: [u8; 4]) -> u32 {
    ((negate as u32) | selector_byte(swizzle) << 1) << (4 + 9 * n)
}

/// The selector bits of components `unused` of source `n`.
pub(super) fn unused_bits(n: usize, unused: &[usize]) -> u32 {
    unused
        .iter()
        .fold(0, |m, &i| m | (3 << (6 - 2 * i)) << (5 + 9 * n))
}

pub(super) fn index_register(name: &str) -> u8 {
    match name.to_ascii_lowercase().as_str() {
        "a0" | "a0.x" => 1,
        "a1" | "a0.y" => 2,
        "a2" | "lcnt" | "al" => 3,
        _ => 0,
    }
}

pub(super) fn comparison(name: &str) -> Option<u8> {
    ["eq", "ne", "lt", "le", "gt", "ge"]
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map(|p| p as u8)
}

impl PicaAssembler {
    /// Parses `-name[index].swizzle`.
    pub(super) fn operand(&self, arg: Arg, index_allowed: bool) -> Result<Operand> {
        let mut text = arg.text;
        let mut negate = false;
        if let Some(rest) = text.strip_prefix('-') {
            negate = true;
            text = rest.trim_start();
        }
        let (name, idx, offset, tail) = match text.find('[') {
            Some(open) => {
                let close = text[open..].find(']').map(|c| c + open).ok_or_else(|| {
                    self.error(arg.column, format!("missing `]` in `{}`", arg.text))
                })?;
                let inside = text[open + 1..close].trim();
                let (idx, offset) = self.index(arg, inside, index_allowed)?;
                (&text[..open], idx, offset, &text[close + 1..])
            }
            None => match text.find('.') {
                Some(dot) => (&text[..dot], 0, 0, &text[dot..]),
                None => (text, 0, 0, ""),
            },
        };
        let swizzle = self.swizzle(arg, tail)?;
        let name = name.trim();
        if let Some(alias) = self.aliases.get(name) {
            return Ok(Operand {
                reg: alias.reg + offset,
                negate: negate ^ alias.negate,
                swizzle: swizzle.map(|c| alias.swizzle[c as usize]),
                idx,
            });
        }
        let reg = self.register(arg, name)?;
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

    /// What stands between the brackets, `a0.x`, `aL + 3`, `5`: (index register, offset).
    fn index(&self, arg: Arg, inside: &str, index_allowed: bool) -> Result<(u8, u32)> {
        let (register, number) = match inside.split_once('+') {
            Some((r, n)) => (Some(r.trim()), n.trim()),
            None if index_register(inside) > 0 => (Some(inside), ""),
            None => (None, inside),
        };
        let mut idx = 0;
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
        if number.is_empty() {
            return Ok((idx, 0));
        }
        let offset = number.parse().map_err(|_| {
            self.error(
                arg.column,
                format!("invalid register offset `{number}`: expected a number ≥ 0"),
            )
        })?;
        Ok((idx, offset))
    }

    /// The swizzle of what follows the register: `.xyzw` or nothing.
    fn swizzle(&self, arg: Arg, tail: &str) -> Result<[u8; 4]> {
        if let Some(components) = tail.strip_prefix('.') {
            parse_swizzle(components).ok_or_else(|| {
                self.error(
                    arg.column,
                    format!("invalid swizzle `.{components}`: expected up to four of x y z w"),
                )
            })
        } else if !tail.trim().is_empty() {
            Err(self.error(
                arg.column,
                format!("unexpected `{tail}` after the register"),
            ))
        } else {
            Ok(IDENTITY)
        }
    }

    /// A register by its name, `v3`, `c40`, `b1`, in picasso's numbering.
    fn register(&self, arg: Arg, name: &str) -> Result<u32> {
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
        Ok(base + number)
    }

    pub(super) fn destination(&self, arg: Arg) -> Result<Operand> {
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

    pub(super) fn wide(&self, arg: Arg, n: usize) -> Result<Operand> {
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

    pub(super) fn narrow(&self, arg: Arg, n: usize) -> Result<Operand> {
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
    pub(super) fn check_inputs(&self, regs: &[u32], at: usize) -> Result<()> {
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
    pub(super) fn descriptor(&mut self, op: PicaOp, value: u32, mut mask: u32) -> Result<usize> {
        // Selector slots the operation never reads are don't-cares (picasso's
        // optimizeOpdesc), so descriptors that differ only there are shared.
        let unused_dest: Vec<usize> = (0..4).filter(|&i| value >> (3 - i) & 1 == 0).collect();
        let all3 = |u: &[usize]| unused_bits(0, u) | unused_bits(1, u) | unused_bits(2, u);
        mask &= !match op {
            PicaOp::Add
            | PicaOp::Mul
            | PicaOp::Sge
            | PicaOp::Slt
            | PicaOp::Flr
            | PicaOp::Max
            | PicaOp::Min
            | PicaOp::Mov
            | PicaOp::Mad => all3(&unused_dest),
            PicaOp::Dp3 => unused_bits(0, &[3]) | unused_bits(1, &[3]),
            PicaOp::Dph => unused_bits(0, &[3]),
            PicaOp::Ex2 | PicaOp::Lg2 | PicaOp::Rcp | PicaOp::Rsq => unused_bits(0, &[1, 2, 3]),
            PicaOp::Mova => {
                let mut unused = vec![2, 3];
                unused.extend(unused_dest.iter().filter(|&&i| i < 2));
                unused_bits(0, &unused)
            }
            PicaOp::Cmp => unused_bits(0, &[2, 3]),
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

    /// A number operand of the explicit-target forms.
    pub(super) fn number(&self, arg: Arg, max: u32) -> Result<u32> {
        arg.text.parse().ok().filter(|&n| n <= max).ok_or_else(|| {
            self.error(
                arg.column,
                format!("invalid number `{}`: expected 0..={max}", arg.text),
            )
        })
    }

    pub(super) fn starts_with_digit(arg: &Arg) -> bool {
        arg.text.starts_with(|c: char| c.is_ascii_digit())
    }

    pub(super) fn int_uniform(&self, arg: Arg) -> Result<u8> {
        let operand = self.operand(arg, false)?;
        if !(0x80..0x84).contains(&operand.reg) {
            return Err(self.error(
                arg.column,
                format!("invalid integer uniform `{}`: expected i0..i3", arg.text),
            ));
        }
        Ok((operand.reg - 0x80) as u8)
    }

    pub(super) fn bool_uniform(&self, arg: Arg) -> Result<u8> {
        let operand = self.operand(arg, false)?;
        if !(0x88..0x98).contains(&operand.reg) {
            return Err(self.error(
                arg.column,
                format!("invalid bool uniform `{}`: expected b0..b15", arg.text),
            ));
        }
        Ok((operand.reg - 0x88) as u8)
    }

    /// `[!]cmp.x [&&|||] [!]cmp.y`: (refx, refy, condop).
    pub(super) fn condition(&self, arg: Arg) -> Result<(bool, bool, u8)> {
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
            Ok((which, negations.is_multiple_of(2)))
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
}
