//! What every check kind implements beside its judge, and the small contexts it is handed:
//! [`CheckSpec`] validates the spec as written and names its request, [`Measured`] turns what
//! was measured into the reports' lines and plots. The validator implements [`ValidateCx`], so
//! a kind's module depends on neither the validator nor the reporters.

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
}

/// What a validated spec may ask of the validator.
pub(crate) trait ValidateCx {
    /// Records a problem at `path`.
    fn problem(&mut self, path: String, message: String);

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

    /// The line after `<case>: <kind> `<name>`: ` in the terminal's measurements, if the kind
    /// has one.
    fn terminal(&self) -> Option<String> {
        None
    }

    /// Sync latency samples (ms) that go into the HTML report's histogram per mode.
    fn sync_samples(&self) -> &[f64] {
        &[]
    }

    /// An SVG plot of this check for the HTML report, titled from `title`.
    fn plot(&self, _title: &str) -> Option<String> {
        None
    }
}
