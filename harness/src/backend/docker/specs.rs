//! What each service is as a container: the [`ContainerSpec`] of the admin, the gateway, an
//! echo upstream, the ZooKeeper or etcd server, the Redis component and PostgreSQL, with the
//! ports and commands they run with.
//! The backend starts these, and [`crate::compose`] writes them into compose files.

use model::SyncMode;

use crate::backend::{ServerKind, StoreKind};
use crate::images;
use crate::upstream::Behaviour;

/// The admin's port inside its container.
pub(crate) const ADMIN_PORT: u16 = 9095;
/// The gateway's port inside its container.
pub(crate) const GATEWAY_PORT: u16 = 9195;
/// An echo upstream's port inside its container.
pub(crate) const UPSTREAM_PORT: u16 = 8080;
/// The environment of every container (backend and compose files alike).
pub(crate) const ENV: &[(&str, &str)] = &[("NO_COLOR", "1")];

/// One service as a container: what both the backend and the compose files start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerSpec {
    /// `admin`, `gateway` or `upstream`.
    pub role: &'static str,
    /// The container (and DNS) name.
    pub name: String,
    /// The image.
    pub image: &'static str,
    /// Arguments after the image's entrypoint.
    pub cmd: Vec<String>,
    /// The HTTP port it listens on inside the network.
    pub port: u16,
    /// How to tell it is ready.
    pub probe: Probe,
}

/// How the backend tells a container is ready, through its published port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// `GET <path>` answers 200.
    Http(&'static str),
    /// ZooKeeper's `srvr` four-letter word reports a mode.
    Srvr,
    /// Redis answers `PING` with `+PONG`.
    Ping,
    /// PostgreSQL lets `gantry` into the database `postgres` (a startup answered with
    /// AuthenticationOk, not "the database system is starting up").
    Postgres,
}

/// The etcd client port inside its container.
pub(crate) const ETCD_PORT: u16 = 2379;
/// The ZooKeeper client port inside its container.
pub(crate) const ZOOKEEPER_PORT: u16 = 2181;

/// The Redis port inside its container.
pub(crate) const REDIS_PORT: u16 = 6379;

/// The Redis server, named `<prefix>redis`: no persistence, reachable from the run's network
/// without a password (`--protected-mode no`; the published port is bound to loopback).
pub(crate) fn redis_spec(prefix: &str) -> ContainerSpec {
    let mut cmd = args(&["--port"]);
    cmd.push(REDIS_PORT.to_string());
    cmd.extend(args(&[
        "--bind",
        "0.0.0.0",
        "--protected-mode",
        "no",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        "/data",
    ]));
    ContainerSpec {
        role: images::REDIS.role,
        name: format!("{prefix}{}", images::REDIS.role),
        image: images::REDIS.tag,
        cmd,
        port: REDIS_PORT,
        probe: Probe::Ping,
    }
}

/// The PostgreSQL port inside its container.
pub(crate) const POSTGRES_PORT: u16 = 5432;

/// PostgreSQL, named `<prefix>postgres`: the image's entrypoint makes the cluster on its first
/// start (superuser `gantry`, trusted from every address) and runs the server on
/// [`POSTGRES_PORT`] without durability, as on the host (`crate::backend::component`,
/// "Durability"). The admins reach it at [`postgres_url`].
pub(crate) fn postgres_spec(prefix: &str) -> ContainerSpec {
    let mut cmd = args(&["-c"]);
    cmd.push(format!("port={POSTGRES_PORT}"));
    for setting in [
        "fsync=off",
        "synchronous_commit=off",
        "full_page_writes=off",
    ] {
        cmd.extend(args(&["-c", setting]));
    }
    ContainerSpec {
        role: images::POSTGRES.role,
        name: format!("{prefix}{}", images::POSTGRES.role),
        image: images::POSTGRES.tag,
        cmd,
        port: POSTGRES_PORT,
        probe: Probe::Postgres,
    }
}

/// `postgres://gantry@<prefix>postgres:5432/postgres`: the `--db` of the admins of the run
/// with `prefix` that share its [`postgres_spec`] container (the host component's URL, with
/// the container's name and port).
pub(crate) fn postgres_url(prefix: &str) -> String {
    let spec = postgres_spec(prefix);
    crate::backend::component::postgres::address(&format!("{}:{}", spec.name, spec.port))
}

/// The ZooKeeper or etcd server, named `<prefix><store>`.
pub(crate) fn store_spec(prefix: &str, kind: StoreKind) -> ContainerSpec {
    let name = format!("{prefix}{}", kind.name());
    match kind {
        StoreKind::Etcd => {
            let client = format!("http://{name}:{ETCD_PORT}");
            let peer = "http://127.0.0.1:2380";
            let mut cmd = args(&["--name", "gantry", "--data-dir", "/data"]);
            cmd.extend([
                "--listen-client-urls".into(),
                format!("http://0.0.0.0:{ETCD_PORT}"),
            ]);
            cmd.extend(["--advertise-client-urls".into(), client]);
            cmd.extend(args(&["--listen-peer-urls", peer]));
            cmd.extend(args(&["--initial-advertise-peer-urls", peer]));
            cmd.extend(["--initial-cluster".into(), format!("gantry={peer}")]);
            // As on the host (`crate::backend::component`, "Durability").
            cmd.push("--unsafe-no-fsync".into());
            ContainerSpec {
                role: images::ETCD.role,
                name,
                image: images::ETCD.tag,
                cmd,
                port: ETCD_PORT,
                probe: Probe::Http("/health"),
            }
        }
        StoreKind::Zookeeper => ContainerSpec {
            role: images::ZOOKEEPER.role,
            name,
            image: images::ZOOKEEPER.tag,
            // The image's entrypoint runs the baked-in /conf/zoo.cfg.
            cmd: Vec::new(),
            port: ZOOKEEPER_PORT,
            probe: Probe::Srvr,
        },
    }
}

impl ContainerSpec {
    /// `http://<name>:<port>`: how other containers reach it.
    pub fn peer_url(&self) -> String {
        format!("http://{}:{}", self.name, self.port)
    }

    /// For a ZooKeeper or etcd spec, the flags that point an admin or gateway at it by name
    /// (`--zookeeper-url <name>:2181`, `--etcd-url http://<name>:2379`); nothing otherwise.
    pub(crate) fn store_flags(&self) -> Vec<String> {
        let kind = if self.role == images::ZOOKEEPER.role {
            StoreKind::Zookeeper
        } else if self.role == images::ETCD.role {
            StoreKind::Etcd
        } else {
            return Vec::new();
        };
        ServerKind::from(kind).store_flags(&format!("{}:{}", self.name, self.port))
    }
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// The admin, named `<prefix>admin`, publishing with `mode` (to the store `store_flags` point
/// at, if any), on an in-container SQLite file.
pub(crate) fn admin_spec(prefix: &str, mode: SyncMode, store_flags: &[String]) -> ContainerSpec {
    let mut cmd = args(&["--bind", "0.0.0.0", "--port"]);
    cmd.extend([ADMIN_PORT.to_string(), "--db".into(), "/admin.db".into()]);
    cmd.extend(["--sync".into(), mode.to_string()]);
    cmd.extend_from_slice(store_flags);
    ContainerSpec {
        role: images::ADMIN.role,
        name: format!("{prefix}admin"),
        image: images::ADMIN.tag,
        cmd,
        port: ADMIN_PORT,
        probe: Probe::Http("/actuator/health"),
    }
}

/// The peers whose `X-Forwarded-For` a containerised gateway's rate limiter believes
/// (`--trusted-proxies`): the harness's requests reach it through a published port, from the
/// Docker network's gateway address (an address of Docker's default pools), and scenarios
/// such as `rate_limiter_per_client` name their simulated clients in that header.
const TRUSTED_PROXIES: &str = "127.0.0.0/8,::1,10.0.0.0/8,172.16.0.0/12,192.168.0.0/16";

/// The gateway, named `<prefix>gateway`, subscribing with `mode` to the admin at `admin_url`
/// (or to the store `store_flags` point at, if any), trusting `TRUSTED_PROXIES` as proxies.
pub(crate) fn gateway_spec(
    prefix: &str,
    mode: SyncMode,
    admin_url: &str,
    store_flags: &[String],
) -> ContainerSpec {
    let mut cmd = args(&["--bind", "0.0.0.0", "--port"]);
    cmd.extend([GATEWAY_PORT.to_string(), "--sync".into(), mode.to_string()]);
    cmd.extend(["--admin-url".into(), admin_url.to_owned()]);
    cmd.extend(["--trusted-proxies".into(), TRUSTED_PROXIES.to_owned()]);
    cmd.extend_from_slice(store_flags);
    ContainerSpec {
        role: images::GATEWAY.role,
        name: format!("{prefix}gateway"),
        image: images::GATEWAY.tag,
        cmd,
        port: GATEWAY_PORT,
        probe: Probe::Http("/actuator/health"),
    }
}

/// The scenario upstream `name` with `behave` (passed as `--behave <json>` when not empty),
/// named `<prefix>upstream-<name>`.
pub(crate) fn upstream_spec(prefix: &str, name: &str, behave: &[Behaviour]) -> ContainerSpec {
    let mut cmd = args(&["--name", name, "--bind", "0.0.0.0", "--port"]);
    cmd.push(UPSTREAM_PORT.to_string());
    if !behave.is_empty() {
        cmd.push("--behave".into());
        cmd.push(serde_json::to_string(behave).expect("behaviours serialise"));
    }
    ContainerSpec {
        role: images::UPSTREAM.role,
        name: format!("{prefix}upstream-{}", dns_safe(name)),
        image: images::UPSTREAM.tag,
        cmd,
        port: UPSTREAM_PORT,
        // Answers 200 once every behaviour is mounted, whatever they say.
        probe: Probe::Http(crate::upstream::READY_PATH),
    }
}

/// The role of a fault proxy in front of an upstream (on the run's upstream network).
pub(crate) const UPSTREAM_PROXY_ROLE: &str = "upstream-proxy";
/// The role of a fault proxy on the gateway's sync link (on the run's sync network).
pub(crate) const SYNC_PROXY_ROLE: &str = "sync-proxy";

/// A fault proxy of `role` in front of `target` (`name:port` on the run's network), named
/// `<of>-proxy` after the container it stands in front of; its control API is its port.
pub(crate) fn proxy_spec(role: &'static str, of: &str, target: &str) -> ContainerSpec {
    ContainerSpec {
        role,
        name: format!("{of}-proxy"),
        image: images::PROXY.tag,
        cmd: args(&["--target", target]),
        port: crate::fault::container::CONTROL_PORT,
        probe: Probe::Http("/health"),
    }
}

/// `name` with every character a container name cannot hold replaced by `-`.
fn dns_safe(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_wire_the_gateway_to_the_admin_by_name() {
        let admin = admin_spec("gantry-abc-", SyncMode::Websocket, &[]);
        let gateway = gateway_spec("gantry-abc-", SyncMode::Websocket, &admin.peer_url(), &[]);
        assert_eq!(admin.name, "gantry-abc-admin");
        assert_eq!(
            gateway.cmd.join(" "),
            format!(
                "--bind 0.0.0.0 --port 9195 --sync websocket --admin-url \
                 http://gantry-abc-admin:9095 --trusted-proxies {TRUSTED_PROXIES}"
            )
        );
        let up = upstream_spec("gantry-abc-", "Alpha_1", &[]);
        assert_eq!(up.name, "gantry-abc-upstream-alpha-1");
        assert_eq!(
            up.cmd.join(" "),
            "--name Alpha_1 --bind 0.0.0.0 --port 8080"
        );
    }

    #[test]
    fn an_upstream_gets_its_behaviours_and_a_readiness_path_they_cannot_shadow() {
        let behave: Vec<Behaviour> =
            serde_json::from_str(r#"[{"status":503},{"path":"/r","fault":"reset"}]"#).unwrap();
        let up = upstream_spec("gantry-abc-", "broken", &behave);
        assert_eq!(
            up.cmd.join(" "),
            r#"--name broken --bind 0.0.0.0 --port 8080 --behave [{"status":503},{"path":"/r","fault":"reset"}]"#
        );
        assert_eq!(up.probe, Probe::Http("/__gantry/ready"));
    }

    #[test]
    fn store_containers_are_reached_by_name() {
        let zk = store_spec("gantry-abc-", StoreKind::Zookeeper);
        let admin = admin_spec("gantry-abc-", SyncMode::Zookeeper, &zk.store_flags());
        assert!(
            admin
                .cmd
                .join(" ")
                .ends_with("--sync zookeeper --zookeeper-url gantry-abc-zookeeper:2181"),
            "{:?}",
            admin.cmd
        );
        let etcd = store_spec("gantry-abc-", StoreKind::Etcd);
        assert!(
            etcd.cmd.iter().any(|a| a == "--unsafe-no-fsync"),
            "{:?}",
            etcd.cmd
        );
        let gateway = gateway_spec(
            "gantry-abc-",
            SyncMode::Etcd,
            "http://a:1",
            &etcd.store_flags(),
        );
        assert!(
            gateway
                .cmd
                .join(" ")
                .ends_with("--etcd-url http://gantry-abc-etcd:2379"),
            "{:?}",
            gateway.cmd
        );
    }

    #[test]
    fn postgres_runs_without_durability_and_is_reached_by_name() {
        let pg = postgres_spec("gantry-abc-");
        assert_eq!(
            (pg.name.as_str(), pg.image, pg.port, pg.probe),
            (
                "gantry-abc-postgres",
                "gantry/postgres:dev",
                5432,
                Probe::Postgres
            )
        );
        assert_eq!(
            pg.cmd.join(" "),
            "-c port=5432 -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        );
        assert_eq!(
            postgres_url("gantry-abc-"),
            "postgres://gantry@gantry-abc-postgres:5432/postgres"
        );
    }

    #[test]
    fn redis_runs_without_persistence_and_is_reached_by_name() {
        let redis = redis_spec("gantry-abc-");
        assert_eq!(
            (redis.name.as_str(), redis.image, redis.port, redis.probe),
            ("gantry-abc-redis", "gantry/redis:dev", 6379, Probe::Ping)
        );
        assert_eq!(
            redis.cmd,
            [
                "--port",
                "6379",
                "--bind",
                "0.0.0.0",
                "--protected-mode",
                "no",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                "/data"
            ]
        );
    }
}
