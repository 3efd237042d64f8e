//! ATI R500 (Radeon X1000) fragment programs, "US" microcode (spec foreign_isas Part A):
//! the field table ([`fields`]) drives the decoder ([`decode`](mod@decode)), the disassembler
//! ([`disasm`]) and the assembler ([`asm`]); [`interp`] runs a program one pixel at a time
//! in IEEE f32 and is the machine's pixel stage when `--shader` names an R500 program.
//!
//! Program files: `.fs.asm` source, `.fs.bin` little-endian words, `.fs.inc` / `.fs.txt`
//! hexadecimal words (`0x00078005,`), six words per instruction.

pub mod asm;
pub mod decode;
pub mod disasm;
pub mod fields;
pub mod interp;

pub use asm::{assemble, assemble_file, R500Assembly};
pub use decode::{decode, decode_program, DecodeError, R500Decoded};
pub use disasm::disassemble;
pub use fields::Words;
pub use interp::{Constants, R500Program};

/// Little-endian words (`.fs.bin`) as instructions; the length must be a multiple of 24.
pub fn words_from_bin(bytes: &[u8], name: &str) -> Result<Vec<Words>, String> {
    if !bytes.len().is_multiple_of(24) {
        return Err(format!(
            "{name}: {} bytes is not a whole number of instructions (24 bytes each)",
            bytes.len()
        ));
    }
    Ok(bytes
        .chunks_exact(24)
        .map(|chunk| {
            std::array::from_fn(|i| {
                u32::from_le_bytes(chunk[4 * i..4 * i + 4].try_into().expect("4 bytes"))
            })
        })
        .collect())
}

/// Hexadecimal words (`.fs.inc`, `.fs.txt`: `0x00078005,` separated by commas, spaces or
/// lines; `--` and `//` comments) as instructions.
pub fn words_from_hex(text: &str, name: &str) -> Result<Vec<Words>, String> {
    let mut words = Vec::new();
    let mut last = (1, 1);
    for (number, line) in text.lines().enumerate() {
        let code = line
            .split("--")
            .next()
            .unwrap_or("")
            .split("//")
            .next()
            .unwrap_or("");
        let mut col = 1;
        for piece in code.split(',') {
            let trimmed = piece.trim();
            let at = col + piece.len() - piece.trim_start().len();
            col += piece.len() + 1;
            if trimmed.is_empty() {
                continue;
            }
            let value = trimmed
                .strip_prefix("0x")
                .or_else(|| trimmed.strip_prefix("0X"))
                .and_then(|hex| u32::from_str_radix(hex, 16).ok())
                .ok_or_else(|| {
                    format!(
                        "{name}:{}:{at}: expected a word like 0x00078005, found `{trimmed}`",
                        number + 1
                    )
                })?;
            words.push(value);
            last = (number + 1, at);
        }
    }
    if words.len() % 6 != 0 {
        return Err(format!(
            "{name}:{}:{}: {} words is not a whole number of instructions (6 words each)",
            last.0,
            last.1,
            words.len()
        ));
    }
    Ok(words
        .chunks_exact(6)
        .map(|chunk| std::array::from_fn(|i| chunk[i]))
        .collect())
}

/// The words as `.fs.inc` text: six `0x%08x,` lines per instruction, a blank line between.
pub fn words_to_hex(program: &[Words]) -> String {
    program
        .iter()
        .map(|words| {
            words
                .iter()
                .map(|w| format!("0x{w:08x},\n"))
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The words as `.fs.bin` bytes.
pub fn words_to_bin(program: &[Words]) -> Vec<u8> {
    program
        .iter()
        .flatten()
        .flat_map(|w| w.to_le_bytes())
        .collect()
}

/// Why a program file gave no words.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// Source that does not assemble (or cannot be read), in the assemblers' shape.
    #[error(transparent)]
    Assembly(#[from] crate::emu::isa::asm::AsmErrors),
    /// A word file that cannot be read or holds no whole instructions.
    #[error("{0}")]
    Words(String),
}

/// Reads a program file by its extension: `.fs.bin` binary, `.fs.inc` / `.fs.txt` hex
/// words, anything else assembly source.
pub fn load_words(path: &std::path::Path) -> Result<Vec<Words>, LoadError> {
    let name = path.display().to_string();
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".bin") {
        let bytes =
            crate::io::input::read(path).map_err(|e| LoadError::Words(format!("{name}: {e}")))?;
        words_from_bin(&bytes, &name).map_err(LoadError::Words)
    } else if lower.ends_with(".inc") || lower.ends_with(".txt") {
        let text = crate::io::input::read_to_string(path)
            .map_err(|e| LoadError::Words(format!("{name}: {e}")))?;
        words_from_hex(&text, &name).map_err(LoadError::Words)
    } else {
        Ok(assemble_file(path)?.program)
    }
}
