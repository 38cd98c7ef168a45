//! Login and the `X-Access-Token` check.

use std::collections::HashMap;
use std::convert::Infallible;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use model::lock::MutexExt;

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
use crate::login_throttle::{LoginThrottle, Throttle, WarnBudget, loggable};
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
    tokens: Mutex<HashMap<String, (Instant, Scope)>>,
    /// Verified when no enabled user has the name given, so a wrong name takes as long as a
    /// wrong password.
    decoy_hash: String,
    /// The sync clients' credential: its name and the Argon2 hash of its password.
    sync_user: Option<(String, String)>,
    throttle: Throttle,
    /// How passwords are verified.
    work: PasswordWork,
    /// Budget of login failure warnings.
    warnings: WarnBudget,
}

/// What a token may be used for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Everything: a dashboard user's.
    Dashboard,
    /// Only the sync publishers' endpoints: the [`SyncUser`]'s.
    Sync,
}

/// A credential for sync clients only (`--sync-user name:password`): its tokens open the
/// sync publishers' endpoints (HTTP long polling's `/configs/*`) and nothing else, and its
/// failed logins are counted apart from the dashboard users'. It lives only in memory.
#[derive(Clone, PartialEq, Eq)]
pub struct SyncUser {
    name: String,
    password: String,
}

impl std::str::FromStr for SyncUser {
    type Err = String;

    /// `name:password` (the password, clear or an Argon2 PHC hash, may contain `:`).
    fn from_str(text: &str) -> Result<Self, String> {
        let (name, password) = text.split_once(':').ok_or("expected name:password")?;
        if name.is_empty() || name.len() > MAX_USER_NAME_BYTES || name.chars().any(char::is_control)
        {
            return Err(format!(
                "the name must be 1 to {MAX_USER_NAME_BYTES} bytes without control characters"
            ));
        }
        if password.is_empty() {
            return Err("the password is empty".to_owned());
        }
        Ok(Self {
            name: name.to_owned(),
            password: password.to_owned(),
        })
    }
}

impl fmt::Debug for SyncUser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SyncUser")
            .field("name", &self.name)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// Why the admin's password cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("--password: {0}")]
pub struct PasswordError(String);

/// How much work a password hash takes, and where it is done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PasswordWork {
    /// OWASP's Argon2id parameters (a cheaper single pass in debug builds), hashed and
    /// verified on tokio's blocking pool, off the async workers: what every admin runs.
    #[default]
    Standard,
    /// The least work Argon2id allows (8 KiB, one pass), hashed and verified on the calling
    /// task. For `gantry sim` only, where no thread may leave simulated time and the
    /// passwords guard nothing: a stolen database's hashes made this way fall at once.
    Minimal,
}

impl PasswordWork {
    /// The Argon2id hasher for new hashes. Verification always uses the parameters recorded
    /// in the hash.
    fn hasher(self) -> Argon2<'static> {
        // Infallible: constant parameters within Argon2's bounds (m >= 8 p, t >= 1, p >= 1).
        let params = match self {
            PasswordWork::Minimal => {
                argon2::Params::new(8, 1, 1, None).expect("valid Argon2 parameters")
            }
            // In debug builds, where unoptimised Argon2 takes over a second per hash, a
            // cheaper 4 MiB single pass.
            PasswordWork::Standard if cfg!(debug_assertions) => {
                argon2::Params::new(4096, 1, 1, None).expect("valid Argon2 parameters")
            }
            PasswordWork::Standard => argon2::Params::default(),
        };
        Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
    }

    /// An Argon2id PHC hash of `password`, or `password` itself when it already is a PHC
    /// Argon2 hash (so the clear password never has to be given).
    async fn hash(self, password: String) -> Result<String, PasswordError> {
        match self {
            PasswordWork::Minimal => password_hash(&password, self),
            PasswordWork::Standard => {
                tokio::task::spawn_blocking(move || password_hash(&password, self))
                    .await
                    .map_err(|e| PasswordError(format!("hashing task failed: {e}")))?
            }
        }
    }

    /// Whether `password` matches the PHC hash `hash` (a malformed hash matches nothing);
    /// `None` when the verifying task failed.
    async fn matches(self, hash: String, password: String) -> Option<bool> {
        match self {
            PasswordWork::Minimal => Some(password_matches(&hash, &password)),
            PasswordWork::Standard => {
                tokio::task::spawn_blocking(move || password_matches(&hash, &password))
                    .await
                    .ok()
            }
        }
    }
}

/// [`PasswordWork::hash`], done where the caller is.
fn password_hash(password: &str, work: PasswordWork) -> Result<String, PasswordError> {
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
    let salt = SaltString::encode_b64(&model::world::random_bytes::<16>())
        .map_err(|e| PasswordError(e.to_string()))?;
    work.hasher()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|e| PasswordError(e.to_string()))
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
    work: PasswordWork,
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
            let hash = work.hash(password.to_owned()).await?;
            store.put_user_password(&user(hash)).await?;
            tracing::info!(
                user = username,
                "dashboard user password set from --password"
            );
        }
        None => {
            if store.user_named(username).await?.is_none() {
                let hash = work.hash(DEFAULT_PASSWORD.to_owned()).await?;
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
        let on_default = work
            .matches(user.password, DEFAULT_PASSWORD.to_owned())
            .await
            .ok_or_else(|| PasswordError("verification task failed".to_owned()))?;
        if on_default {
            let name = user.user_name;
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
    /// an authenticator over the users in `store` and `sync_user` (whose name no dashboard
    /// user may have); tokens live `ttl`, failed logins are throttled as `throttle` says.
    pub(crate) async fn start(
        store: Arc<Store>,
        username: &str,
        password: Option<&str>,
        sync_user: Option<&SyncUser>,
        ttl: Duration,
        throttle: LoginThrottle,
        work: PasswordWork,
    ) -> Result<Self, StartError> {
        provision(&store, username, password, work).await?;
        let decoy_hash = work
            .hash(hex::encode(model::world::random_bytes::<16>()))
            .await?;
        let sync_user = match sync_user {
            Some(user) => {
                if user.name == username || store.user_named(&user.name).await?.is_some() {
                    return Err(StartError::SyncUser(format!(
                        "`{}` is a dashboard user; the sync user needs a name of its own",
                        user.name
                    )));
                }
                let hash = work
                    .hash(user.password.clone())
                    .await
                    .map_err(|e| StartError::SyncUser(e.0))?;
                tracing::info!(user = %user.name, "sync user (sync endpoints only) set");
                Some((user.name.clone(), hash))
            }
            None => None,
        };
        Ok(Self {
            store,
            ttl,
            tokens: Mutex::new(HashMap::new()),
            decoy_hash,
            sync_user,
            throttle: Throttle::new(throttle),
            work,
            warnings: WarnBudget::new(LOGIN_WARNINGS_PER_SECOND),
        })
    }

    /// The user named `name` (the sync user, or an enabled dashboard user), its password
    /// hash and what its tokens may do.
    async fn user_named(&self, name: &str) -> Result<Option<(UserRecord, Scope)>, ApiError> {
        if let Some((sync_name, hash)) = &self.sync_user
            && sync_name == name
        {
            let now = now();
            let user = UserRecord {
                id: "sync".to_owned(),
                user_name: sync_name.clone(),
                password: hash.clone(),
                role: 0,
                enabled: true,
                date_created: now.clone(),
                date_updated: now,
            };
            return Ok(Some((user, Scope::Sync)));
        }
        let user = self.store.user_named(name).await?;
        Ok(user
            .filter(|user| user.enabled)
            .map(|user| (user, Scope::Dashboard)))
    }

    /// Checks a login against the stored users and the sync user; a token for a match.
    async fn login(&self, request: LoginRequest) -> Result<Option<LoginResponse>, ApiError> {
        let user = self.user_named(&request.user_name).await?;
        // Always verify a hash, so an unknown name takes as long as a wrong password.
        let hash = user.as_ref().map_or_else(
            || self.decoy_hash.clone(),
            |(user, _)| user.password.clone(),
        );
        let password_ok = self
            .work
            .matches(hash, request.password)
            .await
            .ok_or_else(|| ApiError::Internal("the login's verifying task failed".to_owned()))?;
        let Some((user, scope)) = user.filter(|_| password_ok) else {
            return Ok(None);
        };
        let token = hex::encode(model::world::random_bytes::<32>());
        let now = Instant::now();
        let mut tokens = self.tokens.locked();
        tokens.retain(|_, (expiry, _)| *expiry > now);
        tokens.insert(token.clone(), (now + self.ttl, scope));
        Ok(Some(LoginResponse {
            id: user.id,
            user_name: user.user_name,
            role: user.role,
            enabled: user.enabled,
            token,
            expired_time: i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX),
        }))
    }

    /// Whether `token` is unexpired and good for `needed` (a dashboard token is good for
    /// everything).
    fn is_valid(&self, token: &str, needed: Scope) -> bool {
        let tokens = self.tokens.locked();
        tokens.get(token).is_some_and(|(expiry, scope)| {
            *expiry > Instant::now() && (*scope == Scope::Dashboard || *scope == needed)
        })
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

/// `POST /platform/login`. While the user name is locked out from the client's address after
/// failed logins, answers 429 with `Retry-After` without checking the password; a user name
/// over [`MAX_USER_NAME_BYTES`] answers 400.
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

/// The longest user name a login may carry, in bytes (ShenYu's own column holds 32
/// characters); longer ones are refused before they are looked up, throttled or logged.
pub(crate) const MAX_USER_NAME_BYTES: usize = 256;

/// Login failure warnings let through per second; the rest are counted.
const LOGIN_WARNINGS_PER_SECOND: u32 = 10;

/// A login failure warning, within `auth`'s budget, naming the user as [`loggable`] shows
/// it.
fn warn_login(auth: &Auth, user_name: &str, address: Option<IpAddr>, what: &str) {
    let Some(suppressed) = auth.warnings.admit(Instant::now()) else {
        return;
    };
    let address = address.map_or_else(|| "unknown".to_owned(), |a| a.to_string());
    tracing::warn!(
        user = %loggable(user_name),
        %address,
        suppressed,
        "{what}"
    );
}

/// A login of either form, throttled: refused while this (user, address) pair is locked
/// out, delayed (never refused) for failures of the user name or the address alone.
async fn log_in(
    auth: &Auth,
    ClientAddress(address): ClientAddress,
    request: LoginRequest,
) -> Result<Json<AdminResult<LoginResponse>>, ApiError> {
    if request.user_name.len() > MAX_USER_NAME_BYTES {
        return Err(ApiError::field(
            "userName",
            format_args!("longer than {MAX_USER_NAME_BYTES} bytes"),
        ));
    }
    let user_name = request.user_name.clone();
    match auth.throttle.begin(&user_name, address, Instant::now()) {
        Err(wait) => {
            // Whole seconds, rounded up: retrying after them succeeds.
            let retry_after_secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            warn_login(
                auth,
                &user_name,
                address,
                "login refused: too many failed logins from this address",
            );
            return Err(ApiError::TooManyRequests {
                message: format!(
                    "too many failed logins for this user from this address; try again in \
                     {retry_after_secs} s"
                ),
                retry_after_secs,
            });
        }
        Ok(delay) if !delay.is_zero() => tokio::time::sleep(delay).await,
        Ok(_) => {}
    }
    match auth.login(request).await? {
        Some(response) => {
            auth.throttle.succeeded(&user_name, address);
            Ok(ok("login dashboard user success", response))
        }
        None => {
            warn_login(auth, &user_name, address, "failed login");
            Err(ApiError::Unauthorized(
                "user name or password is wrong".to_owned(),
            ))
        }
    }
}

/// Checks the `X-Access-Token` header or query parameter of a request against `needed`.
fn check_token(auth: &Auth, headers: &HeaderMap, uri: &Uri, needed: Scope) -> Result<(), ApiError> {
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
        Some(token) if auth.is_valid(&token, needed) => Ok(()),
        _ => Err(ApiError::Unauthorized("token is error".to_owned())),
    }
}

/// Middleware: lets the request through only with a valid dashboard user's `X-Access-Token`
/// header or query parameter.
pub(crate) async fn require_token(
    State(auth): State<Arc<Auth>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    check_token(&auth, request.headers(), request.uri(), Scope::Dashboard)?;
    Ok(next.run(request).await)
}

/// An extractor that succeeds only with a valid token (as [`require_token`]) of a dashboard
/// user or the [`SyncUser`], for the sync publishers' routes.
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
        check_token(&auth, &parts.headers, &parts.uri, Scope::Sync)?;
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
            None,
            ttl,
            LoginThrottle::default(),
            PasswordWork::Standard,
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
                None,
                Duration::ZERO,
                LoginThrottle::default(),
                PasswordWork::Standard,
            )
            .await
            .is_err()
        );
    }

    #[tokio::test]
    async fn minimal_work_hashes_with_the_least_argon2_allows_and_still_checks_passwords() {
        let store = store().await;
        let auth = Auth::start(
            Arc::clone(&store),
            "admin",
            Some("s3cret!"),
            None,
            Duration::from_secs(60),
            LoginThrottle::default(),
            PasswordWork::Minimal,
        )
        .await
        .unwrap();
        let stored = store.user_named("admin").await.unwrap().unwrap();
        assert!(
            stored.password.starts_with("$argon2id$v=19$m=8,t=1,p=1$"),
            "{}",
            stored.password
        );
        assert!(logs_in(&auth, "admin", "s3cret!").await);
        assert!(!logs_in(&auth, "admin", "s3cret").await);
        assert!(!logs_in(&auth, "nobody", "s3cret!").await);
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
        assert!(
            !auth.is_valid(&token, Scope::Sync),
            "a zero TTL token is born expired"
        );
        let auth = start(&store, Some("pw"), Duration::from_secs(60)).await;
        let token = auth
            .login(request("admin", "pw"))
            .await
            .unwrap()
            .unwrap()
            .token;
        assert!(auth.is_valid(&token, Scope::Dashboard));
        assert!(auth.is_valid(&token, Scope::Sync));
        assert!(!auth.is_valid("nope", Scope::Sync));
    }

    #[tokio::test]
    async fn long_names_are_refused_before_the_throttle() {
        let store = store().await;
        let auth = start(&store, Some("pw"), Duration::from_secs(60)).await;
        let address = || ClientAddress(Some("10.0.0.1".parse().unwrap()));
        let long = "a".repeat(2 * 1024 * 1024);
        for name in [long.as_str(), &long[..MAX_USER_NAME_BYTES + 1]] {
            let refused = log_in(&auth, address(), request(name, "pw")).await;
            assert!(
                matches!(&refused, Err(ApiError::BadRequest(m)) if m == "userName: longer than 256 bytes"),
                "{refused:?}"
            );
        }
        assert_eq!(auth.throttle.entries(), 0, "nothing stored");
        let wrong = log_in(
            &auth,
            address(),
            request(&long[..MAX_USER_NAME_BYTES], "pw"),
        )
        .await;
        assert!(matches!(wrong, Err(ApiError::Unauthorized(_))), "{wrong:?}");
        assert_eq!(auth.throttle.entries(), 3, "pair, user and address");
    }

    /// Log output captured into a buffer.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.locked().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn failed_logins_log_names_escaped_and_cut() {
        let captured = Captured::default();
        let writer = captured.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let store = store().await;
        let auth = start(&store, Some("pw"), Duration::from_secs(60)).await;
        let address = || ClientAddress(Some("10.0.0.1".parse().unwrap()));
        let forged = "evil\n2026-12-04T00:00:00Z  INFO admin: login ok user=admin\x1b[2K";
        let long = format!("{}\n", "b".repeat(100));
        for name in [forged, &long] {
            let wrong = log_in(&auth, address(), request(name, "wrong")).await;
            assert!(matches!(wrong, Err(ApiError::Unauthorized(_))), "{wrong:?}");
        }
        let text = String::from_utf8(captured.0.locked().clone()).unwrap();
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| l.contains("failed login"))
            .collect();
        assert_eq!(lines.len(), 2, "one line each, none forged: {text}");
        assert!(
            lines[0].contains(
                r"user=evil\n2026-12-04T00:00:00Z  INFO admin: login ok user=admin\u{1b}[2K"
            ),
            "{text}"
        );
        assert!(!text.contains('\u{1b}'), "{text}");
        let cut = format!("user={}…", "b".repeat(64));
        assert!(lines[1].contains(&cut), "{text}");
        assert!(
            lines.iter().all(|l| l.contains("address=10.0.0.1")),
            "{text}"
        );
    }

    #[tokio::test]
    async fn the_sync_user_needs_a_name_of_its_own() {
        let sync = |text: &str| text.parse::<SyncUser>();
        for bad in ["no-colon", ":pw", "name:", "a\nb:pw"] {
            assert!(sync(bad).is_err(), "{bad}");
        }
        let user = sync("gantry-sync:pa:ss").unwrap();
        assert_eq!(user.password, "pa:ss", "split at the first colon");
        assert!(!format!("{user:?}").contains("pa:ss"), "{user:?}");
        let store = store().await;
        let taken = Auth::start(
            Arc::clone(&store),
            "admin",
            None,
            Some(&sync("admin:pw").unwrap()),
            Duration::from_secs(60),
            LoginThrottle::default(),
            PasswordWork::Standard,
        )
        .await;
        assert!(
            matches!(taken, Err(StartError::SyncUser(_))),
            "{:?}",
            taken.map(|_| ())
        );
        let auth = Auth::start(
            store,
            "admin",
            None,
            Some(&user),
            Duration::from_secs(60),
            LoginThrottle::default(),
            PasswordWork::Standard,
        )
        .await
        .unwrap();
        let token = auth
            .login(request("gantry-sync", "pa:ss"))
            .await
            .unwrap()
            .unwrap()
            .token;
        assert!(auth.is_valid(&token, Scope::Sync));
        assert!(!auth.is_valid(&token, Scope::Dashboard));
        assert!(!logs_in(&auth, "gantry-sync", "pa").await);
    }

    #[test]
    fn secrets_compare_exactly() {
        assert!(secrets_equal("abc", "abc"));
        assert!(!secrets_equal("abc", "abd"));
        assert!(!secrets_equal("abc", "abcd"));
        assert!(!secrets_equal("", "a"));
    }
}
