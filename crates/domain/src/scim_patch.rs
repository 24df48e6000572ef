//! SCIM PATCH (RFC 7644 §3.5.2) on a `User` resource: a pure function from the current
//! resource and a `PatchOp` body to the patched resource.
//!
//! The result is not validated here beyond the shape of the operations: the caller validates
//! the whole patched resource exactly as it would the body of a PUT, so a PATCH can never
//! produce a user that a PUT could not. That is why values are taken as given (Azure AD's
//! `"value": "False"` for `active` is set as that string; the caller coerces or refuses it).
//!
//! # Semantics
//!
//! - Paths are `attr`, `attr.sub`, `attr[filter]` and `attr[filter].sub`, optionally after the
//!   core User URN and ':'; names resolve against [`USER_ATTRS`] ignoring case and the output
//!   uses their canonical spelling. Keys of the resource and of given values that name a known
//!   attribute or sub-attribute in another case are renamed to the canonical spelling, and a
//!   single value of a multi-valued attribute is made a one-element array.
//! - `add` appends to multi-valued attributes (skipping an element equal to one already
//!   there), sets single-valued ones and merges into complex ones; `replace` replaces
//!   multi-valued attributes whole and otherwise behaves as `add`; `remove` removes, and
//!   removing what is absent is no error. An `attr.sub` on a multi-valued attribute that has no
//!   element yet, with `add` or `replace`, creates the element (RFC 7644 §3.5.2.3: a replace of
//!   a missing target is an add).
//! - `replace` with a `null` value removes the target: RFC 7643 §2.5 makes null and unassigned
//!   the same state. `add` with `null` is refused.
//! - An element that an operation marks `primary` makes the other elements lose `primary`
//!   (RFC 7643 §2.4); when an operation marks several, the last one wins.
//! - The operations apply in order to one copy of the resource; the first failure fails the
//!   whole PATCH, and its detail names the operation (1-based).

use std::borrow::Cow;
use std::fmt;

use serde_json::{Map, Value as Json};

use crate::scim_filter::{self, Filter, PatchPath};
use crate::scim_schema::{AttrDef, Mutability, PATCH_OP, USER_ATTRS, USER_SCHEMA};

/// The most operations one PATCH may carry.
pub const MAX_OPERATIONS: usize = 1000;
/// The longest `path` accepted, in characters.
pub const MAX_PATH_LEN: usize = 1024;

const INVALID_SYNTAX: &str = "invalidSyntax";
const INVALID_PATH: &str = "invalidPath";
const NO_TARGET: &str = "noTarget";
const INVALID_VALUE: &str = "invalidValue";
const MUTABILITY: &str = "mutability";

/// Why a PATCH was refused: the SCIM `scimType` (`invalidSyntax`, `invalidPath`, `noTarget`,
/// `invalidValue` or `mutability`) and a client-facing detail naming the problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchError {
    pub scim_type: &'static str,
    pub detail: String,
}

impl PatchError {
    fn new(scim_type: &'static str, detail: impl Into<String>) -> PatchError {
        PatchError {
            scim_type,
            detail: detail.into(),
        }
    }

    fn in_operation(mut self, index: usize) -> PatchError {
        self.detail = format!("operation {}: {}", index + 1, self.detail);
        self
    }
}

impl fmt::Display for PatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.scim_type, self.detail)
    }
}

impl std::error::Error for PatchError {}

fn syntax(detail: impl Into<String>) -> PatchError {
    PatchError::new(INVALID_SYNTAX, detail)
}
fn invalid_path(detail: impl Into<String>) -> PatchError {
    PatchError::new(INVALID_PATH, detail)
}
fn invalid_value(detail: impl Into<String>) -> PatchError {
    PatchError::new(INVALID_VALUE, detail)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Remove,
    Replace,
}

impl Op {
    fn parse(word: &str) -> Option<Op> {
        [Op::Add, Op::Remove, Op::Replace]
            .into_iter()
            .find(|op| op.as_str().eq_ignore_ascii_case(word))
    }

    fn as_str(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Remove => "remove",
            Op::Replace => "replace",
        }
    }
}

/// One entry of `Operations`, borrowed from the body.
struct Operation<'a> {
    op: Op,
    path: Option<&'a str>,
    value: Option<&'a Json>,
}

/// A path resolved against the User schema.
struct Target<'p> {
    def: &'static AttrDef,
    sub: Option<&'static AttrDef>,
    filter: Option<Filter>,
    /// The path as the client wrote it, for messages.
    text: &'p str,
}

/// Applies the `PatchOp` message `patch` to `resource` (a User as JSON) and returns the patched
/// resource. A `resource` that is not an object is taken as an empty one.
pub fn apply(resource: &Json, patch: &Json) -> Result<Json, PatchError> {
    let operations = operations(patch)?;
    let mut user = match resource {
        Json::Object(map) => map.clone(),
        _ => Map::new(),
    };
    canonicalize_resource(&mut user);
    for (i, raw) in operations.iter().enumerate() {
        operation(raw)
            .and_then(|op| apply_one(&mut user, &op))
            .map_err(|e| e.in_operation(i))?;
    }
    Ok(Json::Object(user))
}

fn get_ci<'a>(map: &'a Map<String, Json>, key: &str) -> Option<&'a Json> {
    map.get(key).or_else(|| {
        map.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

/// Echoes of client input in messages are bounded.
fn clip(s: &str) -> Cow<'_, str> {
    const MAX: usize = 64;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => Cow::Owned(format!("{}…", &s[..cut])),
        None => Cow::Borrowed(s),
    }
}

/// The `Operations` array of a well-formed `PatchOp` body.
fn operations(patch: &Json) -> Result<&Vec<Json>, PatchError> {
    let Json::Object(body) = patch else {
        return Err(syntax("the body must be a JSON object (a PatchOp message)"));
    };
    let is_patch_op = get_ci(body, "schemas")
        .and_then(Json::as_array)
        .is_some_and(|schemas| {
            schemas
                .iter()
                .any(|s| s.as_str().is_some_and(|s| s.eq_ignore_ascii_case(PATCH_OP)))
        });
    if !is_patch_op {
        return Err(syntax(format!(
            "'schemas' must be an array holding {PATCH_OP}"
        )));
    }
    let operations = match get_ci(body, "Operations") {
        None => return Err(syntax("'Operations' is missing")),
        Some(Json::Array(ops)) => ops,
        Some(_) => return Err(syntax("'Operations' must be an array")),
    };
    if operations.is_empty() {
        return Err(syntax("'Operations' is empty"));
    }
    if operations.len() > MAX_OPERATIONS {
        return Err(syntax(format!(
            "too many operations ({}; at most {MAX_OPERATIONS})",
            operations.len()
        )));
    }
    Ok(operations)
}

fn operation(raw: &Json) -> Result<Operation<'_>, PatchError> {
    let Json::Object(obj) = raw else {
        return Err(syntax("an operation must be a JSON object"));
    };
    let op = match get_ci(obj, "op") {
        None => return Err(syntax("'op' is missing")),
        Some(Json::String(word)) => Op::parse(word).ok_or_else(|| {
            syntax(format!(
                "unknown op '{}' (expected add, remove or replace)",
                clip(word)
            ))
        })?,
        Some(_) => return Err(syntax("'op' must be a string")),
    };
    let path = match get_ci(obj, "path") {
        None | Some(Json::Null) => None,
        Some(Json::String(path)) => Some(path.as_str()),
        Some(_) => return Err(syntax("'path' must be a string")),
    };
    Ok(Operation {
        op,
        path,
        value: get_ci(obj, "value"),
    })
}

fn apply_one(user: &mut Map<String, Json>, op: &Operation<'_>) -> Result<(), PatchError> {
    let name = op.op.as_str();
    match (op.op, op.path) {
        (Op::Remove, None) => Err(PatchError::new(NO_TARGET, "remove needs a 'path'")),
        (Op::Remove, Some(path)) => {
            remove(user, &resolve(path)?);
            Ok(())
        }
        (_, Some(path)) => {
            let target = resolve(path)?;
            let value = op
                .value
                .ok_or_else(|| invalid_value(format!("{name} needs a 'value'")))?;
            set(user, op.op, &target, value)
        }
        (_, None) => {
            let Some(Json::Object(attrs)) = op.value else {
                return Err(invalid_value(format!(
                    "{name} without a 'path' needs a 'value' that is an object of attributes"
                )));
            };
            for (key, value) in attrs {
                if key.eq_ignore_ascii_case(USER_SCHEMA) {
                    let Json::Object(inner) = value else {
                        return Err(invalid_value(format!(
                            "the value of '{USER_SCHEMA}' must be an object of attributes"
                        )));
                    };
                    for (key, value) in inner {
                        set_key(user, op.op, key, value)?;
                    }
                } else {
                    set_key(user, op.op, key, value)?;
                }
            }
            Ok(())
        }
    }
}

/// `add`/`replace` of one attribute of a path-less operation's value.
fn set_key(
    user: &mut Map<String, Json>,
    op: Op,
    key: &str,
    value: &Json,
) -> Result<(), PatchError> {
    let target = resolve(key)?;
    if target.filter.is_some() {
        return Err(invalid_path(format!(
            "the attribute name '{}' cannot hold a filter",
            clip(key)
        )));
    }
    set(user, op, &target, value)
}

/// Parses `path` and resolves it against the User schema.
fn resolve(text: &str) -> Result<Target<'_>, PatchError> {
    if text.chars().nth(MAX_PATH_LEN).is_some() {
        return Err(invalid_path(format!(
            "path is too long (at most {MAX_PATH_LEN} characters)"
        )));
    }
    let PatchPath { path, filter } = scim_filter::parse_patch_path(text)
        .map_err(|e| invalid_path(format!("invalid path '{}': {}", clip(text), e.detail)))?;
    if let Some(uri) = &path.uri {
        if !uri.eq_ignore_ascii_case(USER_SCHEMA) {
            return Err(invalid_path(format!(
                "unknown schema '{}' in path '{}' (only {USER_SCHEMA} is served)",
                clip(uri),
                clip(text)
            )));
        }
    }
    if path.attr.eq_ignore_ascii_case("schemas") {
        return Err(invalid_path("'schemas' cannot be patched"));
    }
    let def = USER_ATTRS
        .iter()
        .find(|a| a.name.eq_ignore_ascii_case(&path.attr))
        .ok_or_else(|| {
            invalid_path(format!(
                "unknown attribute '{}' in path '{}'",
                clip(&path.attr),
                clip(text)
            ))
        })?;
    let sub = match &path.sub {
        None => None,
        Some(_) if def.subs.is_empty() => {
            return Err(invalid_path(format!(
                "'{}' has no sub-attributes (path '{}')",
                def.name,
                clip(text)
            )))
        }
        Some(sub) => Some(def.sub(sub).ok_or_else(|| {
            invalid_path(format!(
                "unknown sub-attribute '{}' of '{}'",
                clip(sub),
                def.name
            ))
        })?),
    };
    if let Some(filter) = &filter {
        if !def.multi {
            return Err(invalid_path(format!(
                "'{}' is single-valued, so it takes no filter",
                def.name
            )));
        }
        check_filter(def, filter)?;
    }
    if def.mutability == Mutability::ReadOnly {
        return Err(PatchError::new(
            MUTABILITY,
            format!("'{}' is read-only", def.name),
        ));
    }
    if let Some(sub) = sub.filter(|s| s.mutability == Mutability::ReadOnly) {
        return Err(PatchError::new(
            MUTABILITY,
            format!("'{}.{}' is read-only", def.name, sub.name),
        ));
    }
    Ok(Target {
        def,
        sub,
        filter,
        text,
    })
}

/// Every attribute a value filter names must be a sub-attribute of `def`.
fn check_filter(def: &AttrDef, filter: &Filter) -> Result<(), PatchError> {
    let unknown = |name: &str| {
        invalid_path(format!(
            "unknown sub-attribute '{}' of '{}' in the filter",
            clip(name),
            def.name
        ))
    };
    match filter {
        Filter::And(a, b) | Filter::Or(a, b) => {
            check_filter(def, a)?;
            check_filter(def, b)
        }
        Filter::Not(f) => check_filter(def, f),
        Filter::Compare { path, .. } | Filter::Present(path) => match def.sub(&path.attr) {
            Some(_) => Ok(()),
            None => Err(unknown(&path.attr)),
        },
        // The parser refuses a value path inside a value path.
        Filter::ValuePath { path, .. } => Err(unknown(&path.attr)),
    }
}

// ---------------------------------------------------------------------------------------------
// Canonical shape

/// Renames the keys of `map` that name one of `defs` in another case to the canonical name;
/// when both spellings are present, the canonical one's value is kept.
fn canonical_keys(map: &mut Map<String, Json>, defs: &'static [AttrDef]) {
    let renames: Vec<(String, &'static str)> = map
        .keys()
        .filter_map(|k| {
            defs.iter()
                .find(|d| d.name != k && d.name.eq_ignore_ascii_case(k))
                .map(|d| (k.clone(), d.name))
        })
        .collect();
    for (key, name) in renames {
        if let Some(value) = map.remove(&key) {
            map.entry(name).or_insert(value);
        }
    }
}

/// Gives the sub-attribute keys of a value of `def` (an object, or an array of them) their
/// canonical names.
fn canonical_value(def: &AttrDef, value: &mut Json) {
    if def.subs.is_empty() {
        return;
    }
    match value {
        Json::Object(map) => canonical_keys(map, def.subs),
        Json::Array(items) => {
            for item in items {
                if let Json::Object(map) = item {
                    canonical_keys(map, def.subs);
                }
            }
        }
        _ => {}
    }
}

/// Canonical names throughout the resource, and arrays for multi-valued attributes.
fn canonicalize_resource(user: &mut Map<String, Json>) {
    canonical_keys(user, USER_ATTRS);
    for def in USER_ATTRS {
        if let Some(value) = user.get_mut(def.name) {
            if def.multi && !value.is_array() && !value.is_null() {
                let one = value.take();
                *value = Json::Array(vec![one]);
            }
            canonical_value(def, value);
        }
    }
}

/// The elements of the multi-valued attribute `name`, made an empty array when absent.
fn elements_mut<'a>(user: &'a mut Map<String, Json>, name: &'static str) -> &'a mut Vec<Json> {
    let slot = user.entry(name).or_insert(Json::Null);
    if !slot.is_array() {
        // `canonicalize_resource` wrapped any single value, so this was null or absent.
        *slot = Json::Array(Vec::new());
    }
    match slot {
        Json::Array(items) => items,
        _ => unreachable!("the slot was just made an array"),
    }
}

/// The existing elements of the multi-valued attribute `name`, if any.
fn existing_mut<'a>(user: &'a mut Map<String, Json>, name: &str) -> Option<&'a mut Vec<Json>> {
    match user.get_mut(name) {
        Some(Json::Array(items)) => Some(items),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Primary

/// Whether a `primary` value means true; a string `"True"` counts, since the caller coerces
/// strings the way Azure AD sends them.
fn is_true(value: &Json) -> bool {
    match value {
        Json::Bool(b) => *b,
        Json::String(s) => s.eq_ignore_ascii_case("true"),
        _ => false,
    }
}

fn is_primary(element: &Json) -> bool {
    element.get("primary").is_some_and(is_true)
}

/// Takes `primary` away from every element but `winner` (RFC 7643 §2.4: at most one primary).
fn keep_one_primary(items: &mut [Json], winner: Option<usize>) {
    let Some(winner) = winner else {
        return;
    };
    for (i, item) in items.iter_mut().enumerate() {
        if i != winner && is_primary(item) {
            if let Some(map) = item.as_object_mut() {
                map.remove("primary");
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Operations

/// `add` or `replace` of `value` at `target`.
fn set(
    user: &mut Map<String, Json>,
    op: Op,
    target: &Target<'_>,
    value: &Json,
) -> Result<(), PatchError> {
    if value.is_null() {
        if op == Op::Replace {
            remove(user, target);
            return Ok(());
        }
        return Err(invalid_value(format!(
            "add cannot set '{}' to null (use remove)",
            clip(target.text)
        )));
    }
    let def = target.def;
    match (&target.filter, target.sub) {
        (None, None) => set_attr(user, op, def, value),
        (None, Some(sub)) => set_sub_everywhere(user, def, sub, value),
        (Some(filter), None) => set_matching(user, op, target, filter, value)?,
        (Some(filter), Some(sub)) => {
            // A target that does not exist yet is added (RFC 7644 §3.5.2.1, §3.5.2.3) when the
            // filter says what the new element is: `phoneNumbers[type eq "mobile"].value`,
            // as identity providers send for a user without a mobile number.
            let none_match = existing_mut(user, def.name)
                .is_none_or(|items| !items.iter().any(|item| filter.matches(item)));
            if none_match {
                if let Some(mut element) = seed(filter) {
                    element.insert(sub.name.into(), value.clone());
                    let mut element = Json::Object(element);
                    canonical_value(def, &mut element);
                    let primary = is_primary(&element);
                    let items = elements_mut(user, def.name);
                    items.push(element);
                    if primary {
                        let last = items.len() - 1;
                        keep_one_primary(items, Some(last));
                    }
                    return Ok(());
                }
            }
            let items = matching(user, target, filter)?;
            let mut winner = None;
            for (i, item) in items.iter_mut().enumerate() {
                if filter.matches(item) {
                    if let Some(map) = item.as_object_mut() {
                        map.insert(sub.name.into(), value.clone());
                        winner = Some(i);
                    }
                }
            }
            if sub.name == "primary" && is_true(value) {
                keep_one_primary(items, winner);
            }
        }
    }
    Ok(())
}

/// The element a filter made only of `eq` comparisons joined by `and` describes, e.g.
/// `type eq "mobile"` → `{type: "mobile"}`; `None` for any other filter.
fn seed(filter: &Filter) -> Option<Map<String, Json>> {
    use crate::scim_filter::{CompareOp, Value};
    match filter {
        Filter::And(a, b) => {
            let mut m = seed(a)?;
            m.extend(seed(b)?);
            Some(m)
        }
        Filter::Compare {
            path,
            op: CompareOp::Eq,
            value,
        } if path.uri.is_none() && path.sub.is_none() => {
            let v = match value {
                Value::Str(s) => Json::String(s.clone()),
                Value::Bool(b) => Json::Bool(*b),
                _ => return None,
            };
            Some(Map::from_iter([(path.attr.clone(), v)]))
        }
        _ => None,
    }
}

/// `attr`: append to or replace a multi-valued attribute, merge into a complex one, set a
/// simple one.
fn set_attr(user: &mut Map<String, Json>, op: Op, def: &'static AttrDef, value: &Json) {
    let mut value = value.clone();
    canonical_value(def, &mut value);
    if def.multi {
        let given = match value {
            Json::Array(items) => items,
            one => vec![one],
        };
        if op == Op::Replace {
            if given.is_empty() {
                user.remove(def.name);
            } else {
                let winner = given.iter().rposition(is_primary);
                let mut given = given;
                keep_one_primary(&mut given, winner);
                user.insert(def.name.into(), Json::Array(given));
            }
            return;
        }
        let items = elements_mut(user, def.name);
        let mut winner = None;
        for item in given {
            if !items.contains(&item) {
                if is_primary(&item) {
                    winner = Some(items.len());
                }
                items.push(item);
            }
        }
        keep_one_primary(items, winner);
        if items.is_empty() {
            // Adding nothing to an absent attribute leaves it absent.
            user.remove(def.name);
        }
        return;
    }
    match (user.get_mut(def.name), value) {
        // RFC 7644 §3.5.2.1 and §3.5.2.3: the given sub-attributes replace or add to the
        // existing ones, the others stay.
        (Some(Json::Object(have)), Json::Object(given)) if !def.subs.is_empty() => {
            have.extend(given);
        }
        (_, value) => {
            user.insert(def.name.into(), value);
        }
    }
}

/// `attr.sub`: on every element of a multi-valued attribute (creating one when there is none),
/// or in a complex one.
fn set_sub_everywhere(
    user: &mut Map<String, Json>,
    def: &'static AttrDef,
    sub: &'static AttrDef,
    value: &Json,
) {
    if def.multi {
        let items = elements_mut(user, def.name);
        if items.is_empty() {
            items.push(Json::Object(Map::new()));
        }
        let mut winner = None;
        for (i, item) in items.iter_mut().enumerate() {
            if let Some(map) = item.as_object_mut() {
                map.insert(sub.name.into(), value.clone());
                winner = Some(i);
            }
        }
        if sub.name == "primary" && is_true(value) {
            keep_one_primary(items, winner);
        }
        return;
    }
    let slot = user.entry(def.name).or_insert(Json::Null);
    if !slot.is_object() {
        *slot = Json::Object(Map::new());
    }
    if let Some(map) = slot.as_object_mut() {
        map.insert(sub.name.into(), value.clone());
    }
}

/// The elements of the target's attribute, when at least one matches `filter`.
fn matching<'a>(
    user: &'a mut Map<String, Json>,
    target: &Target<'_>,
    filter: &Filter,
) -> Result<&'a mut Vec<Json>, PatchError> {
    match existing_mut(user, target.def.name) {
        Some(items) if items.iter().any(|item| filter.matches(item)) => Ok(items),
        _ => Err(PatchError::new(
            NO_TARGET,
            format!(
                "no value of '{}' matches the filter of '{}'",
                target.def.name,
                clip(target.text)
            ),
        )),
    }
}

/// `attr[filter]`: `replace` puts `value` in place of each matching element; `add` merges the
/// sub-attributes of `value` into each.
fn set_matching(
    user: &mut Map<String, Json>,
    op: Op,
    target: &Target<'_>,
    filter: &Filter,
    value: &Json,
) -> Result<(), PatchError> {
    let mut value = value.clone();
    canonical_value(target.def, &mut value);
    if op == Op::Add && !value.is_object() {
        return Err(invalid_value(format!(
            "add to '{}' needs an object of sub-attributes as its value",
            clip(target.text)
        )));
    }
    let items = matching(user, target, filter)?;
    let mut winner = None;
    for (i, item) in items.iter_mut().enumerate() {
        if !filter.matches(item) {
            continue;
        }
        match (op, item.as_object_mut(), &value) {
            (Op::Add, Some(have), Json::Object(given)) => {
                have.extend(given.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            (Op::Add, _, _) => continue,
            _ => *item = value.clone(),
        }
        winner = Some(i);
    }
    if is_primary(&value) {
        keep_one_primary(items, winner);
    }
    Ok(())
}

/// `remove` of `target`; removing what is absent changes nothing.
fn remove(user: &mut Map<String, Json>, target: &Target<'_>) {
    let name = target.def.name;
    match (&target.filter, target.sub) {
        (None, None) => {
            user.remove(name);
        }
        (None, Some(sub)) => match user.get_mut(name) {
            Some(Json::Array(items)) => {
                for item in items {
                    if let Some(map) = item.as_object_mut() {
                        map.remove(sub.name);
                    }
                }
            }
            Some(Json::Object(map)) => {
                map.remove(sub.name);
            }
            _ => {}
        },
        (Some(filter), None) => {
            if let Some(items) = existing_mut(user, name) {
                items.retain(|item| !filter.matches(item));
                if items.is_empty() {
                    // RFC 7644 §3.5.2.2: with no value left the attribute is unassigned.
                    user.remove(name);
                }
            }
        }
        (Some(filter), Some(sub)) => {
            if let Some(items) = existing_mut(user, name) {
                for item in items.iter_mut().filter(|item| filter.matches(item)) {
                    if let Some(map) = item.as_object_mut() {
                        map.remove(sub.name);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scim_schema::user_attr;
    use serde_json::json;

    const ID: &str = "2819c223-7f76-453a-919d-413861904646";

    fn user() -> Json {
        json!({
            "schemas": [USER_SCHEMA],
            "id": ID,
            "externalId": "ext-1",
            "userName": "bjensen@example.com",
            "displayName": "Barbara Jensen",
            "userType": "Standard",
            "active": true,
            "emails": [
                { "value": "bjensen@example.com", "type": "work", "primary": true },
                { "value": "babs@jensen.org", "type": "home" }
            ],
            "phoneNumbers": [{ "value": "+41791234567", "type": "mobile", "primary": true }],
            "meta": {
                "resourceType": "User",
                "created": "2024-01-23T04:56:22Z",
                "lastModified": "2024-05-13T04:42:34Z",
                "version": "W/\"3\""
            }
        })
    }

    fn body(ops: Json) -> Json {
        json!({ "schemas": [PATCH_OP], "Operations": ops })
    }

    /// A check on the result: the JSON pointer and the value there (`None`: absent).
    type Check = (&'static str, Option<Json>);

    fn at(pointer: &'static str, value: Json) -> Check {
        (pointer, Some(value))
    }
    fn gone(pointer: &'static str) -> Check {
        (pointer, None)
    }

    #[test]
    fn applies_operations() {
        let urn_display = format!("{USER_SCHEMA}:displayName");
        let urn_email_value = format!(
            "{}:emails[type eq \"work\"].value",
            USER_SCHEMA.to_uppercase()
        );
        let cases: Vec<(&str, Json, Vec<Check>)> = vec![
            // replace (§3.5.2.3)
            (
                "replace a simple attribute",
                json!([{ "op": "replace", "path": "displayName", "value": "Babs" }]),
                vec![
                    at("/displayName", json!("Babs")),
                    at("/userName", json!("bjensen@example.com")),
                ],
            ),
            (
                "Azure: capitalised op, string boolean set as given",
                json!([{ "op": "Replace", "path": "active", "value": "False" }]),
                vec![at("/active", json!("False"))],
            ),
            (
                "Okta: replace without a path",
                json!([{ "op": "replace", "value": { "active": false } }]),
                vec![
                    at("/active", json!(false)),
                    at("/displayName", json!("Barbara Jensen")),
                ],
            ),
            (
                "replace without a path: several attributes, any case, URN keys",
                json!([{ "op": "replace", "value": {
                    "DISPLAYNAME": "B",
                    "urn:ietf:params:scim:schemas:core:2.0:User:preferredLanguage": "de-CH",
                    "emails": [{ "value": "new@example.com", "type": "work", "primary": true }]
                } }]),
                vec![
                    at("/displayName", json!("B")),
                    gone("/DISPLAYNAME"),
                    at("/preferredLanguage", json!("de-CH")),
                    at(
                        "/emails",
                        json!([{ "value": "new@example.com", "type": "work", "primary": true }]),
                    ),
                ],
            ),
            (
                "replace without a path: attributes under the core URN key",
                json!([{ "op": "replace", "value": {
                    "urn:ietf:params:scim:schemas:core:2.0:user": { "userName": "babs", "active": false },
                    "externalId": "ext-2"
                } }]),
                vec![
                    at("/userName", json!("babs")),
                    at("/active", json!(false)),
                    at("/externalId", json!("ext-2")),
                ],
            ),
            (
                "replace without a path: attr.sub keys",
                json!([{ "op": "replace", "value": { "emails.type": "work" } }]),
                vec![
                    at("/emails/0/type", json!("work")),
                    at("/emails/1/type", json!("work")),
                ],
            ),
            (
                "URN-prefixed path",
                json!([{ "op": "replace", "path": urn_display, "value": "U" }]),
                vec![at("/displayName", json!("U"))],
            ),
            (
                "case-insensitive names give canonical keys",
                json!([{ "op": "replace", "path": "EMAILS[TYPE eq \"WORK\"].VALUE", "value": "w@example.com" },
                       { "op": "add", "path": "displayname", "value": "D" }]),
                vec![
                    at("/emails/0/value", json!("w@example.com")),
                    gone("/emails/0/VALUE"),
                    at("/displayName", json!("D")),
                    gone("/displayname"),
                ],
            ),
            (
                "replace a multi-valued attribute whole, a single value wrapped",
                json!([{ "op": "replace", "path": "emails", "value": { "Value": "only@example.com" } }]),
                vec![at("/emails", json!([{ "value": "only@example.com" }]))],
            ),
            (
                "replace a multi-valued attribute with [] removes it",
                json!([{ "op": "replace", "path": "phoneNumbers", "value": [] }]),
                vec![gone("/phoneNumbers")],
            ),
            (
                "replace with null removes",
                json!([{ "op": "replace", "path": "displayName", "value": null },
                       { "op": "replace", "value": { "preferredLanguage": null, "externalId": null } }]),
                vec![
                    gone("/displayName"),
                    gone("/externalId"),
                    gone("/preferredLanguage"),
                ],
            ),
            (
                "replace emails[type eq \"work\"].value",
                json!([{ "op": "replace", "path": "emails[type eq \"work\"].value", "value": "w@example.com" }]),
                vec![
                    at(
                        "/emails/0",
                        json!({ "value": "w@example.com", "type": "work", "primary": true }),
                    ),
                    at("/emails/1/value", json!("babs@jensen.org")),
                ],
            ),
            (
                "replace through a URN-prefixed value path, ignoring case",
                json!([{ "op": "replace", "path": urn_email_value, "value": "u@example.com" }]),
                vec![at("/emails/0/value", json!("u@example.com"))],
            ),
            (
                "replace matching elements whole",
                json!([{ "op": "replace", "path": "emails[value ew \".org\"]", "value": { "value": "b@x.org", "type": "home" } }]),
                vec![
                    at("/emails/1", json!({ "value": "b@x.org", "type": "home" })),
                    at("/emails/0/primary", json!(true)),
                ],
            ),
            (
                "replace a matching element with a primary one takes primary from the others",
                json!([{ "op": "replace", "path": "emails[type eq \"home\"]", "value": { "value": "b@x.org", "primary": true } }]),
                vec![
                    at("/emails/1", json!({ "value": "b@x.org", "primary": true })),
                    gone("/emails/0/primary"),
                ],
            ),
            (
                "replace attr.sub on every element",
                json!([{ "op": "replace", "path": "emails.type", "value": "work" }]),
                vec![
                    at("/emails/0/type", json!("work")),
                    at("/emails/1/type", json!("work")),
                ],
            ),
            (
                "replace attr.sub where there is no element creates one",
                json!([{ "op": "replace", "path": "roles.value", "value": "helpdesk-admin" }]),
                vec![at("/roles", json!([{ "value": "helpdesk-admin" }]))],
            ),
            (
                "replace a whole array keeps only the last primary",
                json!([{ "op": "replace", "path": "emails", "value": [
                    { "value": "a@x.org", "primary": true }, { "value": "b@x.org", "primary": true }
                ] }]),
                vec![at(
                    "/emails",
                    json!([{ "value": "a@x.org" }, { "value": "b@x.org", "primary": true }]),
                )],
            ),
            (
                "replace an absent attribute adds it",
                json!([{ "op": "replace", "path": "preferredLanguage", "value": "en" }]),
                vec![at("/preferredLanguage", json!("en"))],
            ),
            (
                "the write-only password can be set",
                json!([{ "op": "replace", "path": "password", "value": "t0p-Secret" }]),
                vec![at("/password", json!("t0p-Secret"))],
            ),
            // add (§3.5.2.1)
            (
                "add a simple attribute",
                json!([{ "op": "add", "path": "preferredLanguage", "value": "en" }]),
                vec![at("/preferredLanguage", json!("en"))],
            ),
            (
                "add sets an existing single-valued attribute",
                json!([{ "op": "ADD", "path": "displayName", "value": "New" }]),
                vec![at("/displayName", json!("New"))],
            ),
            (
                "add appends to a multi-valued attribute",
                json!([{ "op": "add", "path": "emails", "value": [{ "value": "c@x.org", "type": "other" }] }]),
                vec![
                    at("/emails/2", json!({ "value": "c@x.org", "type": "other" })),
                    at("/emails/0/primary", json!(true)),
                ],
            ),
            (
                "add appends a single element, primary moves to it",
                json!([{ "op": "add", "path": "emails", "value": { "VALUE": "c@x.org", "Primary": true } }]),
                vec![
                    at("/emails/2", json!({ "value": "c@x.org", "primary": true })),
                    gone("/emails/0/primary"),
                ],
            ),
            (
                "add skips an element already there",
                json!([{ "op": "add", "path": "phoneNumbers", "value": [{ "value": "+41791234567", "type": "mobile", "primary": true }] }]),
                vec![at(
                    "/phoneNumbers",
                    json!([{ "value": "+41791234567", "type": "mobile", "primary": true }]),
                )],
            ),
            (
                "add to an absent multi-valued attribute creates it",
                json!([{ "op": "add", "path": "roles", "value": [{ "value": "system-admin" }] }]),
                vec![at("/roles", json!([{ "value": "system-admin" }]))],
            ),
            (
                "add without a path: each attribute added",
                json!([{ "op": "add", "value": {
                    "emails": [{ "value": "c@x.org" }],
                    "urn:ietf:params:scim:schemas:core:2.0:User:displayName": "Added"
                } }]),
                vec![
                    at("/emails/2", json!({ "value": "c@x.org" })),
                    at("/emails/0/value", json!("bjensen@example.com")),
                    at("/displayName", json!("Added")),
                ],
            ),
            (
                "add emails[type eq \"work\"].value",
                json!([{ "op": "add", "path": "emails[type eq \"work\"].value", "value": "w@example.com" }]),
                vec![
                    at("/emails/0/value", json!("w@example.com")),
                    at("/emails/1/value", json!("babs@jensen.org")),
                ],
            ),
            (
                "add attr.sub on every element",
                json!([{ "op": "add", "path": "emails.type", "value": "work" }]),
                vec![
                    at("/emails/0/type", json!("work")),
                    at("/emails/1/type", json!("work")),
                ],
            ),
            (
                "add attr.sub primary true: only the last element keeps it",
                json!([{ "op": "add", "path": "emails.primary", "value": true }]),
                vec![
                    gone("/emails/0/primary"),
                    at("/emails/1/primary", json!(true)),
                ],
            ),
            (
                "add primary through a value path",
                json!([{ "op": "add", "path": "emails[value eq \"BABS@jensen.org\"].primary", "value": true }]),
                vec![
                    gone("/emails/0/primary"),
                    at("/emails/1/primary", json!(true)),
                ],
            ),
            (
                "add primary as Azure's string",
                json!([{ "op": "add", "path": "emails[type eq \"home\"].primary", "value": "True" }]),
                vec![
                    gone("/emails/0/primary"),
                    at("/emails/1/primary", json!("True")),
                ],
            ),
            (
                "add with a filter merges into matching elements",
                json!([{ "op": "add", "path": "emails[type eq \"home\"]", "value": { "Display": "Home", "type": "other" } }]),
                vec![at(
                    "/emails/1",
                    json!({ "value": "babs@jensen.org", "type": "other", "Display": "Home" }),
                )],
            ),
            (
                "operations apply in order",
                json!([{ "op": "add", "path": "displayName", "value": "One" },
                       { "op": "replace", "path": "displayName", "value": "Two" },
                       { "op": "remove", "path": "externalId" },
                       { "op": "add", "path": "externalId", "value": "ext-9" }]),
                vec![
                    at("/displayName", json!("Two")),
                    at("/externalId", json!("ext-9")),
                ],
            ),
            // remove (§3.5.2.2)
            (
                "remove an attribute",
                json!([{ "op": "remove", "path": "displayName" }]),
                vec![
                    gone("/displayName"),
                    at("/userName", json!("bjensen@example.com")),
                ],
            ),
            (
                "remove a multi-valued attribute",
                json!([{ "op": "Remove", "path": "phoneNumbers" }]),
                vec![gone("/phoneNumbers")],
            ),
            (
                "remove matching elements",
                json!([{ "op": "remove", "path": "emails[type eq \"home\"]" }]),
                vec![at(
                    "/emails",
                    json!([{ "value": "bjensen@example.com", "type": "work", "primary": true }]),
                )],
            ),
            (
                "remove every element removes the attribute",
                json!([{ "op": "remove", "path": "phoneNumbers[type eq \"mobile\"]" }]),
                vec![gone("/phoneNumbers")],
            ),
            (
                "remove a sub-attribute from every element",
                json!([{ "op": "remove", "path": "emails.type" }]),
                vec![
                    gone("/emails/0/type"),
                    gone("/emails/1/type"),
                    at("/emails/0/value", json!("bjensen@example.com")),
                ],
            ),
            (
                "remove a sub-attribute from matching elements",
                json!([{ "op": "remove", "path": "emails[primary eq true].primary" }]),
                vec![
                    gone("/emails/0/primary"),
                    at("/emails/0/type", json!("work")),
                    at("/emails/1/type", json!("home")),
                ],
            ),
            (
                "removing what is absent is no error",
                json!([{ "op": "remove", "path": "preferredLanguage" },
                       { "op": "remove", "path": "roles" },
                       { "op": "remove", "path": "roles.value" },
                       { "op": "remove", "path": "roles[value eq \"system-admin\"]" },
                       { "op": "remove", "path": "emails[type eq \"other\"]" },
                       { "op": "remove", "path": "emails[type eq \"other\"].value" }]),
                vec![
                    gone("/preferredLanguage"),
                    gone("/roles"),
                    at("/emails/1/type", json!("home")),
                ],
            ),
            (
                "remove ignores a value",
                json!([{ "op": "remove", "path": "displayName", "value": "whatever" }]),
                vec![gone("/displayName")],
            ),
        ];
        assert!(cases.len() >= 30);
        let original = user();
        for (name, ops, checks) in cases {
            let out = apply(&original, &body(ops))
                .unwrap_or_else(|e| panic!("{name}: {} {}", e.scim_type, e.detail));
            for (pointer, want) in checks {
                assert_eq!(
                    out.pointer(pointer),
                    want.as_ref(),
                    "{name}: {pointer} in {out}"
                );
            }
            // What no operation touches stays as it was.
            assert_eq!(out["id"], json!(ID), "{name}");
            assert_eq!(out["meta"], original["meta"], "{name}");
            assert_eq!(out["schemas"], original["schemas"], "{name}");
        }
    }

    #[test]
    fn refuses_bad_patches() {
        let long_path = format!("emails[value eq \"{}\"]", "x".repeat(MAX_PATH_LEN));
        let too_many: Vec<Json> = (0..=MAX_OPERATIONS)
            .map(|_| json!({ "op": "remove", "path": "displayName" }))
            .collect();
        let op = |o: Json| body(json!([o]));
        let cases: Vec<(&str, Json, &str, &str)> = vec![
            // invalidSyntax: the message
            (
                "not an object",
                json!([]),
                INVALID_SYNTAX,
                "must be a JSON object",
            ),
            (
                "no schemas",
                json!({ "Operations": [{ "op": "remove", "path": "displayName" }] }),
                INVALID_SYNTAX,
                "'schemas' must be an array holding urn:ietf:params:scim:api:messages:2.0:PatchOp",
            ),
            (
                "wrong schema",
                json!({ "schemas": [USER_SCHEMA], "Operations": [{ "op": "remove", "path": "displayName" }] }),
                INVALID_SYNTAX,
                "'schemas' must",
            ),
            (
                "schemas a string",
                json!({ "schemas": PATCH_OP, "Operations": [{ "op": "remove", "path": "displayName" }] }),
                INVALID_SYNTAX,
                "'schemas' must",
            ),
            (
                "no Operations",
                json!({ "schemas": [PATCH_OP] }),
                INVALID_SYNTAX,
                "'Operations' is missing",
            ),
            (
                "Operations not an array",
                json!({ "schemas": [PATCH_OP], "operations": {} }),
                INVALID_SYNTAX,
                "'Operations' must be an array",
            ),
            (
                "empty Operations",
                body(json!([])),
                INVALID_SYNTAX,
                "'Operations' is empty",
            ),
            (
                "too many operations",
                body(Json::Array(too_many)),
                INVALID_SYNTAX,
                "too many operations (1001; at most 1000)",
            ),
            // invalidSyntax: an operation
            (
                "operation not an object",
                body(json!(["add"])),
                INVALID_SYNTAX,
                "operation 1: an operation must be a JSON object",
            ),
            (
                "no op",
                op(json!({ "path": "displayName" })),
                INVALID_SYNTAX,
                "'op' is missing",
            ),
            (
                "op not a string",
                op(json!({ "op": 1, "path": "displayName" })),
                INVALID_SYNTAX,
                "'op' must be a string",
            ),
            (
                "unknown op",
                op(json!({ "op": "move", "path": "displayName" })),
                INVALID_SYNTAX,
                "unknown op 'move' (expected add, remove or replace)",
            ),
            (
                "path not a string",
                op(json!({ "op": "remove", "path": ["displayName"] })),
                INVALID_SYNTAX,
                "'path' must be a string",
            ),
            (
                "the failing operation is named",
                body(json!([
                    { "op": "remove", "path": "displayName" }, { "op": "sort", "path": "displayName" }
                ])),
                INVALID_SYNTAX,
                "operation 2: unknown op",
            ),
            // invalidPath
            (
                "unknown attribute",
                op(json!({ "op": "replace", "path": "nickName", "value": "x" })),
                INVALID_PATH,
                "unknown attribute 'nickName' in path 'nickName'",
            ),
            (
                "unknown attribute in a path-less value",
                op(json!({ "op": "add", "value": { "title": "x" } })),
                INVALID_PATH,
                "unknown attribute 'title'",
            ),
            (
                "unknown sub-attribute",
                op(json!({ "op": "replace", "path": "emails.display", "value": "x" })),
                INVALID_PATH,
                "unknown sub-attribute 'display' of 'emails'",
            ),
            (
                "sub-attribute of a simple attribute",
                op(json!({ "op": "replace", "path": "userName.value", "value": "x" })),
                INVALID_PATH,
                "'userName' has no sub-attributes",
            ),
            (
                "filter on a single-valued attribute",
                op(json!({ "op": "remove", "path": "userName[value pr]" })),
                INVALID_PATH,
                "'userName' is single-valued, so it takes no filter",
            ),
            (
                "unknown sub-attribute in the filter",
                op(json!({ "op": "remove", "path": "emails[display eq \"x\"]" })),
                INVALID_PATH,
                "unknown sub-attribute 'display' of 'emails' in the filter",
            ),
            (
                "bad filter",
                op(json!({ "op": "remove", "path": "emails[type eq work]" })),
                INVALID_PATH,
                "invalid path 'emails[type eq work]': invalid value 'work' after 'eq'",
            ),
            (
                "unclosed filter",
                op(json!({ "op": "remove", "path": "emails[type pr" })),
                INVALID_PATH,
                "missing ']'",
            ),
            (
                "junk after the filter",
                op(json!({ "op": "remove", "path": "emails[type pr]x" })),
                INVALID_PATH,
                "after ']'",
            ),
            (
                "malformed path",
                op(json!({ "op": "remove", "path": "display name" })),
                INVALID_PATH,
                "invalid path 'display name'",
            ),
            (
                "empty path",
                op(json!({ "op": "remove", "path": "" })),
                INVALID_PATH,
                "invalid path ''",
            ),
            (
                "path too long",
                op(json!({ "op": "remove", "path": long_path })),
                INVALID_PATH,
                "path is too long (at most 1024 characters)",
            ),
            (
                "other schema",
                op(
                    json!({ "op": "replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:department", "value": "x" }),
                ),
                INVALID_PATH,
                "unknown schema 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User'",
            ),
            (
                "schemas",
                op(json!({ "op": "replace", "path": "schemas", "value": [USER_SCHEMA] })),
                INVALID_PATH,
                "'schemas' cannot be patched",
            ),
            (
                "filter in a path-less key",
                op(json!({ "op": "replace", "value": { "emails[type eq \"work\"].value": "x" } })),
                INVALID_PATH,
                "cannot hold a filter",
            ),
            // noTarget
            (
                "remove without a path",
                op(json!({ "op": "remove" })),
                NO_TARGET,
                "remove needs a 'path'",
            ),
            (
                "replace with no matching element",
                op(
                    json!({ "op": "replace", "path": "emails[type eq \"other\"]", "value": { "value": "x@x.org" } }),
                ),
                NO_TARGET,
                "no value of 'emails' matches the filter of 'emails[type eq \"other\"]'",
            ),
            (
                "replace a sub with no matching element",
                op(
                    json!({ "op": "replace", "path": "emails[value co \"nowhere\"].value", "value": "x" }),
                ),
                NO_TARGET,
                "no value of 'emails' matches",
            ),
            (
                "add a sub with no matching element",
                op(
                    json!({ "op": "add", "path": "phoneNumbers[type eq \"work\" or type eq \"home\"].value", "value": "+1" }),
                ),
                NO_TARGET,
                "no value of 'phoneNumbers' matches",
            ),
            (
                "filter on an absent attribute",
                op(
                    json!({ "op": "add", "path": "roles[value pr].value", "value": "system-admin" }),
                ),
                NO_TARGET,
                "no value of 'roles' matches",
            ),
            // invalidValue
            (
                "add without a value",
                op(json!({ "op": "add", "path": "displayName" })),
                INVALID_VALUE,
                "add needs a 'value'",
            ),
            (
                "replace without a value",
                op(json!({ "op": "replace", "path": "displayName" })),
                INVALID_VALUE,
                "replace needs a 'value'",
            ),
            (
                "add null",
                op(json!({ "op": "add", "path": "displayName", "value": null })),
                INVALID_VALUE,
                "add cannot set 'displayName' to null",
            ),
            (
                "add null in a path-less value",
                op(json!({ "op": "add", "value": { "displayName": null } })),
                INVALID_VALUE,
                "add cannot set 'displayName' to null",
            ),
            (
                "path-less add of a non-object",
                op(json!({ "op": "add", "value": "x" })),
                INVALID_VALUE,
                "add without a 'path' needs a 'value' that is an object",
            ),
            (
                "path-less replace without a value",
                op(json!({ "op": "replace" })),
                INVALID_VALUE,
                "replace without a 'path' needs",
            ),
            (
                "core URN key holding a non-object",
                op(json!({ "op": "replace", "value": { USER_SCHEMA: "x" } })),
                INVALID_VALUE,
                "must be an object of attributes",
            ),
            (
                "add to matching elements a non-object",
                op(json!({ "op": "add", "path": "emails[type eq \"work\"]", "value": "x" })),
                INVALID_VALUE,
                "needs an object of sub-attributes",
            ),
            // mutability
            (
                "replace id",
                op(json!({ "op": "replace", "path": "id", "value": "x" })),
                MUTABILITY,
                "'id' is read-only",
            ),
            (
                "remove id",
                op(json!({ "op": "remove", "path": "ID" })),
                MUTABILITY,
                "'id' is read-only",
            ),
            (
                "replace meta",
                op(json!({ "op": "replace", "path": "meta", "value": {} })),
                MUTABILITY,
                "'meta' is read-only",
            ),
            (
                "remove a meta sub-attribute",
                op(json!({ "op": "remove", "path": "meta.lastModified" })),
                MUTABILITY,
                "'meta' is read-only",
            ),
            (
                "id in a path-less value",
                op(json!({ "op": "replace", "value": { "id": "x", "active": false } })),
                MUTABILITY,
                "'id' is read-only",
            ),
            (
                "URN-prefixed meta",
                op(
                    json!({ "op": "add", "path": "urn:ietf:params:scim:schemas:core:2.0:User:meta.version", "value": "x" }),
                ),
                MUTABILITY,
                "read-only",
            ),
        ];
        assert!(cases.len() >= 30);
        for (name, patch, scim_type, detail) in cases {
            match apply(&user(), &patch) {
                Ok(out) => panic!("{name}: applied as {out}, expected {scim_type}"),
                Err(e) => {
                    assert_eq!(e.scim_type, scim_type, "{name}: {}", e.detail);
                    assert!(
                        e.detail.contains(detail),
                        "{name}: {:?} lacks {detail:?}",
                        e.detail
                    );
                    assert!(e.detail.len() < 400, "{name}: {}", e.detail);
                }
            }
        }
    }

    #[test]
    fn a_missing_element_that_the_filter_describes_is_added() {
        let mut u = user();
        u.as_object_mut().unwrap().remove("phoneNumbers");
        let out = apply(
            &u,
            &body(json!([{ "op": "add", "path": "phoneNumbers[type eq \"mobile\"].value", "value": "+15550100" }])),
        )
        .unwrap();
        assert_eq!(
            out["phoneNumbers"],
            json!([{ "type": "mobile", "value": "+15550100" }])
        );
        let out = apply(
            &out,
            &body(json!([{ "op": "replace", "path": "emails[type eq \"home\" and primary eq true].value", "value": "h@x.org" }])),
        )
        .unwrap();
        let emails = out["emails"].as_array().unwrap();
        let added = emails.last().unwrap();
        assert_eq!(
            added,
            &json!({ "type": "home", "primary": true, "value": "h@x.org" })
        );
        // The new primary element is the only one.
        assert_eq!(emails.iter().filter(|e| e["primary"] == true).count(), 1);
    }

    #[test]
    fn max_operations_is_inclusive() {
        let ops: Vec<Json> = (0..MAX_OPERATIONS)
            .map(|i| json!({ "op": "replace", "path": "displayName", "value": i.to_string() }))
            .collect();
        let out = apply(&user(), &body(Json::Array(ops))).expect("1000 operations");
        assert_eq!(out["displayName"], json!((MAX_OPERATIONS - 1).to_string()));
    }

    #[test]
    fn lenient_body_keys() {
        let patch = json!({
            "SCHEMAS": [PATCH_OP.to_uppercase()],
            "operations": [{ "OP": "replace", "Path": "displayName", "Value": "K" }]
        });
        let out = apply(&user(), &patch).expect("keys in any case");
        assert_eq!(out["displayName"], json!("K"));
        // A null path is no path.
        let patch =
            body(json!([{ "op": "replace", "path": null, "value": { "displayName": "N" } }]));
        assert_eq!(
            apply(&user(), &patch).expect("null path")["displayName"],
            json!("N")
        );
    }

    #[test]
    fn canonicalizes_the_resource_it_touches() {
        let resource = json!({
            "UserName": "x@example.com",
            "EMAILS": { "Value": "x@example.com", "TYPE": "work" },
            "schemas": [USER_SCHEMA],
            "custom": 1
        });
        let patch =
            body(json!([{ "op": "add", "path": "emails", "value": { "value": "y@example.com" } }]));
        let out = apply(&resource, &patch).expect("applies");
        assert_eq!(
            out,
            json!({
                "userName": "x@example.com",
                "emails": [
                    { "value": "x@example.com", "type": "work" },
                    { "value": "y@example.com" }
                ],
                "schemas": [USER_SCHEMA],
                "custom": 1
            })
        );
        // Both spellings: the canonical one wins.
        let resource = json!({ "displayName": "keep", "DisplayName": "drop" });
        let patch = body(json!([{ "op": "remove", "path": "externalId" }]));
        assert_eq!(
            apply(&resource, &patch).expect("applies"),
            json!({ "displayName": "keep" })
        );
        // A non-object resource is taken as empty.
        let patch = body(json!([{ "op": "add", "path": "displayName", "value": "x" }]));
        assert_eq!(
            apply(&json!(null), &patch).expect("applies"),
            json!({ "displayName": "x" })
        );
    }

    #[test]
    fn a_failure_changes_nothing_and_the_input_is_untouched() {
        let original = user();
        let patch = body(json!([
            { "op": "replace", "path": "displayName", "value": "changed" },
            { "op": "replace", "path": "id", "value": "x" }
        ]));
        let err = apply(&original, &patch).unwrap_err();
        assert_eq!(err.scim_type, MUTABILITY);
        assert_eq!(err.detail, "operation 2: 'id' is read-only");
        assert_eq!(
            err.to_string(),
            "mutability: operation 2: 'id' is read-only"
        );
        assert_eq!(original, user());
    }

    /// Coffer's only complex single-valued attribute is the read-only `meta`, so the rules for
    /// such attributes are exercised directly on a writable copy of its definition.
    #[test]
    fn complex_single_valued_attributes_merge() {
        let meta = user_attr("meta").expect("meta");
        let def: &'static AttrDef = Box::leak(Box::new(AttrDef {
            mutability: Mutability::ReadWrite,
            ..*meta
        }));
        let sub = def.sub("version").expect("version");
        let mut map = Map::new();
        map.insert(
            "meta".into(),
            json!({ "resourceType": "User", "version": "1" }),
        );
        set_attr(
            &mut map,
            Op::Add,
            def,
            &json!({ "VERSION": "2", "location": "l" }),
        );
        assert_eq!(
            map["meta"],
            json!({ "resourceType": "User", "version": "2", "location": "l" })
        );
        set_attr(&mut map, Op::Replace, def, &json!({ "created": "c" }));
        assert_eq!(
            map["meta"],
            json!({ "resourceType": "User", "version": "2", "location": "l", "created": "c" })
        );
        set_sub_everywhere(&mut map, def, sub, &json!("3"));
        assert_eq!(map["meta"]["version"], json!("3"));
        let target = Target {
            def,
            sub: Some(sub),
            filter: None,
            text: "meta.version",
        };
        remove(&mut map, &target);
        assert_eq!(map["meta"].get("version"), None);
        map.remove("meta");
        set_sub_everywhere(&mut map, def, sub, &json!("4"));
        assert_eq!(map["meta"], json!({ "version": "4" }));
        set_attr(&mut map, Op::Add, def, &json!("not an object"));
        assert_eq!(map["meta"], json!("not an object"));
    }

    #[test]
    fn long_input_is_clipped_in_messages() {
        let attr = "a".repeat(500);
        let patch = body(json!([{ "op": "remove", "path": attr }]));
        let err = apply(&user(), &patch).unwrap_err();
        assert_eq!(err.scim_type, INVALID_PATH);
        assert!(
            err.detail.contains('…') && err.detail.len() < 300,
            "{}",
            err.detail
        );
    }
}
