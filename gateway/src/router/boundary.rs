//! The router's boundary, checked: no file of `src/router/` uses the plugins, the balancers or
//! the snapshot. The router matches selectors and rules; the plugins own what the tables carry
//! (see `crate::plugin`), and the dependencies go plugins → router, never back.

use std::path::Path;

/// The modules the router must not use.
const FORBIDDEN: &[&str] = &["plugin", "balance", "snapshot"];

/// Every `file:line: text` of the router's sources that names a forbidden module through
/// `crate::`, `super::super::` or a grouped `crate::{…}` import.
fn violations(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("the router's source directory")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).expect("a readable source file");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            let named = FORBIDDEN.iter().any(|module| {
                code.contains(&format!("crate::{module}"))
                    || code.contains(&format!("super::super::{module}"))
                    || (code.contains("crate::{") && code.contains(module))
            });
            if named {
                found.push(format!("{}:{}: {}", path.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn the_router_knows_no_plugin() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/router");
    let found = violations(&dir);
    assert!(
        found.is_empty(),
        "the router must not use {FORBIDDEN:?}:\n{}",
        found.join("\n")
    );
}
