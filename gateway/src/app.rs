//! The app: one gateway's router over its state ([`App`](crate::state::App)), and [`serve`],
//! which runs it with a sync subscriber on the caller's runtime, or [`serve_workers`], on a
//! single-threaded runtime per worker thread (the binary's way).

use std::borrow::Cow;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::sync::Arc;
use tokio::time::Instant;

use anyhow::Context;
use axum::Router;
use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderName, HeaderValue};
use netserve::{Connect, Listener};

use crate::config::Config;
use crate::router::RequestView;
use crate::state::App;
use crate::{actuator, precheck, sync};

/// The gateway's router over a state of its own (see [`App`]), with no sync subscriber: it
/// serves the empty config. [`serve`] runs it with one.
pub fn app(config: &Config) -> Router {
    router(Arc::new(App::new(config)))
}

/// The actuator endpoints, `/metrics`, and every other request through the chain, proxied
/// over `app`'s network `C`.
fn router<C: Connect>(app: Arc<App<C>>) -> Router {
    let mut router = Router::new().route("/actuator/health", get(actuator::health));
    if !app.hide_extras {
        router = router
            .route("/actuator/digest", get(actuator::digest))
            .route(
                "/actuator/seed",
                get(actuator::seed).put(actuator::set_seed),
            );
    }
    router
        .route("/actuator/plugins", get(actuator::plugins))
        .route("/actuator/pluginData", get(actuator::plugin_data))
        .route("/actuator/selectorData", get(actuator::selector_data))
        .route("/actuator/ruleData", get(actuator::rule_data))
        .route("/actuator/metadata", get(actuator::metadata))
        .route("/metrics", get(actuator::metrics))
        .fallback(route)
        .with_state(app)
}

/// Runs the gateway on `listener` until `shutdown` completes, then drains connections and
/// stops the sync subscriber. Client connections are served by [`netserve::serve`] with
/// `config.timeouts`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    serve_on(listener, netserve::Tokio, config, shutdown).await
}

/// [`serve`] on any network: accepting on `listener`, and opening the websocket sync
/// connection and the proxy's upstream connections through `net` (`gantry sim` passes the
/// simulator's). `net` is a type parameter: the real path ([`netserve::Tokio`]) pays nothing
/// for the seam.
pub async fn serve_on<L: Listener, C: Connect>(
    listener: L,
    net: C,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    config.check()?;
    let app = Arc::new(App::over(&config, net.clone()));
    let subscriber = sync::start::start(&config, net, &app.sync)?;
    netserve::serve(listener, router(app), config.timeouts, shutdown).await;
    drop(subscriber);
    Ok(())
}

/// [`serve`] on `workers` threads, each running a single-threaded runtime of its own: it
/// accepts on its own handle of `listener` (the kernel hands each connection to one of them),
/// serves the connections it accepted, and opens and drives the upstream connections its
/// requests use, so a request never wakes another thread (the gateway's profile had ~30% of
/// its samples in the scheduler's cross-thread wake-ups). Config, plugins, balancers and
/// metrics are shared; the sync subscriber runs on the caller's runtime. On `shutdown` every
/// worker stops accepting and drains its connections; this returns once all have.
pub async fn serve_workers(
    listener: std::net::TcpListener,
    workers: NonZeroUsize,
    config: Config,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    config.check()?;
    listener
        .set_nonblocking(true)
        .context("setting the listener non-blocking")?;
    let app = App::new(&config);
    let subscriber = sync::start::start(&config, netserve::Tokio, &app.sync)?;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut threads = Vec::with_capacity(workers.get());
    for worker in 0..workers.get() {
        let listener = listener
            .try_clone()
            .context("sharing the listener with a worker")?;
        let app = app.for_worker();
        let mut stopped = stopped.clone();
        let timeouts = config.timeouts;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting a worker's runtime")?;
        let thread = std::thread::Builder::new()
            .name(format!("gateway-worker-{worker}"))
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener)?;
                    let stop = async move {
                        // A dropped sender is a stop too.
                        let _ = stopped.wait_for(|stop| *stop).await;
                    };
                    netserve::serve(listener, router(Arc::new(app)), timeouts, stop).await;
                    std::io::Result::Ok(())
                })
            })
            .context("starting a worker thread")?;
        threads.push(thread);
    }
    drop(listener);
    shutdown.await;
    stop.send_replace(true);
    let joined = tokio::task::spawn_blocking(move || {
        // Every worker joined, the first failure answered.
        let mut first = Ok(());
        for (worker, thread) in threads.into_iter().enumerate() {
            let ended = match thread.join() {
                Ok(result) => result.with_context(|| format!("gateway worker {worker}")),
                Err(_) => Err(anyhow::anyhow!("gateway worker {worker} panicked")),
            };
            if first.is_ok() {
                first = ended;
            }
        }
        first
    })
    .await
    .context("joining the gateway workers")?;
    drop(subscriber);
    joined
}

/// Every non-actuator request: the checks of `precheck` (Host, path), the plugin
/// chain, then the proxy. The answer carries
/// `x-gantry-gateway-time-us`: the time the gateway added (total minus upstream time, up to
/// the response head).
async fn route<C: Connect>(
    State(app): State<Arc<App<C>>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request<Body>,
) -> Response {
    let started = Instant::now();
    let decision = match precheck::check(&req) {
        Err(rejection) => Err(rejection),
        Ok(()) => {
            let snapshot = app.sync.snapshot();
            let uri = req.uri();
            let view = RequestView {
                method: req.method(),
                path: if uri.path().is_empty() {
                    "/"
                } else {
                    uri.path()
                },
                query: uri.query(),
                authority: uri.authority().map(|a| a.as_str()),
                headers: req.headers(),
                peer: peer.ip(),
                peer_trusted: app.trusted_proxies.contains(peer.ip()),
            };
            // `--emulate-bug rebuild-per-change` / `leak-per-request` only (tests): tables
            // rebuilt per request, or a descriptor and memory leaked.
            let rebuilt = app.sync.on_request(&snapshot);
            let active = rebuilt.as_ref().map_or(&snapshot.active, |r| &r.active);
            app.chain.run(active, &view).await
        }
    };
    let rejected = decision.is_err();
    let (mut response, outcome, upstream) = match decision {
        Ok(forward) => {
            let done = app.proxy.forward(req, forward, peer.ip()).await;
            (
                done.response,
                Cow::Borrowed(done.outcome),
                Some(done.upstream),
            )
        }
        Err(rejection) => {
            drain(req.into_body()).await;
            let code = rejection.body.code.to_string();
            (rejection.into_response(), Cow::Owned(code), None)
        }
    };
    let overhead = started
        .elapsed()
        .saturating_sub(upstream.unwrap_or_default());
    app.metrics.request(&outcome, upstream, overhead);
    if app.hide_extras {
        hide_extras(&mut response, rejected);
        return response;
    }
    response.headers_mut().insert(
        GATEWAY_TIME.clone(),
        HeaderValue::from(overhead.as_micros() as u64),
    );
    response
}

/// How much of the body of a request it answers itself the gateway reads and drops first.
const DRAIN_LIMIT: usize = 64 * 1024;

/// How long the gateway waits for that body.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// Reads and drops the body of a request the gateway answers itself (a rejection), up to
/// [`DRAIN_LIMIT`] bytes for at most [`DRAIN_TIME`], before answering: a connection closed
/// with request bytes still unread is reset, and a client still sending its body (a slow
/// link, a large upload) then loses the answer to the reset. Found by `--run-mode slice`:
/// a GET with a body to no route answered -107 and closed while the body's bytes were still
/// arriving one by one, and the client saw a reset instead of the 404 (nginx drains for the
/// same reason: `lingering_close`).
async fn drain(body: Body) {
    use http_body_util::{BodyExt, Limited};
    // Most rejections (a 404, a 429 under load) carry no body: no timer for them.
    if axum::body::HttpBody::is_end_stream(&body) {
        return;
    }
    let read = Limited::new(body, DRAIN_LIMIT).collect();
    // A body over the limit or too slow is left: the connection then closes as before.
    let _ = tokio::time::timeout(DRAIN_TIME, read).await;
}

/// What `--hide-extras` does to an answer: every `x-gantry-*` header goes (the gateway's
/// selector and rule ids, the upstream's name), and a rejection comes with HTTP 200, as
/// ShenYu answers its error bodies.
fn hide_extras(response: &mut Response, rejected: bool) {
    let extras: Vec<HeaderName> = response
        .headers()
        .keys()
        .filter(|k| k.as_str().starts_with("x-gantry-"))
        .cloned()
        .collect();
    for name in extras {
        response.headers_mut().remove(name);
    }
    if rejected {
        *response.status_mut() = axum::http::StatusCode::OK;
    }
}

static GATEWAY_TIME: HeaderName = HeaderName::from_static("x-gantry-gateway-time-us");
