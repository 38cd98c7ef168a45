//! Error types, one enum per layer: scenario files, backends, HTTP clients, runs.

use std::path::PathBuf;

use model::SyncMode;

/// A scenario file that cannot be read, parsed or validated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{}: cannot read: {message}", file.display())]
    Io {
        /// The file.
        file: PathBuf,
        /// The I/O error, rendered.
        message: String,
    },
    /// One problem that is not a rule of the scenario's own: the text is not YAML, a value is
    /// invalid where it stands (and nothing else is wrong), or the name is already used.
    #[error("{}:{}: {}{message}", file.display(), location(*line, *column), path_prefix(path))]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        column: Option<usize>,
        /// The field path, e.g. `checks[1].expect` (`.` for the document).
        path: String,
        /// What is wrong.
        message: String,
    },
    /// Every problem of the file, values invalid where they stand and rules of the scenario's
    /// own it breaks alike, one per line, sorted by position.
    #[error("{}", render_problems(file, problems))]
    Problems {
        /// The file.
        file: PathBuf,
        /// The problems (at least one).
        problems: Vec<ScenarioProblem>,
    },
}

impl ScenarioError {
    /// How many problems this error reports (one, except for [`ScenarioError::Problems`]).
    pub fn problem_count(&self) -> usize {
        match self {
            ScenarioError::Problems { problems, .. } => problems.len(),
            _ => 1,
        }
    }
}

/// One problem of a scenario file: where it is, the field path and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioProblem {
    /// 1-based line of the offending node, when known.
    pub line: Option<usize>,
    /// 1-based column of the offending node, when known.
    pub column: Option<usize>,
    /// The field path, e.g. `checks[1].expect` (`.` for the document).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// `file:line:column: path: message`, one line per problem.
fn render_problems(file: &std::path::Path, problems: &[ScenarioProblem]) -> String {
    problems
        .iter()
        .map(|p| p.render(file, ""))
        .collect::<Vec<_>>()
        .join("\n")
}

impl ScenarioProblem {
    /// `file:line:column: path: warning: message`, for a warning (valid, likely not meant).
    pub fn render_warning(&self, file: &std::path::Path) -> String {
        self.render(file, "warning: ")
    }

    /// `file:line:column: path: <tag>message`.
    fn render(&self, file: &std::path::Path, tag: &str) -> String {
        format!(
            "{}:{}: {}{tag}{}",
            file.display(),
            location(self.line, self.column),
            path_prefix(&self.path),
            self.message
        )
    }
}

fn location(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!("{l}:{c}"),
        (Some(l), None) => l.to_string(),
        _ => "?".to_owned(),
    }
}

fn path_prefix(path: &str) -> String {
    if path.is_empty() || path == "." {
        String::new()
    } else {
        format!("{path}: ")
    }
}

/// Starting, finding or stopping the processes of a topology failed.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// A binary the host backend runs does not exist.
    #[error("binary not found: {} (build it with `{build}`)", path.display())]
    MissingBinary {
        /// Where it was looked for.
        path: PathBuf,
        /// The command that builds it.
        build: String,
    },
    /// A binary is older than a source file it is built from: it would test old code.
    #[error(
        "{} is older than {} (it would test old code): rebuild it with `{build}`",
        binary.display(),
        newest.display()
    )]
    StaleBinary {
        /// The binary.
        binary: PathBuf,
        /// The newest source file.
        newest: PathBuf,
        /// The command that builds it.
        build: String,
    },
    /// `cargo build` failed.
    #[error("`{command}` failed ({status}):\n{stderr_tail}")]
    BuildFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// The last lines of its stderr.
        stderr_tail: String,
    },
    /// A system command the harness ran (`mount`, `umount`) failed.
    #[error("`{command}` failed ({status}): {stderr_tail}")]
    CommandFailed {
        /// The command line.
        command: String,
        /// Its exit status.
        status: String,
        /// Its stderr.
        stderr_tail: String,
    },
    /// An I/O error while starting or talking to a process.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A process did not print `listening on http://...` in time, or printed something else.
    #[error("{service} did not announce its address: {detail}")]
    NoListenLine {
        /// The service.
        service: String,
        /// What happened instead.
        detail: String,
    },
    /// The external target cannot be used (login, probe, cleanup) or cannot do what a case
    /// asks.
    #[error("external target: {what}: {detail}")]
    External {
        /// What was being done.
        what: String,
        /// What went wrong.
        detail: String,
    },
    /// No Docker engine answers (`DOCKER_HOST` or the local socket).
    #[error("no Docker engine reachable: {0}")]
    DockerUnavailable(String),
    /// A Docker engine call failed.
    #[error("docker: {what}: {detail}")]
    Docker {
        /// What was being done.
        what: String,
        /// The engine's error.
        detail: String,
    },
    /// Images a run needs are not present locally (nothing is ever pulled).
    #[error("image(s) not found locally: {images} (build them with `{build}`)")]
    MissingImages {
        /// The missing tags.
        images: String,
        /// The command that builds them.
        build: String,
    },
    /// The store server a sync mode needs (ZooKeeper, etcd) cannot run here.
    #[error("sync mode `{mode}` needs a server that is not available: {detail}")]
    StoreUnavailable {
        /// The sync mode.
        mode: model::SyncMode,
        /// What is missing.
        detail: String,
    },
    /// A topology other than one admin on SQLite and one gateway, on a backend that cannot
    /// run it yet.
    #[error(
        "several admins or gateways, late gateways and PostgreSQL storage are not supported on \
         the {backend} backend yet"
    )]
    TopologyUnsupported {
        /// `docker`.
        backend: &'static str,
    },
    /// The PostgreSQL cluster a case's topology asks for cannot run here.
    #[error("the case's topology asks for PostgreSQL, which is not available: {0}")]
    PostgresUnavailable(String),
    /// A component a case asks for (`components: [redis]`) cannot run here.
    #[error("the case asks for {component}, which is not available: {detail}")]
    ComponentUnavailable {
        /// The component.
        component: crate::scenario::ast::Component,
        /// What is missing.
        detail: String,
    },
    /// A step's fault names a process the topology does not run.
    #[error("the topology runs no {target}: a step can only act on the processes it runs")]
    NoSuchProcess {
        /// The process.
        target: crate::scenario::ast::Target,
    },
    /// A case steps a clock, and libfaketime is not installed.
    #[error("a clock step needs libfaketime: {detail}")]
    FakeClockUnavailable {
        /// What is missing.
        detail: String,
    },
    /// A clock step did not show in the process's answers.
    #[error("{service}'s clock did not step: {detail}")]
    ClockNotStepped {
        /// The service.
        service: String,
        /// What its answers said instead.
        detail: String,
    },
    /// A step names a process whose clock is not faked (its case has no `clock` change).
    #[error("{service} does not run on a faked clock")]
    NoFakeClock {
        /// The service.
        service: String,
    },
    /// A fault this backend cannot inject yet.
    #[error("`{action}: {target}` is not supported on the {backend} backend yet")]
    FaultUnsupported {
        /// `kill`, `pause`, ...
        action: &'static str,
        /// The process.
        target: crate::scenario::ast::Target,
        /// `docker`.
        backend: &'static str,
    },
    /// A step partitions a topology started without a sync proxy.
    #[error("the topology has no proxy on the gateway's sync connection to partition")]
    NoSyncProxy,
    /// A step's `network` fault names a link the topology started without a proxy.
    #[error("the topology has no fault proxy on the {link} link")]
    NoLinkProxy {
        /// `upstream`, `client`, ...
        link: &'static str,
    },
    /// A step heals a container that no partition cut off.
    #[error("the gateway is not partitioned: nothing to heal")]
    NotPartitioned,
    /// A signal was meant for a process that is not running.
    #[error("{service} is not running")]
    NotRunning {
        /// The service.
        service: String,
    },
    /// A service did not answer `/actuator/health` with 200 before the deadline.
    #[error("{service} not healthy after {waited_ms} ms: {last}")]
    Unhealthy {
        /// The service.
        service: String,
        /// How long the harness waited.
        waited_ms: u128,
        /// The last answer or error seen.
        last: String,
    },
}

/// An HTTP exchange with the admin or the gateway failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request could not be sent or its answer not read.
    #[error("{what}: {source}")]
    Http {
        /// The request, e.g. `POST /selector`.
        what: String,
        /// The transport error.
        source: reqwest::Error,
    },
    /// The answer was not the expected success.
    #[error("{what}: HTTP {status}: {body}")]
    Status {
        /// The request.
        what: String,
        /// Its HTTP status.
        status: u16,
        /// Its body.
        body: String,
    },
    /// The body did not have the expected shape.
    #[error("{what}: unexpected body ({detail}): {body}")]
    Body {
        /// The request.
        what: String,
        /// The decoding error.
        detail: String,
        /// The body.
        body: String,
    },
}

/// The step of a run at which it failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Step {
    /// Starting admin, gateway and upstreams.
    Start,
    /// Initial digest equality and the "probe does not pass yet" check.
    Precheck,
    /// Creating the scenario's selectors and rules.
    Setup,
    /// Waiting for the wait probe to converge and comparing digests.
    Wait,
    /// Running the checks.
    Checks,
    /// Applying each scenario step's admin changes, its wait and its checks.
    Steps,
    /// Deleting what setup made and proving it is gone.
    Teardown,
    /// Judging the WARN and ERROR lines the admins and gateways logged (`expectLogs`).
    Logs,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::Start => "start",
            Step::Precheck => "precheck",
            Step::Setup => "setup",
            Step::Wait => "wait",
            Step::Checks => "checks",
            Step::Steps => "steps",
            Step::Teardown => "teardown",
            Step::Logs => "logs",
        })
    }
}

/// What went wrong in a run, without the step and logs (see [`RunError`]).
#[derive(Debug, thiserror::Error)]
pub enum RunErrorKind {
    /// The topology could not be started.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// An admin or gateway call failed.
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The admin refused a selector or rule the case file asked for (4xx); `at` is the case
    /// file's field path of what it refused.
    #[error("{at}: the admin refused it: {message}")]
    Refused {
        /// The case file's field path, e.g. `setup.selectors[1].upstreams[0].weight`.
        at: String,
        /// The admin's message.
        message: String,
        /// The failed request.
        source: Box<ClientError>,
    },
    /// The scenario names a plugin the admin does not have.
    #[error("plugin `{0}` not found on the admin")]
    PluginNotFound(String),
    /// A placeholder of a plugin config cannot be filled in for this run.
    #[error("{field}: {detail}")]
    Placeholder {
        /// The field path, e.g. `setup.plugins[0].config`.
        field: String,
        /// What is wrong.
        detail: String,
    },
    /// A rule was created but could not be found by listing.
    #[error("rule `{rule}` of selector {selector_id} not found after creating it")]
    RuleNotFound {
        /// The rule name.
        rule: String,
        /// The selector id.
        selector_id: String,
    },
    /// The wait probes all passed before setup: they cannot prove the new config is live.
    #[error(
        "the wait probe already passes before setup, so it cannot prove the new config is live; {got}"
    )]
    ProbePassesBeforeSetup {
        /// What each probe got, e.g. `got HTTP 404: {...}`.
        got: String,
    },
    /// On an external target, a request of the case found a selector before the case made
    /// any: the target's own config routes it, and would answer it or shadow the case's
    /// routes.
    #[error(
        "the target's own config already routes `{request}` before this case made any route \
         (answered {got}, not the -107 of a path no selector matches): a selector of the \
         target's own matches it and would answer it or shadow the case's routes"
    )]
    RoutedByTarget {
        /// The request, `GET /path`.
        request: String,
        /// What it got.
        got: String,
    },
    /// A convergence wait timed out.
    #[error("{what}: {source}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The timeout and what was last seen.
        source: crate::wait::WaitTimeout,
    },
    /// Checks failed; every failure is listed.
    #[error("{} failed:\n{}", if .0.len() == 1 { "1 check".to_owned() } else { format!("{} checks", .0.len()) }, .0.join("\n"))]
    ChecksFailed(Vec<String>),
    /// The admins and gateways logged WARN or ERROR lines the case does not declare, or a
    /// declared line did not come; every problem is listed.
    #[error("the service logs do not match `expectLogs`:\n{}", .0.iter().map(|f| format!("  {f}")).collect::<Vec<_>>().join("\n"))]
    Logs(Vec<String>),
    /// A deleted object is still served by the admin.
    #[error("{kind} {id} still exists on the admin after delete")]
    StillPresent {
        /// `selector` or `rule`.
        kind: &'static str,
        /// Its id.
        id: String,
    },
    /// A step's wait, or the digest equality after it, missed the step's bound: `converge`
    /// (5s by default for a step with faults) caps both, from the end of the step's changes.
    #[error(
        "step `{step}`: not converged within `converge: {bound}` ({whose}, from the end of its \
         changes): {detail}"
    )]
    NotConverged {
        /// The step.
        step: String,
        /// The bound, `5s`.
        bound: String,
        /// Whose bound it is: the step's, or the default of a step with faults (and its
        /// stretch by the run mode).
        whose: String,
        /// What missed it: the wait's or digest equality's timeout with what it last saw, or
        /// how long they took.
        detail: String,
    },
    /// A step's wait already passed on every running gateway before the step's changes: it
    /// cannot prove them live.
    #[error(
        "step `{step}`: its wait already passes before the step's changes, so it cannot prove \
         them live ({got}); make the wait expect what only the changed config answers, or, \
         when it passes before the changes by design, say why with `precheck: {{ skip: \
         \"...\" }}`"
    )]
    StepWaitPassesBefore {
        /// The step.
        step: String,
        /// What each probe got, e.g. `steps[0].wait.probe: got HTTP 200 …`.
        got: String,
    },
    /// A change its step says must be refused (`refused:`) was taken, refused otherwise, or
    /// half-written (the admin's digest moved).
    #[error("{field}: {detail}")]
    RefusalBroken {
        /// The change, e.g. `steps[1].changes[0].createSelector`.
        field: String,
        /// What went wrong.
        detail: String,
    },
    /// An external run's case passed its teardown but left selectors named with the run's
    /// prefix (the sweep after the case removed them).
    #[error(
        "teardown left {count} selector(s) named `{prefix}*` on the external admin (removed now)"
    )]
    LeftBehind {
        /// How many.
        count: usize,
        /// The run's prefix.
        prefix: String,
    },
    /// Under `--run-mode leak`: an admin's or gateway's RSS or open fds grew faster than
    /// the bound across the runs (each process's verdict, one a line).
    #[error("{0}")]
    Leak(String),
    /// Under `--run-mode leak`: run `run` of `runs` on the one topology failed.
    #[error("run {run} of {runs}: {kind}")]
    InRun {
        /// Which run, from 1.
        run: u32,
        /// How many the mode makes.
        runs: u32,
        /// What went wrong in it.
        kind: Box<RunErrorKind>,
    },
    /// An object a step names does not exist.
    #[error("{0} does not exist (not made by setup or a step, or already deleted)")]
    UnknownObject(String),
    /// The admin deleted a different number of selectors than asked.
    #[error("admin deleted {deleted} selectors, expected {expected}")]
    DeleteCount {
        /// What the admin reported.
        deleted: i64,
        /// How many ids were sent.
        expected: usize,
    },
}

/// A failed run of one scenario under one mode: the step, what went wrong, and the tails of
/// the service logs.
#[derive(Debug, thiserror::Error)]
#[error("{case}@{mode} failed at {step}: {kind}{logs}")]
pub struct RunError {
    /// Scenario name.
    pub case: String,
    /// Sync mode.
    pub mode: SyncMode,
    /// The step that failed.
    pub step: Step,
    /// What went wrong.
    pub kind: RunErrorKind,
    /// The last lines of each service's log, rendered (empty when there are none).
    pub logs: String,
    /// What the case recorded before it failed (checks judged, change timings).
    pub record: crate::report::CaseRecord,
}
