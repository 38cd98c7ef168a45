//! Starting a gateway's sync: the subscriber of [`Config::sync`], and the emulated bug's
//! refills (`emulate.rs`) when it holds events back.

use std::sync::Arc;

use model::SyncMode;
use netserve::Connect;
use tokio::task::JoinHandle;

use super::etcd::EtcdSubscriber;
use super::http_long_poll::{Credentials, HttpLongPollSubscriber};
use super::websocket::WebsocketSubscriber;
use super::zookeeper::ZookeeperSubscriber;
use super::{Subscriber, SyncState};
use crate::config::Config;

/// The running sync tasks; dropping it stops them.
#[derive(Debug)]
pub(crate) struct Running {
    /// The subscriber's task, and the refills' task.
    tasks: [JoinHandle<()>; 2],
}

impl Drop for Running {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Starts the subscriber `config` asks for on `state` (and the emulated bug's refills); fails
/// when the subscriber cannot be made (a bad admin URL). The websocket and long-polling
/// subscribers connect through `net`; the ZooKeeper and etcd clients open their own.
pub(crate) fn start<C: Connect>(
    config: &Config,
    net: C,
    state: &Arc<SyncState>,
) -> anyhow::Result<Running> {
    if let Some(bug) = config.emulate_bug {
        tracing::warn!(?bug, "emulating a known ShenYu gateway bug: for tests only");
    }
    let subscriber = match config.sync {
        SyncMode::Http => {
            let credentials = Credentials {
                username: config.username.clone(),
                password: config.password.clone(),
            };
            let subscriber = HttpLongPollSubscriber::new(
                net,
                &config.admin_urls,
                credentials,
                config.sync_timeouts,
                config.sync_style,
            )?;
            tokio::spawn(subscriber.run(state.clone()))
        }
        SyncMode::Zookeeper => {
            let url = config.zookeeper_url.as_deref().unwrap_or_default();
            let subscriber =
                ZookeeperSubscriber::new(url, config.sync_timeouts.silence, config.sync_style);
            let run = subscriber.run(state.clone());
            tokio::spawn(super::confirm::beside(run, state.clone(), url.to_owned()))
        }
        SyncMode::Etcd => {
            let url = config.etcd_url.as_deref().unwrap_or_default();
            let subscriber =
                EtcdSubscriber::new(url, config.sync_timeouts.silence, config.sync_style);
            let run = subscriber.run(state.clone());
            tokio::spawn(super::confirm::beside(run, state.clone(), url.to_owned()))
        }
        SyncMode::Websocket => {
            let subscriber = WebsocketSubscriber::new(
                net,
                &config.admin_urls,
                config.sync_token.as_deref(),
                config.sync_timeouts.silence,
                config.sync_style,
            )?;
            tokio::spawn(subscriber.run(state.clone()))
        }
    };
    let refills = tokio::spawn(state.clone().refills());
    Ok(Running {
        tasks: [subscriber, refills],
    })
}
