//! PLY scenes: ASCII and both binary byte orders, faces and triangle strips, normals; the
//! same mesh as PLY and as OBJ gives the same scene and image; bad files get clear errors.

use std::path::Path;

use theia::emu::machine::{render, RenderOptions};
use theia::io::scene::generate::{displaced_icosphere, Mesh};
use theia::io::scene::obj::{load_obj_text, MemoryAssets, ObjOptions, ObjScene};
use theia::io::scene::ply::load_ply_from;

fn options() -> ObjOptions {
    ObjOptions {
        width: 64,
        height: 64,
        ..ObjOptions::default()
    }
}

/// The mesh's positions as f32 (PLY's `float`).
fn f32_positions(mesh: &Mesh) -> Vec<[f32; 3]> {
    mesh.positions.iter().map(|p| p.map(|c| c as f32)).collect()
}

/// PLY bytes of the mesh: `format` is ascii, binary_little_endian or binary_big_endian;
/// with `normals`, each vertex's direction from the centre as nx, ny, nz.
fn ply(mesh: &Mesh, format: &str, normals: bool) -> Vec<u8> {
    let positions = f32_positions(mesh);
    let mut out = format!(
        "ply\nformat {format} 1.0\ncomment made by theia's tests\nelement vertex {}\nproperty float x\nproperty float y\nproperty float z\n",
        positions.len()
    );
    if normals {
        out += "property float nx\nproperty float ny\nproperty float nz\n";
    }
    out += &format!(
        "element face {}\nproperty list uchar int vertex_indices\nelement camera 1\nproperty float view_px\nend_header\n",
        mesh.faces.len()
    );
    let mut bytes = out.into_bytes();
    let normal = |p: [f32; 3]| {
        let l = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]).sqrt();
        p.map(|c| c / l)
    };
    let floats = |values: &[f32], bytes: &mut Vec<u8>| {
        for v in values {
            match format {
                "ascii" => bytes.extend(format!("{v} ").bytes()),
                "binary_little_endian" => bytes.extend(v.to_le_bytes()),
                _ => bytes.extend(v.to_be_bytes()),
            }
        }
    };
    for p in &positions {
        floats(p, &mut bytes);
        if normals {
            floats(&normal(*p), &mut bytes);
        }
        if format == "ascii" {
            bytes.push(b'\n');
        }
    }
    for face in &mesh.faces {
        let indices = face.map(|i| i as i32);
        match format {
            "ascii" => {
                bytes.extend(format!("3 {} {} {}\n", indices[0], indices[1], indices[2]).bytes())
            }
            "binary_little_endian" => {
                bytes.push(3);
                indices.iter().for_each(|i| bytes.extend(i.to_le_bytes()));
            }
            _ => {
                bytes.push(3);
                indices.iter().for_each(|i| bytes.extend(i.to_be_bytes()));
            }
        }
    }
    floats(&[1.5], &mut bytes);
    bytes
}

/// The same mesh as OBJ text, each coordinate the exact value of its f32.
fn obj(mesh: &Mesh) -> String {
    let mut text = String::new();
    for p in f32_positions(mesh) {
        text += &format!("v {} {} {}\n", p[0] as f64, p[1] as f64, p[2] as f64);
    }
    for f in &mesh.faces {
        text += &format!("f {} {} {}\n", f[0] + 1, f[1] + 1, f[2] + 1);
    }
    text
}

fn load(bytes: &[u8]) -> Result<ObjScene, String> {
    load_ply_from(bytes, Path::new("m.ply"), &options()).map_err(|e| e.to_string())
}

#[test]
fn a_ply_in_every_encoding_gives_the_scene_and_image_of_the_same_obj() {
    let mesh = displaced_icosphere(2, 0.1);
    let from_obj = load_obj_text(
        &obj(&mesh),
        Path::new("m.ply"),
        &MemoryAssets(&[]),
        &options(),
    )
    .unwrap();
    let image = |scene: &ObjScene| {
        render(&scene.scene, &RenderOptions::default())
            .unwrap()
            .frame
    };
    let expected = image(&from_obj);
    for format in ["ascii", "binary_little_endian", "binary_big_endian"] {
        let loaded = load(&ply(&mesh, format, false)).unwrap();
        assert_eq!(loaded.scene.triangles, from_obj.scene.triangles, "{format}");
        assert_eq!(loaded.scene.config, from_obj.scene.config, "{format}");
        assert_eq!(loaded.scale, from_obj.scale, "{format}");
        assert_eq!(
            loaded.notes,
            vec!["note: m.ply: ignored elements the hardware has no use for: camera".to_string()],
            "{format}"
        );
        assert_eq!(image(&loaded), expected, "{format}");
    }
}

/// Vertex normals make the triangles smooth (each corner's UV.z the address of its normal in
/// texture memory), as `vn` does in an OBJ.
#[test]
fn ply_normals_shade_smooth() {
    let mesh = displaced_icosphere(1, 0.0);
    let loaded = load(&ply(&mesh, "binary_little_endian", true)).unwrap();
    let flat = load(&ply(&mesh, "binary_little_endian", false)).unwrap();
    assert!(loaded
        .scene
        .triangles
        .iter()
        .all(|t| t[1][2] != 0 && t[3][2] != 0 && t[5][2] != 0));
    assert!(flat.scene.triangles.iter().all(|t| t[1][2] == 0));
    assert_eq!(
        loaded.scene.texture.len(),
        flat.scene.texture.len() + 3 * mesh.positions.len()
    );
}

/// A strip (with a -1 restart) is the triangles its faces would be, every other one turned.
#[test]
fn triangle_strips_render_as_their_faces() {
    let header = "ply\nformat ascii 1.0\nelement vertex 6\nproperty float x\nproperty float y\nproperty float z\n";
    let vertices = "0 0 0\n1 0 0\n0 1 0\n1 1 0\n0 2 0\n1 2 0\n";
    let strips = format!(
        "{header}element tristrips 1\nproperty list int int vertex_indices\nend_header\n{vertices}7 0 1 2 3 -1 2 3\n"
    );
    let faces = format!(
        "{header}element face 3\nproperty list uchar uint vertex_index\nend_header\n{vertices}3 0 1 2\n3 2 1 3\n3 2 3 0\n"
    );
    // The restart leaves [2, 3]: no triangle. So the strip is (0 1 2) and (2 1 3).
    let faces_two = faces
        .replace("element face 3", "element face 2")
        .replace("3 2 3 0\n", "");
    let (a, b) = (
        load(strips.as_bytes()).unwrap(),
        load(faces_two.as_bytes()).unwrap(),
    );
    assert_eq!(a.scene.triangles, b.scene.triangles);
    assert_eq!(load(faces.as_bytes()).unwrap().scene.triangles.len(), 3);
}

#[test]
fn bad_ply_files_get_errors_naming_the_file_and_what_is_wrong() {
    let header = "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\nproperty float z\n";
    let cases = [
        ("not a ply\n".to_string(), "m.ply: not a PLY header: "),
        (
            format!("{header}element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 7\n"),
            "m.ply: face 0: vertex index 7 does not exist: 3 vertices",
        ),
        (
            format!("{header}element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0 0\n0 1 0\n3 0 1 -2\n"),
            "m.ply: face 0: vertex index -2 does not exist: 3 vertices",
        ),
        (
            format!("{header}element face 1\nproperty int material\nend_header\n0 0 0\n1 0 0\n0 1 0\n5\n"),
            "m.ply: element `face` has no `vertex_indices` (or `vertex_index`) list",
        ),
        (
            format!("{header}end_header\n0 0 0\n1 0 0\n0 1 0\n"),
            "m.ply: the model has no triangles",
        ),
        (
            "ply\nformat ascii 1.0\nelement face 0\nproperty list uchar int vertex_indices\nend_header\n".to_string(),
            "m.ply: the PLY has no `vertex` element",
        ),
        (
            format!("{header}element face 1\nproperty list uchar int vertex_indices\nend_header\n0 0 0\n1 0\n"),
            "m.ply: element `vertex`: ",
        ),
    ];
    for (text, expected) in cases {
        let error = load(text.as_bytes()).unwrap_err();
        assert!(
            error.starts_with(expected),
            "{error:?} should start with {expected:?}"
        );
    }
    // A truncated binary file.
    let mesh = displaced_icosphere(1, 0.0);
    let bytes = ply(&mesh, "binary_little_endian", false);
    let error = load(&bytes[..bytes.len() / 2]).unwrap_err();
    assert!(error.starts_with("m.ply: element `"), "{error}");
}
