//! The OBJ and MTL subset the loader reads, parsed by hand so that every error names the
//! file, line and column and says what was expected.
//!
//! OBJ: `v`, `vt`, `vn` (counted for index checks), `f` (any polygon, fan-triangulated;
//! `v`, `v/vt`, `v//vn`, `v/vt/vn`, negative indices count back from the last vertex),
//! `usemtl`, `mtllib`. `o`, `g`, `s`, lines and points are ignored; other statements are
//! listed once in the notes. MTL: `newmtl`, `Kd`, `map_Kd` (its options are skipped);
//! everything else (lighting, other maps) means nothing to the hardware and is ignored.

use std::path::{Path, PathBuf};

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
    /// Index into [`ObjModel::material_names`].
    pub material: Option<usize>,
}

/// What the OBJ says, in file order.
#[derive(Clone, Debug, Default)]
pub struct ObjModel {
    pub positions: Vec<[f64; 3]>,
    pub texcoords: Vec<[f64; 2]>,
    pub triangles: Vec<ObjTriangle>,
    /// `mtllib` file names with the line that named them.
    pub libraries: Vec<(String, usize)>,
    /// Distinct `usemtl` names with the first line that used them.
    pub material_names: Vec<(String, usize)>,
    /// Statement keywords the loader does not know, each once.
    pub unknown: Vec<String>,
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

struct Line<'a> {
    file: &'a Path,
    number: usize,
    text: &'a str,
}

impl Line<'_> {
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
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split('#').next().unwrap_or("").split_whitespace()
}

/// The rest of a line after its keyword, for names that may contain spaces.
fn rest_after<'a>(text: &'a str, keyword: &str) -> &'a str {
    let text = text.split('#').next().unwrap_or("").trim();
    text[keyword.len()..].trim()
}

/// Parses OBJ text; `file` names it in errors.
pub fn parse_obj(text: &str, file: &Path) -> Result<ObjModel, SceneError> {
    let mut model = ObjModel::default();
    let mut normals = 0usize;
    let mut material: Option<usize> = None;
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
                let mut p = [0.0; 3];
                for (axis, (value, name)) in p.iter_mut().zip(["x", "y", "z"]).enumerate() {
                    *value = line.number(fields[axis], name)?;
                }
                model.positions.push(p);
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
                model.texcoords.push([u, v]);
            }
            "vn" => normals += 1,
            "f" => {
                if fields.len() < 3 {
                    return Err(line.error(
                        keyword,
                        format!(
                            "expected `f` followed by at least three vertices, found {}",
                            fields.len()
                        ),
                    ));
                }
                let corners = fields
                    .iter()
                    .map(|token| parse_corner(&line, token, &model, normals))
                    .collect::<Result<Vec<_>, _>>()?;
                // A fan around the first corner: exact for the convex polygons OBJ
                // exporters write.
                for pair in corners[1..].windows(2) {
                    model.triangles.push(ObjTriangle {
                        corners: [corners[0], pair[0], pair[1]],
                        material,
                    });
                }
            }
            "usemtl" => {
                let name = rest_after(text, keyword);
                if name.is_empty() {
                    return Err(line.error(
                        keyword,
                        "expected `usemtl` followed by a material name".into(),
                    ));
                }
                material = Some(
                    match model.material_names.iter().position(|(n, _)| n == name) {
                        Some(existing) => existing,
                        None => {
                            model.material_names.push((name.to_string(), line.number));
                            model.material_names.len() - 1
                        }
                    },
                );
            }
            "mtllib" => {
                if fields.is_empty() {
                    return Err(
                        line.error(keyword, "expected `mtllib` followed by a file name".into())
                    );
                }
                model.libraries.extend(
                    fields
                        .iter()
                        .map(|name| (name.replace('\\', "/"), line.number)),
                );
            }
            "o" | "g" | "s" | "l" | "p" | "vp" | "mg" => {}
            other => {
                if !model.unknown.iter().any(|k| k == other) {
                    model.unknown.push(other.to_string());
                }
            }
        }
    }
    Ok(model)
}

/// One `f` field: `v`, `v/vt`, `v//vn` or `v/vt/vn`.
fn parse_corner(
    line: &Line,
    token: &str,
    model: &ObjModel,
    normals: usize,
) -> Result<Corner, SceneError> {
    let parts: Vec<&str> = token.split('/').collect();
    let shape_error = || {
        line.error(
            token,
            format!("expected a face vertex like 1, 1/2, 1//3 or 1/2/3, found `{token}`"),
        )
    };
    if parts.len() > 3 || parts[0].is_empty() || (parts.len() == 2 && parts[1].is_empty()) {
        return Err(shape_error());
    }
    let resolve = |part: &str, count: usize, kind: &str| -> Result<usize, SceneError> {
        let index: i64 = part.parse().map_err(|_| shape_error())?;
        let resolved = if index < 0 {
            count as i64 + index
        } else {
            index - 1
        };
        if index == 0 || resolved < 0 || resolved >= count as i64 {
            return Err(line.error(
                token,
                format!(
                    "{kind} index {index} does not exist: {count} `{kind}` line{} so far",
                    if count == 1 { "" } else { "s" }
                ),
            ));
        }
        Ok(resolved as usize)
    };
    let position = resolve(parts[0], model.positions.len(), "v")?;
    let texcoord = match parts.get(1) {
        Some(part) if !part.is_empty() => Some(resolve(part, model.texcoords.len(), "vt")?),
        _ => None,
    };
    if let Some(part) = parts.get(2) {
        if !part.is_empty() {
            resolve(part, normals, "vn")?;
        }
    }
    Ok(Corner { position, texcoord })
}

/// Parses MTL text; `file` names it in errors.
pub fn parse_mtl(text: &str, file: &Path) -> Result<Vec<Material>, SceneError> {
    let mut materials: Vec<Material> = Vec::new();
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
            materials.push(Material {
                name: name.to_string(),
                diffuse: DEFAULT_DIFFUSE,
                texture: None,
            });
            continue;
        }
        if keyword != "Kd" && keyword != "map_Kd" {
            continue;
        }
        let Some(material) = materials.last_mut() else {
            return Err(line.error(keyword, format!("expected `newmtl` before `{keyword}`")));
        };
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
            let r = line.number(fields[0], "red")?;
            // `Kd r` alone means grey.
            let g = fields.get(1).map_or(Ok(r), |t| line.number(t, "green"))?;
            let b = fields.get(2).map_or(Ok(r), |t| line.number(t, "blue"))?;
            material.diffuse = [r, g, b];
        } else {
            let name = texture_name(&line, rest_after(text, keyword))?;
            material.texture = Some(name);
        }
    }
    Ok(materials)
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

/// The directory files named by `file` are relative to.
pub fn base_directory(file: &Path) -> PathBuf {
    file.parent().map(Path::to_path_buf).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(text: &str) -> Result<ObjModel, String> {
        parse_obj(text, Path::new("t.obj")).map_err(|e| e.to_string())
    }

    #[test]
    fn polygons_become_fans_and_negative_indices_count_back() {
        let model =
            obj("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nvt 0 0\nf -4/1 -3/1 -2/1 -1/1\n").unwrap();
        let positions: Vec<_> = model
            .triangles
            .iter()
            .map(|t| t.corners.map(|c| c.position))
            .collect();
        assert_eq!(positions, vec![[0, 1, 2], [0, 2, 3]]);
        assert_eq!(model.triangles[0].corners[0].texcoord, Some(0));
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
    }

    #[test]
    fn mtl_reads_kd_and_map_kd_past_options() {
        let mtl = "newmtl a\nKd 1 0.5 0\nmap_Kd -s 2 2 1 -clamp on tex dir\\wood 1.png\nnewmtl b\nKd 0.25\n";
        let materials = parse_mtl(mtl, Path::new("t.mtl")).unwrap();
        assert_eq!(materials[0].diffuse, [1.0, 0.5, 0.0]);
        assert_eq!(materials[0].texture.as_deref(), Some("tex dir/wood 1.png"));
        assert_eq!(materials[1].diffuse, [0.25; 3]);
        assert_eq!(
            parse_mtl("Kd 1 1 1\n", Path::new("t.mtl"))
                .unwrap_err()
                .to_string(),
            "t.mtl:1:1: expected `newmtl` before `Kd`"
        );
    }
}
