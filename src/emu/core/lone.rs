//! A lone core ([`Core`]), as opposed to one lane of a lock-step group: it holds its
//! register banks (with the swap-memory copies, stored as the hardware decodes addresses),
//! latches, watchdog budget and output memory, and an optional footprint; it executes
//! nothing itself, but runs a routine through the interpreter it shares with lock-step
//! groups (`interp`, with `N = 1`), and gives native code its state ([`CoreState`]).

use super::alu::Vec3;
use super::control;
use super::interp::{self, Interrupted};
use super::observer::{Fault, Observer};
use super::op::storage_row;
use super::output::OutputMemory;
use super::program::Program;
use super::row::Rows;
use super::state::{triangle_rows, CoreState, LaneState, Latches};
use super::track::{Elements, Footprint, NativeWrites, RETURN_REGISTER, TMEM_LATCH};
use super::triangle::{Triangle, TRIANGLE_VECTORS};
use crate::emu::isa::registers::{core_writable, EntryPoint};

/// Runs a core's routines recording their [`Footprint`] (and sees nothing else: culling
/// and every other shortcut stay on).
struct Tracking<'f>(&'f Footprint);

impl Observer for Tracking<'_> {
    const ENABLED: bool = false;
    const TRACKS: bool = true;

    #[inline(always)]
    fn footprint(&self) -> &Footprint {
        self.0
    }
}

/// One THEIA core: one lane of the interpreter's state.
#[derive(Clone)]
pub struct Core<'a> {
    pub(super) lanes: LaneState<'a, 1>,
    /// Of the routines booked without being interpreted, those booked at an upper bound of
    /// their cost because their exit was not known (the acceleration structure):
    /// `instructions` is then not exact.
    pub unknown_cost_routines: u64,
    /// What the core has read and written since [`Core::track`], when it is tracked.
    pub(super) footprint: Option<Box<Footprint>>,
}

impl<'a> Core<'a> {
    pub fn new(program: &'a Program, texture: &'a [u32], output_words: usize) -> Core<'a> {
        Core {
            lanes: LaneState {
                program,
                texture,
                budget: u64::MAX,
                // The return register starts at address 0 (slot 0).
                latches: [Latches::boot(program.slot_of(0).unwrap_or(0) as u16)],
                outputs: [OutputMemory::new(output_words)],
                rows: Rows::ZERO,
            },
            unknown_cost_routines: 0,
            footprint: None,
        }
    }

    /// From now on, records what the core reads of its state before writing it, and what
    /// it writes ([`Footprint`]), until [`Core::untrack`].
    pub fn track(&mut self) {
        self.footprint = Some(Box::default());
    }

    /// What the core read and wrote since [`Core::track`]; it runs untracked again.
    pub fn untrack(&mut self) -> Option<Box<Footprint>> {
        self.footprint.take()
    }

    /// The value of state element `element` ([`track`](super::track)); untracked.
    pub fn element(&self, element: usize) -> u32 {
        let latches = self.latches();
        match element {
            RETURN_REGISTER => latches.return_slot as u32,
            _ if element >= TMEM_LATCH => latches.tmem_latch[element - TMEM_LATCH],
            _ => self.lanes.rows[element / 3].lane(0)[element % 3],
        }
    }

    /// Sets state element `element` (a return register's value must be a slot of the
    /// program); untracked.
    pub fn set_element(&mut self, element: usize, value: u32) {
        let latches = self.latches_mut();
        match element {
            RETURN_REGISTER => latches.return_slot = value as u16,
            _ if element >= TMEM_LATCH => latches.tmem_latch[element - TMEM_LATCH] = value,
            _ => self.lanes.rows[element / 3].0[element % 3][0] = value,
        }
    }

    /// Whether the elements `live` and the latches a routine's start compares or copies
    /// (swap parity, forwarding latches) hold the same values in both cores: then the same
    /// stretch of execution, run from either, reads the same values (its footprint's live
    /// elements being `live`).
    pub fn agrees_on(&self, other: &Core<'_>, live: &Elements) -> bool {
        let (a, b) = (self.latches(), other.latches());
        a.parity == b.parity
            && a.last_dst == b.last_dst
            && a.last_row == b.last_row
            && live.iter().all(|e| self.element(e) == other.element(e))
    }

    /// The output memory OMWRITE writes.
    pub fn output(&self) -> &OutputMemory {
        &self.lanes.outputs[0]
    }

    /// Puts `output` in place of the core's output memory, which it returns.
    pub fn replace_output(&mut self, output: OutputMemory) -> OutputMemory {
        std::mem::replace(&mut self.lanes.outputs[0], output)
    }

    /// The output memory, the core done with.
    pub fn into_output(self) -> OutputMemory {
        let [output] = self.lanes.outputs;
        output
    }

    /// Sets the per-pixel instruction budget and refills it.
    pub fn set_budget(&mut self, budget: u64) {
        self.lanes.budget = budget;
        self.latches_mut().budget_left = budget;
    }

    /// Instructions executed since the core started (culled routines included).
    pub fn instructions(&self) -> u64 {
        self.latches().instructions
    }

    /// Routines booked without being interpreted (culling).
    pub fn culled_routines(&self) -> u64 {
        self.latches().culled_routines
    }

    /// The texture memory TMREAD reads.
    pub fn texture(&self) -> &'a [u32] {
        self.lanes.texture
    }

    /// What OMWRITE does with its operands: output word `addresses[i]` := `values[i]`.
    pub fn omwrite(&mut self, addresses: Vec3, values: Vec3) {
        control::omwrite(&mut self.lanes.outputs[0], addresses, values);
    }

    /// The address CALL's return register holds.
    pub fn return_address(&self) -> u16 {
        self.lanes
            .program
            .slot_info(self.latches().return_slot as u32)
            .address
    }

    /// The previous instruction's ALU result (what address 0 reads at a routine's start).
    pub fn last_result(&self) -> Vec3 {
        self.row(self.latches().last_row as usize)
    }

    /// Whether two cores are in the same architectural state: every register as the
    /// execution unit and the host see it (so swap parity itself does not matter), the
    /// forwarding latches and the return register. Output memory and counters excluded.
    pub fn same_state(&self, other: &Core<'_>) -> bool {
        let exe = |core: &Core<'_>, row: u16| core.row(storage_row(row, core.parity()));
        let io = |core: &Core<'_>, row: usize| core.row(core.io_swap_base() + row);
        (0..128).all(|row| exe(self, row) == exe(other, row))
            && (0..32).all(|row| io(self, row) == io(other, row))
            && self.latches().last_dst == other.latches().last_dst
            && self.last_result() == other.last_result()
            && self.return_address() == other.return_address()
            && self.latches().tmem_latch == other.latches().tmem_latch
    }

    /// Runs one routine from the entry-point table until its RETURN; returns bit 0 of it.
    #[inline]
    pub fn run<O: Observer>(&mut self, entry: EntryPoint, observer: &mut O) -> Result<bool, Fault> {
        if !O::ENABLED && self.footprint.is_some() {
            return self.run_tracked(entry);
        }
        if O::ENABLED {
            observer.routine_start(entry, self.lanes.program.entry(entry));
        }
        let parity = self.parity();
        let value = match interp::run::<1, O>(&mut self.lanes, parity, 1, entry, observer) {
            Ok(returned) => returned != 0,
            Err(Interrupted::Fault(fault)) => return Err(fault),
            Err(Interrupted::Abandoned) => unreachable!("a lone core reports its faults"),
        };
        if O::ENABLED {
            observer.routine_end(entry, value);
        }
        Ok(value)
    }
}

impl Core<'_> {
    /// [`Core::run`] recording the routine's footprint. Out of line: it is another
    /// instance of the interpreter, and the untracked one stays as small as it was.
    #[inline(never)]
    fn run_tracked(&mut self, entry: EntryPoint) -> Result<bool, Fault> {
        let parity = self.parity();
        let footprint = self.footprint.as_deref().expect("a tracked core");
        let mut tracking = Tracking(footprint);
        match interp::run::<1, _>(&mut self.lanes, parity, 1, entry, &mut tracking) {
            Ok(returned) => Ok(returned != 0),
            Err(Interrupted::Fault(fault)) => Err(fault),
            Err(Interrupted::Abandoned) => unreachable!("a lone core reports its faults"),
        }
    }
}

/// Native code (the host, culling, the structure, pixel stages) reaches a core's state
/// here; a tracked core records every row it reads or writes.
impl CoreState for Core<'_> {
    #[inline(always)]
    fn row(&self, row: usize) -> Vec3 {
        if let Some(footprint) = &self.footprint {
            footprint.read_row(row);
        }
        self.lanes.rows[row].lane(0)
    }

    #[inline(always)]
    fn set_row(&mut self, row: usize, value: Vec3) {
        if let Some(footprint) = &self.footprint {
            footprint.write_row(row);
        }
        self.lanes.rows[row].set_lane(0, value);
    }

    /// The host's triangle loads, recorded once per swap parity ([`NativeWrites`]): the
    /// rows as the provided method writes them, with the stores one plain loop.
    #[inline(always)]
    fn write_triangle_rows(&mut self, values: &Triangle) {
        let parity = self.parity();
        let (io, alias) = triangle_rows(parity);
        if let Some(footprint) = &self.footprint {
            let key = NativeWrites::TriangleRows {
                parity: parity as u8,
            };
            if !footprint.noted(key) {
                for row in (io..io + TRIANGLE_VECTORS).chain(alias..alias + TRIANGLE_VECTORS) {
                    footprint.write_row(row);
                }
                footprint.note(key);
            }
        }
        for (row, &value) in values.iter().enumerate() {
            self.lanes.rows[io + row].set_lane(0, value);
            self.lanes.rows[alias + row].set_lane(0, value);
        }
    }

    /// Untracked, the rows are stored directly, one after another: with a test for a
    /// footprint before each store, the compiler kept the writes a loop over an array in
    /// memory (the built-in scene took 2% longer at one thread).
    #[inline(always)]
    fn write_registers<const N: usize>(&mut self, writes: [(u16, Vec3); N]) {
        if self.footprint.is_some() {
            for (address, value) in writes {
                self.write_register(address, value);
            }
            return;
        }
        let parity = self.parity();
        for (address, value) in writes {
            if core_writable(address) {
                self.lanes.rows[storage_row(address, parity)].set_lane(0, value);
            }
        }
    }

    /// Tracked the first time per footprint, untracked after (debug builds check that
    /// nothing new is written then).
    #[inline(always)]
    fn native_writes(&mut self, key: NativeWrites, write: impl FnOnce(&mut Self)) {
        match self.footprint.as_deref() {
            None => write(self),
            Some(footprint) if footprint.noted(key) && !cfg!(debug_assertions) => {
                let footprint = self.footprint.take();
                write(self);
                self.footprint = footprint;
            }
            Some(footprint) => {
                let before = (footprint.live(), footprint.written(), footprint.noted(key));
                write(self);
                let footprint = self.footprint.as_deref().expect("still tracked");
                if before.2 {
                    assert_eq!(
                        (footprint.live(), footprint.written()),
                        (before.0, before.1),
                        "{key:?} wrote other elements than the first time"
                    );
                }
                footprint.note(key);
            }
        }
    }

    #[inline(always)]
    fn row_component(&self, row: usize, component: usize) -> u32 {
        if let Some(footprint) = &self.footprint {
            footprint.native(row, 1 << component, 0);
        }
        self.lanes.rows[row].0[component][0]
    }

    #[inline(always)]
    fn set_row_component(&mut self, row: usize, component: usize, value: u32) {
        if let Some(footprint) = &self.footprint {
            footprint.native(row, 0, 1 << component);
        }
        self.lanes.rows[row].0[component][0] = value;
    }

    fn set_return_register(&mut self, slot: u16) {
        if let Some(footprint) = &self.footprint {
            footprint.write(RETURN_REGISTER);
        }
        self.latches_mut().return_slot = slot;
    }

    #[inline(always)]
    fn latches(&self) -> &Latches {
        &self.lanes.latches[0]
    }

    #[inline(always)]
    fn latches_mut(&mut self) -> &mut Latches {
        &mut self.lanes.latches[0]
    }

    fn program(&self) -> &Program {
        self.lanes.program
    }

    fn budget(&self) -> u64 {
        self.lanes.budget
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::program::Program;
    use crate::emu::core::rom::{rom, RomVariant};
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn loading_many_triangles_at_once_equals_loading_each(
            count in 0usize..6,
            seed in any::<u32>(),
            parity in 0usize..2,
        ) {
            let program = Program::new(rom(RomVariant::Faithful), &Program::default_imem());
            let triangles: Vec<Triangle> = (0..count as u32)
                .map(|t| std::array::from_fn(|v| [seed ^ t, v as u32, t * 7 + v as u32]))
                .collect();
            let mut each = Core::new(&program, &[], 0);
            for row in 0..160 {
                each.set_row(row, [row as u32, seed, 1]);
            }
            each.lanes.latches[0].parity = parity as u8;
            let mut at_once = Core::new(&program, &[], 0);
            at_once.lanes.rows = each.lanes.rows.clone();
            at_once.lanes.latches[0].parity = parity as u8;
            for triangle in &triangles {
                each.load_triangle(triangle);
            }
            at_once.load_triangles(&triangles);
            prop_assert!(each.same_state(&at_once));
            prop_assert_eq!(each.parity(), at_once.parity());
        }
    }
}
