//! Where a result points: the case file as the reports name it (relative to the workspace
//! root, [`shown_path`]) and the `file:line` of a failed check ([`failed_at`]), the same in
//! the terminal, the JSON and the HTML.

use std::path::{Component, Path, PathBuf};

use super::{CaseResult, CheckOutcome, CheckReport};

/// Finds the 1-based line of a field path (`checks[2]`) in a case file as a report names it
/// ([`CaseResult::file`]), if it can.
pub type Locate<'a> = &'a dyn Fn(&str, &str) -> Option<usize>;

/// [`Locate`] by reading the case file: a relative name is taken from the workspace root
/// ([`crate::WORKSPACE_DIR`]), as [`shown_path`] wrote it.
pub fn locate_in_file(file: &str, path: &str) -> Option<usize> {
    let file = Path::new(file);
    let file = if file.is_absolute() {
        file.to_owned()
    } else {
        Path::new(crate::WORKSPACE_DIR).join(file)
    };
    crate::scenario::locate(&file, path).map(|(line, _)| line)
}

/// Where the check `c` of `r` is, for a failed check: `file:line`, or `file path` when the
/// line cannot be found (the file is gone, or the check is the runner's own). `None` for a
/// check that did not fail.
pub fn failed_at(r: &CaseResult, c: &CheckReport, locate: Locate<'_>) -> Option<String> {
    let CheckOutcome::Failed(_) = c.outcome else {
        return None;
    };
    let file = shown(&r.file);
    Some(locate(&r.file, &c.path).map_or_else(
        || format!("{file} {}", c.path),
        |line| format!("{file}:{line}"),
    ))
}

/// [`CaseResult::file`] as a report writes it: an absolute name (a result made elsewhere than
/// by [`crate::run_paths`], a report of an earlier version) through [`shown_path`]; a relative
/// one, already from the workspace root, as it is.
pub fn shown(file: &str) -> String {
    if Path::new(file).is_absolute() {
        shown_path(Path::new(file))
    } else {
        file.to_owned()
    }
}

/// A case file's name for the reports: relative to the workspace root
/// ([`crate::WORKSPACE_DIR`]) when it is under it, else absolute; either way without `.` or
/// `..` (`/ws/harness/../cases/a.yaml` is `cases/a.yaml`). A relative `file` is taken from the
/// current directory.
pub fn shown_path(file: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let workspace = Path::new(crate::WORKSPACE_DIR);
    let mut roots = vec![normalise(&cwd.join(workspace))];
    // The current directory has its symbolic links resolved; the workspace name may not.
    roots.extend(workspace.canonicalize().ok());
    relative_to(&normalise(&cwd.join(file)), &roots)
}

/// `file` (absolute, normalised) relative to the first of `roots` it is under, else itself.
fn relative_to(file: &Path, roots: &[PathBuf]) -> String {
    roots
        .iter()
        .find_map(|root| file.strip_prefix(root).ok())
        .filter(|rel| !rel.as_os_str().is_empty())
        .unwrap_or(file)
        .display()
        .to_string()
}

/// `path` without `.` and with each `..` taking off the component before it (lexically: the
/// file system is not asked, so a symbolic link is not followed).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(part);
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_through_a_sibling_is_relative_to_the_workspace() {
        let roots = [PathBuf::from("/ws")];
        let file = normalise(Path::new("/ws/harness/../cases/scenarios/./a.yaml"));
        assert_eq!(relative_to(&file, &roots), "cases/scenarios/a.yaml");
        // Outside the workspace: absolute, normalised.
        let outside = normalise(Path::new("/ws/../elsewhere/x/../b.yaml"));
        assert_eq!(relative_to(&outside, &roots), "/elsewhere/b.yaml");
        // A name that only starts like the workspace is outside it.
        assert_eq!(relative_to(Path::new("/wsx/c.yaml"), &roots), "/wsx/c.yaml");
    }

    #[test]
    fn this_workspace_s_cases_are_named_from_its_root() {
        let through = Path::new(crate::WORKSPACE_DIR).join("harness/../cases/scenarios/x.yaml");
        assert!(through.to_string_lossy().contains(".."), "{through:?}");
        assert_eq!(shown_path(&through), "cases/scenarios/x.yaml");
        let tmp = std::env::temp_dir().join("gantry/../y.yaml");
        assert_eq!(
            shown_path(&tmp),
            std::env::temp_dir().join("y.yaml").display().to_string()
        );
    }

    #[test]
    fn a_failed_check_is_placed_at_its_line_and_a_passed_one_nowhere() {
        use crate::judge::Measurements;
        use crate::report::{CaseId, CaseOutcome};
        let r = CaseResult::bare(
            CaseId::new("a", "http"),
            "cases/a.yaml".into(),
            "host".into(),
            1,
            CaseOutcome::Failed("x".into()),
        );
        let check = |outcome| CheckReport {
            name: "c".into(),
            path: "checks[1]".into(),
            step: None,
            kind: "probe",
            outcome,
            elapsed_ms: 0.0,
            measurements: Measurements::None,
        };
        let failed = check(CheckOutcome::Failed(vec!["no".into()]));
        let at7 = |_: &str, p: &str| (p == "checks[1]").then_some(7);
        assert_eq!(
            failed_at(&r, &failed, &at7).as_deref(),
            Some("cases/a.yaml:7")
        );
        assert_eq!(
            failed_at(&r, &failed, &|_, _| None).as_deref(),
            Some("cases/a.yaml checks[1]")
        );
        assert_eq!(failed_at(&r, &check(CheckOutcome::Passed), &at7), None);
    }
}
