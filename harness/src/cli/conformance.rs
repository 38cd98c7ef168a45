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
            crate::target::external::never_offered_features()
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
