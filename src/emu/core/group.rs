//! Up to [`LANES`] cores running in lock-step, with their registers stored lane by lane so
//! that one decoded instruction executes for every core (*lane*) at once, in SIMD: the
//! interpreter a lone core runs (`interp`), with `N = LANES`, compiled for AVX2 where the
//! CPU has it. This module keeps the group's own business: taking cores in and giving them
//! back, streaming triangles to many lanes at once, and running the lanes of each swap
//! parity.
//!
//! Cores share nothing writable (the texture memory is read-only), so the order in which
//! lanes take their steps changes nothing: every lane goes through exactly the
//! instructions, operand values, forwarding, return register and instruction count that
//! [`Core::run`] would give it alone.
//!
//! Faults are left to [`Core::run`]: when any lane would hang or exhaust its watchdog
//! budget, [`CoreGroup::run`] gives up with [`Abandoned`], leaving the group in no useful
//! state, and the caller reruns core by core to report the fault exactly.

use super::interp;
use super::lone::Core;
use super::mask::spread;
pub use super::mask::{lanes_of, LaneIter, LaneMask};
use super::observer::NoObserver;
use super::output::OutputMemory;
use super::row::{Row, Rows};
pub use super::state::Lane;
use super::state::{triangle_rows, LaneState};
use super::triangle::Triangle;
use crate::emu::isa::registers::EntryPoint;

/// Cores per group.
pub const LANES: usize = 8;

/// A lane would have faulted: lock-step execution was given up part-way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a core faulted; lock-step execution was abandoned")]
pub struct Abandoned;

/// Whether groups run on the vector unit they are compiled for (AVX2); elsewhere they
/// work, lane-wide loops and all, but without the speed that makes them worth it.
pub fn vectorised() -> bool {
    crate::emu::cpu::has_avx2()
}

/// Cores in lock-step: the registers of lane `l` are component `l` of every row.
pub struct CoreGroup<'a> {
    cores: Box<LaneState<'a, LANES>>,
    /// The lanes holding a core: the first `len`.
    len: usize,
}

impl<'a> CoreGroup<'a> {
    /// Takes over up to [`LANES`] cores (booted, between routines) running one program;
    /// lane `l` is `cores[l]`.
    pub fn new(cores: Vec<Core<'a>>) -> CoreGroup<'a> {
        assert!(
            !cores.is_empty() && cores.len() <= LANES,
            "a group holds 1 to {LANES} cores"
        );
        let first = &cores[0].lanes;
        let mut group = Box::new(LaneState {
            program: first.program,
            texture: first.texture,
            budget: first.budget,
            latches: [first.latches[0]; LANES],
            outputs: std::array::from_fn(|_| OutputMemory::new(0)),
            rows: Rows::ZERO,
        });
        let len = cores.len();
        for (lane, core) in cores.into_iter().enumerate() {
            let LaneState {
                program,
                budget,
                latches: [latches],
                outputs: [output],
                rows,
                ..
            } = core.lanes;
            assert!(
                std::ptr::eq(program, group.program) && budget == group.budget,
                "the cores of a group run one program with one budget"
            );
            for (row, value) in rows.0.iter().enumerate() {
                group.rows[row].set_lane(lane, value.lane(0));
            }
            group.latches[lane] = latches;
            group.outputs[lane] = output;
        }
        CoreGroup { cores: group, len }
    }

    /// Every lane.
    pub fn all(&self) -> LaneMask {
        (1 << self.len) - 1
    }

    /// Lane `lane`, as the host sees a core.
    pub fn lane(&mut self, lane: usize) -> Lane<'_, LANES> {
        assert!(lane < self.len, "lane {lane} is not in the group");
        Lane::new(
            &mut self.cores.rows,
            &mut self.cores.latches,
            self.cores.program,
            self.cores.budget,
            lane,
        )
    }

    /// The lanes of `lanes` that see swap copy 1.
    fn odd_lanes(&self, lanes: LaneMask) -> LaneMask {
        let mut odd = 0;
        for lane in lanes_of(lanes) {
            odd |= (self.cores.latches[lane].parity as LaneMask) << lane;
        }
        odd
    }

    /// [`CoreState::load_triangle`](super::CoreState::load_triangle) on every lane of `lanes` at once.
    pub fn load_triangle(&mut self, lanes: LaneMask, triangle: &Triangle) {
        #[cfg(target_arch = "x86_64")]
        if vectorised() {
            // SAFETY: the CPU has AVX2, as just checked.
            return unsafe { self.load_triangle_avx2(lanes, triangle) };
        }
        self.load_triangle_lanes(lanes, triangle)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn load_triangle_avx2(&mut self, lanes: LaneMask, triangle: &Triangle) {
        self.load_triangle_lanes(lanes, triangle)
    }

    #[inline(always)]
    fn load_triangle_lanes(&mut self, lanes: LaneMask, triangle: &Triangle) {
        let odd = self.odd_lanes(lanes);
        for (parity, mask) in [(0, lanes & !odd), (1, odd)] {
            if mask == 0 {
                continue;
            }
            let (io, alias) = triangle_rows(parity);
            // Lanes past the group's own are never read: overwrite them too. (No closures
            // here: they would not inherit the caller's target features.)
            let every_lane = mask == self.all();
            let active = spread(mask);
            for (row, value) in triangle.iter().enumerate() {
                let broadcast = Row::splat(*value);
                for target in [io + row, alias + row] {
                    if every_lane {
                        self.cores.rows[target] = broadcast;
                    } else {
                        self.cores.rows[target].blend(&broadcast, &active);
                    }
                }
            }
            for lane in lanes_of(mask) {
                self.cores.latches[lane].parity ^= 1;
            }
        }
    }

    /// The cores back, lane by lane, in the state the group left them.
    pub fn into_cores(self) -> Vec<Core<'a>> {
        let group = *self.cores;
        group
            .outputs
            .into_iter()
            .take(self.len)
            .enumerate()
            .map(|(lane, output)| Core {
                lanes: LaneState {
                    rows: Rows(std::array::from_fn(|row| {
                        Row::splat(group.rows[row].lane(lane))
                    })),
                    program: group.program,
                    texture: group.texture,
                    budget: group.budget,
                    latches: [group.latches[lane]],
                    outputs: [output],
                },
                // A group's triangles come from culled runs or the whole list, never from the
                // acceleration structure, which alone books routines at unknown cost.
                unknown_cost_routines: 0,
                footprint: None,
            })
            .collect()
    }

    /// Runs routine `entry` on the lanes of `lanes` until each has returned; the result
    /// has the bit of every lane whose RETURN value had bit 0 set. Lanes that see
    /// different swap copies run one parity after the other.
    pub fn run(&mut self, lanes: LaneMask, entry: EntryPoint) -> Result<LaneMask, Abandoned> {
        assert!(lanes & !self.all() == 0, "a lane mask names missing lanes");
        let odd = self.odd_lanes(lanes);
        let mut returned = 0;
        for (parity, group) in [(0, lanes & !odd), (1, odd)] {
            if group != 0 {
                returned |= self.run_parity(parity, group, entry)?;
            }
        }
        Ok(returned)
    }

    fn run_parity(
        &mut self,
        parity: usize,
        lanes: LaneMask,
        entry: EntryPoint,
    ) -> Result<LaneMask, Abandoned> {
        #[cfg(target_arch = "x86_64")]
        if vectorised() {
            // SAFETY: the CPU has AVX2, as just checked.
            return unsafe { self.execute_avx2(parity, lanes, entry) };
        }
        self.execute(parity, lanes, entry)
    }

    /// [`CoreGroup::execute`] compiled for AVX2: 8 lanes of 32 bits per vector.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn execute_avx2(
        &mut self,
        parity: usize,
        lanes: LaneMask,
        entry: EntryPoint,
    ) -> Result<LaneMask, Abandoned> {
        self.execute(parity, lanes, entry)
    }

    /// The interpreter with [`LANES`] lanes (inlined, so that it takes the caller's target
    /// features).
    #[inline(always)]
    fn execute(
        &mut self,
        parity: usize,
        lanes: LaneMask,
        entry: EntryPoint,
    ) -> Result<LaneMask, Abandoned> {
        interp::run::<LANES, NoObserver>(&mut self.cores, parity, lanes, entry, &mut NoObserver)
            .map_err(|_| Abandoned)
    }
}

#[cfg(test)]
mod tests {
    //! A group against its cores run one by one ([`Core::run`], itself checked against a
    //! plain reference model), on the random programs of the interpreter's tests: every
    //! kind of control flow, so lanes split and meet, swap parities that differ between
    //! lanes, forwarding, CALL/RET, hangs and the watchdog.
    use super::*;
    use crate::emu::core::alu::Vec3;
    use crate::emu::core::interp::tests::program_strategy;
    use crate::emu::core::program::Program;
    use crate::emu::core::rom::{rom, RomVariant};
    use crate::emu::core::state::CoreState;
    use crate::emu::isa::Word;
    use proptest::prelude::*;

    fn cores<'a>(
        program: &'a Program,
        texture: &'a [u32],
        seeds: &[Vec<Vec3>],
        budget: u64,
    ) -> Vec<Core<'a>> {
        seeds
            .iter()
            .map(|seeds| {
                let mut core = Core::new(program, texture, 4096);
                for (i, &seed) in seeds.iter().enumerate() {
                    core.host_write(i as u16, seed);
                    core.write_register(0x47 + i as u16, seed);
                    core.write_register(0x2C + i as u16, seed);
                }
                core.set_budget(budget);
                core
            })
            .collect()
    }

    fn outputs(core: &Core<'_>) -> Vec<Option<u32>> {
        (0..4096).map(|i| core.output().read(i)).collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1500))]

        #[test]
        fn a_group_runs_each_lane_as_its_core_alone(
            code in program_strategy(),
            // Lanes share a few seeds so that some agree on branches and some do not.
            seeds in prop::collection::vec(
                prop::collection::vec(prop_oneof![
                    Just([0u32, 1, 2]),
                    Just([0x2_0000u32; 3]),
                    [any::<u32>(); 3],
                ], 8),
                1..=LANES,
            ),
            budget in prop_oneof![Just(64u64), 0u64..40],
            triangle in [[any::<u32>(); 3]; 7],
            odd_lanes in any::<u8>(),
            run_lanes in any::<u8>(),
        ) {
            let mut imem = Program::default_imem();
            imem[EntryPoint::PixelShader as usize] = Word(0x800C);
            imem.extend_from_slice(&code);
            let program = Program::new(rom(RomVariant::Faithful), &imem);
            let texture: Vec<u32> = (0..64).map(|i| i * 7).collect();
            let mut alone = cores(&program, &texture, &seeds, budget);
            let mut group = CoreGroup::new(cores(&program, &texture, &seeds, budget));
            let all = group.all();
            // Some lanes see the other swap copy; some sit the routine out.
            let odd = odd_lanes as LaneMask & all;
            let lanes = (run_lanes as LaneMask & all).max(1);
            for lane in lanes_of(odd) {
                alone[lane].load_triangle(&triangle);
            }
            group.load_triangle(odd, &triangle);
            for _round in 0..2 {
                let mut expected = Ok(0);
                for lane in lanes_of(lanes) {
                    match alone[lane].run(EntryPoint::PixelShader, &mut NoObserver) {
                        Ok(value) => {
                            if let Ok(mask) = &mut expected {
                                *mask |= (value as LaneMask) << lane;
                            }
                        }
                        Err(_) => expected = Err(Abandoned),
                    }
                }
                let got = group.run(lanes, EntryPoint::PixelShader);
                prop_assert_eq!(got, expected);
                if expected.is_err() {
                    // An abandoned group holds no state worth comparing.
                    return Ok(());
                }
                group.load_triangle(all, &triangle);
                for (lane, core) in alone.iter_mut().enumerate() {
                    core.load_triangle(&triangle);
                    core.refill_budget();
                    group.lane(lane).refill_budget();
                }
            }
            let back = group.into_cores();
            for (core, back) in alone.iter().zip(&back) {
                prop_assert!(core.same_state(back));
                prop_assert_eq!(core.latches(), back.latches());
                prop_assert_eq!(outputs(core), outputs(back));
            }
        }
    }
}
