//! Running a batch's chunks and checking each core's while other chunks still run.
//!
//! The threads take each core's first chunk (it starts from the real state) first, and
//! the other chunks from the back of the queue. The thread that finishes a chunk checks,
//! in order, every chunk of that core whose predecessors are checked (one thread per core
//! at a time), running a wrong piece again at once from the real state; and where the
//! next chunk is still in the queue, it takes it and runs it from the real state,
//! untracked, with nothing to check. So a thread that starts on a core goes on along it
//! exactly while the others guess from the end towards it: with two threads on one core,
//! about half the pixels are tracked rather than all but the first chunk's, and a wrong
//! guess runs again while the other threads work, not in a serial step after every chunk
//! has run.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use rayon::prelude::*;

use super::super::accel::Accel;
use super::super::{Machine, PixelAccel};
use super::{ChunkRun, ChunkStats, Job, Start};
use crate::emu::core::Core;

/// One core's chunks of a batch as they are checked.
struct Lane<'m> {
    /// Chunks run but not yet checked, by their place among the core's chunks.
    waiting: Vec<Option<Vec<ChunkRun<'m>>>>,
    /// The place of the next chunk to check.
    next: usize,
    /// Whether a thread is checking this core's chunks now.
    busy: bool,
    /// The real state after the checked chunks (`None` before the first, which starts
    /// from the real state).
    state: Option<Box<Core<'m>>>,
    /// Whether the core ended in a checked chunk: the chunks after it are dropped.
    ended: bool,
    /// The checked pieces, in pixel order.
    checked: Vec<ChunkRun<'m>>,
    stats: ChunkStats,
    /// Time spent checking and running chunks again.
    time: Duration,
}

/// How the chunks of a batch ran: per core its checked pieces in order, and per core what
/// the checks found.
pub(super) struct Checked<'m> {
    pub runs: Vec<Vec<ChunkRun<'m>>>,
    pub stats: ChunkStats,
    /// Chunks run, the sum of their times, the longest.
    pub chunks: u64,
    pub chunk_time: Duration,
    pub longest: Duration,
    /// Time the checks took over all threads (overlapping the chunks).
    pub check_time: Duration,
}

/// What one thread's share of the queue cost: chunks, their time, the longest.
type Share = (u64, Duration, Duration);

/// A batch's chunks waiting to run. Each core's first chunk starts from its real state
/// and is taken first; the others are taken from the back, so that a thread that
/// finishes a core's first chunks goes on along that core from the real state, untracked
/// ([`Machine::deposit`]), while the others guess from the end towards it.
struct Queue<'m> {
    slots: Vec<Mutex<Option<Job<'m>>>>,
    /// Per active core, its chunks' places in `slots`, in pixel order.
    of_core: Vec<Vec<usize>>,
    /// Each chunk's place among its core's.
    places: Vec<usize>,
    /// The chunks that start from the real state, and how many of them were handed out.
    firsts: Vec<usize>,
    front: AtomicUsize,
    /// The chunks from this slot on were handed out or taken from the back.
    back: Mutex<usize>,
    /// Whether a thread goes on along a core from its real state. Not with the test knob
    /// ([`super::Chunking::pixels`]), which is there to exercise guesses: then every chunk
    /// but a core's first is one, all taken in order.
    follow: bool,
}

impl<'m> Queue<'m> {
    fn new(jobs: Vec<Job<'m>>, cores: usize, follow: bool) -> Self {
        let mut of_core = vec![Vec::new(); cores];
        let mut places = Vec::with_capacity(jobs.len());
        let mut firsts = Vec::new();
        for (index, job) in jobs.iter().enumerate() {
            places.push(of_core[job.core].len());
            of_core[job.core].push(index);
            if !follow || matches!(job.start, Start::Real(_)) {
                firsts.push(index);
            }
        }
        Queue {
            back: Mutex::new(if follow { jobs.len() } else { 0 }),
            follow,
            slots: jobs.into_iter().map(|job| Mutex::new(Some(job))).collect(),
            of_core,
            places,
            firsts,
            front: AtomicUsize::new(0),
        }
    }

    /// Chunk `index`, unless a thread took it.
    fn take(&self, index: usize) -> Option<Job<'m>> {
        lock(&self.slots[index]).take()
    }

    /// The next chunk to run, and its place in the queue.
    fn next(&self) -> Option<(usize, Job<'m>)> {
        while let Some(&index) = self.firsts.get(self.front.fetch_add(1, Ordering::Relaxed)) {
            if let Some(job) = self.take(index) {
                return Some((index, job));
            }
        }
        let mut back = lock(&self.back);
        while *back > 0 {
            *back -= 1;
            if let Some(job) = self.take(*back) {
                return Some((*back, job));
            }
        }
        None
    }
}

impl Machine<'_> {
    /// Runs `jobs` (chunks of the `cores` active cores, each core's in pixel order) on
    /// all threads ([`Queue`]), each core's chunks checked as soon as the chunks before
    /// them are (see the module documentation).
    pub(super) fn run_and_check<'m>(
        &'m self,
        jobs: Vec<Job<'m>>,
        cores: usize,
        batch: Option<&Accel>,
        progress: Option<&AtomicU64>,
    ) -> Checked<'m> {
        let queue = Queue::new(jobs, cores, self.chunking.pixels.is_none());
        let lanes: Vec<Mutex<Lane<'m>>> = queue
            .of_core
            .iter()
            .map(|chunks| Mutex::new(Lane::new(chunks.len())))
            .collect();
        let work = || -> Share {
            let mut share: Share = (0, Duration::ZERO, Duration::ZERO);
            while let Some((index, job)) = queue.next() {
                let core = job.core;
                let runs = self.timed_job(job, batch, progress, &mut share);
                let place = queue.places[index];
                self.deposit(
                    &lanes[core],
                    place,
                    runs,
                    (&queue, core, batch, progress),
                    &mut share,
                );
            }
            share
        };
        let threads = rayon::current_num_threads().min(queue.slots.len()).max(1);
        let shares: Vec<Share> = (0..threads).into_par_iter().map(|_| work()).collect();
        let mut checked = Checked {
            runs: Vec::with_capacity(cores),
            stats: ChunkStats::default(),
            chunks: 0,
            chunk_time: Duration::ZERO,
            longest: Duration::ZERO,
            check_time: Duration::ZERO,
        };
        for (chunks, time, longest) in shares {
            checked.chunks += chunks;
            checked.chunk_time += time;
            checked.longest = checked.longest.max(longest);
        }
        for lane in lanes {
            let lane = lane.into_inner().unwrap_or_else(PoisonError::into_inner);
            checked.stats.speculative += lane.stats.speculative;
            checked.stats.reruns += lane.stats.reruns;
            checked.check_time += lane.time;
            checked.runs.push(lane.checked);
        }
        checked
    }

    /// [`Machine::run_job`], its time added to `share`.
    fn timed_job<'m>(
        &'m self,
        job: Job<'m>,
        batch: Option<&Accel>,
        progress: Option<&AtomicU64>,
        share: &mut Share,
    ) -> Vec<ChunkRun<'m>> {
        let start = Instant::now();
        let runs = self.run_job(job, batch, progress);
        let time = start.elapsed();
        *share = (share.0 + 1, share.1 + time, share.2.max(time));
        runs
    }

    /// Hands over chunk `place` of active core `core` (its pieces `runs`), then, unless
    /// another thread is at it, checks the core's chunks in order for as long as the next
    /// one has run; where the next one is still in the queue, takes it and runs it from
    /// the real state (exact: nothing to check).
    fn deposit<'m>(
        &'m self,
        lane: &Mutex<Lane<'m>>,
        place: usize,
        runs: Vec<ChunkRun<'m>>,
        (queue, core, batch, progress): (&Queue<'m>, usize, Option<&Accel>, Option<&AtomicU64>),
        share: &mut Share,
    ) {
        let mut held = lock(lane);
        held.stats.speculative += runs.iter().filter(|run| run.speculative).count() as u64;
        held.waiting[place] = Some(runs);
        if held.busy {
            return;
        }
        held.busy = true;
        loop {
            let at = held.next;
            let Some(runs) = held.waiting.get_mut(at).and_then(Option::take) else {
                let next = queue.of_core[core].get(at).filter(|_| queue.follow);
                let follow = match (&held.state, held.ended, next) {
                    (Some(real), false, Some(&index)) => queue.take(index).map(|job| Job {
                        start: Start::Real(real.clone()),
                        ..job
                    }),
                    _ => None,
                };
                let Some(job) = follow else {
                    break;
                };
                drop(held);
                let runs = self.timed_job(job, batch, progress, share);
                held = lock(lane);
                held.waiting[at] = Some(runs);
                continue;
            };
            held.next += 1;
            if held.ended {
                continue;
            }
            let before = held.state.take();
            drop(held);
            let start = Instant::now();
            let (runs, after, reruns) = self.check_chunk(core, before, runs, batch);
            let time = start.elapsed();
            held = lock(lane);
            held.time += time;
            held.stats.reruns += reruns;
            held.ended = runs.last().is_some_and(|run| run.ending.is_some());
            held.state = after;
            held.checked.extend(runs);
        }
        held.busy = false;
    }

    /// Checks one chunk's pieces in order against `before`, the real state before the
    /// first (`None`: the chunk started from the real state). A piece whose live elements
    /// agree with the real state is accepted, and its untouched elements take the real
    /// values (they passed through it unchanged); one that disagrees runs again from the
    /// real state. Returns the pieces up to the core's end, the real state after the last
    /// (`None`: the core ended there) and how many ran again.
    fn check_chunk<'m>(
        &'m self,
        core: usize,
        mut before: Option<Box<Core<'m>>>,
        mut runs: Vec<ChunkRun<'m>>,
        batch: Option<&Accel>,
    ) -> (Vec<ChunkRun<'m>>, Option<Box<Core<'m>>>, u64) {
        let mut reruns = 0;
        let mut accel = PixelAccel::new(batch);
        for at in 0..runs.len() {
            let run = &mut runs[at];
            // A piece run from the real state (the core's first, one run on from the
            // real state, one run again) is exact as it is.
            if let Some(real) = before.take().filter(|_| run.speculative) {
                let agrees = run
                    .assumed
                    .as_ref()
                    .is_some_and(|(assumed, footprint)| real.agrees_on(assumed, &footprint.live()));
                match &run.assumed {
                    Some((_, footprint)) if agrees => {
                        for element in footprint.untouched().iter() {
                            run.core.set_element(element, real.element(element));
                        }
                    }
                    _ => {
                        reruns += 1;
                        let pixels = run.pixels.clone();
                        *run = self.run_piece(core, real, pixels, false, &mut accel, None);
                    }
                }
            }
            if run.ending.is_some() {
                runs.truncate(at + 1);
                return (runs, None, reruns);
            }
            before = Some(run.core.clone());
        }
        (runs, before, reruns)
    }
}

impl Lane<'_> {
    fn new(chunks: usize) -> Self {
        Lane {
            waiting: (0..chunks).map(|_| None).collect(),
            next: 0,
            busy: false,
            state: None,
            ended: false,
            checked: Vec::new(),
            stats: ChunkStats::default(),
            time: Duration::ZERO,
        }
    }
}

/// Locks `mutex`, whether or not a thread panicked holding it (the panic ends the render
/// anyway).
fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::track::{Footprint, ELEMENTS};
    use crate::emu::core::NoObserver;
    use crate::emu::machine::tests::tiny_scene;
    use crate::emu::machine::RenderOptions;

    /// A piece that read nothing of the state it assumed agrees with any real state, and
    /// leaves the real values in every element it did not touch: in the state the next
    /// piece is checked against, and in its own core, which the next batch or pass
    /// starts from.
    #[test]
    fn an_accepted_piece_takes_the_real_values_of_what_it_never_touched() {
        let scene = tiny_scene(8, 4);
        let machine = Machine::new(&scene, &RenderOptions::default()).expect("a machine");
        let partition = machine.partitions()[0];
        let real = machine
            .boot_core(0, &partition, &mut NoObserver)
            .expect("boots");
        let mut guessed = real.clone();
        // Row 100's x: what a seed might hold where the real run left something else.
        let element = 3 * 100;
        guessed.set_element(element, real.element(element) ^ 0x5a5a);
        let piece = ChunkRun {
            core: Box::new(guessed.clone()),
            assumed: Some((Box::new(guessed), Box::<Footprint>::default())),
            ..machine.unstarted(4..8)
        };
        let (runs, after, reruns) =
            machine.check_chunk(0, Some(Box::new(real.clone())), vec![piece], None);
        assert_eq!(reruns, 0, "nothing read, nothing wrong");
        let after = after.expect("the core goes on");
        for e in 0..ELEMENTS {
            assert_eq!(after.element(e), real.element(e), "element {e}");
            assert_eq!(runs[0].core.element(e), real.element(e), "element {e}");
        }
    }
}
