//! [`GatewayClient`]: probe requests, digest and health.

use model::AppliedDigest;
#[cfg(doc)]
use model::DigestReport;

use super::{http, send};
use crate::error::ClientError;
use crate::probe::ProbeResponse;
use crate::scenario::ast::RequestSpec;

/// A client for one gateway.
#[derive(Debug, Clone)]
pub struct GatewayClient {
    base: String,
    http: reqwest::Client,
    /// The gateway answers its errors with HTTP 200 (ShenYu): see
    /// [`ProbeResponse::in_gantry_terms`].
    errors_with_200: bool,
}

/// `GET {base}/actuator/digest`, decoded as `T` (the admin's [`DigestReport`], the gateway's
/// [`AppliedDigest`]).
pub(crate) async fn digest<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    base: &str,
) -> Result<T, ClientError> {
    let what = format!("GET {base}/actuator/digest");
    let (status, body) = send(&what, http.get(format!("{base}/actuator/digest"))).await?;
    read_digest(what, status, body)
}

/// The digest a `GET /actuator/digest` (`what`) answered with `status` and `body`.
pub(crate) fn read_digest<T: serde::de::DeserializeOwned>(
    what: String,
    status: u16,
    body: String,
) -> Result<T, ClientError> {
    if status != 200 {
        return Err(ClientError::Status { what, status, body });
    }
    serde_json::from_str(&body).map_err(|e| ClientError::Body {
        what,
        detail: e.to_string(),
        body,
    })
}

impl GatewayClient {
    /// A client for the gateway at `base` (e.g. `http://127.0.0.1:9195`).
    pub fn new(base: &str) -> Self {
        Self {
            base: base.trim_end_matches('/').to_owned(),
            http: http(),
            errors_with_200: false,
        }
    }

    /// The same client, reading 200 answers with a gateway error body as ShenYu means them
    /// (`ProbeResponse::in_gantry_terms`).
    pub fn errors_with_200(self, yes: bool) -> Self {
        Self {
            errors_with_200: yes,
            ..self
        }
    }

    /// This client with its connections from `source` (e.g. `127.0.0.7`, for the hash
    /// balancer's per-client judging; any 127.0.0.0/8 address works on loopback).
    pub fn from_source(&self, source: std::net::IpAddr) -> Self {
        Self {
            http: super::http_builder()
                .local_address(source)
                .build()
                .expect("a client without TLS or proxies always builds"),
            ..self.clone()
        }
    }

    /// Sends a scenario request and returns the whole answer, in gantry's terms
    /// (`ProbeResponse::in_gantry_terms`).
    pub async fn send(&self, req: &RequestSpec) -> Result<ProbeResponse, ClientError> {
        let what = format!("{} {}", req.method, req.path);
        let bad = |detail: String| ClientError::Body {
            what: what.clone(),
            detail,
            body: String::new(),
        };
        let mut url = reqwest::Url::parse(&format!("{}{}", self.base, req.path))
            .map_err(|e| bad(e.to_string()))?;
        if !req.query.is_empty() {
            url.query_pairs_mut().extend_pairs(&req.query);
        }
        let method =
            reqwest::Method::from_bytes(req.method.as_bytes()).map_err(|e| bad(e.to_string()))?;
        let mut builder = self.http.request(method, url);
        for (k, v) in &req.headers {
            builder = builder.header(k, v);
        }
        if let Some(body) = &req.body {
            builder = builder.body(body.clone());
        }
        let resp = builder.send().await.map_err(|source| ClientError::Http {
            what: what.clone(),
            source,
        })?;
        let status = resp.status().as_u16();
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let body = resp
            .text()
            .await
            .map_err(|source| ClientError::Http { what, source })?;
        Ok(ProbeResponse {
            status,
            headers,
            body,
        }
        .in_gantry_terms(self.errors_with_200))
    }

    /// The gateway's config digest, with its version and when it went live.
    pub async fn digest(&self) -> Result<AppliedDigest, ClientError> {
        digest(&self.http, &self.base).await
    }

    /// `GET /actuator/selectorData` (the selectors the gateway holds): status and body.
    pub async fn selector_data(&self) -> Result<(u16, String), ClientError> {
        send(
            "GET /actuator/selectorData",
            self.http
                .get(format!("{}/actuator/selectorData", self.base)),
        )
        .await
    }

    /// `GET /actuator/health`: status and body.
    pub async fn health(&self) -> Result<(u16, String), ClientError> {
        send(
            "GET /actuator/health",
            self.http.get(format!("{}/actuator/health", self.base)),
        )
        .await
    }
}
