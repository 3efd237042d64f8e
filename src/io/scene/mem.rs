//! Readers for the test bench's `.mem` files (Verilog `$readmemh`: whitespace-separated
//! hexadecimal words, `//` and `/* */` comments), spec isa_and_formats §5.

use std::path::{Path, PathBuf};

use super::{Partition, Scene, SceneError, Triangle, Vec3, TRIANGLE_VECTORS};
use crate::emu::isa::registers::IMEM_WORDS;
use crate::emu::isa::Word;

/// One hexadecimal word and where it stood.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HexWord {
    pub value: u32,
    pub line: usize,
}

/// Tokenizes `$readmemh` text. Errors name the file, line and column (in characters).
pub fn read_hex_words(text: &str, file: &Path) -> Result<Vec<HexWord>, SceneError> {
    let mut words = Vec::new();
    let mut in_block_comment = false;
    for (line_index, line) in text.lines().enumerate() {
        let line_no = line_index + 1;
        // Scanned as bytes: every delimiter is ASCII, so a token (or a comment) may hold any
        // character without the scanner ever cutting one in half.
        let bytes = line.as_bytes();
        let at = |i: usize, pattern: &[u8]| bytes[i..].starts_with(pattern);
        let mut i = 0;
        while i < bytes.len() {
            if in_block_comment {
                if at(i, b"*/") {
                    in_block_comment = false;
                    i += 2;
                } else {
                    i += 1;
                }
                continue;
            }
            if bytes[i].is_ascii_whitespace() {
                i += 1;
                continue;
            }
            if at(i, b"//") {
                break;
            }
            if at(i, b"/*") {
                in_block_comment = true;
                i += 2;
                continue;
            }
            let start = i;
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() && !at(i, b"//") {
                i += 1;
            }
            // `start` and `i` sit next to ASCII delimiters, so both are character boundaries.
            let token = &line[start..i];
            let value = parse_hex_word(token).ok_or_else(|| SceneError::Syntax {
                file: file.to_path_buf(),
                line: line_no,
                column: line[..start].chars().count() + 1,
                message: format!(
                    "expected a hexadecimal word of at most 8 digits, found `{token}`"
                ),
            })?;
            words.push(HexWord {
                value,
                line: line_no,
            });
        }
    }
    Ok(words)
}

/// Hex digits and `_` separators only (`from_str_radix` alone would also take a sign).
fn parse_hex_word(token: &str) -> Option<u32> {
    let digits = token.replace('_', "");
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(&digits, 16).ok()
}

fn read_words(path: &Path) -> Result<Vec<HexWord>, SceneError> {
    let text = crate::io::input::read_to_string(path).map_err(|source| SceneError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    read_hex_words(&text, path)
}

fn vec3(words: &[HexWord]) -> Vec3 {
    [words[0].value, words[1].value, words[2].value]
}

/// The largest width and height rendered (the cap OBJ scenes have: a 16383x16383 frame
/// asked for by a 1 KB Params.mem ran for minutes and ran out of memory).
pub const MAX_SIDE: u32 = 4096;

/// Words of Params.mem the hardware sends before the partitions: 6 rows after the count.
const PARAMS_CONFIG_WORDS: usize = 1 + 6 * 3;

/// Reads Params.mem: the 6 configuration rows and the per-core partitions. Partitions are
/// read until one ends at the image's last row; later words (e.g. light rows) are ignored,
/// as the hardware ignores them.
pub fn read_params(path: &Path) -> Result<(Vec<Vec3>, Vec<Partition>), SceneError> {
    params_from_words(&read_words(path)?, path)
}

/// [`read_params`] on text already read; `file` names it in messages.
pub fn parse_params(text: &str, file: &Path) -> Result<(Vec<Vec3>, Vec<Partition>), SceneError> {
    params_from_words(&read_hex_words(text, file)?, file)
}

fn params_from_words(
    words: &[HexWord],
    path: &Path,
) -> Result<(Vec<Vec3>, Vec<Partition>), SceneError> {
    let needed = PARAMS_CONFIG_WORDS + 6;
    if words.len() < needed {
        return Err(SceneError::Invalid {
            file: path.to_path_buf(),
            line: words.last().map_or(1, |t| t.line),
            message: format!(
                "expected at least {needed} words (count, 6 configuration rows, one partition), found {}",
                words.len()
            ),
        });
    }
    let config: Vec<Vec3> = (0..6).map(|row| vec3(&words[1 + row * 3..])).collect();
    let (width, height) = (config[4][0] >> 17, config[4][1] >> 17);
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(SceneError::Invalid {
            file: path.to_path_buf(),
            line: words[1 + 4 * 3].line,
            message: format!(
                "resolution {width}x{height}: at most {MAX_SIDE}x{MAX_SIDE}, as for OBJ scenes"
            ),
        });
    }
    let mut partitions = Vec::new();
    let mut at = PARAMS_CONFIG_WORDS;
    while at + 6 <= words.len() {
        let partition = Partition {
            initial: vec3(&words[at..]),
            end: vec3(&words[at + 3..]),
        };
        partition
            .validate(width, height)
            .map_err(|message| SceneError::Invalid {
                file: path.to_path_buf(),
                line: words[at].line,
                message: format!("partition {}: {message}", partitions.len()),
            })?;
        let last = partition.end_pixel() == (width, height);
        partitions.push(partition);
        at += 6;
        if last {
            return Ok((config, partitions));
        }
    }
    Err(SceneError::Invalid {
        file: path.to_path_buf(),
        line: words.last().map_or(1, |t| t.line),
        message: format!(
            "no partition ends at the last pixel ({width}, {height}): the partitions do not cover the image"
        ),
    })
}

/// Reads Vertex.mem: word 6 is the triangle count N, triangle t is words 10+21t .. 30+21t.
pub fn read_vertices(path: &Path) -> Result<Vec<Triangle>, SceneError> {
    vertices_from_words(&read_words(path)?, path)
}

/// [`read_vertices`] on text already read; `file` names it in messages.
pub fn parse_vertices(text: &str, file: &Path) -> Result<Vec<Triangle>, SceneError> {
    vertices_from_words(&read_hex_words(text, file)?, file)
}

fn vertices_from_words(words: &[HexWord], path: &Path) -> Result<Vec<Triangle>, SceneError> {
    if words.len() < 10 {
        return Err(SceneError::Invalid {
            file: path.to_path_buf(),
            line: words.last().map_or(1, |t| t.line),
            message: format!(
                "expected a 10-word header (AABB, triangle count, offset, links), found {} words",
                words.len()
            ),
        });
    }
    let count = words[6].value as usize;
    let needed = 10 + count * TRIANGLE_VECTORS * 3;
    if words.len() < needed {
        return Err(SceneError::Invalid {
            file: path.to_path_buf(),
            line: words[6].line,
            message: format!(
                "word 6 says {count} triangles, which needs {needed} words, but the file has {}",
                words.len()
            ),
        });
    }
    Ok(words[10..needed]
        .chunks_exact(TRIANGLE_VECTORS * 3)
        .map(|tri| std::array::from_fn(|row| vec3(&tri[row * 3..])))
        .collect())
}

/// Reads Textures.mem: texture memory word k = word k of the file.
pub fn read_textures(path: &Path) -> Result<Vec<u32>, SceneError> {
    Ok(read_words(path)?.into_iter().map(|t| t.value).collect())
}

/// Reads Creg.mem: one control-register word (no effect in this hardware revision).
pub fn read_control_register(path: &Path) -> Result<u32, SceneError> {
    Ok(read_words(path)?.first().map_or(0, |t| t.value))
}

/// Reads Instructions.mem: word 0 is a count the emulator ignores (it is written in decimal
/// and read as hex); then one instruction per pair of words, high word first.
pub fn read_instructions(path: &Path) -> Result<Vec<Word>, SceneError> {
    instructions_from_words(&read_words(path)?, path)
}

/// [`read_instructions`] on text already read; `file` names it in messages.
pub fn parse_instructions(text: &str, file: &Path) -> Result<Vec<Word>, SceneError> {
    instructions_from_words(&read_hex_words(text, file)?, file)
}

fn instructions_from_words(words: &[HexWord], path: &Path) -> Result<Vec<Word>, SceneError> {
    let body = words.get(1..).unwrap_or_default();
    if body.len() % 2 == 1 {
        return Err(SceneError::Invalid {
            file: path.to_path_buf(),
            line: body[body.len() - 1].line,
            message: "odd number of instruction words: each instruction is two words".into(),
        });
    }
    let instructions: Vec<Word> = body
        .chunks_exact(2)
        .map(|pair| Word::from_words(pair[0].value, pair[1].value))
        .collect();
    if instructions.len() > IMEM_WORDS {
        return Err(SceneError::Invalid {
            file: path.to_path_buf(),
            line: body[IMEM_WORDS * 2].line,
            message: format!(
                "{} instructions, but the instruction memory holds {IMEM_WORDS} (12 entry points + 117 instructions)",
                instructions.len()
            ),
        });
    }
    Ok(instructions)
}

/// Loads an original scene directory: Params.mem, Vertex.mem, Textures.mem and the
/// optional Creg.mem and Instructions.mem.
pub fn load_scene_dir(dir: &Path) -> Result<Scene, SceneError> {
    if !dir.is_dir() {
        return Err(SceneError::Io {
            path: dir.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such directory"),
        });
    }
    let file = |name: &str| -> PathBuf { dir.join(name) };
    let optional = |name: &str| -> Option<PathBuf> { Some(file(name)).filter(|p| p.is_file()) };
    let (config, partitions) = read_params(&file("Params.mem"))?;
    let triangles = read_vertices(&file("Vertex.mem"))?;
    let texture = read_textures(&file("Textures.mem"))?;
    let control_register = match optional("Creg.mem") {
        Some(path) => read_control_register(&path)?,
        None => 0,
    };
    let program = match optional("Instructions.mem") {
        Some(path) => Some(read_instructions(&path)?),
        None => None,
    };
    Ok(Scene {
        config: config.try_into().expect("read_params returns 6 rows"),
        partitions,
        triangles,
        texture,
        control_register,
        program,
        name: dir.display().to_string(),
    })
}

/// The `.mem` files of a scene, as the test bench reads them: what `theia export` writes,
/// so that a scene the emulator renders can run on the RTL (or an FPGA build of it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemFiles {
    pub params: String,
    pub vertex: String,
    pub textures: String,
    pub creg: String,
    pub instructions: String,
}

impl MemFiles {
    /// The files for `scene` rendered by `partitions` with instruction memory `imem` (entry
    /// table and user code). Each file reads back through this module's readers to the
    /// same scene.
    pub fn new(scene: &Scene, partitions: &[Partition], imem: &[Word]) -> MemFiles {
        MemFiles {
            params: params_text(scene, partitions),
            vertex: vertex_text(&scene.triangles),
            textures: textures_text(&scene.texture),
            creg: format!("{:x}\n", scene.control_register),
            instructions: instructions_text(imem),
        }
    }

    /// (file name, contents), in the order the test bench reads them.
    pub fn files(&self) -> [(&'static str, &str); 5] {
        [
            ("Creg.mem", &self.creg),
            ("Params.mem", &self.params),
            ("Vertex.mem", &self.vertex),
            ("Textures.mem", &self.textures),
            ("Instructions.mem", &self.instructions),
        ]
    }
}

fn row(out: &mut String, v: Vec3, comment: &str) {
    use std::fmt::Write;
    let _ = writeln!(out, "{:x} {:x} {:x} // {comment}", v[0], v[1], v[2]);
}

/// Params.mem: word 0 (never sent), the 6 configuration rows, then one (initial, final)
/// pair of pixel positions per core.
fn params_text(scene: &Scene, partitions: &[Partition]) -> String {
    const NAMES: [&str; 6] = [
        "light info",
        "camera position",
        "projection window min",
        "projection window max",
        "resolution",
        "texture size",
    ];
    let mut out = String::from("42 // word 0: not sent by the host\n");
    for (config, name) in scene.config.iter().zip(NAMES) {
        row(&mut out, *config, name);
    }
    for (core, partition) in partitions.iter().enumerate() {
        row(&mut out, partition.initial, &format!("core {core} start"));
        row(&mut out, partition.end, &format!("core {core} end"));
    }
    out
}

/// Vertex.mem: a 10-word header (no bounding box: the hardware never reads it), word 6 the
/// triangle count, then 7 rows per triangle (V0, UV0, V1, UV1, V2, UV2, diffuse colour).
fn vertex_text(triangles: &[Triangle]) -> String {
    let mut out = String::with_capacity(64 + triangles.len() * 7 * 30);
    out.push_str("0 0 0 // bounding box min (unused)\n0 0 0 // bounding box max (unused)\n");
    out.push_str(&format!(
        "{:x} // triangle count\n0 // offset (unused)\n0 // brother (unused)\n0 // parent (unused)\n",
        triangles.len()
    ));
    for (index, triangle) in triangles.iter().enumerate() {
        for (vector, value) in triangle.iter().enumerate() {
            let comment = if vector == 0 {
                format!("triangle {index}")
            } else {
                String::new()
            };
            row(&mut out, *value, &comment);
        }
    }
    out
}

/// Textures.mem: one texel (R, G, B words) per line.
fn textures_text(texture: &[u32]) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(texture.len() * 7);
    for texel in texture.chunks(3) {
        let words: Vec<String> = texel.iter().map(|w| format!("{w:x}")).collect();
        let _ = writeln!(out, "{}", words.join(" "));
    }
    out
}

/// Instructions.mem: word 0 is where the host stops reading (it starts at word 1 and reads
/// it as hex), so exactly the listed instructions are sent; then each instruction as two
/// words, high word first.
fn instructions_text(imem: &[Word]) -> String {
    use std::fmt::Write;
    let mut out = format!(
        "{:x} // words sent: 1 + 2 per instruction\n",
        1 + 2 * imem.len()
    );
    for (index, instruction) in imem.iter().enumerate() {
        let (high, low) = instruction.words();
        let _ = writeln!(out, "{high:08x} {low:08x} // {index}");
    }
    out
}

/// Writes a scene as the test bench's files (Params.mem, Vertex.mem, Textures.mem, Creg.mem
/// and, when the scene has a program, Instructions.mem) into `dir`, which must exist, so
/// that [`load_scene_dir`] reads back the same scene (its name aside).
pub fn write_scene_dir(scene: &Scene, dir: &Path) -> Result<(), SceneError> {
    let imem = scene.program.clone().unwrap_or_default();
    let files = MemFiles::new(scene, &scene.partitions, &imem);
    for (name, text) in files.files() {
        if name == "Instructions.mem" && scene.program.is_none() {
            continue;
        }
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| SceneError::Io { path, source })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_scene_reads_back_the_same() {
        use crate::io::scene::obj::{load_obj_text, MemoryAssets, ObjOptions};
        let obj = crate::io::scene::generate::uv_sphere_obj(8, 5);
        let options = ObjOptions {
            width: 24,
            height: 16,
            cores: 3,
            ..ObjOptions::default()
        };
        let scene = load_obj_text(&obj, Path::new("s.obj"), &MemoryAssets(&[]), &options)
            .unwrap()
            .scene;
        let dir = tempfile::tempdir().unwrap();
        write_scene_dir(&scene, dir.path()).unwrap();
        let back = load_scene_dir(dir.path()).unwrap();
        assert_eq!(back.config, scene.config);
        assert_eq!(back.partitions, scene.partitions);
        assert_eq!(back.triangles, scene.triangles);
        assert_eq!(back.texture, scene.texture);
        assert_eq!(back.program, scene.program);
        assert!(scene.program.is_some());
    }

    #[test]
    fn tokenizer_skips_comments_and_reads_hex() {
        let text = "// header\n2A\n0 20000 9  //comment\n/* block\n still */ fffb0000\n";
        let words: Vec<u32> = read_hex_words(text, Path::new("x.mem"))
            .unwrap()
            .iter()
            .map(|t| t.value)
            .collect();
        assert_eq!(words, vec![0x2A, 0, 0x20000, 9, 0xFFFB_0000]);
    }

    #[test]
    fn tokenizer_reports_file_line_column() {
        let err = read_hex_words("1 2\n3 zz 4\n", Path::new("Params.mem")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Params.mem:2:3: expected a hexadecimal word of at most 8 digits, found `zz`"
        );
        let err = read_hex_words("123456789\n", Path::new("a.mem")).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("a.mem:1:1: expected a hexadecimal word"));
    }

    #[test]
    fn words_are_hex_digits_and_underscores_only() {
        // `u32::from_str_radix` alone would read `+1` as 1.
        let err = read_hex_words("+1\n", Path::new("a.mem")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a.mem:1:1: expected a hexadecimal word of at most 8 digits, found `+1`"
        );
        let words = read_hex_words("dead_beef", Path::new("a.mem")).unwrap();
        assert_eq!(words[0].value, 0xDEAD_BEEF);
    }

    #[test]
    fn comment_glued_to_a_word_ends_it() {
        let words = read_hex_words("140000//10\n", Path::new("v.mem")).unwrap();
        assert_eq!(words.len(), 1);
        assert_eq!(words[0].value, 0x140000);
    }
}
