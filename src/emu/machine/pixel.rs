//! The pixel sequence: a core boots once ([`Machine::boot_core`]: INITIAL, CPPU,
//! USERCONSTANTS), then for each pixel runs RGU, MAIN per triangle ([`super::triangles`]),
//! PSU2 on a hit, the pixel stage and NPG. One body runs it at every width
//! ([`Machine::pixel`]): a lone core ([`Machine::run_pixel`], which may cull and may be
//! watched) or the lanes of a lock-step group ([`super::lockstep`]).

use std::ops::BitOrAssign;

use super::batches::PixelAccel;
use super::hits::PixelHit;
use super::triangles::{self, CulledRuns, Every, TileCandidates};
use super::{Machine, RenderError};
use crate::emu::core::alu::Vec3;
use crate::emu::core::CoreState;
use crate::emu::core::OutputMemory;
use crate::emu::core::{Core, Fault, NoObserver, Observer};
use crate::emu::isa::registers::{address, EntryPoint};
use crate::io::scene::Partition;
use crate::stage::{PixelStage, ShadingCore};

/// One pixel done: NPG's answer and what the ray hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelDone {
    /// Whether NPG asks for another pixel.
    pub more: bool,
    pub hit: PixelHit,
}

/// The cores one pixel sequence drives at once: a lone core (width 1) or the lanes of a
/// lock-step group that take the pixel. Each step of the sequence is one call here.
pub(super) trait Width {
    /// One bit per core: `bool` for a lone core, a lane mask for a group.
    type Mask: Copy + Default + BitOrAssign;
    type Error;

    /// Every core taking the pixel.
    fn every(&self) -> Self::Mask;

    fn refill_budgets(&mut self);

    /// Runs routine `entry` on the cores of `cores` (none: nothing runs); the cores whose
    /// routine returned TRUE.
    fn run(&mut self, cores: Self::Mask, entry: EntryPoint) -> Result<Self::Mask, Self::Error>;

    /// The triangle loop ([`triangles::run`]) from the sources this width can take; the
    /// cores some MAIN hit.
    fn triangles(&mut self, machine: &Machine<'_>) -> Result<Self::Mask, Self::Error>;

    /// After the loop: the host's dummy triangle, and what each core's ray hit.
    fn close_triangles(&mut self, hit: Self::Mask);

    /// The pixel stage, on every core.
    fn shade(&mut self, stage: &dyn PixelStage, hit: Self::Mask) -> Result<(), Self::Error>;
}

impl Machine<'_> {
    /// One pixel on every core of `cores`; the cores whose NPG asks for more pixels.
    #[inline(always)]
    pub(super) fn pixel<W: Width>(&self, cores: &mut W) -> Result<W::Mask, W::Error> {
        let every = cores.every();
        cores.refill_budgets();
        cores.run(every, EntryPoint::Rgu)?;
        let hit = cores.triangles(self)?;
        cores.close_triangles(hit);
        cores.run(hit, EntryPoint::Psu2)?;
        cores.shade(&*self.stage, hit)?;
        cores.run(every, EntryPoint::Npg)
    }

    /// One pixel on a lone core (the sequence every width runs): NPG's answer (more
    /// pixels to come) and what the ray hit. Culls when the machine has a culler and the observer is
    /// disabled (a trace always sees every instruction).
    #[inline]
    pub fn run_pixel<O: Observer>(
        &self,
        core: &mut Core<'_>,
        observer: &mut O,
        accel: &mut PixelAccel<'_>,
    ) -> Result<PixelDone, (EntryPoint, Fault)> {
        let mut lone = Lone {
            core,
            observer,
            accel,
            hit: PixelHit::Miss,
        };
        let more = self.pixel(&mut lone)?;
        Ok(PixelDone {
            more,
            hit: lone.hit,
        })
    }

    /// Configures a core for `partition` (host writes of the 6 configuration rows and the
    /// core's two partition rows) and runs INITIAL, CPPU and USERCONSTANTS.
    pub fn boot_core<O: Observer>(
        &self,
        index: usize,
        partition: &Partition,
        observer: &mut O,
    ) -> Result<Core<'_>, RenderError> {
        self.boot_core_writing(index, partition, output_words(partition), observer)
    }

    /// [`Machine::boot_core`] with an output memory of `words` words: a core that only
    /// looks ahead (the timing's rows) keeps the hardware's, since it writes no pixel.
    pub fn boot_core_writing<O: Observer>(
        &self,
        index: usize,
        partition: &Partition,
        words: usize,
        observer: &mut O,
    ) -> Result<Core<'_>, RenderError> {
        let mut core = Core::new(&self.program, &self.scene.texture, words);
        core.set_budget(self.max_steps);
        for (row, value) in self.scene.config.iter().enumerate() {
            core.host_write(row as u16, *value);
        }
        core.host_write(6, partition.initial);
        core.host_write(7, partition.end);
        for entry in [
            EntryPoint::Initial,
            EntryPoint::Cppu,
            EntryPoint::UserConstants,
        ] {
            core.refill_budget();
            core.run(entry, observer)
                .map_err(|fault| self.fault(index, partition, 0, entry, fault))?;
        }
        Ok(core)
    }

    /// Core `core`'s fault at its `pixel`-th pixel, in routine `entry`.
    pub(super) fn fault(
        &self,
        core: usize,
        partition: &Partition,
        pixel: usize,
        entry: EntryPoint,
        fault: Fault,
    ) -> RenderError {
        let (x, y) = partition
            .pixels()
            .nth(pixel)
            .unwrap_or(partition.start_pixel());
        RenderError::Core {
            core,
            x,
            y,
            entry,
            fault,
        }
    }
}

/// A lone core taking a pixel, watched by `observer`, with the structure's batch at hand.
struct Lone<'c, 'a, 's, O> {
    core: &'c mut Core<'a>,
    observer: &'c mut O,
    accel: &'c mut PixelAccel<'s>,
    /// What the ray hit, once the triangle loop is over.
    hit: PixelHit,
}

impl<O: Observer> Width for Lone<'_, '_, '_, O> {
    type Mask = bool;
    type Error = (EntryPoint, Fault);

    #[inline(always)]
    fn every(&self) -> bool {
        true
    }

    #[inline(always)]
    fn refill_budgets(&mut self) {
        self.core.refill_budget();
    }

    #[inline(always)]
    fn run(&mut self, run: bool, entry: EntryPoint) -> Result<bool, (EntryPoint, Fault)> {
        if !run {
            return Ok(false);
        }
        self.core
            .run(entry, self.observer)
            .map_err(|fault| (entry, fault))
    }

    #[inline(always)]
    fn triangles(&mut self, machine: &Machine<'_>) -> Result<bool, (EntryPoint, Fault)> {
        let triangles = &machine.scene.triangles;
        let observer = &mut *self.observer;
        let main = |core: &mut Core<'_>| {
            core.run(EntryPoint::Main, observer)
                .map_err(|fault| (EntryPoint::Main, fault))
        };
        // Culling only where nobody watches: a trace shows every instruction.
        let culler = machine.culler.as_ref().ok().filter(|_| !O::ENABLED);
        let (core, accel) = (&mut *self.core, &mut *self.accel);
        let tile = culler.zip(accel.structure).and_then(|(culler, structure)| {
            TileCandidates::new(&*core, structure, culler, &mut accel.rows, triangles.len())
        });
        match (tile, culler) {
            (Some(mut tile), _) => triangles::run(core, triangles, &mut tile, main),
            (None, Some(culler)) => triangles::run(core, triangles, &mut CulledRuns(culler), main),
            (None, None) => triangles::run(core, triangles, &mut Every, main),
        }
    }

    #[inline(always)]
    fn close_triangles(&mut self, hit: bool) {
        self.core.load_dummy_triangle();
        self.hit = classify(&*self.core, hit);
    }

    #[inline(always)]
    fn shade(&mut self, stage: &dyn PixelStage, hit: bool) -> Result<(), (EntryPoint, Fault)> {
        let mut shading = Shading {
            core: &mut *self.core,
            observer: &mut *self.observer,
            hit,
        };
        stage
            .shade(&mut shading)
            .map_err(|fault| (EntryPoint::PixelShader, fault))
    }
}

/// A core as its pixel stage sees it (see [`ShadingCore`]): microcode routines run through
/// the machine's observer.
struct Shading<'c, 'a, O> {
    core: &'c mut Core<'a>,
    observer: &'c mut O,
    hit: bool,
}

impl<O: Observer> ShadingCore for Shading<'_, '_, O> {
    fn run_routine(&mut self, entry: EntryPoint) -> Result<bool, Fault> {
        self.core.run(entry, self.observer)
    }

    fn register(&self, address: u16) -> Vec3 {
        self.core.register(address)
    }

    fn hit(&self) -> bool {
        self.hit
    }

    fn texture(&self) -> &[u32] {
        self.core.texture()
    }

    fn omwrite(&mut self, addresses: Vec3, values: Vec3) {
        self.core.omwrite(addresses, values);
    }

    fn budget_left(&self) -> u64 {
        self.core.budget_left()
    }

    fn charge(&mut self, instructions: u64) {
        let left = self.core.budget_left() - instructions.min(self.core.budget_left());
        self.core.set_budget_left(left);
        self.core.book(instructions, 0);
    }
}

/// The words of the output memory of a core rendering `partition`: the hardware's, or 3
/// per pixel when the partition has more pixels.
pub(super) fn output_words(partition: &Partition) -> usize {
    (partition.pixel_count() * 3).max(OutputMemory::HARDWARE_WORDS)
}

/// Puts pixel `(x, y)` in CREG_PIXEL_2D_POSITION as the host's pixel sequence leaves it
/// there (x and y as Q15.17 integers, z as the core has it).
pub(super) fn set_pixel_position(core: &mut Core<'_>, (x, y): (u32, u32)) {
    let z = core.register(address::CREG_PIXEL_2D_POSITION)[2];
    core.write_register(address::CREG_PIXEL_2D_POSITION, [x << 17, y << 17, z]);
}

/// The ray RGU computes for pixel `(x, y)` on a booted `core` (a fresh watchdog budget):
/// what a pixel's MAINs see, found ahead of them.
pub fn pixel_ray(core: &mut Core<'_>, pixel: (u32, u32)) -> Result<Vec3, Fault> {
    set_pixel_position(core, pixel);
    core.refill_budget();
    core.run(EntryPoint::Rgu, &mut NoObserver)?;
    Ok(core.register(address::CREG_RAY_DIRECTION))
}

/// A pixel's [`PixelHit`] from the control unit's hit flag and the closest hit BIU kept.
pub(super) fn classify(core: &impl CoreState, hit: bool) -> PixelHit {
    // A miss reads nothing: a tracked core must not count the registers as read.
    if !hit {
        return PixelHit::Miss;
    }
    let x = |address| core.register_component(address, 0);
    PixelHit::classify(
        hit,
        x(address::CREG_LAST_T),
        x(address::CREG_LAST_U),
        x(address::CREG_LAST_V),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::NoObserver;
    use crate::emu::isa::asm::assemble;
    use crate::emu::machine::tests::tiny_scene;
    use crate::emu::machine::RenderOptions;

    /// Writes (CREG_LAST_t, 1.5, 1.5) as each pixel's words.
    const SHADER: &str = "\
ENTRYPOINT_ADRR_PIXELSHADER:
        SETX R1 1.5
        SWIZZLE3D R1 SWIZZLE_XXX
        XCHANGEX R2 R1 CREG_LAST_t
        OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL R2
        RETURN RT_TRUE
";
    const ONE_AND_A_HALF: u32 = 3 << 16;

    /// The built-in scene at 16x16 on one core, with [`SHADER`].
    fn one_core(scene: &mut crate::io::scene::Scene, culling: bool) -> Machine<'_> {
        scene.partitions = vec![crate::io::scene::Partition::rows(16, 0, 16)];
        let imem = assemble(SHADER, std::path::Path::new("t.shdr"))
            .expect("assembles")
            .imem;
        let options = RenderOptions {
            imem: Some(imem),
            culling,
            ..RenderOptions::default()
        };
        Machine::new(scene, &options).expect("a machine")
    }

    /// Each pixel's NPG answer, hit, words and the instructions so far, pixel by pixel.
    fn run_pixels(machine: &Machine<'_>) -> Vec<(PixelDone, [u32; 3], u64)> {
        let partition = machine.partitions[0];
        let mut core = machine
            .boot_core(0, &partition, &mut NoObserver)
            .expect("boots");
        let mut accel = PixelAccel::new(None);
        (0..partition.pixel_count())
            .map(|k| {
                let done = machine
                    .run_pixel(&mut core, &mut NoObserver, &mut accel)
                    .expect("no fault");
                let t = core.register(address::CREG_LAST_T)[0];
                let words = [0, 1, 2].map(|c| core.output().read(3 * k + c).expect("written"));
                assert_eq!(words, [t, ONE_AND_A_HALF, ONE_AND_A_HALF], "pixel {k}");
                (done, words, core.instructions())
            })
            .collect()
    }

    #[test]
    fn pixels_write_the_shaders_words_and_end_at_the_partition() {
        let mut scene = tiny_scene(16, 16);
        let machine = one_core(&mut scene, false);
        let pixels = run_pixels(&machine);
        assert_eq!(pixels.len(), 256);
        let more: Vec<bool> = pixels.iter().map(|(done, ..)| done.more).collect();
        assert_eq!(more, [[true; 255].as_slice(), &[false]].concat());
        // The built-in scene's model fills the frame: every ray hits, closer than RGU's
        // "very far" t.
        for (k, (done, words, _)) in pixels.iter().enumerate() {
            assert_eq!(done.hit, PixelHit::Hit, "pixel {k}");
            assert!(
                (words[0] as i32) < crate::emu::machine::hits::FAR as i32,
                "pixel {k}"
            );
        }
        // The pixels are the frame's.
        let render = machine.render(None).expect("renders");
        let words: Vec<u32> = pixels.iter().flat_map(|(_, words, _)| *words).collect();
        assert_eq!(render.frame.words, words);
        assert_eq!(render.instructions, pixels[255].2);
    }

    #[test]
    fn culled_pixels_are_the_interpreted_ones() {
        let (mut interpreted, mut culled) = (tiny_scene(16, 16), tiny_scene(16, 16));
        let culling = one_core(&mut culled, true);
        assert!(culling.culler.is_ok());
        assert_eq!(
            run_pixels(&one_core(&mut interpreted, false)),
            run_pixels(&culling)
        );
    }
}
