//! The triangle record: what the host streams into a core's swap memory once per
//! triangle, the unit of the machine's vocabulary that scenes are loaded into (scenes sit
//! above the core and build these records; the core and the machine only read them).

use super::alu::Vec3;

/// Vectors per triangle record: V0, UV0, V1, UV1, V2, UV2, diffuse colour.
pub const TRIANGLE_VECTORS: usize = 7;

/// A triangle exactly as the hardware's Vertex.mem holds it (registers 44..50,
/// CREG_V0..CREG_TRI_DIFFUSE).
pub type Triangle = [Vec3; TRIANGLE_VECTORS];
