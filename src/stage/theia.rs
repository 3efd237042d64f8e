//! THEIA's own pixel stage: a routine of the core's microcode.

use super::{PixelStage, ShadingCore};
use crate::emu::core::Fault;
use crate::emu::isa::registers::EntryPoint;

/// THEIA's own pixel stage: the PIXELSHADER routine of the entry-point table (the ROM's
/// default, or user code), run on the core like every other routine.
#[derive(Clone, Copy, Debug, Default)]
pub struct TheiaPixelShader;

impl PixelStage for TheiaPixelShader {
    fn isa(&self) -> &'static str {
        "THEIA"
    }

    fn shade(&self, core: &mut dyn ShadingCore) -> Result<(), Fault> {
        core.run_routine(EntryPoint::PixelShader).map(drop)
    }

    fn microcode_routine(&self) -> Option<EntryPoint> {
        Some(EntryPoint::PixelShader)
    }
}
