//! What every foreign pixel stage (R500, PICA200) shares: the four standard inputs read from
//! the registers the ROM left ([`PixelInputs::read`]), texture sampling
//! ([`TextureSampler`]), the colour written as OMWRITE would ([`write_colour`]), and the
//! one [`PixelStage`] impl for every [`ForeignProgram`].

use std::fmt;
use std::str::FromStr;

use super::{PixelStage, ShadingCore};
use crate::emu::core::alu::{self, Vec3};
use crate::emu::core::Fault;

/// Register addresses the stage inputs are read from (spec isa_and_formats §2.2).
mod reg {
    pub use crate::emu::isa::registers::address::{
        CREG_CURRENT_OUTPUT_PIXEL as CURRENT_OUTPUT_PIXEL, CREG_LAST_T as LAST_T,
        CREG_LAST_U as LAST_U, CREG_LAST_V as LAST_V, CREG_PIXEL_2D_POSITION as PIXEL_2D_POSITION,
        CREG_RESOLUTION as RESOLUTION, CREG_TEXTURE_COLOR as TEXTURE_COLOR,
        CREG_TEXTURE_SIZE as TEXTURE_SIZE, CREG_UV0_LAST as UV0_LAST, CREG_UV1_LAST as UV1_LAST,
        CREG_UV2_LAST as UV2_LAST,
    };
}

/// A program of another GPU's instruction set, shading THEIA's pixels (and run once
/// outside any scene by `theia run-shader`). Every such program is a [`PixelStage`]
/// through the one impl below: run within the pixel's budget, book what ran, write the
/// colour.
pub trait ForeignProgram: fmt::Debug + Send + Sync {
    /// The instruction set, for summaries and errors: `R500`, `PICA200`.
    fn instruction_set(&self) -> &'static str;

    /// Runs one invocation with `inputs` (input registers by the ISA's own names, e.g.
    /// `temp0` or `v0`; the others zero) within `budget` instructions, and returns every
    /// output register written, in register order, by the ISA's names (`out0`, `o0`).
    fn run_once(
        &self,
        inputs: &[NamedVec4],
        budget: u64,
    ) -> Result<Vec<(String, [f32; 4])>, RunError>;

    /// Runs the program on one pixel's `inputs`, reading `texture`, within `budget`
    /// instructions.
    fn run_pixel(
        &self,
        inputs: &PixelInputs,
        texture: &TextureSampler,
        budget: u64,
    ) -> Result<PixelRun, Fault>;
}

/// Every foreign ISA's pixel-stage sequence: run within the pixel's budget, book what ran
/// (the whole budget on a fault, as the watchdog would), then write the colour.
impl<P: ForeignProgram + ?Sized> PixelStage for P {
    fn isa(&self) -> &'static str {
        self.instruction_set()
    }

    fn shade(&self, core: &mut dyn ShadingCore) -> Result<(), Fault> {
        let inputs = PixelInputs::read(core);
        let budget = core.budget_left();
        match self.run_pixel(&inputs, &TextureSampler::of(core), budget) {
            Ok(run) => {
                core.charge(run.executed);
                if let Some(rgb) = run.colour {
                    write_colour(core, rgb);
                }
                Ok(())
            }
            Err(fault) => {
                core.charge(budget);
                Err(fault)
            }
        }
    }
}

/// What one foreign run on a pixel did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PixelRun {
    /// Instructions executed.
    pub executed: u64,
    /// The pixel's rgb; `None` when the program removed the pixel (R500 TEXKILL).
    pub colour: Option<[f32; 3]>,
}

/// Why [`ForeignProgram::run_once`] gave no outputs.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An input names no input register of the ISA, or similar.
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Fault(#[from] Fault),
}

/// The four inputs every foreign pixel stage receives (spec README, decision 9), as the
/// rasteriser of a real GPU would interpolate them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PixelInputs {
    /// (s, t, 0, 1): the closest hit's texture coordinates, 1.0 = the texture memory's width
    /// (height): what TCC computes, `UV0 + u·(UV1 − UV0) + v·(UV2 − UV0)`, with its
    /// truncating multiplier. Zero on a miss.
    pub texcoord: [f32; 4],
    /// (r, g, b, 1): CREG_TEXTURE_COLOR as PSU2 left it (on a miss, what NPG or INITIAL
    /// left: the faithful ROM's red (3, 0, 0), or black).
    pub color: [f32; 4],
    /// (u, v, t, hit): the closest hit's barycentrics and distance, and 1.0 on a hit; all
    /// zero on a miss.
    pub hit: [f32; 4],
    /// (x, y, 0, 1): the pixel centre in [-1, 1], y up.
    pub position: [f32; 4],
}

impl PixelInputs {
    /// Reads the inputs from the registers the ROM left for the current pixel.
    pub fn read(core: &dyn ShadingCore) -> PixelInputs {
        let colour = core.register(reg::TEXTURE_COLOR);
        let position = core.register(reg::PIXEL_2D_POSITION);
        let resolution = core.register(reg::RESOLUTION);
        let centre = |pixel: u32, size: u32| {
            let size = (size >> 17).max(1) as f32;
            2.0 * ((pixel >> 17) as f32 + 0.5) / size - 1.0
        };
        let mut inputs = PixelInputs {
            texcoord: [0.0, 0.0, 0.0, 1.0],
            color: [q(colour[0]), q(colour[1]), q(colour[2]), 1.0],
            hit: [0.0; 4],
            position: [
                centre(position[0], resolution[0]),
                -centre(position[1], resolution[1]),
                0.0,
                1.0,
            ],
        };
        if core.hit() {
            let (u, v) = (core.register(reg::LAST_U)[0], core.register(reg::LAST_V)[0]);
            let st = interpolate_uv(
                [
                    core.register(reg::UV0_LAST),
                    core.register(reg::UV1_LAST),
                    core.register(reg::UV2_LAST),
                ],
                u,
                v,
            );
            inputs.texcoord = [q(st[0]), q(st[1]), 0.0, 1.0];
            inputs.hit = [q(u), q(v), q(core.register(reg::LAST_T)[0]), 1.0];
        }
        inputs
    }

    /// The inputs in the order of the ISAs' input registers (`temp[0..3]`, `v0..v3`).
    pub fn registers(&self) -> [[f32; 4]; 4] {
        [self.texcoord, self.color, self.hit, self.position]
    }
}

/// A Q15.17 word as the nearest f32.
pub fn q(word: u32) -> f32 {
    (word as i32) as f32 / alu::ONE as f32
}

/// An f32 as a Q15.17 word, rounded to nearest (ties away from zero), saturating at the
/// format's ends.
pub fn to_q(value: f32) -> u32 {
    let scaled = (value as f64 * alu::ONE as f64).round();
    scaled.clamp(i32::MIN as f64, i32::MAX as f64) as i32 as u32
}

/// TCC 191..=196: `UV0 + u·(UV1 − UV0) + v·(UV2 − UV0)` with the ROM's SUB, MUL and ADD.
pub fn interpolate_uv(uv: [Vec3; 3], u: u32, v: u32) -> Vec3 {
    std::array::from_fn(|i| {
        let du = alu::mul(u, alu::sub(uv[1][i], uv[0][i]));
        let dv = alu::mul(v, alu::sub(uv[2][i], uv[0][i]));
        alu::add(alu::add(du, dv), uv[0][i])
    })
}

/// Bilinear sampling of the texture memory with the correct texel pairing (the `fixed`
/// ROM's PSU2), in f32: texel (i, j) is words 3(i + j·W) + {0, 1, 2}, coordinates wrap
/// modulo the texture size as TCC's MOD does, and texel centres sit at whole coordinates
/// (`F = st·size`, weights from `frac(F)`), as in the ROM.
#[derive(Clone, Copy, Debug)]
pub struct TextureSampler<'a> {
    words: &'a [u32],
    width: u32,
    height: u32,
}

impl<'a> TextureSampler<'a> {
    /// A sampler over `words` for a texture of CREG_TEXTURE_SIZE `size` (Q15.17 W, H).
    pub fn new(words: &'a [u32], size: Vec3) -> TextureSampler<'a> {
        TextureSampler {
            words,
            width: (size[0] >> 17).max(1),
            height: (size[1] >> 17).max(1),
        }
    }

    /// The sampler for `core`'s texture memory and CREG_TEXTURE_SIZE.
    pub fn of(core: &'a dyn ShadingCore) -> TextureSampler<'a> {
        TextureSampler::new(core.texture(), core.register(reg::TEXTURE_SIZE))
    }

    /// (r, g, b, 1) at (s, t); a coordinate that is not finite reads as 0.
    pub fn sample(&self, s: f32, t: f32) -> [f32; 4] {
        let axis = |coordinate: f32, size: u32| {
            let f = if coordinate.is_finite() {
                coordinate as f64 * size as f64
            } else {
                0.0
            };
            let floor = f.floor();
            let first = (floor as i64).rem_euclid(size as i64) as u32;
            (first, (first + 1) % size, (f - floor) as f32)
        };
        let (u1, u2, a) = axis(s, self.width);
        let (v1, v2, b) = axis(t, self.height);
        let texel = |i: u32, j: u32| -> [f32; 3] {
            let base = 3 * (i as usize + j as usize * self.width as usize);
            std::array::from_fn(|c| q(self.words.get(base + c).copied().unwrap_or(0)))
        };
        let (c11, c21, c12, c22) = (texel(u1, v1), texel(u2, v1), texel(u1, v2), texel(u2, v2));
        let mut rgba = [0.0, 0.0, 0.0, 1.0];
        for c in 0..3 {
            rgba[c] = c11[c] * (1.0 - a) * (1.0 - b)
                + c21[c] * a * (1.0 - b)
                + c12[c] * (1.0 - a) * b
                + c22[c] * a * b;
        }
        rgba
    }
}

/// Writes the pixel's colour as the THEIA pixel shader would: each channel clamped to
/// [0, 1] (NaN as 0), as the nearest Q15.17 word, OMWRITE to the addresses in
/// CREG_CURRENT_OUTPUT_PIXEL.
pub fn write_colour(core: &mut dyn ShadingCore, rgb: [f32; 3]) {
    let words = rgb.map(|c| to_q(if c.is_nan() { 0.0 } else { c.clamp(0.0, 1.0) }));
    let addresses = core.register(reg::CURRENT_OUTPUT_PIXEL);
    core.omwrite(addresses, words);
}

/// A `NAME=x,y,z,w` value from the command line (`--const c0=…`, `--in v0=…`). Fewer than
/// four numbers leave the rest at 0 (w at 1 is not assumed: say it).
#[derive(Clone, Debug, PartialEq)]
pub struct NamedVec4 {
    pub name: String,
    pub value: [f32; 4],
}

impl FromStr for NamedVec4 {
    type Err = String;

    fn from_str(text: &str) -> Result<NamedVec4, String> {
        let expected = || format!("expected NAME=x,y,z,w (one to four numbers), found `{text}`");
        let (name, numbers) = text.split_once('=').ok_or_else(expected)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(expected());
        }
        let parts: Vec<&str> = numbers.split(',').map(str::trim).collect();
        if parts.len() > 4 {
            return Err(expected());
        }
        let mut value = [0.0; 4];
        for (slot, part) in value.iter_mut().zip(&parts) {
            *slot = parse_f32(part).ok_or_else(expected)?;
        }
        Ok(NamedVec4 {
            name: name.to_string(),
            value,
        })
    }
}

/// Parses a number as [`shortest`] prints it (`inf`, `-inf`, `nan` included).
fn parse_f32(text: &str) -> Option<f32> {
    match text {
        "nan" | "NaN" => Some(f32::NAN),
        _ => text.parse().ok(),
    }
}

/// The shortest text that reads back to the same f32: `0.5`, `1`, `-0`, `inf`, `-inf`,
/// `nan` (every NaN).
pub fn shortest(value: f32) -> String {
    if value.is_nan() {
        "nan".to_string()
    } else {
        // Rust's Display for floats is the shortest round-trip representation.
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::isa::registers::EntryPoint;

    /// A core that is nothing but registers, a texture and an output log.
    struct Bench {
        registers: std::collections::HashMap<u16, Vec3>,
        hit: bool,
        texture: Vec<u32>,
        written: Vec<(u32, u32)>,
        budget: u64,
    }

    impl Bench {
        fn new() -> Bench {
            Bench {
                registers: Default::default(),
                hit: false,
                texture: Vec::new(),
                written: Vec::new(),
                budget: 100,
            }
        }
    }

    impl ShadingCore for Bench {
        fn run_routine(&mut self, _: EntryPoint) -> Result<bool, Fault> {
            Ok(true)
        }
        fn register(&self, address: u16) -> Vec3 {
            self.registers.get(&address).copied().unwrap_or([0; 3])
        }
        fn hit(&self) -> bool {
            self.hit
        }
        fn texture(&self) -> &[u32] {
            &self.texture
        }
        fn omwrite(&mut self, addresses: Vec3, values: Vec3) {
            self.written.extend(addresses.into_iter().zip(values));
        }
        fn budget_left(&self) -> u64 {
            self.budget
        }
        fn charge(&mut self, instructions: u64) {
            self.budget -= instructions;
        }
    }

    const ONE: u32 = alu::ONE;

    #[test]
    fn inputs_of_a_hit() {
        let mut core = Bench::new();
        core.hit = true;
        core.registers
            .insert(reg::RESOLUTION, [4 << 17, 2 << 17, 0]);
        core.registers
            .insert(reg::PIXEL_2D_POSITION, [3 << 17, 0, 0]);
        core.registers
            .insert(reg::TEXTURE_COLOR, [ONE / 2, ONE / 4, 0]);
        core.registers.insert(reg::LAST_U, [ONE / 4; 3]);
        core.registers.insert(reg::LAST_V, [ONE / 2; 3]);
        core.registers.insert(reg::LAST_T, [10 * ONE; 3]);
        // UV0 = (0, 0), UV1 = (1, 0), UV2 = (0, 1): st = (u, v).
        core.registers.insert(reg::UV1_LAST, [ONE, 0, 0]);
        core.registers.insert(reg::UV2_LAST, [0, ONE, 0]);
        let inputs = PixelInputs::read(&core);
        assert_eq!(inputs.texcoord, [0.25, 0.5, 0.0, 1.0]);
        assert_eq!(inputs.color, [0.5, 0.25, 0.0, 1.0]);
        assert_eq!(inputs.hit, [0.25, 0.5, 10.0, 1.0]);
        // Column 3 of 4: centre 3.5 / 4 * 2 - 1 = 0.75; row 0 of 2: y = +0.5.
        assert_eq!(inputs.position, [0.75, 0.5, 0.0, 1.0]);
    }

    #[test]
    fn a_miss_gives_zero_hit_inputs_and_the_miss_colour() {
        let mut core = Bench::new();
        core.registers.insert(reg::TEXTURE_COLOR, [3 * ONE, 0, 0]);
        core.registers.insert(reg::LAST_T, [7 * ONE; 3]);
        core.registers
            .insert(reg::RESOLUTION, [2 << 17, 2 << 17, 0]);
        core.registers
            .insert(reg::PIXEL_2D_POSITION, [0, 1 << 17, 0]);
        let inputs = PixelInputs::read(&core);
        assert_eq!(inputs.hit, [0.0; 4]);
        assert_eq!(inputs.texcoord, [0.0, 0.0, 0.0, 1.0]);
        assert_eq!(inputs.color, [3.0, 0.0, 0.0, 1.0]);
        assert_eq!(inputs.position, [-0.5, -0.5, 0.0, 1.0]);
    }

    #[test]
    fn uv_interpolation_truncates_like_tcc() {
        // u = one raw unit: MUL(1, 1.0) = 1 unit; MUL(1, 0.5) truncates to 0.
        let uv = [[0; 3], [ONE, ONE / 2, 0], [0; 3]];
        assert_eq!(interpolate_uv(uv, 1, 0), [1, 0, 0]);
        // Negative deltas: sign-magnitude truncation toward zero.
        let uv = [[ONE; 3], [0; 3], [ONE; 3]];
        assert_eq!(interpolate_uv(uv, ONE / 2, 0)[0], ONE / 2);
    }

    #[test]
    fn colours_clamp_round_and_go_to_the_current_output_words() {
        let mut core = Bench::new();
        core.registers
            .insert(reg::CURRENT_OUTPUT_PIXEL, [30, 31, 32]);
        write_colour(&mut core, [1.5, -0.25, f32::NAN]);
        assert_eq!(core.written, [(30, ONE), (31, 0), (32, 0)]);
        core.written.clear();
        // 0.3 * 2^17 = 39321.6 -> 39322; one raw unit is 2^-17.
        write_colour(&mut core, [0.3, 1.0 / 131072.0, 0.5]);
        assert_eq!(core.written, [(30, 39322), (31, 1), (32, ONE / 2)]);
    }

    #[test]
    fn q_conversions_at_the_edges() {
        assert_eq!(q(0x8000_0000), -16384.0);
        assert_eq!(q(0xFFFF_FFFF), -1.0 / 131072.0);
        assert_eq!(to_q(-1.0), (-(ONE as i32)) as u32);
        assert_eq!(to_q(1e9), i32::MAX as u32);
        assert_eq!(to_q(-1e9), i32::MIN as u32);
        // Ties round away from zero.
        assert_eq!(to_q(0.5 / 131072.0), 1);
        assert_eq!(to_q(-0.5 / 131072.0), u32::MAX);
    }

    #[test]
    fn bilinear_sampling_pairs_weights_with_their_texels_and_wraps() {
        // A 2 x 2 texture: texel (i, j) has red = (i + 2j) / 4 (bytes 0, 64, 128, 192).
        let texture: Vec<u32> = (0..4u32).flat_map(|k| [(k * 64) << 9, 0, 0]).collect();
        let sampler = TextureSampler::new(&texture, [2 << 17, 2 << 17, 0]);
        assert_eq!(sampler.sample(0.0, 0.0), [0.0, 0.0, 0.0, 1.0]);
        assert_eq!(sampler.sample(0.5, 0.0)[0], 0.25);
        assert_eq!(sampler.sample(0.0, 0.5)[0], 0.5);
        // A quarter of the way from texel 0 to texel 1: 0.75·0 + 0.25·0.25.
        assert_eq!(sampler.sample(0.125, 0.0)[0], 0.0625);
        // Half-way between texel 1 and texel 0 again (wrap): (0.25 + 0) / 2.
        assert_eq!(sampler.sample(0.75, 0.0)[0], 0.125);
        assert_eq!(sampler.sample(-0.5, 0.0)[0], 0.25);
        assert_eq!(sampler.sample(f32::NAN, f32::INFINITY)[0], 0.0);
    }

    #[test]
    fn named_values_parse_and_print_back() {
        let parsed: NamedVec4 = "c0=1,0.5,-0,inf".parse().unwrap();
        assert_eq!(parsed.name, "c0");
        assert_eq!(parsed.value, [1.0, 0.5, 0.0, f32::INFINITY]);
        assert!(parsed.value[2].is_sign_negative());
        let short: NamedVec4 = " temp2 = 3 ".parse().unwrap();
        assert_eq!(short.value, [3.0, 0.0, 0.0, 0.0]);
        assert!("c0".parse::<NamedVec4>().is_err());
        assert!("=1".parse::<NamedVec4>().is_err());
        assert!("c0=1,2,3,4,5".parse::<NamedVec4>().is_err());
        assert!("c0=x".parse::<NamedVec4>().is_err());
        let nan: NamedVec4 = "v0=nan".parse().unwrap();
        assert!(nan.value[0].is_nan());
        let texts: Vec<String> = [0.5, 1.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN]
            .map(shortest)
            .into();
        assert_eq!(texts, ["0.5", "1", "-0", "inf", "-inf", "nan"]);
        assert_eq!(shortest(0.1), "0.1");
        assert_eq!(shortest(16777216.0), "16777216");
    }
}
