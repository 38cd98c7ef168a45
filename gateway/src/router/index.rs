//! A plugin's selector index, built once per snapshot: which selectors can possibly match a
//! request path.
//!
//! A selector is indexed by its first condition only when leaving it out provably changes
//! nothing: an enabled, custom, `and` selector whose first condition is `uri =` (an exact
//! path) or `uri startsWith` (a path prefix), with the trimmed value the judge compares. `and`
//! stops at the first false condition and reading `uri` never fails, so when that condition is
//! false the selector evaluates to `false` without error, exactly as if it was not evaluated.
//! Disabled selectors and custom ones without conditions never match and are left out. Every
//! other selector is a candidate for every path.

use std::collections::HashMap;

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

/// Candidate selector positions by path, built from each selector's [`Entry`].
#[derive(Debug)]
pub(crate) struct SelectorIndex {
    /// Positions by exact path.
    exact: HashMap<Box<str>, Box<[usize]>>,
    /// Positions by path prefix.
    prefix: HashMap<Box<str>, Box<[usize]>>,
    /// The distinct byte lengths of the keys of `prefix`, ascending.
    prefix_lens: Box<[usize]>,
    /// Positions of the selectors that are candidates for every path.
    always: Box<[usize]>,
}

impl SelectorIndex {
    /// Builds the index from the entries of the selectors, in position order.
    pub(crate) fn build<'a>(entries: impl IntoIterator<Item = Entry<'a>>) -> SelectorIndex {
        let mut exact: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut prefix: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut always = Vec::new();
        for (pos, entry) in entries.into_iter().enumerate() {
            match entry {
                Entry::Never => {}
                Entry::Always => always.push(pos),
                Entry::Exact(key) => exact.entry(key).or_default().push(pos),
                Entry::Prefix(key) => prefix.entry(key).or_default().push(pos),
            }
        }
        let mut prefix_lens: Vec<usize> = prefix.keys().map(|k| k.len()).collect();
        prefix_lens.sort_unstable();
        prefix_lens.dedup();
        let boxed = |map: HashMap<&str, Vec<usize>>| {
            map.into_iter()
                .map(|(k, v)| (Box::from(k), v.into_boxed_slice()))
                .collect()
        };
        SelectorIndex {
            exact: boxed(exact),
            prefix: boxed(prefix),
            prefix_lens: prefix_lens.into_boxed_slice(),
            always: always.into_boxed_slice(),
        }
    }

    /// The positions of the candidates for `path`, in slices: each candidate once, in no
    /// particular order. Allocates nothing.
    pub(crate) fn candidates<'a>(&'a self, path: &'a str) -> impl Iterator<Item = &'a [usize]> {
        let exact = self.exact.get(path);
        let lens = self
            .prefix_lens
            .iter()
            .take_while(move |&&len| len <= path.len());
        // A key is whole UTF-8, so a path starting with it has a char boundary there.
        let prefixed = lens.filter_map(move |&len| self.prefix.get(path.get(..len)?));
        exact
            .into_iter()
            .chain(prefixed)
            .map(|positions| &**positions)
            .chain(std::iter::once(&*self.always))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(index: &SelectorIndex, path: &str) -> Vec<usize> {
        let mut out: Vec<usize> = index.candidates(path).flatten().copied().collect();
        out.sort_unstable();
        out
    }

    #[test]
    fn narrows_by_exact_path_and_prefix() {
        let index = SelectorIndex::build([
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
        let index = SelectorIndex::build([Entry::Prefix("/x"), Entry::Prefix("/é")]);
        assert_eq!(candidates(&index, "/é/q"), [1]);
        assert_eq!(candidates(&index, "/x"), [0]);
        assert_eq!(candidates(&index, "/"), Vec::<usize>::new());
    }

    #[test]
    fn empty_index_has_no_candidates() {
        let index = SelectorIndex::build([]);
        assert!(candidates(&index, "/a").is_empty());
        let index = SelectorIndex::build([Entry::Never, Entry::Never]);
        assert!(candidates(&index, "/a").is_empty());
    }
}
