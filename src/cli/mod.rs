//! Command-line interface: parses arguments with clap and dispatches to one module per
//! command. Results go to stdout; progress, notes and errors go to stderr.

mod asm;
mod bench;
mod compare;
mod cycles;
mod export;
mod frames;
mod merge;
mod render;
mod run_shader;
mod scene_args;
mod shader;
mod test_hooks;
mod trace;
mod view;
mod watch;

use std::process::ExitCode;
use std::sync::Mutex;

use clap::{Parser, Subcommand};
use theia::emu::isa::asm::AsmErrors;

/// Exit status of a command that failed (bad input, I/O, a core fault).
const EXIT_ERROR: u8 = 2;
/// Exit status after SIGINT, SIGTERM or SIGHUP (128 + SIGINT, as shells report Ctrl-C).
const EXIT_INTERRUPTED: i32 = 130;

#[derive(Parser)]
#[command(
    name = "theia",
    version,
    about = "Bit-exact emulator of THEIA, the 2010 open-source ray-casting GPU",
    after_help = "Exit status: 0 on success, 1 when `compare` finds differences, 2 on errors, 130 when stopped by Ctrl-C, SIGTERM or SIGHUP."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render a scene through the emulated GPU to PNG (or the test bench's plain PPM)
    Render(render::RenderArgs),
    /// Compare two images pixel by pixel; exits 1 when they differ
    Compare(compare::CompareArgs),
    /// Merge the bands of a frame (`render --band`) into the image, or frames into an
    /// animation (`--animate`)
    Merge(merge::MergeArgs),
    /// Assemble a .shdr program into Instructions.mem
    Asm(asm::AsmArgs),
    /// Disassemble an Instructions.mem file (or a built-in ROM) into .shdr source
    Disasm(asm::DisasmArgs),
    /// Time frames on one core and on all cores; prints one table
    Bench(bench::BenchArgs),
    /// Run one pixel and print every instruction it executes (operands, results, branches)
    Trace(trace::TraceArgs),
    /// Run an R500 or PICA200 program once on given inputs and print its outputs
    RunShader(run_shader::RunShaderArgs),
    /// Write a scene (OBJ, built-in or original) as the test bench's .mem files, to run it on
    /// the original RTL
    Export(export::ExportArgs),
    /// Serve a page on 127.0.0.1 that shows the frame, re-renders on every change of the
    /// scene or shader, traces a clicked pixel and compares two core counts or ROMs; without
    /// --shader the page edits a starter that reproduces the scene's look, saved on first Save
    View(view::ViewArgs),
}

/// What a command reports when it ends normally.
pub enum Outcome {
    Success,
    /// `compare` found differences.
    Different,
    /// Stopped by SIGINT, SIGTERM or SIGHUP after cleaning up (`theia view`).
    Interrupted,
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    test_hooks::install();
    if let Err(error) = ctrlc::set_handler(interrupted) {
        eprintln!("warning: cannot handle Ctrl-C: {error}");
    }
    let result = match cli.command {
        Command::Render(args) => render::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Merge(args) => merge::run(args),
        Command::Asm(args) => asm::run_asm(args),
        Command::Disasm(args) => asm::run_disasm(args),
        Command::Bench(args) => bench::run(args),
        Command::Trace(args) => trace::run(args),
        Command::RunShader(args) => run_shader::run(args),
        Command::View(args) => view::run(args),
        Command::Export(args) => export::run(args),
    };
    match result {
        Ok(Outcome::Success) => ExitCode::SUCCESS,
        Ok(Outcome::Different) => ExitCode::from(1),
        Ok(Outcome::Interrupted) => ExitCode::from(EXIT_INTERRUPTED as u8),
        Err(error) => {
            report(&error);
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// What a command does on SIGINT, SIGTERM or SIGHUP instead of exiting (`theia view` stops
/// its server and exits with [`EXIT_INTERRUPTED`] too).
type InterruptAction = Box<dyn Fn() + Send>;
static ON_INTERRUPT: Mutex<Option<InterruptAction>> = Mutex::new(None);

/// Makes `action` what SIGINT, SIGTERM and SIGHUP do from now on.
pub fn on_interrupt(action: impl Fn() + Send + 'static) {
    *ON_INTERRUPT.lock().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(action));
}

/// The signal handler (on its own thread): a command's own action, or else the temporary
/// files of writes in progress are removed (the output stays as it was) and the process
/// exits.
fn interrupted() {
    if let Some(action) = ON_INTERRUPT
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .as_ref()
    {
        action();
        return;
    }
    theia::io::image::remove_unfinished_writes();
    eprintln!("interrupted");
    std::process::exit(EXIT_INTERRUPTED);
}

/// Prints an error on stderr. Assembler diagnostics already read
/// `file:line:col: error: …` and are printed as they are, one a line.
pub fn report(error: &anyhow::Error) {
    match error.downcast_ref::<AsmErrors>() {
        Some(diagnostics) => {
            for warning in &diagnostics.warnings {
                eprintln!("{warning}");
            }
            eprintln!("{diagnostics}");
        }
        None => eprintln!("error: {}", error_message(error)),
    }
}

/// The error and its causes, `: `-separated, leaving out a cause whose text the message
/// already ends with (library errors often print their source themselves).
pub fn error_message(error: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if message.ends_with(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn causes_already_in_the_message_are_not_repeated() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "not found");
        let error = anyhow::Error::new(io).context("scene.obj: not found");
        assert_eq!(error_message(&error), "scene.obj: not found");
        let error = anyhow::anyhow!("inner").context("outer");
        assert_eq!(error_message(&error), "outer: inner");
    }
}
