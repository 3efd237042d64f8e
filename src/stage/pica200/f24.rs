//! PICA200 small floats: float24 (registers, uniforms), float20 and float16 (vertex
//! attributes). Arithmetic runs in f32 as in both reference emulators; these functions are
//! the conversions at the boundary (SHBIN constants, `.constf`, uniform uploads).

/// Decodes a raw float with `mantissa_bits` of mantissa, a 7- or 5-bit exponent of `bias`,
/// to the exact f32: e = 0, m = 0 → ±0; e = 0 otherwise → the denormal, exactly; e all ones
/// → ±inf (m = 0) or NaN with the mantissa kept; else exponent e − bias + 127.
fn decode_small(raw: u32, mantissa_bits: u32, exponent_bits: u32, bias: i32) -> f32 {
    let mantissa = raw & ((1 << mantissa_bits) - 1);
    let exponent = (raw >> mantissa_bits) & ((1 << exponent_bits) - 1);
    let negative = (raw >> (mantissa_bits + exponent_bits)) & 1 == 1;
    let sign = if negative { 1u32 << 31 } else { 0 };
    let magnitude = if exponent == 0 {
        // Denormal (or zero): m · 2^(1 − bias − M), exact in f32 for every format here.
        mantissa as f32 * 2f32.powi(1 - bias - mantissa_bits as i32)
    } else if exponent == (1 << exponent_bits) - 1 {
        return f32::from_bits(sign | 0x7F80_0000 | (mantissa << (23 - mantissa_bits)));
    } else {
        let e32 = (exponent as i32 - bias + 127) as u32;
        f32::from_bits((e32 << 23) | (mantissa << (23 - mantissa_bits)))
    };
    f32::from_bits(sign | magnitude.to_bits())
}

/// float24 (sign 23, exponent 22:16 bias 63, mantissa 15:0) to f32, exactly.
pub fn f24_to_f32(raw: u32) -> f32 {
    decode_small(raw & 0xFF_FFFF, 16, 7, 63)
}

/// float20 (sign 19, exponent 18:12 bias 63, mantissa 11:0) to f32, exactly.
pub fn f20_to_f32(raw: u32) -> f32 {
    decode_small(raw & 0xF_FFFF, 12, 7, 63)
}

/// float16 (IEEE half: sign 15, exponent 14:10 bias 15, mantissa 9:0) to f32, exactly.
pub fn f16_to_f32(raw: u32) -> f32 {
    decode_small(raw & 0xFFFF, 10, 5, 15)
}

/// f32 to float24 as picasso stores `.constf`: e24 = e32 − 64; e24 < 0 → ±0, e24 > 0x7F →
/// ±inf, else the mantissa truncated to its top 16 bits (so e24 = 0x7F with a mantissa is a
/// NaN pattern, as picasso writes it).
pub fn f32_to_f24(value: f32) -> u32 {
    let bits = value.to_bits();
    let sign = (bits >> 31) << 23;
    let exponent = ((bits >> 23) & 0xFF) as i32 - 64;
    let mantissa = (bits & 0x7F_FFFF) >> 7;
    if exponent < 0 {
        sign
    } else if exponent > 0x7F {
        sign | 0x7F_0000
    } else {
        sign | ((exponent as u32) << 16) | mantissa
    }
}

/// `value` as float24 would hold it: [`f32_to_f24`] then [`f24_to_f32`].
pub fn quantize_f24(value: f32) -> f32 {
    f24_to_f32(f32_to_f24(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn f24_edges_from_the_layout() {
        // Hand-derived: sign | (e + 64) << 23 | m << 7.
        assert_eq!(f24_to_f32(0x3F0000), 1.0);
        assert_eq!(f24_to_f32(0xBF0000), -1.0);
        assert_eq!(f24_to_f32(0x408000), 3.0);
        assert_eq!(f24_to_f32(0x800000).to_bits(), 0x8000_0000);
        assert_eq!(f24_to_f32(0x7F0000), f32::INFINITY);
        assert_eq!(f24_to_f32(0xFF0000), f32::NEG_INFINITY);
        assert_eq!(f24_to_f32(0x7F8000).to_bits(), 0x7FC0_0000);
        assert_eq!(f24_to_f32(0x7EFFFF).to_bits(), 0x5F7F_FF80);
        // Smallest denormal: 2^(1 − 63 − 16) = 2^−78 = 0x18800000.
        assert_eq!(f24_to_f32(0x000001).to_bits(), 0x1880_0000);
    }

    #[test]
    fn quantizing_keeps_sixteen_mantissa_bits() {
        // 1 + 2^−16 survives, 1 + 2^−17 truncates to 1; negative values truncate toward 0.
        assert_eq!(quantize_f24(1.0 + 2f32.powi(-16)), 1.0 + 2f32.powi(-16));
        assert_eq!(quantize_f24(1.0 + 2f32.powi(-17)), 1.0);
        assert_eq!(quantize_f24(-(1.0 + 2f32.powi(-17))), -1.0);
        assert_eq!(quantize_f24(f32::INFINITY), f32::INFINITY);
        assert_eq!(quantize_f24(2f32.powi(-64)), 0.0);
    }

    #[test]
    fn f24_encoding_truncates_and_saturates() {
        assert_eq!(f32_to_f24(1.0), 0x3F0000);
        assert_eq!(f32_to_f24(-2.5), 0xC04000);
        assert_eq!(f32_to_f24(0.0), 0);
        assert_eq!(f32_to_f24(-0.0), 0x800000);
        // 0.1 = 0x3DCCCCCD: e32 123 → 59 = 0x3B, mantissa 0x4CCCCD >> 7 = 0x9999.
        assert_eq!(f32_to_f24(0.1), 0x3B9999);
        assert_eq!(f32_to_f24(1e-30), 0);
        assert_eq!(f32_to_f24(1e30), 0x7F0000);
        assert_eq!(f32_to_f24(f32::NEG_INFINITY), 0xFF0000);
        assert_eq!(f32_to_f24(f32::NAN), 0x7F0000);
    }
}
