use super::*;
use std::time::Duration;

use crate::scenario::ast::*;

const GOOD: &str = include_str!("../testdata/annotated.yaml");
const REDIS: &str = include_str!("../testdata/redis_component.yaml");

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
            crate::BackendKind::Swarm,
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
        e.starts_with("x.yaml:38:15: checks[0].expect: unknown field `stauts`, expected one of"),
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
        Change::Admin(AdminChange::UpdateSelector(u)) => {
            assert_eq!(u.name, "uri-equal");
            assert!(!u.upstreams.as_ref().unwrap()[0].status);
            assert_eq!(u.enabled, None);
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(&st.changes[2], Change::Admin(AdminChange::EnablePlugin(p)) if p.name == "divide" && !p.enabled)
    );
    assert_eq!(
        st.changes[4],
        Change::Admin(AdminChange::DeleteSelector("uri-equal".into()))
    );
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
        e.contains("steps[0].changes[4].deleteSelector: no selector named `nope` at this point"),
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
    assert!(
        s.steps[0]
            .changes
            .iter()
            .all(|c| matches!(c, Change::Admin(_)))
    );
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
        e.contains(
            "steps[0].changes[3].updateRule: give one of `handle`, `contextPath` and `rateLimiter`"
        ),
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
        e.contains(
            "steps[0].checks[0].distribution.selector: no selector named `uri-equal` at this point"
        ),
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
    assert_eq!(
        s.steps[0].changes[0],
        Change::Fault(Fault::Process(FaultAction::Stop, Target::Redis))
    );
    let Change::Admin(AdminChange::UpdatePlugin(p)) = &s.steps[0].changes[1] else {
        panic!("{:?}", s.steps[0].changes[1]);
    };
    assert_eq!(p.name, "rateLimiter");
    assert!(p.config.as_deref().unwrap().contains("failClosed"));
    assert_eq!(
        s.steps[1].changes[0],
        Change::Fault(Fault::Process(FaultAction::Start, Target::Redis))
    );
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
    // Network faults run on docker and swarm through proxy containers, but the database
    // link only on the host.
    let latency = "network: { link: upstream, latency: { delay: 10ms } }, heal";
    let containers = |changes: &str| {
        steps(changes).replace("backends: [host]", "backends: [host, docker, swarm]")
    };
    parse_str(Path::new("x.yaml"), &containers(latency)).unwrap();
    let database = "network: { link: database, latency: { delay: 10ms } }, heal";
    let e = err(&containers(database));
    assert!(
        e.contains(
            "steps[0].changes[0].network.link: the database link runs on the host backend only \
             so far"
        ),
        "{e}"
    );
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
    assert_eq!(
        s.steps[0].changes[0],
        Change::Fault(Fault::Process(FaultAction::Kill, Target::Admin(Some(0))))
    );
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
        e.contains("topology.late[0]: gateway[2] does not exist: the topology runs 2 gateway(s)"),
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
            e.contains("topology: several admins or gateways, late gateways and PostgreSQL storage run on the host and swarm backends only so far: add `backends: [host]` or `backends: [host, swarm]`"),
            "{e}"
        );
    // On the swarm backend several admins are one service on PostgreSQL, and no gateway is late.
    let e = err(&topology_case(
        "{ admins: 2, gateways: 2, late: [1] }",
        &["start: gateway[1]"],
    )
    .replace("backends: [host]\n", "backends: [host, swarm]\n"));
    assert!(
        e.contains("topology.late: late gateways run on the host backend only so far"),
        "{e}"
    );
    assert!(
        e.contains(
            "topology.storage: on the swarm backend several admins are one replicated service"
        ),
        "{e}"
    );
    let swarm = topology_case(
        "{ admins: 3, gateways: 2, storage: postgres }",
        &["kill: gateway[1]"],
    )
    .replace("backends: [host]\n", "backends: [swarm]\n");
    parse_str(Path::new("swarm.yaml"), &swarm).unwrap();
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
    const WS: &str = include_str!("../../../../cases/scenarios/faults/protocol_websocket.yaml");
    const HTTP: &str = include_str!("../../../../cases/scenarios/faults/protocol_http.yaml");
    const ETCD: &str = include_str!("../../../../cases/scenarios/faults/protocol_etcd.yaml");
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
            "steps[0].changes[0].syncFault.delay: only `lateAnswer` and `latePush` take a \
             delay; `duplicate` takes none"
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
        e.contains("steps[0].changes[3].compact: only etcd compacts revisions, not `zookeeper`"),
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
fn a_wipe_is_of_etcd_in_the_etcd_mode_on_the_host() {
    const WIPE: &str = include_str!("../../../../cases/regressions/apisix-11144.yaml");
    parse_str(Path::new("x.yaml"), WIPE).unwrap();
    let e = err(&WIPE.replacen("- wipe: etcd", "- wipe: zookeeper", 1));
    assert!(
        e.contains("steps[1].changes[0].wipe: only etcd can be wiped so far, not `zookeeper`"),
        "{e}"
    );
    let e = err(&WIPE.replace("modes: [etcd]", "modes: [etcd, websocket]"));
    assert!(
        e.contains(
            "steps[1].changes[0].wipe: `wipe: etcd` means something in the etcd mode only: \
             give `modes: [etcd]`"
        ),
        "{e}"
    );
    let e = err(&WIPE.replace("backends: [host]", "backends: [host, docker]"));
    assert!(
        e.contains(
            "steps[1].changes[0].wipe: `wipe: etcd` runs on the host backend only so far: add \
             `backends: [host]`"
        ),
        "{e}"
    );
}

#[test]
fn a_sever_is_healed_and_a_clock_step_is_a_running_process_on_the_host() {
    const SEVER: &str = include_str!("../../../../cases/regressions/apisix-13721.yaml");
    parse_str(Path::new("x.yaml"), SEVER).unwrap();
    let e = err(&SEVER.replacen("      - heal\n", "", 1));
    assert!(e.contains("partition"), "{e}");
    let e = err(&SEVER.replace("backends: [host]", "backends: [host, docker]"));
    assert!(
        e.contains("`partition: sever` runs on the host backend only"),
        "{e}"
    );
    const CLOCK: &str = include_str!("../../../../cases/regressions/clock-skew.yaml");
    parse_str(Path::new("x.yaml"), CLOCK).unwrap();
    let step = "{ target: admin, step: -60s }";
    let e = err(&CLOCK.replace(step, "{ target: etcd, step: 60s }"));
    assert!(
        e.contains("steps[0].changes[0].clock.step: `60s`: give the step's direction"),
        "{e}"
    );
    let e = err(&CLOCK.replace(step, "{ target: etcd, step: -1.5s }"));
    assert!(
        e.contains(
            "steps[0].changes[0].clock.target: only an admin's or a gateway's clock steps, \
             not `etcd`'s"
        ),
        "{e}"
    );
    assert!(
        e.contains("steps[0].changes[0].clock.step: must be whole seconds, got `-1s 500ms`"),
        "{e}"
    );
    let e = err(&CLOCK.replace(step, "{ target: \"gateway[1]\", step: +0s }"));
    assert!(
        e.contains("steps[0].changes[0].clock.target: `gateway[1]` does not exist"),
        "{e}"
    );
    assert!(
        e.contains("steps[0].changes[0].clock.step: must move the clock: got 0s"),
        "{e}"
    );
    let e = err(&CLOCK.replace("backends: [host]", "backends: [host, docker]"));
    assert!(
        e.contains("steps[0].changes[0].clock: `clock` runs on the host backend only"),
        "{e}"
    );
    let paused = CLOCK.replace(
        &format!("      - clock: {step}\n"),
        &format!("      - pause: admin\n      - clock: {step}\n      - resume: admin\n"),
    );
    let e = err(&paused);
    assert!(
        e.contains("steps[0].changes[1].clock.target: the admin is paused at this point"),
        "{e}"
    );
}

#[test]
fn an_expired_session_is_a_paused_gateway_of_the_zookeeper_mode_on_the_host() {
    const EXPIRY: &str =
        include_str!("../../../../cases/scenarios/faults/zookeeper_session_expiry.yaml");
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
    let churn = "  - name: c\n    churn: { request: { path: /x }, expect: { upstream: alpha } }\n";
    let s = parse_str(Path::new("x.yaml"), &with_judges(churn)).unwrap();
    let CheckKind::Churn(c) = &s.checks[2].kind else {
        panic!("{:?}", s.checks[2].kind)
    };
    assert_eq!(
        (c.rate, c.duration, c.connections, c.request_rate, c.burst),
        (50, Duration::from_secs(5), 4, 400, None)
    );
    assert_eq!((c.held, c.limits.p99), (0, None));
    let limited = with_judges(&churn.replace(
        "expect: { upstream: alpha }",
        "expect: { upstream: alpha }, held: 1000, limits: { p99: 100ms }",
    ));
    let s = parse_str(Path::new("x.yaml"), &limited).unwrap();
    let CheckKind::Churn(c) = &s.checks[2].kind else {
        panic!("{:?}", s.checks[2].kind)
    };
    assert_eq!(
        (c.held, c.limits.p99),
        (1000, Some(Duration::from_millis(100)))
    );
    let e = err(&with_judges(&churn.replace(
        "expect: { upstream: alpha }",
        "expect: { upstream: omega }, rate: 0, connections: 0, requestRate: 0, duration: 10ms, \
             burst: { every: 1s, changes: 0 }, held: 20001",
    )));
    for want in [
        "checks[2].churn.expect.upstream: ",
        "checks[2].churn.rate: must be between 1 and 1000 changes/s, got 0",
        "checks[2].churn.connections: must be between 1 and 64, got 0",
        "checks[2].churn.requestRate: must be between 1 and 100000 requests/s, got 0",
        "checks[2].churn.duration: must be at least 500ms",
        "checks[2].churn.burst.every: must be positive and at most the duration (10ms), got 1s",
        "checks[2].churn.burst.changes: must be between 1 and 1000, got 0",
        "checks[2].churn.held: must be at most 20000, got 20001",
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

/// The file of issue 36: a type error in a list, a type error in a condition and a semantic
/// problem, each reported once at its own node.
#[test]
fn type_and_semantic_problems_come_out_together() {
    let src = GOOD
        .replace("modes: [websocket]", "modes: [websocket, carrier-pigeon]")
        .replacen("operator: \"=\"", "operator: \"=~\"", 1)
        .replace(
            "{ upstream: alpha, weight: 50 }",
            "{ upstream: beta, weight: 50 }",
        );
    let e = parse_str(Path::new("x.yaml"), &src).unwrap_err();
    let expected = [
        "x.yaml:3:20: modes[1]: unknown sync mode `carrier-pigeon` (expected one of: websocket, \
         http, zookeeper, etcd)",
        "x.yaml:16:39: setup.selectors[0].conditions[0].operator: unknown operator `=~` \
         (expected one of: match, =, regex, contains, TimeBefore, TimeAfter, exclude, startsWith, \
         endsWith, pathPattern, isBlank, >, <, SpEL, Groovy)",
        "x.yaml:18:23: setup.selectors[0].upstreams[0].upstream: upstream `beta` is not declared \
         in `upstreams` (declared: alpha)",
    ];
    assert_eq!(e.problem_count(), 3, "{e}");
    assert_eq!(e.to_string(), expected.join("\n"));
}

/// Type errors in several elements of one list and of others: each is reported, the indexes
/// after a pruned element still name the file's elements, and nothing follows from the pruning.
#[test]
fn type_errors_in_several_list_elements_are_all_reported() {
    let src = GOOD
        .replace("modes: [websocket]", "modes: [pigeon, websocket, raven]")
        .replace(
            "expect: { status: 200, upstream: alpha, received",
            "expect: { status: two hundred, upstream: alpha, received",
        )
        .replace(
            "request: { method: GET, path: /http/order/findById/ }",
            "request: { method: GET, path: /http/order/findById/, bogus: 1 }",
        )
        .replace(
            "    - request: { method: GET, path: /http/order/findById }\n      expect: { route: absent }",
            "    - request: { method: GET, path: /http/order/findById }\n      expect: { route: maybe }\n    - request: { path: relative }\n      expect: { route: absent }",
        );
    let e = parse_str(Path::new("x.yaml"), &src).unwrap_err();
    let lines: Vec<String> = e.to_string().lines().map(str::to_owned).collect();
    assert_eq!(
        lines,
        [
            "x.yaml:3:9: modes[0]: unknown sync mode `pigeon` (expected one of: websocket, http, zookeeper, etcd)",
            "x.yaml:3:28: modes[2]: unknown sync mode `raven` (expected one of: websocket, http, zookeeper, etcd)",
            "x.yaml:38:23: checks[0].expect.status: invalid type: string \"two hundred\", expected u16",
            "x.yaml:40:58: checks[1].request: unknown field `bogus`, expected one of `method`, `path`, `headers`, `query`, `body`",
            "x.yaml:46:24: teardown.probes[0].expect.route: unknown variant `maybe`, expected `present` or `absent`",
            // The second probe, the first of the pruned tree.
            "x.yaml:47:24: teardown.probes[1].request.path: must start with `/`, got `relative`",
        ],
        "{e}"
    );
}

/// A required field that is missing is reported once; where the document itself lacks it, or
/// a top-level value is unreadable, nothing that would follow from that is reported.
#[test]
fn a_missing_required_field_is_reported_once() {
    let src = GOOD.replace("  - name: a trailing slash does not\n", "  - repeat: 2\n");
    assert_eq!(
        err(&src),
        "x.yaml:39:5: checks[1]: missing field `name`",
        "a lone type error stays serde's one error"
    );
    let src = src.replace("modes: [websocket]", "modes: [pigeon]");
    let e = parse_str(Path::new("x.yaml"), &src).unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.yaml:3:9: modes[0]: unknown sync mode `pigeon` (expected one of: websocket, http, \
         zookeeper, etcd)\n\
         x.yaml:39:5: checks[1]: missing field `name`",
        "no `modes` or `checks` problem follows from the pruning"
    );

    let no_wait = GOOD
        .replace("wait:  ", "weight:")
        .replace("modes: [websocket]", "modes: [pigeon]");
    let e = parse_str(Path::new("x.yaml"), &no_wait).unwrap_err();
    assert_eq!(e.problem_count(), 3, "{e}");
    assert!(
        e.to_string().starts_with(
            "x.yaml:1:1: missing field `wait`\nx.yaml:3:9: modes[0]: unknown sync mode"
        ),
        "{e}"
    );

    let bad_name = format!(
        "{}\nbogus: 1\n",
        GOOD.replacen("name: uri_equal", "name: [a, b]", 1)
    );
    let e = parse_str(Path::new("x.yaml"), &bad_name).unwrap_err();
    assert_eq!(
        e.to_string(),
        "x.yaml:1:7: name: invalid type: sequence, expected a string\n\
         x.yaml:48:1: unknown field `bogus`, expected one of `name`, `description`, \
         `features`, `modes`, `backends`, `components`, `topology`, `upstreams`, `setup`, \
         `wait`, `checks`, `steps`, `traffic`, `teardown`, `expectLogs`, `regression`, `runModes`, `resources`",
        "no missing `name`, no semantic problem"
    );
}

/// Every request path starts with `/` and every expected status is an HTTP status, wherever a
/// request or an expectation stands.
#[test]
fn request_paths_and_expected_statuses_are_checked_everywhere() {
    let steps = "
steps:
  - name: s
    changes:
      - updateSelector: { name: uri-equal, enabled: true }
    during:
      request: { path: during }
      expect: { status: 99 }
    wait:
      probe:
        request: { path: wait }
        expect: { route: present }
";
    let src = format!(
        "{}{steps}",
        GOOD.replacen(
            "    request: { method: GET, path: /http/order/findById }\n    expect: { status: 200, upstream: alpha, received",
            "    request: { method: GET, path: http/order/findById }\n    expect: { status: 600, upstream: alpha, received",
            1
        )
    );
    let e = err(&src);
    for want in [
        "checks[0].request.path: must start with `/`, got `http/order/findById`",
        "checks[0].expect.status: not an HTTP status (100 to 599), got 600",
        "steps[0].during.request.path: must start with `/`, got `during`",
        "steps[0].during.expect.status: not an HTTP status (100 to 599), got 99",
        "steps[0].wait.probe.request.path: must start with `/`, got `wait`",
    ] {
        assert!(e.contains(want), "{want} not in {e}");
    }
    let judge = "  - name: d\n    distribution: { request: { path: x }, selector: uri-equal }\n";
    let e = err(&with_judges(judge));
    assert!(
        e.contains("checks[2].distribution.request.path: must start with `/`, got `x`"),
        "{e}"
    );
}

#[test]
fn an_unknown_feature_names_file_line_and_the_nearest_known_one() {
    let src = GOOD.replacen(
        "modes: [websocket]",
        "modes: [websocket]\nfeatures: [routing.uriEqual, sync.incremnetal]",
        1,
    );
    let e = err(&src);
    let line = src
        .lines()
        .position(|l| l.starts_with("features:"))
        .unwrap()
        + 1;
    assert!(e.starts_with(&format!("x.yaml:{line}:")), "{e}");
    assert!(
        e.contains(
            "features[1]: unknown feature `sync.incremnetal` (did you mean `sync.incremental`?)"
        ),
        "{e}"
    );
    let ok = GOOD.replacen(
        "modes: [websocket]",
        "modes: [websocket]\nfeatures: [routing.uriEqual]",
        1,
    );
    let s = parse_str(Path::new("x.yaml"), &ok).unwrap();
    assert_eq!(s.features, ["routing.uriEqual"]);
    let twice = GOOD.replacen(
        "modes: [websocket]",
        "modes: [websocket]\nfeatures: [routing.uriEqual, routing.uriEqual]",
        1,
    );
    assert!(
        err(&twice).contains("duplicate feature name `routing.uriEqual`"),
        "{}",
        err(&twice)
    );
}

#[test]
fn regex_matchers_parse_and_a_bad_pattern_is_located() {
    let with = |extra: &str| {
        GOOD.replace(
            "expect: { status: 200, upstream: alpha, received",
            &format!("expect: {{ {extra}, received"),
        )
    };
    let s = parse_str(
        Path::new("x.yaml"),
        &with(r#"bodyMatches: "^\\{\"code\":-10[27]", headersMatch: { x-a: "^b+$" }"#),
    )
    .unwrap();
    let e = s.checks_probe_expect(0);
    assert_eq!(e.body_matches.as_deref(), Some(r#"^\{"code":-10[27]"#));
    assert_eq!(e.headers_match["x-a"], "^b+$");
    let e = err(&with(r#"bodyMatches: "(unclosed""#));
    assert!(
        e.contains("checks[0].expect.bodyMatches: invalid regular expression /(unclosed/"),
        "{e}"
    );
    assert!(e.starts_with("x.yaml:"), "{e}");
    let e = err(&with(r#"headersMatch: { x-a: "[z-a]" }"#));
    assert!(
        e.contains("checks[0].expect.headersMatch.x-a: invalid regular expression /[z-a]/"),
        "{e}"
    );
}

#[test]
fn a_starvation_fits_its_gateway_backend_duty_period_and_step() {
    const STARVE: &str = include_str!("../../../../cases/scenarios/faults/starve.yaml");
    parse_str(Path::new("x.yaml"), STARVE).unwrap();
    let first = "starve: { target: gateway, duty: 90%, period: 100ms }";
    let e = err(&STARVE.replace("backends: [host]", ""));
    assert!(
        e.contains(
            "steps[0].changes[0].starve: `starve` runs on the host backend only so far (a \
             SIGSTOP/SIGCONT duty cycle on the gateway's process): add `backends: [host]`"
        ),
        "{e}"
    );
    let e = err(&STARVE.replace(first, "starve: { target: admin, duty: 100%, period: 5ms }"));
    assert!(
        e.contains(
            "steps[0].changes[0].starve.target: only a gateway is starved here, not `admin`"
        ),
        "{e}"
    );
    let e = err(&STARVE.replace(
        first,
        "starve: { target: gateway, duty: 100%, period: 5ms }",
    ));
    assert!(
        e.contains("steps[0].changes[0].starve.duty: must be between 1% and 99%, got 100%"),
        "{e}"
    );
    assert!(
        e.contains("steps[0].changes[0].starve.period: must be between 10ms and 10s, got 5ms"),
        "{e}"
    );
    let e = err(&STARVE.replacen(first, "feed: gateway", 1));
    assert!(
        e.contains(
            "steps[0].changes[0].feed: gateway is not starved at this point (a `starve` of it \
             earlier in the same step: a starvation ends with its step)"
        ),
        "{e}"
    );
    let e = err(&STARVE.replacen(
        &format!("      - {first}\n"),
        &format!("      - {first}\n      - restart: gateway\n"),
        1,
    ));
    assert!(
        e.contains(
            "steps[0].changes[1].restart: gateway is starved at this point: `feed: gateway` first"
        ),
        "{e}"
    );
    let e = err(&STARVE.replacen(
        &format!("      - {first}\n"),
        &format!("      - {first}\n      - {first}\n"),
        1,
    ));
    assert!(
        e.contains("steps[0].changes[1].starve: a gateway is starved already in this step"),
        "{e}"
    );
}

#[test]
fn a_disk_fault_fits_its_backend_storage_and_order_and_a_refusal_its_step() {
    const DISK: &str = include_str!("../../../../cases/scenarios/faults/disk_full.yaml");
    parse_str(Path::new("x.yaml"), DISK).unwrap();
    let e = err(&DISK.replace("backends: [host]", ""));
    assert!(
        e.contains(
            "steps[0].changes[0].diskFull: the disk faults run on the host backend only so far"
        ),
        "{e}"
    );
    let e = err(&DISK.replace(
        "upstreams: [alpha, beta]",
        "upstreams: [alpha, beta]\ntopology: { storage: postgres }",
    ));
    assert!(
        e.contains("steps[0].changes[0].diskFull: the disk faults fill the disk under the admin's SQLite file"),
        "{e}"
    );
    let e = err(&DISK.replace("- diskFull: database", "- diskFree: database"));
    assert!(
        e.contains(
            "steps[0].changes[0].diskFree: the admin's database disk is not full at this point"
        ),
        "{e}"
    );
    let e = err(&DISK.replace("- diskFree: database", "- diskFull: database"));
    assert!(
        e.contains("steps[1].changes[0].diskFull: the admin's database disk is full already"),
        "{e}"
    );
    assert!(
        e.contains("steps[1]: the admin's database disk is full after the last step"),
        "{e}"
    );
    let e = err(&DISK.replace("- diskFull: database", "- diskFull: gateway"));
    assert!(e.contains("steps[0].changes[0].diskFull"), "{e}");
    let e = err(&DISK.replace(
        "refused: { status: 507, contains: \"database disk is full: nothing was changed\" }",
        "refused: { status: 200, contains: \" \" }",
    ));
    assert!(
        e.contains("steps[0].refused.status: must be an error status (400 to 599), got 200"),
        "{e}"
    );
    assert!(
        e.contains("steps[0].refused.contains: must say what the refusal's body contains"),
        "{e}"
    );
    let e = err(&DISK.replace(
        "      - updateSelector: { name: route, upstreams: [{ upstream: beta }] }\n    refused",
        "    refused",
    ));
    assert!(
        e.contains("steps[0].refused: the step has no admin change to be refused: give one"),
        "{e}"
    );
}
