//! INTERIM (not committed): ROM from the spec's rom_words.txt until shaders/rom.shdr lands.
use crate::isa::{Instruction, Opcode};
use std::sync::OnceLock;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum RomVariant {
    #[default]
    Faithful,
    Fixed,
}
impl RomVariant {
    pub fn name(self) -> &'static str {
        match self {
            RomVariant::Faithful => "faithful",
            RomVariant::Fixed => "fixed",
        }
    }
}
impl std::str::FromStr for RomVariant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "faithful" => Ok(RomVariant::Faithful),
            "fixed" => Ok(RomVariant::Fixed),
            _ => Err(format!("unknown ROM `{s}`: faithful or fixed")),
        }
    }
}
pub const ROM_LEN: usize = 280;
pub fn rom(variant: RomVariant) -> &'static [Instruction] {
    static F: OnceLock<Vec<Instruction>> = OnceLock::new();
    static X: OnceLock<Vec<Instruction>> = OnceLock::new();
    let load = || -> Vec<Instruction> {
        let t = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../shared/spec/rom_words.txt"
        ))
        .unwrap();
        t.lines()
            .take(280)
            .map(|l| {
                Instruction(u64::from_str_radix(l.split_whitespace().nth(1).unwrap(), 16).unwrap())
            })
            .collect()
    };
    match variant {
        RomVariant::Faithful => F.get_or_init(load),
        RomVariant::Fixed => X.get_or_init(|| {
            let mut w = load();
            w[268] = Instruction::type1(Opcode::Mul, 71, 56, 112);
            w[271] = Instruction::type1(Opcode::Mul, 74, 55, 115);
            w[56] = Instruction::type2(Opcode::Setx, 110, 0);
            w
        }),
    }
}
