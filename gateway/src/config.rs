//! The gateway's configuration: what [`crate::serve`] takes besides its listener (the
//! `gantry-gateway` binary fills it from its flags), the sync timeouts, and the bugs it can
//! emulate for the harness's own tests.

use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use http::HeaderValue;
use model::{SyncMode, SyncStyle};

use crate::TrustedProxies;

/// What the gateway needs besides its listener. `Debug` hides the password and the sync
/// token.
#[derive(Clone)]
pub struct Config {
    /// How config arrives: [`SyncMode::Websocket`] or [`SyncMode::Http`] (long polling).
    pub sync: SyncMode,
    /// Whether a change is applied as the increment it is or taken as a signal to resync in
    /// full ([`SyncStyle::Full`]: the conformance matrix's incremental-off axis).
    pub sync_style: SyncStyle,
    /// Admin base URLs (`http://host:port`). Websocket: the first is used, the next ones
    /// after failures. HTTP long polling: every one is polled.
    pub admin_urls: Vec<String>,
    /// Admin user name for HTTP long polling (`POST /platform/login`).
    pub username: String,
    /// Admin password for HTTP long polling.
    pub password: String,
    /// Sent as `X-Shenyu-Sync-Token` on the websocket upgrade (an admin started with
    /// `--sync-token` refuses upgrades without it). HTTP long polling does not use it: the
    /// admin checks it on `/websocket` only.
    pub sync_token: Option<String>,
    /// ZooKeeper connect string (`host:port[,host:port]`), for [`SyncMode::Zookeeper`].
    pub zookeeper_url: Option<String>,
    /// etcd endpoints (`http://host:port[,...]`), for [`SyncMode::Etcd`].
    pub etcd_url: Option<String>,
    /// A known ShenYu gateway bug to behave like (none normally): lets a test prove that a
    /// scenario or judge catches it.
    pub emulate_bug: Option<EmulatedBug>,
    /// Answer like a ShenYu gateway (`--hide-extras`): no `/actuator/digest`, no `x-gantry-*`
    /// response headers (the gateway's and the upstream's), error bodies with HTTP 200. For
    /// proving that the harness judges a real ShenYu target correctly without gantry's extras.
    pub hide_extras: bool,
    /// Client connection limits: request head read time, keep-alive idle time.
    pub timeouts: netserve::Timeouts,
    /// How soon a silent sync connection is given up on.
    pub sync_timeouts: SyncTimeouts,
    /// The peers whose forwarding headers (`X-Forwarded-For` & co.) the rate limiter's
    /// `REMOTE_ADDRESS_KEY_RESOLVER` believes; none by default (it keys on the socket peer).
    pub trusted_proxies: TrustedProxies,
    /// Called with every config the gateway swaps in; none normally. `gantry sim` records
    /// them, to check every config a gateway held and not only its last.
    pub on_apply: Option<OnApply>,
}

/// A callback given every config a gateway swaps in ([`Config::on_apply`]), as a whole
/// [`model::ConfigSet`]; it runs on the sync path, under the gateway's config writer lock.
#[derive(Clone)]
pub struct OnApply(Arc<dyn Fn(&model::ConfigSet) + Send + Sync>);

impl OnApply {
    /// Wraps `f`.
    pub fn new(f: impl Fn(&model::ConfigSet) + Send + Sync + 'static) -> OnApply {
        OnApply(Arc::new(f))
    }

    /// Hands `config` to the callback.
    pub(crate) fn call(&self, config: &model::ConfigSet) {
        (self.0)(config);
    }
}

impl std::fmt::Debug for OnApply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OnApply(..)")
    }
}

/// How soon the sync subscriber notices a silent partition (a connection that stays open but
/// carries nothing), reports itself disconnected in `/actuator/health` and reconnects. Until
/// it resyncs, the gateway keeps serving the config it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncTimeouts {
    /// The longest a connected subscriber goes without hearing from its source:
    /// - websocket: a ping every third of it; no frame at all (pong, event) for this long
    ///   ends the session;
    /// - HTTP long polling: added to `long_poll_hold` for the read timeout;
    /// - ZooKeeper: the session timeout asked for (the client gives up on a connection that
    ///   answers nothing for 2/5 of the negotiated one; the server bounds it to 2–20 ticks);
    /// - etcd: an HTTP/2 keep-alive ping every half of it, acknowledged within the other half.
    pub silence: Duration,
    /// The admin's long-poll hold (ShenYu's 60 s): an answer that takes longer than
    /// `long_poll_hold + silence` to come is a silent admin.
    pub long_poll_hold: Duration,
}

impl SyncTimeouts {
    /// [`SyncTimeouts::silence`] by default.
    pub const DEFAULT_SILENCE: Duration = Duration::from_secs(10);
    /// [`SyncTimeouts::long_poll_hold`] by default.
    pub const DEFAULT_LONG_POLL_HOLD: Duration = Duration::from_secs(60);
}

impl Default for SyncTimeouts {
    fn default() -> Self {
        SyncTimeouts {
            silence: SyncTimeouts::DEFAULT_SILENCE,
            long_poll_hold: SyncTimeouts::DEFAULT_LONG_POLL_HOLD,
        }
    }
}

/// Known ShenYu gateway bugs, and small realistic bugs in a balancer or the rate limiter, the
/// gateway can reproduce on request (`--emulate-bug`), so that the harness's own tests can
/// show its checks fail on them. Never for real traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EmulatedBug {
    /// The gateway never forgets config: DELETE events are dropped (ShenYu's ZooKeeper
    /// gateway, #6611) and full syncs are merged into what it holds instead of replacing it
    /// (ShenYu #6731), so deleted routes keep serving.
    DropDeletes,
    /// Full syncs are merged into what the gateway holds instead of replacing it (ShenYu
    /// #6731, #6831), DELETE events applied: only what was deleted while the gateway missed
    /// the event (a reconnect, a restarted store session) survives, as a ghost.
    MergeFullSync,
    /// Once its sync session has been replaced (a reconnect, a new ZooKeeper session: a group
    /// taken in full a second time), the gateway applies that session's full sync and then
    /// silently drops every increment, counted as applied and still reporting itself
    /// connected, while gateways that kept their session move on (NGINX Gateway Fabric
    /// #5330: after its agent reconnected, a replica's later updates failed with "connection
    /// not found" and it kept proxying to a stale upstream address).
    StaleAfterResubscribe,
    /// The gateway's compiled matcher of a selector (ShenYu's match cache) is not
    /// invalidated when one of its rules is disabled or deleted and nothing else about it
    /// changes: the rule keeps matching until a restart or a full sync, while the gateway
    /// reports the new config (ShenYu #4378, #6797).
    StaleMatchCache,
    /// A rule increment whose selector the gateway does not hold yet is dropped instead of
    /// kept until its selector arrives: when a rule reaches the gateway before its selector
    /// (reordered delivery), the new route never gets its rule and answers -102 (Envoy
    /// #13910: a route applied before the cluster it names exists fails instead of waiting
    /// for it, make-before-break).
    DropOrphanRules,
    /// A full sync (websocket MYSELF/REFRESH, a long-poll group, a ZooKeeper/etcd full read)
    /// first swaps in its groups emptied and refills them only after a window (250 ms), so
    /// requests miss routes meanwhile (ShenYu #7034, #5580: the cache is cleared, then
    /// re-added item by item).
    ClearBeforeRefill,
    /// The etcd subscriber resumes its watch from the last revision it saw instead of
    /// reading everything again on a new session, and retries a watch the server cancels as
    /// compacted from that same revision: after a compaction it never catches up.
    ResumeCompactedWatch,
    /// Round robin cycles through the upstreams in list order, one pick each, as if every
    /// weight were 1 (smooth weighted round robin without the weights).
    RoundRobinIgnoresWeights,
    /// The hash balancer takes the ring point after the client's successor (an off-by-one in
    /// the ring search): a client lands on another upstream whenever that point is another's.
    HashRingOffByOne,
    /// leastActive reads every upstream's in-flight count as 0: weighted random over all of
    /// them, so a slow upstream keeps its share.
    LeastActiveIgnoresInFlight,
    /// The rate limiter's concurrent algorithm takes a slot per admitted request and never
    /// frees it: slots stay taken until `concurrentSlotTtl` expires them.
    LimiterForgetsReleases,
    /// The random balancer picks uniformly, ignoring the weights.
    RandomIgnoresWeights,
    /// The gateway stamps a change applied (`appliedAtUs` in `/actuator/digest`) when it
    /// arrives but swaps it in only 200 ms later: its own apply time looks prompt while
    /// requests still see the old config.
    LateApply,
    /// The sync path applies incremental events out of order: each is held until the next
    /// one arrives and applied after it (a planted bug for `gantry sim`: an older change then
    /// overwrites a newer one, and the last one waits for a successor that may not come).
    ReorderIncrements,
    /// A full sync's rule group is skipped (a planted bug for `gantry sim`, like a long-poll
    /// client that drops one changed group): after a reconnect or a restart the gateway keeps
    /// the rules it had, or none.
    SkipRuleFullSync,
    /// An incremental change recompiles a selector only when more than its handle changed
    /// (a planted bug for `gantry sim`'s routing checker): a route moved to another upstream
    /// keeps forwarding to the old one while the gateway reports the new config, until a full
    /// sync recompiles everything.
    HandleChangeIgnored,
    /// The websocket subscriber reads messages of at most 10240 bytes (ShenYu's shipped
    /// `messageMaxSize`, ShenYu #2891): a full sync larger than that breaks every session, so
    /// a restarted gateway never gets its config.
    WebsocketMessageCap,
    /// The sync subscriber has no keepalive (no websocket ping or silence bound, no etcd
    /// HTTP/2 keep-alive): a stream that dies silently is never noticed, and the changes
    /// made meanwhile never arrive (APISIX #13721, #13067).
    NoSyncKeepalive,
    /// The long-polling subscriber records the md5 and lastModifyTime of a group it
    /// rejected (unreadable data) as held, so the admin's next answer of that same group, the
    /// fix, looks like the version it has and is never fetched (Envoy #12592: a rejected
    /// update's version recorded as applied).
    RecordRejectedVersion,
    /// Every sync event recompiles the whole routing table from nothing (every selector, rule
    /// and upstream pool) instead of what the event changed: a change costs in proportion to
    /// the config held, so with thousands of routes a steady stream of changes outruns the
    /// gateway and it falls ever further behind the admin (APISIX #13069: 5,000 routes at
    /// 20–50 changes/s, the router rebuilt per change until throughput collapsed).
    RebuildPerChange,
    /// Every request routed leaves one file descriptor open and 256 KiB of memory allocated
    /// for good, as a handler that forgets a socket and a buffer on its way out: the
    /// gateway's open descriptors and resident memory grow with its traffic until it hits a
    /// limit (a planted bug for `gantry run --run-mode leak`, whose judge reads them from
    /// /proc, and for a docker memory limit, whose OOM kill the harness reports).
    LeakPerRequest,
}

impl Config {
    /// A config with ShenYu's default credentials (`admin` / `123456`).
    pub fn new(sync: SyncMode, admin_urls: Vec<String>) -> Config {
        Config {
            sync,
            sync_style: SyncStyle::Incremental,
            admin_urls,
            username: "admin".to_owned(),
            password: "123456".to_owned(),
            sync_token: None,
            zookeeper_url: None,
            etcd_url: None,
            emulate_bug: None,
            hide_extras: false,
            timeouts: netserve::Timeouts::default(),
            sync_timeouts: SyncTimeouts::default(),
            trusted_proxies: TrustedProxies::default(),
            on_apply: None,
        }
    }

    /// Whether the gateway can run with this config (a supported sync mode, an admin URL);
    /// the binary calls it before binding so a bad flag fails fast.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.sync_timeouts.silence.is_zero() {
            bail!("--sync-silence-ms must be positive");
        }
        let store_url = |url: &Option<String>, flag: &str| match url {
            Some(url) if !url.trim().is_empty() => Ok(()),
            _ => Err(anyhow::anyhow!("--sync {} needs {flag}", self.sync)),
        };
        match self.sync {
            SyncMode::Zookeeper => return store_url(&self.zookeeper_url, "--zookeeper-url"),
            SyncMode::Etcd => return store_url(&self.etcd_url, "--etcd-url"),
            SyncMode::Websocket | SyncMode::Http => {}
        }
        if self.admin_urls.iter().all(|u| u.trim().is_empty()) {
            bail!("at least one admin URL is needed");
        }
        if let Some(token) = &self.sync_token
            && HeaderValue::from_str(token).is_err()
        {
            bail!("--sync-token must be a valid header value (visible ASCII, no line breaks)");
        }
        Ok(())
    }
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("sync", &self.sync)
            .field("sync_style", &self.sync_style)
            .field("admin_urls", &self.admin_urls)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .field(
                "sync_token",
                &self.sync_token.as_ref().map(|_| "<redacted>"),
            )
            .field("zookeeper_url", &self.zookeeper_url)
            .field("etcd_url", &self.etcd_url)
            .field("emulate_bug", &self.emulate_bug)
            .field("hide_extras", &self.hide_extras)
            .field("timeouts", &self.timeouts)
            .field("sync_timeouts", &self.sync_timeouts)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("on_apply", &self.on_apply)
            .finish()
    }
}
