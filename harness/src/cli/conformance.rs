//! `gantry run --report-conformance FILE`: the checks before the run and the report after it.

use std::path::{Path, PathBuf};

use crate::conformance::report::{self, Context, Entry, GantryBuild, Outcome};
use crate::{BackendKind, CaseOutcome, CaseResult, RunOptions};

use super::args::RunArgs;

/// Why the run cannot write the report it is asked for (checked before any case runs): not
/// exactly one `--sync` mode, or an external target the flags do not name.
pub(super) fn refusal(args: &RunArgs, opts: &RunOptions) -> Option<String> {
    args.conformance.report_conformance.as_ref()?;
    if opts.modes.len() != 1 {
        return Some(
            "--report-conformance reports one sync mode: give one --sync mode (websocket, \
             http, zookeeper or etcd) and run once per mode"
                .into(),
        );
    }
    args.conformance
        .implementation(opts.backend == BackendKind::External)
        .err()
}

/// Writes the report of `results` to `path`, for the scenarios under `paths`.
pub(super) fn write(
    args: &RunArgs,
    opts: &RunOptions,
    paths: &[PathBuf],
    results: &[CaseResult],
    path: &Path,
) -> Result<(), String> {
    let external = opts.backend == BackendKind::External;
    let implementation = args.conformance.implementation(external)?;
    let files = crate::discover(paths).map_err(|e| e.to_string())?;
    let mode = opts
        .modes
        .first()
        .map(ToString::to_string)
        .unwrap_or_default();
    let entries: Vec<Entry> = results
        .iter()
        .filter(|r| r.id.mode == mode)
        .filter_map(|r| {
            let s = files
                .iter()
                .filter_map(|f| f.scenario.as_ref().ok())
                .find(|s| s.name == r.id.case)?;
            // A case that does not apply to the mode or backend is no part of the report.
            let applies =
                s.modes.iter().any(|m| m.to_string() == mode) && s.backends.contains(&opts.backend);
            applies.then(|| Entry {
                name: s.name.clone(),
                features: s.features.clone(),
                outcome: match &r.outcome {
                    CaseOutcome::Passed => Outcome::Passed,
                    CaseOutcome::Failed(_) => Outcome::Failed,
                    CaseOutcome::Skipped(why) => Outcome::Skipped(why.clone()),
                },
            })
        })
        .collect();
    let ctx = Context {
        implementation,
        gantry: GantryBuild::current(),
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        mode,
        sync_style: opts.sync_style,
        backend: opts.backend.to_string(),
        selection: opts.features.clone(),
        unsupported: if external {
            let mut never = crate::target::external::never_offered_features();
            never.extend(unjudged_features(results));
            never
        } else {
            Default::default()
        },
    };
    let text = report::to_yaml(&report::build(&ctx, &entries));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    std::fs::write(path, text).map_err(|e| format!("writing {}: {e}", path.display()))
}

/// The features the checks of `results` could not judge for want of them (a check passed on
/// the rest and reported skipped, or failed with a note, naming the feature in
/// [`crate::conformance::unsupported_reason`]'s shape): a case that ran does not make them
/// supported.
fn unjudged_features(results: &[CaseResult]) -> impl Iterator<Item = String> + '_ {
    use crate::report::CheckOutcome;
    let notes = results
        .iter()
        .flat_map(|r| &r.checks)
        .flat_map(|c| match &c.outcome {
            CheckOutcome::Skipped(why) => std::slice::from_ref(why),
            CheckOutcome::Failed(why) => why.as_slice(),
            CheckOutcome::Passed => &[],
        });
    notes.flat_map(|n| crate::conformance::missing_features(n))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{CaseId, CheckOutcome, CheckReport};

    /// A passed case whose check could not judge `rule:` leaves `routing.routeHeaders`
    /// unsupported; one whose checks all passed names nothing.
    #[test]
    fn a_key_not_judged_makes_its_feature_unsupported() {
        let case = |outcome: CheckOutcome| {
            let mut r = CaseResult::bare(
                CaseId::new("c", "websocket"),
                "c.yaml".into(),
                "external".into(),
                0,
                CaseOutcome::Passed,
            );
            r.checks.push(CheckReport {
                name: "k".into(),
                path: "checks[0]".into(),
                step: None,
                kind: "probe",
                outcome,
                elapsed_ms: 0.0,
                measurements: crate::judge::Measurements::None,
            });
            r
        };
        let note = crate::probe::unjudged_reason(&["rule"], "partly judged");
        let results = [
            case(CheckOutcome::Passed),
            case(CheckOutcome::Skipped(note.clone())),
        ];
        assert_eq!(
            unjudged_features(&results).collect::<Vec<_>>(),
            ["routing.routeHeaders"]
        );
        let failed = [case(CheckOutcome::Failed(vec!["status".into(), note]))];
        assert_eq!(unjudged_features(&failed).count(), 1);
        assert_eq!(unjudged_features(&results[..1]).count(), 0);
    }
}
