//! Container images without a registry: the workspace binaries of the release build (the one
//! `gantry run` and the main job use, so no second build) with the libraries they link and the
//! dynamic loader, and ZooKeeper, etcd, Redis and PostgreSQL from the host's Debian packages,
//! each in a `FROM scratch` image labelled with the SHA-256 of all its inputs
//! (`gantry.content-hash`; see [`rootfs`]). [`ensure`] rebuilds only the images whose label differs from their inputs on
//! disk; [`preflight`] checks that every image a topology needs exists
//! locally. Nothing here ever pulls: `FROM scratch` has no base to fetch, and builds use the
//! engine's classic builder (`/build` without BuildKit), which Docker 20.10 has.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bollard::Docker;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;

use crate::error::BackendError;

pub(crate) mod rootfs;

/// The image label holding the SHA-256 of the binary inside.
pub(crate) const HASH_LABEL: &str = "gantry.content-hash";
/// The command that builds every image.
pub(crate) const IMAGES_COMMAND: &str = "gantry images";

/// One image gantry runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ImageSpec {
    /// Short name, used in container names (`admin`, `gateway`, `upstream`).
    pub role: &'static str,
    /// Local tag, e.g. `gantry/admin:dev`.
    pub tag: &'static str,
    /// Where the image's content comes from.
    pub source: ImageSource,
}

/// How an image is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageSource {
    /// A workspace binary of the release build, copied into `FROM scratch` as `/<binary>`
    /// with the libraries `ldd` lists, with `entrypoint` as the image's entrypoint.
    WorkspaceBinary {
        /// The binary's name in the target directory.
        binary: &'static str,
        /// The entrypoint (the binary's absolute path first).
        entrypoint: &'static [&'static str],
    },
    /// etcd from Debian's `etcd-server`: `/usr/bin/etcd` with the libraries `ldd` lists.
    Etcd,
    /// ZooKeeper from Debian's `zookeeper`: its jars on a `jlink`-trimmed JRE.
    Zookeeper,
    /// Redis from Debian's `redis-server`: `/usr/bin/redis-server` with the libraries `ldd`
    /// lists.
    Redis,
    /// PostgreSQL from Debian's `postgresql` (its newest version): `initdb` and `postgres`,
    /// its modules and share directory, `/bin/sh` for the entrypoint script that makes the
    /// cluster on the first start, run as a non-root user.
    Postgres,
}

/// `gantry/admin:dev`: `gantry-admin`.
pub(crate) const ADMIN: ImageSpec = ImageSpec {
    role: "admin",
    tag: "gantry/admin:dev",
    source: ImageSource::WorkspaceBinary {
        binary: "gantry-admin",
        entrypoint: &["/gantry-admin"],
    },
};

/// `gantry/gateway:dev`: `gantry-gateway`.
pub(crate) const GATEWAY: ImageSpec = ImageSpec {
    role: "gateway",
    tag: "gantry/gateway:dev",
    source: ImageSource::WorkspaceBinary {
        binary: "gantry-gateway",
        entrypoint: &["/gantry-gateway"],
    },
};

/// `gantry/upstream:dev`: the scenario echo upstream (`gantry upstream`).
pub(crate) const UPSTREAM: ImageSpec = ImageSpec {
    role: "upstream",
    tag: "gantry/upstream:dev",
    source: ImageSource::WorkspaceBinary {
        binary: "gantry",
        entrypoint: &["/gantry", "upstream"],
    },
};

/// `gantry/proxy:dev`: `gantry fault-proxy`, the docker backend's fault proxy on a link
/// ([`crate::fault::container`]).
pub(crate) const PROXY: ImageSpec = ImageSpec {
    role: "proxy",
    tag: "gantry/proxy:dev",
    source: ImageSource::WorkspaceBinary {
        binary: "gantry",
        entrypoint: &["/gantry", "fault-proxy"],
    },
};

/// `gantry/etcd:dev`: Debian's etcd 3.4, `FROM scratch`.
pub(crate) const ETCD: ImageSpec = ImageSpec {
    role: "etcd",
    tag: "gantry/etcd:dev",
    source: ImageSource::Etcd,
};

/// `gantry/zookeeper:dev`: Debian's ZooKeeper 3.8 on a `jlink`-trimmed JRE, `FROM scratch`.
pub(crate) const ZOOKEEPER: ImageSpec = ImageSpec {
    role: "zookeeper",
    tag: "gantry/zookeeper:dev",
    source: ImageSource::Zookeeper,
};

/// `gantry/redis:dev`: Debian's Redis, `FROM scratch` (the `components: [redis]` of a case).
pub(crate) const REDIS: ImageSpec = ImageSpec {
    role: "redis",
    tag: "gantry/redis:dev",
    source: ImageSource::Redis,
};

/// `gantry/postgres:dev`: Debian's PostgreSQL, `FROM scratch` (the database admins can share).
pub(crate) const POSTGRES: ImageSpec = ImageSpec {
    role: "postgres",
    tag: "gantry/postgres:dev",
    source: ImageSource::Postgres,
};

/// Every image gantry can build.
pub(crate) const ALL: &[ImageSpec] = &[
    ADMIN, GATEWAY, UPSTREAM, PROXY, ETCD, ZOOKEEPER, REDIS, POSTGRES,
];

/// The images a topology under `mode` needs; `None` when the docker backend cannot run that
/// mode.
pub(crate) fn needed(mode: model::SyncMode) -> Option<Vec<ImageSpec>> {
    let mut specs = vec![ADMIN, GATEWAY, UPSTREAM];
    match mode {
        model::SyncMode::Websocket | model::SyncMode::Http => {}
        model::SyncMode::Zookeeper => specs.push(ZOOKEEPER),
        model::SyncMode::Etcd => specs.push(ETCD),
    }
    Some(specs)
}

/// What [`ensure`] did for one image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageStatus {
    /// The tag.
    pub tag: &'static str,
    /// The content hash (SHA-256 hex of every input: binary, libraries, Dockerfile).
    pub hash: String,
    /// Whether it was (re)built; `false` when the existing image already had this hash.
    pub built: bool,
    /// How long building took (zero when not built).
    pub took: std::time::Duration,
    /// Why it was not built at all (its host sources are missing).
    pub skipped: Option<String>,
}

/// The release build the workspace images (and `gantry run`) take their binaries from.
pub(crate) const RELEASE_BUILD_COMMAND: &str = "cargo build --release --workspace --bins";

/// Where the release build puts the binaries: `target/release`, beside the directory of the
/// running harness (`target/debug` under `cargo test`).
pub(crate) fn release_bin_dir() -> Result<PathBuf, BackendError> {
    let here = crate::backend::host::default_bin_dir(None)?;
    Ok(match here.parent() {
        Some(target) => target.join("release"),
        None => here,
    })
}

/// Runs the release build of every workspace binary; returns the binary directory.
pub(crate) fn build_release(workspace: &Path) -> Result<PathBuf, BackendError> {
    use crate::backend::host::{Profile, build_binaries_into};
    if !build_binaries_into(workspace, None, Profile::Release)? {
        return Err(BackendError::MissingBinary {
            path: release_bin_dir()?,
            build: format!("{RELEASE_BUILD_COMMAND} (cargo is not installed here)"),
        });
    }
    release_bin_dir()
}

/// The `gantry.content-hash` label of the local image `tag`; `None` when the image is missing
/// or unlabelled.
pub(crate) async fn local_hash(docker: &Docker, tag: &str) -> Option<String> {
    let image = docker.inspect_image(tag).await.ok()?;
    image.config?.labels?.remove(HASH_LABEL)
}

/// Builds every image in `specs` from the binaries in `bin_dir` (workspace images) or the
/// host's packages (middleware images) whose local image is missing or carries a different
/// content hash (all of them when `force`). A middleware image whose host package is missing
/// is skipped (`skipped`), not an error: only its mode becomes unavailable.
pub(crate) async fn ensure(
    docker: &Docker,
    specs: &[ImageSpec],
    bin_dir: &Path,
    force: bool,
) -> Result<Vec<ImageStatus>, BackendError> {
    let mut statuses = Vec::new();
    for spec in specs {
        let started = std::time::Instant::now();
        if let ImageSource::WorkspaceBinary { binary, .. } = spec.source {
            // A workspace binary must be there: the caller built it or asked for it.
            let path = bin_dir.join(binary);
            if !path.is_file() {
                return Err(BackendError::MissingBinary {
                    path,
                    build: RELEASE_BUILD_COMMAND.to_owned(),
                });
            }
        }
        let rootfs = match rootfs::inputs(spec.source, bin_dir) {
            Ok(rootfs) => rootfs,
            Err(why) if matches!(spec.source, ImageSource::WorkspaceBinary { .. }) => {
                return Err(build_failed(spec.tag, &why));
            }
            Err(why) => {
                tracing::warn!("not building {}: {why}", spec.tag);
                statuses.push(ImageStatus {
                    tag: spec.tag,
                    hash: String::new(),
                    built: false,
                    took: std::time::Duration::ZERO,
                    skipped: Some(why),
                });
                continue;
            }
        };
        let hash = rootfs.hash();
        let built = force || local_hash(docker, spec.tag).await.as_deref() != Some(&hash);
        if built {
            let context = tokio::task::spawn_blocking(move || rootfs.context())
                .await
                .map_err(|e| build_failed(spec.tag, &e.to_string()))??;
            build_context(docker, spec.tag, &hash, context).await?;
        }
        let skipped = None;
        statuses.push(ImageStatus {
            tag: spec.tag,
            hash,
            built,
            took: if built {
                started.elapsed()
            } else {
                std::time::Duration::ZERO
            },
            skipped,
        });
    }
    Ok(statuses)
}

/// Builds the tar build `context` as `tag`, labelled with `hash`.
async fn build_context(
    docker: &Docker,
    tag: &str,
    hash: &str,
    context: Vec<u8>,
) -> Result<(), BackendError> {
    let labels = HashMap::from([(HASH_LABEL, hash)]);
    let options = BuildImageOptionsBuilder::default()
        .dockerfile("Dockerfile")
        .t(tag)
        .labels(&labels)
        .rm(true)
        .forcerm(true)
        .pull("false")
        .build();
    let mut stream = docker.build_image(options, None, Some(bollard::body_full(context.into())));
    let mut output = String::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(info) => {
                if let Some(s) = info.stream {
                    output.push_str(&s);
                }
                if let Some(e) = info.error_detail.and_then(|d| d.message) {
                    return Err(build_failed(tag, &format!("{output}{e}")));
                }
            }
            Err(e) => return Err(build_failed(tag, &format!("{output}{e}"))),
        }
    }
    Ok(())
}

fn build_failed(tag: &str, detail: &str) -> BackendError {
    BackendError::BuildFailed {
        command: format!("docker build -t {tag} (FROM scratch)"),
        status: "failed".into(),
        stderr_tail: crate::backend::process::tail(detail, 20),
    }
}

/// Fails fast, naming the command that builds them, when an image in `specs` is not present
/// locally.
pub(crate) async fn preflight(docker: &Docker, specs: &[ImageSpec]) -> Result<(), BackendError> {
    let mut missing = Vec::new();
    for spec in specs {
        if docker.inspect_image(spec.tag).await.is_err() {
            missing.push(spec.tag.to_owned());
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(BackendError::MissingImages {
            images: missing.join(", "),
            build: IMAGES_COMMAND.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn push_modes_need_the_three_workspace_images_and_store_modes_their_store() {
        for mode in [model::SyncMode::Websocket, model::SyncMode::Http] {
            let tags: Vec<_> = needed(mode).unwrap().iter().map(|s| s.tag).collect();
            assert_eq!(
                tags,
                [
                    "gantry/admin:dev",
                    "gantry/gateway:dev",
                    "gantry/upstream:dev"
                ]
            );
        }
        let last = |m| needed(m).unwrap().last().unwrap().tag;
        assert_eq!(last(model::SyncMode::Zookeeper), "gantry/zookeeper:dev");
        assert_eq!(last(model::SyncMode::Etcd), "gantry/etcd:dev");
    }
}
