//! The R500 "US" instruction fields (spec foreign_isas Part A.2-A.6): one table that the
//! decoder, the disassembler and the assembler all read. An instruction is six 32-bit
//! words in upload order: CMN, RGB_ADDR, ALPHA_ADDR, RGB_INST, ALPHA_INST, RGBA_INST (TEX
//! uses words 1-3 as TEX_INST, TEX_ADDR, TEX_ADDR_DXDY; FC uses words 2-3 as FC_INST,
//! FC_ADDR).

/// The six words of one instruction.
pub type Words = [u32; 6];

/// One bit field of an instruction word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    /// The name the assembler accepts as a tag (`RGB_PRED_SEL=2`) and errors print.
    pub name: &'static str,
    /// Which of the six words.
    pub word: usize,
    /// Lowest bit.
    pub lo: u32,
    /// Width in bits.
    pub width: u32,
}

impl Field {
    /// The mask of the field's values, right-aligned: `2^width - 1`.
    pub const fn max(self) -> u32 {
        if self.width == 32 {
            u32::MAX
        } else {
            (1 << self.width) - 1
        }
    }

    /// The field's value in `words`.
    pub fn get(self, words: &Words) -> u32 {
        (words[self.word] >> self.lo) & self.max()
    }

    /// Sets the field to `value`, which must fit (the caller checks with [`Field::max`]).
    pub fn set(self, words: &mut Words, value: u32) {
        debug_assert!(value <= self.max(), "{} = {value} does not fit", self.name);
        let mask = self.max() << self.lo;
        words[self.word] = (words[self.word] & !mask) | ((value << self.lo) & mask);
    }

    /// The field's bits in its word.
    pub const fn mask(self) -> u32 {
        self.max() << self.lo
    }
}

macro_rules! fields {
    ($($name:ident = $word:expr, $lo:expr, $width:expr;)*) => {
        $(pub const $name: Field = Field { name: stringify!($name), word: $word, lo: $lo, width: $width };)*
    };
}

// Word 0, US_CMN_INST (A.2), every instruction type.
fields! {
    TYPE = 0, 0, 2;
    TEX_SEM_WAIT = 0, 2, 1;
    RGB_PRED_SEL = 0, 3, 3;
    RGB_PRED_INV = 0, 6, 1;
    WRITE_INACTIVE = 0, 7, 1;
    LAST = 0, 8, 1;
    NOP = 0, 9, 1;
    ALU_WAIT = 0, 10, 1;
    RGB_WMASK = 0, 11, 3;
    ALPHA_WMASK = 0, 14, 1;
    RGB_OMASK = 0, 15, 3;
    ALPHA_OMASK = 0, 18, 1;
    RGB_CLAMP = 0, 19, 1;
    ALPHA_CLAMP = 0, 20, 1;
    ALU_RESULT_SEL = 0, 21, 1;
    ALPHA_PRED_INV = 0, 22, 1;
    ALU_RESULT_OP = 0, 23, 2;
    ALPHA_PRED_SEL = 0, 25, 3;
    STAT_WE = 0, 28, 4;
}

// Words 1 and 2, US_ALU_RGB_ADDR and US_ALU_ALPHA_ADDR (A.3).
fields! {
    RGB_ADDR0 = 1, 0, 8;
    RGB_ADDR0_CONST = 1, 8, 1;
    RGB_ADDR0_REL = 1, 9, 1;
    RGB_ADDR1 = 1, 10, 8;
    RGB_ADDR1_CONST = 1, 18, 1;
    RGB_ADDR1_REL = 1, 19, 1;
    RGB_ADDR2 = 1, 20, 8;
    RGB_ADDR2_CONST = 1, 28, 1;
    RGB_ADDR2_REL = 1, 29, 1;
    RGB_SRCP_OP = 1, 30, 2;
    ALPHA_ADDR0 = 2, 0, 8;
    ALPHA_ADDR0_CONST = 2, 8, 1;
    ALPHA_ADDR0_REL = 2, 9, 1;
    ALPHA_ADDR1 = 2, 10, 8;
    ALPHA_ADDR1_CONST = 2, 18, 1;
    ALPHA_ADDR1_REL = 2, 19, 1;
    ALPHA_ADDR2 = 2, 20, 8;
    ALPHA_ADDR2_CONST = 2, 28, 1;
    ALPHA_ADDR2_REL = 2, 29, 1;
    ALPHA_SRCP_OP = 2, 30, 2;
}

// Word 3, US_ALU_RGB_INST.
fields! {
    RGB_SEL_A = 3, 0, 2;
    RED_SWIZ_A = 3, 2, 3;
    GREEN_SWIZ_A = 3, 5, 3;
    BLUE_SWIZ_A = 3, 8, 3;
    RGB_MOD_A = 3, 11, 2;
    RGB_SEL_B = 3, 13, 2;
    RED_SWIZ_B = 3, 15, 3;
    GREEN_SWIZ_B = 3, 18, 3;
    BLUE_SWIZ_B = 3, 21, 3;
    RGB_MOD_B = 3, 24, 2;
    RGB_OMOD = 3, 26, 3;
    RGB_TARGET = 3, 29, 2;
    ALU_WMASK = 3, 31, 1;
}

// Word 4, US_ALU_ALPHA_INST.
fields! {
    ALPHA_OP = 4, 0, 4;
    ALPHA_ADDRD = 4, 4, 7;
    ALPHA_ADDRD_REL = 4, 11, 1;
    ALPHA_SEL_A = 4, 12, 2;
    ALPHA_SWIZ_A = 4, 14, 3;
    ALPHA_MOD_A = 4, 17, 2;
    ALPHA_SEL_B = 4, 19, 2;
    ALPHA_SWIZ_B = 4, 21, 3;
    ALPHA_MOD_B = 4, 24, 2;
    ALPHA_OMOD = 4, 26, 3;
    ALPHA_TARGET = 4, 29, 2;
    W_OMASK = 4, 31, 1;
}

// Word 5, US_ALU_RGBA_INST.
fields! {
    RGB_OP = 5, 0, 4;
    RGB_ADDRD = 5, 4, 7;
    RGB_ADDRD_REL = 5, 11, 1;
    RGB_SEL_C = 5, 12, 2;
    RED_SWIZ_C = 5, 14, 3;
    GREEN_SWIZ_C = 5, 17, 3;
    BLUE_SWIZ_C = 5, 20, 3;
    RGB_MOD_C = 5, 23, 2;
    ALPHA_SEL_C = 5, 25, 2;
    ALPHA_SWIZ_C = 5, 27, 3;
    ALPHA_MOD_C = 5, 30, 2;
}

// TEX words 1-3 (A.5). DY_ADDR_REL follows the AMD text (bit 23), not Mesa's bit 17.
fields! {
    TEX_ID = 1, 16, 4;
    TEX_OP = 1, 22, 3;
    TEX_SEM_ACQUIRE = 1, 25, 1;
    IGNORE_UNCOVERED = 1, 26, 1;
    UNSCALED = 1, 27, 1;
    SRC_ADDR = 2, 0, 7;
    SRC_ADDR_REL = 2, 7, 1;
    SRC_S_SWIZ = 2, 8, 2;
    SRC_T_SWIZ = 2, 10, 2;
    SRC_R_SWIZ = 2, 12, 2;
    SRC_Q_SWIZ = 2, 14, 2;
    DST_ADDR = 2, 16, 7;
    DST_ADDR_REL = 2, 23, 1;
    DST_R_SWIZ = 2, 24, 2;
    DST_G_SWIZ = 2, 26, 2;
    DST_B_SWIZ = 2, 28, 2;
    DST_A_SWIZ = 2, 30, 2;
    DX_ADDR = 3, 0, 7;
    DX_ADDR_REL = 3, 7, 1;
    DX_S_SWIZ = 3, 8, 2;
    DX_T_SWIZ = 3, 10, 2;
    DX_R_SWIZ = 3, 12, 2;
    DX_Q_SWIZ = 3, 14, 2;
    DY_ADDR = 3, 16, 7;
    DY_ADDR_REL = 3, 23, 1;
    DY_S_SWIZ = 3, 24, 2;
    DY_T_SWIZ = 3, 26, 2;
    DY_R_SWIZ = 3, 28, 2;
    DY_Q_SWIZ = 3, 30, 2;
}

// FC words 2-3 (A.6).
fields! {
    FC_OP = 2, 0, 3;
    B_ELSE = 2, 4, 1;
    JUMP_ANY = 2, 5, 1;
    A_OP = 2, 6, 2;
    JUMP_FUNC = 2, 8, 8;
    B_POP_CNT = 2, 16, 5;
    B_OP0 = 2, 24, 2;
    B_OP1 = 2, 26, 2;
    FC_IGNORE_UNCOVERED = 2, 28, 1;
    BOOL_ADDR = 3, 0, 5;
    INT_ADDR = 3, 8, 5;
    JUMP_ADDR = 3, 16, 9;
    JUMP_GLOBAL = 3, 31, 1;
}

/// Word 0, shared by all types.
pub const CMN: &[Field] = &[
    TYPE,
    TEX_SEM_WAIT,
    RGB_PRED_SEL,
    RGB_PRED_INV,
    WRITE_INACTIVE,
    LAST,
    NOP,
    ALU_WAIT,
    RGB_WMASK,
    ALPHA_WMASK,
    RGB_OMASK,
    ALPHA_OMASK,
    RGB_CLAMP,
    ALPHA_CLAMP,
    ALU_RESULT_SEL,
    ALPHA_PRED_INV,
    ALU_RESULT_OP,
    ALPHA_PRED_SEL,
    STAT_WE,
];

/// Words 1-5 of an ALU or OUT instruction.
pub const ALU: &[Field] = &[
    RGB_ADDR0,
    RGB_ADDR0_CONST,
    RGB_ADDR0_REL,
    RGB_ADDR1,
    RGB_ADDR1_CONST,
    RGB_ADDR1_REL,
    RGB_ADDR2,
    RGB_ADDR2_CONST,
    RGB_ADDR2_REL,
    RGB_SRCP_OP,
    ALPHA_ADDR0,
    ALPHA_ADDR0_CONST,
    ALPHA_ADDR0_REL,
    ALPHA_ADDR1,
    ALPHA_ADDR1_CONST,
    ALPHA_ADDR1_REL,
    ALPHA_ADDR2,
    ALPHA_ADDR2_CONST,
    ALPHA_ADDR2_REL,
    ALPHA_SRCP_OP,
    RGB_SEL_A,
    RED_SWIZ_A,
    GREEN_SWIZ_A,
    BLUE_SWIZ_A,
    RGB_MOD_A,
    RGB_SEL_B,
    RED_SWIZ_B,
    GREEN_SWIZ_B,
    BLUE_SWIZ_B,
    RGB_MOD_B,
    RGB_OMOD,
    RGB_TARGET,
    ALU_WMASK,
    ALPHA_OP,
    ALPHA_ADDRD,
    ALPHA_ADDRD_REL,
    ALPHA_SEL_A,
    ALPHA_SWIZ_A,
    ALPHA_MOD_A,
    ALPHA_SEL_B,
    ALPHA_SWIZ_B,
    ALPHA_MOD_B,
    ALPHA_OMOD,
    ALPHA_TARGET,
    W_OMASK,
    RGB_OP,
    RGB_ADDRD,
    RGB_ADDRD_REL,
    RGB_SEL_C,
    RED_SWIZ_C,
    GREEN_SWIZ_C,
    BLUE_SWIZ_C,
    RGB_MOD_C,
    ALPHA_SEL_C,
    ALPHA_SWIZ_C,
    ALPHA_MOD_C,
];

/// Words 1-3 of a TEX instruction (words 4 and 5 are unused and must be 0).
pub const TEX: &[Field] = &[
    TEX_ID,
    TEX_OP,
    TEX_SEM_ACQUIRE,
    IGNORE_UNCOVERED,
    UNSCALED,
    SRC_ADDR,
    SRC_ADDR_REL,
    SRC_S_SWIZ,
    SRC_T_SWIZ,
    SRC_R_SWIZ,
    SRC_Q_SWIZ,
    DST_ADDR,
    DST_ADDR_REL,
    DST_R_SWIZ,
    DST_G_SWIZ,
    DST_B_SWIZ,
    DST_A_SWIZ,
    DX_ADDR,
    DX_ADDR_REL,
    DX_S_SWIZ,
    DX_T_SWIZ,
    DX_R_SWIZ,
    DX_Q_SWIZ,
    DY_ADDR,
    DY_ADDR_REL,
    DY_S_SWIZ,
    DY_T_SWIZ,
    DY_R_SWIZ,
    DY_Q_SWIZ,
];

/// Words 2-3 of an FC instruction (words 1, 4 and 5 are unused and must be 0).
pub const FC: &[Field] = &[
    FC_OP,
    B_ELSE,
    JUMP_ANY,
    A_OP,
    JUMP_FUNC,
    B_POP_CNT,
    B_OP0,
    B_OP1,
    FC_IGNORE_UNCOVERED,
    BOOL_ADDR,
    INT_ADDR,
    JUMP_ADDR,
    JUMP_GLOBAL,
];

/// Instruction types (CMN.TYPE).
pub mod kind {
    pub const ALU: u32 = 0;
    pub const OUT: u32 = 1;
    pub const FC: u32 = 2;
    pub const TEX: u32 = 3;
}

/// The fields words 1-5 carry for an instruction of CMN.TYPE `ty`.
pub fn fields_of(ty: u32) -> &'static [Field] {
    match ty {
        kind::FC => FC,
        kind::TEX => TEX,
        _ => ALU,
    }
}

/// Per word, the bits no field of type `ty` defines (reserved: must be 0).
pub fn reserved_bits(ty: u32) -> [u32; 6] {
    let mut defined = [0u32; 6];
    for field in CMN.iter().chain(fields_of(ty)) {
        defined[field.word] |= field.mask();
    }
    defined.map(|d| !d)
}

/// The `ADDRn`, `ADDRn_CONST`, `ADDRn_REL` fields of source slot `n` (RGB or alpha word).
pub fn source_fields(alpha: bool, slot: usize) -> [Field; 3] {
    const RGB: [[Field; 3]; 3] = [
        [RGB_ADDR0, RGB_ADDR0_CONST, RGB_ADDR0_REL],
        [RGB_ADDR1, RGB_ADDR1_CONST, RGB_ADDR1_REL],
        [RGB_ADDR2, RGB_ADDR2_CONST, RGB_ADDR2_REL],
    ];
    const ALPHA: [[Field; 3]; 3] = [
        [ALPHA_ADDR0, ALPHA_ADDR0_CONST, ALPHA_ADDR0_REL],
        [ALPHA_ADDR1, ALPHA_ADDR1_CONST, ALPHA_ADDR1_REL],
        [ALPHA_ADDR2, ALPHA_ADDR2_CONST, ALPHA_ADDR2_REL],
    ];
    if alpha {
        ALPHA[slot]
    } else {
        RGB[slot]
    }
}

/// The fields of RGB argument A, B or C (`arg` 0-2): select, three swizzles, modifier.
pub fn rgb_arg_fields(arg: usize) -> (Field, [Field; 3], Field) {
    match arg {
        0 => (
            RGB_SEL_A,
            [RED_SWIZ_A, GREEN_SWIZ_A, BLUE_SWIZ_A],
            RGB_MOD_A,
        ),
        1 => (
            RGB_SEL_B,
            [RED_SWIZ_B, GREEN_SWIZ_B, BLUE_SWIZ_B],
            RGB_MOD_B,
        ),
        _ => (
            RGB_SEL_C,
            [RED_SWIZ_C, GREEN_SWIZ_C, BLUE_SWIZ_C],
            RGB_MOD_C,
        ),
    }
}

/// The fields of alpha argument A, B or C (`arg` 0-2): select, swizzle, modifier.
pub fn alpha_arg_fields(arg: usize) -> (Field, Field, Field) {
    match arg {
        0 => (ALPHA_SEL_A, ALPHA_SWIZ_A, ALPHA_MOD_A),
        1 => (ALPHA_SEL_B, ALPHA_SWIZ_B, ALPHA_MOD_B),
        _ => (ALPHA_SEL_C, ALPHA_SWIZ_C, ALPHA_MOD_C),
    }
}

/// One row of an op table: the name the assembler reads and the disassembler prints, and
/// the operation the interpreter runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpRow<T> {
    pub name: &'static str,
    pub op: T,
}

const fn op<T>(name: &'static str, op: T) -> Option<OpRow<T>> {
    Some(OpRow { name, op })
}

/// The code of the row named `name`.
pub fn code_of<T>(table: &[Option<OpRow<T>>], name: &str) -> Option<u32> {
    table
        .iter()
        .position(|row| row.as_ref().is_some_and(|row| row.name == name))
        .map(|code| code as u32)
}

/// The name of code `code`, `?` when reserved.
pub fn name_of<T>(table: &[Option<OpRow<T>>], code: u32) -> &'static str {
    table
        .get(code as usize)
        .and_then(|row| row.as_ref())
        .map_or("?", |row| row.name)
}

/// The RGB unit's ops (RGB_OP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RgbOp {
    Mad,
    Dp3,
    Dp4,
    D2a,
    Min,
    Max,
    Cnd,
    Cmp,
    Frc,
    Sop,
    Mdh,
    Mdv,
}

impl RgbOp {
    /// The arguments (A, B, C) the op reads, for printing.
    pub fn arity(self) -> usize {
        match self {
            RgbOp::Sop => 0,
            RgbOp::Frc => 1,
            RgbOp::Dp3 | RgbOp::Dp4 | RgbOp::Min | RgbOp::Max => 2,
            _ => 3,
        }
    }
}

/// The alpha unit's ops (ALPHA_OP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AlphaOp {
    Mad,
    Dp,
    Min,
    Max,
    Cnd,
    Cmp,
    Frc,
    Ex2,
    Ln2,
    Rcp,
    Rsq,
    Sin,
    Cos,
    Mdh,
    Mdv,
}

impl AlphaOp {
    /// As [`RgbOp::arity`]; DP takes its operands from the RGB unit.
    pub fn arity(self) -> usize {
        use AlphaOp::*;
        match self {
            Dp => 0,
            Frc | Ex2 | Ln2 | Rcp | Rsq | Sin | Cos => 1,
            Min | Max => 2,
            _ => 3,
        }
    }
}

/// TEX ops (TEX_OP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TexOp {
    Nop,
    Ld,
    Texkill,
    Proj,
    Lodbias,
    Lod,
    Dxdy,
}

/// Flow-control ops (FC_OP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FcOp {
    Jump,
    Loop,
    EndLoop,
    Rep,
    EndRep,
    BreakLoop,
    BreakRep,
    Continue,
}

/// RGB ops by RGB_OP code; `None` is reserved (6, 13-15).
pub const RGB_OPS: [Option<OpRow<RgbOp>>; 16] = [
    op("MAD", RgbOp::Mad),
    op("DP3", RgbOp::Dp3),
    op("DP4", RgbOp::Dp4),
    op("D2A", RgbOp::D2a),
    op("MIN", RgbOp::Min),
    op("MAX", RgbOp::Max),
    None,
    op("CND", RgbOp::Cnd),
    op("CMP", RgbOp::Cmp),
    op("FRC", RgbOp::Frc),
    op("SOP", RgbOp::Sop),
    op("MDH", RgbOp::Mdh),
    op("MDV", RgbOp::Mdv),
    None,
    None,
    None,
];

/// Alpha ops by ALPHA_OP code; `None` is reserved (4).
pub const ALPHA_OPS: [Option<OpRow<AlphaOp>>; 16] = [
    op("MAD", AlphaOp::Mad),
    op("DP", AlphaOp::Dp),
    op("MIN", AlphaOp::Min),
    op("MAX", AlphaOp::Max),
    None,
    op("CND", AlphaOp::Cnd),
    op("CMP", AlphaOp::Cmp),
    op("FRC", AlphaOp::Frc),
    op("EX2", AlphaOp::Ex2),
    op("LN2", AlphaOp::Ln2),
    op("RCP", AlphaOp::Rcp),
    op("RSQ", AlphaOp::Rsq),
    op("SIN", AlphaOp::Sin),
    op("COS", AlphaOp::Cos),
    op("MDH", AlphaOp::Mdh),
    op("MDV", AlphaOp::Mdv),
];

/// TEX ops by TEX_OP code; 7 is reserved.
pub const TEX_OPS: [Option<OpRow<TexOp>>; 8] = [
    op("NOP", TexOp::Nop),
    op("LD", TexOp::Ld),
    op("TEXKILL", TexOp::Texkill),
    op("PROJ", TexOp::Proj),
    op("LODBIAS", TexOp::Lodbias),
    op("LOD", TexOp::Lod),
    op("DXDY", TexOp::Dxdy),
    None,
];

/// FC ops by FC_OP code (every code is one).
pub const FC_OPS: [Option<OpRow<FcOp>>; 8] = [
    op("JUMP", FcOp::Jump),
    op("LOOP", FcOp::Loop),
    op("ENDLOOP", FcOp::EndLoop),
    op("REP", FcOp::Rep),
    op("ENDREP", FcOp::EndRep),
    op("BREAKLOOP", FcOp::BreakLoop),
    op("BREAKREP", FcOp::BreakRep),
    op("CONTINUE", FcOp::Continue),
];

/// The row of `field`'s code in `words`; an error names the field when the code is
/// reserved.
pub fn row_of<T: Copy>(
    table: &[Option<OpRow<T>>],
    field: Field,
    words: &Words,
) -> Result<OpRow<T>, String> {
    let code = field.get(words);
    table
        .get(code as usize)
        .copied()
        .flatten()
        .ok_or_else(|| format!("{} {code} is reserved", field.name))
}

/// ALU swizzle characters by code: R, G, B, A, 0, ½ (`h`), 1, unused (`_`).
pub const ALU_SWIZZLES: [char; 8] = ['r', 'g', 'b', 'a', '0', 'h', '1', '_'];

/// Pre-subtract op names by SRCP_OP: 1 − 2·s0, s1 − s0, s1 + s0, 1 − s0.
pub const SRCP_OPS: [&str; 4] = ["neg2", "sub", "add", "neg"];

/// Value of a 7-bit inline constant: `(1 + m/8)·2^(e−7)` for e > 0, `(m/8)·2^−6` for e = 0.
pub fn inline_constant(code: u32) -> f32 {
    let exponent = (code >> 3) & 0xF;
    let mantissa = (code & 7) as f32;
    if exponent == 0 {
        mantissa / 8.0 * (-6f32).exp2()
    } else {
        (1.0 + mantissa / 8.0) * (exponent as f32 - 7.0).exp2()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_tile_each_alu_word_without_overlap() {
        for ty in [kind::ALU, kind::TEX, kind::FC] {
            let mut seen = [0u32; 6];
            for field in CMN.iter().chain(fields_of(ty)) {
                assert_eq!(
                    seen[field.word] & field.mask(),
                    0,
                    "{} overlaps",
                    field.name
                );
                seen[field.word] |= field.mask();
            }
        }
        assert_eq!(reserved_bits(kind::ALU), [0; 6]);
        assert_eq!(reserved_bits(kind::TEX)[4], u32::MAX);
        assert_eq!(reserved_bits(kind::FC)[1], u32::MAX);
    }

    #[test]
    fn field_get_and_set() {
        let mut words = [0; 6];
        JUMP_ADDR.set(&mut words, 0x1FF);
        assert_eq!(words[3], 0x01FF_0000);
        assert_eq!(JUMP_ADDR.get(&words), 0x1FF);
        STAT_WE.set(&mut words, 0xF);
        assert_eq!(words[0], 0xF000_0000);
    }

    #[test]
    fn inline_constants_match_the_spec_table() {
        // 0x38 = 1.0, 0x30 = 0.5, 0x40 = 2.0, 0x3C = 1.5, 0x7F = 480 (spec A.3).
        assert_eq!(inline_constant(0x38), 1.0);
        assert_eq!(inline_constant(0x30), 0.5);
        assert_eq!(inline_constant(0x40), 2.0);
        assert_eq!(inline_constant(0x3C), 1.5);
        assert_eq!(inline_constant(0x7F), 480.0);
        assert_eq!(inline_constant(0), 0.0);
        // Denormal: e = 0, m = 4 -> 0.5 * 2^-6.
        assert_eq!(inline_constant(4), 1.0 / 128.0);
        // float(29): e = 3, m = 5 -> 1.625 / 16 = 0.1015625 (drm/shadertoy_circle's comment).
        assert_eq!(inline_constant(29), 0.1015625);
    }
}
