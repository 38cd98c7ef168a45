//! Probing every route of a history on every gateway after the last heal, classifying each,
//! and checking the gateways' digests agree with the admin's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use super::super::checker::{self, Answer, Class, Sample, Tally, classify};
use super::super::history::History;
use super::super::model::{Expect, Model};
use super::live::{CaseReport, Live, POLL};
use super::paths::{registered_path, route_path};
use crate::client::GatewayClient;
use crate::scenario::ast::RequestSpec;
use crate::upstream::UPSTREAM_HEADER;
use crate::wait::{WaitPolicy, await_convergence};

/// An element is stable once it has answered right for this long.
const SETTLE: Duration = Duration::from_millis(500);

impl Live {
    /// Probes every route of the history on every gateway until each is stable or `bound`
    /// after `healed` has passed, classifies them, and checks the digests agree.
    pub(super) async fn judge(
        &self,
        case: u64,
        history: &History,
        model: &Model,
        healed: Instant,
        bound: Duration,
    ) -> CaseReport {
        let probed = history
            .keys()
            .into_iter()
            .map(|k| (Probed::Route(k), model.expect(k)))
            .chain(
                history
                    .registered()
                    .into_iter()
                    .map(|k| (Probed::App(k), model.expect_registered(k))),
            );
        let elements: Vec<(Probed, usize, Expect)> = probed
            .flat_map(|(p, e)| (0..self.gateways.len()).map(move |g| (p, g, e)))
            .collect();
        let mut samples: Vec<Vec<Sample>> = vec![Vec::new(); elements.len()];
        // The admin's config is final once the history is applied.
        let admin = self.admin.digest().await.ok().map(|d| d.digest);
        let mut caught_up: Vec<Option<Duration>> = vec![None; self.gateways.len()];
        loop {
            self.note_caught_up(admin.as_deref(), healed, &mut caught_up)
                .await;
            let at = healed.elapsed();
            let answers = join_all(
                elements
                    .iter()
                    .map(|&(p, g, _)| self.probe(&self.gateways[g], p.path(case))),
            )
            .await;
            for (s, answer) in samples.iter_mut().zip(answers) {
                s.push(Sample { at, answer });
            }
            let settled = elements
                .iter()
                .zip(&samples)
                .all(|(&(_, _, e), s)| right_for(e, s) >= SETTLE);
            if settled || healed.elapsed() >= bound {
                break;
            }
            tokio::time::sleep(POLL).await;
        }
        let classes: Vec<(usize, Class)> = elements
            .iter()
            .zip(&samples)
            .map(|(&(_, g, e), s)| (g, classify(e, s, caught_up[g].unwrap_or(Duration::MAX))))
            .collect();
        let mut problems = String::new();
        for ((&(k, g, e), s), (_, class)) in elements.iter().zip(&samples).zip(&classes) {
            if !matches!(class, Class::Ok { .. }) {
                let _ = write!(
                    problems,
                    "\n  {k} on {}: {class:?} (the model says {e}; {} samples; {})",
                    self.topo.gateways()[g].name(),
                    s.len(),
                    checker::changes(s)
                );
            }
        }
        if let Err(e) = self
            .digests_agree(bound.saturating_sub(healed.elapsed()))
            .await
        {
            let _ = write!(problems, "\n  {e}");
        }
        let verdict = if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "after the history, within {:.1} s of the last heal:{problems}",
                bound.as_secs_f64()
            ))
        };
        CaseReport { classes, verdict }
    }

    /// Updates, per gateway, since when (from `healed`) its digest has been equal to the
    /// admin's (`admin`) in every round: `None` as soon as a round sees it differ (a gateway
    /// replaying the history can pass through a state equal to the final one, then leave it).
    async fn note_caught_up(
        &self,
        admin: Option<&str>,
        healed: Instant,
        equal_since: &mut [Option<Duration>],
    ) {
        let Some(admin) = admin else { return };
        let at = healed.elapsed();
        for (g, client) in self.gateways.iter().enumerate() {
            let equal = client
                .digest()
                .await
                .is_ok_and(|d| d.report.digest == admin);
            equal_since[g] = match (equal, equal_since[g]) {
                (true, since) => since.or(Some(at)),
                (false, _) => None,
            };
        }
    }

    async fn probe(&self, gateway: &GatewayClient, path: String) -> Answer {
        let req = RequestSpec {
            method: "GET".to_owned(),
            path,
            headers: BTreeMap::new(),
            query: BTreeMap::new(),
            body: None,
        };
        let resp = match gateway.send(&req).await {
            Ok(r) => r,
            Err(e) => return Answer::Other(e.to_string()),
        };
        Answer::from_response(resp.status, resp.header(UPSTREAM_HEADER), &resp.body)
    }

    /// Waits `within` (at least 100 ms) until every gateway's digest equals the admin's.
    async fn digests_agree(&self, within: Duration) -> Result<(), String> {
        let policy = WaitPolicy {
            consecutive: 1,
            interval: POLL,
            timeout: within.max(Duration::from_millis(100)),
        };
        await_convergence(policy, || self.digest_gap(None))
            .await
            .map(drop)
            .map_err(|t| format!("digest equality: {t}"))
    }
}

/// What one element of the checker probes (on every gateway).
#[derive(Debug, Clone, Copy)]
enum Probed {
    /// A route's path.
    Route(u8),
    /// A registered application's API path.
    App(u8),
}

impl Probed {
    fn path(self, case: u64) -> String {
        match self {
            Probed::Route(k) => route_path(case, k),
            Probed::App(k) => registered_path(case, k),
        }
    }
}

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Probed::Route(k) => write!(f, "route {k}"),
            Probed::App(k) => write!(f, "registered application {k}"),
        }
    }
}

/// How long the element has answered right up to its latest sample (zero if that is wrong).
fn right_for(expect: Expect, samples: &[Sample]) -> Duration {
    let Some(last) = samples.last() else {
        return Duration::ZERO;
    };
    let run_start = samples
        .iter()
        .rposition(|s| !s.answer.agrees(expect))
        .map_or(0, |i| i + 1);
    match samples.get(run_start) {
        Some(first) => last.at - first.at,
        None => Duration::ZERO,
    }
}

/// Adds the report's classes to `tally` and to their gateway's tally in `per_gateway`.
pub(crate) fn count(tally: &mut Tally, per_gateway: &mut [Tally], report: &CaseReport) {
    for &(g, c) in &report.classes {
        tally.add(c);
        if let Some(t) = per_gateway.get_mut(g) {
            t.add(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_counted_in_total_and_per_gateway() {
        let ok = Class::Ok {
            stable_after: Duration::ZERO,
        };
        let report = CaseReport {
            classes: vec![(0, ok), (1, Class::Stale), (1, ok), (2, Class::Lost)],
            verdict: Ok(()),
        };
        let mut total = Tally::default();
        let mut per_gateway = vec![Tally::default(); 2];
        count(&mut total, &mut per_gateway, &report);
        assert_eq!((total.ok, total.stale, total.lost), (2, 1, 1));
        assert_eq!((per_gateway[0].ok, per_gateway[0].stale), (1, 0));
        assert_eq!((per_gateway[1].ok, per_gateway[1].stale), (1, 1));
    }
}
