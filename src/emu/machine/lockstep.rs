//! Cores in lock-step groups ([`CoreGroup`]): up to [`LANES`] cores, one SIMD lane each,
//! run the pixel sequence ([`Machine::pixel`]) together, every triangle interpreted.
//! The output is the lone cores' word for word; a fault or a cancel gives the group up
//! and the caller renders core by core, which reports it exactly.

use std::sync::atomic::AtomicU64;

use rayon::prelude::*;

use super::hits::PixelHit;
use super::options::Lockstep;
use super::pixel::output_words;
use super::pixel::{classify, Width};
use super::progress::ProgressReporter;
use super::speculate::Cores;
use super::triangles::{self, Every, Streamed};
use super::Machine;
use crate::emu::core::group::{self, lanes_of, Abandoned, CoreGroup, LaneMask, LANES};
use crate::emu::core::{Core, CoreState, OutputMemory, Triangle};
use crate::emu::isa::registers::EntryPoint;
use crate::stage::PixelStage;

impl Machine<'_> {
    /// How many lock-step groups the frame's cores make, one per worker thread (more when
    /// there are more cores than a group holds); `None` when lock-step does not apply.
    pub(super) fn lockstep_groups(&self) -> Option<usize> {
        let cores = self.active.len();
        let groups = rayon::current_num_threads()
            .max(cores.div_ceil(LANES))
            .min(cores);
        // Groups run the pixel stage lane-wide, which only THEIA microcode can do, and
        // interpret every triangle test.
        self.stage.microcode_routine()?;
        if self.culler.is_ok() {
            return None;
        }
        let lockstep = match self.lockstep {
            // Measured: a group pays off from about 6 busy lanes of 8.
            Lockstep::Auto => group::vectorised() && cores >= groups * LANES * 3 / 4,
            Lockstep::Always => cores > 1,
            Lockstep::Never => false,
        };
        lockstep.then_some(groups)
    }

    /// The cores with pixels before image row `end` (`None`: to their end) in lock-step
    /// groups, one per worker thread (more when there are more cores than a group holds),
    /// each core from its state in `cores`. A fault, a cancel or a core running past its
    /// partition gives the groups up and leaves `cores` as they were: the caller renders
    /// those pixels core by core, which reports it exactly.
    pub(super) fn advance_grouped<'m>(
        &'m self,
        cores: &mut Cores<'m>,
        end: Option<u32>,
        progress: Option<&AtomicU64>,
    ) -> Result<(), Abandoned> {
        let lanes: Vec<GroupMember> = (cores.progress.iter().zip(&cores.partitions))
            .enumerate()
            .filter(|(_, (core, _))| core.state.is_some())
            .map(|(core, (progress, (_, partition)))| GroupMember {
                core,
                done: progress.done,
                end: end.map_or(partition.pixel_count(), |row| partition.row_start(row)),
                pixels: partition.pixel_count(),
            })
            .filter(|lane| lane.done < lane.end)
            .collect();
        if lanes.is_empty() {
            return Ok(());
        }
        let groups = rayon::current_num_threads()
            .max(lanes.len().div_ceil(LANES))
            .min(lanes.len());
        // Group g holds cores g, g + groups, ...: neighbouring bands often cost alike, so
        // spreading them evens out the groups' work.
        let members: Vec<Vec<(GroupMember, Core<'_>)>> = (0..groups)
            .map(|g| {
                let lanes = lanes[g..].iter().step_by(groups);
                lanes
                    .map(|lane| {
                        let state = cores.progress[lane.core].state.as_deref();
                        let mut core = state.expect("a running core").clone();
                        let words = output_words(cores.partitions[lane.core].1);
                        core.replace_output(OutputMemory::window(3 * lane.done, words));
                        (*lane, core)
                    })
                    .collect()
            })
            .collect();
        let runs: Vec<Result<Vec<LaneRun<'_>>, Abandoned>> = members
            .into_par_iter()
            .map(|members| self.run_group(members, progress))
            .collect();
        let runs: Vec<Vec<LaneRun<'_>>> = runs.into_iter().collect::<Result<_, _>>()?;
        for run in runs.into_iter().flatten() {
            let progress = &mut cores.progress[run.core];
            progress.add_grouped(run.state, run.before, run.hits, run.ended);
        }
        Ok(())
    }

    /// The cores `members` (at most [`LANES`]) in lock-step, each from its state to its
    /// lane's end pixel or until its NPG asks for no more.
    fn run_group<'m>(
        &self,
        members: Vec<(GroupMember, Core<'m>)>,
        progress: Option<&AtomicU64>,
    ) -> Result<Vec<LaneRun<'m>>, Abandoned> {
        let (lanes, cores): (Vec<GroupMember>, Vec<Core<'m>>) = members.into_iter().unzip();
        let before: Vec<(u64, u64)> = cores
            .iter()
            .map(|core| (core.instructions(), core.culled_routines()))
            .collect();
        let mut group = CoreGroup::new(cores);
        let mut done = 0;
        let mut active = group.all();
        let mut ended: LaneMask = 0;
        let mut reporter = ProgressReporter::new(progress);
        let mut hits: Vec<Vec<PixelHit>> = lanes
            .iter()
            .map(|lane| Vec::with_capacity(lane.end - lane.done))
            .collect();
        while active != 0 {
            let more = self.pixel(&mut Grouped {
                group: &mut group,
                active,
                hits: &mut hits,
            })?;
            done += 1;
            reporter.add(active.count_ones() as u64, false);
            ended |= active & !more;
            active &= more;
            for (lane, at) in lanes.iter().enumerate() {
                if active & (1 << lane) == 0 || at.done + done < at.end {
                    continue;
                }
                if at.done + done >= at.pixels {
                    // NPG runs past the partition: the core-by-core rerun reports it.
                    return Err(Abandoned);
                }
                active &= !(1 << lane);
            }
            if self.cancelled() {
                // The core-by-core rerun stops at once with `Cancelled`.
                return Err(Abandoned);
            }
        }
        reporter.add(0, true);
        let cores = group.into_cores().into_iter();
        let runs = (lanes.into_iter().zip(before).zip(cores).zip(hits)).enumerate();
        Ok(runs
            .map(|(lane, (((at, before), state), hits))| LaneRun {
                core: at.core,
                state,
                before,
                hits,
                ended: ended & (1 << lane) != 0,
            })
            .collect())
    }
}

/// An active core taking pixels `done .. end` in a lock-step group (of its `pixels`).
#[derive(Clone, Copy)]
struct GroupMember {
    core: usize,
    done: usize,
    end: usize,
    pixels: usize,
}

/// What a lane of a group did: its core after the pixels (`before`: its instruction and
/// culled counts before), what they hit, and whether NPG asked for no more.
struct LaneRun<'m> {
    core: usize,
    state: Core<'m>,
    before: (u64, u64),
    hits: Vec<PixelHit>,
    ended: bool,
}

/// The lanes `active` of a group taking a pixel, and what each lane's rays hit so far.
struct Grouped<'g, 'a> {
    group: &'g mut CoreGroup<'a>,
    active: LaneMask,
    hits: &'g mut [Vec<PixelHit>],
}

impl Streamed for Grouped<'_, '_> {
    type Hits = LaneMask;

    #[inline(always)]
    fn load(&mut self, triangle: &Triangle) {
        self.group.load_triangle(self.active, triangle);
    }

    fn load_run(&mut self, triangles: &[Triangle]) {
        for triangle in triangles {
            self.load(triangle);
        }
    }
}

impl Width for Grouped<'_, '_> {
    type Mask = LaneMask;
    type Error = Abandoned;

    #[inline(always)]
    fn every(&self) -> LaneMask {
        self.active
    }

    #[inline(always)]
    fn refill_budgets(&mut self) {
        for lane in lanes_of(self.active) {
            self.group.lane(lane).refill_budget();
        }
    }

    #[inline(always)]
    fn run(&mut self, lanes: LaneMask, entry: EntryPoint) -> Result<LaneMask, Abandoned> {
        self.group.run(lanes, entry)
    }

    #[inline(always)]
    fn triangles(&mut self, machine: &Machine<'_>) -> Result<LaneMask, Abandoned> {
        let main = |lanes: &mut Grouped<'_, '_>| lanes.group.run(lanes.active, EntryPoint::Main);
        triangles::run(self, &machine.scene.triangles, &mut Every, main)
    }

    #[inline(always)]
    fn close_triangles(&mut self, hit: LaneMask) {
        for lane in lanes_of(self.active) {
            let mut core = self.group.lane(lane);
            core.load_dummy_triangle();
            self.hits[lane].push(classify(&core, hit & (1 << lane) != 0));
        }
    }

    #[inline(always)]
    fn shade(&mut self, stage: &dyn PixelStage, _hit: LaneMask) -> Result<(), Abandoned> {
        let shader = stage
            .microcode_routine()
            .expect("lock-step groups run only microcode pixel stages");
        self.group.run(self.active, shader).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::NoObserver;
    use crate::emu::machine::tests::tiny_scene;
    use crate::emu::machine::{PixelAccel, RenderOptions};

    fn options(culling: bool, lockstep: Lockstep) -> RenderOptions {
        RenderOptions {
            cores: Some(8),
            culling,
            lockstep,
            ..RenderOptions::default()
        }
    }

    #[test]
    fn groups_render_the_lone_cores_frame() {
        let scene = tiny_scene(16, 16);
        let render = |culling, lockstep| {
            Machine::new(&scene, &options(culling, lockstep))
                .expect("a machine")
                .render(None)
                .expect("renders")
        };
        let grouped = render(false, Lockstep::Always);
        assert_eq!(grouped.lockstep_groups, rayon::current_num_threads().min(8));
        for culling in [false, true] {
            let alone = render(culling, Lockstep::Never);
            assert_eq!(alone.lockstep_groups, 0);
            assert!(alone.frame == grouped.frame, "culling {culling}");
            assert_eq!(
                alone.instructions, grouped.instructions,
                "culling {culling}"
            );
        }
    }

    #[test]
    fn a_frame_that_culls_runs_core_by_core() {
        let scene = tiny_scene(16, 16);
        for lockstep in [Lockstep::Always, Lockstep::Auto] {
            let machine = Machine::new(&scene, &options(true, lockstep)).expect("a machine");
            assert!(machine.culler.is_ok());
            assert!(machine.lockstep_groups().is_none(), "{lockstep:?}");
        }
        let one_core = RenderOptions {
            cores: Some(1),
            ..options(false, Lockstep::Always)
        };
        let machine = Machine::new(&scene, &one_core).expect("a machine");
        assert!(machine.lockstep_groups().is_none(), "one core");
    }

    /// The first pixel of cores 0 and 3 as lanes of one group and each alone: the same
    /// NPG answers, hits, output words and instruction counts.
    #[test]
    fn a_groups_pixel_is_each_lanes_lone_pixel() {
        let scene = tiny_scene(16, 16);
        let machine = Machine::new(&scene, &options(false, Lockstep::Always)).expect("machine");
        let boot = |index| {
            machine
                .boot_core(index, &machine.partitions[index], &mut NoObserver)
                .expect("boots")
        };
        let mut group = CoreGroup::new(vec![boot(0), boot(3)]);
        let mut hits = vec![Vec::new(), Vec::new()];
        for _ in 0..2 {
            let active = group.all();
            let mut lanes = Grouped {
                group: &mut group,
                active,
                hits: &mut hits,
            };
            assert_eq!(machine.pixel(&mut lanes), Ok(0b11));
        }
        let grouped = group.into_cores();
        for (lane, index) in [0, 3].into_iter().enumerate() {
            let mut core = boot(index);
            let mut lone_hits = Vec::new();
            for _ in 0..2 {
                let mut accel = PixelAccel::new(None);
                let done = machine.run_pixel(&mut core, &mut NoObserver, &mut accel);
                let done = done.expect("no fault");
                assert!(done.more);
                lone_hits.push(done.hit);
            }
            assert_eq!(hits[lane], lone_hits, "core {index}");
            assert_eq!(
                core.instructions(),
                grouped[lane].instructions(),
                "core {index}"
            );
            let words = |core: &crate::emu::core::Core<'_>| -> Vec<Option<u32>> {
                (0..6).map(|w| core.output().read(w)).collect()
            };
            assert_eq!(words(&core), words(&grouped[lane]), "core {index}");
        }
    }
}
