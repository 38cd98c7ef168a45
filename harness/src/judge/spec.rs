//! What every check kind implements beside its judge, and the small contexts it is handed:
//! `CheckSpec` validates the spec as written and names its request, `Observe` gathers what
//! the judge looks at and judges it, [`Measured`] turns what was measured into the reports'
//! lines and plots. The validator implements `ValidateCx` and the runner `ObserveCx` (and
//! the few per-kind contexts that kinds needing more declare beside their judge), so a kind's
//! module depends on neither the validator, the runner nor the reporters.

use super::{Counts, Verdict};
use crate::backend::BackendKind;
use crate::probe::ProbeResponse;
use crate::scenario::ast::UpstreamRef;
use crate::scenario::ast::request::{Expect, RequestSpec};

/// A check kind's spec, as read from a case file.
pub(crate) trait CheckSpec {
    /// The request the check sends (the latency check's probe).
    fn request(&self) -> &RequestSpec;

    /// The expectation every answer must meet, for kinds that have one.
    fn expect(&self) -> Option<&Expect> {
        None
    }

    /// Reports every problem of the spec (its request's method is checked by the caller);
    /// `at` is the path of the spec's keys (`checks[0].steer`; a probe's stand beside `name`).
    fn validate(&self, cx: &mut dyn ValidateCx, at: &str);

    /// Why the check is skipped on `backend` whatever happens in the run, if it is: known
    /// from the spec and the backend alone, so a test runner lists it before the case runs
    /// (`expected_skips`) and the observer skips with the same words.
    fn skip_on(&self, backend: BackendKind) -> Option<String> {
        let _ = backend;
        None
    }
}

/// Why a check produced no verdict.
pub(crate) enum NoVerdict {
    /// It cannot run here (e.g. on this backend); reported as skipped, never as passed.
    Skip(String),
    /// Observing failed (a change that never became visible, an admin error).
    Failed(String),
}

/// A check kind that observes through the context `C` and judges what it saw.
pub(crate) trait Observe<C>: CheckSpec {
    /// Observes what the kind's judge needs and judges it.
    async fn observe(&self, cx: &mut C) -> Result<Verdict, NoVerdict>;
}

/// What every observing check may ask of the runner.
pub(crate) trait ObserveCx {
    /// Sends `request` through the gateway; a transport error becomes its description.
    async fn send(&self, request: &RequestSpec) -> Result<ProbeResponse, String>;

    /// Sends `request` `n` times, `concurrency` at a time, counting answers by upstream.
    async fn count(&self, request: &RequestSpec, n: u32, concurrency: u32) -> Counts;

    /// The upstreams of the setup selector `name`, as last sent to the admin.
    fn upstreams(&mut self, name: &str) -> Result<Vec<UpstreamRef>, NoVerdict>;
}

/// The least value of a count a case file writes (`requests`, `concurrency`, `rounds`,
/// `repeat`, `clients`, `consecutive`): the validator's bound ([`ValidateCx::min_count`]) and the
/// schema's `minimum` (`#[schemars(range(min = MIN_COUNT))]` on each such field), one constant
/// so the two cannot disagree (a test in `scenario::validate::check` walks the schema).
pub(crate) const MIN_COUNT: u32 = 1;

/// Where a balance judge's expectation comes from; its failure messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Intent {
    /// Written in the check (`shares`, `cycle`, `weights`): a config mistake is caught. The
    /// text names what was written (`the shares you wrote`).
    Written(&'static str),
    /// Read from the selector's weights as the case sent them to the admin: a mistake in the
    /// weights passes. The text names what they imply (`the shares`); `keys` what to write
    /// instead (`shares:`).
    Config {
        /// What the weights imply (`the shares`, `the cycle`).
        what: &'static str,
        /// The keys that state the intent (`` `shares:` ``).
        keys: &'static str,
    },
}

impl Intent {
    /// What the observation was compared with: `the shares you wrote`, or `the shares the
    /// selector's weights imply (as the case sent them to the admin)`.
    pub(crate) fn compared_with(&self) -> String {
        match self {
            Intent::Written(what) => (*what).to_owned(),
            Intent::Config { what, .. } => {
                format!("{what} the selector's weights imply (as the case sent them to the admin)")
            }
        }
    }

    /// For an expectation read from the config, the sentence a failure ends with: a mistake in
    /// the weights would pass, so write the intent.
    pub(crate) fn hint(&self) -> Option<String> {
        match self {
            Intent::Written(_) => None,
            Intent::Config { keys, .. } => Some(config_note(keys)),
        }
    }
}

/// Why a balance check whose expectation comes from the selector's weights cannot catch a
/// mistake in them, and what to write instead (`keys`: `` `shares:` ``): the validator's
/// warning and the end of such a check's failure.
pub(crate) fn config_note(keys: &str) -> String {
    format!(
        "the expectation is read from the selector's weights, so a mistake in them passes; \
         write {keys} with the outcome you intend to catch one"
    )
}

/// What a validated spec may ask of the validator.
pub(crate) trait ValidateCx {
    /// Records a problem at `path`.
    fn problem(&mut self, path: String, message: String);

    /// Records a warning at `path`: printed by `gantry validate`, never failing the file.
    fn warning(&mut self, path: String, message: String);

    /// Whether a setup selector of that name exists at this point.
    fn has_selector(&self, name: &str) -> bool;

    /// Reports `name` at `path` if no upstream of that name is declared.
    fn upstream(&mut self, name: &str, path: String);

    /// Reports every problem of an expectation at `path`.
    fn expectation(&mut self, expect: &Expect, path: &str);

    /// Reports `at.selector` if no selector `name` exists at this point.
    fn selector(&mut self, name: &str, at: &str) {
        if !self.has_selector(name) {
            self.problem(
                format!("{at}.selector"),
                format!("no selector named `{name}` at this point"),
            );
        }
    }

    /// Reports `at.field` if `value` is below `min`.
    fn at_least(&mut self, value: u32, min: u32, at: &str, field: &str) {
        if value < min {
            self.problem(
                format!("{at}.{field}"),
                format!("must be at least {min}, got {value}"),
            );
        }
    }

    /// Reports `at.field` if the count `value` is below [`MIN_COUNT`].
    fn min_count(&mut self, value: u32, at: &str, field: &str) {
        self.at_least(value, MIN_COUNT, at, field);
    }

    /// Reports `at.field` unless `value` is a fraction (strictly between 0 and 1 if `open`).
    fn fraction(&mut self, value: f64, at: &str, field: &str, open: bool) {
        let ok = if open {
            value > 0.0 && value < 1.0
        } else {
            (0.0..=1.0).contains(&value)
        };
        if !ok {
            let range = if open {
                "strictly between 0 and 1"
            } else {
                "between 0 and 1"
            };
            self.problem(
                format!("{at}.{field}"),
                format!("must be {range}, got {value}"),
            );
        }
    }
}

/// What a check kind measured, as the reports show it.
pub trait Measured {
    /// One line for the HTML report's `measured` column.
    fn summary(&self) -> String;

    /// The line after ``<case>: <kind> `<name>`: `` in the terminal's measurements, if the kind
    /// has one.
    fn terminal(&self) -> Option<String> {
        None
    }

    /// Sync latency samples (ms) that go into the HTML report's histogram per mode.
    fn sync_samples(&self) -> &[f64] {
        &[]
    }

    /// Observed against expected shares, for the HTML report's bar plot of this check.
    fn shares(&self) -> Option<Shares> {
        None
    }
}

/// Observed against expected shares per category (an upstream), for a bar plot.
#[derive(Debug, Clone, PartialEq)]
pub struct Shares {
    /// What follows the check's name in the plot's title (`, p = 0.412`).
    pub note: String,
    /// `(category, observed share, expected share)`, in order.
    pub categories: Vec<(String, f64, f64)>,
}
