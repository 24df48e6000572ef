//! SCIM `/Users` listings in SQL: a parsed SCIM filter ([`Filter`]) translated into a WHERE
//! clause over `users` joined with `profiles`, counting, and keyset-paginated chunks for
//! streaming a listing in any `sortBy` order.
//!
//! [`translate`] checks the whole filter up front (attributes, sub-attributes, operators and
//! value types) and lowers it to a small boolean tree ([`UserFilter`]) whose leaves are plain
//! column predicates; the tree becomes a diesel boxed expression for the connection's backend,
//! with every value bound as a parameter. The SQL reproduces [`Filter::matches`] on the SCIM
//! JSON of a user:
//!
//! - Absent, `null` and `[]` are one state, so `eq null` selects absent values and `ne "x"`
//!   selects them too. Every predicate on a nullable column is guarded by its `IS NOT NULL`, so
//!   no predicate is ever SQL NULL and `not (…)` is the exact complement.
//! - Text compares ignore case except on `id` and `externalId`. `userName` is compared through
//!   `user_name_folded` (folded by Coffer when written, indexed) and `email` as stored (lowercase),
//!   each with the literal lowered in Rust; other attributes are lowered in SQL. Ordering compares use the binary collation on both
//!   backends (`COLLATE "C"` on PostgreSQL), which is how Rust orders strings.
//! - Attributes with a fixed value (`emails.type` is `work`, `meta.resourceType` is `User`, and
//!   `phoneNumbers.type` is `mobile` whenever a number is set)
//!   are decided here, by running the comparison through [`Filter::matches`] on a tiny resource,
//!   so they fold to TRUE/FALSE (or to the number's presence) exactly as the in-memory
//!   evaluation decides them.
//! - `emails`, `phoneNumbers` and `roles` hold at most one element, so `attr[f]` is "the
//!   element exists and `f` holds on it", and `attr op v` compares the element's `value`.
//! - `meta.created`/`meta.lastModified` are Unix seconds; a filter's RFC 3339 date-time is
//!   parsed and compared as an instant (an offset or fraction is honoured).

use crate::filter::Binary;
use crate::models::User;
use crate::schema::{profiles, users};
use crate::{DbConn, StoreError, StoreResult};
use coffer_domain::scim_filter::{AttrPath, CompareOp, Filter, Value};
use coffer_domain::scim_schema::USER_SCHEMA;
use diesel::dsl::InnerJoinQuerySource;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Text};

// ---------------------------------------------------------------------------------------------
// The translated filter

/// A SCIM filter translated for the users table; built by [`translate`].
#[derive(Debug, Clone, PartialEq)]
pub struct UserFilter {
    cond: Cond,
}

impl UserFilter {
    /// `Some(b)` when the filter holds for every user (`true`) or for none (`false`) whatever
    /// the rows hold, as `meta.resourceType eq "User"` does.
    pub fn constant(&self) -> Option<bool> {
        match self.cond {
            Cond::True => Some(true),
            Cond::False => Some(false),
            _ => None,
        }
    }
}

/// A boolean tree over column predicates. `True`/`False` never appear below the root: the
/// constructors fold them away.
#[derive(Debug, Clone, PartialEq)]
enum Cond {
    True,
    False,
    And(Box<Cond>, Box<Cond>),
    Or(Box<Cond>, Box<Cond>),
    Not(Box<Cond>),
    Atom(Atom),
}

impl Cond {
    fn and(self, other: Cond) -> Cond {
        match (self, other) {
            (Cond::False, _) | (_, Cond::False) => Cond::False,
            (Cond::True, x) | (x, Cond::True) => x,
            (a, b) if a == b => a,
            (a, b) => Cond::And(Box::new(a), Box::new(b)),
        }
    }

    fn or(self, other: Cond) -> Cond {
        match (self, other) {
            (Cond::True, _) | (_, Cond::True) => Cond::True,
            (Cond::False, x) | (x, Cond::False) => x,
            (a, b) if a == b => a,
            (a, b) => Cond::Or(Box::new(a), Box::new(b)),
        }
    }

    fn negate(self) -> Cond {
        match self {
            Cond::True => Cond::False,
            Cond::False => Cond::True,
            Cond::Not(inner) => *inner,
            other => Cond::Not(Box::new(other)),
        }
    }

    fn from_bool(b: bool) -> Cond {
        if b {
            Cond::True
        } else {
            Cond::False
        }
    }

    /// `if present { when } else { otherwise }`, for constants that exist only with an element.
    fn choose(present: Cond, when: bool, otherwise: bool) -> Cond {
        match (when, otherwise) {
            (true, true) => Cond::True,
            (false, false) => Cond::False,
            (true, false) => present,
            (false, true) => present.negate(),
        }
    }

    fn atom(a: Atom) -> Cond {
        Cond::Atom(a)
    }
}

/// The text columns a filter or sort reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Col {
    Id,
    ExternalId,
    UserName,
    /// `userName` as Coffer folds it (`users::fold_user_name`), for comparisons.
    UserNameFolded,
    Name,
    ProfileName,
    PreferredLanguage,
    Email,
    Mobile,
    Role,
}

/// A boolean attribute's column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BoolCol {
    Active,
    EmailPrimary,
    MobilePrimary,
}

impl BoolCol {
    /// When the attribute appears in the resource.
    fn present(self) -> Cond {
        match self {
            BoolCol::Active | BoolCol::EmailPrimary => Cond::True,
            BoolCol::MobilePrimary => Cond::atom(Atom::NotNull(Col::Mobile)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TimeCol {
    Created,
    Updated,
}

/// `=`, `>`, `>=`, `<`, `<=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rel {
    Eq,
    Gt,
    Ge,
    Lt,
    Le,
}

/// A predicate on one column. Those on a nullable column are only ever used behind that
/// column's [`Atom::NotNull`], so they are never NULL where it matters.
#[derive(Debug, Clone, PartialEq)]
enum Atom {
    /// `col IS NOT NULL`.
    NotNull(Col),
    /// `col <> 'literal'`.
    NotEqual(Col, &'static str),
    /// `[lower](col) rel value`; ordering under the binary collation.
    Text {
        col: Col,
        lower: bool,
        rel: Rel,
        value: String,
    },
    /// `[lower](col) LIKE pattern ESCAPE '\'`.
    Like {
        col: Col,
        lower: bool,
        pattern: String,
    },
    /// Case-exact `co`/`sw`/`ew` (SQLite's LIKE ignores ASCII case, so not LIKE): non-empty
    /// value.
    Contains(Col, String),
    StartsWith(Col, String),
    EndsWith(Col, String),
    /// `col = b`, a NULL `primary` flag counting as true.
    Bool(BoolCol, bool),
    /// `created_at`/`updated_at` rel seconds.
    Time(TimeCol, Rel, i64),
}

// ---------------------------------------------------------------------------------------------
// Attributes

/// A string attribute held in one column.
#[derive(Debug, Clone)]
struct StrAttr {
    col: Col,
    /// When the attribute appears in the resource at all.
    present: Cond,
    /// Compare `lower(col)` (the literal is lowered whenever `!exact`).
    lower_col: bool,
    /// caseExact: the literal is compared as written.
    exact: bool,
}

impl StrAttr {
    fn new(col: Col, present: Cond, exact: bool) -> StrAttr {
        StrAttr {
            col,
            present,
            lower_col: !exact,
            exact,
        }
    }
}

/// The kind of value an attribute with a fixed value holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ConstKind {
    Str,
    Bool,
}

/// An attribute whose value is fixed; `with` is a resource holding it, `without` (when the
/// attribute can be missing, `present` saying when) one that lacks it.
#[derive(Debug, Clone)]
struct ConstAttr {
    kind: ConstKind,
    present: Cond,
    with: &'static str,
    without: &'static str,
}

/// The multi-valued attributes, each with at most one element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Multi {
    Emails,
    PhoneNumbers,
    Roles,
}

impl Multi {
    fn name(self) -> &'static str {
        match self {
            Multi::Emails => "emails",
            Multi::PhoneNumbers => "phoneNumbers",
            Multi::Roles => "roles",
        }
    }

    /// When the element exists.
    fn exists(self) -> Cond {
        match self {
            Multi::Emails => Cond::True,
            Multi::PhoneNumbers => Cond::atom(Atom::NotNull(Col::Mobile)),
            Multi::Roles => Cond::atom(Atom::NotEqual(Col::Role, "user")),
        }
    }

    /// The element's `value`.
    fn value(self) -> StrAttr {
        match self {
            // Stored lowercase: `email` is compared as it is, with the literal lowered.
            Multi::Emails => StrAttr {
                col: Col::Email,
                present: Cond::True,
                lower_col: false,
                exact: false,
            },
            Multi::PhoneNumbers => StrAttr::new(Col::Mobile, self.exists(), false),
            Multi::Roles => StrAttr::new(Col::Role, self.exists(), false),
        }
    }

    /// `attr pr`: an element with some non-empty sub-attribute.
    fn present(self) -> Cond {
        match self {
            // `type` is always there beside the value.
            Multi::Emails | Multi::PhoneNumbers => self.exists(),
            Multi::Roles => self.exists().and(Cond::atom(Atom::NotEqual(Col::Role, ""))),
        }
    }

    fn sub(self, sub: &str, shown: &AttrPath) -> Result<Leaf, String> {
        let sub = sub.to_ascii_lowercase();
        let leaf = match (self, sub.as_str()) {
            (_, "value") => Leaf::Str(self.value()),
            (Multi::Emails, "type") => Leaf::Const(ConstAttr {
                kind: ConstKind::Str,
                present: Cond::True,
                with: r#"{"emails":[{"type":"work","primary":true}]}"#,
                without: r#"{"emails":[{"type":"work","primary":true}]}"#,
            }),
            (Multi::Emails, "primary") => Leaf::Bool(BoolCol::EmailPrimary),
            (Multi::PhoneNumbers, "type") => Leaf::Const(ConstAttr {
                kind: ConstKind::Str,
                present: self.exists(),
                with: r#"{"phoneNumbers":[{"type":"mobile","primary":true}]}"#,
                without: "{}",
            }),
            (Multi::PhoneNumbers, "primary") => Leaf::Bool(BoolCol::MobilePrimary),
            _ => {
                let subs = match self {
                    Multi::Emails | Multi::PhoneNumbers => "value, type or primary",
                    Multi::Roles => "value",
                };
                return Err(format!(
                    "unknown attribute '{}': {} has the sub-attributes {subs}",
                    clip(&shown.to_string()),
                    self.name()
                ));
            }
        };
        Ok(leaf)
    }
}

/// What an attribute path names.
#[derive(Debug, Clone)]
enum Leaf {
    Str(StrAttr),
    /// `active`, or the `primary` flag of the email or of the mobile number.
    Bool(BoolCol),
    Time(TimeCol),
    Const(ConstAttr),
    /// `emails`, `phoneNumbers`, `roles` without a sub-attribute.
    Multi(Multi),
    /// `meta` without a sub-attribute.
    Meta,
}

/// Echoes of client input in messages are bounded.
fn clip(s: &str) -> String {
    const MAX: usize = 60;
    match s.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &s[..cut]),
        None => s.to_string(),
    }
}

fn resolve(path: &AttrPath) -> Result<Leaf, String> {
    if let Some(uri) = &path.uri {
        if !uri.eq_ignore_ascii_case(USER_SCHEMA) {
            return Err(format!(
                "unknown schema '{}' in '{}': users have only the attributes of {USER_SCHEMA}",
                clip(uri),
                clip(&path.to_string())
            ));
        }
    }
    let shown = || clip(&path.to_string());
    let attr = path.attr.to_ascii_lowercase();
    let simple = |leaf: Leaf| match &path.sub {
        None => Ok(leaf),
        Some(_) => Err(format!(
            "unknown attribute '{}': {} has no sub-attributes",
            shown(),
            path.attr
        )),
    };
    match attr.as_str() {
        "id" => simple(Leaf::Str(StrAttr::new(Col::Id, Cond::True, true))),
        "externalid" => simple(Leaf::Str(StrAttr::new(
            Col::ExternalId,
            Cond::atom(Atom::NotNull(Col::ExternalId)),
            true,
        ))),
        // Compared folded: the literal lowered as `users::fold_user_name` lowers the stored
        // name, whose fold the column keeps.
        "username" => simple(Leaf::Str(StrAttr {
            col: Col::UserNameFolded,
            present: Cond::atom(Atom::NotNull(Col::UserName)),
            lower_col: false,
            exact: false,
        })),
        // An empty name is left out of the resource.
        "displayname" => simple(Leaf::Str(StrAttr::new(
            Col::Name,
            Cond::atom(Atom::NotEqual(Col::Name, "")),
            false,
        ))),
        "usertype" => simple(Leaf::Str(StrAttr::new(Col::ProfileName, Cond::True, false))),
        "preferredlanguage" => simple(Leaf::Str(StrAttr::new(
            Col::PreferredLanguage,
            Cond::atom(Atom::NotNull(Col::PreferredLanguage)),
            false,
        ))),
        "active" => simple(Leaf::Bool(BoolCol::Active)),
        "password" => Err("'password' is never returned, so it cannot be filtered on".into()),
        "emails" | "phonenumbers" | "roles" => {
            let multi = match attr.as_str() {
                "emails" => Multi::Emails,
                "phonenumbers" => Multi::PhoneNumbers,
                _ => Multi::Roles,
            };
            match &path.sub {
                None => Ok(Leaf::Multi(multi)),
                Some(sub) => multi.sub(sub, path),
            }
        }
        "meta" => match path.sub.as_deref().map(str::to_ascii_lowercase).as_deref() {
            None => Ok(Leaf::Meta),
            Some("created") => Ok(Leaf::Time(TimeCol::Created)),
            Some("lastmodified") => Ok(Leaf::Time(TimeCol::Updated)),
            Some("resourcetype") => Ok(Leaf::Const(ConstAttr {
                kind: ConstKind::Str,
                present: Cond::True,
                with: r#"{"meta":{"resourceType":"User"}}"#,
                without: r#"{"meta":{"resourceType":"User"}}"#,
            })),
            Some("location") | Some("version") => {
                Err(format!("'{}' cannot be filtered on", shown()))
            }
            Some(_) => Err(format!(
                "unknown attribute '{}': meta has the sub-attributes resourceType, created, \
                 lastModified, location and version",
                shown()
            )),
        },
        _ => Err(format!(
            "unknown attribute '{}': users have id, externalId, userName, displayName, \
             userType, preferredLanguage, active, emails, phoneNumbers, roles and meta",
            shown()
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// Translation

/// Translates a parsed SCIM filter for the users table. Pure: nothing is read from the
/// database. The error is a message for the client (`scimType` `invalidFilter`): an unknown
/// attribute or sub-attribute, another schema, an attribute that cannot be filtered on, an
/// operator or value that does not fit the attribute's type, or a date-time that does not parse.
pub fn translate(filter: &Filter) -> Result<UserFilter, String> {
    Ok(UserFilter {
        cond: to_cond(filter, None)?,
    })
}

/// `scope` is the multi-valued attribute of the value path being translated, whose elements'
/// sub-attributes the paths then name.
fn to_cond(filter: &Filter, scope: Option<&AttrPath>) -> Result<Cond, String> {
    Ok(match filter {
        Filter::And(a, b) => to_cond(a, scope)?.and(to_cond(b, scope)?),
        Filter::Or(a, b) => to_cond(a, scope)?.or(to_cond(b, scope)?),
        Filter::Not(f) => to_cond(f, scope)?.negate(),
        Filter::Present(path) => {
            let path = scoped(path, scope)?;
            present(&path, &resolve(&path)?)
        }
        Filter::Compare { path, op, value } => {
            let path = scoped(path, scope)?;
            compare(&path, &resolve(&path)?, *op, value)?
        }
        Filter::ValuePath { path, filter } => {
            if scope.is_some() {
                return Err("a value path cannot appear inside another value path".into());
            }
            let multi = match resolve(path)? {
                Leaf::Multi(multi) if path.sub.is_none() => multi,
                _ => {
                    return Err(format!(
                        "'{}[…]': a value filter needs a multi-valued attribute (emails, \
                         phoneNumbers or roles)",
                        clip(&path.to_string())
                    ))
                }
            };
            // With at most one element, "some element satisfies f" is "the element exists and
            // f holds on it", and f's paths are that attribute's sub-attributes.
            let scope = AttrPath {
                uri: None,
                attr: multi.name().to_string(),
                sub: None,
            };
            multi.exists().and(to_cond(filter, Some(&scope))?)
        }
    })
}

/// A path inside a value filter (`emails[type eq "work"]`) as the equivalent top-level path
/// (`emails.type`): for an attribute with one element the two mean the same.
fn scoped(path: &AttrPath, scope: Option<&AttrPath>) -> Result<AttrPath, String> {
    let Some(scope) = scope else {
        return Ok(path.clone());
    };
    if path.uri.is_some() || path.sub.is_some() {
        return Err(format!(
            "inside a value filter '{}' must be a plain sub-attribute name",
            clip(&path.to_string())
        ));
    }
    Ok(AttrPath {
        uri: None,
        attr: scope.attr.clone(),
        sub: Some(path.attr.clone()),
    })
}

/// Whether `filter` holds on the JSON resource `resource` (a constant of this module).
fn holds_on(filter: &Filter, resource: &str) -> bool {
    match serde_json::from_str(resource) {
        Ok(resource) => filter.matches(&resource),
        Err(_) => {
            debug_assert!(false, "constant resource is JSON: {resource}");
            false
        }
    }
}

/// Folds a filter on an attribute with a fixed value.
fn fold(filter: &Filter, c: &ConstAttr) -> Cond {
    Cond::choose(
        c.present.clone(),
        holds_on(filter, c.with),
        holds_on(filter, c.without),
    )
}

fn present(path: &AttrPath, leaf: &Leaf) -> Cond {
    match leaf {
        Leaf::Str(a) => {
            let non_empty = Cond::atom(Atom::NotEqual(a.col, ""));
            a.present.clone().and(non_empty)
        }
        Leaf::Bool(b) => b.present(),
        Leaf::Time(_) | Leaf::Meta => Cond::True,
        Leaf::Const(c) => fold(&Filter::Present(path.clone()), c),
        Leaf::Multi(m) => m.present(),
    }
}

fn compare(path: &AttrPath, leaf: &Leaf, op: CompareOp, value: &Value) -> Result<Cond, String> {
    let shown = || clip(&path.to_string());
    match leaf {
        Leaf::Str(a) => compare_str(path, a, op, value),
        // Compared as a whole, an element stands for its `value`.
        Leaf::Multi(m) => compare_str(path, &m.value(), op, value),
        Leaf::Meta => Err(format!(
            "'{}' is complex: compare one of its sub-attributes, such as meta.created",
            shown()
        )),
        Leaf::Bool(col) => {
            if !matches!(op, CompareOp::Eq | CompareOp::Ne) {
                return Err(format!(
                    "'{}' is a boolean: only eq, ne and pr apply to it, not '{}'",
                    shown(),
                    op.keyword()
                ));
            }
            let eq = match value {
                Value::Bool(b) => col.present().and(Cond::atom(Atom::Bool(*col, *b))),
                Value::Null => col.present().negate(),
                Value::Str(_) | Value::Num(_) => {
                    return Err(format!(
                        "'{}' is a boolean: compare it with true or false",
                        shown()
                    ))
                }
            };
            Ok(if op == CompareOp::Ne { eq.negate() } else { eq })
        }
        Leaf::Time(col) => compare_time(path, *col, op, value),
        Leaf::Const(c) => {
            if c.kind == ConstKind::Bool && !matches!(op, CompareOp::Eq | CompareOp::Ne) {
                return Err(format!(
                    "'{}' is a boolean: only eq, ne and pr apply to it, not '{}'",
                    shown(),
                    op.keyword()
                ));
            }
            match (c.kind, value) {
                (_, Value::Null) => {}
                (ConstKind::Str, Value::Str(_)) => {}
                (ConstKind::Bool, Value::Bool(_)) => {}
                (ConstKind::Str, _) => {
                    return Err(format!(
                        "'{}' is a string: compare it with a string in double quotes",
                        shown()
                    ))
                }
                (ConstKind::Bool, _) => {
                    return Err(format!(
                        "'{}' is a boolean: compare it with true or false",
                        shown()
                    ))
                }
            }
            let filter = Filter::Compare {
                path: path.clone(),
                op,
                value: value.clone(),
            };
            Ok(fold(&filter, c))
        }
    }
}

fn compare_str(path: &AttrPath, a: &StrAttr, op: CompareOp, value: &Value) -> Result<Cond, String> {
    let s = match value {
        Value::Str(s) => s,
        // The parser allows null only with eq and ne.
        Value::Null => {
            return match op {
                CompareOp::Eq => Ok(a.present.clone().negate()),
                CompareOp::Ne => Ok(a.present.clone()),
                _ => Err(format!("'{}' cannot compare with null", op.keyword())),
            }
        }
        Value::Num(_) | Value::Bool(_) => {
            return Err(format!(
                "'{}' is a string: compare it with a string in double quotes",
                clip(&path.to_string())
            ))
        }
    };
    let v = if a.exact { s.clone() } else { s.to_lowercase() };
    let guarded = |atom: Atom| a.present.clone().and(Cond::atom(atom));
    let text_of = |rel: Rel, value: String| {
        guarded(Atom::Text {
            col: a.col,
            lower: a.lower_col,
            rel,
            value,
        })
    };
    let text = |rel: Rel| text_of(rel, v.clone());
    // For attributes lowered in SQL: SQLite's lower() folds ASCII letters only (PostgreSQL's may
    // fold every letter), so an equality also tries the literal folded that way; a value given
    // in its stored case always matches.
    let eq = || match s.to_ascii_lowercase() {
        ascii if a.lower_col && ascii != v => text(Rel::Eq).or(text_of(Rel::Eq, ascii)),
        _ => text(Rel::Eq),
    };
    let substring = |make: fn(&str) -> String, exact: fn(Col, String) -> Atom| {
        if v.is_empty() {
            // Every string contains, starts and ends with "".
            a.present.clone()
        } else if a.exact {
            guarded(exact(a.col, v.clone()))
        } else {
            guarded(Atom::Like {
                col: a.col,
                lower: a.lower_col,
                pattern: make(&crate::like_escape(&v)),
            })
        }
    };
    Ok(match op {
        CompareOp::Eq => eq(),
        CompareOp::Ne => eq().negate(),
        CompareOp::Gt => text(Rel::Gt),
        CompareOp::Ge => text(Rel::Ge),
        CompareOp::Lt => text(Rel::Lt),
        CompareOp::Le => text(Rel::Le),
        CompareOp::Co => substring(|e| format!("%{e}%"), Atom::Contains),
        // A prefix is a range, `[v, successor(v))` under the binary collation, which the
        // indexes on `user_name_folded`, `email` and `external_id` serve.
        CompareOp::Sw => match successor(&v) {
            Some(end) if !v.is_empty() => text(Rel::Ge).and(guarded(Atom::Text {
                col: a.col,
                lower: a.lower_col,
                rel: Rel::Lt,
                value: end,
            })),
            _ => substring(|e| format!("{e}%"), Atom::StartsWith),
        },
        CompareOp::Ew => substring(|e| format!("%{e}"), Atom::EndsWith),
    })
}

/// The least string greater than every string that starts with `prefix` (code point order):
/// the prefix with its last character incremented.
fn successor(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    let last = chars.pop()?;
    let next = match last as u32 + 1 {
        0xD800 => '\u{E000}',
        n => char::from_u32(n)?,
    };
    chars.push(next);
    Some(chars.into_iter().collect())
}

fn compare_time(
    path: &AttrPath,
    col: TimeCol,
    op: CompareOp,
    value: &Value,
) -> Result<Cond, String> {
    let shown = || clip(&path.to_string());
    if matches!(op, CompareOp::Co | CompareOp::Sw | CompareOp::Ew) {
        return Err(format!(
            "'{}' is a date-time: '{}' does not apply to it",
            shown(),
            op.keyword()
        ));
    }
    let s = match value {
        Value::Str(s) => s,
        // Always present.
        Value::Null => {
            return Ok(Cond::from_bool(op == CompareOp::Ne));
        }
        Value::Num(_) | Value::Bool(_) => {
            return Err(format!(
                "'{}' is a date-time: compare it with a string such as \"2024-01-31T12:00:00Z\"",
                shown()
            ))
        }
    };
    let Some((secs, fraction)) = parse_rfc3339(s) else {
        return Err(format!(
            "'{}' needs an RFC 3339 date-time such as \"2024-01-31T12:00:00Z\", not \"{}\"",
            shown(),
            clip(s)
        ));
    };
    let time = |rel: Rel| Cond::atom(Atom::Time(col, rel, secs));
    // The columns hold whole seconds; with a fraction the instant lies strictly between
    // `secs` and `secs + 1`.
    Ok(match op {
        CompareOp::Eq if fraction => Cond::False,
        CompareOp::Eq => time(Rel::Eq),
        CompareOp::Ne if fraction => Cond::True,
        CompareOp::Ne => time(Rel::Eq).negate(),
        CompareOp::Gt => time(Rel::Gt),
        CompareOp::Ge if fraction => time(Rel::Gt),
        CompareOp::Ge => time(Rel::Ge),
        CompareOp::Lt if fraction => time(Rel::Le),
        CompareOp::Lt => time(Rel::Lt),
        CompareOp::Le => time(Rel::Le),
        CompareOp::Co | CompareOp::Sw | CompareOp::Ew => Cond::False,
    })
}

/// An RFC 3339 date-time (`2024-01-31T12:00:00Z`, `…T12:00:00.5+01:00`) as Unix seconds,
/// rounded down, and whether a non-zero fraction of a second followed.
fn parse_rfc3339(s: &str) -> Option<(i64, bool)> {
    let t = time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339).ok()?;
    Some((t.unix_timestamp(), t.nanosecond() != 0))
}

// ---------------------------------------------------------------------------------------------
// Sorting and cursors

/// A `sortBy` the users listing takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SortKey {
    /// `meta.created`, the order without `sortBy`.
    Created,
    UserName,
    DisplayName,
    Id,
    ExternalId,
    UserType,
    PreferredLanguage,
    Active,
    /// `emails` or `emails.value`.
    Email,
    /// `meta.lastModified`.
    LastModified,
}

impl SortKey {
    pub const ALL: [SortKey; 10] = [
        SortKey::Created,
        SortKey::UserName,
        SortKey::DisplayName,
        SortKey::Id,
        SortKey::ExternalId,
        SortKey::UserType,
        SortKey::PreferredLanguage,
        SortKey::Active,
        SortKey::Email,
        SortKey::LastModified,
    ];

    /// Reads a `sortBy` value: attribute names ignore case and may carry the core User schema
    /// URN. The error is a message for the client.
    pub fn parse(sort_by: &str) -> Result<SortKey, String> {
        let name = coffer_domain::scim_schema::strip_user_urn(sort_by);
        Ok(match name.to_ascii_lowercase().as_str() {
            "meta.created" => SortKey::Created,
            "username" => SortKey::UserName,
            "displayname" => SortKey::DisplayName,
            "id" => SortKey::Id,
            "externalid" => SortKey::ExternalId,
            "usertype" => SortKey::UserType,
            "preferredlanguage" => SortKey::PreferredLanguage,
            "active" => SortKey::Active,
            "emails" | "emails.value" => SortKey::Email,
            "meta.lastmodified" => SortKey::LastModified,
            _ => {
                return Err(format!(
                    "cannot sort by '{}': sortBy takes userName, displayName, id, externalId, \
                     userType, preferredLanguage, active, emails, meta.created or \
                     meta.lastModified",
                    clip(sort_by)
                ))
            }
        })
    }
}

/// Where a chunk ended: the last row's sort value and id. Opaque; pass it back to [`chunk`]
/// with the same filter, sort and direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cursor {
    sort: SortKey,
    key: Key,
    id: String,
}

/// A sort value as SQL computed it (lowered, NULL as '').
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Text(String),
    Int(i64),
    Bool(bool),
}

// ---------------------------------------------------------------------------------------------
// Queries

/// The role SCIM does not manage: system administrators are kept out of every listing.
pub const SYSTEM_ADMIN: &str = "system-admin";

/// Counts the users (deleted ones and system administrators aside) that satisfy `filter`.
pub fn count(conn: &mut DbConn, filter: Option<&UserFilter>) -> StoreResult<i64> {
    let cond = match filter.map(|f| &f.cond) {
        Some(Cond::False) => return Ok(0),
        Some(Cond::True) | None => None,
        Some(c) => Some(c),
    };
    Ok(match conn {
        DbConn::Sqlite(c) => sqlite_sql::count(c, cond)?,
        DbConn::Pg(c) => pg_sql::count(c, cond)?,
    })
}

/// A chunk's users with their profile names (`userType`), and the cursor after the last one.
pub type Chunk = (Vec<(User, String)>, Option<Cursor>);

/// One chunk of a listing: up to `limit` users (deleted ones and system administrators aside)
/// satisfying `filter`, with
/// their profile names, in order of (`sort` value, id), descending when asked; after `after`,
/// or from the `offset`th row when there is no cursor. The cursor of the last row comes back
/// when the chunk is full, `None` when fewer than `limit` rows came (the listing is done).
///
/// Sort values ignore case except for `id` and `externalId`; a missing value sorts as "".
pub fn chunk(
    conn: &mut DbConn,
    filter: Option<&UserFilter>,
    sort: SortKey,
    descending: bool,
    after: Option<&Cursor>,
    offset: i64,
    limit: i64,
) -> StoreResult<Chunk> {
    let cond = match filter.map(|f| &f.cond) {
        Some(Cond::False) => return Ok((Vec::new(), None)),
        Some(Cond::True) | None => None,
        Some(c) => Some(c),
    };
    if limit <= 0 {
        return Ok((Vec::new(), None));
    }
    if let Some(cursor) = after {
        if cursor.sort != sort {
            return Err(StoreError::Diesel(
                diesel::result::Error::QueryBuilderError("a cursor of another sort order".into()),
            ));
        }
    }
    let page = Page {
        cond,
        sort,
        descending,
        after,
        offset: if after.is_some() { 0 } else { offset.max(0) },
        limit,
    };
    let rows = match conn {
        DbConn::Sqlite(c) => sqlite_sql::chunk(c, &page)?,
        DbConn::Pg(c) => pg_sql::chunk(c, &page)?,
    };
    let cursor = if rows.len() as i64 == limit {
        rows.last().map(|(user, _, key)| Cursor {
            sort,
            key: key.clone(),
            id: user.id.clone(),
        })
    } else {
        None
    };
    Ok((
        rows.into_iter()
            .map(|(user, profile, _)| (user, profile))
            .collect(),
        cursor,
    ))
}

struct Page<'a> {
    cond: Option<&'a Cond>,
    sort: SortKey,
    descending: bool,
    after: Option<&'a Cursor>,
    offset: i64,
    limit: i64,
}

type Src = InnerJoinQuerySource<users::table, profiles::table>;

mod sql_fn {
    use diesel::sql_types::{Bool, Integer, Nullable, Text};

    diesel::define_sql_function! {
        /// `replace(s, from, to)`: case-sensitive on both backends.
        fn replace(s: Text, from: Text, to: Text) -> Text;
    }
    diesel::define_sql_function! {
        /// `substr(s, start, length)`, 1-based.
        fn substr(s: Text, start: Integer, length: Integer) -> Text;
    }
    diesel::define_sql_function! {
        /// Characters, on both backends.
        fn length(s: Text) -> Integer;
    }
    diesel::define_sql_function! {
        fn coalesce(x: Nullable<Text>, y: Text) -> Text;
    }
    diesel::define_sql_function! {
        /// `coalesce` of a nullable flag with its default.
        #[sql_name = "coalesce"]
        fn coalesce_bool(x: Nullable<Bool>, y: Bool) -> Bool;
    }
}

/// The queries, written once and compiled per backend (the boxed expressions name it).
macro_rules! backend_sql {
    ($module:ident, $db:ty, $conn:ty) => {
        mod $module {
            use super::sql_fn::{coalesce, coalesce_bool, length, replace, substr};
            use super::*;
            use crate::filter::lower;

            type Db = $db;
            type BoolExpr = Box<dyn BoxableExpression<Src, Db, SqlType = Bool>>;
            type TextExpr = Box<dyn BoxableExpression<Src, Db, SqlType = Text>>;
            type IntExpr = Box<dyn BoxableExpression<Src, Db, SqlType = diesel::sql_types::BigInt>>;

            /// A text column; nullable ones as if not null, for use behind their `IS NOT NULL`.
            fn column(col: Col) -> TextExpr {
                match col {
                    Col::Id => Box::new(users::id),
                    Col::ExternalId => Box::new(users::external_id.assume_not_null()),
                    Col::UserName => Box::new(users::user_name.assume_not_null()),
                    Col::UserNameFolded => Box::new(users::user_name_folded.assume_not_null()),
                    Col::Name => Box::new(users::name),
                    Col::ProfileName => Box::new(profiles::name),
                    Col::PreferredLanguage => Box::new(users::preferred_language.assume_not_null()),
                    Col::Email => Box::new(users::email),
                    Col::Mobile => Box::new(users::mobile_number.assume_not_null()),
                    Col::Role => Box::new(users::role),
                }
            }

            fn operand(col: Col, lowered: bool) -> TextExpr {
                if lowered {
                    Box::new(lower(column(col)))
                } else {
                    column(col)
                }
            }

            fn time(col: TimeCol) -> IntExpr {
                match col {
                    TimeCol::Created => Box::new(users::created_at),
                    TimeCol::Updated => Box::new(users::updated_at),
                }
            }

            fn cond(c: &Cond) -> BoolExpr {
                match c {
                    Cond::True => Box::new(true.into_sql::<Bool>()),
                    Cond::False => Box::new(false.into_sql::<Bool>()),
                    Cond::And(a, b) => Box::new(cond(a).and(cond(b))),
                    Cond::Or(a, b) => Box::new(cond(a).or(cond(b))),
                    Cond::Not(a) => Box::new(diesel::dsl::not(cond(a))),
                    Cond::Atom(a) => atom(a),
                }
            }

            fn atom(a: &Atom) -> BoolExpr {
                match a {
                    Atom::NotNull(col) => match col {
                        Col::ExternalId => Box::new(users::external_id.is_not_null()),
                        Col::UserName | Col::UserNameFolded => {
                            Box::new(users::user_name.is_not_null())
                        }
                        Col::PreferredLanguage => Box::new(users::preferred_language.is_not_null()),
                        Col::Mobile => Box::new(users::mobile_number.is_not_null()),
                        Col::Id | Col::Name | Col::ProfileName | Col::Email | Col::Role => {
                            Box::new(true.into_sql::<Bool>())
                        }
                    },
                    Atom::NotEqual(col, v) => Box::new(column(*col).ne(*v)),
                    Atom::Text {
                        col,
                        lower,
                        rel,
                        value,
                    } => {
                        let l = operand(*col, *lower);
                        let v = value.clone();
                        match rel {
                            Rel::Eq => Box::new(l.eq(v)),
                            Rel::Gt => Box::new(Binary(l).gt(v)),
                            Rel::Ge => Box::new(Binary(l).ge(v)),
                            Rel::Lt => Box::new(Binary(l).lt(v)),
                            Rel::Le => Box::new(Binary(l).le(v)),
                        }
                    }
                    Atom::Like {
                        col,
                        lower,
                        pattern,
                    } => Box::new(operand(*col, *lower).like(pattern.clone()).escape('\\')),
                    Atom::Contains(col, v) => {
                        Box::new(replace(column(*col), v.clone(), "").ne(column(*col)))
                    }
                    Atom::StartsWith(col, v) => {
                        let n = chars(v);
                        Box::new(substr(column(*col), 1, n).eq(v.clone()))
                    }
                    Atom::EndsWith(col, v) => {
                        let n = chars(v);
                        Box::new(length(column(*col)).ge(n).and(
                            substr(column(*col), length(column(*col)) - (n - 1), n).eq(v.clone()),
                        ))
                    }
                    Atom::Bool(col, b) => match col {
                        BoolCol::Active => Box::new(users::active.eq(*b)),
                        BoolCol::EmailPrimary => {
                            Box::new(coalesce_bool(users::email_primary, true).eq(*b))
                        }
                        BoolCol::MobilePrimary => {
                            Box::new(coalesce_bool(users::mobile_primary, true).eq(*b))
                        }
                    },
                    Atom::Time(col, rel, secs) => {
                        let t = time(*col);
                        match rel {
                            Rel::Eq => Box::new(t.eq(*secs)),
                            Rel::Gt => Box::new(t.gt(*secs)),
                            Rel::Ge => Box::new(t.ge(*secs)),
                            Rel::Lt => Box::new(t.lt(*secs)),
                            Rel::Le => Box::new(t.le(*secs)),
                        }
                    }
                }
            }

            /// The text sort value: lowered unless caseExact, NULL as ''.
            fn text_key(sort: SortKey) -> TextExpr {
                match sort {
                    SortKey::UserName => Box::new(coalesce(users::user_name_folded, "")),
                    SortKey::DisplayName => Box::new(lower(users::name)),
                    SortKey::ExternalId => Box::new(coalesce(users::external_id, "")),
                    SortKey::UserType => Box::new(lower(profiles::name)),
                    SortKey::PreferredLanguage => {
                        Box::new(lower(coalesce(users::preferred_language, "")))
                    }
                    SortKey::Email => Box::new(users::email),
                    SortKey::Id | SortKey::Created | SortKey::LastModified | SortKey::Active => {
                        Box::new(users::id)
                    }
                }
            }

            fn keyset_error() -> diesel::result::Error {
                diesel::result::Error::QueryBuilderError("a cursor of another sort order".into())
            }

            pub(super) fn count(conn: &mut $conn, c: Option<&Cond>) -> QueryResult<i64> {
                let mut q = users::table
                    .inner_join(profiles::table)
                    .filter(users::deleted.eq(false))
                    .filter(users::role.ne(SYSTEM_ADMIN))
                    .count()
                    .into_boxed::<Db>();
                if let Some(c) = c {
                    q = q.filter(cond(c));
                }
                q.get_result(conn)
            }

            pub(super) fn chunk(
                conn: &mut $conn,
                page: &Page<'_>,
            ) -> QueryResult<Vec<(User, String, Key)>> {
                let desc = page.descending;
                match page.sort {
                    SortKey::Created | SortKey::LastModified => {
                        let col = if page.sort == SortKey::Created {
                            TimeCol::Created
                        } else {
                            TimeCol::Updated
                        };
                        let mut q = users::table
                            .inner_join(profiles::table)
                            .filter(users::deleted.eq(false))
                            .filter(users::role.ne(SYSTEM_ADMIN))
                            .select((User::as_select(), profiles::name))
                            .into_boxed::<Db>();
                        if let Some(c) = page.cond {
                            q = q.filter(cond(c));
                        }
                        if let Some(cursor) = page.after {
                            let Key::Int(v) = cursor.key else {
                                return Err(keyset_error());
                            };
                            let id = cursor.id.clone();
                            q = if desc {
                                q.filter(
                                    time(col)
                                        .lt(v)
                                        .or(time(col).eq(v).and(Binary(users::id).lt(id))),
                                )
                            } else {
                                q.filter(
                                    time(col)
                                        .gt(v)
                                        .or(time(col).eq(v).and(Binary(users::id).gt(id))),
                                )
                            };
                        }
                        q = if desc {
                            q.order_by((time(col).desc(), Binary(users::id).desc()))
                        } else {
                            q.order_by((time(col).asc(), Binary(users::id).asc()))
                        };
                        let rows: Vec<(User, String)> =
                            q.offset(page.offset).limit(page.limit).load(conn)?;
                        Ok(rows
                            .into_iter()
                            .map(|(u, p)| {
                                let key = Key::Int(if col == TimeCol::Created {
                                    u.created_at
                                } else {
                                    u.updated_at
                                });
                                (u, p, key)
                            })
                            .collect())
                    }
                    SortKey::Active => {
                        let mut q = users::table
                            .inner_join(profiles::table)
                            .filter(users::deleted.eq(false))
                            .filter(users::role.ne(SYSTEM_ADMIN))
                            .select((User::as_select(), profiles::name))
                            .into_boxed::<Db>();
                        if let Some(c) = page.cond {
                            q = q.filter(cond(c));
                        }
                        if let Some(cursor) = page.after {
                            let Key::Bool(v) = cursor.key else {
                                return Err(keyset_error());
                            };
                            let id = cursor.id.clone();
                            q = if desc {
                                q.filter(
                                    users::active
                                        .lt(v)
                                        .or(users::active.eq(v).and(Binary(users::id).lt(id))),
                                )
                            } else {
                                q.filter(
                                    users::active
                                        .gt(v)
                                        .or(users::active.eq(v).and(Binary(users::id).gt(id))),
                                )
                            };
                        }
                        q = if desc {
                            q.order_by((users::active.desc(), Binary(users::id).desc()))
                        } else {
                            q.order_by((users::active.asc(), Binary(users::id).asc()))
                        };
                        let rows: Vec<(User, String)> =
                            q.offset(page.offset).limit(page.limit).load(conn)?;
                        Ok(rows
                            .into_iter()
                            .map(|(u, p)| {
                                let key = Key::Bool(u.active);
                                (u, p, key)
                            })
                            .collect())
                    }
                    sort => {
                        let mut q = users::table
                            .inner_join(profiles::table)
                            .filter(users::deleted.eq(false))
                            .filter(users::role.ne(SYSTEM_ADMIN))
                            .select((User::as_select(), profiles::name, text_key(sort)))
                            .into_boxed::<Db>();
                        if let Some(c) = page.cond {
                            q = q.filter(cond(c));
                        }
                        if let Some(cursor) = page.after {
                            let Key::Text(v) = &cursor.key else {
                                return Err(keyset_error());
                            };
                            let (v, id) = (v.clone(), cursor.id.clone());
                            q = if desc {
                                q.filter(
                                    Binary(text_key(sort))
                                        .lt(v.clone())
                                        .or(text_key(sort).eq(v).and(Binary(users::id).lt(id))),
                                )
                            } else {
                                q.filter(
                                    Binary(text_key(sort))
                                        .gt(v.clone())
                                        .or(text_key(sort).eq(v).and(Binary(users::id).gt(id))),
                                )
                            };
                        }
                        q = if desc {
                            q.order_by((Binary(text_key(sort)).desc(), Binary(users::id).desc()))
                        } else {
                            q.order_by((Binary(text_key(sort)).asc(), Binary(users::id).asc()))
                        };
                        let rows: Vec<(User, String, String)> =
                            q.offset(page.offset).limit(page.limit).load(conn)?;
                        Ok(rows
                            .into_iter()
                            .map(|(u, p, k)| (u, p, Key::Text(k)))
                            .collect())
                    }
                }
            }

            #[cfg(test)]
            pub(super) fn debug_where(c: &Cond) -> String {
                let q = users::table
                    .inner_join(profiles::table)
                    .select(users::id)
                    .filter(cond(c))
                    .into_boxed::<Db>();
                diesel::debug_query::<Db, _>(&q).to_string()
            }
        }
    };
}

/// Character count of a literal, as SQL `length` counts (`i32`: filters are at most 4,096
/// characters long).
fn chars(s: &str) -> i32 {
    i32::try_from(s.chars().count()).unwrap_or(i32::MAX)
}

backend_sql!(
    sqlite_sql,
    diesel::sqlite::Sqlite,
    diesel::sqlite::SqliteConnection
);
backend_sql!(pg_sql, diesel::pg::Pg, diesel::pg::PgConnection);

#[cfg(test)]
mod tests {
    use super::*;
    use coffer_domain::scim_filter::parse;

    fn tr(input: &str) -> Result<UserFilter, String> {
        translate(&parse(input).unwrap_or_else(|e| panic!("{input}: {e}")))
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let cases: &[(&str, &str)] = &[
            ("foo eq \"x\"", "unknown attribute 'foo'"),
            (
                "name.givenName eq \"x\"",
                "unknown attribute 'name.givenName'",
            ),
            ("schemas pr", "unknown attribute 'schemas'"),
            ("userName.x pr", "userName has no sub-attributes"),
            ("id.value eq \"x\"", "id has no sub-attributes"),
            (
                "emails.display eq \"x\"",
                "emails has the sub-attributes value, type or primary",
            ),
            ("roles.type eq \"x\"", "roles has the sub-attributes value"),
            ("meta.foo pr", "meta has the sub-attributes"),
            (
                "meta.location eq \"x\"",
                "'meta.location' cannot be filtered on",
            ),
            ("meta.version pr", "'meta.version' cannot be filtered on"),
            ("meta eq \"x\"", "'meta' is complex"),
            ("password pr", "'password' is never returned"),
            (
                "active gt \"x\"",
                "only eq, ne and pr apply to it, not 'gt'",
            ),
            ("active co \"t\"", "not 'co'"),
            ("active eq \"true\"", "compare it with true or false"),
            ("active ne 1", "compare it with true or false"),
            ("emails.primary co \"x\"", "'emails.primary' is a boolean"),
            (
                "emails.primary eq \"true\"",
                "compare it with true or false",
            ),
            ("phoneNumbers.primary lt \"x\"", "only eq, ne and pr apply"),
            ("emails.type eq true", "'emails.type' is a string"),
            ("userName eq 5", "'userName' is a string"),
            ("displayName ne false", "is a string"),
            ("roles eq true", "is a string"),
            ("meta.created co \"2020\"", "'co' does not apply"),
            ("meta.lastModified ew \"Z\"", "'ew' does not apply"),
            (
                "meta.created eq \"yesterday\"",
                "needs an RFC 3339 date-time",
            ),
            (
                "meta.created gt \"2024-02-30T00:00:00Z\"",
                "needs an RFC 3339 date-time",
            ),
            (
                "meta.created gt \"2024-01-01\"",
                "needs an RFC 3339 date-time",
            ),
            (
                "meta.created gt \"2024-01-01T00:00:00\"",
                "needs an RFC 3339 date-time",
            ),
            (
                "meta.created gt \"2024-01-01T24:00:00Z\"",
                "needs an RFC 3339 date-time",
            ),
            ("meta.created gt 5", "is a date-time"),
            ("meta.created eq true", "is a date-time"),
            (
                "urn:other:schema:userName eq \"x\"",
                "unknown schema 'urn:other:schema'",
            ),
            (
                "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber pr",
                "unknown schema",
            ),
            (
                "userName[value pr]",
                "a value filter needs a multi-valued attribute",
            ),
            (
                "meta[created pr]",
                "a value filter needs a multi-valued attribute",
            ),
            ("emails[foo eq \"x\"]", "unknown attribute 'emails.foo'"),
            ("emails[primary co \"x\"]", "'emails.primary' is a boolean"),
            ("roles[type pr]", "roles has the sub-attributes value"),
            (
                "userName pr and (foo pr or active eq true)",
                "unknown attribute 'foo'",
            ),
            ("not (emails.value eq false)", "is a string"),
        ];
        for (input, want) in cases {
            match tr(input) {
                Ok(f) => panic!("{input}: translated to {f:?}, expected an error with {want:?}"),
                Err(e) => assert!(e.contains(want), "{input}: got {e:?}, expected {want:?}"),
            }
        }
    }

    #[test]
    fn accepts_names_in_any_case_and_the_user_urn() {
        for input in [
            "USERNAME eq \"x\"",
            "urn:ietf:params:scim:schemas:core:2.0:User:userName eq \"x\"",
            "URN:IETF:PARAMS:SCIM:SCHEMAS:CORE:2.0:USER:Emails[TYPE eq \"work\"]",
            "Meta.LastModified ge \"2024-01-01T00:00:00.5+02:00\"",
            "phonenumbers.VALUE sw \"+41\"",
            "emails pr and roles pr and phoneNumbers pr and meta pr",
        ] {
            assert!(tr(input).is_ok(), "{input}: {:?}", tr(input));
        }
    }

    #[test]
    fn constants_fold() {
        let constant = |input: &str| tr(input).expect(input).constant();
        assert_eq!(constant("meta.resourceType eq \"User\""), Some(true));
        assert_eq!(constant("meta.resourceType ne \"Group\""), Some(true));
        assert_eq!(constant("emails.type eq \"work\""), Some(true));
        assert_eq!(constant("emails.type eq \"home\""), Some(false));
        // The primary flags are stored: they need the database.
        assert_eq!(constant("emails.primary eq false"), None);
        assert_eq!(
            constant("emails[type eq \"work\"] and emails pr"),
            Some(true)
        );
        assert_eq!(constant("active pr or active eq null"), Some(true));
        assert_eq!(constant("meta.created eq null"), Some(false));
        assert_eq!(
            constant("meta.created eq \"2024-01-01T00:00:00.25Z\""),
            Some(false)
        );
        assert_eq!(constant("not (userName pr) or userName pr"), None);
        // `phoneNumbers.type` exists with a number only.
        assert_eq!(
            tr("phoneNumbers.type eq \"mobile\"").unwrap(),
            tr("phoneNumbers pr").unwrap()
        );
        assert_eq!(
            tr("phoneNumbers.type ne \"mobile\"").unwrap(),
            tr("not (phoneNumbers pr)").unwrap()
        );
    }

    #[test]
    fn parses_rfc3339() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some((0, false)));
        assert_eq!(
            parse_rfc3339("2024-01-31t12:00:00z"),
            Some((1_706_702_400, false))
        );
        assert_eq!(
            parse_rfc3339("2024-01-31T13:30:00.000+01:30"),
            Some((1_706_702_400, false))
        );
        assert_eq!(
            parse_rfc3339("2000-02-29T00:00:00.1Z"),
            Some((951_782_400, true))
        );
        assert_eq!(
            parse_rfc3339("1969-12-31T23:59:59-00:00"),
            Some((-1, false))
        );
        for bad in [
            "",
            "2023-02-29T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00+01:00x",
            "2024-1-01T00:00:00Z",
            "２024-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn sort_keys() {
        assert_eq!(SortKey::parse("userName"), Ok(SortKey::UserName));
        assert_eq!(SortKey::parse("USERNAME"), Ok(SortKey::UserName));
        assert_eq!(
            SortKey::parse("urn:ietf:params:scim:schemas:core:2.0:User:meta.lastModified"),
            Ok(SortKey::LastModified)
        );
        assert_eq!(SortKey::parse("emails"), Ok(SortKey::Email));
        assert_eq!(SortKey::parse("Emails.Value"), Ok(SortKey::Email));
        assert_eq!(SortKey::parse("meta.created"), Ok(SortKey::Created));
        assert_eq!(SortKey::parse("externalid"), Ok(SortKey::ExternalId));
        for bad in [
            "",
            "meta",
            "created",
            "emails.type",
            "password",
            "urn:x:y:userName",
        ] {
            assert!(SortKey::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sql_binds_every_value_and_guards_nullable_columns() {
        let f = tr(r#"externalId ne "it's" and userName co "a%" or meta.created gt "2024-01-01T00:00:00Z""#)
            .unwrap();
        let sqlite = sqlite_sql::debug_where(&f.cond);
        let pg = pg_sql::debug_where(&f.cond);
        for sql in [&sqlite, &pg] {
            let (query, binds) = sql
                .split_once("-- binds:")
                .expect("debug_query shows binds");
            assert!(!query.contains("it's") && !query.contains("a%"), "{sql}");
            assert!(
                binds.contains("it's") && binds.contains("%a\\\\%%"),
                "{sql}"
            );
            assert!(query.contains("IS NOT NULL"), "{sql}");
            // userName through the column Coffer folds; other attributes lowered in SQL.
            assert!(query.contains("user_name_folded"), "{sql}");
            assert!(query.contains("ESCAPE"), "{sql}");
        }
        assert!(pg.contains("$1"), "{pg}");
        let named = tr(r#"displayName eq "Ünal""#).unwrap();
        assert!(sqlite_sql::debug_where(&named.cond).contains("lower("));
        let ordered = tr(r#"userName gt "m""#).unwrap();
        let pg = pg_sql::debug_where(&ordered.cond);
        assert!(pg.contains("COLLATE \"C\" >"), "{pg}");
        let sqlite = sqlite_sql::debug_where(&ordered.cond);
        assert!(!sqlite.contains("COLLATE"), "{sqlite}");
    }
}
