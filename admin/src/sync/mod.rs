//! Sync publishers: how committed changes reach gateways. Each publisher subscribes to the
//! admin's change dispatcher ([`crate::service::Admin::subscribe`]).

pub(crate) mod websocket;

use std::fmt;

use axum::Router;
use model::SyncMode;

use crate::AppState;
use crate::StartError;

/// A way of pushing config to gateways.
pub(crate) trait Publisher: Send + Sync + fmt::Debug {
    /// The sync mode it implements.
    fn mode(&self) -> SyncMode;
    /// The endpoints gateways connect to.
    fn routes(&self) -> Router<AppState>;
}

/// The publisher for `mode`, if gantry-admin has one.
pub(crate) fn publisher(mode: SyncMode) -> Result<Box<dyn Publisher>, StartError> {
    match mode {
        SyncMode::Websocket => Ok(Box::new(websocket::WebsocketPublisher)),
        SyncMode::Http | SyncMode::Zookeeper | SyncMode::Etcd => {
            Err(StartError::UnsupportedSync(mode.as_str().to_owned()))
        }
    }
}
