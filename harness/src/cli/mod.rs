//! The `gantry` command: its arguments (`args`), what each subcommand does (here) and its
//! exit codes (`exit_code`). The binary (`src/main.rs`) only calls `main`; living in the
//! library, the commands reach the engine's rooms without making them public.

mod args;
mod conformance;
mod exit_code;
mod sim;

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::backend::{Backend, Capabilities};
use crate::report::{json, terminal};
use crate::target::external::capability_skip_reason;
use crate::{ProcessEnv, RunSetupError, images};
use clap::Parser;
use tokio::signal::unix::SignalKind;

/// Runs the `gantry` command line of this process and returns its exit code.
pub fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let command = args::Cli::parse().command;
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(exit_code::SETUP);
        }
    };
    match command {
        args::Command::Run(args) => runtime.block_on(run(&args)),
        args::Command::List(args) => list(&args),
        args::Command::Images(args) => runtime.block_on(images(args)),
        args::Command::Upstream(args) => runtime.block_on(upstream(args)),
        args::Command::FaultProxy(args) => runtime.block_on(fault_proxy(args)),
        args::Command::Compose(args) => {
            print!("{}", crate::compose::render(args.sync));
            ExitCode::SUCCESS
        }
        args::Command::K8s(args) => {
            print!(
                "{}",
                crate::k8s::render(args.sync, args.gateways, args.shards)
            );
            ExitCode::SUCCESS
        }
        args::Command::Report(args::ReportCommand::Merge(args)) => merge(&args),
        args::Command::Schema => {
            print!("{}", crate::scenario::schema::schema_json());
            ExitCode::SUCCESS
        }
        args::Command::Validate(args) => validate(&args),
        args::Command::Bench(args) => runtime.block_on(bench(args.bench)),
        args::Command::Check(args) => check(&args),
        args::Command::Sim(args) => sim::sim(&args),
    }
}

/// `gantry check`: runs the convergence property; prints the counts and time-to-stable
/// quantiles, and on failure the shrunk history and the seed (exit 1).
fn check(args: &args::CheckArgs) -> ExitCode {
    use crate::converge::{Options, check};
    let mut opts = crate::RunOptions::from_env(&ProcessEnv);
    opts.build &= !args.no_build;
    opts.gateway_args.clone_from(&args.gateway_args);
    let backend = match crate::prepare(&opts) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit_code::SETUP);
        }
    };
    let seed = args.seed.unwrap_or_else(rand::random);
    eprintln!("convergence@{}: seed {seed}", args.sync);
    let options = Options {
        cases: args.cases,
        steps: args.ops,
        faults: args.faults == "on",
        bound: args.bound,
        keep: opts.keep,
        gateways: args.gateways,
        ..Options::new(args.sync, seed)
    };
    match check(&backend, &options) {
        Ok(outcome) => {
            println!("convergence@{}: {}", args.sync, outcome.summary());
            let isolation = outcome.isolation();
            match outcome.verdict.and(isolation) {
                Ok(()) => ExitCode::SUCCESS,
                Err(message) => {
                    println!("{message}");
                    ExitCode::from(exit_code::FAILED)
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(exit_code::SETUP)
        }
    }
}

/// `gantry bench proxy|sync|fanout`: progress on stderr, the table on stdout, the JSON report
/// when asked; exit 1 when a sync mode failed or the proxy bench fell below its
/// `--baseline-threshold`, 2 when it could not run, 130 when interrupted (everything it
/// started is stopped on the way out).
async fn bench(which: args::Bench) -> ExitCode {
    use crate::bench::{fanout, proxy, sync, write_json};
    let common = which.common();
    let opts = common.options(&ProcessEnv);
    let progress = |line: String| eprintln!("{line}");
    let work = async {
        if let args::Bench::Fanout(a) = &which
            && a.backend == args::FanoutBackend::Swarm
        {
            let backend = tokio::task::spawn_blocking(|| {
                crate::backend::DockerBackend::open_swarm(None).map(Backend::Docker)
            })
            .await??;
            let r = fanout::tasks::run(&backend, &a.kinds, &a.shapes, a.changes, &progress).await?;
            if let Some(path) = &common.report_json {
                write_json(path, &r)?;
            }
            let ok = r.runs.iter().all(|r| r.error.is_none());
            return Ok((fanout::tasks::render(&r), ok));
        }
        let backend = crate::bench::prepare(&opts).await?;
        Ok::<_, anyhow::Error>(match &which {
            args::Bench::Proxy(a) => {
                let mut options = a.options(opts.keep);
                if let Some(rev) = a.baseline.clone() {
                    let workspace = std::path::Path::new(crate::WORKSPACE_DIR);
                    options.baseline = Some(
                        tokio::task::spawn_blocking(move || {
                            crate::bench::baseline::build(workspace, &rev, &|line| {
                                eprintln!("{line}")
                            })
                        })
                        .await??,
                    );
                }
                let r = proxy::run(&backend, &options, &progress).await?;
                if let Some(path) = &common.report_json {
                    write_json(path, &r)?;
                }
                let mut table = proxy::render(&r);
                let regressions = r.settings.baseline.as_ref().map_or_else(Vec::new, |b| {
                    proxy::regressions(&r.results, &b.rev, b.threshold)
                });
                for line in &regressions {
                    table += &format!("regression: {line}\n");
                }
                (table, regressions.is_empty())
            }
            args::Bench::Sync(a) => {
                let r = sync::run(&backend, &a.options(opts.keep), &progress).await?;
                if let Some(path) = &common.report_json {
                    write_json(path, &r)?;
                }
                (sync::render(&r), r.modes.iter().all(|m| m.error.is_none()))
            }
            args::Bench::Fanout(a) => {
                let r = fanout::run(&backend, &a.options(opts.keep), &progress).await?;
                if let Some(path) = &common.report_json {
                    write_json(path, &r)?;
                }
                (fanout::render(&r), true)
            }
        })
    };
    let outcome = tokio::select! {
        r = work => r,
        _ = tokio::signal::ctrl_c() => {
            eprintln!("interrupted");
            return ExitCode::from(exit_code::INTERRUPTED);
        }
    };
    match outcome {
        Ok((table, ok)) => {
            print!("{table}");
            if ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(exit_code::FAILED)
            }
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(exit_code::SETUP)
        }
    }
}

/// `gantry images`: release build (unless `--bin-dir`), then build the changed images.
async fn images(args: args::ImagesArgs) -> ExitCode {
    let started = Instant::now();
    let dir = match args.bin_dir {
        Some(dir) => dir,
        None => {
            eprintln!("building: {}", images::RELEASE_BUILD_COMMAND);
            let workspace = Path::new(crate::WORKSPACE_DIR);
            match tokio::task::spawn_blocking(move || images::build_release(workspace)).await {
                Ok(Ok(dir)) => dir,
                Ok(Err(e)) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(exit_code::BACKEND);
                }
                Err(e) => {
                    eprintln!("error: the release build panicked: {e}");
                    return ExitCode::from(exit_code::BACKEND);
                }
            }
        }
    };
    let built = async {
        let docker = crate::backend::docker::connect().await?;
        images::ensure(&docker, images::ALL, &dir, args.force).await
    };
    match built.await {
        Ok(statuses) => {
            for s in statuses {
                if let Some(why) = &s.skipped {
                    println!("{:<24} skipped    {why}", s.tag);
                    continue;
                }
                let what = if s.built {
                    format!("built in {:.1}s", s.took.as_secs_f64())
                } else {
                    "up to date".to_owned()
                };
                println!("{:<24} {what:<16} {}={}", s.tag, images::HASH_LABEL, s.hash);
            }
            eprintln!("images ready in {:.1}s", started.elapsed().as_secs_f64());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(exit_code::BACKEND)
        }
    }
}

/// `gantry upstream`: one echo upstream until SIGINT or SIGTERM.
/// `gantry fault-proxy`: until SIGTERM or Ctrl-C.
async fn fault_proxy(args: args::FaultProxyArgs) -> ExitCode {
    let served =
        crate::fault::container::serve(args.listen, &args.target, args.control, terminated()).await;
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(exit_code::SETUP)
        }
    }
}

/// Completes on SIGTERM or Ctrl-C.
async fn terminated() {
    let mut term = match tokio::signal::unix::signal(SignalKind::terminate()) {
        Ok(t) => t,
        Err(e) => {
            tracing::error!("cannot watch SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

async fn upstream(args: args::UpstreamArgs) -> ExitCode {
    let addr = std::net::SocketAddr::new(args.bind, args.port);
    let listener = match std::net::TcpListener::bind(addr) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: binding {addr}: {e}");
            return ExitCode::from(exit_code::SETUP);
        }
    };
    match listener.local_addr() {
        Ok(a) => println!("listening on http://{a}"),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit_code::SETUP);
        }
    }
    let shutdown = terminated();
    let behave = args.behave.map(|b| b.0).unwrap_or_default();
    match crate::upstream::serve(&args.name, &behave, listener, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(exit_code::SETUP)
        }
    }
}

/// Writes the reports `args` asks for (creating their directories).
fn write_reports(args: &args::ReportOutputs, results: &[crate::CaseResult]) -> Result<(), String> {
    let parent = |path: &std::path::Path| match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir),
        _ => Ok(()),
    };
    let fail =
        |path: &std::path::Path, e: std::io::Error| format!("writing {}: {e}", path.display());
    if let Some(path) = &args.report_json {
        parent(path)
            .and_then(|()| json::write(path, results))
            .map_err(|e| fail(path, e))?;
    }
    if let Some(path) = &args.report_junit {
        parent(path)
            .and_then(|()| crate::report::junit::write(path, results))
            .map_err(|e| fail(path, e))?;
    }
    if let Some(dir) = &args.report_html {
        crate::report::html::write(dir, results).map_err(|e| fail(dir, e))?;
    }
    Ok(())
}

/// `gantry list`: `<name>@<mode>@<backend>` per case, with the skip reason where it would not
/// run; files that do not parse as `<stem>@parse` with the error. For the external backend,
/// which cases run also depends on what the target offers (found only when `run` probes it):
/// a case that a ShenYu target would skip says so.
fn list(args: &args::RunArgs) -> ExitCode {
    let opts = args.options(&ProcessEnv);
    let files = match crate::discover(&args.paths()) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit_code::SETUP);
        }
    };
    let plan = crate::plan(&files, &opts);
    let external = opts.backend == crate::BackendKind::External;
    let (mut runs, mut only_with_extras) = (0, 0);
    for p in &plan {
        match p {
            crate::Planned::Broken(file, e) => println!("{}@parse: {e}", file.stem()),
            crate::Planned::Case {
                scenario,
                mode,
                skip,
                ..
            } => {
                let name = format!("{}@{mode}@{}", scenario.name, opts.backend);
                let on_shenyu = external
                    .then(|| capability_skip_reason(scenario, &Capabilities::SHENYU))
                    .flatten();
                match (skip, on_shenyu) {
                    (Some(why), _) => println!("{name} (skipped: {why})"),
                    (None, Some(why)) => {
                        runs += 1;
                        only_with_extras += 1;
                        println!("{name} (skipped on a target without gantry's extras: {why})");
                    }
                    (None, None) => {
                        runs += 1;
                        println!("{name}");
                    }
                }
            }
        }
    }
    let shard = opts
        .partition
        .map_or_else(String::new, |p| format!(" in shard {p}"));
    if external {
        println!(
            "{runs} of {}{shard} would run ({only_with_extras} of them only on a target with \
             gantry's extras: the run probes for them first)",
            plan.len()
        );
    } else {
        println!("{runs} of {}{shard} would run", plan.len());
    }
    ExitCode::SUCCESS
}

/// `gantry report merge`: the shards' results joined, summarised as a run's, and written.
fn merge(args: &args::MergeArgs) -> ExitCode {
    let mut reports = Vec::with_capacity(args.shards.len());
    for path in &args.shards {
        match crate::report::json::read(path) {
            Ok(report) => reports.push((path.clone(), report)),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(exit_code::SETUP);
            }
        }
    }
    let results = match crate::report::merge(reports) {
        Ok(results) => results,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit_code::SETUP);
        }
    };
    print!("{}", terminal::failure_details(&results));
    println!("{}", terminal::summary_table(&results));
    if let Err(e) = write_reports(&args.reports, &results) {
        eprintln!("error: {e}");
        return ExitCode::from(exit_code::REPORT);
    }
    verdict(&results)
}

/// A finished run's exit code: 1 when a case failed, 5 when none ran (a CI job that tests
/// nothing must not pass), else 0.
fn verdict(results: &[crate::CaseResult]) -> ExitCode {
    if results.iter().any(crate::CaseResult::failed) {
        ExitCode::from(exit_code::FAILED)
    } else if results.iter().all(|r| r.outcome.skipped().is_some()) {
        eprintln!("{}", nothing_ran(results));
        ExitCode::from(exit_code::NOTHING_RAN)
    } else {
        ExitCode::SUCCESS
    }
}

/// How long an example skip reason in [`nothing_ran`] may be.
const EXAMPLE_REASON_CHARS: usize = 240;

/// Why no case of `results` (every one skipped) ran: how many were skipped for each kind of
/// reason, with one case's reason as an example; `--sync`, `--backend` and `--filter` are
/// suggested only when a mode or backend the scenarios do not declare skipped cases, and the
/// paths and `--filter` only when nothing matched at all.
fn nothing_ran(results: &[crate::CaseResult]) -> String {
    if results.is_empty() {
        return "error: no case ran: no scenario matched (check the paths and --filter)".into();
    }
    let mut kinds: std::collections::BTreeMap<String, (usize, String)> = Default::default();
    let mut declared = false;
    for r in results {
        let why = r.outcome.skipped().unwrap_or_default();
        let missing = crate::conformance::missing_features(why);
        let kind = if !missing.is_empty() {
            format!("need unsupported feature(s) {}", missing.join(", "))
        } else if why.starts_with("mode `") || why.starts_with("backend `") {
            declared = true;
            why.split_once(" (")
                .map_or(why, |(head, _)| head)
                .to_owned()
        } else {
            crate::probe::cut(why, EXAMPLE_REASON_CHARS)
        };
        let entry = kinds.entry(kind).or_insert_with(|| {
            (
                0,
                format!("{}: {}", r.id, crate::probe::cut(why, EXAMPLE_REASON_CHARS)),
            )
        });
        entry.0 += 1;
    }
    let mut text = format!("error: no case ran ({} skipped):", results.len());
    for (kind, (n, example)) in &kinds {
        text.push_str(&format!("\n  {n} skipped: {kind} (e.g. {example})"));
    }
    if declared {
        text.push_str(
            "\ncheck --sync, --backend and --filter against the scenarios' modes and backends",
        );
    }
    text
}

/// `gantry run`.
async fn run(args: &args::RunArgs) -> ExitCode {
    let opts = args.options(&ProcessEnv);
    let paths = args.paths();
    if opts.backend == crate::BackendKind::External && opts.modes.len() != 1 {
        eprintln!(
            "error: an external target syncs one way: say which with --sync (websocket, http, zookeeper or etcd)"
        );
        return ExitCode::from(exit_code::SETUP);
    }
    if let Some(why) = conformance::refusal(args, &opts) {
        eprintln!("error: {why}");
        return ExitCode::from(exit_code::SETUP);
    }
    if let Some(run_mode) = opts.run_mode {
        eprintln!("run mode: {run_mode}");
    }
    {
        let totals =
            crate::discover(&paths).map_or_else(|_| Vec::new(), |f| crate::count_cases(&f, &opts));
        let reporter = terminal::TerminalReporter::new(&totals);
        let on_event = |e: crate::Event| reporter.handle(&e);
        let outcome = tokio::select! {
            r = crate::run_paths(&paths, &opts, &on_event) => r,
            _ = tokio::signal::ctrl_c() => {
                reporter.finish();
                eprintln!("interrupted");
                if let Some(target) = &opts.external {
                    sweep_external(target).await;
                }
                return ExitCode::from(exit_code::INTERRUPTED);
            }
        };
        reporter.finish();
        match outcome {
            Err(RunSetupError::Discover(e)) => {
                eprintln!("error: {e}");
                ExitCode::from(exit_code::SETUP)
            }
            Err(RunSetupError::Backend(e)) => {
                eprintln!("error: {e}");
                ExitCode::from(exit_code::BACKEND)
            }
            Ok(results) => {
                print!("{}", terminal::failure_details(&results));
                print!("{}", terminal::skip_notes(&results));
                print!("{}", terminal::check_notes(&results));
                if opts.verbose {
                    print!("{}", terminal::case_details(&results));
                }
                println!("{}", terminal::summary_table(&results));
                if let Err(e) = write_reports(&args.reports, &results) {
                    eprintln!("error: {e}");
                    return ExitCode::from(exit_code::REPORT);
                }
                if let Some(path) = &args.conformance.report_conformance
                    && let Err(e) = conformance::write(args, &opts, &paths, &results, path)
                {
                    eprintln!("error: {e}");
                    return ExitCode::from(exit_code::REPORT);
                }
                match opts.partition {
                    // One of several shards may hold nothing that runs here; the merge of
                    // the shards' reports fails when none ran anything.
                    Some(partition)
                        if !results.iter().any(crate::CaseResult::failed)
                            && results.iter().all(|r| r.outcome.skipped().is_some()) =>
                    {
                        eprintln!(
                            "note: shard {partition} ran no case ({} skipped); `gantry report \
                             merge` fails when the merged shards ran none",
                            results.len()
                        );
                        ExitCode::SUCCESS
                    }
                    _ => verdict(&results),
                }
            }
        }
    }
}

/// Removes what an interrupted external run made (its prefix's selectors), within 15 s.
async fn sweep_external(target: &crate::backend::ExternalTarget) {
    let sweep = async {
        let admin = target.login().await?;
        crate::target::external::sweep(&admin, &target.prefix).await
    };
    match tokio::time::timeout(Duration::from_secs(15), sweep).await {
        Ok(Ok(n)) => eprintln!(
            "removed {n} selector(s) named `{}*` from {}",
            target.prefix, target.admin_url
        ),
        Ok(Err(e)) => eprintln!(
            "error: could not remove the selectors named `{}*` from {}: {e}",
            target.prefix, target.admin_url
        ),
        Err(_) => eprintln!(
            "error: removing the selectors named `{}*` from {} took over 15 s",
            target.prefix, target.admin_url
        ),
    }
}

/// `gantry validate`: parses and validates every file without running anything, prints every
/// problem (`file:line:column: path: message`), every warning of a valid file
/// (`file:line:column: path: warning: message`, never failing it) and `N files, M problems`
/// (`, K warnings` when there are any).
fn validate(args: &args::ValidateArgs) -> ExitCode {
    let files = match crate::discover(&args.paths()) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(exit_code::SETUP);
        }
    };
    let (mut problems, mut warnings) = (0, 0);
    for file in &files {
        match &file.scenario {
            Err(e) => {
                println!("{e}");
                problems += e.problem_count();
            }
            Ok(scenario) => {
                for w in crate::scenario::parse::warnings(&file.path, scenario) {
                    println!("{}", w.render_warning(&file.path));
                    warnings += 1;
                }
            }
        }
    }
    let count = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let warned = if warnings == 0 {
        String::new()
    } else {
        format!(", {}", count(warnings, "warning"))
    };
    println!(
        "{}, {}{warned}",
        count(files.len(), "file"),
        count(problems, "problem")
    );
    if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(exit_code::FAILED)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CaseId, CaseOutcome, CaseResult};

    fn skipped(case: &str, why: &str) -> CaseResult {
        CaseResult::bare(
            CaseId::new(case, "websocket"),
            format!("{case}.yaml"),
            "external".into(),
            0,
            CaseOutcome::Skipped(why.into()),
        )
    }

    /// The message says why nothing ran, counted per reason, and suggests the flags only
    /// when an undeclared mode or backend skipped something.
    #[test]
    fn nothing_ran_says_the_real_reasons() {
        let lacking = crate::conformance::unsupported_reason(
            &["routing.upstreamHeader"],
            "its upstreams answer with bodies of their own",
        );
        let results: Vec<CaseResult> = (0..6)
            .map(|i| skipped(&format!("c{i}"), &lacking))
            .collect();
        let text = nothing_ran(&results);
        assert!(
            text.starts_with(
                "error: no case ran (6 skipped):\n  6 skipped: need unsupported feature(s) \
                 routing.upstreamHeader (e.g. c0@websocket: needs unsupported"
            ),
            "{text}"
        );
        assert!(!text.contains("--sync"), "{text}");
        let mut mixed = results;
        mixed.push(skipped(
            "h",
            "mode `websocket` not declared (modes: [http])",
        ));
        let text = nothing_ran(&mixed);
        assert!(
            text.contains("\n  1 skipped: mode `websocket` not declared (e.g. h@websocket"),
            "{text}"
        );
        assert!(
            text.ends_with(
                "check --sync, --backend and --filter against the scenarios' modes and backends"
            ),
            "{text}"
        );
        assert!(nothing_ran(&[]).contains("no scenario matched"));
    }
}
