//! What a render tells the outside while it runs, and what it hears: finished pixels
//! counted for a progress bar ([`ProgressReporter`]), and a cancel flag checked once per
//! pixel ([`RenderOptions::cancel`](super::RenderOptions::cancel)).

use std::sync::atomic::{AtomicU64, Ordering};

use super::Machine;

/// Publishes finished pixels in batches: one shared counter bumped per pixel by every
/// worker would bounce its cache line between them.
pub(super) struct ProgressReporter<'p> {
    counter: Option<&'p AtomicU64>,
    unreported: u64,
}

impl<'p> ProgressReporter<'p> {
    const BATCH: u64 = 32;

    pub(super) fn new(counter: Option<&'p AtomicU64>) -> Self {
        ProgressReporter {
            counter,
            unreported: 0,
        }
    }

    /// Counts `pixels` more; `last` publishes whatever is left.
    pub(super) fn add(&mut self, pixels: u64, last: bool) {
        let Some(counter) = self.counter else {
            return;
        };
        self.unreported += pixels;
        if self.unreported >= Self::BATCH || last {
            counter.fetch_add(self.unreported, Ordering::Relaxed);
            self.unreported = 0;
        }
    }
}

impl Machine<'_> {
    /// Whether the cancel flag is raised.
    pub(super) fn cancelled(&self) -> bool {
        self.cancel
            .as_ref()
            .is_some_and(|cancel| cancel.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;

    #[test]
    fn pixels_are_published_in_batches_and_at_the_end() {
        let counter = AtomicU64::new(0);
        let mut reporter = ProgressReporter::new(Some(&counter));
        let seen = |reporter: &mut ProgressReporter, pixels, last| {
            reporter.add(pixels, last);
            counter.load(Ordering::Relaxed)
        };
        assert_eq!(seen(&mut reporter, 31, false), 0);
        assert_eq!(seen(&mut reporter, 1, false), 32);
        assert_eq!(seen(&mut reporter, 8, false), 32);
        assert_eq!(seen(&mut reporter, 40, false), 80);
        assert_eq!(seen(&mut reporter, 3, true), 83);
        assert_eq!(seen(&mut reporter, 0, true), 83);
    }

    #[test]
    fn two_reporters_add_up_on_one_counter() {
        let counter = AtomicU64::new(0);
        let (mut a, mut b) = (
            ProgressReporter::new(Some(&counter)),
            ProgressReporter::new(Some(&counter)),
        );
        for _ in 0..10 {
            a.add(5, false);
            b.add(7, false);
        }
        a.add(0, true);
        b.add(0, true);
        assert_eq!(counter.load(Ordering::Relaxed), 120);
    }

    #[test]
    fn without_a_counter_nothing_is_kept() {
        let mut reporter = ProgressReporter::new(None);
        reporter.add(1000, true);
        assert_eq!(reporter.unreported, 0);
    }

    #[test]
    fn a_machine_is_cancelled_only_while_its_flag_is_raised() {
        let scene = crate::emu::machine::tests::tiny_scene(4, 4);
        let machine = Machine::new(&scene, &Default::default()).expect("a machine");
        assert!(!machine.cancelled());
        let flag = Arc::new(AtomicBool::new(false));
        let options = super::super::RenderOptions {
            cancel: Some(flag.clone()),
            ..Default::default()
        };
        let machine = Machine::new(&scene, &options).expect("a machine");
        assert!(!machine.cancelled());
        flag.store(true, Ordering::Relaxed);
        assert!(machine.cancelled());
    }
}
