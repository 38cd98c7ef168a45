//! gantry in a program or test of your own (README, "gantry as a library"): start a websocket
//! topology on the host backend, make a route through the admin, wait until the gateway holds
//! it, send traffic, restart the gateway and see the route come back, then run one of the
//! workspace's scenario files as `gantry run` does. Everything is removed when `gantry` drops.
//!
//! Run it with `cargo build --workspace && cargo run --example own_test` (the admin and gateway
//! binaries must be built); CI runs the copy `cargo build --workspace --all-targets` builds,
//! `target/debug/examples/own_test`. It exits non-zero on the first thing that is not as
//! expected.

use std::path::PathBuf;

use harness::scenario::ast::{FaultAction, Target};
use harness::{BackendKind, Gantry, ProcessEnv, RunOptions};
use model::SyncMode;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gantry = Gantry::builder(SyncMode::Websocket)
        .backend(BackendKind::Host)
        .upstreams(["alpha", "beta"])
        .start()
        .await?;
    println!(
        "admin {} · gateway {}",
        gantry.admin_url(),
        gantry.gateway_url()
    );

    // A route, through the admin's REST API, live on the gateway.
    let admin = gantry.admin().await?;
    gantry.route(&admin, "hello", "/hello/", "beta").await?;
    let took = gantry.converged().await?;
    println!("the route is live after {:?}", took.first_seen);
    let upstream = served_by(&gantry, "/hello/world").await?;
    if upstream != "beta" {
        return Err(format!("/hello/world was served by {upstream:?}, not beta").into());
    }

    // A fault, as a case file's `restart: gateway` step: the route comes back.
    gantry
        .topology()
        .fault(FaultAction::Restart, Target::Gateway(None))
        .await?;
    gantry.converged().await?;
    let upstream = served_by(&gantry, "/hello/world").await?;
    if upstream != "beta" {
        return Err(format!("after a restart, /hello/world was served by {upstream:?}").into());
    }
    println!("the route survived a gateway restart");

    // A scenario file, on a topology of its own.
    let mut opts = RunOptions::from_env(&ProcessEnv);
    opts.build = false;
    opts.modes = vec![SyncMode::Websocket];
    let file = PathBuf::from(harness::WORKSPACE_DIR).join("cases/scenarios/routing/header.yaml");
    let results = harness::run_paths(&[file], &opts, &|_| {}).await?;
    for r in &results {
        let verdict = if r.outcome.passed() { "pass" } else { "FAIL" };
        println!("{}: {verdict}", r.id);
    }
    if results.is_empty() || results.iter().any(|r| !r.outcome.passed()) {
        return Err("the scenario file did not pass".into());
    }
    Ok(())
}

/// The upstream that answered `GET path` through the gateway (`x-gantry-upstream`).
async fn served_by(gantry: &Gantry, path: &str) -> Result<String, Box<dyn std::error::Error>> {
    let answer = reqwest::get(format!("{}{path}", gantry.gateway_url())).await?;
    let status = answer.status();
    let upstream = answer
        .headers()
        .get("x-gantry-upstream")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    upstream.ok_or_else(|| format!("GET {path}: HTTP {status} without an upstream").into())
}
