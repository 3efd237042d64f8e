//! Words to text in the syntax of the `.fs.asm` sources (`src0.rgb = temp[0] :`,
//! `temp[0].a = RSQ |src0.r| ;`, `OUT TEX_SEM_WAIT`, `float(48)`, `--` comments), extended
//! so that every field prints: fields the syntax has no place for print as tags, `NAME`
//! for a set bit and `NAME=value` otherwise (`RGB_CLAMP`, `ALU_RESULT_OP=2`), OMOD 7 as
//! `OMOD_DISABLE`, an aL-relative address as `temp[aL+n]`, and FC instructions as
//! `FC tags` + `OP target tags ;`. [`super::asm`] reads all of it back to the same words.

use std::fmt::Write;

use super::decode::{type_name, validate, DecodeError};
use super::fields::{self as f, kind, Field, Words};

/// Whether the syntax itself (not a tag) carries `field` in an instruction of type `ty`.
pub fn covered(ty: u32, field: Field) -> bool {
    use f::*;
    let name = field.name;
    if field == TYPE {
        return true;
    }
    match ty {
        kind::ALU | kind::OUT => {
            [RGB_WMASK, ALPHA_WMASK, RGB_OMASK, ALPHA_OMASK].contains(&field)
                || (f::ALU.contains(&field) && field != ALU_WMASK && field != W_OMASK)
        }
        kind::TEX => {
            [RGB_WMASK, ALPHA_WMASK, TEX_ID, TEX_OP].contains(&field)
                || name.starts_with("SRC_")
                || name.starts_with("DST_")
        }
        _ => field == FC_OP || field == JUMP_ADDR,
    }
}

/// The tags of the fields of `ty` in `fields` that the syntax does not cover and are set.
fn tags(words: &Words, ty: u32, fields: &[Field]) -> Vec<String> {
    fields
        .iter()
        .filter(|&&field| !covered(ty, field) && field.get(words) != 0)
        .map(|field| {
            if field.width == 1 {
                field.name.to_string()
            } else {
                format!("{}={}", field.name, field.get(words))
            }
        })
        .collect()
}

/// The program as text, one instruction after another, a blank line between them.
pub fn disassemble(program: &[Words]) -> Result<String, DecodeError> {
    let mut text = String::new();
    for (index, words) in program.iter().enumerate() {
        if index > 0 {
            text.push('\n');
        }
        text.push_str(&instruction(words).map_err(|message| DecodeError { index, message })?);
    }
    Ok(text)
}

/// One instruction as text (lines ending in `\n`).
pub fn instruction(words: &Words) -> Result<String, String> {
    validate(words)?;
    let ty = f::TYPE.get(words);
    Ok(match ty {
        kind::TEX => tex(words),
        kind::FC => fc(words),
        _ => alu(words, ty),
    })
}

fn header(words: &Words, ty: u32, first: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !first.is_empty() {
        parts.push(first.to_string());
    }
    parts.extend(tags(words, ty, f::CMN));
    if ty != kind::FC {
        parts.extend(tags(words, ty, f::fields_of(ty)));
    }
    parts.join(" ")
}

fn rgb_mask(mask: u32) -> &'static str {
    ["none", "r", "g", "rg", "b", "rb", "gb", "rgb"][mask as usize & 7]
}

fn index_text(value: u32, relative: bool) -> String {
    if relative {
        format!("aL+{value}")
    } else {
        value.to_string()
    }
}

fn tex(words: &Words) -> String {
    let get = |field: Field| field.get(words);
    let swizzle = |fields: [Field; 4]| -> String {
        fields
            .iter()
            .map(|&field| ['r', 'g', 'b', 'a'][get(field) as usize])
            .collect()
    };
    let mut mask: String = ['r', 'g', 'b']
        .iter()
        .enumerate()
        .filter(|(bit, _)| get(f::RGB_WMASK) >> bit & 1 == 1)
        .map(|(_, &c)| c)
        .collect();
    if get(f::ALPHA_WMASK) != 0 {
        mask.push('a');
    }
    if mask.is_empty() {
        mask.push_str("none");
    }
    format!(
        "{}\n  temp[{}].{mask} = {} tex[{}].{} temp[{}].{} ;\n",
        header(words, kind::TEX, "TEX"),
        index_text(get(f::DST_ADDR), get(f::DST_ADDR_REL) != 0),
        f::name_of(&f::TEX_OPS, get(f::TEX_OP)),
        get(f::TEX_ID),
        swizzle([f::DST_R_SWIZ, f::DST_G_SWIZ, f::DST_B_SWIZ, f::DST_A_SWIZ]),
        index_text(get(f::SRC_ADDR), get(f::SRC_ADDR_REL) != 0),
        swizzle([f::SRC_S_SWIZ, f::SRC_T_SWIZ, f::SRC_R_SWIZ, f::SRC_Q_SWIZ]),
    )
}

fn fc(words: &Words) -> String {
    let mut body = vec![
        f::name_of(&f::FC_OPS, f::FC_OP.get(words)).to_string(),
        f::JUMP_ADDR.get(words).to_string(),
    ];
    body.extend(tags(words, kind::FC, f::FC));
    format!(
        "{}\n  {} ;\n",
        header(words, kind::FC, "FC"),
        body.join(" ")
    )
}

/// `src0.rgb = temp[0]`-style source assignments, each with its own line.
fn lets(words: &Words) -> Vec<String> {
    let mut lines = Vec::new();
    for (alpha, unit) in [(false, "rgb"), (true, "a")] {
        for slot in 0..3 {
            let [addr, constant, rel] = f::source_fields(alpha, slot);
            let (value, constant, rel) = (addr.get(words), constant.get(words), rel.get(words));
            if (value, constant, rel) == (0x80, 0, 0) {
                continue; // Unused: inline 0, the assembler's default.
            }
            let text = if constant != 0 {
                format!("const[{}]", index_text(value, rel != 0))
            } else if value & 0x80 != 0 {
                let code = value & 0x7F;
                format!(
                    "float({}) -- {}",
                    index_text(code, rel != 0),
                    crate::stage::shortest(f::inline_constant(code))
                )
            } else {
                format!("temp[{}]", index_text(value, rel != 0))
            };
            lines.push(format!("src{slot}.{unit} = {text}"));
        }
    }
    for (field, unit) in [(f::RGB_SRCP_OP, "rgb"), (f::ALPHA_SRCP_OP, "a")] {
        let op = field.get(words);
        if op != 0 {
            lines.push(format!("srcp.{unit} = {}", f::SRCP_OPS[op as usize]));
        }
    }
    lines
}

fn omod_text(omod: u32) -> &'static str {
    [
        "",
        "2.0 * ",
        "4.0 * ",
        "8.0 * ",
        "0.5 * ",
        "0.25 * ",
        "0.125 * ",
        "OMOD_DISABLE ",
    ][omod as usize]
}

fn argument(select: u32, swizzle: &str, modifier: u32) -> String {
    let source = format!(
        "{}.{swizzle}",
        ["src0", "src1", "src2", "srcp"][select as usize]
    );
    match modifier {
        0 => source,
        1 => format!("-{source}"),
        2 => format!("|{source}|"),
        _ => format!("-|{source}|"),
    }
}

/// The alpha op, or `None` when every field it owns is zero (the assembler's default).
fn alpha_op(words: &Words) -> Option<String> {
    let get = |field: Field| field.get(words);
    let args: Vec<(u32, u32, u32)> = (0..3)
        .map(|arg| {
            let (select, swizzle, modifier) = f::alpha_arg_fields(arg);
            (get(select), get(swizzle), get(modifier))
        })
        .collect();
    let owned = [
        f::ALPHA_OP,
        f::ALPHA_ADDRD,
        f::ALPHA_ADDRD_REL,
        f::ALPHA_OMOD,
        f::ALPHA_TARGET,
        f::ALPHA_WMASK,
        f::ALPHA_OMASK,
    ];
    if owned.iter().all(|&field| get(field) == 0) && args.iter().all(|&a| a == (0, 0, 0)) {
        return None;
    }
    let op = get(f::ALPHA_OP);
    let last_set = args
        .iter()
        .rposition(|&a| a != (0, 0, 0))
        .map_or(0, |i| i + 1);
    let arity = f::ALPHA_OPS[op as usize].map_or(3, |row| row.op.arity());
    let count = arity.max(last_set);
    let mut text = dests(
        words,
        (f::ALPHA_OMASK, f::ALPHA_TARGET),
        (f::ALPHA_WMASK, f::ALPHA_ADDRD, f::ALPHA_ADDRD_REL),
        |mask| if mask != 0 { "a" } else { "none" },
    );
    text.push_str(omod_text(get(f::ALPHA_OMOD)));
    text.push_str(f::name_of(&f::ALPHA_OPS, op));
    for &(select, swizzle, modifier) in &args[..count] {
        let swizzle = f::ALU_SWIZZLES[swizzle as usize].to_string();
        text.push(' ');
        text.push_str(&argument(select, &swizzle, modifier));
    }
    Some(text)
}

/// The RGB op, or `None` when every field it owns is zero.
fn rgb_op(words: &Words) -> Option<String> {
    let get = |field: Field| field.get(words);
    let args: Vec<(u32, [u32; 3], u32)> = (0..3)
        .map(|arg| {
            let (select, swizzles, modifier) = f::rgb_arg_fields(arg);
            (get(select), swizzles.map(get), get(modifier))
        })
        .collect();
    let owned = [
        f::RGB_OP,
        f::RGB_ADDRD,
        f::RGB_ADDRD_REL,
        f::RGB_OMOD,
        f::RGB_TARGET,
        f::RGB_WMASK,
        f::RGB_OMASK,
    ];
    let zero = (0, [0; 3], 0);
    if owned.iter().all(|&field| get(field) == 0) && args.iter().all(|&a| a == zero) {
        return None;
    }
    let op = get(f::RGB_OP);
    let last_set = args.iter().rposition(|&a| a != zero).map_or(0, |i| i + 1);
    let arity = f::RGB_OPS[op as usize].map_or(3, |row| row.op.arity());
    let count = arity.max(last_set);
    let mut text = dests(
        words,
        (f::RGB_OMASK, f::RGB_TARGET),
        (f::RGB_WMASK, f::RGB_ADDRD, f::RGB_ADDRD_REL),
        rgb_mask,
    );
    text.push_str(omod_text(get(f::RGB_OMOD)));
    text.push_str(f::name_of(&f::RGB_OPS, op));
    for &(select, swizzles, modifier) in &args[..count] {
        let swizzle: String = swizzles
            .iter()
            .map(|&s| f::ALU_SWIZZLES[s as usize])
            .collect();
        text.push(' ');
        text.push_str(&argument(select, &swizzle, modifier));
    }
    Some(text)
}

/// `out[t].mask = temp[n].mask = ` as far as the fields say there is such a destination.
fn dests(
    words: &Words,
    (omask, target): (Field, Field),
    (wmask, addrd, rel): (Field, Field, Field),
    mask_text: impl Fn(u32) -> &'static str,
) -> String {
    let mut text = String::new();
    if omask.get(words) != 0 || target.get(words) != 0 {
        let _ = write!(
            text,
            "out[{}].{} = ",
            target.get(words),
            mask_text(omask.get(words))
        );
    }
    if wmask.get(words) != 0 || addrd.get(words) != 0 || rel.get(words) != 0 {
        let _ = write!(
            text,
            "temp[{}].{} = ",
            index_text(addrd.get(words), rel.get(words) != 0),
            mask_text(wmask.get(words))
        );
    }
    text
}

fn alu(words: &Words, ty: u32) -> String {
    let mut text = String::new();
    let head = header(words, ty, if ty == kind::OUT { "OUT" } else { "" });
    if !head.is_empty() {
        text.push_str(&head);
        text.push('\n');
    }
    let lets = lets(words);
    if lets.is_empty() {
        text.push_str(":\n");
    }
    for (i, line) in lets.iter().enumerate() {
        let separator = if i + 1 == lets.len() { ":" } else { "," };
        // A comment ends the line, so the separator goes before it.
        match line.split_once(" -- ") {
            Some((code, comment)) => {
                let _ = writeln!(text, "{code} {separator} -- {comment}");
            }
            None => {
                let _ = writeln!(text, "{line} {separator}");
            }
        }
    }
    let ops: Vec<String> = [alpha_op(words), rgb_op(words)]
        .into_iter()
        .flatten()
        .collect();
    if ops.is_empty() {
        text.push_str("  ;\n");
    }
    for (i, op) in ops.iter().enumerate() {
        let separator = if i + 1 == ops.len() { ";" } else { "," };
        let _ = writeln!(text, "  {op} {separator}");
    }
    text
}

/// `TYPE` of an instruction as text, for messages.
pub fn kind_name(words: &Words) -> &'static str {
    type_name(f::TYPE.get(words))
}
