//! Docker-backed trials: every scenario × sync mode again as `<name>@<mode>@docker`, on
//! containers of the `gantry/*:dev` images (built on first use when missing or stale).
//!
//! Without a Docker engine they are ignored and a line on stderr says why; with
//! `GANTRY_REQUIRE_DOCKER=1` they fail instead. The zookeeper and etcd modes run their server
//! as a container too (`gantry/zookeeper:dev`, `gantry/etcd:dev`); a mode the docker backend
//! cannot run would be ignored, with a note.

use std::sync::Arc;

use harness::EngineCheck;
use harness::{BackendKind, ProcessEnv, RunOptions};

use crate::Shared;

/// The docker backend's options and the engine's answer (asked once, here).
pub(crate) fn shared() -> Arc<Shared> {
    let require = std::env::var("GANTRY_REQUIRE_DOCKER").is_ok_and(|v| v == "1");
    let engine = EngineCheck::probe(require);
    if let EngineCheck::Skip(why) = &engine {
        eprintln!("note: {why}");
    }
    // The images come from the release build in target/release, which the engine runs (a
    // no-op when nothing changed), rebuilding only images whose inputs changed; with
    // GANTRY_BIN_DIR set it only checks that they exist.
    Shared::new(
        RunOptions {
            backend: BackendKind::Docker,
            ..RunOptions::from_env(&ProcessEnv)
        },
        Some(engine),
    )
}
