//! Traffic sent while the config changes: a step's `during` and the scenario's background
//! `traffic` across steps (docs/scenarios.md, "Traffic during steps").

use super::*;

/// What is sent and how: the probe every client sends, how many clients, at what overall
/// rate, and the order in which upstreams may answer. Shared by a step's `during` and a
/// scenario's `traffic`.
#[derive(Debug, Clone, PartialEq)]
pub struct Load {
    /// The request and what every answer must be.
    pub probe: Probe,
    /// Concurrent senders (default 1), each sending back to back.
    pub clients: u32,
    /// An overall cap on sends, all clients together (default none: back to back).
    pub rate: Option<Rate>,
    /// Once an answer came from `after`, no request sent later may be answered by `never`.
    pub order: Option<Order>,
}

/// `after: beta, never: alpha`: once an answer from `after` came back, no request sent
/// afterwards may be answered by `never`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Order {
    /// The upstream whose first answer starts the constraint.
    pub after: String,
    /// The upstream that must not answer a request sent after that.
    pub never: String,
}

/// An overall send rate (`200/s`, `50/100ms`): `count` requests per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests per period.
    pub count: u32,
    /// The period.
    pub per: Duration,
}

impl Rate {
    /// The time between two sends at this rate (zero for a zero count, which validation
    /// refuses).
    pub fn spacing(self) -> Duration {
        self.per.checked_div(self.count).unwrap_or_default()
    }

    /// Sends per second.
    pub fn per_second(self) -> f64 {
        f64::from(self.count) / self.per.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.count, humantime::format_duration(self.per))
    }
}

impl std::str::FromStr for Rate {
    type Err = String;

    fn from_str(text: &str) -> Result<Rate, String> {
        let wrong = || format!("invalid rate `{text}`: write requests per period, e.g. `200/s`");
        let (count, per) = text.split_once('/').ok_or_else(wrong)?;
        let count = count.trim().parse::<u32>().map_err(|_| wrong())?;
        let per = per.trim();
        // `200/s`: a unit alone is one of it.
        let per = match per.starts_with(|c: char| c.is_ascii_digit()) {
            true => humantime::parse_duration(per),
            false => humantime::parse_duration(&format!("1{per}")),
        }
        .map_err(|_| wrong())?;
        Ok(Rate { count, per })
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for Rate {
    fn schema_name() -> Cow<'static, str> {
        "Rate".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Requests per period, all clients together: `200/s`, `50/100ms`.",
            "type": "string",
            "pattern": r"^\s*[0-9]+\s*/\s*([0-9]+(\.[0-9]+)?\s*)?[A-Za-zµ]+\s*$",
        })
    }
}

/// A step's `during`: traffic from before the step's first change until it has converged
/// (and for at least `duration`); every answer must meet `expect`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawDuring")]
pub struct During {
    /// What is sent and how.
    pub load: Load,
    /// The least time it is sent, from the start of the step, even after convergence.
    pub duration: Option<Duration>,
}

/// A scenario's background `traffic`: sent from the start of step `from` to the end of step
/// `until` (its checks included), judged as one check.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "RawTraffic")]
pub struct Traffic {
    /// Its name in reports.
    pub name: String,
    /// The step it starts with.
    pub from: String,
    /// The step it ends with (the same as `from` or a later one).
    pub until: String,
    /// What is sent and how.
    pub load: Load,
}

/// A step's `during` as written.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "During")]
pub(crate) struct RawDuring {
    /// The request.
    request: RequestSpec,
    /// What every answer must be.
    expect: Expect,
    /// Concurrent senders, each sending back to back (1 to 64; default 1).
    #[serde(default = "one_client")]
    #[schemars(default = "one_client")]
    clients: u32,
    /// The least time it is sent, from the start of the step, even after the step has
    /// converged (default: until it has converged).
    #[serde(default, deserialize_with = "opt_duration")]
    #[schemars(with = "Option<DurationText>")]
    duration: Option<Duration>,
    /// An overall cap on sends, all clients together (`200/s`; default: back to back).
    #[serde(default)]
    rate: Option<Rate>,
    /// With `never`: an upstream whose first answer starts the ordering constraint.
    #[serde(default)]
    after: Option<String>,
    /// With `after`: an upstream that must not answer any request sent after the first
    /// answer from `after` came back.
    #[serde(default)]
    never: Option<String>,
}

/// A scenario's background traffic as written.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(rename = "Traffic")]
pub(crate) struct RawTraffic {
    /// Its name in reports (unique among the scenario's traffic).
    name: String,
    /// The name of the step it starts with.
    from: String,
    /// The name of the step it ends with, after that step's checks (`from` or a later step).
    until: String,
    /// The request.
    request: RequestSpec,
    /// What every answer must be.
    expect: Expect,
    /// Concurrent senders, each sending back to back (1 to 64; default 1).
    #[serde(default = "one_client")]
    #[schemars(default = "one_client")]
    clients: u32,
    /// An overall cap on sends, all clients together (`200/s`; default: back to back).
    #[serde(default)]
    rate: Option<Rate>,
    /// With `never`: an upstream whose first answer starts the ordering constraint.
    #[serde(default)]
    after: Option<String>,
    /// With `after`: an upstream that must not answer any request sent after the first
    /// answer from `after` came back.
    #[serde(default)]
    never: Option<String>,
}

fn one_client() -> u32 {
    1
}

/// `after` and `never`: both or neither.
fn order(after: Option<String>, never: Option<String>) -> Result<Option<Order>, String> {
    match (after, never) {
        (Some(after), Some(never)) => Ok(Some(Order { after, never })),
        (None, None) => Ok(None),
        (Some(_), None) => Err(
            "`after` needs `never`: the upstream that must not answer once \
                                `after` has"
                .to_owned(),
        ),
        (None, Some(_)) => Err("`never` needs `after`: the upstream whose first answer \
                                starts the constraint"
            .to_owned()),
    }
}

impl TryFrom<RawDuring> for During {
    type Error = String;

    fn try_from(raw: RawDuring) -> Result<Self, String> {
        Ok(During {
            load: Load {
                probe: Probe {
                    request: raw.request,
                    expect: raw.expect,
                },
                clients: raw.clients,
                rate: raw.rate,
                order: order(raw.after, raw.never)?,
            },
            duration: raw.duration,
        })
    }
}

impl TryFrom<RawTraffic> for Traffic {
    type Error = String;

    fn try_from(raw: RawTraffic) -> Result<Self, String> {
        Ok(Traffic {
            name: raw.name,
            from: raw.from,
            until: raw.until,
            load: Load {
                probe: Probe {
                    request: raw.request,
                    expect: raw.expect,
                },
                clients: raw.clients,
                rate: raw.rate,
                order: order(raw.after, raw.never)?,
            },
        })
    }
}

impl JsonSchema for During {
    fn schema_name() -> Cow<'static, str> {
        "During".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = RawDuring::json_schema(generator);
        both_or_neither(&mut schema);
        schema
    }
}

impl JsonSchema for Traffic {
    fn schema_name() -> Cow<'static, str> {
        "Traffic".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut schema = RawTraffic::json_schema(generator);
        both_or_neither(&mut schema);
        schema
    }
}

/// `after` and `never` come together.
fn both_or_neither(schema: &mut Schema) {
    schema.insert(
        "dependencies".into(),
        serde_json::json!({ "after": ["never"], "never": ["after"] }),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rate_reads_as_requests_per_period() {
        let rate: Rate = "200/s".parse().unwrap();
        assert_eq!((rate.count, rate.per), (200, Duration::from_secs(1)));
        assert_eq!(rate.spacing(), Duration::from_millis(5));
        let rate: Rate = "50 / 100ms".parse().unwrap();
        assert_eq!(rate.spacing(), Duration::from_millis(2));
        assert_eq!(rate.per_second(), 500.0);
        for wrong in ["200", "fast/s", "200/parsec", "-1/s"] {
            let err = wrong.parse::<Rate>().unwrap_err();
            assert!(err.contains("e.g. `200/s`"), "{wrong}: {err}");
        }
    }

    #[test]
    fn during_keeps_its_short_form_and_reads_its_options() {
        let short: During =
            serde_norway::from_str("request: { path: /a }\nexpect: { status: 200 }\n").unwrap();
        assert_eq!(
            (short.load.clients, short.load.rate, short.duration),
            (1, None, None)
        );
        assert_eq!(short.load.order, None);
        let full: During = serde_norway::from_str(
            "request: { path: /a }\nexpect: { status: 200 }\nclients: 4\nduration: 2s\n\
             rate: 200/s\nafter: beta\nnever: alpha\n",
        )
        .unwrap();
        assert_eq!(full.load.clients, 4);
        assert_eq!(full.duration, Some(Duration::from_secs(2)));
        assert_eq!(full.load.rate.map(Rate::per_second), Some(200.0));
        assert_eq!(
            full.load.order,
            Some(Order {
                after: "beta".into(),
                never: "alpha".into()
            })
        );
        let half = serde_norway::from_str::<During>(
            "request: { path: /a }\nexpect: { status: 200 }\nafter: beta\n",
        )
        .unwrap_err();
        assert!(half.to_string().contains("`after` needs `never`"), "{half}");
    }
}
