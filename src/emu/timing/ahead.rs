//! Rejected MAINs' rows ([`RejectTiming::row`]) computed ahead on another thread while
//! the simulation runs: a row depends only on the ray, and every pixel's ray is what RGU
//! computes from the pixel's position (as `Machine::precompute_rays` finds them), so a
//! worker runs RGU for each core's pixels in its order, computes their rows and queues
//! them, a bounded number per core. The timing takes a row only for the pixel it is at and
//! only where the ray is the one its core really computed; anything else (a pixel the
//! worker has not reached, a ray the hardware's order changed) it computes itself, so what
//! it times never depends on the worker.

use std::cmp::Ordering as CmpOrdering;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError};
use std::sync::Arc;

use super::culled::{RejectTiming, RowEntry};
use crate::emu::core::alu::Vec3;
use crate::emu::core::output::OutputMemory;
use crate::emu::core::NoObserver;
use crate::emu::machine::cull::Culler;
use crate::emu::machine::{pixel_ray, Machine};

/// How far ahead of the simulation's pixel the worker goes, per core: enough that it stays
/// ahead, few enough that memory does not grow with the frame.
const LEAD: usize = 96;
/// Rows a core's queue holds: more than the worker is ever ahead, so it never waits on a
/// full queue.
const QUEUED: usize = 2 * LEAD;

/// A pixel's row: its place in its core's pixel order, its ray, the row.
type Row = (usize, Vec3, Vec<RowEntry>);

/// The simulation's end of the queues: one per core.
pub struct RowsAhead {
    queues: Vec<Receiver<Row>>,
    /// Per core, a row taken from the queue for a later pixel.
    early: Vec<Option<Row>>,
    /// Per core, the first pixel whose row the simulation has not asked for yet (the
    /// worker skips the others: it may fall behind where the machine is busy).
    useful: Arc<[AtomicUsize]>,
    /// Set when the simulation is done: the worker stops.
    done: Arc<AtomicBool>,
}

impl Drop for RowsAhead {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

impl RowsAhead {
    /// Starts the worker in `scope` for `machine`'s cores; `None` with one thread (a render
    /// told to use one thread uses one).
    pub fn start<'scope, 'm: 'scope>(
        scope: &'scope std::thread::Scope<'scope, '_>,
        machine: &'m Machine<'m>,
        culler: &'m Culler,
        timing: RejectTiming,
    ) -> Option<RowsAhead> {
        if rayon::current_num_threads() < 2 {
            return None;
        }
        let (senders, queues): (Vec<_>, Vec<_>) = (0..machine.partitions().len())
            .map(|_| sync_channel(QUEUED))
            .unzip();
        let useful: Arc<[AtomicUsize]> = queues.iter().map(|_| AtomicUsize::new(0)).collect();
        let done = Arc::new(AtomicBool::new(false));
        let (skip, stop) = (Arc::clone(&useful), Arc::clone(&done));
        scope.spawn(move || work(machine, culler, timing, &senders, &skip, &stop));
        let early = (0..queues.len()).map(|_| None).collect();
        Some(RowsAhead {
            queues,
            early,
            useful,
            done,
        })
    }

    /// Core `core`'s row for its pixel `pixel` (0-based, in its order), if the worker has
    /// it and computed it for `ray`.
    pub fn take(&mut self, core: usize, pixel: usize, ray: Vec3) -> Option<Vec<RowEntry>> {
        self.useful[core].fetch_max(pixel.wrapping_add(1), Ordering::Relaxed);
        loop {
            let row = match self.early[core].take() {
                Some(row) => row,
                None => match self.queues[core].try_recv() {
                    Ok(row) => row,
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => return None,
                },
            };
            match row.0.cmp(&pixel) {
                CmpOrdering::Less => continue,
                CmpOrdering::Equal => return (row.1 == ray).then_some(row.2),
                CmpOrdering::Greater => {
                    self.early[core] = Some(row);
                    return None;
                }
            }
        }
    }
}

/// The worker: each core's pixels in turn, one pixel of every core at a time (the cores
/// move through their pixels together), at most [`LEAD`] pixels ahead of what the
/// simulation asked for (resting a moment where every core is that far ahead: a send to a
/// full queue would wake the worker at every row taken), until every core's pixels are
/// done or the simulation drops its queues.
fn work(
    machine: &Machine<'_>,
    culler: &Culler,
    timing: RejectTiming,
    queues: &[SyncSender<Row>],
    useful: &[AtomicUsize],
    done: &AtomicBool,
) {
    let partitions = machine.partitions();
    // A core that faults while booting is left out: the simulation meets the fault itself.
    let mut cores: Vec<_> = (partitions.iter().enumerate())
        .map(|(i, p)| {
            (machine.boot_core_writing(i, p, OutputMemory::HARDWARE_WORDS, &mut NoObserver)).ok()
        })
        .collect();
    let mut pixels: Vec<_> = partitions
        .iter()
        .map(|p| p.pixels().enumerate().peekable())
        .collect();
    loop {
        let (mut left, mut moved) = (false, false);
        for (core, queue) in queues.iter().enumerate() {
            // The pixels the simulation is past are of no use any more, nor is the one it
            // asks for next: it would ask before the worker had that row, compute the row
            // itself, and the worker's would be wasted (at two threads on the Stanford
            // bunny, a fifth of the rows were computed twice). So where the simulation
            // catches up, the worker goes on from the pixel after, and the two share the
            // rows between them.
            let first = useful[core].load(Ordering::Relaxed);
            while pixels[core].next_if(|&(k, _)| k <= first).is_some() {}
            let Some(&(k, (x, y))) = pixels[core].peek() else {
                continue;
            };
            left = true;
            if k >= first + LEAD {
                continue;
            }
            pixels[core].next();
            let Some(functional) = &mut cores[core] else {
                continue;
            };
            moved = true;
            let Ok(ray) = pixel_ray(functional, (x, y)) else {
                cores[core] = None;
                continue;
            };
            let mut row = Vec::with_capacity(culler.constants().len());
            timing.row(culler, ray, &mut row);
            if queue.send((k, ray, row)).is_err() {
                return;
            }
        }
        if !left || done.load(Ordering::Relaxed) {
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

    /// The queues of `cores` cores, without a worker: the test sends the rows.
    fn queues(cores: usize) -> (RowsAhead, Vec<SyncSender<Row>>) {
        let (senders, queues): (Vec<_>, Vec<_>) = (0..cores).map(|_| sync_channel(8)).unzip();
        let ahead = RowsAhead {
            early: (0..cores).map(|_| None).collect(),
            useful: (0..cores).map(|_| AtomicUsize::new(0)).collect(),
            done: Arc::new(AtomicBool::new(false)),
            queues,
        };
        (ahead, senders)
    }

    #[test]
    fn a_row_is_taken_only_for_its_pixel_and_ray() {
        let (mut ahead, senders) = queues(2);
        let ray = |k: u32| [k, 1, 2];
        for k in [0, 1, 3] {
            senders[1].send((k, ray(k as u32), vec![k as u16])).unwrap();
        }
        // Another core's queue is its own.
        assert_eq!(ahead.take(0, 0, ray(0)), None);
        // Pixel 1 under another ray (the hardware's order changed it): computed anew; the
        // rows before it are dropped.
        assert_eq!(ahead.take(1, 1, ray(9)), None);
        // Pixel 2 the worker skipped: none, and pixel 3's row is kept for later.
        assert_eq!(ahead.take(1, 2, ray(2)), None);
        assert_eq!(ahead.take(1, 3, ray(3)), Some(vec![3]));
        assert_eq!(ahead.take(1, 4, ray(4)), None);
        // The worker is told where the simulation is.
        assert_eq!(ahead.useful[1].load(Ordering::Relaxed), 5);
        drop(senders);
        assert_eq!(ahead.take(1, 5, ray(5)), None);
    }

    /// With the worker (two threads) or without (one), the same timing, hazards and all:
    /// the built-in scene at 16x16 meets re-entry hazards.
    #[test]
    fn the_worker_changes_no_cycle() {
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
    }
}
