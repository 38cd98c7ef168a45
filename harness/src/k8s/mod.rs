//! Kubernetes manifests for a topology (`deploy/k8s/<mode>.yaml`): `gantry k8s --sync <mode>`
//! prints one, built from the same [`ContainerSpec`]s the docker backend starts (their images,
//! arguments and environment), with several admins behind a headless Service so that every
//! gateway is given every admin pod by name (the fix for ShenYu #3900), PostgreSQL shared by
//! the admins, and the scenarios run as an Indexed Job in shards. gantry starts no cluster:
//! the output is for a user to apply (kind, for instance); a test checks the committed files.
//!
//! The modules, one concept each:
//!
//! - `objects`: the generic shapes (Service, StatefulSet, Deployment, container, probes) as
//!   JSON values;
//! - `topology`: which objects a mode's topology is made of, and the scenario Job;
//! - `render`: the commented, multi-document YAML of a topology;
//! - `check` (tests only): every document parsed into its typed k8s-openapi object, and the
//!   #3900 shape checked on them.
//!
//! [`ContainerSpec`]: crate::backend::docker::ContainerSpec

#[cfg(test)]
mod check;
mod objects;
mod render;
mod topology;

pub(crate) use render::render;
