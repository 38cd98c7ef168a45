//! Change events: [`ConfigGroup`], [`DataEventType`], the typed [`DataEvent`] and the
//! websocket envelope [`WebsocketData`].

use serde::{Deserialize, Serialize};

use crate::app_auth::AppAuthData;
use crate::digest::ConfigSet;
use crate::meta::MetaData;
use crate::plugin::PluginData;
use crate::rule::RuleData;
use crate::selector::SelectorData;
use crate::wire_enum::wire_enum;

wire_enum! {
    /// A config group (ShenYu `ConfigGroupEnum`), in ShenYu's iteration order.
    ConfigGroup, "config group" {
        /// App auth.
        AppAuth = "APP_AUTH",
        /// Plugins.
        Plugin = "PLUGIN",
        /// Rules.
        Rule = "RULE",
        /// Selectors.
        Selector = "SELECTOR",
        /// Metadata.
        MetaData = "META_DATA",
        /// Proxy selectors (not modelled by gantry; ignored).
        ProxySelector = "PROXY_SELECTOR",
        /// AI proxy API keys (not modelled by gantry; ignored).
        AiProxyApiKey = "AI_PROXY_API_KEY",
        /// Discovery upstreams (ShenYu ≥2.6.1; gantry follows 2.6.0 and ignores it).
        DiscoverUpstream = "DISCOVER_UPSTREAM",
    }
}

wire_enum! {
    /// What happened to the items of an event (ShenYu `DataEventTypeEnum`).
    DataEventType, "event type" {
        /// Items were deleted.
        Delete = "DELETE",
        /// Items were created.
        Create = "CREATE",
        /// Items were created or updated.
        Update = "UPDATE",
        /// The whole group is re-sent.
        Refresh = "REFRESH",
        /// Websocket running-mode control message.
        RunningMode = "RUNNING_MODE",
        /// The full sync answering a websocket `MYSELF`.
        Myself = "MYSELF",
    }
}

impl DataEventType {
    /// Whether the event carries a whole group (REFRESH or MYSELF) rather than an increment.
    pub fn is_full(self) -> bool {
        matches!(self, DataEventType::Refresh | DataEventType::Myself)
    }
}

/// The websocket frame envelope (ShenYu `WebsocketData`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebsocketData {
    /// The group of every item in `data`.
    pub group_type: ConfigGroup,
    /// What happened.
    pub event_type: DataEventType,
    /// The items, as JSON (their shape depends on the group).
    #[serde(default)]
    pub data: Vec<serde_json::Value>,
}

/// The items of a change event, typed by group.
#[derive(Debug, Clone, PartialEq)]
pub enum EventPayload {
    /// Plugins.
    Plugin(Vec<PluginData>),
    /// Selectors.
    Selector(Vec<SelectorData>),
    /// Rules.
    Rule(Vec<RuleData>),
    /// Metadata.
    MetaData(Vec<MetaData>),
    /// App auth.
    AppAuth(Vec<AppAuthData>),
}

/// One change event: the unit every publisher sends and every subscriber applies.
#[derive(Debug, Clone, PartialEq)]
pub struct DataEvent {
    /// What happened.
    pub event_type: DataEventType,
    /// To which items.
    pub payload: EventPayload,
}

impl DataEvent {
    /// An event from its parts.
    pub fn new(event_type: DataEventType, payload: EventPayload) -> Self {
        Self {
            event_type,
            payload,
        }
    }

    /// A whole config as a full sync carries it: one `event_type` event per group, in
    /// ShenYu's sync order (PLUGIN, SELECTOR, RULE, META_DATA, APP_AUTH), empty groups
    /// included.
    pub fn full_sync(
        event_type: DataEventType,
        config: ConfigSet,
        app_auth: Vec<AppAuthData>,
    ) -> [DataEvent; 5] {
        [
            EventPayload::Plugin(config.plugins),
            EventPayload::Selector(config.selectors),
            EventPayload::Rule(config.rules),
            EventPayload::MetaData(config.meta_data),
            EventPayload::AppAuth(app_auth),
        ]
        .map(|payload| DataEvent::new(event_type, payload))
    }

    /// The event's config group.
    pub fn group(&self) -> ConfigGroup {
        match &self.payload {
            EventPayload::Plugin(_) => ConfigGroup::Plugin,
            EventPayload::Selector(_) => ConfigGroup::Selector,
            EventPayload::Rule(_) => ConfigGroup::Rule,
            EventPayload::MetaData(_) => ConfigGroup::MetaData,
            EventPayload::AppAuth(_) => ConfigGroup::AppAuth,
        }
    }

    /// The number of items carried.
    pub fn len(&self) -> usize {
        match &self.payload {
            EventPayload::Plugin(v) => v.len(),
            EventPayload::Selector(v) => v.len(),
            EventPayload::Rule(v) => v.len(),
            EventPayload::MetaData(v) => v.len(),
            EventPayload::AppAuth(v) => v.len(),
        }
    }

    /// Whether the event carries no item.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Types the items of a wire message. Groups gantry does not model give `Ok(None)`.
    pub fn from_wire(
        group: ConfigGroup,
        event_type: DataEventType,
        data: Vec<serde_json::Value>,
    ) -> Result<Option<DataEvent>, serde_json::Error> {
        fn items<T: serde::de::DeserializeOwned>(
            data: Vec<serde_json::Value>,
        ) -> Result<Vec<T>, serde_json::Error> {
            data.into_iter().map(serde_json::from_value).collect()
        }
        let payload = match group {
            ConfigGroup::Plugin => EventPayload::Plugin(items(data)?),
            ConfigGroup::Selector => EventPayload::Selector(items(data)?),
            ConfigGroup::Rule => EventPayload::Rule(items(data)?),
            ConfigGroup::MetaData => EventPayload::MetaData(items(data)?),
            ConfigGroup::AppAuth => EventPayload::AppAuth(items(data)?),
            ConfigGroup::ProxySelector
            | ConfigGroup::AiProxyApiKey
            | ConfigGroup::DiscoverUpstream => return Ok(None),
        };
        Ok(Some(DataEvent {
            event_type,
            payload,
        }))
    }

    /// The items as a JSON array value.
    pub fn data_json(&self) -> serde_json::Value {
        let value = match &self.payload {
            EventPayload::Plugin(v) => serde_json::to_value(v),
            EventPayload::Selector(v) => serde_json::to_value(v),
            EventPayload::Rule(v) => serde_json::to_value(v),
            EventPayload::MetaData(v) => serde_json::to_value(v),
            EventPayload::AppAuth(v) => serde_json::to_value(v),
        };
        value.expect("model types always serialise")
    }

    /// The websocket frame text for this event.
    pub fn to_websocket_text(&self) -> String {
        let data = match self.data_json() {
            serde_json::Value::Array(items) => items,
            other => vec![other],
        };
        let frame = WebsocketData {
            group_type: self.group(),
            event_type: self.event_type,
            data,
        };
        serde_json::to_string(&frame).expect("model types always serialise")
    }

    /// Parses a websocket text frame, as the gateway's subscriber reads every frame.
    /// `Ok(None)` for running-mode frames (an admin's answer to a `RUNNING_MODE` query, which
    /// has no group) and for groups gantry does not model.
    pub fn from_websocket_text(text: &str) -> Result<Option<DataEvent>, serde_json::Error> {
        let value: serde_json::Value = serde_json::from_str(text)?;
        if value.get("eventType").and_then(|v| v.as_str())
            == Some(DataEventType::RunningMode.as_str())
        {
            return Ok(None);
        }
        let frame: WebsocketData = serde_json::from_value(value)?;
        DataEvent::from_wire(frame.group_type, frame.event_type, frame.data)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn websocket_frame_round_trips() {
        let text = r#"{"groupType":"RULE","eventType":"DELETE","data":[{"id":"2","selectorId":"1","pluginName":"divide"}]}"#;
        let event = DataEvent::from_websocket_text(text).unwrap().unwrap();
        assert_eq!(event.group(), ConfigGroup::Rule);
        assert_eq!(event.event_type, DataEventType::Delete);
        let again = DataEvent::from_websocket_text(&event.to_websocket_text())
            .unwrap()
            .unwrap();
        assert_eq!(again, event);
    }

    #[test]
    fn full_sync_sends_every_group_in_shenyus_order() {
        let config = ConfigSet {
            rules: vec![RuleData::default()],
            ..Default::default()
        };
        let events = DataEvent::full_sync(DataEventType::Myself, config, Vec::new());
        let groups: Vec<ConfigGroup> = events.iter().map(DataEvent::group).collect();
        assert_eq!(
            groups,
            [
                ConfigGroup::Plugin,
                ConfigGroup::Selector,
                ConfigGroup::Rule,
                ConfigGroup::MetaData,
                ConfigGroup::AppAuth
            ]
        );
        let sizes: Vec<usize> = events.iter().map(DataEvent::len).collect();
        assert_eq!(sizes, [0, 0, 1, 0, 0]);
        assert!(events.iter().all(|e| e.event_type == DataEventType::Myself));
    }

    #[test]
    fn unmodelled_groups_are_ignored_and_bad_frames_error() {
        let text = r#"{"groupType":"DISCOVER_UPSTREAM","eventType":"UPDATE","data":[{}]}"#;
        assert_eq!(DataEvent::from_websocket_text(text).unwrap(), None);
        let running = r#"{"eventType":"RUNNING_MODE","runningMode":"STANDALONE"}"#;
        assert_eq!(DataEvent::from_websocket_text(running).unwrap(), None);
        assert!(
            DataEvent::from_websocket_text(r#"{"groupType":"NOPE","eventType":"UPDATE"}"#).is_err()
        );
        assert!(DataEvent::from_websocket_text("{not json").is_err());
        assert!(
            DataEvent::from_websocket_text(
                r#"{"groupType":"SELECTOR","eventType":"UPDATE","data":[{"sort":"x"}]}"#
            )
            .is_err()
        );
    }
}
