//! Login and the `X-Access-Token` check.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::Json;
use axum::extract::{ConnectInfo, FromRef, FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri};
use axum::middleware::Next;
use axum::response::Response;
use model::{AdminResult, LoginRequest, LoginResponse};
use subtle::ConstantTimeEq;

use crate::api::extract::{AdminJson, AdminQuery};
use crate::error::{ApiError, ok};
use crate::id::IdGenerator;
use crate::login_throttle::{LoginThrottle, Throttle};
use crate::store::{Store, UserRecord};
use crate::{DEFAULT_PASSWORD, StartError};
use model::time::now;

/// The header (and query parameter) carrying the token.
const TOKEN_HEADER: &str = "X-Access-Token";

/// Logins checked against the dashboard users in the database (passwords kept only as
/// Argon2 hashes), and the tokens handed out.
pub(crate) struct Auth {
    store: Arc<Store>,
    ttl: Duration,
    /// Token to expiry. Every change under the lock is a single map operation, so a panic
    /// elsewhere leaves it whole: a poisoned lock is taken over, not propagated.
    tokens: Mutex<HashMap<String, Instant>>,
    /// Verified when no enabled user has the name given, so a wrong name takes as long as a
    /// wrong password.
    decoy_hash: String,
    throttle: Throttle,
}

/// Why the admin's password cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("--password: {0}")]
pub struct PasswordError(String);

/// An Argon2id PHC hash of `password`, or `password` itself when it already is a PHC Argon2
/// hash (so the clear password never has to be given).
fn password_hash(password: &str) -> Result<String, PasswordError> {
    if password.starts_with("$argon2") {
        let parsed = PasswordHash::new(password)
            .map_err(|e| PasswordError(format!("not a valid Argon2 PHC hash: {e}")))?;
        if parsed.salt.is_none() || parsed.hash.is_none() {
            return Err(PasswordError(
                "an Argon2 PHC hash needs a salt and a hash".to_owned(),
            ));
        }
        return Ok(password.to_owned());
    }
    let salt = SaltString::encode_b64(&rand::random::<[u8; 16]>())
        .map_err(|e| PasswordError(e.to_string()))?;
    hasher()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| PasswordError(e.to_string()))
}

/// [`password_hash`] off the async workers (hashing is deliberately slow).
async fn password_hash_blocking(password: String) -> Result<String, PasswordError> {
    tokio::task::spawn_blocking(move || password_hash(&password))
        .await
        .map_err(|e| PasswordError(format!("hashing task failed: {e}")))?
}

/// The Argon2id hasher for new hashes: OWASP's parameters (19 MiB, 2 passes) in release
/// builds; in debug builds, where unoptimised Argon2 takes over a second per hash, a cheaper
/// 4 MiB single pass. Verification always uses the parameters recorded in the hash.
fn hasher() -> Argon2<'static> {
    let params = if cfg!(debug_assertions) {
        // Infallible: constant parameters within Argon2's bounds (m >= 8 p, t >= 1, p >= 1).
        argon2::Params::new(4096, 1, 1, None).expect("valid Argon2 parameters")
    } else {
        argon2::Params::default()
    };
    Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
}

/// Whether `password` matches the PHC hash `hash` (a malformed hash matches nothing).
fn password_matches(hash: &str, password: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|hash| {
        Argon2::default()
            .verify_password(password.as_bytes(), &hash)
            .is_ok()
    })
}

/// Compares two secrets in time independent of where they differ.
pub(crate) fn secrets_equal(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// Makes sure dashboard user `username` exists, then warns loudly about every enabled user
/// whose password is still ShenYu's well-known default.
///
/// - `password` given (`--password`, clear or an Argon2 PHC hash): the user gets it, with a
///   fresh hash, created if missing. Changing the flag rotates the password.
/// - Not given, and no such user: the user is created with [`DEFAULT_PASSWORD`].
/// - Not given, and the user exists: its stored password is kept.
async fn provision(
    store: &Store,
    username: &str,
    password: Option<&str>,
) -> Result<(), StartError> {
    let now = now();
    let user = |password: String| UserRecord {
        id: IdGenerator::default().next_id(),
        user_name: username.to_owned(),
        password,
        role: 1,
        enabled: true,
        date_created: now.clone(),
        date_updated: now.clone(),
    };
    match password {
        Some(password) => {
            let hash = password_hash_blocking(password.to_owned()).await?;
            store.put_user_password(&user(hash)).await?;
            tracing::info!(
                user = username,
                "dashboard user password set from --password"
            );
        }
        None => {
            if store.user_named(username).await?.is_none() {
                let hash = password_hash_blocking(DEFAULT_PASSWORD.to_owned()).await?;
                if store.insert_user_if_absent(&user(hash)).await? {
                    tracing::info!(user = username, "dashboard user created");
                }
            }
        }
    }
    for user in store.users().await? {
        if !user.enabled {
            continue;
        }
        let on_default = tokio::task::spawn_blocking(move || {
            password_matches(&user.password, DEFAULT_PASSWORD).then_some(user.user_name)
        })
        .await
        .map_err(|e| PasswordError(format!("verification task failed: {e}")))?;
        if let Some(name) = on_default {
            tracing::warn!(
                "!!! the dashboard user `{name}` has the well-known default password; set \
                 --password or GANTRY_ADMIN_PASSWORD !!!"
            );
        }
    }
    Ok(())
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Auth {
    /// Provisions dashboard user `username` with `password` (see [`provision`]) and returns
    /// an authenticator over the users in `store`; tokens live `ttl`, failed logins are
    /// throttled as `throttle` says.
    pub(crate) async fn start(
        store: Arc<Store>,
        username: &str,
        password: Option<&str>,
        ttl: Duration,
        throttle: LoginThrottle,
    ) -> Result<Self, StartError> {
        provision(&store, username, password).await?;
        let decoy_hash = password_hash_blocking(hex::encode(rand::random::<[u8; 16]>())).await?;
        Ok(Self {
            store,
            ttl,
            tokens: Mutex::new(HashMap::new()),
            decoy_hash,
            throttle: Throttle::new(throttle),
        })
    }

    /// Checks a login against the stored users; a token for a match.
    async fn login(&self, request: LoginRequest) -> Result<Option<LoginResponse>, ApiError> {
        let user = self
            .store
            .user_named(&request.user_name)
            .await?
            .filter(|user| user.enabled);
        // Always verify a hash, so an unknown name takes as long as a wrong password.
        let hash = user
            .as_ref()
            .map_or_else(|| self.decoy_hash.clone(), |user| user.password.clone());
        let password_ok =
            tokio::task::spawn_blocking(move || password_matches(&hash, &request.password))
                .await
                .map_err(|e| ApiError::Internal(format!("login task failed: {e}")))?;
        let Some(user) = user.filter(|_| password_ok) else {
            return Ok(None);
        };
        let token = hex::encode(rand::random::<[u8; 32]>());
        let now = Instant::now();
        let mut tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        tokens.retain(|_, expiry| *expiry > now);
        tokens.insert(token.clone(), now + self.ttl);
        Ok(Some(LoginResponse {
            id: user.id,
            user_name: user.user_name,
            role: user.role,
            enabled: user.enabled,
            token,
            expired_time: i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX),
        }))
    }

    fn is_valid(&self, token: &str) -> bool {
        let tokens = self.tokens.lock().unwrap_or_else(PoisonError::into_inner);
        tokens
            .get(token)
            .is_some_and(|expiry| *expiry > Instant::now())
    }
}

/// The client's IP address, when the server records it ([`ConnectInfo`]); a router driven
/// in process has none.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientAddress(Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Infallible> {
        Ok(ClientAddress(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|ConnectInfo(addr)| addr.ip()),
        ))
    }
}

/// `POST /platform/login`. While the user name or the client address is locked out after
/// failed logins, answers 429 with `Retry-After` without checking the password.
pub(crate) async fn login(
    State(auth): State<Arc<Auth>>,
    address: ClientAddress,
    AdminJson(request): AdminJson<LoginRequest>,
) -> Result<Json<AdminResult<LoginResponse>>, ApiError> {
    log_in(&auth, address, request).await
}

/// `GET /platform/login?userName=&password=`: ShenYu's deprecated login, the only one of its
/// releases up to 2.7.1 (protocol §4.1); the same checks and answers as [`login`].
pub(crate) async fn login_by_query(
    State(auth): State<Arc<Auth>>,
    address: ClientAddress,
    AdminQuery(request): AdminQuery<LoginRequest>,
) -> Result<Json<AdminResult<LoginResponse>>, ApiError> {
    log_in(&auth, address, request).await
}

/// A login of either form, throttled.
async fn log_in(
    auth: &Auth,
    ClientAddress(address): ClientAddress,
    request: LoginRequest,
) -> Result<Json<AdminResult<LoginResponse>>, ApiError> {
    let user_name = request.user_name.clone();
    let shown = address.map_or_else(|| "unknown".to_owned(), |a| a.to_string());
    if let Err(wait) = auth.throttle.begin(&user_name, address, Instant::now()) {
        // Whole seconds, rounded up: retrying after them succeeds.
        let retry_after_secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        tracing::warn!(
            user = %user_name,
            address = %shown,
            retry_after_secs,
            "login refused: too many failed logins"
        );
        return Err(ApiError::TooManyRequests {
            message: format!(
                "too many failed logins for this user or address; try again in \
                 {retry_after_secs} s"
            ),
            retry_after_secs,
        });
    }
    match auth.login(request).await? {
        Some(response) => {
            auth.throttle.succeeded(&user_name, address);
            Ok(ok("login dashboard user success", response))
        }
        None => {
            tracing::warn!(user = %user_name, address = %shown, "failed login");
            Err(ApiError::Unauthorized(
                "user name or password is wrong".to_owned(),
            ))
        }
    }
}

/// Checks the `X-Access-Token` header or query parameter of a request.
fn check_token(auth: &Auth, headers: &HeaderMap, uri: &Uri) -> Result<(), ApiError> {
    let from_header = headers
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let token = from_header.or_else(|| {
        Query::<HashMap<String, String>>::try_from_uri(uri)
            .ok()
            .and_then(|Query(mut q)| q.remove(TOKEN_HEADER))
    });
    match token {
        Some(token) if auth.is_valid(&token) => Ok(()),
        _ => Err(ApiError::Unauthorized("token is error".to_owned())),
    }
}

/// Middleware: lets the request through only with a valid `X-Access-Token` header or query
/// parameter.
pub(crate) async fn require_token(
    State(auth): State<Arc<Auth>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    check_token(&auth, request.headers(), request.uri())?;
    Ok(next.run(request).await)
}

/// An extractor that succeeds only with a valid token (as [`require_token`]), for routes
/// that publishers add themselves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Authorized;

impl<S> FromRequestParts<S> for Authorized
where
    S: Send + Sync,
    Arc<Auth>: FromRef<S>,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let auth = Arc::<Auth>::from_ref(state);
        check_token(&auth, &parts.headers, &parts.uri)?;
        Ok(Authorized)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(user: &str, password: &str) -> LoginRequest {
        LoginRequest {
            user_name: user.to_owned(),
            password: password.to_owned(),
        }
    }

    async fn store() -> Arc<Store> {
        crate::store::open(":memory:").await.unwrap()
    }

    async fn start(store: &Arc<Store>, password: Option<&str>, ttl: Duration) -> Auth {
        Auth::start(
            Arc::clone(store),
            "admin",
            password,
            ttl,
            LoginThrottle::default(),
        )
        .await
        .unwrap()
    }

    async fn logs_in(auth: &Auth, user: &str, password: &str) -> bool {
        auth.login(request(user, password)).await.unwrap().is_some()
    }

    #[tokio::test]
    async fn the_password_is_kept_only_as_an_argon2_hash() {
        let store = store().await;
        let auth = start(&store, Some("s3cret!"), Duration::from_secs(60)).await;
        let stored = store.user_named("admin").await.unwrap().unwrap();
        assert!(
            stored.password.starts_with("$argon2id$"),
            "{}",
            stored.password
        );
        assert!(!stored.password.contains("s3cret!"));
        assert!(!format!("{auth:?}{stored:?}").contains("argon2"));
        assert!(logs_in(&auth, "admin", "s3cret!").await);
        assert!(!logs_in(&auth, "admin", "s3cret").await);
        assert!(!logs_in(&auth, "root", "s3cret!").await);
        let response = auth
            .login(request("admin", "s3cret!"))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            (response.id, response.user_name.as_str(), response.role),
            (stored.id, "admin", 1)
        );

        // A PHC hash can be given instead of the clear password; it is stored as it is.
        let hashed = start(&store, Some(&stored.password), Duration::from_secs(60)).await;
        let again = store.user_named("admin").await.unwrap().unwrap();
        assert_eq!(again.password, stored.password);
        assert!(logs_in(&hashed, "admin", "s3cret!").await);
        assert!(
            Auth::start(
                store,
                "admin",
                Some("$argon2id$nope"),
                Duration::ZERO,
                LoginThrottle::default()
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn the_stored_password_is_kept_unless_one_is_given() {
        let store = store().await;
        // No user yet and no password: ShenYu's default.
        let auth = start(&store, None, Duration::from_secs(60)).await;
        assert!(logs_in(&auth, "admin", DEFAULT_PASSWORD).await);
        // Given: rotated.
        let auth = start(&store, Some("first"), Duration::from_secs(60)).await;
        assert!(logs_in(&auth, "admin", "first").await);
        assert!(!logs_in(&auth, "admin", DEFAULT_PASSWORD).await);
        // Not given: kept.
        let auth = start(&store, None, Duration::from_secs(60)).await;
        assert!(logs_in(&auth, "admin", "first").await);
        let auth = start(&store, Some("second"), Duration::from_secs(60)).await;
        assert!(logs_in(&auth, "admin", "second").await);
        assert!(!logs_in(&auth, "admin", "first").await);
        assert_eq!(
            store.users().await.unwrap().len(),
            1,
            "one user, updated in place"
        );
    }

    #[tokio::test]
    async fn disabled_users_cannot_log_in() {
        let store = store().await;
        let auth = start(&store, Some("pw"), Duration::from_secs(60)).await;
        assert!(
            store
                .set_user_enabled("admin", false, &now())
                .await
                .unwrap()
        );
        assert!(!logs_in(&auth, "admin", "pw").await);
        assert!(
            !store
                .set_user_enabled("nobody", false, &now())
                .await
                .unwrap()
        );
    }

    #[tokio::test]
    async fn tokens_expire() {
        let store = store().await;
        let auth = start(&store, Some("pw"), Duration::ZERO).await;
        let token = auth
            .login(request("admin", "pw"))
            .await
            .unwrap()
            .unwrap()
            .token;
        assert!(!auth.is_valid(&token), "a zero TTL token is born expired");
        let auth = start(&store, Some("pw"), Duration::from_secs(60)).await;
        let token = auth
            .login(request("admin", "pw"))
            .await
            .unwrap()
            .unwrap()
            .token;
        assert!(auth.is_valid(&token));
        assert!(!auth.is_valid("nope"));
    }

    #[test]
    fn secrets_compare_exactly() {
        assert!(secrets_equal("abc", "abc"));
        assert!(!secrets_equal("abc", "abd"));
        assert!(!secrets_equal("abc", "abcd"));
        assert!(!secrets_equal("", "a"));
    }
}
