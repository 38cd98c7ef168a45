//! Starting a gateway loaded with selectors on an admin of its own.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use futures_util::{StreamExt, TryStreamExt};
use model::SyncMode;

use super::super::{RawAdmin, divide_selector};
use super::report::GatewaySetup;
use crate::backend::{Backend, Run, Service};
use crate::client::{AdminClient, GatewayClient};

/// The path every target is asked for.
pub(crate) const PATH: &str = "/bench/echo";
/// How long a loaded gateway may take to sync its admin's config.
const SYNC_TIMEOUT: Duration = Duration::from_secs(180);

/// A gateway loaded with selectors; stopped on drop (gateway first).
#[derive(Debug)]
pub(super) struct Gantry {
    pub(super) gateway: Service,
    _admin: Service,
    _run: Run,
    _dir: tempfile::TempDir,
}

pub(super) fn temp_dir(keep: bool) -> anyhow::Result<tempfile::TempDir> {
    let mut dir = tempfile::Builder::new().prefix("gantry-bench-").tempdir()?;
    dir.disable_cleanup(keep);
    Ok(dir)
}

/// Starts an admin, loads `size` selectors (one routing `/bench/` to `upstream`), then starts
/// a gateway and waits until it holds them.
pub(super) async fn start_gantry(
    backend: &Backend,
    size: usize,
    upstream: SocketAddr,
    writers: usize,
    keep: bool,
) -> anyhow::Result<(Gantry, GatewaySetup)> {
    let dir = temp_dir(keep)?;
    let run = backend.begin(SyncMode::Websocket, keep).await?;
    let admin = run
        .start_admin(SyncMode::Websocket, None, dir.path())
        .await?;
    let client = AdminClient::login(
        admin.url(),
        super::super::ADMIN_USER,
        super::super::ADMIN_PASSWORD,
    )
    .await?;
    let raw = RawAdmin::login(admin.url()).await?;
    let plugin = client
        .plugin_id("divide")
        .await?
        .ok_or_else(|| anyhow::anyhow!("the admin has no divide plugin"))?;
    let up = upstream.to_string();
    let started = Instant::now();
    let (selector, mut rule) = divide_selector("bench", "/bench/", &up, &plugin);
    rule.selector_id = Some(raw.create_selector(&selector).await?);
    raw.create_rule(&rule).await?;
    futures_util::stream::iter(1..size)
        .map(|i| {
            let (s, _) =
                divide_selector(&format!("decoy-{i}"), &format!("/decoy/{i}/"), &up, &plugin);
            let raw = &raw;
            async move { raw.create_selector(&s).await }
        })
        .buffer_unordered(writers.max(1))
        .try_for_each(|_| async { Ok(()) })
        .await?;
    let load_ms = started.elapsed().as_secs_f64() * 1000.0;
    let started = Instant::now();
    let gateway = run
        .start_gateway(SyncMode::Websocket, &admin, None, dir.path())
        .await?;
    super::super::await_digests(&client, &GatewayClient::new(gateway.url()), SYNC_TIMEOUT).await?;
    let sync_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok((
        Gantry {
            gateway,
            _admin: admin,
            _run: run,
            _dir: dir,
        },
        GatewaySetup {
            selectors: size,
            load_ms,
            sync_ms,
        },
    ))
}

/// `http://127.0.0.1:1234` → `127.0.0.1:1234`.
pub(super) fn socket_addr(url: &str) -> anyhow::Result<SocketAddr> {
    let hostport = url.trim_start_matches("http://").trim_end_matches('/');
    hostport
        .parse()
        .map_err(|e| anyhow::anyhow!("not an address: {url}: {e}"))
}
