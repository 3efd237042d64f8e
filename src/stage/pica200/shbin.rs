//! The SHBIN container 3DS toolchains write (spec foreign_isas §B.8; picasso's layout):
//! a DVLB header with the offsets of its DVLEs, one DVLP holding the code words and the
//! operand descriptors (8 bytes each), and per program a DVLE with its entry range,
//! constants (20 bytes each), outputs (8 bytes), uniforms (8 bytes) and their names.
//! All little-endian.

use super::f24::{f24_to_f32, f32_to_f24};
use super::{Constant, PicaOutput, PicaProgram, Uniform};

const DVLB: u32 = 0x424C_5644;
const DVLP: u32 = 0x504C_5644;
const DVLE: u32 = 0x454C_5644;

/// Why bytes are not a SHBIN: the byte offset and what was expected there.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("byte {offset}: {message}")]
pub struct ShbinError {
    pub offset: usize,
    pub message: String,
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl Reader<'_> {
    fn bytes_at(&self, offset: usize, len: usize, what: &str) -> Result<&[u8], ShbinError> {
        offset
            .checked_add(len)
            .and_then(|end| self.bytes.get(offset..end))
            .ok_or_else(|| ShbinError {
                offset,
                message: format!(
                    "expected {what} ({len} bytes), but the file ends at byte {}",
                    self.bytes.len()
                ),
            })
    }

    fn u32(&self, offset: usize, what: &str) -> Result<u32, ShbinError> {
        let b = self.bytes_at(offset, 4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u16(&self, offset: usize, what: &str) -> Result<u16, ShbinError> {
        let b = self.bytes_at(offset, 2, what)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u8(&self, offset: usize, what: &str) -> Result<u8, ShbinError> {
        Ok(self.bytes_at(offset, 1, what)?[0])
    }

    fn magic(&self, offset: usize, magic: u32, name: &str) -> Result<(), ShbinError> {
        let found = self.u32(offset, name)?;
        if found != magic {
            return Err(ShbinError {
                offset,
                message: format!(
                    "expected the magic `{name}`, found {:?}",
                    String::from_utf8_lossy(&found.to_le_bytes())
                ),
            });
        }
        Ok(())
    }

    /// `base + index·stride + field` without overflow.
    fn at(base: usize, index: usize, stride: usize, field: usize) -> usize {
        base.saturating_add(index.saturating_mul(stride))
            .saturating_add(field)
    }
}

/// Reads the program of DVLE `which` (0 for the first) from SHBIN bytes.
pub fn read(bytes: &[u8], which: usize) -> Result<PicaProgram, ShbinError> {
    let r = Reader { bytes };
    r.magic(0, DVLB, "DVLB")?;
    let count = r.u32(4, "the DVLE count")? as usize;
    if which >= count {
        return Err(ShbinError {
            offset: 4,
            message: format!("the file holds {count} DVLE(s); program {which} was asked for"),
        });
    }
    let dvlp = 8usize.saturating_add(count.saturating_mul(4));
    r.magic(dvlp, DVLP, "DVLP")?;
    let code_offset = r.u32(dvlp + 8, "the code offset")? as usize;
    let code_words = r.u32(dvlp + 12, "the code size")? as usize;
    let desc_offset = r.u32(dvlp + 16, "the descriptor offset")? as usize;
    let desc_count = r.u32(dvlp + 20, "the descriptor count")? as usize;
    if code_words > 4096 || desc_count > 128 {
        return Err(ShbinError {
            offset: dvlp + 12,
            message: format!(
                "{code_words} code words and {desc_count} descriptors: expected at most 4096 and 128"
            ),
        });
    }
    let code_base = dvlp.saturating_add(code_offset);
    let desc_base = dvlp.saturating_add(desc_offset);
    let code = (0..code_words)
        .map(|i| r.u32(Reader::at(code_base, i, 4, 0), "a code word"))
        .collect::<Result<Vec<_>, _>>()?;
    let descriptors = (0..desc_count)
        .map(|i| r.u32(Reader::at(desc_base, i, 8, 0), "an operand descriptor"))
        .collect::<Result<Vec<_>, _>>()?;

    let dvle = r.u32(8 + 4 * which, "a DVLE offset")? as usize;
    r.magic(dvle, DVLE, "DVLE")?;
    let geometry = r.u8(dvle + 6, "the shader type")? == 1;
    let entry = r.u32(dvle + 8, "the entry point")?;
    let entry_end = r.u32(dvle + 12, "the end of main")?;
    let table = |n: usize| -> Result<(usize, usize), ShbinError> {
        let offset = r.u32(dvle + 24 + 8 * n, "a table offset")? as usize;
        let count = r.u32(dvle + 28 + 8 * n, "a table size")? as usize;
        if count > 0x1000 {
            return Err(ShbinError {
                offset: dvle + 28 + 8 * n,
                message: format!("a table of {count} entries: expected at most 4096"),
            });
        }
        Ok((dvle.saturating_add(offset), count))
    };
    let constants = read_constants(&r, table(0)?)?;
    let outputs = read_outputs(&r, table(2)?)?;
    let uniforms = read_uniforms(&r, table(3)?, table(4)?)?;
    Ok(PicaProgram {
        code,
        descriptors,
        entry,
        entry_end,
        geometry,
        constants,
        outputs,
        uniforms,
    })
}

/// The constant table: `(offset, count)` of 20-byte entries.
fn read_constants(
    r: &Reader,
    (constants_at, constant_count): (usize, usize),
) -> Result<Vec<Constant>, ShbinError> {
    let mut constants = Vec::new();
    for i in 0..constant_count {
        let at = Reader::at(constants_at, i, 20, 0);
        let kind = r.u16(at, "a constant's type")?;
        let index = r.u16(at + 2, "a constant's register")? as u8;
        constants.push(match kind {
            0 => Constant::Bool {
                index: index & 15,
                value: r.u8(at + 4, "a bool constant")? != 0,
            },
            1 => {
                let b = r.bytes_at(at + 4, 4, "an integer constant")?;
                Constant::Int {
                    index: index & 3,
                    value: [b[0], b[1], b[2], b[3]],
                }
            }
            2 => {
                let mut value = [0.0; 4];
                for (j, slot) in value.iter_mut().enumerate() {
                    *slot = f24_to_f32(r.u32(at + 4 + 4 * j, "a float24 constant")?);
                }
                Constant::Float {
                    index: index.min(95),
                    value,
                }
            }
            other => {
                return Err(ShbinError {
                    offset: at,
                    message: format!(
                        "constant type {other}: expected 0 (bool), 1 (int) or 2 (float)"
                    ),
                })
            }
        });
    }
    Ok(constants)
}

/// The output table: 8-byte entries.
fn read_outputs(
    r: &Reader,
    (outputs_at, output_count): (usize, usize),
) -> Result<Vec<PicaOutput>, ShbinError> {
    let mut outputs = Vec::new();
    for i in 0..output_count {
        let at = Reader::at(outputs_at, i, 8, 0);
        outputs.push(PicaOutput {
            semantic: r.u16(at, "an output's type")?,
            register: (r.u16(at + 2, "an output's register")? & 0xF) as u8,
            mask: r.u8(at + 4, "an output's mask")? & 0xF,
        });
    }
    Ok(outputs)
}

/// The uniform table (8-byte entries) and the symbol table that holds their names.
fn read_uniforms(
    r: &Reader,
    (uniforms_at, uniform_count): (usize, usize),
    (symbols_at, symbols_size): (usize, usize),
) -> Result<Vec<Uniform>, ShbinError> {
    let mut uniforms = Vec::new();
    for i in 0..uniform_count {
        let at = Reader::at(uniforms_at, i, 8, 0);
        let name_at = r.u32(at, "a uniform's name offset")? as usize;
        let first = r.u16(at + 4, "a uniform's first register")?;
        let last = r.u16(at + 6, "a uniform's last register")?;
        // The table stores float uniforms and up 0x10 lower than source numbering.
        let unshift = |reg: u16| if reg >= 0x10 { reg + 0x10 } else { reg } as u8;
        let name_bytes = r.bytes_at(
            symbols_at.saturating_add(name_at),
            symbols_size.saturating_sub(name_at),
            "a uniform's name",
        )?;
        let end = name_bytes
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(name_bytes.len());
        uniforms.push(Uniform {
            name: String::from_utf8_lossy(&name_bytes[..end]).into_owned(),
            first: unshift(first),
            last: unshift(last),
        });
    }
    Ok(uniforms)
}

fn word(out: &mut Vec<u8>, w: u32) {
    out.extend_from_slice(&w.to_le_bytes());
}

fn half(out: &mut Vec<u8>, h: u16) {
    out.extend_from_slice(&h.to_le_bytes());
}

/// Writes `program` as a SHBIN with one DVLE, in picasso's layout.
pub fn write(program: &PicaProgram) -> Vec<u8> {
    let mut out = Vec::new();
    write_dvlb_and_dvlp(&mut out, program);
    let mut uniforms = program.uniforms.clone();
    uniforms.sort_by_key(|u| u.first);
    let symbols: Vec<u8> = uniforms
        .iter()
        .flat_map(|u| u.name.bytes().chain(std::iter::once(0)))
        .collect();
    write_dvle_header(&mut out, program, &uniforms, symbols.len() as u32);
    for constant in &program.constants {
        write_constant(&mut out, constant);
    }
    for output in &program.outputs {
        half(&mut out, output.semantic);
        half(&mut out, output.register as u16);
        word(&mut out, output.mask as u32);
    }
    let mut name_at = 0u32;
    for uniform in &uniforms {
        let shift = |reg: u8| if reg >= 0x20 { reg - 0x10 } else { reg } as u16;
        word(&mut out, name_at);
        half(&mut out, shift(uniform.first));
        half(&mut out, shift(uniform.last));
        name_at += uniform.name.len() as u32 + 1;
    }
    out.extend_from_slice(&symbols);
    while out.len() % 4 != 0 {
        out.push(0);
    }
    out
}

/// The DVLB header for one DVLE and the DVLP: code words, then descriptors.
fn write_dvlb_and_dvlp(out: &mut Vec<u8>, program: &PicaProgram) {
    let code = program.code.len() as u32;
    let descs = program.descriptors.len() as u32;
    let dvlp_size = 40 + code * 4 + descs * 8;
    for w in [
        DVLB,
        1,
        12 + dvlp_size,
        DVLP,
        0,
        40,
        code,
        40 + code * 4,
        descs,
        dvlp_size,
        0,
        0,
        0,
    ] {
        word(out, w);
    }
    for &w in &program.code {
        word(out, w);
    }
    for &d in &program.descriptors {
        word(out, d);
        word(out, 0);
    }
}

/// The DVLE header: type, entry range, register masks and the table offsets.
fn write_dvle_header(out: &mut Vec<u8>, program: &PicaProgram, uniforms: &[Uniform], symbols: u32) {
    let input_mask = uniforms
        .iter()
        .filter(|u| u.first < 0x10)
        .fold(0u16, |m, u| m | 1 << u.first);
    let output_mask = program
        .outputs
        .iter()
        .fold(0u16, |m, o| m | 1 << (o.register & 15));
    let constants_at = 64u32;
    let outputs_at = constants_at + 20 * program.constants.len() as u32;
    let uniforms_at = outputs_at + 8 * program.outputs.len() as u32;
    let symbols_at = uniforms_at + 8 * uniforms.len() as u32;
    word(out, DVLE);
    half(out, 0x1002);
    out.push(program.geometry as u8);
    out.push(0);
    word(out, program.entry);
    word(out, program.entry_end);
    half(out, input_mask);
    half(out, output_mask);
    word(out, 0);
    for (at, count) in [
        (constants_at, program.constants.len() as u32),
        (outputs_at, 0),
        (outputs_at, program.outputs.len() as u32),
        (uniforms_at, uniforms.len() as u32),
        (symbols_at, symbols),
    ] {
        word(out, at);
        word(out, count);
    }
}

/// One 20-byte constant-table entry.
fn write_constant(out: &mut Vec<u8>, constant: &Constant) {
    match *constant {
        Constant::Bool { index, value } => {
            half(out, 0);
            half(out, index as u16);
            word(out, value as u32);
            out.extend_from_slice(&[0; 12]);
        }
        Constant::Int { index, value } => {
            half(out, 1);
            half(out, index as u16);
            out.extend_from_slice(&value);
            out.extend_from_slice(&[0; 12]);
        }
        Constant::Float { index, value } => {
            half(out, 2);
            half(out, index as u16);
            for v in value {
                word(out, f32_to_f24(v));
            }
        }
    }
}
