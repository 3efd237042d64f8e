//! `theia asm` and `theia disasm`: the THEIA assembler and disassembler.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::shader::Isa;
use super::Outcome;
use theia::core::{rom, RomVariant};
use theia::image::write_atomically;
use theia::isa::asm::{assemble, assemble_rom};
use theia::isa::disasm::{listing, rom_listing};
use theia::r500;
use theia::scene::mem::read_instructions;

#[derive(Args)]
pub struct AsmArgs {
    /// Assembly source: THEIA (.shdr) or R500 (.fs.asm)
    source: PathBuf,
    /// The source's instruction set [default: from its file name, else THEIA]; R500 output
    /// is `.fs.inc` hex words, or `.fs.bin` bytes when --output ends in `.bin`
    #[arg(long, value_name = "ISA")]
    isa: Option<Isa>,
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
    /// An Instructions.mem file (entry table + user code) [default: the ROM given by --rom],
    /// or an R500 program (.fs.bin, .fs.inc, .fs.txt)
    file: Option<PathBuf>,
    /// The file's instruction set [default: from its file name, else THEIA]
    #[arg(long, value_name = "ISA", requires = "file")]
    isa: Option<Isa>,
    /// List a built-in ROM instead of a file
    #[arg(long, value_name = "ROM", conflicts_with = "file")]
    rom: Option<RomVariant>,
}

/// `--isa` if given, else the file name's, else THEIA.
fn isa_of(given: Option<Isa>, path: &std::path::Path) -> anyhow::Result<Isa> {
    let isa = given.or_else(|| Isa::of_path(path)).unwrap_or(Isa::Theia);
    if isa == Isa::Pica200 {
        anyhow::bail!(
            "{}: the PICA200 assembler is not part of this build",
            path.display()
        );
    }
    Ok(isa)
}

pub fn run_asm(args: AsmArgs) -> anyhow::Result<Outcome> {
    if isa_of(args.isa, &args.source)? == Isa::R500 {
        let program = r500::load_words(&args.source).map_err(anyhow::Error::msg)?;
        match &args.output {
            Some(path) if path.to_string_lossy().ends_with(".bin") => {
                write_atomically(path, &r500::words_to_bin(&program))?
            }
            Some(path) => write_atomically(path, r500::words_to_hex(&program).as_bytes())?,
            None => print!("{}", r500::words_to_hex(&program)),
        }
        return Ok(Outcome::Success);
    }
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
    if let Some(path) = &args.file {
        if isa_of(args.isa, path)? == Isa::R500 {
            let program = r500::load_words(path).map_err(anyhow::Error::msg)?;
            let text = r500::disassemble(&program)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            print!("{text}");
            return Ok(Outcome::Success);
        }
    }
    let text = match &args.file {
        Some(path) => listing(&read_instructions(path)?),
        None => rom_listing(rom(args.rom.unwrap_or_default())),
    };
    print!("{text}");
    Ok(Outcome::Success)
}
