//! `gantry`: runs scenario files against the admin and gateway binaries. See the `harness`
//! library for the engine.

mod cli;

use std::process::ExitCode;

use clap::Parser;
use harness::report::{json, terminal};
use harness::{ProcessEnv, RunSetupError};

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let cli::Cli {
        command: cli::Command::Run(args),
    } = cli::Cli::parse();
    let opts = args.options(&ProcessEnv);
    let paths = args.paths();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async {
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
                println!("{}", terminal::summary_table(&results));
                if let Some(path) = &args.report_json
                    && let Err(e) = json::write(path, &results)
                {
                    eprintln!("error: writing {}: {e}", path.display());
                    return ExitCode::FAILURE;
                }
                if results.iter().all(|r| r.passed) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                }
            }
        }
    })
}
