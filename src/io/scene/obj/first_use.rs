//! The order in which a model's triangles first use the entries of one of its lists
//! (positions, normals), corner by corner in file order, found on all threads: the fit's
//! sequential folds and the normals' texture memory keep that order, so the result is the
//! one a single pass over the corners gives.
//!
//! The first use of each entry is the least corner number (3 · triangle + corner) that
//! names it (an atomic minimum, on all threads); each chunk of triangles then counts the
//! first uses it holds, and with the prefix sums of those counts places them.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rayon::prelude::*;

use super::load::{ObjTriangle, NO_INDEX};

/// Triangles per chunk.
const CHUNK: usize = 1 << 14;

/// The entries of a list of `count` that `entry` (of a triangle and a corner, 0..3; None:
/// that corner uses none) names, in the order of their first use, and the rank of each
/// entry in that order ([`NO_INDEX`] for entries no corner names).
pub fn first_uses(
    triangles: &[ObjTriangle],
    count: usize,
    entry: impl Fn(&ObjTriangle, usize) -> Option<usize> + Sync,
) -> (Vec<usize>, Vec<u32>) {
    let first: Vec<AtomicU64> = (0..count)
        .into_par_iter()
        .map(|_| AtomicU64::new(u64::MAX))
        .collect();
    let numbered = |index: usize, chunk| numbered_uses(index * CHUNK, chunk, &entry);
    let chunks = || triangles.par_chunks(CHUNK).enumerate();
    chunks().for_each(|(index, chunk)| {
        for (number, at) in numbered(index, chunk) {
            // Within a chunk numbers grow: most corners only read.
            if number < first[at].load(Ordering::Relaxed) {
                first[at].fetch_min(number, Ordering::Relaxed);
            }
        }
    });
    let is_first = |&(number, at): &(u64, usize)| first[at].load(Ordering::Relaxed) == number;
    let counts: Vec<usize> = chunks()
        .map(|(index, chunk)| numbered(index, chunk).filter(is_first).count())
        .collect();
    let mut order = vec![0; counts.iter().sum()];
    let mut slots = Vec::with_capacity(counts.len());
    let mut rest = order.as_mut_slice();
    for &count in &counts {
        let (slot, after) = rest.split_at_mut(count);
        slots.push(slot);
        rest = after;
    }
    let rank: Vec<AtomicU32> = (0..count)
        .into_par_iter()
        .map(|_| AtomicU32::new(NO_INDEX))
        .collect();
    let starts = counts.iter().scan(0, |sum, &count| {
        *sum += count;
        Some(*sum - count)
    });
    let jobs: Vec<_> = slots.into_iter().zip(starts).collect();
    (jobs.into_par_iter().zip(chunks())).for_each(|((slot, start), (index, chunk))| {
        for (k, (_, at)) in numbered(index, chunk).filter(is_first).enumerate() {
            // Fewer than NO_INDEX entries: the model's lists are indexed by u32.
            rank[at].store((start + k) as u32, Ordering::Relaxed);
            slot[k] = at;
        }
    });
    let rank = rank.into_par_iter().map(AtomicU32::into_inner).collect();
    (order, rank)
}

/// The uses in `chunk` (its first triangle number `start`) as (corner number, entry).
fn numbered_uses<'a>(
    start: usize,
    chunk: &'a [ObjTriangle],
    entry: &'a (impl Fn(&ObjTriangle, usize) -> Option<usize> + Sync),
) -> impl Iterator<Item = (u64, usize)> + 'a {
    (chunk.iter().enumerate()).flat_map(move |(t, triangle)| {
        let number = 3 * (start + t) as u64;
        (0..3).filter_map(move |k| entry(triangle, k).map(|at| (number + k as u64, at)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::scene::obj::Corner;

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
        let triangles: Vec<ObjTriangle> = (0..3 * CHUNK + 77)
            .map(|t| ObjTriangle {
                // Later triangles reach further entries: first uses in every chunk.
                corners: [0; 3].map(|_| Corner {
                    position: (next() % (1 + t * count / (3 * CHUNK)).min(count)) as u32,
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
            assert_eq!(first_uses(&triangles, count, entry), (order, rank));
        }
    }
}
