//! ALU and OUT instructions: source assignments, then one RGB and one alpha operation.

use super::parser::{Parser, R500Token, R500TokenKind};
use super::Result;
use crate::stage::r500::fields::{self as f, Words};

/// A destination: (is out, index, relative, mask text, token of the mask).
type Destination = (bool, u32, bool, String, R500Token);

/// An argument: (select, swizzle text, modifier, token of the swizzle).
type Argument = (u32, String, u32, R500Token);

/// What an operation in an ALU instruction says before its unit is known.
struct AluOperation {
    token: R500Token,
    name: String,
    dests: Vec<Destination>,
    omod: u32,
    args: Vec<Argument>,
}

impl Parser<'_> {
    pub(super) fn alu(&mut self, words: &mut Words, ty: u32) -> Result<()> {
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
        let slot = slot(&source).ok_or_else(|| {
            self.error_at(
                &token,
                format!("expected a source (src0, src1, src2, srcp) or `:`, found `{source}`"),
            )
        })?;
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
            self.presubtract(words, alpha)
        } else {
            self.source_address(words, alpha, slot as usize)
        }
    }

    /// The pre-subtract op of `srcp.rgb =` or `srcp.a =`.
    fn presubtract(&mut self, words: &mut Words, alpha: bool) -> Result<()> {
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
        Ok(())
    }

    /// `temp[N]`, `const[N]` or `float(N)` (each may be `aL+N`) into source slot `slot`.
    fn source_address(&mut self, words: &mut Words, alpha: bool, slot: usize) -> Result<()> {
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
                self.unread();
                return Err(self.expected("temp[N], const[N] or float(N)"));
            }
        };
        addr.set(words, value);
        constant.set(words, is_const as u32);
        rel.set(words, relative as u32);
        Ok(())
    }

    /// `dest = ... [omod *] OP args`.
    fn operation(&mut self) -> Result<AluOperation> {
        let dests = self.destinations()?;
        let omod = self.output_modifier()?;
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
            args.push(self.argument()?);
        }
        Ok(AluOperation {
            token,
            name,
            dests,
            omod,
            args,
        })
    }

    /// `temp[n].mask = ` and `out[t].mask = ` before an op.
    fn destinations(&mut self) -> Result<Vec<Destination>> {
        let mut dests = Vec::new();
        while matches!(self.peek_word(), Some("temp" | "out"))
            && self.peek_at(1).kind == R500TokenKind::Punct('[')
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
        Ok(dests)
    }

    /// `2.0 *`, `0.5 *`, ... or `OMOD_DISABLE`: the OMOD code (0 when none is given).
    fn output_modifier(&mut self) -> Result<u32> {
        if self.peek_word() == Some("OMOD_DISABLE") {
            self.next();
            return Ok(7);
        }
        if self.peek_at(1).kind != R500TokenKind::Punct('.')
            || self.peek_at(3).kind != R500TokenKind::Punct('*')
        {
            return Ok(0);
        }
        let (whole, token) = self.word("an output modifier")?;
        self.punct('.')?;
        let (fraction, _) = self.word("an output modifier")?;
        self.punct('*')?;
        Ok(match (whole.as_str(), fraction.as_str()) {
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
        })
    }

    /// `src0.rgb`, `-src1.a`, `|srcp.r|`, `-|src2.g|`.
    fn argument(&mut self) -> Result<Argument> {
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
        let (source, source_token) = self.word("an argument (src0.rgb, -src1.a, |srcp.r|, ...)")?;
        let select = slot(&source).ok_or_else(|| {
            self.error_at(
                &source_token,
                format!("expected an argument (src0, src1, src2, srcp), found `{source}`"),
            )
        })?;
        self.punct('.')?;
        let (swizzle, swizzle_token) = self.swizzle_word()?;
        if abs {
            self.punct('|')?;
        }
        Ok((select, swizzle, modifier, swizzle_token))
    }

    /// A swizzle: letters and digits, possibly split by the lexer at `_`-free boundaries.
    fn swizzle_word(&mut self) -> Result<(String, R500Token)> {
        let (text, token) = self.word("a swizzle (r, g, b, a, 0, h, 1, _)")?;
        Ok((text, token))
    }

    /// Which operation is the alpha one: by op name, then mask, then swizzle length.
    fn units(&self, operations: &[AluOperation]) -> Result<Vec<bool>> {
        let unit = |operation: &AluOperation| -> Option<bool> {
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

    /// Sets the fields of one operation, in the RGB or the alpha unit.
    fn emit_operation(
        &self,
        words: &mut Words,
        operation: &AluOperation,
        alpha: bool,
    ) -> Result<()> {
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
        for dest in &operation.dests {
            self.emit_destination(words, dest, alpha)?;
        }
        for (n, arg) in operation.args.iter().enumerate() {
            self.emit_argument(words, n, arg, alpha)?;
        }
        Ok(())
    }

    fn emit_destination(&self, words: &mut Words, dest: &Destination, alpha: bool) -> Result<()> {
        let (is_out, index, relative, mask, token) = dest;
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
            let (unit, masks) = if alpha {
                ("alpha", "a, none")
            } else {
                ("RGB", "r, g, rg, b, rb, gb, rgb, none")
            };
            self.error_at(
                token,
                format!("expected an {unit} write mask ({masks}), found `{mask}`"),
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
        Ok(())
    }

    /// Argument `n` (A, B, C): select, swizzle (three codes for RGB, one for alpha), modifier.
    fn emit_argument(
        &self,
        words: &mut Words,
        n: usize,
        arg: &Argument,
        alpha: bool,
    ) -> Result<()> {
        let (select, swizzle, modifier, token) = arg;
        let codes: Vec<u32> = swizzle
            .chars()
            .filter_map(|c| {
                f::ALU_SWIZZLES
                    .iter()
                    .position(|&s| s == c)
                    .map(|i| i as u32)
            })
            .collect();
        let (length, unit) = if alpha { (1, "alpha") } else { (3, "RGB") };
        if codes.len() != swizzle.chars().count() || codes.len() != length {
            return Err(self.error_at(
                token,
                format!("expected {length} swizzle character(s) of r, g, b, a, 0, h, 1, _ for the {unit} operation, found `{swizzle}`"),
            ));
        }
        if alpha {
            let (sel, swiz, modf) = f::alpha_arg_fields(n);
            sel.set(words, *select);
            swiz.set(words, codes[0]);
            modf.set(words, *modifier);
        } else {
            let (sel, swizzles, modf) = f::rgb_arg_fields(n);
            sel.set(words, *select);
            for (field, code) in swizzles.iter().zip(&codes) {
                field.set(words, *code);
            }
            modf.set(words, *modifier);
        }
        Ok(())
    }
}

/// The slot a source name selects: src0, src1, src2, srcp.
fn slot(name: &str) -> Option<u32> {
    ["src0", "src1", "src2", "srcp"]
        .iter()
        .position(|&slot| slot == name)
        .map(|slot| slot as u32)
}
