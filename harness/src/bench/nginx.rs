//! nginx as the proxy bench's reference: a config written to a temporary directory (same
//! upstream, keep-alive upstream connections, HTTP/1.1 to the upstream, as many workers as the
//! gateway has threads, logs in the directory, a free loopback port), run in the foreground
//! (`daemon off`) under a small `sh` watchdog whose stdin the bench holds: dropping [`Nginx`]
//! (or the bench dying) closes it, and the watchdog stops nginx (`SIGTERM` to the master, which
//! stops its workers) and reaps it.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

/// Where Debian's `nginx` package installs the binary (also looked up on `PATH`).
pub(crate) const DEBIAN_NGINX: &str = "/usr/sbin/nginx";
/// How long nginx may take to answer.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs `"$@"` in the background, prints its pid, waits for stdin to end, then stops it.
const WATCHDOG: &str = r#""$@" </dev/null &
pid=$!
echo "$pid"
cat >/dev/null
kill -TERM "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
exit 0"#;

/// The nginx binary, if installed.
pub(crate) fn locate() -> Option<PathBuf> {
    crate::backend::process::find_on_path("nginx")
        .or_else(|| Some(PathBuf::from(DEBIAN_NGINX)).filter(|p| p.is_file()))
}

/// What the config says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NginxConfig {
    /// The directory holding the config, pid file, logs and temp paths.
    pub dir: PathBuf,
    /// The loopback port nginx listens on.
    pub port: u16,
    /// The upstream.
    pub upstream: SocketAddr,
    /// `worker_processes`.
    pub workers: usize,
    /// Idle upstream connections each worker keeps (`keepalive N`).
    pub keepalive: usize,
}

/// The config text for `cfg`.
///
/// Besides what the bench asks for (`keepalive`, `proxy_http_version 1.1`, an empty
/// `Connection` header), `keepalive_requests` is raised on both sides: nginx's default (1000)
/// would close a client or upstream connection every thousand requests, which the gateway
/// never does, and which would show up as reconnects in the comparison.
pub(crate) fn render(cfg: &NginxConfig) -> String {
    let d = cfg.dir.display();
    format!(
        "# written by `gantry bench proxy`
worker_processes {workers};
daemon off;
master_process on;
pid {d}/nginx.pid;
error_log {d}/error.log warn;

events {{
    worker_connections 4096;
}}

http {{
    access_log off;
    client_body_temp_path {d}/client_body;
    proxy_temp_path {d}/proxy;
    fastcgi_temp_path {d}/fastcgi;
    uwsgi_temp_path {d}/uwsgi;
    scgi_temp_path {d}/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 75s;

    upstream bench_upstream {{
        server {upstream};
        keepalive {keepalive};
        keepalive_requests 1000000;
        keepalive_timeout 75s;
    }}

    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://bench_upstream;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }}
    }}
}}
",
        workers = cfg.workers.max(1),
        upstream = cfg.upstream,
        keepalive = cfg.keepalive.max(1),
        port = cfg.port,
    )
}

/// A running nginx; stopped on drop.
#[derive(Debug)]
pub(crate) struct Nginx {
    watchdog: Child,
    stdin: Option<ChildStdin>,
    addr: SocketAddr,
    dir: PathBuf,
}

impl Nginx {
    /// Writes the config for `upstream` into `dir`, starts `bin` with it on a free loopback
    /// port, and waits until it answers `GET /` (proxied to the upstream) with 200.
    pub(crate) async fn start(
        bin: &Path,
        dir: &Path,
        upstream: SocketAddr,
        workers: usize,
        keepalive: usize,
    ) -> anyhow::Result<Nginx> {
        std::fs::create_dir_all(dir)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let cfg = NginxConfig {
            dir: dir.to_owned(),
            port,
            upstream,
            workers,
            keepalive,
        };
        let conf = dir.join("nginx.conf");
        std::fs::write(&conf, render(&cfg))?;
        let mut watchdog = Command::new("sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("nginx-watchdog")
            .arg(bin)
            .arg("-p")
            .arg(dir)
            .arg("-c")
            .arg(&conf)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(dir.join("stderr.log"))?)
            .spawn()
            .map_err(|e| anyhow::anyhow!("starting {}: {e}", bin.display()))?;
        let stdin = watchdog.stdin.take();
        if let Some(out) = watchdog.stdout.take() {
            // The pid line; the watchdog prints nothing else.
            let _ = BufReader::new(out).lines().next();
        }
        let nginx = Nginx {
            watchdog,
            stdin,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            dir: dir.to_owned(),
        };
        nginx.await_ready().await?;
        Ok(nginx)
    }

    /// Where it listens.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The watchdog's pid: nginx's master and workers are its descendants.
    pub(crate) fn root_pid(&self) -> u32 {
        self.watchdog.id()
    }

    async fn await_ready(&self) -> anyhow::Result<()> {
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(2))
            .build()?;
        let deadline = tokio::time::Instant::now() + READY_TIMEOUT;
        let mut last = String::new();
        while tokio::time::Instant::now() < deadline {
            match http.get(format!("http://{}/ready", self.addr)).send().await {
                Ok(r) if r.status() == 200 => return Ok(()),
                Ok(r) => last = format!("HTTP {}", r.status()),
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let log = |f: &str| std::fs::read_to_string(self.dir.join(f)).unwrap_or_default();
        anyhow::bail!(
            "nginx did not answer within {READY_TIMEOUT:?} (last: {last}); stderr:\n{}\nerror.log:\n{}",
            log("stderr.log"),
            log("error.log")
        )
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        drop(self.stdin.take());
        for _ in 0..100 {
            if !matches!(self.watchdog.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.watchdog.kill();
        let _ = self.watchdog.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> NginxConfig {
        NginxConfig {
            dir: PathBuf::from("/tmp/b"),
            port: 8081,
            upstream: SocketAddr::from(([127, 0, 0, 1], 9000)),
            workers: 2,
            keepalive: 64,
        }
    }

    #[test]
    fn the_config_proxies_with_keepalive_to_the_upstream() {
        let text = render(&config());
        for line in [
            "worker_processes 2;",
            "daemon off;",
            "pid /tmp/b/nginx.pid;",
            "error_log /tmp/b/error.log warn;",
            "access_log off;",
            "server 127.0.0.1:9000;",
            "keepalive 64;",
            "listen 127.0.0.1:8081;",
            "proxy_pass http://bench_upstream;",
            "proxy_http_version 1.1;",
            "proxy_set_header Connection \"\";",
        ] {
            assert!(
                text.lines().any(|l| l.trim() == line),
                "missing `{line}` in:\n{text}"
            );
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }

    /// nginx accepts the config (`nginx -t`). Ignored by default, so a machine without nginx
    /// never reports it as passed: `cargo test --workspace -- --ignored nginx_accepts` where
    /// nginx is installed.
    #[test]
    #[ignore = "needs the nginx binary: run with --ignored where nginx is installed"]
    fn nginx_accepts_the_config() {
        let bin = locate().expect("nginx is not installed");
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = config();
        cfg.dir = dir.path().to_owned();
        let conf = dir.path().join("nginx.conf");
        std::fs::write(&conf, render(&cfg)).unwrap();
        let out = Command::new(bin)
            .arg("-t")
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&conf)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
