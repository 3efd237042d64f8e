//! Placing the model where the ROM's fixed-point arithmetic works well (see the module
//! documentation of [`super`] for the reasoning).

use glam::DVec3;
use rayon::prelude::*;

/// Hits at t >= 250.0 are misses: RGU resets LAST_t.x to 0x1F40000 every pixel, which is
/// 250.0 in Q15.17 (the ROM's comment says 500, true only in Q16.16). The fit keeps every
/// vertex within [`FIT_DISTANCE`] of the camera, leaving room for rays that reach the far
/// side of a triangle.
pub const HORIZON: f64 = 250.0;
/// The farthest any vertex may be from the camera after fitting.
pub const FIT_DISTANCE: f64 = 200.0;
/// BIU's CROSS and DOT results keep 31 magnitude bits: values from 16384.0 wrap. The fit
/// keeps the bounds of those results (|T|·|E1|·|E2| and |T|·|E|) under a quarter of that.
pub const CONDITION_LIMIT: f64 = 4096.0;
/// Largest model radius after fitting: beyond it precision no longer improves visibly and
/// the numbers in traces stay readable.
pub const MAX_FIT_RADIUS: f64 = 64.0;
/// Smallest model radius after fitting. Below it triangles' determinants (|E1|·|E2|, in
/// units of 2^-17) keep too few bits for u and v to place texels and edges.
pub const MIN_FIT_RADIUS: f64 = 1.0;
/// Largest magnitude of a Q15.17 value.
pub const Q_LIMIT: f64 = 16384.0;
/// Where the automatic camera looks from, relative to the target: front, right, above.
const AUTO_DIRECTION: DVec3 = DVec3::new(0.55, 0.45, 1.0);
/// How far inside the model's bounds an `inside` camera sits, as a share of the distance
/// from the centre to the face it looks through.
const INSIDE_MARGIN: f64 = 0.02;

/// Where the fitted camera looks from, for models whose +y is up and whose front faces +z
/// (the OBJ convention most models follow).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ViewPreset {
    /// Front, right and above (the direction (0.55, 0.45, 1)).
    #[default]
    Auto,
    /// From +z, looking at the model's front.
    Front,
    /// From -z.
    Back,
    /// From -x: the model's left side (its own right, as it faces +z).
    Left,
    /// From +x.
    Right,
    /// From +y, the model's front (+z) at the bottom of the image.
    Top,
    /// From -y, the model's front (+z) at the top of the image.
    Bottom,
    /// From (1, 1, 1): front, right and above at equal angles.
    Iso,
}

impl ViewPreset {
    pub const NAMES: [&'static str; 7] = ["front", "back", "left", "right", "top", "bottom", "iso"];

    /// The direction from the target towards the camera.
    pub fn direction(self) -> DVec3 {
        match self {
            ViewPreset::Auto => AUTO_DIRECTION,
            ViewPreset::Front => DVec3::Z,
            ViewPreset::Back => DVec3::NEG_Z,
            ViewPreset::Left => DVec3::NEG_X,
            ViewPreset::Right => DVec3::X,
            ViewPreset::Top => DVec3::Y,
            ViewPreset::Bottom => DVec3::NEG_Y,
            ViewPreset::Iso => DVec3::ONE,
        }
        .normalize()
    }
}

impl std::str::FromStr for ViewPreset {
    type Err = String;
    fn from_str(text: &str) -> Result<ViewPreset, String> {
        use ViewPreset::*;
        [Front, Back, Left, Right, Top, Bottom, Iso]
            .into_iter()
            .zip(ViewPreset::NAMES)
            .find(|(_, name)| text.eq_ignore_ascii_case(name))
            .map(|(preset, _)| preset)
            .ok_or_else(|| {
                format!(
                    "unknown view `{text}`: expected one of {}",
                    ViewPreset::NAMES.join(", ")
                )
            })
    }
}

/// Which of the file's axes points up. Views, orbits and the automatic camera are
/// defined for +y up; another up axis is turned there first, by a rotation (no mirror):
/// z up (scans, CAD, Blender) as Blender's OBJ export does, its -y (Blender's front) to
/// +z.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpAxis {
    X,
    #[default]
    Y,
    Z,
    NegX,
    NegY,
    NegZ,
}

impl UpAxis {
    pub const NAMES: [&'static str; 6] = ["x", "y", "z", "-x", "-y", "-z"];

    /// The file's coordinates turned so that this axis is +y.
    pub fn upright(self, p: DVec3) -> DVec3 {
        let DVec3 { x, y, z } = p;
        match self {
            UpAxis::X => DVec3::new(-y, x, z),
            UpAxis::Y => p,
            UpAxis::Z => DVec3::new(x, z, -y),
            UpAxis::NegX => DVec3::new(y, -x, z),
            UpAxis::NegY => DVec3::new(x, -y, -z),
            UpAxis::NegZ => DVec3::new(x, -z, y),
        }
    }
}

impl std::str::FromStr for UpAxis {
    type Err = String;
    fn from_str(text: &str) -> Result<UpAxis, String> {
        use UpAxis::*;
        [X, Y, Z, NegX, NegY, NegZ]
            .into_iter()
            .zip(UpAxis::NAMES)
            .find(|(_, name)| text.eq_ignore_ascii_case(name))
            .map(|(axis, _)| axis)
            .ok_or_else(|| {
                format!(
                    "unknown up axis `{text}`: expected one of {}",
                    UpAxis::NAMES.join(", ")
                )
            })
    }
}

/// How to look at the model (OBJ coordinates).
pub struct Framing {
    pub camera: Option<DVec3>,
    pub look_at: Option<DVec3>,
    /// The file's up axis.
    pub up: UpAxis,
    /// Where the camera looks from when `camera` is not given.
    pub view: ViewPreset,
    /// Put the camera inside the model's bounds, just inside the face the view looks
    /// through, instead of outside them (for rooms).
    pub inside: bool,
    pub fov_degrees: f64,
    pub width: u32,
    pub height: u32,
    /// Turns the camera (given or automatic) about the vertical axis through the look-at
    /// point by this many degrees, counter-clockwise seen from above (a turntable frame).
    pub orbit_degrees: f64,
    /// An inside camera goes to the most open point of the model; when false (the faithful
    /// ROM, which has no t > 0 test) it stays just inside the faces the view looks through,
    /// so that whole faces lie behind it and can be left out.
    pub open_space: bool,
    /// The frame is one of a turntable: the automatic camera keeps its distance for every
    /// turn (the bounding sphere fits), instead of fitting what this one view sees.
    pub turntable: bool,
}

/// The least distance from `target` along `direction` (unit, towards the camera) at which
/// a camera sees every point with a 5% border: each must lie within 1/1.05 of the half
/// angles' tangents across and up. The automatic camera's fit: an elongated scene fills
/// the frame as the view sees it, not as its bounding sphere would. (The border scales the
/// sideways term only: scaling the whole distance pushed a long model's near end, which
/// sets the fit, far inside the frame.)
fn frustum_distance(
    positions: &[DVec3],
    target: DVec3,
    direction: DVec3,
    half_h: f64,
    half_v: f64,
) -> f64 {
    let up_hint = if direction.cross(DVec3::Y).length() < 1e-6 {
        DVec3::NEG_Z
    } else {
        DVec3::Y
    };
    let right = up_hint.cross(direction).normalize();
    let up = direction.cross(right);
    let (tan_h, tan_v) = (half_h.tan(), half_v.tan());
    // Never -0.0 nor NaN (finite coordinates; a -0.0 depth plus the +0.0 or more beside it
    // is +0.0): the largest is one value whatever the order.
    let distances = positions.par_iter().map(|p| {
        let d = *p - target;
        let depth = d.dot(direction);
        depth + 1.05 * (d.dot(right).abs() / tan_h).max(d.dot(up).abs() / tan_v)
    });
    largest(distances)
}

/// The largest of `values` and 0.0, on all threads. Exactly the sequential fold of
/// `f64::max` from 0.0 when no value is -0.0 or NaN: equal values other than zeros have
/// equal bits, so which of them wins does not show.
fn largest(values: impl ParallelIterator<Item = f64>) -> f64 {
    values.reduce(|| 0.0, f64::max)
}

/// With an inside camera and none given: the model's most open point and where it looks,
/// the longest free way or, for a named view, through the face it names towards the far
/// one (None when the camera hugs the bounds instead, see [`Framing::open_space`]).
fn open_camera(
    positions: &[DVec3],
    triangles: &[[usize; 3]],
    framing: &Framing,
) -> Option<(DVec3, DVec3)> {
    if !(framing.inside && framing.open_space && framing.camera.is_none()) {
        return None;
    }
    let (camera, look_at) = super::inside::open_space(positions, triangles.iter().copied())?;
    Some(match framing.view {
        ViewPreset::Auto => (camera, look_at),
        view => (
            camera,
            camera - view.direction() * (look_at - camera).length(),
        ),
    })
}

/// The faces of the bounds an inside camera looks through: those a ray from `target`
/// along `direction` meets first (several at an edge or corner), as (axis, side), and the
/// distance along the ray to them.
fn faces_ahead(
    target: DVec3,
    direction: DVec3,
    (min, max): (DVec3, DVec3),
) -> Vec<(usize, f64, f64)> {
    (0..3)
        .filter(|&axis| direction[axis] != 0.0)
        .map(|axis| {
            let face = if direction[axis] > 0.0 { max } else { min };
            let distance = ((face[axis] - target[axis]) / direction[axis]).max(0.0);
            (axis, direction[axis].signum(), distance)
        })
        .collect()
}

/// How many distinct vertices lie at or behind the camera (view coordinates `local` at
/// scale 1, camera at z = `distance`); bit-equal positions are one vertex (an OBJ may
/// repeat a `v` line).
fn vertices_behind(local: &[DVec3], positions: &[DVec3], distance: f64) -> usize {
    let behind: std::collections::HashSet<[u64; 3]> = (local.par_iter().zip(positions))
        .filter(|(p, _)| p.z >= distance)
        .map(|(_, p)| p.to_array().map(f64::to_bits))
        .collect();
    behind.len()
}

/// How far from `target` the automatic (outside) camera sits: a turntable's every turn
/// must see the whole model (the bounding sphere fits), a still fits what its one view
/// sees.
fn automatic_distance(
    positions: &[DVec3],
    target: DVec3,
    framing: &Framing,
    (half_h, half_v): (f64, f64),
) -> f64 {
    if framing.turntable {
        // Lengths: never -0.0 or NaN.
        let reach = largest(positions.par_iter().map(|p| (*p - target).length()));
        return reach / half_v.min(half_h).sin() * 1.05;
    }
    frustum_distance(positions, target, framing.view.direction(), half_h, half_v)
}

/// The largest scale the bounds of the module documentation allow for view coordinates
/// `local` (scale 1) seen from `camera`, and the farthest vertex's distance from it.
fn largest_scale(
    local: &[DVec3],
    triangles: &[[usize; 3]],
    camera: DVec3,
    radius: f64,
) -> (f64, f64) {
    // Lengths and their products: never -0.0 or NaN (see [`largest`]).
    let farthest = largest(local.par_iter().map(|p| (*p - camera).length()));
    let (cubic, quadratic) = (triangles.par_iter())
        .map(|t| {
            let [v0, v1, v2] = t.map(|i| local[i]);
            let reach = (camera - v0).length();
            let (e1, e2) = ((v1 - v0).length(), (v2 - v0).length());
            (reach * e1 * e2, reach * e1.max(e2))
        })
        .reduce(|| (0.0, 0.0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
    let mut scale = (FIT_DISTANCE / farthest).min(MAX_FIT_RADIUS / radius);
    if cubic > 0.0 {
        scale = scale.min((CONDITION_LIMIT / cubic).cbrt());
    }
    if quadratic > 0.0 {
        scale = scale.min((CONDITION_LIMIT / quadratic).sqrt());
    }
    (scale, farthest)
}

/// The model-to-hardware transform and the hardware's camera and projection window.
#[derive(Debug)]
pub struct View {
    target: DVec3,
    right: DVec3,
    up: DVec3,
    back: DVec3,
    /// OBJ units to hardware units: the largest the bounds allow, whatever the file's
    /// units (so it is seldom a round number).
    pub scale: f64,
    /// The camera in hardware units: (0, 0, distance).
    pub camera: DVec3,
    /// Half a pixel pitch in raw Q15.17 units: the window is (-k·W, k·H) .. (k·W, -k·H), so
    /// CPPU's division is exact and pixels are square.
    pub half_pitch_raw: i64,
    /// Vertices at or behind the camera plane.
    pub behind_camera: usize,
    /// For an inside camera: the axis of each face it looks through, and the side of the
    /// camera (-1 or 1) on which that face lies ([`View::beyond_camera`]).
    inside_faces: Vec<(usize, f64)>,
    /// The camera in OBJ coordinates turned upright.
    obj_camera: DVec3,
    /// Whether an inside camera went to the most open point (then what lies behind the
    /// plane through it, facing the view, is behind it).
    open_camera: bool,
    axis: UpAxis,
}

/// The largest coordinate, and the inverse of the smallest extent, a model may have.
const FIT_RANGE: f64 = 1e150;

/// Why no fit exists.
#[derive(Debug, PartialEq)]
pub enum FitError {
    NoExtent,
    /// Coordinates so large that distances (sums of squares) overflow.
    TooLarge {
        coordinate: f64,
    },
    /// An extent so small that its square underflows.
    TooSmall {
        extent: f64,
    },
    CameraAtTarget,
    TooFar {
        camera_distance: f64,
        radius: f64,
        farthest: f64,
    },
}

/// `offset` turned about the vertical (y) axis by `degrees`, counter-clockwise seen from
/// above: x' = x·cos + z·sin, z' = z·cos − x·sin. A whole number of turns is exact.
fn orbit(offset: DVec3, degrees: f64) -> DVec3 {
    if degrees.rem_euclid(360.0) == 0.0 {
        return offset;
    }
    let (sin, cos) = degrees.to_radians().sin_cos();
    DVec3::new(
        offset.x * cos + offset.z * sin,
        offset.y,
        offset.z * cos - offset.x * sin,
    )
}

impl View {
    /// Frames `positions` (the vertices the triangles use) per `framing`; `triangles`
    /// index `positions`. A position may appear more than once: [`View::behind_camera`]
    /// counts distinct ones.
    pub fn fit(
        positions: &[DVec3],
        triangles: impl Into<Vec<[usize; 3]>>,
        framing: &Framing,
    ) -> Result<View, FitError> {
        let axis = framing.up;
        let upright: Vec<DVec3>;
        let positions = if axis == UpAxis::Y {
            positions
        } else {
            upright = positions.par_iter().map(|p| axis.upright(*p)).collect();
            &upright
        };
        let framing = &Framing {
            camera: framing.camera.map(|p| axis.upright(p)),
            look_at: framing.look_at.map(|p| axis.upright(p)),
            ..*framing
        };
        // In order: where -0.0 and 0.0 both reach a bound, which one it keeps depends on
        // the order (and the fit's target may keep that sign).
        let (min, max) = positions.iter().fold(
            (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
            |(lo, hi), p| (lo.min(*p), hi.max(*p)),
        );
        // Distances square coordinates: past 1e150 they overflow, an extent under 1e-150
        // squares to nothing. Such a model is out of range, not without extent.
        let coordinate = min.abs().max(max.abs()).max_element();
        if coordinate.is_nan() || coordinate > FIT_RANGE {
            return Err(FitError::TooLarge { coordinate });
        }
        let extent = (max - min).max_element();
        if extent > 0.0 && extent < 1.0 / FIT_RANGE {
            return Err(FitError::TooSmall { extent });
        }
        let radius = (max - min).length() / 2.0;
        if !radius.is_finite() || radius <= 0.0 {
            return Err(FitError::NoExtent);
        }
        let triangles: Vec<[usize; 3]> = triangles.into();
        let open = open_camera(positions, &triangles, framing);
        let framing = &Framing {
            camera: framing.camera.or(open.map(|(camera, _)| camera)),
            look_at: framing.look_at.or(open.map(|(_, look_at)| look_at)),
            ..*framing
        };
        let target = framing.look_at.unwrap_or((min + max) / 2.0);
        let half_v = framing.fov_degrees.to_radians() / 2.0;
        let aspect = framing.width as f64 / framing.height as f64;
        let half_h = (half_v.tan() * aspect).atan();
        let direction = framing.view.direction();
        let faces = faces_ahead(target, direction, (min, max));
        let exit = faces.iter().map(|f| f.2).fold(f64::MAX, f64::min);
        let camera = framing.camera.unwrap_or_else(|| {
            if framing.inside {
                return target + direction * exit * (1.0 - INSIDE_MARGIN);
            }
            target + direction * automatic_distance(positions, target, framing, (half_h, half_v))
        });
        let offset = orbit(camera - target, framing.orbit_degrees);
        let distance = offset.length();
        if !distance.is_finite() || distance <= radius * 1e-9 {
            return Err(FitError::CameraAtTarget);
        }
        let back = offset / distance;
        let up_hint = if back.cross(DVec3::Y).length() < 1e-6 {
            DVec3::NEG_Z
        } else {
            DVec3::Y
        };
        let right = up_hint.cross(back).normalize();
        let up = back.cross(right);
        let mut view = View {
            target,
            right,
            up,
            back,
            scale: 1.0,
            camera: DVec3::new(0.0, 0.0, distance),
            half_pitch_raw: 0,
            behind_camera: 0,
            inside_faces: faces
                .iter()
                .filter(|face| framing.inside && open.is_none() && face.2 <= exit * (1.0 + 1e-9))
                .map(|&(axis, side, _)| (axis, side))
                .collect(),
            open_camera: open.is_some(),
            obj_camera: camera,
            axis,
        };

        // Measure at scale 1, then pick the scale.
        let local: Vec<DVec3> = (positions.par_iter())
            .map(|p| view.upright_view(*p))
            .collect();
        view.behind_camera = vertices_behind(&local, positions, distance);
        let (scale, farthest) = largest_scale(&local, &triangles, view.camera, radius);
        // Not rounded (to a power of two, as it was): every bound above grows with the
        // file's units exactly, so a model in centimetres and the same in metres land on
        // the same hardware coordinates, up to the last bit of a double.
        if scale * radius < MIN_FIT_RADIUS {
            let smallest = MIN_FIT_RADIUS / radius;
            return Err(FitError::TooFar {
                camera_distance: distance,
                radius,
                farthest: farthest * smallest,
            });
        }
        view.scale = scale;
        view.camera *= scale;
        let half_height = view.camera.z * half_v.tan();
        view.half_pitch_raw =
            ((half_height * 131072.0 / framing.height as f64).round() as i64).max(1);
        Ok(view)
    }

    /// OBJ coordinates to view coordinates at scale 1 (camera on +z, looking at the origin).
    fn transform(&self, p: DVec3) -> DVec3 {
        self.upright_view(self.axis.upright(p))
    }

    /// [`View::transform`] of coordinates already turned upright.
    fn upright_view(&self, p: DVec3) -> DVec3 {
        let d = p - self.target;
        DVec3::new(d.dot(self.right), d.dot(self.up), d.dot(self.back))
    }

    /// Whether a triangle (OBJ coordinates) lies between an inside camera and a face of
    /// the bounds it looks through (at or beyond the plane through the camera parallel to
    /// that face). A triangle there can only be seen at the edges of a wide view, and with
    /// the faithful ROM, which has no t > 0 test, the wall behind the camera would cover
    /// the view.
    pub fn beyond_camera(&self, corners: [DVec3; 3]) -> bool {
        if self.open_camera {
            let ahead = -self.back;
            return (corners.iter())
                .all(|p| (self.axis.upright(*p) - self.obj_camera).dot(ahead) <= 0.0);
        }
        self.inside_faces.iter().any(|&(axis, side)| {
            (corners.iter())
                .all(|p| (self.axis.upright(*p)[axis] - self.obj_camera[axis]) * side >= 0.0)
        })
    }

    /// A direction (a normal) in OBJ coordinates turned into hardware coordinates.
    pub fn rotate(&self, n: DVec3) -> DVec3 {
        let n = self.axis.upright(n);
        DVec3::new(n.dot(self.right), n.dot(self.up), n.dot(self.back))
    }

    /// OBJ coordinates to hardware coordinates.
    pub fn to_hardware(&self, p: DVec3) -> DVec3 {
        self.transform(p) * self.scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn framing(camera: Option<DVec3>) -> Framing {
        Framing {
            camera,
            look_at: Some(DVec3::ZERO),
            up: UpAxis::Y,
            view: ViewPreset::Auto,
            inside: false,
            fov_degrees: 40.0,
            width: 64,
            height: 64,
            orbit_degrees: 0.0,
            open_space: true,
            turntable: false,
        }
    }

    #[test]
    fn orbits_turn_about_the_vertical_axis() {
        let offset = DVec3::new(0.0, 2.0, 5.0);
        assert_eq!(orbit(offset, 0.0), offset);
        assert_eq!(orbit(offset, 360.0), offset);
        let quarter = orbit(offset, 90.0);
        assert!(
            (quarter - DVec3::new(5.0, 2.0, 0.0)).length() < 1e-12,
            "{quarter}"
        );
        let half = orbit(offset, 180.0);
        assert!(
            (half - DVec3::new(0.0, 2.0, -5.0)).length() < 1e-12,
            "{half}"
        );
    }

    /// A tunnel 480 long and 10 wide seen from its open end fills the frame to its 5%
    /// border (its near end sets the fit), where the bounding sphere (the turntable's fit)
    /// leaves it a dot of 2% of the frame's width.
    #[test]
    fn an_elongated_model_fills_the_frame_its_view_sees() {
        let corners: Vec<DVec3> = (0..8)
            .map(|k| {
                let pick = |bit: usize, a: f64, b: f64| if k >> bit & 1 == 0 { a } else { b };
                DVec3::new(pick(0, -5.0, 5.0), pick(1, -5.0, 5.0), pick(2, -480.0, 0.0))
            })
            .collect();
        let triangles = [[0, 1, 2], [4, 5, 6], [0, 1, 4]];
        let filled = |turntable: bool| {
            let mut framing = framing(None);
            framing.look_at = None;
            framing.view = ViewPreset::Front;
            framing.turntable = turntable;
            let view = View::fit(&corners, triangles, &framing).unwrap();
            let tan = (framing.fov_degrees.to_radians() / 2.0).tan();
            (corners.iter())
                .map(|p| {
                    let h = view.to_hardware(*p);
                    h.x.abs().max(h.y.abs()) / (view.camera.z - h.z) / tan
                })
                .fold(0.0, f64::max)
        };
        let (still, turntable) = (filled(false), filled(true));
        assert!((still - 1.0 / 1.05).abs() < 1e-9, "{still}");
        assert!(turntable < 0.03, "{turntable}");
    }

    /// A model and its copy in other units fit to the same hardware coordinates.
    #[test]
    fn the_fit_does_not_depend_on_the_units() {
        let shape = [
            DVec3::new(-1.25, -1.0, 0.5),
            DVec3::new(3.0, 1.5, -0.25),
            DVec3::new(-1.0, 1.0, 0.0),
            DVec3::new(0.3, 0.7, 2.1),
        ];
        let triangles = [[0, 1, 2], [1, 2, 3]];
        let fit = |units: f64| {
            let points: Vec<DVec3> = shape.iter().map(|p| *p * units).collect();
            let mut framing = framing(None);
            framing.look_at = None;
            let view = View::fit(&points, triangles, &framing).unwrap();
            let hardware: Vec<DVec3> = points.iter().map(|p| view.to_hardware(*p)).collect();
            (hardware, view.camera, view.half_pitch_raw)
        };
        let (metres, camera, pitch) = fit(1.0);
        for units in [0.01, 100.0, 0.0254, 1e-4] {
            let (other, other_camera, other_pitch) = fit(units);
            for (a, b) in metres.iter().zip(&other) {
                assert!((*a - *b).length() < 1e-9, "{units}: {a} vs {b}");
            }
            assert!((camera - other_camera).length() < 1e-9);
            assert_eq!(pitch, other_pitch);
        }
    }

    #[test]
    fn axis_aligned_views_stay_exact() {
        let square = [
            DVec3::new(-1.0, -1.0, 0.0),
            DVec3::new(3.0, 1.0, 0.0),
            DVec3::new(-1.0, 1.0, 0.0),
        ];
        let view = View::fit(
            &square,
            [[0, 1, 2]],
            &framing(Some(DVec3::new(0.0, 0.0, 4.0))),
        )
        .unwrap();
        assert_eq!(view.to_hardware(square[1]), square[1] * view.scale);
        assert_eq!(view.camera, DVec3::new(0.0, 0.0, 4.0 * view.scale));
    }

    #[test]
    fn scale_keeps_bounds_under_the_limits() {
        // A big single triangle is limited by the cubic bound, a fine mesh by the distance.
        let big = [
            DVec3::ZERO,
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.0, 1.0, 0.0),
        ];
        let view = View::fit(&big, [[0, 1, 2]], &framing(None)).unwrap();
        let hw: Vec<DVec3> = big.iter().map(|p| view.to_hardware(*p)).collect();
        let reach = (view.camera - hw[0]).length();
        assert!(reach * (hw[1] - hw[0]).length() * (hw[2] - hw[0]).length() <= CONDITION_LIMIT);
        assert!(hw
            .iter()
            .all(|p| (*p - view.camera).length() <= FIT_DISTANCE));
        assert!(view.scale * (2f64.sqrt() / 2.0) >= MIN_FIT_RADIUS);
    }

    #[test]
    fn a_distant_camera_cannot_be_fitted() {
        let big = [
            DVec3::ZERO,
            DVec3::new(1.0, 0.0, 0.0),
            DVec3::new(0.0, 1.0, 0.0),
        ];
        let far = View::fit(&big, [[0, 1, 2]], &framing(Some(DVec3::new(0.0, 0.0, 1e5))));
        assert!(matches!(far, Err(FitError::TooFar { .. })), "{far:?}");
        assert_eq!(
            View::fit(&big, [[0, 1, 2]], &framing(Some(DVec3::ZERO))).err(),
            Some(FitError::CameraAtTarget)
        );
        let scaled = |k: f64| [DVec3::ZERO, DVec3::X * k, DVec3::Y * k];
        assert_eq!(
            View::fit(&scaled(1e300), [[0, 1, 2]], &framing(None)).err(),
            Some(FitError::TooLarge { coordinate: 1e300 })
        );
        assert_eq!(
            View::fit(&scaled(1e-300), [[0, 1, 2]], &framing(None)).err(),
            Some(FitError::TooSmall { extent: 1e-300 })
        );
        assert!(View::fit(&scaled(1e-100), [[0, 1, 2]], &framing(None)).is_ok());
        assert!(View::fit(&scaled(1e100), [[0, 1, 2]], &framing(None)).is_ok());
        assert_eq!(
            View::fit(&[DVec3::ONE; 3], [[0, 1, 2]], &framing(None)).err(),
            Some(FitError::NoExtent)
        );
    }
}
