#!/usr/bin/env python3
"""Generates the default scene: its textures (assets/*.png) and its geometry
(scenes/default.obj and scenes/default.mtl).

Run from the repository root:  python3 assets/generate.py
Plain Python 3 (zlib + struct), no packages, fully deterministic: running it again
reproduces the committed files byte for byte.

The scene is a corner of a brick-walled room with a stone-tiled floor and three wooden
crates. The camera below must match `default_scene::{CAMERA, LOOK_AT}` in
src/scene/obj/mod.rs (the field of view is the loader's default, 40 degrees). The view is framed so that every pixel of a square (or up to 16:9)
image hits a wall or the floor: the faithful ROM paints missed pixels red (and a core's
first pixel black), so a frame without misses renders identically with any core count.

The hardware has no lighting (a pixel is its texture colour), so shading is baked in:
each crate face uses the top, lit or shaded version of the crate texture by how much it
faces the light. The atlas cannot repeat a texture, so the floor and walls are grids of
quads, each showing its texture once (the textures tile seamlessly).
"""
import math
import struct
import zlib

CAMERA = (4.6, 2.7, 6.5)
LOOK_AT = (0.0, 1.0, 0.0)
LIGHT = (-0.4, 1.0, 0.6)  # towards the light: above, left, front
# The crates standing on the floor, each centred on a floor cell whose texture carries its
# contact shadow: (material, centre x z, size, turn in degrees).
SHADOWS = (
    ("floor_shadow_big", (0.0, 0.0), 2.0, 10),
    ("floor_shadow_small", (-3.0, 0.0), 1.3, 28),
)


def write_png(path, size, pixel):
    rows = b"".join(
        b"\x00" + bytes(c for x in range(size) for c in pixel(x, y)) for y in range(size)
    )

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def hash01(*values):
    """A deterministic pseudo-random number in [0, 1) from integers."""
    h = 2166136261
    for v in values:
        h = ((h ^ (v & 0xFFFFFFFF)) * 16777619) & 0xFFFFFFFF
        h ^= h >> 13
        h = (h * 1274126177) & 0xFFFFFFFF
    return (h & 0xFFFFFF) / float(1 << 24)


def value_noise(x, y, cell, period, seed):
    """Smooth noise with `cell`-texel features that tiles every `period` texels."""
    cells = period // cell
    gx, gy = x / cell, y / cell
    x0, y0 = int(math.floor(gx)), int(math.floor(gy))
    fx, fy = gx - x0, gy - y0
    sx, sy = fx * fx * (3 - 2 * fx), fy * fy * (3 - 2 * fy)

    def corner(i, j):
        return hash01(seed, i % cells, j % cells)

    top = corner(x0, y0) * (1 - sx) + corner(x0 + 1, y0) * sx
    bottom = corner(x0, y0 + 1) * (1 - sx) + corner(x0 + 1, y0 + 1) * sx
    return top * (1 - sy) + bottom * sy


def clamp_byte(v):
    return max(0, min(255, int(round(v))))


def shade(rgb, factor):
    return tuple(clamp_byte(c * factor) for c in rgb)


def crate(x, y, size=128):
    """A wooden crate face: planks inside a dark frame, a diagonal brace, nail heads."""
    s = size / 128.0
    frame = 13 * s
    inside = frame <= x < size - frame and frame <= y < size - frame
    brace = inside and abs((x - frame) - (size - 1 - frame - y)) < 11 * s
    grain = value_noise(x, y * 6, 8, size * 6, 11) * 0.6 + value_noise(x, y, 32, size, 12) * 0.4
    if inside and not brace:
        plank = int((y - frame) * 4 // (size - 2 * frame))
        base = [(190, 138, 80), (178, 126, 70), (196, 146, 86), (182, 132, 74)][plank % 4]
        tone = 0.82 + 0.3 * grain
        seam = ((y - frame) % ((size - 2 * frame) / 4)) < 1.6 * s
        if seam:
            tone *= 0.55
    else:
        base = (142, 94, 50)
        tone = 0.78 + 0.3 * grain
        if brace:
            edge = abs(abs((x - frame) - (size - 1 - frame - y)) - 10 * s) < 1.2 * s
            if edge:
                tone *= 0.6
        else:
            # Bevel: the frame's outer and inner edges darker.
            d = min(x, y, size - 1 - x, size - 1 - y)
            if d < 1.5 * s or abs(d - frame) < 1.5 * s:
                tone *= 0.62
    rgb = shade(base, tone)
    for nx in (frame / 2, size - frame / 2):
        for ny in (frame / 2, size / 2, size - frame / 2):
            for px, py in ((nx, ny), (ny, nx)):
                if (x + 0.5 - px) ** 2 + (y + 0.5 - py) ** 2 < (2.6 * s) ** 2:
                    rgb = (92, 90, 88)
    return rgb


def floor(x, y, size=128):
    """Stone tiles, 2 x 2 per texture, grout through the middle of the texture's edges so
    that quads meet inside a tile."""
    period = size // 2
    gx, gy = (x + period // 2) % period, (y + period // 2) % period
    tile = ((x + period // 2) // period % 2, (y + period // 2) // period % 2)
    grout = min(gx, gy, period - 1 - gx, period - 1 - gy)
    n = value_noise(x, y, 8, size, 21) * 0.5 + value_noise(x, y, 32, size, 22) * 0.5
    tint = hash01(31, *tile) * 0.12
    base = (206 - 30 * tint, 196 - 10 * tint, 176 + 40 * tint)
    if grout < 1:
        return shade((120, 114, 104), 0.9 + 0.2 * n)
    if grout < 2:
        return shade(base, 0.72 + 0.2 * n)
    return shade(base, 0.86 + 0.22 * n)


def wall(x, y, size=64):
    """Bricks, 16 x 8 texels, alternate rows offset by half a brick; tiles seamlessly."""
    row = y // 8
    bx = (x + (8 if row % 2 else 0)) % size
    brick = (bx // 16, row)
    mortar = y % 8 == 7 or bx % 16 == 15
    n = value_noise(x, y, 4, size, 41) * 0.6 + value_noise(x, y, 16, size, 42) * 0.4
    if mortar:
        return shade((168, 160, 146), 0.85 + 0.2 * n)
    v = hash01(51, *brick)
    base = (150 + 40 * v, 70 + 18 * v, 52 + 10 * v)
    return shade(base, 0.78 + 0.32 * n)


def contact_shadow(x, y, size, crate_size, degrees):
    """How much light reaches floor texel (x, y) of a 3 x 3 cell with a crate in its
    middle: darker near the crate's footprint, nothing left at the cell's edge."""
    # Texel to cell coordinates (image row 0 is the cell's far edge, -z).
    px = (x + 0.5) / size * 3 - 1.5
    pz = (y + 0.5) / size * 3 - 1.5
    # The light comes from above, left and front: the shadow leans back and right.
    px -= 0.12
    pz += 0.18
    a = math.radians(degrees)
    # Into the crate's frame (the inverse of box()'s turn).
    lx = px * math.cos(a) - pz * math.sin(a)
    lz = px * math.sin(a) + pz * math.cos(a)
    h = crate_size / 2
    d = math.hypot(max(abs(lx) - h, 0), max(abs(lz) - h, 0))
    reach = 0.6
    closeness = max(0.0, 1 - d / reach)
    return 1 - 0.6 * closeness ** 1.6


def write_textures():
    write_png("assets/floor.png", 128, floor)
    for name, _, crate_size, degrees in SHADOWS:
        write_png(
            f"assets/{name}.png",
            128,
            lambda x, y: shade(floor(x, y), contact_shadow(x, y, 128, crate_size, degrees)),
        )
    write_png("assets/wall.png", 64, wall)
    for name, factor in (("crate_top", 1.12), ("crate_lit", 0.9), ("crate_dark", 0.62)):
        write_png(f"assets/{name}.png", 64, lambda x, y: shade(crate(x, y, 64), factor))


# --- geometry -------------------------------------------------------------------------

def sub(a, b):
    return tuple(p - q for p, q in zip(a, b))


def dot(a, b):
    return sum(p * q for p, q in zip(a, b))


def normalize(v):
    length = math.sqrt(dot(v, v))
    return tuple(c / length for c in v)


FORWARD = normalize(sub(LOOK_AT, CAMERA))


def depth(p):
    return dot(sub(p, CAMERA), FORWARD)


class Obj:
    def __init__(self):
        self.lines = []
        self.vertices = 0
        self.material = None

    def quad(self, material, corners, uvs=((0, 0), (1, 0), (1, 1), (0, 1))):
        """A quad (corners counter-clockwise from outside, lower left first) and the
        texture coordinates of its corners."""
        if self.material != material:
            self.lines.append(f"usemtl {material}")
            self.material = material
        for p in corners:
            self.lines.append("v " + " ".join(number(c) for c in p))
        for uv in uvs:
            self.lines.append("vt " + " ".join(number(c) for c in uv))
        base = self.vertices + 1
        self.vertices += 4
        self.lines.append("f " + " ".join(f"{base + k}/{base + k}" for k in range(4)))


def number(c):
    text = f"{c:.4f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def cell_edges(low, high, first, step):
    """Edges of grid cells `first + k * step` clipped to [low, high]."""
    edges = [low]
    edge = first
    while edge < high:
        if edge > low:
            edges.append(edge)
        edge += step
    return edges + [high]


def room(obj):
    obj.lines.append("# floor, y = 0: 3 x 3 cells (clipped at the walls) in front of the camera;")
    obj.lines.append("# the cells under the two standing crates carry their contact shadows")
    xs = cell_edges(-9, 6, -10.5, 3)
    zs = cell_edges(-6, 6, -7.5, 3)
    for x0, x1 in zip(xs, xs[1:]):
        for z0, z1 in zip(zs, zs[1:]):
            corners = [(x0, 0, z1), (x1, 0, z1), (x1, 0, z0), (x0, 0, z0)]
            # Nothing may lie behind the camera: BIU has no t > 0 test.
            if min(depth(c) for c in corners) <= 0.3:
                continue
            # Texture coordinates from the cell's full 3 x 3 square, so clipped cells
            # continue the pattern.
            cx = math.floor((x0 + 1.5) / 3) * 3 - 1.5
            cz = math.floor((z0 + 1.5) / 3) * 3 - 1.5
            uvs = [((x - cx) / 3, (cz + 3 - z) / 3) for x, _, z in corners]
            material = "floor"
            for name, (sx, sz), _, _ in SHADOWS:
                if (cx + 1.5, cz + 1.5) == (sx, sz):
                    material = name
            obj.quad(material, corners, uvs)
    obj.lines.append("# back wall, z = -6")
    for x in range(-9, 6, 3):
        for y in range(0, 9, 3):
            obj.quad("wall", [(x, y, -6), (x + 3, y, -6), (x + 3, y + 3, -6), (x, y + 3, -6)])
    obj.lines.append("# left wall, x = -9")
    for z in range(-6, 6, 3):
        for y in range(0, 9, 3):
            obj.quad("wall", [(-9, y, z + 3), (-9, y, z), (-9, y + 3, z), (-9, y + 3, z + 3)])


def box(obj, centre, size, degrees):
    """A crate standing on y = centre[1], turned `degrees` about y; no bottom face."""
    a = math.radians(degrees)
    h = size / 2

    def corner(dx, dy, dz):
        x, z = dx * math.cos(a) + dz * math.sin(a), -dx * math.sin(a) + dz * math.cos(a)
        return (centre[0] + x, centre[1] + h + dy, centre[2] + z)

    light = normalize(LIGHT)
    faces = [  # outward normal (before turning), corners from outside: lower left first
        ((0, 0, 1), [(-h, -h, h), (h, -h, h), (h, h, h), (-h, h, h)]),
        ((1, 0, 0), [(h, -h, h), (h, -h, -h), (h, h, -h), (h, h, h)]),
        ((0, 0, -1), [(h, -h, -h), (-h, -h, -h), (-h, h, -h), (h, h, -h)]),
        ((-1, 0, 0), [(-h, -h, -h), (-h, -h, h), (-h, h, h), (-h, h, -h)]),
        ((0, 1, 0), [(-h, h, h), (h, h, h), (h, h, -h), (-h, h, -h)]),
    ]
    for normal, corners in faces:
        nx, ny, nz = normal
        turned = (nx * math.cos(a) + nz * math.sin(a), ny, -nx * math.sin(a) + nz * math.cos(a))
        facing = dot(turned, light)
        material = "crate_top" if facing > 0.7 else "crate_lit" if facing > 0.2 else "crate_dark"
        obj.quad(material, [corner(*c) for c in corners])


def write_scene():
    obj = Obj()
    obj.lines += [
        "# The default scene of theia: a corner of a brick room, a stone floor, three crates.",
        "# Generated by assets/generate.py (run from the repository root); do not edit.",
        "mtllib default.mtl",
    ]
    room(obj)
    obj.lines.append("# crates")
    for _, (x, z), size, degrees in SHADOWS:
        box(obj, (x, 0.0, z), size, degrees)
    box(obj, (0.15, 2.0, -0.1), 1.1, -18)
    with open("scenes/default.obj", "w") as f:
        f.write("\n".join(obj.lines) + "\n")
    materials = [
        "# Materials of the default scene (generated by assets/generate.py).",
        "# Kd is the colour shown if a texture is missing.",
    ]
    for name, kd, texture in (
        ("floor", "0.78 0.74 0.68", "floor.png"),
        ("floor_shadow_big", "0.70 0.66 0.60", "floor_shadow_big.png"),
        ("floor_shadow_small", "0.70 0.66 0.60", "floor_shadow_small.png"),
        ("wall", "0.62 0.30 0.22", "wall.png"),
        ("crate_top", "0.80 0.58 0.34", "crate_top.png"),
        ("crate_lit", "0.66 0.47 0.27", "crate_lit.png"),
        ("crate_dark", "0.45 0.32 0.19", "crate_dark.png"),
    ):
        materials += ["", f"newmtl {name}", f"Kd {kd}", f"map_Kd ../assets/{texture}"]
    with open("scenes/default.mtl", "w") as f:
        f.write("\n".join(materials) + "\n")


write_textures()
write_scene()
