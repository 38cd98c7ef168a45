//! Java's `URLDecoder.decode(s, UTF_8)` and `URLEncoder.encode(s, UTF_8)`, the one copy used
//! for the query values Spring hands ShenYu's `query` conditions, the metadata segment of the
//! ZooKeeper / etcd key layout ([`crate::keyspace`]), and the form bodies ShenYu writes (the
//! long-poll listener's, paramMapping's added fields).
//!
//! Encoding is `form_urlencoded`'s serializer, which keeps exactly Java's set. Decoding is
//! hand-written: the crate's decoder passes a bad escape through, where Java throws.

use std::borrow::Cow;

/// A `%` that does not start a valid escape (Java's `URLDecoder` throws
/// `IllegalArgumentException`); holds the whole string.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal escape in `{0}`")]
pub struct IllegalEscape(pub String);

/// Java `URLEncoder.encode(s, UTF_8)`: `A-Za-z0-9.-*_` stay, space becomes `+`, every other
/// byte `%XX` (upper case).
pub fn encode(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Java `URLDecoder.decode(s, UTF_8)`: `+` is a space, `%XX` a byte, a bad escape an error,
/// and bytes that are not UTF-8 become U+FFFD. Borrows `s` when there is nothing to decode.
pub fn decode(s: &str) -> Result<Cow<'_, str>, IllegalEscape> {
    if !s.contains(['%', '+']) {
        return Ok(Cow::Borrowed(s));
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                out.push(escape_at(bytes, i).ok_or_else(|| IllegalEscape(s.to_owned()))?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    // Java decodes each run of escapes on its own; the literal text around a run is whole
    // UTF-8 characters, so replacing the whole output's bad sequences is the same.
    Ok(Cow::Owned(match String::from_utf8(out) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }))
}

/// Whether [`decode`] would accept `s` (every `%` starts a valid escape), without decoding.
pub fn check(s: &str) -> Result<(), IllegalEscape> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while let Some(at) = bytes[i..].iter().position(|&b| b == b'%') {
        i += at;
        if escape_at(bytes, i).is_none() {
            return Err(IllegalEscape(s.to_owned()));
        }
        i += 3;
    }
    Ok(())
}

/// The byte of the `%XX` escape at `bytes[i]` (a `%`) as Java's `URLDecoder` reads it
/// (`Integer.parseInt(s, i + 1, i + 3, 16)`, so a leading `+` is taken and a `-` refused as
/// negative), `None` when invalid.
fn escape_at(bytes: &[u8], i: usize) -> Option<u8> {
    let hex = bytes.get(i + 1..i + 3)?;
    u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;

    #[rstest]
    #[case("/a b/ü*._-~", "%2Fa+b%2F%C3%BC*._-%7E")]
    #[case("a b&c=d", "a+b%26c%3Dd")]
    #[case("AZaz09", "AZaz09")]
    #[case("", "")]
    fn encodes_like_url_encoder(#[case] text: &str, #[case] want: &str) {
        assert_eq!(encode(text), want);
        assert_eq!(decode(want).unwrap(), text);
    }

    #[rstest]
    #[case("%2fx", "/x")]
    #[case("hello+world%21", "hello world!")]
    #[case("%20+", "  ")]
    // `Integer.parseInt` takes a sign: `%+1` is U+0001.
    #[case("%+1", "\u{1}")]
    // Bytes that are not UTF-8 become U+FFFD, as Java's `new String(bytes, UTF_8)` does.
    #[case("%C3", "\u{fffd}")]
    #[case("%FFx", "\u{fffd}x")]
    #[case("ü%BC", "ü\u{fffd}")]
    #[case("%C2%A0", "\u{a0}")]
    fn decodes_like_url_decoder(#[case] text: &str, #[case] want: &str) {
        assert_eq!(decode(text).unwrap(), want);
        assert_eq!(check(text), Ok(()));
    }

    #[rstest]
    #[case("%zz")]
    #[case("%2")]
    #[case("a%")]
    #[case("%-1")]
    #[case("ok%4")]
    #[case("%é1")]
    fn bad_escapes_are_errors(#[case] text: &str) {
        assert_eq!(decode(text), Err(IllegalEscape(text.to_owned())));
        assert_eq!(check(text), Err(IllegalEscape(text.to_owned())));
    }

    #[test]
    fn borrows_when_nothing_is_escaped() {
        assert!(matches!(decode("abc"), Ok(Cow::Borrowed("abc"))));
    }
}
