//! Before the steps: the precheck, then setup (plugins, selectors and rules, client
//! registrations).

use model::{MetaDataRegister, UriRegister};

use super::made::{Made, MadeRule, MadeSelector};
use super::refused::{Refused, refused};
use super::{Case, StepResult, at};
use crate::backend::BackendKind;
use crate::client::AdminClient;
use crate::error::{RunErrorKind, Step};
use crate::lower;
use crate::scenario::ast::{PluginSetup, RegistrationSpec, RuleSpec, SelectorSpec};
use crate::scenario::placeholder;

impl Case<'_> {
    /// The gateway holds the admin's initial config, and the wait does not pass yet on every
    /// running gateway (a failure says what each probe got).
    pub(super) async fn precheck(&self, admin: &AdminClient) -> StepResult<()> {
        self.digests_converge(admin, "initial digest equality")
            .await
            .map_err(at(Step::Precheck))?;
        if self.backend == BackendKind::External {
            self.unrouted_on_target()
                .await
                .map_err(at(Step::Precheck))?;
        }
        match self.passes_already(&self.scenario.wait, "wait").await {
            None => Ok(()),
            Some(got) => Err((Step::Precheck, RunErrorKind::ProbePassesBeforeSetup { got })),
        }
    }

    /// On an external target, before the case made anything: every distinct request of the
    /// case, sent once as written, must find no selector (-107), else the target's own config
    /// routes it and would answer it or shadow the case's routes (the run's probe only ruled
    /// out a catch-all).
    async fn unrouted_on_target(&self) -> Result<(), RunErrorKind> {
        let mut sent = Vec::new();
        for request in self.scenario.requests() {
            // The gateway's own endpoints (a `synced` check's dump) go through no selector.
            if sent.contains(&request) || request.path.starts_with("/actuator/") {
                continue;
            }
            sent.push(request);
            let resp = self.gateway().send(request).await?;
            if !crate::target::external::finds_no_selector(&resp) {
                return Err(RunErrorKind::RoutedByTarget {
                    request: format!("{} {}", request.method, request.path),
                    got: resp.summary(),
                });
            }
        }
        Ok(())
    }

    /// Sets the `setup.plugins` configs (placeholders filled in with this topology's
    /// addresses) and enabled flags, then creates every selector and rule, then the
    /// registrations; returns what it made.
    pub(super) async fn setup(&self, admin: &AdminClient) -> StepResult<Made> {
        let mut made = Made {
            headerless: (!self.caps.route_headers).then(|| crate::probe::Owners::of(self.scenario)),
            ..Made::default()
        };
        for (i, spec) in self.scenario.setup.plugins.iter().enumerate() {
            let field = format!("setup.plugins[{i}]");
            let original = self.update_plugin(admin, spec, &field, Step::Setup).await?;
            made.plugins.push(original);
        }
        for (i, spec) in self.scenario.setup.selectors.iter().enumerate() {
            let field = format!("setup.selectors[{i}]");
            let sel = self
                .create_selector(admin, spec, &field, Step::Setup)
                .await?;
            made.selectors.push(sel);
        }
        for reg in &self.scenario.setup.registrations {
            let ids = self.register(admin, reg).await.map_err(at(Step::Setup))?;
            made.registered.extend(ids);
        }
        Ok(made)
    }

    /// Creates a selector of `spec` (at `field` in the case file) and then its rules (in setup
    /// or a step's `createSelector`).
    pub(super) async fn create_selector(
        &self,
        admin: &AdminClient,
        spec: &SelectorSpec,
        field: &str,
        step: Step,
    ) -> StepResult<MadeSelector> {
        let plugin_id = admin
            .plugin_id(&spec.plugin)
            .await
            .map_err(at(step))?
            .ok_or_else(|| (step, RunErrorKind::PluginNotFound(spec.plugin.clone())))?;
        let mut selector_dto = lower::selector_dto(spec, &plugin_id, &self.addrs);
        selector_dto.name = Some(self.topo.selector_name(&spec.name));
        let selector_id = admin
            .create_selector(&selector_dto)
            .await
            .map_err(|e| (step, refused(field, &Refused::Selector, e)))?;
        let mut rules = Vec::new();
        for (j, rule) in spec.rules.iter().enumerate() {
            let field = format!("{field}.rules[{j}]");
            rules.push(create_rule(admin, rule, &field, &selector_id, step).await?);
        }
        Ok(MadeSelector {
            name: spec.name.clone(),
            id: selector_id,
            dto: selector_dto,
            upstreams: spec.upstreams.clone(),
            deleted: false,
            rules,
            hash_seen: None,
        })
    }

    /// Registers like a ShenYu http client at start (protocol §9): [`register_client`] with
    /// the upstream's address, as the scenario's app unless the registration names one.
    pub(super) async fn register(
        &self,
        admin: &AdminClient,
        reg: &RegistrationSpec,
    ) -> Result<Vec<String>, RunErrorKind> {
        let app_name = reg
            .app_name
            .clone()
            .unwrap_or_else(|| self.scenario.name.clone());
        let host_port = self
            .topo
            .upstream_address(&reg.upstream)
            .expect("validated: upstreams are declared");
        register_client(admin, &app_name, &reg.context_path, &reg.paths, &host_port).await
    }

    /// Sets a plugin's config (its placeholders filled in with this topology's addresses; a
    /// problem is reported at `field`) and enabled flag; returns the plugin as it was.
    pub(super) async fn update_plugin(
        &self,
        admin: &AdminClient,
        spec: &PluginSetup,
        field: &str,
        step: Step,
    ) -> StepResult<model::PluginVo> {
        let original = admin
            .plugin(&spec.name)
            .await
            .map_err(at(step))?
            .ok_or_else(|| (step, RunErrorKind::PluginNotFound(spec.name.clone())))?;
        let mut changed = original.clone();
        if let Some(config) = &spec.config {
            let values = self.topo.placeholder_values();
            let filled = placeholder::substitute(config, &values).map_err(|detail| {
                (
                    step,
                    RunErrorKind::Placeholder {
                        field: format!("{field}.config"),
                        detail,
                    },
                )
            })?;
            changed.config = Some(filled);
        }
        changed.enabled = spec.enabled.unwrap_or(original.enabled);
        admin.update_plugin(&changed).await.map_err(at(step))?;
        Ok(original)
    }
}

/// Registers like a ShenYu http client at start (protocol §9) as app `app_name` under
/// `context_path`, listening at `host_port`: metadata per path of `paths`, then the address.
/// Returns the ids of the divide and contextPath selectors the admin made for it, for
/// teardown. Case files' registrations and the convergence histories (`converge`) both
/// register through it.
pub(crate) async fn register_client(
    admin: &AdminClient,
    app_name: &str,
    context_path: &str,
    paths: &[String],
    host_port: &str,
) -> Result<Vec<String>, RunErrorKind> {
    for path in paths {
        let meta = MetaDataRegister {
            app_name: Some(app_name.to_owned()),
            context_path: Some(context_path.to_owned()),
            path: Some(path.clone()),
            rpc_type: Some("http".to_owned()),
            rule_name: Some(path.clone()),
            enabled: Some(true),
            register_meta_data: Some(false),
            add_prefixed: Some(false),
            ..Default::default()
        };
        admin
            .register("/shenyu-client/register-metadata", &meta)
            .await?;
    }
    let (host, port) = host_port
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u16>().ok()?)))
        .expect("upstream addresses are host:port");
    let uri = UriRegister {
        protocol: Some("http://".to_owned()),
        app_name: Some(app_name.to_owned()),
        context_path: Some(context_path.to_owned()),
        rpc_type: Some("http".to_owned()),
        host: Some(host.to_owned()),
        port: Some(port),
        event_type: Some("REGISTER".to_owned()),
    };
    admin.register("/shenyu-client/register-uri", &uri).await?;
    let mut ids = Vec::new();
    for plugin in ["divide", "contextPath"] {
        let plugin_id = admin
            .plugin_id(plugin)
            .await?
            .ok_or_else(|| RunErrorKind::PluginNotFound(plugin.to_owned()))?;
        let selector = admin
            .list_selectors(&plugin_id)
            .await?
            .into_iter()
            .find(|s| s.name == context_path)
            .ok_or_else(|| {
                RunErrorKind::UnknownObject(format!(
                    "{plugin} selector `{}` after registration",
                    context_path
                ))
            })?;
        ids.push(selector.id);
    }
    Ok(ids)
}

/// Creates `rule` (at `field` in the case file) under the selector `selector_id`.
pub(super) async fn create_rule(
    admin: &AdminClient,
    rule: &RuleSpec,
    field: &str,
    selector_id: &str,
    step: Step,
) -> StepResult<MadeRule> {
    let dto = lower::rule_dto(rule, selector_id);
    let id = admin
        .create_rule(&dto)
        .await
        .map_err(|e| (step, refused(field, &Refused::rule(rule), e)))?
        .ok_or_else(|| {
            (
                step,
                RunErrorKind::RuleNotFound {
                    rule: rule.name.clone(),
                    selector_id: selector_id.to_owned(),
                },
            )
        })?;
    Ok(MadeRule {
        name: rule.name.clone(),
        id,
        dto,
        deleted: false,
    })
}
