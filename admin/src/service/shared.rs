//! [`SharedEvent`]: one committed change as every publisher receives it.

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use axum::extract::ws::Utf8Bytes;
use model::DataEvent;

/// A committed [`DataEvent`] behind one pointer: the broadcast to N sync sessions clones the
/// pointer, not the event, and the websocket frame is serialised once, by the first session
/// that sends it, for all of them.
#[derive(Debug, Clone)]
pub struct SharedEvent(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    event: DataEvent,
    websocket_text: OnceLock<Utf8Bytes>,
}

impl SharedEvent {
    /// `event`, to be shared.
    pub fn new(event: DataEvent) -> Self {
        Self(Arc::new(Inner {
            event,
            websocket_text: OnceLock::new(),
        }))
    }

    /// The event as a websocket text frame ([`DataEvent::to_websocket_text`]), serialised
    /// on the first call; later calls (any session) share the same buffer.
    pub fn websocket_text(&self) -> Utf8Bytes {
        self.0
            .websocket_text
            .get_or_init(|| self.0.event.to_websocket_text().into())
            .clone()
    }
}

impl Deref for SharedEvent {
    type Target = DataEvent;

    fn deref(&self) -> &DataEvent {
        &self.0.event
    }
}

#[cfg(test)]
mod tests {
    use model::{DataEventType, EventPayload};

    use super::*;

    #[test]
    fn every_clone_shares_one_serialisation_equal_to_the_events_own() {
        let event = DataEvent::new(DataEventType::Delete, EventPayload::Plugin(Vec::new()));
        let shared = SharedEvent::new(event.clone());
        let other = shared.clone();
        let first = shared.websocket_text();
        let second = other.websocket_text();
        assert_eq!(first.as_str(), event.to_websocket_text());
        // One buffer: the second session did not serialise again.
        assert_eq!(first.as_str().as_ptr(), second.as_str().as_ptr());
    }
}
