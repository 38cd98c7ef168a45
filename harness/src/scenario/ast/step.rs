//! Steps: admin changes, faults, and the process targets faults name.

use super::*;

/// One step: admin changes and component stops/starts, a wait that proves them live, then
/// checks.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StepSpec {
    /// What the step does.
    pub name: String,
    /// Applied in order; each a single-key map (`- deleteSelector: name`).
    #[serde(with = "serde_norway::with::singleton_map_recursive")]
    #[schemars(with = "Vec<RawChange>")]
    pub changes: Vec<Change>,
    /// The admin the step's admin changes go to (`admin[i]`; default: the first running
    /// one). It must be running when they are made.
    #[serde(default)]
    pub via: Option<Target>,
    /// The probe that proves the changes are live (required).
    pub wait: Wait,
    /// Whether the wait is probed once before the changes (default: it is; a wait that
    /// already passes then fails the case, since it cannot prove the changes live). A step
    /// whose wait passes before its changes by design says why: `precheck: { skip: "..." }`.
    #[serde(default)]
    pub precheck: Precheck,
    /// Traffic from before the first change until the gateway has converged (and for at
    /// least `duration`): `request` + `expect`, sent back to back by `clients` senders, at
    /// most at `rate`; every answer must meet the expectation, and with `after` + `never`
    /// no request sent after the first answer from `after` may be answered by `never`.
    #[serde(default)]
    pub during: Option<During>,
    /// How long the step's config change must stay away from the gateway (`isolated: 1s`,
    /// a partition's claim): from the end of its changes, every running gateway's digest is
    /// polled with the admin's for that long and must differ from it every time (equal means
    /// the change arrived); `during` keeps being sent meanwhile. Reported as the check
    /// `steps[i].isolated`; skipped on a target without a config digest. Needs a change of
    /// the config in the step.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    pub isolated: Option<Duration>,
    /// The most the step's wait and the digest equality after it may take, from the end of
    /// its changes (after an `isolated` hold): it caps the wait's timeout, and a miss names
    /// it. Default: 5s for a step with faults, none otherwise.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    pub converge: Option<Duration>,
    /// Requests and their expected answers after the wait.
    #[serde(default)]
    pub checks: Vec<Check>,
    /// The step's admin changes must each be refused (a full database disk:
    /// `refused: { status: 507, contains: "disk is full" }`): each answered with that status
    /// and text; after the step's changes the admin's digest, and every running gateway's,
    /// what they were before them (nothing half-written, nothing pushed).
    #[serde(default)]
    pub refused: Option<Refusal>,
}

impl StepSpec {
    /// Whether a change of the step is a fault (a partition and a heal are too).
    pub fn has_faults(&self) -> bool {
        self.changes.iter().any(|c| matches!(c, Change::Fault(_)))
    }

    /// Whether the step changes the admin's config (and so makes the admin push).
    pub fn changes_config(&self) -> bool {
        self.changes.iter().any(|c| matches!(c, Change::Admin(_)))
    }

    /// Whether a change arms a protocol fault (the admin then needs its test-only hook).
    pub fn arms_sync_faults(&self) -> bool {
        self.changes
            .iter()
            .any(|c| matches!(c, Change::Fault(Fault::SyncFault(_))))
    }

    /// Whether a change fills the admin's database disk (`diskFull`).
    pub fn fills_disk(&self) -> bool {
        (self.changes.iter()).any(|c| matches!(c, Change::Fault(Fault::DiskFull(_))))
    }

    /// Whether a change steps a process's clock (its admins and gateways then run under
    /// libfaketime).
    pub fn steps_clocks(&self) -> bool {
        self.changes
            .iter()
            .any(|c| matches!(c, Change::Fault(Fault::Clock(_))))
    }

    /// The links its changes partition or set `network` faults on (each then goes through
    /// a proxy).
    pub fn faulted_links(&self) -> impl Iterator<Item = Link> + '_ {
        self.changes.iter().filter_map(|c| match c {
            Change::Fault(Fault::Partition(_)) => Some(Link::Sync),
            Change::Fault(Fault::Network(n)) => Some(n.link),
            _ => None,
        })
    }

    /// The bound on the step's wait and the digest equality after it, from the end of its
    /// changes: `converge`, else 5s for a step with faults; none for a step without faults
    /// and without `converge` (its wait has its own timeout).
    pub fn converge_bound(&self) -> Option<Duration> {
        match (self.converge, self.has_faults()) {
            (Some(bound), _) => Some(bound),
            (None, true) => Some(Duration::from_secs(5)),
            (None, false) => None,
        }
    }
}

/// A step's `precheck`: whether its wait is probed once before its changes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Precheck {
    /// `true` (the default): probed, and a wait that passes fails the case. `false` is
    /// refused: a skipped precheck needs a reason (`{ skip: "..." }`).
    On(bool),
    /// `{ skip: "why the wait passes before the changes" }`: not probed.
    Skip(SkipPrecheck),
}

/// A skipped precheck and why.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkipPrecheck {
    /// Why the step's wait passes before its changes by design (e.g. a fault step whose
    /// wait is that the route still answers).
    pub skip: String,
}

impl Default for Precheck {
    fn default() -> Self {
        Precheck::On(true)
    }
}

impl Precheck {
    /// Whether the wait is probed before the changes (`false` is refused by the validator).
    pub fn runs(&self) -> bool {
        matches!(self, Precheck::On(true))
    }
}

/// One change of a step: an admin change or a fault, read from the one-key form of case
/// files (`- deleteSelector: name`, `- kill: gateway`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "RawChange")]
pub enum Change {
    /// A change of the admin's config (names refer to setup objects); the admin pushes it.
    Admin(AdminChange),
    /// A fault: a process, the sync connection, the sync protocol or the store broken or
    /// mended.
    Fault(Fault),
}

/// A change of the admin's config, made through its API.
#[derive(Debug, Clone, PartialEq)]
pub enum AdminChange {
    /// `createSelector`: `POST /selector`, a selector with its rules.
    CreateSelector(SelectorSpec),
    /// `createRule`: `POST /rule`, a rule under a live selector.
    CreateRule(CreateRule),
    /// `register`: a client registration through the admin's registration center.
    Register(RegistrationSpec),
    /// `updateSelector`: `PUT /selector/{id}` with the given fields replaced.
    UpdateSelector(UpdateSelector),
    /// `updateRule`: `PUT /rule/{id}` with the given fields replaced.
    UpdateRule(UpdateRule),
    /// `enablePlugin`: `POST /plugin/enabled`; restored in teardown.
    EnablePlugin(EnablePlugin),
    /// `deleteSelector`: `DELETE /selector/batch` (its rules go too).
    DeleteSelector(String),
    /// `deleteRule`: `DELETE /rule/batch`.
    DeleteRule(RuleRef),
    /// `updatePlugin`: `PUT /plugin/{id}`, a plugin's config and enabled flag; restored in
    /// teardown.
    UpdatePlugin(PluginSetup),
}

/// A fault a step injects, or its end.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// `stop`, `kill`, `start`, `restart`, `pause` or `resume` of a process of the topology.
    Process(FaultAction, Target),
    /// `partition`: the gateway's sync connection broken or slowed down.
    Partition(PartitionHow),
    /// `network`: a toxic on a link (latency, bandwidth, ...), until the `heal`.
    Network(NetworkFault),
    /// `heal`: the end of the partition and of every `network` fault.
    Heal,
    /// `syncFault`: a protocol fault armed on the sync channel for the admin's next pushes.
    SyncFault(SyncFault),
    /// `compact`: the store compacted to its current revision.
    Compact(Target),
    /// `expireSession`: a gateway paused until ZooKeeper expired its session.
    ExpireSession(Target),
    /// `wipe`: the store ended, emptied and started again fresh.
    Wipe(Target),
    /// `starve`: a gateway stopped for most of every period until a `feed` or the step's end.
    Starve(Starve),
    /// `feed`: the end of a gateway's starvation.
    Feed(Target),
    /// `clock`: an admin's or gateway's wall clock stepped.
    Clock(ClockStep),
    /// `diskFull`: the disk under the admin's database filled up.
    DiskFull(Disk),
    /// `diskFree`: the filler of a `diskFull` removed.
    DiskFree(Disk),
}

impl From<RawChange> for Change {
    fn from(raw: RawChange) -> Change {
        use {AdminChange as A, Fault as F};
        let process = |action, target| Change::Fault(F::Process(action, target));
        match raw {
            RawChange::CreateSelector(s) => Change::Admin(A::CreateSelector(s)),
            RawChange::CreateRule(r) => Change::Admin(A::CreateRule(r)),
            RawChange::Register(r) => Change::Admin(A::Register(r)),
            RawChange::UpdateSelector(u) => Change::Admin(A::UpdateSelector(u)),
            RawChange::UpdateRule(u) => Change::Admin(A::UpdateRule(u)),
            RawChange::EnablePlugin(p) => Change::Admin(A::EnablePlugin(p)),
            RawChange::DeleteSelector(name) => Change::Admin(A::DeleteSelector(name)),
            RawChange::DeleteRule(r) => Change::Admin(A::DeleteRule(r)),
            RawChange::UpdatePlugin(p) => Change::Admin(A::UpdatePlugin(p)),
            RawChange::Stop(t) => process(FaultAction::Stop, t),
            RawChange::Kill(t) => process(FaultAction::Kill, t),
            RawChange::Start(t) => process(FaultAction::Start, t),
            RawChange::Restart(t) => process(FaultAction::Restart, t),
            RawChange::Pause(t) => process(FaultAction::Pause, t),
            RawChange::Resume(t) => process(FaultAction::Resume, t),
            RawChange::Partition(how) => Change::Fault(F::Partition(how)),
            RawChange::Network(n) => Change::Fault(F::Network(n)),
            RawChange::Heal => Change::Fault(F::Heal),
            RawChange::SyncFault(f) => Change::Fault(F::SyncFault(f)),
            RawChange::Compact(t) => Change::Fault(F::Compact(t)),
            RawChange::ExpireSession(t) => Change::Fault(F::ExpireSession(t)),
            RawChange::Wipe(t) => Change::Fault(F::Wipe(t)),
            RawChange::Starve(s) => Change::Fault(F::Starve(s)),
            RawChange::Feed(t) => Change::Fault(F::Feed(t)),
            RawChange::Clock(c) => Change::Fault(F::Clock(c)),
            RawChange::DiskFull(d) => Change::Fault(F::DiskFull(d)),
            RawChange::DiskFree(d) => Change::Fault(F::DiskFree(d)),
        }
    }
}

// The form case files spell (one key per change), read by serde and described by the JSON
// Schema (its doc comments are the schema's descriptions, its name there `Change`); `Change`
// is what the rest of the harness matches on.
/// One change of a step: an admin change (names refer to setup objects) or a fault: a
/// process of the topology stopped, killed, started, restarted, paused or resumed.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "Change")]
enum RawChange {
    /// `POST /selector`: a selector with its rules, as in `setup.selectors`; later steps,
    /// checks and expectations name it like a setup selector, and teardown deletes it.
    CreateSelector(SelectorSpec),
    /// `POST /rule`: a rule under a live selector, as in a selector's `rules`.
    CreateRule(CreateRule),
    /// A client registration through the admin's registration center, as in
    /// `setup.registrations`; teardown deletes the selectors the admin made for it.
    Register(RegistrationSpec),
    /// `PUT /selector/{id}` with the given fields replaced.
    UpdateSelector(UpdateSelector),
    /// `PUT /rule/{id}` with the given fields replaced.
    UpdateRule(UpdateRule),
    /// `POST /plugin/enabled`; restored in teardown.
    EnablePlugin(EnablePlugin),
    /// `DELETE /selector/batch` (its rules go too).
    DeleteSelector(String),
    /// `DELETE /rule/batch`.
    DeleteRule(RuleRef),
    /// `PUT /plugin/{id}`: a plugin's config (placeholders filled in) and enabled flag, as in
    /// `setup.plugins`; restored in teardown.
    UpdatePlugin(PluginSetup),
    /// Stops a process of the topology: the admin or gateway gracefully (stdin closed, as on
    /// a shutdown), ZooKeeper, etcd and Redis at once; it keeps its address for a `start`.
    Stop(Target),
    /// Kills a process (SIGKILL); it keeps its address for a `start`.
    Kill(Target),
    /// Starts a stopped or killed process again at the same address and waits until it
    /// answers (Redis comes back empty; the admin keeps its database).
    Start(Target),
    /// `stop` then `start`.
    Restart(Target),
    /// Freezes a process (SIGSTOP): it holds its connections and answers nothing.
    Pause(Target),
    /// Thaws a paused process (SIGCONT).
    Resume(Target),
    /// Cuts the gateway off from where it syncs (the admin in the websocket and http modes,
    /// ZooKeeper or etcd in theirs), through a proxy on that connection: `blackhole` (a
    /// silent partition: connections stay open, nothing passes), `cut` (closed), `reset` or
    /// `sever` (the open connections dead for good, silently; new ones pass: host backend);
    /// or slows it down: `{ delay: 300ms }`.
    Partition(PartitionHow),
    /// A Toxiproxy-style fault on a link, through a proxy on it (host backend): `link`
    /// (`sync`, the default), `direction` (`both`, the default, `request`: the bytes from
    /// the side that opened the connection, or `answer`) and exactly one of `latency: {
    /// delay, jitter }`, `bandwidth: { bytesPerSecond }`, `slice: { bytes, every }`,
    /// `slowClose: { delay }`, `limitData: { bytes }`, `loss: { rate }` (new connections
    /// closed at once) or `blackhole: {}` (one way: a one-way partition). Entries stack until
    /// the `heal`.
    Network(NetworkFault),
    /// Ends the partition and every `network` fault: the sync connection passes again (a
    /// blackholed connection resumes; the gateway reconnects after a cut or reset).
    Heal,
    /// Arms a protocol fault on the sync channel for the admin's next pushes, through the
    /// admin's test-only hook (host backend; `docs/faults.md`).
    SyncFault(SyncFault),
    /// Compacts the store to its current revision (`etcd` only, etcd mode, host backend): a
    /// watch resuming from an older revision is cancelled and must read everything again.
    Compact(Target),
    /// Expires a gateway's ZooKeeper session as a long stall does: pauses the gateway
    /// (SIGSTOP) until ZooKeeper has expired its session and no longer lists it; the gateway
    /// stays paused until a `resume` (zookeeper mode, host backend).
    ExpireSession(Target),
    /// Wipes the store (`etcd` only, etcd mode, host backend): etcd is killed, its data
    /// directory emptied and it starts again on the same address with nothing, its revisions
    /// starting over; the admin writes everything again.
    Wipe(Target),
    /// Starves a gateway of CPU (host backend): the harness stops it (SIGSTOP) for `duty` of
    /// every `period` and lets it run (SIGCONT) for the rest, until a `feed` of it or the end
    /// of the step (its wait, digest equality and `during`; its checks see a fed gateway).
    Starve(Starve),
    /// Ends a gateway's starvation (`starve`) before the end of its step: it runs on.
    Feed(Target),
    /// Steps an admin's or gateway's wall clock by `step` (`-60s`, `+1h`; steps add up),
    /// its monotonic clock untouched: the process runs under libfaketime (host backend;
    /// `docs/faults.md`).
    Clock(ClockStep),
    /// Fills the disk under the admin's SQLite database (`diskFull: database`; host backend,
    /// as root): the database sits on an 8 MiB tmpfs of the case, which a filler file fills
    /// until ENOSPC; the admin's writes are refused until a `diskFree`.
    DiskFull(Disk),
    /// Removes the filler of a `diskFull` (`diskFree: database`): the admin writes again.
    DiskFree(Disk),
}

/// A protocol fault on the sync channel (`syncFault`): the admin's next `count` pushes
/// (websocket increments, long-poll listener answers naming changed groups) go wrong as
/// `kind` says.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SyncFault {
    /// What goes wrong.
    pub kind: SyncFaultKind,
    /// How many pushes it applies to (1 to 100; default 1).
    #[serde(default = "one_push")]
    pub count: u32,
    /// `lateAnswer` and `latePush` only (required there): how long each answer or increment
    /// waits.
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    pub delay: Option<Duration>,
}

fn one_push() -> u32 {
    1
}

/// How a `partition` breaks the gateway's sync connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PartitionHow {
    /// Connections stay open and nothing passes either way.
    Blackhole,
    /// Connections are closed (FIN), new ones closed on accept.
    Cut,
    /// Connections are reset (RST), new ones reset on accept.
    Reset,
    /// The open connections die silently and for good (a dead stream: open, nothing passes
    /// either way, ever, even after a heal); new ones pass. Nobody is told: only a keepalive
    /// notices.
    Sever,
    /// Everything passes, each chunk this long late (`partition: { delay: 300ms }`): a slow
    /// link rather than a broken one; the gateway stays in sync, late.
    Delay(
        #[serde(deserialize_with = "duration")]
        #[schemars(with = "DurationText")]
        Duration,
    ),
}

impl PartitionHow {
    /// Its name in case files.
    pub fn name(self) -> &'static str {
        match self {
            PartitionHow::Blackhole => "blackhole",
            PartitionHow::Cut => "cut",
            PartitionHow::Reset => "reset",
            PartitionHow::Sever => "sever",
            PartitionHow::Delay(_) => "delay",
        }
    }

    /// Whether the gateway is cut off from its config (no digest equality meanwhile): a
    /// severed gateway is not, since it can connect again.
    pub fn cuts_off(self) -> bool {
        !matches!(self, PartitionHow::Delay(_) | PartitionHow::Sever)
    }
}

/// What a fault in a step does to its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultAction {
    /// `stop`.
    Stop,
    /// `kill`.
    Kill,
    /// `start`.
    Start,
    /// `restart`.
    Restart,
    /// `pause`.
    Pause,
    /// `resume`.
    Resume,
}

impl FaultAction {
    /// The key in a file (`kill`).
    pub fn name(self) -> &'static str {
        match self {
            FaultAction::Stop => "stop",
            FaultAction::Kill => "kill",
            FaultAction::Start => "start",
            FaultAction::Restart => "restart",
            FaultAction::Pause => "pause",
            FaultAction::Resume => "resume",
        }
    }
}

/// A process of the topology a step can stop, kill, start, restart, pause or resume:
/// `admin`, `gateway` (when the topology runs one), `admin[i]`, `gateway[i]`, `zookeeper`,
/// `etcd` or `redis`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// An admin: `admin` (`None`, the only one) or `admin[i]`.
    Admin(Option<u8>),
    /// A gateway: `gateway` (`None`, the only one) or `gateway[i]`.
    Gateway(Option<u8>),
    /// The ZooKeeper server (cases that run only in the zookeeper mode).
    Zookeeper,
    /// The etcd server (cases that run only in the etcd mode).
    Etcd,
    /// The case's Redis (`components: [redis]`).
    Redis,
}

impl Target {
    /// The kind's name in case files and messages, without an index.
    pub fn name(self) -> &'static str {
        match self {
            Target::Admin(_) => "admin",
            Target::Gateway(_) => "gateway",
            Target::Zookeeper => "zookeeper",
            Target::Etcd => "etcd",
            Target::Redis => "redis",
        }
    }

    /// The index of an admin or gateway (`admin` alone is the first).
    pub fn index(self) -> Option<usize> {
        match self {
            Target::Admin(i) | Target::Gateway(i) => Some(usize::from(i.unwrap_or(0))),
            _ => None,
        }
    }

    /// The same process with its index spelled out (`admin` → `admin[0]`), so that both
    /// spellings name one process.
    pub fn resolved(self) -> Target {
        match self {
            Target::Admin(i) => Target::Admin(Some(i.unwrap_or(0))),
            Target::Gateway(i) => Target::Gateway(Some(i.unwrap_or(0))),
            other => other,
        }
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Admin(Some(i)) | Target::Gateway(Some(i)) => write!(f, "{}[{i}]", self.name()),
            _ => f.write_str(self.name()),
        }
    }
}

impl std::str::FromStr for Target {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let (kind, index) = match text.split_once('[') {
            Some((kind, rest)) => {
                let index = rest
                    .strip_suffix(']')
                    .and_then(|i| i.parse::<u8>().ok())
                    .ok_or_else(|| format!("`{text}`: an index is written `{kind}[0]`"))?;
                (kind, Some(index))
            }
            None => (text, None),
        };
        match (kind, index) {
            ("admin", i) => Ok(Target::Admin(i)),
            ("gateway", i) => Ok(Target::Gateway(i)),
            ("zookeeper", None) => Ok(Target::Zookeeper),
            ("etcd", None) => Ok(Target::Etcd),
            ("redis", None) => Ok(Target::Redis),
            (kind @ ("zookeeper" | "etcd" | "redis"), Some(_)) => {
                Err(format!("`{text}`: there is one {kind}, without an index"))
            }
            _ => Err(format!(
                "unknown process `{text}`, expected admin, gateway, admin[i], gateway[i], \
                 zookeeper, etcd or redis"
            )),
        }
    }
}

impl<'de> Deserialize<'de> for Target {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Target {
    fn schema_name() -> Cow<'static, str> {
        "Target".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A process of the topology: admin, gateway (when there is one), \
                            admin[i], gateway[i], zookeeper, etcd or redis.",
            "type": "string",
            "pattern": "^((admin|gateway)(\\[[0-9]+\\])?|zookeeper|etcd|redis)$"
        })
    }
}

impl Change {
    /// The key that names the change in a file (`deleteSelector`, `kill`).
    pub fn name(&self) -> &'static str {
        match self {
            Change::Admin(change) => change.name(),
            Change::Fault(fault) => fault.name(),
        }
    }
}

impl AdminChange {
    /// The key that names the change in a file (`deleteSelector`).
    pub fn name(&self) -> &'static str {
        match self {
            AdminChange::CreateSelector(_) => "createSelector",
            AdminChange::CreateRule(_) => "createRule",
            AdminChange::Register(_) => "register",
            AdminChange::UpdateSelector(_) => "updateSelector",
            AdminChange::UpdateRule(_) => "updateRule",
            AdminChange::EnablePlugin(_) => "enablePlugin",
            AdminChange::DeleteSelector(_) => "deleteSelector",
            AdminChange::DeleteRule(_) => "deleteRule",
            AdminChange::UpdatePlugin(_) => "updatePlugin",
        }
    }
}

impl Fault {
    /// The key that names the fault in a file (`kill`, `partition`).
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Process(action, _) => action.name(),
            Fault::Partition(_) => "partition",
            Fault::Network(_) => "network",
            Fault::Heal => "heal",
            Fault::SyncFault(_) => "syncFault",
            Fault::Compact(_) => "compact",
            Fault::ExpireSession(_) => "expireSession",
            Fault::Wipe(_) => "wipe",
            Fault::Starve(_) => "starve",
            Fault::Feed(_) => "feed",
            Fault::Clock(_) => "clock",
            Fault::DiskFull(_) => "diskFull",
            Fault::DiskFree(_) => "diskFree",
        }
    }
}

/// A rule to create under a live selector (`createRule`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateRule {
    /// The selector (from setup or a `createSelector`) that gets the rule.
    pub selector: String,
    /// The rule, as in a selector's `rules`.
    pub rule: RuleSpec,
}

/// Fields of a selector to replace; the ones not given keep their values.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateSelector {
    /// The selector's name (from setup or a `createSelector`).
    pub name: String,
    /// New divide upstreams (the selector's handle).
    pub upstreams: Option<Vec<UpstreamRef>>,
    /// New enabled flag.
    pub enabled: Option<bool>,
    /// New conditions. A route moved to another path usually needs its rules' conditions
    /// changed too (`updateRule`): the rules match the request again after the selector.
    pub conditions: Option<Vec<ConditionSpec>>,
    /// New ordering key.
    pub sort: Option<i32>,
    /// New match mode.
    pub match_mode: Option<MatchModeName>,
    /// New `continued` flag.
    pub continued: Option<bool>,
    /// New selector type.
    #[serde(rename = "type")]
    pub kind: Option<SelectorKind>,
    /// Another plugin (by name) the selector moves to, with its rules (`pluginId`).
    pub plugin: Option<String>,
}

/// Fields of a rule to replace; the ones not given keep their values.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateRule {
    /// The selector holding the rule (from setup or a `createSelector`).
    pub selector: String,
    /// The rule's name.
    pub name: String,
    /// New enabled flag.
    pub enabled: Option<bool>,
    /// New conditions.
    pub conditions: Option<Vec<ConditionSpec>>,
    /// New ordering key.
    pub sort: Option<i32>,
    /// New match mode.
    pub match_mode: Option<MatchModeName>,
    /// New handle (missing fields take ShenYu's defaults).
    pub handle: Option<RuleHandleSpec>,
    /// New contextPath handle (instead of `handle`).
    pub context_path: Option<ContextPathSpec>,
    /// New rateLimiter handle (instead of `handle`).
    pub rate_limiter: Option<RateLimiterSpec>,
}

/// A plugin's enabled flag.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnablePlugin {
    /// Plugin name, e.g. `divide`.
    pub name: String,
    /// The new flag.
    pub enabled: bool,
}

/// A setup rule by selector and rule name.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RuleRef {
    /// The setup selector holding the rule.
    pub selector: String,
    /// The rule's name.
    pub name: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step's `changes` list as serde reads it.
    #[derive(Debug, Deserialize)]
    struct Changes(#[serde(with = "serde_norway::with::singleton_map_recursive")] Vec<Change>);

    #[test]
    fn each_key_reads_as_the_admin_change_or_fault_of_that_name() {
        let keys = [
            ("deleteSelector: a", true),
            ("deleteRule: { selector: a, name: r }", true),
            ("enablePlugin: { name: divide, enabled: false }", true),
            ("updateSelector: { name: a, enabled: false }", true),
            ("stop: redis", false),
            ("kill: gateway[1]", false),
            ("start: admin", false),
            ("restart: etcd", false),
            ("pause: zookeeper", false),
            ("resume: gateway", false),
            ("partition: { delay: 300ms }", false),
            ("heal", false),
            ("syncFault: { kind: drop }", false),
            ("compact: etcd", false),
            ("expireSession: gateway", false),
            ("starve: { target: gateway, duty: 90% }", false),
            ("feed: gateway", false),
            ("clock: { target: admin, step: -60s }", false),
        ];
        let yaml: String = keys.iter().map(|(k, _)| format!("- {k}\n")).collect();
        let Changes(changes) = serde_norway::from_str(&yaml).unwrap();
        for (change, (key, admin)) in changes.iter().zip(keys) {
            let name = key.split(':').next().unwrap();
            assert_eq!(change.name(), name, "{key}");
            assert_eq!(matches!(change, Change::Admin(_)), admin, "{key}");
        }
        assert_eq!(changes.len(), keys.len());
        assert_eq!(
            changes[5],
            Change::Fault(Fault::Process(FaultAction::Kill, Target::Gateway(Some(1))))
        );
        assert_eq!(
            changes[10],
            Change::Fault(Fault::Partition(PartitionHow::Delay(
                Duration::from_millis(300)
            )))
        );
    }

    #[test]
    fn precheck_is_on_by_default_and_skipped_only_with_a_reason() {
        let read = |yaml: &str| serde_norway::from_str::<Precheck>(yaml);
        assert!(Precheck::default().runs());
        assert!(read("true").unwrap().runs());
        let off = read("false").unwrap();
        assert!(!off.runs(), "`false` reads (the validator refuses it)");
        let skip = read("{ skip: the route stays }").unwrap();
        assert_eq!(
            skip,
            Precheck::Skip(SkipPrecheck {
                skip: "the route stays".into()
            })
        );
        assert!(!skip.runs());
        assert!(
            read("{ skip: x, why: y }").is_err(),
            "unknown keys are refused"
        );
    }

    #[test]
    fn converge_bounds_a_step_with_faults_or_one_that_gives_it() {
        let step = |yaml: &str| serde_norway::from_str::<StepSpec>(yaml).unwrap();
        let wait = "wait: { probe: { request: { path: /a }, expect: { upstream: alpha } } }";
        let admin = step(&format!(
            "name: s\nchanges: [{{ deleteSelector: x }}]\n{wait}"
        ));
        assert_eq!(admin.converge_bound(), None);
        let fault = step(&format!("name: s\nchanges: [{{ kill: admin }}]\n{wait}"));
        assert_eq!(fault.converge_bound(), Some(Duration::from_secs(5)));
        let given = step(&format!(
            "name: s\nchanges: [{{ deleteSelector: x }}]\nconverge: 2s\n{wait}"
        ));
        assert_eq!(given.converge_bound(), Some(Duration::from_secs(2)));
    }

    #[test]
    fn an_unknown_key_is_refused_with_every_key_named() {
        let err = serde_norway::from_str::<Changes>("- remove: a\n").unwrap_err();
        let message = err.to_string();
        assert!(message.contains("unknown variant `remove`"), "{message}");
        assert!(message.contains("`createSelector`") && message.contains("`expireSession`"));
    }
}
