//! Parsing (serde_norway + serde_path_to_error) and semantic validation of scenario files.
//!
//! A file that does not deserialize fails with serde's one error and its location (serde stops
//! there). A file that does is validated as a whole: every problem is reported, each at the
//! position of the node its field path names in the YAML tree ([`locate`](super::locate)).

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use super::ast::{
    Change, Check, CheckKind, Component, ConditionSpec, Expect, FaultAction, PartitionHow,
    PluginSetup, RateLimiterSpec, RegistrationSpec, RuleHandleSpec, RuleSpec, Scenario,
    SelectorSpec, StepSpec, SyncFault, SyncFaultKind, Target, TopologySpec, UpstreamRef, Wait,
};
use super::locate::Positions;
use super::placeholder;
use crate::error::{ScenarioError, ScenarioProblem};
use crate::json_path::JsonPath;

/// Adds the probes of `wait` (at `at`) with their field paths.
fn wait_probes<'s>(probes: &mut Vec<(String, &'s Expect, &'s str)>, wait: &'s Wait, at: &str) {
    for (i, p) in wait.probes.iter().enumerate() {
        probes.push((
            format!("{at}.{}", wait.probe_path(i)),
            &p.expect,
            p.request.method.as_str(),
        ));
    }
}

/// The longest poll interval a scenario may ask for.
pub const MAX_INTERVAL: Duration = Duration::from_millis(50);

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

/// A semantic problem: the field path of the offending node and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Problem {
    path: String,
    message: String,
}

/// Every semantic problem of a scenario, in validation order.
fn validate(s: &Scenario) -> Vec<Problem> {
    let mut v = Validator {
        s,
        declared: s.upstream_names().collect(),
        problems: Vec::new(),
    };
    v.scenario();
    v.problems
}

/// Collects problems; each rule reports and goes on, so one run finds them all.
struct Validator<'s> {
    s: &'s Scenario,
    /// The scenario's upstream names.
    declared: HashSet<&'s str>,
    problems: Vec<Problem>,
}

impl<'s> Validator<'s> {
    fn report(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.problems.push(Problem {
            path: path.into(),
            message: message.into(),
        });
    }

    fn scenario(&mut self) {
        let s = self.s;
        if s.name.trim().is_empty() {
            self.report("name", "must not be empty");
        }
        if s.modes.is_empty() {
            self.report("modes", "at least one sync mode is required");
        }
        self.unique(s.upstream_names(), "upstreams", "upstream");
        for (i, u) in s.upstreams.iter().enumerate() {
            if u.name.trim().is_empty() {
                self.report(format!("upstreams[{i}].name"), "must not be empty");
            }
            for (at, message) in crate::upstream::list_problems(&u.behave) {
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
        let mut probes: Vec<(String, &Expect, &str)> = Vec::new();
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
            self.unique(
                st.checks.iter().map(|c| c.name.as_str()),
                &format!("{at}.checks"),
                "check",
            );
        }
        self.steps();
        for (i, p) in s.teardown.probes.iter().enumerate() {
            probes.push((
                format!("teardown.probes[{i}]"),
                &p.expect,
                p.request.method.as_str(),
            ));
        }
        for (at, expect, m) in probes {
            self.expectation(expect, &at);
            self.method(m, &format!("{at}.request.method"));
        }
        if s.checks.is_empty() {
            self.report(
                "checks",
                "at least one check is required: a scenario without checks proves only its wait",
            );
        }
        self.unique(s.checks.iter().map(|c| c.name.as_str()), "checks", "check");
    }

    /// A selector (`setup.selectors[i]`, `createSelector`): declared upstreams, valid
    /// conditions, unique rule names and rule handles that fit its plugin.
    fn selector(&mut self, sel: &SelectorSpec, at: &str) {
        if sel.name.trim().is_empty() {
            self.report(format!("{at}.name"), "must not be empty");
        }
        self.plugin_name(&sel.plugin, format!("{at}.plugin"));
        for (j, u) in sel.upstreams.iter().enumerate() {
            self.upstream_ref(u, &format!("{at}.upstreams[{j}]"));
        }
        self.conditions(&sel.conditions, &format!("{at}.conditions"));
        self.unique(
            sel.rules.iter().map(|r| r.name.as_str()),
            &format!("{at}.rules"),
            "rule",
        );
        for (j, r) in sel.rules.iter().enumerate() {
            self.rule(&sel.plugin, r, &format!("{at}.rules[{j}]"));
        }
    }

    /// A rule (of a selector of `plugin`): valid conditions and a handle that fits.
    fn rule(&mut self, plugin: &str, r: &RuleSpec, at: &str) {
        if r.name.trim().is_empty() {
            self.report(format!("{at}.name"), "must not be empty");
        }
        self.conditions(&r.conditions, &format!("{at}.conditions"));
        self.rule_handle(plugin, r, at);
    }

    /// A registration (`setup.registrations[i]`, `register`): a declared upstream, a context
    /// path and at least one API path.
    fn registration(&mut self, reg: &RegistrationSpec, at: &str) {
        self.known(&reg.upstream, format!("{at}.upstream"));
        if !reg.context_path.starts_with('/') {
            self.report(
                format!("{at}.contextPath"),
                format!("must start with `/`, got `{}`", reg.context_path),
            );
        }
        if reg.paths.is_empty() {
            self.report(format!("{at}.paths"), "at least one API path is required");
        }
    }

    /// `setup.plugins`: one entry per plugin, each changing something; a config is a JSON
    /// object whose placeholders are known and backed by the case's `components`.
    fn plugins(&mut self) {
        let s = self.s;
        self.unique(
            s.setup.plugins.iter().map(|p| p.name.as_str()),
            "setup.plugins",
            "plugin",
        );
        for (i, p) in s.setup.plugins.iter().enumerate() {
            self.plugin_setup(p, &format!("setup.plugins[{i}]"));
        }
    }

    /// One plugin change (`setup.plugins[i]`, `updatePlugin`): it sets something, and its
    /// config is a JSON object whose placeholders are known and backed by `components`.
    fn plugin_setup(&mut self, p: &PluginSetup, at: &str) {
        let s = self.s;
        self.plugin_name(&p.name, format!("{at}.name"));
        if p.config.is_none() && p.enabled.is_none() {
            self.report(at, "sets nothing: give `config`, `enabled` or both");
        }
        let Some(config) = &p.config else { return };
        let problems = placeholder::problems(config, &s.components);
        let filled = placeholder::substitute(
            config,
            &placeholder::Values {
                redis_url: Some("127.0.0.1:6379".into()),
            },
        );
        for problem in &problems {
            self.report(format!("{at}.config"), problem.clone());
        }
        if let (true, Ok(text)) = (problems.is_empty(), filled) {
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(v) if v.is_object() => {}
                Ok(_) => self.report(format!("{at}.config"), "must be a JSON object"),
                Err(e) => self.report(
                    format!("{at}.config"),
                    format!("must be a JSON object: {e}"),
                ),
            }
        }
    }

    /// `name` is one of ShenYu's built-in plugins (the admin knows no other).
    fn plugin_name(&mut self, name: &str, path: String) {
        if name.trim().is_empty() {
            self.report(path, "must not be empty");
        } else if !model::BUILTIN_PLUGINS.iter().any(|p| p.name == name) {
            let known: Vec<&str> = model::BUILTIN_PLUGINS.iter().map(|p| p.name).collect();
            self.report(
                path,
                format!(
                    "unknown plugin `{name}` (ShenYu's plugins: {})",
                    known.join(", ")
                ),
            );
        }
    }

    /// A divide upstream (`...upstreams[j]`): a declared upstream with a weight the admin
    /// takes ([`model::DivideUpstream::check`]).
    fn upstream_ref(&mut self, u: &UpstreamRef, at: &str) {
        self.known(&u.upstream, format!("{at}.upstream"));
        // The address is only known at run time; a stand-in lets the shared check judge the
        // rest.
        let lowered = model::DivideUpstream {
            upstream_url: "upstream:1".to_owned(),
            weight: u.weight,
            status: u.status,
            ..Default::default()
        };
        if let Err((field, message)) = lowered.check() {
            self.report(format!("{at}.{field}"), message);
        }
    }

    /// A divide rule handle the admin takes ([`model::DivideRuleHandle::check`]).
    fn divide_handle(&mut self, handle: &RuleHandleSpec, at: &str) {
        if let Err((field, message)) = handle.to_handle().check() {
            self.report(format!("{at}.{field}"), message);
        }
    }

    /// `name` is one of the scenario's `upstreams`.
    fn known(&mut self, name: &str, path: String) {
        if !self.declared.contains(name) {
            let message = format!(
                "upstream `{name}` is not declared in `upstreams` (declared: {})",
                self.s.upstream_names().collect::<Vec<_>>().join(", ")
            );
            self.report(path, message);
        }
    }

    /// A rule's handle fits its plugin: `contextPath` only under the contextPath plugin, whose
    /// percentage is 0–100; `handle` (divide's) not there.
    fn rule_handle(&mut self, plugin: &str, rule: &RuleSpec, at: &str) {
        match (&rule.context_path, plugin) {
            (Some(_), p) if p != "contextPath" => self.report(
                format!("{at}.contextPath"),
                format!("is the contextPath plugin's rule handle; this rule is under `{p}`"),
            ),
            (Some(cp), _) => {
                if let Err((field, message)) = cp.to_handle().check() {
                    self.report(format!("{at}.contextPath.{field}"), message);
                }
            }
            (None, "contextPath") if rule.handle != RuleHandleSpec::default() => self.report(
                format!("{at}.handle"),
                "is a divide rule handle; a contextPath rule takes `contextPath:`",
            ),
            (None, _) => self.divide_handle(&rule.handle, &format!("{at}.handle")),
        }
        self.rate_limiter_handle(plugin, rule.rate_limiter.as_ref(), &rule.handle, at);
    }

    /// A rateLimiter handle only under the rateLimiter plugin, one the admin accepts; a
    /// rateLimiter rule takes no divide `handle`.
    fn rate_limiter_handle(
        &mut self,
        plugin: &str,
        spec: Option<&RateLimiterSpec>,
        handle: &RuleHandleSpec,
        at: &str,
    ) {
        match (spec, plugin) {
            (Some(_), p) if p != "rateLimiter" => self.report(
                format!("{at}.rateLimiter"),
                format!("is the rateLimiter plugin's rule handle; this rule is under `{p}`"),
            ),
            (Some(rl), _) => {
                if let Err((field, message)) = rl.check() {
                    self.report(format!("{at}.rateLimiter.{field}"), message);
                }
            }
            (None, "rateLimiter") => self.report(
                format!("{at}.rateLimiter"),
                "a rateLimiter rule needs its handle (`rateLimiter: {algorithmName, \
                 replenishRate, burstCapacity}`)",
            ),
            _ => {}
        }
        if spec.is_some() && *handle != RuleHandleSpec::default() {
            self.report(
                format!("{at}.handle"),
                "is a divide rule handle; a rateLimiter rule takes `rateLimiter:`",
            );
        }
    }

    /// An expectation constrains something, and the upstream, selector and rule it names exist.
    fn expectation(&mut self, expect: &Expect, at: &str) {
        if expect.is_empty() {
            self.report(
                format!("{at}.expect"),
                "accepts every answer: constrain at least one of status, upstream, route, code, \
                 bodyContains, bodyNotContains, headers, json, received, selector, rule",
            );
        }
        if let Some(want) = &expect.upstream {
            let path = format!("{at}.expect.upstream");
            if want.names().is_empty() {
                self.report(path.clone(), "name at least one upstream");
            }
            for name in want.names() {
                self.known(name, path.clone());
            }
        }
        for path in expect.json.keys() {
            if let Err(e) = path.parse::<JsonPath>() {
                self.report(format!("{at}.expect.json"), e);
            }
        }
        let selectors = self.every_selector();
        if let Some(name) = &expect.selector
            && !selectors.contains_key(name.as_str())
        {
            self.report(
                format!("{at}.expect.selector"),
                format!("no selector named `{name}` in setup or a `createSelector`"),
            );
        }
        if let Some(rule) = &expect.rule {
            let holders: Vec<&str> = selectors
                .iter()
                .filter(|(x, _)| expect.selector.as_ref().is_none_or(|n| *x == n))
                .filter(|(_, rules)| rules.contains(rule.as_str()))
                .map(|(x, _)| *x)
                .collect();
            let message = match holders.len() {
                1 => None,
                0 => Some(format!(
                    "no rule named `{rule}` in setup, a `createSelector` or a `createRule`"
                )),
                _ => Some(format!(
                    "rule `{rule}` is in several selectors ({}): name the `selector` too",
                    holders.join(", ")
                )),
            };
            if let Some(message) = message {
                self.report(format!("{at}.expect.rule"), message);
            }
        }
    }

    /// Every selector the scenario makes, in setup or a step, with the rules it ever gets
    /// (sorted by name): what `selector` and `rule` expectations may name.
    fn every_selector(&self) -> std::collections::BTreeMap<&'s str, HashSet<&'s str>> {
        let s = self.s;
        let mut all: std::collections::BTreeMap<&str, HashSet<&str>> =
            std::collections::BTreeMap::new();
        let created = s.steps.iter().flat_map(|st| &st.changes);
        for sel in s
            .setup
            .selectors
            .iter()
            .chain(created.clone().filter_map(|c| match c {
                Change::CreateSelector(sel) => Some(sel),
                _ => None,
            }))
        {
            all.entry(sel.name.as_str())
                .or_default()
                .extend(sel.rules.iter().map(|r| r.name.as_str()));
        }
        for c in created {
            if let Change::CreateRule(r) = c {
                all.entry(r.selector.as_str())
                    .or_default()
                    .insert(r.rule.name.as_str());
            }
        }
        all
    }

    /// The plugin of the selector `name` (from setup or a `createSelector`).
    fn plugin_of(&self, name: &str) -> Option<&'s str> {
        let s = self.s;
        let created = s
            .steps
            .iter()
            .flat_map(|st| &st.changes)
            .filter_map(|c| match c {
                Change::CreateSelector(sel) => Some(sel),
                _ => None,
            });
        s.setup
            .selectors
            .iter()
            .chain(created)
            .find(|x| x.name == name)
            .map(|x| x.plugin.as_str())
    }

    fn wait_policy(&mut self, w: &Wait, at: &str) {
        if w.interval > MAX_INTERVAL || w.interval.is_zero() {
            self.report(
                format!("{at}.interval"),
                format!(
                    "must be between 1ms and 50ms, got {}",
                    humantime::format_duration(w.interval)
                ),
            );
        }
        if w.consecutive == 0 {
            self.report(format!("{at}.consecutive"), "must be at least 1");
        }
    }

    fn unknown_selector(&mut self, name: &str, path: String) {
        self.report(
            path,
            format!(
                "no selector named `{name}` at this point (made by setup or an earlier \
                 `createSelector`, and not deleted since)"
            ),
        );
    }

    /// The rule `name` of `selector` still exists (`at` is the change's path).
    fn live_rule(
        &mut self,
        live: &HashMap<&str, HashSet<&str>>,
        selector: &str,
        name: &str,
        at: &str,
    ) {
        match live.get(selector) {
            None => self.unknown_selector(selector, format!("{at}.selector")),
            Some(rules) if !rules.contains(name) => self.report(
                format!("{at}.name"),
                format!(
                    "selector `{selector}` has no rule named `{name}` at this point (made by setup or an earlier change, and not deleted since)"
                ),
            ),
            Some(_) => {}
        }
    }

    /// `topology`: counts in range, late gateways exist and leave one for setup, and any
    /// topology but one admin on SQLite and one gateway runs on the host backend only.
    fn topology(&mut self) {
        let t = &self.s.topology;
        if !(1..=TopologySpec::MAX_ADMINS).contains(&t.admins) {
            self.report(
                "topology.admins",
                format!("must be 1 to {}", TopologySpec::MAX_ADMINS),
            );
        }
        if !(1..=TopologySpec::MAX_GATEWAYS).contains(&t.gateways) {
            self.report(
                "topology.gateways",
                format!("must be 1 to {}", TopologySpec::MAX_GATEWAYS),
            );
        }
        let mut seen = HashSet::new();
        for (i, &late) in t.late.iter().enumerate() {
            if late >= t.gateways {
                self.report(
                    format!("topology.late[{i}]"),
                    format!(
                        "gateway[{late}] does not exist: the topology runs {} gateway(s), \
                         gateway[0] to gateway[{}]",
                        t.gateways,
                        t.gateways.saturating_sub(1)
                    ),
                );
            } else if !seen.insert(late) {
                self.report(
                    format!("topology.late[{i}]"),
                    format!("gateway[{late}] twice"),
                );
            }
        }
        if t.gateways > 0 && seen.len() >= usize::from(t.gateways) {
            self.report(
                "topology.late",
                "every gateway is late, but setup and its wait need one: leave one out",
            );
        }
        if !t.is_default() && self.s.backends.contains(&crate::BackendKind::Docker) {
            self.report(
                "topology",
                "several admins or gateways, late gateways and PostgreSQL storage run on the \
                 host backend only so far: add `backends: [host]`",
            );
        }
    }

    /// The processes as they are before the first step: late gateways stopped.
    fn initial_processes(&self) -> Processes {
        let mut processes = Processes::default();
        for &late in &self.s.topology.late {
            processes
                .0
                .insert(Target::Gateway(Some(late)), ProcessState::Stopped);
        }
        processes
    }

    /// When none of the topology's `count` admins or gateways (`kind`) runs: `the admin is
    /// stopped` (one of them), `no admin is running` (several), and the pronoun for "start or
    /// resume" it.
    fn none_runs(
        &self,
        processes: &Processes,
        count: u8,
        kind: fn(Option<u8>) -> Target,
    ) -> Option<(String, &'static str)> {
        let mut states = (0..count).map(|i| processes.state(kind(Some(i))));
        if states.any(|state| state == ProcessState::Running) {
            return None;
        }
        let name = kind(None);
        Some(match count {
            1 => (
                format!("the {name} is {}", processes.state(kind(None))),
                "it",
            ),
            _ => (format!("no {name} is running"), "one"),
        })
    }

    /// Step changes name setup objects that still exist at that point, and declared upstreams;
    /// a step's checks see the selectors alive after its changes.
    fn steps(&mut self) {
        let s = self.s;
        // Live setup objects: selector name -> its rule names.
        let mut live: HashMap<&str, HashSet<&str>> = s
            .setup
            .selectors
            .iter()
            .map(|x| {
                (
                    x.name.as_str(),
                    x.rules.iter().map(|r| r.name.as_str()).collect(),
                )
            })
            .collect();
        let mut processes = self.initial_processes();
        let mut partitioned = false;
        let topology = &s.topology;
        for (i, st) in s.steps.iter().enumerate() {
            if st.changes.is_empty() {
                self.report(
                    format!("steps[{i}].changes"),
                    "at least one change is required",
                );
            }
            for (j, c) in st.changes.iter().enumerate() {
                let at = format!("steps[{i}].changes[{j}]");
                if let Some((action, target)) = c.fault() {
                    self.fault(
                        &mut processes,
                        action,
                        target,
                        &format!("{at}.{}", c.name()),
                    );
                } else if let Some(via) = st.via {
                    self.via(&processes, via, &format!("steps[{i}].via"), &at);
                } else if let Some((which, it)) =
                    self.none_runs(&processes, topology.admins, Target::Admin)
                {
                    self.report(
                        format!("{at}.{}", c.name()),
                        format!("{which} at this point: start or resume {it} first"),
                    );
                }
                match c {
                    Change::CreateSelector(sel) => {
                        let at = format!("{at}.createSelector");
                        self.selector(sel, &at);
                        let rules = sel.rules.iter().map(|r| r.name.as_str()).collect();
                        if live.insert(sel.name.as_str(), rules).is_some() {
                            self.report(
                                format!("{at}.name"),
                                format!("a selector named `{}` exists at this point", sel.name),
                            );
                        }
                    }
                    Change::CreateRule(r) => {
                        let at = format!("{at}.createRule");
                        let plugin = self.plugin_of(&r.selector);
                        match live
                            .get_mut(r.selector.as_str())
                            .map(|rules| rules.insert(r.rule.name.as_str()))
                        {
                            None => self.unknown_selector(&r.selector, format!("{at}.selector")),
                            Some(false) => self.report(
                                format!("{at}.rule.name"),
                                format!(
                                    "selector `{}` has a rule named `{}` at this point",
                                    r.selector, r.rule.name
                                ),
                            ),
                            Some(true) => {}
                        }
                        self.rule(plugin.unwrap_or_default(), &r.rule, &format!("{at}.rule"));
                    }
                    Change::Register(reg) => self.registration(reg, &format!("{at}.register")),
                    Change::UpdateSelector(u) => {
                        let at = format!("{at}.updateSelector");
                        if !live.contains_key(u.name.as_str()) {
                            self.unknown_selector(&u.name, format!("{at}.name"));
                        }
                        for (k, up) in u.upstreams.iter().flatten().enumerate() {
                            self.upstream_ref(up, &format!("{at}.upstreams[{k}]"));
                        }
                        if let Some(cs) = &u.conditions {
                            self.conditions(cs, &format!("{at}.conditions"));
                        }
                    }
                    Change::UpdateRule(u) => {
                        let at = format!("{at}.updateRule");
                        self.live_rule(&live, &u.selector, &u.name, &at);
                        if let Some(cs) = &u.conditions {
                            self.conditions(cs, &format!("{at}.conditions"));
                        }
                        let handles = [
                            u.handle.is_some(),
                            u.context_path.is_some(),
                            u.rate_limiter.is_some(),
                        ];
                        if handles.iter().filter(|h| **h).count() > 1 {
                            self.report(
                                at.clone(),
                                "give one of `handle`, `contextPath` and `rateLimiter`: a rule \
                                 has one handle",
                            );
                        }
                        if let Some(cp) = &u.context_path
                            && let Err((field, message)) = cp.to_handle().check()
                        {
                            self.report(format!("{at}.contextPath.{field}"), message);
                        }
                        if let Some(rl) = &u.rate_limiter
                            && let Err((field, message)) = rl.check()
                        {
                            self.report(format!("{at}.rateLimiter.{field}"), message);
                        }
                        if let Some(handle) = &u.handle {
                            self.divide_handle(handle, &format!("{at}.handle"));
                        }
                    }
                    Change::EnablePlugin(p) => {
                        self.plugin_name(&p.name, format!("{at}.enablePlugin.name"));
                    }
                    Change::DeleteSelector(name) => {
                        if live.remove(name.as_str()).is_none() {
                            self.unknown_selector(name, format!("{at}.deleteSelector"));
                        }
                    }
                    Change::DeleteRule(r) => {
                        let at = format!("{at}.deleteRule");
                        self.live_rule(&live, &r.selector, &r.name, &at);
                        if let Some(rules) = live.get_mut(r.selector.as_str()) {
                            rules.remove(r.name.as_str());
                        }
                    }
                    Change::UpdatePlugin(p) => {
                        self.plugin_setup(p, &format!("{at}.updatePlugin"));
                    }
                    Change::Partition(_) | Change::Heal => {
                        let at = format!("{at}.{}", c.name());
                        let partition = matches!(c, Change::Partition(_));
                        if partition == partitioned {
                            let state = if partitioned { "" } else { "not " };
                            self.report(
                                at.clone(),
                                format!("the gateway is {state}partitioned at this point"),
                            );
                        }
                        partitioned = partition;
                        if topology.admins > 1 || topology.gateways > 1 {
                            self.report(
                                at.clone(),
                                "partitions need a topology of one admin and one gateway so \
                                 far (the proxy sits on that one sync connection)",
                            );
                        }
                        if let Change::Partition(how) = c
                            && *how != PartitionHow::Blackhole
                            && s.backends.contains(&crate::BackendKind::Docker)
                        {
                            self.report(
                                at,
                                format!(
                                    "`partition: {}` runs on the host backend only (its sync \
                                     proxy closes or delays connections); the docker backend \
                                     disconnects the gateway from its sync network, which \
                                     leaves them silent: use `blackhole` or add `backends: \
                                     [host]`",
                                    how.name()
                                ),
                            );
                        }
                    }
                    Change::SyncFault(f) => {
                        let at = format!("{at}.syncFault");
                        self.sync_fault(f, &at);
                        let pushed = st.changes[j + 1..].iter().any(Change::is_admin_change);
                        if !pushed {
                            self.report(
                                at,
                                "a protocol fault applies to the admin's next pushes: give a \
                                 change of the config after it in the same step",
                            );
                        }
                    }
                    Change::Compact(target) => {
                        self.compact(&processes, *target, &format!("{at}.compact"));
                    }
                    Change::ExpireSession(target) => {
                        self.expire_session(
                            &mut processes,
                            *target,
                            &format!("{at}.expireSession"),
                        );
                    }
                    Change::Stop(_)
                    | Change::Kill(_)
                    | Change::Start(_)
                    | Change::Restart(_)
                    | Change::Pause(_)
                    | Change::Resume(_) => {}
                }
            }
            if let Some(hold) = st.isolated {
                self.isolated(st, hold, &format!("steps[{i}].isolated"));
            }
            if let Some((which, it)) =
                self.none_runs(&processes, topology.gateways, Target::Gateway)
            {
                self.report(
                    format!("steps[{i}]"),
                    format!(
                        "{which} at the end of the step, but its wait and checks go through \
                         it: start or resume {it} in the same step"
                    ),
                );
            }
            let selectors: HashSet<&str> = live.keys().copied().collect();
            for (j, c) in st.checks.iter().enumerate() {
                self.check(c, &format!("steps[{i}].checks[{j}]"), &selectors);
            }
        }
        if let Some(last) = s.steps.len().checked_sub(1) {
            if partitioned {
                self.report(
                    format!("steps[{last}]"),
                    "the gateway is partitioned after the last step, but teardown needs it in \
                     sync: add `heal`",
                );
            }
            if let Some((which, it)) = self.none_runs(&processes, topology.admins, Target::Admin) {
                self.report(
                    format!("steps[{last}]"),
                    format!(
                        "{which} after the last step, but teardown needs it: start or resume {it}"
                    ),
                );
            }
            for target in [Target::Zookeeper, Target::Etcd] {
                if let Some(state) = processes.not_running(target) {
                    self.report(
                        format!("steps[{last}]"),
                        format!(
                            "the {target} is {state} after the last step, but teardown needs it: \
                             start or resume it"
                        ),
                    );
                }
            }
        }
    }

    /// A step's `isolated` claim means something: the step changes the config (else the
    /// gateway's digest equals the admin's all along and the claim fails for no reason) and
    /// holds it for some time.
    fn isolated(&mut self, st: &StepSpec, hold: Duration, at: &str) {
        if !st.changes.iter().any(Change::is_admin_change) {
            self.report(
                at.to_owned(),
                "claims the step's config change does not reach the gateway, but the step \
                 changes no config: give a change of the config (an update, enable, create or \
                 delete) in the same step",
            );
        }
        if hold.is_zero() {
            self.report(
                at.to_owned(),
                "must be more than 0s: the time the claim holds",
            );
        }
    }

    /// A protocol fault fits the case: its kind means something in every mode the case runs
    /// in, the backend is the host (the admin's test-only hook), `count` is 1 to 100 and
    /// `delay` is given for `lateAnswer` only.
    fn sync_fault(&mut self, f: &SyncFault, at: &str) {
        let s = self.s;
        let kind = f.kind.name();
        let mode = f.kind.mode();
        let others: Vec<String> = s
            .modes
            .iter()
            .filter(|m| **m != mode)
            .map(ToString::to_string)
            .collect();
        if !others.is_empty() {
            self.report(
                format!("{at}.kind"),
                format!(
                    "`{kind}` is a fault of the {mode} sync channel and means nothing in {}: \
                     give `modes: [{mode}]`",
                    others.join(", ")
                ),
            );
        }
        if s.backends.contains(&crate::BackendKind::Docker) {
            self.report(
                at,
                "protocol faults run on the host backend only so far: add `backends: [host]`",
            );
        }
        if !(1..=100).contains(&f.count) {
            self.report(
                format!("{at}.count"),
                format!("must be between 1 and 100, got {}", f.count),
            );
        }
        match (f.kind, f.delay) {
            (SyncFaultKind::LateAnswer, None) => {
                self.report(format!("{at}.delay"), "`lateAnswer` needs a delay");
            }
            (SyncFaultKind::LateAnswer, Some(_)) | (_, None) => {}
            (_, Some(_)) => self.report(
                format!("{at}.delay"),
                format!("only `lateAnswer` waits; `{kind}` takes no delay"),
            ),
        }
    }

    /// A `compact` names etcd, in a case that runs in the etcd mode only, on the host
    /// backend, while etcd runs.
    fn compact(&mut self, processes: &Processes, target: Target, at: &str) {
        let s = self.s;
        if target != Target::Etcd {
            self.report(at, format!("only etcd compacts revisions, not `{target}`"));
            return;
        }
        if s.modes.iter().any(|m| *m != model::SyncMode::Etcd) {
            self.report(
                at,
                "`compact: etcd` means something in the etcd mode only: give `modes: [etcd]`",
            );
        }
        if s.backends.contains(&crate::BackendKind::Docker) {
            self.report(
                at,
                "`compact: etcd` runs on the host backend only so far: add `backends: [host]`",
            );
        }
        if let Some(state) = processes.not_running(Target::Etcd) {
            self.report(
                at,
                format!("the etcd is {state} at this point: start it first"),
            );
        }
    }

    /// `expireSession` names a running gateway of a case that runs in the zookeeper mode only,
    /// on the host backend; the gateway is paused afterwards.
    fn expire_session(&mut self, processes: &mut Processes, target: Target, at: &str) {
        let s = self.s;
        if !matches!(target, Target::Gateway(_)) {
            self.report(
                at,
                format!("only a gateway's ZooKeeper session expires here, not `{target}`'s"),
            );
            return;
        }
        if s.modes.iter().any(|m| *m != model::SyncMode::Zookeeper) {
            self.report(
                at,
                "`expireSession` means something in the zookeeper mode only: give \
                 `modes: [zookeeper]`",
            );
        }
        if s.backends.contains(&crate::BackendKind::Docker) {
            self.report(
                at,
                "`expireSession` runs on the host backend only so far (it asks ZooKeeper's \
                 `cons` on the host): add `backends: [host]`",
            );
        }
        // The gateway is paused while its session expires: a `pause` for what runs.
        self.fault(processes, FaultAction::Pause, target, at);
    }

    /// A fault fits the case (its target runs in every mode the case runs in; every backend
    /// applies every fault)
    /// and the target's state at that point (`start` needs it stopped, `resume` paused, the
    /// others running).
    fn fault(&mut self, processes: &mut Processes, action: FaultAction, target: Target, at: &str) {
        let s = self.s;
        let only_mode = |mode: model::SyncMode| -> Option<String> {
            let others: Vec<String> = s
                .modes
                .iter()
                .filter(|m| **m != mode)
                .map(ToString::to_string)
                .collect();
            (!others.is_empty()).then(|| {
                format!(
                    "`{target}` runs only in the {mode} mode, and this case also runs in {}: \
                     give `modes: [{mode}]`",
                    others.join(", ")
                )
            })
        };
        let unavailable = match target {
            Target::Admin(i) => self.indexed(i, s.topology.admins, "admins"),
            Target::Gateway(i) => self.indexed(i, s.topology.gateways, "gateways"),
            Target::Zookeeper => only_mode(model::SyncMode::Zookeeper),
            Target::Etcd => only_mode(model::SyncMode::Etcd),
            Target::Redis => (!s.components.contains(&Component::Redis))
                .then(|| "`redis` is not one of the case's `components`".to_owned()),
        };
        if let Some(why) = unavailable {
            self.report(at, why);
            return;
        }
        if let Err(state) = processes.apply(action, target) {
            self.report(
                at,
                format!(
                    "`{}` needs the {target} {}, but it is {state} at this point",
                    action.name(),
                    match action {
                        FaultAction::Start => "stopped",
                        FaultAction::Resume => "paused",
                        _ => "running",
                    }
                ),
            );
        }
    }

    /// A step's `via` (at `field`) names an admin of the topology, running when the admin
    /// change at `change` is made.
    fn via(&mut self, processes: &Processes, via: Target, field: &str, change: &str) {
        let Target::Admin(index) = via else {
            self.report(
                field,
                format!("`{via}` is not an admin: name one, `admin[i]`"),
            );
            return;
        };
        if let Some(why) = self.indexed(index, self.s.topology.admins, "admins") {
            self.report(field, why);
        } else if let Some(state) = processes.not_running(via) {
            self.report(
                change,
                format!("the step's changes go to {via} (`via`), which is {state} at this point"),
            );
        }
    }

    /// What is wrong with `admin`/`gateway` (`index` `None`) or `admin[i]`/`gateway[i]` in a
    /// topology of `count` (`field` in `topology`), if anything.
    fn indexed(&self, index: Option<u8>, count: u8, field: &str) -> Option<String> {
        let kind = &field[..field.len() - 1];
        match index {
            None if count > 1 => Some(format!(
                "the topology runs {count} {field} (`topology.{field}`): name one, \
                 `{kind}[0]` to `{kind}[{}]`",
                count - 1
            )),
            Some(i) if i >= count => Some(format!(
                "`{kind}[{i}]` does not exist: `topology.{field}` is {count}"
            )),
            _ => None,
        }
    }

    /// A check fits its kind: its request is valid, the selector and upstreams it names exist
    /// at that point, and its numbers are in range.
    fn check(&mut self, c: &Check, at: &str, selectors: &HashSet<&str>) {
        // A probe's keys stand beside `name`; a judge's under its key.
        let base = match &c.kind {
            CheckKind::Probe(_) => at.to_owned(),
            kind => format!("{at}.{}", kind.name()),
        };
        self.method(&c.kind.request().method, &format!("{base}.request.method"));
        let selector = |v: &mut Self, name: &str| {
            if !selectors.contains(name) {
                v.report(
                    format!("{base}.selector"),
                    format!("no selector named `{name}` at this point"),
                );
            }
        };
        let at_least = |v: &mut Self, value: u32, min: u32, field: &str| {
            if value < min {
                v.report(
                    format!("{base}.{field}"),
                    format!("must be at least {min}, got {value}"),
                );
            }
        };
        let fraction = |v: &mut Self, value: f64, field: &str, open: bool| {
            let ok = if open {
                value > 0.0 && value < 1.0
            } else {
                (0.0..=1.0).contains(&value)
            };
            if !ok {
                let range = if open {
                    "strictly between 0 and 1"
                } else {
                    "between 0 and 1"
                };
                v.report(
                    format!("{base}.{field}"),
                    format!("must be {range}, got {value}"),
                );
            }
        };
        match &c.kind {
            CheckKind::Probe(p) => {
                self.expectation(&p.expect, at);
                at_least(self, p.repeat, 1, "repeat");
                for name in p.attempts.keys() {
                    self.known(name, format!("{base}.attempts.{name}"));
                }
            }
            CheckKind::Distribution(d) => {
                selector(self, &d.selector);
                at_least(self, d.requests, 1, "requests");
                at_least(self, d.concurrency, 1, "concurrency");
                fraction(self, d.alpha, "alpha", true);
                if let Some(shares) = &d.shares {
                    for (name, share) in shares {
                        let path = format!("{base}.shares.{name}");
                        self.known(name, path.clone());
                        if !(share.is_finite() && *share >= 0.0) {
                            self.report(path, format!("must be a number ≥ 0, got {share}"));
                        }
                    }
                    if shares.values().sum::<f64>() <= 0.0 {
                        self.report(
                            format!("{base}.shares"),
                            "at least one share must be positive",
                        );
                    }
                }
            }
            CheckKind::RoundRobin(r) => {
                selector(self, &r.selector);
                at_least(self, r.rounds, 1, "rounds");
            }
            CheckKind::Hash(h) => {
                selector(self, &h.selector);
                at_least(self, h.clients, 1, "clients");
                at_least(self, h.repeat, 1, "repeat");
                if h.clients > MAX_HASH_CLIENTS {
                    self.report(
                        format!("{base}.clients"),
                        format!("at most {MAX_HASH_CLIENTS}, got {}", h.clients),
                    );
                }
            }
            CheckKind::Steer(st) => {
                selector(self, &st.selector);
                self.known(&st.slow, format!("{base}.slow"));
                at_least(self, st.requests, 1, "requests");
                at_least(self, st.concurrency, 1, "concurrency");
                fraction(self, st.max_share, "maxShare", false);
                fraction(self, st.min_share, "minShare", false);
            }
            CheckKind::Latency(l) => {
                selector(self, &l.selector);
                at_least(self, l.consecutive, 1, "consecutive");
                if l.changes < 2 || l.changes % 2 != 0 {
                    self.report(
                        format!("{base}.changes"),
                        format!(
                            "must be an even number ≥ 2 (the selector ends as it started), got {}",
                            l.changes
                        ),
                    );
                }
                for (field, limits) in [("limits", &l.limits), ("probeLimits", &l.probe_limits)] {
                    for (q, set, least) in [
                        ("p95", limits.p95.is_some(), MIN_P95_CHANGES),
                        ("p99", limits.p99.is_some(), MIN_P99_CHANGES),
                    ] {
                        if set && l.changes < least {
                            self.report(
                                format!("{base}.{field}.{q}"),
                                format!(
                                    "a {q} limit needs `changes` ≥ {least} (with fewer the {q} is \
                                     the maximum), got {}",
                                    l.changes
                                ),
                            );
                        }
                    }
                }
                if l.interval.is_zero() || l.interval > MAX_LATENCY_INTERVAL {
                    self.report(
                        format!("{base}.interval"),
                        format!(
                            "must be between 1µs and 1ms (a latency is not quantised by its probe), got {}",
                            humantime::format_duration(l.interval)
                        ),
                    );
                }
            }
            CheckKind::Burst(b) => {
                if !(1..=MAX_BURST).contains(&b.requests) {
                    self.report(
                        format!("{base}.requests"),
                        format!("must be between 1 and {MAX_BURST}, got {}", b.requests),
                    );
                }
                for status in b.statuses.keys() {
                    if !(100..=599).contains(status) {
                        self.report(
                            format!("{base}.statuses.{status}"),
                            "not an HTTP status (100 to 599)",
                        );
                    }
                }
                let expected: u64 = b.statuses.values().map(|&n| u64::from(n)).sum();
                if expected != u64::from(b.requests) {
                    self.report(
                        format!("{base}.statuses"),
                        format!(
                            "the counts add up to {expected}, but {} requests are sent",
                            b.requests
                        ),
                    );
                }
            }
            CheckKind::Churn(ch) => {
                self.expectation(&ch.expect, &base);
                if !(1..=MAX_CHURN_RATE).contains(&ch.rate) {
                    self.report(
                        format!("{base}.rate"),
                        format!(
                            "must be between 1 and {MAX_CHURN_RATE} changes/s, got {}",
                            ch.rate
                        ),
                    );
                }
                if !(1..=MAX_CHURN_CONNECTIONS).contains(&ch.connections) {
                    self.report(
                        format!("{base}.connections"),
                        format!(
                            "must be between 1 and {MAX_CHURN_CONNECTIONS}, got {}",
                            ch.connections
                        ),
                    );
                }
                if !(1..=MAX_CHURN_REQUEST_RATE).contains(&ch.request_rate) {
                    self.report(
                        format!("{base}.requestRate"),
                        format!(
                            "must be between 1 and {MAX_CHURN_REQUEST_RATE} requests/s, got {}",
                            ch.request_rate
                        ),
                    );
                }
                if ch.duration < MIN_CHURN_DURATION {
                    self.report(
                        format!("{base}.duration"),
                        format!(
                            "must be at least {} (an achieved rate needs a few changes), got {}",
                            humantime::format_duration(MIN_CHURN_DURATION),
                            humantime::format_duration(ch.duration)
                        ),
                    );
                }
                if let Some(b) = &ch.burst {
                    if b.every.is_zero() || b.every > ch.duration {
                        self.report(
                            format!("{base}.burst.every"),
                            format!(
                                "must be positive and at most the duration ({}), got {}",
                                humantime::format_duration(ch.duration),
                                humantime::format_duration(b.every)
                            ),
                        );
                    }
                    if !(1..=MAX_CHURN_RATE).contains(&b.changes) {
                        self.report(
                            format!("{base}.burst.changes"),
                            format!("must be between 1 and {MAX_CHURN_RATE}, got {}", b.changes),
                        );
                    }
                }
            }
        }
    }

    fn method(&mut self, method: &str, path: &str) {
        if reqwest::Method::from_bytes(method.as_bytes()).is_err() {
            self.report(path, format!("invalid HTTP method `{method}`"));
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

/// The most client addresses a hash check may ask for.
const MAX_HASH_CLIENTS: u32 = 1024;

/// The most requests a burst check sends at once.
const MAX_BURST: u32 = 256;

/// The most admin changes a second (and per burst) a churn check may ask for.
const MAX_CHURN_RATE: u32 = 1000;

/// The most requests a churn check keeps in flight on its stable route.
const MAX_CHURN_CONNECTIONS: u32 = 64;

/// The most requests a second a churn check sends on its stable route.
const MAX_CHURN_REQUEST_RATE: u32 = 100_000;

/// The shortest phase of a churn check.
const MIN_CHURN_DURATION: Duration = Duration::from_millis(500);

/// The longest probe interval of a latency check.
pub const MAX_LATENCY_INTERVAL: Duration = Duration::from_millis(1);
/// The fewest changes a latency check with a p95 limit makes (5% of them is one change).
pub const MIN_P95_CHANGES: u32 = 20;
/// The fewest changes a latency check with a p99 limit makes (1% of them is one change).
pub const MIN_P99_CHANGES: u32 = 100;

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = include_str!("testdata/annotated.yaml");
    const REDIS: &str = include_str!("testdata/redis_component.yaml");

    impl Scenario {
        /// The expectation of probe check `i`.
        fn checks_probe_expect(&self, i: usize) -> &Expect {
            match &self.checks[i].kind {
                CheckKind::Probe(p) => &p.expect,
                other => panic!("check {i} is a {} check", other.name()),
            }
        }
    }

    fn err(src: &str) -> String {
        parse_str(Path::new("x.yaml"), src).unwrap_err().to_string()
    }

    #[test]
    fn the_example_parses_with_defaults() {
        let s = parse_str(Path::new("uri_equal.yaml"), GOOD).unwrap();
        assert_eq!(s.name, "uri_equal");
        assert_eq!(s.modes, vec![model::SyncMode::Websocket]);
        assert_eq!(s.wait.consecutive, 3);
        assert_eq!(s.wait.interval, Duration::from_millis(10));
        assert_eq!(s.wait.timeout, Duration::from_secs(10));
        let sel = &s.setup.selectors[0];
        assert_eq!(sel.upstreams[0].weight, 50);
        assert!(sel.upstreams[0].status);
        assert_eq!(sel.conditions[0].to_dto().param_name.as_deref(), Some("/"));
        assert_eq!(sel.rules[0].handle.to_handle().retry, 3);
        assert_eq!(s.checks.len(), 2);
        match &s.checks[1].kind {
            super::super::ast::CheckKind::Probe(p) => {
                assert_eq!(p.expect.route, Some(super::super::ast::Route::Absent));
                assert_eq!(p.repeat, 1);
            }
            other => panic!("{other:?}"),
        }
    }

    /// The smallest scenario: every optional key left out.
    const MINIMAL: &str = "
name: minimal
modes: [websocket]
upstreams: [alpha]
setup:
  selectors:
    - name: s
      plugin: divide
      conditions:
        - { paramType: uri, operator: '=', paramValue: /x }
      upstreams:
        - { upstream: alpha }
      rules:
        - name: r
          conditions:
            - { paramType: uri, operator: '=', paramValue: /x }
wait:
  probe:
    request: { path: /x }
    expect: { upstream: alpha }
checks:
  - name: c
    request: { path: /x }
    expect: { status: 200 }
";

    #[test]
    fn omitted_keys_take_the_documented_defaults() {
        use super::super::ast::{MatchModeName, SelectorKind};
        let s = parse_str(Path::new("minimal.yaml"), MINIMAL).unwrap();
        assert_eq!(s.description, "");
        assert_eq!(
            s.backends,
            vec![
                crate::BackendKind::Host,
                crate::BackendKind::Docker,
                crate::BackendKind::External
            ]
        );
        assert!(s.steps.is_empty() && s.teardown.probes.is_empty());
        assert!(s.setup.registrations.is_empty());
        assert_eq!(s.wait.consecutive, 3);
        assert_eq!(s.wait.interval, Duration::from_millis(10));
        assert_eq!(s.wait.timeout, Duration::from_secs(10));
        assert_eq!(s.wait.probes[0].request.method, "GET");
        let sel = &s.setup.selectors[0];
        assert_eq!(
            (
                sel.kind,
                sel.match_mode,
                sel.sort,
                sel.continued,
                sel.enabled
            ),
            (SelectorKind::Custom, MatchModeName::And, 1, true, true)
        );
        assert_eq!(
            (sel.upstreams[0].weight, sel.upstreams[0].status),
            (50, true)
        );
        let cond = sel.conditions[0].to_dto();
        assert_eq!(cond.param_name.as_deref(), Some("/"));
        let rule = &sel.rules[0];
        assert_eq!(
            (rule.match_mode, rule.sort, rule.enabled),
            (MatchModeName::And, 1, true)
        );
        let handle = rule.handle.to_handle();
        assert_eq!(handle, model::DivideRuleHandle::default());
        assert_eq!(
            (handle.load_balance, handle.retry, handle.timeout),
            (model::LoadBalance::Random, 3, 3000)
        );
        assert!(rule.context_path.is_none());
    }

    #[test]
    fn unknown_key_names_path_line_and_column() {
        let src = GOOD.replace(
            "expect: { status: 200, upstream: alpha, received",
            "expect: { stauts: 200, upstream: alpha, received",
        );
        let e = err(&src);
        assert!(
            e.starts_with(
                "x.yaml:38:15: checks[0].expect: unknown field `stauts`, expected one of"
            ),
            "{e}"
        );
    }

    #[test]
    fn unknown_operator_points_at_its_line() {
        let src = GOOD.replacen("operator: \"=\"", "operator: \"=~\"", 1);
        let e = err(&src);
        assert!(e.starts_with("x.yaml:16:"), "{e}");
        assert!(
            e.contains("setup.selectors[0].conditions[0].operator: unknown operator `=~`"),
            "{e}"
        );
    }

    #[test]
    fn undeclared_upstream_is_located() {
        let src = GOOD.replace(
            "{ upstream: alpha, weight: 50 }",
            "{ upstream: beta, weight: 50 }",
        );
        let e = err(&src);
        // At the value `beta`, not at its key.
        assert!(e.starts_with("x.yaml:18:23: setup.selectors[0].upstreams[0].upstream: upstream `beta` is not declared"), "{e}");
    }

    #[test]
    fn every_problem_is_reported_at_its_own_node_in_file_order() {
        let src = GOOD
            .replacen("paramType: uri", "paramType: header", 1)
            .replacen("method: GET", "method: \"G T\"", 1)
            .replace("interval: 10ms", "interval: 100ms")
            .replace(
                "{ status: 200, upstream: alpha, received",
                "{ status: 200, upstream: omega, received",
            )
            .replace(
                "name: a trailing slash does not",
                "name: the exact path routes",
            );
        let e = parse_str(Path::new("x.yaml"), &src).unwrap_err();
        assert_eq!(e.problem_count(), 5);
        let expected = [
            // A missing key: the mapping that lacks it.
            "x.yaml:16:11: setup.selectors[0].conditions[0].paramName: must not be blank for param type `header`",
            "x.yaml:29:24: wait.probe.request.method: invalid HTTP method `G T`",
            "x.yaml:32:13: wait.interval: must be between 1ms and 50ms, got 100ms",
            "x.yaml:38:38: checks[0].expect.upstream: upstream `omega` is not declared in `upstreams` (declared: alpha)",
            // The second check, though its name is first written on line 36.
            "x.yaml:39:5: checks[1]: duplicate check name `the exact path routes`",
        ];
        assert_eq!(e.to_string(), expected.join("\n"));
    }

    #[test]
    fn a_probe_checks_fields_stand_beside_its_name() {
        let src = GOOD.replacen(
            "    request: { method: GET, path: /http/order/findById }\n    expect: { status: 200, upstream: alpha, received",
            "    request: { method: \"G T\", path: /http/order/findById }\n    repeat: 0\n    expect: { status: 200, upstream: alpha, received",
            1,
        );
        let e = err(&src);
        assert_eq!(
            e,
            "x.yaml:37:24: checks[0].request.method: invalid HTTP method `G T`\n\
             x.yaml:38:13: checks[0].repeat: must be at least 1, got 0"
        );
    }

    #[test]
    fn interval_over_50ms_is_rejected() {
        let e = err(&GOOD.replace("interval: 10ms", "interval: 100ms"));
        assert!(
            e.contains("wait.interval: must be between 1ms and 50ms, got 100ms"),
            "{e}"
        );
    }

    #[test]
    fn bad_duration_and_empty_modes_and_duplicates() {
        let e = err(&GOOD.replace("timeout: 10s", "timeout: soon"));
        assert!(e.contains("wait.timeout: invalid duration `soon`"), "{e}");
        let e = err(&GOOD.replace("modes: [websocket]", "modes: []"));
        assert!(
            e.contains("modes: at least one sync mode is required"),
            "{e}"
        );
        let e = err(&GOOD.replace("modes: [websocket]", "modes: [carrier-pigeon]"));
        assert!(
            e.contains("modes[0]: unknown sync mode `carrier-pigeon`"),
            "{e}"
        );
        let e = err(&GOOD.replace("upstreams: [alpha]", "upstreams: [alpha, alpha]"));
        assert!(
            e.contains("upstreams[1]: duplicate upstream name `alpha`"),
            "{e}"
        );
    }

    #[test]
    fn header_condition_needs_a_name() {
        let e = err(&GOOD.replacen("paramType: uri", "paramType: header", 1));
        assert!(
            e.contains(
                "setup.selectors[0].conditions[0].paramName: must not be blank for param type `header`"
            ),
            "{e}"
        );
    }

    /// What the admin would refuse is found at parse time, at its line, under the case
    /// file's own field names.
    #[test]
    fn what_the_admin_refuses_is_located_at_parse_time() {
        let cases = [
            (
                GOOD.replacen("weight: 50", "weight: -5", 1),
                "x.yaml:18:38: setup.selectors[0].upstreams[0].weight: must be >= 0, got -5",
            ),
            (
                GOOD.replacen("plugin: divide", "plugin: divde", 1),
                "x.yaml:9:15: setup.selectors[0].plugin: unknown plugin `divde`",
            ),
            (
                GOOD.replacen(
                    r#"operator: "=", paramValue: /http/order/findById }"#,
                    r#"operator: regex, paramValue: "/a(b" }"#,
                    1,
                ),
                "x.yaml:16:58: setup.selectors[0].conditions[0].paramValue: invalid regex",
            ),
            (
                GOOD.replacen(r#"operator: "=""#, r#"operator: SpEL"#, 1),
                "setup.selectors[0].conditions[0].operator: operator `SpEL` is not supported",
            ),
            (
                GOOD.replacen("paramType: uri", "paramType: form-data", 1),
                "setup.selectors[0].conditions[0].paramType: param type `form-data` is not supported",
            ),
            (
                GOOD.replacen("timeout: 3000", "retry: 11, timeout: 3000", 1),
                "setup.selectors[0].rules[0].handle.retry: must be within 0..=10, got 11",
            ),
        ];
        for (src, want) in cases {
            let e = err(&src);
            assert!(e.contains(want), "want {want:?} in:\n{e}");
        }
    }

    #[test]
    fn unknown_top_level_key_has_no_path_prefix() {
        let e = err(&format!("{GOOD}bogus: 1\n"));
        assert!(
            e.starts_with("x.yaml:47:1: unknown field `bogus`, expected one of `name`"),
            "{e}"
        );
    }

    #[test]
    fn yaml_syntax_errors_have_a_location() {
        let e = err("name: [unclosed\n");
        assert!(e.starts_with("x.yaml:"), "{e}");
        assert!(!e.starts_with("x.yaml:?"), "{e}");
    }

    #[test]
    fn a_wait_takes_one_probe_or_several() {
        let several = GOOD.replace(
            "  probe:\n    request: { method: GET, path: /http/order/findById }\n    expect: { status: 200, upstream: alpha }\n",
            "  probes:\n    - request: { path: /http/order/findById }\n      expect: { upstream: alpha }\n    - request: { path: /http/order/other }\n      expect: { route: absent }\n",
        );
        assert_ne!(several, GOOD);
        let s = parse_str(Path::new("x.yaml"), &several).unwrap();
        assert_eq!(s.wait.probes.len(), 2);
        assert!(s.wait.listed);
        assert_eq!(s.wait.probe_path(1), "probes[1]");
        let s = parse_str(Path::new("x.yaml"), GOOD).unwrap();
        assert_eq!(
            (s.wait.probes.len(), s.wait.probe_path(0)),
            (1, "probe".to_owned())
        );
        // A problem in a listed probe is reported at its own index.
        let e = err(&several.replace("expect: { route: absent }", "expect: { upstream: omega }"));
        assert!(
            e.contains("wait.probes[1].expect.upstream: upstream `omega` is not declared"),
            "{e}"
        );
        let e = err(&several.replace(
            "  probes:\n",
            "  probe: { request: { path: /x }, expect: { status: 200 } }\n  probes:\n",
        ));
        assert!(
            e.contains("wait: give `probe` or `probes`, not both"),
            "{e}"
        );
        assert!(e.starts_with("x.yaml:"), "{e}");
        let e = err(&GOOD.replace(
            "  probe:\n    request: { method: GET, path: /http/order/findById }\n    expect: { status: 200, upstream: alpha }\n",
            "  probes: []\n",
        ));
        assert!(e.contains("`probes` needs at least one probe"), "{e}");
    }

    #[test]
    fn upstream_expectations_name_one_several_or_not() {
        use super::super::ast::UpstreamExpect;
        let with = |upstream: &str| {
            GOOD.replace(
                "expect: { status: 200, upstream: alpha, received",
                &format!("expect: {{ status: 200, upstream: {upstream}, received"),
            )
        };
        let s = parse_str(Path::new("x.yaml"), &with("[alpha]")).unwrap();
        let want = Some(UpstreamExpect::AnyOf(vec!["alpha".into()]));
        assert_eq!(s.checks_probe_expect(0).upstream, want);
        let s = parse_str(Path::new("x.yaml"), &with("{ not: alpha }")).unwrap();
        let want = Some(UpstreamExpect::NoneOf(vec!["alpha".into()]));
        assert_eq!(s.checks_probe_expect(0).upstream, want);
        let s = parse_str(Path::new("x.yaml"), &with("{ not: [alpha] }")).unwrap();
        assert_eq!(s.checks_probe_expect(0).upstream, want);
        let e = err(&with("{ not: [alpha, omega] }"));
        assert!(
            e.contains("checks[0].expect.upstream: upstream `omega` is not declared"),
            "{e}"
        );
        let e = err(&with("{ but: alpha }"));
        assert!(e.contains("unknown field `but`, expected `not`"), "{e}");
        let e = err(&with("[]"));
        assert!(
            e.contains("checks[0].expect.upstream: name at least one upstream"),
            "{e}"
        );
    }

    #[test]
    fn json_paths_headers_and_body_not_contains_parse_and_bad_paths_are_located() {
        let with = |extra: &str| {
            GOOD.replace(
                "expect: { status: 200, upstream: alpha, received",
                &format!("expect: {{ {extra}, received"),
            )
        };
        let s = parse_str(
            Path::new("x.yaml"),
            &with("json: { \"$.a[0]\": 1 }, headers: { x-a: b }, bodyNotContains: c"),
        )
        .unwrap();
        let e = s.checks_probe_expect(0);
        assert_eq!(e.json["$.a[0]"], serde_json::json!(1));
        assert_eq!(e.headers["x-a"], "b");
        assert_eq!(e.body_not_contains.as_deref(), Some("c"));
        let e = err(&with("json: { a.b: 1 }"));
        assert!(
            e.contains("checks[0].expect.json: `a.b`: a JSON path starts with `$`"),
            "{e}"
        );
    }

    const STEPS: &str = "
steps:
  - name: move to beta
    changes:
      - updateSelector: { name: uri-equal, upstreams: [{ upstream: alpha, status: false }] }
      - updateRule: { selector: uri-equal, name: find-by-id, enabled: false }
      - enablePlugin: { name: divide, enabled: false }
      - deleteRule: { selector: uri-equal, name: find-by-id }
      - deleteSelector: uri-equal
    wait:
      probe:
        request: { path: /http/order/findById }
        expect: { code: -119 }
    checks:
      - name: gone
        request: { path: /x }
        expect: { route: absent }
";

    #[test]
    fn a_step_parses_with_wait_defaults() {
        use super::super::ast::Change;
        let s = parse_str(Path::new("x.yaml"), &format!("{GOOD}{STEPS}")).unwrap();
        let st = &s.steps[0];
        assert_eq!(st.name, "move to beta");
        assert_eq!(st.changes.len(), 5);
        match &st.changes[0] {
            Change::UpdateSelector(u) => {
                assert_eq!(u.name, "uri-equal");
                assert!(!u.upstreams.as_ref().unwrap()[0].status);
                assert_eq!(u.enabled, None);
            }
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(&st.changes[2], Change::EnablePlugin(p) if p.name == "divide" && !p.enabled)
        );
        assert_eq!(st.changes[4], Change::DeleteSelector("uri-equal".into()));
        assert_eq!(st.wait.consecutive, 3);
        assert_eq!(st.wait.timeout, Duration::from_secs(10));
        assert_eq!(st.checks[0].kind.name(), "probe");
    }

    #[test]
    fn a_step_naming_an_unknown_object_is_located() {
        let e = err(&format!(
            "{GOOD}{}",
            STEPS.replace("deleteSelector: uri-equal", "deleteSelector: nope")
        ));
        assert!(
            e.contains(
                "steps[0].changes[4].deleteSelector: no selector named `nope` at this point"
            ),
            "{e}"
        );
        assert!(e.starts_with("x.yaml:"), "{e}");
        let e = err(&format!(
            "{GOOD}{}",
            STEPS.replace(
                "updateRule: { selector: uri-equal, name: find-by-id",
                "updateRule: { selector: uri-equal, name: nope"
            )
        ));
        assert!(
            e.contains("steps[0].changes[1].updateRule.name: selector `uri-equal` has no rule named `nope` at this point"),
            "{e}"
        );
        // The rule was deleted by changes[3] before changes[4] deletes its selector; using
        // it afterwards is an error.
        let e = err(&format!(
            "{GOOD}{}",
            STEPS.replace(
                "      - deleteSelector: uri-equal\n",
                "      - deleteRule: { selector: uri-equal, name: find-by-id }\n"
            )
        ));
        assert!(e.contains("steps[0].changes[4].deleteRule.name"), "{e}");
        let e = err(&format!(
            "{GOOD}{}",
            STEPS.replace("enablePlugin:", "enablePlugins:")
        ));
        assert!(e.contains("steps[0].changes[2]"), "{e}");
        let e = err(&format!(
            "{GOOD}{}",
            STEPS.replace("    wait:\n      probe:", "    wiat:\n      probe:")
        ));
        assert!(e.contains("steps[0]: unknown field `wiat`"), "{e}");
    }

    const CREATES: &str = "
steps:
  - name: create
    changes:
      - createSelector:
          name: made
          plugin: divide
          conditions:
            - { paramType: uri, operator: startsWith, paramValue: /made/ }
          upstreams: [{ upstream: alpha }]
          rules:
            - name: made-all
              conditions:
                - { paramType: uri, operator: startsWith, paramValue: /made/ }
      - createRule:
          selector: made
          rule:
            name: made-x
            sort: 0
            conditions:
              - { paramType: uri, operator: \"=\", paramValue: /made/x }
      - updateSelector: { name: made, sort: 3, matchMode: or, continued: true, type: custom }
      - updateRule: { selector: made, name: made-x, sort: 5, matchMode: or }
      - register: { contextPath: /reg, upstream: alpha, paths: [/reg/a] }
    wait:
      probes:
        - request: { path: /made/x }
          expect: { selector: made, rule: made-x }
    checks:
      - name: spread
        distribution: { request: { path: /made/y }, selector: made }
";

    #[test]
    fn steps_create_selectors_rules_and_registrations() {
        let s = parse_str(Path::new("x.yaml"), &format!("{GOOD}{CREATES}")).unwrap();
        let names: Vec<&str> = s.steps[0].changes.iter().map(Change::name).collect();
        assert_eq!(
            names,
            [
                "createSelector",
                "createRule",
                "updateSelector",
                "updateRule",
                "register"
            ]
        );
        assert!(s.steps[0].changes.iter().all(Change::is_admin_change));
        // What a step creates does not exist before it: a check of the setup phase cannot
        // name it, and creating it twice or under a missing selector is located.
        let e = err(&format!(
            "{GOOD}{}",
            CREATES.replace(
                "upstreams: [{ upstream: alpha }]",
                "upstreams: [{ upstream: omega }]"
            )
        ));
        assert!(
            e.contains("steps[0].changes[0].createSelector.upstreams[0].upstream: upstream `omega` is not declared"),
            "{e}"
        );
        let e = err(&format!(
            "{GOOD}{}",
            CREATES.replace("          selector: made\n", "          selector: nope\n")
        ));
        assert!(
            e.contains(
                "steps[0].changes[1].createRule.selector: no selector named `nope` at this point"
            ),
            "{e}"
        );
        let e = err(&format!(
            "{GOOD}{}",
            CREATES.replace("name: made\n", "name: uri-equal\n")
        ));
        assert!(
            e.contains("steps[0].changes[0].createSelector.name: a selector named `uri-equal` exists at this point"),
            "{e}"
        );
        let e = err(&format!(
            "{GOOD}{}",
            CREATES.replace("name: made-x\n", "name: made-all\n")
        ));
        assert!(
            e.contains("steps[0].changes[1].createRule.rule.name: selector `made` has a rule named `made-all` at this point"),
            "{e}"
        );
        let e = err(&format!(
            "{GOOD}{}",
            CREATES.replace("paths: [/reg/a]", "paths: []")
        ));
        assert!(
            e.contains("steps[0].changes[4].register.paths: at least one API path is required"),
            "{e}"
        );
        let e = err(&format!(
            "{GOOD}{}",
            CREATES.replace("rule: made-x }", "rule: made-z }")
        ));
        assert!(
            e.contains("steps[0].wait.probes[0].expect.rule: no rule named `made-z`"),
            "{e}"
        );
        let e = err(&format!(
            "{GOOD}{}",
            CREATES.replace(
                "sort: 5, matchMode: or }",
                "handle: { retry: 1 }, contextPath: { contextPath: /a } }"
            )
        ));
        assert!(
            e.contains("steps[0].changes[3].updateRule: give one of `handle`, `contextPath` and `rateLimiter`"),
            "{e}"
        );
    }

    const JUDGES: &str = "
  - name: spread
    distribution:
      request: { path: /http/order/findById }
      selector: uri-equal
  - name: cycle
    roundRobin: { request: { path: /x }, selector: uri-equal }
  - name: sticky
    hash: { request: { path: /x }, selector: uri-equal }
  - name: steer
    steer: { request: { path: /x }, selector: uri-equal, slow: alpha, maxShare: 0.2 }
  - name: toggle
    latency: { request: { path: /x }, selector: uri-equal }
";

    fn with_judges(judges: &str) -> String {
        GOOD.replace("\nteardown:", &format!("{judges}\nteardown:"))
    }

    #[test]
    fn judge_checks_parse_with_their_defaults() {
        use super::super::ast::CheckKind;
        let s = parse_str(Path::new("x.yaml"), &with_judges(JUDGES)).unwrap();
        let kinds: Vec<&str> = s.checks.iter().map(|c| c.kind.name()).collect();
        assert_eq!(
            kinds,
            [
                "probe",
                "probe",
                "distribution",
                "roundRobin",
                "hash",
                "steer",
                "latency"
            ]
        );
        let CheckKind::Distribution(d) = &s.checks[2].kind else {
            panic!()
        };
        assert_eq!(
            (d.requests, d.concurrency, d.alpha, d.shares.is_none()),
            (2000, 8, 1e-6, true)
        );
        let CheckKind::RoundRobin(r) = &s.checks[3].kind else {
            panic!()
        };
        assert_eq!(r.rounds, 3);
        let CheckKind::Hash(h) = &s.checks[4].kind else {
            panic!()
        };
        assert_eq!((h.clients, h.repeat), (16, 3));
        let CheckKind::Steer(st) = &s.checks[5].kind else {
            panic!()
        };
        assert_eq!(
            (st.delay, st.requests, st.concurrency, st.min_share),
            (Duration::from_millis(50), 200, 8, 0.0)
        );
        let CheckKind::Latency(l) = &s.checks[6].kind else {
            panic!()
        };
        assert_eq!(
            (
                l.changes,
                l.consecutive,
                l.interval,
                l.timeout,
                l.limits.p99
            ),
            (
                20,
                1,
                Duration::from_millis(1),
                Duration::from_secs(10),
                None
            )
        );
    }

    #[test]
    fn a_check_judges_exactly_one_thing() {
        let e = err(&with_judges("  - name: nothing\n    repeat: 2\n"));
        assert!(
            e.contains("`expect`, `repeat` and `attempts` go with a `request`"),
            "{e}"
        );
        let e = err(&with_judges("  - name: nothing\n"));
        assert!(
            e.contains(
                "check `nothing` judges nothing: give `request` + `expect`, or one of distribution"
            ),
            "{e}"
        );
        let e = err(&with_judges(
            "  - name: two\n    request: { path: /x }\n    expect: { status: 200 }\n    hash: { request: { path: /x }, selector: uri-equal }\n",
        ));
        assert!(
            e.contains("check `two` has several kinds (hash, probe)"),
            "{e}"
        );
        assert!(e.starts_with("x.yaml:"), "{e}");
    }

    #[test]
    fn judge_fields_are_validated_where_they_stand() {
        let e = err(&with_judges(
            &JUDGES.replace("selector: uri-equal\n", "selector: nope\n"),
        ));
        assert!(
            e.contains("checks[2].distribution.selector: no selector named `nope` at this point"),
            "{e}"
        );
        let e = err(&with_judges(&JUDGES.replace("slow: alpha", "slow: omega")));
        assert!(
            e.contains("checks[5].steer.slow: upstream `omega` is not declared"),
            "{e}"
        );
        let e = err(&with_judges(
            &JUDGES.replace("maxShare: 0.2", "maxShare: 1.5"),
        ));
        assert!(
            e.contains("checks[5].steer.maxShare: must be between 0 and 1, got 1.5"),
            "{e}"
        );
        let e = err(&with_judges(&JUDGES.replace(
            "latency: { request: { path: /x }, selector: uri-equal }",
            "latency: { request: { path: /x }, selector: uri-equal, changes: 3 }",
        )));
        assert!(
            e.contains("checks[6].latency.changes: must be an even number ≥ 2"),
            "{e}"
        );
        let e = err(&with_judges(&JUDGES.replace(
            "latency: { request: { path: /x }, selector: uri-equal }",
            "latency: { request: { path: /x }, selector: uri-equal, interval: 10ms }",
        )));
        assert!(
            e.contains("checks[6].latency.interval: must be between 1µs and 1ms"),
            "{e}"
        );
        let e = err(&with_judges(&JUDGES.replace(
            "latency: { request: { path: /x }, selector: uri-equal }",
            "latency: { request: { path: /x }, selector: uri-equal, changes: 98, \
             limits: { p95: 5ms, p99: 9ms }, probeLimits: { p99: 9ms } }",
        )));
        assert!(
            e.contains(
                "checks[6].latency.limits.p99: a p99 limit needs `changes` ≥ 100 (with fewer \
                 the p99 is the maximum), got 98"
            ),
            "{e}"
        );
        assert!(
            e.contains("checks[6].latency.probeLimits.p99: a p99 limit needs `changes` ≥ 100"),
            "{e}"
        );
        assert!(!e.contains("p95"), "98 changes are enough for a p95: {e}");
        let e = err(&with_judges(&JUDGES.replace(
            "latency: { request: { path: /x }, selector: uri-equal }",
            "latency: { request: { path: /x }, selector: uri-equal, changes: 18, \
             probeLimits: { p95: 5ms } }",
        )));
        assert!(
            e.contains("checks[6].latency.probeLimits.p95: a p95 limit needs `changes` ≥ 20"),
            "{e}"
        );
        let e = err(&with_judges(
            "  - name: odd shares\n    distribution: { request: { path: /x }, selector: uri-equal, shares: { omega: 1 } }\n",
        ));
        assert!(
            e.contains("checks[2].distribution.shares.omega: upstream `omega` is not declared"),
            "{e}"
        );
    }

    #[test]
    fn a_step_check_sees_the_selectors_alive_at_that_step() {
        let step = "
steps:
  - name: gone
    changes:
      - deleteSelector: uri-equal
    wait:
      probe:
        request: { path: /http/order/findById }
        expect: { route: absent }
    checks:
      - name: spread
        distribution: { request: { path: /x }, selector: uri-equal }
";
        let e = err(&format!("{GOOD}{step}"));
        assert!(
            e.contains("steps[0].checks[0].distribution.selector: no selector named `uri-equal` at this point"),
            "{e}"
        );
    }

    #[test]
    fn components_and_plugin_configs_parse() {
        let s = parse_str(Path::new("redis_component.yaml"), REDIS).unwrap();
        assert_eq!(s.components, [crate::scenario::ast::Component::Redis]);
        let p = &s.setup.plugins[0];
        assert_eq!(
            (p.name.as_str(), p.enabled, p.config.as_deref()),
            (
                "rateLimiter",
                Some(true),
                Some(r#"{"mode":"standalone","url":"${redis.url}"}"#)
            )
        );
        // Without the field, a case asks for nothing.
        assert!(
            parse_str(Path::new("x.yaml"), GOOD)
                .unwrap()
                .components
                .is_empty()
        );
        assert!(err(&REDIS.replace("[redis]", "[mysql]")).contains("unknown variant `mysql`"));
    }

    #[test]
    fn a_placeholder_without_its_component_names_file_and_field() {
        let src = REDIS.replace("components: [redis]", "components: []");
        let e = parse_str(Path::new("cases/rl.yaml"), &src)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cases/rl.yaml"), "{e}");
        assert!(
            e.contains(
                "setup.plugins[0].config: uses `${redis.url}` but the case does not ask for \
                 redis: add `components: [redis]`"
            ),
            "{e}"
        );
        let e = err(&REDIS.replace("${redis.url}", "${redis.port}"));
        assert!(
            e.contains("setup.plugins[0].config: unknown placeholder `${redis.port}`"),
            "{e}"
        );
        let e = err(&REDIS.replace(r#"'{"mode""#, r#"'["mode""#));
        assert!(
            e.contains("setup.plugins[0].config: must be a JSON object"),
            "{e}"
        );
        let e = err(&REDIS.replace("      enabled: true\n", "").replace(
            "      config: '{\"mode\":\"standalone\",\"url\":\"${redis.url}\"}'",
            "",
        ));
        assert!(e.contains("setup.plugins[0]: sets nothing"), "{e}");
    }

    /// Steps of the Redis case: stop, reconfigure, start.
    const OUTAGE: &str = "
steps:
  - name: down
    changes:
      - stop: redis
      - updatePlugin:
          name: rateLimiter
          config: '{\"mode\":\"standalone\",\"url\":\"${redis.url}\",\"failClosed\":true}'
    wait: { probe: { request: { path: /limited }, expect: { status: 429 } } }
  - name: up
    changes:
      - start: redis
    wait: { probe: { request: { path: /limited }, expect: { status: 200 } } }
";

    #[test]
    fn steps_stop_and_start_components_and_update_plugins() {
        use super::super::ast::Target;
        let s = parse_str(Path::new("x.yaml"), &format!("{REDIS}{OUTAGE}")).unwrap();
        assert_eq!(s.steps[0].changes[0], Change::Stop(Target::Redis));
        let Change::UpdatePlugin(p) = &s.steps[0].changes[1] else {
            panic!("{:?}", s.steps[0].changes[1]);
        };
        assert_eq!(p.name, "rateLimiter");
        assert!(p.config.as_deref().unwrap().contains("failClosed"));
        assert_eq!(s.steps[1].changes[0], Change::Start(Target::Redis));
    }

    #[test]
    fn component_changes_must_fit_the_case_and_the_order() {
        let e = err(&format!(
            "{}{OUTAGE}",
            REDIS
                .replace("components: [redis]", "components: []")
                .replace("${redis.url}", "127.0.0.1:1")
        ));
        assert!(
            e.contains("steps[0].changes[0].stop: `redis` is not one of the case's `components`"),
            "{e}"
        );
        assert!(
            e.contains("steps[0].changes[1].updatePlugin.config: uses `${redis.url}`"),
            "{e}"
        );
        let e = err(&format!("{REDIS}{OUTAGE}").replace("- start: redis", "- stop: redis"));
        assert!(
            e.contains(
                "steps[1].changes[0].stop: `stop` needs the redis running, but it is stopped at this point"
            ),
            "{e}"
        );
        let e = err(&format!("{REDIS}{OUTAGE}").replace("- stop: redis", "- start: redis"));
        assert!(
            e.contains(
                "steps[0].changes[0].start: `start` needs the redis stopped, but it is running at this point"
            ),
            "{e}"
        );
    }

    #[test]
    fn faults_on_services_fit_modes_backends_and_what_runs() {
        let host = REDIS.replace(
            "components: [redis]",
            "components: [redis]\nbackends: [host]",
        );
        let steps = |changes: &str| {
            format!(
                "{host}\nsteps:\n  - name: s\n    changes: [{changes}]\n    wait: {{ probe: {{ request: {{ path: /limited }}, expect: {{ status: 200 }} }} }}\n"
            )
        };
        // Every action on the admin, in an order that fits.
        parse_str(
            Path::new("x.yaml"),
            &steps("kill: admin, start: admin, restart: admin, pause: admin, resume: admin, stop: admin, start: admin"),
        )
        .unwrap();
        let e = err(&steps(
            "stop: admin, enablePlugin: { name: divide, enabled: false }, start: admin",
        ));
        assert!(
            e.contains("steps[0].changes[1].enablePlugin: the admin is stopped at this point"),
            "{e}"
        );
        let e = err(&steps("pause: gateway"));
        assert!(
            e.contains("steps[0]: the gateway is paused at the end of the step"),
            "{e}"
        );
        let e = err(&steps("kill: admin"));
        assert!(
            e.contains("steps[0]: the admin is stopped after the last step, but teardown needs it"),
            "{e}"
        );
        // The redis case runs in websocket and zookeeper.
        let e = err(&steps("restart: zookeeper"));
        assert!(
            e.contains(
                "steps[0].changes[0].restart: `zookeeper` runs only in the zookeeper mode, and this \
                 case also runs in websocket: give `modes: [zookeeper]`"
            ),
            "{e}"
        );
        let e = err(&steps("resume: etcd"));
        assert!(e.contains("`etcd` runs only in the etcd mode"), "{e}");
        // Both backends apply every fault; docker partitions only silently (`blackhole`).
        let both = |changes: &str| steps(changes).replace("backends: [host]", "");
        parse_str(
            Path::new("x.yaml"),
            &both("restart: gateway, kill: admin, start: admin, pause: redis, resume: redis"),
        )
        .unwrap();
        parse_str(Path::new("x.yaml"), &both("partition: blackhole, heal")).unwrap();
        parse_str(Path::new("x.yaml"), &steps("partition: reset, heal")).unwrap();
        parse_str(
            Path::new("x.yaml"),
            &steps("partition: { delay: 300ms }, heal"),
        )
        .unwrap();
        let e = err(&both("partition: cut, heal"));
        assert!(
            e.contains(
                "steps[0].changes[0].partition: `partition: cut` runs on the host backend only \
                 (its sync proxy closes or delays connections); the docker backend disconnects \
                 the gateway from its sync network, which leaves them silent: use `blackhole` or \
                 add `backends: [host]`"
            ),
            "{e}"
        );
        let e = err(&both("partition: { delay: 300ms }, heal"));
        assert!(
            e.contains("`partition: delay` runs on the host backend only"),
            "{e}"
        );
        let e = err(&steps("partition: { delay: soon }, heal"));
        assert!(e.contains("steps[0].changes[0]"), "{e}");
    }

    #[test]
    fn isolated_needs_a_config_change_and_a_hold() {
        let host = REDIS.replace(
            "components: [redis]",
            "components: [redis]\nbackends: [host]",
        );
        let step = |changes: &str, hold: &str| {
            format!(
                "{host}\nsteps:\n  - name: s\n    changes: [{changes}]\n    isolated: {hold}\n    wait: {{ probe: {{ request: {{ path: /limited }}, expect: {{ status: 200 }} }} }}\n"
            )
        };
        let change = "enablePlugin: { name: divide, enabled: true }";
        let s = parse_str(Path::new("x.yaml"), &step(change, "1s")).unwrap();
        assert_eq!(s.steps[0].isolated, Some(Duration::from_secs(1)));
        let e = err(&step("restart: gateway", "1s"));
        assert!(
            e.contains(
                "x.yaml:32:15: steps[0].isolated: claims the step's config change does not reach \
                 the gateway, but the step changes no config"
            ),
            "{e}"
        );
        let e = err(&step(change, "0s"));
        assert!(e.contains("steps[0].isolated: must be more than 0s"), "{e}");
    }

    /// MINIMAL on the host backend with `topology` and `steps` (changes separated by `, `).
    fn topology_case(topology: &str, steps: &[&str]) -> String {
        let steps: String = steps
            .iter()
            .enumerate()
            .map(|(i, changes)| {
                // Block style: `admin[0]` is a plain scalar there, not in a flow sequence.
                let changes: String = changes
                    .split(", ")
                    .map(|c| format!("      - {c}\n"))
                    .collect();
                format!(
                    "  - name: s{i}\n    changes:\n{changes}    wait: {{ probe: {{ request: {{ path: /x }}, expect: {{ status: 200 }} }} }}\n"
                )
            })
            .collect();
        format!("{MINIMAL}backends: [host]\ntopology: {topology}\nsteps:\n{steps}")
    }

    #[test]
    fn topology_counts_late_gateways_and_backends_are_checked() {
        let s = parse_str(
            Path::new("x.yaml"),
            &topology_case(
                "{ storage: postgres, admins: 2, gateways: 3, late: [2] }",
                &[
                    "kill: admin[0], start: gateway[2]",
                    "start: admin[0], restart: gateway[1]",
                ],
            ),
        )
        .unwrap();
        assert_eq!(s.topology.storage, super::super::ast::Storage::Postgres);
        assert_eq!((s.topology.admins, s.topology.gateways), (2, 3));
        assert_eq!(s.steps[0].changes[0], Change::Kill(Target::Admin(Some(0))));
        let e = err(&topology_case(
            "{ admins: 0, gateways: 5 }",
            &["kill: admin"],
        ));
        assert!(e.contains("topology.admins: must be 1 to 3"), "{e}");
        assert!(e.contains("topology.gateways: must be 1 to 4"), "{e}");
        let e = err(&topology_case(
            "{ gateways: 2, late: [2, 1, 1] }",
            &["start: gateway[1]"],
        ));
        assert!(
            e.contains(
                "topology.late[0]: gateway[2] does not exist: the topology runs 2 gateway(s)"
            ),
            "{e}"
        );
        assert!(e.contains("topology.late[2]: gateway[1] twice"), "{e}");
        let e = err(&topology_case(
            "{ gateways: 2, late: [0, 1] }",
            &["start: gateway[1]"],
        ));
        assert!(e.contains("topology.late: every gateway is late"), "{e}");
        let e = err(
            &topology_case("{ storage: postgres }", &["kill: admin, start: admin"])
                .replace("backends: [host]\n", ""),
        );
        assert!(
            e.contains("topology: several admins or gateways, late gateways and PostgreSQL storage run on the host backend only so far: add `backends: [host]`"),
            "{e}"
        );
        let e = err(&topology_case(
            "{ storage: mysql }",
            &["kill: admin, start: admin"],
        ));
        assert!(
            e.contains("topology.storage: unknown variant `mysql`"),
            "{e}"
        );
    }

    #[test]
    fn indexed_targets_name_existing_processes_in_their_state() {
        let two = "{ admins: 2, gateways: 2, late: [1] }";
        let e = err(&topology_case(two, &["kill: admin, start: admin"]));
        assert!(
            e.contains(
                "steps[0].changes[0].kill: the topology runs 2 admins (`topology.admins`): name \
                 one, `admin[0]` to `admin[1]`"
            ),
            "{e}"
        );
        let e = err(&topology_case(two, &["restart: gateway[2]"]));
        assert!(
            e.contains(
                "steps[0].changes[0].restart: `gateway[2]` does not exist: `topology.gateways` is 2"
            ),
            "{e}"
        );
        // gateway[1] is late: stopped until a step starts it.
        let e = err(&topology_case(two, &["stop: gateway[1]"]));
        assert!(
            e.contains("`stop` needs the gateway[1] running, but it is stopped at this point"),
            "{e}"
        );
        // One admin down is fine; both down stops admin changes and teardown.
        let e = err(&topology_case(
            two,
            &["stop: admin[0], stop: admin[1], deleteSelector: s"],
        ));
        assert!(
            e.contains("steps[0].changes[2].deleteSelector: no admin is running at this point: start or resume one first"),
            "{e}"
        );
        assert!(
            e.contains("steps[0]: no admin is running after the last step, but teardown needs it: start or resume one"),
            "{e}"
        );
        let e = err(&topology_case(two, &["pause: gateway[0]"]));
        assert!(
            e.contains("steps[0]: no gateway is running at the end of the step"),
            "{e}"
        );
        let e = err(&topology_case(two, &["partition: cut, heal"]));
        assert!(
            e.contains("steps[0].changes[0].partition: partitions need a topology of one admin and one gateway so far"),
            "{e}"
        );
        for (bad, why) in [
            (
                "redis[0]",
                "`redis[0]`: there is one redis, without an index",
            ),
            ("admin[x]", "`admin[x]`: an index is written `admin[0]`"),
            ("nginx", "unknown process `nginx`"),
        ] {
            let e = err(&topology_case(two, &[&format!("kill: {bad}")]));
            assert!(e.contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn protocol_faults_fit_their_mode_backend_and_fields() {
        const WS: &str = include_str!("../../../cases/scenarios/faults/protocol_websocket.yaml");
        const HTTP: &str = include_str!("../../../cases/scenarios/faults/protocol_http.yaml");
        const ETCD: &str = include_str!("../../../cases/scenarios/faults/protocol_etcd.yaml");
        for ok in [WS, HTTP, ETCD] {
            parse_str(Path::new("x.yaml"), ok).unwrap();
        }
        let e = err(&WS.replace("modes: [websocket]", "modes: [websocket, http]"));
        assert!(
            e.contains(
                "steps[0].changes[0].syncFault.kind: `duplicate` is a fault of the websocket sync \
                 channel and means nothing in http: give `modes: [websocket]`"
            ),
            "{e}"
        );
        let e = err(&HTTP.replace("backends: [host]", ""));
        assert!(
            e.contains(
                "steps[0].changes[0].syncFault: protocol faults run on the host backend only so \
                 far: add `backends: [host]`"
            ),
            "{e}"
        );
        let e = err(&WS.replace(
            "{ kind: duplicate }",
            "{ kind: duplicate, count: 0, delay: 1s }",
        ));
        assert!(
            e.contains("steps[0].changes[0].syncFault.count: must be between 1 and 100, got 0"),
            "{e}"
        );
        assert!(
            e.contains(
                "steps[0].changes[0].syncFault.delay: only `lateAnswer` waits; `duplicate` takes \
                 no delay"
            ),
            "{e}"
        );
        let e = err(&HTTP.replace("{ kind: lateAnswer, delay: 1s }", "{ kind: lateAnswer }"));
        assert!(
            e.contains("steps[2].changes[0].syncFault.delay: `lateAnswer` needs a delay"),
            "{e}"
        );
        let e = err(&HTTP.replacen(
            "      - updateSelector: { name: route, upstreams: [{ upstream: beta }] }\n",
            "",
            1,
        ));
        assert!(
            e.contains(
                "steps[0].changes[0].syncFault: a protocol fault applies to the admin's next \
                 pushes: give a change of the config after it in the same step"
            ),
            "{e}"
        );
        let e = err(&ETCD.replacen("compact: etcd", "compact: zookeeper", 1));
        assert!(
            e.contains(
                "steps[0].changes[3].compact: only etcd compacts revisions, not `zookeeper`"
            ),
            "{e}"
        );
        let e = err(&ETCD.replace("modes: [etcd]", "modes: [etcd, websocket]"));
        assert!(
            e.contains(
                "steps[0].changes[3].compact: `compact: etcd` means something in the etcd mode \
                 only: give `modes: [etcd]`"
            ),
            "{e}"
        );
    }

    #[test]
    fn an_expired_session_is_a_paused_gateway_of_the_zookeeper_mode_on_the_host() {
        const EXPIRY: &str =
            include_str!("../../../cases/scenarios/faults/zookeeper_session_expiry.yaml");
        parse_str(Path::new("x.yaml"), EXPIRY).unwrap();
        let e = err(&EXPIRY.replacen("expireSession: gateway", "expireSession: admin", 1));
        assert!(
            e.contains(
                "steps[0].changes[0].expireSession: only a gateway's ZooKeeper session expires \
                 here, not `admin`'s"
            ),
            "{e}"
        );
        let e = err(&EXPIRY.replace("modes: [zookeeper]", "modes: [zookeeper, etcd]"));
        assert!(
            e.contains(
                "steps[0].changes[0].expireSession: `expireSession` means something in the \
                 zookeeper mode only: give `modes: [zookeeper]`"
            ),
            "{e}"
        );
        let e = err(&EXPIRY.replace("backends: [host]\n", ""));
        assert!(
            e.contains("`expireSession` runs on the host backend only so far"),
            "{e}"
        );
        // The gateway stays paused: without the `resume`, the step ends with it paused, and a
        // second expiry in a row finds it paused already.
        let e = err(&EXPIRY.replacen("      - resume: gateway\n", "", 1));
        assert!(
            e.contains("steps[0]: the gateway is paused at the end of the step"),
            "{e}"
        );
        let e = err(&EXPIRY.replacen(
            "      - resume: gateway\n",
            "      - expireSession: gateway\n      - resume: gateway\n",
            1,
        ));
        assert!(
            e.contains(
                "steps[0].changes[3].expireSession: `pause` needs the gateway running, but it is \
                 paused at this point"
            ),
            "{e}"
        );
    }

    #[test]
    fn a_churn_check_has_defaults_and_bounds() {
        use super::super::ast::CheckKind;
        let churn =
            "  - name: c\n    churn: { request: { path: /x }, expect: { upstream: alpha } }\n";
        let s = parse_str(Path::new("x.yaml"), &with_judges(churn)).unwrap();
        let CheckKind::Churn(c) = &s.checks[2].kind else {
            panic!("{:?}", s.checks[2].kind)
        };
        assert_eq!(
            (c.rate, c.duration, c.connections, c.request_rate, c.burst),
            (50, Duration::from_secs(5), 4, 400, None)
        );
        let e = err(&with_judges(&churn.replace(
            "expect: { upstream: alpha }",
            "expect: { upstream: omega }, rate: 0, connections: 0, requestRate: 0, duration: 10ms, \
             burst: { every: 1s, changes: 0 }",
        )));
        for want in [
            "checks[2].churn.expect.upstream: ",
            "checks[2].churn.rate: must be between 1 and 1000 changes/s, got 0",
            "checks[2].churn.connections: must be between 1 and 64, got 0",
            "checks[2].churn.requestRate: must be between 1 and 100000 requests/s, got 0",
            "checks[2].churn.duration: must be at least 500ms",
            "checks[2].churn.burst.every: must be positive and at most the duration (10ms), got 1s",
            "checks[2].churn.burst.changes: must be between 1 and 1000, got 0",
        ] {
            assert!(e.contains(want), "{want} not in {e}");
        }
    }

    #[test]
    fn a_burst_must_count_every_request() {
        let burst = "  - name: b\n    burst: { request: { path: /x }, requests: 5, statuses: { 200: 3, 429: 1 } }\n";
        let e = err(&with_judges(burst));
        assert!(
            e.contains("checks[2].burst.statuses: the counts add up to 4, but 5 requests are sent"),
            "{e}"
        );
        let e = err(&with_judges(
            &burst
                .replace("requests: 5", "requests: 0")
                .replace("200: 3, 429: 1", "42: 0"),
        ));
        assert!(
            e.contains("checks[2].burst.requests: must be between 1 and 256, got 0"),
            "{e}"
        );
        assert!(
            e.contains("checks[2].burst.statuses.42: not an HTTP status"),
            "{e}"
        );
        let ok = burst.replace("429: 1", "429: 2");
        let s = parse_str(Path::new("x.yaml"), &with_judges(&ok)).unwrap();
        assert_eq!(s.checks[2].kind.name(), "burst");
    }
}
