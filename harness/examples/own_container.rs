//! A container of your own beside gantry's (docs/library.md, "A container of your own"): on
//! the docker backend, an upstream image joins the run's upstream network under a name of its
//! own, a route sends `/theirs/` to it, and the gateway serves it once converged.
//!
//! Needs docker and `gantry images` (the `gantry/*:dev` images). CI builds it
//! (`cargo build --workspace --all-targets`) so the chapter's code compiles; the docker trial
//! `docker::a_container_of_your_own_sits_beside_gantry` runs the same steps.

use harness::testcontainers::core::IntoContainerPort;
use harness::testcontainers::runners::AsyncRunner;
use harness::testcontainers::{GenericImage, ImageExt};
use harness::{BackendKind, Gantry};
use model::SyncMode;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let gantry = Gantry::builder(SyncMode::Websocket)
        .backend(BackendKind::Docker)
        .start()
        .await?;
    let admin = gantry.admin().await?;

    let (network, _) = gantry.docker_networks().ok_or("not a docker run")?;
    let theirs = GenericImage::new("gantry/upstream", "dev")
        .with_exposed_port(8080.tcp())
        .with_network(&network)
        .with_container_name("theirs")
        .with_cmd(["--name", "theirs", "--bind", "0.0.0.0", "--port", "8080"])
        .start()
        .await?;
    gantry
        .route_to_address(&admin, "theirs", "/theirs/", "theirs:8080")
        .await?;
    gantry.converged().await?;

    let answer = reqwest::get(format!("{}/theirs/hello", gantry.gateway_url())).await?;
    assert_eq!(answer.headers()["x-gantry-upstream"], "theirs");
    theirs.rm().await?;
    Ok(())
}
