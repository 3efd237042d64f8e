//! The PICA200 interpreter: pre-decoded steps (decode once, run many), f32 arithmetic with
//! PICA's rules (0·∞ = 0 in products, NaN-ordered MIN/MAX), relative addressing with the
//! wrap rules, and the flow-control stacks of spec foreign_isas §B.6 in Azahar's order.

use super::decode::{Descriptor, PicaWord};
use super::opcodes::PicaOp;
use crate::emu::core::Fault;

/// Words of code memory; the last one always acts as END (§B.6).
pub const CODE_WORDS: u32 = 4096;
/// Float uniforms c0..c95.
pub const FLOAT_UNIFORMS: usize = 96;
const ISA: &str = "PICA200";

/// One source operand, resolved from the instruction and its descriptor.
#[derive(Clone, Copy, Debug, PartialEq)]
struct PicaSource {
    /// Source register number (0x00-0x7F).
    reg: u8,
    /// 0 none, 1 a0.x, 2 a0.y, 3 aL; only ever set on a float-uniform source.
    idx: u8,
    negate: bool,
    swizzle: [u8; 4],
}

/// One pre-decoded instruction.
#[derive(Clone, Copy, Debug, PartialEq)]
enum PicaDecoded {
    Arith {
        op: PicaOp,
        dst: u8,
        mask: u8,
        s1: PicaSource,
        s2: PicaSource,
    },
    Cmp {
        s1: PicaSource,
        s2: PicaSource,
        cmp: [u8; 2],
    },
    Mad {
        dst: u8,
        mask: u8,
        s: [PicaSource; 3],
    },
    Control(PicaWord),
    Unknown(u32),
}

/// A program ready to run: its steps, the step every word past the end decodes to, and its
/// entry point.
#[derive(Clone, Debug)]
pub struct Code {
    steps: Vec<PicaDecoded>,
    /// Code memory past the program holds zero words (ADD o0, v0, v0 with descriptor 0).
    filler: PicaDecoded,
    entry: u32,
}

fn source(reg: u8, idx: u8, desc: Descriptor, n: usize) -> PicaSource {
    PicaSource {
        reg: reg & 0x7F,
        idx: if reg >= 0x20 { idx } else { 0 },
        negate: desc.negated(n),
        swizzle: desc.selector(n),
    }
}

fn predecode(word: u32, descs: &[u32]) -> PicaDecoded {
    let descriptor = |index: u8| Descriptor(descs.get(index as usize).copied().unwrap_or(0));
    let Ok(word) = PicaWord::decode(word) else {
        return PicaDecoded::Unknown(word);
    };
    let [i1, i2, i3] = word.source_indices();
    match word {
        PicaWord::Arith {
            op,
            dst,
            src1,
            src2,
            desc,
            ..
        } => {
            let d = descriptor(desc);
            PicaDecoded::Arith {
                op,
                dst,
                mask: d.mask(),
                s1: source(src1, i1, d, 0),
                s2: source(src2, i2, d, 1),
            }
        }
        PicaWord::Cmp {
            src1,
            src2,
            desc,
            cmpx,
            cmpy,
            ..
        } => {
            let d = descriptor(desc);
            PicaDecoded::Cmp {
                s1: source(src1, i1, d, 0),
                s2: source(src2, i2, d, 1),
                cmp: [cmpx, cmpy],
            }
        }
        PicaWord::Mad {
            dst,
            src1,
            src2,
            src3,
            desc,
            ..
        } => {
            let d = descriptor(desc);
            PicaDecoded::Mad {
                dst,
                mask: d.mask(),
                s: [
                    source(src1, i1, d, 0),
                    source(src2, i2, d, 1),
                    source(src3, i3, d, 2),
                ],
            }
        }
        other => PicaDecoded::Control(other),
    }
}

impl Code {
    /// Pre-decodes `words` (loaded at address 0) with operand descriptors `descs`;
    /// execution starts at `entry`.
    pub fn new(words: &[u32], descs: &[u32], entry: u32) -> Code {
        let limit = (CODE_WORDS - 1) as usize;
        Code {
            steps: words
                .iter()
                .take(limit)
                .map(|&w| predecode(w, descs))
                .collect(),
            filler: predecode(0, descs),
            entry,
        }
    }
}

/// Registers and uniforms of one invocation.
#[derive(Clone, Debug)]
pub struct State {
    /// Source register file in source numbering: v0-v15, r0-r15, c0-c95.
    pub regs: [[f32; 4]; 128],
    /// o0..o15.
    pub outputs: [[f32; 4]; 16],
    /// Bit n: o_n was written.
    pub written: u16,
    /// a0.x, a0.y, aL.
    pub address: [i32; 3],
    /// cc.x, cc.y.
    pub cc: [bool; 2],
    /// b0..b15, bit n = b_n.
    pub bools: u16,
    /// i0..i3: (count − 1, first aL, aL increment, unused).
    pub ints: [[u8; 4]; 4],
}

impl Default for State {
    fn default() -> State {
        State {
            regs: [[0.0; 4]; 128],
            outputs: [[0.0; 4]; 16],
            written: 0,
            address: [0; 3],
            cc: [false; 2],
            bools: 0,
            ints: [[0; 4]; 4],
        }
    }
}

impl State {
    /// Input register v`n`.
    pub fn input_mut(&mut self, n: usize) -> &mut [f32; 4] {
        &mut self.regs[n]
    }

    /// Float uniform c`n` (n < 96).
    pub fn uniform_mut(&mut self, n: usize) -> &mut [f32; 4] {
        &mut self.regs[0x20 + n]
    }
}

/// PICA multiply: a·b, except 0·∞ = +0 when neither operand is NaN.
pub fn pica_mul(a: f32, b: f32) -> f32 {
    let product = a * b;
    if product.is_nan() && !a.is_nan() && !b.is_nan() {
        0.0
    } else {
        product
    }
}

/// Dot product of the first `n` components: ((0 + a0·b0) + a1·b1) + … with [`pica_mul`].
pub fn pica_dot(a: &[f32; 4], b: &[f32; 4], n: usize) -> f32 {
    (0..n).fold(0.0, |sum, i| sum + pica_mul(a[i], b[i]))
}

/// PICA MAX: `a > b ? a : b` (so max(0, NaN) = NaN and max(NaN, 0) = 0).
pub fn pica_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

/// PICA MIN: `a < b ? a : b`.
pub fn pica_min(a: f32, b: f32) -> f32 {
    if a < b {
        a
    } else {
        b
    }
}

/// A relative offset as the hardware uses it: values outside −128..=127 count as 0.
pub fn relative_offset(register: i32) -> i32 {
    if (-128..=127).contains(&register) {
        register
    } else {
        0
    }
}

/// CMP comparison `code` (0 ==, 1 !=, 2 <, 3 <=, 4 >, 5 >=; 6 and 7 read as true).
pub fn compare(code: u8, a: f32, b: f32) -> bool {
    match code {
        0 => a == b,
        1 => a != b,
        2 => a < b,
        3 => a <= b,
        4 => a > b,
        5 => a >= b,
        _ => true,
    }
}

const ONES: [f32; 4] = [1.0; 4];

/// A fixed-depth stack that, like the hardware's, forgets its oldest entry when full.
#[derive(Clone, Copy)]
struct Ring<T: Copy + Default, const N: usize> {
    items: [T; N],
    len: usize,
}

impl<T: Copy + Default, const N: usize> Ring<T, N> {
    fn new() -> Self {
        Ring {
            items: [T::default(); N],
            len: 0,
        }
    }
    fn push(&mut self, item: T) {
        if self.len == N {
            self.items.copy_within(1.., 0);
            self.len -= 1;
        }
        self.items[self.len] = item;
        self.len += 1;
    }
    fn top(&self) -> Option<&T> {
        self.len.checked_sub(1).map(|i| &self.items[i])
    }
    fn top_mut(&mut self) -> Option<&mut T> {
        self.len.checked_sub(1).map(|i| &mut self.items[i])
    }
    fn pop(&mut self) {
        self.len = self.len.saturating_sub(1);
    }
}

#[derive(Clone, Copy, Default)]
struct IfScope {
    else_at: u32,
    end_at: u32,
}

#[derive(Clone, Copy, Default)]
struct CallScope {
    end_at: u32,
    return_to: u32,
}

#[derive(Clone, Copy, Default)]
struct LoopScope {
    entry: u32,
    end_at: u32,
    count: u8,
    increment: u8,
    previous_al: u8,
}

fn condition(state: &State, refx: bool, refy: bool, condop: u8) -> bool {
    let x = refx == state.cc[0];
    let y = refy == state.cc[1];
    match condop {
        0 => x || y,
        1 => x && y,
        2 => x,
        _ => y,
    }
}

impl Code {
    fn fetch(&self, state: &State, s: &PicaSource) -> [f32; 4] {
        let base = if s.idx != 0 {
            let offset = relative_offset(state.address[s.idx as usize - 1]);
            let index = ((s.reg as i32 - 0x20) + offset) & 0x7F;
            if index >= FLOAT_UNIFORMS as i32 {
                &ONES
            } else {
                &state.regs[0x20 + index as usize]
            }
        } else {
            &state.regs[s.reg as usize]
        };
        let mut value = s.swizzle.map(|c| base[c as usize]);
        if s.negate {
            value = value.map(|v| -v);
        }
        value
    }

    fn write(state: &mut State, dst: u8, mask: u8, value: [f32; 4]) {
        let target = if dst < 0x10 {
            state.written |= 1 << dst;
            &mut state.outputs[dst as usize]
        } else {
            &mut state.regs[dst as usize]
        };
        for (i, slot) in target.iter_mut().enumerate() {
            if mask >> (3 - i) & 1 == 1 {
                *slot = value[i];
            }
        }
    }

    fn arith(
        &self,
        state: &mut State,
        op: PicaOp,
        dst: u8,
        mask: u8,
        s1: &PicaSource,
        s2: &PicaSource,
    ) {
        let a = self.fetch(state, s1);
        let b = self.fetch(state, s2);
        let each = |f: &dyn Fn(f32, f32) -> f32| std::array::from_fn(|i| f(a[i], b[i]));
        let all = |v: f32| [v; 4];
        let result = match op {
            PicaOp::Add => each(&|x, y| x + y),
            PicaOp::Mul => each(&pica_mul),
            PicaOp::Dp3 => all(pica_dot(&a, &b, 3)),
            PicaOp::Dp4 => all(pica_dot(&a, &b, 4)),
            PicaOp::Dph | PicaOp::Dphi => all(pica_dot(&[a[0], a[1], a[2], 1.0], &b, 4)),
            PicaOp::Dst | PicaOp::Dsti => [1.0, pica_mul(a[1], b[1]), a[2], b[3]],
            PicaOp::Sge | PicaOp::Sgei => each(&|x, y| if x >= y { 1.0 } else { 0.0 }),
            PicaOp::Slt | PicaOp::Slti => each(&|x, y| if x < y { 1.0 } else { 0.0 }),
            PicaOp::Max => each(&pica_max),
            PicaOp::Min => each(&pica_min),
            PicaOp::Flr => a.map(f32::floor),
            PicaOp::Mov => a,
            PicaOp::Ex2 => all(a[0].exp2()),
            PicaOp::Lg2 => all(a[0].log2()),
            PicaOp::Rcp => all(1.0 / a[0]),
            PicaOp::Rsq => all(1.0 / a[0].sqrt()),
            PicaOp::Litp => {
                state.cc = [a[0] >= 0.0, a[3] >= 0.0];
                [
                    pica_max(a[0], 0.0),
                    a[1].clamp(-127.9961, 127.9961),
                    0.0,
                    pica_max(a[3], 0.0),
                ]
            }
            PicaOp::Mova => {
                for (i, (register, value)) in state.address.iter_mut().zip(a).take(2).enumerate() {
                    if mask >> (3 - i) & 1 == 1 {
                        // Truncation toward zero (the "Uniform Read" vectors).
                        *register = value as i32;
                    }
                }
                return;
            }
            _ => return,
        };
        Self::write(state, dst, mask, result);
    }

    /// Runs from the entry point to END within `budget` instructions; returns how many ran.
    pub fn run(&self, state: &mut State, budget: u64) -> Result<u64, Fault> {
        let mut scopes = Scopes::new();
        let mut pc = self.entry;
        let mut executed = 0u64;
        let end = PicaDecoded::Control(PicaWord::Zero { op: PicaOp::End });
        loop {
            if executed >= budget {
                return Err(Fault::Watchdog {
                    address: pc as u16,
                    budget,
                });
            }
            executed += 1;
            let decoded = if pc >= CODE_WORDS - 1 {
                &end
            } else {
                self.steps.get(pc as usize).unwrap_or(&self.filler)
            };
            let Some(step) = self.execute(state, decoded, pc, &mut scopes)? else {
                return Ok(executed);
            };
            pc = scopes.close(state, pc, step);
        }
    }

    /// Runs the instruction at `pc`: where control goes next, `None` at END.
    fn execute(
        &self,
        state: &mut State,
        decoded: &PicaDecoded,
        pc: u32,
        scopes: &mut Scopes,
    ) -> Result<Option<Next>, Fault> {
        let step = Next::to(pc + 1);
        match decoded {
            PicaDecoded::Arith {
                op,
                dst,
                mask,
                s1,
                s2,
            } => self.arith(state, *op, *dst, *mask, s1, s2),
            PicaDecoded::Cmp { s1, s2, cmp } => {
                let a = self.fetch(state, s1);
                let b = self.fetch(state, s2);
                for i in 0..2 {
                    state.cc[i] = compare(cmp[i], a[i], b[i]);
                }
            }
            PicaDecoded::Mad { dst, mask, s } => {
                let [a, b, c] = [0, 1, 2].map(|n| self.fetch(state, &s[n]));
                let result = std::array::from_fn(|i| pica_mul(a[i], b[i]) + c[i]);
                Self::write(state, *dst, *mask, result);
            }
            PicaDecoded::Unknown(_) => {
                return Err(Fault::Stage {
                    isa: ISA,
                    pc,
                    reason: "the word's opcode is no PICA200 instruction",
                })
            }
            PicaDecoded::Control(word) => return control(state, word, pc, scopes),
        }
        Ok(Some(step))
    }
}

/// Where control goes after one instruction: `next`, unless a scope ends; `is_break`
/// leaves the innermost loop.
#[derive(Clone, Copy)]
struct Next {
    next: u32,
    is_break: bool,
}

impl Next {
    fn to(next: u32) -> Next {
        Next {
            next,
            is_break: false,
        }
    }
}

/// The flow-control stacks of one run.
struct Scopes {
    ifs: Ring<IfScope, 8>,
    calls: Ring<CallScope, 4>,
    loops: Ring<LoopScope, 4>,
}

impl Scopes {
    fn new() -> Scopes {
        Scopes {
            ifs: Ring::new(),
            calls: Ring::new(),
            loops: Ring::new(),
        }
    }

    /// Enters a procedure `dst..dst + num` from `pc`.
    fn call(&mut self, pc: u32, dst: u32, num: u32) -> Next {
        self.calls.push(CallScope {
            end_at: dst + num,
            return_to: pc + 1,
        });
        Next::to(dst)
    }

    /// An IF whose condition is `taken`: into the IF branch (up to `dst`, then the else
    /// branch of `num` words is skipped), or straight to the else branch at `dst`.
    fn branch(&mut self, pc: u32, taken: bool, dst: u32, num: u32) -> Next {
        if !taken {
            return Next::to(dst);
        }
        self.ifs.push(IfScope {
            else_at: dst,
            end_at: dst + num,
        });
        Next::to(pc + 1)
    }

    /// The pc after the instruction at `old` went to `step`. Scope ends are checked
    /// against the instruction's own successor so that a jump at the end of a scope is
    /// never taken: CALL (up to four at once; the fourth does not move the PC), then IF,
    /// then LOOP.
    fn close(&mut self, state: &mut State, old: u32, step: Next) -> u32 {
        let mut pc = step.next;
        let mut successor = old + 1;
        for i in 0..4 {
            match self.calls.top() {
                Some(scope) if scope.end_at == successor => {
                    if i < 3 {
                        pc = scope.return_to;
                        successor = pc;
                    }
                    self.calls.pop();
                }
                _ => break,
            }
        }
        if let Some(scope) = self.ifs.top() {
            if scope.else_at == old + 1 {
                pc = scope.end_at;
                self.ifs.pop();
            }
        }
        let depth = self.loops.len;
        if let Some(scope) = self.loops.top_mut() {
            if scope.end_at == old + 1 || step.is_break {
                state.address[2] = state.address[2].wrapping_add(scope.increment as i32);
                let again = scope.count != 0;
                scope.count = scope.count.wrapping_sub(1);
                if !step.is_break && again {
                    pc = scope.entry;
                } else {
                    pc = scope.end_at;
                    if depth > 1 {
                        state.address[2] = scope.previous_al as i32;
                    }
                    self.loops.pop();
                }
            }
        }
        pc
    }
}

/// A flow-control instruction at `pc`; `None` at END.
fn control(
    state: &mut State,
    word: &PicaWord,
    pc: u32,
    scopes: &mut Scopes,
) -> Result<Option<Next>, Fault> {
    let next = Next::to(pc + 1);
    Ok(Some(match *word {
        PicaWord::Zero { op: PicaOp::End } => return Ok(None),
        PicaWord::Zero { op: PicaOp::Break } => Next {
            is_break: true,
            ..next
        },
        PicaWord::Zero { op: PicaOp::Emit } | PicaWord::SetEmit { .. } => {
            return Err(Fault::Stage {
                isa: ISA,
                pc,
                reason:
                    "EMIT and SETEMIT belong to geometry shaders; a pixel has no primitive to emit",
            })
        }
        PicaWord::Flow {
            op,
            refx,
            refy,
            condop,
            dst,
            num,
        } => {
            let taken = op == PicaOp::Call || condition(state, refx, refy, condop);
            let (dst, num) = (dst as u32, num as u32);
            match op {
                PicaOp::Breakc => Next {
                    is_break: taken,
                    ..next
                },
                PicaOp::Jmpc if taken => Next::to(dst),
                PicaOp::Call | PicaOp::Callc if taken => scopes.call(pc, dst, num),
                PicaOp::Ifc => scopes.branch(pc, taken, dst, num),
                _ => next,
            }
        }
        PicaWord::Uniform { op, id, dst, num } => {
            let (dst, num) = (dst as u32, num as u32);
            let flag = state.bools >> id & 1 == 1;
            match op {
                PicaOp::Jmpu if flag == (num & 1 == 0) => Next::to(dst),
                PicaOp::Callu if flag => scopes.call(pc, dst, num),
                PicaOp::Ifu => scopes.branch(pc, flag, dst, num),
                PicaOp::Loop => {
                    let [count, first, increment, _] = state.ints[id as usize & 3];
                    // The enclosing loop's aL is saved before this loop sets its own
                    // (Azahar's JIT; its interpreter saves it too late).
                    scopes.loops.push(LoopScope {
                        entry: pc + 1,
                        end_at: dst + 1,
                        count,
                        increment,
                        previous_al: state.address[2] as u8,
                    });
                    state.address[2] = first as i32;
                    next
                }
                _ => next,
            }
        }
        _ => next,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn products_with_zero_and_infinity_are_zero() {
        assert_eq!(pica_mul(0.0, f32::INFINITY).to_bits(), 0);
        assert_eq!(pica_mul(f32::NEG_INFINITY, -0.0).to_bits(), 0);
        assert!(pica_mul(f32::NAN, 0.0).is_nan());
        assert_eq!(pica_mul(-2.0, 3.0), -6.0);
        assert_eq!(pica_mul(f32::MAX, 2.0), f32::INFINITY);
    }

    #[test]
    fn dot_products_start_from_plus_zero_and_drop_zero_times_infinity() {
        // (+0 + −0) + … = +0; an ∞·0 lane adds 0; DP3 ignores w.
        assert_eq!(pica_dot(&[-0.0; 4], &[1.0; 4], 4).to_bits(), 0);
        let a = [f32::INFINITY, 2.0, 3.0, f32::NAN];
        assert_eq!(pica_dot(&a, &[0.0, 4.0, 5.0, 1.0], 3), 23.0);
        assert!(pica_dot(&a, &[0.0, 4.0, 5.0, 1.0], 4).is_nan());
        assert_eq!(pica_dot(&[1.0; 4], &[f32::MAX; 4], 4), f32::INFINITY);
    }

    #[test]
    fn max_and_min_follow_the_nan_order() {
        assert!(pica_max(0.0, f32::NAN).is_nan());
        assert_eq!(pica_max(f32::NAN, 0.0), 0.0);
        assert!(pica_min(0.0, f32::NAN).is_nan());
        assert_eq!(pica_min(f32::NAN, 0.0), 0.0);
        assert_eq!(pica_max(0.0, f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn offsets_outside_a_signed_byte_count_as_zero() {
        assert_eq!(relative_offset(127), 127);
        assert_eq!(relative_offset(-128), -128);
        assert_eq!(relative_offset(128), 0);
        assert_eq!(relative_offset(-129), 0);
        assert_eq!(relative_offset(i32::MIN), 0);
    }

    #[test]
    fn unknown_comparisons_are_true() {
        assert!(compare(6, 1.0, 2.0) && compare(7, f32::NAN, 0.0));
        assert!(!compare(0, f32::NAN, f32::NAN) && compare(1, f32::NAN, f32::NAN));
    }
}
