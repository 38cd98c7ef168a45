//! Check kinds and their judges: one module per kind (docs/scenarios.md, "Checks"). Each holds
//! the kind's spec as a case file writes it and implements, beside its judge:
//! `spec::CheckSpec` (its request, its validation through `spec::ValidateCx`),
//! `spec::Observe` (what it sends through the runner's context, `spec::ObserveCx` or a
//! context trait of its own, and hands its judge) and [`spec::Measured`] for what it measured
//! (the reports' lines and plots). The judge (`Judge`) is a pure verdict over what was
//! observed, with the measurements that go into the reports either way; it never sends a
//! request, so each one is tested by feeding it a right and a wrong observation.
//!
//! Adding a check kind: one module here that defines the spec, its judge and its measured
//! value and implements those three traits, and one line in the `check_kinds!` table below
//! (it declares the module and makes the [`CheckKind`] variant, the file key and its schema,
//! the [`Measurements`] variant and the dispatch of both); the committed case-file schema is
//! then regenerated and the key documented in docs/scenarios.md. Nothing else matches kinds:
//! the validator, the runner and the reporters go through the traits. Only a kind that needs more of the runner than
//! `spec::ObserveCx` offers declares a context trait beside its judge (as probe, hash,
//! latency and churn do), which the runner implements in `runner/checks.rs`.

pub(crate) mod logs;
pub mod probe;
pub mod spec;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::probe::ProbeResponse;
use crate::scenario::ast::request::{Expect, RequestSpec};
use crate::upstream::UPSTREAM_HEADER;
use spec::{CheckSpec, Measured, NoVerdict, Observe};

/// The table of check kinds besides the probe: one line per kind,
/// `/// doc` `"fileKey" module => Variant(Spec, Measured)`, where `module` (the kind's file
/// here, declared by the table) is also the field of [`RawCheck`] and the doc is the file key's
/// in the schema. It generates [`CheckKind`], the judge keys of [`RawCheck`] and [`JUDGE_KEYS`],
/// [`CheckKind::name`], [`RawCheck::judges`], [`Measurements`] and the dispatch of both enums
/// to [`CheckSpec`], [`Observe`] and [`Measured`]. The probe is the one kind whose keys (`request`,
/// `expect`, `repeat`, `attempts`) stand beside `name`: it is written here once, not in the
/// table.
macro_rules! check_kinds {
    ($( $(#[doc = $doc:literal])* $key:literal $field:ident => $Kind:ident($Spec:ty, $Stats:ty); )*) => {
        $( pub mod $field; )*

        /// The kinds of check, each judged by its module under `harness/src/judge/`.
        #[derive(Debug, Clone, PartialEq)]
        pub enum CheckKind {
            /// One request (or `repeat` of them), each answer judged against `expect`.
            Probe(probe::ProbeCheck),
            $( $(#[doc = $doc])* $Kind($Spec), )*
        }

        impl CheckKind {
            /// The key that names the kind in a file (`probe` for request + expect).
            pub fn name(&self) -> &'static str {
                match self {
                    CheckKind::Probe(_) => "probe",
                    $( CheckKind::$Kind(_) => $key, )*
                }
            }

            /// Observes what the kind's judge needs, through the runner's context `cx`, and
            /// judges it.
            pub(crate) async fn observe<C>(&self, cx: &mut C) -> Result<Verdict, NoVerdict>
            where
                probe::ProbeCheck: Observe<C>,
                $( $Spec: Observe<C>, )*
            {
                match self {
                    CheckKind::Probe(s) => s.observe(cx).await,
                    $( CheckKind::$Kind(s) => s.observe(cx).await, )*
                }
            }

            /// The kind's spec.
            pub(crate) fn spec(&self) -> &dyn CheckSpec {
                match self {
                    CheckKind::Probe(p) => p,
                    $( CheckKind::$Kind(s) => s, )*
                }
            }
        }

        /// A check as written: `name` and the keys of one kind.
        #[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
        #[serde(deny_unknown_fields, rename_all = "camelCase")]
        pub(crate) struct RawCheck {
            /// What the check proves (unique among its checks).
            pub(crate) name: String,
            /// A probe's request (with `expect`).
            pub(crate) request: Option<RequestSpec>,
            /// A probe's expectation (with `request`).
            pub(crate) expect: Option<Expect>,
            /// How many times a probe is sent; every answer must pass (default 1).
            #[schemars(range(min = spec::MIN_COUNT))]
            pub(crate) repeat: Option<u32>,
            /// A probe's attempts: how many requests each named upstream must receive for each
            /// request sent (its request journal; host backend only).
            pub(crate) attempts: Option<BTreeMap<String, u32>>,
            $( $(#[doc = $doc])* #[serde(rename = $key)] $field: Option<$Spec>, )*
        }

        impl RawCheck {
            /// The judge kinds given (a valid check has at most one), taken out of `self`.
            pub(crate) fn judges(&mut self) -> Vec<CheckKind> {
                let mut kinds = Vec::new();
                $( kinds.extend(self.$field.take().map(CheckKind::$Kind)); )*
                kinds
            }
        }

        /// The judge keys of a check; with the probe (`request` + `expect`) exactly one kind is
        /// given.
        pub(crate) const JUDGE_KEYS: &[&str] = &[$( $key ),*];

        /// What a check measured, by kind (in the event stream and the JSON report).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "kind", rename_all = "camelCase")]
        pub enum Measurements {
            /// A probe: how many answers passed of how many sent.
            Probe {
                /// Requests sent.
                sent: u32,
                /// Answers that met the expectation.
                passed: u32,
            },
            $( $(#[doc = $doc])* $Kind($Stats), )*
            /// Nothing was measured (the check was skipped or could not observe).
            None,
        }

        impl Measurements {
            /// What a judge kind measured (nothing for a probe, whose counts are summarised by
            /// [`Measurements::summary`], or when nothing was measured).
            pub fn measured(&self) -> Option<&dyn Measured> {
                match self {
                    Measurements::Probe { .. } | Measurements::None => None,
                    $( Measurements::$Kind(m) => Some(m), )*
                }
            }
        }
    };
}

check_kinds! {
    /// Counts per upstream against the configured shares (χ² test).
    "distribution" distribution => Distribution(distribution::DistributionSpec, distribution::Stats);
    /// Round robin's exact weighted cycle, up to rotation.
    "roundRobin" round_robin => RoundRobin(round_robin::CycleSpec, round_robin::Stats);
    /// Each client address reaches its hash ring successor.
    "hash" hash => Hash(hash::HashSpec, hash::Stats);
    /// A slow upstream gets at most a share of concurrent traffic.
    "steer" steer => Steer(steer::SteerSpec, steer::Stats);
    /// Sync latency over repeated changes.
    "latency" latency => Latency(latency::LatencySpec, latency::Stats);
    /// Requests sent at once, answers counted per status.
    "burst" burst => Burst(burst::BurstSpec, burst::Stats);
    /// A stable route under load while other routes change.
    "churn" churn => Churn(churn::ChurnSpec, churn::Stats);
    /// The admin's sync status (`GET /gantry/sync-status`) shows a gateway in a state,
    /// polled until it does.
    "syncStatus" sync_status => SyncStatus(sync_status::SyncStatusSpec, sync_status::Stats);
    /// The gateway holds a selector with exactly these upstreams and weights
    /// (`/actuator/selectorData`), read until it does.
    "synced" synced => Synced(synced::SyncedSpec, synced::Stats);
}

impl CheckKind {
    /// The request the check sends (the latency check's probe).
    pub fn request(&self) -> &RequestSpec {
        self.spec().request()
    }

    /// The expectation every answer must meet, for kinds that have one.
    pub fn expect(&self) -> Option<&Expect> {
        self.spec().expect()
    }
}

impl Measurements {
    /// A one-line summary (empty when nothing was measured).
    pub fn summary(&self) -> String {
        match self {
            Measurements::Probe { sent, passed } => format!("{passed}/{sent} answers passed"),
            _ => self.measured().map_or_else(String::new, Measured::summary),
        }
    }
}

/// A verdict over observations.
pub(crate) trait Judge {
    /// What the judge looks at.
    type Observation;

    /// Passes, or lists every way the observation is wrong; measures either way.
    fn judge(&self, observation: &Self::Observation) -> Verdict;
}

/// A judge's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Verdict {
    /// Every way the observation differs from the expectation (empty: passed).
    pub failures: Vec<String>,
    /// What was measured.
    pub measurements: Measurements,
}

impl Verdict {
    /// Whether nothing failed.
    pub(crate) fn passed(&self) -> bool {
        self.failures.is_empty()
    }
}

/// Answers counted by the upstream that gave them; answers no upstream gave are counted by a
/// short description (`HTTP 503 code -119`), so a judge can name them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Counts {
    /// Requests answered by each upstream.
    pub upstreams: BTreeMap<String, u64>,
    /// Answers without an upstream, by description.
    pub errors: BTreeMap<String, u64>,
}

impl Counts {
    /// Counts one answer.
    pub(crate) fn add(&mut self, answer: &Result<ProbeResponse, String>) {
        let key = match answer {
            Ok(resp) => match resp.header(UPSTREAM_HEADER) {
                Some(up) => {
                    *self.upstreams.entry(up.to_owned()).or_default() += 1;
                    return;
                }
                None => describe_error(resp),
            },
            Err(e) => format!("request failed: {e}"),
        };
        *self.errors.entry(key).or_default() += 1;
    }

    /// Every answer counted.
    pub(crate) fn total(&self) -> u64 {
        self.upstreams.values().sum::<u64>() + self.errors.values().sum::<u64>()
    }

    /// A failure naming the answers no upstream gave, if any.
    pub(crate) fn error_failure(&self) -> Option<String> {
        (!self.errors.is_empty()).then(|| {
            let list: Vec<String> = self
                .errors
                .iter()
                .map(|(what, n)| format!("{n} × {what}"))
                .collect();
            format!("answers without an upstream: {}", list.join(", "))
        })
    }
}

/// `HTTP 503 code -119` for a gateway error, else `HTTP <status>`.
fn describe_error(resp: &ProbeResponse) -> String {
    match serde_json::from_str::<model::GatewayError>(&resp.body) {
        Ok(e) => format!("HTTP {} code {}", resp.status, e.code),
        Err(_) => format!("HTTP {}", resp.status),
    }
}

/// The upstream that answered, or a short description of the answer.
pub(crate) fn label(answer: &Result<ProbeResponse, String>) -> String {
    match answer {
        Ok(r) => r
            .header(UPSTREAM_HEADER)
            .map_or_else(|| format!("HTTP {}", r.status), str::to_owned),
        Err(e) => format!("error ({e})"),
    }
}

/// `n / total` (0 when nothing was counted).
pub(crate) fn share(n: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        n as f64 / total as f64
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    /// An answer from upstream `name`.
    pub(crate) fn from(name: &str) -> Result<ProbeResponse, String> {
        Ok(ProbeResponse {
            status: 200,
            headers: vec![(UPSTREAM_HEADER.to_owned(), name.to_owned())],
            body: "{}".to_owned(),
        })
    }

    /// Counts with `n` answers from each upstream.
    pub(crate) fn counts(by: &[(&str, u64)]) -> Counts {
        Counts {
            upstreams: by.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
            errors: BTreeMap::new(),
        }
    }

    #[test]
    fn counts_split_upstreams_from_errors() {
        let mut c = Counts::default();
        c.add(&from("alpha"));
        c.add(&from("alpha"));
        c.add(&Ok(ProbeResponse {
            status: 503,
            headers: vec![],
            body: r#"{"code":-119,"message":"no healthy upstream"}"#.to_owned(),
        }));
        c.add(&Err("connection refused".to_owned()));
        assert_eq!(c.upstreams["alpha"], 2);
        assert_eq!(c.total(), 4);
        assert_eq!(
            c.error_failure().unwrap(),
            "answers without an upstream: 1 × HTTP 503 code -119, 1 × request failed: connection refused"
        );
    }
}
