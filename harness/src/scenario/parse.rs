//! Parsing (serde_norway + serde_path_to_error) and semantic validation of scenario files.
//!
//! A file that does not deserialize fails with serde's one error and its location (serde stops
//! there). A file that does is validated as a whole: every problem is reported, each at the
//! position of the node its field path names in the YAML tree ([`locate`](super::locate)).

use std::path::Path;

use super::ast::Scenario;
use super::locate::Positions;
use super::validate::validate;
use crate::error::{ScenarioError, ScenarioProblem};

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

/// Parses and validates scenario text; `file` only names it in errors. Every semantic problem
/// is reported ([`ScenarioError::Problems`], sorted by position); a file that does not
/// deserialize gives serde's single error ([`ScenarioError::Invalid`]).
pub fn parse_str(file: &Path, src: &str) -> Result<Scenario, ScenarioError> {
    let de = serde_norway::Deserializer::from_str(src);
    let scenario: Scenario = serde_path_to_error::deserialize(de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let loc = inner.location();
        let message = bare_message(&inner.to_string());
        ScenarioError::Invalid {
            file: file.to_owned(),
            line: loc.as_ref().map(|l| l.line()),
            column: loc.as_ref().map(|l| l.column()),
            path: holder_path(path, &message),
            message,
        }
    })?;
    let problems = validate(&scenario);
    if problems.is_empty() {
        return Ok(scenario);
    }
    let positions = Positions::load(src);
    let mut problems: Vec<ScenarioProblem> = problems
        .into_iter()
        .map(|p| {
            let (line, column) = positions.of(&p.path).unzip();
            ScenarioProblem {
                line,
                column,
                path: p.path,
                message: p.message,
            }
        })
        .collect();
    // Unlocated problems (no tree) go last; equal positions keep the validation order.
    problems.sort_by_key(|p| (p.line.is_none(), p.line, p.column));
    Err(ScenarioError::Problems {
        file: file.to_owned(),
        problems,
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
