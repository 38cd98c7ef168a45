//! Unit tests of the document: schemas name the fields serde reads and writes, operation ids
//! are unique identifiers, composed components replace the generic field.

use std::collections::BTreeSet;

use model::{
    AdminResult, BatchEnabled, BatchIds, CommonPager, ConditionDto, LoginRequest, MetaDataRegister,
    PageParameter, PluginVo, RuleDto, SelectorDto, UriRegister,
};
use serde::Serialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

use super::document::operation_id;
use super::operations::OPERATIONS;
use super::schema::{Components, Described};
use crate::dto::{
    AppAuthDto, AppAuthVo, AuthApplyDto, AuthParamDto, AuthPathDto, MetaDataDto, MetaDataVo,
    PageInfo, PluginDto, SearchCondition, SearchRequest,
};

/// A deserializer that only records the field names a struct's `Deserialize` asks for.
struct FieldNames<'a>(&'a mut Option<&'static [&'static str]>);

impl<'de> Deserializer<'de> for FieldNames<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Self::Error> {
        *self.0 = Some(fields);
        Err(de::Error::custom("recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes
        byte_buf option unit unit_struct newtype_struct seq tuple tuple_struct map enum
        identifier ignored_any
    }
}

/// The JSON field names `T`'s `Deserialize` reads.
fn read_fields<T: DeserializeOwned>() -> BTreeSet<String> {
    let mut fields = None;
    let _ = T::deserialize(FieldNames(&mut fields));
    let fields = fields.expect("a struct without flatten");
    fields.iter().map(|f| (*f).to_owned()).collect()
}

/// The JSON field names `value` serialises with.
fn written_fields(value: &impl Serialize) -> BTreeSet<String> {
    let value = serde_json::to_value(value).unwrap();
    value.as_object().unwrap().keys().cloned().collect()
}

/// The property names of an inline object schema.
fn properties(schema: RefOr<Schema>) -> BTreeSet<String> {
    match schema {
        RefOr::T(Schema::Object(object)) => object.properties.keys().cloned().collect(),
        other => panic!(
            "not an inline object: {}",
            serde_json::to_string(&other).unwrap()
        ),
    }
}

fn check_read<T: DeserializeOwned + ToSchema>() {
    assert_eq!(properties(T::schema()), read_fields::<T>(), "{}", T::name());
}

fn check_written<T: Serialize + ToSchema>(sample: &T) {
    assert_eq!(
        properties(T::schema()),
        written_fields(sample),
        "{}",
        T::name()
    );
}

#[test]
fn the_recorder_sees_serde_names() {
    let fields = read_fields::<SelectorDto>();
    assert!(
        fields.contains("type") && fields.contains("loged"),
        "{fields:?}"
    );
    assert!(!fields.contains("selector_type"), "{fields:?}");
}

#[test]
fn request_schemas_name_the_fields_serde_reads() {
    check_read::<LoginRequest>();
    check_read::<PluginDto>();
    check_read::<SelectorDto>();
    check_read::<RuleDto>();
    check_read::<ConditionDto>();
    check_read::<BatchIds>();
    check_read::<BatchEnabled>();
    check_read::<SearchRequest>();
    check_read::<SearchCondition>();
    check_read::<MetaDataDto>();
    check_read::<AuthApplyDto>();
    check_read::<AppAuthDto>();
    check_read::<AuthParamDto>();
    check_read::<AuthPathDto>();
    check_read::<MetaDataRegister>();
    check_read::<UriRegister>();
}

#[test]
fn response_schemas_name_the_fields_serde_writes() {
    let text = || Some("x".to_owned());
    check_written(&MetaDataVo {
        id: "1".to_owned(),
        app_name: text(),
        context_path: text(),
        path: "/p".to_owned(),
        path_desc: text(),
        rpc_type: text(),
        service_name: text(),
        method_name: text(),
        parameter_types: text(),
        rpc_ext: text(),
        rule_name: text(),
        enabled: true,
        namespace_id: "n".to_owned(),
        date_created: "d".to_owned(),
        date_updated: "d".to_owned(),
    });
    check_written(&AppAuthVo {
        id: "1".to_owned(),
        app_key: "k".to_owned(),
        app_secret: "s".to_owned(),
        user_id: text(),
        phone: text(),
        ext_info: text(),
        open: true,
        enabled: true,
        auth_param_list: vec![AuthParamDto::default()],
        auth_path_list: vec![AuthPathDto::default()],
        namespace_id: "n".to_owned(),
        date_created: "d".to_owned(),
        date_updated: "d".to_owned(),
    });
    check_written(&AuthParamDto::default());
    check_written(&AuthPathDto::default());
    check_written(&PageInfo::<()>::new(1, 1, vec![()]));
    check_written(&CommonPager::<()> {
        page: PageParameter::new(1, 1, 1),
        data_list: vec![()],
    });
    check_written(&AdminResult::success("ok", ()));
}

#[test]
fn operation_ids_are_identifiers_and_unique() {
    assert_eq!(operation_id("GET", "/plugin/{id}"), "getPluginById");
    assert_eq!(
        operation_id("POST", "/shenyu-client/register-uri"),
        "postShenyuClientRegisterUri"
    );
    assert_eq!(operation_id("GET", "/v3/api-docs"), "getV3ApiDocs");
    let ids: BTreeSet<String> = OPERATIONS
        .iter()
        .map(|o| operation_id(o.method, o.path))
        .collect();
    assert_eq!(ids.len(), OPERATIONS.len());
    for id in &ids {
        assert!(id.chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
    }
}

#[test]
fn composed_components_replace_the_generic_field() {
    let mut components = Components::new();
    let reference = <AdminResult<CommonPager<PluginVo>>>::describe(&mut components);
    let RefOr::Ref(reference) = reference else {
        panic!("a $ref")
    };
    assert_eq!(
        reference.ref_location,
        "#/components/schemas/AdminResult_CommonPager_PluginVo"
    );
    let json = serde_json::to_value(&components).unwrap();
    assert_eq!(
        json["AdminResult_CommonPager_PluginVo"]["properties"]["data"]["$ref"],
        "#/components/schemas/CommonPager_PluginVo"
    );
    assert_eq!(
        json["CommonPager_PluginVo"]["properties"]["dataList"]["items"]["$ref"],
        "#/components/schemas/PluginVo"
    );
    assert!(json["PluginVo"].is_object() && json["PageParameter"].is_object());
}
