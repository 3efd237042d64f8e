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
#[derive(Clone, Debug)]
pub struct OutputMemory {
    /// Words up to the highest address written so far (unwritten ones read 0 here).
    pub words: Vec<u32>,
    written: Vec<bool>,
    capacity: usize,
}

impl OutputMemory {
    /// The hardware's OMEM holds 250001 words (`RAM_SINGLE_READ_PORT #(32,32,250000)`).
    pub const HARDWARE_WORDS: usize = 250_001;

    pub fn new(words: usize) -> OutputMemory {
        OutputMemory {
            words: Vec::new(),
            written: Vec::new(),
            capacity: words,
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
        if address >= self.words.len() {
            if address >= self.capacity {
                return;
            }
            let len = (address + 1).max(2 * self.words.len()).min(self.capacity);
            self.words.resize(len, 0);
            self.written.resize(len, false);
        }
        self.words[address] = value;
        self.written[address] = true;
    }

    /// The word at `address`, if an OMWRITE ever wrote it.
    pub fn read(&self, address: usize) -> Option<u32> {
        self.written
            .get(address)
            .copied()
            .unwrap_or(false)
            .then(|| self.words[address])
    }
}
