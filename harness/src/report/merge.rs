//! Merging the JSON reports of a run's shards (`--partition`) into the results of one run, from
//! which the reports are written as the unsharded run would write them.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use model::SyncMode;

use super::json::Report;
use super::{CaseId, CaseResult};

/// Joins the results of the shard reports `reports` (each with the file it was read from) into
/// the results of one run, in the unsharded run's order: by file (the order of discovery,
/// sorted by path), then by mode in the run's `--sync` order. That order is not written in a
/// report: it is taken from the reports themselves (each lists a file's modes in it), and
/// modes no report puts in order follow [`SyncMode::ALL`].
///
/// Fails when two reports come from different gantry versions, or when a case is in two of
/// them. A case is its id, backend and sync style; for a file that does not parse (mode `parse`, named by
/// its stem) also its file, since two such files may share a stem.
pub fn merge(reports: Vec<(PathBuf, Report)>) -> Result<Vec<CaseResult>, MergeError> {
    if let Some((first, head)) = reports.first()
        && let Some((file, other)) = reports
            .iter()
            .find(|(_, r)| r.gantry_version != head.gantry_version)
    {
        return Err(MergeError::Version {
            first: first.clone(),
            first_version: head.gantry_version.clone(),
            file: file.clone(),
            version: other.gantry_version.clone(),
        });
    }
    let modes = mode_order(&reports);
    let rank = |mode: &str| modes.iter().position(|m| m == mode);
    let mut seen: HashMap<CaseKey, PathBuf> = HashMap::new();
    let mut merged = Vec::new();
    for (file, report) in reports {
        for r in report.results {
            if let Some(first) = seen.insert(CaseKey::of(&r), file.clone()) {
                return Err(MergeError::Duplicate {
                    case: r.id,
                    backend: r.backend,
                    first,
                    second: file,
                });
            }
            merged.push(r);
        }
    }
    merged.sort_by(|a, b| {
        (Path::new(&a.file).cmp(Path::new(&b.file))).then(rank(&a.id.mode).cmp(&rank(&b.id.mode)))
    });
    Ok(merged)
}

/// What makes a result one case of a run (see [`merge`]).
#[derive(PartialEq, Eq, Hash)]
struct CaseKey {
    id: CaseId,
    backend: String,
    /// The same case under another `--sync-style` is another case.
    sync_style: model::SyncStyle,
    /// The same case under another `--run-mode` is another case.
    run_mode: Option<crate::RunMode>,
    /// The file, for a file that does not parse only.
    file: Option<String>,
}

impl CaseKey {
    fn of(r: &CaseResult) -> Self {
        Self {
            id: r.id.clone(),
            backend: r.backend.clone(),
            sync_style: r.sync_style,
            run_mode: r.run_mode,
            file: r.id.is_parse().then(|| r.file.clone()),
        }
    }
}

/// The run's modes in its `--sync` order: a report lists each file's results in that order,
/// so two modes next to each other for one file in one report are ordered; modes left
/// unordered follow [`SyncMode::ALL`] (then the order they are first seen in).
fn mode_order(reports: &[(PathBuf, Report)]) -> Vec<String> {
    let mut before: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut modes: Vec<&str> = Vec::new();
    for (_, report) in reports {
        for r in &report.results {
            if !modes.contains(&r.id.mode.as_str()) {
                modes.push(&r.id.mode);
            }
        }
        for pair in report.results.windows(2) {
            if pair[0].file == pair[1].file && pair[0].id.mode != pair[1].id.mode {
                before.insert((&pair[0].id.mode, &pair[1].id.mode));
            }
        }
    }
    let all = |mode: &str| SyncMode::ALL.iter().position(|m| m.to_string() == mode);
    modes.sort_by_key(|m| all(m).unwrap_or(usize::MAX));
    let mut order = Vec::new();
    while !modes.is_empty() {
        // The first mode no remaining one precedes (the first of all when they contradict).
        let next = (modes.iter())
            .position(|m| !modes.iter().any(|p| before.contains(&(*p, *m))))
            .unwrap_or(0);
        order.push(modes.remove(next).to_owned());
    }
    order
}

/// Why [`merge`] could not join the reports.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// Two reports come from different gantry versions.
    #[error(
        "{} is from gantry {first_version} but {} is from gantry {version}: merge the reports of one run",
        first.display(),
        file.display()
    )]
    Version {
        /// The first report.
        first: PathBuf,
        /// Its version.
        first_version: String,
        /// A report of another version.
        file: PathBuf,
        /// Its version.
        version: String,
    },
    /// A case is in two reports.
    #[error(
        "case `{case}` (backend `{backend}`) is in both {} and {}: merge the shards of one run, each once",
        first.display(),
        second.display()
    )]
    Duplicate {
        /// The case.
        case: CaseId,
        /// Its backend.
        backend: String,
        /// The report it was first seen in.
        first: PathBuf,
        /// The report it was seen in again.
        second: PathBuf,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::report::CaseOutcome;

    /// The result of `case` under `mode`, from `file`.
    fn result(file: &str, case: &str, mode: &str) -> CaseResult {
        CaseResult::bare(
            CaseId::new(case, mode),
            file.into(),
            "host".into(),
            7,
            CaseOutcome::Passed,
        )
    }

    /// The result of the file `file` (stem `stem`) that does not parse.
    fn broken(file: &str, stem: &str) -> CaseResult {
        CaseResult::bare(
            CaseId::unparsed(stem),
            file.into(),
            "host".into(),
            7,
            CaseOutcome::Failed("does not parse".into()),
        )
    }

    /// The shard report `name` of results `of`.
    fn shard(name: &str, of: &[&CaseResult]) -> (PathBuf, Report) {
        let report = Report {
            gantry_version: "0.1.0".into(),
            results: of.iter().map(|r| (*r).clone()).collect(),
        };
        (PathBuf::from(name), report)
    }

    #[test]
    fn shards_join_in_the_order_of_the_unsharded_run() {
        // `--sync etcd,websocket`, not `SyncMode::ALL`'s order; `s/a/x.yaml` is discovered
        // before `s/a-b.yaml` (paths sort by component), and two broken files share a stem.
        let whole = [
            result("s/a/x.yaml", "x", "etcd"),
            result("s/a/x.yaml", "x", "websocket"),
            broken("s/a/y.yaml", "y"),
            result("s/a-b.yaml", "ab", "etcd"),
            result("s/a-b.yaml", "ab", "websocket"),
            broken("s/y.yaml", "y"),
            result("s/z.yaml", "z", "etcd"),
            result("s/z.yaml", "z", "websocket"),
        ];
        let one = shard("one.json", &[&whole[0], &whole[2], &whole[4]]);
        let two = shard(
            "two.json",
            &[&whole[1], &whole[3], &whole[5], &whole[6], &whole[7]],
        );
        assert_eq!(merge(vec![two, one]).unwrap(), whole);
    }

    #[test]
    fn modes_no_report_orders_follow_sync_mode_all() {
        let one = shard("one.json", &[&result("s/x.yaml", "x", "etcd")]);
        let two = shard("two.json", &[&result("s/x.yaml", "x", "http")]);
        let modes: Vec<String> = (merge(vec![one, two]).unwrap().into_iter())
            .map(|r| r.id.mode)
            .collect();
        assert_eq!(modes, ["http", "etcd"]);
    }

    #[test]
    fn a_case_in_two_reports_is_refused() {
        let x = result("s/x.yaml", "x", "etcd");
        let one = shard("one.json", &[&x, &result("s/y.yaml", "y", "etcd")]);
        let two = shard("two.json", &[&result("s/w.yaml", "w", "etcd"), &x]);
        let err = merge(vec![one, two]).unwrap_err();
        assert!(matches!(&err, MergeError::Duplicate { case, .. } if case.to_string() == "x@etcd"));
        assert_eq!(
            err.to_string(),
            "case `x@etcd` (backend `host`) is in both one.json and two.json: merge the shards of \
             one run, each once"
        );
        // The same case on another backend is another case.
        let mut docker = x.clone();
        docker.backend = "docker".into();
        let one = shard("one.json", &[&x]);
        let two = shard("two.json", &[&docker]);
        assert_eq!(merge(vec![one, two]).unwrap().len(), 2);
        // And under another sync style.
        let mut full = x.clone();
        full.sync_style = model::SyncStyle::Full;
        let one = shard("one.json", &[&x]);
        let two = shard("two.json", &[&full]);
        assert_eq!(merge(vec![one, two]).unwrap().len(), 2);
    }

    #[test]
    fn reports_of_two_versions_are_refused() {
        let one = shard("one.json", &[&result("s/x.yaml", "x", "etcd")]);
        let mut two = shard("two.json", &[&result("s/y.yaml", "y", "etcd")]);
        two.1.gantry_version = "0.2.0".into();
        let err = merge(vec![one.clone(), two]).unwrap_err().to_string();
        assert_eq!(
            err,
            "one.json is from gantry 0.1.0 but two.json is from gantry 0.2.0: merge the reports \
             of one run"
        );
        assert!(merge(vec![one]).is_ok());
    }
}
