//! Validation of the OBJ and MTL subset the loader reads, by hand, so that every error
//! names the file, line and column and says what was expected.
//!
//! Why both this and tobj: the project loads OBJ and MTL with tobj (triangulation, material
//! assignment, `map_Kd`), but tobj reports errors without a line or column, and it panics
//! on some malformed input (a relative `vt`/`vn` index before the first `vt`/`vn`
//! overflows; a `Kd` with fewer than three numbers unwraps). So every statement tobj will
//! read is checked here first, and tobj gets the checked statements in a form it reads as
//! this loader means them ([`ValidObj::text`], [`validate_mtl`]).
//!
//! OBJ: `v`, `vt`, `vn` (counted only), `f` (any polygon, fan-triangulated; `v`, `v/vt`,
//! `v//vn`, `v/vt/vn`, negative indices count back from the last vertex; the renderer never
//! uses normals, so a `vn` index that does not exist is a warning, and tobj never sees one),
//! `usemtl`, `mtllib`. `o`, `g`, `s`, lines and points are ignored; other statements are
//! listed once in the notes. MTL: `newmtl`, `Kd`, `map_Kd` (its options are skipped);
//! everything else (lighting, other maps) means nothing to the hardware and is ignored.

use std::path::Path;

use crate::scene::SceneError;

/// A checked OBJ: the text for tobj and what the loader needs that tobj does not keep.
#[derive(Clone, Debug, Default)]
pub struct ValidObj {
    /// The statements tobj reads, comments and ignored statements removed: every `mtllib`
    /// first, one file each with `/` for `\` (tobj resolves `usemtl` against the
    /// libraries read so far and takes the rest of the line as one name); `v x y z` (tobj
    /// would divide by a `w` or take colours); `vt u v` (v is 0 when absent); `f` with
    /// every corner's `vn` index dropped (normals are not used); `usemtl` as written.
    pub text: String,
    /// `mtllib` file names with the line that named them, in the order tobj reads them.
    pub libraries: Vec<(String, usize)>,
    /// Distinct `usemtl` names with the first line that used them.
    pub material_names: Vec<(String, usize)>,
    /// Statement keywords the loader does not know, each once.
    pub unknown: Vec<String>,
    /// What was wrong but changes nothing the renderer uses (a `vn` index that does not
    /// exist), as `file:line:col: message`: the first case, and how many there were.
    pub ignored: Option<(String, usize)>,
    /// Which corners have a `vt` index, per triangle of the fans in file order (tobj
    /// repeats the previous texture coordinate for a corner without one).
    pub has_texcoord: Vec<[bool; 3]>,
}

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
use std::sync::atomic::{AtomicU64, Ordering};

fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split('#').next().unwrap_or("").split_whitespace()
}

/// The rest of a line after its keyword, for names that may contain spaces.
fn rest_after<'a>(text: &'a str, keyword: &str) -> &'a str {
    let text = text.split('#').next().unwrap_or("").trim();
    text[keyword.len()..].trim()
}

/// Checks OBJ text; `file` names it in errors.
#[cfg(test)]
pub fn validate_obj(text: &str, file: &Path) -> Result<ValidObj, SceneError> {
    validate_obj_counting(text, file, &AtomicU64::new(0))
}

/// [`validate_obj`], adding the bytes of the lines checked to `checked` as it goes.
pub fn validate_obj_counting(
    text: &str,
    file: &Path,
    checked: &AtomicU64,
) -> Result<ValidObj, SceneError> {
    let mut valid = ValidObj::default();
    let mut statements = String::new();
    let (mut positions, mut texcoords, mut normals) = (0usize, 0usize, 0usize);
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut uncounted = 0;
    for (index, text) in text.lines().enumerate() {
        uncounted += text.len() as u64 + 1;
        if uncounted >= 1 << 16 {
            checked.fetch_add(std::mem::take(&mut uncounted), Ordering::Relaxed);
        }
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
                for (token, name) in fields.iter().zip(["x", "y", "z"]) {
                    line.number(token, name)?;
                }
                positions += 1;
                statements.push_str(&format!("v {}\n", fields[..3].join(" ")));
            }
            "vt" => {
                if fields.is_empty() {
                    return Err(line.error(
                        keyword,
                        "expected `vt` followed by two numbers (u v), found none".into(),
                    ));
                }
                line.number(fields[0], "u")?;
                let v = match fields.get(1) {
                    Some(token) => {
                        line.number(token, "v")?;
                        token
                    }
                    None => "0",
                };
                texcoords += 1;
                statements.push_str(&format!("vt {} {v}\n", fields[0]));
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
                let mut has_texcoord = Vec::with_capacity(fields.len());
                let mut corners = Vec::with_capacity(fields.len());
                for token in &fields {
                    let corner = check_corner(&line, token, [positions, texcoords, normals])?;
                    if let Some(warning) = corner.ignored {
                        let (_, count) = valid.ignored.get_or_insert((warning.to_string(), 0));
                        *count += 1;
                    }
                    has_texcoord.push(corner.texcoord.is_some());
                    corners.push(match corner.texcoord {
                        Some(vt) => format!("{}/{vt}", corner.position),
                        None => corner.position.to_string(),
                    });
                }
                // tobj's triangulation: a fan around the first corner, exact for the
                // convex polygons OBJ exporters write.
                for pair in has_texcoord[1..].windows(2) {
                    valid.has_texcoord.push([has_texcoord[0], pair[0], pair[1]]);
                }
                statements.push_str(&format!("f {}\n", corners.join(" ")));
            }
            "usemtl" => {
                let name = rest_after(text, keyword);
                if name.is_empty() {
                    return Err(line.error(
                        keyword,
                        "expected `usemtl` followed by a material name".into(),
                    ));
                }
                if !valid.material_names.iter().any(|(n, _)| n == name) {
                    valid.material_names.push((name.to_string(), line.number));
                }
                statements.push_str(&format!("usemtl {name}\n"));
            }
            "mtllib" => {
                if fields.is_empty() {
                    return Err(
                        line.error(keyword, "expected `mtllib` followed by a file name".into())
                    );
                }
                valid.libraries.extend(
                    fields
                        .iter()
                        .map(|name| (name.replace('\\', "/"), line.number)),
                );
            }
            "o" | "g" | "s" | "l" | "p" | "vp" | "mg" => {}
            other => {
                if !valid.unknown.iter().any(|k| k == other) {
                    valid.unknown.push(other.to_string());
                }
            }
        }
    }
    for (name, _) in &valid.libraries {
        valid.text.push_str(&format!("mtllib {name}\n"));
    }
    valid.text.push_str(&statements);
    Ok(valid)
}

/// One checked `f` field: its `v` and `vt` indices as written, and a `vn` index that did not
/// check out (a warning: normals are not used).
struct Corner<'a> {
    position: &'a str,
    texcoord: Option<&'a str>,
    ignored: Option<SceneError>,
}

/// Checks one `f` field (`v`, `v/vt`, `v//vn` or `v/vt/vn`) against the `v`, `vt` and `vn`
/// counts so far. A bad `v` or `vt` index is an error; a bad `vn` index only a warning.
fn check_corner<'a>(
    line: &Line,
    token: &'a str,
    counts: [usize; 3],
) -> Result<Corner<'a>, SceneError> {
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
    let mut ignored = None;
    for ((part, count), kind) in parts.iter().zip(counts).zip(["v", "vt", "vn"]) {
        if part.is_empty() {
            continue;
        }
        let problem = match part.parse::<i64>() {
            Err(_) if kind == "vn" => Some(format!("expected a normal index, found `{part}`")),
            Err(_) => return Err(shape_error()),
            Ok(index) => {
                let resolved = if index < 0 {
                    count as i64 + index
                } else {
                    index - 1
                };
                (index == 0 || resolved < 0 || resolved >= count as i64).then(|| {
                    format!(
                        "{kind} index {index} does not exist: {count} `{kind}` line{} so far",
                        if count == 1 { "" } else { "s" }
                    )
                })
            }
        };
        match problem {
            Some(message) if kind == "vn" => {
                ignored = Some(line.error(
                    part,
                    format!("{message}; normals are not used, so it is ignored"),
                ))
            }
            Some(message) => return Err(line.error(token, message)),
            None => {}
        }
    }
    Ok(Corner {
        position: parts[0],
        texcoord: parts.get(1).copied().filter(|part| !part.is_empty()),
        ignored,
    })
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

    #[test]
    fn obj_text_for_tobj_has_libraries_first_and_only_what_the_loader_reads() {
        let valid = obj("# c\nv 0 0 0 2 # w\nvt 1\nvn x y z\ng a\nusemtl m n\nf 1/1 -1/1/\t1\nmtllib a\\b.mtl c.mtl\nbevel on\n").unwrap();
        assert_eq!(
            valid.text,
            "mtllib a/b.mtl\nmtllib c.mtl\nv 0 0 0\nvt 1 0\nusemtl m n\nf 1/1 -1/1 1\n"
        );
        assert_eq!(valid.ignored, None);
        assert_eq!(valid.material_names, vec![("m n".to_string(), 6)]);
        assert_eq!(valid.libraries[1], ("c.mtl".to_string(), 8));
        assert_eq!(valid.unknown, vec!["bevel".to_string()]);
        assert_eq!(valid.has_texcoord, vec![[true, true, false]]);
    }

    #[test]
    fn normal_indices_that_do_not_exist_are_warnings_and_dropped() {
        // `f 1/1/1` with no `vn` at all, as some exporters write it.
        let valid =
            obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1/1 2/1/1 3/1/1\nf 1//x 2 3\n").unwrap();
        assert_eq!(
            valid.text,
            "v 0 0 0\nv 1 0 0\nv 0 1 0\nvt 0 0\nf 1/1 2/1 3/1\nf 1 2 3\n"
        );
        assert_eq!(
            valid.ignored,
            Some((
                "t.obj:5:7: vn index 1 does not exist: 0 `vn` lines so far; normals are not used, so it is ignored".to_string(),
                4
            ))
        );
        // Normals that exist are dropped too, silently.
        let valid = obj("v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//1 2//1 3//-1\n").unwrap();
        assert_eq!(valid.text, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
        assert_eq!(valid.ignored, None);
        // What the image depends on stays an error.
        assert_eq!(
            obj("v 0 0 0\nf 1/2/1 1 1\n").unwrap_err(),
            "t.obj:2:3: vt index 2 does not exist: 0 `vt` lines so far"
        );
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
        // The indices that make tobj overflow.
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
