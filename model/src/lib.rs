//! gantry's data model: the ShenYu wire types shared by the admin, the gateway and the harness.
//!
//! Every type here serialises with exactly ShenYu's JSON field names (including the `loged`
//! typo on rules and the admin DTOs) and reads both of ShenYu's JSON dialects: Gson's (null
//! fields omitted, `=` escaped as `\u003d`) and Jackson's (null fields written out). Missing
//! fields take ShenYu's defaults.
//!
//! The entry points are the data types ([`PluginData`], [`SelectorData`], [`RuleData`],
//! [`MetaData`], [`AppAuthData`]), the sync envelopes ([`WebsocketData`], [`DataEvent`]) and
//! [`ConfigSet::digest`], the canonical content digest that admin and gateway compute alike.

mod admin_api;
mod app_auth;
mod backoff;
pub mod condition;
mod context_mapping;
mod de;
mod digest;
mod event;
mod gateway_error;
mod handle;
pub mod keyspace;
pub mod lock;
mod meta;
pub mod path_pattern;
mod plugin;
mod rate_limiter;
pub mod re2j;
mod register;
mod rule;
mod selector;
mod sync_fault;
mod sync_mode;
mod sync_status;
mod sync_style;
pub mod time;
pub mod url_codec;
mod wire_enum;
pub mod world;

pub use admin_api::{
    AdminResult, BatchEnabled, BatchIds, CommonPager, ConditionDto, LoginRequest, LoginResponse,
    PageParameter, PluginVo, RuleDto, RuleVo, SelectorDto, SelectorVo, admin_code,
};
pub use app_auth::{AppAuthData, AuthParamData, AuthPathData};
pub use backoff::Backoff;
pub use condition::{ConditionData, Operator, ParamType};
pub use context_mapping::ContextMappingRuleHandle;
pub use digest::{AppliedDigest, ConfigDigest, ConfigSet, DigestItem, DigestReport, Rejections};
pub use event::{ConfigGroup, DataEvent, DataEventType, EventPayload, WebsocketData};
pub use gateway_error::GatewayError;
pub use handle::{
    DivideRuleHandle, DivideUpstream, LoadBalance, RETRY_BOUNDS, RetryStrategy, TIMEOUT_MS_BOUNDS,
};
pub use meta::MetaData;
pub use plugin::{BUILTIN_PLUGINS, BuiltinPlugin, PluginData};
pub use rate_limiter::{
    Algorithm, DEFAULT_CONCURRENT_SLOT_TTL, KeyResolver, RateLimiterConfig, RateLimiterHandle,
    RedisMode,
};
pub use register::{MetaDataRegister, UriRegister};
pub use rule::RuleData;
pub use selector::{MatchMode, SelectorData, SelectorType};
pub use sync_fault::{SyncFaultKind, SyncFaultRequest};
pub use sync_mode::SyncMode;
pub use sync_status::{
    GatewaySyncState, GatewaySyncStatus, SYNC_CONFIRM_HEADER, SYNC_STATUS_PREFIX, SyncConfirmation,
    SyncStatusReport,
};
pub use sync_style::SyncStyle;
pub use wire_enum::UnknownName;

/// ShenYu's default namespace id (`SYS_DEFAULT_NAMESPACE_ID`). gantry follows ShenYu 2.6.0 and
/// has no namespaces; data carries this id where a shape has the field.
pub const DEFAULT_NAMESPACE_ID: &str = "649330b6-c2d7-4edc-be8e-8a54df9eb385";
