//! The `theia` command: a thin front end over the library (arguments, progress, messages).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
