//! The opcode table: one row per THEIA opcode, and every fact about an opcode in its row:
//! code, mnemonic, how its operands are written, what the RTL does with it, its latency,
//! which ALU inputs it uses, what becomes of its result, and the operation the execution
//! unit performs (which also says how it changes control flow). The encoder, decoder,
//! assembler, disassembler, the pre-decoded program and the trace all read this table, so
//! adding an opcode is a row here (and, for a new operation, its arm in `core::interp`).

/// How an instruction's fields are written in assembly (and which fields mean what).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `NOP` / `NOP RT_FALSE`: operands ignored by the hardware.
    Nop,
    /// `OP D S1 S2`
    DstSrc1Src2,
    /// `OP D S1` (a third operand is ignored by the hardware and encoded as written).
    DstSrc1,
    /// `OP D` (further operands ignored by the hardware).
    Dst,
    /// `Jcc T S1 S2`: target address in the DST field.
    Branch,
    /// `JMP T` / `CALL T`: target address in the DST field.
    Target,
    /// `SETX D IMM`, `RET D IMM`: 32-bit immediate in bits 31..0.
    DstImm,
    /// `SWIZZLE3D D SWIZZLE_xxx`: swizzle code in bits 31..0.
    DstSwizzle,
    /// `RETURN RT_TRUE|RT_FALSE`: routine return value in bit 0.
    Return,
}

impl Shape {
    /// Whether words of this shape are type II (a 32-bit immediate in bits 31..0).
    pub fn is_type2(self) -> bool {
        matches!(
            self,
            Shape::Target | Shape::DstImm | Shape::DstSwizzle | Shape::Return
        )
    }
}

/// What the original hardware does with an opcode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hardware {
    /// Implemented by the RTL; the emulator is bit-exact to it.
    Implemented,
    /// Listed in the manual but never finished: the real core hangs. The emulator runs the
    /// manual's semantics and the assembler warns.
    Unfinished,
    /// Exists only in DEBUG builds of the RTL (a one-cycle no-op there).
    DebugOnly,
}

/// What ALU input A carries for an opcode that uses it (spec isa_and_formats §1.2: the
/// decoder routes SRC1 for type I, `(IMM, 0, 0)` for type II).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputA {
    Unused,
    /// The register at SRC1.
    Src1,
    /// `(IMM, 0, 0)`.
    Imm,
}

/// What ALU input B carries for an opcode that uses it (type I: SRC2, type II: DST).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputB {
    Unused,
    /// The register at SRC2.
    Src2,
    /// The destination's current value (SETX, SWIZZLE3D, RET).
    Dst,
}

/// What becomes of an opcode's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writes {
    /// No result: NOP, jumps, CALL.
    Nothing,
    /// Written to DST, unless DST is in the read-only bank 0 (see
    /// [`core_writable`](super::registers::core_writable)).
    Dst,
    /// Only the forwarding path sees it, never the register file (RET).
    Forwarding,
}

/// How an instruction changes control flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Goes on at the next address.
    Next,
    /// A conditional jump to the target in DST: next address or the target.
    Branch,
    /// JMP: to the target in DST.
    Jump,
    /// CALL: to the target in DST, remembering the next address (one level, no stack).
    Call,
    /// RET: back to the address the last CALL remembered.
    Ret,
    /// RETURN: the routine ends.
    Return,
    /// The core stalls forever (an opcode the hardware does not define).
    Hang,
}

impl Flow {
    /// Whether control may go on at the next address.
    pub fn falls_through(self) -> bool {
        matches!(self, Flow::Next | Flow::Branch)
    }

    /// Whether the DST field holds a jump target.
    pub fn has_target(self) -> bool {
        matches!(self, Flow::Branch | Flow::Jump | Flow::Call)
    }
}

/// What the execution unit does for an opcode: the table's `operation` column, and the
/// pre-decoded program's dispatch (`core::op::SlotOp`). Lane-specific operations get one
/// variant per lane: a lane chosen at run time would force the interpreter's operand
/// triples out of registers into memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Operation {
    /// NOP, DEBUG_PRINT.
    Nop,
    Add,
    Sub,
    Div,
    Mul,
    Imul,
    Mag,
    Copy,
    Zero,
    Inc,
    Dec,
    IncX,
    IncY,
    IncZ,
    Cross,
    Dot,
    Mulp,
    Mod,
    Frac,
    Intp,
    Neg,
    Unscale,
    Rescale,
    /// XCHANGEX/Y/Z: that lane from B, the others from A.
    ExchangeX,
    ExchangeY,
    ExchangeZ,
    Omwrite,
    Tmread,
    /// LEA: the pre-decoded op's `imm` holds the instruction's address plus one.
    Lea,
    SetX,
    SetY,
    SetZ,
    Swizzle,
    /// JMP: the pre-decoded op's `imm` holds the target slot.
    Jmp,
    /// CALL: the pre-decoded op's `imm` holds the target slot.
    Call,
    Ret,
    Return,
    /// Conditional jumps on one lane (opcode bits 2..0 give the relation); the
    /// pre-decoded op's `mask` is the truth table over (greater, equal), `imm` the target
    /// slot.
    BranchX,
    BranchY,
    BranchZ,
    /// No opcode's: what an undefined opcode field decodes to (the pre-decoded op's `imm`
    /// holds the address).
    Hang,
}

impl Operation {
    /// The component a lane-specific operation increments (INCX), takes from B (XCHANGEX),
    /// sets (SETX) or compares (the X branches): 0 for x, 1 for y, 2 for z; 0 for the
    /// others.
    pub const fn component(self) -> usize {
        use Operation::*;
        match self {
            IncY | ExchangeY | SetY | BranchY => 1,
            IncZ | ExchangeZ | SetZ | BranchZ => 2,
            _ => 0,
        }
    }

    /// How this operation changes control flow.
    pub const fn flow(self) -> Flow {
        match self {
            Operation::BranchX | Operation::BranchY | Operation::BranchZ => Flow::Branch,
            Operation::Jmp => Flow::Jump,
            Operation::Call => Flow::Call,
            Operation::Ret => Flow::Ret,
            Operation::Return => Flow::Return,
            Operation::Hang => Flow::Hang,
            _ => Flow::Next,
        }
    }
}

macro_rules! opcodes {
    ($( $variant:ident = $code:literal, $mnemonic:literal, $shape:ident, $hw:ident, $latency:literal,
        $a:ident $b:ident $writes:ident $operation:ident, $summary:literal; )*) => {
        /// A THEIA opcode (the 16-bit field in bits 63..48 of an instruction word).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Opcode { $( $variant = $code ),* }

        /// The opcode table, in numeric order.
        pub const OPCODES: &[OpcodeInfo] = &[
            $( OpcodeInfo {
                opcode: Opcode::$variant,
                mnemonic: $mnemonic,
                shape: Shape::$shape,
                hardware: Hardware::$hw,
                latency: $latency,
                a: InputA::$a,
                b: InputB::$b,
                writes: Writes::$writes,
                operation: Operation::$operation,
                summary: $summary,
            } ),*
        ];
    };
}

/// One row of the opcode table.
#[derive(Clone, Copy, Debug)]
pub struct OpcodeInfo {
    pub opcode: Opcode,
    pub mnemonic: &'static str,
    /// How the operands are written (assembler) and shown (disassembler).
    pub shape: Shape,
    pub hardware: Hardware,
    /// ALU latency in clock cycles (spec alu_semantics §7); the issue rate is latency + 1.
    pub latency: u32,
    /// What ALU inputs A and B carry, if the opcode uses them.
    pub a: InputA,
    pub b: InputB,
    pub writes: Writes,
    pub operation: Operation,
    pub summary: &'static str,
}

impl OpcodeInfo {
    /// How the opcode changes control flow.
    pub fn flow(&self) -> Flow {
        self.operation.flow()
    }
}

// Columns: variant = code, mnemonic, shape, hardware, latency,
//          input A, input B, what the result does, operation, summary.
opcodes! {
    Nop       = 0x00, "NOP",         Nop,         Implemented, 1,  Unused Unused Nothing    Nop,       "no operation, no write";
    Add       = 0x01, "ADD",         DstSrc1Src2, Implemented, 1,  Src1   Src2   Dst        Add,       "D = S1 + S2 (sign-carrying 31-bit wrap)";
    Sub       = 0x02, "SUB",         DstSrc1Src2, Implemented, 1,  Src1   Src2   Dst        Sub,       "D = S1 - S2 (sign-carrying 31-bit wrap)";
    Div       = 0x03, "DIV",         DstSrc1Src2, Implemented, 71, Src1   Src2   Dst        Div,       "D = S1 / S2 per component, Q15.17";
    Mul       = 0x04, "MUL",         DstSrc1Src2, Implemented, 2,  Src1   Src2   Dst        Mul,       "D = S1 * S2 per component, Q15.17";
    Mag       = 0x05, "MAG",         DstSrc1,     Implemented, 40, Src1   Unused Dst        Mag,       "D.xyz = |S1|";
    Copy      = 0x07, "COPY",        DstSrc1,     Implemented, 1,  Src1   Unused Dst        Copy,      "D = S1";
    Jgx       = 0x08, "JGX",         Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchX,   "jump if S1.x > S2.x";
    Jlx       = 0x09, "JLX",         Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchX,   "jump if S1.x <= S2.x (the RTL tests <=)";
    Jeqx      = 0x0A, "JEQX",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchX,   "jump if |S1.x| == |S2.x|";
    Jnex      = 0x0B, "JNEX",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchX,   "jump if |S1.x| != |S2.x|";
    Jgex      = 0x0C, "JGEX",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchX,   "jump if S1.x > S2.x or |S1.x| == |S2.x|";
    Jlex      = 0x0D, "JLEX",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchX,   "jump if S1.x <= S2.x or |S1.x| == |S2.x|";
    Inc       = 0x0E, "INC",         DstSrc1,     Implemented, 1,  Src1   Unused Dst        Inc,       "D = S1 + (1.0, 1.0, 1.0)";
    Zero      = 0x0F, "ZERO",        Dst,         Implemented, 1,  Unused Unused Dst        Zero,      "D = (0, 0, 0)";
    Jgy       = 0x10, "JGY",         Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchY,   "jump if S1.y > S2.y";
    Jly       = 0x11, "JLY",         Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchY,   "jump if S1.y <= S2.y (the RTL tests <=)";
    Jeqy      = 0x12, "JEQY",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchY,   "jump if |S1.y| == |S2.y|";
    Jney      = 0x13, "JNEY",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchY,   "jump if |S1.y| != |S2.y|";
    Jgey      = 0x14, "JGEY",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchY,   "jump if S1.y > S2.y or |S1.y| == |S2.y|";
    Jley      = 0x15, "JLEY",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchY,   "jump if S1.y <= S2.y or |S1.y| == |S2.y|";
    Cross     = 0x16, "CROSS",       DstSrc1Src2, Implemented, 3,  Src1   Src2   Dst        Cross,     "D = S1 x S2";
    Dot       = 0x17, "DOT",         DstSrc1Src2, Implemented, 4,  Src1   Src2   Dst        Dot,       "D.xyz = S1 . S2";
    Jgz       = 0x18, "JGZ",         Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchZ,   "jump if S1.z > S2.z";
    Jlz       = 0x19, "JLZ",         Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchZ,   "jump if S1.z <= S2.z (the RTL tests <=)";
    Jeqz      = 0x1A, "JEQZ",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchZ,   "jump if |S1.z| == |S2.z|";
    Jnez      = 0x1B, "JNEZ",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchZ,   "jump if |S1.z| != |S2.z|";
    Jgez      = 0x1C, "JGEZ",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchZ,   "jump if S1.z > S2.z or |S1.z| == |S2.z|";
    Jlez      = 0x1D, "JLEZ",        Branch,      Implemented, 1,  Src1   Src2   Nothing    BranchZ,   "jump if S1.z <= S2.z or |S1.z| == |S2.z|";
    DebugPrint= 0x1E, "DEBUG_PRINT", Nop,         DebugOnly,   1,  Unused Unused Nothing    Nop,       "no-op (exists only in DEBUG builds of the RTL)";
    Mulp      = 0x1F, "MULP",        DstSrc1,     Implemented, 2,  Src1   Unused Dst        Mulp,      "D = (S1.x, S1.y, S1.x * S1.y)";
    Mod       = 0x20, "MOD",         DstSrc1Src2, Implemented, 1,  Src1   Src2   Dst        Mod,       "D = S1 & (S2 - 1.0): modulo a power of two";
    Frac      = 0x21, "FRAC",        DstSrc1,     Implemented, 1,  Src1   Unused Dst        Frac,      "D = S1 & 0x1FFFF (fractional bits)";
    Intp      = 0x22, "INTP",        DstSrc1,     Unfinished,  1,  Src1   Unused Dst        Intp,      "D = S1 & 0xFFFE0000 (integer part; unfinished in the RTL)";
    Neg       = 0x23, "NEG",         DstSrc1,     Implemented, 1,  Src1   Unused Dst        Neg,       "D = -S1";
    Dec       = 0x24, "DEC",         DstSrc1,     Implemented, 1,  Src1   Unused Dst        Dec,       "D = S1 - (1.0, 1.0, 1.0)";
    Xchangex  = 0x25, "XCHANGEX",    DstSrc1Src2, Implemented, 1,  Src1   Src2   Dst        ExchangeX, "D = (S2.x, S1.y, S1.z)";
    Xchangey  = 0x26, "XCHANGEY",    DstSrc1Src2, Unfinished,  1,  Src1   Src2   Dst        ExchangeY, "D = (S1.x, S2.y, S1.z) (unfinished in the RTL)";
    Xchangez  = 0x27, "XCHANGEZ",    DstSrc1Src2, Unfinished,  1,  Src1   Src2   Dst        ExchangeZ, "D = (S1.x, S1.y, S2.z) (unfinished in the RTL)";
    Imul      = 0x28, "IMUL",        DstSrc1Src2, Implemented, 2,  Src1   Src2   Dst        Imul,      "D = S1 * S2 as 32-bit integers";
    Unscale   = 0x29, "UNSCALE",     DstSrc1,     Implemented, 1,  Src1   Unused Dst        Unscale,   "D = S1 >> 17 (logical): Q15.17 to integer";
    Rescale   = 0x2A, "RESCALE",     DstSrc1,     Unfinished,  1,  Src1   Unused Dst        Rescale,   "D = S1 << 17: integer to Q15.17 (unfinished in the RTL)";
    Incx      = 0x2B, "INCX",        DstSrc1,     Implemented, 1,  Src1   Unused Dst        IncX,      "D = (S1.x + 1.0, S1.y, S1.z)";
    Incy      = 0x2C, "INCY",        DstSrc1,     Implemented, 1,  Src1   Unused Dst        IncY,      "D = (S1.x, S1.y + 1.0, S1.z)";
    Incz      = 0x2D, "INCZ",        DstSrc1,     Implemented, 1,  Src1   Unused Dst        IncZ,      "D = (S1.x, S1.y, S1.z + 1.0)";
    Omwrite   = 0x2F, "OMWRITE",     DstSrc1Src2, Implemented, 3,  Src1   Src2   Dst        Omwrite,   "OMEM[S1.x,y,z] = S2.x,y,z (output memory write)";
    Tmread    = 0x30, "TMREAD",      DstSrc1,     Implemented, 3,  Src1   Unused Dst        Tmread,    "D = (T[S1.x], T[S1.y], T[S1.z]) (texture memory read)";
    Lea       = 0x31, "LEA",         Dst,         Implemented, 1,  Unused Unused Dst        Lea,       "D.xyz = address of this instruction + 1 (the fetch pointer, as the RTL gives it)";
    Return    = 0x40, "RETURN",      Return,      Implemented, 1,  Imm    Unused Dst        Return,    "end the routine; return value = bit 0";
    Setx      = 0x41, "SETX",        DstImm,      Implemented, 1,  Imm    Dst    Dst        SetX,      "D.x = IMM";
    Sety      = 0x42, "SETY",        DstImm,      Implemented, 1,  Imm    Dst    Dst        SetY,      "D.y = IMM";
    Setz      = 0x43, "SETZ",        DstImm,      Implemented, 1,  Imm    Dst    Dst        SetZ,      "D.z = IMM";
    Swizzle3d = 0x44, "SWIZZLE3D",   DstSwizzle,  Implemented, 1,  Imm    Dst    Dst        Swizzle,   "D = swizzle(D, IMM)";
    Jmp       = 0x58, "JMP",         Target,      Implemented, 1,  Unused Unused Nothing    Jmp,       "jump to T";
    Call      = 0x59, "CALL",        Target,      Implemented, 1,  Unused Unused Nothing    Call,      "jump to T, remember the next address (one level, no stack)";
    Ret       = 0x5A, "RET",         DstImm,      Implemented, 1,  Imm    Dst    Forwarding Ret,       "jump back after the last CALL; the next instruction sees (IMM, D.y, D.z) in D";
}

impl Opcode {
    /// The table row of this opcode.
    pub fn info(self) -> &'static OpcodeInfo {
        // Indexed, not searched: traced and timed runs look it up per instruction.
        &OPCODES[ROW_BY_CODE[self as usize] as usize]
    }

    /// Decodes the 16-bit opcode field; `None` for the values the hardware does not define
    /// (the real core hangs on them).
    pub fn from_code(code: u16) -> Option<Opcode> {
        if code > 0x7F {
            return None;
        }
        OPCODE_BY_CODE[code as usize]
    }

    /// Looks an opcode up by its (upper-case) mnemonic.
    pub fn from_mnemonic(mnemonic: &str) -> Option<Opcode> {
        OPCODES
            .iter()
            .find(|row| row.mnemonic == mnemonic)
            .map(|row| row.opcode)
    }

    pub fn code(self) -> u16 {
        self as u16
    }

    pub fn mnemonic(self) -> &'static str {
        self.info().mnemonic
    }

    /// Type II instructions (opcode bit 6 set) carry a 32-bit immediate in bits 31..0.
    pub fn is_type2(self) -> bool {
        (self as u8) & 0x40 != 0
    }

    /// Whether the result goes to the DST register (subject to the bank write rule). Jumps,
    /// CALL and RET never write; NOP and DEBUG_PRINT write nothing.
    pub fn writes_destination(self) -> bool {
        self.info().writes == Writes::Dst
    }

    /// Conditional jumps (the J?? family) select a component with bits 4..3 and a relation
    /// with bits 2..0.
    pub fn is_conditional_jump(self) -> bool {
        self.info().flow() == Flow::Branch
    }
}

/// Each opcode's row in [`OPCODES`], by its 7-bit code (0 for codes without a row).
const ROW_BY_CODE: [u8; 128] = {
    let mut table = [0; 128];
    let mut i = 0;
    while i < OPCODES.len() {
        table[OPCODES[i].opcode as usize] = i as u8;
        i += 1;
    }
    table
};

const OPCODE_BY_CODE: [Option<Opcode>; 128] = {
    let mut table = [None; 128];
    let mut i = 0;
    while i < OPCODES.len() {
        table[OPCODES[i].opcode as usize] = Some(OPCODES[i].opcode);
        i += 1;
    }
    table
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_round_trips() {
        for pair in OPCODES.windows(2) {
            assert!((pair[0].opcode as u8) < (pair[1].opcode as u8));
        }
        for row in OPCODES {
            assert_eq!(Opcode::from_code(row.opcode.code()), Some(row.opcode));
            assert_eq!(Opcode::from_mnemonic(row.mnemonic), Some(row.opcode));
            assert_eq!(row.opcode.info().mnemonic, row.mnemonic);
        }
    }

    /// The lane-specific operations' component is the last letter of their mnemonics
    /// (INCY, XCHANGEZ, SETX, JGEY, ...); SWIZZLE3D and the rest have none of their own.
    #[test]
    fn lane_specific_operations_name_their_component() {
        use Operation::*;
        let mut lane_specific = 0;
        for row in OPCODES {
            let specific = matches!(
                row.operation,
                IncX | IncY
                    | IncZ
                    | ExchangeX
                    | ExchangeY
                    | ExchangeZ
                    | SetX
                    | SetY
                    | SetZ
                    | BranchX
                    | BranchY
                    | BranchZ
            );
            if specific {
                lane_specific += 1;
                let expected = match row.mnemonic.as_bytes().last() {
                    Some(b'X') => 0,
                    Some(b'Y') => 1,
                    Some(b'Z') => 2,
                    _ => panic!("{} names no component", row.mnemonic),
                };
                assert_eq!(row.operation.component(), expected, "{}", row.mnemonic);
            } else {
                assert_eq!(row.operation.component(), 0, "{}", row.mnemonic);
            }
        }
        // INC, XCHANGE, SET: 3 each; 6 relations x 3 components of branches.
        assert_eq!(lane_specific, 9 + 18);
    }

    #[test]
    fn undefined_codes_decode_to_none() {
        for code in [0x06, 0x2E, 0x32, 0x3F, 0x45, 0x57, 0x5B, 0x7F, 0xFF, 0xFFFF] {
            assert_eq!(Opcode::from_code(code), None, "code {code:#x}");
        }
    }

    #[test]
    fn which_opcodes_write_their_destination() {
        for op in [
            Opcode::Add,
            Opcode::Omwrite,
            Opcode::Setx,
            Opcode::Return,
            Opcode::Lea,
        ] {
            assert!(op.writes_destination(), "{op:?}");
        }
        for op in [
            Opcode::Nop,
            Opcode::Jgx,
            Opcode::Jmp,
            Opcode::Call,
            Opcode::Ret,
        ] {
            assert!(!op.writes_destination(), "{op:?}");
        }
    }

    #[test]
    fn columns_agree_with_each_other() {
        for row in OPCODES {
            let name = row.mnemonic;
            // The shape says how the word is laid out; bit 6 of the code says it too.
            assert_eq!(row.shape.is_type2(), row.opcode.is_type2(), "{name}");
            // Type I routes registers to A and B, type II the immediate and DST.
            if row.opcode.is_type2() {
                assert!(matches!(row.a, InputA::Unused | InputA::Imm), "{name}");
                assert!(matches!(row.b, InputB::Unused | InputB::Dst), "{name}");
            } else {
                assert!(matches!(row.a, InputA::Unused | InputA::Src1), "{name}");
                assert!(matches!(row.b, InputB::Unused | InputB::Src2), "{name}");
            }
            // Jumps and CALL carry their target in DST, so they cannot write it.
            if row.flow().has_target() {
                assert_eq!(row.writes, Writes::Nothing, "{name}");
            }
            assert_ne!(row.operation, Operation::Hang, "{name}");
        }
        // Opcodes sharing an operation share its inputs and result.
        for x in OPCODES {
            for y in OPCODES.iter().filter(|y| y.operation == x.operation) {
                assert_eq!((x.a, x.b, x.writes), (y.a, y.b, y.writes), "{}", y.mnemonic);
            }
        }
    }

    #[test]
    fn conditional_jumps_take_their_lane_from_bits_4_3() {
        for row in OPCODES.iter().filter(|row| row.flow() == Flow::Branch) {
            let lane = [Operation::BranchX, Operation::BranchY, Operation::BranchZ]
                [(row.opcode.code() >> 3) as usize - 1];
            assert_eq!(row.operation, lane, "{}", row.mnemonic);
        }
        assert_eq!(
            OPCODES
                .iter()
                .filter(|row| row.opcode.is_conditional_jump())
                .count(),
            18
        );
    }

    #[test]
    fn type2_is_bit_6() {
        assert!(Opcode::Setx.is_type2());
        assert!(Opcode::Ret.is_type2());
        assert!(!Opcode::Lea.is_type2());
        assert_eq!(Opcode::Jmp.code(), 0x58);
        assert_eq!(Opcode::Call.code(), 0x59);
        assert_eq!(Opcode::Ret.code(), 0x5A);
    }
}
