//! `theia asm` and `theia disasm`: the THEIA assembler and disassembler.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::Outcome;
use theia::core::{rom, RomVariant};
use theia::image::write_atomically;
use theia::isa::asm::{assemble, assemble_rom};
use theia::isa::disasm::{listing, rom_listing};
use theia::scene::mem::read_instructions;

#[derive(Args)]
pub struct AsmArgs {
    /// THEIA assembly source (.shdr)
    source: PathBuf,
    /// Write Instructions.mem (the original assembler's format) here instead of stdout
    #[arg(short, long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Assemble microcode for the ROM (addresses from 0, no entry table) and print
    /// `address word` lines, as in rom_words.txt
    #[arg(long)]
    rom: bool,
}

#[derive(Args)]
pub struct DisasmArgs {
    /// An Instructions.mem file (entry table + user code) [default: the ROM given by --rom]
    file: Option<PathBuf>,
    /// List a built-in ROM instead of a file
    #[arg(long, value_name = "ROM", conflicts_with = "file")]
    rom: Option<RomVariant>,
}

pub fn run_asm(args: AsmArgs) -> anyhow::Result<Outcome> {
    let source =
        std::fs::read_to_string(&args.source).with_context(|| args.source.display().to_string())?;
    let (text, warnings) = if args.rom {
        let rom = assemble_rom(&source, &args.source)?;
        let text: String = rom
            .words
            .iter()
            .enumerate()
            .map(|(address, word)| format!("{address} {:016X}\n", word.0))
            .collect();
        (text, rom.warnings)
    } else {
        let assembly = assemble(&source, &args.source)?;
        (assembly.instructions_mem(), assembly.warnings)
    };
    for warning in &warnings {
        eprintln!("{warning}");
    }
    match &args.output {
        Some(path) => write_atomically(path, text.as_bytes())?,
        None => print!("{text}"),
    }
    Ok(Outcome::Success)
}

pub fn run_disasm(args: DisasmArgs) -> anyhow::Result<Outcome> {
    let text = match &args.file {
        Some(path) => listing(&read_instructions(path)?),
        None => rom_listing(rom(args.rom.unwrap_or_default())),
    };
    print!("{text}");
    Ok(Outcome::Success)
}
