//! The request as the gateway receives it: what the reference model reads values from.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr};

/// An HTTP request as it reaches the gateway.
///
/// Header values are what arrives after HTTP parsing (surrounding spaces stripped); a caller
/// that sends `x: "  a "` must record `"a"`. The client address is the socket peer: requests
/// carrying `X-Forwarded-For` are outside the model (the `ip` and `host` judges then answer
/// [`Outcome::Unmodelled`](super::Outcome::Unmodelled)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The method, as sent (`GET`).
    pub method: String,
    /// The raw request path: percent-encoded as sent, `;matrix` parts kept, no query.
    pub path: String,
    /// The raw query after `?`, if the target had a `?`.
    pub query: Option<String>,
    /// Header lines in order (names case-insensitive), including `Host` and `Cookie`.
    pub headers: Vec<(String, String)>,
    /// The socket peer.
    pub peer: IpAddr,
    /// Fields of ShenYu's `ShenyuContext` (`httpMethod`, `rpcType`, …) for `post`
    /// conditions; a field the caller does not set reads as null.
    pub context: BTreeMap<String, String>,
}

impl Request {
    /// A request for `method` and `target` (`/path?query`) from `127.0.0.1`, without headers.
    pub fn new(method: &str, target: &str) -> Self {
        let (path, query) = match target.split_once('?') {
            Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
            None => (target.to_owned(), None),
        };
        Self {
            method: method.to_owned(),
            path,
            query,
            headers: Vec::new(),
            peer: IpAddr::V4(Ipv4Addr::LOCALHOST),
            context: BTreeMap::new(),
        }
    }

    /// Adds a header line.
    pub fn with_header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// The values of header `name` (case-insensitive), in order.
    pub(crate) fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.headers
            .iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_splits_at_the_first_question_mark() {
        let r = Request::new("GET", "/a;x=1/b?q=1?r&s");
        assert_eq!(r.path, "/a;x=1/b");
        assert_eq!(r.query.as_deref(), Some("q=1?r&s"));
        assert_eq!(Request::new("GET", "/a?").query.as_deref(), Some(""));
        assert_eq!(Request::new("GET", "//a").query, None);
        assert_eq!(r.peer, IpAddr::V4(Ipv4Addr::LOCALHOST));
    }

    #[test]
    fn header_names_are_case_insensitive_and_ordered() {
        let r = Request::new("GET", "/")
            .with_header("X-A", "1")
            .with_header("x-b", "2")
            .with_header("x-a", "3");
        assert_eq!(r.header_values("x-A").collect::<Vec<_>>(), ["1", "3"]);
        assert_eq!(r.header_values("x-c").count(), 0);
    }
}
