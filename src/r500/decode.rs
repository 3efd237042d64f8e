//! Words to pre-decoded instructions (decode once, run many), and the checks that reject
//! reserved encodings: reserved op codes, predicate selects 6-7, TEX op 7, and set bits
//! that no field of the instruction's type defines.

use super::fields::{self as f, kind, Words};

/// Where a register operand reads from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Source {
    Temp(u8),
    Const(u8),
    /// An inline constant, already converted.
    Inline(f32),
}

/// An ALU source slot's address: the register, and whether aL is added.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Address {
    pub source: Source,
    pub relative: bool,
}

/// One RGB argument: slot select (0-2 src, 3 srcp), per-channel swizzle codes, modifier.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RgbArg {
    pub select: u8,
    pub swizzle: [u8; 3],
    pub modifier: u8,
}

/// One alpha argument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AlphaArg {
    pub select: u8,
    pub swizzle: u8,
    pub modifier: u8,
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

/// Predication and write controls of CMN that ALU, OUT and TEX share.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Common {
    pub rgb_pred_sel: u8,
    pub rgb_pred_inv: bool,
    pub alpha_pred_sel: u8,
    pub alpha_pred_inv: bool,
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
    pub rgb_srcp: u8,
    pub alpha_srcp: u8,
    pub rgb_op: RgbOp,
    pub alpha_op: AlphaOp,
    pub rgb_args: [RgbArg; 3],
    pub alpha_args: [AlphaArg; 3],
    pub rgb_omod: u8,
    pub alpha_omod: u8,
    pub rgb_dest: u8,
    pub rgb_dest_rel: bool,
    pub alpha_dest: u8,
    pub alpha_dest_rel: bool,
    pub rgb_target: u8,
    pub alpha_target: u8,
    pub w_omask: bool,
    pub rgb_clamp: bool,
    pub alpha_clamp: bool,
    /// RGB_INST bit 31: update the ALU result.
    pub alu_result_write: bool,
    /// 0 red, 1 alpha.
    pub alu_result_sel: u8,
    /// Compare with 0: 0 ==, 1 <, 2 >=, 3 !=.
    pub alu_result_op: u8,
}

/// A decoded TEX instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Tex {
    pub common: Common,
    pub unit: u8,
    /// 0 NOP, 1 LD, 2 TEXKILL, 3 PROJ, 4 LODBIAS, 5 LOD, 6 DXDY.
    pub op: u8,
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

/// A decoded FC instruction.
#[derive(Clone, Debug, PartialEq)]
pub struct Fc {
    pub pred_sel: u8,
    pub pred_inv: bool,
    /// 0 JUMP, 1 LOOP, 2 ENDLOOP, 3 REP, 4 ENDREP, 5 BREAKLOOP, 6 BREAKREP, 7 CONTINUE.
    pub op: u8,
    pub b_else: bool,
    /// 0 none, 1 pop, 2 push.
    pub a_op: u8,
    pub jump_func: u8,
    pub bool_addr: u8,
    pub int_addr: u8,
    pub target: u16,
}

/// One instruction, ready to run.
#[derive(Clone, Debug, PartialEq)]
pub enum Instruction {
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
            let rgb = f::RGB_OP.get(words);
            if f::RGB_OPS[rgb as usize].is_none() {
                return Err(format!("RGB_OP {rgb} is reserved"));
            }
            let alpha = f::ALPHA_OP.get(words);
            if f::ALPHA_OPS[alpha as usize].is_none() {
                return Err(format!("ALPHA_OP {alpha} is reserved"));
            }
        }
        kind::TEX => {
            let op = f::TEX_OP.get(words);
            if f::TEX_OPS[op as usize].is_none() {
                return Err(format!("TEX_OP {op} is reserved"));
            }
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
pub fn decode_program(program: &[Words]) -> Result<Vec<Instruction>, DecodeError> {
    program
        .iter()
        .enumerate()
        .map(|(index, words)| decode(words).map_err(|message| DecodeError { index, message }))
        .collect()
}

/// Decodes one instruction.
pub fn decode(words: &Words) -> Result<Instruction, String> {
    validate(words)?;
    let get = |field: f::Field| field.get(words);
    let flag = |field: f::Field| field.get(words) != 0;
    let common = Common {
        rgb_pred_sel: get(f::RGB_PRED_SEL) as u8,
        rgb_pred_inv: flag(f::RGB_PRED_INV),
        alpha_pred_sel: get(f::ALPHA_PRED_SEL) as u8,
        alpha_pred_inv: flag(f::ALPHA_PRED_INV),
        rgb_wmask: get(f::RGB_WMASK) as u8,
        alpha_wmask: flag(f::ALPHA_WMASK),
        rgb_omask: get(f::RGB_OMASK) as u8,
        alpha_omask: flag(f::ALPHA_OMASK),
    };
    let ty = get(f::TYPE);
    Ok(match ty {
        kind::TEX => Instruction::Tex(Tex {
            common,
            unit: get(f::TEX_ID) as u8,
            op: get(f::TEX_OP) as u8,
            unscaled: flag(f::UNSCALED),
            src: get(f::SRC_ADDR) as u8,
            src_rel: flag(f::SRC_ADDR_REL),
            src_swizzle: [f::SRC_S_SWIZ, f::SRC_T_SWIZ, f::SRC_R_SWIZ, f::SRC_Q_SWIZ]
                .map(|field| get(field) as u8),
            dst: get(f::DST_ADDR) as u8,
            dst_rel: flag(f::DST_ADDR_REL),
            dst_swizzle: [f::DST_R_SWIZ, f::DST_G_SWIZ, f::DST_B_SWIZ, f::DST_A_SWIZ]
                .map(|field| get(field) as u8),
        }),
        kind::FC => Instruction::Fc(Fc {
            pred_sel: common.rgb_pred_sel,
            pred_inv: common.rgb_pred_inv,
            op: get(f::FC_OP) as u8,
            b_else: flag(f::B_ELSE),
            a_op: get(f::A_OP) as u8,
            jump_func: get(f::JUMP_FUNC) as u8,
            bool_addr: get(f::BOOL_ADDR) as u8,
            int_addr: get(f::INT_ADDR) as u8,
            target: get(f::JUMP_ADDR) as u16,
        }),
        _ => {
            let address = |alpha: bool, slot: usize| {
                let [addr, constant, rel] = f::source_fields(alpha, slot);
                let value = get(addr);
                let source = if get(constant) != 0 {
                    Source::Const(value as u8)
                } else if value & 0x80 != 0 {
                    Source::Inline(f::inline_constant(value & 0x7F))
                } else {
                    Source::Temp(value as u8)
                };
                Address {
                    source,
                    relative: get(rel) != 0,
                }
            };
            let rgb_arg = |arg: usize| {
                let (select, swizzles, modifier) = f::rgb_arg_fields(arg);
                RgbArg {
                    select: get(select) as u8,
                    swizzle: swizzles.map(|s| get(s) as u8),
                    modifier: get(modifier) as u8,
                }
            };
            let alpha_arg = |arg: usize| {
                let (select, swizzle, modifier) = f::alpha_arg_fields(arg);
                AlphaArg {
                    select: get(select) as u8,
                    swizzle: get(swizzle) as u8,
                    modifier: get(modifier) as u8,
                }
            };
            use AlphaOp as A;
            use RgbOp as R;
            let rgb_op = [
                R::Mad,
                R::Dp3,
                R::Dp4,
                R::D2a,
                R::Min,
                R::Max,
                R::Mad,
                R::Cnd,
                R::Cmp,
                R::Frc,
                R::Sop,
                R::Mdh,
                R::Mdv,
            ][get(f::RGB_OP) as usize];
            let alpha_op = [
                A::Mad,
                A::Dp,
                A::Min,
                A::Max,
                A::Mad,
                A::Cnd,
                A::Cmp,
                A::Frc,
                A::Ex2,
                A::Ln2,
                A::Rcp,
                A::Rsq,
                A::Sin,
                A::Cos,
                A::Mdh,
                A::Mdv,
            ][get(f::ALPHA_OP) as usize];
            Instruction::Alu(Box::new(Alu {
                out: ty == kind::OUT,
                common,
                rgb_sources: [0, 1, 2].map(|slot| address(false, slot)),
                alpha_sources: [0, 1, 2].map(|slot| address(true, slot)),
                rgb_srcp: get(f::RGB_SRCP_OP) as u8,
                alpha_srcp: get(f::ALPHA_SRCP_OP) as u8,
                rgb_op,
                alpha_op,
                rgb_args: [0, 1, 2].map(rgb_arg),
                alpha_args: [0, 1, 2].map(alpha_arg),
                rgb_omod: get(f::RGB_OMOD) as u8,
                alpha_omod: get(f::ALPHA_OMOD) as u8,
                rgb_dest: get(f::RGB_ADDRD) as u8,
                rgb_dest_rel: flag(f::RGB_ADDRD_REL),
                alpha_dest: get(f::ALPHA_ADDRD) as u8,
                alpha_dest_rel: flag(f::ALPHA_ADDRD_REL),
                rgb_target: get(f::RGB_TARGET) as u8,
                alpha_target: get(f::ALPHA_TARGET) as u8,
                w_omask: flag(f::W_OMASK),
                rgb_clamp: flag(f::RGB_CLAMP),
                alpha_clamp: flag(f::ALPHA_CLAMP),
                alu_result_write: flag(f::ALU_WMASK),
                alu_result_sel: get(f::ALU_RESULT_SEL) as u8,
                alu_result_op: get(f::ALU_RESULT_OP) as u8,
            }))
        }
    })
}
