//! What the engine's own white-box tests (`tests/it`) reach into, re-exported by name and
//! nothing more: the rooms stay private (`pub(crate)` by default) and this is no promise to
//! anyone else, so it is hidden from the docs. A test that needs another item adds it here.

/// Backends, their processes and the servers a topology starts besides admin and gateway.
pub mod backend {
    pub use crate::backend::{
        ComponentService, DockerBackend, ExternalTarget, HostServer, Run, Service, StoreKind,
    };

    /// The servers a topology starts besides admin and gateway.
    pub mod component {
        pub use crate::backend::component::{StoreKind, required, skip_reason};

        /// The PostgreSQL component.
        pub mod postgres {
            pub use crate::backend::component::postgres::skip_reason;
        }

        /// The Redis component.
        pub mod redis {
            pub use crate::backend::component::redis::skip_reason;
        }
    }

    /// The docker backend's labels and engine.
    pub mod docker {
        pub use crate::backend::docker::{
            EngineCheck, HOST_LABEL, Labelled, PID_LABEL, RUN_LABEL, connect, labelled, leftovers,
            remove_run, swarm_made_by_gantry,
        };
    }

    /// The host backend.
    pub mod host {
        pub use crate::backend::host::{
            AdminLaunch, HostBackend, Service, bin_dir_from_env, default_bin_dir,
        };
    }

    /// Child processes.
    pub mod process {
        pub use crate::backend::process::process_alive;
    }
}

/// The convergence property: histories, the checker and the live run.
pub mod converge {
    pub use crate::converge::{Options, Outcome, check};

    /// Histories of operations.
    pub mod history {
        pub use crate::converge::history::{History, Op, Step, Upstream};
    }

    /// Running a history against a live topology.
    pub mod run {
        pub use crate::converge::run::Live;
    }
}

/// Fault injection.
pub mod fault {
    pub use crate::fault::Mode;

    /// ZooKeeper session faults.
    pub mod zookeeper {
        pub use crate::fault::zookeeper::{gateway_session, wait_expired};
    }
}

/// Scenario objects lowered to admin DTOs.
pub mod lower {
    pub use crate::lower::{DIVIDE_RULE_HANDLE, custom_selector, divide_rule};
}

/// The gateway's answer headers the probes read.
pub mod probe {
    pub use crate::probe::{RULE_ID_HEADER, SELECTOR_ID_HEADER};
}

/// Topologies.
pub mod topology {
    pub use crate::topology::{Shape, Topology};
}

/// The echo upstreams.
pub mod upstream {
    pub use crate::upstream::UPSTREAM_HEADER;
}

/// Waiting for convergence.
pub mod wait {
    pub use crate::wait::{WaitPolicy, await_convergence};
}
