//! The docker backend: admin, gateway and echo upstreams as containers of the `gantry/*:dev`
//! images (see [`crate::images`]) on two private networks per run.
//!
//! A run (one topology) has an id; its networks are `gantry-<id>` (the gateway's upstream
//! side: upstreams, Redis) and `gantry-<id>-sync` (its sync side: the admin, ZooKeeper or
//! etcd), the gateway on both, and its containers `gantry-<id>-<role>`, so they resolve each
//! other by name. A step's partition disconnects the gateway from the sync network only. Everything it creates carries the
//! labels `gantry.run=<id>`, `gantry.pid=<harness pid>` and `gantry.host=<hostname>`. Cleanup
//! never depends on a reaper container:
//!
//! - dropping a [`DockerRun`] (end of a case, a failed start, a panic unwinding, the future
//!   dropped by Ctrl-C) force-removes every container labelled with its id, then its networks;
//! - opening the backend removes what earlier harness processes on this host left behind when
//!   their pid is gone (a `kill -9`, a crash in a destructor).
//!
//! The services are reached from the harness through ports published on `127.0.0.1`; the
//! gateway reaches the admin and the upstreams by container name. [`ContainerSpec`] is the one
//! description of each service, used both here and by [`crate::compose`].
//!
//! The modules, one concept each:
//!
//! - `specs`: what each service is as a container ([`ContainerSpec`], ports, commands);
//! - `engine`: connecting to the engine ([`connect`], [`EngineCheck`]) and the modes its
//!   images cover;
//! - `error`: an engine call's failure as a [`crate::error::BackendError`];
//! - `backend`: the [`DockerBackend`] opened on the engine once its images are checked;
//! - `cleanup`: the labels every object carries, listing and removing by label, the sweep of
//!   stale runs;
//! - `run`: one topology's networks, the containers started on them and the partition of the
//!   gateway ([`DockerRun`]);
//! - `swarm`: the engine's swarm held while runs use it, and one service per spec
//!   (`--backend swarm`);
//! - `container`: one running container ([`Container`]): its address, logs, readiness and
//!   faults.

mod backend;
mod cleanup;
mod container;
mod engine;
mod error;
mod run;
mod specs;
mod swarm;

pub use backend::DockerBackend;
pub use cleanup::{HOST_LABEL, Labelled, PID_LABEL, RUN_LABEL, labelled, leftovers, remove_run};
pub(crate) use container::Container;
pub(crate) use engine::supports;
pub use engine::{EngineCheck, connect};
pub(crate) use run::DockerRun;
pub(crate) use specs::{
    ADMIN_PORT, ContainerSpec, ENV, GATEWAY_PORT, SYNC_PROXY_ROLE, UPSTREAM_PORT,
    UPSTREAM_PROXY_ROLE, admin_spec, gateway_spec, postgres_spec, postgres_url, store_spec,
    upstream_spec,
};
pub use swarm::made_by_gantry as swarm_made_by_gantry;
