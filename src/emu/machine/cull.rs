//! Triangle culling: MAIN is not interpreted for a triangle that BIU provably rejects,
//! and the core is left in exactly the state interpreting it would have left.
//!
//! # Why the output is identical, not just the image
//!
//! Per pixel the control unit runs MAIN once per triangle (spec machine_and_microcode
//! §3.4). When MAIN and BIU are the ROM's, a MAIN whose BIU rejects the triangle executes
//! one fixed instruction path that depends only on a few values, and this module computes
//! the outcome of that path natively, with the very ALU functions the interpreter uses:
//!
//! 1. **Premises, checked once per frame** ([`Culler::new`]): the entry table sends MAIN to
//!    ROM 37, and the code words MAIN's reject paths execute (ROM 37..=43 and 157..=178)
//!    are exactly [`REJECT_PATH_WORDS`]. Code memory cannot change during a frame (no
//!    instruction writes it). Otherwise culling is refused and every MAIN is interpreted.
//! 2. **Inputs of the path.** MAIN 37 `CALL 157` reads nothing. BIU reads V0, V1, V2 (the
//!    swap-memory rows the host just loaded: the triangle itself), CREG_CAMERA_POSITION
//!    (bank 0: written only by the host before the frame), CREG_RAY_DIRECTION, and lane x
//!    of R1 and R3, which 158/159 set to the constants 1.0 and 0 just before. MAIN 38
//!    compares the forwarded `RET` immediate with lane x of CREG_ZERO. The path reads no
//!    register through forwarding except values the path itself produced one instruction
//!    earlier (checked word by word: no operand names the previous DST unless that
//!    instruction wrote it), so the previous routine's latches do not matter.
//!    RAY_DIRECTION and CREG_ZERO are read from the core before every test.
//! 3. **The computation.** With those inputs the path computes E1 = V1 − V0, E2 = V2 − V0,
//!    T = CAM − V0, P = RAY × E2, Q = T × E1, H1 = Q·E2, H2 = P·T, H3 = Q·RAY, Δ = P·E1,
//!    t = H1/Δ, u = H2/Δ, v = H3/Δ, all three DIVs before the first test, and leaves BIU at
//!    173 when `JGEX u, 0` fails, at 175 when `JGEX v, 0` fails, at 178 after R2 = u + v
//!    when `JLEX R2, 1.0` fails (`RET R99, 0`: hit = false). MAIN 38 `JEQX` then jumps to
//!    43 `RETURN RT_FALSE` exactly when |CREG_ZERO.x| = |0|. Only then is MAIN skipped;
//!    every other triangle (a hit, or a CREG_ZERO some user code changed) is interpreted.
//!    E1, E2, T, Q and H1 do not depend on the pixel and are computed once per frame.
//! 4. **The state left behind.** A rejecting MAIN writes R3.x = 1.0, R1.x = 0, E1, E2, T,
//!    P, Q, H1..H3, Δ, t, u, v, and R2 (178 exit only); the return register holds 38; the
//!    forwarding latches hold RETURN's (0, 0, 0) and DST 0; the hit flag is unchanged. Of a
//!    run of consecutive skipped triangles only the last one's values survive (and R2 of
//!    the last 178 exit): they are written into the core before anything else runs (the
//!    next interpreted MAIN, or PSU2/pixel shader/NPG at the end of the pixel), so every
//!    later routine — user code included — reads what it would have read. No liveness
//!    argument is needed, and none is made.
//! 5. **Counting and the watchdog.** Each skipped MAIN books its exact instruction count
//!    (20, 21 or 23 by exit) against the pixel's budget. A triangle is skipped only when
//!    the budget covers the whole path; otherwise it is interpreted and faults exactly
//!    where the watchdog stops it.
//!
//! 6. **The fixed ROM's BIU** ([`Biu::Fixed`]): the same MAIN and BIU 157..=171, then a
//!    jump at 172 to its own tests (`shaders/rom/fixed.shdr`, words 280..=308 on the
//!    rejecting paths, checked like the faithful ones): g2 = R·(E2 × T), D' = R·(E2 × E1)
//!    (the cross products are per-triangle constants), g1 = D' − (g2 + H3); `D' <= 0`
//!    picks the orientation, then |D'| > 32, g2 and H3 within 14 and g1 within 28 of that
//!    side. A rejection leaves the faithful registers but R3.x, and R5 = g2, R6 = D',
//!    R2 = g1, R3 = the orientation's bounds (x, y, z); [`Exit::Flat`] and the edge exits
//!    cost 31 to 34 instructions.
//!
//! Tracing ([`crate::emu::core::Observer`] enabled) never culls, so a trace shows every step.
//! The tests render every conformance scene and the default OBJ scene with and without
//! culling and compare every output word and the instruction counts, and a property test
//! compares a skipped MAIN with an interpreted one register by register.

use std::sync::OnceLock;

use rayon::prelude::*;

use crate::emu::core::alu::{self, Vec3};
use crate::emu::core::program::Program;
use crate::emu::core::rom::{rom, RomVariant};
use crate::emu::core::track::NativeWrites;
use crate::emu::core::{CoreState, Triangle};
use crate::emu::isa::registers::{address, EntryPoint};
use crate::emu::isa::Word;

/// The words MAIN (37..=43) and BIU's reject paths (157..=178) consist of, as the culling
/// argument assumes them (spec rom_words.txt).
pub const REJECT_PATH_WORDS: [(u16, u64); 29] = [
    (37, 0x0059_009D_0000_0000),
    (38, 0x000A_002B_0076_0077),
    (39, 0x0059_00BE_0000_0000),
    (40, 0x0000_0000_0000_0000),
    (41, 0x0040_0000_0000_0001),
    (42, 0x0000_0000_0000_0000),
    (43, 0x0040_0000_0000_0000),
    (157, 0x000F_0080_0000_0000),
    (158, 0x0041_0049_0002_0000),
    (159, 0x0041_0047_0000_0000),
    (160, 0x0002_0064_002E_002C),
    (161, 0x0002_0065_0030_002C),
    (162, 0x0002_0058_0001_002C),
    (163, 0x0016_0059_0055_0065),
    (164, 0x0016_005A_0058_0064),
    (165, 0x0017_0069_005A_0065),
    (166, 0x0017_006A_0059_0058),
    (167, 0x0017_006B_005A_0055),
    (168, 0x0017_0066_0059_0064),
    (169, 0x0003_0063_0069_0066),
    (170, 0x0003_0067_006A_0066),
    (171, 0x0003_0068_006B_0066),
    (172, 0x000C_00AE_0067_0047),
    (173, 0x005A_0076_0000_0000),
    (174, 0x000C_00B0_0068_0047),
    (175, 0x005A_0076_0000_0000),
    (176, 0x0001_0048_0067_0068),
    (177, 0x000D_00B3_0048_0049),
    (178, 0x005A_0076_0000_0000),
];

/// MAIN's entry in the ROM.
const MAIN_ADDRESS: u16 = 37;
/// Where BIU's `RET` returns to (the instruction after MAIN's `CALL`).
const BIU_RETURN_POINT: u16 = 38;

/// Jump relations as the opcodes encode them (bits 2..0): JG, JL (which tests `<=`), JEQ,
/// JGE and JLE.
const JGE: u16 = 4;
const JL: u16 = 1;
const JG: u16 = 0;
const JLE: u16 = 5;
const JEQ: u16 = 2;

/// Where a rejecting BIU returns from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// 173: u < 0.
    U,
    /// 175: v < 0.
    V,
    /// 178: u + v > 1.0 (R2 written).
    Sum,
    /// The fixed BIU sees the triangle nearly edge-on: |D'| <= 32.
    Flat,
    /// The fixed BIU's test of edge V0V2 (g2) fails.
    G2,
    /// The fixed BIU's test of edge V0V1 (g3 = H3) fails.
    G3,
    /// The fixed BIU's test of edge V1V2 (g1) fails.
    G1,
}

impl Exit {
    /// Instructions a MAIN with this BIU exit executes: CALL, BIU 157..=171, then the
    /// faithful exit's tests and RET (172..=178), or the fixed BIU's jump, its six edge
    /// values, the orientation test, three constants, the flatness test and its edge tests
    /// and RET; then JEQX, RETURN.
    pub const fn instructions(self) -> u64 {
        match self {
            Exit::U => 20,
            Exit::V => 21,
            Exit::Sum => 23,
            Exit::Flat => 31,
            Exit::G2 => 32,
            Exit::G3 => 33,
            Exit::G1 => 34,
        }
    }

    /// A small number per exit of its BIU, from 1 (0 is free for "none"): its place in
    /// [`Biu::exits`] plus one.
    pub const fn code(self) -> u8 {
        match self {
            Exit::U | Exit::Flat => 1,
            Exit::V | Exit::G2 => 2,
            Exit::Sum | Exit::G3 => 3,
            Exit::G1 => 4,
        }
    }
}

/// Which BIU code memory holds: the hardware's (faithful ROM) or the fixed ROM's
/// watertight one (`shaders/rom/fixed.shdr`). MAIN and BIU 157..=171 are the same words in
/// both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Biu {
    Faithful,
    Fixed,
}

impl Biu {
    /// The BIU's exits, in [`Exit::code`] order.
    pub const fn exits(self) -> &'static [Exit] {
        match self {
            Biu::Faithful => &[Exit::U, Exit::V, Exit::Sum],
            Biu::Fixed => &[Exit::Flat, Exit::G2, Exit::G3, Exit::G1],
        }
    }

    /// The costliest exit: what a skipped MAIN whose exit depends on the ray is charged.
    pub const fn worst_exit(self) -> Exit {
        match self {
            Biu::Faithful => Exit::Sum,
            Biu::Fixed => Exit::G1,
        }
    }
}

/// The fixed ROM's words the culling argument is about besides MAIN and BIU 157..=171: the
/// jump at 172 and its BIU tail up to the last rejecting RET (FIXED_BIU_EDGES ..
/// FIXED_BIU_INSIDE; a test pins the labels).
const FIXED_REJECT_PATH: [std::ops::RangeInclusive<u16>; 2] = [172..=172, 280..=308];

/// The fixed BIU's tolerances (fixed.shdr): g2 and g3 within 14 raw units of the
/// orientation's side, g1 within 28; and |D'| above 32 (not flat).
pub const FIXED_TOLERANCE: u32 = 14;
pub const FIXED_TOLERANCE_G1: u32 = 28;
pub const FIXED_FLAT: u32 = 32;

/// Why a frame renders without culling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `RenderOptions::culling` is off.
    Disabled,
    /// The entry table sends MAIN elsewhere than ROM 37.
    UserMain { address: u16 },
    /// A word of MAIN or BIU differs from the one the argument is about.
    ChangedWord { address: u16 },
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Disabled => write!(f, "culling is off"),
            Refusal::UserMain { address } => write!(
                f,
                "culling refused: MAIN runs at {address:#06x}, not the ROM's (37)"
            ),
            Refusal::ChangedWord { address } => write!(
                f,
                "culling refused: the code at {address} is not the ROM's MAIN/BIU"
            ),
        }
    }
}

/// What BIU computes for one triangle before looking at the ray: constant for a frame.
#[derive(Clone, Copy, Debug)]
pub struct TriangleConstants {
    pub e1: Vec3,
    pub e2: Vec3,
    pub t: Vec3,
    pub q: Vec3,
    pub h1: u32,
}

/// What the fixed BIU computes of one triangle before looking at the ray: its ray-last
/// cross products E2 × T (g2 = R·c2) and E2 × E1 (D' = R·c_delta).
#[derive(Clone, Copy, Debug)]
pub struct FixedConstants {
    pub c2: Vec3,
    pub c_delta: Vec3,
}

impl FixedConstants {
    pub fn new(k: &TriangleConstants) -> FixedConstants {
        FixedConstants {
            c2: alu::cross(k.e2, k.t),
            c_delta: alu::cross(k.e2, k.e1),
        }
    }
}

impl TriangleConstants {
    /// What BIU computes of the triangle (V0, V1, V2) seen from `camera` before the ray.
    pub fn new(v0: Vec3, v1: Vec3, v2: Vec3, camera: Vec3) -> TriangleConstants {
        let lanes = |a: Vec3, b: Vec3| [0, 1, 2].map(|i| alu::sub(a[i], b[i]));
        let (e1, e2, t) = (lanes(v1, v0), lanes(v2, v0), lanes(camera, v0));
        let q = alu::cross(t, e1);
        TriangleConstants {
            e1,
            e2,
            t,
            q,
            h1: alu::dot(q, e2),
        }
    }
}

/// Everything a rejecting MAIN computes for one triangle and ray.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RejectState {
    pub e1: Vec3,
    pub e2: Vec3,
    pub t: Vec3,
    pub p: Vec3,
    pub q: Vec3,
    pub h1: u32,
    pub h2: u32,
    pub h3: u32,
    pub delta: u32,
    pub t_hit: u32,
    pub u: u32,
    pub v: u32,
    /// The fixed BIU's edge values and orientation (R5, R6, R2; 0, 0, −H3 for the
    /// faithful one, which does not compute them).
    pub g2: u32,
    pub delta_prime: u32,
    pub g1: u32,
}

/// Triangles per [`ConstantBlock`]: as many as the widest vector kernel's lanes (AVX-512's
/// eight 64-bit lanes; AVX2's four take a block in two halves).
pub const BLOCK: usize = 8;

/// [`BLOCK`] triangles' constants word by word, one triangle per lane
/// ([`Culler::blocks`]): a vector kernel loads a word of its lanes' triangles at once,
/// where gathering it from [`TriangleConstants`] takes a load and an insert per lane.
#[derive(Clone, Copy, Debug, Default)]
pub struct ConstantBlock {
    pub e1: [[i32; BLOCK]; 3],
    pub e2: [[i32; BLOCK]; 3],
    pub t: [[i32; BLOCK]; 3],
    pub q: [[i32; BLOCK]; 3],
    pub h1: [i32; BLOCK],
    /// The fixed BIU's [`FixedConstants`]; 0 for the faithful one.
    pub c2: [[i32; BLOCK]; 3],
    pub c_delta: [[i32; BLOCK]; 3],
}

impl ConstantBlock {
    /// The block of up to [`BLOCK`] triangles' constants `k` (and `f`, for the fixed
    /// BIU), the last one repeated in the lanes past them.
    fn new(k: &[TriangleConstants], f: Option<&[FixedConstants]>) -> ConstantBlock {
        let last = k.len() - 1;
        let word =
            |field: &dyn Fn(usize) -> u32| std::array::from_fn(|j| field(j.min(last)) as i32);
        let triple =
            |field: &dyn Fn(usize) -> Vec3| std::array::from_fn(|i| word(&|j| field(j)[i]));
        let fixed = |field: fn(&FixedConstants) -> Vec3| match f {
            Some(f) => triple(&|j| field(&f[j])),
            None => [[0; BLOCK]; 3],
        };
        ConstantBlock {
            e1: triple(&|j| k[j].e1),
            e2: triple(&|j| k[j].e2),
            t: triple(&|j| k[j].t),
            q: triple(&|j| k[j].q),
            h1: word(&|j| k[j].h1),
            c2: fixed(|f| f.c2),
            c_delta: fixed(|f| f.c_delta),
        }
    }
}

/// The per-frame culling tables.
#[derive(Clone, Debug)]
pub struct Culler {
    biu: Biu,
    triangles: Vec<TriangleConstants>,
    /// Per triangle for the fixed BIU; empty for the faithful one.
    fixed: Vec<FixedConstants>,
    /// [`Culler::blocks`], built when first asked for (only timed frames ask).
    blocks: OnceLock<Vec<ConstantBlock>>,
}

impl Culler {
    /// Checks the premises (module doc, point 1) and precomputes the per-triangle values.
    pub fn new(
        program: &Program,
        triangles: &[Triangle],
        config: &[Vec3; 6],
    ) -> Result<Culler, Refusal> {
        let biu = biu_of(program)?;
        let camera = config[address::CREG_CAMERA_POSITION as usize];
        // In parallel: a scan's million triangles take a tenth of a second on one thread.
        let triangles: Vec<TriangleConstants> = triangles
            .par_iter()
            .map(|tri| TriangleConstants::new(tri[0], tri[2], tri[4], camera))
            .collect();
        let fixed = match biu {
            Biu::Faithful => Vec::new(),
            Biu::Fixed => triangles.par_iter().map(FixedConstants::new).collect(),
        };
        Ok(Culler {
            biu,
            triangles,
            fixed,
            blocks: OnceLock::new(),
        })
    }

    /// A culler of `biu` over given constants (`fixed`: one per triangle for the fixed
    /// BIU, none for the faithful one), for tests of what is built on it.
    #[cfg(test)]
    pub(crate) fn with_constants(
        biu: Biu,
        triangles: Vec<TriangleConstants>,
        fixed: Vec<FixedConstants>,
    ) -> Culler {
        Culler {
            biu,
            triangles,
            fixed,
            blocks: OnceLock::new(),
        }
    }

    /// A faithful culler over given constants, for tests of what is built on it.
    #[cfg(test)]
    pub(crate) fn from_constants(triangles: Vec<TriangleConstants>) -> Culler {
        Culler {
            biu: Biu::Faithful,
            triangles,
            fixed: Vec::new(),
            blocks: OnceLock::new(),
        }
    }

    /// Each triangle's [`FixedConstants`] (for the fixed BIU; empty otherwise).
    pub fn fixed_constants(&self) -> &[FixedConstants] {
        &self.fixed
    }

    /// Which BIU the premises found.
    pub fn biu(&self) -> Biu {
        self.biu
    }

    /// Each triangle's [`TriangleConstants`], in scene order.
    pub fn constants(&self) -> &[TriangleConstants] {
        &self.triangles
    }

    /// The constants of every [`BLOCK`] triangles as [`ConstantBlock`]s, the last block
    /// padded with its last triangle: built on first use, on the calling thread (the
    /// timing asks beside a render, whose rayon workers would take a parallel build up
    /// only when they are done).
    pub fn blocks(&self) -> &[ConstantBlock] {
        self.blocks.get_or_init(|| {
            let fixed = (self.biu == Biu::Fixed).then_some(&self.fixed[..]);
            (self.triangles.chunks(BLOCK).enumerate())
                .map(|(b, k)| {
                    let f = fixed.map(|f| &f[BLOCK * b..BLOCK * b + k.len()]);
                    ConstantBlock::new(k, f)
                })
                .collect()
        })
    }

    /// BIU's verdict for triangle `index` under `ray`: `Some(exit)` when it rejects.
    #[inline(always)]
    pub fn rejects(&self, index: usize, ray: Vec3) -> Option<Exit> {
        let k = &self.triangles[index];
        match self.biu {
            Biu::Faithful => rejects(k, ray),
            Biu::Fixed => fixed_rejects(k, &self.fixed[index], ray),
        }
    }

    /// [`Culler::rejects`] with H3 computed before it is known to be needed: faster for the
    /// acceleration structure's candidates (nearly parallel triangles, whose u is not
    /// negative about half the time; measured 5% per frame when every candidate went
    /// through it), slower for plain culling, where most triangles leave at u < 0. The
    /// verdict is the same. Candidates now take it only where the four-pixel test cannot
    /// (a P beyond the exact multiplier, no AVX2, a ray some MAIN changed).
    #[inline(always)]
    pub fn rejects_candidate(&self, index: usize, ray: Vec3) -> Option<Exit> {
        let k = &self.triangles[index];
        if self.biu == Biu::Fixed {
            return fixed_rejects(k, &self.fixed[index], ray);
        }
        let p = alu::cross(ray, k.e2);
        let (delta, h2, h3) = (alu::dot(p, k.e1), alu::dot(p, k.t), alu::dot(k.q, ray));
        verdict(h2, || h3, delta)
    }

    /// The run of MAINs that can be skipped from triangle `first` on under `ray`: each
    /// rejected by BIU and covered by what is left of `budget` (point 5). The caller has
    /// checked [`main_returns_false`]; nothing in the run changes CREG_ZERO. Not inlined:
    /// inlined into its one caller, the pixel sequence, scenes_example3 took 1.6% more
    /// host instructions (callgrind), the built-in scene 1.5% fewer.
    #[inline(never)]
    pub fn skippable_run(&self, first: usize, ray: Vec3, budget: u64) -> SkippableRun {
        let triangles = &self.triangles[first..];
        let fixed = || triangles.iter().zip(&self.fixed[first..]);
        // The fixed BIU's ray is DOT's first operand twice: whether it is an exact
        // multiplicand is checked once here, not per triangle (the loop kept the check,
        // and the registers it holds, in every iteration: 2.8% of the built-in scene).
        match (self.biu, alu::exact_multiplicands(ray)) {
            (Biu::Faithful, _) => {
                skippable_run(first, budget, triangles.iter(), |k| rejects(k, ray))
            }
            (Biu::Fixed, true) => skippable_run(first, budget, fixed(), |(k, f)| {
                fixed_rejects_exact_ray(k, f, ray)
            }),
            (Biu::Fixed, false) => {
                skippable_run(first, budget, fixed(), |(k, f)| fixed_rejects(k, f, ray))
            }
        }
    }

    /// Everything BIU 157..=171 computes for triangle `index` under `ray`.
    pub fn reject_state(&self, index: usize, ray: Vec3) -> RejectState {
        let k = &self.triangles[index];
        let p = alu::cross(ray, k.e2);
        let delta = alu::dot(p, k.e1);
        let h2 = alu::dot(p, k.t);
        let h3 = alu::dot(k.q, ray);
        let (g2, delta_prime) = match self.fixed.get(index) {
            Some(f) => (alu::dot(ray, f.c2), alu::dot(ray, f.c_delta)),
            None => (0, 0),
        };
        RejectState {
            g2,
            delta_prime,
            g1: alu::sub(delta_prime, alu::add(g2, h3)),
            e1: k.e1,
            e2: k.e2,
            t: k.t,
            p,
            q: k.q,
            h1: k.h1,
            h2,
            h3,
            delta,
            t_hit: alu::div(k.h1, delta),
            u: alu::div(h2, delta),
            v: alu::div(h3, delta),
        }
    }
}

impl Culler {
    /// The t the fixed BIU keeps triangle `index` at under `ray`, when it accepts it:
    /// every edge test passes, `t > 0` and no quotient's residual exceeds 0x3FFF raw
    /// (fixed.shdr's FIXED_BIU_INSIDE and FIXED_BIU_IN_FRONT, with the same ALU functions).
    pub fn fixed_hit(&self, index: usize, ray: Vec3) -> Option<u32> {
        let f = self.fixed.get(index)?;
        if fixed_rejects(&self.triangles[index], f, ray).is_some() {
            return None;
        }
        let s = self.reject_state(index, ray);
        if !alu::compare(s.t_hit, 0, JG) {
            return None;
        }
        let (bound, negative_bound) = (0x3FFF, 0xFFFF_C001);
        for (dividend, quotient) in [(s.h1, s.t_hit), (s.h2, s.u), (s.h3, s.v)] {
            let residual = alu::sub(dividend, alu::mul(quotient, s.delta));
            if alu::compare(residual, bound, JG) || alu::compare(negative_bound, residual, JG) {
                return None;
            }
        }
        Some(s.t_hit)
    }
}

/// BIU's verdict for the triangle with constants `k` under `ray`.
#[inline(always)]
fn rejects(k: &TriangleConstants, ray: Vec3) -> Option<Exit> {
    let p = alu::cross(ray, k.e2);
    let delta = alu::dot(p, k.e1);
    let h2 = alu::dot(p, k.t);
    verdict(h2, || alu::dot(k.q, ray), delta)
}

/// [`fixed_rejects`] for a ray of [`alu::exact_multiplicands`]: the same verdict.
#[inline(always)]
fn fixed_rejects_exact_ray(k: &TriangleConstants, f: &FixedConstants, ray: Vec3) -> Option<Exit> {
    let [g2, g3, delta_prime] = fixed_edges(k, f, ray, true);
    fixed_verdict(g2, g3, delta_prime)
}

/// The fixed BIU's verdict (fixed.shdr) for the triangle with constants `k` under `ray`.
#[inline(always)]
fn fixed_rejects(k: &TriangleConstants, f: &FixedConstants, ray: Vec3) -> Option<Exit> {
    let [g2, g3, delta_prime] = fixed_edges(k, f, ray, false);
    fixed_verdict(g2, g3, delta_prime)
}

/// The fixed BIU's edge values under `ray`: g2 = ray·c2, g3 = H3 = Q·ray and
/// D' = ray·c_delta, the DOTs with the ray first on the exact multiplier's path where
/// `exact_ray` says its lanes are [`alu::exact_multiplicands`].
#[inline(always)]
pub(crate) fn fixed_edges(
    k: &TriangleConstants,
    f: &FixedConstants,
    ray: Vec3,
    exact_ray: bool,
) -> [u32; 3] {
    let dot_ray = |c| match exact_ray {
        true => alu::dot_exact(ray, c),
        false => alu::dot(ray, c),
    };
    [dot_ray(f.c2), alu::dot(k.q, ray), dot_ray(f.c_delta)]
}

/// The fixed BIU's tests on its edge values g2, g3 and D' (g1 = D' − (g2 + g3)), against
/// the bounds `fixed_bounds` sets in R3: `JGZ D', R3` then `JGEX g2, R3`, `JGEX g3, R3`,
/// `JGEY g1, R3` (or `JLZ`, `JLEX`, `JLEX`, `JLEY` when D' <= 0). `Some(exit)` when BIU
/// rejects.
#[inline(always)]
pub fn fixed_verdict(g2: u32, g3: u32, delta_prime: u32) -> Option<Exit> {
    let g1 = alu::sub(delta_prime, alu::add(g2, g3));
    let (back, [bound, bound_g1, flat_bound]) = fixed_bounds(delta_prime);
    let (flat_relation, relation) = if back { (JL, JLE) } else { (JG, JGE) };
    if !alu::compare(delta_prime, flat_bound, flat_relation) {
        Some(Exit::Flat)
    } else if !alu::compare(g2, bound, relation) {
        Some(Exit::G2)
    } else if !alu::compare(g3, bound, relation) {
        Some(Exit::G3)
    } else if !alu::compare(g1, bound_g1, relation) {
        Some(Exit::G1)
    } else {
        None
    }
}

/// Which side `JLX D', 0` takes (true: D' <= 0, the back-facing tests) and the R3 that
/// side's SETX/SETY/SETZ leave (fixed.shdr): the bounds of g2 and g3, of g1, and of D'.
#[inline(always)]
fn fixed_bounds(delta_prime: u32) -> (bool, Vec3) {
    if alu::compare(delta_prime, 0, JL) {
        let flat = (FIXED_FLAT + 1).wrapping_neg();
        (true, [FIXED_TOLERANCE, FIXED_TOLERANCE_G1, flat])
    } else {
        let negative = |x: u32| x.wrapping_neg();
        let r3 = [
            negative(FIXED_TOLERANCE),
            negative(FIXED_TOLERANCE_G1),
            FIXED_FLAT,
        ];
        (false, r3)
    }
}

/// Which BIU `program` holds, if MAIN and BIU's rejecting paths are the faithful ROM's or
/// the fixed ROM's words (module doc, point 1).
fn biu_of(program: &Program) -> Result<Biu, Refusal> {
    let main = program.entry(EntryPoint::Main);
    if main != MAIN_ADDRESS {
        return Err(Refusal::UserMain { address: main });
    }
    /// The first address of `words` where `program` holds another word.
    fn first_difference(
        program: &Program,
        mut words: impl Iterator<Item = (u16, Word)>,
    ) -> Option<u16> {
        words
            .find(|&(address, word)| program.word(address) != word)
            .map(|(address, _)| address)
    }
    let faithful = |tail: bool| {
        REJECT_PATH_WORDS
            .iter()
            .filter(move |&&(address, _)| (address >= 172) == tail)
            .map(|&(address, word)| (address, Word(word)))
    };
    // Both BIUs share MAIN and 157..=171; they part at 172.
    if let Some(address) = first_difference(program, faithful(false)) {
        return Err(Refusal::ChangedWord { address });
    }
    let Some(faithful_address) = first_difference(program, faithful(true)) else {
        return Ok(Biu::Faithful);
    };
    let fixed = rom(RomVariant::Fixed);
    let fixed_words = FIXED_REJECT_PATH
        .iter()
        .flat_map(|range| range.clone())
        .map(|address| (address, fixed[address as usize]));
    match first_difference(program, fixed_words) {
        None => Ok(Biu::Fixed),
        // Name the first word that matches neither BIU: the fixed one's when 172 jumps
        // to it.
        Some(fixed_address) => Err(Refusal::ChangedWord {
            address: if program.word(172) == fixed[172] {
                fixed_address
            } else {
                faithful_address
            },
        }),
    }
}

/// [`Culler::skippable_run`] over the triangles from `first` on, each judged by `rejects`.
#[inline(always)]
fn skippable_run<K>(
    first: usize,
    budget: u64,
    triangles: impl Iterator<Item = K>,
    rejects: impl Fn(K) -> Option<Exit>,
) -> SkippableRun {
    let mut run = SkippableRun {
        end: first,
        instructions: 0,
        last_sum: None,
    };
    for k in triangles {
        let Some(exit) = rejects(k) else {
            break;
        };
        let instructions = run.instructions + exit.instructions();
        if instructions > budget {
            break;
        }
        run.instructions = instructions;
        if exit == Exit::Sum {
            run.last_sum = Some(run.end);
        }
        run.end += 1;
    }
    run
}

/// What [`Culler::skippable_run`] found: triangles `first..end` can be skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SkippableRun {
    pub end: usize,
    /// The instructions their MAINs execute.
    pub instructions: u64,
    /// The last of them that leaves BIU at 178.
    pub last_sum: Option<usize>,
}

/// BIU 169..=178 on H2, H3 and Δ, as BIU runs it: u = H2/Δ, v = H3/Δ, `JGEX u, 0`,
/// `JGEX v, 0`, R2 = u + v, `JLEX R2, 1.0`. `Some(exit)` when BIU rejects.
pub fn exact_verdict(h2: u32, h3: u32, delta: u32) -> Option<Exit> {
    let u = alu::div(h2, delta);
    if !alu::compare(u, 0, JGE) {
        return Some(Exit::U);
    }
    let v = alu::div(h3, delta);
    if !alu::compare(v, 0, JGE) {
        return Some(Exit::V);
    }
    if !alu::compare(alu::add(u, v), alu::ONE, JLE) {
        return Some(Exit::Sum);
    }
    None
}

/// [`exact_verdict`] without dividing in all but rare cases (H3 computed only when BIU
/// gets that far).
///
/// With d = |Δ| > 0, DIV gives sign · (⌊|H|·2^17 / d⌋ mod 2^31). While |H| < 2^14·d the
/// quotient is below 2^31 (no wrap), so: u < 0 exactly when the signs of H2 and Δ differ
/// and |H2|·2^17 ≥ d (the quotient is not 0); likewise v. When both are ≥ 0 they are
/// ⌊a/d⌋ and ⌊b/d⌋ (a, b = |H|·2^17, or 0 where the quotient is 0), whose sum s lies in
/// ((a+b)/d − 2, (a+b)/d]: a + b < (2^17+1)·d gives s ≤ 1.0 (accepted), and
/// (2^17+2)·d ≤ a + b < 2^31·d gives 1.0 < s < 2^31, where ADD does not wrap (rejected
/// at 178). Everything else — Δ = 0, a possible wrap, a sum near 1.0 — takes the exact
/// path. A property test compares the two on values clustered at every boundary.
#[inline(always)]
pub fn verdict(h2: u32, h3: impl FnOnce() -> u32, delta: u32) -> Option<Exit> {
    let d = alu::magnitude32(delta) as u64;
    if d == 0 {
        return exact_verdict(h2, h3(), delta);
    }
    let wrap_limit = d << 14;
    let u_magnitude = alu::magnitude32(h2) as u64;
    if u_magnitude >= wrap_limit {
        return exact_verdict(h2, h3(), delta);
    }
    let u_negative = (h2 ^ delta) >> 31 == 1;
    let a = u_magnitude << 17;
    if u_negative && a >= d {
        return Some(Exit::U);
    }
    let h3 = h3();
    let v_magnitude = alu::magnitude32(h3) as u64;
    if v_magnitude >= wrap_limit {
        return exact_verdict(h2, h3, delta);
    }
    let v_negative = (h3 ^ delta) >> 31 == 1;
    let b = v_magnitude << 17;
    if v_negative && b >= d {
        return Some(Exit::V);
    }
    // Both quotients are >= 0 here; a negative sign means a zero quotient.
    let sum = if u_negative { 0 } else { a } + if v_negative { 0 } else { b };
    let one = alu::ONE as u64;
    if sum < (one + 1) * d {
        return None;
    }
    if sum >= (one + 2) * d && sum < (1 << 31) * d {
        return Some(Exit::Sum);
    }
    exact_verdict(h2, h3, delta)
}

/// MAIN 38 `JEQX 43, R99, CREG_ZERO` with BIU's `RET R99, 0` forwarded: whether MAIN then
/// returns FALSE.
#[inline]
pub fn main_returns_false(core: &impl CoreState) -> bool {
    alu::compare(0, core.register_component(address::CREG_ZERO, 0), JEQ)
}

impl Culler {
    /// Writes what a run of skipped MAINs under `ray` leaves: the registers of the last
    /// one, `last`, and R2 of the last one that left at 178, `last_sum` (if any).
    pub fn write_skipped(
        &self,
        core: &mut impl CoreState,
        last: usize,
        last_sum: Option<usize>,
        ray: Vec3,
    ) {
        let s = self.reject_state(last, ray);
        let r2 = last_sum.map(|sum| {
            let at_sum = if sum == last {
                s
            } else {
                self.reject_state(sum, ray)
            };
            alu::add(at_sum.u, at_sum.v)
        });
        let key = NativeWrites::SkippedMain {
            fixed: self.biu == Biu::Fixed,
            sum: r2.is_some(),
        };
        core.native_writes(key, |core| self.write_reject_state(core, &s, r2));
    }

    /// [`Culler::write_skipped`]'s writes: `s` the state the last skipped MAIN leaves, `r2`
    /// the value R2 has from the last one that left at 178, if any.
    fn write_reject_state(&self, core: &mut impl CoreState, s: &RejectState, r2: Option<u32>) {
        match self.biu {
            Biu::Faithful => core.write_register_component(address::R3, 0, alu::ONE),
            Biu::Fixed => {
                let (_, r3) = fixed_bounds(s.delta_prime);
                core.write_registers([
                    (address::R3, r3),
                    (address::R5, [s.g2; 3]),
                    (address::R6, [s.delta_prime; 3]),
                    (address::R2, [s.g1; 3]),
                ]);
            }
        }
        core.write_register_component(address::R1, 0, 0);
        core.write_registers([
            (address::CREG_E1, s.e1),
            (address::CREG_E2, s.e2),
            (address::CREG_T, s.t),
            (address::CREG_P, s.p),
            (address::CREG_Q, s.q),
            (address::CREG_H1, [s.h1; 3]),
            (address::CREG_H2, [s.h2; 3]),
            (address::CREG_H3, [s.h3; 3]),
            (address::CREG_DELTA, [s.delta; 3]),
            (address::CREG_T_HIT, [s.t_hit; 3]),
            (address::CREG_U, [s.u; 3]),
            (address::CREG_V, [s.v; 3]),
        ]);
        if let Some(r2) = r2 {
            core.write_register(address::R2, [r2; 3]);
        }
        // MAIN 43 `RETURN RT_FALSE` (DST 0) after BIU's RET to 38.
        core.set_routine_end_state(0, 0, BIU_RETURN_POINT);
    }

    /// [`Culler::write_skipped`] for the skipped run `first..end` (all rejected under
    /// `ray`), finding the last 178 exit by testing the run backwards.
    pub fn write_skipped_run(
        &self,
        core: &mut impl CoreState,
        first: usize,
        end: usize,
        ray: Vec3,
    ) {
        if first >= end {
            return;
        }
        if self.biu == Biu::Fixed {
            // Every fixed exit writes R2: the last one's survives.
            self.write_skipped(core, end - 1, None, ray);
            return;
        }
        let last_sum = (first..end)
            .rev()
            .find(|&index| self.rejects(index, ray) == Some(Exit::Sum));
        self.write_skipped(core, end - 1, last_sum, ray);
    }
}

/// Values for the property tests of culling and of its timing (`timing/culled.rs`).
#[cfg(test)]
pub(crate) mod values {
    use crate::emu::core::alu::Vec3;
    use proptest::prelude::*;

    /// A Q15.17 value: mostly small (so rays meet triangles and both DIV paths occur),
    /// sometimes any word (so the wrap-around and radix-4 quirks are exercised too).
    pub(crate) fn word() -> impl Strategy<Value = u32> {
        prop_oneof![
            4 => (-8i32 << 17..8i32 << 17).prop_map(|v| v as u32),
            1 => any::<u32>(),
        ]
    }

    pub(crate) fn vec3() -> impl Strategy<Value = Vec3> {
        [word(), word(), word()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::rom::{rom, RomVariant};
    use crate::emu::core::{Core, NoObserver};
    use proptest::prelude::*;

    use super::values::{vec3, word};

    /// Registers BIU and MAIN read or write, and a few others, with arbitrary contents.
    const SEEDED: [u16; 22] = [
        address::R1,
        address::R2,
        address::R3,
        address::R5,
        address::R6,
        address::CREG_T,
        address::CREG_P,
        address::CREG_Q,
        address::CREG_T_HIT,
        address::CREG_E1,
        address::CREG_E2,
        address::CREG_DELTA,
        address::CREG_U,
        address::CREG_V,
        address::CREG_H1,
        address::CREG_H2,
        address::CREG_H3,
        address::R99,
        address::CREG_LAST_T,
        address::CREG_LAST_U,
        address::CREG_TEX_COORD1,
        address::CREG_PIXEL_2D_POSITION,
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// A skipped MAIN leaves the core exactly as an interpreted one: every register,
        /// the latches, the return register, the instruction count and the budget; and a
        /// triangle the test does not reject makes MAIN return TRUE.
        #[test]
        fn skipping_equals_interpreting(
            triangle in [vec3(), vec3(), vec3(), vec3(), vec3(), vec3(), vec3()],
            camera in vec3(),
            ray in vec3(),
            seeds in proptest::collection::vec(vec3(), SEEDED.len()),
            zero in prop_oneof![4 => Just(0u32), 1 => word()],
            budget in prop_oneof![4 => Just(1_000u64), 1 => 0u64..30],
            previous_return in any::<u32>(),
            fixed in any::<bool>(),
        ) {
            let variant = if fixed { RomVariant::Fixed } else { RomVariant::Faithful };
            let program = Program::new(rom(variant), &Program::default_imem());
            let mut config = [[0; 3]; 6];
            config[address::CREG_CAMERA_POSITION as usize] = camera;
            let culler = Culler::new(&program, &[triangle], &config).unwrap();
            let texture = [0u32; 4];
            let fresh = || {
                let mut core = Core::new(&program, &texture, 16);
                for (row, value) in config.iter().enumerate() {
                    core.host_write(row as u16, *value);
                }
                for (&address, &value) in SEEDED.iter().zip(&seeds) {
                    core.write_register(address, value);
                }
                core.write_register(address::CREG_RAY_DIRECTION, ray);
                core.write_register(address::CREG_ZERO, [zero, 1, 2]);
                core.set_routine_end_state(0, previous_return, 0);
                core.set_budget(budget);
                core.load_triangle(&triangle);
                core
            };
            let mut interpreted = fresh();
            let expected = interpreted.run(EntryPoint::Main, &mut NoObserver);

            let mut culled = fresh();
            let skipped = main_returns_false(&culled) && {
                let run = culler.skippable_run(0, ray, culled.budget_left());
                if run.end == 1 {
                    culled.charge_skipped(1, run.instructions);
                    culler.write_skipped(&mut culled, 0, run.last_sum, ray);
                }
                run.end == 1
            };
            let got = if skipped {
                Ok(false)
            } else {
                culled.run(EntryPoint::Main, &mut NoObserver)
            };
            prop_assert_eq!(got, expected);
            prop_assert!(culled.same_state(&interpreted));
            prop_assert_eq!(culled.instructions(), interpreted.instructions());
            prop_assert_eq!(culled.budget_left(), interpreted.budget_left());
            // (The fixed BIU tests t and wrap-around after its edges.)
            if !fixed && culler.rejects(0, ray).is_none() && zero == 0 && budget >= 1_000 {
                prop_assert_eq!(expected, Ok(true));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]

        /// A skippable run is the run of triangles BIU rejects one by one, with the same
        /// charge, up to the first it does not or the budget does not cover.
        #[test]
        fn a_skippable_run_is_triangle_by_triangle_skipping(
            triangles in proptest::collection::vec(
                [vec3(), vec3(), vec3(), vec3(), vec3(), vec3(), vec3()], 1..12),
            camera in vec3(),
            ray in vec3(),
            first in 0usize..4,
            budget in prop_oneof![Just(1_000u64), 0u64..120],
            fixed in any::<bool>(),
        ) {
            let variant = if fixed { RomVariant::Fixed } else { RomVariant::Faithful };
            let program = Program::new(rom(variant), &Program::default_imem());
            let mut config = [[0; 3]; 6];
            config[address::CREG_CAMERA_POSITION as usize] = camera;
            let culler = Culler::new(&program, &triangles, &config).unwrap();
            let first = first.min(triangles.len());
            // One triangle at a time: skipped while BIU rejects it and the budget left
            // covers its exit.
            let (mut end, mut left, mut last_sum) = (first, budget, None);
            while let Some(exit) = triangles.get(end).and_then(|_| culler.rejects(end, ray)) {
                if exit.instructions() > left {
                    break;
                }
                left -= exit.instructions();
                if exit == Exit::Sum {
                    last_sum = Some(end);
                }
                end += 1;
            }
            let run = culler.skippable_run(first, ray, budget);
            prop_assert_eq!(run.end, end);
            prop_assert_eq!(run.instructions, budget - left);
            prop_assert_eq!(run.last_sum, last_sum);
        }
    }

    /// A value near `fraction` · |Δ| (Q15.17 fraction), with either sign and some noise:
    /// lands on every boundary of [`verdict`].
    fn near(delta: u32, fraction: i64, noise: i64) -> u32 {
        let d = alu::magnitude32(delta) as i64;
        (((d * fraction) >> 17) + noise) as i32 as u32
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20000))]

        #[test]
        fn the_quick_verdict_is_the_exact_one(
            delta in prop_oneof![
                Just(0u32),
                Just(0x8000_0000),
                1u32..64,
                any::<u32>(),
                (1u32 << 10..1 << 20).prop_map(|v| v.wrapping_neg()),
            ],
            fu in -0x4_0000i64..0x4_0000,
            fv in -0x4_0000i64..0x4_0000,
            // u + v within a few units of 1.0, where rounding decides.
            sum_near_one in any::<bool>(),
            jitter in -4i64..5,
            noise in (-3i64..4, -3i64..4),
            raw in prop_oneof![3 => Just(None), 1 => any::<(u32, u32)>().prop_map(Some)],
        ) {
            let fv = if sum_near_one { 0x2_0000 - fu + jitter } else { fv };
            let (h2, h3) = raw.unwrap_or((near(delta, fu, noise.0), near(delta, fv, noise.1)));
            prop_assert_eq!(verdict(h2, || h3, delta), exact_verdict(h2, h3, delta));
        }
    }

    #[test]
    fn verdict_edges() {
        let one = alu::ONE;
        // Δ = 1.0: u, v are H2, H3.
        for (h2, h3) in [
            (0, 0),
            (one, 0),
            (one, 1),
            (one / 2, one / 2),
            (one / 2, one / 2 + 1),
            (1u32.wrapping_neg(), 0),
            (0, 1u32.wrapping_neg()),
            (0x7FFF_FFFF, 0),
            (0x8000_0000, 0),
            (0x4000_0000, 0x4000_0000),
        ] {
            for delta in [one, one.wrapping_neg(), 1, 0, 0x8000_0000] {
                assert_eq!(
                    verdict(h2, || h3, delta),
                    exact_verdict(h2, h3, delta),
                    "{h2:#x} {h3:#x} {delta:#x}"
                );
            }
        }
    }

    #[test]
    fn exits_cost_what_the_listing_says() {
        // CALL, BIU 157..=172 (16), then per exit: RET | JGEX, RET | JGEX, ADD, JLEX, RET;
        // then JEQX and RETURN.
        assert_eq!(Exit::U.instructions(), 1 + 16 + 1 + 2);
        assert_eq!(Exit::V.instructions(), 1 + 16 + 2 + 2);
        assert_eq!(Exit::Sum.instructions(), 1 + 16 + 4 + 2);
    }

    #[test]
    fn the_premise_words_are_the_roms() {
        let (faithful, fixed) = (rom(RomVariant::Faithful), rom(RomVariant::Fixed));
        for &(address, word) in &REJECT_PATH_WORDS {
            assert_eq!(faithful[address as usize], Word(word), "{address}");
            if address < 172 {
                assert_eq!(fixed[address as usize], Word(word), "{address}");
            }
        }
        for (variant, biu) in [
            (RomVariant::Faithful, Biu::Faithful),
            (RomVariant::Fixed, Biu::Fixed),
        ] {
            let program = Program::new(rom(variant), &Program::default_imem());
            assert_eq!(biu_of(&program), Ok(biu));
        }
    }

    /// The fixed BIU's reject paths are the words [`FIXED_REJECT_PATH`] names: from
    /// FIXED_BIU_EDGES to just before FIXED_BIU_INSIDE, reached from 172.
    #[test]
    fn the_fixed_reject_path_is_the_fixed_biu_up_to_its_inside_test() {
        use crate::emu::core::rom::{FIXED_EXTENSION_SOURCE, ROM_SOURCE};
        let source = format!("{ROM_SOURCE}\n{FIXED_EXTENSION_SOURCE}");
        let assembly = crate::emu::isa::asm::assemble_rom(&source, std::path::Path::new("fixed"))
            .expect("the fixed ROM assembles");
        assert_eq!(assembly.labels["LABEL_BIU_TESTS"], 172);
        let tail = FIXED_REJECT_PATH[1].clone();
        assert_eq!(assembly.labels["FIXED_BIU_EDGES"], *tail.start());
        assert_eq!(assembly.labels["FIXED_BIU_INSIDE"], tail.end() + 1);
    }

    /// The fixed exits cost what fixed.shdr's paths count: CALL, BIU 157..=171, the jump,
    /// six edge-value instructions, `JLX`, three constants, then the tests up to the
    /// failing one and RET; JEQX and RETURN.
    #[test]
    fn fixed_exits_cost_what_the_listing_says() {
        let to_tests = 1 + 15 + 1 + 6 + 1 + 3;
        assert_eq!(Exit::Flat.instructions(), to_tests + 1 + 1 + 2);
        assert_eq!(Exit::G2.instructions(), to_tests + 2 + 1 + 2);
        assert_eq!(Exit::G3.instructions(), to_tests + 3 + 1 + 2);
        assert_eq!(Exit::G1.instructions(), to_tests + 4 + 1 + 2);
    }

    #[test]
    fn a_user_main_or_changed_word_is_refused() {
        let triangles = [[[0; 3]; 7]];
        let config = [[0; 3]; 6];
        let mut imem = Program::default_imem();
        imem[EntryPoint::Main as usize] = Word(0x800C);
        let program = Program::new(rom(RomVariant::Faithful), &imem);
        assert_eq!(
            Culler::new(&program, &triangles, &config).unwrap_err(),
            Refusal::UserMain { address: 0x800C }
        );
        // A changed word on a reject path: the shared part, the fixed tail, the jump.
        for (variant, address) in [
            (RomVariant::Faithful, 170),
            (RomVariant::Fixed, 170),
            (RomVariant::Fixed, 290),
            (RomVariant::Fixed, 172),
        ] {
            let mut words = rom(variant).to_vec();
            words[address as usize] = Word(0);
            let program = Program::new(&words, &Program::default_imem());
            assert_eq!(
                Culler::new(&program, &triangles, &config).unwrap_err(),
                Refusal::ChangedWord { address },
                "{variant:?}"
            );
        }
    }
}
