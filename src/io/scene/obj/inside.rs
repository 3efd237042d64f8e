//! Where an `--inside` camera goes: the most open point inside the model, facing the
//! longest free direction. The model's surface is sampled into a grid of cubic cells
//! (points at most half a cell apart on every triangle, so a wall is a closed layer of
//! cells whatever its triangles' size); each empty cell's clearance is its distance to the
//! nearest occupied one; a cell is inside when walking from it along each axis meets an
//! occupied cell before the grid ends, above, below and on at least two of the four
//! sides (a doorway may let a side out, and a tunnel is open at both ends). The camera goes to the inside cell of
//! most clearance (the nearest to the centre among equals), at its centre, and looks along
//! the level direction, of sixteen, with the longest walk before a wall. Thick walls, a
//! camera on the furniture or in the wall, are what the bounds-based placement gave.

use std::collections::VecDeque;

use glam::DVec3;

/// Cells along each side of a cube of the bounds' volume.
const CELLS: f64 = 48.0;

/// The camera and the point it looks at (upright coordinates), if some cell is inside.
pub fn open_space(
    positions: &[DVec3],
    triangles: impl IntoIterator<Item = [usize; 3]>,
) -> Option<(DVec3, DVec3)> {
    let (min, max) = positions.iter().fold(
        (DVec3::splat(f64::MAX), DVec3::splat(f64::MIN)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    let extent = max - min;
    // Cubic cells, about CELLS³ of them over the bounds (a flat side counts as 1/64 of the
    // longest), so that a long tunnel gets cells across its width too.
    let longest = extent.max_element();
    let volume = extent.max(DVec3::splat(longest / 64.0)).element_product();
    let cell = (volume.cbrt() / CELLS).max(longest / 1024.0);
    if !(cell.is_finite() && cell > 0.0) {
        return None;
    }
    let size = ((extent / cell).ceil().as_uvec3() + 1).max(glam::UVec3::ONE);
    let grid = Grid {
        min,
        cell,
        size: [size.x as usize, size.y as usize, size.z as usize],
    };
    let mut occupied = vec![false; grid.len()];
    for [a, b, c] in triangles {
        grid.sample(positions[a], positions[b], positions[c], &mut occupied);
    }
    let clearance = grid.clearance(&occupied);
    let centre = (min + max) / 2.0;
    let best = (0..grid.len())
        .filter(|&i| !occupied[i] && grid.enclosed(i, &occupied))
        .max_by(|&a, &b| {
            let distance = |i| (grid.centre(i) - centre).length();
            clearance[a]
                .cmp(&clearance[b])
                .then(distance(b).total_cmp(&distance(a)))
        })?;
    let camera = grid.centre(best);
    let direction = (0..16)
        .map(|k| {
            let angle = f64::from(k) * std::f64::consts::PI / 8.0;
            DVec3::new(angle.sin(), 0.0, angle.cos())
        })
        .max_by(|a, b| {
            let free = |d: &DVec3| grid.free_walk(camera, *d, &occupied);
            free(a).total_cmp(&free(b))
        })?;
    Some((camera, camera + direction * extent.length() / 4.0))
}

struct Grid {
    min: DVec3,
    cell: f64,
    size: [usize; 3],
}

impl Grid {
    fn len(&self) -> usize {
        self.size.iter().product()
    }

    fn index(&self, [x, y, z]: [usize; 3]) -> usize {
        (z * self.size[1] + y) * self.size[0] + x
    }

    fn coordinates(&self, index: usize) -> [usize; 3] {
        let [w, h, _] = self.size;
        [index % w, index / w % h, index / (w * h)]
    }

    fn cell_of(&self, p: DVec3) -> Option<[usize; 3]> {
        let c = ((p - self.min) / self.cell).floor();
        let fits = |v: f64, n: usize| v >= 0.0 && v < n as f64;
        (fits(c.x, self.size[0]) && fits(c.y, self.size[1]) && fits(c.z, self.size[2])).then_some([
            c.x as usize,
            c.y as usize,
            c.z as usize,
        ])
    }

    fn centre(&self, index: usize) -> DVec3 {
        let [x, y, z] = self.coordinates(index).map(|v| v as f64 + 0.5);
        self.min + DVec3::new(x, y, z) * self.cell
    }

    /// Marks the cells of points at most half a cell apart over the triangle.
    fn sample(&self, a: DVec3, b: DVec3, c: DVec3, occupied: &mut [bool]) {
        // Half a cell apart along each edge from `a` (at most 4096 steps: a triangle larger
        // than that marks a dotted layer); a sliver takes few points.
        let steps = |e: DVec3| ((2.0 * e.length() / self.cell).ceil() as usize).clamp(1, 4096);
        // From an end of the shortest edge, along it: a sliver takes few points.
        let (a, b, c) = [(a, b, c), (b, c, a), (c, a, b)]
            .into_iter()
            .min_by(|x, y| (x.1 - x.0).length().total_cmp(&(y.1 - y.0).length()))
            .expect("three edges");
        let (nu, nv) = (steps(b - a), steps(c - a));
        for i in 0..=nu {
            let u = i as f64 / nu as f64;
            for j in 0..=nv {
                let v = j as f64 / nv as f64;
                if u + v > 1.0 + 1e-9 {
                    break;
                }
                if let Some(cell) = self.cell_of(a + (b - a) * u + (c - a) * v) {
                    occupied[self.index(cell)] = true;
                }
            }
        }
    }

    /// Each cell's distance, in cells (6-connected steps), to the nearest occupied one.
    fn clearance(&self, occupied: &[bool]) -> Vec<u32> {
        let mut distance = vec![u32::MAX; self.len()];
        let mut queue: VecDeque<usize> = VecDeque::new();
        for (i, &full) in occupied.iter().enumerate() {
            if full {
                distance[i] = 0;
                queue.push_back(i);
            }
        }
        while let Some(i) = queue.pop_front() {
            let c = self.coordinates(i);
            for axis in 0..3 {
                for step in [-1i64, 1] {
                    let v = c[axis] as i64 + step;
                    if v < 0 || v >= self.size[axis] as i64 {
                        continue;
                    }
                    let mut n = c;
                    n[axis] = v as usize;
                    let j = self.index(n);
                    if distance[j] == u32::MAX {
                        distance[j] = distance[i] + 1;
                        queue.push_back(j);
                    }
                }
            }
        }
        distance
    }

    /// Whether walking from cell `i` meets an occupied cell below, above and on at least
    /// two of the four level sides (a tunnel is open at both ends).
    fn enclosed(&self, i: usize, occupied: &[bool]) -> bool {
        let c = self.coordinates(i);
        let meets = |axis: usize, step: i64| {
            let mut n = c;
            loop {
                let v = n[axis] as i64 + step;
                if v < 0 || v >= self.size[axis] as i64 {
                    return false;
                }
                n[axis] = v as usize;
                if occupied[self.index(n)] {
                    return true;
                }
            }
        };
        let sides = [(0, -1), (0, 1), (2, -1), (2, 1)];
        meets(1, -1) && meets(1, 1) && sides.iter().filter(|&&(a, s)| meets(a, s)).count() >= 2
    }

    /// How far from `from` along `direction` before an occupied cell or the grid's end.
    fn free_walk(&self, from: DVec3, direction: DVec3, occupied: &[bool]) -> f64 {
        let step = self.cell / 2.0;
        let mut travelled = 0.0;
        loop {
            travelled += step;
            match self.cell_of(from + direction * travelled) {
                Some(cell) if !occupied[self.index(cell)] => {}
                _ => return travelled,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A box room 10 x 3 x 6 with a 1 x 1 x 1 crate near one corner: the camera goes to
    /// the open middle, and looks along the room's length.
    #[test]
    fn the_camera_goes_to_the_open_middle_and_looks_down_the_room() {
        let mut positions = Vec::new();
        let mut triangles = Vec::new();
        let mut cuboid = |lo: DVec3, hi: DVec3| {
            let base = positions.len();
            for k in 0..8 {
                let pick = |bit: usize, a: f64, b: f64| if k >> bit & 1 == 0 { a } else { b };
                positions.push(DVec3::new(
                    pick(0, lo.x, hi.x),
                    pick(1, lo.y, hi.y),
                    pick(2, lo.z, hi.z),
                ));
            }
            for face in [
                [0, 1, 3, 2],
                [4, 5, 7, 6],
                [0, 1, 5, 4],
                [2, 3, 7, 6],
                [0, 2, 6, 4],
                [1, 3, 7, 5],
            ] {
                triangles.push([base + face[0], base + face[1], base + face[2]]);
                triangles.push([base + face[0], base + face[2], base + face[3]]);
            }
        };
        cuboid(DVec3::ZERO, DVec3::new(10.0, 3.0, 6.0));
        cuboid(DVec3::new(0.5, 0.0, 0.5), DVec3::new(1.5, 1.0, 1.5));
        let (camera, look_at) = open_space(&positions, triangles).unwrap();
        assert!(
            (camera - DVec3::new(5.0, 1.5, 3.0)).length() < 1.0,
            "{camera}"
        );
        // Along the room's length (of sixteen directions, the one towards a far corner
        // walks farthest).
        let direction = (look_at - camera).normalize();
        assert!(direction.x.abs() > 0.9, "{direction}");
    }
}
