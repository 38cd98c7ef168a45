//! Where a field path (`setup.selectors[0].upstreams[1].upstream`) stands in a scenario file:
//! its node's position in the YAML tree (saphyr's marked nodes), not a text search.

use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

/// A scenario file's YAML tree with positions, for locating field paths.
#[derive(Debug)]
pub(crate) struct Positions<'src> {
    /// The file's (first) document; `None` when saphyr cannot load the text.
    root: Option<MarkedYaml<'src>>,
}

/// One step of a field path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Segment<'p> {
    /// A mapping key (`.name`).
    Key(&'p str),
    /// A sequence index (`[1]`).
    Index(usize),
}

impl<'src> Positions<'src> {
    /// Loads `src`; text that does not load has no positions.
    pub(crate) fn load(src: &'src str) -> Self {
        let root = MarkedYaml::load_from_str(src)
            .ok()
            .and_then(|docs| docs.into_iter().next());
        Positions { root }
    }

    /// The 1-based line and column of the node at `path` (`.` or empty: the document).
    ///
    /// A path ending at a key's value gives the value. When the path leaves the tree (a missing
    /// key: a default, or a key the problem says is missing), the deepest node on the path that
    /// exists is given, i.e. the mapping that lacks the key. `None` only when the text has no
    /// tree.
    pub(crate) fn of(&self, path: &str) -> Option<(usize, usize)> {
        let (node, _) = self.deepest(&segments(path))?;
        Some(start(node))
    }

    /// The 1-based line and column of the key that ends `path` (`checks[0].expect.stauts`: the
    /// key `stauts`), where an unknown key is reported; [`of`](Self::of) when the path does not
    /// end at a key of the tree.
    pub(crate) fn key_of(&self, path: &str) -> Option<(usize, usize)> {
        let segments = segments(path);
        if let Some((Segment::Key(key), holder)) = segments.split_last()
            && let Some((node, reached)) = self.deepest(holder)
            && reached == holder.len()
            && let Some(k) = mapping_key(node, key)
        {
            return Some(start(k));
        }
        self.of(path)
    }

    /// The deepest node on `path` and how many of its segments lead to it.
    fn deepest(&self, path: &[Segment<'_>]) -> Option<(&MarkedYaml<'src>, usize)> {
        let mut node = self.root.as_ref()?;
        let mut reached = 0;
        for &segment in path {
            match step(node, segment) {
                Some(next) => node = next,
                None => break,
            }
            reached += 1;
        }
        Some((node, reached))
    }
}

/// A node's 1-based line and column.
fn start(node: &MarkedYaml<'_>) -> (usize, usize) {
    let start = node.span.start;
    (start.line(), start.col() + 1)
}

/// The key node `key` of the mapping `node`, looking through tags.
fn mapping_key<'n, 'src>(node: &'n MarkedYaml<'src>, key: &str) -> Option<&'n MarkedYaml<'src>> {
    match &node.data {
        YamlData::Tagged(_, inner) => mapping_key(inner, key),
        YamlData::Mapping(map) => map.keys().find(|k| key_text(k).as_deref() == Some(key)),
        _ => None,
    }
}

/// The child of `node` that `segment` names, looking through tags.
fn step<'n, 'src>(
    node: &'n MarkedYaml<'src>,
    segment: Segment<'_>,
) -> Option<&'n MarkedYaml<'src>> {
    match (&node.data, segment) {
        (YamlData::Tagged(_, inner), _) => step(inner, segment),
        (YamlData::Mapping(map), Segment::Key(key)) => map
            .iter()
            .find(|(k, _)| key_text(k).as_deref() == Some(key))
            .map(|(_, v)| v),
        (YamlData::Sequence(items), Segment::Index(i)) => items.get(i),
        _ => None,
    }
}

/// A scalar mapping key as serde would name it in a path.
fn key_text(key: &MarkedYaml<'_>) -> Option<String> {
    match &key.data {
        YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
        YamlData::Value(Scalar::Integer(i)) => Some(i.to_string()),
        YamlData::Value(Scalar::Boolean(b)) => Some(b.to_string()),
        YamlData::Representation(s, _, _) => Some(s.to_string()),
        YamlData::Tagged(_, inner) => key_text(inner),
        _ => None,
    }
}

/// Splits `a.b[0].c` into keys and indexes. A key that itself holds `.` or `[` is split too;
/// the lookup then stops at the deepest node it finds.
pub(super) fn segments(path: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for part in path.split('.').filter(|p| !p.is_empty()) {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Segment::Key(key));
        }
        while let Some((index, after)) = rest
            .strip_prefix('[')
            .and_then(|r| r.split_once(']'))
            .and_then(|(i, after)| Some((i.parse().ok()?, after)))
        {
            out.push(Segment::Index(index));
            rest = after;
        }
        if !rest.is_empty() {
            out.push(Segment::Key(rest));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = "\
# a comment
name: x
setup:
  selectors:
    - name: s
      upstreams:
        - { upstream: alpha, weight: 50 }
        - upstream: beta
checks: []
steps:
  - changes:
      - deleteSelector: s
      - deleteRule: { selector: s, name: r }
";

    #[test]
    fn paths_split_into_keys_and_indexes() {
        use Segment::{Index, Key};
        assert_eq!(
            segments("setup.selectors[0].upstreams[12].upstream"),
            [
                Key("setup"),
                Key("selectors"),
                Index(0),
                Key("upstreams"),
                Index(12),
                Key("upstream")
            ]
        );
        assert_eq!(segments("."), []);
        assert_eq!(segments("a[x]"), [Key("a"), Key("[x]")]);
    }

    #[test]
    fn a_path_points_at_its_value() {
        let p = Positions::load(SRC);
        assert_eq!(p.of("name"), Some((2, 7)));
        assert_eq!(
            p.of("setup.selectors[0].upstreams[0].upstream"),
            Some((7, 23))
        );
        assert_eq!(
            p.of("setup.selectors[0].upstreams[1].upstream"),
            Some((8, 21))
        );
        assert_eq!(p.of("checks"), Some((9, 9)));
        assert_eq!(p.of("steps[0].changes[0].deleteSelector"), Some((12, 25)));
        assert_eq!(p.of("steps[0].changes[1].deleteRule.name"), Some((13, 42)));
    }

    #[test]
    fn a_missing_key_points_at_its_mapping_and_the_document_at_its_start() {
        let p = Positions::load(SRC);
        // `weight` is there, `status` is not: the flow mapping that lacks it.
        assert_eq!(
            p.of("setup.selectors[0].upstreams[0].status"),
            Some((7, 11))
        );
        assert_eq!(
            p.of("setup.selectors[0].upstreams[1].weight"),
            Some((8, 11))
        );
        assert_eq!(p.of("setup.selectors[3]"), Some((5, 5)));
        assert_eq!(p.of("."), Some((2, 1)));
        assert_eq!(Positions::load("a: [unclosed").of("a"), None);
    }

    #[test]
    fn an_unknown_key_is_located_at_the_key() {
        let p = Positions::load(SRC);
        assert_eq!(
            p.key_of("setup.selectors[0].upstreams[0].weight"),
            Some((7, 30))
        );
        assert_eq!(p.key_of("name"), Some((2, 1)));
        // No such key: the mapping, as `of` says.
        assert_eq!(p.key_of("setup.selectors[0].bogus"), Some((5, 7)));
        assert_eq!(p.key_of("checks[0]"), Some((9, 9)));
    }
}
