//! Login and the `X-Access-Token` check.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Query, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use model::{AdminResult, LoginRequest, LoginResponse};

use crate::error::{AdminJson, ApiError, ok};

/// The header (and query parameter) carrying the token.
const TOKEN_HEADER: &str = "X-Access-Token";

/// The single admin user and the tokens handed out to it.
pub(crate) struct Auth {
    username: String,
    password: String,
    ttl: Duration,
    tokens: Mutex<HashMap<String, Instant>>,
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
    /// An authenticator for one user; tokens live `ttl`.
    pub(crate) fn new(username: String, password: String, ttl: Duration) -> Self {
        Self {
            username,
            password,
            ttl,
            tokens: Mutex::new(HashMap::new()),
        }
    }

    fn login(&self, request: &LoginRequest) -> Option<LoginResponse> {
        if request.user_name != self.username || request.password != self.password {
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
    match auth.login(&request) {
        Some(response) => Ok(ok("login dashboard user success", response)),
        None => {
            tracing::warn!(user = %request.user_name, "failed login");
            Err(ApiError::Unauthorized(
                "user name or password is wrong".to_owned(),
            ))
        }
    }
}

/// Middleware: lets the request through only with a valid `X-Access-Token` header or query
/// parameter.
pub(crate) async fn require_token(
    State(auth): State<Arc<Auth>>,
    request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let from_header = request
        .headers()
        .get(TOKEN_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let token = from_header.or_else(|| {
        Query::<HashMap<String, String>>::try_from_uri(request.uri())
            .ok()
            .and_then(|Query(mut q)| q.remove(TOKEN_HEADER))
    });
    match token {
        Some(token) if auth.is_valid(&token) => Ok(next.run(request).await),
        _ => Err(ApiError::Unauthorized("token is error".to_owned())),
    }
}
