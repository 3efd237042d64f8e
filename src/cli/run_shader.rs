//! `theia run-shader FILE [--in NAME=x,y,z,w]… [--const NAME=x,y,z,w]…`: one invocation of
//! an R500 or PICA200 program outside any scene. Prints every output register written, one
//! a line, `NAME = x y z w`, each number the shortest text that reads back to the same f32.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

use super::shader::{load_foreign, Isa};
use super::Outcome;
use theia::stage::{shortest, NamedVec4};

/// Instructions one invocation may run before the watchdog stops it.
const DEFAULT_BUDGET: u64 = 1_000_000;

#[derive(Args)]
pub struct RunShaderArgs {
    /// The program: R500 (.fs.asm, .fs.bin, .fs.inc) or PICA200 (.v.pica, .pica, .shbin)
    file: PathBuf,
    /// The program's instruction set [default: from its file name]
    #[arg(long, value_name = "ISA")]
    isa: Option<Isa>,
    /// An input register, e.g. `--in temp0=0.5,0.5,0,1` (R500) or `--in v0=1,0,0,1`
    /// (PICA200); inputs not given are zero (repeatable)
    #[arg(long = "in", value_name = "NAME=X,Y,Z,W")]
    inputs: Vec<NamedVec4>,
    /// A constant, e.g. `--const c0=1,0.5,0,1` (repeatable)
    #[arg(long = "const", value_name = "cN=X,Y,Z,W")]
    consts: Vec<NamedVec4>,
    /// Instructions the invocation may run before the watchdog stops it
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BUDGET)]
    max_steps: u64,
}

pub fn run(args: RunShaderArgs) -> anyhow::Result<Outcome> {
    let isa = Isa::choose(args.isa, &args.file)?;
    if isa == Isa::Theia {
        bail!(
            "{}: run-shader runs R500 and PICA200 programs; a THEIA shader runs in a scene \
             (`theia render --shader`, `theia trace`)",
            args.file.display()
        );
    }
    let program = load_foreign(isa, &args.file, &args.consts)?.program;
    let outputs = program.run_once(&args.inputs, args.max_steps)?;
    print!("{}", format_outputs(&outputs));
    Ok(Outcome::Success)
}

/// `NAME = x y z w` lines.
pub fn format_outputs(outputs: &[(String, [f32; 4])]) -> String {
    outputs
        .iter()
        .map(|(name, value)| {
            let numbers: Vec<String> = value.iter().map(|&v| shortest(v)).collect();
            format!("{name} = {}\n", numbers.join(" "))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_print_one_a_line_in_shortest_form() {
        let outputs = [
            ("out0".to_string(), [0.5, 1.0, -0.0, f32::NAN]),
            (
                "o1".to_string(),
                [f32::INFINITY, f32::NEG_INFINITY, 0.1, 3.0],
            ),
        ];
        assert_eq!(
            format_outputs(&outputs),
            "out0 = 0.5 1 -0 nan\no1 = inf -inf 0.1 3\n"
        );
    }
}
