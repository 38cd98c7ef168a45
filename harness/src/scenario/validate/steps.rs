//! Steps: changes name live objects, faults fit the mode, the backend and what runs.

use super::*;
use crate::scenario::ast::{
    AdminChange, ClockStep, Disk, DistributionWait, Fault, Precheck, Refusal, Starve, Storage,
};

/// What is broken on the gateway's sync link at a point of the steps (a `heal` mends both).
#[derive(Debug, Default)]
struct SyncLink {
    /// A `partition` holds.
    partitioned: bool,
    /// A `network` fault holds.
    network: bool,
}

/// The most requests one pass of a `distribution` wait may send.
const MAX_WITHIN: usize = 10_000;

impl<'s> Validator<'s> {
    /// Step changes name setup objects that still exist at that point, and declared upstreams;
    /// a step's checks see the selectors alive after its changes.
    pub(super) fn steps(&mut self) {
        let s = self.s;
        // Live setup objects: selector name -> its rule names.
        let mut live: HashMap<&str, HashSet<&str>> = s
            .setup
            .selectors
            .iter()
            .map(|x| {
                (
                    x.name.as_str(),
                    x.rules.iter().map(|r| r.name.as_str()).collect(),
                )
            })
            .collect();
        let mut processes = self.initial_processes();
        let mut link = SyncLink::default();
        // Whether the admin's database disk is full (a `diskFull` without its `diskFree`).
        let mut full = false;
        let topology = &s.topology;
        for (i, st) in s.steps.iter().enumerate() {
            if st.changes.is_empty() {
                self.report(
                    format!("steps[{i}].changes"),
                    "at least one change is required",
                );
            }
            // The step's starved gateway: a starvation ends with its step.
            let mut starved = None;
            for (j, c) in st.changes.iter().enumerate() {
                let at = format!("steps[{i}].changes[{j}]");
                match c {
                    Change::Admin(change) => {
                        self.admin_runs(&processes, st, i, &at, change.name());
                        self.admin_change(change, &at, &mut live);
                    }
                    Change::Fault(fault) => {
                        let state = (&mut processes, &mut link, &mut starved);
                        self.step_fault(st, (i, j), fault, state);
                        self.disk(fault, &at, &mut full);
                    }
                }
            }
            if let Some(refusal) = &st.refused {
                self.refusal(st, refusal, &format!("steps[{i}].refused"));
            }
            if let Some(hold) = st.isolated {
                self.isolated(st, hold, &format!("steps[{i}].isolated"));
            }
            self.precheck(&st.precheck, &format!("steps[{i}].precheck"));
            if let Some((which, it)) =
                self.none_runs(&processes, topology.gateways, Target::Gateway)
            {
                self.report(
                    format!("steps[{i}]"),
                    format!(
                        "{which} at the end of the step, but its wait and checks go through \
                         it: start or resume {it} in the same step"
                    ),
                );
            }
            let selectors: HashSet<&str> = live.keys().copied().collect();
            for (j, c) in st.checks.iter().enumerate() {
                self.check(c, &format!("steps[{i}].checks[{j}]"), &selectors);
            }
        }
        if let Some(last) = s.steps.len().checked_sub(1) {
            if full {
                self.report(
                    format!("steps[{last}]"),
                    "the admin's database disk is full after the last step, but teardown \
                     writes to it: add `diskFree: database`",
                );
            }
            if link.partitioned {
                self.report(
                    format!("steps[{last}]"),
                    "the gateway is partitioned after the last step, but teardown needs it in \
                     sync: add `heal`",
                );
            } else if link.network {
                self.report(
                    format!("steps[{last}]"),
                    "a `network` fault holds after the last step, but teardown needs the \
                     gateway in sync: add `heal`",
                );
            }
            if let Some((which, it)) = self.none_runs(&processes, topology.admins, Target::Admin) {
                self.report(
                    format!("steps[{last}]"),
                    format!(
                        "{which} after the last step, but teardown needs it: start or resume {it}"
                    ),
                );
            }
            for target in [Target::Zookeeper, Target::Etcd] {
                if let Some(state) = processes.not_running(target) {
                    self.report(
                        format!("steps[{last}]"),
                        format!(
                            "the {target} is {state} after the last step, but teardown needs it: \
                             start or resume it"
                        ),
                    );
                }
            }
        }
    }

    /// An admin runs when a change at `at` (keyed `key`) is made: the step's `via` one, or
    /// any.
    fn admin_runs(&mut self, processes: &Processes, st: &StepSpec, i: usize, at: &str, key: &str) {
        if let Some(via) = st.via {
            self.via(processes, via, &format!("steps[{i}].via"), at);
        } else if let Some((which, it)) =
            self.none_runs(processes, self.s.topology.admins, Target::Admin)
        {
            self.report(
                format!("{at}.{key}"),
                format!("{which} at this point: start or resume {it} first"),
            );
        }
    }

    /// An admin change at `at` names objects alive at that point (`live`: selector name ->
    /// its rule names, kept current) and declared upstreams and plugins.
    fn admin_change(
        &mut self,
        change: &'s AdminChange,
        at: &str,
        live: &mut HashMap<&'s str, HashSet<&'s str>>,
    ) {
        match change {
            AdminChange::CreateSelector(sel) => {
                let at = format!("{at}.createSelector");
                self.selector(sel, &at);
                let rules = sel.rules.iter().map(|r| r.name.as_str()).collect();
                if live.insert(sel.name.as_str(), rules).is_some() {
                    self.report(
                        format!("{at}.name"),
                        format!("a selector named `{}` exists at this point", sel.name),
                    );
                }
            }
            AdminChange::CreateRule(r) => {
                let at = format!("{at}.createRule");
                let plugin = self.plugin_of(&r.selector);
                match live
                    .get_mut(r.selector.as_str())
                    .map(|rules| rules.insert(r.rule.name.as_str()))
                {
                    None => self.unknown_selector(&r.selector, format!("{at}.selector")),
                    Some(false) => self.report(
                        format!("{at}.rule.name"),
                        format!(
                            "selector `{}` has a rule named `{}` at this point",
                            r.selector, r.rule.name
                        ),
                    ),
                    Some(true) => {}
                }
                self.rule(plugin.unwrap_or_default(), &r.rule, &format!("{at}.rule"));
            }
            AdminChange::Register(reg) => self.registration(reg, &format!("{at}.register")),
            AdminChange::UpdateSelector(u) => {
                let at = format!("{at}.updateSelector");
                if !live.contains_key(u.name.as_str()) {
                    self.unknown_selector(&u.name, format!("{at}.name"));
                }
                for (k, up) in u.upstreams.iter().flatten().enumerate() {
                    self.upstream_ref(up, &format!("{at}.upstreams[{k}]"));
                }
                if let Some(cs) = &u.conditions {
                    self.conditions(cs, &format!("{at}.conditions"));
                }
                if let Some(plugin) = &u.plugin {
                    self.plugin_name(plugin, format!("{at}.plugin"));
                }
            }
            AdminChange::UpdateRule(u) => {
                let at = format!("{at}.updateRule");
                self.live_rule(live, &u.selector, &u.name, &at);
                if let Some(cs) = &u.conditions {
                    self.conditions(cs, &format!("{at}.conditions"));
                }
                let handles = [
                    u.handle.is_some(),
                    u.context_path.is_some(),
                    u.rate_limiter.is_some(),
                ];
                if handles.iter().filter(|h| **h).count() > 1 {
                    self.report(
                        at.clone(),
                        "give one of `handle`, `contextPath` and `rateLimiter`: a rule \
                         has one handle",
                    );
                }
                if let Some(cp) = &u.context_path
                    && let Err((field, message)) = cp.to_handle().check()
                {
                    self.report(format!("{at}.contextPath.{field}"), message);
                }
                if let Some(rl) = &u.rate_limiter
                    && let Err((field, message)) = rl.check()
                {
                    self.report(format!("{at}.rateLimiter.{field}"), message);
                }
                if let Some(handle) = &u.handle {
                    self.divide_handle(handle, &format!("{at}.handle"));
                }
            }
            AdminChange::EnablePlugin(p) => {
                self.plugin_name(&p.name, format!("{at}.enablePlugin.name"));
            }
            AdminChange::DeleteSelector(name) => {
                if live.remove(name.as_str()).is_none() {
                    self.unknown_selector(name, format!("{at}.deleteSelector"));
                }
            }
            AdminChange::DeleteRule(r) => {
                let at = format!("{at}.deleteRule");
                self.live_rule(live, &r.selector, &r.name, &at);
                if let Some(rules) = live.get_mut(r.selector.as_str()) {
                    rules.remove(r.name.as_str());
                }
            }
            AdminChange::UpdatePlugin(p) => {
                self.plugin_setup(p, &format!("{at}.updatePlugin"));
            }
        }
    }

    /// Change `j` of step `i`, a fault, fits the case and what runs at that point
    /// (`processes`, what is broken on the sync `link` and which gateway the step `starved`,
    /// kept current).
    fn step_fault(
        &mut self,
        st: &StepSpec,
        (i, j): (usize, usize),
        fault: &Fault,
        (processes, link, starved): (&mut Processes, &mut SyncLink, &mut Option<Target>),
    ) {
        let s = self.s;
        let at = &format!("steps[{i}].changes[{j}]");
        // Faults other than a process's or its clock's are made with an admin running, as
        // admin changes are.
        if !matches!(fault, Fault::Process(..) | Fault::Clock(_)) {
            self.admin_runs(processes, st, i, at, fault.name());
        }
        match fault {
            Fault::Process(action, target) => {
                if *starved == Some(target.resolved()) {
                    self.report(
                        format!("{at}.{}", fault.name()),
                        format!("{target} is starved at this point: `feed: {target}` first"),
                    );
                }
                self.fault(
                    processes,
                    *action,
                    *target,
                    &format!("{at}.{}", fault.name()),
                );
            }
            Fault::Network(network) => {
                link.network = true;
                self.network(network, &format!("{at}.network"));
            }
            Fault::Partition(_) | Fault::Heal => {
                let at = format!("{at}.{}", fault.name());
                let partition = matches!(fault, Fault::Partition(_));
                // A heal mends a partition or a `network` fault.
                let pointless = if partition {
                    link.partitioned
                } else {
                    !link.partitioned && !link.network
                };
                if pointless {
                    let state = if link.partitioned { "" } else { "not " };
                    self.report(
                        at.clone(),
                        format!("the gateway is {state}partitioned at this point"),
                    );
                }
                link.partitioned = partition;
                link.network &= partition;
                if partition {
                    self.one_sync_connection(&at);
                }
                if let Fault::Partition(how) = fault
                    && *how != PartitionHow::Blackhole
                    && s.backends.iter().any(|b| b.containers())
                {
                    self.report(
                        at,
                        format!(
                            "`partition: {}` runs on the host backend only (its sync \
                             proxy closes or delays connections); the docker backend \
                             disconnects the gateway from its sync network, which \
                             leaves them silent: use `blackhole` or add `backends: \
                             [host]`",
                            how.name()
                        ),
                    );
                }
            }
            Fault::SyncFault(f) => {
                let at = format!("{at}.syncFault");
                self.sync_fault(f, &at);
                let pushed = st.changes[j + 1..]
                    .iter()
                    .any(|c| matches!(c, Change::Admin(_)));
                if !pushed {
                    self.report(
                        at,
                        "a protocol fault applies to the admin's next pushes: give a \
                         change of the config after it in the same step",
                    );
                }
            }
            Fault::Compact(target) => {
                self.compact(processes, *target, &format!("{at}.compact"));
            }
            Fault::Wipe(target) => {
                self.wipe(processes, *target, &format!("{at}.wipe"));
            }
            Fault::ExpireSession(target) => {
                self.expire_session(processes, *target, &format!("{at}.expireSession"));
            }
            Fault::Starve(how) => {
                let at = format!("{at}.starve");
                self.starve(processes, how, &at);
                if starved.is_some() {
                    self.report(at, "a gateway is starved already in this step");
                } else {
                    *starved = Some(how.target.resolved());
                }
            }
            Fault::Feed(target) => {
                if *starved != Some(target.resolved()) {
                    self.report(
                        format!("{at}.feed"),
                        format!(
                            "{target} is not starved at this point (a `starve` of it earlier \
                             in the same step: a starvation ends with its step)"
                        ),
                    );
                }
                *starved = None;
            }
            // What is full: `Self::disk`.
            Fault::DiskFull(_) | Fault::DiskFree(_) => {}
            Fault::Clock(step) => self.clock(processes, step, &format!("{at}.clock")),
        }
    }

    /// A `clock` step names a running admin or gateway of the topology, on the host backend
    /// (libfaketime), and moves the clock by whole seconds.
    pub(super) fn clock(&mut self, processes: &Processes, step: &ClockStep, at: &str) {
        let s = self.s;
        let target = step.target;
        let unavailable = match target {
            Target::Admin(i) => self.indexed(i, s.topology.admins, "admins"),
            Target::Gateway(i) => self.indexed(i, s.topology.gateways, "gateways"),
            _ => Some(format!(
                "only an admin's or a gateway's clock steps, not `{target}`'s"
            )),
        };
        if let Some(why) = unavailable {
            self.report(format!("{at}.target"), why);
        } else if let Some(state) = processes.not_running(target) {
            self.report(
                format!("{at}.target"),
                format!(
                    "the {target} is {state} at this point, and a step is verified on its \
                     answers: start or resume it first"
                ),
            );
        }
        match step.step.whole_seconds() {
            Some(0) => self.report(format!("{at}.step"), "must move the clock: got 0s"),
            Some(_) => {}
            None => self.report(
                format!("{at}.step"),
                format!("must be whole seconds, got `{}`", step.step),
            ),
        }
        if s.backends.iter().any(|b| b.containers()) {
            self.report(
                at,
                "`clock` runs on the host backend only so far (the admin and gateway run \
                 under libfaketime, which the FROM-scratch images do not hold): add \
                 `backends: [host]`",
            );
        }
    }

    /// A proxy sits on the one sync connection of the topology (`at`: a partition or a
    /// `network` fault).
    pub(super) fn one_sync_connection(&mut self, at: &str) {
        let s = self.s;
        if s.topology.admins > 1 || s.topology.gateways > 1 {
            self.report(
                at.to_owned(),
                "partitions need a topology of one admin and one gateway so \
                 far (the proxy sits on that one sync connection)",
            );
        }
    }

    /// A `diskFull` or `diskFree` at `at` fits the case: the host backend, the admin on
    /// SQLite, a `diskFree` only while the disk is `full` (kept current) and no `diskFull`
    /// then.
    fn disk(&mut self, fault: &Fault, at: &str, full: &mut bool) {
        let (Fault::DiskFull(Disk::Database) | Fault::DiskFree(Disk::Database)) = fault else {
            return;
        };
        let s = self.s;
        let filling = matches!(fault, Fault::DiskFull(_));
        let at = format!("{at}.{}", fault.name());
        if filling == *full {
            let why = match filling {
                true => "the admin's database disk is full already at this point",
                false => {
                    "the admin's database disk is not full at this point: a `diskFull: \
                          database` first"
                }
            };
            self.report(at.clone(), why);
        }
        *full = filling;
        if s.backends.iter().any(|b| b.containers()) {
            self.report(
                at.clone(),
                "the disk faults run on the host backend only so far (a tmpfs mounted under \
                 the case's directory): add `backends: [host]`",
            );
        }
        if s.topology.storage != Storage::Sqlite {
            self.report(
                at,
                "the disk faults fill the disk under the admin's SQLite file: not with \
                 `topology.storage: postgres`",
            );
        }
    }

    /// A step's `refused` (at `at`) has admin changes to refuse and an error status.
    fn refusal(&mut self, st: &StepSpec, refusal: &Refusal, at: &str) {
        if !st.changes.iter().any(|c| matches!(c, Change::Admin(_))) {
            self.report(
                at.to_owned(),
                "the step has no admin change to be refused: give one",
            );
        }
        if !(400..=599).contains(&refusal.status) {
            self.report(
                format!("{at}.status"),
                format!(
                    "must be an error status (400 to 599), got {}",
                    refusal.status
                ),
            );
        }
        if refusal.contains.trim().is_empty() {
            self.report(
                format!("{at}.contains"),
                "must say what the refusal's body contains",
            );
        }
    }

    /// A step's precheck is skipped only with a reason.
    fn precheck(&mut self, precheck: &Precheck, at: &str) {
        match precheck {
            Precheck::On(false) => self.report(
                at.to_owned(),
                "a skipped precheck needs a reason: write `precheck: { skip: \"why the wait \
                 passes before the step's changes\" }` (or make the wait expect what only the \
                 changed config answers)",
            ),
            Precheck::Skip(s) if s.skip.trim().is_empty() => self.report(
                format!("{at}.skip"),
                "must say why the wait passes before the step's changes",
            ),
            Precheck::On(true) | Precheck::Skip(_) => {}
        }
    }

    /// A `distribution` wait (at `at`): a valid request, at least two distinct declared
    /// upstreams, and room for each of them to answer (`within` at least their number, at most
    /// [`MAX_WITHIN`]).
    pub(super) fn distribution(&mut self, split: &DistributionWait, at: &str) {
        self.request(&split.request, &format!("{at}.request"));
        if split.upstreams.len() < 2 {
            self.report(
                format!("{at}.upstreams"),
                "name at least two upstreams: a split of one is an `upstream` expectation",
            );
        }
        self.unique(
            split.upstreams.iter().map(String::as_str),
            &format!("{at}.upstreams"),
            "upstream",
        );
        for (i, name) in split.upstreams.iter().enumerate() {
            self.known(name, format!("{at}.upstreams[{i}]"));
        }
        let fits = (split.upstreams.len()..=MAX_WITHIN).contains(&(split.within as usize));
        if !fits {
            self.report(
                format!("{at}.within"),
                format!(
                    "must be between the number of upstreams ({}) and {MAX_WITHIN}, got {}",
                    split.upstreams.len(),
                    split.within
                ),
            );
        }
    }

    /// A step's `isolated` claim means something: the step changes the config (else the
    /// gateway's digest equals the admin's all along and the claim fails for no reason) and
    /// holds it for some time.
    pub(super) fn isolated(&mut self, st: &StepSpec, hold: Duration, at: &str) {
        if !st.changes_config() {
            self.report(
                at.to_owned(),
                "claims the step's config change does not reach the gateway, but the step \
                 changes no config: give a change of the config (an update, enable, create or \
                 delete) in the same step",
            );
        }
        if hold.is_zero() {
            self.report(
                at.to_owned(),
                "must be more than 0s: the time the claim holds",
            );
        }
    }

    /// A protocol fault fits the case: its kind means something in every mode the case runs
    /// in, the backend is the host (the admin's test-only hook), `count` is 1 to 100 and
    /// `delay` is given for `lateAnswer` and `latePush` only.
    pub(super) fn sync_fault(&mut self, f: &SyncFault, at: &str) {
        let s = self.s;
        let kind = f.kind.name();
        let mode = f.kind.mode();
        let others: Vec<String> = s
            .modes
            .iter()
            .filter(|m| **m != mode)
            .map(ToString::to_string)
            .collect();
        if !others.is_empty() {
            self.report(
                format!("{at}.kind"),
                format!(
                    "`{kind}` is a fault of the {mode} sync channel and means nothing in {}: \
                     give `modes: [{mode}]`",
                    others.join(", ")
                ),
            );
        }
        if s.backends.iter().any(|b| b.containers()) {
            self.report(
                at,
                "protocol faults run on the host backend only so far: add `backends: [host]`",
            );
        }
        if !(1..=100).contains(&f.count) {
            self.report(
                format!("{at}.count"),
                format!("must be between 1 and 100, got {}", f.count),
            );
        }
        match (f.kind.takes_delay(), f.delay) {
            (true, None) => {
                self.report(format!("{at}.delay"), format!("`{kind}` needs a delay"));
            }
            (true, Some(_)) | (false, None) => {}
            (false, Some(_)) => self.report(
                format!("{at}.delay"),
                format!("only `lateAnswer` and `latePush` take a delay; `{kind}` takes none"),
            ),
        }
    }

    /// A `compact` names etcd, in a case that runs in the etcd mode only, on the host
    /// backend, while etcd runs.
    pub(super) fn compact(&mut self, processes: &Processes, target: Target, at: &str) {
        let s = self.s;
        if target != Target::Etcd {
            self.report(at, format!("only etcd compacts revisions, not `{target}`"));
            return;
        }
        if s.modes.iter().any(|m| *m != model::SyncMode::Etcd) {
            self.report(
                at,
                "`compact: etcd` means something in the etcd mode only: give `modes: [etcd]`",
            );
        }
        if s.backends.iter().any(|b| b.containers()) {
            self.report(
                at,
                "`compact: etcd` runs on the host backend only so far: add `backends: [host]`",
            );
        }
        if let Some(state) = processes.not_running(Target::Etcd) {
            self.report(
                at,
                format!("the etcd is {state} at this point: start it first"),
            );
        }
    }

    /// `wipe` names the etcd of a case that runs in the etcd mode only, on the host backend,
    /// and it runs.
    pub(super) fn wipe(&mut self, processes: &Processes, target: Target, at: &str) {
        let s = self.s;
        if target != Target::Etcd {
            self.report(at, format!("only etcd can be wiped so far, not `{target}`"));
            return;
        }
        if s.modes.iter().any(|m| *m != model::SyncMode::Etcd) {
            self.report(
                at,
                "`wipe: etcd` means something in the etcd mode only: give `modes: [etcd]`",
            );
        }
        if s.backends.iter().any(|b| b.containers()) {
            self.report(
                at,
                "`wipe: etcd` runs on the host backend only so far: add `backends: [host]`",
            );
        }
        if let Some(state) = processes.not_running(Target::Etcd) {
            self.report(
                at,
                format!("the etcd is {state} at this point: start it first"),
            );
        }
    }

    /// `expireSession` names a running gateway of a case that runs in the zookeeper mode only,
    /// on the host backend; the gateway is paused afterwards.
    pub(super) fn expire_session(&mut self, processes: &mut Processes, target: Target, at: &str) {
        let s = self.s;
        if !matches!(target, Target::Gateway(_)) {
            self.report(
                at,
                format!("only a gateway's ZooKeeper session expires here, not `{target}`'s"),
            );
            return;
        }
        if s.modes.iter().any(|m| *m != model::SyncMode::Zookeeper) {
            self.report(
                at,
                "`expireSession` means something in the zookeeper mode only: give \
                 `modes: [zookeeper]`",
            );
        }
        if s.backends.iter().any(|b| b.containers()) {
            self.report(
                at,
                "`expireSession` runs on the host backend only so far (it asks ZooKeeper's \
                 `cons` on the host): add `backends: [host]`",
            );
        }
        // The gateway is paused while its session expires: a `pause` for what runs.
        self.fault(processes, FaultAction::Pause, target, at);
    }

    /// A `starve` (at `at`) fits the case: a running gateway of the topology, on the host
    /// backend, stopped 1% to 99% of a period of 10ms to 10s.
    pub(super) fn starve(&mut self, processes: &Processes, how: &Starve, at: &str) {
        let s = self.s;
        let target = how.target;
        let Target::Gateway(index) = target else {
            self.report(
                format!("{at}.target"),
                format!("only a gateway is starved here, not `{target}`"),
            );
            return;
        };
        if let Some(why) = self.indexed(index, s.topology.gateways, "gateways") {
            self.report(format!("{at}.target"), why);
        } else if let Some(state) = processes.not_running(target) {
            self.report(
                format!("{at}.target"),
                format!("`starve` needs {target} running, but it is {state} at this point"),
            );
        }
        if s.backends.iter().any(|b| b.containers()) {
            self.report(
                at,
                "`starve` runs on the host backend only so far (a SIGSTOP/SIGCONT duty cycle \
                 on the gateway's process): add `backends: [host]`",
            );
        }
        if !(1..=99).contains(&how.duty.0) {
            self.report(
                format!("{at}.duty"),
                format!("must be between 1% and 99%, got {}", how.duty),
            );
        }
        let period = Duration::from_millis(10)..=Duration::from_secs(10);
        if !period.contains(&how.period) {
            self.report(
                format!("{at}.period"),
                format!("must be between 10ms and 10s, got {:?}", how.period),
            );
        }
    }

    /// A fault fits the case (its target runs in every mode the case runs in; every backend
    /// applies every fault)
    /// and the target's state at that point (`start` needs it stopped, `resume` paused, the
    /// others running).
    pub(super) fn fault(
        &mut self,
        processes: &mut Processes,
        action: FaultAction,
        target: Target,
        at: &str,
    ) {
        let s = self.s;
        let only_mode = |mode: model::SyncMode| -> Option<String> {
            let others: Vec<String> = s
                .modes
                .iter()
                .filter(|m| **m != mode)
                .map(ToString::to_string)
                .collect();
            (!others.is_empty()).then(|| {
                format!(
                    "`{target}` runs only in the {mode} mode, and this case also runs in {}: \
                     give `modes: [{mode}]`",
                    others.join(", ")
                )
            })
        };
        let unavailable = match target {
            Target::Admin(i) => self.indexed(i, s.topology.admins, "admins"),
            Target::Gateway(i) => self.indexed(i, s.topology.gateways, "gateways"),
            Target::Zookeeper => only_mode(model::SyncMode::Zookeeper),
            Target::Etcd => only_mode(model::SyncMode::Etcd),
            Target::Redis => (!s.components.contains(&Component::Redis))
                .then(|| "`redis` is not one of the case's `components`".to_owned()),
        };
        if let Some(why) = unavailable {
            self.report(at, why);
            return;
        }
        if let Err(state) = processes.apply(action, target) {
            self.report(
                at,
                format!(
                    "`{}` needs the {target} {}, but it is {state} at this point",
                    action.name(),
                    match action {
                        FaultAction::Start => "stopped",
                        FaultAction::Resume => "paused",
                        _ => "running",
                    }
                ),
            );
        }
    }

    /// A step's `via` (at `field`) names an admin of the topology, running when the admin
    /// change at `change` is made.
    pub(super) fn via(&mut self, processes: &Processes, via: Target, field: &str, change: &str) {
        let Target::Admin(index) = via else {
            self.report(
                field,
                format!("`{via}` is not an admin: name one, `admin[i]`"),
            );
            return;
        };
        if let Some(why) = self.indexed(index, self.s.topology.admins, "admins") {
            self.report(field, why);
        } else if let Some(state) = processes.not_running(via) {
            self.report(
                change,
                format!("the step's changes go to {via} (`via`), which is {state} at this point"),
            );
        }
    }

    /// What is wrong with `admin`/`gateway` (`index` `None`) or `admin[i]`/`gateway[i]` in a
    /// topology of `count` (`field` in `topology`), if anything.
    pub(super) fn indexed(&self, index: Option<u8>, count: u8, field: &str) -> Option<String> {
        let kind = &field[..field.len() - 1];
        match index {
            None if count > 1 => Some(format!(
                "the topology runs {count} {field} (`topology.{field}`): name one, \
                 `{kind}[0]` to `{kind}[{}]`",
                count - 1
            )),
            Some(i) if i >= count => Some(format!(
                "`{kind}[{i}]` does not exist: `topology.{field}` is {count}"
            )),
            _ => None,
        }
    }
}
