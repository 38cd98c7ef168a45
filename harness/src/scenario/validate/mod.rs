//! Semantic validation of a parsed scenario: every problem is reported, each with the field
//! path of the node it concerns (located in the YAML tree by the caller).

mod check;
mod features;
mod logs;
mod network;
mod setup;
mod steps;
mod topology;
mod traffic;

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::ast::{
    Change, Check, CheckKind, Component, ConditionSpec, Expect, FaultAction, PartitionHow,
    PluginSetup, Probe, RateLimiterSpec, RegistrationSpec, RequestSpec, RuleHandleSpec, RuleSpec,
    Scenario, SelectorSpec, StepSpec, SyncFault, Target, TopologySpec, UpstreamRef, Wait,
};
use super::placeholder;
use crate::json_path::JsonPath;

/// Adds the probes of `wait` (at `at`) with their field paths (a `distribution` wait's
/// fields are checked where they are written, by [`Validator::distribution`]).
fn wait_probes<'s>(probes: &mut Vec<(String, &'s Probe)>, wait: &'s Wait, at: &str) {
    if wait.distribution.is_some() {
        return;
    }
    for (i, p) in wait.probes.iter().enumerate() {
        probes.push((format!("{at}.{}", wait.probe_path(i)), p));
    }
}

/// The longest poll interval a scenario may ask for.
pub(crate) const MAX_INTERVAL: Duration = Duration::from_millis(50);

/// A semantic problem: the field path of the offending node and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Problem {
    pub(super) path: String,
    pub(super) message: String,
}

/// Every semantic problem of a scenario, in validation order.
pub(super) fn validate(s: &Scenario) -> Vec<Problem> {
    run(s).problems
}

/// Every warning of a scenario, in validation order: what is valid but likely not meant
/// (a balance check whose expectation is read from the config it judges). Warnings never
/// fail a file; `gantry validate` prints them.
pub(super) fn warnings(s: &Scenario) -> Vec<Problem> {
    run(s).warnings
}

fn run(s: &Scenario) -> Validator<'_> {
    let mut v = Validator {
        s,
        declared: s.upstream_names().collect(),
        problems: Vec::new(),
        warnings: Vec::new(),
    };
    v.scenario();
    v
}

/// Collects problems and warnings; each rule reports and goes on, so one run finds them all.
struct Validator<'s> {
    s: &'s Scenario,
    /// The scenario's upstream names.
    declared: HashSet<&'s str>,
    problems: Vec<Problem>,
    warnings: Vec<Problem>,
}

impl<'s> Validator<'s> {
    fn report(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            path: path.into(),
            message: message.into(),
        });
    }

    /// Records a warning: valid, but likely not what was meant.
    fn warn(&mut self, path: String, message: String) {
        self.warnings.push(Problem { path, message });
    }

    fn scenario(&mut self) {
        let s = self.s;
        if s.name.trim().is_empty() {
            self.report("name", "must not be empty");
        }
        if s.modes.is_empty() {
            self.report("modes", "at least one sync mode is required");
        }
        self.features();
        for (key, mode, why) in s.run_modes.each() {
            if why.trim().is_empty() {
                self.report(
                    format!("runModes.{key}"),
                    format!("say why the case cannot run under {mode}"),
                );
            }
        }
        self.unique(s.upstream_names(), "upstreams", "upstream");
        for (i, u) in s.upstreams.iter().enumerate() {
            if u.name.trim().is_empty() {
                self.report(format!("upstreams[{i}].name"), "must not be empty");
            }
            for (at, message) in super::ast::list_problems(&u.behave) {
                self.report(format!("upstreams[{i}].behave{at}"), message);
            }
        }
        self.unique(
            s.components.iter().map(|c| c.name()),
            "components",
            "component",
        );
        self.topology();
        self.plugins();
        self.unique(
            s.setup.selectors.iter().map(|x| x.name.as_str()),
            "setup.selectors",
            "selector",
        );
        for (i, sel) in s.setup.selectors.iter().enumerate() {
            self.selector(sel, &format!("setup.selectors[{i}]"));
        }
        for (i, reg) in s.setup.registrations.iter().enumerate() {
            self.registration(reg, &format!("setup.registrations[{i}]"));
        }
        self.wait_policy(&s.wait, "wait");
        let mut probes: Vec<(String, &Probe)> = Vec::new();
        wait_probes(&mut probes, &s.wait, "wait");
        let setup_selectors: HashSet<&str> =
            s.setup.selectors.iter().map(|x| x.name.as_str()).collect();
        for (i, c) in s.checks.iter().enumerate() {
            self.check(c, &format!("checks[{i}]"), &setup_selectors);
        }
        for (i, st) in s.steps.iter().enumerate() {
            let at = format!("steps[{i}]");
            self.wait_policy(&st.wait, &format!("{at}.wait"));
            wait_probes(&mut probes, &st.wait, &format!("{at}.wait"));
            if let Some(d) = &st.during {
                probes.push((format!("{at}.during"), &d.load.probe));
                self.during(d, &format!("{at}.during"));
            }
            self.unique(
                st.checks.iter().map(|c| c.name.as_str()),
                &format!("{at}.checks"),
                "check",
            );
        }
        self.steps();
        for (i, t) in s.traffic.iter().enumerate() {
            probes.push((format!("traffic[{i}]"), &t.load.probe));
        }
        self.traffic();
        self.expect_logs();
        self.resources();
        for (i, p) in s.teardown.probes.iter().enumerate() {
            probes.push((format!("teardown.probes[{i}]"), p));
        }
        for (at, p) in probes {
            self.expectation(&p.expect, &at);
            self.request(&p.request, &format!("{at}.request"));
        }
        if s.checks.is_empty() {
            self.report(
                "checks",
                "at least one check is required: a scenario without checks proves only its wait",
            );
        }
        self.unique(s.checks.iter().map(|c| c.name.as_str()), "checks", "check");
    }

    /// A request (at `at`) has an HTTP method and a path that starts with `/`.
    pub(super) fn request(&mut self, request: &RequestSpec, at: &str) {
        let method = &request.method;
        if reqwest::Method::from_bytes(method.as_bytes()).is_err() {
            self.report(
                format!("{at}.method"),
                format!("invalid HTTP method `{method}`"),
            );
        }
        if !request.path.starts_with('/') {
            self.report(
                format!("{at}.path"),
                format!("must start with `/`, got `{}`", request.path),
            );
        }
    }

    /// An expected status (of the expectation at `at`) is an HTTP status.
    pub(super) fn status(&mut self, status: Option<u16>, at: &str) {
        if let Some(status) = status.filter(|s| !(100..=599).contains(s)) {
            self.report(
                format!("{at}.expect.status"),
                format!("not an HTTP status (100 to 599), got {status}"),
            );
        }
    }

    /// Every repeated name is a problem at its element.
    fn unique<'a>(&mut self, names: impl Iterator<Item = &'a str>, path: &str, what: &str) {
        let mut seen = HashSet::new();
        for (i, n) in names.enumerate() {
            if !seen.insert(n) {
                self.report(
                    format!("{path}[{i}]"),
                    format!("duplicate {what} name `{n}`"),
                );
            }
        }
    }

    fn conditions(&mut self, list: &[ConditionSpec], path: &str) {
        for (i, c) in list.iter().enumerate() {
            let name = c.param_name.as_deref().unwrap_or_default();
            if let Err((field, message)) =
                model::condition::check(c.param_type, c.operator, name, &c.param_value)
            {
                self.report(format!("{path}[{i}].{field}"), message);
            }
        }
    }
}

/// The state of each process as the steps leave it, for checking the next fault.
#[derive(Debug, Default)]
struct Processes(HashMap<Target, ProcessState>);

/// Whether a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum ProcessState {
    #[default]
    Running,
    Stopped,
    Paused,
}

impl std::fmt::Display for ProcessState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProcessState::Running => "running",
            ProcessState::Stopped => "stopped",
            ProcessState::Paused => "paused",
        })
    }
}

impl Processes {
    fn state(&self, target: Target) -> ProcessState {
        self.0.get(&target.resolved()).copied().unwrap_or_default()
    }

    /// Its state, when it is not running.
    fn not_running(&self, target: Target) -> Option<ProcessState> {
        Some(self.state(target)).filter(|s| *s != ProcessState::Running)
    }

    /// Applies `action` to `target`, or answers the state that does not allow it.
    fn apply(&mut self, action: FaultAction, target: Target) -> Result<(), ProcessState> {
        let now = self.state(target);
        let (from, to) = match action {
            FaultAction::Stop | FaultAction::Kill => (ProcessState::Running, ProcessState::Stopped),
            FaultAction::Start => (ProcessState::Stopped, ProcessState::Running),
            FaultAction::Restart => (ProcessState::Running, ProcessState::Running),
            FaultAction::Pause => (ProcessState::Running, ProcessState::Paused),
            FaultAction::Resume => (ProcessState::Paused, ProcessState::Running),
        };
        if now != from {
            return Err(now);
        }
        self.0.insert(target.resolved(), to);
        Ok(())
    }
}
