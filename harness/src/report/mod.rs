//! Reporting: [`events`] is the contract between the runner and the reporters
//! ([`terminal`], [`json`]).

pub mod events;
pub mod html;
pub mod json;
pub mod junit;
pub mod plots;
pub mod terminal;

pub use events::CaseId;
pub use events::CaseOutcome;
pub use events::CaseRecord;
pub use events::CaseResult;
pub use events::ChangeTiming;
pub use events::CheckOutcome;
pub use events::CheckReport;
pub use events::Event;
pub use events::FinalDigests;
