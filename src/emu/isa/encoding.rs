//! The 64-bit instruction word, [`Word`] (spec isa_and_formats §1.1); its typed reading is
//! [`Instr`](super::Instr).
//!
//! ```text
//!  63         48 47         32 31         16 15          0
//! +-------------+-------------+-------------+-------------+
//! |   OPCODE    |     DST     |    SRC1     |    SRC2     |  type I
//! +-------------+-------------+-------------+-------------+
//! |   OPCODE    |     DST     |           IMM32           |  type II (opcode bit 6 set)
//! +-------------+-------------+---------------------------+
//! ```
//!
//! DST is also a jump's or CALL's target; type II's A input is (IMM32, 0, 0) and its B
//! input the register DST names.

use super::opcodes::Opcode;

/// One raw instruction word.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Word(pub u64);

impl Word {
    /// Encodes a type I instruction.
    pub fn type1(opcode: Opcode, dst: u16, src1: u16, src2: u16) -> Word {
        Word((opcode.code() as u64) << 48 | (dst as u64) << 32 | (src1 as u64) << 16 | src2 as u64)
    }

    /// Encodes a type II instruction (32-bit immediate in bits 31..0).
    pub fn type2(opcode: Opcode, dst: u16, imm: u32) -> Word {
        Word((opcode.code() as u64) << 48 | (dst as u64) << 32 | imm as u64)
    }

    /// Bits 63..48, as the hardware matches them (all 16 bits).
    pub fn opcode_field(self) -> u16 {
        (self.0 >> 48) as u16
    }

    /// The opcode, or `None` for a value the hardware leaves undefined (the core hangs).
    pub fn opcode(self) -> Option<Opcode> {
        Opcode::from_code(self.opcode_field())
    }

    /// Bits 47..32: destination register, or jump target.
    pub fn dst(self) -> u16 {
        (self.0 >> 32) as u16
    }

    /// Bits 31..16: first source register (type I).
    pub fn src1(self) -> u16 {
        (self.0 >> 16) as u16
    }

    /// Bits 15..0: second source register (type I).
    pub fn src2(self) -> u16 {
        self.0 as u16
    }

    /// Bits 31..0: the immediate (type II).
    pub fn imm(self) -> u32 {
        self.0 as u32
    }

    /// Bit 54 (opcode bit 6) alone decides type II, as in the decoder.
    pub fn is_type2(self) -> bool {
        self.0 >> 54 & 1 == 1
    }

    /// A routine's return value: bit 0 of its RETURN word.
    pub fn return_value(self) -> bool {
        self.0 & 1 == 1
    }

    /// The two 32-bit words the assembler writes and the host sends, high word first.
    pub fn words(self) -> (u32, u32) {
        ((self.0 >> 32) as u32, self.0 as u32)
    }

    pub fn from_words(high: u32, low: u32) -> Word {
        Word((high as u64) << 32 | low as u64)
    }
}

/// What the ROM returns for an address it does not define: opcode 0x00FF, which hangs.
pub const UNDEFINED_ROM_WORD: Word = Word(0x00FF_FFFF_FFFF_FFFF);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_a_type1_word() {
        // OMWRITE OREG_PIXEL_COLOR CREG_CURRENT_OUTPUT_PIXEL CREG_TEXTURE_COLOR
        let word = Word(0x002F_0080_0078_006E);
        assert_eq!(word.opcode(), Some(Opcode::Omwrite));
        assert_eq!((word.dst(), word.src1(), word.src2()), (0x80, 0x78, 0x6E));
        assert!(!word.is_type2());
        assert_eq!(Word::type1(Opcode::Omwrite, 0x80, 0x78, 0x6E), word);
    }

    #[test]
    fn fields_of_a_type2_word() {
        let word = Word::type2(Opcode::Setx, 0x5F, 0x01F4_0000);
        assert_eq!(word.0, 0x0041_005F_01F4_0000);
        assert!(word.is_type2());
        assert_eq!(word.imm(), 0x01F4_0000);
        assert_eq!(word.words(), (0x0041_005F, 0x01F4_0000));
        assert_eq!(Word::from_words(0x0041_005F, 0x01F4_0000), word);
    }

    #[test]
    fn undefined_word_has_no_opcode() {
        assert_eq!(UNDEFINED_ROM_WORD.opcode(), None);
        assert_eq!(UNDEFINED_ROM_WORD.opcode_field(), 0x00FF);
    }
}
