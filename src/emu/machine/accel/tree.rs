//! The quadtree of tiles over a frame's rays, built on all threads: a subtree's node count
//! depends only on its rectangle's size, so each large subtree gets its own stretch of the
//! node list up front and fills it on its own thread, numbered exactly as one thread
//! building the whole tree depth first would number it (children before their parent).

use std::collections::HashMap;

use rayon::prelude::*;

use super::{Node, NodeKind, RayBox};

/// Subtrees of at least this many nodes hand their children to other threads; smaller
/// ones are built depth first on one (a 1080p frame's tree has 260,000 nodes).
const PARALLEL_NODES: usize = 1 << 12;

/// The nodes over `tiles_x` x `tiles_y` tiles whose rays' boxes are `tiles` (row-major),
/// children before their parent; each node's tile rows (the first and the one past the
/// last); and the root's index.
pub(super) fn build(
    tiles: &[RayBox],
    tiles_x: u32,
    tiles_y: u32,
) -> (Vec<Node>, Vec<[u32; 2]>, u32) {
    let whole = [0, 0, tiles_x, tiles_y];
    let mut lens = HashMap::new();
    let total = subtree_len(size(whole), &mut lens);
    let builder = Builder {
        tiles,
        tiles_x,
        lens,
    };
    let empty = Node {
        rays: RayBox::EMPTY,
        around: RayBox::EMPTY.around(),
        kind: NodeKind::Leaf(0),
    };
    let mut nodes: Vec<Node> = (0..total).into_par_iter().map(|_| empty.clone()).collect();
    let mut rows = vec![[0; 2]; total];
    builder.fill(whole, 0, &mut nodes, &mut rows);
    (nodes, rows, total as u32 - 1)
}

/// A rectangle of tiles `[x0, y0, x1, y1)`.
type Rect = [u32; 4];

fn size([x0, y0, x1, y1]: Rect) -> (u32, u32) {
    (x1 - x0, y1 - y0)
}

/// The children of a rectangle larger than one tile: each side halved where it is longer
/// than one tile, rows of children first, up to four.
fn children([x0, y0, x1, y1]: Rect) -> impl Iterator<Item = Rect> {
    let halves = |a: u32, b: u32| {
        let m = a + (b - a) / 2;
        if b - a > 1 {
            ([[a, m], [m, b]], 2)
        } else {
            ([[a, b], [a, b]], 1)
        }
    };
    let ((xs, x_count), (ys, y_count)) = (halves(x0, x1), halves(y0, y1));
    (0..y_count)
        .flat_map(move |j| (0..x_count).map(move |i| [xs[i][0], ys[j][0], xs[i][1], ys[j][1]]))
}

/// Nodes in a subtree over a rectangle of `size` tiles, remembered per size (each level
/// of the tree has at most four sizes).
fn subtree_len(size: (u32, u32), lens: &mut HashMap<(u32, u32), usize>) -> usize {
    if size == (1, 1) {
        return 1;
    }
    if let Some(&len) = lens.get(&size) {
        return len;
    }
    let len = 1 + children([0, 0, size.0, size.1])
        .map(|child| subtree_len(self::size(child), lens))
        .sum::<usize>();
    lens.insert(size, len);
    len
}

/// A child's subtree to fill: its rectangle, its first node's number, and its stretch of
/// the nodes and of their tile rows.
type Job<'n> = Option<(Rect, u32, &'n mut [Node], &'n mut [[u32; 2]])>;

struct Builder<'a> {
    tiles: &'a [RayBox],
    tiles_x: u32,
    /// [`subtree_len`] of every size larger than one tile.
    lens: HashMap<(u32, u32), usize>,
}

impl Builder<'_> {
    fn len(&self, rect: Rect) -> usize {
        match size(rect) {
            (1, 1) => 1,
            size => self.lens[&size],
        }
    }

    /// Writes the subtree over `rect` into `nodes` and `rows` (exactly its length), its
    /// nodes numbered from `first`: its children's subtrees in order, then its root.
    fn fill(&self, rect: Rect, first: u32, nodes: &mut [Node], rows: &mut [[u32; 2]]) {
        let (below, root) = nodes.split_at_mut(nodes.len() - 1);
        let (rows_below, root_rows) = rows.split_at_mut(rows.len() - 1);
        if size(rect) == (1, 1) {
            let tile = rect[1] * self.tiles_x + rect[0];
            let rays = self.tiles[tile as usize];
            root[0] = Node {
                rays,
                around: rays.around(),
                kind: NodeKind::Leaf(tile),
            };
            root_rows[0] = [rect[1], rect[1] + 1];
            return;
        }
        let mut jobs: [Job; 4] = Default::default();
        let (mut rest, mut rest_rows, mut at) = (below, rows_below, first);
        for (job, child) in jobs.iter_mut().zip(children(rect)) {
            let len = self.len(child);
            let (here, tail) = std::mem::take(&mut rest).split_at_mut(len);
            let (here_rows, tail_rows) = std::mem::take(&mut rest_rows).split_at_mut(len);
            *job = Some((child, at, here, here_rows));
            (rest, rest_rows, at) = (tail, tail_rows, at + len as u32);
        }
        let build = |job: &mut Job| {
            if let Some((child, first, nodes, rows)) = job {
                self.fill(*child, *first, nodes, rows);
            }
        };
        if nodes_len(&jobs) >= PARALLEL_NODES {
            jobs.par_iter_mut().for_each(build);
        } else {
            jobs.iter_mut().for_each(build);
        }
        let (mut children, mut count, mut rays, mut span) =
            ([0; 4], 0, RayBox::EMPTY, [u32::MAX, 0]);
        for (child_first, nodes, rows) in jobs.iter().flatten().map(|(_, f, n, r)| (f, n, r)) {
            let last = nodes.len() - 1;
            children[count] = child_first + last as u32;
            rays = RayBox::union(rays, nodes[last].rays);
            span = [span[0].min(rows[last][0]), span[1].max(rows[last][1])];
            count += 1;
        }
        root[0] = Node {
            rays,
            around: rays.around(),
            kind: NodeKind::Split(children, count as u8),
        };
        root_rows[0] = span;
    }
}

/// Nodes the jobs build in all.
fn nodes_len(jobs: &[Job]) -> usize {
    jobs.iter()
        .flatten()
        .map(|(_, _, nodes, _)| nodes.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tree as one thread builds it depth first, pushing each node after its children.
    fn depth_first(nodes: &mut Vec<Node>, tiles: &[RayBox], tiles_x: u32, rect: Rect) -> u32 {
        let node = if size(rect) == (1, 1) {
            let tile = rect[1] * tiles_x + rect[0];
            Node {
                rays: tiles[tile as usize],
                around: tiles[tile as usize].around(),
                kind: NodeKind::Leaf(tile),
            }
        } else {
            let (mut children_at, mut count, mut rays) = ([0; 4], 0, RayBox::EMPTY);
            for child in children(rect) {
                let at = depth_first(nodes, tiles, tiles_x, child);
                rays = RayBox::union(rays, nodes[at as usize].rays);
                children_at[count] = at;
                count += 1;
            }
            Node {
                rays,
                around: rays.around(),
                kind: NodeKind::Split(children_at, count as u8),
            }
        };
        nodes.push(node);
        nodes.len() as u32 - 1
    }

    /// The same nodes, numbered the same, as the depth-first build, and each node's tile
    /// rows those of its leaves; on sizes with odd sides, single rows and columns, and one
    /// large enough to be built on several threads.
    #[test]
    fn the_tree_is_the_depth_first_one_whatever_the_threads() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(4)
            .build()
            .expect("a pool");
        for (tiles_x, tiles_y) in [(1, 1), (1, 7), (9, 1), (5, 3), (480, 270)] {
            let tiles: Vec<RayBox> = (0..tiles_x * tiles_y)
                .map(|k| {
                    let v = (k as i32).wrapping_mul(7919) % 1000;
                    RayBox {
                        lo: [v, -v, v / 3],
                        hi: [v + 5, 2 - v, v / 3 + 1],
                    }
                })
                .collect();
            let mut expected = Vec::new();
            let root = depth_first(&mut expected, &tiles, tiles_x, [0, 0, tiles_x, tiles_y]);
            let (nodes, rows, built_root) = pool.install(|| build(&tiles, tiles_x, tiles_y));
            assert_eq!(built_root, root, "{tiles_x}x{tiles_y}");
            assert_eq!(
                format!("{nodes:?}"),
                format!("{expected:?}"),
                "{tiles_x}x{tiles_y}"
            );
            for (node, span) in nodes.iter().zip(&rows) {
                let leaf_rows = |node: &Node| -> Vec<u32> {
                    let mut stack = vec![node.clone()];
                    let mut found = Vec::new();
                    while let Some(node) = stack.pop() {
                        match node.kind {
                            NodeKind::Leaf(tile) => found.push(tile / tiles_x),
                            kind => stack
                                .extend(kind.children().iter().map(|&c| nodes[c as usize].clone())),
                        }
                    }
                    found
                };
                let found = leaf_rows(node);
                let least = *found.iter().min().expect("a leaf");
                let most = *found.iter().max().expect("a leaf");
                assert_eq!(*span, [least, most + 1], "{tiles_x}x{tiles_y}");
            }
        }
    }
}
