//! The machine clock by clock: the host's state machine (`Module_Host.v`, with or without
//! `host-fix.patch`), every core's control unit (`Unit_Control.v`) with the flip-flops
//! that join them (`Theia.v`: each core's 1-bit "triangle latched" and "pixel committed"
//! counters, ANDed into HDL and RCOMMIT), every routine's cycles from the core's
//! [`Recording`], and the texture memory ([`TextureMemory`]).
//!
//! Time is counted in clock periods as `tests/rtl/bench.v` counts them: period `t` holds
//! the values registers take at edge `t - 1`; reset holds periods 2..=11, and the bench
//! enables the host from period 12. A state machine in state `s` during period `t` moves
//! to its next state for period `t + 1`. Only periods where something changes are
//! visited: a period after one where nothing changed and no timer ends changes nothing
//! either, since every input is the same. Periods in which only texture reads go on
//! (none finishes) are stepped inside the texture memory ([`TextureMemory::step_quietly`])
//! up to the next timer, not visited: a frame spends a quarter of its visited periods so.
//!
//! Measured facts the model rests on (`tests/rtl/bench.v` traces; checked by
//! `tests/rtl.rs` on every random case):
//! - a routine triggered in period `T` hands its first instruction to the decoder in
//!   `T + 3`; instruction costs are [`super::cost`]'s; the control unit sees the routine
//!   done in the period its RETURN is handed over, and acknowledges it in the next;
//! - the host streams a triangle (7 packets of 3 words) in 71 periods after ACK (or
//!   after PREPARE at a pixel's start): 7 x (1 BROADCAST + 9 WAIT_FOR_VERTEX), then 1
//!   GET_PRIMITIVE_COUNT; configuration takes 7 periods per instruction packet (2 words),
//!   10 per parameter or partition packet, and one period per state between them.

use std::ops::Range;

use super::record::{EventKind, Recording};
use super::tmem::TextureMemory;
use super::MOST_CORES;
use crate::emu::isa::registers::EntryPoint;

/// Control-unit states (`Unit_Control.v`'s numbers, which `tests/rtl/bench.v` prints).
pub mod cu {
    pub const AFTER_RESET: u8 = 0;
    pub const WAIT_FOR_INITIAL_CONFIGURATION: u8 = 1;
    pub const WAIT_FOR_CONFIG_DATA_READ: u8 = 3;
    pub const PRECALCULATE_CONSTANTS: u8 = 5;
    pub const WAIT_FOR_CONSTANT: u8 = 6;
    pub const ACK_PRECALCULATE_CONSTANTS: u8 = 7;
    pub const TRIGGER_RGU: u8 = 12;
    pub const WAIT_FOR_RGU: u8 = 13;
    pub const ACK_RGU: u8 = 14;
    pub const TRIGGER_MAIN: u8 = 22;
    pub const WAIT_FOR_MAIN: u8 = 23;
    pub const ACK_MAIN: u8 = 24;
    pub const WAIT_FOR_PSU: u8 = 26;
    pub const ACK_PSU: u8 = 27;
    pub const CHECK_HIT: u8 = 31;
    pub const CLEAR_REGISTERS: u8 = 32;
    pub const WAIT_CLEAR_REGISTERS: u8 = 33;
    pub const ACK_CLEAR_REGISTERS: u8 = 34;
    pub const TRIGGER_PSU_WITH_TEXTURE: u8 = 35;
    pub const TRIGGER_NPU: u8 = 37;
    pub const WAIT_NPU: u8 = 38;
    pub const ACK_NPU: u8 = 39;
    pub const PERFORM_INITIAL_CONFIGURATION: u8 = 40;
    pub const TRIGGER_USERCONSTANTS: u8 = 42;
    pub const WAIT_USERCONSTANTS: u8 = 43;
    pub const ACK_USERCONSTANTS: u8 = 44;
    pub const TRIGGER_USERPIXELSHADER: u8 = 45;
    pub const WAIT_FOR_USERPIXELSHADER: u8 = 46;
    pub const ACK_USERPIXELSHADER: u8 = 47;
    pub const DONE: u8 = 48;
    pub const WAIT_FOR_RENDER_ENABLE: u8 = 49;
    pub const WAIT_FOR_HOST_DATA_AVAILABLE: u8 = 51;
    pub const WAIT_FOR_HOST_DATA_ACK: u8 = 52;
}

/// The first period after reset (`tests/rtl/bench.v` holds reset in periods 2..=11).
pub const RESET_END: u64 = 12;
/// The host's first state after IDLE, when the bench enables it in period 12.
const HOST_START: u64 = 13;
/// Periods the host takes to stream one triangle: 7 packets of 10, then one.
pub const STREAM_PERIODS: u64 = 71;

/// Where the routines a core runs come from: the functional core, run as its control
/// unit triggers each routine (`timing::Live`), or any other source of runs (a test's).
pub trait Routines {
    /// Core `core`'s next routine, which its control unit starts as `entry`: its index in
    /// [`Routines::recording`].
    fn start(&mut self, core: usize, entry: EntryPoint) -> Result<usize, Stop>;
    fn recording(&self, core: usize) -> &Recording;
    /// The host has streamed the pixel's triangle `triangle` (`None`: the one past the
    /// list) into every core's IO swap copy and bank 0.
    fn streamed(&mut self, _triangle: Option<usize>) {}
    /// Core `core` flips its swap memory (CU_TRIGGER_MAIN).
    fn flip(&mut self, _core: usize) {}
    /// Core `core`'s next routine, if it is a MAIN that runs without events on triangle
    /// `triangle` streamed into its IO copy and flipped in: its cycles and return value,
    /// without starting it (the next [`Routines::start`] of a MAIN returns it; a live
    /// source may run it now, and then ignores the stream and the flip that come for it).
    fn peek_main(&mut self, _core: usize, _triangle: usize) -> Result<Option<(u32, bool)>, Stop> {
        Ok(None)
    }
    /// Core `core`'s next MAINs, on triangles `first..` each streamed into its IO copy and
    /// flipped in, as long as each runs without events and returns FALSE in cycles known
    /// without running it (a source that can tell): their cycles into `cycles`, how many
    /// (at most its length). Changes nothing; [`Routines::start_culled`] then starts them.
    fn culled_mains(&mut self, _core: usize, _first: usize, _cycles: &mut [u32]) -> usize {
        0
    }
    /// Streams, flips and starts core `core`'s MAINs on triangles `first..first + count`,
    /// which [`Routines::culled_mains`] timed, one after another, as [`Routines::streamed`],
    /// [`Routines::flip`] and [`Routines::start`] would: the last one's run.
    fn start_culled(&mut self, _core: usize, _first: usize, _count: usize) -> usize {
        unreachable!("only a source that times culled MAINs starts them")
    }
    /// A hazard happened (a source that follows the functional pixel sequence no longer
    /// describes the hardware from here on; it may stop the simulation).
    fn hazard(&mut self, _hazard: &Hazard) -> Result<(), Stop> {
        Ok(())
    }
}

/// Why a simulation stopped before the frame's end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    /// The functional core stopped (a fault), with its message.
    Fault(String),
}

/// The host's states, grouped where the cores see the same signals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HostState {
    /// IDLE, before the bench enables it.
    Idle,
    /// Broadcasting code and parameters, unicasting partitions (MST high).
    Config,
    /// PREPARE_FOR_GEO_REQUESTS: one period.
    Prepare,
    /// BROADCAST_NEXT_VERTEX, WAIT_FOR_VERTEX, GET_PRIMITIVE_COUNT: one triangle.
    Stream,
    /// WAIT_DATA_READ_CONFIRMATION: HDA high until every core latched the triangle.
    WaitLatch,
    /// ACK_GEO_REQUEST: GACK for one period.
    Ack,
    /// LAST_PRIMITIVE_REACHED: waits until every core committed its pixel.
    WaitCommit,
    /// GPU_EXECUTION_DONE.
    Done,
}

/// What the machine is asked to run.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    /// At most [`super::MOST_CORES`] (one bit a core in the texture memory's masks).
    pub cores: usize,
    pub triangles: usize,
    /// Instruction packets the host broadcasts (two words each).
    pub instruction_packets: u64,
    /// `host-fix.patch`: STDONE also rises when every core has latched the last triangle.
    pub host_fix: bool,
    /// Give up after this many periods (a deadlock or livelock goes no further).
    pub limit: u64,
    /// Give up when the host waits longer than this for one triangle's latches.
    pub livelock: u64,
    /// Take the triangle loop in closed form where it holds (`Sim::fast_forward`);
    /// off, every period is simulated (the tests compare the two).
    pub fast: bool,
}

/// Where a core stood while it waited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Periods {
    /// Running a routine, or between routines in the control unit.
    pub busy: u64,
    /// Waiting for the host: configuration, render enable, a triangle, the others' latch.
    pub waiting: u64,
    /// Done, or not started.
    pub idle: u64,
}

/// A hazard of the published control unit, as the bench names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hazard {
    pub core: usize,
    /// The core's pixel (0-based, in its NPG order) and MAIN start of that pixel (0-based).
    pub pixel: u64,
    pub main: u64,
    pub period: u64,
    pub kind: HazardKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HazardKind {
    /// CU_TRIGGER_MAIN with the core's "latched" flag still set: it starts MAIN again on a
    /// triangle another core has not latched (and flips its swap memory back).
    Reentry,
    /// At the host's ACK of the pixel's last triangle `triangle` the core had started
    /// MAIN an even number of times since the previous ACK (its last start in the ACK's
    /// own period, whose flag GACK clears): its swap memory shows the copy before, and
    /// stays so: PSU2 and the pixel shader read the triangle before in
    /// CREG_V0..CREG_TRI_DIFFUSE. (`last` is always true: on any other triangle the next
    /// one's flip sets the swap memory right again.)
    EvenStarts { triangle: usize, last: bool },
    /// The core started MAIN `starts` (3 or more) times on one triangle, its 1-bit
    /// "latched" flag flipping back off at each redundant start, so the flags stayed out
    /// of line from period `since` (its first restart) to the ACK (the hazard's period).
    Livelock { starts: u32, since: u64 },
    /// The frame never ends: the core waits for a triangle after the pixel's last one
    /// (it left MAIN on the last triangle before STDONE rose; the bench's `HAZARD ...
    /// waits for a triangle after the last one`).
    WaitsAfterLast,
}

/// How a simulated frame ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimEnding {
    /// Every core done in this period (`DONE cycles=N` of the bench).
    Done(u64),
    /// Nothing can move any more from this period on; the cores' states then.
    Deadlock { period: u64, states: Vec<u8> },
    /// Still running at the limit.
    Limit(u64),
    /// The host has waited since period `since` for every core to latch one triangle,
    /// longer than [`Setup::livelock`]: the cores' 1-bit "latched" flags keep missing
    /// each other (each redundant MAIN start flips one back off).
    Livelock { since: u64, period: u64 },
}

/// One core's course through the frame.
#[derive(Clone, Debug, Default)]
pub struct CoreCourse {
    pub periods: Periods,
    /// The period the core entered CU_DONE.
    pub finish: Option<u64>,
    /// For each OMWRITE: the core's pixel and the period it was handed over.
    pub omwrites: Vec<(u64, u64)>,
    /// Pixels started (RGU runs) and MAIN starts.
    pub pixels: u64,
    pub mains: u64,
}

/// The simulated frame.
#[derive(Clone, Debug)]
pub struct Course {
    pub ending: SimEnding,
    pub cores: Vec<CoreCourse>,
    pub hazards: Vec<Hazard>,
}

/// A routine the execution unit is running.
#[derive(Clone, Copy, Debug)]
struct Running {
    run: usize,
    /// The next event of the run to reach.
    event: u32,
    /// The period of the next instruction after the events reached so far.
    cursor: u64,
    /// The RETURN's period, once every event before it is behind.
    returns: Option<u64>,
    /// A texture read in flight: it starts requesting in this period.
    tmread_from: Option<u64>,
    /// Waiting for the texture memory to finish a read.
    reading: bool,
    hung: bool,
}

impl Running {
    /// A MAIN without events, run `run`, triggered at `trigger` and returning at `returns`.
    fn main(run: usize, trigger: u64, returns: u64) -> Running {
        Running {
            run,
            event: 0,
            cursor: trigger + 3,
            returns: Some(returns),
            tmread_from: None,
            reading: false,
            hung: false,
        }
    }

    /// Whether the routine's RETURN is known, no read pending.
    fn event_free(&self) -> bool {
        self.returns.is_some() && self.tmread_from.is_none() && !self.reading && !self.hung
    }
}

#[derive(Clone, Debug)]
struct CoreSim {
    state: u8,
    since: u64,
    /// The next period the core moves on its own (its state lasts one period, or its
    /// routine returns then); a core waiting for a signal moves only when one changes.
    wake: u64,
    latched: bool,
    committed: bool,
    hit: bool,
    routine: Option<Running>,
    /// Bit 0 of the last routine's RETURN.
    value: bool,
    mains_this_pixel: u64,
    /// The period the last MAIN returned in.
    main_returned: u64,
    /// MAIN starts since the host's last ACK, and the period of the first restart then.
    starts: u32,
    restarted: Option<u64>,
    course: CoreCourse,
}

struct Host {
    state: HostState,
    /// For timed states: the last period in the state.
    until: u64,
    /// The triangle streamed or waited for (0-based; `triangles` is the one past the list).
    triangle: usize,
    /// STDONE is high from this period until the next PREPARE.
    stdone_from: Option<u64>,
}

/// What decides every later period of a machine where only done cores move of
/// themselves ([`Sim::repeating`]): each core's control state and flags (latched,
/// committed, hit, value), the host's state and triangle, the signals, and which cores are
/// evaluated next.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Standing {
    cores: Vec<(u8, bool, bool, bool, bool)>,
    host: (HostState, usize),
    signals: Signals,
    soon: u64,
    waiting: u64,
}

/// Runs the frame.
pub fn simulate<R: Routines + ?Sized>(setup: &Setup, routines: &mut R) -> Result<Course, Stop> {
    assert!(
        setup.cores <= super::MOST_CORES,
        "timeable refuses more cores"
    );
    Sim::new(setup).run(routines)
}

/// The signals every state machine reads in one period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Signals {
    mst: bool,
    rendren: bool,
    hda: bool,
    gack: bool,
    stdone: bool,
    /// HDL: every core's "latched" flag (the cores see its inverse as HDLACK).
    latched: bool,
    /// RCOMMIT: every core's "committed" flag.
    committed: bool,
}

struct Sim<'s> {
    setup: &'s Setup,
    /// The period the host enters PREPARE_FOR_GEO_REQUESTS the first time.
    config_end: u64,
    host: Host,
    cores: Vec<CoreSim>,
    tmem: TextureMemory,
    hazards: Vec<Hazard>,
    /// Cores whose "latched" and "committed" flags are set, and cores done.
    latched: usize,
    committed: usize,
    done: usize,
    /// Cores to evaluate in the next period (their state lasts one period), one bit each.
    soon: u64,
    /// Cores waiting for a signal (evaluated when one changes).
    waiting: u64,
    /// No core's own timer (a routine's RETURN, a read's start) is before this period.
    next_own: u64,
    scratch: Scratch,
}

/// Whether a control-unit state waits for a signal from the host or the other cores
/// (it moves only when one changes).
fn waits_for_signal(state: u8) -> bool {
    waits_for_host(state) || state == cu::ACK_RGU
}

/// Whether a control-unit state waits for its routine's RETURN.
fn waits_for_routine(state: u8) -> bool {
    use cu::*;
    matches!(
        state,
        WAIT_CLEAR_REGISTERS
            | WAIT_FOR_CONSTANT
            | WAIT_USERCONSTANTS
            | WAIT_FOR_RGU
            | WAIT_FOR_MAIN
            | WAIT_FOR_PSU
            | WAIT_FOR_USERPIXELSHADER
            | WAIT_NPU
    )
}

/// Whether a core in `state` waits for the host (or, in WAIT_FOR_HOST_DATA_ACK, for the
/// other cores' latches).
fn waits_for_host(state: u8) -> bool {
    use cu::*;
    matches!(
        state,
        WAIT_FOR_INITIAL_CONFIGURATION
            | PERFORM_INITIAL_CONFIGURATION
            | WAIT_FOR_CONFIG_DATA_READ
            | WAIT_FOR_RENDER_ENABLE
            | WAIT_FOR_HOST_DATA_AVAILABLE
            | WAIT_FOR_HOST_DATA_ACK
    )
}

/// The control unit's next state after `state` (`Unit_Control.v`), given the signals, the
/// core's hit and value flags, and whether its routine returned (`done`).
#[inline]
fn next_control_state(state: u8, signals: &Signals, hit: bool, value: bool, done: bool) -> u8 {
    use cu::*;
    match state {
        AFTER_RESET => WAIT_FOR_INITIAL_CONFIGURATION,
        WAIT_FOR_INITIAL_CONFIGURATION if signals.mst => PERFORM_INITIAL_CONFIGURATION,
        PERFORM_INITIAL_CONFIGURATION if !signals.mst && signals.rendren => CLEAR_REGISTERS,
        CLEAR_REGISTERS => WAIT_CLEAR_REGISTERS,
        ACK_CLEAR_REGISTERS => WAIT_FOR_CONFIG_DATA_READ,
        WAIT_FOR_CONFIG_DATA_READ if !signals.mst => PRECALCULATE_CONSTANTS,
        PRECALCULATE_CONSTANTS => WAIT_FOR_CONSTANT,
        ACK_PRECALCULATE_CONSTANTS => TRIGGER_USERCONSTANTS,
        TRIGGER_USERCONSTANTS => WAIT_USERCONSTANTS,
        ACK_USERCONSTANTS => WAIT_FOR_RENDER_ENABLE,
        WAIT_FOR_RENDER_ENABLE if signals.rendren => TRIGGER_RGU,
        TRIGGER_RGU => WAIT_FOR_RGU,
        ACK_RGU if signals.rendren => WAIT_FOR_HOST_DATA_AVAILABLE,
        WAIT_FOR_HOST_DATA_AVAILABLE if signals.hda => TRIGGER_MAIN,
        TRIGGER_MAIN => WAIT_FOR_MAIN,
        ACK_MAIN if signals.stdone => CHECK_HIT,
        ACK_MAIN => WAIT_FOR_HOST_DATA_ACK,
        WAIT_FOR_HOST_DATA_ACK if !signals.latched => WAIT_FOR_HOST_DATA_AVAILABLE,
        CHECK_HIT if hit => TRIGGER_PSU_WITH_TEXTURE,
        CHECK_HIT => TRIGGER_USERPIXELSHADER,
        TRIGGER_PSU_WITH_TEXTURE => WAIT_FOR_PSU,
        ACK_PSU => TRIGGER_USERPIXELSHADER,
        TRIGGER_USERPIXELSHADER => WAIT_FOR_USERPIXELSHADER,
        ACK_USERPIXELSHADER => TRIGGER_NPU,
        TRIGGER_NPU => WAIT_NPU,
        ACK_NPU if value => TRIGGER_RGU,
        ACK_NPU => DONE,
        WAIT_CLEAR_REGISTERS if done => ACK_CLEAR_REGISTERS,
        WAIT_FOR_CONSTANT if done => ACK_PRECALCULATE_CONSTANTS,
        WAIT_USERCONSTANTS if done => ACK_USERCONSTANTS,
        WAIT_FOR_RGU if done => ACK_RGU,
        WAIT_FOR_MAIN if done => ACK_MAIN,
        WAIT_FOR_PSU if done => ACK_PSU,
        WAIT_FOR_USERPIXELSHADER if done => ACK_USERPIXELSHADER,
        WAIT_NPU if done => ACK_NPU,
        other => other,
    }
}

/// The routine a control unit in `state` (a trigger state) starts in that period.
fn triggered_routine(state: u8) -> Option<EntryPoint> {
    use cu::*;
    match state {
        CLEAR_REGISTERS => Some(EntryPoint::Initial),
        PRECALCULATE_CONSTANTS => Some(EntryPoint::Cppu),
        TRIGGER_USERCONSTANTS => Some(EntryPoint::UserConstants),
        TRIGGER_RGU => Some(EntryPoint::Rgu),
        TRIGGER_MAIN => Some(EntryPoint::Main),
        TRIGGER_PSU_WITH_TEXTURE => Some(EntryPoint::Psu2),
        TRIGGER_USERPIXELSHADER => Some(EntryPoint::PixelShader),
        TRIGGER_NPU => Some(EntryPoint::Npg),
        _ => None,
    }
}

impl<'s> Sim<'s> {
    fn new(setup: &'s Setup) -> Sim<'s> {
        // INSTRUCTION packets of 7 periods, INITIAL_SCENE_PARAMS_STAGE, 6 parameter packets
        // of 10, PREPARE_CORE_CONFIG, then per core 2 partition packets of 10 and
        // PREPARE_NEXT_CORE_CONFIG.
        let config_end =
            HOST_START + 7 * setup.instruction_packets + 1 + 60 + 1 + 21 * setup.cores as u64;
        let core = CoreSim {
            state: cu::AFTER_RESET,
            since: 1,
            wake: RESET_END,
            latched: false,
            committed: false,
            hit: false,
            routine: None,
            value: false,
            mains_this_pixel: 0,
            main_returned: 0,
            starts: 0,
            restarted: None,
            course: CoreCourse::default(),
        };
        Sim {
            setup,
            config_end,
            host: Host {
                state: HostState::Idle,
                until: HOST_START - 1,
                triangle: 0,
                stdone_from: None,
            },
            cores: vec![core; setup.cores],
            tmem: TextureMemory::new(setup.cores, RESET_END),
            hazards: Vec::new(),
            latched: 0,
            committed: 0,
            done: 0,
            soon: (1 << setup.cores) - 1,
            waiting: 0,
            next_own: u64::MAX,
            scratch: Scratch::default(),
        }
    }

    /// Notes core `index`'s timer `at` (a RETURN, a read's start).
    fn set_timer(&mut self, index: usize, at: u64, t: u64) {
        if at == t + 1 {
            self.soon |= 1 << index;
        }
        self.next_own = self.next_own.min(at);
    }

    /// The cores whose own timer ends in `t`, after which `next_own` is the next timer.
    fn timers_ending(&mut self, t: u64) -> u64 {
        if t < self.next_own {
            return 0;
        }
        let mut due = 0;
        let mut next = u64::MAX;
        for (index, core) in self.cores.iter().enumerate() {
            let read = core.routine.as_ref().and_then(|r| r.tmread_from);
            // `u64::MAX`: no timer (it never ends, and is no later one).
            for at in [core.wake, read.unwrap_or(u64::MAX)] {
                if at == t {
                    due |= 1 << index;
                } else if at > t {
                    next = next.min(at);
                }
            }
        }
        self.next_own = next;
        due
    }

    fn signals(&self, t: u64) -> Signals {
        use HostState::*;
        let state = self.host.state;
        Signals {
            mst: matches!(state, Config | Stream | WaitCommit),
            rendren: matches!(state, Stream | WaitLatch | WaitCommit),
            hda: state == WaitLatch,
            gack: state == Ack,
            stdone: self.host.stdone_from.is_some_and(|from| t >= from),
            latched: self.latched == self.cores.len(),
            committed: self.committed == self.cores.len(),
        }
    }

    fn run<R: Routines + ?Sized>(mut self, routines: &mut R) -> Result<Course, Stop> {
        let mut t = RESET_END;
        let mut previous = None;
        let mut waiting_since = None;
        let mut standings = Vec::new();
        let ending = loop {
            if t > self.setup.limit {
                break SimEnding::Limit(self.setup.limit);
            }
            match (self.host.state, waiting_since) {
                (HostState::WaitLatch, None) => waiting_since = Some(t),
                (HostState::WaitLatch, Some(since)) if t - since > self.setup.livelock => {
                    break SimEnding::Livelock { since, period: t };
                }
                (HostState::WaitLatch, _) => {}
                _ => waiting_since = None,
            }
            if self.done == self.cores.len() {
                break SimEnding::Done(t);
            }
            // Only a machine with a core done can repeat itself.
            let repeats = match self.done {
                0 => {
                    standings.clear();
                    None
                }
                _ => self.repeating(t, &mut standings),
            };
            if let Some(period) = repeats {
                self.stranded(period);
                break SimEnding::Deadlock {
                    period,
                    states: self.cores.iter().map(|c| c.state).collect(),
                };
            }
            if self.setup.fast && self.host.state == HostState::Ack {
                if let Some(later) = self.fast_forward(t, routines)? {
                    t = later;
                    previous = None;
                    continue;
                }
            }
            let signals = self.signals(t);
            let moved = previous != Some(signals);
            previous = Some(signals);
            let timed = self.timers_ending(t);
            let reads = self.step_texture_memory(t, timed, routines);
            let mut changed = reads == Reads::Finished;
            let mut due = std::mem::take(&mut self.soon) | timed;
            if moved {
                due |= self.waiting;
            }
            while due != 0 {
                let core = due.trailing_zeros() as usize;
                due &= due - 1;
                changed |= self.step_core(core, t, &signals, routines)?;
            }
            if signals.gack {
                changed |= self.acknowledge(t);
            }
            changed |= self.step_host(t, &signals, routines);
            t = if changed {
                t + 1
            } else if reads == Reads::Going {
                self.skip_reading(t, waiting_since)
            } else {
                match self.next_timer(t) {
                    Some(next) => next,
                    None => {
                        self.stranded(t);
                        break SimEnding::Deadlock {
                            period: t,
                            states: self.cores.iter().map(|c| c.state).collect(),
                        };
                    }
                }
            };
        };
        Ok(self.into_course(ending))
    }

    /// Where, from period `t` on, the machine only repeats itself: a core in DONE toggles its
    /// "latched" flag every period, so a frame that hangs with some cores done (the others
    /// waiting for a signal, no timer, no read, the host not waiting for latches, which the
    /// livelock bound covers) never stands still, yet once two consecutive periods look as
    /// the two before them, the machine's whole state (the signals the period before
    /// included) is what it was two periods earlier, and nothing new ever happens. The
    /// first period of the repetition, if it began; `standings` keeps the last three
    /// quiet periods' [`Standing`] (consecutive: a quiet machine visits every period).
    fn repeating(&self, t: u64, standings: &mut Vec<(u64, Standing)>) -> Option<u64> {
        let standing = match self.standing(t) {
            Some(standing) if standings.last().is_none_or(|(at, _)| at + 1 == t) => standing,
            Some(standing) => {
                standings.clear();
                standing
            }
            None => {
                standings.clear();
                return None;
            }
        };
        // The periods t - 3, t - 2, t - 1 and t.
        if let [(first, three_before), (_, two_before), (_, one_before)] = &standings[..] {
            if *one_before == *three_before && standing == *two_before {
                return Some(*first);
            }
        }
        if standings.len() == 3 {
            standings.remove(0);
        }
        standings.push((t, standing));
        None
    }

    /// Everything that decides the periods after `t` when only done cores move of
    /// themselves (see [`Sim::repeating`]); `None` otherwise.
    fn standing(&self, t: u64) -> Option<Standing> {
        if self.done == 0
            || self.host.state == HostState::WaitLatch
            || self.tmem.busy()
            || self.host_timer(t) != u64::MAX
        {
            return None;
        }
        let quiet = |core: &CoreSim| {
            core.state == cu::DONE
                || (core.wake == u64::MAX
                    && core
                        .routine
                        .as_ref()
                        .is_none_or(|r| r.tmread_from.is_none()))
        };
        if !self.cores.iter().all(quiet) {
            return None;
        }
        Some(Standing {
            cores: (self.cores.iter())
                .map(|c| (c.state, c.latched, c.committed, c.hit, c.value))
                .collect(),
            host: (self.host.state, self.host.triangle),
            signals: self.signals(t),
            soon: self.soon,
            waiting: self.waiting,
        })
    }

    /// The host's ACK in period `t`: the MAIN starts since the last one are counted, and
    /// GACK resets every core's "latched" and "committed" flags. Whether any was set.
    fn acknowledge(&mut self, t: u64) -> bool {
        self.count_starts(t);
        let mut changed = false;
        for core in &mut self.cores {
            changed |= core.latched || core.committed;
            core.latched = false;
            core.committed = false;
        }
        self.latched = 0;
        self.committed = 0;
        changed
    }

    /// The frame's course once it ended as `ending`: each core's last state counts up to
    /// the end.
    fn into_course(self, ending: SimEnding) -> Course {
        let end = match ending {
            SimEnding::Done(t) => t,
            SimEnding::Deadlock { period, .. } | SimEnding::Livelock { period, .. } => period,
            SimEnding::Limit(limit) => limit,
        };
        let cores = self
            .cores
            .into_iter()
            .map(|mut core| {
                let state = core.state;
                account(
                    &mut core.course.periods,
                    state,
                    end + 1 - core.since.min(end + 1),
                );
                core.course
            })
            .collect();
        Course {
            ending,
            cores,
            hazards: self.hazards,
        }
    }

    /// At the host's ACK in period `t`: the cores that started MAIN an even number of
    /// times on the pixel's last triangle (on any other the next triangle's flip sets the
    /// swap memory right again), or three times or more on any, since the ACK before
    /// ([`HazardKind::EvenStarts`], [`HazardKind::Livelock`]).
    fn count_starts(&mut self, t: u64) {
        let triangle = self.host.triangle;
        let last = triangle + 1 >= self.setup.triangles;
        for (index, core) in self.cores.iter_mut().enumerate() {
            let hazard = |kind| Hazard {
                core: index,
                pixel: core.course.pixels.saturating_sub(1),
                main: core.mains_this_pixel.saturating_sub(1),
                period: t,
                kind,
            };
            if last && core.state != cu::DONE && core.starts % 2 == 0 {
                self.hazards
                    .push(hazard(HazardKind::EvenStarts { triangle, last }));
            }
            if let (3.., Some(since)) = (core.starts, core.restarted) {
                self.hazards.push(hazard(HazardKind::Livelock {
                    starts: core.starts,
                    since,
                }));
            }
            core.starts = 0;
            core.restarted = None;
        }
    }

    /// The cores that wait, in period `t` where nothing moves any more, for a triangle after
    /// the last one ([`HazardKind::WaitsAfterLast`]).
    fn stranded(&mut self, t: u64) {
        let stdone = self.host.stdone_from.is_some_and(|from| t >= from);
        for (index, core) in self.cores.iter().enumerate() {
            if stdone && core.state == cu::WAIT_FOR_HOST_DATA_AVAILABLE {
                self.hazards.push(Hazard {
                    core: index,
                    pixel: core.course.pixels.saturating_sub(1),
                    main: core.mains_this_pixel.saturating_sub(1),
                    period: t,
                    kind: HazardKind::WaitsAfterLast,
                });
            }
        }
    }

    /// The triangle loop in closed form, from period `t` where the host acknowledges the
    /// pixel's triangle `i` (every core latched it, each core in its last MAIN or done
    /// with it, however often it started MAIN on `i`: the ACK's start hazards are
    /// counted as the clock-by-clock loop counts them): the host
    /// streams triangle `j` in the 71 periods after the ACK of `j - 1` (at `G`), so each core
    /// triggers MAIN `j` at `max(R + 4, G + 73)`, `R` the period its MAIN `j - 1`
    /// returned (ACK_MAIN, WAIT_FOR_HOST_DATA_ACK until GACK has cleared the flags,
    /// WAIT_FOR_HOST_DATA_AVAILABLE until HDA); the host sees every flag set the period
    /// after the last trigger `L` and acknowledges in `L + 2`. That holds while every core
    /// returns no earlier than `L - 1` (else it would start MAIN again: the re-entry
    /// hazard) and MAIN has no TMREAD or OMWRITE. Goes on up to the pixel's last triangle
    /// but one (STDONE is the clock-by-clock loop's), and returns the period of the last
    /// ACK it reached, with every state as the clock-by-clock loop would have it there;
    /// `None` when it cannot take a single triangle.
    fn fast_forward<R: Routines + ?Sized>(
        &mut self,
        t: u64,
        routines: &mut R,
    ) -> Result<Option<u64>, Stop> {
        let mut scratch = std::mem::take(&mut self.scratch);
        let later = self.fast_forward_with(&mut scratch, t, routines);
        self.scratch = scratch;
        later
    }

    /// [`Sim::fast_forward`] in `scratch`'s vectors.
    fn fast_forward_with<R: Routines + ?Sized>(
        &mut self,
        scratch: &mut Scratch,
        t: u64,
        routines: &mut R,
    ) -> Result<Option<u64>, Stop> {
        let first = self.host.triangle + 1;
        let Scratch {
            returned,
            triggers,
            next_returned,
            next_triggers,
            durations,
            ahead,
            booked,
        } = scratch;
        if !self.fast_forward_from(t, first, returned) {
            return Ok(None);
        }
        let cores = self.cores.len();
        let mut g = t;
        triggers.clear();
        triggers.resize(cores, 0);
        let mut committed = 0;
        next_returned.clone_from(returned);
        next_triggers.clone_from(triggers);
        booked.restart(cores);
        let end = self.setup.triangles - 1;
        let ahead = ahead.get_or_insert_with(|| Ahead::new(cores));
        ahead.restart(first);
        let mut j = first;
        while j < end {
            if j >= ahead.end {
                self.start_ahead(ahead, j, triggers, returned, routines);
                ahead.fill(j, end, routines);
            }
            if j < ahead.end {
                let stop = end.min(ahead.end);
                let taken = culled_stretch(ahead, j..stop, &mut g, returned, triggers, booked);
                if taken > 0 && committed == 0 {
                    // The ACK in `t`, before anything of the closed form is booked.
                    self.count_starts(t);
                    self.book_to_returns(&booked.start, routines);
                }
                (j, committed) = (j + taken, committed + taken);
                if j < stop {
                    // As if peeked one by one: the routines hold triangle j's MAINs ready.
                    self.start_ahead(ahead, j, triggers, returned, routines);
                    peek_mains(routines, j, cores, durations)?;
                    break;
                }
                continue;
            }
            if !peek_mains(routines, j, cores, durations)? {
                break;
            }
            // Into their own vectors: a triangle that breaks the closed form leaves the
            // last committed one's triggers for `resume_at_ack`.
            let cycles = |core: usize| durations[core].0;
            let (last, earliest) = next_mains(g, returned, cycles, next_triggers, next_returned);
            if earliest + 1 < last {
                break;
            }
            // Committed: the next triangle overwrites every core's entry of the others.
            std::mem::swap(triggers, next_triggers);
            // Triangle j runs as predicted: the host streams it, every core flips, runs it.
            if committed == 0 {
                // The ACK in `t`, before anything of the closed form is booked.
                self.count_starts(t);
                self.book_to_returns(returned, routines);
            }
            booked.last_culled = false;
            routines.streamed(Some(j));
            for core in 0..cores {
                routines.flip(core);
                let run = routines.start(core, EntryPoint::Main)?;
                let value = routines.recording(core).run(run).value;
                let (trigger, returns) = (triggers[core], next_returned[core]);
                self.book_main(core, returned[core], trigger, returns, run, value);
            }
            std::mem::swap(returned, next_returned);
            g = last + 2;
            committed += 1;
            j += 1;
        }
        self.start_ahead(ahead, first + committed, triggers, returned, routines);
        if committed == 0 {
            return Ok(None);
        }
        self.book_culled(booked);
        self.resume_at_ack(g, returned, triggers, first + committed - 1);
        Ok(Some(g))
    }

    /// Where [`Sim::fast_forward`] can start at period `t` on triangle `first`: the period
    /// each core's last MAIN returned (or returns), into `returned`; whether it can.
    fn fast_forward_from(&self, t: u64, first: usize, returned: &mut Vec<u64>) -> bool {
        use cu::*;
        if first + 1 >= self.setup.triangles || self.tmem.busy() {
            return false;
        }
        returned.clear();
        for core in &self.cores {
            let r = match core.state {
                WAIT_FOR_MAIN => match &core.routine {
                    Some(running) if running.event_free() => running.returns.unwrap_or(u64::MAX),
                    _ => return false,
                },
                ACK_MAIN | WAIT_FOR_HOST_DATA_ACK => core.main_returned,
                _ => return false,
            };
            // Re-entries since the ACK before change nothing here but this ACK's start
            // hazards, which the closed form counts as the ACK would (`count_starts`).
            if r == u64::MAX || r + 1 < t - 2 {
                return false;
            }
            returned.push(r);
        }
        true
    }

    /// Books core `core`'s MAIN triggered at `trigger`, returning at `returns` with
    /// `value` (run `run` at the routines), its previous one having returned at `returned`.
    fn book_main(
        &mut self,
        core: usize,
        returned: u64,
        trigger: u64,
        returns: u64,
        run: usize,
        value: bool,
    ) {
        let sim = &mut self.cores[core];
        let (waiting, busy) = main_periods(returned, trigger, returns);
        sim.course.periods.waiting += waiting;
        sim.course.periods.busy += busy;
        sim.course.mains += 1;
        sim.mains_this_pixel += 1;
        sim.hit |= value;
        sim.value = value;
        sim.routine = Some(Running::main(run, trigger, returns));
    }

    /// Books the culled MAINs [`Sim::fast_forward`] took (each returned FALSE, as
    /// [`Sim::book_main`] books one; [`Sim::start_ahead`] gives their runs).
    fn book_culled(&mut self, booked: &Booked) {
        for ((sim, &waiting), &busy) in self.cores.iter_mut().zip(&booked.waiting).zip(&booked.busy)
        {
            sim.course.periods.waiting += waiting;
            sim.course.periods.busy += busy;
            sim.course.mains += booked.mains;
            sim.mains_this_pixel += booked.mains;
            if booked.last_culled {
                sim.value = false;
            }
        }
    }

    /// Starts at the routines the MAINs [`Sim::fast_forward`] booked from `ahead` before
    /// triangle `end`, each core's last one triggered at `triggers` and returning at
    /// `returned`.
    fn start_ahead<R: Routines + ?Sized>(
        &mut self,
        ahead: &mut Ahead,
        end: usize,
        triggers: &[u64],
        returned: &[u64],
        routines: &mut R,
    ) {
        let end = end.min(ahead.end);
        if end <= ahead.unstarted {
            return;
        }
        for (core, sim) in self.cores.iter_mut().enumerate() {
            let run = routines.start_culled(core, ahead.unstarted, end - ahead.unstarted);
            sim.routine = Some(Running::main(run, triggers[core], returned[core]));
        }
        ahead.unstarted = end;
    }

    /// Books each core's periods up to the return `returned` of its MAIN, from where
    /// they stand before [`Sim::fast_forward`] takes over (up to the period before the
    /// core entered its state): WAIT_FOR_MAIN runs busy to its return; WAIT_FOR_HOST_DATA_ACK
    /// has its ACK_MAIN period booked already.
    /// A core still in its MAIN returns its value to the hit flag, as at its RETURN.
    fn book_to_returns<R: Routines + ?Sized>(&mut self, returned: &[u64], routines: &R) {
        for (index, (core, &r)) in self.cores.iter_mut().zip(returned).enumerate() {
            match core.state {
                cu::WAIT_FOR_MAIN => {
                    core.course.periods.busy += r + 1 - core.since;
                    let run = core.routine.take().expect("a core in MAIN runs it");
                    core.value = routines.recording(index).run(run.run).value;
                    core.hit |= core.value;
                }
                cu::WAIT_FOR_HOST_DATA_ACK => core.course.periods.busy -= 1,
                _ => {}
            }
        }
    }

    /// The states at period `g`, where the host acknowledges triangle `triangle`, after
    /// [`Sim::fast_forward`] booked every core's periods up to the return `returned` of
    /// its last MAIN (triggered at `triggers`): the core is still in that MAIN, or in
    /// ACK_MAIN, or waits for GACK in WAIT_FOR_HOST_DATA_ACK; every "latched" flag is set.
    fn resume_at_ack(&mut self, g: u64, returned: &[u64], triggers: &[u64], triangle: usize) {
        use cu::*;
        for (index, core) in self.cores.iter_mut().enumerate() {
            let r = returned[index];
            if r >= g {
                core.state = WAIT_FOR_MAIN;
                core.since = triggers[index] + 1;
                core.course.periods.busy -= r - triggers[index];
                core.wake = r;
            } else {
                core.routine = None;
                core.main_returned = r;
                if r + 1 == g {
                    core.state = ACK_MAIN;
                    core.since = r + 1;
                } else {
                    core.state = WAIT_FOR_HOST_DATA_ACK;
                    core.since = r + 2;
                    core.course.periods.busy += 1;
                }
                core.wake = g;
            }
            core.latched = true;
            core.starts = 1;
            core.restarted = None;
        }
        self.latched = self.cores.len();
        self.soon = (1 << self.cores.len()) - 1;
        self.waiting = 0;
        self.next_own = returned
            .iter()
            .copied()
            .filter(|&r| r >= g)
            .min()
            .unwrap_or(u64::MAX);
        self.host.triangle = triangle;
    }

    /// The earliest period after `t` in which some state machine moves without its inputs
    /// changing; `None` when none ever will (a deadlock).
    fn next_timer(&self, t: u64) -> Option<u64> {
        if self.tmem.busy() || self.soon != 0 {
            return Some(t + 1);
        }
        let next = self.next_own.min(self.host_timer(t));
        (next != u64::MAX).then_some(next.max(t + 1))
    }

    /// The earliest period after `t` in which the host moves on its own (the end of a
    /// configuration, streaming or idle wait, or STDONE rising); `u64::MAX` when none.
    fn host_timer(&self, t: u64) -> u64 {
        let mut next = u64::MAX;
        if matches!(
            self.host.state,
            HostState::Idle | HostState::Config | HostState::Stream
        ) {
            next = self.host.until;
        }
        if let Some(from) = self.host.stdone_from.filter(|&from| from > t) {
            next = next.min(from);
        }
        next
    }

    /// Period `t` changed nothing but the texture memory's reads, none of which finished:
    /// the next period to visit. Until the next timer (or the period the limit or the
    /// livelock bound is checked in) nothing else moves, so the reads are stepped on their
    /// own up to the period before that, or up to the first period a read finishes in.
    fn skip_reading(&mut self, t: u64, waiting_since: Option<u64>) -> u64 {
        if self.soon != 0 {
            return t + 1;
        }
        let mut until = (self.setup.limit.saturating_add(1))
            .min(self.next_own)
            .min(self.host_timer(t));
        if let (HostState::WaitLatch, Some(since)) = (self.host.state, waiting_since) {
            until = until.min(since.saturating_add(self.setup.livelock).saturating_add(1));
        }
        self.tmem.step_quietly(t + 1, until.max(t + 1))
    }

    /// Starts the reads that begin in `t` and steps the texture memory through `t`.
    fn step_texture_memory<R: Routines + ?Sized>(
        &mut self,
        t: u64,
        timed: u64,
        routines: &mut R,
    ) -> Reads {
        let mut starting = timed;
        while starting != 0 {
            let index = starting.trailing_zeros() as usize;
            starting &= starting - 1;
            if let Some(running) = &mut self.cores[index].routine {
                if running.tmread_from == Some(t) {
                    running.tmread_from = None;
                    let events = routines
                        .recording(index)
                        .events_of(routines.recording(index).run(running.run));
                    let EventKind::Tmread(addresses) = events[running.event as usize - 1].kind
                    else {
                        unreachable!("a read starts at a TMREAD event")
                    };
                    self.tmem.begin(index, addresses);
                }
            }
        }
        if !self.tmem.busy() {
            return Reads::None;
        }
        // At most one read per core: one bit each.
        let mut finished = 0u64;
        self.tmem.step(t, |core| finished |= 1 << core);
        let reads = match finished {
            0 => Reads::Going,
            _ => Reads::Finished,
        };
        while finished != 0 {
            let core = finished.trailing_zeros() as usize;
            finished &= finished - 1;
            let sim = &mut self.cores[core];
            let running = sim.routine.as_mut().expect("a reading core runs a routine");
            running.reading = false;
            running.cursor = t;
            let pixel = sim.course.pixels.saturating_sub(1);
            advance(
                running,
                routines.recording(core),
                &mut sim.course.omwrites,
                pixel,
            );
            let (returns, read) = (running.returns, running.tmread_from);
            let mut woken = None;
            if let (Some(returns), true) = (returns, waits_for_routine(sim.state)) {
                sim.wake = returns;
                woken = Some(returns);
            }
            for at in [read, woken].into_iter().flatten() {
                self.set_timer(core, at, t);
            }
        }
        reads
    }

    /// Core `index` through period `t`: its next state, the routine it starts, its flags.
    /// Whether anything of it changed.
    fn step_core<R: Routines + ?Sized>(
        &mut self,
        index: usize,
        t: u64,
        signals: &Signals,
        routines: &mut R,
    ) -> Result<bool, Stop> {
        let core = &self.cores[index];
        let state = core.state;
        let done = core
            .routine
            .as_ref()
            .is_some_and(|r| !r.hung && r.returns == Some(t));
        let next = next_control_state(state, signals, core.hit, core.value, done);
        if let Some(entry) = triggered_routine(state) {
            self.start_routine(index, t, entry, routines)?;
        }
        if done {
            self.end_routine(index, t, state, routines);
        }
        let core = &mut self.cores[index];
        if state == cu::TRIGGER_PSU_WITH_TEXTURE {
            core.hit = false;
        }
        let latched =
            !signals.gack && (core.latched ^ matches!(state, cu::TRIGGER_MAIN | cu::DONE));
        let committed = !signals.gack && (core.committed ^ (state == cu::ACK_USERPIXELSHADER));
        let flags = (latched != core.latched, committed != core.committed);
        core.latched = latched;
        core.committed = committed;
        self.schedule_wake(index, t, state, next);
        let moved = next != state;
        if moved {
            self.enter_state(index, t, state, next);
        }
        let count = |set: bool| if set { 1 } else { usize::MAX };
        if flags.0 {
            self.latched = self.latched.wrapping_add(count(latched));
        }
        if flags.1 {
            self.committed = self.committed.wrapping_add(count(committed));
        }
        Ok(moved || flags.0 || flags.1)
    }

    /// Core `index`'s routine returned in period `t` (its control unit in `state`): bit 0
    /// of its RETURN is the core's value, and after MAIN, whether the pixel hit.
    fn end_routine<R: Routines + ?Sized>(&mut self, index: usize, t: u64, state: u8, routines: &R) {
        let core = &mut self.cores[index];
        let run = core.routine.take().expect("a done core ran a routine");
        core.value = routines.recording(index).run(run.run).value;
        if state == cu::WAIT_FOR_MAIN {
            core.hit |= core.value;
            core.main_returned = t;
        }
    }

    /// When core `index`, moving from `state` to `next` in period `t`, is next evaluated,
    /// and in which of the sets (`soon`, `waiting`, `next_own`) that puts it.
    fn schedule_wake(&mut self, index: usize, t: u64, state: u8, next: u8) {
        let core = &mut self.cores[index];
        // A state is evaluated in its first period (its condition may hold already), then
        // when its routine returns, or, waiting for a signal, when a signal changes.
        core.wake = if next != state {
            t + 1
        } else if waits_for_routine(next) {
            match &core.routine {
                Some(running) if !running.hung => running.returns.unwrap_or(u64::MAX),
                _ => u64::MAX,
            }
        } else if waits_for_signal(next) {
            u64::MAX
        } else {
            t + 1
        };
        let wake = core.wake;
        let bit = 1u64 << index;
        self.waiting &= !bit;
        if wake == t + 1 {
            self.soon |= bit;
        } else if wake == u64::MAX {
            if waits_for_signal(next) {
                self.waiting |= bit;
            }
        } else {
            self.next_own = self.next_own.min(wake);
        }
    }

    /// Core `index` leaves `state` for `next` at the end of period `t`: the periods it
    /// held `state` are accounted, and entering DONE counts the core done.
    fn enter_state(&mut self, index: usize, t: u64, state: u8, next: u8) {
        let core = &mut self.cores[index];
        let held = t + 1 - core.since;
        if state == cu::ACK_RGU {
            account(&mut core.course.periods, cu::TRIGGER_RGU, 1);
            account(&mut core.course.periods, cu::ACK_RGU, held - 1);
        } else {
            account(&mut core.course.periods, state, held);
        }
        core.since = t + 1;
        core.state = next;
        if next == cu::DONE {
            core.course.finish = Some(t + 1);
            self.done += 1;
        }
    }

    /// Core `index` starts `entry` in period `t` (its trigger state).
    fn start_routine<R: Routines + ?Sized>(
        &mut self,
        index: usize,
        t: u64,
        entry: EntryPoint,
        routines: &mut R,
    ) -> Result<(), Stop> {
        let core = &mut self.cores[index];
        match entry {
            EntryPoint::Rgu => {
                core.course.pixels += 1;
                core.mains_this_pixel = 0;
            }
            EntryPoint::Main => {
                if core.latched {
                    let hazard = Hazard {
                        core: index,
                        pixel: core.course.pixels.saturating_sub(1),
                        main: core.mains_this_pixel,
                        period: t,
                        kind: HazardKind::Reentry,
                    };
                    routines.hazard(&hazard)?;
                    self.hazards.push(hazard);
                }
                let core = &mut self.cores[index];
                if core.latched && core.restarted.is_none() {
                    core.restarted = Some(t);
                }
                core.starts += 1;
                core.mains_this_pixel += 1;
                core.course.mains += 1;
                routines.flip(index);
            }
            _ => {}
        }
        let run = routines.start(index, entry)?;
        let core = &mut self.cores[index];
        let mut running = Running {
            run,
            event: 0,
            cursor: t + 3,
            returns: None,
            tmread_from: None,
            reading: false,
            hung: false,
        };
        let pixel = core.course.pixels.saturating_sub(1);
        advance(
            &mut running,
            routines.recording(index),
            &mut core.course.omwrites,
            pixel,
        );
        let read = running.tmread_from;
        core.routine = Some(running);
        if let Some(from) = read {
            self.set_timer(index, from, t);
        }
        Ok(())
    }

    /// The host through period `t`; whether its state changed.
    fn step_host<R: Routines + ?Sized>(
        &mut self,
        t: u64,
        signals: &Signals,
        routines: &mut R,
    ) -> bool {
        let host = &mut self.host;
        let last = self.setup.triangles;
        let next = match host.state {
            HostState::Idle if t == host.until => {
                host.until = self.config_end - 1;
                HostState::Config
            }
            HostState::Config if t == host.until => HostState::Prepare,
            HostState::Prepare => {
                host.stdone_from = None;
                if self.cores.iter().all(|c| c.state == cu::DONE) {
                    HostState::Done
                } else {
                    host.triangle = 0;
                    self.begin_stream(t + 1);
                    HostState::Stream
                }
            }
            HostState::Stream if t == host.until => {
                routines.streamed((host.triangle < last).then_some(host.triangle));
                if host.triangle >= last {
                    HostState::WaitCommit
                } else {
                    HostState::WaitLatch
                }
            }
            HostState::WaitLatch if signals.latched => HostState::Ack,
            HostState::Ack => {
                // host-fix.patch: STDONE once every core has latched the last triangle.
                if self.setup.host_fix && host.triangle + 1 >= last {
                    host.stdone_from = Some(host.stdone_from.map_or(t + 1, |f| f.min(t + 1)));
                }
                host.triangle += 1;
                self.begin_stream(t + 1);
                HostState::Stream
            }
            HostState::WaitCommit if signals.committed => HostState::Prepare,
            state => state,
        };
        let changed = next != self.host.state;
        self.host.state = next;
        changed
    }

    /// The host starts streaming its current triangle in period `start`.
    fn begin_stream(&mut self, start: u64) {
        let host = &mut self.host;
        host.until = start + STREAM_PERIODS - 1;
        if host.triangle >= self.setup.triangles {
            // The published STDONE: the vertex counter reaches (N + 1) x 7 after the sixth
            // packet of the triangle past the list.
            let from = start + 60;
            host.stdone_from = Some(host.stdone_from.map_or(from, |f| f.min(from)));
        }
    }
}

/// What the texture memory did in a period.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reads {
    /// No core was reading.
    None,
    /// Reads went on, none finished.
    Going,
    /// A read finished (its core goes on).
    Finished,
}

/// Triangle `j`'s MAIN on every core of `cores`, peeked ([`Routines::peek_main`]) in
/// order into `durations` up to the first that does not run without events: whether all do.
fn peek_mains<R: Routines + ?Sized>(
    routines: &mut R,
    j: usize,
    cores: usize,
    durations: &mut Vec<(u32, bool)>,
) -> Result<bool, Stop> {
    durations.clear();
    for core in 0..cores {
        match routines.peek_main(core, j)? {
            Some(duration) => durations.push(duration),
            None => return Ok(false),
        }
    }
    Ok(true)
}

/// [`Sim::fast_forward`]'s vectors, kept from one call to the next (it runs at every ACK
/// the loop visits): each core's last MAIN's return and trigger, the next triangle's, and
/// the MAINs' cycles.
#[derive(Default)]
struct Scratch {
    returned: Vec<u64>,
    triggers: Vec<u64>,
    next_returned: Vec<u64>,
    next_triggers: Vec<u64>,
    durations: Vec<(u32, bool)>,
    ahead: Option<Ahead>,
    booked: Booked,
}

/// The culled MAINs [`Sim::fast_forward`] committed, booked at its end ([`Sim::book_culled`]):
/// each core's periods waiting and busy, how many (on every core), and whether the last
/// MAIN committed was one of them.
#[derive(Default)]
struct Booked {
    waiting: Vec<u64>,
    busy: Vec<u64>,
    mains: u64,
    last_culled: bool,
    /// Per core, where its last MAIN before the current stretch of culled ones returned
    /// ([`culled_stretch`]).
    start: Vec<u64>,
}

impl Booked {
    fn restart(&mut self, cores: usize) {
        for sums in [&mut self.waiting, &mut self.busy] {
            sums.clear();
            sums.resize(cores, 0);
        }
        (self.mains, self.last_culled) = (0, false);
    }
}

/// A MAIN's periods from its previous MAIN's return (`returned`) to its own (`returns`),
/// triggered at `trigger`: waiting (for GACK and HDA) and busy (ACK_MAIN, the trigger and
/// MAIN).
fn main_periods(returned: u64, trigger: u64, returns: u64) -> (u64, u64) {
    (trigger - returned - 2, returns - trigger + 2)
}

/// Every core's next MAIN in the closed form, the host's last ACK at `g`: triggered at
/// `max(R + 4, g + 73)` (`R` the return of its MAIN before, in `returned`), returning
/// `cycles(core)` after its first instruction, into `triggers` and `returns`; the last
/// trigger and the earliest return.
#[inline(always)]
fn next_mains(
    g: u64,
    returned: &[u64],
    cycles: impl Fn(usize) -> u32,
    triggers: &mut [u64],
    returns: &mut [u64],
) -> (u64, u64) {
    let (mut last, mut earliest) = (0, u64::MAX);
    let cores = returned.len();
    let (triggers, returns) = (&mut triggers[..cores], &mut returns[..cores]);
    // Mostly every core triggers 4 periods after its return, the host long done: a
    // branch, not a maximum per core, so that in a run of MAINs the triggers need not
    // wait for `g`.
    let floor = g + 73;
    let waits = returned.iter().any(|&r| r + 4 < floor);
    for core in 0..cores {
        let own = returned[core] + 4;
        let trigger = if waits { own.max(floor) } else { own };
        triggers[core] = trigger;
        returns[core] = trigger + 3 + u64::from(cycles(core));
        last = last.max(trigger);
        earliest = earliest.min(returns[core]);
    }
    (last, earliest)
}

/// [`Sim::fast_forward`] over the triangles `triangles`, whose MAINs are culled and timed
/// in `ahead`, for as long as the closed form holds ([`next_mains`]; the last ACK at
/// `g`): each core's triggers and returns into `triggers` and `returned`, their periods
/// into `booked` (from where each core's MAIN before returned, kept in `booked.start`),
/// and how many it took; fewer than all where the next one breaks the form.
fn culled_stretch(
    ahead: &Ahead,
    triangles: Range<usize>,
    g: &mut u64,
    returned: &mut [u64],
    triggers: &mut [u64],
    booked: &mut Booked,
) -> usize {
    booked.start.clear();
    booked.start.extend_from_slice(returned);
    let (first, count) = (triangles.start - ahead.start, triangles.len());
    let stretch = (&ahead.cycles[..], first, count);
    let taken = stretch_in_lanes(stretch, g, returned, triggers);
    // Summed once the stretch is known, apart from the recurrence: a MAIN is busy 5
    // periods more than its cycles (`main_periods`), and from its return before the
    // stretch to its last one a core was busy or waiting.
    let rows = ahead.cycles.chunks(AHEAD_MOST);
    for (core, row) in rows.take(returned.len()).enumerate() {
        let cycles: u64 = row[first..first + taken]
            .iter()
            .map(|&c| u64::from(c))
            .sum();
        let busy = cycles + 5 * taken as u64;
        booked.busy[core] += busy;
        booked.waiting[core] += returned[core] - booked.start[core] - busy;
    }
    booked.mains += taken as u64;
    booked.last_culled |= taken > 0;
    taken
}

/// [`stretch_at_width`] at the narrowest width that holds the cores.
fn stretch_in_lanes(
    stretch: (&[u32], usize, usize),
    g: &mut u64,
    returned: &mut [u64],
    triggers: &mut [u64],
) -> usize {
    match returned.len() {
        1 => stretch_at_width::<1>(stretch, g, returned, triggers),
        2 => stretch_at_width::<2>(stretch, g, returned, triggers),
        3 | 4 => stretch_at_width::<4>(stretch, g, returned, triggers),
        5..=8 => stretch_at_width::<8>(stretch, g, returned, triggers),
        9..=16 => stretch_at_width::<16>(stretch, g, returned, triggers),
        _ => stretch_at_width::<MOST_CORES>(stretch, g, returned, triggers),
    }
}

/// [`culled_stretch`]'s recurrence ([`next_mains`], triangle after triangle) over `count`
/// columns from column `first` of the cycles `ahead` timed, in `N` lanes held in
/// registers (`next_mains` inlined at a constant width): the lanes past the cores repeat core 0, which changes no maximum or
/// minimum. How many it took; `returned` and `triggers` as the last one left them.
#[inline(always)]
fn stretch_at_width<const N: usize>(
    (cycles, first, count): (&[u32], usize, usize),
    g: &mut u64,
    returned: &mut [u64],
    triggers: &mut [u64],
) -> usize {
    let cores = returned.len();
    let lane = |lane: usize| if lane < cores { lane } else { 0 };
    let rows: [&[u32]; N] =
        std::array::from_fn(|l| &cycles[lane(l) * AHEAD_MOST + first..][..count]);
    let (mut returns, mut triggered) = (std::array::from_fn(|l| returned[lane(l)]), [0; N]);
    let mut taken = 0;
    while taken < count {
        let (mut next_triggers, mut next_returns) = ([0; N], [0; N]);
        let cycles = |l: usize| rows[l][taken];
        let (last, earliest) =
            next_mains(*g, &returns, cycles, &mut next_triggers, &mut next_returns);
        if earliest + 1 < last {
            break;
        }
        (returns, triggered) = (next_returns, next_triggers);
        *g = last + 2;
        taken += 1;
    }
    if taken > 0 {
        returned.copy_from_slice(&returns[..cores]);
        triggers.copy_from_slice(&triggered[..cores]);
    }
    taken
}

/// How many triangles [`Sim::fast_forward`] first asks the routines to time ahead at once;
/// each further ask doubles, up to [`AHEAD_MOST`] (few asks where the closed form takes a
/// pixel's triangles, little timed for nothing where it stops early).
const AHEAD: usize = 32;
const AHEAD_MOST: usize = 256;

/// Culled MAINs timed ahead for [`Sim::fast_forward`] ([`Routines::culled_mains`]): each
/// core's on triangles `start..end` (core by core, [`AHEAD_MOST`] apart); those from
/// `unstarted` on that the closed form has booked are not started at the routines yet
/// ([`Sim::start_ahead`]).
struct Ahead {
    cycles: Vec<u32>,
    /// How many the next ask times at most.
    size: usize,
    start: usize,
    end: usize,
    unstarted: usize,
}

impl Ahead {
    fn new(cores: usize) -> Ahead {
        Ahead {
            cycles: vec![0; AHEAD_MOST * cores],
            size: AHEAD,
            start: 0,
            end: 0,
            unstarted: 0,
        }
    }

    /// Nothing timed yet, from triangle `first` on.
    fn restart(&mut self, first: usize) {
        (self.start, self.end, self.unstarted) = (first, first, first);
        self.size = AHEAD;
    }

    /// Times the triangles from `j` on, before `limit`, every MAIN before `j` started.
    fn fill<R: Routines + ?Sized>(&mut self, j: usize, limit: usize, routines: &mut R) {
        let mut count = self.size.min(limit - j);
        self.size = (2 * self.size).min(AHEAD_MOST);
        for (core, cycles) in self.cycles.chunks_mut(AHEAD_MOST).enumerate() {
            if count == 0 {
                break;
            }
            count = count.min(routines.culled_mains(core, j, &mut cycles[..count]));
        }
        (self.start, self.end, self.unstarted) = (j, j + count, j);
    }
}

/// Books `periods` spent in control-unit state `state`.
fn account(periods: &mut Periods, state: u8, count: u64) {
    if state == cu::AFTER_RESET || state == cu::DONE {
        periods.idle += count;
    } else if waits_for_host(state) || state == cu::ACK_RGU {
        periods.waiting += count;
    } else {
        periods.busy += count;
    }
}

/// Moves `running` past the events that need no one else: OMWRITEs (noted in
/// `omwrites` for `pixel`) up to the next TMREAD (which then starts requesting two periods
/// after it is handed over) or to its RETURN.
fn advance(
    running: &mut Running,
    recording: &Recording,
    omwrites: &mut Vec<(u64, u64)>,
    pixel: u64,
) {
    let run = recording.run(running.run);
    let events = recording.events_of(run);
    while let Some(event) = events.get(running.event as usize) {
        let at = running.cursor + u64::from(event.before);
        running.event += 1;
        match event.kind {
            EventKind::Omwrite => {
                omwrites.push((pixel, at));
                running.cursor = at;
            }
            EventKind::Tmread(_) => {
                running.tmread_from = Some(at + 2);
                running.reading = true;
                return;
            }
            EventKind::Hang => {
                running.hung = true;
                return;
            }
        }
    }
    running.returns = Some(running.cursor + u64::from(run.tail));
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// [`culled_stretch`]'s recurrence as [`next_mains`] gives it, triangle by triangle.
    fn one_by_one(
        (cycles, first, count): (&[u32], usize, usize),
        g: &mut u64,
        returned: &mut Vec<u64>,
        triggers: &mut Vec<u64>,
    ) -> usize {
        let (mut next_triggers, mut next_returns) = (triggers.clone(), returned.clone());
        for taken in 0..count {
            let cycles = |core: usize| cycles[core * AHEAD_MOST + first + taken];
            let (last, earliest) =
                next_mains(*g, returned, cycles, &mut next_triggers, &mut next_returns);
            if earliest + 1 < last {
                return taken;
            }
            triggers.clone_from(&next_triggers);
            returned.clone_from(&next_returns);
            *g = last + 2;
        }
        count
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2048))]

        /// The recurrence in lanes ([`stretch_in_lanes`]) ends where, and as, the one of
        /// [`next_mains`] does, at every core count from 1 to 32 (so with the lanes past
        /// the cores repeating core 0 at every width): cycles alike or spread, the cores'
        /// returns close or far apart, the host's floor binding or not.
        #[test]
        fn the_stretch_in_lanes_is_the_stretch_by_next_mains(
            cores in 1usize..=32,
            count in 0usize..=AHEAD_MOST,
            base in 0u32..600,
            spread in prop::sample::select(vec![0u32, 1, 3, 8, 40, 300]),
            jitter in prop::collection::vec(0u32..=300, AHEAD_MOST * 32),
            apart in prop::sample::select(vec![0u64, 4, 80, 300, 3_000]),
            offsets in prop::collection::vec(0u64..3_000, 32),
            low in -3i64..=3,
            g in 1_000u64..2_000,
        ) {
            let cycles: Vec<u32> = jitter.iter().map(|&j| base + j % (spread + 1)).collect();
            // The lowest return about where the host's floor starts to bind.
            let lowest = (g as i64 + 69 + low) as u64;
            let returned: Vec<u64> =
                offsets[..cores].iter().map(|&o| lowest + o % (apart + 1)).collect();
            let triggers = vec![0; cores];
            let (mut g_one, mut returned_one, mut triggers_one) =
                (g, returned.clone(), triggers.clone());
            let stretch = (&cycles[..], 0, count);
            let one = one_by_one(stretch, &mut g_one, &mut returned_one, &mut triggers_one);
            let (mut g_lanes, mut returned_lanes, mut triggers_lanes) = (g, returned, triggers);
            let lanes =
                stretch_in_lanes(stretch, &mut g_lanes, &mut returned_lanes, &mut triggers_lanes);
            prop_assert_eq!(lanes, one);
            prop_assert_eq!((g_lanes, returned_lanes), (g_one, returned_one));
            if one > 0 {
                prop_assert_eq!(triggers_lanes, triggers_one);
            }
        }
    }
}
