//! Login and the `X-Access-Token` check.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::Json;
use axum::extract::{FromRef, FromRequestParts, Query, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Uri};
use axum::middleware::Next;
use axum::response::Response;
use model::{AdminResult, LoginRequest, LoginResponse};
use subtle::ConstantTimeEq;

use crate::error::{AdminJson, ApiError, ok};

/// The header (and query parameter) carrying the token.
const TOKEN_HEADER: &str = "X-Access-Token";

/// The single admin user (its password kept only as an Argon2id hash) and the tokens handed
/// out to it.
pub(crate) struct Auth {
    username: String,
    password_hash: String,
    ttl: Duration,
    tokens: Mutex<HashMap<String, Instant>>,
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

/// The Argon2id hasher for new hashes: OWASP's parameters (19 MiB, 2 passes) in release
/// builds; in debug builds, where unoptimised Argon2 takes over a second per hash, a cheaper
/// 4 MiB single pass. Verification always uses the parameters recorded in the hash.
fn hasher() -> Argon2<'static> {
    let params = if cfg!(debug_assertions) {
        argon2::Params::new(4096, 1, 1, None).expect("valid Argon2 parameters")
    } else {
        argon2::Params::default()
    };
    Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
}

/// Compares two secrets in time independent of where they differ.
pub(crate) fn secrets_equal(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Auth")
            .field("username", &self.username)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Auth {
    /// An authenticator for one user whose password is `password` (clear, or an Argon2 PHC
    /// hash); tokens live `ttl`.
    pub(crate) fn new(
        username: String,
        password: &str,
        ttl: Duration,
    ) -> Result<Self, PasswordError> {
        Ok(Self {
            username,
            password_hash: password_hash(password)?,
            ttl,
            tokens: Mutex::new(HashMap::new()),
        })
    }

    fn password_matches(&self, password: &str) -> bool {
        PasswordHash::new(&self.password_hash).is_ok_and(|hash| {
            Argon2::default()
                .verify_password(password.as_bytes(), &hash)
                .is_ok()
        })
    }

    fn login(&self, request: &LoginRequest) -> Option<LoginResponse> {
        // Always verify the password, so a wrong user name takes as long as a wrong password.
        let password_ok = self.password_matches(&request.password);
        if !secrets_equal(&request.user_name, &self.username) || !password_ok {
            return None;
        }
        let token = hex::encode(rand::random::<[u8; 32]>());
        let now = Instant::now();
        let mut tokens = self.tokens.lock().expect("token table lock");
        tokens.retain(|_, expiry| *expiry > now);
        tokens.insert(token.clone(), now + self.ttl);
        Some(LoginResponse {
            id: "1".to_owned(),
            user_name: self.username.clone(),
            role: 1,
            enabled: true,
            token,
            expired_time: i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX),
        })
    }

    fn is_valid(&self, token: &str) -> bool {
        let tokens = self.tokens.lock().expect("token table lock");
        tokens
            .get(token)
            .is_some_and(|expiry| *expiry > Instant::now())
    }
}

/// `POST /platform/login`.
pub(crate) async fn login(
    State(auth): State<Arc<Auth>>,
    AdminJson(request): AdminJson<LoginRequest>,
) -> Result<Json<AdminResult<LoginResponse>>, ApiError> {
    // Password hashing is deliberately slow: keep it off the async workers.
    let (request, response) = tokio::task::spawn_blocking(move || {
        let response = auth.login(&request);
        (request, response)
    })
    .await
    .map_err(|e| ApiError::Internal(format!("login task failed: {e}")))?;
    match response {
        Some(response) => Ok(ok("login dashboard user success", response)),
        None => {
            tracing::warn!(user = %request.user_name, "failed login");
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

    #[test]
    fn the_password_is_kept_only_as_an_argon2_hash() {
        let auth = Auth::new("admin".to_owned(), "s3cret!", Duration::from_secs(60)).unwrap();
        assert!(
            auth.password_hash.starts_with("$argon2id$"),
            "{}",
            auth.password_hash
        );
        assert!(!auth.password_hash.contains("s3cret!"));
        assert!(!format!("{auth:?}").contains("argon2"));
        assert!(auth.login(&request("admin", "s3cret!")).is_some());
        assert!(auth.login(&request("admin", "s3cret")).is_none());
        assert!(auth.login(&request("root", "s3cret!")).is_none());

        // A PHC hash can be given instead of the clear password.
        let hashed = Auth::new(
            "admin".to_owned(),
            &auth.password_hash,
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(hashed.password_hash, auth.password_hash);
        assert!(hashed.login(&request("admin", "s3cret!")).is_some());
        assert!(Auth::new("admin".to_owned(), "$argon2id$nope", Duration::ZERO).is_err());
    }

    #[test]
    fn tokens_expire() {
        let auth = Auth::new("admin".to_owned(), "pw", Duration::ZERO).unwrap();
        let token = auth.login(&request("admin", "pw")).unwrap().token;
        assert!(!auth.is_valid(&token), "a zero TTL token is born expired");
        let auth = Auth::new("admin".to_owned(), "pw", Duration::from_secs(60)).unwrap();
        let token = auth.login(&request("admin", "pw")).unwrap().token;
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
