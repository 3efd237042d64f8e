//! The texture memory as the cores share it, cycle by cycle: four banks (word `a` in bank
//! `a & 3`), each with a round-robin arbiter over the cores (`Module_BusArbitrer.v`,
//! `Theia.v`), and each core's texture interface (`Module_TMemInterface.v`), which reads
//! a TMREAD's x, y and z words one after another.
//!
//! Per clock period `t` (the values registers hold between edge `t - 1` and edge `t`):
//! - a core's interface requests the bank of the word it shows: x, y, z as its walking
//!   one `W` selects them, then the idle address 0x20 (bank 0) once `W` has moved past z;
//! - bank `b`'s arbiter grants the core its pointer `p_b` names, if that core requests
//!   `b`; the pointer stays while its core requests `b` and moves on by one otherwise, so
//!   with no requests it turns every cycle (`p_b(t) = t mod cores` from reset);
//! - the grant reaches the core one period later, looked up with the bank the core shows
//!   *then* (the registered grant of the current address's bank); with it, `W` shifts;
//! - the read is done the period after `W` reached its fourth bit, and the next
//!   instruction is handed over in that period.
//!
//! The request rises two periods after the TMREAD is handed over (one to trigger the ALU,
//! one in the ALU's request flip-flop) and falls the period after the read is done.
//!
//! Where nothing else in the machine moves, the periods up to the next one a read finishes
//! in are stepped here at once ([`TextureMemory::step_quietly`]); a lone reader steps only
//! the bank it requests and jumps over the periods it waits for that bank's pointer, as
//! the other banks' pointers turn by themselves. A proptest holds this to stepping every
//! period.

use crate::emu::core::alu::Vec3;
use crate::emu::core::mask::{lanes_of, LaneMask};

/// The most cores the masks here hold (the cores requesting a bank, granted, reading):
/// one bit each.
pub const MOST_CORES: usize = LaneMask::BITS as usize;

/// The word address the interface shows once x, y and z are read: bank 0.
const IDLE_ADDRESS: u32 = 0x20;
const BANKS: usize = 4;

/// One core's texture interface during a read.
#[derive(Clone, Copy, Debug)]
struct Interface {
    addresses: Vec3,
    /// The walking one: 1 = x, 2 = y, 4 = z, 8 and 0 = past z.
    walk: u8,
    /// Its value in the previous period (the done flip-flop's input).
    walked: u8,
}

impl Interface {
    /// One period on: the done flip-flop takes the walking one, which moves past the
    /// word just read when the bank granted it (`granted`).
    #[inline(always)]
    fn advance(&mut self, granted: bool) {
        self.walked = self.walk;
        if granted {
            self.walk = (self.walk << 1) & 0xF;
        }
    }

    fn address(&self) -> u32 {
        match self.walk {
            1 => self.addresses[0],
            2 => self.addresses[1],
            4 => self.addresses[2],
            _ => IDLE_ADDRESS,
        }
    }
}

/// A bank's arbiter: its pointer `pointer` is valid at period `at` and turns by one each
/// period nobody it points to requests the bank.
#[derive(Clone, Copy, Debug)]
struct Arbiter {
    pointer: u32,
    at: u64,
    /// The cores granted in period `granted_at` (one bit per core).
    granted: LaneMask,
    granted_at: u64,
}

impl Arbiter {
    /// The pointer in period `t` (`t >= at`), of `cores` cores: stepped period after
    /// period it is where the last step left it (no division in the loop a read spends
    /// its periods in).
    #[inline(always)]
    fn pointer_at(&self, t: u64, cores: u32) -> u32 {
        match t - self.at {
            0 => self.pointer,
            idle => ((u64::from(self.pointer) + idle) % u64::from(cores)) as u32,
        }
    }

    /// Whether core `core`'s request is granted in period `t` (granted in `t - 1`).
    #[inline(always)]
    fn grants(&self, core: usize, t: u64) -> bool {
        self.granted_at + 1 == t && self.granted & (1 << core) != 0
    }

    /// Period `t` with the cores `requests` requesting the bank: the core the pointer
    /// shows is granted if it requests, and the pointer stays on it; otherwise it turns.
    #[inline(always)]
    fn arbitrate(&mut self, t: u64, requests: LaneMask, cores: u32) {
        let pointer = self.pointer_at(t, cores);
        let holds = requests & (1 << pointer) != 0;
        self.granted = if holds { 1 << pointer } else { 0 };
        self.granted_at = t;
        self.pointer = match holds {
            true => pointer,
            false if pointer + 1 == cores => 0,
            false => pointer + 1,
        };
        self.at = t + 1;
    }
}

/// The banks' arbiters and every core's interface.
#[derive(Clone, Debug)]
pub struct TextureMemory {
    cores: u32,
    arbiters: [Arbiter; BANKS],
    interfaces: Vec<Option<Interface>>,
    /// The cores reading, one bit each: the ones whose interface is `Some`.
    reading: LaneMask,
}

impl TextureMemory {
    /// `cores` cores; the arbiters' pointers are 0 in period `reset_end` (the first
    /// period after reset).
    pub fn new(cores: usize, reset_end: u64) -> TextureMemory {
        let idle = Arbiter {
            pointer: 0,
            at: reset_end,
            granted: 0,
            granted_at: 0,
        };
        TextureMemory {
            cores: cores as u32,
            arbiters: [idle; BANKS],
            interfaces: vec![None; cores],
            reading: 0,
        }
    }

    /// Whether some core is reading.
    pub fn busy(&self) -> bool {
        self.reading != 0
    }

    /// Core `core` starts requesting the words `addresses` in the current period (the
    /// TMREAD was handed over two periods earlier).
    pub fn begin(&mut self, core: usize, addresses: Vec3) {
        debug_assert!(self.interfaces[core].is_none());
        self.interfaces[core] = Some(Interface {
            addresses,
            walk: 1,
            walked: 1,
        });
        self.reading |= 1 << core;
    }

    /// Steps periods `from..to` in order, stopping before the first one a read finishes
    /// in (an interface whose walking one was past z in the period before): the first
    /// period not stepped. A machine in which nothing else moves meanwhile visits only
    /// that one.
    pub fn step_quietly(&mut self, from: u64, to: u64) -> u64 {
        let mut t = from;
        if self.reading.count_ones() == 1 {
            let core = self.reading.trailing_zeros() as usize;
            while t < to {
                if let Some(idle) = self.lone_wait(t, core) {
                    t = (t + idle).min(to);
                } else if self.step_lone(t, core) {
                    t += 1;
                } else {
                    break;
                }
            }
            return t;
        }
        let mut finishing = self.finishes_next();
        while t < to && !finishing {
            finishing = self.step(t, |_| unreachable!("no read finishes in a quiet period"));
            debug_assert_eq!(finishing, self.finishes_next());
            t += 1;
        }
        t
    }

    /// How many periods from `t` on the lone reader `core` only waits for the pointer of
    /// the bank it requests to reach it (no grant on its way, its walking one as it was):
    /// those periods change nothing the bank's `at` does not imply. `None`: none.
    fn lone_wait(&self, t: u64, core: usize) -> Option<u64> {
        let interface = self.interfaces[core].as_ref()?;
        if interface.walked != interface.walk || !matches!(interface.walk, 1 | 2 | 4) {
            return None;
        }
        let arbiter = &self.arbiters[(interface.address() & 3) as usize];
        if arbiter.grants(core, t) {
            return None;
        }
        let cores = u64::from(self.cores);
        let pointer = u64::from(arbiter.pointer_at(t, self.cores));
        let wait = (core as u64 + cores - pointer) % cores;
        (wait > 0).then_some(wait)
    }

    /// [`TextureMemory::step`] of period `t` where `core` alone reads and its read does not
    /// finish (false, nothing stepped, where it would). Only the bank it requests is
    /// stepped: every other one's pointer turns by one, which its `at` already implies,
    /// and its grant is of no core that requests it (the one it holds is older than the
    /// period before the next step, so no step reads it).
    fn step_lone(&mut self, t: u64, core: usize) -> bool {
        let cores = self.cores;
        let Some(interface) = &mut self.interfaces[core] else {
            unreachable!("the lone core reads")
        };
        if interface.walked == 8 {
            return false;
        }
        let arbiter = &mut self.arbiters[(interface.address() & 3) as usize];
        let granted = arbiter.grants(core, t);
        arbiter.arbitrate(t, 1 << core, cores);
        interface.advance(granted);
        true
    }

    /// Whether the next period stepped finishes a read.
    fn finishes_next(&self) -> bool {
        self.interfaces.iter().flatten().any(|i| i.walked == 8)
    }

    /// Period `t` (every period some core reads must be stepped, in order): arbitrates
    /// and moves every interface on. Calls `done(core)` for each core whose read completes
    /// in `t` (its next instruction is handed over in `t`; its request falls after `t`).
    /// Whether a read finishes in `t + 1`.
    pub fn step(&mut self, t: u64, mut done: impl FnMut(usize)) -> bool {
        let mut requests: [LaneMask; BANKS] = [0; BANKS];
        let mut grants: LaneMask = 0;
        for core in lanes_of(self.reading) {
            let Some(interface) = &self.interfaces[core] else {
                unreachable!("a reading core's interface reads")
            };
            let bank = (interface.address() & 3) as usize;
            requests[bank] |= 1 << core;
            grants |= LaneMask::from(self.arbiters[bank].grants(core, t)) << core;
        }
        // A bank nobody requests only turns its pointer, which its `at` implies; its grant
        // of `t - 1`, if any, is of no one in `t + 1` (as [`TextureMemory::step_lone`]).
        for (arbiter, &requests) in self.arbiters.iter_mut().zip(&requests) {
            if requests != 0 {
                arbiter.arbitrate(t, requests, self.cores);
            }
        }
        let mut finishing = false;
        for core in lanes_of(self.reading) {
            let slot = &mut self.interfaces[core];
            let Some(interface) = slot else {
                unreachable!("a reading core's interface reads")
            };
            let finished = interface.walked == 8;
            interface.advance(grants & (1 << core) != 0);
            finishing |= interface.walked == 8;
            if finished {
                *slot = None;
                self.reading &= !(1 << core);
                done(core);
            }
        }
        finishing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps one core's read of `addresses` from `start` alone; the period it completes.
    fn alone(cores: usize, core: usize, start: u64, addresses: Vec3) -> u64 {
        let mut memory = TextureMemory::new(cores, 12);
        memory.begin(core, addresses);
        let mut t = start;
        loop {
            let mut finished = false;
            memory.step(t, |_| finished = true);
            if finished {
                return t;
            }
            t += 1;
        }
    }

    /// Reads begun at `starts` (core, period, addresses; at most one at a time per core),
    /// stepped period by period (`quiet`: skipping with [`TextureMemory::step_quietly`]
    /// up to each begin and each finish): every read's finish and the arbiters at the end.
    fn finishes(
        cores: usize,
        starts: &[(usize, u64, Vec3)],
        quiet: bool,
    ) -> (Vec<u64>, Vec<(u64, u32)>) {
        let mut memory = TextureMemory::new(cores, 12);
        let mut finished = vec![0; starts.len()];
        let mut reading = vec![None; cores];
        let mut t = 12;
        let mut next = 0;
        while next < starts.len() || memory.busy() {
            while next < starts.len() && starts[next].1 == t {
                let (core, _, addresses) = starts[next];
                if reading[core].is_none() {
                    memory.begin(core, addresses);
                    reading[core] = Some(next);
                }
                next += 1;
            }
            if memory.busy() {
                memory.step(t, |core| finished[reading[core].take().unwrap()] = t);
            }
            t += 1;
            if quiet && memory.busy() {
                let to = starts.get(next).map_or(u64::MAX, |start| start.1);
                t = memory.step_quietly(t, to.max(t));
            } else if !memory.busy() && next < starts.len() {
                t = t.max(starts[next].1);
            }
        }
        (finished, memory.pointers(t))
    }

    impl TextureMemory {
        /// What the arbiters hold for period `t` (after every step before it): each
        /// bank's pointer then, and the cores it granted in `t - 1`.
        fn pointers(&self, t: u64) -> Vec<(u64, u32)> {
            self.arbiters
                .iter()
                .map(|a| {
                    let pointer = u64::from(a.pointer_at(t, self.cores));
                    let granted = if a.granted_at + 1 == t { a.granted } else { 0 };
                    (pointer, granted)
                })
                .collect()
        }
    }

    proptest::proptest! {
        /// Skipping the periods in which no read begins or finishes steps the texture
        /// memory exactly as stepping every period does.
        #[test]
        fn quiet_periods_step_as_every_period_does(
            cores in 1usize..=8,
            reads in proptest::collection::vec((0usize..8, 0u64..40, [0u32..64, 0u32..64, 0u32..64]), 1..24),
        ) {
            let mut t = 12;
            let starts: Vec<_> = reads
                .iter()
                .map(|&(core, gap, addresses)| {
                    t += gap;
                    (core % cores, t, addresses)
                })
                .collect();
            proptest::prop_assert_eq!(finishes(cores, &starts, true), finishes(cores, &starts, false));
        }
    }

    #[test]
    fn a_lone_read_waits_for_each_bank_s_pointer() {
        // Measured on the RTL (tests/rtl/bench.v, random case 1, core 1): a TMREAD handed
        // over in period 53317 requests from 53319 the words 42, 43, 44 (banks 2, 3, 0),
        // every pointer at 3 there: each component waits for its pointer to reach core 1
        // (2 periods) and one more for the registered grant; done in 53332.
        assert_eq!(alone(4, 1, 53319, [42, 43, 44]), 53332);
        // The next one, from 53336: 33, 34, 35 (banks 1, 2, 3); bank 2's pointer stayed on
        // core 1 since its last grant, so y is granted at once; done in 53346.
        let mut memory = TextureMemory::new(4, 12);
        memory.begin(1, [42, 43, 44]);
        let mut t = 53319;
        let mut finished = 0;
        while finished == 0 {
            memory.step(t, |_| finished = t);
            t += 1;
        }
        assert_eq!(finished, 53332);
        memory.begin(1, [33, 34, 35]);
        let mut t = 53336;
        let mut finished = 0;
        while finished == 0 {
            memory.step(t, |_| finished = t);
            t += 1;
        }
        assert_eq!(finished, 53346);
    }
}
