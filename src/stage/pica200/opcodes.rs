//! The PICA200 opcode table (spec foreign_isas §B.2, §B.3). One table drives the decoder,
//! the disassembler and the assembler: each row names the operation, its 6-bit opcode (the
//! lowest of its range for CMP, MADI and MAD) and its instruction format.

/// The instruction formats of §B.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// No operands: NOP, END, BREAK, EMIT.
    Zero,
    /// DST, SRC1 (wide, relative), SRC2 (narrow), descriptor.
    One,
    /// DST, SRC1 (narrow), SRC2 (wide, relative): the "inverted" forms.
    OneI,
    /// DST, SRC1 (wide, relative): unary operations.
    OneU,
    /// MOVA: SRC1 only, the mask picks a0.x / a0.y.
    Mova,
    /// CMP: SRC1, two comparisons, SRC2.
    OneC,
    /// Condition on cc, DST (12 bits), NUM (8 bits).
    Two,
    /// Bool or integer uniform, DST, NUM.
    Three,
    /// SETEMIT: vertex id, primitive flag, winding flag.
    Four,
    /// MAD: DST, SRC1 (narrow), SRC2 (wide, relative), SRC3 (narrow), 5-bit descriptor.
    Five,
    /// MADI: DST, SRC1 (narrow), SRC2 (narrow), SRC3 (wide, relative).
    FiveI,
}

impl Format {
    /// Which source (0 = SRC1) an instruction's index register applies to: its wide one.
    pub const fn indexed_source(self) -> usize {
        match self {
            Format::OneI | Format::Five => 1,
            Format::FiveI => 2,
            _ => 0,
        }
    }

    /// Width of the operand-descriptor field: 7 bits, 5 for MAD/MADI, none without sources.
    pub const fn descriptor_bits(self) -> u32 {
        match self {
            Format::One | Format::OneI | Format::OneU | Format::Mova | Format::OneC => 7,
            Format::Five | Format::FiveI => 5,
            _ => 0,
        }
    }

    /// The "inverted" forms: SRC1 narrow and a later source wide.
    pub const fn is_inverted(self) -> bool {
        matches!(self, Format::OneI | Format::FiveI)
    }
}

/// Every operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PicaOp {
    Add,
    Dp3,
    Dp4,
    Dph,
    Dst,
    Ex2,
    Lg2,
    Litp,
    Mul,
    Sge,
    Slt,
    Flr,
    Max,
    Min,
    Rcp,
    Rsq,
    Mova,
    Mov,
    Dphi,
    Dsti,
    Sgei,
    Slti,
    Break,
    Nop,
    End,
    Breakc,
    Call,
    Callc,
    Callu,
    Ifu,
    Ifc,
    Loop,
    Emit,
    Setemit,
    Jmpc,
    Jmpu,
    Cmp,
    Madi,
    Mad,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct OpInfo {
    pub op: PicaOp,
    /// picasso's mnemonic (LOOP is written `for`).
    pub mnemonic: &'static str,
    pub opcode: u8,
    pub format: Format,
    /// The inverted form the assembler picks when SRC1 must be narrow (DPH → DPHI, MAD →
    /// MADI).
    pub inverted: Option<PicaOp>,
}

const fn row(op: PicaOp, mnemonic: &'static str, opcode: u8, format: Format) -> OpInfo {
    OpInfo {
        op,
        mnemonic,
        opcode,
        format,
        inverted: None,
    }
}

/// A row with an inverted form.
const fn pair(
    op: PicaOp,
    mnemonic: &'static str,
    opcode: u8,
    format: Format,
    inverted: PicaOp,
) -> OpInfo {
    OpInfo {
        inverted: Some(inverted),
        ..row(op, mnemonic, opcode, format)
    }
}

/// The table, in opcode order.
pub const TABLE: &[OpInfo] = &[
    row(PicaOp::Add, "add", 0x00, Format::One),
    row(PicaOp::Dp3, "dp3", 0x01, Format::One),
    row(PicaOp::Dp4, "dp4", 0x02, Format::One),
    pair(PicaOp::Dph, "dph", 0x03, Format::One, PicaOp::Dphi),
    pair(PicaOp::Dst, "dst", 0x04, Format::One, PicaOp::Dsti),
    row(PicaOp::Ex2, "ex2", 0x05, Format::OneU),
    row(PicaOp::Lg2, "lg2", 0x06, Format::OneU),
    row(PicaOp::Litp, "litp", 0x07, Format::OneU),
    row(PicaOp::Mul, "mul", 0x08, Format::One),
    pair(PicaOp::Sge, "sge", 0x09, Format::One, PicaOp::Sgei),
    pair(PicaOp::Slt, "slt", 0x0A, Format::One, PicaOp::Slti),
    row(PicaOp::Flr, "flr", 0x0B, Format::OneU),
    row(PicaOp::Max, "max", 0x0C, Format::One),
    row(PicaOp::Min, "min", 0x0D, Format::One),
    row(PicaOp::Rcp, "rcp", 0x0E, Format::OneU),
    row(PicaOp::Rsq, "rsq", 0x0F, Format::OneU),
    row(PicaOp::Mova, "mova", 0x12, Format::Mova),
    row(PicaOp::Mov, "mov", 0x13, Format::OneU),
    row(PicaOp::Dphi, "dphi", 0x18, Format::OneI),
    row(PicaOp::Dsti, "dsti", 0x19, Format::OneI),
    row(PicaOp::Sgei, "sgei", 0x1A, Format::OneI),
    row(PicaOp::Slti, "slti", 0x1B, Format::OneI),
    row(PicaOp::Break, "break", 0x20, Format::Zero),
    row(PicaOp::Nop, "nop", 0x21, Format::Zero),
    row(PicaOp::End, "end", 0x22, Format::Zero),
    row(PicaOp::Breakc, "breakc", 0x23, Format::Two),
    row(PicaOp::Call, "call", 0x24, Format::Two),
    row(PicaOp::Callc, "callc", 0x25, Format::Two),
    row(PicaOp::Callu, "callu", 0x26, Format::Three),
    row(PicaOp::Ifu, "ifu", 0x27, Format::Three),
    row(PicaOp::Ifc, "ifc", 0x28, Format::Two),
    row(PicaOp::Loop, "for", 0x29, Format::Three),
    row(PicaOp::Emit, "emit", 0x2A, Format::Zero),
    row(PicaOp::Setemit, "setemit", 0x2B, Format::Four),
    row(PicaOp::Jmpc, "jmpc", 0x2C, Format::Two),
    row(PicaOp::Jmpu, "jmpu", 0x2D, Format::Three),
    row(PicaOp::Cmp, "cmp", 0x2E, Format::OneC),
    row(PicaOp::Madi, "mad", 0x30, Format::FiveI),
    pair(PicaOp::Mad, "mad", 0x38, Format::Five, PicaOp::Madi),
];

/// The row of a 6-bit opcode (CMP spans 0x2E-0x2F, MADI 0x30-0x37, MAD 0x38-0x3F).
pub fn by_opcode(opcode: u8) -> Option<&'static OpInfo> {
    let base = match opcode {
        0x2E..=0x2F => 0x2E,
        0x30..=0x37 => 0x30,
        0x38..=0x3F => 0x38,
        other => other,
    };
    TABLE.iter().find(|row| row.opcode == base)
}

/// The row of an operation.
pub fn info(op: PicaOp) -> &'static OpInfo {
    TABLE
        .iter()
        .find(|row| row.op == op)
        .expect("every Op has a row")
}

/// The row a mnemonic names. A plain form and its inverted form (`dph`/`dphi`, `mad`/`madi`)
/// both name the plain row: the assembler picks the form the operands need.
pub fn by_mnemonic(mnemonic: &str) -> Option<&'static OpInfo> {
    TABLE
        .iter()
        .find(|row| row.mnemonic == mnemonic && !row.format.is_inverted())
        .or_else(|| {
            let plain = mnemonic.strip_suffix('i')?;
            TABLE
                .iter()
                .find(|row| row.mnemonic == plain && row.inverted.is_some())
        })
}

/// The comparison names of CMP, by their 3-bit code (6 and 7 are undocumented).
pub const COMPARISONS: [&str; 8] = ["eq", "ne", "lt", "le", "gt", "ge", "6", "7"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_opcode_maps_to_at_most_one_row() {
        let known = (0u8..64).filter(|&o| by_opcode(o).is_some()).count();
        // 22 arithmetic opcodes (0x00-0x0F, 0x12, 0x13, 0x18-0x1B), 0x20-0x2D, CMP 2, MAD(I) 16.
        assert_eq!(known, 16 + 2 + 4 + 14 + 2 + 16);
        assert_eq!(by_opcode(0x10).map(|r| r.op), None);
        assert_eq!(by_opcode(0x2F).map(|r| r.op), Some(PicaOp::Cmp));
        assert_eq!(by_opcode(0x35).map(|r| r.op), Some(PicaOp::Madi));
        assert_eq!(by_opcode(0x3F).map(|r| r.op), Some(PicaOp::Mad));
    }

    #[test]
    fn inverted_mnemonics_name_the_plain_row() {
        let op = |name: &str| by_mnemonic(name).map(|r| r.op);
        assert_eq!(op("dphi"), Some(PicaOp::Dph));
        assert_eq!(op("madi"), Some(PicaOp::Mad));
        assert_eq!(op("mad"), Some(PicaOp::Mad));
        assert_eq!(op("for"), Some(PicaOp::Loop));
        assert_eq!(op("addi"), None);
        assert_eq!(op("loop"), None);
        for row in TABLE.iter().filter(|row| row.format.is_inverted()) {
            let plain = TABLE.iter().find(|p| p.inverted == Some(row.op));
            assert!(plain.is_some(), "{:?} has no plain form", row.op);
        }
    }
}
