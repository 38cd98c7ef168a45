//! Reporting: [`events`] is the contract between the runner and the reporters
//! ([`terminal`], [`json`], [`junit`], [`html`]); [`merge`](mod@merge) joins the JSON reports
//! of a run's shards; [`place`] names case files and failed checks alike in every report.

pub mod events;
pub mod html;
pub mod json;
pub mod junit;
pub mod merge;
pub mod place;
pub mod plots;
pub mod terminal;

pub use events::{
    CaseId, CaseOutcome, CaseRecord, CaseResult, ChangeTiming, CheckOutcome, CheckReport, Event,
    FinalDigests,
};
pub use json::{ReadError, Report};
pub use merge::{MergeError, merge};
