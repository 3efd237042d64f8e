//! PICA200 words to picasso-syntax text. Flow instructions print their targets as
//! numbers (`call 12, 3`, `ifc cmp.x, 5, 2`, `for i0, 7`), the assembler's extension for
//! listings, and a listing sets constants and outputs with `.setf`/`.seti`/`.setb`/`.out`
//! so that it assembles back (with padding NOPs off) to the same words.

use std::fmt::Write;

use super::decode::{Descriptor, PicaWord};
use super::opcodes::{info, Format, PicaOp, COMPARISONS};
use super::{Constant, PicaProgram};
use crate::stage::shortest;

const COMPONENTS: [char; 4] = ['x', 'y', 'z', 'w'];

/// A source register by its number: v0-v15, r0-r15, c0-c95.
pub fn source_name(reg: u8) -> String {
    match reg {
        0x00..=0x0F => format!("v{reg}"),
        0x10..=0x1F => format!("r{}", reg - 0x10),
        _ => format!("c{}", reg as u32 - 0x20),
    }
}

/// A destination register by its number: o0-o15, r0-r15.
pub fn destination_name(reg: u8) -> String {
    if reg < 0x10 {
        format!("o{reg}")
    } else {
        format!("r{}", (reg - 0x10) & 0xF)
    }
}

fn index_name(idx: u8) -> &'static str {
    ["", "a0.x", "a0.y", "aL"][idx as usize & 3]
}

/// `-c40[a0.x].yzwx`: negation, register, index, swizzle (omitted when .xyzw).
fn source_text(reg: u8, idx: u8, desc: Descriptor, n: usize) -> String {
    let mut text = String::new();
    if desc.negated(n) {
        text.push('-');
    }
    text.push_str(&source_name(reg));
    if idx != 0 && reg >= 0x20 {
        write!(text, "[{}]", index_name(idx)).unwrap();
    }
    let selector = desc.selector(n);
    if selector != [0, 1, 2, 3] {
        text.push('.');
        text.extend(selector.iter().map(|&c| COMPONENTS[c as usize]));
    }
    text
}

/// `o0.xz`: the destination and its mask (omitted when all four).
fn destination_text(reg: u8, desc: Descriptor) -> String {
    let mut text = destination_name(reg);
    if desc.mask() != 0xF {
        text.push('.');
        text.extend((0..4).filter(|&i| desc.writes(i)).map(|i| COMPONENTS[i]));
    }
    text
}

fn condition_text(refx: bool, refy: bool, condop: u8) -> String {
    let x = if refx { "cmp.x" } else { "!cmp.x" };
    let y = if refy { "cmp.y" } else { "!cmp.y" };
    match condop {
        0 => format!("{x} || {y}"),
        1 => format!("{x} && {y}"),
        2 => x.to_string(),
        _ => y.to_string(),
    }
}

/// MOVA's destination, from the descriptor's mask.
fn mova_target(d: Descriptor) -> &'static str {
    match (d.writes(0), d.writes(1)) {
        (true, false) => "a0.x",
        (false, true) => "a0.y",
        _ => "a0.xy",
    }
}

/// SETEMIT's operands: the vertex id and its flags.
fn setemit_text(name: &str, vertex: u8, primitive: bool, winding: bool) -> String {
    let flags: Vec<&str> = [(primitive, "prim"), (winding, "inv")]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, flag)| *flag)
        .collect();
    if flags.is_empty() {
        format!("{name} {vertex}")
    } else {
        format!("{name} {vertex}, {}", flags.join(" "))
    }
}

/// One instruction as text, reading its operand descriptor from `descriptors`.
pub fn instruction_text(word: &PicaWord, descriptors: &[u32]) -> String {
    let descriptor = |index: u8| Descriptor(descriptors.get(index as usize).copied().unwrap_or(0));
    let name = info(word.op()).mnemonic;
    let [i1, i2, i3] = word.source_indices();
    match *word {
        PicaWord::Zero { .. } => name.to_string(),
        PicaWord::Arith {
            op,
            dst,
            src1,
            src2,
            desc,
            ..
        } => {
            let d = descriptor(desc);
            let s1 = source_text(src1, i1, d, 0);
            match info(op).format {
                Format::Mova => format!("{name} {}, {s1}", mova_target(d)),
                Format::OneU => format!("{name} {}, {s1}", destination_text(dst, d)),
                _ => format!(
                    "{name} {}, {s1}, {}",
                    destination_text(dst, d),
                    source_text(src2, i2, d, 1)
                ),
            }
        }
        PicaWord::Cmp {
            src1,
            src2,
            desc,
            cmpx,
            cmpy,
            ..
        } => {
            let d = descriptor(desc);
            format!(
                "{name} {}, {}, {}, {}",
                source_text(src1, i1, d, 0),
                COMPARISONS[cmpx as usize & 7],
                COMPARISONS[cmpy as usize & 7],
                source_text(src2, i2, d, 1)
            )
        }
        PicaWord::Mad {
            dst,
            src1,
            src2,
            src3,
            desc,
            ..
        } => {
            let d = descriptor(desc);
            format!(
                "{name} {}, {}, {}, {}",
                destination_text(dst, d),
                source_text(src1, i1, d, 0),
                source_text(src2, i2, d, 1),
                source_text(src3, i3, d, 2)
            )
        }
        PicaWord::Flow { .. } | PicaWord::Uniform { .. } => flow_text(word, name),
        PicaWord::SetEmit {
            vertex,
            primitive,
            winding,
        } => setemit_text(name, vertex, primitive, winding),
    }
}

/// The flow-control formats 2 and 3 as text: targets as numbers.
fn flow_text(word: &PicaWord, name: &str) -> String {
    match *word {
        PicaWord::Flow {
            op,
            refx,
            refy,
            condop,
            dst,
            num,
        } => {
            let condition = condition_text(refx, refy, condop);
            match op {
                PicaOp::Call => format!("{name} {dst}, {num}"),
                PicaOp::Breakc => format!("{name} {condition}"),
                PicaOp::Jmpc => format!("{name} {condition}, {dst}"),
                _ => format!("{name} {condition}, {dst}, {num}"),
            }
        }
        PicaWord::Uniform { op, id, dst, num } => match op {
            PicaOp::Loop => format!("{name} i{id}, {dst}"),
            PicaOp::Jmpu => {
                let invert = if num & 1 == 1 { "!" } else { "" };
                format!("{name} {invert}b{id}, {dst}")
            }
            _ => format!("{name} b{id}, {dst}, {num}"),
        },
        _ => name.to_string(),
    }
}

/// One word as text; a word with no instruction becomes a comment.
pub fn word_text(word: u32, descriptors: &[u32]) -> String {
    match PicaWord::decode(word) {
        Ok(instruction) => instruction_text(&instruction, descriptors),
        Err(error) => format!("; {error}"),
    }
}

const SEMANTIC_NAMES: [&str; 10] = [
    "pos", "nquat", "color", "tcoord0", "tcoord0w", "tcoord1", "tcoord2", "7", "view", "dummy",
];

/// A whole program as picasso source: settings, then the code with each word's address
/// in a comment. Assemble it with padding NOPs off for the same words.
pub fn listing(program: &PicaProgram) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "; PICA200 program: {} words, {} operand descriptors, entry {}",
        program.code.len(),
        program.descriptors.len(),
        program.entry
    )
    .unwrap();
    if program.geometry {
        out.push_str(".gsh\n");
    }
    for constant in &program.constants {
        match *constant {
            Constant::Bool { index, value } => writeln!(out, ".setb b{index} {value}"),
            Constant::Int { index, value } => writeln!(
                out,
                ".seti i{index}({}, {}, {}, {})",
                value[0], value[1], value[2], value[3]
            ),
            Constant::Float { index, value } => {
                let numbers: Vec<String> = value.iter().map(|&v| shortest(v)).collect();
                writeln!(out, ".setf c{index}({})", numbers.join(", "))
            }
        }
        .unwrap();
    }
    for output in &program.outputs {
        let semantic = SEMANTIC_NAMES
            .get(output.semantic as usize)
            .copied()
            .unwrap_or("dummy");
        let mask: String = (0..4)
            .filter(|&i| output.mask >> i & 1 == 1)
            .map(|i| COMPONENTS[i])
            .collect();
        writeln!(out, ".out - {semantic} o{}.{mask}", output.register).unwrap();
    }
    let entry = (program.entry as usize).min(program.code.len());
    // `main` is written even when empty: the assembler needs it (fuzz target pica_asm found
    // an empty `.proc main` whose listing did not re-assemble).
    let block = |out: &mut String, name: &str, range: std::ops::Range<usize>| {
        if range.is_empty() && name != "main" {
            return;
        }
        writeln!(out, ".proc {name}").unwrap();
        for address in range {
            let word = program.code[address];
            writeln!(
                out,
                "    {:<40} ; {address:4}: {word:08X}",
                word_text(word, &program.descriptors)
            )
            .unwrap();
        }
        out.push_str(".end\n");
    };
    block(&mut out, "_before_main", 0..entry);
    block(&mut out, "main", entry..program.code.len());
    out
}
