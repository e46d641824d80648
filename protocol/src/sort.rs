//! The sorts of the browser build: a heapsort of index lists behind a `dyn` comparator, and a
//! stable sort of any slice over it.
//!
//! Hand-written because the package pays for every copy of the standard library's sorts: core's
//! pattern-defeating quicksort with its sorting networks and fallbacks is about 4 KB of the wasm
//! for one `usize` instantiation, and `slice::sort` (driftsort) is larger still. A heapsort is a few hundred bytes, needs no buffer, and is O(n log n) in the
//! worst case, which matters here: the sorted lists include object keys and array items from
//! untrusted JSON (a hostile object of 100,000 keys), where an insertion sort is quadratic.

use std::cmp::Ordering;

/// Sorts `indexes` by `cmp`, ties by index, so the result is that of a stable sort of what the
/// indexes point at when they start in ascending order, and does not depend on the algorithm.
///
/// Slices are read with `get`, not indexed, where the compiler cannot see the bound: an index
/// that may be out of bounds is a panic location and a branch in the wasm.
pub fn sort_indices(indexes: &mut [usize], cmp: &mut dyn FnMut(usize, usize) -> Ordering) {
    let n = indexes.len();
    for root in (0..n / 2).rev() {
        sift_down(indexes, root, cmp);
    }
    for end in (1..n).rev() {
        indexes.swap(0, end);
        sift_down(&mut indexes[..end], 0, cmp);
    }
}

/// Moves `heap[root]` down the max-heap `heap` to where it belongs.
fn sift_down(heap: &mut [usize], mut root: usize, cmp: &mut dyn FnMut(usize, usize) -> Ordering) {
    let mut less = |a: usize, b: usize| cmp(a, b).then(a.cmp(&b)) == Ordering::Less;
    loop {
        let left = 2 * root + 1;
        let (Some(&top), Some(&first)) = (heap.get(root), heap.get(left)) else {
            return;
        };
        let (child, larger) = match heap.get(left + 1) {
            Some(&second) if less(first, second) => (left + 1, second),
            _ => (left, first),
        };
        if !less(top, larger) {
            return;
        }
        heap[root] = larger;
        heap[child] = top;
        root = child;
    }
}

/// Sorts `items` in place by `less`, keeping equal items in their order (stable).
pub fn sort_stable<T>(items: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let mut order: Vec<usize> = (0..items.len()).collect();
    sort_indices(&mut order, &mut |a, b| match (items.get(a), items.get(b)) {
        (Some(x), Some(y)) if less(x, y) => Ordering::Less,
        (Some(x), Some(y)) if less(y, x) => Ordering::Greater,
        _ => Ordering::Equal,
    });
    // Position p takes the item at order[p]: each cycle of the permutation walked once by swaps.
    for start in 0..order.len() {
        let mut at = start;
        while let Some(&next) = order.get(at) {
            if next == start || next >= items.len() {
                break;
            }
            items.swap(at, next);
            order[at] = at;
            at = next;
        }
        if let Some(slot) = order.get_mut(at) {
            *slot = at;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn small_and_edge_lists() {
        for items in [
            vec![],
            vec![1],
            vec![2, 1],
            vec![1, 2],
            vec![3, 1, 2],
            vec![5; 7],
        ] {
            let mut sorted = items.clone();
            sort_stable(&mut sorted, |a, b| a < b);
            let mut expected = items.clone();
            expected.sort();
            assert_eq!(sorted, expected, "{items:?}");
        }
    }

    #[test]
    fn equal_items_keep_their_order() {
        let mut items = vec![(2, 'a'), (1, 'b'), (2, 'c'), (0, 'd'), (1, 'e')];
        sort_stable(&mut items, |a, b| a.0 < b.0);
        assert_eq!(items, [(0, 'd'), (1, 'b'), (1, 'e'), (2, 'a'), (2, 'c')]);
    }

    #[test]
    fn a_large_list_is_not_quadratic() {
        // 100,000 items in descending order: an insertion sort makes ~5·10⁹ comparisons, a
        // heapsort fewer than 4·n·log2(n) ≈ 7·10⁶ (`less` is asked both ways). Counted, not
        // timed.
        let n = 100_000usize;
        let mut items: Vec<usize> = (0..n).rev().collect();
        let comparisons = std::cell::Cell::new(0u64);
        sort_stable(&mut items, |a, b| {
            comparisons.set(comparisons.get() + 1);
            a < b
        });
        assert!(items.iter().copied().eq(0..n));
        assert!(
            comparisons.get() < 50_000_000,
            "{} comparisons",
            comparisons.get()
        );
    }

    proptest! {
        /// The standard library's stable sort is the oracle, on lists with many equal keys.
        #[test]
        fn same_as_the_standard_stable_sort(items in prop::collection::vec((0u8..8, any::<u16>()), 0..300)) {
            let mut ours = items.clone();
            sort_stable(&mut ours, |a, b| a.0 < b.0);
            let mut theirs = items.clone();
            theirs.sort_by_key(|item| item.0);
            prop_assert_eq!(ours, theirs);
        }

        #[test]
        fn indexes_come_out_in_key_then_index_order(keys in prop::collection::vec(0u8..16, 0..300)) {
            let mut order: Vec<usize> = (0..keys.len()).collect();
            sort_indices(&mut order, &mut |a, b| keys[a].cmp(&keys[b]));
            let mut expected: Vec<usize> = (0..keys.len()).collect();
            expected.sort_by_key(|&i| (keys[i], i));
            prop_assert_eq!(order, expected);
        }
    }
}
