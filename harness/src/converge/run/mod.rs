//! Applying a history to a live topology and observing the gateways afterwards: the
//! topology and one case's run ([`live`]), the operations sent to the admin ([`apply`]), the
//! faults injected and healed ([`faults`]) and what each sync mode allows of them
//! ([`modes`]), the probing and judging of the gateways ([`judge`]) and the paths a case's
//! routes live on ([`paths`]).

mod apply;
mod faults;
mod judge;
mod live;
mod modes;
mod paths;

pub(crate) use apply::Writer;
pub(crate) use judge::count;
pub(crate) use live::CaseState;
pub use live::Live;
pub(crate) use modes::{compacts, protocol_fault, store_target};
pub(crate) use paths::{registered_path, route_path};
