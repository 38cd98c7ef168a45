//! `runModes:`: the run modes (`gantry run --run-mode`) a scenario cannot mean anything
//! under, each with its reason; the case is reported skipped with it under that mode.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::RunMode;

/// Run modes the scenario opts out of, each with why (e.g. `restart: "pauses the gateway
/// mid-step"`). Few cases need one: every case is meant to pass under every run mode.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunModeOptOuts {
    /// Why the case cannot run with every link sliced (`--run-mode slice`).
    #[serde(default)]
    pub slice: Option<String>,
    /// Why the case cannot run with its gateways restarted between steps (`--run-mode
    /// restart`).
    #[serde(default)]
    pub restart: Option<String>,
    /// Why the case cannot run several times on one topology (`--run-mode leak`).
    #[serde(default)]
    pub leak: Option<String>,
    /// Why the case cannot run several times (`--run-mode repeat:N`).
    #[serde(default)]
    pub repeat: Option<String>,
}

impl RunModeOptOuts {
    /// Why the case opts out of `mode`, if it does.
    pub fn reason(&self, mode: RunMode) -> Option<&str> {
        match mode {
            RunMode::Slice => self.slice.as_deref(),
            RunMode::Restart => self.restart.as_deref(),
            RunMode::Leak { .. } => self.leak.as_deref(),
            RunMode::Repeat { .. } => self.repeat.as_deref(),
        }
    }

    /// Each opt-out as (mode name, reason).
    pub(crate) fn each(&self) -> impl Iterator<Item = (&'static str, &str)> {
        [
            ("slice", &self.slice),
            ("restart", &self.restart),
            ("leak", &self.leak),
            ("repeat", &self.repeat),
        ]
        .into_iter()
        .filter_map(|(name, why)| Some((name, why.as_deref()?)))
    }
}
