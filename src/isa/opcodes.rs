//! The opcode table: one row per THEIA opcode. The encoder, decoder, assembler and
//! disassembler all read this table, so adding an opcode here is the whole job.

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

macro_rules! opcodes {
    ($( $variant:ident = $code:literal, $mnemonic:literal, $shape:ident, $hw:ident, $latency:expr, $summary:literal; )*) => {
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
    pub shape: Shape,
    pub hardware: Hardware,
    /// ALU latency in clock cycles (spec alu_semantics §7); the issue rate is latency + 1.
    pub latency: u32,
    pub summary: &'static str,
}

opcodes! {
    Nop       = 0x00, "NOP",         Nop,         Implemented, 1,  "no operation, no write";
    Add       = 0x01, "ADD",         DstSrc1Src2, Implemented, 1,  "D = S1 + S2 (sign-carrying 31-bit wrap)";
    Sub       = 0x02, "SUB",         DstSrc1Src2, Implemented, 1,  "D = S1 - S2 (sign-carrying 31-bit wrap)";
    Div       = 0x03, "DIV",         DstSrc1Src2, Implemented, 71, "D = S1 / S2 per component, Q15.17";
    Mul       = 0x04, "MUL",         DstSrc1Src2, Implemented, 2,  "D = S1 * S2 per component, Q15.17";
    Mag       = 0x05, "MAG",         DstSrc1,     Implemented, 40, "D.xyz = |S1|";
    Copy      = 0x07, "COPY",        DstSrc1,     Implemented, 1,  "D = S1";
    Jgx       = 0x08, "JGX",         Branch,      Implemented, 1,  "jump if S1.x > S2.x";
    Jlx       = 0x09, "JLX",         Branch,      Implemented, 1,  "jump if S1.x <= S2.x (the RTL tests <=)";
    Jeqx      = 0x0A, "JEQX",        Branch,      Implemented, 1,  "jump if |S1.x| == |S2.x|";
    Jnex      = 0x0B, "JNEX",        Branch,      Implemented, 1,  "jump if |S1.x| != |S2.x|";
    Jgex      = 0x0C, "JGEX",        Branch,      Implemented, 1,  "jump if S1.x > S2.x or |S1.x| == |S2.x|";
    Jlex      = 0x0D, "JLEX",        Branch,      Implemented, 1,  "jump if S1.x <= S2.x or |S1.x| == |S2.x|";
    Inc       = 0x0E, "INC",         DstSrc1,     Implemented, 1,  "D = S1 + (1.0, 1.0, 1.0)";
    Zero      = 0x0F, "ZERO",        Dst,         Implemented, 1,  "D = (0, 0, 0)";
    Jgy       = 0x10, "JGY",         Branch,      Implemented, 1,  "jump if S1.y > S2.y";
    Jly       = 0x11, "JLY",         Branch,      Implemented, 1,  "jump if S1.y <= S2.y (the RTL tests <=)";
    Jeqy      = 0x12, "JEQY",        Branch,      Implemented, 1,  "jump if |S1.y| == |S2.y|";
    Jney      = 0x13, "JNEY",        Branch,      Implemented, 1,  "jump if |S1.y| != |S2.y|";
    Jgey      = 0x14, "JGEY",        Branch,      Implemented, 1,  "jump if S1.y > S2.y or |S1.y| == |S2.y|";
    Jley      = 0x15, "JLEY",        Branch,      Implemented, 1,  "jump if S1.y <= S2.y or |S1.y| == |S2.y|";
    Cross     = 0x16, "CROSS",       DstSrc1Src2, Implemented, 3,  "D = S1 x S2";
    Dot       = 0x17, "DOT",         DstSrc1Src2, Implemented, 4,  "D.xyz = S1 . S2";
    Jgz       = 0x18, "JGZ",         Branch,      Implemented, 1,  "jump if S1.z > S2.z";
    Jlz       = 0x19, "JLZ",         Branch,      Implemented, 1,  "jump if S1.z <= S2.z (the RTL tests <=)";
    Jeqz      = 0x1A, "JEQZ",        Branch,      Implemented, 1,  "jump if |S1.z| == |S2.z|";
    Jnez      = 0x1B, "JNEZ",        Branch,      Implemented, 1,  "jump if |S1.z| != |S2.z|";
    Jgez      = 0x1C, "JGEZ",        Branch,      Implemented, 1,  "jump if S1.z > S2.z or |S1.z| == |S2.z|";
    Jlez      = 0x1D, "JLEZ",        Branch,      Implemented, 1,  "jump if S1.z <= S2.z or |S1.z| == |S2.z|";
    DebugPrint= 0x1E, "DEBUG_PRINT", Nop,         DebugOnly,   1,  "no-op (exists only in DEBUG builds of the RTL)";
    Mulp      = 0x1F, "MULP",        DstSrc1,     Implemented, 2,  "D = (S1.x, S1.y, S1.x * S1.y)";
    Mod       = 0x20, "MOD",         DstSrc1Src2, Implemented, 1,  "D = S1 & (S2 - 1.0): modulo a power of two";
    Frac      = 0x21, "FRAC",        DstSrc1,     Implemented, 1,  "D = S1 & 0x1FFFF (fractional bits)";
    Intp      = 0x22, "INTP",        DstSrc1,     Unfinished,  1,  "D = S1 & 0xFFFE0000 (integer part; unfinished in the RTL)";
    Neg       = 0x23, "NEG",         DstSrc1,     Implemented, 1,  "D = -S1";
    Dec       = 0x24, "DEC",         DstSrc1,     Implemented, 1,  "D = S1 - (1.0, 1.0, 1.0)";
    Xchangex  = 0x25, "XCHANGEX",    DstSrc1Src2, Implemented, 1,  "D = (S2.x, S1.y, S1.z)";
    Xchangey  = 0x26, "XCHANGEY",    DstSrc1Src2, Unfinished,  1,  "D = (S1.x, S2.y, S1.z) (unfinished in the RTL)";
    Xchangez  = 0x27, "XCHANGEZ",    DstSrc1Src2, Unfinished,  1,  "D = (S1.x, S1.y, S2.z) (unfinished in the RTL)";
    Imul      = 0x28, "IMUL",        DstSrc1Src2, Implemented, 2,  "D = S1 * S2 as 32-bit integers";
    Unscale   = 0x29, "UNSCALE",     DstSrc1,     Implemented, 1,  "D = S1 >> 17 (logical): Q15.17 to integer";
    Rescale   = 0x2A, "RESCALE",     DstSrc1,     Unfinished,  1,  "D = S1 << 17: integer to Q15.17 (unfinished in the RTL)";
    Incx      = 0x2B, "INCX",        DstSrc1,     Implemented, 1,  "D = (S1.x + 1.0, S1.y, S1.z)";
    Incy      = 0x2C, "INCY",        DstSrc1,     Implemented, 1,  "D = (S1.x, S1.y + 1.0, S1.z)";
    Incz      = 0x2D, "INCZ",        DstSrc1,     Implemented, 1,  "D = (S1.x, S1.y, S1.z + 1.0)";
    Omwrite   = 0x2F, "OMWRITE",     DstSrc1Src2, Implemented, 3,  "OMEM[S1.x,y,z] = S2.x,y,z (output memory write)";
    Tmread    = 0x30, "TMREAD",      DstSrc1,     Implemented, 3,  "D = (T[S1.x], T[S1.y], T[S1.z]) (texture memory read)";
    Lea       = 0x31, "LEA",         Dst,         Implemented, 1,  "D.xyz = address of this instruction";
    Return    = 0x40, "RETURN",      Return,      Implemented, 1,  "end the routine; return value = bit 0";
    Setx      = 0x41, "SETX",        DstImm,      Implemented, 1,  "D.x = IMM";
    Sety      = 0x42, "SETY",        DstImm,      Implemented, 1,  "D.y = IMM";
    Setz      = 0x43, "SETZ",        DstImm,      Implemented, 1,  "D.z = IMM";
    Swizzle3d = 0x44, "SWIZZLE3D",   DstSwizzle,  Implemented, 1,  "D = swizzle(D, IMM)";
    Jmp       = 0x58, "JMP",         Target,      Implemented, 1,  "jump to T";
    Call      = 0x59, "CALL",        Target,      Implemented, 1,  "jump to T, remember the next address (one level, no stack)";
    Ret       = 0x5A, "RET",         DstImm,      Implemented, 1,  "jump back after the last CALL; the next instruction sees (IMM, D.y, D.z) in D";
}

impl Opcode {
    /// The table row of this opcode.
    pub fn info(self) -> &'static OpcodeInfo {
        let index = OPCODES
            .binary_search_by_key(&(self as u8), |row| row.opcode as u8)
            .expect("every Opcode has a table row");
        &OPCODES[index]
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
    /// CALL and RET are branches, which never write; NOP and DEBUG_PRINT write nothing.
    pub fn writes_destination(self) -> bool {
        !matches!(
            self.info().shape,
            Shape::Nop | Shape::Branch | Shape::Target
        ) && self != Opcode::Ret
    }

    /// Conditional jumps (the J?? family) select a component with bits 4..3 and a relation
    /// with bits 2..0.
    pub fn is_conditional_jump(self) -> bool {
        self.info().shape == Shape::Branch
    }
}

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
    fn type2_is_bit_6() {
        assert!(Opcode::Setx.is_type2());
        assert!(Opcode::Ret.is_type2());
        assert!(!Opcode::Lea.is_type2());
        assert_eq!(Opcode::Jmp.code(), 0x58);
        assert_eq!(Opcode::Call.code(), 0x59);
        assert_eq!(Opcode::Ret.code(), 0x5A);
    }
}
