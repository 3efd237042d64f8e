//! A core's output memory (OMEM), the target of OMWRITE.
//!
//! The guide has the machine own the output memories, and it does: the machine sizes each
//! core's memory when it boots the core and takes it out of the core when the core's
//! partition is done, to assemble the frame. While the core runs, the core holds it,
//! as the hardware does (every core has its own OMEM RAM next to its execution unit, and
//! OMWRITE is an instruction of that unit). This module sits in `core` because `core` may
//! not import `machine`; the alternative, a trait the core writes through, would give
//! `Core` and the lock-step group a type parameter (or a call through a vtable) on the
//! OMWRITE path of the interpreter loop, for no gain: nothing but this memory is ever
//! written there.

/// A core's private output memory (OMWRITE target), with which words were ever written.
///
/// Storage grows with the highest address written, up to the capacity: a frame touches
/// only 3 words per pixel, so the 250001-word hardware memory is never zeroed as a whole.
/// A *window* holds the writes of a stretch of a core's pixels (when one core's pixels run
/// on several threads): stored densely from its base up, the rare writes below the base
/// kept in order, so that each stretch costs memory for its own pixels only.
#[derive(Clone, Debug, Default)]
pub struct OutputMemory {
    /// Words from `base` up to the highest address written so far (unwritten ones read 0
    /// here).
    pub words: Vec<u32>,
    written: Vec<bool>,
    capacity: usize,
    base: usize,
    /// Writes below `base`, in the order they happened.
    below: Vec<(u32, u32)>,
}

impl OutputMemory {
    /// The hardware's OMEM holds 250001 words (`RAM_SINGLE_READ_PORT #(32,32,250000)`).
    pub const HARDWARE_WORDS: usize = 250_001;

    pub fn new(words: usize) -> OutputMemory {
        OutputMemory::window(0, words)
    }

    /// A memory of `capacity` words that stores densely from word `base` up.
    pub fn window(base: usize, capacity: usize) -> OutputMemory {
        OutputMemory {
            words: Vec::new(),
            written: Vec::new(),
            capacity,
            base,
            below: Vec::new(),
        }
    }

    /// Words the memory holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Writes beyond the memory are lost, as in the RAM.
    #[inline]
    pub(super) fn write(&mut self, address: u32, value: u32) {
        let address = address as usize;
        if address >= self.capacity {
            return;
        }
        let Some(index) = address.checked_sub(self.base) else {
            self.below.push((address as u32, value));
            return;
        };
        if index >= self.words.len() {
            let len = (index + 1)
                .max(2 * self.words.len())
                .min(self.capacity - self.base);
            self.words.resize(len, 0);
            self.written.resize(len, false);
        }
        self.words[index] = value;
        self.written[index] = true;
    }

    /// Whether every word ever written lies in `words`.
    pub fn written_within(&self, words: std::ops::Range<usize>) -> bool {
        let last = self.written.iter().rposition(|&w| w);
        self.below
            .iter()
            .all(|&(a, _)| words.contains(&(a as usize)))
            && last.is_none_or(|last| {
                let first = self.written.iter().position(|&w| w).unwrap_or(last);
                words.contains(&(self.base + first)) && words.contains(&(self.base + last))
            })
    }

    /// Writes `later`'s words over this memory's, as if its OMWRITEs came after these.
    pub fn overlay(&mut self, later: &OutputMemory) {
        for &(address, value) in &later.below {
            self.write(address, value);
        }
        for (index, (&value, &written)) in later.words.iter().zip(&later.written).enumerate() {
            if written {
                self.write((later.base + index) as u32, value);
            }
        }
    }

    /// The word at `address`, if an OMWRITE ever wrote it.
    pub fn read(&self, address: usize) -> Option<u32> {
        let Some(index) = address.checked_sub(self.base) else {
            let last = self
                .below
                .iter()
                .rev()
                .find(|&&(a, _)| a as usize == address);
            return last.map(|&(_, value)| value);
        };
        self.written
            .get(index)
            .copied()
            .unwrap_or(false)
            .then(|| self.words[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_as_a_whole_memory_does() {
        let (mut whole, mut window) = (OutputMemory::new(100), OutputMemory::window(30, 100));
        for (address, value) in [(31, 1), (5, 2), (30, 3), (5, 4), (99, 5), (100, 6), (29, 7)] {
            whole.write(address, value);
            window.write(address, value);
        }
        for address in 0..110 {
            assert_eq!(window.read(address), whole.read(address), "word {address}");
        }
        assert_eq!(
            window.read(5),
            Some(4),
            "the later of two writes below the base"
        );
        assert_eq!(window.read(100), None, "past the capacity");
        assert_eq!(window.words.len(), 70, "dense from the base only");
    }

    #[test]
    fn written_within_looks_at_every_write() {
        let mut window = OutputMemory::window(30, 100);
        assert!(window.written_within(0..0), "nothing written");
        window.write(31, 1);
        window.write(35, 1);
        assert!(window.written_within(30..36));
        assert!(!window.written_within(32..36));
        assert!(!window.written_within(30..35));
        window.write(3, 1);
        assert!(!window.written_within(30..36));
        assert!(window.written_within(3..36));
    }

    #[test]
    fn an_overlay_keeps_the_later_write() {
        let mut first = OutputMemory::new(100);
        first.write(10, 1);
        first.write(40, 2);
        let mut later = OutputMemory::window(40, 100);
        later.write(40, 3);
        later.write(5, 4);
        first.overlay(&later);
        assert_eq!(
            (
                first.read(10),
                first.read(40),
                first.read(5),
                first.read(41)
            ),
            (Some(1), Some(3), Some(4), None)
        );
    }
}
