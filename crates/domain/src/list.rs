//! The list-query grammar every list endpoint shares: `offset`, `limit`, `orderBy`, the filter
//! suffixes, `id:in`, `partialSuccess`, `with`, `mode`, `returnEntity`.
//!
//! An endpoint describes what it accepts in a [`ListSpec`]; [`parse`] turns the raw query pairs
//! into a [`ListQuery`] or the catalogue error a client gets for them. Anything the spec does not
//! name is an unknown filter (400 `ERR_REQUEST_INVALID_FILTER`), so a typo never silently widens
//! a result.

use coffer_errors::{ApiError, ErrorCode};

/// A filter suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Contains,
    StartsWith,
    In,
    Gt,
    Gte,
    Lt,
    Lte,
}

impl Op {
    pub const ALL: [Op; 8] = [
        Op::Eq,
        Op::Contains,
        Op::StartsWith,
        Op::In,
        Op::Gt,
        Op::Gte,
        Op::Lt,
        Op::Lte,
    ];

    fn from_suffix(s: &str) -> Option<Op> {
        Some(match s {
            "eq" => Op::Eq,
            "contains" => Op::Contains,
            "startswith" => Op::StartsWith,
            "in" => Op::In,
            "gt" => Op::Gt,
            "gte" => Op::Gte,
            "lt" => Op::Lt,
            "lte" => Op::Lte,
            _ => return None,
        })
    }
}

/// The type of a filterable field, which decides how its values parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int,
    Bool,
}

/// One filterable field: its query name, its type and the suffixes it takes (a bare `name=v` is
/// `Eq` and is allowed whenever `Eq` is).
#[derive(Debug, Clone, Copy)]
pub struct FieldSpec {
    pub name: &'static str,
    pub kind: Kind,
    pub ops: &'static [Op],
}

/// What one list endpoint accepts.
#[derive(Debug, Clone, Copy)]
pub struct ListSpec {
    pub filters: &'static [FieldSpec],
    pub order_fields: &'static [&'static str],
    pub default_order: (&'static str, Dir),
    pub default_limit: i64,
    pub max_limit: i64,
    /// The names `with` may list.
    pub with_fields: &'static [&'static str],
    /// Other parameters the endpoint reads itself (e.g. `includeNested`).
    pub extra_params: &'static [&'static str],
    /// Whether `id:in` and `partialSuccess` apply.
    pub bulk: bool,
}

impl ListSpec {
    /// A spec for calls that take no list parameters at all (only `mode`, `with`, `returnEntity`).
    pub const PLAIN: ListSpec = ListSpec {
        filters: &[],
        order_fields: &[],
        default_order: ("id", Dir::Asc),
        default_limit: 100,
        max_limit: 10_000,
        with_fields: &[],
        extra_params: &[],
        bulk: false,
    };
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    Asc,
    Desc,
}

/// A filter value, typed by its field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Text(String),
    Int(i64),
    Bool(bool),
}

impl Value {
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub field: &'static str,
    pub op: Op,
    /// One value, or several for `In`.
    pub values: Vec<Value>,
}

impl Filter {
    pub fn value(&self) -> &Value {
        &self.values[0]
    }
}

/// Detail level of a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Full,
    FullWithLinks,
    FullNoLinks,
    Compact,
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        Some(match s {
            "full" => Mode::Full,
            "full_with_links" => Mode::FullWithLinks,
            "full_no_links" => Mode::FullNoLinks,
            "compact" => Mode::Compact,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub offset: i64,
    pub limit: i64,
    pub order: (&'static str, Dir),
    pub filters: Vec<Filter>,
    pub mode: Mode,
    pub with: Vec<String>,
    pub return_entity: bool,
    pub partial_success: bool,
    pub id_in: Option<Vec<String>>,
    /// The endpoint's own extra parameters, as given.
    pub extras: Vec<(String, String)>,
}

impl ListQuery {
    /// Whether links were asked for by `mode` (a body's `addLinks` is the other way).
    pub fn links(&self) -> bool {
        self.mode == Mode::FullWithLinks
    }

    pub fn extra(&self, name: &str) -> Option<&str> {
        self.extras
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parameters every `/rest` call may carry whatever its list spec says.
const ALWAYS: &[&str] = &["apiVersion"];

fn invalid_filter(detail: String) -> ApiError {
    ApiError::new(ErrorCode::RequestInvalidFilter)
        .with_message(format!("The filter is invalid: {detail}."))
}

/// Parses a boolean query value (`true`, `false`, `1`, `0`).
pub fn parse_bool(name: &str, v: &str) -> Result<bool, ApiError> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ApiError::field(ErrorCode::InputNotBoolean, name)),
    }
}

fn parse_int(name: &str, v: &str) -> Result<i64, ApiError> {
    v.parse::<i64>()
        .map_err(|_| ApiError::field(ErrorCode::InputNotInteger, name))
}

fn parse_value(field: &FieldSpec, raw: &str) -> Result<Value, ApiError> {
    match field.kind {
        Kind::Text => {
            if raw.len() > 1024 {
                return Err(invalid_filter(format!("`{}` is too long", field.name)));
            }
            Ok(Value::Text(raw.to_string()))
        }
        Kind::Int => raw
            .trim()
            .parse::<i64>()
            .map(Value::Int)
            .map_err(|_| invalid_filter(format!("`{}` takes integers", field.name))),
        Kind::Bool => match raw {
            "true" | "1" => Ok(Value::Bool(true)),
            "false" | "0" => Ok(Value::Bool(false)),
            _ => Err(invalid_filter(format!(
                "`{}` takes true or false",
                field.name
            ))),
        },
    }
}

/// Splits a comma-separated list, optionally wrapped in parentheses, dropping blanks.
pub fn split_list(v: &str) -> Vec<String> {
    let v = v.trim();
    let v = v
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or(v);
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Parses the query pairs of a list call against its spec.
pub fn parse(pairs: &[(String, String)], spec: &ListSpec) -> Result<ListQuery, ApiError> {
    let mut q = ListQuery {
        offset: 0,
        limit: spec.default_limit,
        order: spec.default_order,
        filters: Vec::new(),
        mode: Mode::Full,
        with: Vec::new(),
        return_entity: false,
        partial_success: false,
        id_in: None,
        extras: Vec::new(),
    };
    for (key, value) in pairs {
        // The one rule for text (`input::is_clean`): no query value with a control character
        // reaches a query of the database.
        if !crate::input::is_clean(value, false) {
            return Err(crate::input::unclean(key));
        }
        match key.as_str() {
            k if ALWAYS.contains(&k) => {}
            "offset" => {
                q.offset = parse_int("offset", value)?;
                if q.offset < 0 {
                    return Err(ApiError::field(ErrorCode::InputInvalidFormat, "offset"));
                }
            }
            "limit" => {
                let limit = value
                    .parse::<i64>()
                    .map_err(|_| ApiError::field(ErrorCode::InputInvalidFormat, "limit"))?;
                if limit < 1 || limit > spec.max_limit {
                    return Err(ApiError::field(ErrorCode::InputInvalidFormat, "limit")
                        .with_message(format!(
                            "The value has an invalid format (limit must be between 1 and {}).",
                            spec.max_limit
                        )));
                }
                q.limit = limit;
            }
            "orderBy" => q.order = parse_order(value, spec)?,
            "mode" => {
                q.mode = Mode::parse(value)
                    .ok_or_else(|| ApiError::field(ErrorCode::InputNotInList, "mode"))?
            }
            "with" => {
                for w in split_list(value) {
                    if !spec.with_fields.contains(&w.as_str()) {
                        return Err(ApiError::field(ErrorCode::InputNotInList, "with")
                            .with_message(format!(
                                "The value is not in the allowed list (with: {w})."
                            )));
                    }
                    q.with.push(w);
                }
            }
            "returnEntity" => q.return_entity = parse_bool("returnEntity", value)?,
            "partialSuccess" if spec.bulk => {
                q.partial_success = parse_bool("partialSuccess", value)?
            }
            "id:in" if spec.bulk => {
                let ids = split_list(value);
                if ids.is_empty() {
                    return Err(invalid_filter("`id:in` needs at least one id".into()));
                }
                if ids.len() > 1000 {
                    return Err(invalid_filter("`id:in` takes at most 1000 ids".into()));
                }
                q.id_in = Some(ids);
            }
            k if spec.extra_params.contains(&k) => q.extras.push((key.clone(), value.clone())),
            k => q.filters.push(parse_filter(k, value, spec)?),
        }
    }
    Ok(q)
}

fn parse_order(v: &str, spec: &ListSpec) -> Result<(&'static str, Dir), ApiError> {
    let (field, dir) = match v.split_once(':') {
        Some((f, "asc")) => (f, Dir::Asc),
        Some((f, "desc")) => (f, Dir::Desc),
        Some(_) => {
            return Err(invalid_filter(format!(
                "orderBy `{v}` must be <field>:asc or <field>:desc"
            )))
        }
        None => (v, Dir::Asc),
    };
    spec.order_fields
        .iter()
        .find(|f| **f == field)
        .map(|f| (*f, dir))
        .ok_or_else(|| invalid_filter(format!("cannot order by `{field}`")))
}

fn parse_filter(key: &str, value: &str, spec: &ListSpec) -> Result<Filter, ApiError> {
    let (name, op) = match key.split_once(':') {
        Some((n, suffix)) => {
            let op = Op::from_suffix(suffix)
                .ok_or_else(|| invalid_filter(format!("unknown suffix in `{key}`")))?;
            (n, op)
        }
        None => (key, Op::Eq),
    };
    let field = spec
        .filters
        .iter()
        .find(|f| f.name == name)
        .ok_or_else(|| invalid_filter(format!("unknown filter `{key}`")))?;
    if !field.ops.contains(&op) {
        return Err(invalid_filter(format!("`{key}` is not supported")));
    }
    let values = if op == Op::In {
        let items = split_list(value);
        if items.is_empty() || items.len() > 1000 {
            return Err(invalid_filter(format!("`{key}` takes 1 to 1000 values")));
        }
        items
            .iter()
            .map(|v| parse_value(field, v))
            .collect::<Result<Vec<_>, _>>()?
    } else {
        if matches!(op, Op::Contains | Op::StartsWith) && field.kind != Kind::Text {
            return Err(invalid_filter(format!("`{key}` is not supported")));
        }
        vec![parse_value(field, value)?]
    };
    Ok(Filter {
        field: field.name,
        op,
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: ListSpec = ListSpec {
        filters: &[
            FieldSpec {
                name: "name",
                kind: Kind::Text,
                ops: &[Op::Eq, Op::Contains, Op::StartsWith, Op::In],
            },
            FieldSpec {
                name: "size",
                kind: Kind::Int,
                ops: &Op::ALL,
            },
        ],
        order_fields: &["name", "id"],
        default_order: ("name", Dir::Asc),
        default_limit: 50,
        max_limit: 10_000,
        with_fields: &["links", "extra"],
        extra_params: &["includeNested"],
        bulk: true,
    };

    fn pairs(s: &[(&str, &str)]) -> Vec<(String, String)> {
        s.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn defaults() {
        let q = parse(&[], &SPEC).unwrap();
        assert_eq!((q.offset, q.limit, q.order), (0, 50, ("name", Dir::Asc)));
        assert_eq!(q.mode, Mode::Full);
    }

    #[test]
    fn every_suffix_parses() {
        for (k, op) in [
            ("size:eq", Op::Eq),
            ("size:gt", Op::Gt),
            ("size:gte", Op::Gte),
            ("size:lt", Op::Lt),
            ("size:lte", Op::Lte),
            ("size:in", Op::In),
            ("name:contains", Op::Contains),
            ("name:startswith", Op::StartsWith),
        ] {
            let v = if k.starts_with("size") { "3" } else { "a" };
            let q = parse(&pairs(&[(k, v)]), &SPEC).unwrap();
            assert_eq!(q.filters[0].op, op, "{k}");
        }
        let q = parse(&pairs(&[("name:in", "a,b, c")]), &SPEC).unwrap();
        assert_eq!(q.filters[0].values.len(), 3);
    }

    #[test]
    fn bad_filters_are_invalid_filter() {
        for (k, v) in [
            ("nope", "1"),
            ("name:like", "a"),
            ("size:contains", "1"),
            ("size", "x"),
            ("size:in", ""),
            ("orderBy", "size:asc"),
            ("orderBy", "name:up"),
        ] {
            let e = parse(&pairs(&[(k, v)]), &SPEC).unwrap_err();
            assert_eq!(e.code, ErrorCode::RequestInvalidFilter, "{k}={v}");
            assert_eq!(e.status, 400);
        }
    }

    #[test]
    fn limits_and_offsets() {
        for v in ["0", "10001", "-1", "x"] {
            let e = parse(&pairs(&[("limit", v)]), &SPEC).unwrap_err();
            assert_eq!(e.code, ErrorCode::InputInvalidFormat, "{v}");
            assert_eq!(e.status, 422);
        }
        assert_eq!(
            parse(&pairs(&[("limit", "10000")]), &SPEC).unwrap().limit,
            10000
        );
        assert_eq!(
            parse(&pairs(&[("offset", "-2")]), &SPEC).unwrap_err().code,
            ErrorCode::InputInvalidFormat
        );
        assert_eq!(
            parse(&pairs(&[("offset", "a")]), &SPEC).unwrap_err().code,
            ErrorCode::InputNotInteger
        );
    }

    #[test]
    fn mode_with_bulk_and_booleans() {
        let q = parse(
            &pairs(&[
                ("mode", "full_with_links"),
                ("with", "(links,extra)"),
                ("returnEntity", "true"),
                ("partialSuccess", "1"),
                ("id:in", "1,2,3"),
                ("includeNested", "true"),
                ("apiVersion", "28"),
            ]),
            &SPEC,
        )
        .unwrap();
        assert!(q.links() && q.return_entity && q.partial_success);
        assert_eq!(q.with, vec!["links", "extra"]);
        assert_eq!(q.id_in.clone().unwrap(), vec!["1", "2", "3"]);
        assert_eq!(q.extra("includeNested"), Some("true"));
        assert_eq!(
            parse(&pairs(&[("mode", "huge")]), &SPEC).unwrap_err().code,
            ErrorCode::InputNotInList
        );
        assert_eq!(
            parse(&pairs(&[("with", "nope")]), &SPEC).unwrap_err().code,
            ErrorCode::InputNotInList
        );
        assert_eq!(
            parse(&pairs(&[("returnEntity", "yes")]), &SPEC)
                .unwrap_err()
                .code,
            ErrorCode::InputNotBoolean
        );
        let no_bulk = ListSpec {
            bulk: false,
            ..SPEC
        };
        assert_eq!(
            parse(&pairs(&[("id:in", "1")]), &no_bulk).unwrap_err().code,
            ErrorCode::RequestInvalidFilter
        );
    }
}
