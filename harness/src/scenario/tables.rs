//! The reference tables of `docs/scenarios.md` ("Conditions"): every `paramType` and
//! `operator` a case file may name, rendered from the enums the parser reads and the check
//! the parser and the admin share ([`model::condition::check`]), so the docs cannot drift
//! from what is accepted. A test keeps the doc's copy equal; `GANTRY_BLESS=1` rewrites it.

use std::fmt::Write;

use model::{Operator, ParamType};

/// The line before the generated tables in `docs/scenarios.md`.
pub const BEGIN: &str = "<!-- generated from harness/src/scenario/tables.rs; rewrite with \
GANTRY_BLESS=1 cargo test --workspace -p harness --lib tables -->";
/// The line after them.
pub const END: &str = "<!-- end of generated tables -->";

/// The param type and operator tables, in ShenYu's enum order.
pub fn condition_tables() -> String {
    let mut out = String::from("| `paramType` | reads | in a case file |\n|---|---|---|\n");
    for p in ParamType::ALL {
        let accepted = if p.is_extractable() {
            "yes".to_owned()
        } else {
            "refused at parse time: the gateway never extracts it".to_owned()
        };
        let _ = writeln!(
            out,
            "| {} | {} | {accepted} |",
            names(p.as_str(), p.aliases()),
            p.doc()
        );
    }
    out.push_str("\n| `operator` | compares | in a case file |\n|---|---|---|\n");
    for o in Operator::ALL {
        let accepted = if o.is_supported() {
            "yes"
        } else {
            "refused at parse time: ShenYu's gateway has no judge for it"
        };
        let _ = writeln!(
            out,
            "| {} | {} | {accepted} |",
            names(o.as_str(), o.aliases()),
            o.doc()
        );
    }
    out
}

/// `` `name` `` plus its aliases (`` `=` (or `equals`) ``); a `|` is escaped for the table.
fn names(name: &str, aliases: &[&str]) -> String {
    let code = |n: &str| format!("`{}`", n.replace('|', "\\|"));
    let mut out = code(name);
    for alias in aliases {
        let _ = write!(out, " (or {})", code(alias));
    }
    out
}

/// `doc` with its generated section replaced by `tables`; `None` without both markers.
pub fn with_tables(doc: &str, tables: &str) -> Option<String> {
    let start = doc.find(BEGIN)? + BEGIN.len();
    let end = start + doc[start..].find(END)?;
    Some(format!("{}\n\n{tables}\n{}", &doc[..start], &doc[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/scenarios.md lists exactly what the parser accepts.
    #[test]
    fn the_docs_tables_are_generated() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/scenarios.md");
        let doc = std::fs::read_to_string(path).unwrap();
        let want = with_tables(&doc, &condition_tables())
            .unwrap_or_else(|| panic!("{path} lacks the markers {BEGIN} ... {END}"));
        if want == doc {
            return;
        }
        if std::env::var_os("GANTRY_BLESS").is_some() {
            std::fs::write(path, want).unwrap();
            return;
        }
        panic!(
            "{path}: the generated tables are out of date; rewrite them with \
             GANTRY_BLESS=1 cargo test --workspace -p harness --lib tables\nwant:\n{}",
            condition_tables()
        );
    }

    #[test]
    fn every_name_is_listed_with_its_aliases() {
        let t = condition_tables();
        assert!(
            t.contains("| `=` (or `equals`) | Exact, case-sensitive equality. | yes |"),
            "{t}"
        );
        for o in Operator::ALL {
            assert!(
                t.contains(&format!("| `{}`", o.as_str().replace('|', "\\|"))),
                "{o}"
            );
        }
        for p in ParamType::ALL {
            assert!(t.contains(&format!("| `{}`", p.as_str())), "{p}");
        }
        assert!(
            t.contains("| `SpEL` | Removed from ShenYu in 2.4.2. | refused"),
            "{t}"
        );
    }

    #[test]
    fn a_missing_marker_is_no_section() {
        assert_eq!(with_tables("no markers here", "x"), None);
        let doc = format!("a\n{BEGIN}\nold\n{END}\nb");
        assert_eq!(
            with_tables(&doc, "new\n").unwrap(),
            format!("a\n{BEGIN}\n\nnew\n\n{END}\nb")
        );
    }
}
