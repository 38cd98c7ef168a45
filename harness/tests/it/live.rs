//! The live topology of the trials that push generated config through the admin and compare
//! the gateway's answers with a reference model (`properties`, `selector_choice`): an admin, a
//! gateway and the echo upstream `alpha` on the host backend, the divide plugin's id, a divide
//! handle that routes to `alpha`, and the wait until the gateway serves the admin's config.

use std::time::Duration;

use harness::client::{AdminClient, GatewayClient};
use harness::internals::topology::Topology;
use harness::internals::wait::{WaitPolicy, await_convergence};
use harness::scenario::ast::UpstreamDecl;
use harness::{Backend, BackendKind};
use libtest_mimic::Failed;
use model::{DivideUpstream, SyncMode};

/// Digest waits: every 20 ms, 30 s deadline.
const CONVERGE: WaitPolicy = WaitPolicy {
    consecutive: 1,
    interval: Duration::from_millis(20),
    timeout: Duration::from_secs(30),
};

/// A running topology ready for divide selectors.
pub(crate) struct DivideTopology {
    pub(crate) topo: Topology,
    pub(crate) admin: AdminClient,
    pub(crate) gateway: GatewayClient,
    /// For requests the gateway client cannot send as generated (odd paths and headers).
    pub(crate) http: reqwest::Client,
    /// The divide plugin's id on the admin.
    pub(crate) plugin_id: String,
    /// A divide selector handle: `alpha`, weight 50.
    pub(crate) handle: String,
    /// Selectors the admin holds at start (none made by the trial).
    pub(crate) baseline: usize,
}

impl DivideTopology {
    /// Starts it under `mode` and waits until the gateway serves the admin's config.
    pub(crate) async fn start(mode: SyncMode) -> Result<DivideTopology, Failed> {
        let bin_dir = harness::internals::backend::host::bin_dir_from_env()?;
        let backend = Backend::new(BackendKind::Host, bin_dir)?;
        let topo =
            Topology::start(&backend, mode, &[UpstreamDecl::echo("alpha")], &[], false).await?;
        let admin = AdminClient::login(topo.admin().url(), "admin", "123456").await?;
        let gateway = GatewayClient::new(topo.gateway().url());
        let plugin_id = admin
            .plugin_id("divide")
            .await?
            .ok_or("the admin has no divide plugin")?;
        let upstream = topo.upstream("alpha").ok_or("no upstream alpha")?;
        let handle = serde_json::to_string(&[DivideUpstream {
            protocol: "http://".to_owned(),
            upstream_url: upstream.host_port(),
            upstream_host: Some("localhost".to_owned()),
            weight: 50,
            status: true,
            ..Default::default()
        }])?;
        let baseline = admin.digest().await?.selectors;
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()?;
        let live = DivideTopology {
            topo,
            admin,
            gateway,
            http,
            plugin_id,
            handle,
            baseline,
        };
        live.converge(0, "at start").await?;
        Ok(live)
    }

    /// Waits until the gateway serves the admin's config, with `ours` selectors besides the
    /// [`DivideTopology::baseline`]; the error says `when`, both digests and the log tails.
    pub(crate) async fn converge(&self, ours: usize, when: &str) -> Result<(), String> {
        let want = self.baseline + ours;
        await_convergence(CONVERGE, || async {
            let a = self.admin.digest().await.map_err(|e| e.to_string())?;
            let g = self.gateway.digest().await.map_err(|e| e.to_string())?;
            if a.digest == g.report.digest && a.selectors == want {
                Ok(())
            } else {
                Err(format!(
                    "admin {} ({} selectors, want {want}), gateway {} ({} selectors)",
                    a.digest, a.selectors, g.report.digest, g.report.selectors
                ))
            }
        })
        .await
        .map(drop)
        .map_err(|t| format!("{when}: {t}\n{}", self.topo.log_tails(20)))
    }
}
