//! HTTP long-polling subscriber (ShenYu `HttpSyncDataService`, protocol §4).
//!
//! One task per admin URL, all sharing one group cache (`md5`, `lastModifyTime` per group):
//!
//! 1. log in: `POST /platform/login` `{"userName","password"}`; the token goes in
//!    `X-Access-Token`. Logged in again once 90 % of `expiredTime` (ms) has passed, or when the
//!    admin answers HTTP 401 / code 600.
//! 2. `GET /configs/fetch?groupKeys=PLUGIN&…` for all five groups gantry models.
//! 3. loop: `POST /configs/listener` with the form body `PLUGIN=<md5>,<lastModifyTime>&…`
//!    (a group with nothing cached sends `00000000000000000000000000000000,0`); a non-empty
//!    answer → fetch just those groups from the same admin; an empty or `null` answer → poll
//!    again. With [`SyncStyle::Full`] (`--sync-style full`) a non-empty answer fetches every
//!    group: long polling has no increments (a fetched group replaces the one held), so the
//!    full style only widens each fetch to the whole config.
//!
//! A fetched group is accepted when nothing is cached for it yet, or when its `md5` differs
//! **and** its `lastModifyTime` is strictly newer (so a stale admin never rolls the config
//! back), or when its `md5` differs and it comes from the admin whose data is held: one
//! admin's answers never go back, so an older time from it means its clock went back (a
//! difference from ShenYu, which refuses such a group until the admin's clock passes the
//! held time). An accepted group replaces that group in one snapshot swap.
//!
//! A silent admin (a partition that closes nothing) is noticed by the read timeout: the
//! admin's hold plus the silence bound (60 s + 10 s by default; ShenYu: 90 s), after which
//! the session ends, `/actuator/health` says disconnected and the subscriber starts over.
//!
//! Differences from ShenYu: errors back off from 100 ms doubling to 5 s with jitter (ShenYu
//! sleeps 5 s ten times, then 5 min); a listener answer naming groups that turn out not to be
//! newer (a stale admin) also backs off (ShenYu sleeps 5 s); start-up never aborts when no
//! admin answers, the subscriber keeps retrying; after any error the admin's groups are
//! fetched again in full.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use model::{
    AdminResult, ConfigGroup, LoginRequest, LoginResponse, SyncStyle, admin_code, url_codec,
};
use netserve::{Connect, net::Connector};
use serde::Deserialize;
use tokio::time::Instant;

use super::{Backoff, Subscriber, SyncError, SyncState, back_off};
use model::lock::MutexExt;

/// The groups gantry asks for, in ShenYu's fetch order.
const GROUPS: [ConfigGroup; 5] = [
    ConfigGroup::Plugin,
    ConfigGroup::Selector,
    ConfigGroup::Rule,
    ConfigGroup::MetaData,
    ConfigGroup::AppAuth,
];
/// The md5 sent for a group with nothing cached (non-empty, so ShenYu's admin accepts it).
const NO_MD5: &str = "00000000000000000000000000000000";
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const ACCESS_TOKEN: &str = "X-Access-Token";

/// Login credentials for the admin.
#[derive(Debug, Clone)]
pub(crate) struct Credentials {
    /// User name.
    pub(crate) username: String,
    /// Password (sent as is; no AES).
    pub(crate) password: String,
}

/// What the gateway holds of one group.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Held {
    md5: String,
    last_modify_time: i64,
    /// The admin it came from (its base URL).
    from: Arc<str>,
}

/// The per-group versions shared by every admin's task.
#[derive(Debug, Default)]
struct GroupCache {
    groups: HashMap<ConfigGroup, Held>,
}

impl GroupCache {
    /// ShenYu's "update if needed": nothing held → accept; otherwise the md5 must differ and
    /// the time must be strictly newer, unless the data held came from `admin` itself (whose
    /// answers never go back: an older time from it is its clock gone back, which would
    /// otherwise keep the gateway on its old data until the clock passes the held time).
    fn accepts(&self, group: ConfigGroup, md5: &str, last_modify_time: i64, admin: &str) -> bool {
        self.groups.get(&group).is_none_or(|held| {
            held.md5 != md5 && (last_modify_time > held.last_modify_time || *held.from == *admin)
        })
    }

    /// The listener's form body, values encoded as ShenYu's `RestTemplate` form writer does
    /// (`URLEncoder`; an md5 is hex, but the admin's text is not trusted).
    fn listener_form(&self) -> String {
        GROUPS
            .iter()
            .map(|g| match self.groups.get(g) {
                Some(h) => format!("{g}={}%2C{}", url_codec::encode(&h.md5), h.last_modify_time),
                None => format!("{g}={NO_MD5}%2C0"),
            })
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// One group of a `/configs/fetch` answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FetchedGroup {
    md5: String,
    last_modify_time: i64,
    #[serde(default)]
    data: Vec<serde_json::Value>,
}

/// The long-polling subscriber, reaching the admins through `C` (the real network, or the
/// simulator's).
#[derive(Debug)]
pub(crate) struct HttpLongPollSubscriber<C> {
    admins: Vec<String>,
    credentials: Credentials,
    client: Client<Connector<C>, Full<Bytes>>,
    /// The longest a request may take, its answer's body included.
    read_timeout: Duration,
    cache: Arc<Mutex<GroupCache>>,
    /// [`SyncStyle::Full`]: a listener answer fetches every group, not just those it names.
    style: SyncStyle,
}

/// A login token and when to renew it.
#[derive(Debug)]
struct Token {
    value: String,
    renew_at: Option<Instant>,
}

impl<C: Connect> HttpLongPollSubscriber<C> {
    /// A subscriber for admin base URLs (`http://host:port`), at least one, connecting
    /// through `net`. A request waits at most the admin's hold plus the silence bound of
    /// `timeouts`.
    pub(crate) fn new(
        net: C,
        admin_urls: &[String],
        credentials: Credentials,
        timeouts: crate::SyncTimeouts,
        style: SyncStyle,
    ) -> anyhow::Result<HttpLongPollSubscriber<C>> {
        let client = Client::builder(TokioExecutor::new())
            .build(Connector::new(net).connect_timeout(CONNECT_TIMEOUT));
        Ok(HttpLongPollSubscriber {
            read_timeout: timeouts.long_poll_hold + timeouts.silence,
            admins: admin_urls
                .iter()
                .map(|u| base_url(u))
                .filter(|u| !u.is_empty())
                .collect(),
            credentials,
            client,
            cache: Arc::default(),
            style,
        })
    }

    /// One admin's loop; never returns.
    async fn poll_admin(&self, admin: &str, state: &SyncState) {
        let mut backoff = Backoff::new();
        let mut token: Option<Token> = None;
        loop {
            let Err(e) = self.session(admin, state, &mut token, &mut backoff).await;
            if matches!(e, SyncError::Unauthorized { .. }) {
                token = None;
            }
            tracing::warn!(error = %e, "http sync: trying again");
            back_off(&mut backoff).await;
        }
    }

    /// Logs in when needed, fetches every group, then long-polls until an error.
    async fn session(
        &self,
        admin: &str,
        state: &SyncState,
        token: &mut Option<Token>,
        backoff: &mut Backoff,
    ) -> Result<std::convert::Infallible, SyncError> {
        let value = self.token(admin, token).await?;
        self.fetch(admin, &value, &GROUPS, state).await?;
        let _connected = state.connected();
        tracing::info!(%admin, "http sync: fetched all groups; long polling");
        backoff.reset();
        loop {
            let value = self.token(admin, token).await?;
            let changed = self.listen(admin, &value, state).await?;
            if changed.is_empty() {
                backoff.reset();
                continue;
            }
            let fetch = match self.style {
                SyncStyle::Incremental => &changed[..],
                SyncStyle::Full => &GROUPS[..],
            };
            if self.fetch(admin, &value, fetch, state).await? > 0 {
                backoff.reset();
            } else {
                tracing::debug!(%admin, ?changed, "http sync: nothing newer; backing off");
                back_off(backoff).await;
            }
        }
    }

    /// The current token, logging in when there is none or it is due for renewal.
    async fn token(&self, admin: &str, token: &mut Option<Token>) -> Result<String, SyncError> {
        if let Some(t) = token
            && t.renew_at.is_none_or(|at| Instant::now() < at)
        {
            return Ok(t.value.clone());
        }
        let url = format!("{admin}/platform/login");
        let body = serde_json::to_vec(&LoginRequest {
            user_name: self.credentials.username.clone(),
            password: self.credentials.password.clone(),
        })?;
        let answer = self
            .send(
                &url,
                Method::POST,
                None,
                Some(("application/json", body)),
                None,
            )
            .await?;
        let login: LoginResponse = read_envelope(&url, answer)?;
        let renew_at = u64::try_from(login.expired_time)
            .ok()
            .filter(|ms| *ms > 0)
            .map(|ms| Instant::now() + Duration::from_millis(ms / 10 * 9));
        tracing::info!(%admin, "http sync: logged in");
        let value = login.token;
        *token = Some(Token {
            value: value.clone(),
            renew_at,
        });
        Ok(value)
    }

    /// `POST /configs/listener`: the groups the admin says changed (gantry's five only).
    async fn listen(
        &self,
        admin: &str,
        token: &str,
        state: &SyncState,
    ) -> Result<Vec<ConfigGroup>, SyncError> {
        let url = format!("{admin}/configs/listener");
        let form = self.cache.locked().listener_form();
        let answer = self
            .send(
                &url,
                Method::POST,
                Some(token),
                Some(("application/x-www-form-urlencoded", form.into_bytes())),
                state.confirmation_header(),
            )
            .await?;
        let names: Option<Vec<String>> = read_envelope(&url, answer)?;
        Ok(names
            .unwrap_or_default()
            .iter()
            .filter_map(|n| n.parse::<ConfigGroup>().ok())
            .filter(|g| GROUPS.contains(g))
            .collect())
    }

    /// `GET /configs/fetch` for `groups`; applies every accepted group and answers how many
    /// were. A malformed answer is counted and changes nothing; a malformed group is counted
    /// and skipped.
    async fn fetch(
        &self,
        admin: &str,
        token: &str,
        groups: &[ConfigGroup],
        state: &SyncState,
    ) -> Result<usize, SyncError> {
        let query = groups
            .iter()
            .map(|g| format!("groupKeys={g}"))
            .collect::<Vec<_>>()
            .join("&");
        let url = format!("{admin}/configs/fetch?{query}");
        let confirm = state.confirmation_header();
        let answer = self
            .send(&url, Method::GET, Some(token), None, confirm)
            .await?;
        let fetched: HashMap<String, FetchedGroup> = match read_envelope::<Option<_>>(&url, answer)
        {
            Ok(data) => data.unwrap_or_default(),
            Err(e @ SyncError::Malformed(_)) => {
                state.reject();
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        let mut fetched: Vec<(ConfigGroup, FetchedGroup)> = fetched
            .into_iter()
            .filter_map(|(name, g)| Some((name.parse::<ConfigGroup>().ok()?, g)))
            .filter(|(group, _)| groups.contains(group))
            .collect();
        // Plugins before selectors before rules, as ShenYu applies them.
        fetched.sort_by_key(|(group, _)| GROUPS.iter().position(|g| g == group));
        let mut accepted = 0;
        for (group, g) in fetched {
            // Held across check and apply so two admins cannot interleave.
            let mut cache = self.cache.locked();
            if !cache.accepts(group, &g.md5, g.last_modify_time, admin) {
                continue;
            }
            let held = Held {
                md5: g.md5,
                last_modify_time: g.last_modify_time,
                from: Arc::from(admin),
            };
            match state.apply_group(group, g.data) {
                Ok(_) => {
                    cache.groups.insert(group, held);
                    accepted += 1;
                    tracing::debug!(%admin, %group, "http sync: group applied");
                }
                Err(e) => {
                    tracing::warn!(%admin, %group, error = %e, "http sync: rejected group");
                    if state.emulates(crate::EmulatedBug::RecordRejectedVersion) {
                        cache.groups.insert(group, held);
                    }
                }
            }
        }
        Ok(accepted)
    }

    /// One request to `url`, with the access token, a body (its content type) and the sync
    /// confirmation header (`confirm.rs`) when given: the answer's status and whole body,
    /// within the read timeout.
    async fn send(
        &self,
        url: &str,
        method: Method,
        token: Option<&str>,
        body: Option<(&'static str, Vec<u8>)>,
        confirm: Option<http::HeaderValue>,
    ) -> Result<(StatusCode, Bytes), SyncError> {
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| SyncError::Http {
            url: url.to_owned(),
            source,
        };
        let mut request = Request::builder().method(method).uri(url);
        if let Some(token) = token {
            request = request.header(ACCESS_TOKEN, token);
        }
        if let Some(confirmation) = confirm {
            request = request.header(model::SYNC_CONFIRM_HEADER, confirmation);
        }
        let request = match body {
            Some((content_type, body)) => request
                .header(header::CONTENT_TYPE, content_type)
                .body(Full::new(Bytes::from(body))),
            None => request.body(Full::new(Bytes::new())),
        }
        .map_err(|e| failed(e.into()))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| failed(e.into()))?;
            let status = response.status();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| failed(e.into()))?
                .to_bytes();
            Ok((status, body))
        };
        tokio::time::timeout(self.read_timeout, exchange)
            .await
            .map_err(|_| failed(format!("no answer within {:?}", self.read_timeout).into()))?
    }
}

impl<C: Connect> Subscriber for HttpLongPollSubscriber<C> {
    async fn run(self, state: Arc<SyncState>) {
        let this = &self;
        let state = &*state;
        futures_util::future::join_all(
            this.admins
                .iter()
                .map(|admin| this.poll_admin(admin, state)),
        )
        .await;
    }
}

/// `http://host:port/` → `http://host:port`; no scheme → `http://`.
fn base_url(admin: &str) -> String {
    let admin = admin.trim().trim_end_matches('/');
    if admin.is_empty() || admin.contains("://") {
        admin.to_owned()
    } else {
        format!("http://{admin}")
    }
}

/// Reads a `{code, message, data}` answer: HTTP 401 or code 600 → [`SyncError::Unauthorized`],
/// another failure → [`SyncError::Refused`], an unreadable body → [`SyncError::Malformed`].
fn read_envelope<T: serde::de::DeserializeOwned>(
    url: &str,
    (status, body): (StatusCode, Bytes),
) -> Result<T, SyncError> {
    let envelope = serde_json::from_slice::<AdminResult<serde_json::Value>>(&body);
    let unauthorized = status == StatusCode::UNAUTHORIZED
        || envelope
            .as_ref()
            .is_ok_and(|e| e.code == admin_code::TOKEN_ERROR);
    if unauthorized {
        return Err(SyncError::Unauthorized {
            url: url.to_owned(),
        });
    }
    let refused = |code, message: String| SyncError::Refused {
        url: url.to_owned(),
        status: status.as_u16(),
        code,
        message,
    };
    if !status.is_success() {
        let (code, message) = match &envelope {
            Ok(e) => (e.code, e.message.clone()),
            Err(_) => (
                0,
                String::from_utf8_lossy(&body).chars().take(200).collect(),
            ),
        };
        return Err(refused(code, message));
    }
    let envelope = envelope?;
    if envelope.code != admin_code::SUCCESS {
        return Err(refused(envelope.code, envelope.message));
    }
    Ok(serde_json::from_value(
        envelope.data.unwrap_or(serde_json::Value::Null),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acceptance_needs_new_md5_and_strictly_newer_time_from_another_admin() {
        let mut cache = GroupCache::default();
        let g = ConfigGroup::Selector;
        let (a, b) = ("http://a:1", "http://b:1");
        assert!(cache.accepts(g, "a", 0, b));
        cache.groups.insert(
            g,
            Held {
                md5: "a".into(),
                last_modify_time: 10,
                from: Arc::from(a),
            },
        );
        assert!(!cache.accepts(g, "a", 11, b), "same md5");
        assert!(!cache.accepts(g, "b", 10, b), "same time");
        assert!(!cache.accepts(g, "b", 9, b), "older time: a stale admin");
        assert!(cache.accepts(g, "b", 11, b));
        assert!(cache.accepts(ConfigGroup::Rule, "a", 0, b), "other group");
    }

    #[test]
    fn the_admin_whose_data_is_held_is_followed_when_its_clock_goes_back() {
        let mut cache = GroupCache::default();
        let g = ConfigGroup::Selector;
        cache.groups.insert(
            g,
            Held {
                md5: "a".into(),
                // Stamped while the admin's clock was an hour ahead.
                last_modify_time: 3_600_010,
                from: Arc::from("http://a:1"),
            },
        );
        assert!(cache.accepts(g, "b", 20, "http://a:1"));
        assert!(!cache.accepts(g, "a", 20, "http://a:1"), "same md5");
        assert!(!cache.accepts(g, "b", 20, "http://b:1"), "another admin");
    }

    #[test]
    fn listener_form_sends_every_group() {
        let mut cache = GroupCache::default();
        cache.groups.insert(
            ConfigGroup::Rule,
            Held {
                md5: "ab12".into(),
                last_modify_time: 17,
                from: Arc::from("http://a:1"),
            },
        );
        assert_eq!(
            cache.listener_form(),
            "PLUGIN=00000000000000000000000000000000%2C0\
             &SELECTOR=00000000000000000000000000000000%2C0\
             &RULE=ab12%2C17\
             &META_DATA=00000000000000000000000000000000%2C0\
             &APP_AUTH=00000000000000000000000000000000%2C0"
        );
    }

    #[test]
    fn base_urls() {
        assert_eq!(base_url("http://a:1/"), "http://a:1");
        assert_eq!(base_url("a:1"), "http://a:1");
        assert_eq!(base_url(" "), "");
    }
}
