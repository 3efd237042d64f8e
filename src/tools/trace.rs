//! Tracing one pixel: what every instruction of every routine did, in a fixed text format,
//! and what it cost in emulated cycles.
//!
//! [`trace_pixel`] finds the core whose partition holds the pixel, boots that core, runs the
//! pixels before it in NPG order without observing (registers carry over from pixel to
//! pixel, so the traced pixel starts in exactly the state a full render gives it), then runs
//! the pixel with a [`Tracer`] that writes one line per event.
//!
//! # Trace format (version 1)
//!
//! Plain ASCII, one event a line, nothing that changes between runs (no times, no host
//! paths but the scene name the user gave):
//!
//! * `# …`: comments. The header names the scene, the pixel, its core and its position in the
//!   core's partition; the footer gives the pixel's output words and NPG's answer.
//! * `>> NAME at AAAA` starts a routine triggered by the control unit (entry-point name,
//!   start address in hex); MAIN lines add `(triangle K of N)`.
//! * `<< NAME returns TRUE|FALSE`: the routine's RETURN value (bit 0).
//! * One line per executed instruction, every column fixed width but the last:
//!
//! ```text
//! AAAA F J NNNN  A: x y z  B: x y z  R: x y z  INSTRUCTION
//! ```
//!
//!   - `AAAA`: the instruction's address (hex; user code is 8000..80FF).
//!   - `F`: `W` the result was written to the register file, `.` it was not (only forwarded to
//!     the next instruction, e.g. a write to bank 0 or `RET`), `-` the opcode has no result.
//!   - `J`: `T` conditional jump taken, `N` not taken, `J` unconditional (JMP, CALL, RET),
//!     blank for everything else.
//!   - `NNNN`: the address executed next.
//!   - `A:`, `B:`: the ALU inputs after forwarding, `R:` the result; each lane is the raw word
//!     in hex (8 digits) and the same word read as Q15.17 (signed, / 2^17) with 6 decimals,
//!     right-aligned in 13 columns. An operand the opcode does not read, or a result it does
//!     not produce, is a `-` followed by blanks. Type II instructions (SETX, SWIZZLE3D, RET,
//!     RETURN) see `A = (IMM, 0, 0)` and `B = DST`, as in the hardware. Words that hold
//!     integers (output addresses, texel addresses) read as tiny decimals: trust the hex.
//!   - `INSTRUCTION`: the disassembly ([`crate::emu::isa::disassemble`]), jump targets in hex;
//!     for user code assembled from a source ([`TraceOptions::source`]) followed by
//!     `  // FILE:LINE`, the line the instruction came from.
//!
//!   So `A:` starts at column 16, `B:` at 91, `R:` at 166 and the instruction at 241
//!   (1-based) on every instruction line.
//!
//! # Cycle estimate
//!
//! [`issue_cycles`]: every instruction costs its ALU latency (spec alu_semantics §7, the
//! `latency` column of [`crate::emu::isa::OPCODES`]) plus one cycle for the execution unit's
//! handshake. Approximations: TMREAD counts its minimum of 3 (memory contention between
//! cores only adds wait cycles), OMWRITE 3, MAG 40; DIV takes 71 unless every lane is a
//! special case (divisor 0, or |divisor| ≥ |dividend| << 17), then 5. Taken branches, the
//! control unit's trigger states and the host's triangle streaming are not counted, so the
//! figures are a lower bound of the real machine's time.

use std::io::{self, Write};

use crate::emu::core::alu::{magnitude32, Vec3};
use crate::emu::core::program::Program;
use crate::emu::core::CoreState;
use crate::emu::core::{NoObserver, Observer, Step};
use crate::emu::isa::opcodes::{Flow, InputA, InputB, Opcode, Writes};
use crate::emu::isa::registers::{EntryPoint, USER_CODE_START};
use crate::emu::machine::hits::{Artifact, PixelHit};
use crate::emu::machine::{Machine, PixelAccel, PixelDone, RenderError};
use crate::io::scene::Partition;

/// Version of the text format written by [`Tracer`]; bumped whenever a column changes.
pub const FORMAT_VERSION: u32 = 1;

/// Registers a snapshot holds: the whole data address space (4 banks of 32).
pub const REGISTER_ADDRESSES: usize = 128;

/// What to trace besides the pixel's own routines.
#[derive(Clone, Debug, Default)]
pub struct TraceOptions {
    /// Also trace the boot routines (INITIAL, CPPU, USERCONSTANTS), which run once per core.
    pub boot: bool,
    /// Print lines only for these routines (statistics still count every routine).
    pub only: Option<Vec<EntryPoint>>,
    /// Where the user code came from, to name each user instruction's source line.
    pub source: Option<SourceMap>,
}

/// The source lines of the user code: `lines[k]` is the 1-based line of the instruction at
/// 0x800C + k in `file` (what [`crate::emu::isa::asm::Assembly::lines`] holds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceMap {
    /// The file as the user named it.
    pub file: String,
    pub lines: Vec<usize>,
}

impl SourceMap {
    /// `FILE:LINE` of the user instruction at `address`, if it came from the source.
    pub fn locate(&self, address: u16) -> Option<String> {
        let k = usize::from(address.checked_sub(USER_CODE_START)?);
        let line = self.lines.get(k)?;
        Some(format!("{}:{line}", self.file))
    }
}

/// Where a pixel is rendered: which core, and its position in that core's NPG order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelLocation {
    pub x: u32,
    pub y: u32,
    /// Index of the core (partition) that renders the pixel.
    pub core: usize,
    pub cores: usize,
    /// The pixel's position in its partition (0 = the core's first pixel); also the number
    /// of pixels the core renders before it. Its output is at OMEM words 3·index .. +2.
    pub index: usize,
    /// Pixels in the partition.
    pub pixels: usize,
}

/// Why a pixel could not be traced.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("pixel ({x}, {y}) is outside the {width}x{height} image")]
    OutsideImage {
        x: u32,
        y: u32,
        width: u32,
        height: u32,
    },
    #[error("pixel ({x}, {y}) is in no core's partition: no core renders it")]
    NotRendered { x: u32, y: u32 },
    /// A core stopped before the traced pixel (while booting or on an earlier pixel).
    #[error("before the traced pixel: {0}")]
    Earlier(RenderError),
    #[error("writing the trace: {0}")]
    Io(#[from] io::Error),
}

/// Instructions and estimated cycles of one routine (or of a subroutine it CALLs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoutineStats {
    /// The routine the control unit triggered.
    pub entry: EntryPoint,
    /// `Some(address)` for the code reached by a CALL from `entry` (up to its RET).
    pub callee: Option<u16>,
    /// `MAIN`, or `MAIN > BIU` for a CALLed subroutine (named after the entry point whose
    /// address it is, else its hex address).
    pub name: String,
    /// Times the routine was triggered (or CALLed).
    pub calls: u64,
    pub instructions: u64,
    pub cycles: u64,
}

/// Per-routine figures, in the order the routines first ran.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub routines: Vec<RoutineStats>,
}

impl Stats {
    pub fn instructions(&self) -> u64 {
        self.routines.iter().map(|r| r.instructions).sum()
    }

    pub fn cycles(&self) -> u64 {
        self.routines.iter().map(|r| r.cycles).sum()
    }

    /// The row of a routine (`callee: None`) or of a subroutine it CALLed.
    pub fn routine(&self, entry: EntryPoint, callee: Option<u16>) -> Option<&RoutineStats> {
        self.routines
            .iter()
            .find(|r| r.entry == entry && r.callee == callee)
    }

    fn row(
        &mut self,
        entry: EntryPoint,
        callee: Option<u16>,
        name: impl FnOnce() -> String,
    ) -> usize {
        match self
            .routines
            .iter()
            .position(|r| r.entry == entry && r.callee == callee)
        {
            Some(row) => row,
            None => {
                self.routines.push(RoutineStats {
                    entry,
                    callee,
                    name: name(),
                    calls: 0,
                    instructions: 0,
                    cycles: 0,
                });
                self.routines.len() - 1
            }
        }
    }

    /// A fixed-width table: routine, calls, instructions, cycles, then the total.
    pub fn table(&self) -> String {
        let mut out = format!(
            "{:<24} {:>8} {:>13} {:>13}\n",
            "routine", "calls", "instructions", "cycles"
        );
        for r in &self.routines {
            out.push_str(&format!(
                "{:<24} {:>8} {:>13} {:>13}\n",
                r.name, r.calls, r.instructions, r.cycles
            ));
        }
        out.push_str(&format!(
            "{:<24} {:>8} {:>13} {:>13}\n",
            "total",
            "",
            self.instructions(),
            self.cycles()
        ));
        out
    }
}

/// The outcome of tracing a pixel.
#[derive(Debug)]
pub struct PixelTrace {
    pub location: PixelLocation,
    /// Every routine the traced pixel ran (and the boot routines with
    /// [`TraceOptions::boot`]).
    pub stats: Stats,
    /// OMEM words 3·index .. 3·index+2 after the pixel (`None`: never written).
    pub output: [Option<u32>; 3],
    /// The register file after the pixel, addresses 0..127 as the execution unit reads them
    /// without forwarding (the swap bank as it was left).
    pub registers: Vec<Vec3>,
    /// NPG's answer (more pixels follow); `None` if the pixel did not finish.
    pub more_pixels: Option<bool>,
    /// The fault that stopped the pixel, if one did (the trace ends there).
    pub fault: Option<RenderError>,
}

impl PixelTrace {
    /// A register as it was after the pixel.
    pub fn register(&self, address: u16) -> Vec3 {
        self.registers[(address & 0x7F) as usize]
    }
}

/// Finds the core that renders (x, y). When partitions overlap, the last one wins, as in
/// the assembled frame.
pub fn locate(machine: &Machine<'_>, x: u32, y: u32) -> Result<PixelLocation, TraceError> {
    let (width, height) = (machine.scene().width(), machine.scene().height());
    locate_in(machine.partitions(), width, height, x, y)
}

/// [`locate`] from the partitions alone (a rendered [`crate::emu::machine::Frame`] keeps them).
pub fn locate_in(
    partitions: &[Partition],
    width: u32,
    height: u32,
    x: u32,
    y: u32,
) -> Result<PixelLocation, TraceError> {
    if x >= width || y >= height {
        return Err(TraceError::OutsideImage {
            x,
            y,
            width,
            height,
        });
    }
    partitions
        .iter()
        .enumerate()
        .rev()
        .find_map(|(core, partition)| {
            Some(PixelLocation {
                x,
                y,
                core,
                cores: partitions.len(),
                index: partition.index_of(x, y)?,
                pixels: partition.pixel_count(),
            })
        })
        .ok_or(TraceError::NotRendered { x, y })
}

/// Traces pixel (x, y): writes the header, the pixel's routines line by line and the footer
/// to `out`. A fault in the traced pixel ends the trace and is returned in
/// [`PixelTrace::fault`]; a fault before it is an error.
pub fn trace_pixel(
    machine: &Machine<'_>,
    x: u32,
    y: u32,
    options: &TraceOptions,
    out: &mut dyn Write,
) -> Result<PixelTrace, TraceError> {
    let location = locate(machine, x, y)?;
    let partition = &machine.partitions()[location.core];
    let mut tracer = Tracer::new(
        machine.program(),
        machine.scene().triangles.len(),
        options,
        out,
    );
    write_header(&mut tracer, machine, &location, options);
    let booted = if options.boot {
        machine.boot_core(location.core, partition, &mut tracer)
    } else {
        machine.boot_core(location.core, partition, &mut NoObserver)
    };
    let mut core = booted.map_err(TraceError::Earlier)?;
    // The structure for the rows up to the pixel, as a render's batches would give.
    let structure = machine.structure_for(partition.start_pixel().1..y + 1);
    let mut accel = PixelAccel::new(structure.as_deref());
    for (px, py) in partition.pixels().take(location.index) {
        machine
            .run_pixel(&mut core, &mut NoObserver, &mut accel)
            .map_err(|(entry, fault)| {
                TraceError::Earlier(RenderError::Core {
                    core: location.core,
                    x: px,
                    y: py,
                    entry,
                    fault,
                })
            })?;
    }
    if options.boot {
        tracer.comment(&format!("pixel ({x}, {y})"));
    }
    tracer.triangle = 0;
    let (done, fault) = match machine.run_pixel(&mut core, &mut tracer, &mut accel) {
        Ok(done) => (Some(done), None),
        Err((entry, fault)) => (
            None,
            Some(RenderError::Core {
                core: location.core,
                x,
                y,
                entry,
                fault,
            }),
        ),
    };
    let first_word = 3 * location.index;
    let output = std::array::from_fn(|c| core.output().read(first_word + c));
    let registers = (0..REGISTER_ADDRESSES as u16)
        .map(|address| core.register(address))
        .collect();
    write_footer(&mut tracer, first_word, &output, done, fault.as_ref());
    let more_pixels = done.map(|done| done.more);
    let (stats, error) = tracer.finish();
    if let Some(error) = error {
        return Err(TraceError::Io(error));
    }
    Ok(PixelTrace {
        location,
        stats,
        output,
        registers,
        more_pixels,
        fault,
    })
}

fn write_header(
    tracer: &mut Tracer<'_>,
    machine: &Machine<'_>,
    location: &PixelLocation,
    options: &TraceOptions,
) {
    let scene = machine.scene();
    tracer.comment(&format!("theia trace, format {FORMAT_VERSION}"));
    tracer.comment(&format!(
        "scene {}: {}x{} pixels, {} triangles, {} cores",
        scene.name,
        scene.width(),
        scene.height(),
        scene.triangles.len(),
        location.cores
    ));
    tracer.comment(&format!(
        "pixel ({}, {}): core {}, pixel {} of {} in its partition ({} earlier pixels run untraced{})",
        location.x,
        location.y,
        location.core,
        location.index + 1,
        location.pixels,
        location.index,
        if options.boot {
            "; boot routines traced first"
        } else {
            ""
        }
    ));
    if let Some(only) = &options.only {
        let names: Vec<&str> = only.iter().map(|e| e.name()).collect();
        tracer.comment(&format!("showing only {}", names.join(", ")));
    }
    tracer.comment(
        "ADDR F J NEXT  A: ALU input A  B: ALU input B  R: result (each lane: hex word, Q15.17 decimal)  INSTRUCTION",
    );
    tracer.comment(
        "F: W written . forwarded only - no result; J: T taken N not taken J unconditional",
    );
}

fn write_footer(
    tracer: &mut Tracer<'_>,
    first_word: usize,
    output: &[Option<u32>; 3],
    done: Option<PixelDone>,
    fault: Option<&RenderError>,
) {
    if let Some(fault) = fault {
        tracer.comment(&format!("stopped: {fault}"));
        return;
    }
    let words: Vec<String> = output
        .iter()
        .map(|w| w.map_or_else(|| "--------".to_string(), |w| format!("{w:08X}")))
        .collect();
    let bytes: Vec<String> = output
        .iter()
        .map(|w| w.map_or(0, crate::io::image::channel_byte).to_string())
        .collect();
    tracer.comment(&format!(
        "output: OMEM[{}..{}] = {} -> RGB {}{}",
        first_word,
        first_word + 2,
        words.join(" "),
        bytes.join(" "),
        if output.iter().all(Option::is_some) {
            ""
        } else {
            " (-------- never written, reads as 0)"
        }
    ));
    if let Some(PixelHit::Artifact(artifact)) = done.map(|done| done.hit) {
        tracer.comment(&format!(
            "the pixel shows an artifact hit ({}); --rom fixed rejects it",
            match artifact {
                Artifact::WrappedSum => "u or v at 8192.0 or more: u + v wrapped",
                Artifact::NotInFront => "t <= 0: behind the camera",
                Artifact::NoneKept => "BIU kept no hit closer than 250.0: stale hit registers",
            }
        ));
    }
    if let Some(more) = done.map(|done| done.more) {
        tracer.comment(&format!(
            "NPG returned {}",
            if more {
                "TRUE: more pixels follow"
            } else {
                "FALSE: the core's last pixel"
            }
        ));
    }
}

/// Estimated cycles the execution unit spends on one instruction: ALU latency + 1 (see the
/// module documentation for the approximations).
pub fn issue_cycles(step: &Step) -> u64 {
    let Some(opcode) = step.instruction.opcode() else {
        return 0;
    };
    let latency = match opcode {
        Opcode::Div => div_latency(step.a, step.b),
        _ => opcode.info().latency,
    };
    u64::from(latency) + 1
}

/// DIV latency: 5 cycles when every lane's divider goes straight to its result (|b| = 0 or
/// |b| ≥ |a| << 17), else 71 (the three lanes divide in parallel; the slowest one counts).
pub fn div_latency(a: Vec3, b: Vec3) -> u32 {
    let special = |lane: usize| {
        let dividend = u64::from(magnitude32(a[lane])) << 17;
        let divisor = u64::from(magnitude32(b[lane]));
        divisor == 0 || divisor >= dividend
    };
    if (0..3).all(special) {
        5
    } else {
        71
    }
}

/// Width of one lane: 8 hex digits, a blank, 13 columns of decimal.
const LANE_WIDTH: usize = 8 + 1 + 13;
/// Width of one vector: three lanes, two blanks between them.
const VECTOR_WIDTH: usize = 3 * LANE_WIDTH + 2 * 2;

/// One lane: the word in hex and as Q15.17 (signed) with 6 decimals.
pub fn format_lane(word: u32) -> String {
    format!("{word:08X} {:>13.6}", f64::from(word as i32) / 131_072.0)
}

fn format_vector(value: Option<Vec3>) -> String {
    match value {
        Some(v) => v.map(format_lane).join("  "),
        None => format!("{:<VECTOR_WIDTH$}", "-"),
    }
}

/// The trace line of one executed instruction (format in the module documentation).
pub fn format_step(step: &Step) -> String {
    let instruction = step.instruction;
    let reads_a = instruction.a() != InputA::Unused;
    let reads_b = instruction.b() != InputB::Unused;
    let has_result = instruction.writes() != Writes::Nothing;
    let flag = match (has_result, step.written) {
        (false, _) => '-',
        (true, true) => 'W',
        (true, false) => '.',
    };
    let jump = match (step.taken, instruction.flow()) {
        (Some(true), _) => 'T',
        (Some(false), _) => 'N',
        (None, Flow::Jump | Flow::Call | Flow::Ret) => 'J',
        _ => ' ',
    };
    format!(
        "{:04X} {flag} {jump} {:04X}  A: {}  B: {}  R: {}  {}",
        step.address,
        step.next,
        format_vector(reads_a.then_some(step.a)),
        format_vector(reads_b.then_some(step.b)),
        format_vector(has_result.then_some(step.result)),
        instruction
    )
}

/// What the hardware did here that a reader of the spec would not expect: TMREAD words kept
/// from the texture interface's previous read, and where a CALL will return when it is not
/// the next address (docs/rtl-differences.md).
pub fn hardware_note(step: &Step) -> Option<String> {
    match step.instruction.opcode()? {
        Opcode::Tmread => {
            let kept = crate::emu::core::tmem::kept(step.a);
            let names: Vec<&str> = ["x", "y", "z"]
                .iter()
                .zip(kept)
                .filter(|(_, kept)| *kept)
                .map(|(name, _)| *name)
                .collect();
            (!names.is_empty()).then(|| {
                format!(
                    "TMREAD: {} kept from the core's previous texture read (its bank is the component before's, and the next address's is not)",
                    names.join(" and ")
                )
            })
        }
        Opcode::Call => {
            let to = step.returns_to?;
            (to != step.address.wrapping_add(1)).then(|| {
                format!(
                    "CALL: returns to {to:04X}, not {:04X} (how the CALL was reached)",
                    step.address.wrapping_add(1)
                )
            })
        }
        _ => None,
    }
}

/// The line that starts a routine; MAIN names its triangle (1-based).
pub fn format_routine_start(
    entry: EntryPoint,
    address: u16,
    triangle: Option<(usize, usize)>,
) -> String {
    match triangle {
        Some((k, n)) => format!(">> {} at {address:04X} (triangle {k} of {n})", entry.name()),
        None => format!(">> {} at {address:04X}", entry.name()),
    }
}

/// The line that ends a routine with its return value.
pub fn format_routine_end(entry: EntryPoint, value: bool) -> String {
    format!(
        "<< {} returns {}",
        entry.name(),
        if value { "TRUE" } else { "FALSE" }
    )
}

/// Why a hit BIU accepted is an artifact of its arithmetic, from its three DIVs (t, u, v as
/// (dividend, divisor, quotient), in BIU's order); `None` for a real hit or other code.
pub fn hit_artifact(quotients: &[(u32, u32, u32)]) -> Option<String> {
    let &[t, u, v] = quotients else {
        return None;
    };
    let number = |word: u32| word as i32 as f64 / 131_072.0;
    for (name, (dividend, divisor, quotient)) in [("t", t), ("u", u), ("v", v)] {
        let wide =
            (u64::from(magnitude32(dividend)) << 17) / u64::from(magnitude32(divisor).max(1));
        if divisor != 0
            && wide >= 1 << 31
            && quotient == crate::emu::core::alu::div(dividend, divisor)
        {
            return Some(format!(
                "DIV wrapped: {name} = {:.6} / {:.6} is {:.1}, not {:.6}",
                number(dividend),
                number(divisor),
                number(dividend) / number(divisor),
                number(quotient)
            ));
        }
    }
    if crate::emu::machine::hits::wrapped_sum(u.2, v.2) {
        return Some(format!(
            "u + v wrapped: u = {:.6}, v = {:.6}",
            number(u.2),
            number(v.2)
        ));
    }
    if crate::emu::machine::hits::not_in_front(t.2) {
        return Some(format!(
            "t = {:.6} is not in front of the camera",
            number(t.2)
        ));
    }
    None
}

/// The tracing observer: writes every event as a line and counts instructions and cycles
/// per routine. Writing stops at the first I/O error, which [`Tracer::finish`] returns.
pub struct Tracer<'w> {
    out: &'w mut dyn Write,
    program: &'w Program,
    triangles: usize,
    /// MAIN runs seen in the current pixel (the k-th MAIN works on triangle k).
    triangle: usize,
    /// The current MAIN's DIVs (dividend, divisor, quotient): BIU's t, u, v.
    quotients: Vec<(u32, u32, u32)>,
    only: Option<Vec<EntryPoint>>,
    source: Option<SourceMap>,
    stats: Stats,
    /// The routine running, its stats row, and the row of the subroutine it CALLed.
    entry: Option<EntryPoint>,
    routine_row: usize,
    callee_row: Option<usize>,
    shown: bool,
    error: Option<io::Error>,
}

impl<'w> Tracer<'w> {
    /// `program` names CALL targets; `triangles` is the scene's triangle count; `options`
    /// selects the routines shown and the source map (`boot` is the caller's business).
    pub fn new(
        program: &'w Program,
        triangles: usize,
        options: &TraceOptions,
        out: &'w mut dyn Write,
    ) -> Tracer<'w> {
        Tracer {
            out,
            program,
            triangles,
            triangle: 0,
            quotients: Vec::with_capacity(3),
            only: options.only.clone(),
            source: options.source.clone(),
            stats: Stats::default(),
            entry: None,
            routine_row: 0,
            callee_row: None,
            shown: true,
            error: None,
        }
    }

    fn line(&mut self, text: &str) {
        if self.error.is_none() {
            if let Err(error) = writeln!(self.out, "{text}") {
                self.error = Some(error);
            }
        }
    }

    /// Writes `# text`.
    pub fn comment(&mut self, text: &str) {
        self.line(&format!("# {text}"));
    }

    /// The statistics and the first write error, if any.
    pub fn finish(mut self) -> (Stats, Option<io::Error>) {
        if self.error.is_none() {
            if let Err(error) = self.out.flush() {
                self.error = Some(error);
            }
        }
        (self.stats, self.error)
    }

    /// Names the code at a CALL target: the entry point it starts (this program's table
    /// first, then the default ROM addresses), else its address.
    fn callee_name(&self, target: u16) -> String {
        EntryPoint::ALL
            .iter()
            .find(|&&e| self.program.entry(e) == target)
            .or_else(|| {
                EntryPoint::ALL
                    .iter()
                    .find(|e| e.default_address() == target)
            })
            .map_or_else(|| format!("{target:04X}"), |e| e.name().to_string())
    }
}

impl Observer for Tracer<'_> {
    const ENABLED: bool = true;

    fn routine_start(&mut self, entry: EntryPoint, address: u16) {
        self.entry = Some(entry);
        self.callee_row = None;
        self.routine_row = self.stats.row(entry, None, || entry.name().to_string());
        self.stats.routines[self.routine_row].calls += 1;
        self.shown = self.only.as_ref().is_none_or(|only| only.contains(&entry));
        self.quotients.clear();
        let triangle = (entry == EntryPoint::Main).then(|| {
            self.triangle += 1;
            (self.triangle, self.triangles)
        });
        if self.shown {
            self.line(&format_routine_start(entry, address, triangle));
        }
    }

    fn step(&mut self, step: &Step) {
        let row = self.callee_row.unwrap_or(self.routine_row);
        let stats = &mut self.stats.routines[row];
        stats.instructions += 1;
        stats.cycles += issue_cycles(step);
        match step.instruction.opcode() {
            Some(Opcode::Call) => {
                if let Some(entry) = self.entry {
                    let target = step.next;
                    let name = format!("{} > {}", entry.name(), self.callee_name(target));
                    let row = self.stats.row(entry, Some(target), || name);
                    self.stats.routines[row].calls += 1;
                    self.callee_row = Some(row);
                }
            }
            Some(Opcode::Ret) => self.callee_row = None,
            Some(Opcode::Div) if self.entry == Some(EntryPoint::Main) => {
                self.quotients.push((step.a[0], step.b[0], step.result[0]));
            }
            _ => {}
        }
        if self.shown && self.error.is_none() {
            let mut text = format_step(step);
            if let Some(place) = self.source.as_ref().and_then(|s| s.locate(step.address)) {
                text.push_str("  // ");
                text.push_str(&place);
            }
            self.line(&text);
            if let Some(note) = hardware_note(step) {
                self.comment(&note);
            }
        }
    }

    fn routine_end(&mut self, entry: EntryPoint, value: bool) {
        self.entry = None;
        self.callee_row = None;
        if self.shown {
            self.line(&format_routine_end(entry, value));
            if entry == EntryPoint::Main && value {
                if let Some(why) = hit_artifact(&self.quotients) {
                    self.comment(&format!(
                        "ARTIFACT: this hit exists only because {why}; --rom fixed rejects it"
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::isa::{Instr, Word};

    fn step(word: u64, a: Vec3, b: Vec3, result: Vec3) -> Step {
        Step {
            address: 0x002F,
            instruction: Instr::decode(Word(word)),
            a,
            b,
            result,
            written: true,
            taken: None,
            returns_to: None,
            next: 0x0030,
        }
    }

    #[test]
    fn hardware_notes_name_kept_tmread_words_and_unusual_call_returns() {
        use crate::emu::isa::Opcode;
        let tmread = Word::type1(Opcode::Tmread, 0x42, 0x43, 0).0;
        // (0x40, 0x44, 0x45): banks 0, 0, 1: y kept. (1, 5, 9): banks 1, 1, 1: z kept.
        assert_eq!(
            hardware_note(&step(tmread, [0x40, 0x44, 0x45], [0; 3], [0; 3])).as_deref(),
            Some("TMREAD: y kept from the core's previous texture read (its bank is the component before's, and the next address's is not)")
        );
        assert!(hardware_note(&step(tmread, [1, 5, 9], [0; 3], [0; 3]))
            .is_some_and(|note| note.starts_with("TMREAD: z kept")));
        assert_eq!(
            hardware_note(&step(tmread, [0, 1, 2], [0; 3], [0; 3])),
            None
        );
        let call = Word::type2(Opcode::Call, 0x9D, 0).0;
        let mut reached = step(call, [0; 3], [0; 3], [0; 3]);
        reached.returns_to = Some(0x0030);
        assert_eq!(
            hardware_note(&reached),
            None,
            "CALL + 1 is not worth a note"
        );
        reached.returns_to = Some(0x0031);
        assert_eq!(
            hardware_note(&reached).as_deref(),
            Some("CALL: returns to 0031, not 0030 (how the CALL was reached)")
        );
    }

    #[test]
    fn artifact_hits_are_named_from_bius_quotients() {
        use crate::emu::core::alu::div;
        let q = |x: f64| (x * 131_072.0).round() as i32 as u32;
        let quotient = |h: u32, d: u32| (h, d, div(h, d));
        // A real hit: t = 2, u = 0.25, v = 0.5.
        let (one, delta) = (q(1.0), q(0.5));
        let real = [
            quotient(one, delta),
            quotient(q(0.125), delta),
            quotient(q(0.25), delta),
        ];
        assert_eq!(hit_artifact(&real), None);
        // The teapot's stray pixel: u + v wrapped (u = 13757.8, v = 2626.4 from tiny Δ).
        let delta = q(-0.000404);
        let wrapped_sum = [
            quotient(q(2.089), delta),
            quotient(q(-5.558), delta),
            quotient(q(-1.061), delta),
        ];
        let why = hit_artifact(&wrapped_sum).unwrap();
        assert!(why.starts_with("u + v wrapped: u = 13"), "{why}");
        // Behind the camera.
        let behind = [
            quotient(q(-1.0), q(0.5)),
            quotient(q(0.1), q(0.5)),
            quotient(q(0.1), q(0.5)),
        ];
        assert!(hit_artifact(&behind).unwrap().starts_with("t = -2.000000"));
        // DIV wrapped: 1.0 / 2^-17 is 131072, whose raw quotient 2^34 wraps mod 2^31 to 0.
        let wrapped_div = [quotient(one, q(0.5)), quotient(one, 1), quotient(0, q(0.5))];
        assert_eq!(wrapped_div[1].2, 0);
        let why = hit_artifact(&wrapped_div).unwrap();
        assert!(
            why.starts_with("DIV wrapped: u = 1.000000 / 0.000008"),
            "{why}"
        );
        // Not BIU's three DIVs: nothing is said.
        assert_eq!(hit_artifact(&real[..2]), None);
    }

    #[test]
    fn lanes_show_hex_and_signed_q15_17() {
        assert_eq!(format_lane(0x0002_0000), "00020000      1.000000");
        assert_eq!(format_lane(0xFFFE_0000), "FFFE0000     -1.000000");
        assert_eq!(format_lane(0x8000_0000), "80000000 -16384.000000");
        assert_eq!(format_lane(0x0000_6666), "00006666      0.199997");
        assert_eq!(format_lane(1), "00000001      0.000008");
    }

    #[test]
    fn unused_operands_are_dashes_of_the_same_width() {
        // COPY R1 CREG_RESOLUTION: A only.
        let line = format_step(&step(0x0007_0047_0004_0000, [1, 2, 3], [0; 3], [1, 2, 3]));
        let b = line.find("B: ").unwrap();
        let r = line.find("R: ").unwrap();
        assert_eq!(r - b, 3 + VECTOR_WIDTH + 2);
        assert!(line[b..r].trim_end().ends_with("B: -"));
        assert!(line.ends_with("COPY R1 CREG_RESOLUTION VOID"));
    }

    #[test]
    fn div_latency_is_short_only_when_every_lane_is_special() {
        let one = 0x2_0000;
        assert_eq!(div_latency([one; 3], [0; 3]), 5);
        assert_eq!(div_latency([1; 3], [one; 3]), 5);
        assert_eq!(div_latency([one; 3], [one; 3]), 71);
        assert_eq!(div_latency([one, 1, 1], [one, one, one]), 71);
        // |b| == |a| << 17 is special; negative operands compare magnitudes.
        assert_eq!(div_latency([1; 3], [0xFFFE_0000; 3]), 5);
    }

    #[test]
    fn source_maps_name_user_instructions_only() {
        let map = SourceMap {
            file: "a.shdr".into(),
            lines: vec![3, 7],
        };
        assert_eq!(map.locate(0x800C).as_deref(), Some("a.shdr:3"));
        assert_eq!(map.locate(0x800D).as_deref(), Some("a.shdr:7"));
        assert_eq!(map.locate(0x800E), None);
        assert_eq!(map.locate(0x002F), None);
        assert_eq!(map.locate(0x8000), None);
    }

    #[test]
    fn issue_rate_is_latency_plus_one() {
        let add = step(0x0001_0047_0047_0002, [0; 3], [0; 3], [0; 3]);
        assert_eq!(issue_cycles(&add), 2);
        let mag = step(0x0005_0048_0054_0000, [0; 3], [0; 3], [0; 3]);
        assert_eq!(issue_cycles(&mag), 41);
        let dot = step(0x0017_0069_005A_0065, [0; 3], [0; 3], [0; 3]);
        assert_eq!(issue_cycles(&dot), 5);
    }
}
