//! Typed JSON request bodies: [`Body<T>`] reads a body into the type that describes it in the
//! OpenAPI document, and checks it against that type's schema first, so what the document says
//! and what the server accepts cannot drift.
//!
//! The checks answer the error catalogue's codes naming the field, the same as
//! `coffer_domain::input::Fields` gives for the same input: `null` is the same as an absent
//! field; a required field (one the schema lists as required) that is absent, `null` or a blank
//! string answers `ERR_INPUT_REQUIRED`; a value of the wrong JSON type answers
//! `ERR_INPUT_NOT_STRING`, `ERR_INPUT_NOT_INTEGER`, `ERR_INPUT_NOT_BOOLEAN` or
//! `ERR_INPUT_NOT_ARRAY`; an integer below the schema's `minimum` answers `ERR_INPUT_MIN_VALUE`
//! (a `maximum` is left to the use case, which knows the code the interface gives), one that
//! does not fit a 32-bit field `ERR_INPUT_INVALID_FORMAT`; a string with a control character
//! answers `ERR_INPUT_INVALID_FORMAT` (line feed, carriage return and tab are admitted in the
//! fields a body lists in [`Input::MULTILINE`]).
//!
//! An integer or string outside the values the schema lists (`enum`) answers
//! `ERR_INPUT_NOT_IN_LIST`. The items of an array answer the code of their kind naming the array
//! (`ERR_INPUT_NOT_STRING` for a number in a list of strings); an item of an array of records
//! that is not an object answers `ERR_INPUT_INVALID_FORMAT` naming `list[i]`, and the records'
//! own fields the codes above naming `list[i].field`. What the schema leaves to the type (an item
//! of a named string type, a nested record) answers `ERR_INPUT_INVALID_FORMAT` naming the field,
//! or the array's item `list[i]`. An area whose interface gives other codes maps these in its
//! handler (the contact calls answer `ERR_INVALID_PARAMETER` for every field).
//!
//! A field the schema does not declare answers 422 `ERR_INPUT_ATTRIBUTE_FORBIDDEN` naming it, so
//! a client that misspells a field learns it instead of having the value dropped. Malformed JSON
//! answers 400 `ERR_REQUEST_INVALID_JSON` with the line and column where reading stopped.

use crate::plumbing::error::RestError;
use crate::plumbing::extract::{content_type, is_json, read_body, MAX_JSON_BODY};
use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest};
use coffer_domain::input::{is_clean, unclean};
use coffer_errors::{ApiError, ErrorCode};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use std::any::TypeId;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use utoipa::openapi::schema::{ArrayItems, KnownFormat, Schema, SchemaFormat, SchemaType, Type};
use utoipa::openapi::RefOr;
use utoipa::ToSchema;

/// A request body type: deserialized by serde, described by its schema.
pub trait Input: DeserializeOwned + ToSchema + 'static {
    /// The fields whose text may span lines.
    const MULTILINE: &'static [&'static str] = &[];
}

/// A JSON body read into `T` (see the module's comment for the checks). A body that cannot be
/// read or is not JSON fails the extraction; the checks' own answer is held until the handler
/// takes it (`let body = body?;`), because a handler's extractors run side by side and a caller
/// whose token is refused must get that 401, not the 422 of a body it had no right to send.
pub struct Body<T>(pub Result<T, RestError>);

impl<T: Input> FromRequest for Body<T> {
    type Error = RestError;
    type Future = Pin<Box<dyn Future<Output = Result<Self, RestError>>>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let mut payload = payload.take();
        let content_type = content_type(req);
        Box::pin(async move {
            let bytes = read_body(&mut payload, MAX_JSON_BODY).await?;
            let value = parse_json(&bytes, content_type.as_deref())?;
            Ok(Body(parse::<T>(value).map_err(RestError)))
        })
    }
}

/// The JSON value of a body: blank is `{}`; a body that is not JSON answers 400 saying where
/// reading stopped.
pub fn parse_json(bytes: &[u8], content_type: Option<&str>) -> Result<Value, RestError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    if !is_json(content_type) {
        return Err(RestError(
            ApiError::new(ErrorCode::RequestInvalidJson)
                .with_message("The request body must be JSON sent as application/json."),
        ));
    }
    serde_json::from_slice(bytes).map_err(|e| RestError(malformed(&e)))
}

/// 400 for JSON that does not parse, with the position where the parser stopped (never the
/// parser's own text, which may quote the input).
pub fn malformed(e: &serde_json::Error) -> ApiError {
    ApiError::new(ErrorCode::RequestInvalidJson).with_message(format!(
        "The request body is not valid JSON (line {}, column {}).",
        e.line(),
        e.column()
    ))
}

/// 422 for a field the body does not declare.
pub fn unknown_field(name: &str) -> ApiError {
    ApiError::field(ErrorCode::InputAttributeForbidden, name).with_message(format!(
        "The field {name} is not part of this request; check its name."
    ))
}

/// Checks `value` against `T`'s schema and reads it into `T`.
pub fn parse<T: Input>(value: Value) -> Result<T, ApiError> {
    let Value::Object(mut map) = value else {
        return Err(ApiError::new(ErrorCode::RequestInvalidJson)
            .with_message("The request body must be a JSON object."));
    };
    let shape = shape_of::<T>();
    if let Some(name) = map.keys().find(|k| !shape.fields.contains_key(k.as_str())) {
        return Err(unknown_field(name));
    }
    // `null` is the same as an absent field.
    map.retain(|_, v| !v.is_null());
    // The required fields first, in the order the type declares them, then the others.
    for name in &shape.required {
        match map.get(name) {
            None => return Err(ApiError::field(ErrorCode::InputRequired, name)),
            Some(Value::String(s)) if s.trim().is_empty() => {
                return Err(ApiError::field(ErrorCode::InputRequired, name))
            }
            Some(_) => {}
        }
        check::<T>(name, &map[name], &shape.fields[name])?;
    }
    for (name, value) in &map {
        if !shape.required.contains(name) {
            check::<T>(name, value, &shape.fields[name])?;
        }
    }
    // What the schema checked is what the type reads; what is left (nested records) is named by
    // the field it sits in.
    serde_json::from_value(Value::Object(map.clone())).map_err(|_| {
        let field = map
            .iter()
            .find(|(name, v)| refused_alone::<T>(name, v))
            .map_or_else(
                || "body".to_string(),
                |(name, v)| match v {
                    // An array: the first item refused alone.
                    Value::Array(items) => items
                        .iter()
                        .position(|item| {
                            refused_alone::<T>(name, &Value::Array(vec![item.clone()]))
                        })
                        .map_or_else(|| name.clone(), |i| format!("{name}[{i}]")),
                    _ => name.clone(),
                },
            );
        ApiError::field(ErrorCode::InputInvalidFormat, field)
    })
}

/// Whether `T` refuses a body of this one field for the field's own sake.
fn refused_alone<T: Input>(name: &str, value: &Value) -> bool {
    let mut one = Map::new();
    one.insert(name.to_string(), value.clone());
    serde_json::from_value::<T>(Value::Object(one)).is_err_and(|e| {
        // Only a missing top-level field means this one alone was fine; a field missing in a
        // record inside it is this one's fault.
        let shape = shape_of::<T>();
        let text = e.to_string();
        let missing = text
            .strip_prefix("missing field `")
            .and_then(|rest| rest.split('`').next());
        !missing.is_some_and(|m| shape.fields.contains_key(m))
    })
}

/// What a body's top-level field must be, from its schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Int32,
    Boolean,
    Array,
    /// A string, or a number (an id that older clients send as a number).
    TextOrNumber,
    /// Anything else (numbers, records, references): left to the type.
    Other,
}

/// A top-level field: its kind, the least value the schema allows, the values it lists
/// (`enum`) and, for an array, the kind of its items or their fields.
struct Field {
    kind: Kind,
    minimum: Option<f64>,
    allowed: Option<Vec<Value>>,
    items: Kind,
    /// The fields of the items of an array of records.
    record: Option<Box<Shape>>,
}

struct Shape {
    fields: BTreeMap<String, Field>,
    required: Vec<String>,
}

/// `T`'s fields and which are required, computed once per type.
fn shape_of<T: ToSchema + 'static>() -> Arc<Shape> {
    static CACHE: OnceLock<Mutex<HashMap<TypeId, Arc<Shape>>>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    cache
        .entry(TypeId::of::<T>())
        .or_insert_with(|| {
            let mut named = Vec::new();
            T::schemas(&mut named);
            let named: HashMap<String, RefOr<Schema>> = named.into_iter().collect();
            Arc::new(shape(&T::schema(), &named))
        })
        .clone()
}

fn shape(schema: &RefOr<Schema>, named: &HashMap<String, RefOr<Schema>>) -> Shape {
    let mut shape = Shape {
        fields: BTreeMap::new(),
        required: Vec::new(),
    };
    collect(schema, named, &mut shape);
    shape
}

fn collect(schema: &RefOr<Schema>, named: &HashMap<String, RefOr<Schema>>, shape: &mut Shape) {
    match schema {
        RefOr::T(Schema::Object(o)) => {
            for (name, s) in &o.properties {
                let (minimum, allowed) = match s {
                    RefOr::T(Schema::Object(p)) => {
                        (p.minimum.as_ref().and_then(number), p.enum_values.clone())
                    }
                    _ => (None, None),
                };
                let (items, record) = match s {
                    RefOr::T(Schema::Array(a)) => match &a.items {
                        ArrayItems::RefOrSchema(item) => {
                            (kind_of(item), record_of(item, named).map(Box::new))
                        }
                        ArrayItems::False => (Kind::Other, None),
                    },
                    _ => (Kind::Other, None),
                };
                let field = Field {
                    kind: kind_of(s),
                    minimum,
                    allowed,
                    items,
                    record,
                };
                shape.fields.insert(name.clone(), field);
            }
            shape.required.extend(o.required.iter().cloned());
        }
        RefOr::T(Schema::AllOf(all)) => {
            for s in &all.items {
                collect(s, named, shape);
            }
        }
        _ => {}
    }
}

/// The fields of an array's items when they are records (inline or a named schema).
fn record_of(item: &RefOr<Schema>, named: &HashMap<String, RefOr<Schema>>) -> Option<Shape> {
    let item = match item {
        RefOr::Ref(r) => named.get(r.ref_location.rsplit('/').next()?)?,
        t => t,
    };
    match item {
        // Records inside records are left to the type.
        RefOr::T(Schema::Object(o)) if !o.properties.is_empty() => {
            Some(shape(item, &HashMap::new()))
        }
        _ => None,
    }
}

fn kind_of(schema: &RefOr<Schema>) -> Kind {
    let types: Vec<&Type> = match schema {
        RefOr::T(Schema::Object(o)) => match &o.schema_type {
            SchemaType::Type(t) => vec![t],
            SchemaType::Array(ts) => ts.iter().collect(),
            SchemaType::AnyValue => return Kind::Other,
        },
        RefOr::T(Schema::Array(_)) => return Kind::Array,
        _ => return Kind::Other,
    };
    let int32 = matches!(
        schema,
        RefOr::T(Schema::Object(o)) if o.format == Some(SchemaFormat::KnownFormat(KnownFormat::Int32))
    );
    let mut named = types.iter().filter(|t| !matches!(t, Type::Null));
    if let (Some(Type::String), Some(Type::Number), None) =
        (named.next(), named.next(), named.next())
    {
        return Kind::TextOrNumber;
    }
    match types.iter().find(|t| !matches!(t, Type::Null)) {
        Some(Type::String) => Kind::String,
        Some(Type::Integer) if int32 => Kind::Int32,
        Some(Type::Integer) => Kind::Integer,
        Some(Type::Boolean) => Kind::Boolean,
        Some(Type::Array) => Kind::Array,
        _ => Kind::Other,
    }
}

fn number(n: &utoipa::Number) -> Option<f64> {
    match n {
        utoipa::Number::Int(i) => Some(*i as f64),
        utoipa::Number::UInt(u) => Some(*u as f64),
        utoipa::Number::Float(f) => Some(*f),
    }
}

fn check<T: Input>(name: &str, value: &Value, field: &Field) -> Result<(), ApiError> {
    check_kind(name, value, field, T::MULTILINE.contains(&name))?;
    if let Some(allowed) = &field.allowed {
        if !allowed.contains(value) {
            return Err(not_in_list(name, allowed));
        }
    }
    if let (Value::Array(items), Some(record)) = (value, &field.record) {
        for (i, item) in items.iter().enumerate() {
            check_record(&format!("{name}[{i}]"), item, record)?;
        }
    }
    if let Value::Array(items) = value {
        let wrong = |code| Err(ApiError::field(code, name));
        for item in items {
            match (field.items, item) {
                (Kind::String, Value::String(_))
                | (Kind::Boolean, Value::Bool(_))
                | (Kind::Other | Kind::Array | Kind::TextOrNumber, _) => {}
                (Kind::Integer | Kind::Int32, Value::Number(n)) if n.is_i64() => {}
                (Kind::String, _) => return wrong(ErrorCode::InputNotString),
                (Kind::Integer | Kind::Int32, _) => return wrong(ErrorCode::InputNotInteger),
                (Kind::Boolean, _) => return wrong(ErrorCode::InputNotBoolean),
            }
        }
    }
    Ok(())
}

/// 422 `ERR_INPUT_NOT_IN_LIST` for a value the schema's `enum` does not list, naming them.
fn not_in_list(name: &str, allowed: &[Value]) -> ApiError {
    let list: Vec<String> = allowed
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    ApiError::field(ErrorCode::InputNotInList, name).with_message(format!(
        "The value is not in the allowed list ({name}: {}).",
        list.join(", ")
    ))
}

/// An item of an array of records, named `list[i]`: an object whose required fields are there
/// and whose fields have their kinds (`list[i].field`); fields it does not declare are left to
/// the type. An item that is not an object answers `ERR_INPUT_INVALID_FORMAT` naming it.
fn check_record(at: &str, item: &Value, record: &Shape) -> Result<(), ApiError> {
    let Value::Object(map) = item else {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, at));
    };
    let present = |name: &str| map.get(name).filter(|v| !v.is_null());
    for name in &record.required {
        let sub = format!("{at}.{name}");
        match present(name) {
            None => return Err(ApiError::field(ErrorCode::InputRequired, sub)),
            Some(Value::String(s)) if s.trim().is_empty() => {
                return Err(ApiError::field(ErrorCode::InputRequired, sub))
            }
            Some(_) => {}
        }
    }
    for (name, field) in &record.fields {
        if let Some(v) = present(name) {
            check_kind(&format!("{at}.{name}"), v, field, false)?;
        }
    }
    Ok(())
}

fn check_kind(name: &str, value: &Value, field: &Field, multiline: bool) -> Result<(), ApiError> {
    let wrong = |code| Err(ApiError::field(code, name));
    let kind = field.kind;
    match (kind, value) {
        (Kind::String, Value::String(s)) if !is_clean(s, multiline) => Err(unclean(name)),
        (Kind::String, Value::String(_)) => Ok(()),
        (Kind::String, _) => wrong(ErrorCode::InputNotString),
        (Kind::Integer | Kind::Int32, Value::Number(n)) => match n.as_i64() {
            None => wrong(ErrorCode::InputNotInteger),
            Some(v) if field.minimum.is_some_and(|min| (v as f64) < min) => {
                wrong(ErrorCode::InputMinValue)
            }
            Some(v) if kind == Kind::Int32 && i32::try_from(v).is_err() => {
                wrong(ErrorCode::InputInvalidFormat)
            }
            Some(_) => Ok(()),
        },
        (Kind::Integer | Kind::Int32, _) => wrong(ErrorCode::InputNotInteger),
        (Kind::Boolean, Value::Bool(_)) => Ok(()),
        (Kind::Boolean, _) => wrong(ErrorCode::InputNotBoolean),
        (Kind::Array, Value::Array(_)) => Ok(()),
        (Kind::Array, _) => wrong(ErrorCode::InputNotArray),
        (Kind::TextOrNumber, Value::String(s)) if !is_clean(s, multiline) => Err(unclean(name)),
        (Kind::TextOrNumber, Value::String(_) | Value::Number(_)) => Ok(()),
        (Kind::TextOrNumber, _) => wrong(ErrorCode::InputNotString),
        (Kind::Other, _) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, ToSchema, Debug)]
    #[serde(rename_all = "camelCase")]
    struct Sample {
        name: String,
        note: Option<String>,
        #[allow(dead_code)]
        #[schema(minimum = 1)]
        count: Option<i32>,
        #[allow(dead_code)]
        big: Option<i64>,
        #[allow(dead_code)]
        on: Option<bool>,
        #[allow(dead_code)]
        tags: Option<Vec<String>>,
        #[allow(dead_code)]
        nested: Option<Nested>,
    }

    #[derive(Deserialize, ToSchema, Debug)]
    struct Nested {
        #[allow(dead_code)]
        id: i64,
    }

    impl Input for Sample {
        const MULTILINE: &'static [&'static str] = &["note"];
    }

    fn code(v: Value) -> (ErrorCode, Option<String>) {
        let e = parse::<Sample>(v).unwrap_err();
        (e.code, e.field)
    }

    #[test]
    fn reads_a_valid_body() {
        let s = parse::<Sample>(json!({"name": "a", "note": "x\ny", "count": null})).unwrap();
        assert_eq!(s.name, "a");
        assert_eq!(s.note.as_deref(), Some("x\ny"));
    }

    #[test]
    fn catalogue_codes_name_the_field() {
        let f = |s: &str| Some(s.to_string());
        assert_eq!(code(json!({})), (ErrorCode::InputRequired, f("name")));
        assert_eq!(
            code(json!({"name": null})),
            (ErrorCode::InputRequired, f("name"))
        );
        assert_eq!(
            code(json!({"name": " "})),
            (ErrorCode::InputRequired, f("name"))
        );
        assert_eq!(
            code(json!({"name": 1})),
            (ErrorCode::InputNotString, f("name"))
        );
        assert_eq!(
            code(json!({"name": "a\nb"})),
            (ErrorCode::InputInvalidFormat, f("name"))
        );
        assert_eq!(
            code(json!({"name": "a", "note": "\u{0}"})),
            (ErrorCode::InputInvalidFormat, f("note"))
        );
        assert_eq!(
            code(json!({"name": "a", "count": "1"})),
            (ErrorCode::InputNotInteger, f("count"))
        );
        assert_eq!(
            code(json!({"name": "a", "count": 1.5})),
            (ErrorCode::InputNotInteger, f("count"))
        );
        assert_eq!(
            code(json!({"name": "a", "count": 1u64 << 40})),
            (ErrorCode::InputInvalidFormat, f("count"))
        );
        assert_eq!(
            code(json!({"name": "a", "count": 0})),
            (ErrorCode::InputMinValue, f("count"))
        );
        assert!(parse::<Sample>(json!({"name": "a", "big": 1u64 << 40})).is_ok());
        assert_eq!(
            code(json!({"name": "a", "on": "yes"})),
            (ErrorCode::InputNotBoolean, f("on"))
        );
        assert_eq!(
            code(json!({"name": "a", "tags": "x"})),
            (ErrorCode::InputNotArray, f("tags"))
        );
        assert_eq!(
            code(json!({"name": "a", "nested": {"id": "x"}})),
            (ErrorCode::InputInvalidFormat, f("nested"))
        );
        assert_eq!(
            code(json!({"name": "a", "attachments": []})),
            (ErrorCode::InputAttributeForbidden, f("attachments"))
        );
        assert_eq!(
            parse::<Sample>(json!([])).unwrap_err().code,
            ErrorCode::RequestInvalidJson
        );
    }

    #[derive(Deserialize, ToSchema, Debug)]
    #[serde(rename_all = "camelCase")]
    struct Listed {
        #[allow(dead_code)]
        #[schema(schema_with = flag)]
        flag: Option<i64>,
        #[allow(dead_code)]
        ids: Option<Vec<String>>,
        #[allow(dead_code)]
        rows: Option<Vec<Row>>,
    }

    #[derive(Deserialize, ToSchema, Debug)]
    struct Row {
        #[allow(dead_code)]
        id: String,
        #[allow(dead_code)]
        on: bool,
    }

    impl Input for Listed {}

    fn flag() -> utoipa::openapi::Object {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(Type::Integer)
            .enum_values(Some([0, 1]))
            .build()
    }

    #[test]
    fn listed_values_items_and_records() {
        let code = |v: Value| {
            let e = parse::<Listed>(v).unwrap_err();
            (e.code, e.field.unwrap_or_default())
        };
        let f = |c, s: &str| (c, s.to_string());
        assert!(parse::<Listed>(
            json!({"flag": 1, "ids": ["a"], "rows": [{"id": "x", "on": true}]})
        )
        .is_ok());
        assert_eq!(
            code(json!({"flag": 2})),
            f(ErrorCode::InputNotInList, "flag")
        );
        assert_eq!(
            code(json!({"flag": -1})),
            f(ErrorCode::InputNotInList, "flag")
        );
        assert_eq!(
            code(json!({"flag": "1"})),
            f(ErrorCode::InputNotInteger, "flag")
        );
        assert_eq!(
            code(json!({"ids": ["a", 5]})),
            f(ErrorCode::InputNotString, "ids")
        );
        assert_eq!(
            code(json!({"rows": [1]})),
            f(ErrorCode::InputInvalidFormat, "rows[0]")
        );
        assert_eq!(
            code(json!({"rows": [{"id": "x", "on": true}, {"on": true}]})),
            f(ErrorCode::InputRequired, "rows[1].id")
        );
        assert_eq!(
            code(json!({"rows": [{"id": " ", "on": true}]})),
            f(ErrorCode::InputRequired, "rows[0].id")
        );
        assert_eq!(
            code(json!({"rows": [{"id": 3, "on": true}]})),
            f(ErrorCode::InputNotString, "rows[0].id")
        );
        assert_eq!(
            code(json!({"rows": [{"id": "a\u{0}", "on": true}]})),
            f(ErrorCode::InputInvalidFormat, "rows[0].id")
        );
        assert_eq!(
            code(json!({"rows": [{"id": "x", "on": "yes"}]})),
            f(ErrorCode::InputNotBoolean, "rows[0].on")
        );
    }

    #[test]
    fn malformed_json_says_where() {
        let e = parse_json(b"{\n  \"a\": 1,\n  oops}", None).unwrap_err().0;
        assert_eq!(e.code, ErrorCode::RequestInvalidJson);
        assert!(e.message.contains("line 3"), "{}", e.message);
    }
}
