//! The pixel stage: the program that runs once per pixel after the ROM's ray, intersection
//! and texture work (RGU, MAIN per triangle, PSU2 on a hit) and before NPG (spec README,
//! decision 9).
//!
//! THEIA's own PIXELSHADER routine, an R500 fragment program and a PICA200 shader program all
//! implement [`PixelStage`], so the machine's per-pixel sequence is one code path whichever
//! ISA shades. A foreign stage reads the four standard inputs ([`PixelInputs::read`]) from
//! the registers the ROM left, samples texture memory through [`TextureSampler`], and writes
//! its colour with [`write_colour`]: the Q15.17 words an `OMWRITE` of the same values would
//! write, at the same output addresses.

pub mod foreign;
pub mod pica200;
pub mod r500;
mod theia;

use std::fmt;

use crate::emu::core::alu::Vec3;
use crate::emu::core::Fault;
use crate::emu::isa::registers::EntryPoint;

pub use foreign::{
    interpolate_uv, q, shortest, to_q, write_colour, ForeignProgram, NamedVec4, PixelInputs,
    PixelRun, RunError, TextureSampler,
};
pub use theia::TheiaPixelShader;

/// What a pixel stage may do with the core whose pixel it shades.
pub trait ShadingCore {
    /// Runs one microcode routine of the core to its RETURN (the THEIA stage runs
    /// PIXELSHADER), seen by the machine's observer when tracing.
    fn run_routine(&mut self, entry: EntryPoint) -> Result<bool, Fault>;
    /// A register as the execution unit reads it from the register file.
    fn register(&self, address: u16) -> Vec3;
    /// The control unit's hit flag: whether any MAIN of this pixel returned TRUE.
    fn hit(&self) -> bool;
    /// The texture memory, one word per channel (`byte << 9`).
    fn texture(&self) -> &[u32];
    /// What an OMWRITE does: output word `addresses[i]` := `values[i]`, in x, y, z order.
    fn omwrite(&mut self, addresses: Vec3, values: Vec3);
    /// Instructions left in this pixel's watchdog budget.
    fn budget_left(&self) -> u64;
    /// Books `instructions` executed by a foreign program against the pixel's budget and
    /// the frame's instruction count (never more than [`ShadingCore::budget_left`]).
    fn charge(&mut self, instructions: u64);
}

/// The program that shades each pixel.
pub trait PixelStage: fmt::Debug + Send + Sync {
    /// The instruction set, for summaries and errors: `THEIA`, `R500`, `PICA200`.
    fn isa(&self) -> &'static str;

    /// Shades the pixel `core` stands on: its colour goes to the output memory.
    fn shade(&self, core: &mut dyn ShadingCore) -> Result<(), Fault>;

    /// `Some(entry)` when shading is exactly running that THEIA routine, which lock-step
    /// groups of cores can then run lane-wide; `None` for every foreign stage.
    fn microcode_routine(&self) -> Option<EntryPoint> {
        None
    }
}
