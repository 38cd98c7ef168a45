//! Spring's query parameters (`AbstractServerHttpRequest.initQueryParams`, semantics §3):
//! the raw query is scanned with `([^&=]+)(=?)([^&]+)?`, names and values are decoded with
//! Java's `URLDecoder.decode(s, UTF-8)`, and the first value of a name wins.
//!
//! Spring parses every parameter the first time any is asked for, so a bad `%` escape anywhere
//! in the query fails every `query` condition (an `IllegalArgumentException`).

/// One parsed parameter: decoded name and value (`None` for `q` without `=`).
pub(crate) type Param = (String, Option<String>);

/// All parameters of `raw` (without the `?`), in order.
pub(crate) fn parse(raw: &str) -> Result<Vec<Param>, String> {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        // `find()`: a match starts at the next char that is neither `&` nor `=`.
        if b[i] == b'&' || b[i] == b'=' {
            i += 1;
            continue;
        }
        let name_end = i + raw[i..].find(['&', '=']).unwrap_or(raw.len() - i);
        let name = &raw[i..name_end];
        let mut j = name_end;
        let eq = b.get(j) == Some(&b'=');
        if eq {
            j += 1;
        }
        let value_end = j + raw[j..].find('&').unwrap_or(raw.len() - j);
        let value = (value_end > j).then(|| &raw[j..value_end]);
        let value = match value {
            Some(v) => Some(url_decode(v)?),
            None if eq => Some(String::new()),
            None => None,
        };
        out.push((url_decode(name)?, value));
        i = value_end;
    }
    Ok(out)
}

/// The first value of `name` (case-sensitive), `None` when absent or without `=`.
pub(crate) fn first(raw: Option<&str>, name: &str) -> Result<Option<String>, String> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    Ok(parse(raw)?
        .into_iter()
        .find(|(n, _)| n == name)
        .and_then(|(_, v)| v))
}

/// Java `URLDecoder.decode(s, UTF-8)`: `+` → space; each run of `%XX` escapes is decoded as
/// UTF-8 (malformed bytes become U+FFFD); a bad hex digit or a `%` with fewer than two chars
/// after it is an error.
///
/// Not modelled: Java's `Integer.parseInt` also takes a sign, so `%+1` decodes to U+0001 in
/// Java; here any non-hex char is an error.
pub(crate) fn url_decode(s: &str) -> Result<String, String> {
    if !s.contains(['%', '+']) {
        return Ok(s.to_owned());
    }
    let mut out = String::with_capacity(s.len());
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => {
                out.push(' ');
                i += 1;
            }
            b'%' => {
                let mut bytes = Vec::new();
                while i < b.len() && b[i] == b'%' {
                    if i + 2 >= b.len() {
                        return Err(format!(
                            "URLDecoder: Incomplete trailing escape (%) pattern in `{s}`"
                        ));
                    }
                    let hex = std::str::from_utf8(&b[i + 1..i + 3])
                        .ok()
                        .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                        .ok_or_else(|| {
                            format!(
                                "URLDecoder: Illegal hex characters in escape (%) pattern in `{s}`"
                            )
                        })?;
                    bytes.push(hex);
                    i += 3;
                }
                out.push_str(&String::from_utf8_lossy(&bytes));
            }
            _ => {
                let c = s[i..].chars().next().expect("i is on a char boundary");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(raw: &str) -> Vec<(String, Option<String>)> {
        parse(raw).unwrap()
    }

    fn kv(n: &str, v: Option<&str>) -> (String, Option<String>) {
        (n.to_owned(), v.map(str::to_owned))
    }

    #[test]
    fn spring_query_shapes() {
        assert_eq!(p("a=b=c"), vec![kv("a", Some("b=c"))]);
        assert_eq!(p("q="), vec![kv("q", Some(""))]);
        assert_eq!(p("q"), vec![kv("q", None)]);
        assert_eq!(p("=x"), vec![kv("x", None)]);
        assert_eq!(p("a==b"), vec![kv("a", Some("=b"))]);
        assert_eq!(
            p("&&a=1&&b&c=&"),
            vec![kv("a", Some("1")), kv("b", None), kv("c", Some(""))]
        );
        assert_eq!(p(""), vec![]);
    }

    #[test]
    fn decoding() {
        assert_eq!(p("q=a+b"), vec![kv("q", Some("a b"))]);
        assert_eq!(p("+q=%41"), vec![kv(" q", Some("A"))]);
        assert_eq!(p("q=%C2%A0"), vec![kv("q", Some("\u{a0}"))]);
        assert_eq!(p("q=%D9%A3x"), vec![kv("q", Some("\u{663}x"))]);
        assert_eq!(p("q=%FF"), vec![kv("q", Some("\u{fffd}"))]);
        assert!(parse("q=%zz").is_err());
        assert!(parse("q=%4").is_err());
        assert!(parse("r=1&q=a%").is_err());
    }

    #[test]
    fn first_value_wins() {
        assert_eq!(first(Some("q=1&q=2"), "q").unwrap(), Some("1".to_owned()));
        assert_eq!(first(Some("q&q=2"), "q").unwrap(), None);
        assert_eq!(first(Some("Q=1"), "q").unwrap(), None);
        assert_eq!(first(None, "q").unwrap(), None);
    }
}
