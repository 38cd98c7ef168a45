//! Container images without a registry: the workspace binaries, built static
//! (`+crt-static`, glibc), each in a `FROM scratch` image labelled with the SHA-256 of its
//! binary (`gantry.content-hash`), and ZooKeeper, etcd and Redis from the host's Debian packages
//! (see [`middleware`], labelled with the hash of all their inputs). [`ensure`] rebuilds only the images whose label differs
//! from the binary on disk; [`preflight`] checks that every image a topology needs exists
//! locally. Nothing here ever pulls: `FROM scratch` has no base to fetch, and builds use the
//! engine's classic builder (`/build` without BuildKit), which Docker 20.10 has.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bollard::Docker;
use bollard::query_parameters::BuildImageOptionsBuilder;
use futures_util::StreamExt;
use sha2::{Digest, Sha256};

use crate::error::BackendError;

pub(crate) mod middleware;

/// The image label holding the SHA-256 of the binary inside.
pub(crate) const HASH_LABEL: &str = "gantry.content-hash";
/// The command that builds every image.
pub(crate) const IMAGES_COMMAND: &str = "gantry images";
/// The target triple of the static build.
pub(crate) const STATIC_TARGET: &str = "x86_64-unknown-linux-gnu";

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
    /// A workspace binary from the static build, copied into `FROM scratch` as `/<binary>`,
    /// with `entrypoint` as the image's entrypoint.
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

/// Every image gantry can build.
pub(crate) const ALL: &[ImageSpec] = &[ADMIN, GATEWAY, UPSTREAM, ETCD, ZOOKEEPER, REDIS];

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
    /// The content hash (SHA-256 hex of the binary).
    pub hash: String,
    /// Whether it was (re)built; `false` when the existing image already had this hash.
    pub built: bool,
    /// How long building took (zero when not built).
    pub took: std::time::Duration,
    /// Why it was not built at all (its host sources are missing).
    pub skipped: Option<String>,
}

/// The static build command, as shown to users.
pub(crate) fn static_build_command() -> String {
    format!(
        "RUSTFLAGS='-C target-feature=+crt-static' cargo build --release --workspace --bins \
         --target {STATIC_TARGET} --target-dir target/static"
    )
}

/// Where the static build puts the binaries of `workspace`.
pub(crate) fn static_bin_dir(workspace: &Path) -> PathBuf {
    workspace
        .join("target/static")
        .join(STATIC_TARGET)
        .join("release")
}

/// Runs the static release build of every workspace binary; returns the binary directory.
pub(crate) fn build_static(workspace: &Path) -> Result<PathBuf, BackendError> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(workspace)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .args(["build", "--release", "--workspace", "--bins", "--target"])
        .arg(STATIC_TARGET)
        .args(["--target-dir", "target/static"])
        .stdin(Stdio::null())
        .output()
        .map_err(|source| BackendError::Io {
            what: format!("running {}", static_build_command()),
            source,
        })?;
    if !out.status.success() {
        return Err(BackendError::BuildFailed {
            command: static_build_command(),
            status: out.status.to_string(),
            stderr_tail: crate::backend::process::tail(&String::from_utf8_lossy(&out.stderr), 40),
        });
    }
    Ok(static_bin_dir(workspace))
}

/// SHA-256 hex of the file at `path`.
pub(crate) fn content_hash(path: &Path) -> Result<String, BackendError> {
    let bytes = std::fs::read(path).map_err(|source| BackendError::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    Ok(hex::encode(Sha256::digest(&bytes)))
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
        let (hash, built, skipped) = match spec.source {
            ImageSource::WorkspaceBinary { binary, entrypoint } => {
                let path = bin_dir.join(binary);
                if !path.is_file() {
                    return Err(BackendError::MissingBinary {
                        path,
                        build: static_build_command(),
                    });
                }
                let hash = content_hash(&path)?;
                let built = force || local_hash(docker, spec.tag).await.as_deref() != Some(&hash);
                if built {
                    build_scratch_image(docker, spec.tag, &path, binary, entrypoint, &hash).await?;
                }
                (hash, built, None)
            }
            ImageSource::Etcd | ImageSource::Zookeeper | ImageSource::Redis => {
                let rootfs = match middleware::inputs(spec.source) {
                    Ok(r) => r,
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
                (hash, built, None)
            }
        };
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

/// The Dockerfile of a scratch image holding `/<binary>`.
fn dockerfile(binary: &str, entrypoint: &[&str], hash: &str) -> String {
    let entrypoint = serde_json::to_string(entrypoint).expect("strings serialise");
    format!(
        "FROM scratch\nCOPY {binary} /{binary}\nLABEL {HASH_LABEL}=\"{hash}\"\nENTRYPOINT {entrypoint}\n"
    )
}

async fn build_scratch_image(
    docker: &Docker,
    tag: &str,
    path: &Path,
    binary: &str,
    entrypoint: &[&str],
    hash: &str,
) -> Result<(), BackendError> {
    let io = |what: String| move |source| BackendError::Io { what, source };
    let mut context = tar::Builder::new(Vec::new());
    let file = dockerfile(binary, entrypoint, hash);
    let mut header = tar::Header::new_ustar();
    header.set_size(file.len() as u64);
    header.set_mode(0o644);
    header.set_cksum();
    context
        .append_data(&mut header, "Dockerfile", file.as_bytes())
        .map_err(io("writing the build context".into()))?;
    let bin = std::fs::read(path).map_err(io(format!("reading {}", path.display())))?;
    let mut header = tar::Header::new_ustar();
    header.set_size(bin.len() as u64);
    header.set_mode(0o755);
    header.set_cksum();
    context
        .append_data(&mut header, binary, bin.as_slice())
        .map_err(io(format!(
            "adding {} to the build context",
            path.display()
        )))?;
    let context = context
        .into_inner()
        .map_err(io("finishing the build context".into()))?;
    build_context(docker, tag, hash, context).await
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
    fn dockerfile_is_scratch_with_label_and_entrypoint() {
        assert_eq!(
            dockerfile("gantry", &["/gantry", "upstream"], "ab12"),
            "FROM scratch\nCOPY gantry /gantry\nLABEL gantry.content-hash=\"ab12\"\n\
             ENTRYPOINT [\"/gantry\",\"upstream\"]\n"
        );
    }

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

    #[test]
    fn content_hash_is_sha256_hex() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x");
        std::fs::write(&f, b"abc").unwrap();
        assert_eq!(
            content_hash(&f).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
