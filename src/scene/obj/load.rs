//! The OBJ and its MTL materials as tobj loads them (triangulated, each mesh with its
//! material), after [`super::parse`] has checked them, in the shape the loader uses: one
//! list of triangles in file order over shared positions and texture coordinates.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::Path;

use super::parse::{self, ValidObj};
use super::Assets;
use crate::scene::generate::Mesh;
use crate::scene::SceneError;

/// One corner of a triangle: indices into the model's positions and texture coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Corner {
    pub position: usize,
    pub texcoord: Option<usize>,
}

/// A triangle of the OBJ and the `usemtl` name in force when it was read.
#[derive(Clone, Debug, PartialEq)]
pub struct ObjTriangle {
    pub corners: [Corner; 3],
    /// Index into [`ValidObj::material_names`]; None without a `usemtl` or when no
    /// library defines the name.
    pub material: Option<usize>,
}

/// The OBJ's triangles in file order.
#[derive(Clone, Debug, Default)]
pub struct ObjModel {
    /// Distinct positions (bit for bit) the faces use.
    pub positions: Vec<[f64; 3]>,
    pub texcoords: Vec<[f64; 2]>,
    pub triangles: Vec<ObjTriangle>,
}

impl ObjModel {
    /// The model [`load`] gives for `mesh`'s OBJ text: bit-equal positions shared, each
    /// corner with its position's texture coordinate (when the mesh has them), no material.
    pub fn from_mesh(mesh: &Mesh) -> ObjModel {
        let mut model = ObjModel {
            texcoords: mesh.texcoords.clone(),
            ..ObjModel::default()
        };
        let mut position_index: HashMap<[u64; 3], usize> = HashMap::new();
        let positions: Vec<usize> = mesh
            .positions
            .iter()
            .map(|&p| {
                *position_index
                    .entry(p.map(f64::to_bits))
                    .or_insert_with(|| {
                        model.positions.push(p);
                        model.positions.len() - 1
                    })
            })
            .collect();
        let textured = !mesh.texcoords.is_empty();
        model.triangles = mesh
            .faces
            .iter()
            .map(|face| ObjTriangle {
                corners: face.map(|i| Corner {
                    position: positions[i],
                    texcoord: textured.then_some(i),
                }),
                material: None,
            })
            .collect();
        model
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

/// Loads checked OBJ text and its MTL libraries (read through `assets`) with tobj; notes
/// missing libraries and undefined materials. `path` names the OBJ in messages.
pub fn load(
    valid: &ValidObj,
    path: &Path,
    assets: &dyn Assets,
    notes: &mut Vec<String>,
) -> Result<Loaded, SceneError> {
    let options = tobj::LoadOptions {
        triangulate: true,
        ignore_points: true,
        ignore_lines: true,
        ..Default::default()
    };
    // tobj asks for the libraries in the order of `valid.libraries`; the callback cannot
    // return our errors, so it keeps them here.
    let library = Cell::new(0);
    let mtl_error = RefCell::new(None);
    let missing_library = Cell::new(false);
    let library_notes = RefCell::new(Vec::new());
    let loaded = tobj::load_obj_buf(&mut valid.text.as_bytes(), &options, |_| {
        let Some((name, line)) = valid.libraries.get(library.get()) else {
            return Err(tobj::LoadError::GenericFailure);
        };
        library.set(library.get() + 1);
        let Some(bytes) = assets.read(name) else {
            missing_library.set(true);
            library_notes.borrow_mut().push(format!(
                "warning: {}:{line}: material library {} not found; its materials show white",
                path.display(),
                assets.display(name)
            ));
            return Err(tobj::LoadError::OpenFileFailed);
        };
        let text = String::from_utf8_lossy(&bytes);
        match parse::validate_mtl(&text, Path::new(&assets.display(name))) {
            Ok(checked) => tobj::load_mtl_buf(&mut checked.as_bytes()),
            Err(error) => {
                mtl_error.borrow_mut().get_or_insert(error);
                Err(tobj::LoadError::MaterialParseError)
            }
        }
    });
    if let Some(error) = mtl_error.into_inner() {
        return Err(error);
    }
    notes.extend(library_notes.into_inner());
    let (meshes, library) = loaded.map_err(|error| SceneError::Unsupported {
        file: path.to_path_buf(),
        message: format!("tobj cannot load the checked OBJ: {error}"),
    })?;
    // tobj reports an error only when no library loaded, and that is noted above.
    let library = library.unwrap_or_default();

    let materials: Vec<Option<Material>> = valid
        .material_names
        .iter()
        .map(|(name, line)| {
            // The last definition wins, as in tobj and most OBJ readers.
            let found = library.iter().rev().find(|m| &m.name == name);
            if found.is_none() && !missing_library.get() {
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
        .collect();
    let name_index: HashMap<&str, usize> = valid
        .material_names
        .iter()
        .enumerate()
        .map(|(index, (name, _))| (name.as_str(), index))
        .collect();

    let mut model = ObjModel::default();
    let mut position_index: HashMap<[u64; 3], usize> = HashMap::new();
    for tobj::Model { mesh, .. } in &meshes {
        let material = mesh
            .material_id
            .and_then(|id| library.get(id))
            .and_then(|m| name_index.get(m.name.as_str()).copied());
        let positions: Vec<usize> = mesh
            .positions
            .chunks_exact(3)
            .map(|p| {
                let p = [p[0], p[1], p[2]];
                *position_index
                    .entry(p.map(f64::to_bits))
                    .or_insert_with(|| {
                        model.positions.push(p);
                        model.positions.len() - 1
                    })
            })
            .collect();
        let texcoord_offset = model.texcoords.len();
        model
            .texcoords
            .extend(mesh.texcoords.chunks_exact(2).map(|t| [t[0], t[1]]));
        for (index, triangle) in mesh.indices.chunks_exact(3).enumerate() {
            let has_texcoord = valid
                .has_texcoord
                .get(model.triangles.len())
                .copied()
                .unwrap_or_default();
            let corner = |c: usize| Corner {
                position: positions[triangle[c] as usize],
                texcoord: mesh
                    .texcoord_indices
                    .get(3 * index + c)
                    .filter(|_| has_texcoord[c])
                    .map(|&t| texcoord_offset + t as usize),
            };
            model.triangles.push(ObjTriangle {
                corners: [corner(0), corner(1), corner(2)],
                material,
            });
        }
    }
    Ok(Loaded { model, materials })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::obj::MemoryAssets;

    fn load_text(text: &str, assets: &dyn Assets) -> (ValidObj, Loaded, Vec<String>) {
        let valid = parse::validate_obj(text, Path::new("t.obj")).unwrap();
        let mut notes = Vec::new();
        let loaded = load(&valid, Path::new("t.obj"), assets, &mut notes).unwrap();
        (valid, loaded, notes)
    }

    fn corner_positions(model: &ObjModel) -> Vec<[[f64; 3]; 3]> {
        let triangles = model.triangles.iter();
        triangles
            .map(|t| t.corners.map(|c| model.positions[c.position]))
            .collect()
    }

    /// tobj's triangles are the validator's fans, in file order, with the materials of
    /// their `usemtl` and texture coordinates only where the face gives them.
    #[test]
    fn tobj_and_the_validator_agree_on_polygons_and_negative_indices() {
        const MTL: &[u8] = b"newmtl a\nmap_Kd a.png\nnewmtl b\n";
        let obj = "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nvt 1 1\n\
                   usemtl b\nf -4/1 -3/2 -2 -1/1\nusemtl a\nf 1 2 3\nusemtl b\nf 4 -1 3\n";
        let (valid, loaded, notes) = load_text(obj, &MemoryAssets(&[("m.mtl", MTL)]));
        assert_eq!(notes, Vec::<String>::new());
        let model = &loaded.model;
        assert_eq!(valid.has_texcoord.len(), model.triangles.len());
        let (o, x, xy, y) = ([0.0; 3], [1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0]);
        assert_eq!(
            corner_positions(model),
            vec![[o, x, xy], [o, xy, y], [o, x, xy], [y, y, xy]]
        );
        let texcoords: Vec<_> = model
            .triangles
            .iter()
            .map(|t| t.corners.map(|c| c.texcoord.map(|i| model.texcoords[i])))
            .collect();
        assert_eq!(texcoords[0], [Some([0.0, 0.0]), Some([1.0, 1.0]), None]);
        assert_eq!(texcoords[1], [Some([0.0, 0.0]), None, Some([0.0, 0.0])]);
        assert_eq!(texcoords[2], [None; 3]);
        for (triangle, has_texcoord) in model.triangles.iter().zip(&valid.has_texcoord) {
            assert_eq!(
                triangle.corners.map(|c| c.texcoord.is_some()),
                *has_texcoord
            );
        }
        // material_names: b then a.
        let materials: Vec<_> = model.triangles.iter().map(|t| t.material).collect();
        assert_eq!(materials, vec![Some(0), Some(0), Some(1), Some(0)]);
        let b = loaded.materials[0].as_ref().unwrap();
        let a = loaded.materials[1].as_ref().unwrap();
        assert_eq!(
            (b.name.as_str(), b.diffuse, &b.texture),
            ("b", DEFAULT_DIFFUSE, &None)
        );
        assert_eq!(a.texture.as_deref(), Some("a.png"));
    }

    /// The default scene's triangles through tobj are its faces' fans, corner by corner.
    #[test]
    fn tobj_and_the_validator_agree_on_the_default_scene() {
        let obj = include_str!("../../../scenes/default.obj");
        let (valid, loaded, _) = load_text(obj, &MemoryAssets(&[]));
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
        assert_eq!(valid.has_texcoord.len(), 142);
        assert_eq!(corner_positions(&loaded.model), expected);
    }
}
