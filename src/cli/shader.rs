//! Loading a user shader (`--shader FILE.shdr`) into instruction memory.

use std::path::Path;

use anyhow::Context;
use theia::isa::asm::{assemble, Assembly};

/// Assembles `path`; `Assembly::imem` is the instruction memory image (entry table + user
/// code) the host loads. Prints the assembler's warnings on stderr unless `quiet`.
pub fn load(path: &Path, quiet: bool) -> anyhow::Result<Assembly> {
    let source = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
    let assembly = assemble(&source, path)?;
    if !quiet {
        for warning in &assembly.warnings {
            eprintln!("{warning}");
        }
    }
    Ok(assembly)
}
