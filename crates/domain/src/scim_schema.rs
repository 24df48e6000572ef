//! The SCIM `User` schema as Coffer serves it (RFC 7643 §4.1, §7): the attributes Coffer stores,
//! with the characteristics that the discovery endpoint publishes and that body validation,
//! `attributes`/`excludedAttributes` projection and PATCH rely on.
//!
//! Attribute names are matched ignoring ASCII case (RFC 7643 §2.1); the names here are the
//! canonical spelling used in every response.

/// The core User schema URN.
pub const USER_SCHEMA: &str = "urn:ietf:params:scim:schemas:core:2.0:User";
/// The `ListResponse` message URN.
pub const LIST_RESPONSE: &str = "urn:ietf:params:scim:api:messages:2.0:ListResponse";
/// The `PatchOp` message URN.
pub const PATCH_OP: &str = "urn:ietf:params:scim:api:messages:2.0:PatchOp";
/// The `SearchRequest` message URN.
pub const SEARCH_REQUEST: &str = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

/// An attribute's data type (RFC 7643 §2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    Boolean,
    DateTime,
    Reference,
    Complex,
    Integer,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::Boolean => "boolean",
            Kind::DateTime => "dateTime",
            Kind::Reference => "reference",
            Kind::Complex => "complex",
            Kind::Integer => "integer",
        }
    }
}

/// RFC 7643 §7 `mutability`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutability {
    ReadOnly,
    ReadWrite,
    Immutable,
    WriteOnly,
}

impl Mutability {
    pub fn as_str(self) -> &'static str {
        match self {
            Mutability::ReadOnly => "readOnly",
            Mutability::ReadWrite => "readWrite",
            Mutability::Immutable => "immutable",
            Mutability::WriteOnly => "writeOnly",
        }
    }
}

/// RFC 7643 §7 `returned`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Returned {
    Always,
    Never,
    Default,
    Request,
}

impl Returned {
    pub fn as_str(self) -> &'static str {
        match self {
            Returned::Always => "always",
            Returned::Never => "never",
            Returned::Default => "default",
            Returned::Request => "request",
        }
    }
}

/// RFC 7643 §7 `uniqueness`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Uniqueness {
    None,
    Server,
}

impl Uniqueness {
    pub fn as_str(self) -> &'static str {
        match self {
            Uniqueness::None => "none",
            Uniqueness::Server => "server",
        }
    }
}

/// One attribute (or sub-attribute) definition.
#[derive(Debug, Clone, Copy)]
pub struct AttrDef {
    pub name: &'static str,
    pub description: &'static str,
    pub kind: Kind,
    pub multi: bool,
    pub required: bool,
    pub case_exact: bool,
    pub mutability: Mutability,
    pub returned: Returned,
    pub uniqueness: Uniqueness,
    /// The values published as `canonicalValues`: for `userType` and `roles` the only ones
    /// Coffer takes, elsewhere the usual ones (any language tag is a `preferredLanguage`).
    pub canonical: &'static [&'static str],
    /// What a reference attribute may refer to (`uri`, `external`, resource types).
    pub reference_types: &'static [&'static str],
    /// The sub-attributes of a complex attribute.
    pub subs: &'static [AttrDef],
}

pub(crate) const fn attr(name: &'static str, description: &'static str, kind: Kind) -> AttrDef {
    AttrDef {
        name,
        description,
        kind,
        multi: false,
        required: false,
        case_exact: false,
        mutability: Mutability::ReadWrite,
        returned: Returned::Default,
        uniqueness: Uniqueness::None,
        canonical: &[],
        reference_types: &[],
        subs: &[],
    }
}

impl AttrDef {
    pub(crate) const fn multi(mut self) -> Self {
        self.multi = true;
        self
    }
    pub(crate) const fn required(mut self) -> Self {
        self.required = true;
        self
    }
    pub(crate) const fn case_exact(mut self) -> Self {
        self.case_exact = true;
        self
    }
    pub(crate) const fn mutability(mut self, m: Mutability) -> Self {
        self.mutability = m;
        self
    }
    pub(crate) const fn returned(mut self, r: Returned) -> Self {
        self.returned = r;
        self
    }
    pub(crate) const fn unique(mut self) -> Self {
        self.uniqueness = Uniqueness::Server;
        self
    }
    pub(crate) const fn canonical(mut self, values: &'static [&'static str]) -> Self {
        self.canonical = values;
        self
    }
    pub(crate) const fn refs(mut self, types: &'static [&'static str]) -> Self {
        self.reference_types = types;
        self
    }
    pub(crate) const fn subs(mut self, subs: &'static [AttrDef]) -> Self {
        self.subs = subs;
        self
    }

    /// The sub-attribute named `name` (ignoring case).
    pub fn sub(&self, name: &str) -> Option<&'static AttrDef> {
        self.subs.iter().find(|s| s.name.eq_ignore_ascii_case(name))
    }
}

/// The profiles a `userType` names.
pub const USER_TYPES: &[&str] = &["Standard", "Restricted"];
/// Usual `preferredLanguage` values.
pub const LANGUAGES: &[&str] = &[
    "en", "en-US", "en-GB", "de", "de-CH", "fr", "fr-CH", "it", "it-CH", "es", "nl", "ja",
];
/// The administrator roles a `roles` value names. System administrators are out of SCIM's
/// reach: managed with `cofferd` and the REST interface only.
pub const ADMIN_ROLES: &[&str] = &["application-admin", "helpdesk-admin"];
/// The `roles` values SCIM takes: an administrator role, or `user` for an ordinary user (who is
/// answered without `roles`, as after removing the attribute).
pub const ROLE_VALUES: &[&str] = &["user", "application-admin", "helpdesk-admin"];

const EMAIL_SUBS: &[AttrDef] = &[
    attr("value", "The email address.", Kind::String).required(),
    attr(
        "type",
        "The kind of address; Coffer keeps a work address.",
        Kind::String,
    )
    .canonical(&["work"]),
    attr(
        "primary",
        "Whether this is the primary address.",
        Kind::Boolean,
    ),
];

const PHONE_SUBS: &[AttrDef] = &[
    attr(
        "value",
        "The mobile number, digits with an optional leading +.",
        Kind::String,
    )
    .required(),
    attr(
        "type",
        "The kind of number; Coffer keeps a mobile number.",
        Kind::String,
    )
    .required()
    .canonical(&["mobile"]),
    attr(
        "primary",
        "Whether this is the primary number.",
        Kind::Boolean,
    ),
];

// Only the administrator roles are published: an ordinary user is answered without `roles`,
// so `user` (taken as input for that) is not a value a client reads back.
const ROLE_SUBS: &[AttrDef] = &[attr("value", "The administrator role.", Kind::String)
    .required()
    .canonical(ADMIN_ROLES)];

const META_SUBS: &[AttrDef] = &[
    attr("resourceType", "Always User.", Kind::String)
        .case_exact()
        .mutability(Mutability::ReadOnly),
    attr("created", "When the user was created.", Kind::DateTime).mutability(Mutability::ReadOnly),
    attr(
        "lastModified",
        "When the user last changed.",
        Kind::DateTime,
    )
    .mutability(Mutability::ReadOnly),
    attr("location", "The URI of the user.", Kind::Reference)
        .case_exact()
        .refs(&["uri"])
        .mutability(Mutability::ReadOnly),
    attr(
        "version",
        "The entity tag of the user's current state.",
        Kind::String,
    )
    .case_exact()
    .mutability(Mutability::ReadOnly),
];

/// The attributes of a Coffer user, in the order responses list them. `id` and `meta` are the
/// common attributes of RFC 7643 §3.1; they are listed here so that paths naming them resolve.
pub const USER_ATTRS: &[AttrDef] = &[
    attr("id", "The user's id.", Kind::String)
        .case_exact()
        .mutability(Mutability::ReadOnly)
        .returned(Returned::Always)
        .unique(),
    attr(
        "externalId",
        "The identity provider's id for the user.",
        Kind::String,
    )
    .case_exact(),
    attr(
        "userName",
        "The name the user signs in with; unique.",
        Kind::String,
    )
    .required()
    .unique(),
    attr(
        "displayName",
        "The user's name, without < or >.",
        Kind::String,
    ),
    attr("userType", "The user's profile.", Kind::String)
        .required()
        .canonical(USER_TYPES),
    attr(
        "preferredLanguage",
        "A language tag, such as en or de-CH.",
        Kind::String,
    )
    .canonical(LANGUAGES),
    attr("active", "Whether the user may sign in.", Kind::Boolean).required(),
    attr("password", "A new password; never returned.", Kind::String)
        .mutability(Mutability::WriteOnly)
        .returned(Returned::Never),
    attr("emails", "The user's email address.", Kind::Complex)
        .multi()
        .required()
        .subs(EMAIL_SUBS),
    attr("phoneNumbers", "The user's mobile number.", Kind::Complex)
        .multi()
        .subs(PHONE_SUBS),
    attr(
        "roles",
        "The user's administrator role, at most one (none for an ordinary user; `user` is taken for that).",
        Kind::Complex,
    )
    .multi()
    .subs(ROLE_SUBS),
    attr("meta", "Resource metadata.", Kind::Complex)
        .mutability(Mutability::ReadOnly)
        .subs(META_SUBS),
];

/// The user attribute named `name` (ignoring case); a `urn:…:User:` prefix is allowed.
pub fn user_attr(name: &str) -> Option<&'static AttrDef> {
    let name = strip_user_urn(name);
    USER_ATTRS
        .iter()
        .find(|a| a.name.eq_ignore_ascii_case(name))
}

/// `name` without a leading core User schema URN and colon (ignoring case).
///
/// The name is client input: `get` is used for the split, so a multi-byte character across the
/// URN's length is no match rather than a slice inside a character.
pub fn strip_user_urn(name: &str) -> &str {
    let n = USER_SCHEMA.len();
    match (name.get(..n), name.get(n..)) {
        (Some(head), Some(rest)) if head.eq_ignore_ascii_case(USER_SCHEMA) => {
            rest.strip_prefix(':').unwrap_or(name)
        }
        _ => name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_resolve_ignoring_case_and_urn() {
        assert_eq!(user_attr("USERNAME").map(|a| a.name), Some("userName"));
        assert_eq!(
            user_attr("urn:ietf:params:scim:schemas:core:2.0:User:emails").map(|a| a.name),
            Some("emails")
        );
        assert!(user_attr("name").is_none());
        assert!(user_attr("urn:ietf:params:scim:schemas:core:2.0:User").is_none());
        assert_eq!(
            user_attr("emails")
                .and_then(|a| a.sub("VALUE"))
                .map(|s| s.name),
            Some("value")
        );
    }

    #[test]
    fn urn_prefix_is_cut_at_character_boundaries_only() {
        let urn = format!("{USER_SCHEMA}:");
        // A two- and a three-byte character across each byte index of the URN and its colon:
        // never a panic, and no match (the text is not the URN).
        for cut in 0..=urn.len() {
            for ch in ["é", "€", "😀"] {
                let name = format!("{}{ch}{}", &urn[..cut.saturating_sub(1)], &urn[cut..]);
                assert_eq!(strip_user_urn(&name), name, "{name}");
                assert!(user_attr(&name).is_none(), "{name}");
            }
        }
        assert_eq!(strip_user_urn(&format!("{urn}é")), "é");
        assert_eq!(strip_user_urn("é"), "é");
    }
}
