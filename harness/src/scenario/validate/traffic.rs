//! Traffic during steps: a step's `during` options and the scenario's background `traffic`
//! (its step names, its options).

use std::time::Duration;

use super::Validator;
use crate::scenario::ast::{During, Load};

/// The most concurrent clients one traffic may have.
const MAX_CLIENTS: u32 = 64;

/// The highest overall rate one traffic may ask for.
const MAX_RATE_PER_SECOND: f64 = 100_000.0;

/// The longest `duration` a step's `during` may ask for.
const MAX_DURATION: Duration = Duration::from_secs(60);

impl Validator<'_> {
    /// A step's `during` (at `at`): its load, and a `duration` that is not zero and at most
    /// [`MAX_DURATION`].
    pub(super) fn during(&mut self, during: &During, at: &str) {
        self.load(&during.load, at);
        if let Some(d) = during.duration
            && (d.is_zero() || d > MAX_DURATION)
        {
            self.report(
                format!("{at}.duration"),
                format!(
                    "must be more than 0s and at most {}, got {}",
                    humantime::format_duration(MAX_DURATION),
                    humantime::format_duration(d)
                ),
            );
        }
    }

    /// The scenario's background traffic: unique non-empty names, `from` and `until` naming
    /// steps, `until` not before `from`, and each one's load.
    pub(super) fn traffic(&mut self) {
        let s = self.s;
        self.unique(
            s.traffic.iter().map(|t| t.name.as_str()),
            "traffic",
            "traffic",
        );
        let step_index = |name: &str| s.steps.iter().position(|st| st.name == name);
        let step_names = || {
            let names: Vec<String> = s.steps.iter().map(|st| format!("`{}`", st.name)).collect();
            match names.is_empty() {
                true => "the scenario has no steps".to_owned(),
                false => format!("the steps are {}", names.join(", ")),
            }
        };
        for (i, t) in s.traffic.iter().enumerate() {
            let at = format!("traffic[{i}]");
            if t.name.trim().is_empty() {
                self.report(format!("{at}.name"), "must not be empty");
            }
            let mut ends = [None, None];
            for (end, (field, name)) in [("from", &t.from), ("until", &t.until)]
                .into_iter()
                .enumerate()
            {
                ends[end] = step_index(name);
                if ends[end].is_none() {
                    self.report(
                        format!("{at}.{field}"),
                        format!("unknown step `{name}`: {}", step_names()),
                    );
                }
            }
            if let [Some(from), Some(until)] = ends
                && until < from
            {
                self.report(
                    format!("{at}.until"),
                    format!(
                        "step `{}` comes before step `{}` (`from`): the traffic would end \
                         before it starts",
                        t.until, t.from
                    ),
                );
            }
            self.load(&t.load, &at);
        }
    }

    /// A load (at `at`): 1 to [`MAX_CLIENTS`] clients, a rate above zero and at most
    /// [`MAX_RATE_PER_SECOND`], and an order naming two different declared upstreams.
    fn load(&mut self, load: &Load, at: &str) {
        if !(1..=MAX_CLIENTS).contains(&load.clients) {
            self.report(
                format!("{at}.clients"),
                format!("must be 1 to {MAX_CLIENTS}, got {}", load.clients),
            );
        }
        if let Some(rate) = load.rate
            && (rate.count == 0 || rate.per.is_zero() || rate.per_second() > MAX_RATE_PER_SECOND)
        {
            self.report(
                format!("{at}.rate"),
                format!("must be above zero and at most {MAX_RATE_PER_SECOND}/s, got {rate}"),
            );
        }
        let Some(order) = &load.order else {
            return;
        };
        for (field, name) in [("after", &order.after), ("never", &order.never)] {
            if !self.declared.contains(name.as_str()) {
                self.report(
                    format!("{at}.{field}"),
                    format!("unknown upstream `{name}`: declare it in `upstreams`"),
                );
            }
        }
        if order.after == order.never {
            self.report(
                format!("{at}.never"),
                format!(
                    "`after` and `never` both name `{}`: once it answered, it could never \
                     answer again",
                    order.never
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::ast::Scenario;

    /// The problems of a scenario with two steps (`one`, `two`) and `extra` appended.
    fn problems(extra: &str) -> Vec<String> {
        let yaml = format!(
            "name: t\nmodes: [websocket]\nupstreams: [alpha, beta]\n\
             wait: {{ probe: {{ request: {{ path: /a }}, expect: {{ upstream: alpha }} }} }}\n\
             checks: [{{ name: c, request: {{ path: /a }}, expect: {{ status: 200 }} }}]\n\
             steps:\n\
             \x20 - {{ name: one, changes: [], wait: {{ probe: {{ request: {{ path: /a }}, expect: {{ status: 200 }} }} }} }}\n\
             \x20 - {{ name: two, changes: [], wait: {{ probe: {{ request: {{ path: /a }}, expect: {{ status: 200 }} }} }} }}\n\
             {extra}"
        );
        let scenario: Scenario = serde_norway::from_str(&yaml).unwrap();
        (super::super::validate(&scenario).into_iter())
            .map(|p| format!("{}: {}", p.path, p.message))
            .filter(|p| p.starts_with("traffic") || p.contains("during"))
            .collect()
    }

    #[test]
    fn traffic_names_known_steps_in_order_and_declared_upstreams() {
        let fine = "traffic: [{ name: m, from: one, until: two, request: { path: /a }, \
                    expect: { status: 200 }, clients: 2, rate: 100/s, after: beta, never: alpha }]";
        assert_eq!(problems(fine), Vec::<String>::new());
        let wrong = "traffic:\n\
                     \x20 - { name: m, from: zero, until: one, request: { path: /a }, expect: { status: 200 } }\n\
                     \x20 - { name: m, from: two, until: one, request: { path: /a }, expect: { status: 200 }, \
                     clients: 0, rate: 0/s, after: gamma, never: gamma }\n";
        assert_eq!(
            problems(wrong),
            [
                "traffic[1]: duplicate traffic name `m`",
                "traffic[0].from: unknown step `zero`: the steps are `one`, `two`",
                "traffic[1].until: step `one` comes before step `two` (`from`): the traffic \
                 would end before it starts",
                "traffic[1].clients: must be 1 to 64, got 0",
                "traffic[1].rate: must be above zero and at most 100000/s, got 0/1s",
                "traffic[1].after: unknown upstream `gamma`: declare it in `upstreams`",
                "traffic[1].never: unknown upstream `gamma`: declare it in `upstreams`",
                "traffic[1].never: `after` and `never` both name `gamma`: once it answered, it \
                 could never answer again",
            ]
        );
    }
}
