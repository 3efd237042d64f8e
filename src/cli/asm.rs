//! `theia asm` and `theia disasm`: the THEIA assembler and disassembler.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use super::shader::{load_pica200, load_r500_words, Isa};
use super::Outcome;
use theia::emu::core::{rom, RomVariant};
use theia::emu::isa::asm::{assemble, assemble_rom};
use theia::emu::isa::disasm::{listing, rom_listing};
use theia::io::image::write_atomically;
use theia::io::scene::mem::read_instructions;
use theia::stage::pica200;
use theia::stage::r500;

#[derive(Args)]
pub struct AsmArgs {
    /// Assembly source: THEIA (.shdr), R500 (.fs.asm) or PICA200 (.v.pica, .pica)
    source: PathBuf,
    /// The source's instruction set [default: from its file name, else THEIA]; R500 output
    /// is `.fs.inc` hex words, or `.fs.bin` bytes when --output ends in `.bin`; PICA200
    /// output is a listing of the words, or a SHBIN with --output
    #[arg(long, value_name = "ISA")]
    isa: Option<Isa>,
    /// PICA200: accept two different input registers in one instruction (a hardware
    /// erratum picasso refuses)
    #[arg(long)]
    allow_input_pairs: bool,
    /// PICA200: do not insert picasso's padding NOPs (warn instead)
    #[arg(long)]
    no_nop: bool,
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
    /// or an R500 program (.fs.bin, .fs.inc, .fs.txt), or a PICA200 SHBIN (.shbin)
    file: Option<PathBuf>,
    /// The file's instruction set [default: from its file name, else THEIA]
    #[arg(long, value_name = "ISA", requires = "file")]
    isa: Option<Isa>,
    /// List a built-in ROM instead of a file
    #[arg(long, value_name = "ROM", conflicts_with = "file")]
    rom: Option<RomVariant>,
}

/// `--isa` if given, else the file name's, else THEIA.
fn isa_of(given: Option<Isa>, path: &std::path::Path) -> Isa {
    given.or_else(|| Isa::of_path(path)).unwrap_or(Isa::Theia)
}

pub fn run_asm(args: AsmArgs) -> anyhow::Result<Outcome> {
    let isa = isa_of(args.isa, &args.source);
    if isa == Isa::Pica200 {
        return run_pica200_asm(&args);
    }
    if isa == Isa::R500 {
        let program = load_r500_words(&args.source)?;
        match &args.output {
            Some(path) if path.to_string_lossy().ends_with(".bin") => {
                write_atomically(path, &r500::words_to_bin(&program))?
            }
            Some(path) => write_atomically(path, r500::words_to_hex(&program).as_bytes())?,
            None => print!("{}", r500::words_to_hex(&program)),
        }
        return Ok(Outcome::Success);
    }
    let source = theia::io::input::read_to_string(&args.source)
        .with_context(|| args.source.display().to_string())?;
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

/// PICA200 source to a SHBIN (`-o`), or to a listing of the words on stdout.
fn run_pica200_asm(args: &AsmArgs) -> anyhow::Result<Outcome> {
    let options = pica200::asm::Options {
        allow_input_pairs: args.allow_input_pairs,
        auto_nop: !args.no_nop,
    };
    let program = load_pica200(&args.source, options)?;
    match &args.output {
        Some(path) => write_atomically(path, &pica200::shbin::write(&program))?,
        None => print!("{}", pica200_words(&program)),
    }
    Ok(Outcome::Success)
}

/// `ADDRESS: WORD  ; text` per instruction, then the operand descriptors.
fn pica200_words(program: &pica200::PicaProgram) -> String {
    let mut text = String::new();
    for (address, &word) in program.code.iter().enumerate() {
        let line = pica200::disasm::word_text(word, &program.descriptors);
        text.push_str(&format!("{address:4}: {word:08X}  ; {line}\n"));
    }
    for (index, descriptor) in program.descriptors.iter().enumerate() {
        text.push_str(&format!("desc {index:3}: {descriptor:08X}\n"));
    }
    text
}

pub fn run_disasm(args: DisasmArgs) -> anyhow::Result<Outcome> {
    if let Some(path) = &args.file {
        let isa = isa_of(args.isa, path);
        if isa == Isa::R500 {
            let program = load_r500_words(path)?;
            let text = r500::disassemble(&program)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            print!("{text}");
            return Ok(Outcome::Success);
        }
        if isa == Isa::Pica200 {
            print!(
                "{}",
                pica200::disasm::listing(&load_pica200(path, Default::default())?)
            );
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
