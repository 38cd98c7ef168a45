//! The engine: connecting to it ([`connect`]), whether docker-backed tests run here
//! ([`EngineCheck`]), which modes its images cover ([`supports`]), and running its calls from
//! synchronous code ([`block_on_fresh`]).

use std::time::Duration;

use bollard::Docker;
use model::SyncMode;

use crate::error::BackendError;
use crate::images;

/// Whether the docker backend can run `mode` (it has every image the mode needs).
pub(crate) fn supports(mode: SyncMode) -> bool {
    images::needed(mode).is_some()
}

/// Connects to the engine named by `DOCKER_HOST` (else the local socket) at the API version
/// both sides speak.
pub async fn connect() -> Result<Docker, BackendError> {
    let docker = Docker::connect_with_local_defaults().map_err(unavailable)?;
    let docker = docker.negotiate_version().await.map_err(unavailable)?;
    docker.ping().await.map_err(unavailable)?;
    Ok(docker)
}

#[expect(clippy::needless_pass_by_value, reason = "used as a map_err callback")]
fn unavailable(e: bollard::errors::Error) -> BackendError {
    BackendError::DockerUnavailable(e.to_string())
}

/// Runs `fut` to completion on a fresh current-thread runtime on its own thread, so it works
/// from synchronous code, from inside another runtime and from destructors. Never panics: a
/// thread or runtime that cannot start, or a panic in `fut`, is an error.
pub(super) fn block_on_fresh<T: Send + 'static>(
    fut: impl std::future::Future<Output = T> + Send + 'static,
) -> Result<T, BackendError> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |source| BackendError::Io { what, source }
    };
    std::thread::Builder::new()
        .spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| rt.block_on(fut))
        })
        .map_err(io("starting the docker helper thread"))?
        .join()
        .map_err(|_| std::io::Error::other("it panicked"))
        .map_err(io("running the docker helper thread"))?
        .map_err(io("building the docker helper thread's runtime"))
}

/// Whether docker-backed tests run here: the engine answers, or not (and then whether that
/// is a failure, `GANTRY_REQUIRE_DOCKER=1`, or a plain skip).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineCheck {
    /// An engine answers: run them.
    Available,
    /// No engine, not required: mark them ignored, saying why.
    Skip(String),
    /// No engine but `GANTRY_REQUIRE_DOCKER=1`: fail them, saying why.
    Required(String),
}

impl EngineCheck {
    /// Asks the engine (5 s at most); `require` is `GANTRY_REQUIRE_DOCKER=1`.
    pub fn probe(require: bool) -> Self {
        let answer = block_on_fresh(async {
            match tokio::time::timeout(Duration::from_secs(5), connect()).await {
                Ok(r) => r.map(drop),
                Err(_) => Err(BackendError::DockerUnavailable(
                    "the engine did not answer within 5 s".into(),
                )),
            }
        })
        .and_then(|r| r);
        match answer {
            Ok(()) => Self::Available,
            Err(e) if require => Self::Required(format!("{e} (GANTRY_REQUIRE_DOCKER=1)")),
            Err(e) => Self::Skip(format!(
                "{e}: docker-backed trials are skipped (set GANTRY_REQUIRE_DOCKER=1 to fail instead)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_on_fresh_runs_the_future_and_reports_a_panic_as_an_error() {
        assert_eq!(block_on_fresh(async { 7 }).unwrap(), 7);
        let e = block_on_fresh(async {
            if std::process::id() > 0 {
                panic!("a future that panics");
            }
        })
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "running the docker helper thread: it panicked"
        );
    }
}
