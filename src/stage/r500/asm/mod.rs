//! Text to words: the syntax of the `.fs.asm` sources plus the tags of [`super::disasm`].
//! Every field is set from the same table ([`super::fields`]); fields the text does not
//! mention stay 0, and an unused source address is inline 0 (`0x80`), as the original
//! assembler leaves them. `#include "file"` inserts another file's instructions.
//! Errors name `file:line:col` and what was expected.

use std::path::{Path, PathBuf};

mod alu;
mod parser;

use super::fields::Words;
use crate::emu::isa::asm::{AsmErrors, Diagnostic, Severity};
use parser::{lex, Parser};

/// An assembled program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct R500Assembly {
    /// Six words per instruction.
    pub program: Vec<Words>,
}

type Result<T> = std::result::Result<T, Diagnostic>;

fn error(file: &Path, line: usize, column: usize, message: String) -> Diagnostic {
    Diagnostic {
        file: file.to_path_buf(),
        line,
        column,
        severity: Severity::Error,
        message,
    }
}

/// The first error as the [`AsmErrors`] every assembler returns (R500 has no warnings).
fn errors(error: Diagnostic) -> AsmErrors {
    AsmErrors {
        errors: vec![error],
        warnings: Vec::new(),
    }
}

/// Where `#include` finds its files.
enum Includes<'a> {
    /// Relative to this directory, on disk.
    Dir(&'a Path),
    /// Not allowed (text with no file behind it).
    None,
}

/// Assembles `source`; `file` names it in messages. `#include` is refused: the text may
/// have no file behind it.
pub fn assemble(source: &str, file: &Path) -> std::result::Result<R500Assembly, AsmErrors> {
    R500Assembler::new()
        .run(source, file, &Includes::None, 0)
        .map_err(errors)
}

/// Assembles the file at `path`; `#include "x"` reads `x` beside it. A file that cannot
/// be read is an error at line 0.
pub fn assemble_file(path: &Path) -> std::result::Result<R500Assembly, AsmErrors> {
    let source = crate::io::input::read_to_string(path)
        .map_err(|e| errors(error(path, 0, 0, e.to_string())))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    R500Assembler::new()
        .run(&source, path, &Includes::Dir(dir), 0)
        .map_err(errors)
}

struct R500Assembler {
    files: Vec<PathBuf>,
    program: Vec<Words>,
    /// Source bytes read through `#include` so far.
    included_bytes: usize,
}

/// How deep `#include` may nest before it is taken for a cycle.
const MAX_INCLUDE_DEPTH: usize = 16;
/// Files one program may include in all (depth alone let 16 small files that each include
/// the next 16 times expand 16^16-fold).
const MAX_INCLUDES: usize = 256;
/// Bytes of included source one program may read in all.
const MAX_INCLUDED_BYTES: usize = 4 << 20;

impl R500Assembler {
    fn new() -> R500Assembler {
        R500Assembler {
            files: Vec::new(),
            program: Vec::new(),
            included_bytes: 0,
        }
    }

    fn run(
        mut self,
        source: &str,
        file: &Path,
        includes: &Includes,
        depth: usize,
    ) -> Result<R500Assembly> {
        self.file(source, file, includes, depth)?;
        Ok(R500Assembly {
            program: self.program,
        })
    }

    /// Assembles one file: its lines up to each `#include`, the included file, and so on.
    fn file(&mut self, source: &str, name: &Path, includes: &Includes, depth: usize) -> Result<()> {
        let file = self.files.len();
        self.files.push(name.to_path_buf());
        let error = |line: usize, col: usize, message: String| error(name, line, col, message);
        // Text between includes is lexed as one chunk, keeping its line numbers.
        let mut chunk = String::new();
        let mut chunk_start = 1;
        for (number, line) in source.lines().enumerate().map(|(i, l)| (i + 1, l)) {
            let trimmed = line.trim_start();
            if let Some(rest) = trimmed.strip_prefix("#include") {
                self.chunk(&chunk, file, chunk_start)?;
                chunk.clear();
                chunk_start = number + 1;
                let col = line.len() - trimmed.len() + 1;
                let target = rest.trim();
                let target = target
                    .strip_prefix('"')
                    .and_then(|t| t.strip_suffix('"'))
                    .ok_or_else(|| error(number, col, "expected #include \"FILE\"".to_string()))?;
                let Includes::Dir(dir) = includes else {
                    return Err(error(
                        number,
                        col,
                        "#include needs a source file (its directory finds the included file)"
                            .to_string(),
                    ));
                };
                if depth >= MAX_INCLUDE_DEPTH {
                    return Err(error(
                        number,
                        col,
                        "#include nested too deeply (a cycle?)".into(),
                    ));
                }
                if self.files.len() >= MAX_INCLUDES {
                    return Err(error(
                        number,
                        col,
                        format!("more than {MAX_INCLUDES} #includes in all: a program is not that large"),
                    ));
                }
                let path: PathBuf = dir.join(target);
                let text = crate::io::input::read_to_string(&path).map_err(|e| {
                    error(number, col, format!("cannot read {}: {e}", path.display()))
                })?;
                self.included_bytes += text.len();
                if self.included_bytes > MAX_INCLUDED_BYTES {
                    return Err(error(
                        number,
                        col,
                        format!("the #included files pass {MAX_INCLUDED_BYTES} bytes in all: a program is not that large"),
                    ));
                }
                let inner_dir = path.parent().unwrap_or(Path::new(".")).to_path_buf();
                self.file(&text, &path, &Includes::Dir(&inner_dir), depth + 1)?;
            } else {
                chunk.push_str(line);
                chunk.push('\n');
            }
        }
        self.chunk(&chunk, file, chunk_start)
    }

    fn chunk(&mut self, text: &str, file: usize, first_line: usize) -> Result<()> {
        let tokens = lex(text, file, first_line)
            .map_err(|(line, col, message)| error(&self.files[file], line, col, message))?;
        let mut parser = Parser::new(tokens, &self.files);
        while !parser.at_end() {
            let words = parser.instruction()?;
            self.program.push(words);
        }
        Ok(())
    }
}
