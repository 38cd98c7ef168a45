//! The hash judge: ShenYu's consistent hash on the client address (`HashLoadBalancer`,
//! semantics §7), modelled here from the description — 5 ring points per upstream at
//! `md5_32("SHENYU-" + url + "-HASH-" + i)`, the key `md5_32(ip)`, the first point `≥` the key
//! or else the smallest, `md5_32` the first four MD5 bytes little-endian; on an exact point
//! collision the later upstream wins. Every client must always reach the upstream its address
//! gives; after the upstreams change, a client may move only if its ring successor changed.

use std::collections::BTreeMap;
use std::net::IpAddr;

use md5::{Digest, Md5};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::backend::BackendKind;
use super::spec::{CheckSpec, Measured, NoVerdict, Observe, ValidateCx};
use super::{Judge, Measurements, Verdict};
use crate::scenario::ast::request::RequestSpec;
use crate::scenario::ast::three;

fn sixteen() -> u32 {
    16
}

/// `hash:` requests from `clients` distinct client addresses (127.x.y.z, drawn from the
/// case's seed), each sent `repeat` times: every client must always reach the upstream that
/// ShenYu's hash ring over the selector's upstreams gives its address. Host backend only.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HashSpec {
    /// The request.
    pub request: RequestSpec,
    /// The setup selector whose upstreams make the ring.
    pub selector: String,
    /// Distinct client addresses (default 16).
    #[serde(default = "sixteen")]
    #[schemars(range(min = super::spec::MIN_COUNT, max = MAX_HASH_CLIENTS))]
    pub clients: u32,
    /// Requests per client (default 3).
    #[serde(default = "three")]
    #[schemars(range(min = super::spec::MIN_COUNT))]
    pub repeat: u32,
}

/// The ring over named upstreams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ring {
    points: BTreeMap<u32, String>,
}

impl Ring {
    /// The ring over `(name, upstreamUrl)` pairs, in the selector's order, enabled ones only
    /// (gantry never picks a disabled upstream).
    pub(crate) fn new<'a>(upstreams: impl IntoIterator<Item = (&'a str, &'a str)>) -> Ring {
        let mut points = BTreeMap::new();
        for (name, url) in upstreams {
            for i in 0..5 {
                points.insert(md5_32(&format!("SHENYU-{url}-HASH-{i}")), name.to_owned());
            }
        }
        Ring { points }
    }

    /// The upstream for a client address (Java's rendering: dotted IPv4).
    pub(crate) fn pick(&self, ip: IpAddr) -> Option<&str> {
        let key = md5_32(&ip.to_string());
        self.points
            .range(key..)
            .next()
            .or_else(|| self.points.iter().next())
            .map(|(_, name)| name.as_str())
    }
}

/// The first four MD5 bytes of `s`, little-endian.
fn md5_32(s: &str) -> u32 {
    let d = Md5::digest(s.as_bytes());
    u32::from_le_bytes([d[0], d[1], d[2], d[3]])
}

/// The expected ring, and the upstream each client reached at the previous hash check on the
/// same selector (to judge moves after a change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HashJudge {
    /// The ring over the selector's enabled upstreams.
    pub ring: Ring,
    /// Where each client went last time, if the scenario judged this selector before.
    pub previous: Option<BTreeMap<IpAddr, String>>,
}

/// What the hash check measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Stats {
    /// Client addresses used.
    pub clients: usize,
    /// Clients per upstream, as observed.
    pub spread: BTreeMap<String, usize>,
    /// Clients whose answers were not all from the ring's upstream.
    pub mismatches: usize,
    /// Clients that moved since the previous check on this selector.
    pub moved: Option<usize>,
    /// Clients whose ring successor changed since then (the ones allowed to move).
    pub expected_moves: Option<usize>,
}

impl Judge for HashJudge {
    /// Per client address, the upstream (or error description) of each answer.
    type Observation = BTreeMap<IpAddr, Vec<String>>;

    fn judge(&self, observed: &Self::Observation) -> Verdict {
        let mut failures = Vec::new();
        let mut spread: BTreeMap<String, usize> = BTreeMap::new();
        let mut mismatches = 0;
        let (mut moved, mut expected_moves) = (0, 0);
        for (ip, answers) in observed {
            let want = self.ring.pick(*ip).unwrap_or("nothing");
            if let Some(first) = answers.first() {
                *spread.entry(first.clone()).or_default() += 1;
            }
            if answers.iter().any(|a| a != want) {
                mismatches += 1;
                failures.push(format!(
                    "client {ip} reached [{}], its ring successor is {want}",
                    answers.join(" ")
                ));
            }
            if let Some(before) = self.previous.as_ref().and_then(|p| p.get(ip)) {
                let now = answers.first().map_or("nothing", String::as_str);
                expected_moves += usize::from(before != want);
                if before != now {
                    moved += 1;
                    if before == want {
                        failures.push(format!(
                            "client {ip} moved from {before} to {now} although its ring \
                             successor did not change"
                        ));
                    }
                }
            }
        }
        let compared = self.previous.is_some();
        Verdict {
            failures,
            measurements: Measurements::Hash(Stats {
                clients: observed.len(),
                spread,
                mismatches,
                moved: compared.then_some(moved),
                expected_moves: compared.then_some(expected_moves),
            }),
        }
    }
}

/// The most client addresses a hash check may ask for.
const MAX_HASH_CLIENTS: u32 = 1024;

/// Why the hash judge does not run on `backend`, if it does not: it sends from distinct
/// loopback addresses (127.0.0.x), which a gateway in a container sees as one address, and an
/// external one may (behind a container's published port or a proxy: the compose pair does).
pub(crate) fn no_client_addresses(backend: BackendKind) -> Option<String> {
    match backend {
        BackendKind::Host => None,
        BackendKind::Docker | BackendKind::Swarm => Some(format!(
            "the hash judge needs distinct client addresses, but on the {backend} backend the \
             gateway sees the container network's address for every client"
        )),
        BackendKind::External => Some(
            "the hash judge needs distinct client addresses, which an external gateway behind \
             a container's published port or a proxy does not see (it sees one address for \
             every client); it is not run against an external target"
                .to_owned(),
        ),
    }
}

impl CheckSpec for HashSpec {
    fn skip_on(&self, backend: BackendKind) -> Option<String> {
        no_client_addresses(backend)
    }

    fn request(&self) -> &RequestSpec {
        &self.request
    }

    fn validate(&self, cx: &mut dyn ValidateCx, at: &str) {
        cx.selector(&self.selector, at);
        cx.min_count(self.clients, at, "clients");
        cx.min_count(self.repeat, at, "repeat");
        if self.clients > MAX_HASH_CLIENTS {
            cx.problem(
                format!("{at}.clients"),
                format!("at most {MAX_HASH_CLIENTS}, got {}", self.clients),
            );
        }
    }
}

impl Measured for Stats {
    fn summary(&self) -> String {
        format!(
            "{} clients, {} mismatches{}",
            self.clients,
            self.mismatches,
            self.moved
                .zip(self.expected_moves)
                .map_or_else(String::new, |(m, e)| format!(", moved {m} (expected {e})"))
        )
    }
}

/// What the hash check asks of the runner, which alone knows the upstreams' addresses, sends
/// from a client address and remembers where each client went.
pub(crate) trait HashCx {
    /// The judge for the selector's ring as made (with where each client went last time), and
    /// the upstreams each client address reached (the spec's `clients`, each `repeat` times).
    async fn clients(
        &mut self,
        spec: &HashSpec,
    ) -> Result<(HashJudge, BTreeMap<IpAddr, Vec<String>>), NoVerdict>;
}

impl<C: HashCx> Observe<C> for HashSpec {
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict> {
        let (judge, observed) = cx.clients(self).await?;
        Ok(judge.judge(&observed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(names: &[&str]) -> Ring {
        let urls: Vec<(String, String)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| ((*n).to_owned(), format!("127.0.0.1:{}", 40000 + i)))
            .collect();
        Ring::new(urls.iter().map(|(n, u)| (n.as_str(), u.as_str())))
    }

    fn clients(n: u8) -> Vec<IpAddr> {
        (1..=n).map(|i| IpAddr::from([127, 0, 3, i])).collect()
    }

    #[test]
    fn md5_32_is_little_endian() {
        // md5("") = d41d8cd98f00b204e9800998ecf8427e
        assert_eq!(md5_32(""), 0xd98c_1dd4);
    }

    #[test]
    fn the_ring_is_stable_and_an_added_upstream_only_takes_keys() {
        let two = ring(&["a", "b"]);
        let three = ring(&["a", "b", "c"]);
        for ip in clients(50) {
            let before = two.pick(ip).unwrap();
            let after = three.pick(ip).unwrap();
            assert!(after == before || after == "c", "{ip}: {before} → {after}");
        }
    }

    fn observe(r: &Ring, ips: &[IpAddr]) -> BTreeMap<IpAddr, Vec<String>> {
        ips.iter()
            .map(|ip| (*ip, vec![r.pick(*ip).unwrap().to_owned(); 3]))
            .collect()
    }

    #[test]
    fn answers_on_the_ring_pass_and_a_moved_key_fails() {
        let r = ring(&["a", "b"]);
        let ips = clients(20);
        let mut obs = observe(&r, &ips);
        let judge = HashJudge {
            ring: r.clone(),
            previous: None,
        };
        assert!(judge.judge(&obs).passed());
        // One client sent elsewhere once.
        let ip = ips[4];
        let want = r.pick(ip).unwrap().to_owned();
        let other = if want == "a" { "b" } else { "a" };
        obs.get_mut(&ip).unwrap()[1] = other.to_owned();
        let v = judge.judge(&obs);
        assert_eq!(v.failures.len(), 1);
        assert!(
            v.failures[0].starts_with(&format!("client {ip} reached [")),
            "{}",
            v.failures[0]
        );
    }

    #[test]
    fn after_a_change_only_keys_whose_successor_changed_may_move() {
        let (two, three) = (ring(&["a", "b"]), ring(&["a", "b", "c"]));
        let ips = clients(40);
        let before: BTreeMap<IpAddr, String> = ips
            .iter()
            .map(|ip| (*ip, two.pick(*ip).unwrap().to_owned()))
            .collect();
        let judge = HashJudge {
            ring: three.clone(),
            previous: Some(before.clone()),
        };
        let v = judge.judge(&observe(&three, &ips));
        assert!(v.passed(), "{:?}", v.failures);
        let Measurements::Hash(s) = v.measurements else {
            panic!()
        };
        assert_eq!(s.moved, s.expected_moves);
        assert!(s.moved.unwrap() > 0);
        // A gateway that rehashed everything (a key moved between old upstreams) fails.
        let stay = ips
            .iter()
            .find(|ip| three.pick(**ip) == two.pick(**ip))
            .unwrap();
        let mut obs = observe(&three, &ips);
        let now = if before[stay] == "a" { "b" } else { "a" };
        obs.insert(*stay, vec![now.to_owned(); 3]);
        let v = judge.judge(&obs);
        assert!(
            v.failures
                .iter()
                .any(|f| f.contains("although its ring successor did not change")),
            "{:?}",
            v.failures
        );
    }
}
