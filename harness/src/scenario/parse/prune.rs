//! The loose tree behind "every problem at once": a scenario file as a plain YAML value, from
//! which the node a deserialization error is about is pruned so the rest can be read on.
//!
//! Paths come in two coordinates: the current tree's (what serde and validation of the pruned
//! tree say) and the file's (what the user reads). A pruned sequence element shifts the indexes
//! after it; [`Loose::original`] maps them back.

use serde_norway::Value;

use crate::scenario::locate::{Segment, segments};

/// One step of a path the tree owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Step {
    /// A mapping key.
    Key(String),
    /// A sequence index.
    Index(usize),
}

/// A scenario file's tree with the nodes pruned so far.
#[derive(Debug)]
pub(super) struct Loose {
    tree: Value,
    /// Every pruned node, in the file's coordinates, in pruning order.
    pruned: Vec<Vec<Step>>,
    /// Mappings that lost a known key (file's coordinates): an error about one of them (a
    /// missing field, a check that no longer judges one thing) is the loss's consequence.
    wounded: Vec<Vec<Step>>,
    /// The names the pruned nodes defined (a bare string, or the value of a `name` key at any
    /// depth): references to them are the pruning's consequence.
    names: Vec<String>,
}

impl Loose {
    /// Loads `src` as a plain value; `None` when it is not YAML.
    pub(super) fn load(src: &str) -> Option<Self> {
        Some(Loose {
            tree: serde_norway::from_str(src).ok()?,
            pruned: Vec::new(),
            wounded: Vec::new(),
            names: Vec::new(),
        })
    }

    /// The current tree as YAML text.
    pub(super) fn text(&self) -> Option<String> {
        serde_norway::to_string(&self.tree).ok()
    }

    /// The file's path of the node at the current tree's `path`.
    pub(super) fn original(&self, path: &str) -> Vec<Step> {
        let steps: Vec<Step> = (segments(path).into_iter())
            .map(|s| match s {
                Segment::Key(k) => Step::Key(k.to_owned()),
                Segment::Index(i) => Step::Index(i),
            })
            .collect();
        self.translate(&steps)
    }

    /// The file's path of the node at the current tree's steps `path`.
    fn translate(&self, path: &[Step]) -> Vec<Step> {
        let mut out: Vec<Step> = Vec::new();
        for step in path {
            match *step {
                Step::Key(ref k) => out.push(Step::Key(k.clone())),
                Step::Index(i) => {
                    let mut removed: Vec<usize> = (self.pruned.iter())
                        .filter_map(|p| match p.split_last() {
                            Some((Step::Index(j), holder)) if holder == out.as_slice() => Some(*j),
                            _ => None,
                        })
                        .collect();
                    removed.sort_unstable();
                    let index = removed
                        .into_iter()
                        .fold(i, |at, j| if j <= at { at + 1 } else { at });
                    out.push(Step::Index(index));
                }
            }
        }
        out
    }

    /// Whether an error at `original` (the file's path) only follows from a pruned key.
    pub(super) fn is_consequence(&self, original: &[Step]) -> bool {
        self.wounded.iter().any(|w| w == original)
    }

    /// Whether a semantic problem at `original` (the file's path) saying `message` may be a
    /// mere consequence of the pruning, and is therefore not reported:
    /// - at a pruned node or a node holding one, other than the document (a list that is empty,
    ///   or a selector that lacks conditions, only because its bad element is gone);
    /// - quoting (in backticks) a name a pruned node defined (an upstream, a selector, a rule
    ///   that is undefined only because its definition is gone).
    ///
    /// Both may hide a real problem; the type error that caused the pruning is reported, and
    /// once it is fixed the next run reports the rest.
    pub(super) fn hides(&self, original: &[Step], message: &str) -> bool {
        let holds_pruned =
            !original.is_empty() && (self.pruned.iter()).any(|p| p.starts_with(original));
        holds_pruned || (self.names.iter()).any(|name| message.contains(&format!("`{name}`")))
    }

    /// Prunes the node an error at the current tree's `path` is about, i.e. the deepest node on
    /// the path: an unknown key (`unknown_key`), a key whose value is wrong, a sequence
    /// element, or the mapping a field is missing from. False when that is the document.
    pub(super) fn prune(&mut self, path: &str, unknown_key: bool) -> bool {
        let at = resolve(&self.tree, &segments(path));
        let Some((last, holder)) = at.split_last() else {
            return false;
        };
        let original = self.translate(&at);
        let Some(parent) = node_mut(&mut self.tree, holder) else {
            return false;
        };
        let removed = match (parent, last) {
            (Value::Mapping(map), Step::Key(k)) => {
                let key = map
                    .keys()
                    .find(|key| key_text(key).as_deref() == Some(k))
                    .cloned();
                key.and_then(|key| map.shift_remove(&key))
            }
            (Value::Sequence(items), Step::Index(i)) if *i < items.len() => Some(items.remove(*i)),
            _ => None,
        };
        let Some(removed) = removed else {
            return false;
        };
        if matches!(last, Step::Key(_)) && !unknown_key {
            self.wounded.push(original[..original.len() - 1].to_vec());
        }
        if let Value::String(name) = &removed {
            self.names.push(name.clone());
        }
        defined_names(&removed, &mut self.names);
        self.pruned.push(original);
        true
    }
}

/// `a.b[0].c` from its steps.
pub(super) fn render(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Step::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// The steps of `path` that lead through `tree`, up to the deepest node that exists. A key that
/// holds a `.` (a header, a JSON path) was split by the path; its parts are joined back.
fn resolve(tree: &Value, path: &[Segment<'_>]) -> Vec<Step> {
    let mut out = Vec::new();
    let mut node = tree;
    let mut rest = path;
    'walk: while let Some((first, after)) = rest.split_first() {
        match (untagged(node), first) {
            (Value::Sequence(items), Segment::Index(i)) if *i < items.len() => {
                node = &items[*i];
                out.push(Step::Index(*i));
                rest = after;
            }
            (Value::Mapping(map), Segment::Key(_)) => {
                // The longest run of keys that names one key of the mapping.
                let keys = rest
                    .iter()
                    .take_while(|s| matches!(s, Segment::Key(_)))
                    .count();
                for n in (1..=keys).rev() {
                    let joined = (rest[..n].iter())
                        .map(|s| match s {
                            Segment::Key(k) => *k,
                            Segment::Index(_) => "",
                        })
                        .collect::<Vec<_>>()
                        .join(".");
                    if let Some((_, v)) = map
                        .iter()
                        .find(|(k, _)| key_text(k).as_deref() == Some(&joined))
                    {
                        node = v;
                        out.push(Step::Key(joined));
                        rest = &rest[n..];
                        continue 'walk;
                    }
                }
                break;
            }
            _ => break,
        }
    }
    out
}

/// The node at `path` (steps [`resolve`] found), looking through tags.
fn node_mut<'v>(tree: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    let mut node = tree;
    for step in path {
        node = match (untagged_mut(node), step) {
            (Value::Sequence(items), Step::Index(i)) => items.get_mut(*i)?,
            (Value::Mapping(map), Step::Key(k)) => map
                .iter_mut()
                .find(|(key, _)| key_text(key).as_deref() == Some(k))
                .map(|(_, v)| v)?,
            _ => return None,
        };
    }
    Some(untagged_mut(node))
}

fn untagged(node: &Value) -> &Value {
    match node {
        Value::Tagged(t) => untagged(&t.value),
        other => other,
    }
}

fn untagged_mut(node: &mut Value) -> &mut Value {
    match node {
        Value::Tagged(t) => untagged_mut(&mut t.value),
        other => other,
    }
}

/// A scalar mapping key as serde names it in a path.
fn key_text(key: &Value) -> Option<String> {
    match untagged(key) {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Adds the value of every `name` key in `node`.
fn defined_names(node: &Value, out: &mut Vec<String>) {
    match untagged(node) {
        Value::Mapping(map) => {
            for (k, v) in map {
                if let (Some("name"), Value::String(name)) = (key_text(k).as_deref(), untagged(v)) {
                    out.push(name.clone());
                }
                defined_names(v, out);
            }
        }
        Value::Sequence(items) => items.iter().for_each(|v| defined_names(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\
a:
  - x
  - { name: y, bad: 1 }
  - z
  - w
b: { c.d: 1, e: 2 }
";

    #[test]
    fn indexes_after_a_pruned_element_map_back_to_the_file() {
        let mut l = Loose::load(SRC).unwrap();
        assert!(l.prune("a[1].bad", true));
        assert!(l.prune("a[1]", false));
        assert_eq!(render(&l.original("a[1]")), "a[2]");
        assert_eq!(render(&l.original("a[0]")), "a[0]");
        assert!(l.prune("a[1]", false));
        assert_eq!(render(&l.original("a[1]")), "a[3]");
        assert_eq!(l.text().unwrap(), "a:\n- x\n- w\nb:\n  c.d: 1\n  e: 2\n");
        // The unknown key wounds nothing; the elements define `y` and `z`.
        assert!(!l.is_consequence(&l.original("a")));
        assert!(l.hides(&l.original("a"), "must not be empty"));
        assert!(l.hides(&l.original("b"), "upstream `y` is not declared"));
        assert!(!l.hides(&l.original("b"), "upstream `q` is not declared"));
        assert!(!l.hides(&[], "a problem of the document"));
    }

    #[test]
    fn a_pruned_key_wounds_its_mapping_and_dotted_keys_are_found() {
        let mut l = Loose::load(SRC).unwrap();
        assert!(l.prune("b.c.d", false));
        assert!(l.is_consequence(&l.original("b")));
        assert!(l.prune("b", false));
        assert!(l.is_consequence(&[]));
        // The document cannot be pruned.
        assert!(!l.prune(".", false));
        assert!(!l.prune("", false));
    }
}
