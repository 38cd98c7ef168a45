//! Scenario files: their shape ([`ast`]) and its JSON Schema ([`schema`]), parsing and
//! validation ([`parse`], problems located in the YAML tree by `locate`), the placeholders of
//! plugin configs ([`placeholder`]), the reference tables of the docs ([`tables`]), and
//! discovery.

pub mod ast;
mod locate;
pub mod parse;
pub mod placeholder;
pub mod schema;
pub mod tables;
mod validate;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

pub use ast::Scenario;
pub use parse::{parse_file, parse_str};

use crate::error::ScenarioError;

/// One discovered scenario file: its path and either the scenario or why it is broken.
#[derive(Debug)]
pub struct CaseFile {
    /// The file.
    pub path: PathBuf,
    /// The parsed scenario or the rendered reason it cannot run.
    pub scenario: Result<Scenario, ScenarioError>,
}

impl CaseFile {
    /// The file name without `.yaml`, for naming a broken file's result.
    pub fn stem(&self) -> String {
        self.path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    }
}

/// The 1-based line and column of the node at the field path `path` (`checks[2]`) in the
/// scenario file `file`, read from its YAML tree; `None` when the file cannot be read or loaded.
pub fn locate(file: &Path, path: &str) -> Option<(usize, usize)> {
    let src = std::fs::read_to_string(file).ok()?;
    locate::Positions::load(&src).of(path)
}

/// Finds `*.yaml` files under each path (files are taken as given, directories searched
/// recursively), sorted by the name the reports give them
/// ([`crate::report::place::shown_path`]: relative to the workspace when under it, else
/// absolute), and parses each. A duplicate scenario name fails the later file.
///
/// The order does not depend on where the workspace or the paths given are: it is the order
/// `gantry report merge` puts the results of a run's shards in, which knows the files by
/// those names only.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<CaseFile>, ScenarioError> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            collect(p, &mut files)?;
        } else if p.exists() {
            files.push(p.clone());
        } else {
            return Err(ScenarioError::Io {
                file: p.clone(),
                message: "no such file or directory".into(),
            });
        }
    }
    files.sort_by_cached_key(|p| PathBuf::from(crate::report::place::shown_path(p)));
    files.dedup_by_key(|p| crate::report::place::shown_path(p));
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    Ok(files
        .into_iter()
        .map(|path| {
            let scenario = parse::read(&path).and_then(|src| {
                let s = parse_str(&path, &src)?;
                match seen.get(&s.name) {
                    Some(first) => {
                        let (line, column) = parse::locate(&src, "name").unzip();
                        Err(ScenarioError::Invalid {
                            file: path.clone(),
                            line,
                            column,
                            path: "name".into(),
                            message: format!(
                                "scenario name `{}` is already used by {}",
                                s.name,
                                first.display()
                            ),
                        })
                    }
                    None => {
                        seen.insert(s.name.clone(), path.clone());
                        Ok(s)
                    }
                }
            });
            CaseFile { path, scenario }
        })
        .collect())
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), ScenarioError> {
    let io = |e: std::io::Error| ScenarioError::Io {
        file: dir.to_owned(),
        message: e.to_string(),
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let path = entry.map_err(io)?.path();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file outside the workspace (a report names it absolute) comes before the workspace's
    /// own (named relative), whichever order the paths were given in and wherever the
    /// workspace is: the order `gantry report merge` restores.
    #[test]
    fn discovery_orders_files_by_their_reported_names() {
        // Beside the workspace, named to sort after it as a plain path would.
        let workspace = Path::new(crate::WORKSPACE_DIR).canonicalize().unwrap();
        let outside = tempfile::Builder::new()
            .prefix("zzz-gantry-discovery-")
            .tempdir_in(workspace.parent().unwrap())
            .unwrap();
        let broken = outside.path().join("zzz_broken.yaml");
        std::fs::write(&broken, "name: [not, a, name\n").unwrap();
        let inside = workspace.join("cases/scenarios/routing");
        let names = |paths: &[PathBuf]| -> Vec<String> {
            discover(paths)
                .unwrap()
                .iter()
                .map(|f| crate::report::place::shown_path(&f.path))
                .collect()
        };
        let forward = names(&[inside.clone(), outside.path().to_owned()]);
        let backward = names(&[outside.path().to_owned(), inside]);
        assert_eq!(forward, backward);
        assert_eq!(forward[0], crate::report::place::shown_path(&broken));
        assert!(
            forward[1].starts_with("cases/scenarios/routing/"),
            "{forward:?}"
        );
    }
}
