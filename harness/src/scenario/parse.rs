//! Parsing (serde_norway + serde_path_to_error) and semantic validation of scenario files.
//!
//! Every problem of a file is reported at once, type-level and semantic alike, each at the
//! position of the node its field path names in the YAML tree ([`locate`](super::locate)),
//! sorted by position. serde stops at the first error, so a file that does not deserialize is
//! read on as a loose tree (`prune`): the node the error is about is pruned and the rest
//! deserialized again, until it deserializes (then it is validated, and the problems that only
//! follow from the pruning are left out: see `Loose::hides`) or the document itself would have
//! to go (a required top-level field missing or unreadable: nothing more is reported).

mod prune;

use std::path::Path;

use self::prune::{Loose, render};
use super::ast::Scenario;
use super::locate::Positions;
use super::validate::validate;
use crate::error::{ScenarioError, ScenarioProblem};

/// How many times a file is pruned and read again before the problems found so far are given.
const MAX_ROUNDS: usize = 100;

/// Reads, parses and validates one scenario file.
pub fn parse_file(file: &Path) -> Result<Scenario, ScenarioError> {
    let src = read(file)?;
    parse_str(file, &src)
}

/// Reads a scenario file's text.
pub(crate) fn read(file: &Path) -> Result<String, ScenarioError> {
    std::fs::read_to_string(file).map_err(|e| ScenarioError::Io {
        file: file.to_owned(),
        message: e.to_string(),
    })
}

/// Parses and validates scenario text; `file` only names it in errors. Every problem, type-level
/// or semantic, is reported ([`ScenarioError::Problems`], sorted by position); a file with one
/// problem that is not semantic (text that is not YAML, one wrong value) gives
/// [`ScenarioError::Invalid`].
pub fn parse_str(file: &Path, src: &str) -> Result<Scenario, ScenarioError> {
    let positions = Positions::load(src);
    let problems = match deserialize(src) {
        Ok(scenario) => {
            let problems: Vec<ScenarioProblem> = (validate(&scenario).into_iter())
                .map(|p| located(&positions, p.path, p.message))
                .collect();
            if problems.is_empty() {
                return Ok(scenario);
            }
            problems
        }
        Err(first) => {
            let mut problems = vec![first.problem(&positions, first.path.clone())];
            if let Some(tree) = Loose::load(src) {
                read_on(tree, &first, &positions, &mut problems);
            }
            if let [only] = problems.as_slice() {
                return Err(ScenarioError::Invalid {
                    file: file.to_owned(),
                    line: only.line,
                    column: only.column,
                    path: only.path.clone(),
                    message: only.message.clone(),
                });
            }
            problems
        }
    };
    Err(problems_error(file, problems))
}

/// The warnings of a valid `scenario` read from `file` (valid, but likely not meant), each
/// at its node in the file; none when the file cannot be read again.
pub fn warnings(file: &Path, scenario: &Scenario) -> Vec<ScenarioProblem> {
    let found = super::validate::warnings(scenario);
    if found.is_empty() {
        return Vec::new();
    }
    let Ok(src) = read(file) else {
        return Vec::new();
    };
    let positions = Positions::load(&src);
    found
        .into_iter()
        .map(|p| located(&positions, p.path, p.message))
        .collect()
}

/// Prunes what `first` is about and reads the rest on, adding the type errors found on the way
/// and then the semantic problems of what deserializes, in the file's coordinates.
fn read_on(
    mut tree: Loose,
    first: &TypeError,
    positions: &Positions<'_>,
    problems: &mut Vec<ScenarioProblem>,
) {
    if !tree.prune(&first.path, first.is_unknown_field()) {
        return;
    }
    for _ in 0..MAX_ROUNDS {
        let Some(text) = tree.text() else {
            return;
        };
        match deserialize(&text) {
            Ok(scenario) => {
                for p in validate(&scenario) {
                    let original = tree.original(&p.path);
                    if !tree.hides(&original, &p.message) {
                        problems.push(located(positions, render(&original), p.message));
                    }
                }
                return;
            }
            Err(e) => {
                let original = tree.original(&e.path);
                let consequence = tree.is_consequence(&original);
                if !consequence {
                    problems.push(e.problem(positions, render(&original)));
                }
                if !tree.prune(&e.path, e.is_unknown_field() && !consequence) {
                    return;
                }
            }
        }
    }
}

/// A problem at the node of `path` in the file.
fn located(positions: &Positions<'_>, path: String, message: String) -> ScenarioProblem {
    let (line, column) = positions.of(&path).unzip();
    ScenarioProblem {
        line,
        column,
        path,
        message,
    }
}

/// [`ScenarioError::Problems`] with `problems` sorted by position.
fn problems_error(file: &Path, mut problems: Vec<ScenarioProblem>) -> ScenarioError {
    // Unlocated problems (no tree) go last; equal positions keep the order they were found in.
    problems.sort_by_key(|p| (p.line.is_none(), p.line, p.column));
    ScenarioError::Problems {
        file: file.to_owned(),
        problems,
    }
}

/// serde's first error: its field path, its bare message and where serde saw it.
#[derive(Debug)]
struct TypeError {
    path: String,
    message: String,
    location: Option<(usize, usize)>,
}

impl TypeError {
    /// Whether serde refused a key the mapping does not have.
    fn is_unknown_field(&self) -> bool {
        self.message.starts_with("unknown field `")
    }

    /// The problem, at `path` (the error's, in the file's coordinates): at the unknown key, or
    /// at the node the path names (a missing key: the mapping that lacks it), like a semantic
    /// problem. serde's own location, which for a value refused by its own check is the end of
    /// what serde had read, is kept only for text that has no tree (a YAML syntax error).
    fn problem(&self, positions: &Positions<'_>, path: String) -> ScenarioProblem {
        let path = if path.is_empty() {
            ".".to_owned()
        } else {
            path
        };
        let at = if self.is_unknown_field() {
            positions.key_of(&path)
        } else {
            positions.of(&path)
        };
        let (line, column) = at.or(self.location).unzip();
        ScenarioProblem {
            line,
            column,
            path: holder_path(path, &self.message),
            message: self.message.clone(),
        }
    }
}

/// Deserializes a scenario from YAML text.
fn deserialize(src: &str) -> Result<Scenario, TypeError> {
    let de = serde_norway::Deserializer::from_str(src);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        TypeError {
            path,
            message: bare_message(&inner.to_string()),
            location: inner.location().map(|l| (l.line(), l.column())),
        }
    })
}

/// The 1-based line and column of the node at a field path in scenario text (see
/// [`Positions::of`]).
pub(crate) fn locate(src: &str, path: &str) -> Option<(usize, usize)> {
    Positions::load(src).of(path)
}

/// serde_norway renders `<its path>: <message> at line L column C`; keep only the message.
fn bare_message(rendered: &str) -> String {
    let without_mark = rendered
        .rfind(" at line ")
        .map_or(rendered, |i| &rendered[..i]);
    match without_mark.split_once(": ") {
        Some((path, rest)) if !path.contains(char::is_whitespace) => rest.to_owned(),
        _ => without_mark.to_owned(),
    }
}

/// serde_path_to_error's path ends at an unknown key; name the mapping that holds it instead.
fn holder_path(path: String, message: &str) -> String {
    let Some(field) = message
        .strip_prefix("unknown field `")
        .and_then(|m| m.split('`').next())
    else {
        return path;
    };
    match path.strip_suffix(field) {
        Some("") => ".".to_owned(),
        Some(parent) if parent.ends_with('.') => parent.trim_end_matches('.').to_owned(),
        _ => path,
    }
}

#[cfg(test)]
mod tests;
