//! One pixel at a time, IEEE f32 (spec foreign_isas A.4-A.6). The program is decoded once
//! ([`R500Program::new`]); a run allocates nothing. Choices where the spec leaves a point open
//! (Part D.4) are stated where they are made:
//!
//! - Multiplies follow `US_CONFIG.ZERO_TIMES_ANYTHING_EQUALS_ZERO`, which Mesa always sets:
//!   a product with a zero factor is +0, even against inf or NaN ([`mul`]).
//! - MIN/MAX/CND/CMP are selects: a NaN comparison picks the second choice.
//! - Clamping sends NaN to 0; OMOD 7 means no scale and no clamp.
//! - SOP takes the alpha unit's result before the alpha OMOD and clamp.
//! - MDH/MDV run on a quad of four equal pixels (one pixel at a time): A and C both read
//!   src0 with their own modifiers, so derivatives of uniform values are 0.
//! - FC runs as scalar control flow: a pixel jumps or falls through (A.6, derived); branch
//!   counters (B_OP, B_POP_CNT, JUMP_ANY) only matter for divergent quads and are ignored.
//!   An ELSE (B_ELSE) always jumps: the pixel that reaches it ran the IF branch.
//! - TEX LD, LODBIAS, LOD and DXDY all sample at (S, T) (the texture has no mip levels);
//!   PROJ samples at (S/Q, T/Q); UNSCALED is decoded but coordinates stay in [0, 1].

use std::fmt;

use super::decode::{
    self, AlphaOp, Alu, Fc, FcOp, R500Decoded, R500Source, RgbOp, StackOp, Target, Tex, TexOp,
};
use super::fields::Words;
use crate::emu::core::Fault;
use crate::stage::{ForeignProgram, NamedVec4, PixelInputs, PixelRun, RunError, TextureSampler};

/// Temporaries per pixel.
pub const TEMPS: usize = 128;
/// Float constants.
pub const CONSTS: usize = 256;
/// Render targets `out[0..3]`.
pub const TARGETS: usize = 4;
/// Nesting limit of loops and of the address (call) stack.
pub const MAX_DEPTH: usize = 32;

/// The constant files a program reads: 256 float vec4s, 32 integer constants for loops
/// (count, initial aL, aL increment) and 32 booleans.
#[derive(Clone, Debug, PartialEq)]
pub struct Constants {
    pub floats: Vec<[f32; 4]>,
    pub ints: [[i32; 3]; 32],
    pub bools: u32,
}

impl Default for Constants {
    /// Floats 0; every integer constant 255 iterations from aL 0 in steps of 0 (what Mesa
    /// programs for its loops, which leave by BREAKLOOP); booleans false.
    fn default() -> Constants {
        Constants {
            floats: vec![[0.0; 4]; CONSTS],
            ints: [[255, 0, 0]; 32],
            bools: 0,
        }
    }
}

impl Constants {
    /// Sets one constant by name: `cN` / `const[N]` (float vec4), `iN` (count, initial aL,
    /// increment; whole numbers), `bN` (x ≠ 0 is true).
    pub fn set(&mut self, named: &NamedVec4) -> Result<(), String> {
        let name = named.name.as_str();
        let bad = || {
            format!(
                "`{name}` is no R500 constant: expected c0..c255 (or const[N]), i0..i31, b0..b31"
            )
        };
        let (kind, index) = if let Some(inner) = name
            .strip_prefix("const[")
            .and_then(|rest| rest.strip_suffix(']'))
        {
            ('c', inner)
        } else {
            let mut chars = name.chars();
            let kind = chars.next().ok_or_else(bad)?;
            (kind, chars.as_str())
        };
        let index: usize = index.parse().map_err(|_| bad())?;
        match kind {
            'c' if index < CONSTS => self.floats[index] = named.value,
            'i' if index < 32 => {
                let [count, init, inc, _] = named.value;
                for v in [count, init, inc] {
                    if v.fract() != 0.0 || !(-128.0..=255.0).contains(&v) {
                        return Err(format!(
                            "{name}: integer constants take whole numbers (count 0-255, aL and step -128 to 127)"
                        ));
                    }
                }
                self.ints[index] = [count as i32, init as i32, inc as i32];
            }
            'b' if index < 32 => {
                self.bools =
                    (self.bools & !(1 << index)) | (((named.value[0] != 0.0) as u32) << index)
            }
            _ => return Err(bad()),
        }
        Ok(())
    }

    /// Reads a `FILE.consts` text: one `NAME=x,y,z,w` a line; `#` and `--` start comments.
    pub fn parse(text: &str, name: &str) -> Result<Constants, String> {
        let mut constants = Constants::default();
        constants.apply_text(text, name)?;
        Ok(constants)
    }

    /// As [`Constants::parse`], on top of the values already set.
    pub fn apply_text(&mut self, text: &str, name: &str) -> Result<(), String> {
        for (number, line) in text.lines().enumerate() {
            let code = line.split('#').next().unwrap_or("");
            let code = code.split("--").next().unwrap_or("");
            if code.trim().is_empty() {
                continue;
            }
            let col = line.len() - line.trim_start().len() + 1;
            let named: NamedVec4 = code
                .parse()
                .map_err(|e| format!("{name}:{}:{col}: {e}", number + 1))?;
            self.set(&named)
                .map_err(|e| format!("{name}:{}:{col}: {e}", number + 1))?;
        }
        Ok(())
    }
}

/// Where TEX instructions read texels.
pub trait Texture {
    /// The texel (r, g, b, a) of unit `unit` at (s, t) in [0, 1].
    fn sample(&self, unit: u8, s: f32, t: f32) -> [f32; 4];
}

/// No texture bound: every unit reads opaque black.
pub struct NoTexture;

impl Texture for NoTexture {
    fn sample(&self, _: u8, _: f32, _: f32) -> [f32; 4] {
        [0.0, 0.0, 0.0, 1.0]
    }
}

/// Unit 0 is the scene's texture memory; the others read opaque black.
impl Texture for TextureSampler<'_> {
    fn sample(&self, unit: u8, s: f32, t: f32) -> [f32; 4] {
        if unit == 0 {
            TextureSampler::sample(self, s, t)
        } else {
            [0.0, 0.0, 0.0, 1.0]
        }
    }
}

/// One pixel's registers.
#[derive(Clone)]
pub struct Pixel {
    pub temps: [[f32; 4]; TEMPS],
    pub outs: [[f32; 4]; TARGETS],
    pub depth: f32,
    /// Bit k: out\[k\] was written; bit 4: depth was written.
    pub written: u8,
    /// Predicate bits r, g, b, a.
    pub predicate: [bool; 4],
    /// The ALU result FC instructions test.
    pub alu_result: bool,
    /// The loop register.
    pub al: i32,
    /// TEXKILL removed the pixel.
    pub killed: bool,
}

impl Default for Pixel {
    fn default() -> Pixel {
        Pixel {
            temps: [[0.0; 4]; TEMPS],
            outs: [[0.0; 4]; TARGETS],
            depth: 0.0,
            written: 0,
            predicate: [false; 4],
            alu_result: false,
            al: 0,
            killed: false,
        }
    }
}

/// A decoded R500 fragment program with its constants.
#[derive(Clone)]
pub struct R500Program {
    pub instructions: Vec<R500Decoded>,
    pub constants: Constants,
}

impl fmt::Debug for R500Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "R500 program ({} instructions)", self.instructions.len())
    }
}

/// `a·b` under the legacy multiply rule: a zero factor gives +0 (0·inf = 0, 0·NaN = 0).
pub fn mul(a: f32, b: f32) -> f32 {
    if a == 0.0 || b == 0.0 {
        0.0
    } else {
        a * b
    }
}

/// Clamp to [0, 1], NaN to 0.
pub fn saturate(v: f32) -> f32 {
    if v > 0.0 {
        v.min(1.0)
    } else {
        0.0
    }
}

/// OMOD scale then clamp; `None` (OMOD 7) neither scales nor clamps.
pub fn output_modifier(v: f32, omod: Option<f32>, clamp: bool) -> f32 {
    let Some(scale) = omod else {
        return v;
    };
    let scaled = v * scale;
    if clamp {
        saturate(scaled)
    } else {
        scaled
    }
}

/// `x − floor(x)`.
pub fn frc(x: f32) -> f32 {
    x - x.floor()
}

/// `sin(2π·x)`: R500's SIN takes revolutions (computed in f64, rounded once).
pub fn sin_rev(x: f32) -> f32 {
    (x as f64 * std::f64::consts::TAU).sin() as f32
}

/// `cos(2π·x)`.
pub fn cos_rev(x: f32) -> f32 {
    (x as f64 * std::f64::consts::TAU).cos() as f32
}

/// CMP: `c >= 0 ? a : b`.
pub fn cmp(a: f32, b: f32, c: f32) -> f32 {
    if c >= 0.0 {
        a
    } else {
        b
    }
}

/// CND: `c > 0.5 ? a : b`.
pub fn cnd(a: f32, b: f32, c: f32) -> f32 {
    if c > 0.5 {
        a
    } else {
        b
    }
}

/// MIN: `a < b ? a : b`.
pub fn min(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

/// MAX: `a > b ? a : b`.
pub fn max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// The end of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct R500Run {
    /// Instructions executed.
    pub steps: u64,
}

/// One loop or repeat on the loop stack.
#[derive(Clone, Copy, Debug, Default)]
struct LoopState {
    /// Iterations left.
    remaining: i32,
    /// aL before the loop, restored when it ends.
    saved_al: i32,
    /// aL's step per iteration.
    increment: i32,
    /// LOOP sets and steps aL; REP leaves it alone.
    sets_al: bool,
}

/// The loop stack and the address (call) stack of one run.
struct Stacks {
    loops: [LoopState; MAX_DEPTH],
    loop_depth: usize,
    calls: [usize; MAX_DEPTH],
    call_depth: usize,
}

impl Stacks {
    fn new() -> Stacks {
        Stacks {
            loops: [LoopState::default(); MAX_DEPTH],
            loop_depth: 0,
            calls: [0; MAX_DEPTH],
            call_depth: 0,
        }
    }

    fn innermost(&mut self) -> Option<&mut LoopState> {
        let depth = self.loop_depth.checked_sub(1)?;
        Some(&mut self.loops[depth])
    }

    /// Pops the innermost loop, restoring aL if it was a LOOP.
    fn leave_loop(&mut self, pixel: &mut Pixel) {
        self.loop_depth -= 1;
        let state = self.loops[self.loop_depth];
        if state.sets_al {
            pixel.al = state.saved_al;
        }
    }
}

/// The RGB and alpha results of an ALU instruction's ops, before OMOD and clamping.
fn compute(alu: &Alu, slots: &[[f32; 4]; 4]) -> ([f32; 3], f32) {
    let rgb_arg = |i: usize| -> [f32; 3] {
        let arg = &alu.rgb_args[i];
        let slot = &slots[arg.select as usize];
        arg.swizzle
            .map(|swizzle| arg.modifier.apply(swizzle.apply(slot)))
    };
    let alpha_arg = |i: usize| -> f32 {
        let arg = &alu.alpha_args[i];
        arg.modifier
            .apply(arg.swizzle.apply(&slots[arg.select as usize]))
    };
    let (a, b, c) = (rgb_arg(0), rgb_arg(1), rgb_arg(2));
    let (aa, ab, ac) = (alpha_arg(0), alpha_arg(1), alpha_arg(2));
    let dp3 = mul(a[0], b[0]) + mul(a[1], b[1]) + mul(a[2], b[2]);
    let dp4 = dp3 + mul(aa, ab);

    // Derivative ops on a quad of equal pixels: A and C both read src0.
    let quad_rgb = |i: usize| [0, 1, 2].map(|ch| alu.rgb_args[i].modifier.apply(slots[0][ch]));
    let quad_alpha = |i: usize| alu.alpha_args[i].modifier.apply(slots[0][3]);

    let alpha = match alu.alpha_op {
        AlphaOp::Mad => mul(aa, ab) + ac,
        AlphaOp::Dp => {
            if alu.rgb_op == RgbOp::Dp3 {
                dp3
            } else {
                dp4
            }
        }
        AlphaOp::Min => min(aa, ab),
        AlphaOp::Max => max(aa, ab),
        AlphaOp::Cnd => cnd(aa, ab, ac),
        AlphaOp::Cmp => cmp(aa, ab, ac),
        AlphaOp::Frc => frc(aa),
        AlphaOp::Ex2 => aa.exp2(),
        AlphaOp::Ln2 => aa.log2(),
        AlphaOp::Rcp => 1.0 / aa,
        AlphaOp::Rsq => 1.0 / aa.sqrt(),
        AlphaOp::Sin => sin_rev(aa),
        AlphaOp::Cos => cos_rev(aa),
        AlphaOp::Mdh | AlphaOp::Mdv => mul(quad_alpha(0), ab) + quad_alpha(2),
    };
    let rgb: [f32; 3] = match alu.rgb_op {
        RgbOp::Mad => std::array::from_fn(|i| mul(a[i], b[i]) + c[i]),
        RgbOp::Dp3 => [dp3; 3],
        RgbOp::Dp4 => [dp4; 3],
        RgbOp::D2a => [mul(a[0], b[0]) + mul(a[1], b[1]) + c[2]; 3],
        RgbOp::Min => std::array::from_fn(|i| min(a[i], b[i])),
        RgbOp::Max => std::array::from_fn(|i| max(a[i], b[i])),
        RgbOp::Cnd => std::array::from_fn(|i| cnd(a[i], b[i], c[i])),
        RgbOp::Cmp => std::array::from_fn(|i| cmp(a[i], b[i], c[i])),
        RgbOp::Frc => a.map(frc),
        RgbOp::Sop => [alpha; 3],
        RgbOp::Mdh | RgbOp::Mdv => {
            let (qa, qc) = (quad_rgb(0), quad_rgb(2));
            std::array::from_fn(|i| mul(qa[i], b[i]) + qc[i])
        }
    };
    (rgb, alpha)
}

/// Writes an ALU instruction's results: temps by WMASK, then by OMASK the render targets
/// and depth (OUT) or the predicate bits (ALU); predication gates all but the last.
fn write_back(pixel: &mut Pixel, alu: &Alu, rgb: [f32; 3], alpha: f32) {
    let common = &alu.common;
    let rgb_enabled: [bool; 3] =
        std::array::from_fn(|ch| common.rgb_pred.test(&pixel.predicate, ch).unwrap_or(true));
    let alpha_enabled = common.alpha_pred.test(&pixel.predicate, 3).unwrap_or(true);
    let offset = |rel: bool| if rel { pixel.al } else { 0 };
    let rgb_dest =
        (alu.rgb_dest as i32 + offset(alu.rgb_dest_rel)).rem_euclid(TEMPS as i32) as usize;
    let alpha_dest =
        (alu.alpha_dest as i32 + offset(alu.alpha_dest_rel)).rem_euclid(TEMPS as i32) as usize;
    for ch in 0..3 {
        if common.rgb_wmask >> ch & 1 == 1 && rgb_enabled[ch] {
            pixel.temps[rgb_dest][ch] = rgb[ch];
        }
    }
    if common.alpha_wmask && alpha_enabled {
        pixel.temps[alpha_dest][3] = alpha;
    }
    for (ch, &value) in rgb.iter().enumerate() {
        if common.rgb_omask >> ch & 1 == 1 {
            match alu.rgb_target {
                Target::Output(target) if rgb_enabled[ch] => {
                    pixel.outs[target][ch] = value;
                    pixel.written |= 1 << target;
                }
                Target::Predicate(compare) => pixel.predicate[ch] = compare.test(value),
                Target::Output(_) => {}
            }
        }
    }
    if common.alpha_omask {
        match alu.alpha_target {
            Target::Output(target) if alpha_enabled => {
                pixel.outs[target][3] = alpha;
                pixel.written |= 1 << target;
            }
            Target::Predicate(compare) => pixel.predicate[3] = compare.test(alpha),
            Target::Output(_) => {}
        }
    }
    if alu.out && alu.w_omask && alpha_enabled {
        pixel.depth = alpha;
        pixel.written |= 1 << 4;
    }
}

fn fault(pc: usize, reason: &'static str) -> Fault {
    Fault::Stage {
        isa: "R500",
        pc: pc as u32,
        reason,
    }
}

impl R500Program {
    /// Decodes `words` once.
    pub fn new(words: &[Words], constants: Constants) -> Result<R500Program, decode::DecodeError> {
        Ok(R500Program {
            instructions: decode::decode_program(words)?,
            constants,
        })
    }

    /// Runs the program on `pixel` to its end (or TEXKILL) within `budget` instructions.
    pub fn run(
        &self,
        pixel: &mut Pixel,
        texture: &dyn Texture,
        budget: u64,
    ) -> Result<R500Run, Fault> {
        let mut stacks = Stacks::new();
        let mut pc = 0;
        let mut steps = 0;
        while pc < self.instructions.len() {
            if steps >= budget {
                return Err(fault(
                    pc,
                    "the instruction budget ran out (an endless loop?)",
                ));
            }
            steps += 1;
            pc = match &self.instructions[pc] {
                R500Decoded::Alu(alu) => {
                    self.alu(pixel, alu);
                    pc + 1
                }
                R500Decoded::Tex(tex) => {
                    self.tex(pixel, tex, texture);
                    if pixel.killed {
                        break;
                    }
                    pc + 1
                }
                R500Decoded::Fc(fc) => self.flow(pixel, fc, pc, &mut stacks)?,
            };
        }
        Ok(R500Run { steps })
    }

    /// One FC instruction at `pc`: the next pc.
    fn flow(
        &self,
        pixel: &mut Pixel,
        fc: &Fc,
        pc: usize,
        stacks: &mut Stacks,
    ) -> Result<usize, Fault> {
        let take = self.jump_wanted(pixel, fc);
        let target = fc.target as usize;
        let next = pc + 1;
        Ok(match fc.op {
            // The address stack makes JUMP a call (push) or a return (pop).
            FcOp::Jump if take || fc.b_else => match fc.stack {
                StackOp::Push => {
                    if stacks.call_depth == MAX_DEPTH {
                        return Err(fault(pc, "address stack overflow"));
                    }
                    stacks.calls[stacks.call_depth] = next;
                    stacks.call_depth += 1;
                    target
                }
                StackOp::Pop => {
                    if stacks.call_depth == 0 {
                        return Err(fault(pc, "return with an empty address stack"));
                    }
                    stacks.call_depth -= 1;
                    stacks.calls[stacks.call_depth]
                }
                StackOp::None => target,
            },
            FcOp::Loop | FcOp::Rep => self.enter_loop(pixel, fc, pc, stacks)?,
            // Count down, step aL, back to the body.
            FcOp::EndLoop | FcOp::EndRep => {
                let Some(top) = stacks.innermost() else {
                    return Err(fault(pc, "ENDLOOP/ENDREP outside a loop"));
                };
                top.remaining -= 1;
                if top.sets_al {
                    pixel.al += top.increment;
                }
                if top.remaining > 0 {
                    target
                } else {
                    stacks.leave_loop(pixel);
                    next
                }
            }
            // Leave the innermost loop.
            FcOp::BreakLoop | FcOp::BreakRep if take => {
                if stacks.loop_depth == 0 {
                    return Err(fault(pc, "BREAKLOOP/BREAKREP outside a loop"));
                }
                stacks.leave_loop(pixel);
                target
            }
            FcOp::Continue if take => target,
            _ => next,
        })
    }

    /// LOOP, REP: into the body, or past the end when the count is 0.
    fn enter_loop(
        &self,
        pixel: &mut Pixel,
        fc: &Fc,
        pc: usize,
        stacks: &mut Stacks,
    ) -> Result<usize, Fault> {
        let [count, init, increment] = self.constants.ints[fc.int_addr as usize];
        if count == 0 {
            return Ok(fc.target as usize + 1);
        }
        if stacks.loop_depth == MAX_DEPTH {
            return Err(fault(pc, "loops nested deeper than 32"));
        }
        let sets_al = fc.op == FcOp::Loop;
        stacks.loops[stacks.loop_depth] = LoopState {
            remaining: count,
            saved_al: pixel.al,
            increment,
            sets_al,
        };
        stacks.loop_depth += 1;
        if sets_al {
            pixel.al = init;
        }
        Ok(pc + 1)
    }

    /// JUMP_FUNC's truth table at `(alu_result << 2) | (predicate << 1) | bool`.
    fn jump_wanted(&self, pixel: &Pixel, fc: &Fc) -> bool {
        let predicate = fc.pred.test(&pixel.predicate, 0).unwrap_or(false);
        let boolean = self.constants.bools >> fc.bool_addr & 1 == 1;
        let index = (pixel.alu_result as u8) << 2 | (predicate as u8) << 1 | boolean as u8;
        fc.jump_func >> index & 1 == 1
    }

    fn read(&self, pixel: &Pixel, address: &decode::Address) -> [f32; 4] {
        let offset = if address.relative { pixel.al } else { 0 };
        match address.source {
            R500Source::Temp(n) => {
                pixel.temps[(n as i32 + offset).rem_euclid(TEMPS as i32) as usize]
            }
            R500Source::Const(n) => {
                self.constants.floats[(n as i32 + offset).rem_euclid(CONSTS as i32) as usize]
            }
            R500Source::Inline(v) => [v; 4],
        }
    }

    /// The four slots the arguments select from: src0, src1, src2 and srcp.
    fn slots(&self, pixel: &Pixel, alu: &Alu) -> [[f32; 4]; 4] {
        // Slot k: R, G, B through the RGB address, A through the alpha address (A.4).
        let slot = |k: usize| {
            let rgb = self.read(pixel, &alu.rgb_sources[k]);
            let alpha = self.read(pixel, &alu.alpha_sources[k]);
            [rgb[0], rgb[1], rgb[2], alpha[3]]
        };
        let (s0, s1, s2) = (slot(0), slot(1), slot(2));
        // srcp: RGB channels by the RGB address word's SRCP_OP, alpha by the alpha word's.
        let srcp: [f32; 4] = std::array::from_fn(|c| {
            let op = if c == 3 { alu.alpha_srcp } else { alu.rgb_srcp };
            op.apply(s0[c], s1[c])
        });
        [s0, s1, s2, srcp]
    }

    fn alu(&self, pixel: &mut Pixel, alu: &Alu) {
        let (rgb, alpha) = compute(alu, &self.slots(pixel, alu));
        let rgb = rgb.map(|v| output_modifier(v, alu.rgb_omod, alu.rgb_clamp));
        let alpha = output_modifier(alpha, alu.alpha_omod, alu.alpha_clamp);
        if alu.alu_result_write {
            let value = if alu.alu_result_alpha { alpha } else { rgb[0] };
            pixel.alu_result = alu.alu_result_op.test(value);
        }
        write_back(pixel, alu, rgb, alpha);
    }

    fn tex(&self, pixel: &mut Pixel, tex: &Tex, texture: &dyn Texture) {
        let offset = |rel: bool| if rel { pixel.al } else { 0 };
        let src = (tex.src as i32 + offset(tex.src_rel)).rem_euclid(TEMPS as i32) as usize;
        let coords = tex.src_swizzle.map(|ch| pixel.temps[src][ch as usize]);
        let [s, t, _, q] = coords;
        let texel = match tex.op {
            TexOp::Nop => return,
            TexOp::Texkill => {
                pixel.killed = coords.iter().any(|&v| v < 0.0);
                return;
            }
            TexOp::Proj => texture.sample(tex.unit, s / q, t / q),
            TexOp::Ld | TexOp::Lodbias | TexOp::Lod | TexOp::Dxdy => texture.sample(tex.unit, s, t),
        };
        let dst = (tex.dst as i32 + offset(tex.dst_rel)).rem_euclid(TEMPS as i32) as usize;
        for ch in 0..3 {
            if tex.common.rgb_wmask >> ch & 1 == 1 {
                pixel.temps[dst][ch] = texel[tex.dst_swizzle[ch] as usize];
            }
        }
        if tex.common.alpha_wmask {
            pixel.temps[dst][3] = texel[tex.dst_swizzle[3] as usize];
        }
    }

    /// A pixel whose temp[0..3] hold `inputs` (`temp0`/`temp[0]` = x,y,z,w), the rest 0.
    pub fn pixel_with(inputs: &[NamedVec4]) -> Result<Pixel, String> {
        let mut pixel = Pixel::default();
        for input in inputs {
            let name = input.name.as_str();
            let index = name
                .strip_prefix("temp[")
                .and_then(|rest| rest.strip_suffix(']'))
                .or_else(|| name.strip_prefix("temp"))
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|&n| n < TEMPS)
                .ok_or_else(|| {
                    format!("`{name}` is no R500 input: expected temp0..temp127 (or temp[N])")
                })?;
            pixel.temps[index] = input.value;
        }
        Ok(pixel)
    }
}

impl ForeignProgram for R500Program {
    fn instruction_set(&self) -> &'static str {
        "R500"
    }

    /// Outputs `out[0]`..`out[3]` that were written, then `depth` if written; none when a
    /// TEXKILL removed the pixel. Textures read opaque black.
    fn run_once(
        &self,
        inputs: &[NamedVec4],
        budget: u64,
    ) -> Result<Vec<(String, [f32; 4])>, RunError> {
        let mut pixel = R500Program::pixel_with(inputs).map_err(RunError::Input)?;
        self.run(&mut pixel, &NoTexture, budget)?;
        let mut outputs = Vec::new();
        if pixel.killed {
            return Ok(outputs);
        }
        for target in 0..TARGETS {
            if pixel.written >> target & 1 == 1 {
                outputs.push((format!("out[{target}]"), pixel.outs[target]));
            }
        }
        if pixel.written >> 4 & 1 == 1 {
            outputs.push(("depth".to_string(), [pixel.depth, 0.0, 0.0, 0.0]));
        }
        Ok(outputs)
    }

    /// temp\[0..3\] = the four standard inputs, tex\[0\] = the texture memory; out\[0\].rgb is
    /// the colour (clamped, as an OMWRITE). A killed pixel writes nothing.
    fn run_pixel(
        &self,
        inputs: &PixelInputs,
        texture: &TextureSampler,
        budget: u64,
    ) -> Result<PixelRun, Fault> {
        let mut pixel = Pixel::default();
        pixel.temps[..4].copy_from_slice(&inputs.registers());
        let run = self.run(&mut pixel, texture, budget)?;
        let [r, g, b, _] = pixel.outs[0];
        Ok(PixelRun {
            executed: run.steps,
            colour: (!pixel.killed).then_some([r, g, b]),
        })
    }
}
