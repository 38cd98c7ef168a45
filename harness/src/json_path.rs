//! A minimal JSON path for `expect.json`: `$` then any of `.key`, `['key']` and `[index]`
//! (`$.headers['x-user']`, `$.list[0].name`). No wildcards, filters or slices: a path names
//! one value.

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JsonPath(Vec<Segment>);

impl std::str::FromStr for JsonPath {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let mut rest = text
            .strip_prefix('$')
            .ok_or_else(|| format!("`{text}`: a JSON path starts with `$`"))?;
        let mut segments = Vec::new();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                if end == 0 {
                    return Err(format!("`{text}`: a key is missing after `.`"));
                }
                segments.push(Segment::Key(after[..end].to_owned()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix("['") {
                let end = after
                    .find("']")
                    .ok_or_else(|| format!("`{text}`: `['` without its `']`"))?;
                segments.push(Segment::Key(after[..end].to_owned()));
                rest = &after[end + 2..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after
                    .find(']')
                    .ok_or_else(|| format!("`{text}`: `[` without its `]`"))?;
                let index = after[..end].parse::<usize>().map_err(|_| {
                    format!(
                        "`{text}`: `[{}]` is not an index (quote keys: `['key']`)",
                        &after[..end]
                    )
                })?;
                segments.push(Segment::Index(index));
                rest = &after[end + 1..];
            } else {
                return Err(format!(
                    "`{text}`: expected `.key`, `['key']` or `[index]` at `{rest}`"
                ));
            }
        }
        Ok(JsonPath(segments))
    }
}

impl JsonPath {
    /// The value the path names in `root`, if there is one.
    pub(crate) fn find<'v>(&self, root: &'v Value) -> Option<&'v Value> {
        self.0.iter().try_fold(root, |v, segment| match segment {
            Segment::Key(k) => v.get(k),
            Segment::Index(i) => v.get(i),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn path(text: &str) -> JsonPath {
        text.parse().unwrap()
    }

    #[test]
    fn keys_quoted_keys_and_indexes() {
        let doc = json!({ "a": { "b": [1, { "c": "x" }] }, "x-user": "bob" });
        assert_eq!(path("$").find(&doc), Some(&doc));
        assert_eq!(path("$.a.b[0]").find(&doc), Some(&json!(1)));
        assert_eq!(path("$.a.b[1].c").find(&doc), Some(&json!("x")));
        assert_eq!(path("$['x-user']").find(&doc), Some(&json!("bob")));
        assert_eq!(path("$.a.b[2]").find(&doc), None);
        assert_eq!(path("$.a.missing").find(&doc), None);
        assert_eq!(path("$.a[0]").find(&doc), None);
    }

    #[test]
    fn malformed_paths_say_why() {
        let err = |text: &str| text.parse::<JsonPath>().unwrap_err();
        assert!(err("a.b").contains("starts with `$`"));
        assert!(err("$.").contains("key is missing"));
        assert!(err("$[x]").contains("is not an index"));
        assert!(err("$['a").contains("without its"));
        assert!(err("$a").contains("expected `.key`"));
    }
}
