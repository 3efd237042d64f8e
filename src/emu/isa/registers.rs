//! The register address map (spec isa_and_formats §2.2), the swizzle codes and the
//! entry-point table. Addresses are 16-bit; the register file decodes only bits 6..0.

/// Named data addresses, canonical name first where two names share an address.
pub const REGISTERS: &[(&str, u16)] = &[
    // Bank 0 (0..31): configuration, loaded by the host, read-only for the core.
    ("CREG_LIGHT_INFO", 0),
    ("CREG_CAMERA_POSITION", 1),
    ("CREG_PROJECTION_WINDOW_MIN", 2),
    ("CREG_PROJECTION_WINDOW_MAX", 3),
    ("CREG_RESOLUTION", 4),
    ("CREG_TEXTURE_SIZE", 5),
    ("CREG_PIXEL_2D_INITIAL_POSITION", 6),
    ("CREG_PIXEL_2D_FINAL_POSITION", 7),
    ("CREG_FIRST_LIGTH", 8),
    ("CREG_FIRST_LIGTH_DIFFUSE", 8),
    // Bank 1 (32..63): swap memory, written by the host once per triangle.
    ("CREG_AABBMIN", 42),
    ("CREG_AABBMAX", 43),
    ("CREG_V0", 44),
    ("CREG_UV0", 45),
    ("CREG_V1", 46),
    ("CREG_UV1", 47),
    ("CREG_V2", 48),
    ("CREG_UV2", 49),
    ("CREG_TRI_DIFFUSE", 50),
    ("CREG_TEX_COLOR1", 53),
    ("CREG_TEX_COLOR2", 54),
    ("CREG_TEX_COLOR3", 55),
    ("CREG_TEX_COLOR4", 56),
    ("CREG_TEX_COLOR5", 57),
    ("CREG_TEX_COLOR6", 58),
    ("CREG_TEX_COLOR7", 59),
    // Bank 2 (64..95).
    ("C1", 64),
    ("C2", 65),
    ("C3", 66),
    ("C4", 67),
    ("C5", 68),
    ("C6", 69),
    ("C7", 70),
    ("R1", 71),
    ("R2", 72),
    ("R3", 73),
    ("R4", 74),
    ("R5", 75),
    ("R6", 76),
    ("R7", 77),
    ("R8", 78),
    ("R9", 79),
    ("R10", 80),
    ("R11", 81),
    ("R12", 82),
    ("CREG_PROJECTION_WINDOW_SCALE", 83),
    ("CREG_UNORMALIZED_DIRECTION", 84),
    ("CREG_RAY_DIRECTION", 85),
    ("CREG_E1_LAST", 86),
    ("CREG_E2_LAST", 87),
    ("CREG_T", 88),
    ("CREG_P", 89),
    ("CREG_Q", 90),
    ("CREG_UV0_LAST", 91),
    ("CREG_UV1_LAST", 92),
    ("CREG_UV2_LAST", 93),
    ("CREG_TRI_DIFFUSE_LAST", 94),
    ("CREG_LAST_t", 95),
    // Bank 3 (96..127).
    ("CREG_LAST_u", 96),
    ("CREG_LAST_v", 97),
    ("CREG_COLOR_ACC", 98),
    ("CREG_t", 99),
    ("CREG_E1", 100),
    ("CREG_E2", 101),
    ("CREG_DELTA", 102),
    ("CREG_u", 103),
    ("CREG_v", 104),
    ("CREG_H1", 105),
    ("CREG_H2", 106),
    ("CREG_H3", 107),
    ("CREG_PIXEL_PITCH", 108),
    ("CREG_LAST_COL", 109),
    ("CREG_TEXTURE_COLOR", 110),
    ("CREG_PIXEL_2D_POSITION", 111),
    ("CREG_TEXWEIGHT1", 112),
    ("CREG_TEXWEIGHT2", 113),
    ("CREG_TEXWEIGHT3", 114),
    ("CREG_TEXWEIGHT4", 115),
    ("CREG_TEX_COORD1", 116),
    ("CREG_TEX_COORD2", 117),
    ("R99", 118),
    ("CREG_ZERO", 119),
    ("CREG_CURRENT_OUTPUT_PIXEL", 120),
    ("CREG_3", 121),
    ("CREG_012", 122),
    // Output registers: aliases of bank 0 (writes dropped); OMWRITE is the real output path.
    ("OREG_PIXEL_COLOR", 128),
    ("OREG_TEX_COORD1", 129),
    ("OREG_TEX_COORD2", 130),
    ("OREG_ADDR_O", 131),
];

/// Addresses the emulator itself reads by name (the test below ties them to [`REGISTERS`]).
pub mod address {
    pub const CREG_LIGHT_INFO: u16 = 0;
    pub const CREG_CAMERA_POSITION: u16 = 1;
    pub const CREG_PROJECTION_WINDOW_MIN: u16 = 2;
    pub const CREG_PROJECTION_WINDOW_MAX: u16 = 3;
    pub const CREG_RESOLUTION: u16 = 4;
    pub const CREG_TEXTURE_SIZE: u16 = 5;
    pub const R1: u16 = 71;
    pub const R2: u16 = 72;
    pub const R3: u16 = 73;
    pub const R5: u16 = 75;
    pub const R6: u16 = 76;
    pub const CREG_RAY_DIRECTION: u16 = 85;
    pub const CREG_T: u16 = 88;
    pub const CREG_P: u16 = 89;
    pub const CREG_Q: u16 = 90;
    pub const CREG_UV0_LAST: u16 = 91;
    pub const CREG_UV1_LAST: u16 = 92;
    pub const CREG_UV2_LAST: u16 = 93;
    pub const CREG_LAST_T: u16 = 95;
    pub const CREG_LAST_U: u16 = 96;
    pub const CREG_LAST_V: u16 = 97;
    /// CREG_t, BIU's hit distance (not CREG_T, 88).
    pub const CREG_T_HIT: u16 = 99;
    pub const CREG_E1: u16 = 100;
    pub const CREG_E2: u16 = 101;
    pub const CREG_DELTA: u16 = 102;
    /// CREG_u.
    pub const CREG_U: u16 = 103;
    /// CREG_v.
    pub const CREG_V: u16 = 104;
    pub const CREG_H1: u16 = 105;
    pub const CREG_H2: u16 = 106;
    pub const CREG_H3: u16 = 107;
    pub const CREG_PIXEL_PITCH: u16 = 108;
    pub const CREG_TEXTURE_COLOR: u16 = 110;
    pub const CREG_PIXEL_2D_POSITION: u16 = 111;
    pub const CREG_TEX_COORD1: u16 = 116;
    pub const R99: u16 = 118;
    pub const CREG_ZERO: u16 = 119;
    pub const CREG_CURRENT_OUTPUT_PIXEL: u16 = 120;
}

/// `VOID`: the placeholder operand, address 0.
pub const VOID: u16 = 0;

/// Looks a register name up (names are case-sensitive, as in the original assembler).
pub fn register_address(name: &str) -> Option<u16> {
    REGISTERS.iter().find(|(n, _)| *n == name).map(|&(_, a)| a)
}

/// The canonical name of a data address, if it has one.
pub fn register_name(address: u16) -> Option<&'static str> {
    REGISTERS
        .iter()
        .find(|(_, a)| *a == address)
        .map(|&(n, _)| n)
}

/// The register bank an address selects: bits 6..5 (bits 15..7 are not decoded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bank {
    /// 0..31: configuration, written only by the host; core writes are dropped.
    Config,
    /// 32..63: swap memory, two copies that trade places once per triangle.
    Swap,
    /// 64..95
    General,
    /// 96..127
    Internal,
}

impl Bank {
    pub fn of(address: u16) -> Bank {
        match (address >> 5) & 3 {
            0 => Bank::Config,
            1 => Bank::Swap,
            2 => Bank::General,
            _ => Bank::Internal,
        }
    }
}

/// Whether a write by the core's execution unit to `address` reaches the register file:
/// every bank but bank 0, which only the host writes (spec machine §1.4).
#[inline(always)]
pub fn core_writable(address: u16) -> bool {
    Bank::of(address) != Bank::Config
}

/// SWIZZLE3D codes, in code order (code = index). The RTL implements only XXX, YYY, ZZZ and
/// YXZ; the others hang nothing but produce (0,0,0) there, and follow the manual here.
pub const SWIZZLES: [&str; 22] = [
    "SWIZZLE_XXX",
    "SWIZZLE_YYY",
    "SWIZZLE_ZZZ",
    "SWIZZLE_XYY",
    "SWIZZLE_XXY",
    "SWIZZLE_XZZ",
    "SWIZZLE_XXZ",
    "SWIZZLE_YXX",
    "SWIZZLE_YYX",
    "SWIZZLE_YZZ",
    "SWIZZLE_YYZ",
    "SWIZZLE_ZXX",
    "SWIZZLE_ZZX",
    "SWIZZLE_ZYY",
    "SWIZZLE_ZZY",
    "SWIZZLE_XZX",
    "SWIZZLE_XYX",
    "SWIZZLE_YXY",
    "SWIZZLE_YZY",
    "SWIZZLE_ZXZ",
    "SWIZZLE_ZYZ",
    "SWIZZLE_YXZ",
];

/// Swizzle codes the original hardware implements.
pub const HARDWARE_SWIZZLES: [u32; 4] = [0, 1, 2, 21];

/// Component selectors of each swizzle code: `result.c = source[SWIZZLE_LANES[code][c]]`.
pub const SWIZZLE_LANES: [[u8; 3]; 22] = {
    let mut lanes = [[0u8; 3]; 22];
    let mut code = 0;
    while code < 22 {
        let name = SWIZZLES[code].as_bytes();
        let mut c = 0;
        while c < 3 {
            // Name is "SWIZZLE_" followed by three of X, Y, Z.
            lanes[code][c] = name[8 + c] - b'X';
            c += 1;
        }
        code += 1;
    }
    lanes
};

pub fn swizzle_code(name: &str) -> Option<u32> {
    SWIZZLES.iter().position(|n| *n == name).map(|i| i as u32)
}

/// A routine slot of the 12-entry entry-point table (IMEM words 0..11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryPoint {
    Initial = 0,
    Cppu = 1,
    Rgu = 2,
    Aabbiu = 3,
    Biu = 4,
    Psu = 5,
    Psu2 = 6,
    Tcc = 7,
    Npg = 8,
    UserConstants = 9,
    PixelShader = 10,
    Main = 11,
}

impl EntryPoint {
    pub const ALL: [EntryPoint; 12] = [
        EntryPoint::Initial,
        EntryPoint::Cppu,
        EntryPoint::Rgu,
        EntryPoint::Aabbiu,
        EntryPoint::Biu,
        EntryPoint::Psu,
        EntryPoint::Psu2,
        EntryPoint::Tcc,
        EntryPoint::Npg,
        EntryPoint::UserConstants,
        EntryPoint::PixelShader,
        EntryPoint::Main,
    ];

    /// The short name, e.g. `PIXELSHADER`.
    pub fn name(self) -> &'static str {
        ENTRY_POINT_NAMES[self as usize]
    }

    /// The assembler label, e.g. `ENTRYPOINT_ADRR_PIXELSHADER`.
    pub fn label(self) -> String {
        format!("ENTRYPOINT_ADRR_{}", self.name())
    }

    /// The default ROM address of this routine (the assembler's table when not overridden).
    pub fn default_address(self) -> u16 {
        DEFAULT_ENTRY_ADDRESSES[self as usize]
    }

    pub fn from_name(name: &str) -> Option<EntryPoint> {
        ENTRY_POINT_NAMES
            .iter()
            .position(|n| *n == name)
            .map(|i| EntryPoint::ALL[i])
    }

    /// Parses `ENTRYPOINT_ADRR_<NAME>`.
    pub fn from_label(label: &str) -> Option<EntryPoint> {
        label
            .strip_prefix("ENTRYPOINT_ADRR_")
            .and_then(EntryPoint::from_name)
    }
}

const ENTRY_POINT_NAMES: [&str; 12] = [
    "INITIAL",
    "CPPU",
    "RGU",
    "AABBIU",
    "BIU",
    "PSU",
    "PSU2",
    "TCC",
    "NPG",
    "USERCONSTANTS",
    "PIXELSHADER",
    "MAIN",
];

const DEFAULT_ENTRY_ADDRESSES: [u16; 12] = [0, 44, 47, 69, 157, 232, 248, 190, 55, 276, 278, 37];

/// Number of entries in the entry-point table at the start of IMEM.
pub const ENTRY_TABLE_LEN: usize = 12;
/// IMEM words (the table plus user code): `Ram[128:0]`.
pub const IMEM_WORDS: usize = 129;
/// Address bit that selects IMEM (user code) instead of ROM.
pub const USER_CODE_BIT: u16 = 0x8000;
/// Address of the first user instruction.
pub const USER_CODE_START: u16 = USER_CODE_BIT | ENTRY_TABLE_LEN as u16;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses_match_the_spec() {
        assert_eq!(register_address("CREG_TEX_COLOR3"), Some(55));
        assert_eq!(register_address("CREG_LAST_t"), Some(95));
        assert_eq!(register_address("R99"), Some(118));
        assert_eq!(register_address("OREG_ADDR_O"), Some(131));
        assert_eq!(register_name(8), Some("CREG_FIRST_LIGTH"));
        assert_eq!(register_address("CREG_FIRST_LIGTH_DIFFUSE"), Some(8));
        assert_eq!(register_address("creg_zero"), None);
        for (name, constant) in [
            ("CREG_LIGHT_INFO", address::CREG_LIGHT_INFO),
            ("CREG_CAMERA_POSITION", address::CREG_CAMERA_POSITION),
            (
                "CREG_PROJECTION_WINDOW_MIN",
                address::CREG_PROJECTION_WINDOW_MIN,
            ),
            (
                "CREG_PROJECTION_WINDOW_MAX",
                address::CREG_PROJECTION_WINDOW_MAX,
            ),
            ("CREG_RESOLUTION", address::CREG_RESOLUTION),
            ("CREG_TEXTURE_SIZE", address::CREG_TEXTURE_SIZE),
            ("CREG_UV0_LAST", address::CREG_UV0_LAST),
            ("CREG_UV1_LAST", address::CREG_UV1_LAST),
            ("CREG_UV2_LAST", address::CREG_UV2_LAST),
            ("CREG_TEXTURE_COLOR", address::CREG_TEXTURE_COLOR),
            ("CREG_PIXEL_PITCH", address::CREG_PIXEL_PITCH),
            (
                "CREG_CURRENT_OUTPUT_PIXEL",
                address::CREG_CURRENT_OUTPUT_PIXEL,
            ),
            ("CREG_RAY_DIRECTION", address::CREG_RAY_DIRECTION),
            ("CREG_LAST_t", address::CREG_LAST_T),
            ("CREG_LAST_u", address::CREG_LAST_U),
            ("CREG_LAST_v", address::CREG_LAST_V),
            ("CREG_PIXEL_2D_POSITION", address::CREG_PIXEL_2D_POSITION),
            ("R1", address::R1),
            ("R2", address::R2),
            ("R3", address::R3),
            ("CREG_T", address::CREG_T),
            ("CREG_P", address::CREG_P),
            ("CREG_Q", address::CREG_Q),
            ("CREG_t", address::CREG_T_HIT),
            ("CREG_E1", address::CREG_E1),
            ("CREG_E2", address::CREG_E2),
            ("CREG_DELTA", address::CREG_DELTA),
            ("CREG_u", address::CREG_U),
            ("CREG_v", address::CREG_V),
            ("CREG_H1", address::CREG_H1),
            ("CREG_H2", address::CREG_H2),
            ("CREG_H3", address::CREG_H3),
            ("CREG_TEX_COORD1", address::CREG_TEX_COORD1),
            ("R99", address::R99),
            ("CREG_ZERO", address::CREG_ZERO),
        ] {
            assert_eq!(register_address(name), Some(constant), "{name}");
        }
    }

    #[test]
    fn banks_decode_bits_6_and_5_only() {
        assert_eq!(Bank::of(31), Bank::Config);
        assert_eq!(Bank::of(32), Bank::Swap);
        assert_eq!(Bank::of(64), Bank::General);
        assert_eq!(Bank::of(127), Bank::Internal);
        assert_eq!(Bank::of(128), Bank::Config);
        assert_eq!(Bank::of(0x8047), Bank::General);
    }

    #[test]
    fn the_core_writes_every_bank_but_bank_0() {
        for (address, writable) in [
            (0, false),
            (31, false),
            (32, true),
            (95, true),
            (127, true),
            (128, false),
            (0x8081, false),
            (0xFFFF, true),
        ] {
            assert_eq!(core_writable(address), writable, "{address:#x}");
        }
    }

    #[test]
    fn swizzle_lanes_follow_the_names() {
        assert_eq!(swizzle_code("SWIZZLE_YXZ"), Some(21));
        assert_eq!(SWIZZLE_LANES[21], [1, 0, 2]);
        assert_eq!(SWIZZLE_LANES[0], [0, 0, 0]);
        assert_eq!(SWIZZLE_LANES[20], [2, 1, 2]);
    }

    #[test]
    fn entry_points() {
        assert_eq!(
            EntryPoint::from_label("ENTRYPOINT_ADRR_PSU2"),
            Some(EntryPoint::Psu2)
        );
        assert_eq!(EntryPoint::PixelShader.default_address(), 278);
        assert_eq!(EntryPoint::Main.label(), "ENTRYPOINT_ADRR_MAIN");
        assert_eq!(USER_CODE_START, 0x800C);
    }
}
