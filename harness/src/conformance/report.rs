//! The conformance report (`gantry run --report-conformance FILE`), shaped like the Kubernetes
//! Gateway API's `ConformanceReport` (sigs.k8s.io/gateway-api conformance/apis/v1): the
//! implementation, the mode, one entry per profile (area) with its core and extended results,
//! and the level the run earns ([`Level`](ConformanceLevel)). Lists are sorted and fields in a
//! fixed order, so two runs with the same results give the same text except `date` and
//! `gantry.commit`.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use super::catalog::{Area, Level, catalog};
use super::selection::{FeatureSelection, missing_features};

/// The report's `apiVersion`.
pub const API_VERSION: &str = "gantry.conformance/v1alpha1";

/// Who made the implementation under test (Gateway API's `implementation`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// The organisation.
    pub organization: String,
    /// The project.
    pub project: String,
    /// Its home page.
    pub url: String,
    /// The version tested.
    pub version: String,
    /// How to reach its maintainers.
    pub contact: Vec<String>,
}

impl Implementation {
    /// gantry's own admin and gateway (the host, docker and swarm backends), at this build's
    /// version.
    pub fn gantry_pair() -> Implementation {
        Implementation {
            organization: "gantry".into(),
            project: "gantry reference pair".into(),
            url: String::new(),
            version: env!("CARGO_PKG_VERSION").into(),
            contact: Vec::new(),
        }
    }
}

/// The gantry that made the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GantryBuild {
    /// Its version (Cargo).
    pub version: String,
    /// The git commit it was built from (`unknown` outside a git checkout).
    pub commit: String,
}

impl GantryBuild {
    /// This build.
    pub fn current() -> GantryBuild {
        GantryBuild {
            version: env!("CARGO_PKG_VERSION").into(),
            commit: option_env!("GANTRY_COMMIT").unwrap_or("unknown").into(),
        }
    }
}

/// How a case ended, as the report counts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It ran and passed.
    Passed,
    /// It ran and failed.
    Failed,
    /// It did not run, and why.
    Skipped(String),
}

/// One case of the run that applies to its mode and backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The scenario's name.
    pub name: String,
    /// The features it names.
    pub features: Vec<String>,
    /// How it ended.
    pub outcome: Outcome,
}

/// A section's result (Gateway API's `result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SectionResult {
    /// Every case ran and passed.
    Success,
    /// A case failed.
    Failure,
    /// None failed, some passed, some were skipped.
    Partial,
    /// None ran (all skipped, or the section has no case).
    Skipped,
}

/// Passed, failed and skipped counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Statistics {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed.
    pub failed: usize,
    /// Cases skipped.
    pub skipped: usize,
}

/// A skipped case and why.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SkippedTest {
    /// The scenario's name.
    pub name: String,
    /// Why it did not run.
    pub reason: String,
}

/// The results of one level of one profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Section {
    /// The section's result.
    pub result: SectionResult,
    /// The counts.
    pub statistics: Statistics,
    /// The failed cases, sorted.
    pub failed_tests: Vec<String>,
    /// The skipped cases with their reasons, sorted.
    pub skipped_tests: Vec<SkippedTest>,
    /// Extended only: the area's extended features the implementation offers, sorted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub supported_features: Option<Vec<String>>,
    /// Extended only: those it does not (or the run exempts), sorted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unsupported_features: Option<Vec<String>>,
}

/// One profile (area) of the report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProfileReport {
    /// The area.
    pub name: Area,
    /// Its core cases, when the run's profile takes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub core: Option<Section>,
    /// Its extended cases, when the run's profile takes them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended: Option<Section>,
    /// One line.
    pub summary: String,
}

/// The level a run earns, from its core cases only (every profile's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ConformanceLevel {
    /// Every core case of every profile ran and passed (and there was at least one).
    Conformant,
    /// No core case failed and at least one passed, but some were skipped.
    PartiallyConformant,
    /// A core case failed, or none passed.
    NotConformant,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConformanceReport {
    /// [`API_VERSION`].
    pub api_version: String,
    /// `ConformanceReport`.
    pub kind: String,
    /// When it was made (RFC 3339, UTC).
    pub date: String,
    /// The gantry that made it.
    pub gantry: GantryBuild,
    /// The implementation tested.
    pub implementation: Implementation,
    /// The sync mode of the run.
    pub mode: String,
    /// How its gateways took changes (`incremental`, or `full` under `--sync-style full`).
    pub sync_style: model::SyncStyle,
    /// Where the admin and gateway ran (`host`, `docker`, `swarm`, `external`).
    pub backend: String,
    /// The run's `--profile` (`all` without one).
    pub profile: String,
    /// One per area the run's profile touches, in the catalog's order.
    pub profiles: Vec<ProfileReport>,
    /// One line over every profile.
    pub summary: String,
    /// The level the run earns.
    pub level: ConformanceLevel,
}

/// Where a case counts: in `area`'s core section when every feature it names is core and one
/// is of `area`; in `area`'s extended section when it names an extended feature of `area`.
fn counts_in(features: &[String], area: Area, level: Level) -> bool {
    let catalog = catalog();
    let known: Vec<_> = features.iter().filter_map(|f| catalog.get(f)).collect();
    match level {
        Level::Core => {
            known.iter().all(|f| f.level == Level::Core) && known.iter().any(|f| f.area == area)
        }
        Level::Extended => known
            .iter()
            .any(|f| f.area == area && f.level == Level::Extended),
    }
}

fn section(entries: &[&Entry]) -> Section {
    let mut stats = Statistics::default();
    let mut failed = Vec::new();
    let mut skipped = Vec::new();
    for e in entries {
        match &e.outcome {
            Outcome::Passed => stats.passed += 1,
            Outcome::Failed => {
                stats.failed += 1;
                failed.push(e.name.clone());
            }
            Outcome::Skipped(reason) => {
                stats.skipped += 1;
                skipped.push(SkippedTest {
                    name: e.name.clone(),
                    reason: reason.clone(),
                });
            }
        }
    }
    failed.sort();
    skipped.sort();
    let result = if stats.failed > 0 {
        SectionResult::Failure
    } else if stats.passed == 0 {
        SectionResult::Skipped
    } else if stats.skipped > 0 {
        SectionResult::Partial
    } else {
        SectionResult::Success
    };
    Section {
        result,
        statistics: stats,
        failed_tests: failed,
        skipped_tests: skipped,
        supported_features: None,
        unsupported_features: None,
    }
}

fn describe(stats: &Statistics) -> String {
    format!(
        "{} passed, {} failed, {} skipped",
        stats.passed, stats.failed, stats.skipped
    )
}

/// What the report says besides the results: who, when, where.
#[derive(Debug, Clone)]
pub struct Context {
    /// The implementation tested.
    pub implementation: Implementation,
    /// The gantry build.
    pub gantry: GantryBuild,
    /// RFC 3339 date.
    pub date: String,
    /// The sync mode.
    pub mode: String,
    /// How the gateways took changes.
    pub sync_style: model::SyncStyle,
    /// The backend.
    pub backend: String,
    /// The run's feature selection.
    pub selection: FeatureSelection,
    /// Features the target cannot offer whatever its cases (an external target's).
    pub unsupported: BTreeSet<String>,
}

/// Builds the report from the run's cases (those that apply to its mode and backend).
pub fn build(ctx: &Context, entries: &[Entry]) -> ConformanceReport {
    let catalog = catalog();
    // Unsupported: what the selection leaves out, what the target cannot do, and every
    // feature a skip reason names as missing.
    let mut unsupported: BTreeSet<String> = (catalog.features.iter())
        .filter(|f| !ctx.selection.offers(&f.name))
        .map(|f| f.name.clone())
        .collect();
    unsupported.extend(ctx.unsupported.iter().cloned());
    for e in entries {
        if let Outcome::Skipped(reason) = &e.outcome {
            unsupported.extend(missing_features(reason));
        }
    }
    let taken = |area, level| ctx.selection.profile.is_none_or(|p| p.covers(area, level));
    let mut profiles = Vec::new();
    let mut core_stats = Statistics::default();
    let mut core_seen = BTreeMap::new();
    for area in Area::ALL {
        let of = |level| -> Vec<&Entry> {
            entries
                .iter()
                .filter(|e| counts_in(&e.features, area, level))
                .collect()
        };
        let has_core = !catalog.names(Some(area), Some(Level::Core)).is_empty();
        let core = (taken(area, Level::Core) && has_core).then(|| section(&of(Level::Core)));
        for e in of(Level::Core) {
            core_seen.insert(e.name.clone(), e.outcome.clone());
        }
        let extended = taken(area, Level::Extended).then(|| {
            let mut s = section(&of(Level::Extended));
            let names = catalog.names(Some(area), Some(Level::Extended));
            let (no, yes): (Vec<String>, Vec<String>) =
                names.into_iter().partition(|n| unsupported.contains(n));
            s.supported_features = Some(yes);
            s.unsupported_features = Some(no);
            s
        });
        if core.is_none() && extended.is_none() {
            continue;
        }
        let part = |what: &str, s: &Option<Section>| {
            s.as_ref()
                .map(|s| format!("{what}: {}", describe(&s.statistics)))
        };
        let summary = [part("core", &core), part("extended", &extended)]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join("; ");
        profiles.push(ProfileReport {
            name: area,
            core,
            extended,
            summary,
        });
    }
    // A core case touching several areas counts once in the level.
    for outcome in core_seen.values() {
        match outcome {
            Outcome::Passed => core_stats.passed += 1,
            Outcome::Failed => core_stats.failed += 1,
            Outcome::Skipped(_) => core_stats.skipped += 1,
        }
    }
    let level = if core_stats.failed > 0 || core_stats.passed == 0 {
        ConformanceLevel::NotConformant
    } else if core_stats.skipped > 0 {
        ConformanceLevel::PartiallyConformant
    } else {
        ConformanceLevel::Conformant
    };
    let all = entries.iter().fold(Statistics::default(), |mut s, e| {
        match e.outcome {
            Outcome::Passed => s.passed += 1,
            Outcome::Failed => s.failed += 1,
            Outcome::Skipped(_) => s.skipped += 1,
        }
        s
    });
    ConformanceReport {
        api_version: API_VERSION.into(),
        kind: "ConformanceReport".into(),
        date: ctx.date.clone(),
        gantry: ctx.gantry.clone(),
        implementation: ctx.implementation.clone(),
        mode: ctx.mode.clone(),
        sync_style: ctx.sync_style,
        backend: ctx.backend.clone(),
        profile: ctx
            .selection
            .profile
            .map_or_else(|| "all".to_owned(), |p| p.to_string()),
        profiles,
        summary: format!(
            "core cases: {}; all cases: {}",
            describe(&core_stats),
            describe(&all)
        ),
        level,
    }
}

/// The report as YAML text.
pub fn to_yaml(report: &ConformanceReport) -> String {
    serde_norway::to_string(report).expect("a conformance report serialises")
}

/// The lines of two report texts that differ, ignoring `date:` and `commit:` lines; empty
/// when they are the same report.
pub fn differences(committed: &str, generated: &str) -> Vec<String> {
    let relevant = |text: &str| -> Vec<String> {
        text.lines()
            .filter(|l| {
                let t = l.trim_start();
                !t.starts_with("date:") && !t.starts_with("commit:")
            })
            .map(str::to_owned)
            .collect()
    };
    let (a, b) = (relevant(committed), relevant(generated));
    let mut out = Vec::new();
    for i in 0..a.len().max(b.len()) {
        match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) if x == y => {}
            (x, y) => out.push(format!(
                "line {}: committed `{}`, generated `{}`",
                i + 1,
                x.map_or("<none>", String::as_str),
                y.map_or("<none>", String::as_str)
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::selection::unsupported_reason;

    fn entry(name: &str, features: &[&str], outcome: Outcome) -> Entry {
        Entry {
            name: name.into(),
            features: features.iter().map(|f| (*f).to_owned()).collect(),
            outcome,
        }
    }

    fn ctx(profile: &str) -> Context {
        Context {
            implementation: Implementation::gantry_pair(),
            gantry: GantryBuild {
                version: "0.1.0".into(),
                commit: "abc".into(),
            },
            date: "2026-01-01T00:00:00Z".into(),
            mode: "websocket".into(),
            sync_style: model::SyncStyle::Incremental,
            backend: "host".into(),
            selection: FeatureSelection {
                profile: Some(profile.parse().unwrap()),
                ..FeatureSelection::default()
            },
            unsupported: BTreeSet::new(),
        }
    }

    #[test]
    fn every_core_case_passing_is_conformant() {
        let entries = [
            entry(
                "b",
                &["routing.uriStartsWith", "sync.incremental"],
                Outcome::Passed,
            ),
            entry("a", &["balance.roundRobin"], Outcome::Passed),
        ];
        let r = build(&ctx("core"), &entries);
        assert_eq!(r.level, ConformanceLevel::Conformant);
        let names: Vec<Area> = r.profiles.iter().map(|p| p.name).collect();
        assert_eq!(names, [Area::Routing, Area::Balance, Area::Sync]);
        assert!(r.profiles.iter().all(|p| p.extended.is_none()));
        let routing = r.profiles[0].core.as_ref().unwrap();
        assert_eq!(
            (routing.result, routing.statistics.passed),
            (SectionResult::Success, 1)
        );
        // Balance has a core case; sync's core holds the routing case too.
        assert_eq!(r.profiles[2].core.as_ref().unwrap().statistics.passed, 1);
    }

    #[test]
    fn a_failed_or_skipped_core_case_lowers_the_level() {
        let failed = [
            entry("a", &["routing.uriStartsWith"], Outcome::Passed),
            entry("b", &["routing.headers"], Outcome::Failed),
        ];
        let r = build(&ctx("core"), &failed);
        assert_eq!(r.level, ConformanceLevel::NotConformant);
        let core = r.profiles[0].core.as_ref().unwrap();
        assert_eq!(core.result, SectionResult::Failure);
        assert_eq!(core.failed_tests, ["b"]);
        let skipped = [
            entry("a", &["routing.uriStartsWith"], Outcome::Passed),
            entry(
                "c",
                &["routing.query"],
                Outcome::Skipped(unsupported_reason(&["routing.query"], "x")),
            ),
        ];
        let r = build(&ctx("core"), &skipped);
        assert_eq!(r.level, ConformanceLevel::PartiallyConformant);
        assert_eq!(
            r.profiles[0].core.as_ref().unwrap().result,
            SectionResult::Partial
        );
        let none = [entry("c", &["routing.query"], Outcome::Skipped("x".into()))];
        assert_eq!(
            build(&ctx("core"), &none).level,
            ConformanceLevel::NotConformant
        );
        assert_eq!(
            build(&ctx("core"), &[]).level,
            ConformanceLevel::NotConformant
        );
    }

    #[test]
    fn extended_sections_list_supported_and_unsupported_features() {
        let entries = [
            entry("k", &["faults.kill", "sync.incremental"], Outcome::Passed),
            entry(
                "p",
                &["faults.partition"],
                Outcome::Skipped(unsupported_reason(&["faults.partition"], "no proxy")),
            ),
        ];
        let r = build(&ctx("faults"), &entries);
        assert_eq!(r.profiles.len(), 1);
        let ext = r.profiles[0].extended.as_ref().unwrap();
        assert_eq!(ext.result, SectionResult::Partial);
        assert_eq!(
            ext.unsupported_features.as_deref(),
            Some(&["faults.partition".to_owned()][..])
        );
        assert!(
            ext.supported_features
                .as_ref()
                .unwrap()
                .contains(&"faults.kill".to_owned())
        );
        assert_eq!(
            ext.skipped_tests[0].reason,
            unsupported_reason(&["faults.partition"], "no proxy")
        );
    }

    #[test]
    fn the_text_is_stable_and_differences_ignore_date_and_commit() {
        let entries = [entry("a", &["routing.uriStartsWith"], Outcome::Passed)];
        let one = to_yaml(&build(&ctx("core"), &entries));
        let mut later = ctx("core");
        later.date = "2027-01-01T00:00:00Z".into();
        later.gantry.commit = "def".into();
        let two = to_yaml(&build(&later, &entries));
        assert_ne!(one, two);
        assert_eq!(differences(&one, &two), Vec::<String>::new());
        let failed = to_yaml(&build(
            &ctx("core"),
            &[entry("a", &["routing.uriStartsWith"], Outcome::Failed)],
        ));
        assert!(!differences(&one, &failed).is_empty());
        assert!(
            one.starts_with("apiVersion: gantry.conformance/v1alpha1\nkind: ConformanceReport\n"),
            "{one}"
        );
    }
}
