//! Setup objects: selectors, rules, registrations and plugin configs; names that must exist.

use super::*;
use crate::judge::spec::MIN_COUNT;
use crate::scenario::ast::AdminChange;

impl<'s> Validator<'s> {
    /// A selector (`setup.selectors[i]`, `createSelector`): declared upstreams, valid
    /// conditions, unique rule names and rule handles that fit its plugin.
    pub(super) fn selector(&mut self, sel: &SelectorSpec, at: &str) {
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
    pub(super) fn rule(&mut self, plugin: &str, r: &RuleSpec, at: &str) {
        if r.name.trim().is_empty() {
            self.report(format!("{at}.name"), "must not be empty");
        }
        self.conditions(&r.conditions, &format!("{at}.conditions"));
        self.rule_handle(plugin, r, at);
    }

    /// A registration (`setup.registrations[i]`, `register`): a declared upstream, a context
    /// path and at least one API path.
    pub(super) fn registration(&mut self, reg: &RegistrationSpec, at: &str) {
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
    pub(super) fn plugins(&mut self) {
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
    pub(super) fn plugin_setup(&mut self, p: &PluginSetup, at: &str) {
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
    pub(super) fn plugin_name(&mut self, name: &str, path: String) {
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
    pub(super) fn upstream_ref(&mut self, u: &UpstreamRef, at: &str) {
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
    pub(super) fn divide_handle(&mut self, handle: &RuleHandleSpec, at: &str) {
        if let Err((field, message)) = handle.to_handle().check() {
            self.report(format!("{at}.{field}"), message);
        }
    }

    /// `name` is one of the scenario's `upstreams`.
    pub(super) fn known(&mut self, name: &str, path: String) {
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
    pub(super) fn rule_handle(&mut self, plugin: &str, rule: &RuleSpec, at: &str) {
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
    pub(super) fn rate_limiter_handle(
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
    pub(super) fn expectation(&mut self, expect: &Expect, at: &str) {
        self.status(expect.status, at);
        if expect.is_empty() {
            self.report(
                format!("{at}.expect"),
                "accepts every answer: constrain at least one of status, upstream, route, code, \
                 bodyContains, bodyNotContains, bodyMatches, headers, headersMatch, json, \
                 received, selector, rule",
            );
        }
        self.patterns(expect, at);
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

    /// `bodyMatches` and `headersMatch`: each pattern must compile, else a problem at its
    /// field saying why.
    fn patterns(&mut self, expect: &Expect, at: &str) {
        let body = expect
            .body_matches
            .iter()
            .map(|p| ("bodyMatches".to_owned(), p));
        let headers =
            (expect.headers_match.iter()).map(|(name, p)| (format!("headersMatch.{name}"), p));
        for (field, pattern) in body.chain(headers) {
            if let Err(e) = regex::Regex::new(pattern) {
                self.report(
                    format!("{at}.expect.{field}"),
                    format!("invalid regular expression /{pattern}/: {e}"),
                );
            }
        }
    }

    /// Every selector the scenario makes, in setup or a step, with the rules it ever gets
    /// (sorted by name): what `selector` and `rule` expectations may name.
    pub(super) fn every_selector(&self) -> std::collections::BTreeMap<&'s str, HashSet<&'s str>> {
        let s = self.s;
        let mut all: std::collections::BTreeMap<&str, HashSet<&str>> =
            std::collections::BTreeMap::new();
        let created = s.steps.iter().flat_map(|st| &st.changes);
        for sel in s
            .setup
            .selectors
            .iter()
            .chain(created.clone().filter_map(|c| match c {
                Change::Admin(AdminChange::CreateSelector(sel)) => Some(sel),
                _ => None,
            }))
        {
            all.entry(sel.name.as_str())
                .or_default()
                .extend(sel.rules.iter().map(|r| r.name.as_str()));
        }
        for c in created {
            if let Change::Admin(AdminChange::CreateRule(r)) = c {
                all.entry(r.selector.as_str())
                    .or_default()
                    .insert(r.rule.name.as_str());
            }
        }
        all
    }

    /// The plugin of the selector `name` (from setup or a `createSelector`).
    pub(super) fn plugin_of(&self, name: &str) -> Option<&'s str> {
        let s = self.s;
        let created = s
            .steps
            .iter()
            .flat_map(|st| &st.changes)
            .filter_map(|c| match c {
                Change::Admin(AdminChange::CreateSelector(sel)) => Some(sel),
                _ => None,
            });
        s.setup
            .selectors
            .iter()
            .chain(created)
            .find(|x| x.name == name)
            .map(|x| x.plugin.as_str())
    }

    pub(super) fn wait_policy(&mut self, w: &Wait, at: &str) {
        if w.interval > MAX_INTERVAL || w.interval.is_zero() {
            self.report(
                format!("{at}.interval"),
                format!(
                    "must be between 1ms and 50ms, got {}",
                    humantime::format_duration(w.interval)
                ),
            );
        }
        if w.consecutive < MIN_COUNT {
            self.report(
                format!("{at}.consecutive"),
                format!("must be at least {MIN_COUNT}"),
            );
        }
        if let Some(split) = &w.distribution {
            self.distribution(split, &format!("{at}.distribution"));
        }
    }

    pub(super) fn unknown_selector(&mut self, name: &str, path: String) {
        self.report(
            path,
            format!(
                "no selector named `{name}` at this point (made by setup or an earlier \
                 `createSelector`, and not deleted since)"
            ),
        );
    }

    /// The rule `name` of `selector` still exists (`at` is the change's path).
    pub(super) fn live_rule(
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
}
