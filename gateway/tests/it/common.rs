//! Helpers shared by the gateway's integration tests: the deadline every wait polls against,
//! the gateway under test (served in-process on port 0), a fake websocket admin, and the
//! captured logs of this test binary.

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

/// How long any single wait in a test may take.
pub(crate) const DEADLINE: Duration = Duration::from_secs(15);

/// A reference timer of `nominal`, started now on this runtime: how late it fires (its
/// lateness) is the scheduling delay of this machine's load right now, the slack a bound on a
/// timer of the code under test, started at the same moment, needs beyond its nominal time.
pub(crate) fn timer_lateness(nominal: Duration) -> JoinHandle<Duration> {
    let started = tokio::time::Instant::now();
    tokio::spawn(async move {
        tokio::time::sleep(nominal).await;
        started.elapsed().saturating_sub(nominal)
    })
}

/// Polls `check` until it gives `Some`, failing after [`DEADLINE`] (with the captured logs,
/// when a test turned capturing on).
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}{}",
            LOGS.get()
                .map(|_| format!("; logs:\n{}", logged()))
                .unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The gateway under test: `gateway::serve` on `127.0.0.1:0` in a task of this runtime, with a
/// stop channel. [`Gateway::stop`] shuts it down gracefully and checks that it did; dropping it
/// only signals the stop (a test that ends without calling `stop` does not wait).
pub(crate) struct Gateway {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    /// Signals the graceful shutdown; taken by [`Gateway::stop`] or on drop.
    stop: Option<oneshot::Sender<()>>,
    /// The `serve` task; taken by [`Gateway::stop`].
    task: Option<JoinHandle<anyhow::Result<()>>>,
}

impl Gateway {
    /// The `sync` object of its `/actuator/health`.
    pub(crate) async fn sync_health(&self) -> serde_json::Value {
        let health: serde_json::Value = reqwest::get(self.url("/actuator/health"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        health["sync"].clone()
    }

    /// Starts a gateway with `config` (sync mode, admin URLs, token, timeouts…). It does not
    /// wait for the sync: tests poll for what they need.
    pub(crate) async fn start(config: gateway::Config) -> Gateway {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(gateway::serve(listener, config, async {
            let _ = stopped.await;
        }));
        Gateway {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// [`Gateway::start`] through `gateway::serve_workers` (the binary's way): `workers`
    /// threads with a single-threaded runtime each.
    pub(crate) async fn start_workers(config: gateway::Config, workers: usize) -> Gateway {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let workers = std::num::NonZeroUsize::new(workers).expect("at least one worker");
        let task = tokio::spawn(gateway::serve_workers(listener, workers, config, async {
            let _ = stopped.await;
        }));
        Gateway {
            addr,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// `http://<addr><path>`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Signals the stop now; the returned future waits (up to [`DEADLINE`]) for `serve` to
    /// return `Ok`, and panics otherwise. What the test drops between the two (clients,
    /// admin sessions) is gone before the wait.
    pub(crate) fn stop(mut self) -> impl Future<Output = ()> {
        let stop = self
            .stop
            .take()
            .expect("a running gateway has its stop channel");
        stop.send(()).expect("the gateway is still serving");
        let task = self.task.take().expect("a running gateway has its task");
        async move {
            tokio::time::timeout(DEADLINE, task)
                .await
                .expect("graceful shutdown")
                .unwrap()
                .unwrap();
        }
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One websocket session of a [`fake_admin`], seen from the admin's side.
pub(crate) type AdminConn = WebSocketStream<TcpStream>;

/// A fake admin: every accepted websocket connection is handed to the test.
pub(crate) async fn fake_admin() -> (SocketAddr, mpsc::UnboundedReceiver<AdminConn>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            if let Ok(ws) = tokio_tungstenite::accept_async(stream).await
                && tx.send(ws).is_err()
            {
                break;
            }
        }
    });
    (addr, rx)
}

/// The next connection from the gateway, after it has sent `MYSELF`.
pub(crate) async fn next_session(rx: &mut mpsc::UnboundedReceiver<AdminConn>) -> AdminConn {
    let mut conn = tokio::time::timeout(DEADLINE, rx.recv())
        .await
        .expect("gateway connects")
        .unwrap();
    await_myself(&mut conn).await;
    conn
}

/// Reads the session until the gateway sends `MYSELF`.
pub(crate) async fn await_myself(conn: &mut AdminConn) {
    loop {
        let msg = tokio::time::timeout(DEADLINE, conn.next())
            .await
            .expect("gateway sends MYSELF");
        if let Some(Ok(Message::Text(t))) = msg
            && t.as_str() == "MYSELF"
        {
            return;
        }
    }
}

static LOGS: OnceLock<&'static Mutex<Vec<u8>>> = OnceLock::new();

/// Everything logged by this test binary from the first call on (one global subscriber;
/// tests run in parallel, so each looks for its own message).
pub(crate) fn capture_logs() -> &'static Mutex<Vec<u8>> {
    LOGS.get_or_init(|| {
        let logs: &'static Mutex<Vec<u8>> = Box::leak(Box::new(Mutex::new(Vec::new())));
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_env_filter("info")
            .with_writer(move || LogWriter(logs))
            .init();
        logs
    })
}

/// What [`capture_logs`] captured so far.
pub(crate) fn logged() -> String {
    String::from_utf8_lossy(&capture_logs().lock().unwrap()).into_owned()
}

struct LogWriter(&'static Mutex<Vec<u8>>);

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The real admin served in-process on port 0, stopped by [`InProcessAdmin::stop`].
pub(crate) struct InProcessAdmin {
    /// Where it listens.
    pub(crate) addr: SocketAddr,
    stop: oneshot::Sender<()>,
    task: JoinHandle<anyhow::Result<()>>,
}

impl InProcessAdmin {
    /// Serves an admin with `config` on a fresh loopback port.
    pub(crate) async fn start(config: admin::Config) -> InProcessAdmin {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(admin::serve(listener, config, async {
            let _ = stopped.await;
        }));
        InProcessAdmin { addr, stop, task }
    }

    /// Stops it and waits (up to [`DEADLINE`]) for it to end cleanly.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(DEADLINE, self.task)
            .await
            .expect("the admin stops in time")
            .unwrap()
            .unwrap();
    }
}
