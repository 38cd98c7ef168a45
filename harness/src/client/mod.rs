//! HTTP clients for the admin's REST API and the gateway.

pub mod admin;
pub mod gateway;
pub mod profile;

pub use admin::AdminClient;
pub use gateway::GatewayClient;
pub use profile::{Profile, UnknownProfile};

use std::time::Duration;

use crate::error::ClientError;

/// A reqwest client that ignores proxy settings (everything is on loopback).
pub(crate) fn http() -> reqwest::Client {
    http_builder()
        .build()
        .expect("a client without TLS or proxies always builds")
}

/// The builder behind [`http`]: no proxies, a 10 s timeout.
pub(crate) fn http_builder() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
}

/// Sends `req`, returning status and body text.
pub(crate) async fn send(
    what: &str,
    req: reqwest::RequestBuilder,
) -> Result<(u16, String), ClientError> {
    let http_err = |source| ClientError::Http {
        what: what.to_owned(),
        source,
    };
    let resp = req.send().await.map_err(http_err)?;
    let status = resp.status().as_u16();
    let body = resp.text().await.map_err(http_err)?;
    Ok((status, body))
}
