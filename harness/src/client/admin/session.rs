//! [`AdminClient`] itself: logging in, the profile and namespace it speaks, and the
//! authenticated requests every other call goes through.

use model::{CommonPager, LoginRequest, LoginResponse};
use serde::de::DeserializeOwned;

use super::super::profile::Profile;
use super::super::{http, send};
use super::envelope::{envelope, is_not_existed, required};
use crate::error::ClientError;

/// The admin's built-in user (a fresh database has it; ShenYu's default).
pub const ADMIN_USER: &str = "admin";
/// The password of [`ADMIN_USER`].
pub const ADMIN_PASSWORD: &str = "123456";

/// The page size of the admin client's list calls.
pub(super) const PAGE: usize = 100;

/// A logged-in admin client.
#[derive(Debug, Clone)]
pub struct AdminClient {
    pub(super) base: String,
    pub(super) token: String,
    pub(super) transport: Transport,
    pub(super) profile: Profile,
    /// The namespace a [`Profile::V2_7`] client works in.
    pub(super) namespace_id: String,
}

/// How an [`AdminClient`]'s requests reach the admin.
#[derive(Debug, Clone)]
pub(super) enum Transport {
    /// Over HTTP, to its address.
    Http(reqwest::Client),
    /// Handed to its router in this process (`gantry sim`, where the admin has no socket
    /// the driver could reach in real time).
    Router(axum::Router),
}

impl AdminClient {
    /// Logs in to the admin whose router is `router`, in this process, with the given
    /// credentials, speaking [`Profile::V2_6`]: every request is handed to the router, no
    /// socket involved.
    pub async fn login_in_process(
        router: axum::Router,
        user: &str,
        password: &str,
    ) -> Result<Self, ClientError> {
        let mut client = Self {
            base: String::new(),
            token: String::new(),
            transport: Transport::Router(router),
            profile: Profile::V2_6,
            namespace_id: model::DEFAULT_NAMESPACE_ID.to_owned(),
        };
        let body = LoginRequest {
            user_name: user.to_owned(),
            password: password.to_owned(),
        };
        let what = "POST /platform/login";
        let (status, text) = client
            .call(reqwest::Method::POST, "/platform/login", Some(&body))
            .await?;
        let login: LoginResponse = required(what, envelope(what, status, text)?)?;
        client.token = login.token;
        Ok(client)
    }

    /// Logs in at `base` (e.g. `http://127.0.0.1:9095`) with the given credentials, speaking
    /// [`Profile::V2_6`] to gantry's own admin: `POST /platform/login` with a JSON body.
    pub async fn login(base: &str, user: &str, password: &str) -> Result<Self, ClientError> {
        let http = http();
        let body = LoginRequest {
            user_name: user.to_owned(),
            password: password.to_owned(),
        };
        let req = http.post(format!("{}/platform/login", base.trim_end_matches('/')));
        Self::logged_in(
            base,
            http,
            "POST /platform/login",
            req.json(&body),
            Profile::V2_6,
        )
        .await
    }

    /// Logs in at `base` with the given credentials, speaking `profile`'s REST API.
    ///
    /// Both profiles send `GET /platform/login?userName=&password=`: the only login ShenYu's
    /// releases have, 2.6.0 to 2.7.1 (`POST` came after 2.7.1), and one gantry's admin takes
    /// too. A 2.7 client works in the namespace
    /// [`model::DEFAULT_NAMESPACE_ID`]; see [`AdminClient::with_namespace`].
    pub async fn login_as(
        base: &str,
        user: &str,
        password: &str,
        profile: Profile,
    ) -> Result<Self, ClientError> {
        let http = http();
        let req = http.get(format!(
            "{}/platform/login?userName={}&password={}",
            base.trim_end_matches('/'),
            query_value(user),
            query_value(password)
        ));
        Self::logged_in(base, http, "GET /platform/login", req, profile)
            .await
            .map_err(|e| match e {
                // The URL carries the password: a transport error must not show it.
                ClientError::Http { what, source } => ClientError::Http {
                    what,
                    source: source.without_url(),
                },
                other => other,
            })
    }

    /// The client that `req`, a login, makes.
    async fn logged_in(
        base: &str,
        http: reqwest::Client,
        what: &str,
        req: reqwest::RequestBuilder,
        profile: Profile,
    ) -> Result<Self, ClientError> {
        let base = base.trim_end_matches('/');
        let (status, text) = send(what, req).await?;
        let login: LoginResponse = required(what, envelope(what, status, text)?)?;
        Ok(Self {
            base: base.to_owned(),
            token: login.token,
            transport: Transport::Http(http),
            profile,
            namespace_id: model::DEFAULT_NAMESPACE_ID.to_owned(),
        })
    }

    /// The REST API profile this client speaks.
    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The namespace a [`Profile::V2_7`] client sends as `namespaceId` (by default
    /// [`model::DEFAULT_NAMESPACE_ID`]; a 2.6 client sends none).
    pub fn namespace_id(&self) -> &str {
        &self.namespace_id
    }

    /// This client working in namespace `namespace_id` (only [`Profile::V2_7`] sends it).
    #[must_use]
    pub fn with_namespace(mut self, namespace_id: impl Into<String>) -> Self {
        self.namespace_id = namespace_id.into();
        self
    }

    /// `&namespaceId=<ns>` for a 2.7 client's query strings, empty for 2.6.
    pub(super) fn ns_param(&self) -> String {
        if self.profile.has_namespaces() {
            format!("&namespaceId={}", query_value(&self.namespace_id))
        } else {
            String::new()
        }
    }

    /// The namespace to put on a body whose `namespaceId` is `given`: the caller's if set,
    /// else the client's under 2.7, else none (2.6).
    pub(super) fn body_ns(&self, given: Option<&String>) -> Option<String> {
        if self.profile.has_namespaces() {
            Some(given.cloned().unwrap_or_else(|| self.namespace_id.clone()))
        } else {
            given.cloned()
        }
    }

    pub(super) async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&impl serde::Serialize>,
    ) -> Result<(u16, String), ClientError> {
        let what = format!("{method} {path}");
        match &self.transport {
            Transport::Http(http) => {
                let mut req = http
                    .request(method, format!("{}{path}", self.base))
                    .header("X-Access-Token", &self.token);
                if let Some(body) = body {
                    req = req.json(body);
                }
                send(&what, req).await
            }
            Transport::Router(router) => {
                in_process(router, &what, method, path, &self.token, body).await
            }
        }
    }

    pub(super) async fn data<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&impl serde::Serialize>,
    ) -> Result<T, ClientError> {
        let what = format!("{method} {path}");
        let (status, text) = self.call(method, path, body).await?;
        required(&what, envelope(&what, status, text)?)
    }

    /// Every item of a paged list, `path(page)` being page `page` (from 1) of [`PAGE`].
    pub(super) async fn all_pages<T: DeserializeOwned>(
        &self,
        path: impl Fn(usize) -> String,
    ) -> Result<Vec<T>, ClientError> {
        let mut all = Vec::new();
        for page in 1.. {
            let got: CommonPager<T> = self
                .data(reqwest::Method::GET, &path(page), None::<&()>)
                .await?;
            let short = got.data_list.len() < PAGE;
            all.extend(got.data_list);
            if short {
                break;
            }
        }
        Ok(all)
    }

    pub(super) async fn get_opt<T: DeserializeOwned>(
        &self,
        path: &str,
    ) -> Result<Option<T>, ClientError> {
        let what = format!("GET {path}");
        let (status, text) = self.call(reqwest::Method::GET, path, None::<&()>).await?;
        if status == 404 {
            return Ok(None);
        }
        if self.profile == Profile::V2_7 && status == 200 && is_not_existed(&text) {
            return Ok(None);
        }
        envelope(&what, status, text)
    }
}

/// Hands one request to `router` and reads its answer, as [`send`] does over HTTP.
async fn in_process(
    router: &axum::Router,
    what: &str,
    method: reqwest::Method,
    path: &str,
    token: &str,
    body: Option<&impl serde::Serialize>,
) -> Result<(u16, String), ClientError> {
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    let broken = |detail: String| ClientError::Body {
        what: what.to_owned(),
        detail,
        body: String::new(),
    };
    let body = match body {
        Some(body) => serde_json::to_vec(body).map_err(|e| broken(e.to_string()))?,
        None => Vec::new(),
    };
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("X-Access-Token", token)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from(body))
        .map_err(|e| broken(e.to_string()))?;
    let Ok(response) = router.clone().oneshot(request).await;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| broken(e.to_string()))?
        .to_bytes();
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

/// Percent-encodes `value` for a query string (RFC 3986 unreserved characters stay).
pub(super) fn query_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
