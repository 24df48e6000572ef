//! SCIM discovery (RFC 7644 §4) and attribute projection (RFC 7644 §3.4.2.5, §3.9), pure.
//!
//! The discovery documents are `serde_json::Value`s a handler answers as they are:
//!
//! * [`schemas`] / [`schema`]: the core User schema, built from [`USER_ATTRS`], and the three
//!   meta-schemas every service provider lists at `/Schemas` (`Schema`, `ResourceType`,
//!   `ServiceProviderConfig`, as RFC 7643 §8.7.2 describes them);
//! * [`resource_types`] / [`resource_type`]: the one `User` resource type;
//! * [`service_provider_config`]: what Coffer supports.
//!
//! Every `meta.location` is `{base_url}/rest/scim/…`; `base_url` is the server's public URL
//! (a trailing `/` is ignored).
//!
//! [`Projection`] applies the `attributes` / `excludedAttributes` parameters to a User resource.

use serde_json::{json, Map, Value};

use crate::scim_schema::{
    attr, strip_user_urn, AttrDef, Kind, Mutability, Returned, USER_ATTRS, USER_SCHEMA,
};

/// The `Schema` meta-schema URN (RFC 7643 §7).
pub const SCHEMA_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:Schema";
/// The `ResourceType` meta-schema URN (RFC 7643 §6).
pub const RESOURCE_TYPE_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:ResourceType";
/// The `ServiceProviderConfig` meta-schema URN (RFC 7643 §5).
pub const SERVICE_PROVIDER_CONFIG_SCHEMA: &str =
    "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig";

/// Where SCIM is served, below the base URL.
const SCIM_PATH: &str = "/rest/scim";

/// The most resources one listing answers (the `count` bound of `GET /Users`).
const MAX_RESULTS: u64 = 1_000_000;

fn scim_url(base_url: &str, rest: &str) -> String {
    format!("{}{SCIM_PATH}{rest}", base_url.trim_end_matches('/'))
}

// ---------------------------------------------------------------------------------------------
// Schemas

/// One attribute definition as RFC 7643 §7 publishes it.
fn attr_json(def: &AttrDef) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), def.name.into());
    out.insert("type".into(), def.kind.as_str().into());
    out.insert("multiValued".into(), def.multi.into());
    out.insert("description".into(), def.description.into());
    out.insert("required".into(), def.required.into());
    out.insert("caseExact".into(), def.case_exact.into());
    out.insert("mutability".into(), def.mutability.as_str().into());
    out.insert("returned".into(), def.returned.as_str().into());
    out.insert("uniqueness".into(), def.uniqueness.as_str().into());
    if !def.canonical.is_empty() {
        out.insert("canonicalValues".into(), json!(def.canonical));
    }
    if !def.reference_types.is_empty() {
        out.insert("referenceTypes".into(), json!(def.reference_types));
    }
    if def.kind == Kind::Complex {
        out.insert(
            "subAttributes".into(),
            Value::Array(def.subs.iter().map(attr_json).collect()),
        );
    }
    Value::Object(out)
}

fn schema_resource(
    base_url: &str,
    id: &str,
    name: &str,
    description: &str,
    attributes: Vec<Value>,
) -> Value {
    json!({
        "schemas": [SCHEMA_SCHEMA],
        "id": id,
        "name": name,
        "description": description,
        "attributes": attributes,
        "meta": {
            "resourceType": "Schema",
            "location": scim_url(base_url, &format!("/Schemas/{id}")),
        },
    })
}

/// The Schema resource of the core User schema: every attribute of [`USER_ATTRS`] but the
/// common attributes `id` and `meta` (RFC 7643 §3.1), which schemas do not list.
pub fn user_schema(base_url: &str) -> Value {
    let attributes = USER_ATTRS
        .iter()
        .filter(|a| !is_common_attr(a.name))
        .map(attr_json)
        .collect();
    schema_resource(
        base_url,
        USER_SCHEMA,
        "User",
        "A Coffer user account.",
        attributes,
    )
}

fn is_common_attr(name: &str) -> bool {
    name == "id" || name == "meta"
}

/// An attribute of a meta-schema: read-only, returned by default, not unique.
const fn meta(name: &'static str, kind: Kind, description: &'static str) -> AttrDef {
    attr(name, description, kind).mutability(Mutability::ReadOnly)
}

const BOOL: Kind = Kind::Boolean;
const STRING: Kind = Kind::String;
const INTEGER: Kind = Kind::Integer;
const COMPLEX: Kind = Kind::Complex;
const REFERENCE: Kind = Kind::Reference;

/// The sub-attributes of a schema attribute definition, but `subAttributes` itself.
const ATTR_DEF_LEAVES: [AttrDef; 11] = [
    meta("name", STRING, "The attribute's name.")
        .required()
        .case_exact(),
    meta("type", STRING, "The attribute's data type.")
        .required()
        .canonical(&[
            "string",
            "complex",
            "boolean",
            "decimal",
            "integer",
            "dateTime",
            "reference",
            "binary",
        ]),
    meta(
        "multiValued",
        BOOL,
        "Whether the attribute holds several values.",
    )
    .required(),
    meta("description", STRING, "What the attribute holds."),
    meta("required", BOOL, "Whether the attribute must be given."),
    meta("canonicalValues", STRING, "The values the attribute takes.").multi(),
    meta(
        "caseExact",
        BOOL,
        "Whether string values compare with regard to case.",
    ),
    meta("mutability", STRING, "When the attribute may be written.").canonical(&[
        "readOnly",
        "readWrite",
        "immutable",
        "writeOnly",
    ]),
    meta("returned", STRING, "When the attribute is returned.")
        .canonical(&["always", "never", "default", "request"]),
    meta("uniqueness", STRING, "How the values are kept unique.")
        .canonical(&["none", "server", "global"]),
    meta(
        "referenceTypes",
        STRING,
        "What a reference attribute refers to.",
    )
    .multi(),
];

/// The sub-attributes of a schema attribute definition: the leaves, and `subAttributes` whose
/// own sub-attributes are the leaves again (complex attributes nest one level, RFC 7643 §2.3.8).
const ATTR_DEF_SUBS: [AttrDef; 12] = {
    let sub_attributes = meta(
        "subAttributes",
        COMPLEX,
        "The sub-attributes of a complex attribute.",
    )
    .multi()
    .subs(&ATTR_DEF_LEAVES);
    let mut subs = [sub_attributes; 12];
    let mut i = 0;
    while i < ATTR_DEF_LEAVES.len() {
        subs[i] = ATTR_DEF_LEAVES[i];
        i += 1;
    }
    subs
};

const SCHEMA_ATTRS: &[AttrDef] = &[
    meta("id", STRING, "The schema's URI.")
        .required()
        .case_exact(),
    meta("name", STRING, "The schema's name.").required(),
    meta("description", STRING, "What the schema describes."),
    meta("attributes", COMPLEX, "The attributes the schema defines.")
        .multi()
        .required()
        .subs(&ATTR_DEF_SUBS),
];

const SCHEMA_EXTENSION_SUBS: &[AttrDef] = &[
    meta("schema", REFERENCE, "The URI of the extension schema.")
        .required()
        .case_exact()
        .refs(&["uri"]),
    meta(
        "required",
        BOOL,
        "Whether a resource must carry the extension.",
    )
    .required(),
];

const RESOURCE_TYPE_ATTRS: &[AttrDef] = &[
    meta("id", STRING, "The resource type's id."),
    meta("name", STRING, "The resource type's name.").required(),
    meta("description", STRING, "What the resource type is."),
    meta(
        "endpoint",
        REFERENCE,
        "The endpoint, relative to the SCIM base URL.",
    )
    .required()
    .refs(&["uri"]),
    meta(
        "schema",
        REFERENCE,
        "The URI of the resource type's core schema.",
    )
    .required()
    .case_exact()
    .refs(&["uri"]),
    meta(
        "schemaExtensions",
        COMPLEX,
        "The extension schemas the resource type takes.",
    )
    .multi()
    .subs(SCHEMA_EXTENSION_SUBS),
];

const SUPPORTED: AttrDef = meta("supported", BOOL, "Whether the feature is supported.").required();

const AUTH_SCHEME_SUBS: &[AttrDef] = &[
    meta("type", STRING, "The kind of authentication.")
        .required()
        .canonical(&[
            "oauth",
            "oauth2",
            "oauthbearertoken",
            "httpbasic",
            "httpdigest",
        ]),
    meta("name", STRING, "The scheme's name.").required(),
    meta("description", STRING, "How the scheme works.").required(),
    meta("specUri", REFERENCE, "The scheme's specification.").refs(&["external"]),
    meta("documentationUri", REFERENCE, "The scheme's documentation.").refs(&["external"]),
    meta("primary", BOOL, "Whether this is the preferred scheme."),
];

const SERVICE_PROVIDER_CONFIG_ATTRS: &[AttrDef] = &[
    meta(
        "documentationUri",
        REFERENCE,
        "The service provider's help.",
    )
    .refs(&["external"]),
    meta("patch", COMPLEX, "PATCH support.")
        .required()
        .subs(&[SUPPORTED]),
    meta("bulk", COMPLEX, "Bulk operation support.")
        .required()
        .subs(&[
            SUPPORTED,
            meta(
                "maxOperations",
                INTEGER,
                "The most operations one request holds.",
            )
            .required(),
            meta("maxPayloadSize", INTEGER, "The largest request, in bytes.").required(),
        ]),
    meta("filter", COMPLEX, "Filter support.")
        .required()
        .subs(&[
            SUPPORTED,
            meta(
                "maxResults",
                INTEGER,
                "The most resources one answer holds.",
            )
            .required(),
        ]),
    meta("changePassword", COMPLEX, "Password change support.")
        .required()
        .subs(&[SUPPORTED]),
    meta("sort", COMPLEX, "Sorting support.")
        .required()
        .subs(&[SUPPORTED]),
    meta("etag", COMPLEX, "Entity tag support.")
        .required()
        .subs(&[SUPPORTED]),
    meta(
        "authenticationSchemes",
        COMPLEX,
        "How clients authenticate.",
    )
    .multi()
    .required()
    .subs(AUTH_SCHEME_SUBS),
];

fn meta_schema(
    base_url: &str,
    id: &str,
    name: &str,
    description: &str,
    attrs: &[AttrDef],
) -> Value {
    schema_resource(
        base_url,
        id,
        name,
        description,
        attrs.iter().map(attr_json).collect(),
    )
}

/// Every schema `/Schemas` lists: the User schema, then the `Schema`, `ResourceType` and
/// `ServiceProviderConfig` meta-schemas.
pub fn schemas(base_url: &str) -> Vec<Value> {
    vec![
        user_schema(base_url),
        meta_schema(
            base_url,
            SCHEMA_SCHEMA,
            "Schema",
            "Describes a schema and the attributes it defines.",
            SCHEMA_ATTRS,
        ),
        meta_schema(
            base_url,
            RESOURCE_TYPE_SCHEMA,
            "ResourceType",
            "Describes a kind of resource and where it is served.",
            RESOURCE_TYPE_ATTRS,
        ),
        meta_schema(
            base_url,
            SERVICE_PROVIDER_CONFIG_SCHEMA,
            "ServiceProviderConfig",
            "Describes the SCIM features the service provider supports.",
            SERVICE_PROVIDER_CONFIG_ATTRS,
        ),
    ]
}

/// The schema whose id is `id` (ignoring ASCII case), for `/Schemas/{id}`.
pub fn schema(base_url: &str, id: &str) -> Option<Value> {
    schemas(base_url)
        .into_iter()
        .find(|s| s["id"].as_str().is_some_and(|s| s.eq_ignore_ascii_case(id)))
}

// ---------------------------------------------------------------------------------------------
// Resource types and configuration

/// Every resource type `/ResourceTypes` lists: `User`.
pub fn resource_types(base_url: &str) -> Vec<Value> {
    vec![json!({
        "schemas": [RESOURCE_TYPE_SCHEMA],
        "id": "User",
        "name": "User",
        "endpoint": "/Users",
        "description": "Coffer user accounts.",
        "schema": USER_SCHEMA,
        "meta": {
            "resourceType": "ResourceType",
            "location": scim_url(base_url, "/ResourceTypes/User"),
        },
    })]
}

/// The resource type whose id is `id` (ignoring ASCII case), for `/ResourceTypes/{id}`.
pub fn resource_type(base_url: &str, id: &str) -> Option<Value> {
    resource_types(base_url)
        .into_iter()
        .find(|r| r["id"].as_str().is_some_and(|r| r.eq_ignore_ascii_case(id)))
}

/// The `/ServiceProviderConfig` document.
pub fn service_provider_config(base_url: &str) -> Value {
    json!({
        "schemas": [SERVICE_PROVIDER_CONFIG_SCHEMA],
        "patch": {"supported": true},
        "bulk": {"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": true, "maxResults": MAX_RESULTS},
        "changePassword": {"supported": true},
        "sort": {"supported": true},
        "etag": {"supported": true},
        "authenticationSchemes": [{
            "type": "oauthbearertoken",
            "name": "SCIM token",
            "description": "A bearer token made by the operator with cofferd scim-token create",
            "primary": true,
        }],
        "meta": {
            "resourceType": "ServiceProviderConfig",
            "location": scim_url(base_url, "/ServiceProviderConfig"),
        },
    })
}

// ---------------------------------------------------------------------------------------------
// Projection

/// An attribute path of `attributes` / `excludedAttributes`, resolved against [`USER_ATTRS`].
#[derive(Debug, Clone, Copy)]
struct Selected {
    attr: &'static AttrDef,
    sub: Option<&'static AttrDef>,
}

impl Selected {
    fn names(&self, attr: &AttrDef) -> bool {
        self.attr.name == attr.name
    }
}

#[derive(Debug, Clone, Default)]
enum Mode {
    #[default]
    Default,
    Include(Vec<Selected>),
    Exclude(Vec<Selected>),
}

/// Which attributes of a User resource an answer carries (RFC 7644 §3.4.2.5, §3.9), parsed by
/// [`parse_projection`] and applied by [`Projection::project`].
///
/// Whatever the lists say, `schemas` and the attributes returned `always` (`id`) are kept,
/// those returned `never` (`password`) are dropped, and those returned `request` appear only
/// when `attributes` names them. Keys of the resource that are not core User attributes are
/// kept unless `attributes` is given. A complex value that filtering empties (an `emails`
/// element with none of the named sub-attributes, say) is left out rather than answered as `{}`.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    mode: Mode,
}

/// Parses the `attributes` and `excludedAttributes` parameters: comma-separated attribute
/// paths `attr` or `attr.sub`, optionally prefixed by the core User URN and `:`, names ignoring
/// ASCII case. Blank entries are skipped, and a list of none is as if it were not given. The
/// name `schemas` is accepted (it is always returned anyway).
///
/// RFC 7644 §3.9 lets a client give only one of the two lists. Coffer does not refuse both:
/// `attributes` wins and `excludedAttributes` is ignored, though it is still checked.
///
/// An attribute or sub-attribute the User schema does not have is an error whose text names it
/// (answered as 400 `invalidValue`).
pub fn parse_projection(
    attributes: Option<&str>,
    excluded: Option<&str>,
) -> Result<Projection, String> {
    let include = attributes
        .map(|list| parse_list(list, "attributes"))
        .transpose()?
        .flatten();
    let exclude = excluded
        .map(|list| parse_list(list, "excludedAttributes"))
        .transpose()?
        .flatten();
    let mode = match (include, exclude) {
        (Some(paths), _) => Mode::Include(paths),
        (None, Some(paths)) => Mode::Exclude(paths),
        (None, None) => Mode::Default,
    };
    Ok(Projection { mode })
}

/// The paths of one list, or `None` when it names none.
fn parse_list(list: &str, param: &str) -> Result<Option<Vec<Selected>>, String> {
    let mut paths = Vec::new();
    let mut any = false;
    for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        any = true;
        if let Some(path) = parse_path(item, param)? {
            paths.push(path);
        }
    }
    Ok(any.then_some(paths))
}

/// One path; `None` for `schemas`.
fn parse_path(item: &str, param: &str) -> Result<Option<Selected>, String> {
    let path = strip_user_urn(item);
    if path.eq_ignore_ascii_case("schemas") {
        return Ok(None);
    }
    let (name, sub) = match path.split_once('.') {
        Some((name, sub)) => (name, Some(sub)),
        None => (path, None),
    };
    let attr = USER_ATTRS
        .iter()
        .find(|a| a.name.eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("{param}: unknown attribute \"{item}\""))?;
    let sub = match sub {
        None => None,
        Some(_) if attr.subs.is_empty() => {
            return Err(format!(
                "{param}: \"{}\" has no sub-attributes (\"{item}\")",
                attr.name
            ));
        }
        Some(sub) => Some(
            attr.sub(sub)
                .ok_or_else(|| format!("{param}: unknown sub-attribute \"{item}\""))?,
        ),
    };
    Ok(Some(Selected { attr, sub }))
}

impl Projection {
    /// `resource` with only the attributes this projection lets through (see [`Projection`]).
    /// Anything but a JSON object is answered unchanged.
    pub fn project(&self, resource: &Value) -> Value {
        let Value::Object(fields) = resource else {
            return resource.clone();
        };
        let mut out = Map::new();
        for (key, value) in fields {
            if key.eq_ignore_ascii_case("schemas") {
                out.insert(key.clone(), value.clone());
                continue;
            }
            let kept = match USER_ATTRS.iter().find(|a| a.name.eq_ignore_ascii_case(key)) {
                Some(attr) => self.project_attr(attr, value),
                None => (!matches!(self.mode, Mode::Include(_))).then(|| value.clone()),
            };
            if let Some(kept) = kept {
                out.insert(key.clone(), kept);
            }
        }
        Value::Object(out)
    }

    fn project_attr(&self, attr: &AttrDef, value: &Value) -> Option<Value> {
        match attr.returned {
            Returned::Never => return None,
            Returned::Always => return keep_subs(attr, value, returned_whole),
            Returned::Default | Returned::Request => {}
        }
        match &self.mode {
            Mode::Default => {
                if attr.returned == Returned::Request {
                    return None;
                }
                keep_subs(attr, value, returned_whole)
            }
            Mode::Include(paths) => {
                let mine: Vec<&Selected> = paths.iter().filter(|p| p.names(attr)).collect();
                if mine.is_empty() {
                    None
                } else if mine.iter().any(|p| p.sub.is_none()) {
                    keep_subs(attr, value, returned_whole)
                } else {
                    keep_subs(attr, value, |sub| {
                        let named = sub.is_some_and(|sub| {
                            mine.iter()
                                .any(|p| p.sub.is_some_and(|s| s.name == sub.name))
                        });
                        match sub.map(|sub| sub.returned) {
                            Some(Returned::Always) => true,
                            Some(Returned::Never) => false,
                            _ => named,
                        }
                    })
                }
            }
            Mode::Exclude(paths) => {
                if attr.returned == Returned::Request {
                    return None;
                }
                let mine: Vec<&Selected> = paths.iter().filter(|p| p.names(attr)).collect();
                if mine.iter().any(|p| p.sub.is_none()) {
                    return None;
                }
                keep_subs(attr, value, |sub| {
                    let excluded = sub.is_some_and(|sub| {
                        mine.iter()
                            .any(|p| p.sub.is_some_and(|s| s.name == sub.name))
                    });
                    let always = sub.is_some_and(|sub| sub.returned == Returned::Always);
                    always || (!excluded && returned_whole(sub))
                })
            }
        }
    }
}

/// Whether a sub-attribute (`None`: a key the schema does not define) is answered when its
/// attribute is answered without naming sub-attributes: all but the `never` and `request` ones.
fn returned_whole(sub: Option<&AttrDef>) -> bool {
    !matches!(
        sub.map(|s| s.returned),
        Some(Returned::Never | Returned::Request)
    )
}

/// `value` (an object, or an array of objects) of the complex attribute `attr` with only the
/// sub-attributes `keep` accepts; `None` when that empties a value that was not empty.
/// Values of simple attributes are answered unchanged.
fn keep_subs(
    attr: &AttrDef,
    value: &Value,
    keep: impl Fn(Option<&AttrDef>) -> bool,
) -> Option<Value> {
    if attr.subs.is_empty() {
        return Some(value.clone());
    }
    let filter_object = |fields: &Map<String, Value>| -> Option<Value> {
        let kept: Map<String, Value> = fields
            .iter()
            .filter(|(key, _)| keep(attr.sub(key)))
            .map(|(key, v)| (key.clone(), v.clone()))
            .collect();
        (!kept.is_empty() || fields.is_empty()).then_some(Value::Object(kept))
    };
    match value {
        Value::Object(fields) => filter_object(fields),
        Value::Array(items) => {
            let kept: Vec<Value> = items
                .iter()
                .filter_map(|item| match item {
                    Value::Object(fields) => filter_object(fields),
                    other => Some(other.clone()),
                })
                .collect();
            (!kept.is_empty() || items.is_empty()).then_some(Value::Array(kept))
        }
        other => Some(other.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "https://coffer.example.com/";

    fn attr<'a>(schema: &'a Value, name: &str) -> &'a Value {
        schema["attributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == name)
            .unwrap_or_else(|| panic!("no attribute {name}"))
    }

    fn names(list: &Value) -> Vec<&str> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|a| a["name"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn user_schema_is_built_from_user_attrs() {
        let s = user_schema(BASE);
        assert_eq!(s["schemas"], json!([SCHEMA_SCHEMA]));
        assert_eq!(s["id"], USER_SCHEMA);
        assert_eq!(s["name"], "User");
        assert_eq!(
            s["meta"],
            json!({
                "resourceType": "Schema",
                "location": "https://coffer.example.com/rest/scim/Schemas/urn:ietf:params:scim:schemas:core:2.0:User",
            })
        );
        let published: Vec<&str> = USER_ATTRS
            .iter()
            .map(|a| a.name)
            .filter(|n| *n != "id" && *n != "meta")
            .collect();
        assert_eq!(names(&s["attributes"]), published);

        let user_name = attr(&s, "userName");
        assert_eq!(
            *user_name,
            json!({
                "name": "userName",
                "type": "string",
                "multiValued": false,
                "description": "The name the user signs in with; unique.",
                "required": true,
                "caseExact": false,
                "mutability": "readWrite",
                "returned": "default",
                "uniqueness": "server",
            })
        );
        assert_eq!(
            attr(&s, "userType")["canonicalValues"],
            json!(["Standard", "Restricted"])
        );
        let password = attr(&s, "password");
        assert_eq!(password["mutability"], "writeOnly");
        assert_eq!(password["returned"], "never");
        let emails = attr(&s, "emails");
        assert_eq!(emails["type"], "complex");
        assert_eq!(emails["multiValued"], true);
        assert_eq!(
            names(&emails["subAttributes"]),
            ["value", "type", "primary"]
        );
        assert_eq!(
            emails["subAttributes"][1]["canonicalValues"],
            json!(["work"])
        );
        // Only complex attributes carry subAttributes, and none of them is a reference here.
        assert!(user_name.get("subAttributes").is_none());
        assert!(user_name.get("canonicalValues").is_none());
        assert!(user_name.get("referenceTypes").is_none());
    }

    #[test]
    fn references_carry_reference_types() {
        let meta = USER_ATTRS.iter().find(|a| a.name == "meta").unwrap();
        let published = attr_json(meta);
        let location = published["subAttributes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "location")
            .unwrap();
        assert_eq!(location["type"], "reference");
        assert_eq!(location["referenceTypes"], json!(["uri"]));
    }

    #[test]
    fn schemas_lists_user_then_the_meta_schemas() {
        let all = schemas(BASE);
        let ids: Vec<&str> = all.iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(
            ids,
            [
                USER_SCHEMA,
                SCHEMA_SCHEMA,
                RESOURCE_TYPE_SCHEMA,
                SERVICE_PROVIDER_CONFIG_SCHEMA
            ]
        );
        let schema_names: Vec<&str> = all.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(
            schema_names,
            ["User", "Schema", "ResourceType", "ServiceProviderConfig"]
        );
        for s in &all {
            assert_eq!(s["schemas"], json!([SCHEMA_SCHEMA]));
            assert_eq!(s["meta"]["resourceType"], "Schema");
            assert_eq!(
                s["meta"]["location"],
                format!(
                    "https://coffer.example.com/rest/scim/Schemas/{}",
                    s["id"].as_str().unwrap()
                )
            );
            assert!(!s["description"].as_str().unwrap().is_empty());
        }

        let meta = &all[1];
        assert_eq!(
            names(&meta["attributes"]),
            ["id", "name", "description", "attributes"]
        );
        let defs = attr(meta, "attributes");
        let subs = &defs["subAttributes"];
        assert_eq!(subs.as_array().unwrap().len(), 12);
        let nested = subs
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"] == "subAttributes")
            .unwrap();
        assert_eq!(nested["type"], "complex");
        assert_eq!(nested["subAttributes"].as_array().unwrap().len(), 11);
        assert!(nested["subAttributes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["type"] != "complex"));

        let rt = &all[2];
        assert_eq!(
            names(&rt["attributes"]),
            [
                "id",
                "name",
                "description",
                "endpoint",
                "schema",
                "schemaExtensions"
            ]
        );
        assert_eq!(attr(rt, "schema")["referenceTypes"], json!(["uri"]));

        let spc = &all[3];
        assert_eq!(
            names(&spc["attributes"]),
            [
                "documentationUri",
                "patch",
                "bulk",
                "filter",
                "changePassword",
                "sort",
                "etag",
                "authenticationSchemes"
            ]
        );
        assert_eq!(
            names(&attr(spc, "bulk")["subAttributes"]),
            ["supported", "maxOperations", "maxPayloadSize"]
        );
        assert_eq!(attr(spc, "filter")["subAttributes"][1]["type"], "integer");
    }

    #[test]
    fn schema_and_resource_type_by_id() {
        assert_eq!(schema(BASE, USER_SCHEMA), Some(user_schema(BASE)));
        assert_eq!(
            schema(BASE, "URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:SCHEMA").unwrap()["name"],
            "Schema"
        );
        assert!(schema(BASE, "User").is_none());
        assert!(schema(BASE, "urn:ietf:params:scim:schemas:core:2.0:Group").is_none());

        let rts = resource_types(BASE);
        assert_eq!(
            rts,
            [json!({
                "schemas": [RESOURCE_TYPE_SCHEMA],
                "id": "User",
                "name": "User",
                "endpoint": "/Users",
                "description": "Coffer user accounts.",
                "schema": USER_SCHEMA,
                "meta": {
                    "resourceType": "ResourceType",
                    "location": "https://coffer.example.com/rest/scim/ResourceTypes/User",
                },
            })]
        );
        assert_eq!(resource_type(BASE, "user"), Some(rts[0].clone()));
        assert!(resource_type(BASE, "Group").is_none());
    }

    #[test]
    fn service_provider_config_document() {
        let c = service_provider_config("https://coffer.example.com");
        assert_eq!(c["schemas"], json!([SERVICE_PROVIDER_CONFIG_SCHEMA]));
        assert_eq!(c["patch"], json!({"supported": true}));
        assert_eq!(
            c["bulk"],
            json!({"supported": false, "maxOperations": 0, "maxPayloadSize": 0})
        );
        assert_eq!(
            c["filter"],
            json!({"supported": true, "maxResults": 1_000_000})
        );
        assert_eq!(c["changePassword"], json!({"supported": true}));
        assert_eq!(c["sort"], json!({"supported": true}));
        assert_eq!(c["etag"], json!({"supported": true}));
        assert_eq!(c["authenticationSchemes"][0]["type"], "oauthbearertoken");
        assert_eq!(c["authenticationSchemes"][0]["primary"], true);
        assert_eq!(
            c["meta"],
            json!({
                "resourceType": "ServiceProviderConfig",
                "location": "https://coffer.example.com/rest/scim/ServiceProviderConfig",
            })
        );
        assert!(c.get("id").is_none());
    }

    fn user() -> Value {
        json!({
            "schemas": [USER_SCHEMA],
            "id": "6f1c2a4e-0000-4000-8000-000000000001",
            "externalId": "ext-1",
            "userName": "ada@example.com",
            "displayName": "Ada",
            "userType": "Standard",
            "active": true,
            "password": "hunter2",
            "emails": [{"value": "ada@example.com", "type": "work", "primary": true}],
            "phoneNumbers": [{"value": "+41790000000", "type": "mobile", "primary": true}],
            "meta": {
                "resourceType": "User",
                "created": "2024-01-01T00:00:00Z",
                "lastModified": "2024-01-02T00:00:00Z",
                "location": "https://coffer.example.com/rest/scim/Users/6f1c2a4e-0000-4000-8000-000000000001",
                "version": "W/\"3\"",
            },
        })
    }

    fn project(attributes: Option<&str>, excluded: Option<&str>) -> Value {
        parse_projection(attributes, excluded)
            .unwrap()
            .project(&user())
    }

    fn keys(v: &Value) -> Vec<&str> {
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(|k| k.as_str()).collect();
        keys.sort_unstable();
        keys
    }

    #[test]
    fn no_lists_only_drops_never_returned() {
        let mut expected = user();
        expected.as_object_mut().unwrap().remove("password");
        assert_eq!(project(None, None), expected);
        assert_eq!(project(Some(" , "), Some("")), expected);
        assert_eq!(Projection::default().project(&user()), expected);
    }

    #[test]
    fn attributes_keep_the_named_and_the_always_returned() {
        let out = project(Some("userName,displayName"), None);
        assert_eq!(keys(&out), ["displayName", "id", "schemas", "userName"]);
        assert_eq!(out["userName"], "ada@example.com");
        assert_eq!(out["schemas"], json!([USER_SCHEMA]));

        // Whole complex attributes, and password never, even when asked for.
        let out = project(Some("emails,password,schemas"), None);
        assert_eq!(keys(&out), ["emails", "id", "schemas"]);
        assert_eq!(out["emails"], user()["emails"]);
    }

    #[test]
    fn excluded_attributes_drop_the_named_but_never_the_always_returned() {
        let out = project(None, Some("emails, meta ,id,schemas,password"));
        assert_eq!(
            keys(&out),
            [
                "active",
                "displayName",
                "externalId",
                "id",
                "phoneNumbers",
                "schemas",
                "userName",
                "userType"
            ]
        );
    }

    #[test]
    fn sub_attributes_inside_arrays() {
        let out = project(Some("emails.value,phoneNumbers.type"), None);
        assert_eq!(keys(&out), ["emails", "id", "phoneNumbers", "schemas"]);
        assert_eq!(out["emails"], json!([{"value": "ada@example.com"}]));
        assert_eq!(out["phoneNumbers"], json!([{"type": "mobile"}]));

        let out = project(None, Some("emails.value,emails.primary"));
        assert_eq!(out["emails"], json!([{"type": "work"}]));
        assert_eq!(out["phoneNumbers"], user()["phoneNumbers"]);

        // Excluding every sub-attribute leaves nothing to answer.
        let out = project(None, Some("emails.value,emails.type,emails.primary"));
        assert!(out.get("emails").is_none());

        // The whole attribute named beside one of its sub-attributes wins.
        let out = project(Some("emails.value,emails"), None);
        assert_eq!(out["emails"], user()["emails"]);
    }

    #[test]
    fn meta_sub_attributes() {
        let out = project(Some("meta.created,meta.lastModified"), None);
        assert_eq!(keys(&out), ["id", "meta", "schemas"]);
        assert_eq!(
            out["meta"],
            json!({"created": "2024-01-01T00:00:00Z", "lastModified": "2024-01-02T00:00:00Z"})
        );
        let out = project(None, Some("meta.version,meta.location"));
        assert_eq!(
            keys(&out["meta"]),
            ["created", "lastModified", "resourceType"]
        );
    }

    #[test]
    fn urn_prefix_and_case() {
        let out = project(
            Some("urn:ietf:params:scim:schemas:core:2.0:User:USERNAME,URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:USER:emails.VALUE,Meta.Created"),
            None,
        );
        assert_eq!(keys(&out), ["emails", "id", "meta", "schemas", "userName"]);
        assert_eq!(out["emails"], json!([{"value": "ada@example.com"}]));
        assert_eq!(out["meta"], json!({"created": "2024-01-01T00:00:00Z"}));

        // The resource's own keys match ignoring case too; they keep their spelling.
        let odd = json!({"ID": "x", "Schemas": [USER_SCHEMA], "USERNAME": "a", "Emails": [{"Value": "a@b.c", "TYPE": "work"}], "Password": "p"});
        let out = parse_projection(Some("userName,emails.value"), None)
            .unwrap()
            .project(&odd);
        assert_eq!(
            out,
            json!({"ID": "x", "Schemas": [USER_SCHEMA], "USERNAME": "a", "Emails": [{"Value": "a@b.c"}]})
        );
        let out = parse_projection(None, Some("USERNAME,EMAILS.TYPE"))
            .unwrap()
            .project(&odd);
        assert_eq!(
            out,
            json!({"ID": "x", "Schemas": [USER_SCHEMA], "Emails": [{"Value": "a@b.c"}]})
        );
    }

    #[test]
    fn attributes_win_over_excluded_attributes() {
        let out = project(Some("userName"), Some("userName"));
        assert_eq!(keys(&out), ["id", "schemas", "userName"]);
        // ... but both lists are checked.
        assert!(parse_projection(Some("userName"), Some("nope")).is_err());
    }

    #[test]
    fn unknown_names_are_refused() {
        let err = parse_projection(Some("userName,nickName"), None).unwrap_err();
        assert!(err.contains("nickName"), "{err}");
        let err = parse_projection(None, Some("emails.display")).unwrap_err();
        assert!(err.contains("emails.display"), "{err}");
        assert!(err.starts_with("excludedAttributes"), "{err}");
        let err = parse_projection(Some("userName.first"), None).unwrap_err();
        assert!(err.contains("userName.first"), "{err}");
        let err = parse_projection(Some("emails.value.x"), None).unwrap_err();
        assert!(err.contains("emails.value.x"), "{err}");
        let enterprise =
            "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber";
        let err = parse_projection(Some(enterprise), None).unwrap_err();
        assert!(err.contains(enterprise), "{err}");
        assert!(
            parse_projection(Some("urn:ietf:params:scim:schemas:core:2.0:User:"), None).is_err()
        );
    }

    #[test]
    fn multi_byte_names_are_refused_not_a_panic() {
        // A character across the byte length of the User URN (once a worker panic), and
        // multi-byte text elsewhere in either list.
        let across = "urn:ietf:params:scim:schemas:core:2.0:Useé:userName";
        for list in [across, "ü", "userName.é", "é.value", "emails.välue,😀"] {
            let first = list.split(',').next().unwrap();
            for (a, x, param) in [
                (Some(list), None, "attributes"),
                (None, Some(list), "excludedAttributes"),
            ] {
                let err = parse_projection(a, x).unwrap_err();
                assert!(
                    err.starts_with(param) && err.contains(first),
                    "{list}: {err}"
                );
            }
        }
        let out = project(
            Some("urn:ietf:params:scim:schemas:core:2.0:User:userName"),
            None,
        );
        assert_eq!(keys(&out), ["id", "schemas", "userName"]);
    }

    #[test]
    fn keys_outside_the_schema() {
        let mut resource = user();
        resource["notify"] = json!(true);
        let out = parse_projection(None, Some("userName"))
            .unwrap()
            .project(&resource);
        assert_eq!(out["notify"], true);
        let out = parse_projection(Some("active"), None)
            .unwrap()
            .project(&resource);
        assert_eq!(keys(&out), ["active", "id", "schemas"]);
        // Not an object: unchanged.
        assert_eq!(Projection::default().project(&json!(3)), json!(3));
    }
}
