//! Rejected MAINs' rows ([`RejectTiming::row`]) computed ahead on the other host threads
//! while the simulation runs: a row depends only on the ray, and every pixel's ray is what
//! RGU computes from the pixel's position (as `Machine::precompute_rays` finds them), so
//! workers, one per thread but the simulation's, claim each core's pixels in its order,
//! run RGU for them and put their rows in the core's slots, at most `LEAD` pixels ahead
//! of the simulation. The timing takes a row only for the pixel it is at and only where
//! the ray is the one its core really computed; anything else (a pixel no worker has
//! finished, a ray the hardware's order changed) it computes itself, so what it times
//! never depends on the workers.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use super::culled::{RejectTiming, RowEntry};
use crate::emu::core::alu::Vec3;
use crate::emu::core::output::OutputMemory;
use crate::emu::core::NoObserver;
use crate::emu::machine::cull::Culler;
use crate::emu::machine::{pixel_ray, Machine};

/// How far ahead of the simulation's pixel the workers go, per core: enough that they
/// stay ahead, few enough that memory does not grow with the frame.
const LEAD: usize = 96;
/// Slots per core, pixel `k`'s row in slot `k % SLOTS`: a slot is claimed again only for a
/// pixel [`SLOTS`] on, once the simulation is [`LEAD`] pixels past the one before.
const SLOTS: usize = 2 * LEAD;

/// A pixel's row: its place in its core's pixel order, its ray, the row.
type Row = (usize, Vec3, Vec<RowEntry>);
/// A core's [`SLOTS`] rows.
type Slots = Box<[Mutex<Option<Row>>]>;

/// What the simulation and the workers share, per core.
struct Shared {
    /// The next pixel (in the core's order) no worker has claimed.
    next: Box<[AtomicUsize]>,
    /// The first pixel whose row the simulation has not asked for yet (the workers skip
    /// the others: they may fall behind where the machine is busy).
    useful: Box<[AtomicUsize]>,
    slots: Box<[Slots]>,
    /// Set when the simulation is done: the workers stop.
    done: AtomicBool,
}

/// What a worker may do next on a core.
enum Claim {
    Pixel(usize),
    /// Every pixel it could take is [`LEAD`] ahead of the simulation.
    Wait,
    /// Every pixel is claimed.
    Done,
}

impl Shared {
    fn new(cores: usize) -> Shared {
        let counters = || (0..cores).map(|_| AtomicUsize::new(0)).collect();
        Shared {
            next: counters(),
            useful: counters(),
            slots: (0..cores)
                .map(|_| (0..SLOTS).map(|_| Mutex::new(None)).collect())
                .collect(),
            done: AtomicBool::new(false),
        }
    }

    /// Claims core `core`'s next pixel (of `count`) for a worker. Not the one the
    /// simulation asks for next: it would ask before the worker had the row, compute the
    /// row itself, and the worker's would be wasted (at two threads on the Stanford bunny,
    /// a fifth of the rows were computed twice). So where the simulation catches up, the
    /// workers go on from the pixel after, and the rows are shared out between them.
    fn claim(&self, core: usize, count: usize) -> Claim {
        let useful = self.useful[core].load(Ordering::Relaxed);
        let mut next = self.next[core].load(Ordering::Relaxed);
        loop {
            let k = next.max(useful + 1);
            if k >= count {
                return Claim::Done;
            }
            if k >= useful + LEAD {
                return Claim::Wait;
            }
            let claimed = self.next[core].compare_exchange_weak(
                next,
                k + 1,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
            match claimed {
                Ok(_) => return Claim::Pixel(k),
                Err(now) => next = now,
            }
        }
    }

    fn slot(&self, core: usize, pixel: usize) -> std::sync::MutexGuard<'_, Option<Row>> {
        let slot = &self.slots[core][pixel % SLOTS];
        slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The simulation's end of the rows computed ahead.
pub struct RowsAhead {
    shared: Arc<Shared>,
}

impl Drop for RowsAhead {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Relaxed);
    }
}

impl RowsAhead {
    /// Starts the workers in `scope` for `machine`'s cores, one per host thread but this
    /// one; `None` with one thread (a render told to use one thread uses one).
    pub fn start<'scope, 'm: 'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        machine: &'m Machine<'m>,
        culler: &'m Culler,
        timing: RejectTiming,
    ) -> Option<RowsAhead> {
        let threads = rayon::current_num_threads();
        if threads < 2 {
            return None;
        }
        let shared = Arc::new(Shared::new(machine.partitions().len()));
        for _ in 1..threads {
            let shared = Arc::clone(&shared);
            scope.spawn(move || work(machine, culler, timing, &shared));
        }
        Some(RowsAhead { shared })
    }

    /// Core `core`'s row for its pixel `pixel` (0-based, in its order), if a worker has
    /// it and computed it for `ray`.
    pub fn take(&mut self, core: usize, pixel: usize, ray: Vec3) -> Option<Vec<RowEntry>> {
        let shared = &self.shared;
        shared.useful[core].fetch_max(pixel.wrapping_add(1), Ordering::Relaxed);
        match shared.slot(core, pixel).take() {
            Some((k, computed_for, row)) if k == pixel && computed_for == ray => Some(row),
            _ => None,
        }
    }
}

/// A worker: each core's pixels in turn, one pixel of every core at a time (the cores
/// move through their pixels together), at most [`LEAD`] pixels ahead of what the
/// simulation asked for (resting a moment where every core is that far ahead), until
/// every core's pixels are claimed or the simulation is done.
fn work(machine: &Machine<'_>, culler: &Culler, timing: RejectTiming, shared: &Shared) {
    let partitions = machine.partitions();
    // A core that faults while booting is left out: the simulation meets the fault itself.
    let mut cores: Vec<_> = (partitions.iter().enumerate())
        .map(|(i, p)| {
            (machine.boot_core_writing(i, p, OutputMemory::HARDWARE_WORDS, &mut NoObserver)).ok()
        })
        .collect();
    while !shared.done.load(Ordering::Relaxed) {
        let (mut left, mut moved) = (false, false);
        for (core, partition) in partitions.iter().enumerate() {
            let Some(functional) = &mut cores[core] else {
                continue;
            };
            let k = match shared.claim(core, partition.pixel_count()) {
                Claim::Pixel(k) => k,
                Claim::Wait => {
                    left = true;
                    continue;
                }
                Claim::Done => continue,
            };
            (left, moved) = (true, true);
            let pixel = partition.pixel(k).expect("a pixel of the partition");
            let Ok(ray) = pixel_ray(functional, pixel) else {
                cores[core] = None;
                continue;
            };
            let mut row = Vec::with_capacity(culler.constants().len());
            timing.row(culler, ray, &mut row);
            *shared.slot(core, k) = Some((k, ray, row));
        }
        if !left {
            return;
        }
        if !moved {
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::Program;
    use crate::emu::machine::RenderOptions;
    use crate::emu::timing::{measure, TimingOptions};

    /// The rows ahead of `cores` cores, without workers: the test puts the rows.
    fn rows_ahead(cores: usize) -> RowsAhead {
        RowsAhead {
            shared: Arc::new(Shared::new(cores)),
        }
    }

    #[test]
    fn a_row_is_taken_only_for_its_pixel_and_ray() {
        let mut ahead = rows_ahead(2);
        let ray = |k: u32| [k, 1, 2];
        for k in [1, 3, 4, 5] {
            *ahead.shared.slot(1, k) = Some((k, ray(k as u32), vec![k as u16]));
        }
        // Another core's rows are its own.
        assert_eq!(ahead.take(0, 1, ray(1)), None);
        // Pixel 1 under another ray (the hardware's order changed it): computed anew.
        assert_eq!(ahead.take(1, 1, ray(9)), None);
        // Pixel 2 no worker finished: none; pixel 3's row is there, once.
        assert_eq!(ahead.take(1, 2, ray(2)), None);
        assert_eq!(ahead.take(1, 3, ray(3)), Some(vec![3]));
        assert_eq!(ahead.take(1, 3, ray(3)), None);
        // The workers are told where the simulation is: past pixel 3, and the next pixel
        // is the simulation's own.
        assert_eq!(ahead.shared.useful[1].load(Ordering::Relaxed), 4);
        assert!(matches!(ahead.shared.claim(1, 100), Claim::Pixel(5)));
        assert!(matches!(ahead.shared.claim(1, 100), Claim::Pixel(6)));
        // A row in a slot a later pixel shares is not that pixel's.
        assert_eq!(ahead.take(1, 4 + SLOTS, ray(4)), None);
        assert_eq!(ahead.take(1, 5, ray(5)), Some(vec![5]));
    }

    /// Workers claim each pixel once, never the simulation's next, at most [`LEAD`]
    /// pixels ahead of it, and none past the core's last.
    #[test]
    fn each_pixel_is_claimed_once_within_the_lead() {
        let shared = Shared::new(1);
        let claims = |shared: &Shared, count| {
            std::iter::from_fn(|| match shared.claim(0, count) {
                Claim::Pixel(k) => Some(k),
                _ => None,
            })
            .collect::<Vec<_>>()
        };
        assert_eq!(claims(&shared, 1000), (1..LEAD).collect::<Vec<_>>());
        assert!(matches!(shared.claim(0, 1000), Claim::Wait));
        shared.useful[0].store(500, Ordering::Relaxed);
        assert_eq!(claims(&shared, 1000), (501..500 + LEAD).collect::<Vec<_>>());
        shared.useful[0].store(990, Ordering::Relaxed);
        assert_eq!(claims(&shared, 1000), (991..1000).collect::<Vec<_>>());
        assert!(matches!(shared.claim(0, 1000), Claim::Done));
    }

    /// With one worker (two threads), three (four) or none (one), the same timing, hazards
    /// and all: the built-in scene at 16x16 meets re-entry hazards.
    #[test]
    fn the_workers_change_no_cycle() {
        let scene = crate::emu::timing::tests::hazard_scene();
        let machine = Machine::new(&scene, &RenderOptions::default()).expect("a machine");
        let options = TimingOptions::new(Program::default_imem().len());
        let timed = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
            let timing = pool
                .expect("a pool")
                .install(|| measure(&machine, &options));
            let timing = timing.expect("timed");
            let cores: Vec<_> = timing
                .course
                .cores
                .iter()
                .map(|c| format!("{c:?}"))
                .collect();
            (
                timing.frame_cycles(),
                cores,
                timing.course.hazards,
                timing.hazard_pixels,
            )
        };
        let alone = timed(1);
        assert!(!alone.2.is_empty());
        assert_eq!(timed(2), alone);
        assert_eq!(timed(4), alone);
    }
}
