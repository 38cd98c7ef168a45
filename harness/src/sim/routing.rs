//! Routing under the simulation (checker (c) of docs/simulation.md): two echo upstreams,
//! `alpha` and `beta`, that the routes and registrations point at; a client that sends
//! requests to the gateways through the simulated network while the plan runs; and the
//! judge, which reads each answer against the config its gateway held while the request was
//! in flight ([`crate::reference`], the harness's own model of ShenYu's selector and rule
//! choice). An answer no such config explains (a selector of one config with the upstream
//! of another, or a config the gateway no longer held) breaks the property.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use model::{ConfigSet, DivideUpstream, GatewayError};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::net::{SimListener, SimNet};
use crate::converge::history::{KEYS, REGISTERED};
use crate::converge::run::{registered_path, route_path};
use crate::probe::{RULE_ID_HEADER, SELECTOR_ID_HEADER};
use crate::reference::{Choice, Reference, Request, Rule, Selector};
use crate::upstream::UPSTREAM_HEADER;

/// The upstreams' port.
pub(crate) const UPSTREAM_PORT: u16 = 8080;
/// The upstreams, by host name (what they answer in `x-gantry-upstream`).
pub(crate) const UPSTREAMS: [&str; 2] = ["alpha", "beta"];
/// The convergence case number the plan's routes are written under.
pub(crate) const CASE: u64 = 1;
/// The longest the client waits for an answer; then the request counts as unanswered.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);
/// When the client sends its first request.
const FIRST_REQUEST: Duration = Duration::from_millis(1_000);

/// An echo upstream: every request gets HTTP 200 with `x-gantry-upstream: <name>`.
pub(crate) async fn upstream(name: &'static str) -> turmoil::Result {
    let listener = SimListener::bind(UPSTREAM_PORT).await?;
    let app =
        axum::Router::new().fallback(move || async move { ([(UPSTREAM_HEADER, name)], name) });
    netserve::serve(
        listener,
        app,
        netserve::Timeouts::default(),
        std::future::pending(),
    )
    .await;
    Ok(())
}

/// The paths the client asks for: every route and registered application of the plan, and
/// one no route has.
fn paths() -> Vec<String> {
    let mut paths: Vec<String> = (0..KEYS).map(|k| route_path(CASE, k)).collect();
    paths.extend((0..REGISTERED).map(|k| registered_path(CASE, k)));
    paths.push(format!("/conv/{CASE}/none"));
    paths
}

/// The client: from [`FIRST_REQUEST`] until `end`, one request at a time, to a gateway and a
/// path drawn from its own generator (seeded from `seed`), every 10–250 ms; each exchange
/// goes to `record`.
pub(crate) async fn client(
    seed: u64,
    gateways: u8,
    port: u16,
    end: Duration,
    record: impl Fn(Exchange),
) -> turmoil::Result {
    let start = tokio::time::Instant::now();
    let mut rng = StdRng::seed_from_u64(seed ^ 0xc11e_4700_0000_0002);
    let paths = paths();
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new())
        .build(netserve::net::Connector::new(SimNet).connect_timeout(REQUEST_TIMEOUT));
    tokio::time::sleep(FIRST_REQUEST).await;
    while start.elapsed() < end {
        tokio::time::sleep(Duration::from_millis(rng.random_range(10..250))).await;
        let gateway = rng.random_range(0..gateways);
        let path = &paths[rng.random_range(0..paths.len())];
        let sent = start.elapsed();
        let uri = format!("http://gw{gateway}:{port}{path}");
        let answer = match tokio::time::timeout(REQUEST_TIMEOUT, ask(&client, &uri)).await {
            Ok(Ok(answer)) => answer,
            Ok(Err(e)) => Answer::Unanswered(e),
            Err(_) => Answer::Unanswered("timed out".to_owned()),
        };
        record(Exchange {
            sent,
            received: start.elapsed(),
            gateway,
            path: path.clone(),
            answer,
        });
    }
    Ok(())
}

/// One GET and what it answered.
async fn ask(
    client: &Client<netserve::net::Connector<SimNet>, Empty<Bytes>>,
    uri: &str,
) -> Result<Answer, String> {
    let uri: http::Uri = uri.parse().map_err(|e| format!("{uri}: {e}"))?;
    let response = client.get(uri).await.map_err(|e| e.to_string())?;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let (selector, rule, upstream) = (
        header(SELECTOR_ID_HEADER),
        header(RULE_ID_HEADER),
        header(UPSTREAM_HEADER),
    );
    let status = response.status().as_u16();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok(match (status, selector, rule, upstream) {
        (200, Some(selector), Some(rule), Some(upstream)) => Answer::Served {
            selector,
            rule,
            upstream,
        },
        _ => Answer::Refused {
            status,
            code: serde_json::from_slice::<GatewayError>(&body)
                .ok()
                .map(|e| e.code),
        },
    })
}

/// One request and its answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exchange {
    /// When it was sent, from the start of the run.
    pub(crate) sent: Duration,
    /// When its answer (or the failure) came.
    pub(crate) received: Duration,
    /// The gateway asked.
    pub(crate) gateway: u8,
    /// The path asked for (GET).
    pub(crate) path: String,
    /// What came back.
    pub(crate) answer: Answer,
}

/// What a gateway answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Answer {
    /// HTTP 200 from an upstream, naming the selector and the rule that routed it.
    Served {
        /// `x-gantry-selector-id`.
        selector: String,
        /// `x-gantry-rule-id`.
        rule: String,
        /// The upstream that answered.
        upstream: String,
    },
    /// Anything else: the status and the gateway's error code, if its body has one.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The body's `code`.
        code: Option<i32>,
    },
    /// No answer (the gateway is down, or the request timed out): nothing to judge.
    Unanswered(String),
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Served {
                selector,
                rule,
                upstream,
            } => write!(f, "200 by {upstream} (selector {selector}, rule {rule})"),
            Answer::Refused { status, code } => match code {
                Some(code) => write!(f, "{status} code {code}"),
                None => write!(f, "{status}"),
            },
            Answer::Unanswered(why) => write!(f, "no answer ({why})"),
        }
    }
}

impl fmt::Display for Exchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gw{} GET {} sent at {} ms: {}",
            self.gateway,
            self.path,
            self.sent.as_millis(),
            self.answer
        )
    }
}

/// What a config says a request gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// The divide plugin is off or absent: no plugin forwards (404, -106).
    Unrouted,
    /// No divide selector matches (404, -107).
    NoSelector,
    /// The selector matches, none of its rules does (404, -102).
    NoRule,
    /// Forwarded with this selector and rule to one of `upstreams` (any answer naming the
    /// selector and rule when none is usable).
    Served {
        /// The selector's id.
        selector: String,
        /// The rule's id.
        rule: String,
        /// The host names of its handle's upstreams that are up.
        upstreams: Vec<String>,
    },
    /// Outside the reference model: anything goes.
    Unmodelled,
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expect::Unrouted => f.write_str("404 code -106 (divide off)"),
            Expect::NoSelector => f.write_str("404 code -107"),
            Expect::NoRule => f.write_str("404 code -102"),
            Expect::Served {
                selector,
                rule,
                upstreams,
            } => write!(
                f,
                "200 by {} (selector {selector}, rule {rule})",
                upstreams.join(" or ")
            ),
            Expect::Unmodelled => f.write_str("anything (outside the model)"),
        }
    }
}

/// What `set` says `GET path` gets from the divide plugin.
pub(crate) fn expect(set: &ConfigSet, path: &str) -> Expect {
    const DIVIDE: &str = "divide";
    if !set.plugins.iter().any(|p| p.name == DIVIDE && p.enabled) {
        return Expect::Unrouted;
    }
    let selectors: Vec<Selector> = set
        .selectors
        .iter()
        .filter(|s| s.plugin_name == DIVIDE)
        .map(|s| Selector {
            id: s.id.clone(),
            sort: s.sort,
            enabled: s.enabled,
            full_flow: s.selector_type == model::SelectorType::FullFlow,
            match_mode: s.match_mode.code(),
            continued: s.continued,
            conditions: s.condition_list.clone(),
            rules: set
                .rules
                .iter()
                .filter(|r| r.selector_id == s.id)
                .map(|r| Rule {
                    id: r.id.clone(),
                    sort: r.sort,
                    enabled: r.enabled,
                    match_mode: r.match_mode.code(),
                    conditions: r.condition_data_list.clone(),
                })
                .collect(),
        })
        .collect();
    match Reference::new().choose(&selectors, &Request::new("GET", path)) {
        Choice::NoSelector => Expect::NoSelector,
        Choice::NoRule { .. } => Expect::NoRule,
        Choice::Failed(_) => Expect::Unmodelled,
        Choice::Chosen { selector, rule } => {
            let handle = set
                .selectors
                .iter()
                .find(|s| s.id == selector)
                .and_then(|s| s.handle.as_deref())
                .unwrap_or("");
            let upstreams = DivideUpstream::parse_list(handle)
                .unwrap_or_default()
                .into_iter()
                .filter(|u| u.status)
                .map(|u| {
                    let url = u.upstream_url;
                    url.split_once(':')
                        .map_or(url.clone(), |(h, _)| h.to_owned())
                })
                .collect();
            Expect::Served {
                selector,
                rule,
                upstreams,
            }
        }
    }
}

/// Whether `answer` is what `expect` says.
pub(crate) fn agrees(answer: &Answer, expect: &Expect) -> bool {
    let refused =
        |want: i32| matches!(answer, Answer::Refused { status: 404, code: Some(c) } if *c == want);
    match expect {
        Expect::Unmodelled => true,
        Expect::Unrouted => refused(GatewayError::CANNOT_FIND_URL),
        Expect::NoSelector => refused(GatewayError::SELECTOR_NOT_FOUND),
        Expect::NoRule => refused(GatewayError::RULE_NOT_FOUND),
        Expect::Served {
            selector,
            rule,
            upstreams,
        } => match answer {
            Answer::Served {
                selector: s,
                rule: r,
                upstream,
            } => {
                s == selector && r == rule && (upstreams.is_empty() || upstreams.contains(upstream))
            }
            // No usable upstream: the gateway refuses; the model says no more.
            Answer::Refused { .. } => upstreams.is_empty(),
            Answer::Unanswered(_) => true,
        },
    }
}

/// A gateway's configs over time: when each was swapped in (a new process starts empty).
#[derive(Debug, Default)]
pub(crate) struct Held(Vec<(Duration, Arc<ConfigSet>)>);

impl Held {
    /// `set` is held from `at` on.
    pub(crate) fn push(&mut self, at: Duration, set: Arc<ConfigSet>) {
        self.0.push((at, set));
    }

    /// Every config held at some moment from `from` to `to` (inclusive).
    pub(crate) fn between(&self, from: Duration, to: Duration) -> impl Iterator<Item = &ConfigSet> {
        // The config held at `from`: the last one swapped in before it.
        let first = self.0.iter().rposition(|(at, _)| *at < from).unwrap_or(0);
        self.0[first..]
            .iter()
            .take_while(move |(at, _)| *at <= to)
            .map(|(_, set)| set.as_ref())
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::lower::divide_handle;
    use model::{ConditionData, PluginData, RuleData, SelectorData};

    /// A config with route `/conv/1/0` (selector `s0`, rule `r0`) to `upstream`, the divide
    /// plugin on or off.
    pub(in crate::sim) fn set(upstream: &str, divide_on: bool) -> ConfigSet {
        let condition = ConditionData {
            param_type: "uri".to_owned(),
            operator: "=".to_owned(),
            param_name: "/".to_owned(),
            param_value: "/conv/1/0".to_owned(),
        };
        ConfigSet {
            plugins: vec![PluginData {
                id: "5".to_owned(),
                name: "divide".to_owned(),
                enabled: divide_on,
                ..Default::default()
            }],
            selectors: vec![SelectorData {
                id: "s0".to_owned(),
                plugin_name: "divide".to_owned(),
                enabled: true,
                handle: Some(divide_handle(&format!("{upstream}:8080"))),
                condition_list: vec![condition.clone()],
                ..Default::default()
            }],
            rules: vec![RuleData {
                id: "r0".to_owned(),
                selector_id: "s0".to_owned(),
                plugin_name: "divide".to_owned(),
                enabled: true,
                condition_data_list: vec![condition],
                ..Default::default()
            }],
            meta_data: Vec::new(),
        }
    }

    fn served(upstream: &str) -> Answer {
        Answer::Served {
            selector: "s0".to_owned(),
            rule: "r0".to_owned(),
            upstream: upstream.to_owned(),
        }
    }

    #[test]
    fn the_config_says_which_selector_rule_and_upstream_serve_a_path() {
        let alpha = set("alpha", true);
        let want = expect(&alpha, "/conv/1/0");
        assert_eq!(
            want,
            Expect::Served {
                selector: "s0".to_owned(),
                rule: "r0".to_owned(),
                upstreams: vec!["alpha".to_owned()]
            }
        );
        assert!(agrees(&served("alpha"), &want));
        // A wrong observation: the upstream of another config.
        assert!(!agrees(&served("beta"), &want));
        let other_rule = Answer::Served {
            selector: "s0".to_owned(),
            rule: "r9".to_owned(),
            upstream: "alpha".to_owned(),
        };
        assert!(!agrees(&other_rule, &want));
        assert_eq!(expect(&alpha, "/conv/1/1"), Expect::NoSelector);
        let not_found = Answer::Refused {
            status: 404,
            code: Some(GatewayError::SELECTOR_NOT_FOUND),
        };
        assert!(agrees(&not_found, &Expect::NoSelector));
        assert!(!agrees(&not_found, &want));
        assert_eq!(expect(&set("alpha", false), "/conv/1/0"), Expect::Unrouted);
        assert!(!agrees(&served("alpha"), &Expect::Unrouted));
    }

    #[test]
    fn the_configs_held_in_flight_are_the_one_before_and_those_swapped_in_meanwhile() {
        let ms = Duration::from_millis;
        let mut held = Held::default();
        held.push(ms(0), Arc::new(ConfigSet::default()));
        held.push(ms(10), Arc::new(set("alpha", true)));
        held.push(ms(20), Arc::new(set("beta", true)));
        held.push(ms(30), Arc::new(set("beta", false)));
        let between = |a, b| held.between(ms(a), ms(b)).cloned().collect::<Vec<_>>();
        assert_eq!(between(12, 15), [set("alpha", true)]);
        assert_eq!(between(15, 25), [set("alpha", true), set("beta", true)]);
        assert_eq!(
            between(20, 20),
            [set("alpha", true), set("beta", true)],
            "swapped at the instant sent: either"
        );
        assert_eq!(between(40, 50), [set("beta", false)]);
    }
}
