//! OAuth scopes: their grammar, their canonical text, whether a scope allows a REST call, and
//! whether one scope covers another (the scope algebra the OAuth flows rely on).
//!
//! A scope is a space-separated list of items `[METHOD/]entity/action`, where `entity` is the
//! first path segment after `/rest/` and `action` the next one (empty when the path has none).
//! `*` stands for any value of a part; `*` alone stands for everything, including paths outside
//! `/rest/`. An item without a method allows every method, exactly like the method `*`.
//!
//! An item of more than two segments after its method, `METHOD/seg/seg/seg[/…]`, names one
//! call on one object: the method (a real one, not `*`) on exactly the path `/rest/seg/seg/…`,
//! with no wildcard, nothing before or after it; e.g. `GET/sources/<id>/content` reaches the
//! content of the one source file `<id>` and nothing else. Such items are how a short-lived
//! token is confined to one file.

use std::fmt;
use std::str::FromStr;

/// The methods a scope item may name (`*` is any method).
const METHODS: &[&str] = &[
    "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "*",
];

/// The prefix of the paths that scope items describe.
const REST_PREFIX: &str = "/rest/";

/// One item of a scope.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ScopeItem {
    /// `*`: every call, inside `/rest/` or not.
    Everything,
    /// `[METHOD/]entity/action` on `/rest/` paths.
    Rest {
        /// Upper-cased; `None` (not written) and `Some("*")` both mean any method.
        method: Option<String>,
        entity: String,
        action: String,
    },
    /// `METHOD/seg/seg/seg[/…]`: the one call `METHOD /rest/seg/seg/seg…`, exactly.
    Path {
        /// Upper-cased; never `*`.
        method: String,
        /// Three or more literal segments (no `*`, no dot segment).
        segments: Vec<String>,
    },
}

impl ScopeItem {
    fn parse(item: &str) -> Result<ScopeItem, String> {
        let bad = |why: &str| format!("invalid scope item `{item}`: {why}");
        let parts: Vec<&str> = item.split('/').collect();
        if parts.iter().any(|p| p.is_empty()) {
            return Err(bad("empty part"));
        }
        let (method, entity, action) = match parts.as_slice() {
            ["*"] => return Ok(ScopeItem::Everything),
            [_] => {
                return Err(bad(
                    "expected `entity/action`, `METHOD/entity/action` or `*`",
                ))
            }
            // `*/*` is entity and action wildcards; only a real method name is ambiguous here.
            [first, _] if *first != "*" && is_method(first) => {
                return Err(bad("a method needs both an entity and an action"))
            }
            [entity, action] => (None, *entity, *action),
            [method, entity, action] => {
                if !is_method(method) {
                    return Err(bad("unknown method"));
                }
                (Some(method.to_ascii_uppercase()), *entity, *action)
            }
            [method, segments @ ..] => {
                // One object: a real method and literal segments, so the item names exactly
                // one call.
                if *method == "*" || !is_method(method) {
                    return Err(bad("an item naming one path needs a method other than `*`"));
                }
                for segment in segments {
                    check_part(segment).map_err(bad)?;
                    if *segment == "*" || is_dot_segment(segment) {
                        return Err(bad(
                            "an item naming one path takes no `*` and no `.` or `..`",
                        ));
                    }
                }
                return Ok(ScopeItem::Path {
                    method: method.to_ascii_uppercase(),
                    segments: segments.iter().map(|s| (*s).to_owned()).collect(),
                });
            }
            [] => return Err(bad("empty item")),
        };
        for part in [entity, action] {
            check_part(part).map_err(bad)?;
        }
        Ok(ScopeItem::Rest {
            method,
            entity: entity.to_owned(),
            action: action.to_owned(),
        })
    }

    /// Whether this item allows the call `method` on the `/rest/` path whose part after
    /// `/rest/` is `rest`, with the given entity and action.
    fn allows(&self, method: &str, rest: &str, entity: &str, action: &str) -> bool {
        match self {
            ScopeItem::Everything => true,
            ScopeItem::Path {
                method: m,
                segments,
            } => {
                m.eq_ignore_ascii_case(method)
                    && rest.split('/').count() == segments.len()
                    && rest.split('/').zip(segments).all(|(a, b)| a == b)
            }
            ScopeItem::Rest {
                method: m,
                entity: e,
                action: a,
            } => {
                // An empty entity is not a resource: only `*` alone reaches `/rest/` itself.
                !entity.is_empty()
                    && method_matches(m.as_deref(), method)
                    && part_matches(e, entity)
                    && part_matches(a, action)
            }
        }
    }

    /// Whether every call `other` allows is also allowed by `self`.
    fn covers(&self, other: &ScopeItem) -> bool {
        match (self, other) {
            (ScopeItem::Everything, _) => true,
            (ScopeItem::Rest { .. } | ScopeItem::Path { .. }, ScopeItem::Everything) => false,
            (ScopeItem::Path { .. }, ScopeItem::Rest { .. }) => false,
            (ScopeItem::Path { .. }, ScopeItem::Path { .. }) => self == other,
            (
                ScopeItem::Rest {
                    method: m1,
                    entity: e1,
                    action: a1,
                },
                ScopeItem::Path {
                    method: m2,
                    segments,
                },
            ) => {
                (any_method(m1.as_deref()) || m1.as_deref() == Some(m2.as_str()))
                    && part_matches(e1, &segments[0])
                    && part_matches(a1, &segments[1])
            }
            (
                ScopeItem::Rest {
                    method: m1,
                    entity: e1,
                    action: a1,
                },
                ScopeItem::Rest {
                    method: m2,
                    entity: e2,
                    action: a2,
                },
            ) => {
                let method_ok = match (any_method(m1.as_deref()), any_method(m2.as_deref())) {
                    (true, _) => true,
                    // Any method is wider than one method.
                    (false, true) => false,
                    (false, false) => m1 == m2,
                };
                method_ok && (e1 == "*" || e1 == e2) && (a1 == "*" || a1 == a2)
            }
        }
    }
}

impl fmt::Display for ScopeItem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScopeItem::Everything => f.write_str("*"),
            ScopeItem::Rest {
                method: Some(m),
                entity,
                action,
            } => write!(f, "{m}/{entity}/{action}"),
            ScopeItem::Rest {
                method: None,
                entity,
                action,
            } => write!(f, "{entity}/{action}"),
            ScopeItem::Path { method, segments } => {
                write!(f, "{method}/{}", segments.join("/"))
            }
        }
    }
}

fn is_method(s: &str) -> bool {
    METHODS.iter().any(|m| m.eq_ignore_ascii_case(s))
}

fn any_method(m: Option<&str>) -> bool {
    matches!(m, None | Some("*"))
}

fn method_matches(item: Option<&str>, method: &str) -> bool {
    match item {
        None | Some("*") => true,
        Some(m) => m.eq_ignore_ascii_case(method),
    }
}

fn part_matches(item: &str, value: &str) -> bool {
    item == "*" || item == value
}

fn check_part(part: &str) -> Result<(), &'static str> {
    if !part
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'*' | b'.' | b'-'))
    {
        return Err("entity and action allow only letters, digits, `_`, `.`, `-` and `*`");
    }
    // `*` is a whole-part wildcard; `user*` would read as a prefix match it is not.
    if part != "*" && part.contains('*') {
        return Err("`*` must stand alone in a part");
    }
    Ok(())
}

/// A parsed scope: its items in their original order, without duplicates.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Scope {
    items: Vec<ScopeItem>,
}

impl Scope {
    /// Parses a space-separated scope. A blank string is the empty scope.
    pub fn parse(s: &str) -> Result<Scope, String> {
        let mut items: Vec<ScopeItem> = Vec::new();
        for raw in s.split_ascii_whitespace() {
            let item = ScopeItem::parse(raw)?;
            if !items.contains(&item) {
                items.push(item);
            }
        }
        Ok(Scope { items })
    }

    /// The scope `*`: every call.
    pub fn everything() -> Scope {
        Scope {
            items: vec![ScopeItem::Everything],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn items(&self) -> &[ScopeItem] {
        &self.items
    }

    /// Whether a call `method path` (the full request path, e.g. `/rest/users/me`) is allowed.
    pub fn allows(&self, method: &str, path: &str) -> bool {
        if self.items.contains(&ScopeItem::Everything) {
            return true;
        }
        let Some(rest) = rest_path(path) else {
            return false;
        };
        let mut segments = rest.split('/');
        let entity = segments.next().unwrap_or_default();
        let action = segments.next().unwrap_or_default();
        self.items
            .iter()
            .any(|i| i.allows(method, rest, entity, action))
    }

    /// Whether every item of `other` is covered by some item of `self` (so `other` grants
    /// nothing `self` does not). The empty scope is covered by every scope.
    pub fn covers(&self, other: &Scope) -> bool {
        other
            .items
            .iter()
            .all(|o| self.items.iter().any(|s| s.covers(o)))
    }
}

/// The part of a `/rest/` path after `/rest/`, without query or fragment; `None` for other
/// paths and for paths whose segments could be resolved differently downstream (dot segments,
/// backslashes, controls), so that the scope check and the router never disagree on which
/// entity or object a call reaches.
fn rest_path(path: &str) -> Option<&str> {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    let rest = path.strip_prefix(REST_PREFIX)?;
    if rest.contains('\\') || rest.chars().any(char::is_control) {
        return None;
    }
    if rest.split('/').any(is_dot_segment) {
        return None;
    }
    Some(rest)
}

/// `.` or `..`, also percent-encoded (`%2e`, `.%2E`, …).
fn is_dot_segment(segment: &str) -> bool {
    let decoded = segment.to_ascii_lowercase().replace("%2e", ".");
    decoded == "." || decoded == ".."
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, item) in self.items.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write!(f, "{item}")?;
        }
        Ok(())
    }
}

impl FromStr for Scope {
    type Err = String;
    fn from_str(s: &str) -> Result<Scope, String> {
        Scope::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(s: &str) -> Scope {
        Scope::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_valid_scopes_to_canonical_text() {
        let cases = [
            ("GET/users/*", "GET/users/*"),
            ("folders/* files/* mail/*", "folders/* files/* mail/*"),
            ("*", "*"),
            ("*/*", "*/*"),
            ("POST/clients/*", "POST/clients/*"),
            ("get/users/me", "GET/users/me"),
            ("Delete/files/*", "DELETE/files/*"),
            ("*/users/*", "*/users/*"),
            ("options/a_b/c.d-e", "OPTIONS/a_b/c.d-e"),
            ("head/*/*", "HEAD/*/*"),
            ("patch/x/y put/x/y", "PATCH/x/y PUT/x/y"),
            // One object: a method and three or more literal segments.
            ("get/users/me/x", "GET/users/me/x"),
            (
                "GET/sources/aGk6eC50eHQ/content post/sources/actions/files/aGk6eC50eHQ",
                "GET/sources/aGk6eC50eHQ/content POST/sources/actions/files/aGk6eC50eHQ",
            ),
            // Extra whitespace is not significant, duplicates go, order stays.
            ("  users/*\t folders/*  users/*  ", "users/* folders/*"),
            ("GET/users/* get/users/*", "GET/users/*"),
            ("* * */*", "* */*"),
            ("", ""),
            ("   ", ""),
        ];
        for (input, canonical) in cases {
            let s = scope(input);
            assert_eq!(s.to_string(), canonical, "{input}");
            assert_eq!(scope(&s.to_string()), s, "round trip of {input}");
        }
    }

    #[test]
    fn rejects_malformed_items() {
        let cases = [
            "users",             // one part that is not `*`
            "users/",            // empty action
            "/users",            // empty entity
            "GET//x",            // empty part
            "//",                // all empty
            "a/b/c/d",           // a path without a method
            "*/users/me/x",      // a path with any method
            "GET/users/*/x",     // a wildcard in a path
            "GET/users/me/..",   // a dot segment in a path
            "GET/users/./x",     // a dot segment in a path
            "GET/users/me/",     // an empty segment
            "GET/users/m%2Fe/x", // a percent sign in a path
            "FETCH/users/*",     // unknown method
            "users/me/x",        // first of three parts not a method
            "GET/users",         // method with two parts is ambiguous
            "post/users",        // ... case-insensitively
            "users/m e",         // split into `users/m` and `e`: `e` has one part
            "users/m+e",         // character outside the set
            "users/mé",          // non-ASCII
            "us%65rs/*",         // percent sign
            "user*/*",           // partial wildcard
            "users/*me",         // partial wildcard
            "GET/users/* bad",   // one bad item spoils the scope
            "users/me\u{0}",     // control character
        ];
        for input in cases {
            assert!(Scope::parse(input).is_err(), "{input} should be rejected");
        }
        let msg = Scope::parse("FETCH/users/*").unwrap_err();
        assert!(msg.contains("FETCH/users/*"), "{msg}");
    }

    #[test]
    fn items_and_emptiness() {
        let s = scope("GET/users/* *");
        assert_eq!(
            s.items(),
            &[
                ScopeItem::Rest {
                    method: Some("GET".into()),
                    entity: "users".into(),
                    action: "*".into()
                },
                ScopeItem::Everything
            ]
        );
        assert!(!s.is_empty());
        assert!(scope("").is_empty());
        assert!(Scope::default().is_empty());
        assert_eq!(Scope::everything(), scope("*"));
        assert_eq!("users/*".parse::<Scope>(), Ok(scope("users/*")));
    }

    #[test]
    fn allows_calls() {
        // (scope, method, path, allowed)
        let cases = [
            ("*", "GET", "/rest/users/me", true),
            ("*", "POST", "/oauth/token", true),
            ("*", "GET", "/webhooks", true),
            ("*", "GET", "/rest/users/../admin", true),
            ("*/*", "DELETE", "/rest/admin/users", true),
            ("*/*", "GET", "/webhooks", false),
            ("*/*", "GET", "/rest/", false),
            ("*/*", "GET", "/rest", false),
            ("GET/users/*", "GET", "/rest/users/me", true),
            ("GET/users/*", "get", "/rest/users/me", true),
            ("GET/users/*", "GET", "/rest/users", true),
            ("GET/users/*", "GET", "/rest/users/", true),
            ("GET/users/*", "GET", "/rest/users/me/devices", true),
            ("GET/users/*", "GET", "/rest/users/me?x=1", true),
            ("GET/users/*", "POST", "/rest/users/me", false),
            ("GET/users/*", "GET", "/rest/folders/1", false),
            ("GET/users/*", "GET", "/users/me", false),
            ("GET/users/*", "GET", "/restx/users/me", false),
            ("GET/users/*", "GET", "/rest/usersx/me", false),
            ("GET/users/*", "GET", "/rest/Users/me", false),
            ("users/me", "PATCH", "/rest/users/me", true),
            ("users/me", "GET", "/rest/users/me/x", true),
            ("users/me", "GET", "/rest/users/you", false),
            ("users/me", "GET", "/rest/users", false),
            ("*/users/*", "PUT", "/rest/users/1", true),
            ("*/*/actions", "POST", "/rest/mail/actions", true),
            ("*/*/actions", "POST", "/rest/mail/1", false),
            ("POST/*/*", "POST", "/rest/anything/x", true),
            ("POST/*/*", "GET", "/rest/anything/x", false),
            ("folders/* files/* mail/*", "GET", "/rest/files/1", true),
            ("folders/* files/* mail/*", "GET", "/rest/admin/x", false),
            // Contacts and external distribution lists: the entity is the path's first segment,
            // as written (`externalDL`); the distribution-list check is a `users` action.
            ("contacts/*", "GET", "/rest/contacts", true),
            ("contacts/*", "DELETE", "/rest/contacts/7", true),
            ("GET/contacts/*", "PUT", "/rest/contacts/7", false),
            ("externalDL/*", "POST", "/rest/externalDL", true),
            ("externaldl/*", "POST", "/rest/externalDL", false),
            ("GET/externalDL/*", "DELETE", "/rest/externalDL", false),
            (
                "GET/users/actions",
                "GET",
                "/rest/users/actions/getDistributionList",
                true,
            ),
            (
                "contacts/*",
                "GET",
                "/rest/users/actions/getDistributionList",
                false,
            ),
            // Paths that the router could resolve to another entity are refused.
            ("users/*", "GET", "/rest/users/../admin/x", false),
            ("users/*", "GET", "/rest/users/%2e%2e/admin", false),
            ("users/*", "GET", "/rest/users/.%2E/admin", false),
            ("users/*", "GET", "/rest/users/./x", false),
            ("users/*", "GET", "/rest/users\\..\\admin", false),
            ("users/*", "GET", "/rest/users/\u{7f}", false),
            ("*/*", "GET", "/rest//users", false),
            ("", "GET", "/rest/users/me", false),
            // One object: exactly its method and path.
            (
                "GET/sources/f1/content",
                "GET",
                "/rest/sources/f1/content",
                true,
            ),
            (
                "GET/sources/f1/content",
                "get",
                "/rest/sources/f1/content?inline=true",
                true,
            ),
            (
                "GET/sources/f1/content",
                "GET",
                "/rest/sources/f2/content",
                false,
            ),
            (
                "GET/sources/f1/content",
                "HEAD",
                "/rest/sources/f1/content",
                false,
            ),
            (
                "GET/sources/f1/content",
                "GET",
                "/rest/sources/f1/preview",
                false,
            ),
            ("GET/sources/f1/content", "GET", "/rest/sources/f1", false),
            (
                "GET/sources/f1/content",
                "GET",
                "/rest/sources/f1/content/",
                false,
            ),
            (
                "GET/sources/f1/content",
                "GET",
                "/rest/sources/f1/content/x",
                false,
            ),
            (
                "GET/sources/f1/content",
                "GET",
                "/rest/sources/F1/content",
                false,
            ),
            (
                "GET/sources/f1/content",
                "GET",
                "/rest/sources/%66%31/content",
                false,
            ),
            (
                "GET/sources/f1/content",
                "GET",
                "/rest/sources/x/../f1/content",
                false,
            ),
            (
                "GET/sources/f1/content",
                "GET",
                "/sources/f1/content",
                false,
            ),
            (
                "POST/sources/actions/files/f1",
                "POST",
                "/rest/sources/actions/files/f1",
                true,
            ),
            (
                "POST/sources/actions/files/f1",
                "POST",
                "/rest/sources/actions/files/f2",
                false,
            ),
            (
                "POST/sources/actions/files/f1",
                "DELETE",
                "/rest/sources/actions/files/f1",
                false,
            ),
            (
                "POST/sources/actions/files/f1",
                "POST",
                "/rest/sources/actions/lock",
                false,
            ),
        ];
        for (s, method, path, allowed) in cases {
            assert_eq!(
                scope(s).allows(method, path),
                allowed,
                "{s} {method} {path}"
            );
        }
    }

    #[test]
    fn covers_scopes() {
        // (wider, narrower, covered)
        let cases = [
            ("*", "*", true),
            ("*", "GET/users/*", true),
            ("*", "*/*", true),
            ("*/*", "*", false),
            ("*/*", "users/*", true),
            ("*/*", "GET/users/me", true),
            ("*/*/*", "users/*", true),
            ("users/*", "*/users/*", true),
            ("*/users/*", "users/*", true),
            ("users/*", "GET/users/*", true),
            ("users/*", "users/me", true),
            ("users/me", "users/*", false),
            ("users/*", "folders/*", false),
            ("GET/users/*", "users/*", false),
            ("GET/users/*", "*/users/*", false),
            ("GET/users/*", "POST/users/*", false),
            ("GET/users/*", "GET/users/me", true),
            ("GET/users/*", "GET/*/*", false),
            ("GET/*/*", "GET/users/me", true),
            ("folders/* files/* mail/*", "files/* mail/*", true),
            ("folders/* files/* mail/*", "files/* admin/*", false),
            ("folders/* files/*", "GET/files/1 POST/folders/*", true),
            ("users/*", "", true),
            ("", "", true),
            ("", "users/*", false),
            // One object: covered by what allows its call, covering only itself.
            ("GET/sources/*", "GET/sources/f1/content", true),
            ("sources/*", "POST/sources/actions/files/f1", true),
            ("*/*", "GET/sources/f1/content", true),
            ("*/sources/f1", "GET/sources/f1/content", true),
            ("POST/sources/*", "GET/sources/f1/content", false),
            ("files/*", "GET/sources/f1/content", false),
            ("sources/f2", "GET/sources/f1/content", false),
            ("GET/sources/f1/content", "GET/sources/f1/content", true),
            ("GET/sources/f1/content", "GET/sources/f2/content", false),
            ("GET/sources/f1/content", "POST/sources/f1/content", false),
            ("GET/sources/f1/content", "GET/sources/*", false),
            ("GET/sources/f1/content", "*", false),
        ];
        for (wide, narrow, covered) in cases {
            assert_eq!(
                scope(wide).covers(&scope(narrow)),
                covered,
                "{wide} covers {narrow}"
            );
        }
    }
}
