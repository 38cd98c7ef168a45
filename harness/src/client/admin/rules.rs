//! Rules: create, update, get, list and delete.

use model::{BatchIds, CommonPager, RuleDto, RuleVo};

use super::session::AdminClient;
use crate::error::ClientError;

impl AdminClient {
    /// Creates a rule. `POST /rule` answers a count, so the new rule is found by listing its
    /// selector's rules by name; returns its id.
    pub async fn create_rule(&self, dto: &RuleDto) -> Result<Option<String>, ClientError> {
        let dto = &self.rule_body(dto);
        self.data::<i64>(reqwest::Method::POST, "/rule", Some(dto))
            .await?;
        let selector = dto.selector_id.as_deref().unwrap_or_default();
        let name = dto.name.as_deref().unwrap_or_default();
        Ok(self
            .list_rules(selector, name)
            .await?
            .into_iter()
            .find(|r| r.name == name)
            .map(|r| r.id))
    }

    /// Updates rule `id`.
    pub async fn update_rule(&self, id: &str, dto: &RuleDto) -> Result<(), ClientError> {
        let dto = self.rule_body(dto);
        self.data::<i64>(reqwest::Method::PUT, &format!("/rule/{id}"), Some(&dto))
            .await
            .map(drop)
    }

    /// `dto` as this profile sends it (2.7: with `namespaceId`).
    fn rule_body(&self, dto: &RuleDto) -> RuleDto {
        RuleDto {
            namespace_id: self.body_ns(dto.namespace_id.as_ref()),
            ..dto.clone()
        }
    }

    /// Rule `id`, or `None` when the admin answers 404.
    pub async fn get_rule(&self, id: &str) -> Result<Option<RuleVo>, ClientError> {
        self.get_opt(&format!("/rule/{id}")).await
    }

    /// The rules of `selector_id` whose name contains `name` (first 100; under 2.7 in the
    /// client's namespace).
    pub async fn list_rules(
        &self,
        selector_id: &str,
        name: &str,
    ) -> Result<Vec<RuleVo>, ClientError> {
        let path = format!(
            "/rule?selectorId={selector_id}&name={name}&currentPage=1&pageSize=100{}",
            self.ns_param()
        );
        let page: CommonPager<RuleVo> = self.data(reqwest::Method::GET, &path, None::<&()>).await?;
        Ok(page.data_list)
    }

    /// Deletes rules; returns the count the admin reports.
    pub async fn delete_rules(&self, ids: &[String]) -> Result<i64, ClientError> {
        let body = BatchIds {
            ids: Some(ids.to_vec()),
            namespace_id: self.body_ns(None),
        };
        self.data(reqwest::Method::DELETE, "/rule/batch", Some(&body))
            .await
    }
}
