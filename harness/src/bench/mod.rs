//! `gantry bench proxy|sync|fanout`: performance benchmarks as commands (never as timed tests).
//!
//! Each bench starts what it measures on the host backend (the release binaries next to a
//! release `gantry`, built first like `gantry run` does, see [`crate::prepare`]), drives it
//! from this process on loopback only, bounds every loop in count and time, prints a table
//! and writes `--report-json FILE`:
//!
//! - [`proxy`]: an in-process upstream reached directly, through nginx (when the Debian
//!   `nginx` binary is installed) and through the gateway holding 1, 100 and 10,000 divide
//!   selectors; closed-loop throughput and open-loop, coordinated-omission-corrected latency
//!   from one load generator ([`load`]), interleaved rounds, medians; an upstream answering
//!   in one write and one writing head and body separately; upstream connection reuse.
//! - [`sync`]: per sync mode, admin 2xx → gateway applied → first probe pass over N selector
//!   toggles (the `latency` judge's measurement, `runner::timed_toggle`), and the burst
//!   figure: creates from concurrent writers over held config, last 2xx → digests equal.
//! - [`fanout`]: thousands of simulated websocket or long-poll subscribers on one admin; time
//!   until all hold a change, the admin's CPU time and RSS.
//!
//! Every report starts with the same header ([`Header`]): gantry version, bench, build profile
//! of the harness (and so of the binaries it runs) and the machine.

pub(crate) mod baseline;
pub(crate) mod fanout;
pub(crate) mod load;
pub(crate) mod nginx;
pub(crate) mod procstat;
pub(crate) mod proxy;
pub(crate) mod sync;
pub(crate) mod upstream;

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::backend::Backend;
use crate::{BackendKind, RunOptions};

pub(crate) use fanout::FanoutOptions;
pub(crate) use proxy::ProxyOptions;
pub(crate) use sync::SyncOptions;

pub(crate) use crate::client::admin::{ADMIN_PASSWORD, ADMIN_USER};

/// What every bench report starts with.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Header {
    /// The harness version.
    pub gantry_version: &'static str,
    /// `proxy`, `sync` or `fanout`.
    pub bench: &'static str,
    /// `release` or `debug`: the harness's profile, and so the binaries' (a debug harness runs
    /// debug binaries; their numbers are not representative).
    pub profile: &'static str,
    /// Where it ran.
    pub machine: Machine,
    /// Wall-clock seconds the bench took.
    pub took_s: f64,
}

impl Header {
    /// The header of bench `bench`, which took `took`.
    pub(crate) fn new(bench: &'static str, took: Duration) -> Self {
        Self {
            gantry_version: env!("CARGO_PKG_VERSION"),
            bench,
            profile: profile(),
            machine: Machine::detect(),
            took_s: took.as_secs_f64(),
        }
    }
}

/// `release` or `debug`.
pub(crate) fn profile() -> &'static str {
    if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    }
}

/// The machine a bench ran on.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Machine {
    /// CPUs this process may use.
    pub cpus: usize,
    /// `model name` of the first CPU in /proc/cpuinfo.
    pub cpu_model: Option<String>,
    /// Total memory, MiB.
    pub memory_mib: Option<u64>,
    /// Kernel release.
    pub kernel: Option<String>,
}

impl Machine {
    /// Reads /proc.
    pub(crate) fn detect() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        Self {
            cpus: std::thread::available_parallelism().map_or(1, usize::from),
            cpu_model: read("/proc/cpuinfo").and_then(|t| {
                t.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            }),
            memory_mib: read("/proc/meminfo")
                .and_then(|t| procstat::status_kib(&t, "MemTotal"))
                .map(|kib| kib / 1024),
            kernel: read("/proc/sys/kernel/osrelease").map(|t| t.trim().to_owned()),
        }
    }

    /// One line for the terminal.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{} CPUs ({}), {} MiB, Linux {}",
            self.cpus,
            self.cpu_model.as_deref().unwrap_or("unknown CPU"),
            self.memory_mib.unwrap_or(0),
            self.kernel.as_deref().unwrap_or("?")
        )
    }
}

/// Builds (when `opts.build`) and locates the binaries like `gantry run`, on the host backend.
pub(crate) async fn prepare(opts: &RunOptions) -> anyhow::Result<Backend> {
    anyhow::ensure!(
        opts.backend == BackendKind::Host,
        "the benches run on the host backend only"
    );
    if cfg!(debug_assertions) {
        eprintln!(
            "note: this is a debug build of gantry, so it runs debug binaries; \
             use `cargo run --release -p harness -- bench ...` for real numbers"
        );
    }
    let prep = opts.clone();
    Ok(tokio::task::spawn_blocking(move || crate::prepare(&prep)).await??)
}

/// Writes `report` as pretty JSON to `path`.
pub(crate) fn write_json(path: &Path, report: &impl Serialize) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(report)?;
    std::fs::write(path, text + "\n")
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))
}

/// The median of `values` (the mean of the middle two for an even count); `None` if empty.
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    })
}

/// A logged-in raw admin client: what the benches send in bulk (creates without the extra
/// look-ups [`crate::client::AdminClient`] makes, long-poll requests), with the token at hand.
#[derive(Debug, Clone)]
pub(crate) struct RawAdmin {
    base: String,
    token: String,
    http: reqwest::Client,
}

impl RawAdmin {
    /// Logs in with the built-in credentials.
    pub(crate) async fn login(base: &str) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(64)
            .build()?;
        let body = model::LoginRequest {
            user_name: ADMIN_USER.to_owned(),
            password: ADMIN_PASSWORD.to_owned(),
        };
        let resp = http
            .post(format!("{base}/platform/login"))
            .json(&body)
            .send()
            .await?;
        let status = resp.status();
        let text = resp.text().await?;
        anyhow::ensure!(status == 200, "login: HTTP {status}: {text}");
        let login: model::AdminResult<model::LoginResponse> = serde_json::from_str(&text)?;
        let token = login
            .data
            .ok_or_else(|| anyhow::anyhow!("login: no token in {text}"))?
            .token;
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            token,
            http,
        })
    }

    /// The access token.
    pub(crate) fn token(&self) -> &str {
        &self.token
    }

    /// `POST path` with a JSON body; the envelope's `data` on HTTP 200 and code 200.
    pub(crate) async fn post(
        &self,
        path: &str,
        body: &impl Serialize,
    ) -> anyhow::Result<serde_json::Value> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .header("X-Access-Token", &self.token)
            .json(body)
            .send()
            .await?;
        let status = resp.status();
        let text = resp.text().await?;
        anyhow::ensure!(status == 200, "POST {path}: HTTP {status}: {text}");
        let env: model::AdminResult<serde_json::Value> = serde_json::from_str(&text)?;
        anyhow::ensure!(
            env.code == model::admin_code::SUCCESS,
            "POST {path}: code {}: {text}",
            env.code
        );
        Ok(env.data.unwrap_or(serde_json::Value::Null))
    }

    /// Creates a selector; its id.
    pub(crate) async fn create_selector(&self, dto: &model::SelectorDto) -> anyhow::Result<String> {
        match self.post("/selector", dto).await? {
            serde_json::Value::String(id) => Ok(id),
            other => anyhow::bail!("POST /selector answered data {other}"),
        }
    }

    /// Creates a rule (the admin answers a count, not the id).
    pub(crate) async fn create_rule(&self, dto: &model::RuleDto) -> anyhow::Result<()> {
        self.post("/rule", dto).await.map(drop)
    }
}

/// A divide selector and its rule matching `uri startsWith prefix`, forwarding to
/// `upstream` (`host:port`), built by the scenario lowering ([`crate::lower`]).
pub(crate) fn divide_selector(
    name: &str,
    prefix: &str,
    upstream: &str,
    plugin_id: &str,
) -> (model::SelectorDto, model::RuleDto) {
    let spec: crate::scenario::ast::SelectorSpec = serde_json::from_value(serde_json::json!({
        "name": name,
        "plugin": "divide",
        "conditions": [{ "paramType": "uri", "operator": "startsWith", "paramValue": prefix }],
        "upstreams": [{ "upstream": "u" }],
        "rules": [{
            "name": format!("{name}-rule"),
            "conditions": [{ "paramType": "uri", "operator": "startsWith", "paramValue": prefix }],
        }],
    }))
    .expect("a valid selector spec");
    let addrs = crate::lower::Addresses::from([("u".to_owned(), upstream.to_owned())]);
    let selector = crate::lower::selector_dto(&spec, plugin_id, &addrs);
    let rule = crate::lower::rule_dto(&spec.rules[0], "");
    (selector, rule)
}

/// The gateway caught up: its digest report, and how many digest requests failed meanwhile.
#[derive(Debug, Clone)]
pub(crate) struct Settled {
    /// The gateway's report once equal.
    pub(crate) applied: model::AppliedDigest,
    /// `/actuator/digest` requests that failed (e.g. timed out) on the way.
    pub(crate) failed_polls: u32,
}

/// Waits until the gateway at `gateway` serves the admin's config (equal digests), polling
/// every 5 ms up to `timeout`. A failed digest request (a gateway too busy to answer within
/// the client's 10 s) is counted and polled again.
pub(crate) async fn await_digests(
    admin: &crate::client::AdminClient,
    gateway: &crate::client::GatewayClient,
    timeout: Duration,
) -> anyhow::Result<Settled> {
    let want = admin.digest().await?;
    let deadline = tokio::time::Instant::now() + timeout;
    let mut failed_polls = 0;
    loop {
        let last = match gateway.digest().await {
            Ok(got) if got.report.digest == want.digest => {
                return Ok(Settled {
                    applied: got,
                    failed_polls,
                });
            }
            Ok(got) => format!(
                "gateway {} selectors / {} rules, admin {} / {}",
                got.report.selectors, got.report.rules, want.selectors, want.rules
            ),
            Err(e) => {
                failed_polls += 1;
                e.to_string()
            }
        };
        if tokio::time::Instant::now() >= deadline {
            anyhow::bail!(
                "the gateway's digest did not reach the admin's within {timeout:?} \
                 ({failed_polls} digest requests failed; last: {last})"
            );
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Wall-clock µs since the Unix epoch (the clock of the gateway's `appliedAtUs`).
pub(crate) fn now_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

/// `ms` with three decimals, for tables.
pub(crate) fn ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Renders rows as an aligned text table (first row is the header).
pub(crate) fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, s)| {
                let pad = widths[c] - s.chars().count();
                if c == 0 {
                    format!("{s}{}", " ".repeat(pad))
                } else {
                    format!("{}{s}", " ".repeat(pad))
                }
            })
            .collect();
        out += line.join("  ").trim_end();
        out.push('\n');
        if i == 0 {
            let total: usize = widths.iter().sum::<usize>() + 2 * cols.saturating_sub(1);
            out += &"-".repeat(total);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, 1.0]), Some(1.0));
    }

    #[test]
    fn tables_align_and_underline_the_header() {
        let t = table(&[
            vec!["target".into(), "rps".into()],
            vec!["direct".into(), "12345".into()],
            vec!["nginx".into(), "9".into()],
        ]);
        assert_eq!(
            t,
            "target    rps\n-------------\ndirect  12345\nnginx       9\n"
        );
    }

    #[test]
    fn a_bench_selector_is_a_divide_selector_with_its_rule() {
        let (s, r) = divide_selector("bench", "/bench/", "127.0.0.1:9", "5");
        assert_eq!(s.plugin_id.as_deref(), Some("5"));
        assert!(s.handle.unwrap().contains("127.0.0.1:9"));
        let c = &s.selector_conditions.unwrap()[0];
        assert_eq!(
            (c.operator.as_deref(), c.param_value.as_deref()),
            (Some("startsWith"), Some("/bench/"))
        );
        assert_eq!(r.name.as_deref(), Some("bench-rule"));
    }
}
