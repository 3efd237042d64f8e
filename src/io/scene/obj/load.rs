//! The checked OBJ ([`super::parse`]) and its MTL materials in the shape the loader uses:
//! one list of triangles in file order over the OBJ's positions and texture coordinates,
//! each triangle with its material. The MTL libraries are read with tobj, after
//! [`parse::validate_mtl`] has checked them.

use std::collections::HashMap;
use std::path::Path;

use super::parse::{self, ValidObj};
use super::Assets;
use crate::io::scene::generate::Mesh;
use crate::io::scene::SceneError;

/// No index: a corner without a texture coordinate or normal, a triangle without a
/// material. Indices are u32 so that a triangle takes 40 bytes (a million-triangle scan
/// loads in little memory); the parser refuses more `v`, `vt` or `vn` lines than that
/// indexes.
pub const NO_INDEX: u32 = u32::MAX;

/// One corner of a triangle: indices into the model's positions, texture coordinates and
/// normals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Corner {
    pub position: u32,
    /// [`NO_INDEX`] when the face gives none.
    pub texcoord: u32,
    /// [`NO_INDEX`] when the face gives none (or one that does not exist).
    pub normal: u32,
}

impl Corner {
    pub fn position(self) -> usize {
        self.position as usize
    }

    pub fn texcoord(self) -> Option<usize> {
        (self.texcoord != NO_INDEX).then_some(self.texcoord as usize)
    }

    pub fn normal(self) -> Option<usize> {
        (self.normal != NO_INDEX).then_some(self.normal as usize)
    }
}

/// A triangle of the OBJ and the `usemtl` name in force when it was read.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObjTriangle {
    pub corners: [Corner; 3],
    /// Index into the file's `usemtl` names; [`NO_INDEX`] without a `usemtl` or (once the
    /// loader has read the libraries) when no library defines the name.
    pub material: u32,
}

impl ObjTriangle {
    pub fn material(&self) -> Option<usize> {
        (self.material != NO_INDEX).then_some(self.material as usize)
    }
}

/// The OBJ's triangles in file order.
#[derive(Clone, Debug, Default)]
pub struct ObjModel {
    /// Every `v`, in file order (the triangles use some of them).
    pub positions: Vec<[f64; 3]>,
    pub texcoords: Vec<[f64; 2]>,
    /// Every `vn` (all zero where its numbers do not read: such a normal shades nothing).
    pub normals: Vec<[f64; 3]>,
    pub triangles: Vec<ObjTriangle>,
}

impl ObjModel {
    /// The model the OBJ loader gives for `mesh`'s OBJ text: each corner with its position's
    /// texture coordinate (when the mesh has them), no material. None when the mesh has too
    /// many positions for u32 indices.
    pub fn from_mesh(mesh: &Mesh) -> Option<ObjModel> {
        if mesh.positions.len() >= NO_INDEX as usize {
            return None;
        }
        let textured = !mesh.texcoords.is_empty();
        Some(ObjModel {
            positions: mesh.positions.clone(),
            texcoords: mesh.texcoords.clone(),
            normals: Vec::new(),
            triangles: mesh
                .faces
                .iter()
                .map(|face| ObjTriangle {
                    corners: face.map(|i| Corner {
                        position: i as u32,
                        texcoord: if textured { i as u32 } else { NO_INDEX },
                        normal: NO_INDEX,
                    }),
                    material: NO_INDEX,
                })
                .collect(),
        })
    }
}

/// A material of an MTL library (only what the hardware can show).
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    pub name: String,
    pub diffuse: [f64; 3],
    pub texture: Option<String>,
}

/// The `Kd` a material has when its MTL gives none (the MTL specification's default).
pub const DEFAULT_DIFFUSE: [f64; 3] = [0.8, 0.8, 0.8];

/// What the loader builds a scene from.
pub struct Loaded {
    pub model: ObjModel,
    /// The material of each of [`ValidObj::material_names`] (None: not defined).
    pub materials: Vec<Option<Material>>,
}

/// Reads the MTL libraries of a checked OBJ (through `assets`) and gives each triangle its
/// material; notes missing libraries and undefined materials. `path` names the OBJ in
/// messages.
pub fn load(
    valid: ValidObj,
    path: &Path,
    assets: &dyn Assets,
    notes: &mut Vec<String>,
) -> Result<Loaded, SceneError> {
    let ValidObj {
        mut model,
        libraries,
        material_names,
        ..
    } = valid;
    let mut libraries = read_libraries(&libraries, path, assets)?;
    notes.append(&mut libraries.notes);
    let materials = find_materials(&material_names, &libraries, path, notes);
    // A name no library defines is no material at all.
    if materials.iter().any(Option::is_none) {
        for triangle in &mut model.triangles {
            if triangle.material().is_some_and(|m| materials[m].is_none()) {
                triangle.material = NO_INDEX;
            }
        }
    }
    Ok(Loaded { model, materials })
}

/// The materials of an OBJ's MTL libraries, in the order they count.
struct Libraries {
    materials: Vec<tobj::Material>,
    /// A library was not found (then undefined materials get no note of their own).
    missing: bool,
    /// A warning for each library not found.
    notes: Vec<String>,
}

/// Reads the `mtllib` libraries (name and line in the OBJ at `path`). Every library is
/// read, in order, even after one fails: the first syntax error wins, and a library that
/// is missing or does not load leaves its materials out.
fn read_libraries(
    libraries: &[(String, usize)],
    path: &Path,
    assets: &dyn Assets,
) -> Result<Libraries, SceneError> {
    let mut mtl_error = None;
    let mut missing = false;
    let mut notes = Vec::new();
    // Each file is read once, however often and however spelled it is named; its
    // materials count from its last mention (a library named again after another one
    // overrides that one's definitions, as if read again).
    let mut read_already: HashMap<String, Vec<tobj::Material>> = HashMap::new();
    let mut mentions: Vec<String> = Vec::new();
    for (name, line) in libraries {
        if let Some(why) = assets.refusal(name) {
            return Err(SceneError::Invalid {
                file: path.to_path_buf(),
                line: *line,
                message: format!("material library {}: {why}", assets.display(name)),
            });
        }
        let key = assets.file_key(name);
        if read_already.contains_key(&key) {
            mentions.push(key);
            continue;
        }
        let Some(bytes) = assets.read(name) else {
            missing = true;
            notes.push(format!(
                "warning: {}:{line}: material library {} not found; its materials show white",
                path.display(),
                assets.display(name)
            ));
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut materials = Vec::new();
        match parse::validate_mtl(&text, Path::new(&assets.display(name))) {
            Ok(checked) => {
                if let Ok((loaded, _)) = tobj::load_mtl_buf(&mut checked.as_bytes()) {
                    materials = loaded;
                }
            }
            Err(error) => {
                mtl_error.get_or_insert(error);
            }
        }
        read_already.insert(key.clone(), materials);
        mentions.push(key);
    }
    let last_mention: HashMap<&str, usize> = (mentions.iter().enumerate())
        .map(|(at, key)| (key.as_str(), at))
        .collect();
    let materials: Vec<tobj::Material> = (mentions.iter().enumerate())
        .filter(|(at, key)| last_mention[key.as_str()] == *at)
        .flat_map(|(_, key)| read_already.remove(key).unwrap_or_default())
        .collect();
    if let Some(error) = mtl_error {
        return Err(error);
    }
    Ok(Libraries {
        materials,
        missing,
        notes,
    })
}

/// The material each `usemtl` name (and its line) stands for, noting names no library
/// defines. The last definition wins, as in tobj and most OBJ readers.
fn find_materials(
    material_names: &[(String, usize)],
    libraries: &Libraries,
    path: &Path,
    notes: &mut Vec<String>,
) -> Vec<Option<Material>> {
    let by_name: HashMap<&str, &tobj::Material> = (libraries.materials.iter())
        .map(|m| (m.name.as_str(), m))
        .collect();
    material_names
        .iter()
        .map(|(name, line)| {
            let found = by_name.get(name.as_str()).copied();
            if found.is_none() && !libraries.missing {
                notes.push(format!(
                    "warning: {}:{line}: material `{name}` is not defined in any material library; it shows white",
                    path.display()
                ));
            }
            found.map(|m| Material {
                name: m.name.clone(),
                diffuse: m.diffuse.unwrap_or(DEFAULT_DIFFUSE),
                texture: m.diffuse_texture.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::scene::obj::MemoryAssets;

    fn load_text(text: &str, assets: &dyn Assets) -> (Loaded, Vec<String>) {
        let valid = parse::validate_obj(text, Path::new("t.obj")).unwrap();
        let mut notes = Vec::new();
        let loaded = load(valid, Path::new("t.obj"), assets, &mut notes).unwrap();
        (loaded, notes)
    }

    fn corner_positions(model: &ObjModel) -> Vec<[[f64; 3]; 3]> {
        let triangles = model.triangles.iter();
        triangles
            .map(|t| t.corners.map(|c| model.positions[c.position()]))
            .collect()
    }

    /// The triangles are the faces' fans, in file order, with the materials of their
    /// `usemtl` and texture coordinates only where the face gives them.
    #[test]
    fn polygons_fan_and_negative_indices_count_back() {
        const MTL: &[u8] = b"newmtl a\nmap_Kd a.png\nnewmtl b\n";
        let obj = "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 1\n\
                   usemtl b\nf -4/1 -3/2 -2 -1/1\nusemtl a\nf 1 2 3\nusemtl b\nf 4 -1 3\n";
        let (loaded, notes) = load_text(obj, &MemoryAssets(&[("m.mtl", MTL)]));
        assert_eq!(notes, Vec::<String>::new());
        let model = &loaded.model;
        let (o, x, xy, y) = ([0.0; 3], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]);
        assert_eq!(
            corner_positions(model),
            vec![[o, x, xy], [o, xy, y], [o, x, xy], [y, y, xy]]
        );
        let texcoords: Vec<_> = model
            .triangles
            .iter()
            .map(|t| t.corners.map(|c| c.texcoord().map(|i| model.texcoords[i])))
            .collect();
        assert_eq!(texcoords[0], [Some([0.0, 0.0]), Some([1.0, 1.0]), None]);
        assert_eq!(texcoords[1], [Some([0.0, 0.0]), None, Some([0.0, 0.0])]);
        assert_eq!(texcoords[2], [None; 3]);
        assert_eq!(texcoords[3], [None; 3]);
        // material_names: b then a.
        let materials: Vec<_> = model.triangles.iter().map(|t| t.material()).collect();
        assert_eq!(materials, vec![Some(0), Some(0), Some(1), Some(0)]);
        let b = loaded.materials[0].as_ref().unwrap();
        let a = loaded.materials[1].as_ref().unwrap();
        assert_eq!(
            (b.name.as_str(), b.diffuse, &b.texture),
            ("b", DEFAULT_DIFFUSE, &None)
        );
        assert_eq!(a.texture.as_deref(), Some("a.png"));
    }

    /// The default scene's triangles are its faces' fans, corner by corner.
    #[test]
    fn the_default_scene_s_triangles_are_its_faces_fans() {
        let obj = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/default.obj"));
        let (loaded, _) = load_text(obj, &MemoryAssets(&[]));
        // The fans, read independently (the scene's faces use absolute indices).
        let lines = obj.lines().map(str::split_whitespace);
        let mut positions = Vec::new();
        let mut expected = Vec::new();
        for mut fields in lines {
            match fields.next() {
                Some("v") => {
                    positions.push([0; 3].map(|_| fields.next().unwrap().parse().unwrap()))
                }
                Some("f") => {
                    let corners: Vec<[f64; 3]> = fields
                        .map(|f| {
                            positions[f.split('/').next().unwrap().parse::<usize>().unwrap() - 1]
                        })
                        .collect();
                    for pair in corners[1..].windows(2) {
                        expected.push([corners[0], pair[0], pair[1]]);
                    }
                }
                _ => {}
            }
        }
        assert_eq!(expected.len(), 142);
        assert_eq!(corner_positions(&loaded.model), expected);
    }
}
