//! A plugin's selector index, kept up to date as its selectors change: which selectors can
//! possibly match a request path.
//!
//! A selector is indexed by its first condition only when leaving it out provably changes
//! nothing: an enabled, custom, `and` selector whose first condition is `uri =` (an exact
//! path) or `uri startsWith` (a path prefix), with the trimmed value the judge compares. `and`
//! stops at the first false condition and reading `uri` never fails, so when that condition is
//! false the selector evaluates to `false` without error, exactly as if it was not evaluated.
//! Disabled selectors and custom ones without conditions never match and are left out. Every
//! other selector is a candidate for every path.

use imbl::{HashMap as PersistentMap, OrdMap};

/// Where an item stands in its list: `sort` ascending, ties in the order the items last
/// arrived (ShenYu's caches remove an updated item, append it and stable-sort by `sort`).
/// The config keeps its lists in this order; the index orders its candidates by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Order {
    sort: i32,
    seq: u64,
}

impl Order {
    /// The place of an item with `sort` that arrived `seq`th.
    pub(crate) fn new(sort: i32, seq: u64) -> Order {
        Order { sort, seq }
    }

    /// The `n`th position (tests of the tables and the index).
    #[cfg(test)]
    pub(crate) fn nth(n: usize) -> Order {
        Order::new(0, n as u64)
    }
}

/// Where a selector goes in the index (see the module docs for the rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry<'a> {
    /// Never matches and is never evaluated (disabled, or custom without conditions).
    Never,
    /// A candidate for every path.
    Always,
    /// A candidate only for paths equal to this one.
    Exact(&'a str),
    /// A candidate only for paths starting with this prefix.
    Prefix(&'a str),
}

/// Candidates of one key, in order.
pub(crate) type Bucket<V> = OrdMap<Order, V>;

/// Candidate selectors by path, kept up to date entry by entry. Persistent: a copy shares
/// everything with the original, and an insert or removal costs O(log n).
#[derive(Debug, Clone)]
pub(crate) struct SelectorIndex<V: Clone> {
    /// Candidates by exact path.
    exact: PersistentMap<Box<str>, Bucket<V>>,
    /// Candidates by path prefix.
    prefix: PersistentMap<Box<str>, Bucket<V>>,
    /// How many keys of `prefix` have each byte length.
    prefix_lens: OrdMap<usize, usize>,
    /// The candidates for every path.
    always: Bucket<V>,
}

impl<V: Clone> Default for SelectorIndex<V> {
    fn default() -> Self {
        SelectorIndex {
            exact: PersistentMap::new(),
            prefix: PersistentMap::new(),
            prefix_lens: OrdMap::new(),
            always: OrdMap::new(),
        }
    }
}

impl<V: Clone> SelectorIndex<V> {
    /// Adds `value` at `order` under `entry`.
    pub(crate) fn insert(&mut self, entry: Entry<'_>, order: Order, value: V) {
        match entry {
            Entry::Never => {}
            Entry::Always => {
                self.always.insert(order, value);
            }
            Entry::Exact(key) => {
                self.exact
                    .entry(Box::from(key))
                    .or_default()
                    .insert(order, value);
            }
            Entry::Prefix(key) => {
                let bucket = self.prefix.entry(Box::from(key)).or_default();
                if bucket.is_empty() {
                    *self.prefix_lens.entry(key.len()).or_default() += 1;
                }
                bucket.insert(order, value);
            }
        }
    }

    /// Removes what was inserted at `order` under `entry`.
    pub(crate) fn remove(&mut self, entry: Entry<'_>, order: Order) {
        match entry {
            Entry::Never => {}
            Entry::Always => {
                self.always.remove(&order);
            }
            Entry::Exact(key) => {
                if let Some(bucket) = self.exact.get_mut(key) {
                    bucket.remove(&order);
                    if bucket.is_empty() {
                        self.exact.remove(key);
                    }
                }
            }
            Entry::Prefix(key) => {
                let Some(bucket) = self.prefix.get_mut(key) else {
                    return;
                };
                bucket.remove(&order);
                if bucket.is_empty() {
                    self.prefix.remove(key);
                    if let Some(count) = self.prefix_lens.get_mut(&key.len()) {
                        *count -= 1;
                        if *count == 0 {
                            self.prefix_lens.remove(&key.len());
                        }
                    }
                }
            }
        }
    }

    /// The index in a canonical form: each key (sorted) with the orders under it.
    #[cfg(test)]
    pub(crate) fn rendered(&self) -> String {
        use std::collections::BTreeMap;
        let keys = |map: &PersistentMap<Box<str>, Bucket<V>>| -> BTreeMap<String, Vec<Order>> {
            map.iter()
                .map(|(k, bucket)| (k.to_string(), bucket.keys().copied().collect()))
                .collect()
        };
        let always: Vec<Order> = self.always.keys().copied().collect();
        format!(
            "exact {:?} prefix {:?} lens {:?} always {always:?}",
            keys(&self.exact),
            keys(&self.prefix),
            self.prefix_lens
        )
    }

    /// The candidates for `path`, in buckets: each candidate once, every bucket in order, the
    /// buckets in no particular order. Allocates nothing.
    pub(crate) fn candidates<'a, 'p>(
        &'a self,
        path: &'p str,
    ) -> impl Iterator<Item = &'a Bucket<V>> + use<'a, 'p, V> {
        let exact = self.exact.get(path);
        let lens = self
            .prefix_lens
            .keys()
            .take_while(move |&&len| len <= path.len());
        // A key is whole UTF-8, so a path starting with it has a char boundary there.
        let prefixed = lens.filter_map(move |&len| self.prefix.get(path.get(..len)?));
        exact
            .into_iter()
            .chain(prefixed)
            .chain(std::iter::once(&self.always))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An index of `entries`, each at its position, valued by its position.
    fn build(entries: &[Entry<'_>]) -> SelectorIndex<usize> {
        let mut index = SelectorIndex::default();
        for (pos, entry) in entries.iter().enumerate() {
            index.insert(*entry, Order::nth(pos), pos);
        }
        index
    }

    fn candidates(index: &SelectorIndex<usize>, path: &str) -> Vec<usize> {
        let mut out: Vec<usize> = index
            .candidates(path)
            .flat_map(|bucket| bucket.values().copied())
            .collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn narrows_by_exact_path_and_prefix() {
        let index = build(&[
            Entry::Prefix("/a"),     // 0
            Entry::Exact("/a/b"),    // 1
            Entry::Always,           // 2
            Entry::Never,            // 3
            Entry::Prefix("/a/"),    // 4
            Entry::Exact("/a"),      // 5
            Entry::Prefix("/b"),     // 6
            Entry::Prefix("/a"),     // 7
            Entry::Prefix(""),       // 8
            Entry::Exact("/a/b"),    // 9
            Entry::Prefix("/a/b/c"), // 10
        ]);
        assert_eq!(candidates(&index, "/a/b"), [0, 1, 2, 4, 7, 8, 9]);
        assert_eq!(candidates(&index, "/a"), [0, 2, 5, 7, 8]);
        assert_eq!(candidates(&index, "/ab"), [0, 2, 7, 8]);
        assert_eq!(candidates(&index, "/b/x"), [2, 6, 8]);
        assert_eq!(candidates(&index, "/a/b/c/d"), [0, 2, 4, 7, 8, 10]);
        assert_eq!(candidates(&index, ""), [2, 8]);
        assert_eq!(candidates(&index, "/"), [2, 8]);
    }

    #[test]
    fn prefix_lengths_inside_a_multibyte_char_are_skipped() {
        // "/é" is 3 bytes; a 2-byte prefix key cannot match inside the "é".
        let index = build(&[Entry::Prefix("/x"), Entry::Prefix("/é")]);
        assert_eq!(candidates(&index, "/é/q"), [1]);
        assert_eq!(candidates(&index, "/x"), [0]);
        assert_eq!(candidates(&index, "/"), Vec::<usize>::new());
    }

    #[test]
    fn removing_undoes_inserting() {
        let entries = [
            Entry::Prefix("/a"),
            Entry::Exact("/a/b"),
            Entry::Always,
            Entry::Prefix("/a/"),
            Entry::Exact("/a/b"),
        ];
        let mut index = build(&entries);
        let before = index.clone();
        index.remove(entries[3], Order::nth(3));
        assert_eq!(candidates(&index, "/a/b"), [0, 1, 2, 4]);
        assert_eq!(
            index.prefix_lens.get(&3),
            None,
            "no key of length 3 is left"
        );
        assert_eq!(
            candidates(&before, "/a/b"),
            [0, 1, 2, 3, 4],
            "the copy is untouched"
        );
        for (pos, entry) in entries.iter().enumerate() {
            index.remove(*entry, Order::nth(pos));
        }
        assert!(index.exact.is_empty() && index.prefix.is_empty() && index.always.is_empty());
        assert!(index.prefix_lens.is_empty());
    }

    #[test]
    fn empty_index_has_no_candidates() {
        let index = build(&[]);
        assert!(candidates(&index, "/a").is_empty());
        let index = build(&[Entry::Never, Entry::Never]);
        assert!(candidates(&index, "/a").is_empty());
    }
}
