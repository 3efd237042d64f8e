//! The order in which a model's triangles first use the entries of one of its lists
//! (positions, normals), corner by corner in file order, found on all threads: the fit's
//! sequential folds and the normals' texture memory keep that order, so the result is the
//! one a single pass over the corners gives.
//!
//! The first use of each entry is the least corner number (3 · triangle + corner) that
//! names it (an atomic minimum, on all threads); each chunk of triangles then counts the
//! first uses it holds, and with the prefix sums of those counts places them.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::load::ObjTriangle;

/// The entries a model's triangles use, in the order of their first use, and the rank of
/// each in that order.
pub struct FirstUses {
    pub order: Vec<usize>,
    /// Per entry: its rank, or u64::MAX where no corner names it.
    rank: Vec<AtomicU64>,
}

impl FirstUses {
    /// The place of entry `at` in [`FirstUses::order`] (None: no corner names it).
    pub fn rank(&self, at: usize) -> Option<usize> {
        let rank = self.rank[at].load(Ordering::Relaxed);
        (rank != u64::MAX).then_some(rank as usize)
    }
}

/// The entries of a list of `count` that `entry` (of a triangle and a corner, 0..3; None:
/// that corner uses none) names, in the order of their first use.
pub fn first_uses(
    triangles: &[ObjTriangle],
    count: usize,
    entry: impl Fn(&ObjTriangle, usize) -> Option<usize> + Sync,
) -> FirstUses {
    let first: Vec<AtomicU64> = (0..count)
        .into_par_iter()
        .map(|_| AtomicU64::new(u64::MAX))
        .collect();
    let chunk_len = super::triangle_chunk_len(triangles.len());
    let chunks = || triangles.par_chunks(chunk_len).enumerate();
    chunks().for_each(|(index, chunk)| {
        for_each_use(index * chunk_len, chunk, &entry, |number, at| {
            // Within a chunk numbers grow: most corners only read.
            if number < first[at].load(Ordering::Relaxed) {
                first[at].fetch_min(number, Ordering::Relaxed);
            }
        });
    });
    let firsts: Vec<Vec<usize>> = chunks()
        .map(|(index, chunk)| {
            let mut firsts = Vec::new();
            for_each_use(index * chunk_len, chunk, &entry, |number, at| {
                if first[at].load(Ordering::Relaxed) == number {
                    firsts.push(at);
                }
            });
            firsts
        })
        .collect();
    let mut order = vec![0; firsts.iter().map(Vec::len).sum()];
    let mut slots = Vec::with_capacity(firsts.len());
    let mut rest = order.as_mut_slice();
    for chunk in &firsts {
        let (slot, after) = rest.split_at_mut(chunk.len());
        slots.push(slot);
        rest = after;
    }
    (slots.into_par_iter().zip(&firsts)).for_each(|(slot, chunk)| slot.copy_from_slice(chunk));
    // The first uses are found: `first` becomes the ranks.
    (order.par_iter().enumerate()).for_each(|(rank, &at)| {
        first[at].store(rank as u64, Ordering::Relaxed);
    });
    FirstUses { order, rank: first }
}

/// Calls `f` with each use in `chunk` (its first triangle number `start`): the corner's
/// number and the entry.
fn for_each_use(
    start: usize,
    chunk: &[ObjTriangle],
    entry: &impl Fn(&ObjTriangle, usize) -> Option<usize>,
    mut f: impl FnMut(u64, usize),
) {
    for (t, triangle) in chunk.iter().enumerate() {
        let number = 3 * (start + t) as u64;
        for k in 0..3 {
            if let Some(at) = entry(triangle, k) {
                f(number + k as u64, at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::MOST_CHUNK_TRIANGLES;
    use super::*;
    use crate::io::scene::obj::{Corner, NO_INDEX};

    /// First uses found on all threads, across chunks, are those of one pass in order.
    #[test]
    fn first_uses_are_those_of_one_pass() {
        let count = 5000;
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as usize
        };
        let triangles: Vec<ObjTriangle> = (0..3 * MOST_CHUNK_TRIANGLES + 77)
            .map(|t| ObjTriangle {
                // Later triangles reach further entries: first uses in every chunk.
                corners: [0; 3].map(|_| Corner {
                    position: (next() % (1 + t * count / (3 * MOST_CHUNK_TRIANGLES)).min(count))
                        as u32,
                    texcoord: NO_INDEX,
                    normal: if next() % 3 == 0 {
                        NO_INDEX
                    } else {
                        (next() % 300) as u32
                    },
                }),
                material: NO_INDEX,
            })
            .collect();
        type Entry = fn(&ObjTriangle, usize) -> Option<usize>;
        let entries: [Entry; 2] = [
            |t, k| Some(t.corners[k].position()),
            |t, k| t.corners[k].normal(),
        ];
        for entry in entries {
            let (mut order, mut rank) = (Vec::new(), vec![NO_INDEX; count]);
            for triangle in &triangles {
                for k in 0..3 {
                    if let Some(at) = entry(triangle, k) {
                        if rank[at] == NO_INDEX {
                            rank[at] = order.len() as u32;
                            order.push(at);
                        }
                    }
                }
            }
            assert!(order.len() > 200);
            let uses = first_uses(&triangles, count, entry);
            assert_eq!(uses.order, order);
            let ranks: Vec<u32> = (0..count)
                .map(|at| uses.rank(at).map_or(NO_INDEX, |r| r as u32))
                .collect();
            assert_eq!(ranks, rank);
        }
    }
}
