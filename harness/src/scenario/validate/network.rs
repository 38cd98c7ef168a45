//! A step's `network` change: one toxic, on a link the topology has (the sync link of one
//! admin and one gateway; the database link on PostgreSQL; the Redis link with Redis), with values that mean something,
//! on any backend that starts the topology (docker and swarm through proxy containers).

use super::*;
use crate::scenario::ast::{Component, Link, NetworkDirection, NetworkFault, Storage};

impl Validator<'_> {
    /// A `network` entry (at `at`, `steps[i].changes[j].network`) fits the case.
    pub(super) fn network(&mut self, n: &NetworkFault, at: &str) {
        let s = self.s;
        let kinds = n.kinds();
        if kinds.len() != 1 {
            let found = if kinds.is_empty() {
                "none".to_owned()
            } else {
                kinds.join(", ")
            };
            self.report(
                at.to_owned(),
                format!(
                    "give exactly one of latency, bandwidth, slice, slowClose, limitData, loss, \
                     blackhole (found: {found}); stack several with several entries"
                ),
            );
        }
        match n.link {
            Link::Sync => self.one_sync_connection(at),
            Link::Database if s.topology.storage != Storage::Postgres => self.report(
                format!("{at}.link"),
                "the admin's SQLite database is a file, with no link to fault: add \
                 `topology: { storage: postgres }`",
            ),
            Link::Redis if !s.components.contains(&Component::Redis) => self.report(
                format!("{at}.link"),
                "the case runs no Redis: add `components: [redis]`",
            ),
            Link::Upstream | Link::Client | Link::Database | Link::Redis => {}
        }
        if n.link == Link::Database && s.backends.iter().any(|b| b.containers()) {
            self.report(
                format!("{at}.link"),
                "the database link runs on the host backend only so far (its proxy stands \
                 between the admins and a PostgreSQL of the harness's): add `backends: [host]`",
            );
        }
        if let Some(latency) = n.latency
            && latency.jitter > latency.delay
        {
            self.report(
                format!("{at}.latency.jitter"),
                format!(
                    "{:?} is more than the delay {:?}: a chunk cannot arrive before it was sent",
                    latency.jitter, latency.delay
                ),
            );
        }
        if n.bandwidth.is_some_and(|b| b.bytes_per_second == 0) {
            self.report(
                format!("{at}.bandwidth.bytesPerSecond"),
                "must be at least 1 (a link that passes nothing is `blackhole: {}`)",
            );
        }
        if n.slice.is_some_and(|slice| slice.bytes == 0) {
            self.report(format!("{at}.slice.bytes"), "must be at least 1");
        }
        if n.limit_data.is_some_and(|limit| limit.bytes == 0) {
            self.report(
                format!("{at}.limitData.bytes"),
                "must be at least 1 (a connection closed before its first byte is \
                 `partition: cut`)",
            );
        }
        if let Some(loss) = n.loss {
            if !(0.0..=1.0).contains(&loss.rate) {
                self.report(
                    format!("{at}.loss.rate"),
                    format!("{} is not a probability: give 0 to 1", loss.rate),
                );
            }
            if n.direction != NetworkDirection::Both {
                self.report(
                    format!("{at}.direction"),
                    "a loss drops whole new connections, not one direction: leave \
                     `direction` out (or write `both`)",
                );
            }
        }
    }
}
