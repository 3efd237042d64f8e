//! Words to pre-decoded instructions (decode once, run many), and the checks that reject
//! reserved encodings: reserved op codes, predicate selects 6-7, TEX op 7, and set bits
//! that no field of the instruction's type defines. Every code a field holds becomes an
//! enum here, so that the interpreter matches on names, never on numbers.

use super::fields::{self as f, kind, Field, Words};
pub use super::fields::{AlphaOp, FcOp, RgbOp, TexOp};

/// Where a register operand reads from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum R500Source {
    Temp(u8),
    Const(u8),
    /// An inline constant, already converted.
    Inline(f32),
}

/// An ALU source slot's address: the register, and whether aL is added.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Address {
    pub source: R500Source,
    pub relative: bool,
}

/// A source modifier (MOD_A, MOD_B, MOD_C).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Modifier {
    None,
    Negate,
    Abs,
    NegateAbs,
}

impl Modifier {
    fn decode(code: u32) -> Modifier {
        [
            Modifier::None,
            Modifier::Negate,
            Modifier::Abs,
            Modifier::NegateAbs,
        ][code as usize & 3]
    }

    /// `v`, `−v`, `|v|` or `−|v|`.
    pub fn apply(self, v: f32) -> f32 {
        match self {
            Modifier::None => v,
            Modifier::Negate => -v,
            Modifier::Abs => v.abs(),
            Modifier::NegateAbs => -v.abs(),
        }
    }
}

/// The pre-subtract that makes `srcp` (SRCP_OP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Presubtract {
    /// 1 − 2·s0.
    Neg2,
    /// s1 − s0.
    Sub,
    /// s1 + s0.
    Add,
    /// 1 − s0.
    Neg,
}

impl Presubtract {
    fn decode(code: u32) -> Presubtract {
        [
            Presubtract::Neg2,
            Presubtract::Sub,
            Presubtract::Add,
            Presubtract::Neg,
        ][code as usize & 3]
    }

    /// `srcp` from one channel of `s0` and `s1`.
    pub fn apply(self, s0: f32, s1: f32) -> f32 {
        match self {
            Presubtract::Neg2 => 1.0 - 2.0 * s0,
            Presubtract::Sub => s1 - s0,
            Presubtract::Add => s1 + s0,
            Presubtract::Neg => 1.0 - s0,
        }
    }
}

/// One ALU swizzle code: a channel of the slot, or a constant (0, ½, 1; the "unused" code
/// reads 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Swizzle {
    Channel(u8),
    Value(f32),
}

impl Swizzle {
    fn decode(code: u32) -> Swizzle {
        match code {
            0..=3 => Swizzle::Channel(code as u8),
            5 => Swizzle::Value(0.5),
            6 => Swizzle::Value(1.0),
            _ => Swizzle::Value(0.0),
        }
    }

    /// The swizzled value of `v`.
    pub fn apply(self, v: &[f32; 4]) -> f32 {
        match self {
            Swizzle::Channel(c) => v[c as usize & 3],
            Swizzle::Value(value) => value,
        }
    }
}

/// A compare with 0: of the ALU result (ALU_RESULT_OP) and of the values an ALU
/// instruction writes to the predicate bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compare {
    Equal,
    Less,
    GreaterOrEqual,
    NotEqual,
}

impl Compare {
    fn decode(code: u32) -> Compare {
        [
            Compare::Equal,
            Compare::Less,
            Compare::GreaterOrEqual,
            Compare::NotEqual,
        ][code as usize & 3]
    }

    /// `v == 0`, `v < 0`, `v >= 0`, `v != 0`.
    pub fn test(self, v: f32) -> bool {
        match self {
            Compare::Equal => v == 0.0,
            Compare::Less => v < 0.0,
            Compare::GreaterOrEqual => v >= 0.0,
            Compare::NotEqual => v != 0.0,
        }
    }
}

/// Which predicate bit gates a unit's writes or an FC jump (PRED_SEL, PRED_INV).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Predication {
    select: PredicateSelect,
    invert: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PredicateSelect {
    /// PRED_SEL 0.
    None,
    /// PRED_SEL 1: each channel's own bit.
    Channel,
    /// PRED_SEL 2-5: bit r, g, b or a for every channel.
    Bit(u8),
}

impl Predication {
    fn decode(select: u32, invert: bool) -> Predication {
        let select = match select {
            0 => PredicateSelect::None,
            1 => PredicateSelect::Channel,
            bit => PredicateSelect::Bit((bit - 2) as u8 & 3),
        };
        Predication { select, invert }
    }

    /// The selected predicate bit for channel `channel` (0 r … 3 a), inverted as asked;
    /// `None` when no bit is selected.
    pub fn test(self, predicate: &[bool; 4], channel: usize) -> Option<bool> {
        let bit = match self.select {
            PredicateSelect::None => return None,
            PredicateSelect::Channel => channel,
            PredicateSelect::Bit(bit) => bit as usize,
        };
        Some(predicate[bit & 3] ^ self.invert)
    }
}

/// Where OMASK sends a unit's result: render target `n` on OUT, the predicate bits
/// through a compare with 0 on ALU (the TARGET field holds one or the other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    Output(usize),
    Predicate(Compare),
}

/// One RGB argument: slot select (0-2 src, 3 srcp), per-channel swizzle, modifier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RgbArg {
    pub select: u8,
    pub swizzle: [Swizzle; 3],
    pub modifier: Modifier,
}

/// One alpha argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlphaArg {
    pub select: u8,
    pub swizzle: Swizzle,
    pub modifier: Modifier,
}

/// Predication and write controls of CMN that ALU, OUT and TEX share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Common {
    pub rgb_pred: Predication,
    pub alpha_pred: Predication,
    pub rgb_wmask: u8,
    pub alpha_wmask: bool,
    pub rgb_omask: u8,
    pub alpha_omask: bool,
}

/// A decoded ALU or OUT instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Alu {
    pub out: bool,
    pub common: Common,
    pub rgb_sources: [Address; 3],
    pub alpha_sources: [Address; 3],
    pub rgb_srcp: Presubtract,
    pub alpha_srcp: Presubtract,
    pub rgb_op: RgbOp,
    pub alpha_op: AlphaOp,
    pub rgb_args: [RgbArg; 3],
    pub alpha_args: [AlphaArg; 3],
    /// The OMOD scale; `None` for OMOD 7, which neither scales nor clamps.
    pub rgb_omod: Option<f32>,
    pub alpha_omod: Option<f32>,
    pub rgb_dest: u8,
    pub rgb_dest_rel: bool,
    pub alpha_dest: u8,
    pub alpha_dest_rel: bool,
    pub rgb_target: Target,
    pub alpha_target: Target,
    pub w_omask: bool,
    pub rgb_clamp: bool,
    pub alpha_clamp: bool,
    /// RGB_INST bit 31: update the ALU result.
    pub alu_result_write: bool,
    /// The ALU result compares alpha (else red).
    pub alu_result_alpha: bool,
    pub alu_result_op: Compare,
}

/// A decoded TEX instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Tex {
    pub common: Common,
    pub unit: u8,
    pub op: TexOp,
    pub unscaled: bool,
    pub src: u8,
    pub src_rel: bool,
    /// Channels of the source temp used as S, T, R, Q.
    pub src_swizzle: [u8; 4],
    pub dst: u8,
    pub dst_rel: bool,
    /// Texel channel for dest R, G, B, A.
    pub dst_swizzle: [u8; 4],
}

/// What a JUMP does with the address stack (A_OP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackOp {
    /// A plain jump (code 0, and the undocumented 3).
    None,
    /// Return: jump to the address popped.
    Pop,
    /// Call: push the next address, then jump.
    Push,
}

/// A decoded FC instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Fc {
    pub pred: Predication,
    pub op: FcOp,
    pub b_else: bool,
    pub stack: StackOp,
    /// JUMP_FUNC: the truth table of (ALU result, predicate, bool).
    pub jump_func: u8,
    pub bool_addr: u8,
    pub int_addr: u8,
    pub target: u16,
}

/// One instruction, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub enum R500Decoded {
    Alu(Box<Alu>),
    Tex(Tex),
    Fc(Fc),
}

/// Why words do not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("instruction {index}: {message}")]
pub struct DecodeError {
    pub index: usize,
    pub message: String,
}

/// Checks one instruction's encoding: no reserved codes, no bits outside its type's fields.
pub fn validate(words: &Words) -> Result<(), String> {
    let ty = f::TYPE.get(words);
    let reserved = f::reserved_bits(ty);
    for (word, (&value, &mask)) in words.iter().zip(&reserved).enumerate() {
        if value & mask != 0 {
            return Err(format!(
                "reserved bits {:#010x} set in word {word} of a {} instruction",
                value & mask,
                type_name(ty)
            ));
        }
    }
    for field in [f::RGB_PRED_SEL, f::ALPHA_PRED_SEL] {
        if field.get(words) > 5 {
            return Err(format!("{} {} is reserved", field.name, field.get(words)));
        }
    }
    match ty {
        kind::ALU | kind::OUT => {
            f::row_of(&f::RGB_OPS, f::RGB_OP, words)?;
            f::row_of(&f::ALPHA_OPS, f::ALPHA_OP, words)?;
        }
        kind::TEX => {
            f::row_of(&f::TEX_OPS, f::TEX_OP, words)?;
        }
        _ => {}
    }
    Ok(())
}

/// `ALU`, `OUT`, `FC` or `TEX`.
pub fn type_name(ty: u32) -> &'static str {
    ["ALU", "OUT", "FC", "TEX"][ty as usize & 3]
}

/// Decodes a whole program.
pub fn decode_program(program: &[Words]) -> Result<Vec<R500Decoded>, DecodeError> {
    program
        .iter()
        .enumerate()
        .map(|(index, words)| decode(words).map_err(|message| DecodeError { index, message }))
        .collect()
}

/// Decodes one instruction.
pub fn decode(words: &Words) -> Result<R500Decoded, String> {
    validate(words)?;
    let get = |field: Field| field.get(words);
    let flag = |field: Field| field.get(words) != 0;
    let common = Common {
        rgb_pred: Predication::decode(get(f::RGB_PRED_SEL), flag(f::RGB_PRED_INV)),
        alpha_pred: Predication::decode(get(f::ALPHA_PRED_SEL), flag(f::ALPHA_PRED_INV)),
        rgb_wmask: get(f::RGB_WMASK) as u8,
        alpha_wmask: flag(f::ALPHA_WMASK),
        rgb_omask: get(f::RGB_OMASK) as u8,
        alpha_omask: flag(f::ALPHA_OMASK),
    };
    Ok(match get(f::TYPE) {
        kind::TEX => R500Decoded::Tex(decode_tex(words, common)?),
        kind::FC => R500Decoded::Fc(decode_fc(words, common)?),
        ty => R500Decoded::Alu(Box::new(decode_alu(words, common, ty == kind::OUT)?)),
    })
}

fn decode_tex(words: &Words, common: Common) -> Result<Tex, String> {
    let get = |field: Field| field.get(words);
    let flag = |field: Field| field.get(words) != 0;
    Ok(Tex {
        common,
        unit: get(f::TEX_ID) as u8,
        op: f::row_of(&f::TEX_OPS, f::TEX_OP, words)?.op,
        unscaled: flag(f::UNSCALED),
        src: get(f::SRC_ADDR) as u8,
        src_rel: flag(f::SRC_ADDR_REL),
        src_swizzle: [f::SRC_S_SWIZ, f::SRC_T_SWIZ, f::SRC_R_SWIZ, f::SRC_Q_SWIZ]
            .map(|field| get(field) as u8),
        dst: get(f::DST_ADDR) as u8,
        dst_rel: flag(f::DST_ADDR_REL),
        dst_swizzle: [f::DST_R_SWIZ, f::DST_G_SWIZ, f::DST_B_SWIZ, f::DST_A_SWIZ]
            .map(|field| get(field) as u8),
    })
}

fn decode_fc(words: &Words, common: Common) -> Result<Fc, String> {
    let get = |field: Field| field.get(words);
    Ok(Fc {
        // FC is scalar: the RGB predication applies.
        pred: common.rgb_pred,
        op: f::row_of(&f::FC_OPS, f::FC_OP, words)?.op,
        b_else: get(f::B_ELSE) != 0,
        stack: match get(f::A_OP) {
            1 => StackOp::Pop,
            2 => StackOp::Push,
            _ => StackOp::None,
        },
        jump_func: get(f::JUMP_FUNC) as u8,
        bool_addr: get(f::BOOL_ADDR) as u8,
        int_addr: get(f::INT_ADDR) as u8,
        target: get(f::JUMP_ADDR) as u16,
    })
}

/// Source slot `slot` of the RGB or alpha address word.
fn address(words: &Words, alpha: bool, slot: usize) -> Address {
    let [addr, constant, rel] = f::source_fields(alpha, slot);
    let value = addr.get(words);
    let source = if constant.get(words) != 0 {
        R500Source::Const(value as u8)
    } else if value & 0x80 != 0 {
        R500Source::Inline(f::inline_constant(value & 0x7F))
    } else {
        R500Source::Temp(value as u8)
    };
    Address {
        source,
        relative: rel.get(words) != 0,
    }
}

fn rgb_arg(words: &Words, arg: usize) -> RgbArg {
    let (select, swizzles, modifier) = f::rgb_arg_fields(arg);
    RgbArg {
        select: select.get(words) as u8,
        swizzle: swizzles.map(|s| Swizzle::decode(s.get(words))),
        modifier: Modifier::decode(modifier.get(words)),
    }
}

fn alpha_arg(words: &Words, arg: usize) -> AlphaArg {
    let (select, swizzle, modifier) = f::alpha_arg_fields(arg);
    AlphaArg {
        select: select.get(words) as u8,
        swizzle: Swizzle::decode(swizzle.get(words)),
        modifier: Modifier::decode(modifier.get(words)),
    }
}

/// OMOD: ×1, ×2, ×4, ×8, ÷2, ÷4, ÷8; 7 is no scale (and no clamp).
fn omod(code: u32) -> Option<f32> {
    const SCALE: [f32; 7] = [1.0, 2.0, 4.0, 8.0, 0.5, 0.25, 0.125];
    SCALE.get(code as usize).copied()
}

fn decode_alu(words: &Words, common: Common, out: bool) -> Result<Alu, String> {
    let get = |field: Field| field.get(words);
    let flag = |field: Field| field.get(words) != 0;
    let target = |field: Field| {
        if out {
            Target::Output(get(field) as usize)
        } else {
            Target::Predicate(Compare::decode(get(field)))
        }
    };
    Ok(Alu {
        out,
        common,
        rgb_sources: [0, 1, 2].map(|slot| address(words, false, slot)),
        alpha_sources: [0, 1, 2].map(|slot| address(words, true, slot)),
        rgb_srcp: Presubtract::decode(get(f::RGB_SRCP_OP)),
        alpha_srcp: Presubtract::decode(get(f::ALPHA_SRCP_OP)),
        rgb_op: f::row_of(&f::RGB_OPS, f::RGB_OP, words)?.op,
        alpha_op: f::row_of(&f::ALPHA_OPS, f::ALPHA_OP, words)?.op,
        rgb_args: [0, 1, 2].map(|arg| rgb_arg(words, arg)),
        alpha_args: [0, 1, 2].map(|arg| alpha_arg(words, arg)),
        rgb_omod: omod(get(f::RGB_OMOD)),
        alpha_omod: omod(get(f::ALPHA_OMOD)),
        rgb_dest: get(f::RGB_ADDRD) as u8,
        rgb_dest_rel: flag(f::RGB_ADDRD_REL),
        alpha_dest: get(f::ALPHA_ADDRD) as u8,
        alpha_dest_rel: flag(f::ALPHA_ADDRD_REL),
        rgb_target: target(f::RGB_TARGET),
        alpha_target: target(f::ALPHA_TARGET),
        w_omask: flag(f::W_OMASK),
        rgb_clamp: flag(f::RGB_CLAMP),
        alpha_clamp: flag(f::ALPHA_CLAMP),
        alu_result_write: flag(f::ALU_WMASK),
        alu_result_alpha: get(f::ALU_RESULT_SEL) != 0,
        alu_result_op: Compare::decode(get(f::ALU_RESULT_OP)),
    })
}
