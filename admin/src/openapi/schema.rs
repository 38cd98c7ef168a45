//! The schema machinery: [`Described`], how a type used by an operation becomes a schema
//! (a `$ref` to a component for named types, inline for scalars and lists), the `component!`
//! and `scalar!` lists of the types the document knows, the composed generic envelopes
//! (`AdminResult_CommonPager_PluginVo`), and [`doc`], mirrors of shapes with no Rust type of
//! their own.

use std::collections::BTreeMap;

use model::{
    AdminResult, BatchEnabled, BatchIds, CommonPager, ConfigGroup, DigestReport, GatewaySyncState,
    GatewaySyncStatus, LoginRequest, LoginResponse, MetaDataRegister, PluginVo, RuleDto, RuleVo,
    SelectorDto, SelectorVo, SyncStatusReport, UriRegister, WebsocketData,
};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Ref, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

use self::doc::{ApiDocument, FetchData, Health, IdList, ListenerForm, RegisterAnswer};
use crate::dto::{
    AppAuthDto, AppAuthVo, AuthApplyDto, MetaDataDto, MetaDataVo, PageInfo, PluginDto,
    PluginHandleDto, PluginHandleVo, SearchRequest,
};

/// The schemas collected for the document, by component name.
pub(super) type Components = BTreeMap<String, RefOr<Schema>>;

/// Registers what a type needs in [`Components`] and answers the schema to use where the
/// type appears (a `$ref` for named types).
pub(super) type Describe = fn(&mut Components) -> RefOr<Schema>;

/// A type the document can describe.
#[diagnostic::on_unimplemented(
    message = "the OpenAPI document cannot describe `{Self}`",
    note = "derive `utoipa::ToSchema` on it and add it to `component!(...)` in openapi/schema.rs"
)]
pub(crate) trait Described {
    /// The name used in component names, alone or composed (`AdminResult_CommonPager_PluginVo`).
    fn name() -> String;

    /// Registers the components this type needs and answers the schema to use where it
    /// appears: a `$ref` for named types, inline for scalars and lists.
    fn describe(components: &mut Components) -> RefOr<Schema>;
}

/// Adds `T`'s own component and those it refers to; answers a `$ref` to it.
fn register<T: ToSchema>(components: &mut Components) -> RefOr<Schema> {
    let name = T::name().into_owned();
    if !components.contains_key(&name) {
        components.insert(name.clone(), T::schema());
        let mut referenced = Vec::new();
        T::schemas(&mut referenced);
        for (name, schema) in referenced {
            components.entry(name).or_insert(schema);
        }
    }
    Ref::from_schema_name(name).into()
}

/// Adds `schema` as the component `name` (unless there already is one); answers a `$ref`.
fn register_composed(
    components: &mut Components,
    name: String,
    schema: impl FnOnce(&mut Components) -> RefOr<Schema>,
) -> RefOr<Schema> {
    if !components.contains_key(&name) {
        let schema = schema(components);
        components.insert(name.clone(), schema);
    }
    Ref::from_schema_name(name).into()
}

/// Named wire types: each is one component.
macro_rules! component {
    ($($ty:ty),+ $(,)?) => {$(
        impl Described for $ty {
            fn name() -> String {
                <$ty as ToSchema>::name().into_owned()
            }

            fn describe(components: &mut Components) -> RefOr<Schema> {
                register::<$ty>(components)
            }
        }
    )+};
}

component!(
    LoginRequest,
    LoginResponse,
    PluginVo,
    PluginDto,
    PluginHandleVo,
    PluginHandleDto,
    BatchEnabled,
    BatchIds,
    SelectorDto,
    SelectorVo,
    RuleDto,
    RuleVo,
    SearchRequest,
    MetaDataDto,
    MetaDataVo,
    AuthApplyDto,
    AppAuthDto,
    AppAuthVo,
    DigestReport,
    SyncStatusReport,
    GatewaySyncStatus,
    GatewaySyncState,
    ConfigGroup,
    WebsocketData,
    Health,
    ApiDocument,
    IdList,
    MetaDataRegister,
    UriRegister,
    RegisterAnswer,
    FetchData,
    ListenerForm,
);

/// Scalars: inline, never components.
macro_rules! scalar {
    ($($ty:ty => $name:literal),+ $(,)?) => {$(
        impl Described for $ty {
            fn name() -> String {
                $name.to_owned()
            }

            fn describe(_: &mut Components) -> RefOr<Schema> {
                <$ty as PartialSchema>::schema()
            }
        }
    )+};
}

scalar!(String => "String", i32 => "Int32", i64 => "Int64", usize => "Count", bool => "Boolean");

/// `data: null`.
impl Described for () {
    fn name() -> String {
        "Null".to_owned()
    }

    fn describe(_: &mut Components) -> RefOr<Schema> {
        ObjectBuilder::new().schema_type(Type::Null).into()
    }
}

impl<T: Described> Described for Vec<T> {
    fn name() -> String {
        format!("List_{}", T::name())
    }

    fn describe(components: &mut Components) -> RefOr<Schema> {
        ArrayBuilder::new().items(T::describe(components)).into()
    }
}

/// `base`, the derived schema of a generic wire type, with its property `field` (the one of
/// the generic type) replaced by `schema`. Panics if `field` is not a property, so a rename
/// in serde cannot go unnoticed.
fn with_property(base: RefOr<Schema>, field: &str, schema: RefOr<Schema>) -> RefOr<Schema> {
    let RefOr::T(Schema::Object(mut object)) = base else {
        unreachable!("derived struct schemas are inline objects")
    };
    let slot = object
        .properties
        .get_mut(field)
        .unwrap_or_else(|| panic!("the schema has no property `{field}`"));
    *slot = schema;
    if !object.required.iter().any(|r| r == field) {
        object.required.push(field.to_owned());
    }
    RefOr::T(Schema::Object(object))
}

/// The envelope: `data` is always written (`null` only when `T` is `()`).
impl<T: Described> Described for AdminResult<T> {
    fn name() -> String {
        format!("AdminResult_{}", T::name())
    }

    fn describe(components: &mut Components) -> RefOr<Schema> {
        register_composed(components, Self::name(), |components| {
            let data = T::describe(components);
            with_property(AdminResult::<()>::schema(), "data", data)
        })
    }
}

impl<T: Described> Described for CommonPager<T> {
    fn name() -> String {
        format!("CommonPager_{}", T::name())
    }

    fn describe(components: &mut Components) -> RefOr<Schema> {
        register_composed(components, Self::name(), |components| {
            let mut referenced = Vec::new();
            <CommonPager<()> as ToSchema>::schemas(&mut referenced);
            for (name, schema) in referenced {
                components.entry(name).or_insert(schema);
            }
            let items = Vec::<T>::describe(components);
            with_property(CommonPager::<()>::schema(), "dataList", items)
        })
    }
}

impl<T: Described> Described for PageInfo<T> {
    fn name() -> String {
        format!("PageInfo_{}", T::name())
    }

    fn describe(components: &mut Components) -> RefOr<Schema> {
        register_composed(components, Self::name(), |components| {
            let items = Vec::<T>::describe(components);
            with_property(PageInfo::<()>::schema(), "list", items)
        })
    }
}

/// Shapes that have no Rust type of their own in the admin (or whose type lives in a module
/// this document cannot annotate): described here. Unit tests check the mirrors against the
/// real types.
#[allow(dead_code)]
pub(crate) mod doc {
    use model::{AppAuthData, ConfigGroup, MetaData, PluginData, RuleData, SelectorData};
    use serde::Serialize;
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
    use utoipa::{PartialSchema, ToSchema};

    /// What `GET /actuator/health` answers.
    #[derive(Debug, ToSchema)]
    pub(crate) struct Health {
        /// Always `UP`.
        #[schema(example = "UP")]
        pub(crate) status: String,
    }

    /// An OpenAPI 3.1 document (this one).
    #[derive(Debug)]
    pub(crate) struct ApiDocument;

    impl PartialSchema for ApiDocument {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some("An OpenAPI 3.1 document"))
                .into()
        }
    }

    impl ToSchema for ApiDocument {
        fn name() -> std::borrow::Cow<'static, str> {
            "OpenApiDocument".into()
        }
    }

    /// Body of `POST /appAuth/batchDelete`: a bare array of ids, as ShenYu sends, or
    /// `{"ids": [...]}`.
    #[derive(Debug)]
    pub(crate) struct IdList;

    impl PartialSchema for IdList {
        fn schema() -> RefOr<Schema> {
            OneOfBuilder::new()
                .item(Vec::<String>::schema())
                .item(utoipa::openapi::Ref::from_schema_name(
                    model::BatchIds::name(),
                ))
                .description(Some(
                    "A bare array of ids (as ShenYu sends) or `{\"ids\": [...]}`",
                ))
                .into()
        }
    }

    impl ToSchema for IdList {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            schemas.push((
                model::BatchIds::name().into_owned(),
                model::BatchIds::schema(),
            ));
        }
    }

    /// What the registration endpoints answer: the bare text `success`.
    #[derive(Debug)]
    pub(crate) struct RegisterAnswer;

    impl PartialSchema for RegisterAnswer {
        fn schema() -> RefOr<Schema> {
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(["success"]))
                .into()
        }
    }

    impl ToSchema for RegisterAnswer {}

    /// One group of a `GET /configs/fetch` answer; mirrors the long-poll publisher's
    /// `FetchGroup`.
    #[derive(Debug, Serialize, ToSchema)]
    #[serde(rename_all = "camelCase")]
    pub(crate) struct FetchGroup {
        /// md5 of the group's JSON list.
        md5: String,
        /// When the group last changed, in epoch milliseconds.
        last_modify_time: i64,
        /// The group's items (`[]` for groups gantry does not model).
        data: Vec<GroupItem>,
    }

    /// An item of a synced group: a plugin, selector, rule, metadata or app auth entry.
    #[derive(Debug, Serialize)]
    pub(crate) struct GroupItem;

    impl PartialSchema for GroupItem {
        fn schema() -> RefOr<Schema> {
            OneOfBuilder::new()
                .item(utoipa::openapi::Ref::from_schema_name(PluginData::name()))
                .item(utoipa::openapi::Ref::from_schema_name(SelectorData::name()))
                .item(utoipa::openapi::Ref::from_schema_name(RuleData::name()))
                .item(utoipa::openapi::Ref::from_schema_name(MetaData::name()))
                .item(utoipa::openapi::Ref::from_schema_name(AppAuthData::name()))
                .description(Some(
                    "PluginData, SelectorData, RuleData, MetaData or AppAuthData, by group",
                ))
                .into()
        }
    }

    impl ToSchema for GroupItem {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            fn add<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) {
                schemas.push((T::name().into_owned(), T::schema()));
                T::schemas(schemas);
            }
            add::<PluginData>(schemas);
            add::<SelectorData>(schemas);
            add::<RuleData>(schemas);
            add::<MetaData>(schemas);
            add::<AppAuthData>(schemas);
        }
    }

    /// `data` of a `GET /configs/fetch` answer: the requested groups by name.
    #[derive(Debug)]
    pub(crate) struct FetchData;

    impl PartialSchema for FetchData {
        fn schema() -> RefOr<Schema> {
            let mut object = ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some("The requested groups, by group name"));
            for group in ConfigGroup::ALL {
                object = object.property(
                    group.as_str(),
                    utoipa::openapi::Ref::from_schema_name(FetchGroup::name()),
                );
            }
            object.into()
        }
    }

    impl ToSchema for FetchData {
        fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
            schemas.push((FetchGroup::name().into_owned(), FetchGroup::schema()));
            FetchGroup::schemas(schemas);
        }
    }

    /// The form of `POST /configs/listener`: `GROUP=md5,lastModifyTime` for each group the
    /// client holds; groups left out are not watched, other names are ignored.
    #[derive(Debug)]
    pub(crate) struct ListenerForm;

    impl PartialSchema for ListenerForm {
        fn schema() -> RefOr<Schema> {
            let mut object = ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some(
                    "`GROUP=md5,lastModifyTime` for each group the client holds; groups left out \
                 are not watched",
                ));
            for group in ConfigGroup::ALL {
                object = object.property(
                    group.as_str(),
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .pattern(Some("^[^,]+,-?[0-9]+$"))
                        .examples(["d751713988987e9331980363e24189ce,1700000000000"]),
                );
            }
            object
                .property(
                    "namespaceId",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .description(Some("Accepted and ignored")),
                )
                .into()
        }
    }

    impl ToSchema for ListenerForm {}
}
