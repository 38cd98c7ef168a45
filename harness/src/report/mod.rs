//! Reporting: [`events`] is the contract between the runner and the reporters
//! ([`terminal`], [`json`]).

pub mod events;
pub mod html;
pub mod json;
pub mod junit;
pub mod plots;
pub mod terminal;

pub use events::{
    CaseId, CaseOutcome, CaseRecord, CaseResult, ChangeTiming, CheckOutcome, CheckReport, Event,
    FinalDigests,
};
