//! Sync publishers: how committed changes reach gateways. Each publisher subscribes to the
//! admin's change dispatcher ([`crate::service::Admin::subscribe`]); several run at once
//! (`--sync websocket,http`).

pub(crate) mod etcd;
pub(crate) mod fault;
mod full_sync_rate;
pub(crate) mod http_long_poll;
pub(crate) mod keyspace;
pub(crate) mod status;
pub(crate) mod websocket;
pub(crate) mod zookeeper;

use std::fmt;
use std::sync::Arc;

use axum::Router;
use model::SyncMode;
use tokio::sync::watch;

use crate::service::Admin;
use crate::{AppState, Config, StartError};

/// A way of pushing config to gateways.
pub(crate) trait Publisher: Send + Sync + fmt::Debug {
    /// The sync mode it implements.
    fn mode(&self) -> SyncMode;
    /// The endpoints gateways connect to.
    fn routes(&self) -> Router<AppState>;
}

/// Fails unless gantry-admin can run a publisher for `mode` with `config`.
pub(crate) fn check_supported(mode: SyncMode, config: &Config) -> Result<(), StartError> {
    let missing = |flag| Err(StartError::MissingSyncUrl { mode, flag });
    match mode {
        SyncMode::Websocket | SyncMode::Http => Ok(()),
        SyncMode::Zookeeper if config.zookeeper_url.is_none() => missing("--zookeeper-url"),
        SyncMode::Etcd if config.etcd_url.is_none() => missing("--etcd-url"),
        SyncMode::Zookeeper | SyncMode::Etcd => Ok(()),
    }
}

/// Starts the publisher for `mode` over `admin`; its background work (if any) stops when it
/// is dropped or the admin is. `faults`: the test-only protocol fault hook, when on.
pub(crate) fn publisher(
    mode: SyncMode,
    admin: &Arc<Admin>,
    config: &Config,
    faults: Option<&Arc<fault::SyncFaults>>,
    status: &Arc<status::SyncStatus>,
) -> Result<Box<dyn Publisher>, StartError> {
    check_supported(mode, config)?;
    Ok(match mode {
        SyncMode::Websocket => Box::new(websocket::WebsocketPublisher::new(
            config.sync_token.as_deref().filter(|t| !t.is_empty()),
            config.full_sync_interval,
            config.full_sync_rate,
            config.max_websocket_sessions,
            faults.cloned(),
            Arc::clone(status),
        )),
        SyncMode::Http => Box::new(
            http_long_poll::HttpLongPollPublisher::start(
                admin,
                config.long_poll_hold,
                config.long_poll_refresh,
                faults.cloned(),
                Arc::clone(status),
            )
            .comparing_times(config.emulates(crate::EmulatedBug::CompareLastModifyTime)),
        ),
        SyncMode::Zookeeper => {
            let url = config
                .zookeeper_url
                .as_deref()
                .ok_or(StartError::MissingSyncUrl {
                    mode,
                    flag: "--zookeeper-url",
                })?;
            Box::new(zookeeper::ZookeeperPublisher::start(admin, url, status))
        }
        SyncMode::Etcd => {
            let url = config
                .etcd_url
                .as_deref()
                .ok_or(StartError::MissingSyncUrl {
                    mode,
                    flag: "--etcd-url",
                })?;
            Box::new(etcd::EtcdPublisher::start(admin, url, status))
        }
    })
}

/// Completes when the admin shuts down (or is gone).
pub(crate) async fn closed(closing: &mut watch::Receiver<bool>) {
    // An error means the sender is gone: the admin is gone too.
    let _ = closing.wait_for(|closing| *closing).await;
}
