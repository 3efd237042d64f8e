//! Texture memory as an atlas of power-of-two squares (see the module documentation of
//! [`super`] for the layout and the UV mapping).

use ::image::imageops::FilterType;
use ::image::RgbImage;
use std::borrow::Cow;

/// Side of the published hardware's texture memory in texels: 256 x 256 texels of three
/// words.
pub const MEMORY_SIDE: u32 = 256;
/// Words of texture memory (the test bench's `TEXTURE_BUFFER_SIZE`); an OBJ scene's memory
/// never holds fewer.
pub const MEMORY_WORDS: usize = (MEMORY_SIDE * MEMORY_SIDE * 3) as usize;
/// The texture memory an OBJ scene may use by default, as a THEIA built with a larger TMEM
/// would have it: 2048 x 2048 texels (12M words, 48 MB), so that a dozen 1024 x 1024 maps
/// keep 512 x 512 each. The RTL's TMEM is four banks of `RAM_SINGLE_READ_PORT` whose
/// address is 32 bits wide (Theia.v: `#(32, 32, 50000)`): only the bank size, a
/// parameter, holds it to 200,000 words.
pub const DEFAULT_MEMORY_SIDE: u32 = 2048;
/// The largest side the ROM's texture arithmetic can address: TCC computes the texel
/// position F = st·TEXTURE_SIZE in Q15.17, whose integer part must stay below 16384, and
/// the word address 3·(u + v·W) in a 32-bit register (3·8192² < 2^31).
pub const MAX_MEMORY_SIDE: u32 = 8192;
/// The filter used whenever a texture has to change size.
pub const RESAMPLE_FILTER: (FilterType, &str) = (FilterType::CatmullRom, "Catmull-Rom");
/// Margin in texels kept between a tile's UV range and its edge. The ROM reads texels
/// floor(F) and floor(F) + 1, so F must stay in [origin, origin + side - 1).
const MARGIN: f64 = 0.5;

/// Decodes a texture file: by its content where that tells the format, else by the
/// name's extension (TGA has no signature).
pub fn decode(bytes: &[u8], name: &str) -> ::image::ImageResult<::image::DynamicImage> {
    let format = ::image::guess_format(bytes)
        .or_else(|error| ::image::ImageFormat::from_path(name).map_err(|_| error))?;
    ::image::load_from_memory_with_format(bytes, format)
}

/// What fills a tile.
pub enum TileSource {
    /// A decoded texture and the name it is known by in messages.
    Image { image: RgbImage, name: String },
    /// One flat colour (a material without a usable texture).
    Flat([u8; 3]),
}

/// Where one source landed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AtlasTile {
    pub x: u32,
    pub y: u32,
    pub side: u32,
    pub flat: bool,
}

/// The packed texture memory.
pub struct Atlas {
    /// TEXTURE_SIZE: the side the ROM wraps texel addresses at.
    pub side: u32,
    pub tiles: Vec<AtlasTile>,
    /// Texture memory words: texel (u, v) channel c at 3(u + v * side) + c, as byte << 9.
    pub memory: Vec<u32>,
}

/// Why a texture could not go into texture memory.
#[derive(Debug, PartialEq)]
pub enum AtlasError {
    /// Resampling is off and the texture is not a square power of two that fits.
    NeedsResampling {
        name: String,
        width: u32,
        height: u32,
    },
    /// Not even 2x2 texels per tile leave room for every tile.
    TooManyTiles { tiles: usize },
}

/// Side a texture gets before packing: the power of two nearest its larger side (on a log
/// scale), at least 2 and at most the memory.
fn natural_side(width: u32, height: u32, memory_side: u32) -> u32 {
    let larger = width.max(height).max(2) as f64;
    let side = 1u32 << larger.log2().round() as u32;
    side.clamp(2, memory_side)
}

/// The top-left texel of Morton (Z-order) index `index`: x from the even bits, y from the
/// odd bits.
fn morton_position(index: u32) -> (u32, u32) {
    let compact = |mut v: u32| {
        v &= 0x5555_5555;
        v = (v | (v >> 1)) & 0x3333_3333;
        v = (v | (v >> 2)) & 0x0F0F_0F0F;
        v = (v | (v >> 4)) & 0x00FF_00FF;
        (v | (v >> 8)) & 0x0000_FFFF
    };
    (compact(index), compact(index >> 1))
}

/// The side of each source's tile: its natural side, the largest halved until all of them
/// fit in `memory_side` squared.
fn tile_sides(sources: &[TileSource], memory_side: u32) -> Result<Vec<u32>, AtlasError> {
    let mut sides: Vec<u32> = sources
        .iter()
        .map(|source| match source {
            TileSource::Image { image, .. } => {
                natural_side(image.width(), image.height(), memory_side)
            }
            // 2x2: the ROM always reads a texel and its right and lower neighbours.
            TileSource::Flat(_) => 2,
        })
        .collect();
    let area = |sides: &[u32]| sides.iter().map(|&s| (s as u64) * (s as u64)).sum::<u64>();
    let capacity = (memory_side as u64) * (memory_side as u64);
    while area(&sides) > capacity {
        // Halve the largest texture tile: it gives back the most room for the least
        // loss in proportion.
        let largest = (0..sides.len())
            .filter(|&i| sides[i] > 2)
            .max_by_key(|&i| (sides[i], std::cmp::Reverse(i)));
        match largest {
            Some(i) => sides[i] /= 2,
            None => {
                return Err(AtlasError::TooManyTiles {
                    tiles: sources.len(),
                })
            }
        }
    }
    Ok(sides)
}

/// Where each source's tile of side `sides[i]` goes: largest first in Z order. Every tile
/// starts at a Morton index that is a multiple of its own area, so it is an aligned
/// square, and the tiles fill the square with no gaps.
fn place_tiles(sources: &[TileSource], sides: &[u32]) -> Vec<AtlasTile> {
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sides[i]));
    let mut tiles = vec![
        AtlasTile {
            x: 0,
            y: 0,
            side: 0,
            flat: false
        };
        sources.len()
    ];
    let mut next = 0u32;
    for &i in &order {
        let (x, y) = morton_position(next);
        tiles[i] = AtlasTile {
            x,
            y,
            side: sides[i],
            flat: matches!(sources[i], TileSource::Flat(_)),
        };
        next += sides[i] * sides[i];
    }
    tiles
}

/// Texture `image` at `side` x `side` texels: itself, or resampled with a note saying
/// `why(width, height)` when `resample` allows it.
fn fit_to_tile<'i>(
    image: &'i RgbImage,
    name: &str,
    side: u32,
    resample: bool,
    why: impl Fn(u32, u32) -> String,
    notes: &mut Vec<String>,
) -> Result<Cow<'i, RgbImage>, AtlasError> {
    let (width, height) = image.dimensions();
    if width == side && height == side {
        return Ok(Cow::Borrowed(image));
    }
    if !resample {
        return Err(AtlasError::NeedsResampling {
            name: name.to_string(),
            width,
            height,
        });
    }
    notes.push(format!(
        "note: texture {name} resampled from {width}x{height} to {side}x{side} ({filter} filter){why}",
        filter = RESAMPLE_FILTER.1,
        why = why(width, height),
    ));
    let resized = ::image::imageops::resize(image, side, side, RESAMPLE_FILTER.0);
    Ok(Cow::Owned(resized))
}

impl Atlas {
    /// Packs `sources` into a square of at most `memory_side` texels. Textures that are not
    /// square powers of two, or that do not all fit, are resampled (largest first) when
    /// `resample` allows it; each resampling adds a note.
    pub fn build(
        sources: &[TileSource],
        memory_side: u32,
        resample: bool,
        notes: &mut Vec<String>,
    ) -> Result<Atlas, AtlasError> {
        let sides = tile_sides(sources, memory_side)?;
        let total: u64 = sides.iter().map(|&s| (s as u64) * (s as u64)).sum();
        let mut side = sides.iter().copied().max().unwrap_or(2);
        while (side as u64) * (side as u64) < total {
            side *= 2;
        }
        let tiles = place_tiles(sources, &sides);
        let words = (side as usize * side as usize * 3).max(MEMORY_WORDS);
        let mut memory = vec![0u32; words];
        for (source, tile) in sources.iter().zip(&tiles) {
            match source {
                TileSource::Flat(rgb) => {
                    for (u, v) in (0..2).flat_map(|v| (0..2).map(move |u| (u, v))) {
                        store(&mut memory, side, tile.x + u, tile.y + v, *rgb);
                    }
                }
                TileSource::Image { image, name } => {
                    let why = |width, height| {
                        resample_reason(width, height, tile.side, memory_side, sources.len())
                    };
                    let pixels = fit_to_tile(image, name, tile.side, resample, why, notes)?;
                    for v in 0..tile.side {
                        for u in 0..tile.side {
                            // OBJ's v runs up the image; texture memory rows run with v.
                            let rgb = pixels.get_pixel(u, tile.side - 1 - v).0;
                            store(&mut memory, side, tile.x + u, tile.y + v, rgb);
                        }
                    }
                }
            }
        }
        Ok(Atlas {
            side,
            tiles,
            memory,
        })
    }

    /// Whether the whole memory is one texture (then the hardware's wrap-around repeats it
    /// and UVs pass through unchanged).
    pub fn single(&self) -> bool {
        self.tiles.len() == 1
    }

    /// The texture coordinate the hardware gets for OBJ coordinate `uv` on `tile`.
    /// One tile: `uv` itself. Several: `uv` clamped to [0, 1] and mapped affinely onto
    /// texel positions [x + 0.5, x + side - 1.5] of the tile, so that neither the texel nor
    /// its right/lower neighbour the ROM reads ever belongs to another tile. Flat tiles
    /// always sample their centre: with weights of exactly 0.25 the colour comes out exact.
    pub fn map_uv(&self, tile: usize, uv: [f64; 2]) -> [f64; 2] {
        let tile = self.tiles[tile];
        if tile.flat {
            let centre = |origin: u32| (origin as f64 + MARGIN) / self.side as f64;
            return [centre(tile.x), centre(tile.y)];
        }
        if self.single() {
            return uv;
        }
        let span = tile.side as f64 - 1.0 - 2.0 * MARGIN;
        let place = |origin: u32, t: f64| {
            (origin as f64 + MARGIN + t.clamp(0.0, 1.0) * span) / self.side as f64
        };
        [place(tile.x, uv[0]), place(tile.y, uv[1])]
    }
}

fn resample_reason(width: u32, height: u32, side: u32, memory_side: u32, tiles: usize) -> String {
    if width != height || !width.is_power_of_two() {
        ": texture memory holds square power-of-two textures".into()
    } else if width > memory_side {
        format!(": larger than the {memory_side}x{memory_side} texture memory")
    } else if side < width {
        format!(": {tiles} textures share the {memory_side}x{memory_side} texture memory")
    } else {
        String::new()
    }
}

/// Texture memory holds each channel as byte << 9 (byte / 256 in Q15.17).
fn store(memory: &mut [u32], side: u32, u: u32, v: u32, rgb: [u8; 3]) {
    let at = 3 * (u + v * side) as usize;
    for (c, &byte) in rgb.iter().enumerate() {
        memory[at + c] = (byte as u32) << 9;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(side: u32) -> TileSource {
        TileSource::Image {
            image: RgbImage::new(side, side),
            name: format!("{side}.png"),
        }
    }

    #[test]
    fn morton_positions_interleave_bits() {
        assert_eq!(morton_position(0), (0, 0));
        assert_eq!(morton_position(1), (1, 0));
        assert_eq!(morton_position(2), (0, 1));
        assert_eq!(morton_position(3), (1, 1));
        assert_eq!(morton_position(4), (2, 0));
        assert_eq!(morton_position(128 * 128), (128, 0));
        assert_eq!(morton_position(2 * 128 * 128), (0, 128));
    }

    #[test]
    fn tiles_pack_largest_first_without_overlap() {
        let sources = [
            image(64),
            TileSource::Flat([1, 2, 3]),
            image(128),
            image(64),
        ];
        let mut notes = Vec::new();
        let atlas = Atlas::build(&sources, 256, true, &mut notes).unwrap();
        assert!(notes.is_empty());
        assert_eq!(atlas.side, 256);
        let placed: Vec<_> = atlas.tiles.iter().map(|t| (t.x, t.y, t.side)).collect();
        assert_eq!(
            placed,
            vec![(128, 0, 64), (128, 64, 2), (0, 0, 128), (192, 0, 64)]
        );
        // The flat tile's four texels hold its colour.
        let at = 3 * (128 + 64 * 256);
        assert_eq!(atlas.memory[at..at + 3], [1 << 9, 2 << 9, 3 << 9]);
    }

    #[test]
    fn oversubscribed_memory_halves_the_largest_texture() {
        let sources = [image(256), image(64)];
        let mut notes = Vec::new();
        let atlas = Atlas::build(&sources, 256, true, &mut notes).unwrap();
        assert_eq!(atlas.tiles[0].side, 128);
        assert_eq!(
            notes,
            vec!["note: texture 256.png resampled from 256x256 to 128x128 (Catmull-Rom filter): 2 textures share the 256x256 texture memory"]
        );
        assert_eq!(
            Atlas::build(&sources, 256, false, &mut notes).err(),
            Some(AtlasError::NeedsResampling {
                name: "256.png".into(),
                width: 256,
                height: 256
            })
        );
    }

    #[test]
    fn mapped_uvs_stay_inside_their_tile() {
        let sources = [image(128), image(128)];
        let atlas = Atlas::build(&sources, 256, true, &mut Vec::new()).unwrap();
        for (tile, origin) in [(0, 0.0), (1, 128.0)] {
            for uv in [-3.0, 0.0, 0.5, 1.0, 7.0] {
                let f = atlas.map_uv(tile, [uv, uv])[0] * 256.0;
                assert!(f >= origin && f.floor() + 1.0 <= origin + 127.0, "{f}");
            }
        }
    }
}
