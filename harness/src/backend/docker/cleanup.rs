//! Cleanup by label: the labels every object of a run carries ([`RUN_LABEL`], [`PID_LABEL`],
//! [`HOST_LABEL`]), listing what carries a label ([`labelled`]), removing one run
//! ([`remove_run`]) and sweeping the runs of harness processes that are gone
//! ([`sweep_stale`]). Objects go in the order they depend on each other: Swarm services
//! first (else Swarm would replace their tasks' containers), then containers, networks and
//! volumes.

use std::collections::HashMap;
use std::path::Path;

use bollard::Docker;
use bollard::query_parameters::{
    ListContainersOptionsBuilder, ListNetworksOptionsBuilder, RemoveContainerOptionsBuilder,
};
use futures_util::future::try_join_all;

use super::error::docker_err;
use super::swarm;
use crate::error::BackendError;

/// How long removal waits for the engine to let go of a network or volume whose containers
/// it is still removing (a Swarm task's, after its service went).
const RELEASE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Label: the run id.
pub const RUN_LABEL: &str = "gantry.run";
/// Label: the pid of the harness that made the object.
pub const PID_LABEL: &str = "gantry.pid";
/// Label: the hostname of the harness that made the object.
pub const HOST_LABEL: &str = "gantry.host";

/// The labels of everything run `run_id` creates.
pub(super) fn labels(run_id: &str) -> HashMap<String, String> {
    HashMap::from([
        (RUN_LABEL.to_owned(), run_id.to_owned()),
        (PID_LABEL.to_owned(), std::process::id().to_string()),
        (HOST_LABEL.to_owned(), hostname()),
    ])
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_default()
}

/// Whether the process `pid` on this host still exists.
fn pid_alive(pid: &str) -> bool {
    !pid.is_empty() && Path::new("/proc").join(pid).exists()
}

/// The containers and networks labelled `filter` (`key` or `key=value`).
pub async fn labelled(
    docker: &Docker,
    filter: &str,
) -> Result<(Vec<Labelled>, Vec<Labelled>), BackendError> {
    let filters = HashMap::from([("label", vec![filter])]);
    let containers = docker
        .list_containers(Some(
            ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(docker_err("listing containers"))?
        .into_iter()
        .map(|c| Labelled {
            name: c
                .names
                .and_then(|n| n.into_iter().next())
                .unwrap_or_default()
                .trim_start_matches('/')
                .to_owned(),
            labels: c.labels.unwrap_or_default(),
        })
        .collect();
    let networks = docker
        .list_networks(Some(
            ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(docker_err("listing networks"))?
        .into_iter()
        .map(|n| Labelled {
            name: n.name.unwrap_or_default(),
            labels: n.labels.unwrap_or_default(),
        })
        .collect();
    Ok((containers, networks))
}

/// A container or network and its labels.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Labelled {
    /// Its name.
    pub name: String,
    /// Its labels.
    pub labels: HashMap<String, String>,
}

/// The volumes labelled `filter`.
pub(super) async fn labelled_volumes(
    docker: &Docker,
    filter: &str,
) -> Result<Vec<Labelled>, BackendError> {
    let filters = HashMap::from([("label", vec![filter])]);
    Ok(docker
        .list_volumes(Some(
            bollard::query_parameters::ListVolumesOptionsBuilder::default()
                .filters(&filters)
                .build(),
        ))
        .await
        .map_err(docker_err("listing volumes"))?
        .volumes
        .unwrap_or_default()
        .into_iter()
        .map(|v| Labelled {
            name: v.name,
            labels: v.labels,
        })
        .collect())
}

/// Every object labelled `filter`, as `<kind> <name>`: services, containers, networks and
/// volumes (what a run must not leave behind).
pub async fn leftovers(docker: &Docker, filter: &str) -> Result<Vec<String>, BackendError> {
    let services = swarm::labelled_services(docker, filter).await?;
    let (containers, networks) = labelled(docker, filter).await?;
    let volumes = labelled_volumes(docker, filter).await?;
    Ok(services
        .into_iter()
        .map(|(name, _)| format!("service {name}"))
        .chain(
            containers
                .into_iter()
                .map(|c| format!("container {}", c.name)),
        )
        .chain(networks.into_iter().map(|n| format!("network {}", n.name)))
        .chain(volumes.into_iter().map(|v| format!("volume {}", v.name)))
        .collect())
}

/// Removes the Swarm services, then force-removes the containers, then the networks and the
/// volumes, labelled `filter` for which `pick` holds (each kind all at once).
async fn remove_labelled(
    docker: &Docker,
    filter: &str,
    pick: impl Fn(&Labelled) -> bool,
) -> Result<(), BackendError> {
    let services = swarm::labelled_services(docker, filter).await?;
    try_join_all(
        services
            .into_iter()
            .filter(|(name, labels)| {
                pick(&Labelled {
                    name: name.clone(),
                    labels: labels.clone(),
                })
            })
            .map(|(name, _)| async move { swarm::Service { name }.remove(docker).await }),
    )
    .await?;
    // A Swarm task's container outlives its service while the node's agent stops it (a force
    // removal then answers 409, in progress): removed until none is listed.
    let deadline = tokio::time::Instant::now() + RELEASE_TIMEOUT;
    let mut removed = false;
    let networks = loop {
        let (containers, networks) = labelled(docker, filter).await?;
        let left: Vec<&str> = (containers.iter().filter(|c| pick(c)))
            .map(|c| c.name.as_str())
            .collect();
        if left.is_empty() {
            break networks;
        }
        if removed {
            if tokio::time::Instant::now() >= deadline {
                return Err(BackendError::Docker {
                    what: format!("removing containers {}", left.join(", ")),
                    detail: format!("still listed {RELEASE_TIMEOUT:?} after their removal"),
                });
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        try_join_all(left.iter().map(|name| remove_container(docker, name))).await?;
        removed = true;
    };
    let networks: Vec<&Labelled> = networks.iter().filter(|n| pick(n)).collect();
    try_join_all(
        networks
            .iter()
            .map(|n| released(&n.name, "network", move || docker.remove_network(&n.name))),
    )
    .await?;
    // A swarm's overlay network outlives its removal on this node for a moment.
    let deadline = tokio::time::Instant::now() + RELEASE_TIMEOUT;
    loop {
        let (_, listed) = labelled(docker, filter).await?;
        let left: Vec<&str> = listed
            .iter()
            .filter(|l| networks.iter().any(|n| n.name == l.name))
            .map(|l| l.name.as_str())
            .collect();
        if left.is_empty() {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(BackendError::Docker {
                what: format!("removing networks {}", left.join(", ")),
                detail: format!("still listed {RELEASE_TIMEOUT:?} after their removal"),
            });
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let volumes = labelled_volumes(docker, filter).await?;
    let volumes = volumes.iter().filter(|v| pick(v));
    try_join_all(volumes.map(|v| {
        released(&v.name, "volume", move || {
            docker.remove_volume(
                &v.name,
                None::<bollard::query_parameters::RemoveVolumeOptions>,
            )
        })
    }))
    .await?;
    Ok(())
}

/// Runs `remove` until it succeeds or finds the object gone, while the engine answers that it
/// is still in use (409: a container it is removing holds it), up to [`RELEASE_TIMEOUT`].
async fn released<F>(name: &str, kind: &str, remove: impl Fn() -> F) -> Result<(), BackendError>
where
    F: std::future::Future<Output = Result<(), bollard::errors::Error>>,
{
    let deadline = tokio::time::Instant::now() + RELEASE_TIMEOUT;
    loop {
        match remove().await {
            Ok(())
            | Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 404, ..
            }) => return Ok(()),
            Err(bollard::errors::Error::DockerResponseServerError {
                status_code: 409 | 403,
                ..
            }) if tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => return Err(docker_err(format!("removing {kind} {name}"))(e)),
        }
    }
}

/// Force-removes container `name` with its anonymous volumes; one already gone is no error.
pub(super) async fn remove_container(docker: &Docker, name: &str) -> Result<(), BackendError> {
    let opts = RemoveContainerOptionsBuilder::default()
        .force(true)
        .v(true)
        .build();
    match docker.remove_container(name, Some(opts)).await {
        // 409: already being removed (a Swarm task's container, after its service went).
        Ok(())
        | Err(bollard::errors::Error::DockerResponseServerError {
            status_code: 404 | 409,
            ..
        }) => Ok(()),
        Err(e) => Err(docker_err(format!("removing container {name}"))(e)),
    }
}

/// Removes the containers and networks of runs whose harness process on this host is gone.
pub(crate) async fn sweep_stale(docker: &Docker) -> Result<(), BackendError> {
    let host = hostname();
    remove_labelled(docker, RUN_LABEL, |o| {
        o.labels.get(HOST_LABEL) == Some(&host)
            && !pid_alive(o.labels.get(PID_LABEL).map_or("", String::as_str))
    })
    .await
}

/// Removes every container and the network of run `id`.
pub async fn remove_run(docker: &Docker, id: &str) -> Result<(), BackendError> {
    remove_labelled(docker, &format!("{RUN_LABEL}={id}"), |_| true).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_pid_is_alive_and_garbage_is_not() {
        assert!(pid_alive(&std::process::id().to_string()));
        assert!(!pid_alive(""));
        assert!(!pid_alive("999999999"));
    }
}
