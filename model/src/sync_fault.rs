//! The admin's test-only protocol fault hook (`POST /test-only/sync-fault`, on only with the
//! admin's hidden `--test-only-sync-faults` flag): what the harness sends, what the admin
//! reads. `docs/faults.md` says what each fault must leave the gateway with.

use serde::{Deserialize, Serialize};

use crate::SyncMode;

/// What a protocol fault does to one push of the admin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub enum SyncFaultKind {
    /// websocket: the increment is not sent.
    Drop,
    /// websocket: the increment is sent twice.
    Duplicate,
    /// websocket: the increment is held and sent right after the next one.
    Reorder,
    /// websocket: the session ends (no close frame) where the increment would be sent.
    CloseMidPush,
    /// websocket: the increment waits `delay` before it is sent (those after it wait behind
    /// it): with a count of 2, two increments published together arrive `delay` apart.
    LatePush,
    /// http: a listener answer naming changed groups names none.
    EmptyAnswer,
    /// http: a listener answer naming changed groups waits `delay` first.
    LateAnswer,
    /// http: a `/configs/fetch` answer carries its first group's real `md5` and
    /// `lastModifyTime` with data the gateway cannot read (a corrupted delivery), so the
    /// gateway rejects it; the next fetch is sound.
    CorruptGroup,
}

impl SyncFaultKind {
    /// The name in case files and on the hook (`closeMidPush`).
    pub fn name(self) -> &'static str {
        match self {
            SyncFaultKind::Drop => "drop",
            SyncFaultKind::Duplicate => "duplicate",
            SyncFaultKind::Reorder => "reorder",
            SyncFaultKind::CloseMidPush => "closeMidPush",
            SyncFaultKind::LatePush => "latePush",
            SyncFaultKind::EmptyAnswer => "emptyAnswer",
            SyncFaultKind::LateAnswer => "lateAnswer",
            SyncFaultKind::CorruptGroup => "corruptGroup",
        }
    }

    /// Whether it takes a `delay` (and needs one).
    pub fn takes_delay(self) -> bool {
        matches!(self, SyncFaultKind::LateAnswer | SyncFaultKind::LatePush)
    }

    /// Whether it hits a `/configs/fetch` answer (http) rather than a push or a listener
    /// answer.
    pub fn on_fetch(self) -> bool {
        self == SyncFaultKind::CorruptGroup
    }

    /// The one sync mode whose channel it applies to.
    pub fn mode(self) -> SyncMode {
        match self {
            SyncFaultKind::EmptyAnswer
            | SyncFaultKind::LateAnswer
            | SyncFaultKind::CorruptGroup => SyncMode::Http,
            _ => SyncMode::Websocket,
        }
    }
}

/// The body of `POST /test-only/sync-fault`: the admin's next `count` pushes of the kind's
/// mode go wrong as `kind` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SyncFaultRequest {
    /// What goes wrong.
    pub kind: SyncFaultKind,
    /// How many pushes it applies to (absent: 1).
    #[serde(default = "one")]
    pub count: u32,
    /// `lateAnswer`: how long each answer waits; `latePush`: how long each increment waits;
    /// in milliseconds.
    #[serde(default)]
    pub delay_ms: u64,
}

fn one() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hook_body_is_camel_case_with_defaults() {
        let r: SyncFaultRequest = serde_json::from_str(r#"{"kind":"closeMidPush"}"#).unwrap();
        assert_eq!(
            (r.kind, r.count, r.delay_ms),
            (SyncFaultKind::CloseMidPush, 1, 0)
        );
        let back = serde_json::to_value(&r).unwrap();
        assert_eq!(back["kind"], "closeMidPush");
        assert!(serde_json::from_str::<SyncFaultRequest>(r#"{"kind":"smash"}"#).is_err());
        for kind in [SyncFaultKind::Drop, SyncFaultKind::LateAnswer] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.name());
        }
    }
}
