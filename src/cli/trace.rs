//! `theia trace [SCENE] --pixel X,Y [--shader FILE] [--stats]`: one pixel, instruction by
//! instruction, on stdout (format: [`theia::tools::trace`]).

use std::io::Write;

use clap::Args;

use super::render::print_notes;
use super::scene_args::SceneArgs;
use super::shader::{Shader, ShaderArgs};
use super::Outcome;
use theia::emu::isa::EntryPoint;
use theia::emu::machine::Machine;
use theia::tools::trace::{trace_pixel, TraceError, TraceOptions};

#[derive(Args)]
pub struct TraceArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    /// The pixel to trace: column and row, from the top-left corner
    #[arg(long, value_name = "X,Y", value_parser = parse_pixel)]
    pub pixel: (u32, u32),
    #[command(flatten)]
    pub shader: ShaderArgs,
    /// After the trace, print instructions and estimated cycles per routine
    #[arg(long)]
    pub stats: bool,
    /// Also trace the boot routines (INITIAL, CPPU, USERCONSTANTS) of the pixel's core
    #[arg(long)]
    pub boot: bool,
    /// Print only these routines' lines, e.g. `--only PIXELSHADER,NPG` (stats count all)
    #[arg(long, value_name = "ROUTINE,…", value_delimiter = ',', value_parser = parse_entry)]
    pub only: Vec<EntryPoint>,
    /// No loader or assembler notes on stderr
    #[arg(short, long)]
    pub quiet: bool,
}

fn parse_pixel(text: &str) -> Result<(u32, u32), String> {
    let error = || format!("expected a pixel X,Y (two whole numbers), found `{text}`");
    let (x, y) = text.split_once(',').ok_or_else(error)?;
    let number = |s: &str| s.trim().parse::<u32>().map_err(|_| error());
    Ok((number(x)?, number(y)?))
}

fn parse_entry(text: &str) -> Result<EntryPoint, String> {
    let name = text.trim().to_ascii_uppercase();
    EntryPoint::from_name(&name)
        .or_else(|| EntryPoint::from_label(&name))
        .ok_or_else(|| {
            let names: Vec<&str> = EntryPoint::ALL.iter().map(|e| e.name()).collect();
            format!("unknown routine `{text}`: one of {}", names.join(", "))
        })
}

pub fn run(args: TraceArgs) -> anyhow::Result<Outcome> {
    let loaded = args.scene.load()?;
    if !args.quiet {
        print_notes(&loaded.notes);
    }
    let shader = args.shader.load(args.quiet)?;
    // Each user instruction's source line, so the trace can point back at it.
    let source = match &shader {
        Some(Shader::Theia { source, .. }) => Some(source.clone()),
        _ => None,
    };
    let options = args.scene.render_options(shader.as_ref())?;
    let machine = Machine::new(&loaded.scene, &options)?;
    let trace_options = TraceOptions {
        boot: args.boot,
        only: (!args.only.is_empty()).then(|| args.only.clone()),
        source,
    };
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let (x, y) = args.pixel;
    let trace = match trace_pixel(&machine, x, y, &trace_options, &mut out) {
        Ok(trace) => trace,
        // `theia trace … | head` is normal use: stop quietly.
        Err(TraceError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => {
            return Ok(Outcome::Success)
        }
        Err(e) => return Err(e.into()),
    };
    if args.stats {
        let written = writeln!(
            out,
            "\n# estimated cycles: ALU latency + 1 per instruction (alu_semantics §7); \
             the control unit and the host's triangle streaming are not counted\n{}",
            trace.stats.table()
        )
        .and_then(|()| out.flush());
        match written {
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(Outcome::Success),
            other => other?,
        }
    }
    match trace.fault {
        Some(fault) => Err(fault.into()),
        None => Ok(Outcome::Success),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixels_parse_as_two_whole_numbers() {
        assert_eq!(parse_pixel("80,17"), Ok((80, 17)));
        assert_eq!(parse_pixel(" 3 , 4 "), Ok((3, 4)));
        assert_eq!(
            parse_pixel("80"),
            Err("expected a pixel X,Y (two whole numbers), found `80`".into())
        );
        assert!(parse_pixel("-1,2").is_err());
        assert!(parse_pixel("1.5,2").is_err());
    }

    #[test]
    fn routines_parse_by_name_or_label_in_any_case() {
        assert_eq!(parse_entry("pixelshader"), Ok(EntryPoint::PixelShader));
        assert_eq!(parse_entry("ENTRYPOINT_ADRR_NPG"), Ok(EntryPoint::Npg));
        assert!(parse_entry("BIUX")
            .unwrap_err()
            .starts_with("unknown routine `BIUX`: one of INITIAL, CPPU"));
    }
}
