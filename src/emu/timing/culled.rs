//! The cycles of the MAINs culling skips (`machine::cull`), so that a timed frame runs as
//! fast as a culled render: a rejecting MAIN of either ROM runs one fixed path per exit
//! (the faithful BIU leaves at 173, 175 or 178; the fixed one at its flat, g2, g3 or g1
//! test, fixed.shdr 280..=308), and only its three DIVs' cycles (169..=171, shared by both
//! BIUs) depend on the values, through H1, H2, H3 and Δ, which the culler computes
//! anyway. Its cycles are the path's words' costs ([`super::cost`]) plus the DIVs'.

use super::cost::{div_cycles, instruction_cost, Cost};
use crate::emu::core::alu::{self, Vec3};
use crate::emu::core::rom::{rom, RomVariant};
use crate::emu::isa::{Instr, Word};
use crate::emu::machine::cull::{
    self, Biu, Culler, Exit, FixedConstants, TriangleConstants, REJECT_PATH_WORDS,
};

#[cfg(target_arch = "x86_64")]
mod kernel;

/// The words of a rejecting MAIN, in the order it runs them, up to its RETURN (43),
/// without BIU's three DIVs (169..=171): MAIN's CALL, BIU 157..=168, its tests and RET,
/// MAIN's JEQX. The fixed BIU tests on one of two sides (`back`: D' <= 0).
fn path(exit: Exit, back: bool) -> Vec<u16> {
    let mut path = vec![37];
    path.extend(157..=168);
    path.push(172);
    match exit {
        Exit::U => path.push(173),
        Exit::V => path.extend([174, 175]),
        Exit::Sum => path.extend([174, 176, 177, 178]),
        // fixed.shdr: six edge values and JLX (280..=286), then the side's three SETs
        // and its flat test (front 287..=290, back 298..=301), each test jumping over
        // its RET to the next.
        _ => {
            path.extend(280..=286);
            let side: u16 = if back { 298 } else { 287 };
            path.extend(side..side + 4);
            let tests = match exit {
                Exit::Flat => 0,
                Exit::G2 => 1,
                Exit::G3 => 2,
                _ => 3,
            };
            let after_flat = side + 5;
            path.extend((0..tests).map(|test| after_flat + 2 * test));
            // The failing test's RET.
            path.push(if tests == 0 {
                side + 4
            } else {
                after_flat + 2 * tests - 1
            });
        }
    }
    path.push(38);
    path
}

/// The word at `address` of a reject path: the faithful ROM's (`REJECT_PATH_WORDS`), or
/// the fixed ROM's from 280 on (the culler checked both against the program).
fn path_word(biu: Biu, address: u16) -> Word {
    if address >= 280 || (biu == Biu::Fixed && address == 172) {
        return rom(RomVariant::Fixed)[address as usize];
    }
    REJECT_PATH_WORDS
        .iter()
        .find(|(a, _)| *a == address)
        .map(|&(_, word)| Word(word))
        .expect("every address of the path is a reject-path word")
}

/// `ray` × `e2` (BIU's P), on the exact multiplier's path where `exact_ray` says the
/// ray's lanes are [`alu::exact_multiplicands`].
#[inline(always)]
fn ray_cross(ray: Vec3, e2: Vec3, exact_ray: bool) -> Vec3 {
    match exact_ray {
        true => alu::cross_exact(ray, e2),
        false => alu::cross(ray, e2),
    }
}

/// One triangle's rejected MAIN under one ray ([`RejectTiming::row`]): 0 where BIU does
/// not reject it, else its exit's [`Exit::code`] in its top four bits and its cycles
/// below.
pub type RowEntry = u16;
const ROW_CODE_SHIFT: u32 = 12;
const ROW_CYCLES: u32 = (1 << ROW_CODE_SHIFT) - 1;

/// The cycles of the rejecting MAINs: per exit, without the DIVs.
#[derive(Clone, Copy, Debug)]
pub struct RejectTiming {
    biu: Biu,
    /// By [`Exit::code`] - 1.
    cycles: [u32; 4],
}

impl RejectTiming {
    /// For a culler of either BIU (whose path words the culler has checked); `None` where
    /// the fixed BIU's two sides would cost differently (they do not: the same opcodes).
    pub fn new(culler: &Culler) -> Option<RejectTiming> {
        let biu = culler.biu();
        let cycles = |exit, back| -> u32 {
            path(exit, back)
                .iter()
                .map(
                    |&address| match instruction_cost(Instr::decode(path_word(biu, address))) {
                        Cost::Fixed(cycles) => cycles,
                        other => unreachable!("a reject path has no {other:?}"),
                    },
                )
                .sum()
        };
        let mut timing = RejectTiming {
            biu,
            cycles: [0; 4],
        };
        for &exit in biu.exits() {
            let front = cycles(exit, false);
            if biu == Biu::Fixed && cycles(exit, true) != front {
                return None;
            }
            // Three long DIVs must fit a row entry's cycle bits.
            if front + 3 * div_cycles([1; 3], [1; 3]) > ROW_CYCLES {
                return None;
            }
            timing.cycles[exit.code() as usize - 1] = front;
        }
        Some(timing)
    }

    /// Every triangle's rejected-MAIN cost under `ray`, into `row` (one
    /// [`RowEntry`] per triangle, in scene order): a pixel's MAINs all see one ray, so its
    /// products are computed in one tight loop, not one MAIN at a time, the ray's
    /// multiplier path chosen once. Eight triangles at a time where the CPU has AVX-512F
    /// and four where it has AVX2 (`kernel`), if the ray's lanes are exact
    /// multiplicands; the same entries one at a time otherwise.
    pub fn row(&self, culler: &Culler, ray: Vec3, row: &mut Vec<RowEntry>) {
        row.clear();
        #[cfg(target_arch = "x86_64")]
        if alu::exact_multiplicands(ray) {
            if crate::emu::cpu::has_avx512() {
                // SAFETY: the CPU has AVX-512F, checked just above.
                unsafe { kernel::row_avx512(self, culler, ray, row) };
                return;
            }
            if crate::emu::cpu::has_avx2() {
                // SAFETY: the CPU has AVX2, checked just above.
                unsafe { kernel::row_avx2(self, culler, ray, row) };
                return;
            }
        }
        self.scalar_row(culler, ray, 0, row);
    }

    /// [`RejectTiming::row`] one triangle at a time, from triangle `first` on, appended to
    /// `row`: the reference the vector kernel is checked against.
    fn scalar_row(&self, culler: &Culler, ray: Vec3, first: usize, row: &mut Vec<RowEntry>) {
        let exact_ray = alu::exact_multiplicands(ray);
        let constants = &culler.constants()[first..];
        match self.biu {
            Biu::Faithful => row.extend(
                constants
                    .iter()
                    .map(|k| self.faithful_entry(k, ray, exact_ray)),
            ),
            Biu::Fixed => row.extend(
                constants
                    .iter()
                    .zip(&culler.fixed_constants()[first..])
                    .map(|(k, f)| self.fixed_entry(k, f, ray, exact_ray)),
            ),
        }
    }

    /// Triangle `index`'s [`RowEntry`] under `ray`, one triangle alone.
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    fn scalar_entry(&self, culler: &Culler, index: usize, ray: Vec3) -> RowEntry {
        let exact_ray = alu::exact_multiplicands(ray);
        let k = &culler.constants()[index];
        match self.biu {
            Biu::Faithful => self.faithful_entry(k, ray, exact_ray),
            Biu::Fixed => self.fixed_entry(k, &culler.fixed_constants()[index], ray, exact_ray),
        }
    }

    /// The faithful BIU's entry for the triangle with constants `k` under `ray`, whose
    /// lanes are [`alu::exact_multiplicands`] where `exact_ray`.
    #[inline(always)]
    fn faithful_entry(&self, k: &TriangleConstants, ray: Vec3, exact_ray: bool) -> RowEntry {
        let p = ray_cross(ray, k.e2, exact_ray);
        let (delta, h2) = (alu::dot(p, k.e1), alu::dot(p, k.t));
        let h3 = alu::dot(k.q, ray);
        self.entry(cull::verdict(h2, || h3, delta), delta, [k.h1, h2, h3])
    }

    /// [`RejectTiming::faithful_entry`] for the fixed BIU, with its constants `f`.
    #[inline(always)]
    fn fixed_entry(
        &self,
        k: &TriangleConstants,
        f: &FixedConstants,
        ray: Vec3,
        exact_ray: bool,
    ) -> RowEntry {
        let [g2, h3, delta_prime] = cull::fixed_edges(k, f, ray, exact_ray);
        let exit = cull::fixed_verdict(g2, h3, delta_prime);
        if exit.is_none() {
            return 0;
        }
        let p = ray_cross(ray, k.e2, exact_ray);
        let (delta, h2) = (alu::dot(p, k.e1), alu::dot(p, k.t));
        self.entry(exit, delta, [k.h1, h2, h3])
    }

    /// The row entry of a MAIN that leaves at `exit` (`None`: accepted), its DIVs dividing
    /// `dividends` by `delta` ([`div_cycles`] on equal lanes: long where |Δ| is neither 0
    /// nor at least |H|·2^17).
    #[inline(always)]
    fn entry(&self, exit: Option<Exit>, delta: u32, dividends: [u32; 3]) -> RowEntry {
        let Some(exit) = exit else {
            return 0;
        };
        let divisor = u64::from(alu::magnitude32(delta));
        let long = |h: u32| divisor != 0 && divisor < u64::from(alu::magnitude32(h)) << 17;
        let longs = dividends.into_iter().filter(|&h| long(h)).count() as u32;
        let (short, long) = (div_cycles([0; 3], [0; 3]), div_cycles([1; 3], [1; 3]));
        let cycles = self.cycles[exit.code() as usize - 1] + 3 * short + longs * (long - short);
        RowEntry::from(exit.code()) << ROW_CODE_SHIFT | cycles as RowEntry
    }

    /// What the culled MAINs of row entries `entries` (none 0) book, in one pass: the
    /// instructions they run, and the place of the last one to leave by [`Exit::Sum`].
    pub fn booking(&self, entries: &[RowEntry]) -> (u64, Option<usize>) {
        // By code, which a 16-bit entry shifted by 12 keeps within 16.
        let mut instructions = [0; 16];
        for (exit, code) in self.biu.exits().iter().zip(1..) {
            instructions[code] = exit.instructions();
        }
        let code = |entry: RowEntry| usize::from(entry >> ROW_CODE_SHIFT);
        let total = entries.iter().map(|&entry| instructions[code(entry)]).sum();
        let sum = usize::from(Exit::Sum.code());
        let by_sum = self.biu.exits().get(sum - 1) == Some(&Exit::Sum);
        let last_sum = by_sum.then(|| entries.iter().rposition(|&e| code(e) == sum));
        (total, last_sum.flatten())
    }

    /// The exit of a row entry that is not 0.
    pub fn exit_of(&self, entry: RowEntry) -> Exit {
        self.biu.exits()[usize::from(entry >> ROW_CODE_SHIFT) - 1]
    }

    /// The cycles of a row entry that is not 0.
    pub fn cycles_of(entry: RowEntry) -> u32 {
        u32::from(entry & ROW_CYCLES as RowEntry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::core::program::Program;
    use crate::emu::core::Core;
    use crate::emu::core::CoreState;
    use crate::emu::isa::registers::address;
    use crate::emu::isa::registers::EntryPoint;
    use crate::emu::timing::record::Recording;
    use proptest::prelude::*;

    use crate::emu::machine::cull::values::vec3;

    /// A booking adds each entry's exit's instructions (its code, whatever its cycles) and
    /// finds the last SUM exit, which only the faithful BIU has (code 3 is the fixed one's
    /// G3 exit).
    #[test]
    fn a_booking_counts_each_exit_s_instructions_and_finds_the_last_sum() {
        let entries = |codes: &[u16]| -> Vec<RowEntry> {
            let cycles = (0..).map(|c: u16| c * 37 % 4096);
            codes
                .iter()
                .zip(cycles)
                .map(|(&code, c)| code << ROW_CODE_SHIFT | c)
                .collect()
        };
        let faithful = RejectTiming {
            biu: Biu::Faithful,
            cycles: [0; 4],
        };
        let row = entries(&[1, 3, 2, 3, 1]);
        assert_eq!(faithful.booking(&row), (20 + 23 + 21 + 23 + 20, Some(3)));
        assert_eq!(faithful.booking(&row[..1]), (20, None));
        assert_eq!(faithful.booking(&[]), (0, None));
        let fixed = RejectTiming {
            biu: Biu::Fixed,
            cycles: [0; 4],
        };
        assert_eq!(
            fixed.booking(&entries(&[1, 2, 3, 4, 3])),
            (31 + 32 + 33 + 34 + 33, None)
        );
    }

    /// The reference [`RejectTiming::row`] is checked against: MAIN on triangle `index`
    /// under `ray`, when BIU rejects it, one MAIN at a time: its exit and its cycles from
    /// its first instruction to its RETURN.
    fn reference_main(
        timing: &RejectTiming,
        culler: &Culler,
        index: usize,
        ray: Vec3,
    ) -> Option<(Exit, u32)> {
        let k = &culler.constants()[index];
        let p = alu::cross(ray, k.e2);
        let (delta, h2) = (alu::dot(p, k.e1), alu::dot(p, k.t));
        let h3 = alu::dot(k.q, ray);
        let exit = match timing.biu {
            Biu::Faithful => cull::verdict(h2, || h3, delta)?,
            Biu::Fixed => {
                let f = &culler.fixed_constants()[index];
                cull::fixed_verdict(alu::dot(ray, f.c2), h3, alu::dot(ray, f.c_delta))?
            }
        };
        let base = timing.cycles[exit.code() as usize - 1];
        let div = |h: u32| div_cycles([h; 3], [delta; 3]);
        Some((exit, base + div(k.h1) + div(h2) + div(h3)))
    }

    /// A word for the row tests: mostly small Q15.17, or a few raw units (edge values near
    /// the fixed BIU's bounds), the multiplier's and the packer's edges, or any word.
    fn edge_word() -> impl Strategy<Value = u32> {
        let edges = vec![
            0,
            1,
            0xFFFF_FFFF,
            0x2_0000,
            0xFFFE_0000,
            0x5555_5555,
            0x5555_5556,
            0xAAAA_AAAA,
            0xAAAA_AAAB,
            0x7FFF_FFFF,
            0x8000_0000,
            0x8000_0001,
        ];
        prop_oneof![
            4 => (-8i32 << 17..8i32 << 17).prop_map(|v| v as u32),
            2 => (-64i32..64).prop_map(|v| v as u32),
            1 => prop::sample::select(edges),
            1 => any::<u32>(),
        ]
    }

    fn edge_vec3() -> impl Strategy<Value = Vec3> {
        [edge_word(), edge_word(), edge_word()]
    }

    /// One triangle's constants for either BIU, each drawn on its own (so P and Q are
    /// sometimes beyond the exact multiplier, and Δ sometimes 0).
    fn constants() -> impl Strategy<Value = (TriangleConstants, FixedConstants)> {
        let k = (
            edge_vec3(),
            edge_vec3(),
            edge_vec3(),
            edge_vec3(),
            edge_word(),
        );
        (k, edge_vec3(), edge_vec3()).prop_map(|((e1, e2, t, q, h1), c2, c_delta)| {
            (
                TriangleConstants { e1, e2, t, q, h1 },
                FixedConstants { c2, c_delta },
            )
        })
    }

    /// The row from each vector kernel this CPU runs (`row` takes only one of them), where
    /// the kernels apply (the ray's lanes exact multiplicands).
    fn vector_rows(
        timing: &RejectTiming,
        culler: &Culler,
        ray: Vec3,
    ) -> Vec<(&'static str, Vec<RowEntry>)> {
        let mut rows = Vec::new();
        #[cfg(target_arch = "x86_64")]
        if alu::exact_multiplicands(ray) {
            use crate::emu::cpu::{has_avx2, has_avx512};
            type Kernel = unsafe fn(&RejectTiming, &Culler, Vec3, &mut Vec<RowEntry>);
            let kernels: [(&str, bool, Kernel); 2] = [
                ("AVX2", has_avx2(), kernel::row_avx2),
                ("AVX-512", has_avx512(), kernel::row_avx512),
            ];
            for (name, _, kernel) in kernels.into_iter().filter(|&(_, available, _)| available) {
                let mut row = Vec::new();
                // SAFETY: the CPU has the kernel's features (filtered just above).
                unsafe { kernel(timing, culler, ray, &mut row) };
                rows.push((name, row));
            }
        }
        rows
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        /// The row (eight or four triangles at a time where the CPU has AVX-512F or AVX2
        /// and the ray is exact) is the scalar row, entry for entry, on either BIU,
        /// whatever the row's length (several blocks and a tail).
        #[test]
        fn a_row_is_the_scalar_row(
            triangles in prop::collection::vec(constants(), 0..40),
            ray in edge_vec3(),
            fixed in any::<bool>(),
        ) {
            let (k, f): (Vec<_>, Vec<_>) = triangles.into_iter().unzip();
            let culler = match fixed {
                true => Culler::with_constants(Biu::Fixed, k, f),
                false => Culler::with_constants(Biu::Faithful, k, Vec::new()),
            };
            let timing = RejectTiming::new(&culler).expect("both ROMs are timed");
            let mut scalar = vec![1];
            timing.scalar_row(&culler, ray, 0, &mut scalar);
            let mut row = vec![1];
            timing.row(&culler, ray, &mut row);
            prop_assert_eq!(&row[..], &scalar[1..]);
            for (kernel, row) in vector_rows(&timing, &culler, ray) {
                prop_assert_eq!(&row[..], &scalar[1..], "{}", kernel);
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// A MAIN the culler rejects costs what the interpreted one records, on either
        /// ROM: its exit's path and its three DIVs.
        #[test]
        fn a_timed_rejecting_main_costs_what_the_interpreted_one_records(
            triangle in [vec3(), vec3(), vec3(), vec3(), vec3(), vec3(), vec3()],
            camera in vec3(),
            ray in vec3(),
            fixed in any::<bool>(),
        ) {
            let variant = if fixed { RomVariant::Fixed } else { RomVariant::Faithful };
            let program = Program::new(rom(variant), &Program::default_imem());
            let mut config = [[0; 3]; 6];
            config[address::CREG_CAMERA_POSITION as usize] = camera;
            let culler = Culler::new(&program, &[triangle], &config).unwrap();
            let timing = RejectTiming::new(&culler).expect("both ROMs are timed");
            let texture = [0u32; 4];
            let mut core = Core::new(&program, &texture, 16);
            for (row, value) in config.iter().enumerate() {
                core.host_write(row as u16, *value);
            }
            core.write_register(address::CREG_RAY_DIRECTION, ray);
            core.load_triangle(&triangle);
            core.set_budget(1_000);
            let mut recording = Recording::default();
            let returned = core.run(EntryPoint::Main, &mut recording).unwrap();
            let run = *recording.run(0);
            let timed = reference_main(&timing, &culler, 0, ray);
            let mut row = Vec::new();
            timing.row(&culler, ray, &mut row);
            let entry = timed.map_or(0, |(exit, cycles)| {
                RowEntry::from(exit.code()) << ROW_CODE_SHIFT | cycles as RowEntry
            });
            prop_assert_eq!(row, vec![entry]);
            prop_assert_eq!(timed.is_some(), culler.rejects(0, ray).is_some());
            if let Some((exit, cycles)) = timed {
                prop_assert!(!returned);
                prop_assert_eq!(run.events, 0);
                prop_assert_eq!(cycles, run.tail, "{:?}", exit);
            }
        }
    }
}
