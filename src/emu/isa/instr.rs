//! The typed instruction: a 64-bit word decoded by the opcode table. The assembler produces
//! it, [`Instr::decode`] reads it back from a word, its `Display` (in [`super::disasm`]) is
//! the disassembler's text, the pre-decoded program is built from it and the trace shows
//! it. What an instruction reads, writes and does to control flow comes from its opcode's
//! row in [`super::OPCODES`].

use super::encoding::Word;
use super::opcodes::{Flow, InputA, InputB, Opcode, OpcodeInfo, Operation, Writes};

/// One instruction. Every 64-bit word decodes to exactly one `Instr` and encodes back to
/// the same word ([`Instr::word`]), fields the opcode ignores included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Instr {
    /// Type I (opcode bit 6 clear): `OPCODE DST SRC1 SRC2`.
    Registers {
        opcode: Opcode,
        dst: u16,
        src1: u16,
        src2: u16,
    },
    /// Type II (opcode bit 6 set): `OPCODE DST IMM32`.
    Immediate { opcode: Opcode, dst: u16, imm: u32 },
    /// A word whose opcode field the hardware does not define: the core hangs on it.
    Undefined(Word),
}

impl Instr {
    /// Decodes a word, as the hardware's decoder does.
    pub fn decode(word: Word) -> Instr {
        match word.opcode() {
            None => Instr::Undefined(word),
            Some(opcode) if opcode.is_type2() => Instr::Immediate {
                opcode,
                dst: word.dst(),
                imm: word.imm(),
            },
            Some(opcode) => Instr::Registers {
                opcode,
                dst: word.dst(),
                src1: word.src1(),
                src2: word.src2(),
            },
        }
    }

    /// The instruction word.
    pub fn word(self) -> Word {
        match self {
            Instr::Registers {
                opcode,
                dst,
                src1,
                src2,
            } => Word::type1(opcode, dst, src1, src2),
            Instr::Immediate { opcode, dst, imm } => Word::type2(opcode, dst, imm),
            Instr::Undefined(word) => word,
        }
    }

    /// `None` for an undefined opcode field.
    pub fn opcode(self) -> Option<Opcode> {
        match self {
            Instr::Registers { opcode, .. } | Instr::Immediate { opcode, .. } => Some(opcode),
            Instr::Undefined(_) => None,
        }
    }

    /// The opcode's table row.
    pub fn info(self) -> Option<&'static OpcodeInfo> {
        self.opcode().map(Opcode::info)
    }

    /// What the execution unit does ([`Operation::Hang`] for an undefined opcode).
    pub fn operation(self) -> Operation {
        self.info().map_or(Operation::Hang, |row| row.operation)
    }

    pub fn flow(self) -> Flow {
        self.operation().flow()
    }

    /// The DST field (bits 47..32): destination register, or jump target.
    pub fn dst(self) -> u16 {
        self.word().dst()
    }

    /// Where a jump, conditional jump or CALL goes.
    pub fn target(self) -> Option<u16> {
        self.flow().has_target().then(|| self.dst())
    }

    /// What ALU input A carries.
    pub fn a(self) -> InputA {
        self.info().map_or(InputA::Unused, |row| row.a)
    }

    /// What ALU input B carries.
    pub fn b(self) -> InputB {
        self.info().map_or(InputB::Unused, |row| row.b)
    }

    /// What becomes of the result.
    pub fn writes(self) -> Writes {
        self.info().map_or(Writes::Nothing, |row| row.writes)
    }

    /// Whether the instruction reads a register as input A, and as input B.
    pub fn reads(self) -> (bool, bool) {
        (self.a() == InputA::Src1, self.b() != InputB::Unused)
    }

    /// The data addresses the decoder routes to inputs A and B whether the opcode uses
    /// them or not (spec isa_and_formats §1.2): bits 31..16 to A, and SRC2 (type I) or DST
    /// (type II, bit 54 alone decides) to B.
    pub fn input_addresses(self) -> (u16, u16) {
        let word = self.word();
        let b = if word.is_type2() {
            word.dst()
        } else {
            word.src2()
        };
        (word.src1(), b)
    }
}

impl From<Word> for Instr {
    fn from(word: Word) -> Instr {
        Instr::decode(word)
    }
}

impl From<Instr> for Word {
    fn from(instr: Instr) -> Word {
        instr.word()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_decode_by_type_and_round_trip() {
        let omwrite = Word(0x002F_0080_0078_006E);
        assert_eq!(
            Instr::decode(omwrite),
            Instr::Registers {
                opcode: Opcode::Omwrite,
                dst: 0x80,
                src1: 0x78,
                src2: 0x6E
            }
        );
        let setx = Word(0x0041_005F_01F4_0000);
        assert_eq!(
            Instr::decode(setx),
            Instr::Immediate {
                opcode: Opcode::Setx,
                dst: 0x5F,
                imm: 0x01F4_0000
            }
        );
        let hang = Word(0x00FF_FFFF_FFFF_FFFF);
        assert_eq!(Instr::decode(hang), Instr::Undefined(hang));
        for word in [
            omwrite,
            setx,
            hang,
            Word(0x0058_8010_0000_0007),
            Word(0x0000_0047_0000_0000),
            Word(0x0100_0000_0000_0000),
        ] {
            assert_eq!(Instr::decode(word).word(), word, "{:016X}", word.0);
        }
    }

    #[test]
    fn operands_follow_the_table() {
        let setx = Instr::decode(Word(0x0041_005F_01F4_0000));
        assert_eq!((setx.a(), setx.b()), (InputA::Imm, InputB::Dst));
        assert_eq!(setx.reads(), (false, true));
        assert_eq!(setx.input_addresses(), (0x01F4, 0x5F));
        assert_eq!(setx.target(), None);
        let branch = Instr::decode(Word(0x000A_002B_0076_0077));
        assert_eq!(branch.reads(), (true, true));
        assert_eq!(branch.input_addresses(), (0x76, 0x77));
        assert_eq!((branch.target(), branch.flow()), (Some(0x2B), Flow::Branch));
        assert_eq!(branch.writes(), Writes::Nothing);
        let ret = Instr::decode(Word(0x005A_0076_0000_0001));
        assert_eq!((ret.flow(), ret.writes()), (Flow::Ret, Writes::Forwarding));
        let call = Instr::decode(Word(0x0059_009D_0000_0000));
        assert_eq!((call.target(), call.reads()), (Some(0x9D), (false, false)));
        let hang = Instr::decode(Word(0x00FF_FFFF_FFFF_FFFF));
        assert_eq!(
            (hang.operation(), hang.flow()),
            (Operation::Hang, Flow::Hang)
        );
        assert_eq!(
            (hang.reads(), hang.writes()),
            ((false, false), Writes::Nothing)
        );
        assert_eq!(hang.input_addresses(), (0xFFFF, 0xFFFF));
    }
}
