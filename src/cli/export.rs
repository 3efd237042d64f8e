//! `theia export [SCENE] -o DIR`: the scene as the test bench's `.mem` files, so that any
//! scene the emulator renders (an OBJ with its camera options, the built-in scene, a
//! `--shader`) can run on the original RTL or an FPGA build of it.

use std::path::PathBuf;

use anyhow::bail;
use clap::Args;

use super::render::print_notes;
use super::scene_args::SceneArgs;
use super::shader::ShaderArgs;
use super::Outcome;
use theia::emu::core::RomVariant;
use theia::emu::machine::Machine;
use theia::io::image::write_atomically;
use theia::io::scene::mem::MemFiles;
use theia::io::scene::TRIANGLE_VECTORS;

/// The published RTL's core count (aDefinitions.v `MAX_CORES`).
const RTL_CORES: usize = 4;
/// Words the published test bench's buffers hold (TestBench_THEIA.v).
const RTL_TEXTURE_WORDS: usize = 256 * 256 * 3;
const RTL_VERTEX_WORDS: usize = 7001;

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub scene: SceneArgs,
    /// Directory to write Params.mem, Vertex.mem, Textures.mem, Creg.mem and
    /// Instructions.mem into (created if missing; existing files are replaced)
    #[arg(short, long, value_name = "DIR")]
    pub output: PathBuf,
    #[command(flatten)]
    pub shader: ShaderArgs,
}

pub fn run(mut args: ExportArgs) -> anyhow::Result<Outcome> {
    if let Some(rom @ RomVariant::Fixed) = args.scene.rom {
        bail!(
            "--rom {}: the hardware's ROM is the faithful one; only scenes for it can be exported",
            rom.name()
        );
    }
    // The scene is for the hardware's ROM, whatever the kind of scene.
    args.scene.rom = Some(RomVariant::Faithful);
    args.scene.whole_triangles = true;
    let loaded = args.scene.load()?;
    print_notes(&loaded.notes);
    let shader = args.shader.load(false)?;
    if shader.as_ref().and_then(|s| s.stage()).is_some() {
        bail!("R500 and PICA200 pixel stages have no place in THEIA's instruction memory: export takes THEIA shaders only");
    }
    let options = args.scene.render_options(shader.as_ref())?;
    // The machine settles the partitions and the instruction memory as a render would.
    let machine = Machine::new(
        &loaded.scene,
        &theia::emu::machine::AccelMode::Off.apply(options),
    )?;
    let files = MemFiles::new(
        &loaded.scene,
        machine.partitions(),
        machine.program().imem(),
    );
    std::fs::create_dir_all(&args.output).map_err(|e| {
        anyhow::anyhow!(
            "{}: cannot create the directory: {e}",
            args.output.display()
        )
    })?;
    for (name, text) in files.files() {
        write_atomically(&args.output.join(name), text.as_bytes())?;
    }
    for warning in rtl_warnings(&loaded.scene, machine.partitions()) {
        eprintln!("warning: {warning}");
    }
    println!("{}", args.output.display());
    Ok(Outcome::Success)
}

/// What the published RTL and its test bench cannot run as exported.
fn rtl_warnings(
    scene: &theia::io::scene::Scene,
    partitions: &[theia::io::scene::Partition],
) -> Vec<String> {
    let mut warnings = Vec::new();
    let counts: Vec<usize> = partitions.iter().map(|p| p.pixel_count()).collect();
    if counts.len() != RTL_CORES || counts.iter().any(|&c| c != counts[0]) {
        warnings.push(format!(
            "the published RTL has {RTL_CORES} cores that advance in lock-step: it needs {RTL_CORES} partitions of equal pixel count (these have {counts:?}; try --cores {RTL_CORES} with a height divisible by {RTL_CORES})"
        ));
    }
    if scene.texture.len() > RTL_TEXTURE_WORDS {
        warnings.push(format!(
            "{} texture words: the published test bench loads only the first {RTL_TEXTURE_WORDS}",
            scene.texture.len()
        ));
    }
    // Vertex.mem: a 10-word header, then 3 words per vector of each triangle record.
    let triangle_words = TRIANGLE_VECTORS * 3;
    let vertex_words = 10 + scene.triangles.len() * triangle_words;
    if vertex_words > RTL_VERTEX_WORDS {
        warnings.push(format!(
            "{} triangles: the published test bench's vertex buffer holds {}",
            scene.triangles.len(),
            (RTL_VERTEX_WORDS - 10) / triangle_words
        ));
    }
    warnings
}
