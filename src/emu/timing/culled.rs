//! The cycles of the MAINs culling skips (`machine::cull`), so that a timed frame runs as
//! fast as a culled render: a rejecting MAIN of the faithful ROM runs one of three fixed
//! paths (its BIU leaves at 173, 175 or 178), and only its three DIVs' cycles depend on
//! the values, through H1, H2, H3 and Δ, which the culler computes anyway. Its cycles
//! are the path's words' costs ([`super::cost`]) plus the DIVs'. The fixed ROM's BIU is
//! timed by interpreting it.

use std::cell::RefCell;

use super::cost::{div_cycles, instruction_cost, Cost};
use super::record::Recording;
use crate::emu::core::alu::{self, Vec3};
use crate::emu::core::CoreState;
use crate::emu::isa::registers::address;
use crate::emu::isa::{Instr, Word};
use crate::emu::machine::cull::{self, Biu, Culler, Exit, REJECT_PATH_WORDS};
use crate::emu::machine::triangles::Candidates;

/// The words of a rejecting MAIN, in the order it runs them, up to its RETURN (43),
/// without BIU's three DIVs (169..=171): MAIN's CALL, BIU 157..=168, its tests and RET,
/// MAIN's JEQX.
fn path(exit: Exit) -> Vec<u16> {
    let mut path = vec![37];
    path.extend(157..=168);
    path.push(172);
    match exit {
        Exit::U => path.push(173),
        Exit::V => path.extend([174, 175]),
        _ => path.extend([174, 176, 177, 178]),
    }
    path.push(38);
    path
}

/// The cycles of the rejecting MAINs: per exit, without the DIVs.
#[derive(Clone, Copy, Debug)]
pub struct RejectTiming {
    u: u32,
    v: u32,
    sum: u32,
}

impl RejectTiming {
    /// For a culler of the faithful BIU (whose path words the culler has checked).
    pub fn new(culler: &Culler) -> Option<RejectTiming> {
        if culler.biu() != Biu::Faithful {
            return None;
        }
        let cycles = |exit| {
            path(exit)
                .iter()
                .map(|address| {
                    let word = REJECT_PATH_WORDS
                        .iter()
                        .find(|(a, _)| a == address)
                        .map(|&(_, word)| Word(word))
                        .expect("every address of the path is a reject-path word");
                    match instruction_cost(Instr::decode(word)) {
                        Cost::Fixed(cycles) => cycles,
                        other => unreachable!("a reject path has no {other:?}"),
                    }
                })
                .sum()
        };
        Some(RejectTiming {
            u: cycles(Exit::U),
            v: cycles(Exit::V),
            sum: cycles(Exit::Sum),
        })
    }

    /// MAIN on triangle `index` under `ray`, when BIU rejects it: its exit and its cycles
    /// from its first instruction to its RETURN.
    #[inline]
    pub fn main(&self, culler: &Culler, index: usize, ray: Vec3) -> Option<(Exit, u32)> {
        let k = &culler.constants()[index];
        let p = alu::cross(ray, k.e2);
        let (delta, h2) = (alu::dot(p, k.e1), alu::dot(p, k.t));
        let h3 = alu::dot(k.q, ray);
        let exit = cull::verdict(h2, || h3, delta)?;
        let base = match exit {
            Exit::U => self.u,
            Exit::V => self.v,
            _ => self.sum,
        };
        let div = |h: u32| div_cycles([h; 3], [delta; 3]);
        Some((exit, base + div(k.h1) + div(h2) + div(h3)))
    }
}

/// [`crate::emu::machine::triangles::CulledRuns`] that books each skipped MAIN's cycles in
/// the core's recording.
pub struct TimedCulledRuns<'a> {
    pub culler: &'a Culler,
    pub timing: RejectTiming,
    pub recording: &'a RefCell<Recording>,
}

impl<C: CoreState> Candidates<C> for TimedCulledRuns<'_> {
    #[inline]
    fn next(&mut self, core: &mut C, from: usize) -> usize {
        if !cull::main_returns_false(core) {
            return from;
        }
        let ray = core.register(address::CREG_RAY_DIRECTION);
        // Culler::skippable_run, booking each MAIN's cycles on the way.
        let (budget, mut instructions, mut last_sum) = (core.budget_left(), 0, None);
        let mut end = from;
        let mut recording = self.recording.borrow_mut();
        while end < self.culler.constants().len() {
            let Some((exit, cycles)) = self.timing.main(self.culler, end, ray) else {
                break;
            };
            if instructions + exit.instructions() > budget {
                break;
            }
            instructions += exit.instructions();
            if exit == Exit::Sum {
                last_sum = Some(end);
            }
            recording.push_main(cycles);
            end += 1;
        }
        if end > from {
            core.charge_skipped((end - from) as u64, instructions);
            self.culler.write_skipped(core, end - 1, last_sum, ray);
        }
        end
    }
}
