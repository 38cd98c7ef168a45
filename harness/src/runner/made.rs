//! What setup made on the admin, kept current by the steps: ids, the DTOs last sent (so an
//! update replaces only what the step names) and each selector's upstreams as configured (what
//! the balancer judges expect).

use std::collections::BTreeMap;
use std::net::IpAddr;

use model::{RuleDto, SelectorDto};

use super::StepResult;
use crate::error::{RunErrorKind, Step};
use crate::probe::Names;
use crate::scenario::ast::UpstreamRef;

/// A rule setup made, and whether a step deleted it.
#[derive(Debug)]
pub(super) struct MadeRule {
    pub(super) name: String,
    pub(super) id: String,
    pub(super) dto: RuleDto,
    pub(super) deleted: bool,
}

/// A selector setup made (with its rules), and whether a step deleted it.
#[derive(Debug)]
pub(super) struct MadeSelector {
    pub(super) name: String,
    pub(super) id: String,
    pub(super) dto: SelectorDto,
    /// Its divide upstreams as last configured.
    pub(super) upstreams: Vec<UpstreamRef>,
    pub(super) deleted: bool,
    pub(super) rules: Vec<MadeRule>,
    /// Where each client address went at the last hash check on this selector.
    pub(super) hash_seen: Option<BTreeMap<IpAddr, String>>,
}

/// Everything setup made, kept current by the steps.
#[derive(Debug, Default)]
pub(super) struct Made {
    pub(super) selectors: Vec<MadeSelector>,
    /// Selectors the admin made for registrations.
    pub(super) registered: Vec<String>,
    /// The plugins `setup.plugins` changed, as they were before (restored at the end).
    pub(super) plugins: Vec<model::PluginVo>,
    /// Whether a step so far created a selector or changed one's conditions or plugin (what
    /// the -102 hint of a probe's miss blames).
    pub(super) selectors_moved: bool,
    /// What [`Names::headerless`] gets: the case's routes when the gateway does not name the
    /// matched selector and rule.
    pub(super) headerless: Option<crate::probe::Owners>,
}

impl Made {
    /// Every selector and rule setup made, by id.
    pub(super) fn names(&self) -> Names {
        let mut names = Names {
            selectors_moved: self.selectors_moved,
            headerless: self.headerless.clone(),
            ..Names::default()
        };
        for s in &self.selectors {
            names.selectors.insert(s.id.clone(), s.name.clone());
            for r in &s.rules {
                names
                    .rules
                    .insert(r.id.clone(), (s.name.clone(), r.name.clone()));
            }
        }
        names
    }

    /// The live setup selector `name` (the parser checked that it exists at this point).
    pub(super) fn selector(&mut self, name: &str) -> StepResult<&mut MadeSelector> {
        self.selectors
            .iter_mut()
            .find(|s| s.name == name && !s.deleted)
            .ok_or_else(|| {
                (
                    Step::Steps,
                    RunErrorKind::UnknownObject(format!("selector `{name}`")),
                )
            })
    }

    /// The live rule `name` of the setup selector `selector`.
    pub(super) fn rule(&mut self, selector: &str, name: &str) -> StepResult<&mut MadeRule> {
        self.selector(selector)?
            .rules
            .iter_mut()
            .find(|r| r.name == name && !r.deleted)
            .ok_or_else(|| {
                (
                    Step::Steps,
                    RunErrorKind::UnknownObject(format!("rule `{name}` of selector `{selector}`")),
                )
            })
    }
}
