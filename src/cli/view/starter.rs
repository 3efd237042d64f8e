//! The shader `theia view` opens when no `--shader` is given: THEIA source that reproduces
//! the scene's own look, held in memory until the page saves it to a file.

use theia::emu::isa::disasm::listing;
use theia::emu::isa::Word;
use theia::io::scene::obj::{lighting_program, LIGHTING_SHADER, LIGHTING_SHADER_PATH};

/// `shaders/passthrough.shdr`: the ROM's own pixel shader written out (the texture or
/// material colour as it is).
const PASSTHROUGH_SHADER: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/shaders/passthrough.shdr"
));

/// An in-memory shader and where it came from.
#[derive(Clone)]
pub struct Starter {
    pub source: String,
    /// For the page and for traces, e.g. `shaders/key_fill.shdr (the scene's own shader)`.
    pub origin: String,
}

impl Starter {
    /// Source for the program a loaded scene runs by itself: the lighting shader's own
    /// source for a lit OBJ scene, the pass-through program when the scene has none (the
    /// ROM's pixel shader then runs: `--flat`, the built-in scene, a scene directory
    /// without Instructions.mem), and the disassembly of any other program (a scene
    /// directory's Instructions.mem), which assembles back to the same words.
    pub fn for_program(program: Option<&[Word]>, scene: &str) -> Starter {
        match program {
            None => Starter::passthrough(&format!(
                "{scene} has no pixel shader of its own: the ROM's, written out."
            )),
            Some(program) if program == lighting_program() => Starter {
                source: LIGHTING_SHADER.into(),
                origin: format!("{LIGHTING_SHADER_PATH} (the scene's own shader)"),
            },
            Some(program) => Starter {
                source: format!(
                    "// The program of {scene} (Instructions.mem), disassembled.\n{}",
                    listing(program)
                ),
                origin: format!("{scene} (Instructions.mem, disassembled)"),
            },
        }
    }

    /// The pass-through program, after a comment saying why.
    pub fn passthrough(why: &str) -> Starter {
        Starter {
            source: format!("// {}\n{PASSTHROUGH_SHADER}", why.replace('\n', "\n// ")),
            origin: "shaders/passthrough.shdr (the scene's own pixel shader)".into(),
        }
    }
}
