//! The build's verdicts in double precision, four nodes at a time: several times faster
//! than the exact integers, and sound by construction.
//!
//! A node's spans are written as a centre and a half-width: over the node, c·R lies within
//! (c·mid2 ± |c|·half2) / 2, mid2 and half2 being twice the centre and twice the
//! half-extent of the node's rays. The four nodes of a [`Group`] share one half-extent,
//! the widest of theirs per lane (siblings' rays differ little in extent), so a group
//! costs four centres per form and one vector of half-widths; and a sign flip of a span
//! (for Δ < 0) is a flip of its centre. A wider span only makes a verdict less decisive:
//! each condition must hold for every value of its spans.
//!
//! For a triangle whose |c|·|R| sums are below [`NARROW`] (checked per triangle), every
//! value on the way (coefficients scaled to raw units, centres, half-widths, bounds) is
//! below 2^45 raw units in magnitude, so each rounding is off by at most 2^-8 raw units.
//! A bound takes at most 14 of them (three coefficients, a product and two fused
//! multiply-adds for the centre, the same for the half-width, adding the margin, adding
//! centre and half-width): under 0.06 raw units in all. A margin of error + 2 raw units
//! on each side therefore puts every computed bound more than 0.9 raw units outside the
//! exact span (floor and ceil, ± error). The verdict then scales by powers of two (exact)
//! and adds at most three bounds (each addition off by at most 2^-6), which that slack
//! absorbs: every condition that holds for the computed bounds holds for the exact ones.
//! A unit test checks that too. With AVX2 and FMA (detected at run time) the four nodes
//! are judged in one vector each; without them lane by lane, with the same operations in
//! the same order, so the two give identical verdicts (tested).
//!
//! The descent over the tree's [`Group`]s lives here too, and also serves the rare wide
//! triangle (the exact verdict, lane by lane) and the unbounded one (a candidate
//! everywhere).

use super::fixed::{FixedForms, FixedLanes, Quad};
use super::{Exit, Forms, Node, NodeKind, Verdict, H3_ERROR, UNSETTLED};
use rayon::prelude::*;
use std::sync::{Mutex, PoisonError};

/// The doubled numerators' scales: one more halving than the forms' (2^-34 and 2^-17).
/// [`FloatForms`] holds its coefficients scaled: a power of two commutes with every
/// rounding of the sums (no value comes near the subnormals), so the spans are the same
/// to the bit as scaling after summing, one multiplication fewer per span.
const DELTA_SCALE: f64 = 1.0 / (1u64 << 35) as f64;
const H3_SCALE: f64 = 1.0 / (1u64 << 18) as f64;

/// A triangle's [`Forms`] in double precision, scaled (`DELTA_SCALE`, `H3_SCALE`), with
/// each error bound widened by the rounding margin.
#[derive(Clone, Copy, Debug)]
pub(super) struct FloatForms {
    delta: [f64; 3],
    h2: [f64; 3],
    h3: [f64; 3],
    /// [ray lane]: the coefficients' magnitudes of Δ, H2 and H3 (the fourth place unused,
    /// so that the three half-widths of a group come out of one vector).
    magnitudes: [[f64; 4]; 3],
    /// The margins of Δ, H2 and H3.
    margins: [f64; 4],
}

impl FloatForms {
    /// `forms` must satisfy [`Forms::narrow`].
    pub(super) fn new(forms: &Forms) -> FloatForms {
        // Through i64 where it fits: i128 to f64 is a slow library call, which the
        // optimiser puts back in place of the i64 conversion unless kept from seeing it.
        let to_f64 = |v: i128| match i64::try_from(v) {
            Ok(v) => std::hint::black_box(v) as f64,
            Err(_) => v as f64,
        };
        let float = |c: [i128; 3], scale: f64| c.map(|v| to_f64(v) * scale);
        let (delta, h2, h3) = (
            float(forms.delta, DELTA_SCALE),
            float(forms.h2, DELTA_SCALE),
            float(forms.h3, H3_SCALE),
        );
        let margin = |error: i128| to_f64(error) + 2.0;
        FloatForms {
            delta,
            h2,
            h3,
            magnitudes: std::array::from_fn(|lane| {
                [delta[lane].abs(), h2[lane].abs(), h3[lane].abs(), 0.0]
            }),
            margins: [
                margin(forms.delta_error),
                margin(forms.h2_error),
                margin(H3_ERROR),
                0.0,
            ],
        }
    }

    /// The half-widths of Δ, H2 and H3 over `group`, margins included.
    #[inline(always)]
    fn halves(&self, group: &Group) -> [f64; 3] {
        let m = &self.magnitudes;
        std::array::from_fn(|form| {
            let half = [m[0][form], m[1][form], m[2][form]];
            dot(half, [group.half2[0], group.half2[1], group.half2[2]]) + self.margins[form]
        })
    }
}

/// c·r as the kernels compute it: one product and two fused multiply-adds.
#[inline(always)]
fn dot(c: [f64; 3], r: [f64; 3]) -> f64 {
    c[2].mul_add(r[2], c[1].mul_add(r[1], c[0] * r[0]))
}

/// Up to four nodes judged together: the children of a split node, or the root alone.
/// Aligned to a cache line (the faithful verdicts read the first three).
#[derive(Clone, Copy, Debug)]
#[repr(align(64))]
pub(super) struct Group {
    /// [ray lane][node]: twice the centre of the node's rays.
    mid2: [[f64; 4]; 3],
    /// Per ray lane, the greatest twice-half-extent of the nodes' rays (the fourth place
    /// unused).
    half2: [f64; 4],
    /// [ray lane][node]: each node's own twice-half-extent (the fixed ROM's verdicts).
    halves2: [[f64; 4]; 3],
    nodes: [u32; 4],
    /// Each leaf's tile (read only where `finds` has its bit).
    tiles: [u32; 4],
    /// Each split node's own group (its children), by place in the groups.
    children: [u32; 4],
    count: u8,
    /// Bit k set when place k holds a split node, or a leaf: where an unsettled verdict
    /// descends, or finds a candidate (both clear for unused places).
    descends: u8,
    finds: u8,
}

impl Group {
    fn new(nodes: &[Node], members: &[u32]) -> Group {
        let mut group = Group {
            mid2: [[0.0; 4]; 3],
            half2: [0.0; 4],
            halves2: [[0.0; 4]; 3],
            nodes: [0; 4],
            tiles: [0; 4],
            children: [0; 4],
            count: members.len() as u8,
            descends: 0,
            finds: 0,
        };
        // Unused places repeat the first node; their verdicts are ignored.
        for k in 0..4 {
            let member = members[k.min(members.len() - 1)];
            let node = &nodes[member as usize];
            group.nodes[k] = member;
            let used = u8::from(k < members.len()) << k;
            match node.kind {
                NodeKind::Leaf(tile) => {
                    group.tiles[k] = tile;
                    group.finds |= used;
                }
                NodeKind::Split(..) => group.descends |= used,
            }
            for lane in 0..3 {
                // Below 2^33 in magnitude: exact.
                group.mid2[lane][k] = node.around.mid2[lane] as f64;
                group.half2[lane] = group.half2[lane].max(node.around.half2[lane] as f64);
                group.halves2[lane][k] = node.around.half2[lane] as f64;
            }
        }
        group
    }

    /// What the node at place `k` leads to: the group of its children (a split node), its
    /// tile (a leaf), or nothing (a node left out, or a place unused).
    pub(super) fn below(&self, k: usize) -> Below {
        let bit = 1 << k;
        if self.finds & bit != 0 {
            Below::Tile(self.tiles[k])
        } else if self.descends & bit != 0 {
            Below::Group(self.children[k])
        } else {
            Below::Nothing
        }
    }

    /// The group with its nodes that `keep` refuses neither descended into nor finding
    /// candidates, and its kept split nodes' own groups numbered from `first_child` on.
    fn pruned(mut self, nodes: &[Node], keep: impl Fn(u32) -> bool, first_child: u32) -> Group {
        let mut child = first_child;
        for k in 0..self.count as usize {
            let member = self.nodes[k];
            if !keep(member) {
                self.descends &= !(1 << k);
                self.finds &= !(1 << k);
            } else if let NodeKind::Split(..) = nodes[member as usize].kind {
                self.children[k] = child;
                child += 1;
            }
        }
        self
    }
}

/// See [`Group::below`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Below {
    Group(u32),
    Tile(u32),
    Nothing,
}

/// The root alone, then each split node's children as a [`Group`], breadth first: the
/// order the descent visits them in, so that the groups one triangle needs lie close
/// together, and leaves take no place. Only nodes `keep` accepts are descended into or
/// find candidates; the others stay in their groups, so that each group's shared
/// half-extent, and with it every verdict, is the whole tree's.
pub(super) fn groups(nodes: &[Node], root: u32, keep: impl Fn(u32) -> bool + Sync) -> Vec<Group> {
    let kept_split = |member: u32| match nodes[member as usize].kind {
        NodeKind::Split(children, count) if keep(member) => Some((children, count as usize)),
        _ => None,
    };
    // The order first (node numbers only), a level at a time, each level's groups from the
    // one above on all threads: on one thread, the order and the children's numbers were
    // 7 ms of the 18 at 1080p, where every other step of a build runs on all threads.
    let mut members: Vec<([u32; 4], usize)> = vec![([root; 4], 1)];
    let mut level = 0;
    while level < members.len() {
        let next: Vec<([u32; 4], usize)> = (members[level..].par_iter())
            .flat_map_iter(|(group, count)| group[..*count].iter().filter_map(|&m| kept_split(m)))
            .collect();
        level = members.len();
        members.extend(next);
    }
    // The groups of each group's kept split nodes follow those of the groups before it.
    let splits: Vec<u32> = (members.par_iter())
        .map(|(group, count)| {
            group[..*count]
                .iter()
                .filter(|&&m| kept_split(m).is_some())
                .count() as u32
        })
        .collect();
    let first_children: Vec<u32> = (splits.iter())
        .scan(1, |next, &count| {
            let first = *next;
            *next += count;
            Some(first)
        })
        .collect();
    (members.par_iter().zip(first_children))
        .map(|((group, count), first_child)| {
            Group::new(nodes, &group[..*count]).pruned(nodes, &keep, first_child)
        })
        .collect()
}

const EXIT_U: u8 = Verdict::Exit(Exit::U).code();
const EXIT_V: u8 = Verdict::Exit(Exit::V).code();
const EXIT_SUM: u8 = Verdict::Exit(Exit::Sum).code();
const REJECTED: u8 = Verdict::Rejected.code();

/// The verdicts for the nodes of `group`, lane by lane: [`Forms::verdict`]'s conditions on
/// the spans centre ± half-width, with Δ's sign folded into the centres.
#[inline(always)]
fn verdicts_portable(forms: &FloatForms, group: &Group) -> [u8; 4] {
    let [delta_half, a_half, b_half] = forms.halves(group);
    std::array::from_fn(|k| {
        let mid2 = group.mid2.map(|lane| lane[k]);
        let delta_mid = dot(forms.delta, mid2);
        let negative = delta_mid.is_sign_negative();
        let flip = |x: f64| if negative { -x } else { x };
        let (d_mid, a_mid, b_mid) = (
            delta_mid.abs(),
            flip(dot(forms.h2, mid2)),
            flip(dot(forms.h3, mid2)),
        );
        let (d_lo, d_hi) = (d_mid - delta_half, d_mid + delta_half);
        let (a_lo, a_hi) = (a_mid - a_half, a_mid + a_half);
        let (b_lo, b_hi) = (b_mid - b_half, b_mid + b_half);
        let settled = d_lo > 0.0;
        let minus_wrap = d_lo * -16384.0;
        // With d_hi > 0, hi·-2^17 >= d_hi implies hi < 0.
        let negative_quotient = |lo: f64, hi: f64| hi * -131072.0 >= d_hi && lo > minus_wrap;
        let (u_negative, v_negative) =
            (negative_quotient(a_lo, a_hi), negative_quotient(b_lo, b_hi));
        // (A + B)·2^17 >= (2^17 + 2)·D, and no wrap: |A| + |B| < 2^14·D.
        let magnitudes = (a_mid.abs() + a_half) + (b_mid.abs() + b_half);
        let beyond_sum =
            ((a_lo + b_lo) - d_hi) * 131072.0 >= d_hi + d_hi && magnitudes < d_lo * 16384.0;
        let (u_sure, v_sure) = (a_lo >= 0.0, b_lo >= 0.0);
        if !settled {
            UNSETTLED
        } else if u_negative {
            EXIT_U
        } else if !(v_negative || beyond_sum) {
            UNSETTLED
        } else if !u_sure {
            // v < 0 rejects whatever u is; u + v > 1 rejects whatever the signs are (a
            // negative u or v either exits first or is a zero quotient, and then the other
            // is above 1.0 on its own). Which exit depends on the ray.
            REJECTED
        } else if v_negative {
            EXIT_V
        } else if v_sure {
            EXIT_SUM
        } else {
            REJECTED
        }
    })
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{FloatForms, Group, EXIT_SUM, EXIT_U, EXIT_V, REJECTED, SLACK, WINDOW};

    /// Per mask of four places, the byte shuffle that moves the chosen u32s to the front.
    const LEFT_PACK: [[u8; 16]; 16] = {
        let mut table = [[0x80; 16]; 16];
        let mut mask = 0;
        while mask < 16 {
            let (mut to, mut k) = (0, 0);
            while k < 4 {
                if mask >> k & 1 == 1 {
                    let mut byte = 0;
                    while byte < 4 {
                        table[mask][4 * to + byte] = (4 * k + byte) as u8;
                        byte += 1;
                    }
                    to += 1;
                }
                k += 1;
            }
            mask += 1;
        }
        table
    };

    /// [`super::append`] in one shuffle and one store.
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn append(
        window: &mut [u32; WINDOW],
        len: usize,
        values: [u32; 4],
        mask: u32,
    ) -> usize {
        let at = len % SLACK;
        let place: &mut [u32; 4] = (&mut window[at..at + 4]).try_into().expect("4 places");
        let mask = mask as usize & 0xF;
        // SAFETY: both loads read 16 bytes of a 16-byte array, the store writes the
        // 16 bytes of `place`; unaligned accesses.
        unsafe {
            let values = _mm_loadu_si128(values.as_ptr().cast());
            let shuffle = _mm_loadu_si128(LEFT_PACK[mask].as_ptr().cast());
            _mm_storeu_si128(place.as_mut_ptr().cast(), _mm_shuffle_epi8(values, shuffle));
        }
        len + mask.count_ones() as usize
    }

    /// [`super::verdicts_portable`], one node per vector lane.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn verdicts(forms: &FloatForms, group: &Group) -> [u8; 4] {
        let splat = |x: f64| _mm256_set1_pd(x);
        let load = |a: [f64; 4]| _mm256_set_pd(a[3], a[2], a[1], a[0]);
        // `super::dot`, lane by lane.
        let dot = |c: [__m256d; 3], r: [__m256d; 3]| {
            _mm256_fmadd_pd(
                c[2],
                r[2],
                _mm256_fmadd_pd(c[1], r[1], _mm256_mul_pd(c[0], r[0])),
            )
        };
        let mid2 = group.mid2.map(load);
        let centre = |c: [f64; 3]| dot(c.map(splat), mid2);
        // The three half-widths at once, then each across a vector.
        let half2 = [0, 1, 2].map(|lane| splat(group.half2[lane]));
        let halves = _mm256_add_pd(dot(forms.magnitudes.map(load), half2), load(forms.margins));
        let delta_half = _mm256_permute4x64_pd::<0x00>(halves);
        let a_half = _mm256_permute4x64_pd::<0x55>(halves);
        let b_half = _mm256_permute4x64_pd::<0xAA>(halves);
        let sign = splat(-0.0);
        let delta_mid = centre(forms.delta);
        let negative = _mm256_and_pd(delta_mid, sign);
        let d_mid = _mm256_xor_pd(delta_mid, negative);
        let a_mid = _mm256_xor_pd(centre(forms.h2), negative);
        let b_mid = _mm256_xor_pd(centre(forms.h3), negative);
        let (d_lo, d_hi) = (
            _mm256_sub_pd(d_mid, delta_half),
            _mm256_add_pd(d_mid, delta_half),
        );
        let (a_lo, a_hi) = (_mm256_sub_pd(a_mid, a_half), _mm256_add_pd(a_mid, a_half));
        let (b_lo, b_hi) = (_mm256_sub_pd(b_mid, b_half), _mm256_add_pd(b_mid, b_half));

        let zero = _mm256_setzero_pd();
        let ge = |a: __m256d, b: __m256d| _mm256_cmp_pd::<_CMP_GE_OQ>(a, b);
        let gt = |a: __m256d, b: __m256d| _mm256_cmp_pd::<_CMP_GT_OQ>(a, b);
        let and = |a: __m256d, b: __m256d| _mm256_and_pd(a, b);
        let or = |a: __m256d, b: __m256d| _mm256_or_pd(a, b);
        let abs = |x: __m256d| _mm256_andnot_pd(sign, x);
        let settled = gt(d_lo, zero);
        let minus_wrap = _mm256_mul_pd(d_lo, splat(-16384.0));
        let negative_quotient = |lo: __m256d, hi: __m256d| {
            and(
                ge(_mm256_mul_pd(hi, splat(-131072.0)), d_hi),
                gt(lo, minus_wrap),
            )
        };
        let (u_negative, v_negative) =
            (negative_quotient(a_lo, a_hi), negative_quotient(b_lo, b_hi));
        let magnitudes = _mm256_add_pd(
            _mm256_add_pd(abs(a_mid), a_half),
            _mm256_add_pd(abs(b_mid), b_half),
        );
        let beyond_sum = and(
            ge(
                _mm256_mul_pd(
                    _mm256_sub_pd(_mm256_add_pd(a_lo, b_lo), d_hi),
                    splat(131072.0),
                ),
                _mm256_add_pd(d_hi, d_hi),
            ),
            gt(_mm256_mul_pd(d_lo, splat(16384.0)), magnitudes),
        );
        let (u_sure, v_sure) = (ge(a_lo, zero), ge(b_lo, zero));
        // The chain of `verdicts_portable`, innermost choice first.
        let code = |code: u8| splat(f64::from(code));
        let blend = |no: __m256d, yes: __m256d, mask: __m256d| _mm256_blendv_pd(no, yes, mask);
        let sure = blend(code(REJECTED), code(EXIT_SUM), v_sure);
        let sure = blend(sure, code(EXIT_V), v_negative);
        let rejecting = blend(code(REJECTED), sure, u_sure);
        let rejecting = and(rejecting, or(v_negative, beyond_sum));
        let codes = and(blend(rejecting, code(EXIT_U), u_negative), settled);
        let codes = _mm256_cvttpd_epi32(codes);
        let bytes = _mm_packus_epi16(_mm_packus_epi32(codes, codes), codes);
        _mm_cvtsi128_si32(bytes).to_le_bytes()
    }
}

/// What one build task gathers as its triangles descend the tree: each triangle's
/// candidate tiles (in visiting order, with where each triangle's run ends), what each
/// node skips (by group and place in it, so that a group's counts share a cache line; lent
/// by [`WorkerSkips::counting`] while it visits), and the descent's queue (kept for its
/// allocation).
///
/// The candidates and the queue are written past their ends whatever the verdicts, and
/// their lengths advanced by them: a branch per node is mispredicted too often (with the
/// batches in [`descend`], 11% less build CPU time than branching).
pub(super) struct Collector {
    found: Vec<u32>,
    found_len: usize,
    ends: Vec<u32>,
    /// Per group and place, by verdict code (eight places, so that any code indexes them):
    /// lent by [`WorkerSkips::counting`], empty otherwise.
    skipped: SkipCounts,
    queue: Vec<u32>,
}

/// The most places a batch of groups appends to the candidates or the queue.
const SLACK: usize = 4 * BATCH;
/// A batch's window on a list: each group stores four places at once, the last at most
/// `SLACK - 4` places in.
const WINDOW: usize = SLACK + 4;

/// A build task's candidates: the tiles of its `n`-th triangle are
/// `tiles[ends[n - 1]..ends[n]]`, from 0 for the first.
pub(super) struct Found {
    pub(super) tiles: Vec<u32>,
    pub(super) ends: Vec<u32>,
}

impl Collector {
    pub(super) fn new(groups: &[Group]) -> Collector {
        Collector {
            found: Vec::new(),
            found_len: 0,
            ends: Vec::new(),
            skipped: SkipCounts::default(),
            // A triangle queues each group at most once.
            queue: vec![0; groups.len() + WINDOW],
        }
    }

    /// The candidates found.
    pub(super) fn finish(mut self) -> Found {
        self.found.truncate(self.found_len);
        Found {
            tiles: self.found,
            ends: self.ends,
        }
    }
}

/// One group's skip counts: per place, by verdict code.
pub(super) type GroupCounts = [[u32; 8]; 4];

/// Groups per block of [`SkipCounts::touched`]: 32 groups' counts fill a 4 KB page.
const TOUCH_GROUPS: usize = 32;

/// What the nodes skip, by group, and which blocks of [`TOUCH_GROUPS`] groups were counted
/// in at all: a worker descends with its share of the triangles into part of the tree only,
/// and adding up the workers' counts reads only the blocks they touched (at 16 threads,
/// reading every worker's untouched zero pages cost 28,000 page faults at 1080p).
#[derive(Default)]
struct SkipCounts {
    counts: Vec<GroupCounts>,
    touched: Vec<bool>,
}

impl SkipCounts {
    fn new(groups: usize) -> SkipCounts {
        SkipCounts {
            counts: vec![[[0; 8]; 4]; groups],
            touched: vec![false; groups.div_ceil(TOUCH_GROUPS)],
        }
    }
}

/// What the nodes skip, by group and place, counted per rayon worker rather than per
/// build task: the counts are sums, in any order, and a task's own counts (about 10 MB
/// for a 1080p tree) cost page faults and a read per task at the end, where the tasks
/// number several per thread.
pub(super) struct WorkerSkips {
    groups: usize,
    /// One per worker, made on its first use (so a worker that visits nothing costs none).
    counts: Vec<Mutex<SkipCounts>>,
}

impl WorkerSkips {
    pub(super) fn new(groups: &[Group]) -> WorkerSkips {
        WorkerSkips {
            groups: groups.len(),
            counts: (0..rayon::current_num_threads().max(1))
                .map(|_| Mutex::new(SkipCounts::default()))
                .collect(),
        }
    }

    /// Runs `visits` with the calling worker's counts lent to `collector`. The lock is
    /// only ever contended if `visits` runs outside the pool whose workers were counted
    /// (then any worker's counts do: they are sums).
    pub(super) fn counting<R>(
        &self,
        collector: &mut Collector,
        visits: impl FnOnce(&mut Collector) -> R,
    ) -> R {
        let worker = rayon::current_thread_index().unwrap_or(0) % self.counts.len();
        let mut counts = self.counts[worker]
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if counts.counts.is_empty() {
            *counts = SkipCounts::new(self.groups);
        }
        std::mem::swap(&mut collector.skipped, &mut counts);
        let result = visits(collector);
        std::mem::swap(&mut collector.skipped, &mut counts);
        result
    }

    /// Every group's counts, added up over the workers (block by block, in parallel; a
    /// worker's untouched blocks are zeros and not read).
    pub(super) fn total(self) -> Vec<GroupCounts> {
        let mut each = self
            .counts
            .into_iter()
            .map(|counts| counts.into_inner().unwrap_or_else(PoisonError::into_inner))
            .filter(|counts| !counts.counts.is_empty());
        let Some(mut total) = each.next() else {
            return vec![[[0; 8]; 4]; self.groups];
        };
        let rest: Vec<_> = each.collect();
        if !rest.is_empty() {
            (total.counts.par_chunks_mut(TOUCH_GROUPS))
                .enumerate()
                .for_each(|(block, sums)| {
                    for worker in rest.iter().filter(|worker| worker.touched[block]) {
                        let theirs = &worker.counts[block * TOUCH_GROUPS..][..sums.len()];
                        for (sum, counts) in sums.iter_mut().zip(theirs) {
                            for (place, counts) in sum.iter_mut().zip(counts) {
                                for (total, count) in place.iter_mut().zip(counts) {
                                    *total += count;
                                }
                            }
                        }
                    }
                });
        }
        total.counts
    }
}

/// Whether the vector kernel can run here.
#[cfg(target_arch = "x86_64")]
fn vector_kernel() -> bool {
    crate::emu::cpu::has_avx2_and_fma()
}

/// Descends from the root's group while `forms`' verdict is unsettled: candidates at the
/// leaves, and per node what it skips.
pub(super) fn visit(groups: &[Group], forms: &FloatForms, into: &mut Collector) {
    #[cfg(target_arch = "x86_64")]
    if vector_kernel() {
        // SAFETY: the CPU has AVX2 and FMA, checked just above.
        unsafe { visit_avx2(groups, forms, into) };
        return;
    }
    descend(
        groups,
        into,
        |group| verdicts_portable(forms, group),
        append,
    );
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn visit_avx2(groups: &[Group], forms: &FloatForms, into: &mut Collector) {
    descend(
        groups,
        into,
        |group| avx2::verdicts(forms, group),
        |window, len, values, mask| avx2::append(window, len, values, mask),
    );
}

/// [`visit`] with the exact integer verdict, node by node: for the rare triangle whose
/// forms are too wide for double precision.
pub(super) fn visit_exact(groups: &[Group], nodes: &[Node], forms: &Forms, into: &mut Collector) {
    visit_nodes(groups, nodes, |_, node| forms.verdict(&node.around), into);
}

/// [`visit`] with a verdict computed node by node from the node's rays.
#[inline(always)]
pub(super) fn visit_nodes(
    groups: &[Group],
    nodes: &[Node],
    verdict: impl Fn(u32, &Node) -> Option<Verdict>,
    into: &mut Collector,
) {
    let verdicts = |group: &Group| {
        group
            .nodes
            .map(|at| verdict(at, &nodes[at as usize]).map_or(UNSETTLED, Verdict::code))
    };
    descend(groups, into, verdicts, append);
}

/// [`visit_nodes`] with the fixed ROM's verdict ([`FixedForms::verdict`], then `occluded`
/// where it settles nothing): with AVX2, four nodes at a time in vectors
/// ([`FixedLanes::verdicts`], the same verdicts exactly).
#[inline(always)]
pub(super) fn visit_fixed(
    groups: &[Group],
    nodes: &[Node],
    forms: &FixedForms,
    occluded: impl Fn(u32, &Node) -> Option<Verdict>,
    into: &mut Collector,
) {
    #[cfg(target_arch = "x86_64")]
    if vector_kernel() {
        let lanes = FixedLanes::new(forms);
        // SAFETY: the CPU has AVX2 and FMA, checked just above.
        unsafe { visit_fixed_avx2(groups, nodes, &lanes, occluded, into) };
        return;
    }
    visit_nodes(
        groups,
        nodes,
        |at, node| forms.verdict(&node.around).or_else(|| occluded(at, node)),
        into,
    );
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn visit_fixed_avx2(
    groups: &[Group],
    nodes: &[Node],
    lanes: &FixedLanes,
    occluded: impl Fn(u32, &Node) -> Option<Verdict>,
    into: &mut Collector,
) {
    descend(
        groups,
        into,
        |group| {
            let quad = Quad {
                mid2: group.mid2,
                // Each node's own extent, not the group's widest, so that the verdicts
                // are the node-by-node ones.
                half2: group.halves2,
            };
            let mut codes = super::fixed::avx2::verdicts(lanes, &quad);
            for (k, code) in codes.iter_mut().enumerate().take(group.count as usize) {
                if *code == UNSETTLED {
                    let at = group.nodes[k];
                    *code = occluded(at, &nodes[at as usize]).map_or(UNSETTLED, Verdict::code);
                }
            }
            codes
        },
        |window, len, values, mask| avx2::append(window, len, values, mask),
    );
}

/// A candidate at every tile: for a triangle that cannot be bounded at all.
pub(super) fn mark_all(groups: &[Group], into: &mut Collector) {
    descend(groups, into, |_| [UNSETTLED; 4], append);
}

/// Stores the `values` whose bits are set in `mask` (bit k for place k) at `len` and on
/// in `window`, in order, and returns the new length. Places past it may be overwritten.
#[inline(always)]
fn append(window: &mut [u32; WINDOW], len: usize, values: [u32; 4], mask: u32) -> usize {
    let mut len = len;
    for (k, &value) in values.iter().enumerate() {
        window[len % SLACK] = value;
        len += (mask >> k) as usize & 1;
    }
    len
}

/// Bit k set when place k of `codes` is [`UNSETTLED`] (every code is below 0x80).
#[inline(always)]
fn unsettled_mask(codes: [u8; 4]) -> u32 {
    let nonzero = u32::from_le_bytes(codes).wrapping_add(0x7F7F_7F7F) & 0x8080_8080;
    let zero = !nonzero & 0x8080_8080;
    // Bits 7, 15, 23, 31 gathered into 21..=24 by one product (no two terms collide).
    ((zero >> 7).wrapping_mul(0x0020_4081) >> 21) & 0xF
}

#[inline(always)]
fn descend(
    groups: &[Group],
    into: &mut Collector,
    verdicts: impl Fn(&Group) -> [u8; 4],
    append: impl Fn(&mut [u32; WINDOW], usize, [u32; 4], u32) -> usize,
) {
    // Breadth first: the next group to judge was queued long before, so the processor can
    // load and judge it while the verdicts of the one before are still being worked out (a
    // stack makes each step wait for the last; measured slower).
    let Collector {
        found,
        found_len,
        ends,
        skipped,
        queue,
    } = into;
    // The root's own verdict is nearly always unsettled (a triangle in view is in view
    // somewhere), so a split root starts with its children; their verdicts settle what
    // the root's would have.
    let root = &groups[0];
    queue[0] = if root.descends & 1 == 1 {
        root.children[0]
    } else {
        0
    };
    let (mut next, mut queued) = (0, 1);
    while next < queued {
        // Up to BATCH queued groups judged before any of their verdicts is acted on: the
        // verdicts are long dependency chains, which a mispredicted branch between them
        // would discard (measured).
        let batch = (queued - next).min(BATCH);
        // A whole batch's worth, past `queued` too (the queue has WINDOW places of slack):
        // a fixed-size copy is two instructions, a variable one a call to memcpy.
        let ats: [u32; BATCH] = queue[next..next + BATCH].try_into().expect("BATCH places");
        let mut codes = [[UNSETTLED; 4]; BATCH];
        for (codes, &at) in codes.iter_mut().zip(&ats).take(batch) {
            *codes = verdicts(&groups[at as usize]);
        }
        if *found_len + WINDOW > found.len() {
            found.resize(found.len() * 2 + WINDOW, 0);
        }
        // Fixed-size windows on both lists (a group is queued at most once; the
        // candidates were just made room for), indexed within them without checks.
        let queue_window: &mut [u32; WINDOW] = (&mut queue[queued..queued + WINDOW])
            .try_into()
            .expect("WINDOW places");
        let found_window: &mut [u32; WINDOW] = (&mut found[*found_len..*found_len + WINDOW])
            .try_into()
            .expect("WINDOW places");
        let (mut queue_len, mut found_len_here) = (0, 0);
        for (codes, &at) in codes.iter().zip(&ats).take(batch) {
            let group = &groups[at as usize];
            // All four places, the unused ones too: their counts are never read, and
            // their bits in `descends` and `finds` are clear.
            let counts = &mut skipped.counts[at as usize];
            skipped.touched[at as usize / TOUCH_GROUPS] = true;
            for k in 0..4 {
                counts[k][usize::from(codes[k] & 7)] += 1;
            }
            let unsettled = unsettled_mask(*codes);
            queue_len = append(
                queue_window,
                queue_len,
                group.children,
                unsettled & u32::from(group.descends),
            );
            found_len_here = append(
                found_window,
                found_len_here,
                group.tiles,
                unsettled & u32::from(group.finds),
            );
        }
        queued += queue_len;
        *found_len += found_len_here;
        next += batch;
    }
    ends.push(*found_len as u32);
}

/// How many groups [`descend`] judges before acting on their verdicts.
const BATCH: usize = 4;

#[cfg(test)]
mod tests {
    use super::super::test_rng::Rng;
    use super::super::{RayBox, Verdict};
    use super::*;
    use crate::emu::core::alu;
    use crate::emu::machine::cull::TriangleConstants;

    /// A random triangle and a small box of rays, with the verdicts the exact integers and
    /// the double-precision kernels give for it (`None` when the forms are not narrow).
    fn case(rng: &mut Rng) -> Option<(Option<Verdict>, u8, bool)> {
        let size = [8, 14, 18, 22][(rng.next() % 4) as usize];
        let (e1, e2) = (rng.vec(size), rng.vec(size));
        let t = rng.vec(20);
        let k = TriangleConstants {
            e1,
            e2,
            t,
            q: alu::cross(t, e1),
            h1: 0,
        };
        let ray = rng.vec(18);
        let spread = [0, 4, 10, 14][(rng.next() % 4) as usize];
        let mut rays = RayBox::EMPTY;
        rays.add(ray);
        rays.add(std::array::from_fn(|i| {
            (ray[i] as i32).wrapping_add(rng.raw(spread.max(1)) / 2) as u32
        }));
        let forms = Forms::new(&k, &rays)?;
        if !forms.narrow(&rays) {
            return None;
        }
        let node = Node {
            rays,
            around: rays.around(),
            kind: NodeKind::Leaf(0),
        };
        let mut group = Group::new(std::slice::from_ref(&node), &[0]);
        // Half the time the group is wider than the node, as most nodes' groups are.
        let widened = rng.next().is_multiple_of(2);
        if widened {
            for lane in 0..3 {
                group.half2[lane] += f64::from(rng.raw(spread.max(1)).unsigned_abs());
            }
        }
        Some((
            forms.verdict(&node.around),
            float_verdict(&forms, &group),
            widened,
        ))
    }

    /// The double-precision verdict on the first node of `group`, after checking that the
    /// vector kernel (where the CPU has it) gives the portable one's.
    fn float_verdict(forms: &Forms, group: &Group) -> u8 {
        let float = FloatForms::new(forms);
        let portable = verdicts_portable(&float, group)[0];
        #[cfg(target_arch = "x86_64")]
        if vector_kernel() {
            // SAFETY: the CPU has AVX2 and FMA, checked just before.
            let vector = unsafe { avx2_verdicts(&float, group) }[0];
            assert_eq!(vector, portable, "AVX2 and portable kernels differ");
        }
        portable
    }

    /// Fails unless the double-precision verdict `code` claims only what `exact` does:
    /// nothing, the same exit, or a rejection where the exact verdict settles.
    fn assert_claims_only_the_exact(exact: Option<Verdict>, code: u8, case: &str) {
        match (exact, code) {
            (_, UNSETTLED) | (Some(_), REJECTED) => {}
            (Some(Verdict::Exit(exit)), code) if code < REJECTED => {
                assert_eq!(code, Verdict::Exit(exit).code(), "{case}")
            }
            (exact, code) => panic!("float claims {code}, exact says {exact:?}: {case}"),
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn avx2_verdicts(forms: &FloatForms, group: &Group) -> [u8; 4] {
        avx2::verdicts(forms, group)
    }

    /// Every claim of the double-precision verdict, over the node's group, is the exact
    /// verdict's over the node (the same exit, or a rejection), the vector kernel agrees
    /// with the lane-by-lane one exactly, and the cases reach every verdict.
    #[test]
    fn float_verdicts_claim_only_what_the_exact_one_does() {
        let mut rng = Rng(0x5EED_0F7E_1A00);
        let mut seen = [0u32; 8];
        let mut unsettled_by_float_only = 0;
        for _ in 0..400_000 {
            let Some((exact, float, widened)) = case(&mut rng) else {
                continue;
            };
            seen[float as usize] += 1;
            assert_claims_only_the_exact(exact, float, "a random case");
            if float == UNSETTLED {
                unsettled_by_float_only += u32::from(exact.is_some() && !widened);
            }
        }
        // The faithful verdicts: none, the three exits and a rejection.
        let faithful = [UNSETTLED, EXIT_U, EXIT_V, EXIT_SUM, REJECTED];
        assert!(
            faithful.iter().all(|&code| seen[code as usize] > 100),
            "verdicts reached: {seen:?}"
        );
        // The margin costs little: few verdicts the exact spans settle are left open.
        let settled: u32 = seen[1..].iter().sum();
        assert!(
            unsettled_by_float_only * 100 < settled,
            "{unsettled_by_float_only} of {settled}"
        );
    }

    /// At each threshold of the verdict (Δ's sign, a quotient of magnitude 1.0, the DIV
    /// wrap, u + v = 1.0), spans a few units wide on either side: the double-precision
    /// verdicts claim only what the exact one does, and settle cases on both sides.
    /// Forms that read Δ, H2 and H3 straight off the three ray lanes put the spans
    /// exactly where a case wants them.
    #[test]
    fn float_verdicts_hold_at_the_thresholds() {
        let identity = Forms {
            delta: [1 << 34, 0, 0],
            h2: [0, 1 << 34, 0],
            h3: [0, 0, 1 << 17],
            delta_abs: [1 << 34, 0, 0],
            h2_abs: [0, 1 << 34, 0],
            h3_abs: [0, 0, 1 << 17],
            delta_error: 0,
            h2_error: 0,
        };
        let mut rng = Rng(0x7E5_7401D);
        let (mut claims, mut open) = (0, 0);
        for case in 0..200_000 {
            // Near the double-precision threshold or the exact one: the margin of
            // error + 2 units moves the wrap by 2^14 times that.
            let near = |rng: &mut Rng, at: i64| at + rng.raw(7) as i64;
            let far = |rng: &mut Rng, at: i64| at + rng.raw(19) as i64;
            // D, then A and B near one threshold, in raw units.
            let (d, a, b): (i64, i64, i64) = match case % 5 {
                0 => (near(&mut rng, 0), rng.raw(20) as i64, rng.raw(20) as i64),
                1 => {
                    let d = 1 << (10 + rng.next() % 14);
                    (d, near(&mut rng, -(d >> 17)), rng.raw(20) as i64)
                }
                2 => {
                    let d = 1 << (5 + rng.next() % 6);
                    (d, far(&mut rng, -(d << 14)), near(&mut rng, d << 13))
                }
                3 => {
                    let d = 1i64 << (10 + rng.next() % 14);
                    let a = (rng.next() % d as u64) as i64;
                    (d, a, near(&mut rng, d + (d >> 16) - a))
                }
                _ => {
                    let d = 1 << (5 + rng.next() % 6);
                    (d, near(&mut rng, d << 13), far(&mut rng, d << 13))
                }
            };
            let sign = if rng.next().is_multiple_of(2) { 1 } else { -1 };
            let mut rays = RayBox::EMPTY;
            let width = |rng: &mut Rng| (rng.next() % 4) as i64;
            for ray in [[d, a, b], [d, a, b].map(|v| v + width(&mut rng))] {
                rays.add(ray.map(|v| (sign * v) as i32 as u32));
            }
            let forms = Forms {
                delta_error: 3 + (rng.next() % 8) as i128,
                h2_error: 3 + (rng.next() % 8) as i128,
                ..identity
            };
            assert!(forms.narrow(&rays));
            let node = Node {
                rays,
                around: rays.around(),
                kind: NodeKind::Leaf(0),
            };
            let group = Group::new(std::slice::from_ref(&node), &[0]);
            let exact = forms.verdict(&node.around);
            let float = float_verdict(&forms, &group);
            assert_claims_only_the_exact(exact, float, &format!("{d} {a} {b}"));
            if float == UNSETTLED {
                open += 1;
            } else {
                claims += 1;
            }
        }
        assert!(
            claims > 20_000 && open > 20_000,
            "{claims} claims, {open} open"
        );
    }

    /// [`WorkerSkips`] adds up every visit's counts, in pools of one and three workers, with
    /// counts made for another pool's workers, and with no visit at all.
    #[test]
    fn worker_skips_add_up_every_visit_whatever_the_threads() {
        let mut rays = RayBox::EMPTY;
        rays.add([0x3F80_0000, 0, 0]);
        let node = Node {
            rays,
            around: rays.around(),
            kind: NodeKind::Leaf(0),
        };
        let groups = [Group::new(std::slice::from_ref(&node), &[0])];
        let unsettled = usize::from(UNSETTLED & 7);
        // A pool of three workers counted by one of two (the counts shared then), by three,
        // and counts no one visited with.
        for (threads, counted_in_pool) in [(3, false), (3, true), (1, true)] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool");
            let skips = if counted_in_pool {
                pool.install(|| WorkerSkips::new(&groups))
            } else {
                WorkerSkips {
                    groups: groups.len(),
                    counts: (0..2).map(|_| Mutex::new(SkipCounts::default())).collect(),
                }
            };
            pool.install(|| {
                (0..1000).into_par_iter().for_each(|_| {
                    let mut collector = Collector::new(&groups);
                    skips.counting(&mut collector, |collector| mark_all(&groups, collector));
                    assert_eq!(collector.finish().tiles, [0]);
                })
            });
            let total = skips.total();
            assert_eq!(total.len(), 1);
            for place in total[0] {
                let mut expected = [0; 8];
                expected[unsettled] = 1000;
                assert_eq!(place, expected, "{threads} threads");
            }
        }
        assert_eq!(WorkerSkips::new(&groups).total(), [[[0; 8]; 4]]);
    }

    /// The workers' counts add up block by block: each worker counted in some blocks of
    /// [`TOUCH_GROUPS`] groups (the last block short), and the total is their sum.
    #[test]
    fn worker_skips_add_up_the_blocks_each_worker_touched() {
        let groups = 3 * TOUCH_GROUPS + 5;
        let worker = |blocks: &[usize], value: u32| {
            let mut counts = SkipCounts::new(groups);
            for &block in blocks {
                counts.touched[block] = true;
                for group in
                    (block * TOUCH_GROUPS..(block + 1) * TOUCH_GROUPS).take_while(|&g| g < groups)
                {
                    counts.counts[group][group % 4][group % 8] = value + group as u32;
                }
            }
            Mutex::new(counts)
        };
        let skips = WorkerSkips {
            groups,
            counts: vec![
                worker(&[0, 3], 1),
                Mutex::new(SkipCounts::default()),
                worker(&[3, 1], 100),
                worker(&[1], 10_000),
            ],
        };
        let total = skips.total();
        for (group, counts) in total.iter().enumerate() {
            let g = group as u32;
            let expected = match group / TOUCH_GROUPS {
                0 => 1 + g,
                1 => (100 + g) + (10_000 + g),
                2 => 0,
                _ => (1 + g) + (100 + g),
            };
            for (place, codes) in counts.iter().enumerate() {
                for (code, &count) in codes.iter().enumerate() {
                    let wanted = if (place, code) == (group % 4, group % 8) {
                        expected
                    } else {
                        0
                    };
                    assert_eq!(count, wanted, "group {group}, place {place}, code {code}");
                }
            }
        }
    }

    /// The mask has bit k exactly where place k is unsettled, for every combination of
    /// codes.
    #[test]
    fn unsettled_mask_marks_exactly_the_unsettled_places() {
        for combination in 0..5u32.pow(4) {
            let codes: [u8; 4] =
                std::array::from_fn(|k| (combination / 5u32.pow(k as u32) % 5) as u8);
            let expected = (0..4)
                .map(|k| u32::from(codes[k] == UNSETTLED) << k)
                .sum::<u32>();
            assert_eq!(unsettled_mask(codes), expected, "{codes:?}");
        }
    }

    /// Both appends keep the chosen values in order after what is there, and leave the
    /// places before `len` alone.
    #[test]
    fn appends_keep_the_chosen_values_in_order() {
        let values = [11, 22, 33, 44];
        for len in 0..=SLACK - 4 {
            for mask in 0..16u32 {
                let chosen: Vec<u32> = (0..4)
                    .filter(|k| mask >> k & 1 == 1)
                    .map(|k| values[k])
                    .collect();
                let mut window = [7; WINDOW];
                let end = append(&mut window, len, values, mask);
                assert_eq!(end, len + chosen.len());
                assert_eq!(&window[len..end], &chosen[..], "len {len}, mask {mask:04b}");
                assert!(window[..len].iter().all(|&v| v == 7));
                #[cfg(target_arch = "x86_64")]
                if vector_kernel() {
                    let mut vector = [7; WINDOW];
                    // SAFETY: the CPU has AVX2, checked just before.
                    let vector_end = unsafe { avx2_append(&mut vector, len, values, mask) };
                    assert_eq!(vector_end, end);
                    assert_eq!(&vector[..end], &window[..end], "len {len}, mask {mask:04b}");
                }
            }
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn avx2_append(window: &mut [u32; WINDOW], len: usize, values: [u32; 4], mask: u32) -> usize {
        avx2::append(window, len, values, mask)
    }
}
