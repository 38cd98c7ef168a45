//! `regression:`: what makes a scenario a named regression (cases/regressions/): the
//! tracker issues it reproduces, what goes wrong, the bound its checks hold, and the switch
//! that brings the bug back in the reference admin or gateway (docs/regressions.md).

use std::fmt::Write;

use clap::ValueEnum;

use super::*;

/// `regression:`: the bug a case names. Its case passes on a correct admin and gateway and
/// fails, naming its `bound`, when its `emulateBug` is switched on.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Regression {
    /// Where the bug was reported.
    pub tracker: Tracker,
    /// The tracker's issue numbers (links are derived from them); none for a bug of no tracker.
    #[serde(default)]
    pub issues: Vec<u32>,
    /// What goes wrong, in one line.
    #[serde(deserialize_with = "text")]
    pub summary: String,
    /// What the case's checks hold that the bug breaks (what a failure names), and in which
    /// modes it means something.
    #[serde(deserialize_with = "text")]
    pub bound: String,
    /// The switch of the reference admin or gateway that brings the bug back.
    #[serde(with = "serde_norway::with::singleton_map")]
    #[schemars(with = "BugSwitch")]
    pub emulate_bug: BugSwitch,
}

/// Where a regression was reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Tracker {
    /// Apache ShenYu (github.com/apache/shenyu).
    Shenyu,
    /// Apache APISIX (github.com/apache/apisix).
    Apisix,
    /// NGINX Gateway Fabric (github.com/nginx/nginx-gateway-fabric).
    NginxGatewayFabric,
    /// Envoy (github.com/envoyproxy/envoy).
    Envoy,
    /// gantry's own (no public tracker: issues are not linked).
    Gantry,
}

impl Tracker {
    /// The project's name as it spells it.
    pub fn project(self) -> &'static str {
        match self {
            Tracker::Shenyu => "ShenYu",
            Tracker::Apisix => "APISIX",
            Tracker::NginxGatewayFabric => "nginx-gateway-fabric",
            Tracker::Envoy => "Envoy",
            Tracker::Gantry => "gantry",
        }
    }

    /// The web address of issue `number`; `None` for a tracker that is not public.
    pub fn issue_url(self, number: u32) -> Option<String> {
        let repo = match self {
            Tracker::Shenyu => "apache/shenyu",
            Tracker::Apisix => "apache/apisix",
            Tracker::NginxGatewayFabric => "nginx/nginx-gateway-fabric",
            Tracker::Envoy => "envoyproxy/envoy",
            Tracker::Gantry => return None,
        };
        Some(format!("https://github.com/{repo}/issues/{number}"))
    }
}

/// `emulateBug`: which binary emulates the bug, and the bug's name there
/// (`{ gateway: clear-before-refill }`, `{ admin: no-peer-watch }`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub enum BugSwitch {
    /// A bug of the reference gateway (`gateway --emulate-bug NAME`).
    Gateway(Bug<gateway::EmulatedBug>),
    /// A bug of the reference admin (`admin --emulate-bug NAME`).
    Admin(Bug<admin::EmulatedBug>),
}

impl BugSwitch {
    /// Which binary takes the switch: `gateway` or `admin`.
    pub fn binary(self) -> &'static str {
        match self {
            BugSwitch::Gateway(_) => "gateway",
            BugSwitch::Admin(_) => "admin",
        }
    }

    /// The bug's name, as `--emulate-bug` takes it.
    pub fn name(self) -> String {
        match self {
            BugSwitch::Gateway(bug) => bug.name(),
            BugSwitch::Admin(bug) => bug.name(),
        }
    }

    /// The binary's arguments that switch the bug on.
    pub fn args(self) -> Vec<String> {
        vec!["--emulate-bug".to_owned(), self.name()]
    }

    /// `backend` with the bug switched on in every admin or every gateway it starts.
    pub fn on(self, backend: crate::Backend) -> crate::Backend {
        match self {
            BugSwitch::Gateway(_) => backend.with_gateway_args(self.args()),
            BugSwitch::Admin(_) => backend.with_admin_args(self.args()),
        }
    }
}

impl std::fmt::Display for BugSwitch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} --emulate-bug {}", self.binary(), self.name())
    }
}

/// One of a binary's `--emulate-bug` values, named in kebab-case as the flag takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bug<B>(pub B);

impl<B: ValueEnum> Bug<B> {
    /// The name `--emulate-bug` takes.
    pub fn name(&self) -> String {
        (self.0.to_possible_value()).map_or_else(String::new, |v| v.get_name().to_owned())
    }
}

/// Every `--emulate-bug` name of `B`, in declaration order.
fn names<B: ValueEnum>() -> Vec<String> {
    B::value_variants()
        .iter()
        .filter_map(|b| b.to_possible_value())
        .map(|v| v.get_name().to_owned())
        .collect()
}

impl<'de, B: ValueEnum> Deserialize<'de> for Bug<B> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let name = String::deserialize(d)?;
        B::from_str(&name, false).map(Bug).map_err(|_| {
            serde::de::Error::custom(format!(
                "unknown bug `{name}`, expected one of: {}",
                names::<B>().join(", ")
            ))
        })
    }
}

impl<B: ValueEnum> JsonSchema for Bug<B> {
    fn schema_name() -> Cow<'static, str> {
        // `gateway::config::EmulatedBug` → `GatewayBug`.
        let krate = std::any::type_name::<B>().split("::").next().unwrap_or("");
        let mut chars = krate.chars();
        let capital = chars.next().map(|c| c.to_ascii_uppercase());
        format!(
            "{}{}Bug",
            capital.into_iter().collect::<String>(),
            chars.as_str()
        )
        .into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A bug the binary emulates with `--emulate-bug NAME`.",
            "type": "string",
            "enum": names::<B>(),
        })
    }
}

/// A text that says something (not empty, not blank).
fn text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = String::deserialize(d)?;
    if text.trim().is_empty() {
        return Err(serde::de::Error::custom("must not be empty"));
    }
    Ok(text.trim().to_owned())
}

impl Regression {
    /// The issues as Markdown: `[ShenYu #7034](https://…), [ShenYu #5580](https://…)`;
    /// `(none)` without any.
    pub fn issue_links(&self) -> String {
        if self.issues.is_empty() {
            return "(none)".to_owned();
        }
        let project = self.tracker.project();
        (self.issues.iter())
            .map(|n| match self.tracker.issue_url(*n) {
                Some(url) => format!("[{project} #{n}]({url})"),
                None => format!("{project} #{n}"),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The regressions table of docs/regressions.md: one row per `(file stem, modes, regression)`,
/// in the order given.
pub fn regressions_table<'a>(
    rows: impl IntoIterator<Item = (&'a str, &'a [SyncMode], &'a Regression)>,
) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut out = String::from(
        "| file | tracker issues | what happens | the case holds | modes | switch |\n\
         |---|---|---|---|---|---|\n",
    );
    for (file, modes, r) in rows {
        let modes: Vec<String> = modes.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            out,
            "| [{file}](../cases/regressions/{file}.yaml) | {} | {} | {} | {} | `{}` |",
            r.issue_links(),
            cell(&r.summary),
            cell(&r.bound),
            modes.join(", "),
            r.emulate_bug
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regression(yaml: &str) -> Result<Regression, String> {
        serde_norway::from_str(yaml).map_err(|e| e.to_string())
    }

    #[test]
    fn a_block_reads_with_either_binarys_bug() {
        let r = regression(
            "tracker: shenyu\nissues: [7034, 5580]\nsummary: a gap\nbound: none missed\n\
             emulateBug: { gateway: clear-before-refill }\n",
        )
        .unwrap();
        assert_eq!(
            r.emulate_bug,
            BugSwitch::Gateway(Bug(gateway::EmulatedBug::ClearBeforeRefill))
        );
        assert_eq!(
            r.emulate_bug.args(),
            ["--emulate-bug", "clear-before-refill"]
        );
        assert_eq!(
            r.issue_links(),
            "[ShenYu #7034](https://github.com/apache/shenyu/issues/7034), \
             [ShenYu #5580](https://github.com/apache/shenyu/issues/5580)"
        );
        let r = regression(
            "tracker: nginx-gateway-fabric\nissues: [5330]\nsummary: s\nbound: b\n\
             emulateBug: { admin: no-peer-watch }\n",
        )
        .unwrap();
        assert_eq!(
            r.emulate_bug.to_string(),
            "admin --emulate-bug no-peer-watch"
        );
        assert_eq!(
            r.issue_links(),
            "[nginx-gateway-fabric #5330](https://github.com/nginx/nginx-gateway-fabric/issues/5330)"
        );
    }

    #[test]
    fn an_unknown_bug_names_the_known_ones() {
        let e = regression(
            "tracker: shenyu\nsummary: s\nbound: b\nemulateBug: { admin: clear-before-refill }\n",
        )
        .unwrap_err();
        assert!(
            e.contains("unknown bug `clear-before-refill`, expected one of: no-peer-watch"),
            "{e}"
        );
        let e = regression("tracker: shenyu\nsummary: s\nbound: b\nemulateBug: { proxy: x }\n")
            .unwrap_err();
        assert!(e.contains("proxy"), "{e}");
    }

    #[test]
    fn a_blank_bound_is_refused() {
        let e = regression(
            "tracker: gantry\nsummary: s\nbound: ' '\nemulateBug: { admin: no-peer-watch }\n",
        )
        .unwrap_err();
        assert!(e.contains("must not be empty"), "{e}");
    }

    #[test]
    fn every_gateway_bug_has_its_flag_name() {
        for bug in gateway::EmulatedBug::value_variants() {
            let name = Bug(*bug).name();
            assert_eq!(gateway::EmulatedBug::from_str(&name, false), Ok(*bug));
        }
    }

    #[test]
    fn the_table_links_the_file_and_its_issues() {
        let r = regression(
            "tracker: gantry\nsummary: a | b\nbound: held\nemulateBug: { admin: no-peer-watch }\n",
        )
        .unwrap();
        let t = regressions_table([("clock-skew", &[SyncMode::Http][..], &r)]);
        assert!(
            t.contains(
                "| [clock-skew](../cases/regressions/clock-skew.yaml) | (none) | a \\| b | held \
                 | http | `admin --emulate-bug no-peer-watch` |"
            ),
            "{t}"
        );
    }
}
