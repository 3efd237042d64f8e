//! Code memory decoded once: every 16-bit instruction address (ROM below 0x8000, IMEM above)
//! maps straight to a pre-decoded instruction, so the interpreter never parses a word twice.

use crate::isa::registers::{EntryPoint, ENTRY_TABLE_LEN, IMEM_WORDS, USER_CODE_BIT};
use crate::isa::{Instruction, Opcode, UNDEFINED_ROM_WORD};

/// An instruction ready to execute: operand addresses already routed as the decoder does
/// (type I: A = SRC1, B = SRC2; type II: A = (IMM, 0, 0), B = DST).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decoded {
    /// `None`: an opcode the hardware never finishes (the core hangs).
    pub op: Option<Opcode>,
    pub dst: u16,
    pub a_addr: u16,
    pub b_addr: u16,
    pub imm: u32,
}

impl Decoded {
    pub fn new(word: Instruction) -> Decoded {
        let type2 = word.is_type2();
        Decoded {
            op: word.opcode(),
            dst: word.dst(),
            a_addr: word.src1(),
            b_addr: if type2 { word.dst() } else { word.src2() },
            imm: word.imm(),
        }
    }
}

/// What one machine runs: the ROM plus the instruction memory (entry table and user code),
/// decoded for every address.
#[derive(Clone)]
pub struct Program {
    words: Vec<Instruction>,
    decoded: Vec<Decoded>,
    entry: [u16; ENTRY_TABLE_LEN],
    loaded_imem_words: usize,
}

/// Instruction memory words that were never loaded read as undefined (X in the RTL).
const UNLOADED_WORD: Instruction = UNDEFINED_ROM_WORD;

impl Program {
    /// Builds code memory from the ROM words (address 0..) and the IMEM words (0x8000..):
    /// IMEM words 0..11 are the entry-point table, user code starts at 0x800C.
    pub fn new(rom: &[Instruction], imem: &[Instruction]) -> Program {
        let mut words = vec![UNDEFINED_ROM_WORD; 1 << 16];
        words[..rom.len()].copy_from_slice(rom);
        let user = USER_CODE_BIT as usize;
        for slot in &mut words[user..user + IMEM_WORDS] {
            *slot = UNLOADED_WORD;
        }
        let loaded = imem.len().min(IMEM_WORDS);
        words[user..user + loaded].copy_from_slice(&imem[..loaded]);
        let decoded = words.iter().map(|&w| Decoded::new(w)).collect();
        // The control unit starts a routine at the low 16 bits of its table word.
        let entry = std::array::from_fn(|i| {
            imem.get(i)
                .map_or(EntryPoint::ALL[i].default_address(), |w| w.0 as u16)
        });
        Program {
            words,
            decoded,
            entry,
            loaded_imem_words: loaded,
        }
    }

    /// The default entry table (every routine at its ROM address) with no user code.
    pub fn default_imem() -> Vec<Instruction> {
        EntryPoint::ALL
            .iter()
            .map(|e| Instruction(e.default_address() as u64))
            .collect()
    }

    #[inline(always)]
    pub fn decoded(&self, address: u16) -> &Decoded {
        // The vector has exactly 2^16 entries, so every u16 is in bounds.
        &self.decoded[address as usize]
    }

    pub fn word(&self, address: u16) -> Instruction {
        self.words[address as usize]
    }

    /// Start address of a routine, as the entry-point table says.
    pub fn entry(&self, entry: EntryPoint) -> u16 {
        self.entry[entry as usize]
    }

    /// Whether `address` is an instruction memory word the host never loaded.
    pub fn is_unloaded(&self, address: u16) -> bool {
        address & USER_CODE_BIT != 0
            && (address & !USER_CODE_BIT) as usize >= self.loaded_imem_words
    }
}
