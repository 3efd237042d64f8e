//! The OBJ reader, and validation of the MTL subset the loader reads, by hand, so that every
//! error names the file, line and column and says what was expected.
//!
//! OBJ files are read here in one pass, straight into the model's positions, texture
//! coordinates and triangles: no copy of the text, no intermediate per-face lists, so that
//! a scan of a million triangles reads fast and small. (The loader used to check the text
//! here and hand tobj a cleaned copy to read; `tests/emulator/obj_exact.rs` pins that
//! every outcome is still the same, including tobj's fan triangulation and material assignment.)
//!
//! MTL files are still read with tobj (`Kd`, `map_Kd`), which reports errors without a line
//! or column and panics on some malformed input (a `Kd` with fewer than three numbers
//! unwraps). So every statement tobj will read is checked here first, and tobj gets the
//! checked statements in a form it reads as this loader means them ([`validate_mtl`]).
//!
//! OBJ: `v`, `vt`, `vn` (normals only shade: one whose numbers do not read is kept as zero),
//! `f` (any polygon, fan-triangulated; `v`, `v/vt`, `v//vn`, `v/vt/vn`, negative indices
//! count back from the last vertex; a `vn` index that does not exist is a warning, and the
//! corner has no normal), `usemtl`, `mtllib`. `o`,
//! `g`, `s`, lines and points are ignored; other statements are listed once in the notes.
//! MTL: `newmtl`, `Kd`, `map_Kd` (its options are skipped); everything else (lighting,
//! other maps) means nothing to the hardware and is ignored.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use rayon::prelude::*;

use super::load::{Corner, ObjModel, ObjTriangle, NO_INDEX};
use crate::io::scene::SceneError;

/// A checked OBJ: its triangles and what the loader needs besides them.
#[derive(Clone, Debug, Default)]
pub struct ValidObj {
    /// Every `v` and `vt` (v is 0 when absent) and the faces' fans in file order, each
    /// triangle with the index into `material_names` of the `usemtl` in force.
    pub model: ObjModel,
    /// `mtllib` file names with the line that named them, in the order they are read
    /// (all before any `usemtl` is resolved, wherever the statements stand).
    pub libraries: Vec<(String, usize)>,
    /// Distinct `usemtl` names with the first line that used them.
    pub material_names: Vec<(String, usize)>,
    /// Statement keywords the loader does not know, each once.
    pub unknown: Vec<String>,
    /// What was wrong but changes nothing the renderer uses (a `vn` index that does not
    /// exist), as `file:line:col: message`: the first case, and how many there were.
    pub ignored: Option<(String, usize)>,
}

struct Line<'f, 't> {
    file: &'f Path,
    number: usize,
    text: &'t str,
}

impl Line<'_, '_> {
    fn error(&self, token: &str, message: String) -> SceneError {
        // Tokens are slices of the line, so their offset is the column.
        let column = (token.as_ptr() as usize).saturating_sub(self.text.as_ptr() as usize) + 1;
        SceneError::Syntax {
            file: self.file.to_path_buf(),
            line: self.number,
            column,
            message,
        }
    }

    fn number(&self, token: &str, what: &str) -> Result<f64, SceneError> {
        match token.parse::<f64>() {
            Ok(value) if value.is_finite() => Ok(value),
            _ => Err(self.error(
                token,
                format!("expected a number for {what}, found `{token}`"),
            )),
        }
    }
}

/// The statements of a line: comment removed, split on whitespace.
use std::sync::atomic::{AtomicU64, Ordering};

fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split('#').next().unwrap_or("").split_whitespace()
}

/// `tokens(text).next()`, read directly when the line starts with a printable ASCII
/// character and the first token ends before any other: the first pass over a file reads
/// only each line's keyword.
fn first_token(text: &str) -> Option<&str> {
    let bytes = text.as_bytes();
    if bytes
        .first()
        .is_some_and(|&b| b.is_ascii_graphic() && b != b'#')
    {
        // `char::is_whitespace` among ASCII: tab to carriage return, and space.
        let ends = |b: u8| b == b'#' || b == b' ' || (b'\t'..=b'\r').contains(&b);
        match bytes.iter().position(|&b| ends(b) || !b.is_ascii()) {
            None => return Some(text),
            Some(at) if bytes[at].is_ascii() => return Some(&text[..at]),
            // A character past ASCII may be whitespace: the general reading decides.
            Some(_) => {}
        }
    }
    tokens(text).next()
}

/// The rest of a line after its keyword, for names that may contain spaces.
fn rest_after<'a>(text: &'a str, keyword: &str) -> &'a str {
    let text = text.split('#').next().unwrap_or("").trim();
    text[keyword.len()..].trim()
}

/// Checks OBJ text; `file` names it in errors.
#[cfg(test)]
pub fn validate_obj(text: &str, file: &Path) -> Result<ValidObj, SceneError> {
    validate_obj_counting(
        text_pieces(text, piece_bytes(text.len())),
        file,
        &AtomicU64::new(0),
    )
}

/// [`validate_obj`] of the text whose pieces (each ending with a whole line, see
/// [`utf8_pieces`]) are `pieces`, adding the bytes of the lines checked to `checked` as it
/// goes.
///
/// Large files are read in pieces on all threads: a first pass counts each piece's lines
/// and `v`, `vt` and `vn` statements, so every piece knows the counts and line number it
/// starts at and reads exactly as the whole file read in order would (the first error in
/// file order wins, as each piece stops at its first); the pieces are then joined, their
/// `usemtl` names numbered in order of first use.
pub fn validate_obj_counting(
    mut pieces: Vec<&str>,
    file: &Path,
    checked: &AtomicU64,
) -> Result<ValidObj, SceneError> {
    if let Some(first) = pieces.first_mut() {
        *first = first.strip_prefix('\u{feff}').unwrap_or(first);
    }
    let counts: Vec<Counts> = pieces.par_iter().map(|piece| Counts::of(piece)).collect();
    let starts = counts.iter().scan(Counts::default(), |sum, counts| {
        let start = *sum;
        *sum = sum.plus(counts);
        Some(start)
    });
    let jobs: Vec<(&str, Counts)> = pieces.into_iter().zip(starts).collect();
    let read: Vec<Result<FilePiece, SceneError>> = jobs
        .into_par_iter()
        .map(|(piece, start)| read_piece(piece, start, file, checked))
        .collect();
    let read: Result<Vec<FilePiece>, SceneError> = read.into_iter().collect();
    Ok(join(read?))
}

/// [`validate_obj`] with pieces of about `piece_bytes`.
#[cfg(test)]
fn validate_in_pieces(
    text: &str,
    file: &Path,
    checked: &AtomicU64,
    piece_bytes: usize,
) -> Result<ValidObj, SceneError> {
    validate_obj_counting(text_pieces(text, piece_bytes), file, checked)
}

/// The most bytes of OBJ text a thread reads at a time.
pub const MOST_PIECE_BYTES: usize = 1 << 20;
/// The fewest (small files are one piece).
const LEAST_PIECE_BYTES: usize = 1 << 16;

/// The bytes of OBJ text each thread reads at a time from a file of `len` bytes.
pub fn piece_bytes(len: usize) -> usize {
    super::piece_len(len, LEAST_PIECE_BYTES, MOST_PIECE_BYTES)
}

/// Where `bytes` is cut into pieces of about `size`, each ending with a whole line: the
/// end of each piece.
fn line_cuts(bytes: &[u8], size: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut end = 0;
    while bytes.len() - end > size {
        let Some(newline) = bytes[end + size..].iter().position(|&b| b == b'\n') else {
            break;
        };
        end += size + newline + 1;
        ends.push(end);
    }
    ends.push(bytes.len());
    ends
}

/// `text` cut into pieces of about `bytes`, each ending with a whole line.
pub fn text_pieces(text: &str, bytes: usize) -> Vec<&str> {
    let ends = line_cuts(text.as_bytes(), bytes);
    let starts = std::iter::once(0).chain(ends.iter().copied());
    // Each cut follows a newline: a character boundary.
    starts.zip(&ends).map(|(a, &b)| &text[a..b]).collect()
}

/// An OBJ file's bytes as text, cut into pieces of about [`piece_bytes`] each ending with a
/// whole line, each checked to be UTF-8 on its own thread; bytes that are not UTF-8 are an
/// error naming their line. (A newline byte occurs in UTF-8 only as a newline, never
/// inside a character, so the file is UTF-8 exactly when every piece is.)
pub fn utf8_pieces<'b>(bytes: &'b [u8], file: &Path) -> Result<Vec<&'b str>, SceneError> {
    let ends = line_cuts(bytes, piece_bytes(bytes.len()));
    let starts: Vec<usize> = std::iter::once(0).chain(ends.iter().copied()).collect();
    let checked: Vec<Result<&str, usize>> = (starts.par_iter().zip(&ends))
        .map(|(&start, &end)| {
            // Every piece before the first bad one is UTF-8 and each starts a character:
            // its first bad byte is the file's.
            std::str::from_utf8(&bytes[start..end]).map_err(|error| start + error.valid_up_to())
        })
        .collect();
    checked
        .into_iter()
        .collect::<Result<Vec<&str>, usize>>()
        .map_err(|at| not_utf8(bytes, at, file))
}

/// The error for the byte at `at`, the first of `bytes` that is not UTF-8, naming its line
/// and column.
fn not_utf8(bytes: &[u8], at: usize, file: &Path) -> SceneError {
    let line_start = bytes[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    SceneError::Syntax {
        file: file.to_path_buf(),
        line: bytes[..at].iter().filter(|&&b| b == b'\n').count() + 1,
        column: at - line_start + 1,
        message: format!(
            "byte 0x{:02X} is not UTF-8 text (a Latin-1 or other 8-bit name?): save the file as UTF-8",
            bytes[at]
        ),
    }
}

/// Lines and statements that add to what later faces index, in some stretch of the file.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    lines: usize,
    positions: usize,
    texcoords: usize,
    normals: usize,
}

impl Counts {
    fn of(text: &str) -> Counts {
        let mut counts = Counts::default();
        for line in text.lines() {
            counts.lines += 1;
            match first_token(line) {
                Some("v") => counts.positions += 1,
                Some("vt") => counts.texcoords += 1,
                Some("vn") => counts.normals += 1,
                _ => {}
            }
        }
        counts
    }

    fn plus(self, other: &Counts) -> Counts {
        Counts {
            lines: self.lines + other.lines,
            positions: self.positions + other.positions,
            texcoords: self.texcoords + other.texcoords,
            normals: self.normals + other.normals,
        }
    }
}

/// The material of a piece's faces before its first `usemtl`: the one in force where the
/// piece before it ended.
const INHERITED: u32 = NO_INDEX - 1;

/// One piece of the file read: its triangles' materials index `names` (or are
/// [`INHERITED`] or [`NO_INDEX`]).
#[derive(Default)]
struct FilePiece<'a> {
    valid: ValidObj,
    names: Vec<(&'a str, usize)>,
    /// The `usemtl` in force at the piece's end, if it has one.
    last_material: Option<u32>,
}

/// The pieces as one [`ValidObj`], in file order. The names, libraries and keywords join in
/// order (they are few); the positions, texture coordinates, normals and triangles, nearly
/// all of the model, are copied on all threads, each into its place.
fn join(pieces: Vec<FilePiece>) -> ValidObj {
    let mut valid = ValidObj::default();
    let mut index: HashMap<&str, u32> = HashMap::new();
    let mut unknown: HashSet<&str> = HashSet::new();
    let mut in_force = NO_INDEX;
    // Per piece: its names' numbers in the file, and the material in force where it starts.
    let mut materials: Vec<(Vec<u32>, u32)> = Vec::with_capacity(pieces.len());
    for piece in &pieces {
        let global: Vec<u32> = (piece.names.iter())
            .map(|&(name, line)| {
                *index.entry(name).or_insert_with(|| {
                    valid.material_names.push((name.to_string(), line));
                    valid.material_names.len() as u32 - 1
                })
            })
            .collect();
        let inherited = in_force;
        in_force = (piece.last_material).map_or(in_force, |local| global[local as usize]);
        materials.push((global, inherited));
        let part = &piece.valid;
        valid.libraries.extend_from_slice(&part.libraries);
        for keyword in &part.unknown {
            if unknown.insert(keyword) {
                valid.unknown.push(keyword.clone());
            }
        }
        if let Some((first, count)) = &part.ignored {
            valid.ignored.get_or_insert_with(|| (first.clone(), 0)).1 += count;
        }
    }
    let models: Vec<&ObjModel> = pieces.iter().map(|piece| &piece.valid.model).collect();
    let model = &mut valid.model;
    model.positions = concat(&models, |m| &m.positions, |_, &p| p);
    model.texcoords = concat(&models, |m| &m.texcoords, |_, &t| t);
    model.normals = concat(&models, |m| &m.normals, |_, &n| n);
    model.triangles = concat(
        &models,
        |m| &m.triangles,
        |piece, &triangle| {
            let (global, inherited) = &materials[piece];
            ObjTriangle {
                material: match triangle.material {
                    INHERITED => *inherited,
                    NO_INDEX => NO_INDEX,
                    local => global[local as usize],
                },
                ..triangle
            }
        },
    );
    // The pieces' own copies are freed on all threads too.
    pieces.into_par_iter().for_each(drop);
    valid
}

/// One field (`field`) of every model end to end, each element through `map` (with the
/// number of its model), on all threads.
fn concat<'m, T: Sync + 'm, U: Send>(
    models: &[&'m ObjModel],
    field: impl Fn(&'m ObjModel) -> &'m Vec<T>,
    map: impl Fn(usize, &T) -> U + Sync + Send,
) -> Vec<U> {
    let parts: Vec<&[T]> = models.iter().map(|m| field(m).as_slice()).collect();
    let starts: Vec<usize> = (parts.iter())
        .scan(0, |sum, part| {
            *sum += part.len();
            Some(*sum - part.len())
        })
        .collect();
    let total = parts.iter().map(|part| part.len()).sum();
    (0..total)
        .into_par_iter()
        .map_init(
            || 0,
            |part: &mut usize, at| {
                // Each thread takes a run of consecutive elements: the part seldom changes.
                let end = starts.get(*part + 1).copied().unwrap_or(total);
                if !(starts[*part]..end).contains(&at) {
                    *part = starts.partition_point(|&start| start <= at) - 1;
                }
                map(*part, &parts[*part][at - starts[*part]])
            },
        )
        .collect()
}

/// Reads one piece of the file, which starts after the lines and statements of `start`.
fn read_piece<'a>(
    text: &'a str,
    start: Counts,
    file: &Path,
    checked: &AtomicU64,
) -> Result<FilePiece<'a>, SceneError> {
    let mut reader = PieceReader {
        piece: FilePiece::default(),
        start,
        material: INHERITED,
        material_index: HashMap::new(),
        unknown: HashSet::new(),
        corners: Vec::new(),
    };
    // One triangle per `f` line is the common case; polygons grow the list.
    reader
        .piece
        .valid
        .model
        .triangles
        .reserve(count_faces(text));
    // Reused for every line, so that reading a line allocates nothing.
    let mut fields: Vec<&str> = Vec::new();
    let mut uncounted = 0;
    for (index, text) in text.lines().enumerate() {
        uncounted += text.len() as u64 + 1;
        if uncounted >= 1 << 16 {
            checked.fetch_add(std::mem::take(&mut uncounted), Ordering::Relaxed);
        }
        let line = Line {
            file,
            number: start.lines + index + 1,
            text,
        };
        fields.clear();
        fields.extend(tokens(text));
        if let Some((&keyword, fields)) = fields.split_first() {
            reader.statement(&line, keyword, fields)?;
        }
    }
    checked.fetch_add(uncounted, Ordering::Relaxed);
    Ok(reader.piece)
}

/// What reading a piece keeps from line to line.
struct PieceReader<'a> {
    piece: FilePiece<'a>,
    start: Counts,
    /// The `usemtl` in force, as an index into the piece's names.
    material: u32,
    /// Names seen so far, by hash: 200,000 distinct `usemtl` names were quadratic.
    material_index: HashMap<&'a str, u32>,
    unknown: HashSet<&'a str>,
    corners: Vec<Corner>,
}

impl<'a> PieceReader<'a> {
    fn statement(
        &mut self,
        line: &Line<'_, 'a>,
        keyword: &'a str,
        fields: &[&str],
    ) -> Result<(), SceneError> {
        let model = &mut self.piece.valid.model;
        match keyword {
            "v" => {
                if fields.len() < 3 {
                    return Err(line.error(
                        keyword,
                        format!(
                            "expected `v` followed by three numbers (x y z), found {} number{}",
                            fields.len(),
                            if fields.len() == 1 { "" } else { "s" }
                        ),
                    ));
                }
                let x = line.number(fields[0], "x")?;
                let y = line.number(fields[1], "y")?;
                let z = line.number(fields[2], "z")?;
                if self.start.positions + model.positions.len() >= NO_INDEX as usize {
                    return Err(line.error(keyword, too_many("v")));
                }
                model.positions.push([x, y, z]);
            }
            "vt" => {
                if fields.is_empty() {
                    return Err(line.error(
                        keyword,
                        "expected `vt` followed by two numbers (u v), found none".into(),
                    ));
                }
                let u = line.number(fields[0], "u")?;
                let v = match fields.get(1) {
                    Some(token) => line.number(token, "v")?,
                    None => 0.0,
                };
                if self.start.texcoords + model.texcoords.len() >= NO_INDEX as usize {
                    return Err(line.error(keyword, too_many("vt")));
                }
                model.texcoords.push([u, v]);
            }
            "vn" => {
                // Normals only shade: one whose numbers do not read is no normal (zero),
                // and the triangles that use it are lit flat.
                let number = |k: usize| fields.get(k).and_then(|t| t.parse::<f64>().ok());
                let normal = match [0, 1, 2].map(number) {
                    [Some(x), Some(y), Some(z)] if [x, y, z].iter().all(|c| c.is_finite()) => {
                        [x, y, z]
                    }
                    _ => [0.0; 3],
                };
                if self.start.normals + model.normals.len() >= NO_INDEX as usize {
                    return Err(line.error(keyword, too_many("vn")));
                }
                model.normals.push(normal);
            }
            "f" => self.face(line, keyword, fields)?,
            "usemtl" => self.use_material(line, keyword)?,
            "mtllib" => {
                if fields.is_empty() {
                    return Err(
                        line.error(keyword, "expected `mtllib` followed by a file name".into())
                    );
                }
                let names = fields
                    .iter()
                    .map(|name| (name.replace('\\', "/"), line.number));
                self.piece.valid.libraries.extend(names);
            }
            "o" | "g" | "s" | "l" | "p" | "vp" | "mg" => {}
            other => {
                if self.unknown.insert(other) {
                    self.piece.valid.unknown.push(other.to_string());
                }
            }
        }
        Ok(())
    }

    fn face(&mut self, line: &Line, keyword: &str, fields: &[&str]) -> Result<(), SceneError> {
        if fields.len() < 3 {
            return Err(line.error(
                keyword,
                format!(
                    "expected `f` followed by at least three vertices, found {}",
                    fields.len()
                ),
            ));
        }
        let valid = &mut self.piece.valid;
        self.corners.clear();
        let counts = [
            self.start.positions + valid.model.positions.len(),
            self.start.texcoords + valid.model.texcoords.len(),
            self.start.normals + valid.model.normals.len(),
        ];
        for token in fields {
            let (corner, ignored) = check_corner(line, token, counts)?;
            if let Some(warning) = ignored {
                let (_, count) = valid.ignored.get_or_insert((warning.to_string(), 0));
                *count += 1;
            }
            self.corners.push(corner);
        }
        // A fan around the first corner (tobj's triangulation, which this loader used to
        // read OBJ with), exact for the convex polygons OBJ exporters write.
        for pair in self.corners[1..].windows(2) {
            valid.model.triangles.push(ObjTriangle {
                corners: [self.corners[0], pair[0], pair[1]],
                material: self.material,
            });
        }
        Ok(())
    }

    fn use_material(&mut self, line: &Line<'_, 'a>, keyword: &str) -> Result<(), SceneError> {
        let name = rest_after(line.text, keyword);
        if name.is_empty() {
            return Err(line.error(
                keyword,
                "expected `usemtl` followed by a material name".into(),
            ));
        }
        let names = &mut self.piece.names;
        if names.len() >= INHERITED as usize {
            return Err(line.error(keyword, too_many("usemtl")));
        }
        self.material = *self.material_index.entry(name).or_insert_with(|| {
            names.push((name, line.number));
            names.len() as u32 - 1
        });
        self.piece.last_material = Some(self.material);
        Ok(())
    }
}

/// The number of lines that start with `f ` (an estimate of the triangles, to allocate them
/// at once).
fn count_faces(text: &str) -> usize {
    let bytes = text.as_bytes();
    let starts = bytes.starts_with(b"f ") as usize;
    starts
        + bytes
            .windows(3)
            .filter(|w| w[0] == b'\n' && w[1] == b'f' && w[2] == b' ')
            .count()
}

fn too_many(keyword: &str) -> String {
    format!(
        "more than {} `{keyword}` lines: too many to index",
        NO_INDEX - 1
    )
}

/// Checks one `f` field (`v`, `v/vt`, `v//vn` or `v/vt/vn`) against the `v`, `vt` and `vn`
/// counts so far and resolves its `v` and `vt` indices. A bad `v` or `vt` index is an
/// error; a bad `vn` index only a warning (normals are not used), returned beside it.
fn check_corner(
    line: &Line,
    token: &str,
    counts: [usize; 3],
) -> Result<(Corner, Option<SceneError>), SceneError> {
    let shape_error = || {
        line.error(
            token,
            format!("expected a face vertex like 1, 1/2, 1//3 or 1/2/3, found `{token}`"),
        )
    };
    let mut parts = [""; 3];
    let mut len = 0;
    for part in token.split('/') {
        if len == 3 {
            return Err(shape_error());
        }
        parts[len] = part;
        len += 1;
    }
    if parts[0].is_empty() || (len == 2 && parts[1].is_empty()) {
        return Err(shape_error());
    }
    let mut ignored = None;
    let mut resolved = [NO_INDEX; 3];
    for (kind, (part, count)) in parts[..len].iter().zip(counts).enumerate() {
        if part.is_empty() {
            continue;
        }
        let name = ["v", "vt", "vn"][kind];
        let problem = match index_of(part) {
            Err(_) if kind == 2 => Some(format!("expected a normal index, found `{part}`")),
            Err(_) => return Err(shape_error()),
            Ok(index) => {
                let at = if index < 0 {
                    count as i64 + index
                } else {
                    index - 1
                };
                if index == 0 || at < 0 || at >= count as i64 {
                    Some(format!(
                        "{name} index {index} does not exist: {count} `{name}` line{} so far",
                        if count == 1 { "" } else { "s" }
                    ))
                } else {
                    resolved[kind] = at as u32;
                    None
                }
            }
        };
        match problem {
            Some(message) if kind == 2 => {
                ignored = Some(line.error(
                    part,
                    format!("{message}; it is ignored (the face is lit flat)"),
                ))
            }
            Some(message) => return Err(line.error(token, message)),
            None => {}
        }
    }
    let [position, texcoord, normal] = resolved;
    Ok((
        Corner {
            position,
            texcoord,
            normal,
        },
        ignored,
    ))
}

/// `token.parse::<i64>()`, read directly when it is a few plain digits (nearly every face
/// index): a quarter of the face lines' time went to the general parser.
#[inline]
fn index_of(token: &str) -> Result<i64, std::num::ParseIntError> {
    let bytes = token.as_bytes();
    if (1..=18).contains(&bytes.len()) && bytes.iter().all(u8::is_ascii_digit) {
        return Ok(bytes
            .iter()
            .fold(0, |value, &digit| value * 10 + i64::from(digit - b'0')));
    }
    token.parse::<i64>()
}

/// Checks MTL text; `file` names it in errors. Returns the statements tobj reads:
/// `newmtl name`, `Kd r g b` (`Kd r` means grey, and tobj needs all three) and
/// `map_Kd file` without its options, with `/` for `\\`; everything else removed.
pub fn validate_mtl(text: &str, file: &Path) -> Result<String, SceneError> {
    let mut statements = String::new();
    let mut in_material = false;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for (index, text) in text.lines().enumerate() {
        let line = Line {
            file,
            number: index + 1,
            text,
        };
        let mut fields = tokens(text);
        let Some(keyword) = fields.next() else {
            continue;
        };
        let fields: Vec<&str> = fields.collect();
        if keyword == "newmtl" {
            let name = rest_after(text, keyword);
            if name.is_empty() {
                return Err(line.error(
                    keyword,
                    "expected `newmtl` followed by a material name".into(),
                ));
            }
            in_material = true;
            statements.push_str(&format!("newmtl {name}\n"));
            continue;
        }
        if keyword != "Kd" && keyword != "map_Kd" {
            continue;
        }
        if !in_material {
            return Err(line.error(keyword, format!("expected `newmtl` before `{keyword}`")));
        }
        if keyword == "Kd" {
            if fields.first() == Some(&"spectral") || fields.first() == Some(&"xyz") {
                return Err(line.error(
                    fields[0],
                    "expected `Kd` followed by r g b (spectral and xyz colours are not supported)"
                        .into(),
                ));
            }
            if fields.is_empty() {
                return Err(line.error(
                    keyword,
                    "expected `Kd` followed by three numbers (r g b)".into(),
                ));
            }
            line.number(fields[0], "red")?;
            // `Kd r` alone means grey.
            let g = fields
                .get(1)
                .map_or(Ok(fields[0]), |t| line.number(t, "green").map(|_| *t))?;
            let b = fields
                .get(2)
                .map_or(Ok(fields[0]), |t| line.number(t, "blue").map(|_| *t))?;
            statements.push_str(&format!("Kd {} {g} {b}\n", fields[0]));
        } else {
            let name = texture_name(&line, rest_after(text, keyword))?;
            statements.push_str(&format!("map_Kd {name}\n"));
        }
    }
    Ok(statements)
}

/// Number of arguments of each `map_Kd` option (`-o`, `-s`, `-t` take one to three).
fn option_arguments(option: &str) -> Option<(usize, usize)> {
    Some(match option {
        "-blendu" | "-blendv" | "-bm" | "-boost" | "-cc" | "-clamp" | "-imfchan" | "-texres"
        | "-type" => (1, 1),
        "-mm" => (2, 2),
        "-o" | "-s" | "-t" => (1, 3),
        _ => return None,
    })
}

/// The file name of a `map_Kd` statement, after its options.
fn texture_name(line: &Line, rest: &str) -> Result<String, SceneError> {
    let mut remaining = rest;
    loop {
        let trimmed = remaining.trim_start();
        let Some(option) = trimmed.split_whitespace().next() else {
            return Err(line.error(
                line.text.trim_end(),
                "expected `map_Kd` followed by a texture file name".into(),
            ));
        };
        let Some((min, max)) = option_arguments(option) else {
            return Ok(trimmed.trim_end().replace('\\', "/"));
        };
        let mut after = &trimmed[option.len()..];
        for taken in 0..max {
            let next = after.trim_start();
            let Some(argument) = next.split_whitespace().next() else {
                break;
            };
            let numeric = argument.parse::<f64>().is_ok();
            if taken >= min && !numeric {
                break;
            }
            after = &next[argument.len()..];
        }
        remaining = after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Result<ValidObj, String> {
        validate_obj(text, Path::new("t.obj")).map_err(|e| e.to_string())
    }

    /// Every cut into pieces reads as the whole: models, names, warnings, first errors.
    #[test]
    fn pieces_read_as_the_whole_file() {
        let texts = [
            "mtllib a.mtl\nv 0 0 0\nv 1 0 0\nusemtl a\nv 0 1 0\nvt 0 0\nf 1/1 2/1 3/1\nbevel 1\n\
             usemtl b\nf -1 -2 -3 1\nvn 0 0 1\nf 1//1 2//2 3//1\nfoo\nusemtl a\nf 1 2 3\nbevel\n\
             g x\nf 3 2 1\nf 1//3 2 3\r\nmtllib c.mtl # c\nusemtl c\nf 1 2 3",
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nusemtl m\nf 1 2 4\nv 1 1 1\nf 1 2 x\n",
            "v 0 0 0\nv 1 0 0\nf 1 2 3\nv 0 1 0\nv 1 q 0\n",
            "\u{feff}v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\nvt 1\nf 1/1 2/2 3/1\n",
        ];
        for text in texts {
            let whole = validate_obj(text, Path::new("t.obj"));
            let whole = format!("{whole:?}");
            for bytes in 1..text.len() {
                let counted = AtomicU64::new(0);
                let cut = validate_in_pieces(text, Path::new("t.obj"), &counted, bytes);
                assert_eq!(format!("{cut:?}"), whole, "pieces of {bytes} bytes");
            }
        }
    }

    /// `lines` lines of `v 0 0 0`, 8 bytes each: several pieces.
    fn many_vertices(lines: usize) -> String {
        "v 0 0 0\n".repeat(lines)
    }

    /// Errors deep in a file of several pieces name the line and column that reading the
    /// whole file in order gives.
    #[test]
    fn errors_deep_in_a_large_file_name_their_line() {
        let mut text = many_vertices(400_000);
        assert!(text.len() > 3 * MOST_PIECE_BYTES);
        text.push_str("f 1 2 3\nf 1 2 400001\n");
        assert_eq!(
            obj(&text).unwrap_err(),
            "t.obj:400002:7: v index 400001 does not exist: 400000 `v` lines so far"
        );
        let mut text = many_vertices(400_000);
        text.replace_range(8 * 350_000..8 * 350_001, "v 0 y 0\n");
        text.replace_range(8 * 390_000..8 * 390_001, "v 0 0 z\n");
        assert_eq!(
            obj(&text).unwrap_err(),
            "t.obj:350001:5: expected a number for y, found `y`"
        );
    }

    /// A byte that is not UTF-8 anywhere in a file of several pieces (first in a piece,
    /// last before a piece's newline, deep in one) is named by its line and column, the
    /// first in the file winning; good text reads as the same pieces.
    #[test]
    fn bytes_that_are_not_utf8_name_their_line_in_any_piece() {
        let text = many_vertices(400_000);
        let bytes = text.as_bytes().to_vec();
        let ends = line_cuts(&bytes, piece_bytes(bytes.len()));
        assert!(ends.len() >= 3);
        let error = |bad: &[(usize, u8)]| {
            let mut bytes = bytes.clone();
            for &(at, byte) in bad {
                bytes[at] = byte;
            }
            utf8_pieces(&bytes, Path::new("t.obj"))
                .unwrap_err()
                .to_string()
        };
        let message = |line: usize, column: usize, byte: &str| {
            format!("t.obj:{line}:{column}: byte 0x{byte} is not UTF-8 text (a Latin-1 or other 8-bit name?): save the file as UTF-8")
        };
        // Lines are 8 bytes: the byte at `at` is on line at / 8 + 1, column at % 8 + 1.
        let (start, before_newline) = (ends[1], ends[0] - 2);
        assert_eq!(error(&[(start, 0xE9)]), message(start / 8 + 1, 1, "E9"));
        // A character's first byte, cut short by the newline.
        assert_eq!(
            error(&[(before_newline, 0xE2), (start, 0xE9)]),
            message(before_newline / 8 + 1, 7, "E2")
        );
        assert_eq!(
            error(&[(8 * 390_000 + 4, 0xFF), (start + 16, 0xC3)]),
            message(start / 8 + 3, 1, "C3")
        );
        let text = "v 0 0 0 # é\n".repeat(200_000);
        let pieces = utf8_pieces(text.as_bytes(), Path::new("t.obj")).unwrap();
        assert!(pieces.len() >= 3);
        assert_eq!(pieces, text_pieces(&text, piece_bytes(text.len())));
    }

    fn corner(position: u32, texcoord: u32) -> Corner {
        with_normal(position, texcoord, NO_INDEX)
    }

    fn with_normal(position: u32, texcoord: u32, normal: u32) -> Corner {
        Corner {
            position,
            texcoord,
            normal,
        }
    }

    #[test]
    fn the_model_has_what_the_loader_reads() {
        let valid = obj("# c\nv 0 0 0 2 # w\nvt 1\nvn x y z\ng a\nusemtl m n\nf 1/1 -1/1/\t1\nmtllib a\\b.mtl c.mtl\nbevel on\n").unwrap();
        // `w` is ignored, `vt u` means v = 0.
        assert_eq!(valid.model.positions, vec![[0.0; 3]]);
        assert_eq!(valid.model.texcoords, vec![[1.0, 0.0]]);
        // A normal whose numbers do not read is zero.
        assert_eq!(valid.model.normals, vec![[0.0; 3]]);
        assert_eq!(
            valid.model.triangles,
            vec![ObjTriangle {
                corners: [corner(0, 0), corner(0, 0), corner(0, NO_INDEX)],
                material: 0
            }]
        );
        assert_eq!(valid.ignored, None);
        assert_eq!(valid.material_names, vec![("m n".to_string(), 6)]);
        assert_eq!(
            valid.libraries,
            vec![("a/b.mtl".to_string(), 8), ("c.mtl".to_string(), 8)]
        );
        assert_eq!(valid.unknown, vec!["bevel".to_string()]);
    }

    #[test]
    fn normal_indices_that_do_not_exist_are_warnings_and_dropped_normals_kept() {
        // `f 1/1/1` with no `vn` at all, as some exporters write it.
        let valid =
            obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1/1 2/1/1 3/1/1\nf 1//x 2 3\n").unwrap();
        let corners: Vec<_> = valid.model.triangles.iter().map(|t| t.corners).collect();
        assert_eq!(
            corners,
            vec![
                [corner(0, 0), corner(1, 0), corner(2, 0)],
                [
                    corner(0, NO_INDEX),
                    corner(1, NO_INDEX),
                    corner(2, NO_INDEX)
                ]
            ]
        );
        assert_eq!(
            valid.ignored,
            Some((
                "t.obj:5:7: vn index 1 does not exist: 0 `vn` lines so far; it is ignored (the face is lit flat)".to_string(),
                4
            ))
        );
        // Normals that exist are kept.
        let valid = obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//1 2//1 3//-1\n").unwrap();
        assert_eq!(
            valid.model.triangles[0].corners,
            [
                with_normal(0, NO_INDEX, 0),
                with_normal(1, NO_INDEX, 0),
                with_normal(2, NO_INDEX, 0)
            ]
        );
        assert_eq!(valid.model.normals, vec![[0.0, 0.0, 1.0]]);
        assert_eq!(valid.ignored, None);
        // What the image depends on stays an error.
        assert_eq!(
            obj("v 0 0 0\nf 1/2/1 1 1\n").unwrap_err(),
            "t.obj:2:3: vt index 2 does not exist: 0 `vt` lines so far"
        );
    }

    #[test]
    fn first_tokens_read_as_the_tokens_do() {
        let cases = [
            "v 1 2 3",
            "vt 0 1",
            "vn 0 0 1",
            "v",
            "v#c",
            "vt\t1",
            "v\u{a0}1",
            "v\u{3000}1",
            "vé 1",
            "# v",
            "",
            "  v 1",
            "\tvt",
            "\u{2003}v 1",
            "\x0bv",
            "v\x0b1",
            "v\x0c1",
            "f 1 2 3",
            "usemtl a#b",
            "vv 1",
            "\x01v",
            "v\r",
        ];
        for line in cases {
            assert_eq!(first_token(line), tokens(line).next(), "{line:?}");
        }
    }

    #[test]
    fn face_indices_read_as_the_general_parser_reads_them() {
        let cases = [
            "1",
            "0",
            "007",
            "42",
            "-1",
            "+5",
            "",
            "1a",
            "999999999999999999",
            "9999999999999999999",
            "99999999999999999999",
            "１",
            "-",
            "2.0",
            " 1",
        ];
        for token in cases {
            assert_eq!(index_of(token), token.parse::<i64>(), "`{token}`");
        }
    }

    #[test]
    fn errors_name_line_column_and_expectation() {
        assert_eq!(
            obj("v 0 0 0\nv 1 x 0\n").unwrap_err(),
            "t.obj:2:5: expected a number for y, found `x`"
        );
        assert_eq!(
            obj("v 0 0 0\nf 1 2 3\n").unwrap_err(),
            "t.obj:2:5: v index 2 does not exist: 1 `v` line so far"
        );
        assert_eq!(
            obj("v 0 0 0\nf 1 1\n").unwrap_err(),
            "t.obj:2:1: expected `f` followed by at least three vertices, found 2"
        );
        assert_eq!(
            obj("v 0 0 0\nf 1 1/ 1\n").unwrap_err(),
            "t.obj:2:5: expected a face vertex like 1, 1/2, 1//3 or 1/2/3, found `1/`"
        );
        assert_eq!(
            obj("v 0 0\n").unwrap_err(),
            "t.obj:1:1: expected `v` followed by three numbers (x y z), found 2 numbers"
        );
        // The indices that made tobj overflow.
        assert_eq!(
            obj("v 4 0 4\nvt 0 8\nf 1/-7 1 1").unwrap_err(),
            "t.obj:3:3: vt index -7 does not exist: 1 `vt` line so far"
        );
    }

    #[test]
    fn mtl_text_for_tobj_has_kd_and_map_kd_past_options() {
        let mtl = "newmtl a\nKd 1 0.5 0 # warm\nNs 10\nmap_Kd -s 2 2 1 -clamp on tex dir\\wood 1.png\nnewmtl b\nKd 0.25\n";
        assert_eq!(
            validate_mtl(mtl, Path::new("t.mtl")).unwrap(),
            "newmtl a\nKd 1 0.5 0\nmap_Kd tex dir/wood 1.png\nnewmtl b\nKd 0.25 0.25 0.25\n"
        );
        assert_eq!(
            validate_mtl("Kd 1 1 1\n", Path::new("t.mtl"))
                .unwrap_err()
                .to_string(),
            "t.mtl:1:1: expected `newmtl` before `Kd`"
        );
    }
}
