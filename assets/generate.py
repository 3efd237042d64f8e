#!/usr/bin/env python3
"""Generates the default scene's textures (run from the repository root).

Plain Python (zlib + struct) so it needs nothing installed. The PNGs are committed; this
script documents how they were made.
"""
import struct
import zlib


def write_png(path, width, height, pixel):
    rows = b"".join(
        b"\x00" + bytes(c for x in range(width) for c in pixel(x, y)) for y in range(height)
    )

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def crate(x, y):
    """Wooden crate: planks with grain, a dark frame and a diagonal brace."""
    border = x < 12 or y < 12 or x >= 116 or y >= 116
    brace = abs(x - y) < 9 and not border
    plank = (y // 26) % 2
    grain = ((x * 7 + (y // 26) * 13) % 17) < 3
    if border or brace:
        base = (120, 72, 34)
    else:
        base = (196, 140, 78) if plank else (178, 122, 62)
    if grain and not border:
        base = tuple(max(0, c - 28) for c in base)
    if border and (x % 48 in (5, 6) and y % 48 in (5, 6)):
        base = (60, 60, 64)  # nail heads
    return base


def floor(x, y):
    """Checkerboard tiles with grout lines."""
    tile = 16
    if x % tile == 0 or y % tile == 0:
        return (90, 90, 96)
    return (225, 225, 215) if (x // tile + y // tile) % 2 == 0 else (70, 110, 160)


write_png("assets/crate.png", 128, 128, crate)
write_png("assets/floor.png", 128, 128, floor)
