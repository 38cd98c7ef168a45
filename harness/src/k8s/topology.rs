//! Which objects the topology of a sync mode is made of, in the order they are applied:
//!
//! - PostgreSQL (`gantry/postgres:dev`, the docker backend's, built from Debian's package:
//!   trust authentication, its data in the pod), which the admins share (each watches it for
//!   the others' commits);
//! - for ZooKeeper and etcd, that server, as the docker backend runs it;
//! - the admins: the StatefulSet `admin` of [`ADMINS`] pods behind the headless Service
//!   `admin`, so every pod has a DNS name (`admin-0.admin`, ...), and the Service `admin-api`
//!   for users;
//! - the gateways: a Deployment whose admin URL list names every admin pod, in order (as the
//!   host backend gives every gateway every admin): several admins behind one Service would
//!   leave a change made on one unseen by the gateways following another (ShenYu #3900);
//! - the echo upstreams of the compose files ([`UPSTREAMS`]), for routes made by hand;
//! - the scenarios, as an Indexed Job of one `gantry run --backend external` per shard.
//!
//! Admin, gateway, upstream and store containers take their image, arguments and environment
//! from the docker backend's [`ContainerSpec`]s; only the admin's database is changed.
//!
//! [`ContainerSpec`]: crate::backend::docker::ContainerSpec

use model::SyncMode;
use serde_json::{Value, json};

use super::objects::{
    container, deployment, env, http_probe, indexed_job, service, stateful_set, tcp_probe,
};
use crate::backend::StoreKind;
use crate::backend::docker;
use crate::compose::UPSTREAMS;

/// Admin replicas: more than one, so that a change made on one admin must reach the gateways
/// following another.
pub(super) const ADMINS: u32 = 3;
/// The Service users and the scenario Job reach some admin through.
const ADMIN_API: &str = "admin-api";
/// The scenario Job.
const JOB: &str = "gantry-scenarios";
/// The scenario Job's image: the user's to build; gantry builds no such image.
pub(super) const HARNESS_IMAGE: &str = "gantry/harness:dev";
/// Where that image holds the workspace's scenarios.
pub(super) const SCENARIOS: &str = "/gantry/cases/scenarios";
/// Where each shard writes its JSON report (an `emptyDir`).
pub(super) const REPORTS: &str = "/reports";

/// The objects of the topology under `mode` with `gateways` gateway pods, and the scenario
/// Job in `shards` shards.
pub(super) fn objects(mode: SyncMode, gateways: u32, shards: u32) -> Vec<Value> {
    let mut all = postgres();
    let store = StoreKind::for_mode(mode).map(|kind| (kind, docker::store_spec("", kind)));
    let flags = store
        .as_ref()
        .map(|(_, spec)| spec.store_flags())
        .unwrap_or_default();
    if let Some((kind, spec)) = &store {
        let probe = match kind {
            StoreKind::Etcd => http_probe("/health", spec.port),
            StoreKind::Zookeeper => tcp_probe(spec.port),
        };
        all.push(service(&spec.name, &spec.name, spec.port, false));
        all.push(stateful_set(
            &spec.name,
            &spec.name,
            1,
            &container(spec, &probe),
        ));
    }

    let mut admin = docker::admin_spec("", mode, &flags);
    let db = admin
        .cmd
        .iter()
        .position(|arg| arg == "--db")
        .expect("the admin's spec names its database");
    admin.cmd[db + 1] = docker::postgres_url("");
    let health = "/actuator/health";
    all.push(service(&admin.name, &admin.name, admin.port, true));
    all.push(service(ADMIN_API, &admin.name, admin.port, false));
    all.push(stateful_set(
        &admin.name,
        &admin.name,
        ADMINS,
        &container(&admin, &http_probe(health, admin.port)),
    ));

    let admin_pods: Vec<String> = (0..ADMINS)
        .map(|i| format!("http://{0}-{i}.{0}:{1}", admin.name, admin.port))
        .collect();
    let gateway = docker::gateway_spec("", mode, &admin_pods.join(","), &flags);
    // A client sticks to one gateway pod: the scenario Job, which reads one gateway's digest
    // and then sends it traffic, would otherwise judge one gateway by another's state.
    let mut gateway_service = service(&gateway.name, &gateway.name, gateway.port, false);
    gateway_service["spec"]["sessionAffinity"] = json!("ClientIP");
    all.push(gateway_service);
    all.push(deployment(
        &gateway.name,
        gateways,
        &container(&gateway, &http_probe(health, gateway.port)),
    ));

    for name in UPSTREAMS {
        let upstream = docker::upstream_spec("", name, &[]);
        let probe = http_probe(crate::upstream::READY_PATH, upstream.port);
        all.push(service(
            &upstream.name,
            &upstream.name,
            upstream.port,
            false,
        ));
        all.push(deployment(&upstream.name, 1, &container(&upstream, &probe)));
    }

    let run = format!(
        "exec gantry run {SCENARIOS} --backend external --sync {mode} --no-build \\\n  \
         --admin-url http://{ADMIN_API}:{admin_port} \\\n  \
         --gateway-url http://{gateway_name}:{gateway_port} \\\n  \
         --upstream-bind 0.0.0.0 --upstream-advertise \"$POD_IP\" \\\n  \
         --partition \"hash:$((JOB_COMPLETION_INDEX + 1))/{shards}\" \\\n  \
         --report-json \"{REPORTS}/shard-$JOB_COMPLETION_INDEX.json\"\n",
        admin_port = admin.port,
        gateway_name = gateway.name,
        gateway_port = gateway.port,
    );
    all.push(scenario_job(&run, shards));
    all
}

/// PostgreSQL's Service and StatefulSet `postgres`: one pod of the docker backend's
/// container, ready once it accepts TCP connections (its first start's `initdb` listens on
/// none).
fn postgres() -> Vec<Value> {
    let spec = docker::postgres_spec("");
    vec![
        service(&spec.name, &spec.name, spec.port, false),
        stateful_set(
            &spec.name,
            &spec.name,
            1,
            &container(&spec, &tcp_probe(spec.port)),
        ),
    ]
}

/// The Job running `script` (with `sh -c`) in `shards` shards, each with its pod's address
/// in `POD_IP` (where the gateways reach the echo upstreams the harness starts) and
/// [`REPORTS`] to write into.
fn scenario_job(script: &str, shards: u32) -> Value {
    let mut env = env();
    env.push(json!({
        "name": "POD_IP",
        "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } },
    }));
    let harness = json!({
        "name": "harness",
        "image": HARNESS_IMAGE,
        "imagePullPolicy": "IfNotPresent",
        "command": ["sh", "-c", script],
        "env": env,
        "volumeMounts": [{ "name": "reports", "mountPath": REPORTS }],
    });
    indexed_job(
        JOB,
        shards,
        &harness,
        &json!([{ "name": "reports", "emptyDir": {} }]),
    )
}
