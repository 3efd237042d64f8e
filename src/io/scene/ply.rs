//! PLY scenes (Stanford's polygon format, as scans ship): ASCII and both binary byte
//! orders, read with ply-rs-bw. The `vertex` element gives positions (`x`, `y`, `z`),
//! normals (`nx`, `ny`, `nz`: smooth shading, as OBJ's `vn`) and texture coordinates
//! (`u`/`v`, `s`/`t` or `texture_u`/`texture_v`; they matter only for a shader that reads
//! them, as PLY names no texture); `face` (`vertex_indices` or `vertex_index`) polygons,
//! fan-triangulated as OBJ faces, and `tristrips` strips (-1 restarts a strip), with
//! alternating winding. Every other element is read past. The mesh then becomes a scene
//! exactly as an OBJ of the same mesh would ([`crate::io::scene::obj::load_model`]): the same
//! fit, notes and errors, and a PLY whose positions an OBJ spells exactly gives the same
//! image.

use std::io::{BufReader, Read};
use std::path::Path;

use ply_rs_bw::parser::{Parser, Reader};
use ply_rs_bw::ply::{ElementDef, PropertyAccess, PropertyAccessResult};

use super::obj::{load_model, Corner, ObjModel, ObjOptions, ObjScene, ObjTriangle, NO_INDEX};
use super::SceneError;

/// Loads a PLY file from disk.
pub fn load_ply(path: &Path, options: &ObjOptions) -> Result<ObjScene, SceneError> {
    let file = std::fs::File::open(path).map_err(|source| SceneError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    load_ply_from(BufReader::new(file), path, options)
}

/// Loads PLY data from `source`; `path` names it in messages.
pub fn load_ply_from(
    source: impl Read,
    path: &Path,
    options: &ObjOptions,
) -> Result<ObjScene, SceneError> {
    let mut notes = Vec::new();
    let model = read_model(source, path, &mut notes)?;
    load_model(&model, path, options, notes)
}

/// The mesh of a PLY file as the loader's model (positions, texture coordinates, normals,
/// triangles; no materials).
fn read_model(
    source: impl Read,
    path: &Path,
    notes: &mut Vec<String>,
) -> Result<ObjModel, SceneError> {
    let invalid = |message: String| SceneError::Unsupported {
        file: path.to_path_buf(),
        message,
    };
    let mut reader = Reader::new(BufReader::new(source));
    let header = Parser::<Vertex>::new()
        .read_header(&mut reader)
        .map_err(|e| invalid(format!("not a PLY header: {e}")))?;
    let mut vertices: Option<Vec<Vertex>> = None;
    let mut polygons: Vec<Vec<i64>> = Vec::new();
    let mut strips: Vec<Vec<i64>> = Vec::new();
    let mut skipped = Vec::new();
    for (name, element) in &header.elements {
        let read_error =
            |e: ply_rs_bw::parser::ParseError| invalid(format!("element `{name}`: {e}"));
        match name.as_str() {
            "vertex" => {
                let read =
                    Parser::<Vertex>::new().read_payload_for_element(&mut reader, element, &header);
                vertices = Some(read.map_err(read_error)?);
            }
            "face" | "tristrips" => {
                expect_index_list(element, path)?;
                let read = Parser::<IndexList>::new()
                    .read_payload_for_element(&mut reader, element, &header)
                    .map_err(read_error)?;
                let lists = read.into_iter().map(|l| l.0);
                if name == "face" {
                    polygons.extend(lists);
                } else {
                    strips.extend(lists);
                }
            }
            _ => {
                Parser::<Ignored>::new()
                    .read_payload_for_element(&mut reader, element, &header)
                    .map_err(read_error)?;
                skipped.push(name.clone());
            }
        }
    }
    if !skipped.is_empty() {
        notes.push(format!(
            "note: {}: ignored elements the hardware has no use for: {}",
            path.display(),
            skipped.join(", ")
        ));
    }
    let vertices = vertices.ok_or_else(|| invalid("the PLY has no `vertex` element".into()))?;
    build_model(vertices, &polygons, &strips, path)
}

/// Checks that a `face` or `tristrips` element has its list of vertex indices.
fn expect_index_list(element: &ElementDef, path: &Path) -> Result<(), SceneError> {
    let has = INDEX_NAMES
        .iter()
        .any(|n| element.properties.contains_key(*n));
    if has {
        return Ok(());
    }
    Err(SceneError::Unsupported {
        file: path.to_path_buf(),
        message: format!(
            "element `{}` has no `vertex_indices` (or `vertex_index`) list",
            element.name
        ),
    })
}

/// The positions, normals and texture coordinates as the model's, and the faces' fans and
/// the strips' triangles.
fn build_model(
    vertices: Vec<Vertex>,
    polygons: &[Vec<i64>],
    strips: &[Vec<i64>],
    path: &Path,
) -> Result<ObjModel, SceneError> {
    let count = vertices.len();
    if count >= NO_INDEX as usize {
        return Err(SceneError::Unsupported {
            file: path.to_path_buf(),
            message: format!("{count} vertices: too many to index"),
        });
    }
    let with_normals = vertices.iter().any(|v| v.normal.is_some());
    let with_uv = vertices.iter().any(|v| v.uv.is_some());
    let corner = |index: u32| Corner {
        position: index,
        texcoord: if with_uv { index } else { NO_INDEX },
        normal: if with_normals { index } else { NO_INDEX },
    };
    let mut model = ObjModel {
        positions: vertices.iter().map(|v| v.position).collect(),
        texcoords: if with_uv {
            vertices.iter().map(|v| v.uv.unwrap_or([0.0; 2])).collect()
        } else {
            Vec::new()
        },
        normals: if with_normals {
            vertices
                .iter()
                .map(|v| v.normal.unwrap_or([0.0; 3]))
                .collect()
        } else {
            Vec::new()
        },
        triangles: Vec::new(),
    };
    let index = |element: &str, number: usize, i: i64| -> Result<u32, SceneError> {
        if (0..count as i64).contains(&i) {
            return Ok(i as u32);
        }
        Err(SceneError::Unsupported {
            file: path.to_path_buf(),
            message: format!(
                "{element} {number}: vertex index {i} does not exist: {count} vertices"
            ),
        })
    };
    let mut push = |a: u32, b: u32, c: u32| {
        model.triangles.push(ObjTriangle {
            corners: [a, b, c].map(corner),
            material: NO_INDEX,
        })
    };
    for (number, polygon) in polygons.iter().enumerate() {
        let corners: Vec<u32> = (polygon.iter())
            .map(|&i| index("face", number, i))
            .collect::<Result<_, _>>()?;
        for pair in corners.get(1..).unwrap_or_default().windows(2) {
            push(corners[0], pair[0], pair[1]);
        }
    }
    for (number, strip) in strips.iter().enumerate() {
        for run in strip.split(|&i| i < 0) {
            let run: Vec<u32> = (run.iter())
                .map(|&i| index("strip", number, i))
                .collect::<Result<_, _>>()?;
            for (k, w) in run.windows(3).enumerate() {
                // Every other triangle of a strip turns the other way round.
                match k % 2 {
                    0 => push(w[0], w[1], w[2]),
                    _ => push(w[1], w[0], w[2]),
                }
            }
        }
    }
    Ok(model)
}

/// The list properties that hold a face's or strip's vertex indices.
const INDEX_NAMES: [&str; 2] = ["vertex_indices", "vertex_index"];

/// One `vertex`: what the loader uses of it.
#[derive(Clone, Copy, Debug, Default)]
struct Vertex {
    position: [f64; 3],
    normal: Option<[f64; 3]>,
    uv: Option<[f64; 2]>,
}

impl Vertex {
    fn set(&mut self, name: &str, value: f64) -> PropertyAccessResult {
        let value = if value.is_finite() { value } else { 0.0 };
        match name {
            "x" => self.position[0] = value,
            "y" => self.position[1] = value,
            "z" => self.position[2] = value,
            "nx" | "ny" | "nz" => {
                let axis = (name.as_bytes()[1] - b'x') as usize;
                self.normal.get_or_insert([0.0; 3])[axis] = value;
            }
            "u" | "s" | "texture_u" | "texture_s" => self.uv.get_or_insert([0.0; 2])[0] = value,
            "v" | "t" | "texture_v" | "texture_t" => self.uv.get_or_insert([0.0; 2])[1] = value,
            _ => return PropertyAccessResult::Ignored,
        }
        PropertyAccessResult::Set
    }
}

impl PropertyAccess for Vertex {
    fn new() -> Self {
        Vertex::default()
    }
    fn set_char(&mut self, name: &str, value: i8) -> PropertyAccessResult {
        self.set(name, value.into())
    }
    fn set_uchar(&mut self, name: &str, value: u8) -> PropertyAccessResult {
        self.set(name, value.into())
    }
    fn set_short(&mut self, name: &str, value: i16) -> PropertyAccessResult {
        self.set(name, value.into())
    }
    fn set_ushort(&mut self, name: &str, value: u16) -> PropertyAccessResult {
        self.set(name, value.into())
    }
    fn set_int(&mut self, name: &str, value: i32) -> PropertyAccessResult {
        self.set(name, value.into())
    }
    fn set_uint(&mut self, name: &str, value: u32) -> PropertyAccessResult {
        self.set(name, value.into())
    }
    fn set_float(&mut self, name: &str, value: f32) -> PropertyAccessResult {
        self.set(name, value.into())
    }
    fn set_double(&mut self, name: &str, value: f64) -> PropertyAccessResult {
        self.set(name, value)
    }
}

/// A `face`'s or strip's vertex indices, of any integer type.
#[derive(Debug, Default)]
struct IndexList(Vec<i64>);

impl IndexList {
    fn set<T: Into<i64>>(&mut self, name: &str, value: Vec<T>) -> PropertyAccessResult {
        if !INDEX_NAMES.contains(&name) {
            return PropertyAccessResult::Ignored;
        }
        self.0 = value.into_iter().map(Into::into).collect();
        PropertyAccessResult::Set
    }
}

impl PropertyAccess for IndexList {
    fn new() -> Self {
        IndexList::default()
    }
    fn set_list_char(&mut self, name: &str, value: Vec<i8>) -> PropertyAccessResult {
        self.set(name, value)
    }
    fn set_list_uchar(&mut self, name: &str, value: Vec<u8>) -> PropertyAccessResult {
        self.set(name, value)
    }
    fn set_list_short(&mut self, name: &str, value: Vec<i16>) -> PropertyAccessResult {
        self.set(name, value)
    }
    fn set_list_ushort(&mut self, name: &str, value: Vec<u16>) -> PropertyAccessResult {
        self.set(name, value)
    }
    fn set_list_int(&mut self, name: &str, value: Vec<i32>) -> PropertyAccessResult {
        self.set(name, value)
    }
    fn set_list_uint(&mut self, name: &str, value: Vec<u32>) -> PropertyAccessResult {
        self.set(name, value)
    }
}

/// An element the loader reads past.
struct Ignored;

impl PropertyAccess for Ignored {
    fn new() -> Self {
        Ignored
    }
}
