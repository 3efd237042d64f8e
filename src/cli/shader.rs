//! `--shader FILE`: the pixel shader, in any of the three instruction sets. THEIA assembly
//! goes into instruction memory (entry table + user code); an R500 or PICA200 program
//! becomes the machine's pixel stage ([`theia::stage::PixelStage`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use theia::emu::isa::asm::{assemble, Assembly};
use theia::emu::isa::Word;
use theia::emu::machine::fingerprint::Fingerprint;
use theia::stage::r500;
use theia::stage::{ForeignProgram, NamedVec4, PixelStage};
use theia::tools::trace::SourceMap;

/// The instruction sets a pixel shader can be written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Isa {
    /// THEIA assembly (.shdr)
    Theia,
    /// ATI R500 fragment microcode (.fs.asm source; .fs.bin, .fs.inc words)
    R500,
    /// Nintendo 3DS PICA200 shader (.v.pica, .pica source; .shbin binary)
    Pica200,
}

impl Isa {
    /// The instruction set a file name implies, if any.
    pub fn of_path(path: &Path) -> Option<Isa> {
        let name = path.file_name()?.to_string_lossy().to_ascii_lowercase();
        let ends = |suffixes: &[&str]| suffixes.iter().any(|s| name.ends_with(s));
        if ends(&[".shdr"]) {
            Some(Isa::Theia)
        } else if ends(&[".fs.asm", ".fs.bin", ".fs.inc", ".fs.txt"]) {
            Some(Isa::R500)
        } else if ends(&[".pica", ".shbin"]) {
            Some(Isa::Pica200)
        } else {
            None
        }
    }

    /// `--isa` if given, else the file name's; an error names both ways to say it.
    pub fn choose(given: Option<Isa>, path: &Path) -> anyhow::Result<Isa> {
        if let Some(isa) = given.or_else(|| Isa::of_path(path)) {
            return Ok(isa);
        }
        bail!(
            "{}: cannot tell the instruction set from the name (.shdr for THEIA; .fs.asm, \
             .fs.bin, .fs.inc for R500; .v.pica, .pica, .shbin for PICA200): give --isa",
            path.display()
        )
    }
}

/// The options that choose a pixel shader, shared by `render` and `trace`.
#[derive(Args, Clone, Debug, Default)]
pub struct ShaderArgs {
    /// Pixel shader: THEIA assembly (.shdr) whose ENTRYPOINT_ADRR_* sections replace the
    /// scene's entry points and user code, or an R500 (.fs.asm, .fs.bin, .fs.inc) or PICA200
    /// (.v.pica, .pica, .shbin) program run in place of THEIA's pixel shader
    #[arg(long, value_name = "FILE")]
    pub shader: Option<PathBuf>,
    /// The shader's instruction set [default: from its file name]
    #[arg(long, value_name = "ISA", requires = "shader")]
    pub isa: Option<Isa>,
    /// A constant for an R500 or PICA200 shader, e.g. `--const c0=1,0.5,0,1` (repeatable)
    #[arg(long = "const", value_name = "cN=X,Y,Z,W", requires = "shader")]
    pub consts: Vec<NamedVec4>,
}

/// A loaded `--shader`.
pub enum Shader {
    /// THEIA code for the instruction memory, with each user instruction's source line.
    Theia { imem: Vec<Word>, source: SourceMap },
    /// A foreign program that replaces the pixel stage.
    Stage(Arc<dyn PixelStage>),
}

impl Shader {
    /// The instruction memory image a THEIA shader gives (none for foreign ones).
    pub fn imem(&self) -> Option<Vec<Word>> {
        match self {
            Shader::Theia { imem, .. } => Some(imem.clone()),
            Shader::Stage(_) => None,
        }
    }

    /// The pixel stage a foreign shader gives (none for THEIA ones).
    pub fn stage(&self) -> Option<Arc<dyn PixelStage>> {
        match self {
            Shader::Theia { .. } => None,
            Shader::Stage(stage) => Some(stage.clone()),
        }
    }
}

impl ShaderArgs {
    /// Loads `--shader`, if given. Prints assembler warnings on stderr unless `quiet`.
    pub fn load(&self, quiet: bool) -> anyhow::Result<Option<Shader>> {
        let Some(path) = &self.shader else {
            return Ok(None);
        };
        let isa = Isa::choose(self.isa, path)?;
        if isa == Isa::Theia && !self.consts.is_empty() {
            bail!("--const is for R500 and PICA200 shaders; THEIA code sets its constants in USERCONSTANTS");
        }
        let shader = match isa {
            Isa::Theia => {
                let assembly = load_theia(path, quiet)?;
                Shader::Theia {
                    imem: assembly.imem,
                    source: SourceMap {
                        file: path.display().to_string(),
                        lines: assembly.lines,
                    },
                }
            }
            Isa::R500 | Isa::Pica200 => Shader::Stage(load_foreign(isa, path, &self.consts)?.stage),
        };
        Ok(Some(shader))
    }
}

impl ShaderArgs {
    /// Adds what the shader contributes to a render's fingerprint: the file's bytes, an
    /// R500 program's `.consts` file, the instruction set and `--const` values.
    pub fn add_to_fingerprint(&self, print: &mut Fingerprint) -> anyhow::Result<()> {
        let Some(path) = &self.shader else {
            return Ok(());
        };
        let read =
            |path: &Path| theia::io::input::read(path).with_context(|| path.display().to_string());
        print.add("shader", &read(path)?);
        let consts_path = consts_path(path);
        if consts_path.exists() {
            print.add("shader-consts", &read(&consts_path)?);
        }
        print.add("isa", format!("{:?}", self.isa).as_bytes());
        for named in &self.consts {
            print.add("const", format!("{named:?}").as_bytes());
        }
        Ok(())
    }
}

/// A foreign program, both as what `run-shader` runs and as the machine's pixel stage.
pub struct Foreign {
    pub program: Arc<dyn ForeignProgram>,
    pub stage: Arc<dyn PixelStage>,
}

impl Foreign {
    fn new<P: ForeignProgram + 'static>(program: P) -> Foreign {
        let program = Arc::new(program);
        Foreign {
            program: program.clone(),
            stage: program,
        }
    }
}

/// Loads an R500 or PICA200 program (source or binary) with its `--const` values.
pub fn load_foreign(isa: Isa, path: &Path, consts: &[NamedVec4]) -> anyhow::Result<Foreign> {
    match isa {
        Isa::Theia => bail!(
            "{}: a THEIA shader is code for the instruction memory, not a pixel stage",
            path.display()
        ),
        Isa::R500 => Ok(Foreign::new(load_r500(path, consts)?)),
        Isa::Pica200 => {
            let program = load_pica200(path, theia::stage::pica200::asm::Options::default())?;
            let shader = theia::stage::pica200::PicaShader::new(program, consts)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
            Ok(Foreign::new(shader))
        }
    }
}

/// An R500 program's words; assembler errors stay [`AsmErrors`](theia::emu::isa::asm::AsmErrors), so that they print as
/// every assembler's do.
pub fn load_r500_words(path: &Path) -> anyhow::Result<Vec<r500::Words>> {
    r500::load_words(path).map_err(|error| match error {
        r500::LoadError::Assembly(errors) => anyhow::Error::new(errors),
        r500::LoadError::Words(message) => anyhow::Error::msg(message),
    })
}

/// An R500 program (`.fs.asm` source, `.fs.bin` words, `.fs.inc`/`.fs.txt` hex words)
/// with its constants: `FILE.consts` beside it if present, then `--const` values on top.
pub fn load_r500(path: &Path, consts: &[NamedVec4]) -> anyhow::Result<r500::R500Program> {
    let words = load_r500_words(path)?;
    let mut constants = r500::Constants::default();
    let consts_path = consts_path(path);
    if consts_path.exists() {
        let text = theia::io::input::read_to_string(&consts_path)
            .with_context(|| consts_path.display().to_string())?;
        constants
            .apply_text(&text, &consts_path.display().to_string())
            .map_err(anyhow::Error::msg)?;
    }
    for named in consts {
        constants
            .set(named)
            .map_err(|e| anyhow::anyhow!("--const {}: {e}", named.name))?;
    }
    r500::R500Program::new(&words, constants)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// `FILE.consts` beside an R500 program `FILE`.
fn consts_path(program: &Path) -> PathBuf {
    let mut path = program.as_os_str().to_owned();
    path.push(".consts");
    PathBuf::from(path)
}

/// Reads a PICA200 program: a SHBIN binary (`.shbin`, its first DVLE) or picasso source.
pub fn load_pica200(
    path: &Path,
    options: theia::stage::pica200::asm::Options,
) -> anyhow::Result<theia::stage::pica200::PicaProgram> {
    let bytes = theia::io::input::read(path).with_context(|| path.display().to_string())?;
    let name = path.to_string_lossy().to_ascii_lowercase();
    // A SHBIN by its name or its magic, whatever `--isa pica200` was given.
    if name.ends_with(".shbin") || bytes.starts_with(b"DVLB") {
        return theia::stage::pica200::shbin::read(&bytes, 0)
            .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()));
    }
    let source = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{}: not UTF-8 text (nor a SHBIN)", path.display()))?;
    let assembly = theia::stage::pica200::asm::assemble_with(&source, path, options)?;
    for warning in &assembly.warnings {
        eprintln!("{warning}");
    }
    Ok(assembly.program)
}

/// Assembles THEIA source; `Assembly::imem` is the instruction memory image (entry table +
/// user code) the host loads. Prints the assembler's warnings on stderr unless `quiet`.
pub fn load_theia(path: &Path, quiet: bool) -> anyhow::Result<Assembly> {
    let source =
        theia::io::input::read_to_string(path).with_context(|| path.display().to_string())?;
    let assembly = assemble(&source, path)?;
    if !quiet {
        for warning in &assembly.warnings {
            eprintln!("{warning}");
        }
    }
    Ok(assembly)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_pick_the_instruction_set() {
        for (name, isa) in [
            ("shaders/depth.shdr", Some(Isa::Theia)),
            ("a/texture.fs.asm", Some(Isa::R500)),
            ("clear.FS.BIN", Some(Isa::R500)),
            ("clear.fs.inc", Some(Isa::R500)),
            ("vshader.v.pica", Some(Isa::Pica200)),
            ("light.pica", Some(Isa::Pica200)),
            ("prog.shbin", Some(Isa::Pica200)),
            ("notes.txt", None),
            ("shader.asm", None),
        ] {
            assert_eq!(Isa::of_path(Path::new(name)), isa, "{name}");
        }
        assert_eq!(
            Isa::choose(Some(Isa::R500), Path::new("x.shdr")).unwrap(),
            Isa::R500
        );
        let error = Isa::choose(None, Path::new("x.asm"))
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("x.asm: cannot tell the instruction set"),
            "{error}"
        );
    }
}
