//! Rejected MAINs' rows ([`RejectTiming::row`]) computed ahead on the other host threads
//! while the simulation runs: a row depends only on the ray, and every pixel's ray is what
//! RGU computes from the pixel's position (as `Machine::precompute_rays` finds them), so
//! workers, one per thread but the simulation's, claim each core's pixels in its order,
//! run RGU for them and put their rows in the core's slots, at most a lead of pixels
//! ahead of the simulation. The timing takes a row only for the pixel it is at and only
//! where the ray is the one its core really computed; anything else (a pixel no worker
//! has finished, a ray the hardware's order changed) it computes itself, so what it times
//! never depends on the workers.
//!
//! A worker with nothing to claim rests until the simulation has used half a lead of some
//! core's rows: it would otherwise wake every moment for a row or two, and the wake-ups
//! cost the simulation's thread its CPU on a small machine. The rows the simulation is
//! done with go back to the workers, the latest first: a row allocated in one thread and
//! freed in another took scenes_example3 10% longer to time, and a buffer filled long
//! after it was last used (each slot's own) the Stanford bunny 4% longer.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;
use std::time::Duration;

use super::culled::{RejectTiming, RowEntry};
use crate::emu::core::alu::Vec3;
use crate::emu::core::output::OutputMemory;
use crate::emu::core::NoObserver;
use crate::emu::machine::cull::Culler;
use crate::emu::machine::{pixel_ray, Machine};

/// How far ahead of the simulation's pixel the workers go, per core, at most: enough that
/// they stay ahead.
const MOST_LEAD: usize = 96;
/// The rows ahead of one core hold at most about this many bytes (a million-triangle
/// scene's rows are 2 MB each): the lead is shortened to fit.
const LEAD_BYTES: usize = 16 << 20;
/// The longest a resting worker waits for the simulation's call (a call it missed).
const REST: Duration = Duration::from_millis(1);
/// Rows the simulation is done with kept for the workers to fill again, at most.
const SPARE_ROWS: usize = 4;
/// A pixel's row: its place in its core's pixel order, its ray, the row.
type Row = (usize, Vec3, Vec<RowEntry>);
/// A core's slots, pixel `k`'s row in slot `k % slots`: a slot is claimed again only for
/// a pixel a lead further on, once the simulation is past the one before.
type Slots = Box<[Mutex<Option<Row>>]>;

/// What the simulation and the workers share, per core.
struct Shared {
    /// Pixels a worker may go past the simulation's.
    lead: usize,
    /// The next pixel (in the core's order) no worker has claimed.
    next: Box<[AtomicUsize]>,
    /// The first pixel whose row the simulation has not asked for yet (the workers skip
    /// the others: they may fall behind where the machine is busy).
    useful: Box<[AtomicUsize]>,
    slots: Box<[Slots]>,
    /// Rows the simulation is done with, the latest last.
    spare: Mutex<Vec<Vec<RowEntry>>>,
    /// Set by a worker that found nothing to claim, until it is called.
    resting: AtomicBool,
    /// Set when the simulation is done: the workers stop.
    done: AtomicBool,
}

/// What a worker may do next on a core.
enum Claim {
    Pixel(usize),
    /// Every pixel it could take is a lead ahead of the simulation.
    Wait,
    /// Every pixel is claimed.
    Done,
}

impl Shared {
    /// For `cores` cores whose rows have `triangles` entries.
    fn new(cores: usize, triangles: usize) -> Shared {
        let row_bytes = triangles.max(1) * std::mem::size_of::<RowEntry>();
        let lead = (LEAD_BYTES / row_bytes).clamp(2, MOST_LEAD);
        let counters = || (0..cores).map(|_| AtomicUsize::new(0)).collect();
        let empty = || Mutex::new(None);
        Shared {
            lead,
            next: counters(),
            useful: counters(),
            slots: (0..cores)
                .map(|_| (0..2 * lead).map(|_| empty()).collect())
                .collect(),
            spare: Mutex::new(Vec::with_capacity(SPARE_ROWS)),
            resting: AtomicBool::new(false),
            done: AtomicBool::new(false),
        }
    }

    /// The row the simulation was done with last, to fill again, if one is kept.
    fn spare_row(&self) -> Option<Vec<RowEntry>> {
        self.spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop()
    }

    /// Keeps `row`, which the simulation is done with, for a worker (unless enough are).
    fn give_back(&self, row: Vec<RowEntry>) {
        let mut spare = self.spare.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < SPARE_ROWS {
            spare.push(row);
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
            if k >= useful + self.lead {
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
        let slots = &self.slots[core];
        let slot = &slots[pixel % slots.len()];
        slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts `row`, pixel `pixel`'s under `ray`, in its slot.
    fn put(&self, core: usize, pixel: usize, ray: Vec3, row: Vec<RowEntry>) {
        *self.slot(core, pixel) = Some((pixel, ray, row));
    }
}

/// The simulation's end of the rows computed ahead.
pub struct RowsAhead {
    shared: Arc<Shared>,
    workers: Vec<Thread>,
}

impl Drop for RowsAhead {
    fn drop(&mut self) {
        self.shared.done.store(true, Ordering::Relaxed);
        self.workers.iter().for_each(Thread::unpark);
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
        let cores = machine.partitions().len();
        let shared = Arc::new(Shared::new(cores, culler.constants().len()));
        let workers = (1..threads)
            .map(|_| {
                let shared = Arc::clone(&shared);
                let worker = scope.spawn(move || work(machine, culler, timing, &shared));
                worker.thread().clone()
            })
            .collect();
        Some(RowsAhead { shared, workers })
    }

    /// Core `core`'s row for its pixel `pixel` (0-based, in its order) into `row`, if a
    /// worker has it and computed it for `ray` (the row `row` held goes back to the
    /// workers); whether it did.
    pub fn take(&mut self, core: usize, pixel: usize, ray: Vec3, row: &mut Vec<RowEntry>) -> bool {
        let shared = &self.shared;
        shared.useful[core].fetch_max(pixel.wrapping_add(1), Ordering::Relaxed);
        if shared.resting.load(Ordering::Relaxed) {
            self.call_if_behind(core, pixel);
        }
        let held = shared
            .slot(core, pixel)
            .take_if(|&mut (k, _, _)| k == pixel);
        match held {
            Some((_, computed_for, ahead)) if computed_for == ray => {
                shared.give_back(std::mem::replace(row, ahead));
                true
            }
            _ => false,
        }
    }

    /// Calls the resting workers back once they are only half a lead ahead of core
    /// `core`'s pixel `pixel`.
    fn call_if_behind(&self, core: usize, pixel: usize) {
        let shared = &self.shared;
        let claimed = shared.next[core].load(Ordering::Relaxed);
        if claimed <= pixel + shared.lead / 2 && shared.resting.swap(false, Ordering::Relaxed) {
            self.workers.iter().for_each(Thread::unpark);
        }
    }
}

/// A worker: each core's pixels in turn, one pixel of every core at a time (the cores
/// move through their pixels together), at most a lead ahead of what the simulation
/// asked for (resting where every core is that far ahead), until every core's pixels are
/// claimed or the simulation is done.
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
            let mut row = (shared.spare_row())
                .unwrap_or_else(|| Vec::with_capacity(culler.constants().len()));
            timing.row(culler, ray, &mut row);
            shared.put(core, k, ray, row);
        }
        if !left {
            return;
        }
        if !moved {
            shared.resting.store(true, Ordering::Relaxed);
            std::thread::park_timeout(REST);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::Program;
    use crate::emu::machine::RenderOptions;
    use crate::emu::timing::{measure, TimingOptions};

    /// The rows ahead of `cores` cores of 100 triangles, without workers: the test puts
    /// the rows.
    fn rows_ahead(cores: usize) -> RowsAhead {
        RowsAhead {
            shared: Arc::new(Shared::new(cores, 100)),
            workers: Vec::new(),
        }
    }

    /// What [`RowsAhead::take`] gives for core `core`'s pixel `pixel` under `ray`.
    fn taken(ahead: &mut RowsAhead, core: usize, pixel: usize, ray: Vec3) -> Option<Vec<u16>> {
        let mut row = vec![99];
        let taken = ahead.take(core, pixel, ray, &mut row);
        assert_eq!(taken, row != [99]);
        taken.then_some(row)
    }

    #[test]
    fn a_row_is_taken_only_for_its_pixel_and_ray() {
        let mut ahead = rows_ahead(2);
        let ray = |k: u32| [k, 1, 2];
        for k in [1, 3, 4, 5] {
            ahead.shared.put(1, k, ray(k as u32), vec![k as u16]);
        }
        // Another core's rows are its own.
        assert_eq!(taken(&mut ahead, 0, 1, ray(1)), None);
        // Pixel 1 under another ray (the hardware's order changed it): computed anew.
        assert_eq!(taken(&mut ahead, 1, 1, ray(9)), None);
        // Pixel 2 no worker finished: none; pixel 3's row is there, once.
        assert_eq!(taken(&mut ahead, 1, 2, ray(2)), None);
        assert_eq!(taken(&mut ahead, 1, 3, ray(3)), Some(vec![3]));
        assert_eq!(taken(&mut ahead, 1, 3, ray(3)), None);
        // The workers are told where the simulation is: past pixel 3, and the next pixel
        // is the simulation's own.
        assert_eq!(ahead.shared.useful[1].load(Ordering::Relaxed), 4);
        assert!(matches!(ahead.shared.claim(1, 100), Claim::Pixel(5)));
        // A row in a slot a later pixel shares is not that pixel's.
        let lead = ahead.shared.lead;
        assert_eq!(taken(&mut ahead, 1, 4 + 2 * lead, ray(4)), None);
        assert_eq!(taken(&mut ahead, 1, 5, ray(5)), Some(vec![5]));
        // The rows the simulation was done with go back to the workers, the latest first,
        // as many as are kept.
        for _ in [3, 5] {
            assert_eq!(ahead.shared.spare_row(), Some(vec![99]));
        }
        assert_eq!(ahead.shared.spare_row(), None);
        for k in 0..SPARE_ROWS + 2 {
            ahead.shared.give_back(vec![k as u16]);
        }
        assert_eq!(ahead.shared.spare_row(), Some(vec![SPARE_ROWS as u16 - 1]));
        assert_eq!(ahead.shared.spare.lock().unwrap().len(), SPARE_ROWS - 1);
    }

    /// The lead is the longest that keeps a core's rows ahead within [`LEAD_BYTES`], and at
    /// least two pixels.
    #[test]
    fn the_lead_shortens_for_long_rows() {
        assert_eq!(Shared::new(1, 118).lead, MOST_LEAD);
        assert_eq!(Shared::new(1, 1_000_000).lead, 8);
        assert_eq!(Shared::new(1, 100_000_000).lead, 2);
        assert_eq!(Shared::new(4, 1_000_000).slots[3].len(), 16);
    }

    /// A resting worker is called back once the simulation is half a lead from the pixels
    /// claimed, not before.
    #[test]
    fn a_resting_worker_is_called_half_a_lead_on() {
        let mut ahead = rows_ahead(1);
        ahead.workers.push(std::thread::current());
        let lead = ahead.shared.lead;
        ahead.shared.next[0].store(lead + 1, Ordering::Relaxed);
        ahead.shared.resting.store(true, Ordering::Relaxed);
        ahead.take(0, 0, [0; 3], &mut Vec::new());
        assert!(ahead.shared.resting.load(Ordering::Relaxed));
        ahead.take(0, lead / 2 + 1, [0; 3], &mut Vec::new());
        assert!(!ahead.shared.resting.load(Ordering::Relaxed));
    }

    /// Workers claim each pixel once, never the simulation's next, at most a lead ahead of
    /// it, and none past the core's last.
    #[test]
    fn each_pixel_is_claimed_once_within_the_lead() {
        let shared = Shared::new(1, 100);
        let lead = shared.lead;
        let claims = |shared: &Shared, count| {
            std::iter::from_fn(|| match shared.claim(0, count) {
                Claim::Pixel(k) => Some(k),
                _ => None,
            })
            .collect::<Vec<_>>()
        };
        assert_eq!(claims(&shared, 1000), (1..lead).collect::<Vec<_>>());
        assert!(matches!(shared.claim(0, 1000), Claim::Wait));
        shared.useful[0].store(500, Ordering::Relaxed);
        assert_eq!(claims(&shared, 1000), (501..500 + lead).collect::<Vec<_>>());
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
