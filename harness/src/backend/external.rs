//! The external backend: an admin and a gateway that someone else runs (a real ShenYu,
//! another ShenYu-compatible gateway, or gantry's own started by hand), as the backend sees
//! them: where they are and where the upstreams listen ([`ExternalTarget`]), and what they
//! offer ([`Capabilities`]). A run on it starts only the echo upstreams, on `--upstream-bind`,
//! and the admin routes to them at `--upstream-advertise`.
//!
//! Connecting to a target, probing what it offers, removing the run's selectors and deciding
//! which scenarios it can run are the engine's ([`crate::target::external`]).

use std::net::IpAddr;

use crate::client::{AdminClient, Profile};
use crate::error::ClientError;

/// Where the target is and how to reach it: what `gantry run --backend external` is told.
#[derive(Clone, PartialEq, Eq)]
pub struct ExternalTarget {
    /// The admin's base URL (`http://host:9095`).
    pub admin_url: String,
    /// The gateway's base URL (`http://host:9195`).
    pub gateway_url: String,
    /// The admin user the engine logs in as.
    pub user: String,
    /// Its password.
    pub password: String,
    /// The address the upstreams listen on (a port each, picked free).
    pub upstream_bind: IpAddr,
    /// The host the gateway reaches the upstreams at (what the divide upstreams say).
    pub upstream_advertise: String,
    /// The admin REST API's version profile (`--profile`, docs/profiles.md).
    pub profile: Profile,
    /// The prefix of every selector name this run creates: `gantry-<8 hex digits>-`.
    pub prefix: String,
}

impl std::fmt::Debug for ExternalTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalTarget")
            .field("admin_url", &self.admin_url)
            .field("gateway_url", &self.gateway_url)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("upstream_bind", &self.upstream_bind)
            .field("upstream_advertise", &self.upstream_advertise)
            .field("profile", &self.profile)
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl ExternalTarget {
    /// A fresh run prefix: `gantry-` and 8 random hex digits and `-`.
    pub fn fresh_prefix() -> String {
        format!("gantry-{:08x}-", rand::random::<u32>())
    }

    /// The name a selector called `name` gets on the target: the run's prefix and `name`.
    pub fn selector_name(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// Logs in to the admin, speaking its profile.
    pub async fn login(&self) -> Result<AdminClient, ClientError> {
        AdminClient::login_as(&self.admin_url, &self.user, &self.password, self.profile).await
    }
}

/// What the target offers besides ShenYu's protocol; found by the engine's probe
/// (`crate::target::external::probe`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Capabilities {
    /// Admin and gateway serve gantry's config digest (`GET /actuator/digest`): digest
    /// equality after each change, and the time a change went live on the gateway.
    pub digest: bool,
    /// The gateway names the selector and rule that matched (`x-gantry-selector-id`,
    /// `x-gantry-rule-id`): a scenario's `selector:` and `rule:` expectations.
    pub route_headers: bool,
    /// The upstream's `x-gantry-upstream` header reaches the client (else the engine reads
    /// the upstream's name from the echo body).
    pub upstream_header: bool,
    /// The gateway answers its error bodies with HTTP 200, as ShenYu does (gantry's gateway
    /// answers them with a real status).
    pub errors_with_200: bool,
}

impl Capabilities {
    /// Everything gantry's own admin and gateway offer (the host and docker backends).
    pub const GANTRY: Capabilities = Capabilities {
        digest: true,
        route_headers: true,
        upstream_header: true,
        errors_with_200: false,
    };

    /// What a ShenYu admin and gateway offer: none of gantry's extras, errors with HTTP 200
    /// (what gantry's gateway offers with `--hide-extras`).
    pub const SHENYU: Capabilities = Capabilities {
        digest: false,
        route_headers: false,
        upstream_header: false,
        errors_with_200: true,
    };

    /// One line for the run's log: what is there and what the engine does instead.
    pub fn describe(&self) -> String {
        let yes_no = |b: bool, yes: &str, no: &str| if b { yes } else { no }.to_owned();
        [
            yes_no(
                self.digest,
                "config digest: yes",
                "config digest: no (convergence from probes only)",
            ),
            yes_no(
                self.route_headers,
                "selector/rule headers: yes",
                "selector/rule headers: no (`rule:` not judged, `selector:` judged by the upstream \
                 where it can be, per key)",
            ),
            yes_no(
                self.upstream_header,
                "upstream header: yes",
                "upstream header: no (the upstream named by the echo body)",
            ),
            yes_no(
                self.errors_with_200,
                "error answers: HTTP 200 + code (ShenYu)",
                "error answers: real HTTP status",
            ),
        ]
        .join("; ")
    }
}

/// An external target, probed and ready to run cases against (made by
/// `crate::target::external::connect`).
#[derive(Debug, Clone)]
pub struct ExternalBackend {
    /// The target.
    pub target: ExternalTarget,
    /// What it offers.
    pub capabilities: Capabilities,
}
