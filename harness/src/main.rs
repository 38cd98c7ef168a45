//! `gantry`: runs scenario files against the admin and gateway binaries. See the `harness`
//! library for the engine.

mod cli;

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use harness::report::{json, terminal};
use harness::{ProcessEnv, RunSetupError, images};
use tokio::signal::unix::SignalKind;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let command = cli::Cli::parse().command;
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match command {
        cli::Command::Run(args) => runtime.block_on(run(&args)),
        cli::Command::Images(args) => runtime.block_on(images(args)),
        cli::Command::Upstream(args) => runtime.block_on(upstream(args)),
        cli::Command::Compose(args) => {
            print!("{}", harness::compose::render(args.sync));
            ExitCode::SUCCESS
        }
    }
}

/// `gantry images`: static build (unless `--bin-dir`), then build the changed images.
async fn images(args: cli::ImagesArgs) -> ExitCode {
    let started = Instant::now();
    let dir = match args.bin_dir {
        Some(dir) => dir,
        None => {
            eprintln!("building: {}", images::static_build_command());
            let workspace = Path::new(harness::WORKSPACE_DIR);
            match tokio::task::spawn_blocking(move || images::build_static(workspace)).await {
                Ok(Ok(dir)) => dir,
                Ok(Err(e)) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
                Err(e) => {
                    eprintln!("error: the static build panicked: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let built = async {
        let docker = harness::backend::docker::connect().await?;
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
            ExitCode::FAILURE
        }
    }
}

/// `gantry upstream`: one echo upstream until SIGINT or SIGTERM.
async fn upstream(args: cli::UpstreamArgs) -> ExitCode {
    let addr = std::net::SocketAddr::new(args.bind, args.port);
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: binding {addr}: {e}");
            return ExitCode::FAILURE;
        }
    };
    match listener.local_addr() {
        Ok(a) => println!("listening on http://{a}"),
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    }
    let shutdown = async {
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
    };
    match harness::upstream::serve(&args.name, listener, shutdown).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `gantry run`.
async fn run(args: &cli::RunArgs) -> ExitCode {
    let opts = args.options(&ProcessEnv);
    let paths = args.paths();
    {
        let total = harness::discover(&paths).map_or(0, |f| harness::count_cases(&f, &opts.modes));
        let reporter = terminal::TerminalReporter::new(total as u64);
        let on_event = |e: harness::Event| reporter.handle(&e);
        let outcome = tokio::select! {
            r = harness::run_paths(&paths, &opts, &on_event) => r,
            _ = tokio::signal::ctrl_c() => {
                reporter.finish();
                eprintln!("interrupted");
                return ExitCode::from(130);
            }
        };
        reporter.finish();
        match outcome {
            Err(RunSetupError::Discover(e)) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
            Err(RunSetupError::Backend(e)) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
            Ok(results) => {
                print!("{}", terminal::failure_details(&results));
                print!("{}", terminal::skip_notes(&results));
                print!("{}", terminal::check_notes(&results));
                println!("{}", terminal::summary_table(&results));
                if let Some(path) = &args.report_json
                    && let Err(e) = json::write(path, &results)
                {
                    eprintln!("error: writing {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
                if !results.iter().any(harness::CaseResult::failed) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
        }
    }
}
