//! Instruction words in fields, and operand descriptors, both ways (spec foreign_isas
//! §B.2, §B.4).
//! [`PicaWord::decode`] and [`PicaWord::encode`] are exact inverses on every field a
//! format defines; bits a format leaves unused decode to nothing and encode as zero.
//!
//! ```text
//! format   fields, high bit..low bit
//! 1        opcode 31..26  dst 25..21   idx 20..19   src1 18..12  src2 11..7   desc 6..0
//! 1i       opcode 31..26  dst 25..21   idx 20..19   src1 18..14  src2 13..7   desc 6..0
//! 1u       opcode 31..26  dst 25..21   idx 20..19   src1 18..12               desc 6..0
//! MOVA     opcode 31..26               idx 20..19   src1 18..12               desc 6..0
//! CMP      opcode 31..27  cmpx 26..24  cmpy 23..21  idx 20..19  src1 18..12  src2 11..7
//!          desc 6..0
//! MAD      opcode 31..29  dst 28..24   idx 23..22   src1 21..17  src2 16..10  src3 9..5
//!          desc 4..0
//! MADI     opcode 31..29  dst 28..24   idx 23..22   src1 21..17  src2 16..12  src3 11..5
//!          desc 4..0
//! 2        opcode 31..26  refx 25  refy 24  condop 23..22  dst 21..10  num 7..0
//! 3        opcode 31..26  id 25..22 (LOOP: 23..22)         dst 21..10  num 7..0
//! SETEMIT  opcode 31..26  vertex 25..24  prim 23  winding 22
//! ```
//!
//! In 1i and MADI, the "inverted" forms, the wide (7-bit) source is the later one, and
//! the index register applies to it ([`super::opcodes::Format::indexed_source`]).

use super::opcodes::{by_opcode, info, Format, PicaOp};

/// One instruction word in the fields of its format (the raw encoding; `interp` resolves
/// it with its operand descriptor once, before running). Register fields hold the
/// hardware's numbering: sources 0x00-0x0F inputs, 0x10-0x1F temporaries, 0x20-0x7F float
/// uniforms; destinations 0x00-0x0F outputs, 0x10-0x1F temporaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PicaWord {
    /// NOP, END, BREAK, EMIT.
    Zero { op: PicaOp },
    /// Formats 1, 1i, 1u and MOVA. `src1`/`src2` are in operand order; `idx` (0 none,
    /// 1 a0.x, 2 a0.y, 3 aL) applies to the wide one (SRC1, or SRC2 in the 1i forms).
    Arith {
        op: PicaOp,
        dst: u8,
        src1: u8,
        src2: u8,
        idx: u8,
        desc: u8,
    },
    /// CMP: cc.x = src1.x CMPX src2.x, cc.y = src1.y CMPY src2.y.
    Cmp {
        src1: u8,
        src2: u8,
        idx: u8,
        desc: u8,
        cmpx: u8,
        cmpy: u8,
    },
    /// MAD (`idx` on SRC2) and MADI (`idx` on SRC3).
    Mad {
        op: PicaOp,
        dst: u8,
        src1: u8,
        src2: u8,
        src3: u8,
        idx: u8,
        desc: u8,
    },
    /// Format 2: BREAKC, CALL, CALLC, IFC, JMPC. `condop` 0 OR, 1 AND, 2 x only, 3 y only.
    Flow {
        op: PicaOp,
        refx: bool,
        refy: bool,
        condop: u8,
        dst: u16,
        num: u8,
    },
    /// Format 3: CALLU, IFU, JMPU (bool uniform `id`), LOOP (integer uniform `id`).
    Uniform {
        op: PicaOp,
        id: u8,
        dst: u16,
        num: u8,
    },
    /// SETEMIT.
    SetEmit {
        vertex: u8,
        primitive: bool,
        winding: bool,
    },
}

/// A word whose opcode names no instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{word:#010X} has opcode {opcode:#04X}, which is no PICA200 instruction")]
pub struct UnknownOpcode {
    pub word: u32,
    pub opcode: u8,
}

/// Bits `low..low+width` of `word`.
fn field(word: u32, low: u32, width: u32) -> u32 {
    (word >> low) & ((1 << width) - 1)
}

impl PicaWord {
    /// Decodes one word.
    pub fn decode(word: u32) -> Result<PicaWord, UnknownOpcode> {
        let opcode = (word >> 26) as u8;
        let row = by_opcode(opcode).ok_or(UnknownOpcode { word, opcode })?;
        let op = row.op;
        let desc7 = field(word, 0, 7) as u8;
        Ok(match row.format {
            Format::Zero => PicaWord::Zero { op },
            Format::One | Format::OneU | Format::Mova => PicaWord::Arith {
                op,
                dst: if row.format == Format::Mova {
                    0
                } else {
                    field(word, 21, 5) as u8
                },
                src1: field(word, 12, 7) as u8,
                src2: if row.format == Format::One {
                    field(word, 7, 5) as u8
                } else {
                    0
                },
                idx: field(word, 19, 2) as u8,
                desc: desc7,
            },
            Format::OneI => PicaWord::Arith {
                op,
                dst: field(word, 21, 5) as u8,
                src1: field(word, 14, 5) as u8,
                src2: field(word, 7, 7) as u8,
                idx: field(word, 19, 2) as u8,
                desc: desc7,
            },
            Format::OneC => PicaWord::Cmp {
                src1: field(word, 12, 7) as u8,
                src2: field(word, 7, 5) as u8,
                idx: field(word, 19, 2) as u8,
                desc: desc7,
                cmpx: field(word, 24, 3) as u8,
                cmpy: field(word, 21, 3) as u8,
            },
            Format::Five => PicaWord::Mad {
                op,
                dst: field(word, 24, 5) as u8,
                src1: field(word, 17, 5) as u8,
                src2: field(word, 10, 7) as u8,
                src3: field(word, 5, 5) as u8,
                idx: field(word, 22, 2) as u8,
                desc: field(word, 0, 5) as u8,
            },
            Format::FiveI => PicaWord::Mad {
                op,
                dst: field(word, 24, 5) as u8,
                src1: field(word, 17, 5) as u8,
                src2: field(word, 12, 5) as u8,
                src3: field(word, 5, 7) as u8,
                idx: field(word, 22, 2) as u8,
                desc: field(word, 0, 5) as u8,
            },
            Format::Two => PicaWord::Flow {
                op,
                refx: field(word, 25, 1) == 1,
                refy: field(word, 24, 1) == 1,
                condop: field(word, 22, 2) as u8,
                dst: field(word, 10, 12) as u16,
                num: field(word, 0, 8) as u8,
            },
            Format::Three => PicaWord::Uniform {
                op,
                id: if op == PicaOp::Loop {
                    field(word, 22, 2)
                } else {
                    field(word, 22, 4)
                } as u8,
                dst: field(word, 10, 12) as u16,
                num: field(word, 0, 8) as u8,
            },
            Format::Four => PicaWord::SetEmit {
                vertex: field(word, 24, 2) as u8,
                primitive: field(word, 23, 1) == 1,
                winding: field(word, 22, 1) == 1,
            },
        })
    }

    /// The word: the inverse of [`PicaWord::decode`].
    pub fn encode(&self) -> u32 {
        let opcode = |op: PicaOp| (info(op).opcode as u32) << 26;
        match *self {
            PicaWord::Arith { .. } | PicaWord::Cmp { .. } | PicaWord::Mad { .. } => {
                self.encode_operands()
            }
            PicaWord::Zero { op } => opcode(op),
            PicaWord::Flow {
                op,
                refx,
                refy,
                condop,
                dst,
                num,
            } => {
                opcode(op)
                    | (refx as u32) << 25
                    | (refy as u32) << 24
                    | (condop as u32 & 3) << 22
                    | (dst as u32 & 0xFFF) << 10
                    | num as u32
            }
            PicaWord::Uniform { op, id, dst, num } => {
                let width = if op == PicaOp::Loop { 3 } else { 0xF };
                opcode(op) | (id as u32 & width) << 22 | (dst as u32 & 0xFFF) << 10 | num as u32
            }
            PicaWord::SetEmit {
                vertex,
                primitive,
                winding,
            } => {
                opcode(PicaOp::Setemit)
                    | (vertex as u32 & 3) << 24
                    | (primitive as u32) << 23
                    | (winding as u32) << 22
            }
        }
    }

    /// The words of the formats with register operands and a descriptor.
    fn encode_operands(&self) -> u32 {
        let opcode = |op: PicaOp| (info(op).opcode as u32) << 26;
        match *self {
            PicaWord::Arith {
                op,
                dst,
                src1,
                src2,
                idx,
                desc,
            } => {
                let common = opcode(op) | (idx as u32 & 3) << 19 | (desc as u32 & 0x7F);
                match info(op).format {
                    Format::OneI => {
                        common
                            | (dst as u32 & 0x1F) << 21
                            | (src1 as u32 & 0x1F) << 14
                            | (src2 as u32 & 0x7F) << 7
                    }
                    Format::Mova => common | (src1 as u32 & 0x7F) << 12,
                    Format::OneU => common | (dst as u32 & 0x1F) << 21 | (src1 as u32 & 0x7F) << 12,
                    _ => {
                        common
                            | (dst as u32 & 0x1F) << 21
                            | (src1 as u32 & 0x7F) << 12
                            | (src2 as u32 & 0x1F) << 7
                    }
                }
            }
            PicaWord::Cmp {
                src1,
                src2,
                idx,
                desc,
                cmpx,
                cmpy,
            } => {
                opcode(PicaOp::Cmp)
                    | (cmpx as u32 & 7) << 24
                    | (cmpy as u32 & 7) << 21
                    | (idx as u32 & 3) << 19
                    | (src1 as u32 & 0x7F) << 12
                    | (src2 as u32 & 0x1F) << 7
                    | (desc as u32 & 0x7F)
            }
            PicaWord::Mad {
                op,
                dst,
                src1,
                src2,
                src3,
                idx,
                desc,
            } => {
                let common = opcode(op)
                    | (dst as u32 & 0x1F) << 24
                    | (idx as u32 & 3) << 22
                    | (src1 as u32 & 0x1F) << 17
                    | (desc as u32 & 0x1F);
                if info(op).format.is_inverted() {
                    common | (src2 as u32 & 0x1F) << 12 | (src3 as u32 & 0x7F) << 5
                } else {
                    common | (src2 as u32 & 0x7F) << 10 | (src3 as u32 & 0x1F) << 5
                }
            }
            _ => 0,
        }
    }

    /// Each source's index register in operand order (0 none, 1 a0.x, 2 a0.y, 3 aL): `idx`
    /// belongs to the wide source, the one the format names.
    pub fn source_indices(&self) -> [u8; 3] {
        let (idx, format) = match *self {
            PicaWord::Arith { op, idx, .. } | PicaWord::Mad { op, idx, .. } => {
                (idx, info(op).format)
            }
            PicaWord::Cmp { idx, .. } => (idx, Format::OneC),
            _ => return [0; 3],
        };
        let mut indices = [0; 3];
        indices[format.indexed_source()] = idx;
        indices
    }

    /// The operation.
    pub fn op(&self) -> PicaOp {
        match *self {
            PicaWord::Zero { op }
            | PicaWord::Arith { op, .. }
            | PicaWord::Mad { op, .. }
            | PicaWord::Flow { op, .. }
            | PicaWord::Uniform { op, .. } => op,
            PicaWord::Cmp { .. } => PicaOp::Cmp,
            PicaWord::SetEmit { .. } => PicaOp::Setemit,
        }
    }
}

/// An operand descriptor (§B.4): destination mask (bit 3 = x … bit 0 = w), and per source
/// a negate bit and an 8-bit selector with component 0 in its top two bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Descriptor(pub u32);

impl Descriptor {
    /// Whether the destination component `i` (0 = x … 3 = w) is written.
    pub fn writes(self, i: usize) -> bool {
        self.0 >> (3 - i) & 1 == 1
    }

    /// The 4-bit destination mask.
    pub fn mask(self) -> u8 {
        (self.0 & 0xF) as u8
    }

    /// Whether source `n` (0, 1, 2 for SRC1..SRC3) is negated.
    pub fn negated(self, n: usize) -> bool {
        self.0 >> (4 + 9 * n) & 1 == 1
    }

    /// The components source `n` reads for output components x, y, z, w.
    pub fn selector(self, n: usize) -> [u8; 4] {
        let byte = (self.0 >> (5 + 9 * n)) & 0xFF;
        std::array::from_fn(|i| ((byte >> (6 - 2 * i)) & 3) as u8)
    }

    /// A descriptor from its parts.
    pub fn new(mask: u8, sources: [(bool, [u8; 4]); 3]) -> Descriptor {
        let mut word = mask as u32 & 0xF;
        for (n, (negate, selector)) in sources.iter().enumerate() {
            word |= (*negate as u32) << (4 + 9 * n);
            word |= selector_byte(*selector) << (5 + 9 * n);
        }
        Descriptor(word)
    }
}

/// The 8-bit selector of four components, x in the top two bits.
pub fn selector_byte(components: [u8; 4]) -> u32 {
    components
        .iter()
        .enumerate()
        .fold(0, |byte, (i, &c)| byte | ((c as u32 & 3) << (6 - 2 * i)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_descriptor_is_the_spec_word() {
        let identity = [0, 1, 2, 3];
        let d = Descriptor::new(0xF, [(false, identity); 3]);
        assert_eq!(d.0, 0x0D86C36F);
        assert_eq!(Descriptor(0x0006EAAF).selector(0), [1, 1, 1, 1]);
        assert!(Descriptor(0x0006EAAF).negated(1));
    }

    #[test]
    fn unknown_opcodes_are_errors() {
        assert_eq!(
            PicaWord::decode(0x4000_0000),
            Err(UnknownOpcode {
                word: 0x4000_0000,
                opcode: 0x10
            })
        );
    }
}
