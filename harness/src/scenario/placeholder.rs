//! Placeholders in plugin config strings (`setup.plugins[].config`): `${redis.url}` stands for
//! the `host:port` of the case's Redis as the gateway reaches it (host backend:
//! `127.0.0.1:<port>`; docker backend: `<container name>:6379` on the run's network).
//!
//! The rules: a placeholder is `${` + a known name + `}`; the only name is `redis.url`, and a
//! case that uses it must ask for the component (`components: [redis]`). Any other `${…}`,
//! or a `${` without its `}`, is an error; text without `${` is left as it is. Validation
//! ([`problems`]) reports these per field when the file is parsed; the runner fills the
//! values in ([`substitute`]) when the case runs.

use super::ast::Component;

/// A known placeholder: its name inside `${…}` and the component whose address it is.
const KNOWN: &[(&str, Component)] = &[("redis.url", Component::Redis)];

/// The addresses the placeholders stand for in one run of a case.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Values {
    /// `host:port` of the case's Redis as the gateway reaches it, when it asked for one.
    pub redis_url: Option<String>,
}

impl Values {
    /// The value of `component`'s placeholder, when the component runs.
    fn of(&self, component: Component) -> Option<&str> {
        match component {
            Component::Redis => self.redis_url.as_deref(),
        }
    }
}

/// The component whose address the placeholder `name` (inside `${…}`) stands for.
fn known(name: &str) -> Result<Component, String> {
    KNOWN
        .iter()
        .find(|(known, _)| *known == name)
        .map(|(_, c)| *c)
        .ok_or_else(|| format!("unknown placeholder `${{{name}}}` (known: `${{redis.url}}`)"))
}

/// A part of a config string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'t> {
    /// Text kept as it is.
    Literal(&'t str),
    /// A placeholder: its name and the component it stands for.
    Placeholder(&'t str, Component),
}

/// Splits `text` at its placeholders, in order; fails on the first `${` without `}` or with
/// an unknown name.
fn pieces(text: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push(Piece::Literal(&rest[..start]));
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("`${{` without a closing `}}` in `{text}`"))?;
        let name = &after[..end];
        out.push(Piece::Placeholder(name, known(name)?));
        rest = &after[end + 1..];
    }
    out.push(Piece::Literal(rest));
    Ok(out)
}

/// What is wrong with the placeholders of `text` in a case asking for `components`: malformed
/// or unknown ones, and those whose component the case does not ask for. Empty when fine.
pub fn problems(text: &str, components: &[Component]) -> Vec<String> {
    let pieces = match pieces(text) {
        Ok(p) => p,
        Err(e) => return vec![e],
    };
    let mut out: Vec<String> = pieces
        .into_iter()
        .filter_map(|p| match p {
            Piece::Placeholder(name, c) if !components.contains(&c) => Some(format!(
                "uses `${{{name}}}` but the case does not ask for {c}: add `components: [{c}]`"
            )),
            _ => None,
        })
        .collect();
    out.dedup();
    out
}

/// `text` with every placeholder replaced by its value, or an error naming the first
/// placeholder that is malformed, unknown, or has no value in this run.
pub fn substitute(text: &str, values: &Values) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text)? {
        match piece {
            Piece::Literal(l) => out.push_str(l),
            Piece::Placeholder(name, c) => {
                out.push_str(values.of(c).ok_or_else(|| {
                    format!("`${{{name}}}` has no value: no {c} runs for this case")
                })?)
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = r#"{"mode":"standalone","url":"${redis.url}"}"#;

    #[test]
    fn redis_url_is_replaced_everywhere() {
        let values = Values {
            redis_url: Some("127.0.0.1:6390".into()),
        };
        assert_eq!(
            substitute(CONFIG, &values).unwrap(),
            r#"{"mode":"standalone","url":"127.0.0.1:6390"}"#
        );
        assert_eq!(
            substitute("${redis.url},${redis.url}", &values).unwrap(),
            "127.0.0.1:6390,127.0.0.1:6390"
        );
        // Text without placeholders stays as it is, `$` and `}` alone included.
        assert_eq!(
            substitute("{\"a\":\"$x}\"}", &values).unwrap(),
            "{\"a\":\"$x}\"}"
        );
    }

    #[test]
    fn substitution_fails_without_a_value_or_on_bad_placeholders() {
        let none = Values::default();
        assert_eq!(
            substitute(CONFIG, &none).unwrap_err(),
            "`${redis.url}` has no value: no redis runs for this case"
        );
        assert_eq!(
            substitute("${redis.host}", &none).unwrap_err(),
            "unknown placeholder `${redis.host}` (known: `${redis.url}`)"
        );
        assert_eq!(
            substitute("x ${redis.url", &none).unwrap_err(),
            "`${` without a closing `}` in `x ${redis.url`"
        );
    }

    #[test]
    fn problems_name_the_missing_component() {
        assert!(problems(CONFIG, &[Component::Redis]).is_empty());
        assert!(problems(r#"{"mode":"x"}"#, &[]).is_empty());
        assert_eq!(
            problems(&format!("{CONFIG}{CONFIG}"), &[]),
            ["uses `${redis.url}` but the case does not ask for redis: add `components: [redis]`"]
        );
        assert_eq!(
            problems("${nope}", &[Component::Redis]),
            ["unknown placeholder `${nope}` (known: `${redis.url}`)"]
        );
    }
}
