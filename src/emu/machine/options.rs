//! How to run a frame: the options a render takes ([`RenderOptions`]) and the choices
//! among equivalent ways to run it ([`AccelUse`], [`AccelMode`], [`Lockstep`]), which
//! change the speed, never the frame.

use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;

use super::speculate::Chunking;
use super::Band;
use crate::emu::core::rom::RomVariant;
use crate::emu::isa::Word;
use crate::stage::PixelStage;

/// How to run a frame.
#[derive(Clone, Debug)]
pub struct RenderOptions {
    pub rom: RomVariant,
    /// `Some(n)`: split the image into `n` row bands; `None`: the scene's own partitions.
    pub cores: Option<u32>,
    /// Instruction memory (entry table + user code) replacing the scene's.
    pub imem: Option<Vec<Word>>,
    /// Per-pixel instruction budget; `None` picks one from the triangle count.
    pub max_steps: Option<u64>,
    /// Skip MAIN for triangles BIU provably rejects, leaving the core in the state MAIN
    /// would have left (identical output and instruction counts; see [`super::cull`]). On
    /// by default; refused automatically when MAIN/BIU are not the ROM's.
    pub culling: bool,
    /// Whether cores run in lock-step groups ([`crate::emu::core::group::CoreGroup`]);
    /// identical output either way.
    pub lockstep: Lockstep,
    /// The program that shades each pixel; `None`: THEIA's PIXELSHADER routine.
    pub stage: Option<Arc<dyn PixelStage>>,
    /// Whether culling uses the acceleration structure ([`super::accel`]): identical
    /// output, but no instruction count where it skips triangles whose exit depends on the
    /// pixel.
    pub accel: AccelUse,
    /// Render only this band of the partitions ([`Band`]); `None`: all of them.
    pub band: Option<Band>,
    /// How each core's pixels are cut into chunks that run on several host threads
    /// ([`super::speculate`]); the default cuts by the work and the threads.
    pub chunking: Chunking,
    /// Supersampling: each pixel the mean of K x K samples rendered at K times the
    /// resolution ([`ssaa`](super::ssaa)); 1: none. [`render`](super::render) and
    /// [`Supersampler`](super::ssaa::Supersampler) supersample; a
    /// [`Machine`](super::Machine) renders the scene it is given, at its resolution.
    pub ssaa: u32,
    /// Raised by another thread to stop the render early
    /// ([`RenderError::Cancelled`](super::RenderError::Cancelled)), e.g. when a newer edit makes the frame in flight
    /// worthless. Checked once per pixel.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Counts the pixels done (samples, when supersampling), for a display on another
    /// thread.
    pub progress: Option<Arc<AtomicU64>>,
}

impl Default for RenderOptions {
    fn default() -> Self {
        RenderOptions {
            rom: RomVariant::default(),
            cores: None,
            imem: None,
            max_steps: None,
            culling: true,
            lockstep: Lockstep::Auto,
            stage: None,
            accel: AccelUse::Auto,
            band: None,
            chunking: Chunking::default(),
            ssaa: 1,
            cancel: None,
            progress: None,
        }
    }
}

/// When culling uses the acceleration structure ([`super::accel`]) rather than testing
/// every triangle at every pixel. The output is identical either way; only speed differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AccelUse {
    /// For scenes of [`AccelUse::AUTO_TRIANGLES`] triangles or more, where building it
    /// pays off (measured: below that, per-triangle culling is as fast).
    #[default]
    Auto,
    /// Whenever culling applies (for tests and measurements).
    Always,
    /// Never: per-triangle culling only.
    Never,
}

impl AccelUse {
    pub const AUTO_TRIANGLES: usize = 512;

    /// Whether a scene of `triangles` triangles wants the structure.
    pub fn wanted(self, triangles: usize) -> bool {
        match self {
            AccelUse::Auto => triangles >= AccelUse::AUTO_TRIANGLES,
            AccelUse::Always => true,
            AccelUse::Never => false,
        }
    }
}

/// The user's choice of triangle-test shortcut (`--accel`): `auto` uses the acceleration
/// structure where it pays off, `cull` tests each triangle natively, `off` interprets
/// every test. Frames are identical in all three.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AccelMode {
    #[default]
    Auto,
    Cull,
    Off,
}

impl AccelMode {
    pub const ALL: [AccelMode; 3] = [AccelMode::Auto, AccelMode::Cull, AccelMode::Off];

    pub fn name(self) -> &'static str {
        match self {
            AccelMode::Auto => "auto",
            AccelMode::Cull => "cull",
            AccelMode::Off => "off",
        }
    }

    /// `options` with the culling and acceleration settings of this mode.
    pub fn apply(self, options: RenderOptions) -> RenderOptions {
        RenderOptions {
            culling: self != AccelMode::Off,
            accel: match self {
                AccelMode::Auto => AccelUse::Auto,
                AccelMode::Cull | AccelMode::Off => AccelUse::Never,
            },
            ..options
        }
    }
}

impl std::str::FromStr for AccelMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        AccelMode::ALL
            .into_iter()
            .find(|mode| mode.name() == s)
            .ok_or_else(|| format!("unknown mode `{s}`: auto, cull or off"))
    }
}

/// When to run cores in lock-step groups, one SIMD lane per core
/// ([`crate::emu::core::group::CoreGroup`]), rather than each core on its own. Groups
/// interpret every triangle test: a frame that culls runs core by core whatever this
/// says (culling leaves each core a different set of triangles to interpret, so lanes
/// would mostly idle). The output is identical either way; only speed differs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Lockstep {
    /// When it is faster: the CPU has the vector unit the groups are compiled for, culling
    /// does not apply, and every worker thread gets a nearly full group.
    #[default]
    Auto,
    /// Whenever there are two cores or more and culling does not apply (for tests and
    /// measurements).
    Always,
    /// Never: every core on its own.
    Never,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accel_modes_parse_from_their_names_and_nothing_else() {
        for mode in AccelMode::ALL {
            assert_eq!(mode.name().parse::<AccelMode>(), Ok(mode));
        }
        assert_eq!(AccelMode::default(), AccelMode::Auto);
        for wrong in ["", "Auto", "on", "cull ", "none"] {
            assert_eq!(
                wrong.parse::<AccelMode>(),
                Err(format!("unknown mode `{wrong}`: auto, cull or off"))
            );
        }
    }

    #[test]
    fn accel_modes_set_culling_and_the_structure() {
        let settings = |mode: AccelMode| {
            let options = mode.apply(RenderOptions {
                culling: false,
                accel: AccelUse::Always,
                cores: Some(3),
                ..RenderOptions::default()
            });
            assert_eq!(options.cores, Some(3), "other options are kept");
            (options.culling, options.accel)
        };
        assert_eq!(settings(AccelMode::Auto), (true, AccelUse::Auto));
        assert_eq!(settings(AccelMode::Cull), (true, AccelUse::Never));
        assert_eq!(settings(AccelMode::Off), (false, AccelUse::Never));
    }

    #[test]
    fn the_structure_is_wanted_from_the_auto_threshold_on() {
        let edge = AccelUse::AUTO_TRIANGLES;
        assert!(!AccelUse::Auto.wanted(edge - 1));
        assert!(AccelUse::Auto.wanted(edge));
        assert!(AccelUse::Always.wanted(0));
        assert!(!AccelUse::Never.wanted(usize::MAX));
    }

    #[test]
    fn defaults_cull_and_choose_the_rest_automatically() {
        let options = RenderOptions::default();
        assert!(options.culling);
        assert_eq!(options.lockstep, Lockstep::Auto);
        assert_eq!(options.accel, AccelUse::Auto);
        assert!(options.cores.is_none() && options.band.is_none() && options.stage.is_none());
    }
}
