//! `runModes:`: the run modes (`gantry run --run-mode`) a scenario cannot mean anything
//! under, each with its reason; the case is reported skipped with it under that mode. And
//! what a run mode changes in the scenario it runs ([`Scenario::under`]).

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::Deserialize;

use super::Scenario;
use crate::RunMode;

/// A run mode by name, as a log declaration names it (`runModes: [slice]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RunModeName {
    /// `slice[:MS]`.
    Slice,
    /// `restart`.
    Restart,
    /// `leak[:N]`.
    Leak,
    /// `repeat:N`.
    Repeat,
}

impl RunModeName {
    /// Whether `mode` is this one.
    pub fn names(self, mode: RunMode) -> bool {
        let name = match self {
            RunModeName::Slice => "slice",
            RunModeName::Restart => "restart",
            RunModeName::Leak => "leak",
            RunModeName::Repeat => "repeat",
        };
        name == mode.name()
    }
}

impl Scenario {
    /// The scenario as it runs under `run_mode`: every wait's timeout (its own and each
    /// step's) [`RunMode::stretch`] times as long, and only the log declarations that apply
    /// under it (`expectLogs[].runModes`). A step's `converge` bound is stretched where it is
    /// applied, so that its failure can name the case's bound.
    pub fn under(&self, run_mode: Option<RunMode>) -> Cow<'_, Scenario> {
        let stretch = run_mode.map_or(1, RunMode::stretch);
        let all_logs_apply = self.expect_logs.iter().all(|d| d.applies_under(run_mode));
        if stretch == 1 && all_logs_apply {
            return Cow::Borrowed(self);
        }
        let mut under = self.clone();
        under.wait.timeout *= stretch;
        for step in &mut under.steps {
            step.wait.timeout *= stretch;
        }
        under.expect_logs.retain(|d| d.applies_under(run_mode));
        Cow::Owned(under)
    }
}

/// Run modes the scenario opts out of, each with why (e.g. `restart: "pauses the gateway
/// mid-step"`). Few cases need one: every case is meant to pass under every run mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunModeOptOuts {
    /// Why the case cannot run with every link sliced (`--run-mode slice`).
    #[serde(default)]
    pub slice: Option<String>,
    /// Why the case cannot run with every link sliced at a pace (`--run-mode slice` or
    /// `slice:MS` with MS above 0): a bound of the gateway's own, or a rate, that the pace
    /// takes away. Unpaced (`slice:0`) it runs.
    #[serde(default)]
    pub slice_paced: Option<String>,
    /// Why the case cannot run with its gateways restarted between steps (`--run-mode
    /// restart`).
    #[serde(default)]
    pub restart: Option<String>,
    /// Why the case cannot run several times on one topology (`--run-mode leak`).
    #[serde(default)]
    pub leak: Option<String>,
    /// Why the case cannot run several times (`--run-mode repeat:N`).
    #[serde(default)]
    pub repeat: Option<String>,
}

impl RunModeOptOuts {
    /// Why the case opts out of `mode`, if it does, with the key that says so (`slice`,
    /// `slicePaced`, …).
    pub fn reason(&self, mode: RunMode) -> Option<(&'static str, &str)> {
        fn key<'a>(key: &'static str, why: &'a Option<String>) -> Option<(&'static str, &'a str)> {
            Some((key, why.as_deref()?))
        }
        match mode {
            RunMode::Slice { every_ms } => {
                key("slice", &self.slice)
                    .or(key("slicePaced", &self.slice_paced).filter(|_| every_ms > 0))
            }
            RunMode::Restart => key("restart", &self.restart),
            RunMode::Leak { .. } => key("leak", &self.leak),
            RunMode::Repeat { .. } => key("repeat", &self.repeat),
        }
    }

    /// Each opt-out as (its key, the run mode it names, its reason).
    pub(crate) fn each(&self) -> impl Iterator<Item = (&'static str, &'static str, &str)> {
        [
            ("slice", "`--run-mode slice`", &self.slice),
            (
                "slicePaced",
                "a paced `--run-mode slice`",
                &self.slice_paced,
            ),
            ("restart", "`--run-mode restart`", &self.restart),
            ("leak", "`--run-mode leak`", &self.leak),
            ("repeat", "`--run-mode repeat`", &self.repeat),
        ]
        .into_iter()
        .filter_map(|(key, mode, why)| Some((key, mode, why.as_deref()?)))
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use super::*;

    const CASE: &str = "
name: x
modes: [websocket]
upstreams: [alpha]
wait: { probe: { request: { path: /x }, expect: { upstream: alpha } } }
checks:
  - { name: c, request: { path: /x }, expect: { upstream: alpha } }
steps:
  - name: s
    changes: [{ restart: gateway }]
    converge: 2s
    wait: { probe: { request: { path: /x }, expect: { upstream: alpha } }, timeout: 4s }
expectLogs:
  - { service: gateway, level: warn, contains: always }
  - { service: gateway, level: warn, contains: sliced, optional: true, runModes: [slice] }
";

    fn logs(s: &Scenario) -> Vec<&str> {
        s.expect_logs.iter().map(|d| d.contains.as_str()).collect()
    }

    #[test]
    fn a_paced_slice_stretches_the_waits_and_keeps_its_log_lines() {
        let s = crate::scenario::parse_str(Path::new("x.yaml"), CASE).unwrap();
        let sliced = s.under(Some(RunMode::Slice { every_ms: 1 }));
        assert_eq!(sliced.wait.timeout, s.wait.timeout * 4);
        assert_eq!(sliced.steps[0].wait.timeout, Duration::from_secs(16));
        // Stretched where it is applied (`Bound::new`), so that failures name the case's.
        assert_eq!(sliced.steps[0].converge, Some(Duration::from_secs(2)));
        assert_eq!(logs(&sliced), ["always", "sliced"]);

        let unpaced = s.under(Some(RunMode::Slice { every_ms: 0 }));
        assert_eq!(unpaced.steps[0].wait.timeout, Duration::from_secs(4));
        assert_eq!(logs(&unpaced), ["always", "sliced"]);
    }

    #[test]
    fn a_paced_opt_out_leaves_the_unpaced_slice() {
        let paced = RunModeOptOuts {
            slice_paced: Some("a bound of the gateway's".into()),
            ..RunModeOptOuts::default()
        };
        let every = RunModeOptOuts {
            slice: Some("slower by design".into()),
            ..RunModeOptOuts::default()
        };
        for every_ms in [1, 3] {
            let mode = RunMode::Slice { every_ms };
            assert_eq!(
                paced.reason(mode),
                Some(("slicePaced", "a bound of the gateway's"))
            );
            assert_eq!(every.reason(mode), Some(("slice", "slower by design")));
        }
        let unpaced = RunMode::Slice { every_ms: 0 };
        assert_eq!(paced.reason(unpaced), None);
        assert_eq!(every.reason(unpaced), Some(("slice", "slower by design")));
        assert_eq!(paced.reason(RunMode::Restart), None);
        let parsed: RunModeOptOuts =
            serde_norway::from_str("slicePaced: a bound of the gateway's").unwrap();
        assert_eq!(parsed, paced);
    }

    #[test]
    fn a_line_declared_for_a_run_mode_is_dropped_without_it() {
        let s = crate::scenario::parse_str(Path::new("x.yaml"), CASE).unwrap();
        for run_mode in [None, Some(RunMode::Restart)] {
            let under = s.under(run_mode);
            assert_eq!(logs(&under), ["always"], "{run_mode:?}");
            assert_eq!(under.steps[0].wait.timeout, Duration::from_secs(4));
        }
        let plain = crate::scenario::parse_str(
            Path::new("x.yaml"),
            &CASE.replace(", runModes: [slice]", ""),
        )
        .unwrap();
        assert!(matches!(plain.under(None), Cow::Borrowed(_)));
    }
}
