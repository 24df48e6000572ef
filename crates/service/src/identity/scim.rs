//! SCIM 2.0 user provisioning (RFC 7643, RFC 7644): the users an identity provider creates,
//! replaces, patches and deletes are the same users who sign in through OAuth.
//!
//! Every operation answers a [`ScimFail`] when refused, which the HTTP layer renders as a SCIM
//! error body (`status` as a string, `scimType`). Bodies are checked completely before anything
//! is written, so a refused call changes nothing.

use crate::identity::accounts;
use crate::platform::events;
use crate::{now, rfc3339, Ctx, Error};
use coffer_domain::scim_schema::{self as schema, ADMIN_ROLES, ROLE_VALUES, USER_SCHEMA};
use coffer_domain::{Email, Role};
use coffer_errors::{ErrorCode, ScimError};
pub use coffer_store::models::{ScimToken, User};
pub use coffer_store::scim_users::Cursor;
use coffer_store::scim_users::{SortKey, UserFilter};
use coffer_store::DbConn;
use serde_json::{json, Map, Value};

/// The most resources one listing returns (RFC 7644 `maxResults`; the interface's limit).
pub const MAX_COUNT: i64 = 1_000_000;
/// The page size when the client names none.
pub const DEFAULT_COUNT: i64 = 100;

/// A refused SCIM call, or an internal failure (logged, answered as a generic 500).
#[derive(Debug)]
pub enum ScimFail {
    Client(ScimError),
    Internal(coffer_errors::InternalError),
}

impl ScimFail {
    pub fn new(status: u16, scim_type: Option<&'static str>, detail: impl Into<String>) -> Self {
        ScimFail::Client(ScimError::new(status, scim_type, detail))
    }
    pub fn bad(scim_type: &'static str, detail: impl Into<String>) -> Self {
        ScimFail::new(400, Some(scim_type), detail)
    }
    pub fn not_found() -> Self {
        ScimFail::new(404, None, "The user does not exist.")
    }
    pub fn unauthorized() -> Self {
        ScimFail::new(401, None, "A valid SCIM token is required.")
    }
}

impl From<Error> for ScimFail {
    fn from(e: Error) -> Self {
        match e {
            Error::Internal(cause) => ScimFail::Internal(cause),
            Error::Api(e) => match e.code {
                ErrorCode::EntityExists => {
                    ScimFail::new(409, Some("uniqueness"), e.message.into_owned())
                }
                ErrorCode::EntityNotFound => ScimFail::not_found(),
                _ => ScimFail::new(e.status, None, e.message.into_owned()),
            },
        }
    }
}

impl From<coffer_store::StoreError> for ScimFail {
    fn from(e: coffer_store::StoreError) -> Self {
        Error::from(e).into()
    }
}

pub type ScimResult<T> = std::result::Result<T, ScimFail>;

/// Checks a SCIM bearer token: known and not revoked (else 401; OAuth access tokens are not
/// SCIM tokens), and provisioning not paused by the operator (else 403).
pub fn authenticate(ctx: &Ctx, token: Option<&str>) -> ScimResult<ScimToken> {
    let token = token
        .filter(|t| !t.is_empty() && t.len() <= 512)
        .ok_or_else(ScimFail::unauthorized)?;
    let hash = coffer_oauth::secrets::hash_token(token);
    // One connection for both reads: the token, and whether provisioning is on.
    let (row, on) = ctx.with_conn(|c| {
        Ok((
            coffer_store::scim_tokens::by_hash(c, &hash)?,
            crate::identity::settings::scim_provisioning(c)?,
        ))
    })?;
    let token = row
        .filter(|t| !t.revoked)
        .ok_or_else(ScimFail::unauthorized)?;
    if !on {
        return Err(ScimFail::new(
            403,
            None,
            "SCIM provisioning is paused on this server (setting scimProvisioning).",
        ));
    }
    Ok(token)
}

/// The entity tag of a user's current state.
pub fn etag(user: &User) -> String {
    format!("W/\"{}\"", user.version)
}

/// 412: `If-Match` names an older version.
fn stale() -> ScimFail {
    ScimFail::new(
        412,
        None,
        "The user has changed since the version given in If-Match.",
    )
}

/// 409: another write to the user came first while this one ran.
fn raced() -> ScimFail {
    ScimFail::new(
        409,
        None,
        "The user changed while this call ran; send it again.",
    )
}

/// Whether an `If-Match` header admits the user's current state (`*` admits any).
fn if_match_ok(if_match: Option<&str>, user: &User) -> bool {
    let Some(header) = if_match else {
        return true;
    };
    let current = user.version.to_string();
    header
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.trim_start_matches("W/").trim_matches('"') == current)
}

/// The SCIM representation of a user.
pub fn resource(user: &User, profile: &str, base_url: &str) -> Value {
    let mut r = Map::new();
    r.insert("schemas".into(), json!([USER_SCHEMA]));
    r.insert("id".into(), json!(user.id));
    if let Some(x) = &user.external_id {
        r.insert("externalId".into(), json!(x));
    }
    r.insert(
        "userName".into(),
        json!(user.user_name.as_deref().unwrap_or(&user.email)),
    );
    if !user.name.is_empty() {
        r.insert("displayName".into(), json!(user.name));
    }
    r.insert("userType".into(), json!(profile));
    if let Some(lang) = &user.preferred_language {
        r.insert("preferredLanguage".into(), json!(lang));
    }
    r.insert("active".into(), json!(user.active));
    r.insert(
        "emails".into(),
        json!([{"value": user.email, "type": "work", "primary": user.email_primary.unwrap_or(true)}]),
    );
    if let Some(n) = &user.mobile_number {
        r.insert(
            "phoneNumbers".into(),
            json!([{"value": n, "type": "mobile", "primary": user.mobile_primary.unwrap_or(true)}]),
        );
    }
    // An ordinary user has no administrator role: no `roles` (so that removing the attribute
    // removes it, RFC 7644 §3.5.2.2); `user` is taken as input for that absence.
    if user.role != Role::User.as_str() {
        r.insert("roles".into(), json!([{"value": user.role}]));
    }
    r.insert(
        "meta".into(),
        json!({
            "resourceType": "User",
            "created": rfc3339(user.created_at),
            "lastModified": rfc3339(user.updated_at),
            "location": format!("{base_url}/rest/scim/Users/{}", user.id),
            "version": etag(user),
        }),
    );
    Value::Object(r)
}

/// A user as a SCIM body describes it, checked.
#[derive(Debug, Clone, Default)]
struct Input {
    user_name: Option<String>,
    external_id: Option<Option<String>>,
    display_name: Option<String>,
    user_type: Option<String>,
    preferred_language: Option<Option<String>>,
    active: Option<bool>,
    email: Option<String>,
    /// The `primary` flag sent with the email, if any.
    email_primary: Option<bool>,
    mobile: Option<Option<String>>,
    mobile_primary: Option<bool>,
    role: Option<Role>,
    password: Option<String>,
    notify: bool,
    user_must_change: Option<bool>,
}

fn invalid(detail: impl Into<String>) -> ScimFail {
    ScimFail::bad("invalidValue", detail)
}

fn text<'a>(v: &'a Value, attr: &str) -> ScimResult<&'a str> {
    v.as_str()
        .ok_or_else(|| invalid(format!("{attr} must be a string.")))
}

/// A boolean, also as the strings `"true"`/`"false"` some identity providers send.
fn boolean(v: &Value, attr: &str) -> ScimResult<bool> {
    match v {
        Value::Bool(b) => Ok(*b),
        Value::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Value::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(invalid(format!("{attr} must be a boolean."))),
    }
}

/// The element of a multi-valued attribute to keep: the primary one, else the first.
fn pick<'a>(v: &'a Value, attr: &str) -> ScimResult<Option<&'a Map<String, Value>>> {
    let items: Vec<&Value> = match v {
        Value::Array(a) => a.iter().collect(),
        Value::Object(_) => vec![v],
        _ => return Err(invalid(format!("{attr} must be an array of objects."))),
    };
    let mut objects = Vec::with_capacity(items.len());
    for item in items {
        objects.push(
            item.as_object()
                .ok_or_else(|| invalid(format!("{attr} must be an array of objects.")))?,
        );
    }
    let primary = objects.iter().find(|o| {
        o.get("primary")
            .is_some_and(|p| boolean(p, attr).unwrap_or(false))
    });
    Ok(primary.or(objects.first()).copied())
}

fn get_ci<'a>(o: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    o.iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(key))
        .map(|(_, v)| v)
}

/// The `primary` flag of a multi-valued element, when it has one.
fn primary_flag(item: &Map<String, Value>, attr: &str) -> ScimResult<Option<bool>> {
    match get_ci(item, "primary") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => boolean(v, &format!("{attr}[].primary")).map(Some),
    }
}

fn plain_text(s: &str) -> bool {
    !s.chars().any(char::is_control)
}

fn language_tag(s: &str) -> bool {
    s.len() <= 35
        && s.split(['-', '_']).enumerate().all(|(i, part)| {
            (1..=8).contains(&part.len())
                && if i == 0 {
                    part.chars().all(|c| c.is_ascii_alphabetic())
                } else {
                    part.chars().all(|c| c.is_ascii_alphanumeric())
                }
        })
}

/// Reads a User body. `create` allows the create-only flags (`notify`, `userMustChange`).
fn read_input(body: &Value, create: bool) -> ScimResult<Input> {
    let obj = body
        .as_object()
        .ok_or_else(|| ScimFail::bad("invalidSyntax", "The body must be a JSON object."))?;
    let schemas_ok = obj
        .get("schemas")
        .and_then(Value::as_array)
        .is_some_and(|s| {
            s.iter().any(|u| {
                u.as_str()
                    .is_some_and(|u| u.eq_ignore_ascii_case(USER_SCHEMA))
            })
        });
    if !schemas_ok {
        return Err(ScimFail::bad(
            "invalidSyntax",
            format!("schemas must include {USER_SCHEMA}."),
        ));
    }
    // Attributes may come at the top level, URN-prefixed, or inside an object keyed by the
    // core schema URN.
    let mut pairs: Vec<(&str, &Value)> = Vec::new();
    for (k, v) in obj {
        if k.eq_ignore_ascii_case(USER_SCHEMA) {
            let inner = v
                .as_object()
                .ok_or_else(|| ScimFail::bad("invalidSyntax", format!("{k} must be an object.")))?;
            pairs.extend(inner.iter().map(|(k, v)| (k.as_str(), v)));
        } else {
            pairs.push((k.as_str(), v));
        }
    }
    let mut input = Input::default();
    for (key, value) in pairs {
        if key.eq_ignore_ascii_case("schemas") {
            continue;
        }
        if create && key.eq_ignore_ascii_case("notify") {
            input.notify = !value.is_null() && boolean(value, "notify")?;
            continue;
        }
        if create && key.eq_ignore_ascii_case("userMustChange") {
            input.user_must_change = (!value.is_null())
                .then(|| boolean(value, "userMustChange"))
                .transpose()?;
            continue;
        }
        let Some(def) = schema::user_attr(key) else {
            return Err(ScimFail::bad(
                "invalidSyntax",
                format!("The attribute {key} is not known."),
            ));
        };
        read_attr(&mut input, def.name, value)?;
    }
    Ok(input)
}

fn read_attr(input: &mut Input, name: &str, value: &Value) -> ScimResult<()> {
    // `null` (and `[]` for multi-valued attributes) is the same as leaving an attribute out
    // (RFC 7643 §2.5); for a replacement that clears it.
    let null = value.is_null() || value.as_array().is_some_and(Vec::is_empty);
    match name {
        // Read-only attributes in a body are ignored (RFC 7644 §3.5.1).
        "id" | "meta" => {}
        "externalId" => {
            input.external_id = Some(if null {
                None
            } else {
                let s = text(value, name)?;
                if s.is_empty() || s.len() > 255 || !plain_text(s) {
                    return Err(invalid("externalId must be 1 to 255 characters."));
                }
                Some(s.to_string())
            });
        }
        "userName" => {
            if null {
                return Err(invalid("userName must not be empty."));
            }
            let s = text(value, name)?.trim();
            if s.is_empty() || s.len() > 254 || !plain_text(s) {
                return Err(invalid("userName must be 1 to 254 characters."));
            }
            input.user_name = Some(s.to_string());
        }
        "displayName" => {
            let s = if null { "" } else { text(value, name)?.trim() };
            if s.len() > 255 || s.contains(['<', '>']) || !plain_text(s) {
                return Err(invalid(
                    "displayName must be at most 255 characters, without < or >.",
                ));
            }
            input.display_name = Some(s.to_string());
        }
        "userType" => {
            if !null {
                let s = text(value, name)?;
                if s.is_empty()
                    || !s
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
                {
                    return Err(invalid("userType may hold only letters, digits, _ and -."));
                }
                input.user_type = Some(s.to_string());
            }
        }
        "preferredLanguage" => {
            input.preferred_language = Some(if null {
                None
            } else {
                let s = text(value, name)?;
                if !language_tag(s) {
                    return Err(invalid(
                        "preferredLanguage must be a language tag such as en or de-CH.",
                    ));
                }
                Some(s.to_string())
            });
        }
        "active" => {
            if !null {
                input.active = Some(boolean(value, name)?);
            }
        }
        "password" => {
            if !null {
                input.password = Some(text(value, name)?.to_string());
            }
        }
        "emails" => {
            if !null {
                let Some(item) = pick(value, name)? else {
                    return Ok(());
                };
                let raw = get_ci(item, "value")
                    .and_then(Value::as_str)
                    .ok_or_else(|| invalid("emails[].value must be an email address."))?;
                let email = Email::parse(raw).map_err(invalid)?;
                input.email = Some(email.into_string());
                input.email_primary = primary_flag(item, "emails")?;
            }
        }
        "phoneNumbers" => {
            input.mobile = Some(if null {
                None
            } else {
                match pick(value, name)? {
                    None => None,
                    Some(item) => {
                        let raw =
                            get_ci(item, "value")
                                .and_then(Value::as_str)
                                .ok_or_else(|| {
                                    invalid("phoneNumbers[].value must be a phone number.")
                                })?;
                        input.mobile_primary = primary_flag(item, "phoneNumbers")?;
                        Some(crate::platform::sms::normalise_number(raw).ok_or_else(|| {
                            invalid("phoneNumbers[].value must be a phone number: digits with an optional leading +.")
                        })?)
                    }
                }
            });
        }
        "roles" => {
            if null {
                input.role = Some(Role::User);
                return Ok(());
            }
            let items = value
                .as_array()
                .ok_or_else(|| invalid("roles must be an array."))?;
            if items.len() > 1 {
                return Err(invalid("A user has at most one role."));
            }
            // No element: an ordinary user, as for `null`.
            let Some(first) = items.first() else {
                input.role = Some(Role::User);
                return Ok(());
            };
            let raw = first
                .as_object()
                .and_then(|o| get_ci(o, "value"))
                .and_then(Value::as_str)
                .ok_or_else(|| invalid("roles[].value must be a string."))?;
            if raw.parse::<Role>() == Ok(Role::SystemAdmin) {
                return Err(forbidden());
            }
            let role = raw
                .parse::<Role>()
                .ok()
                .filter(|r| *r == Role::User || ADMIN_ROLES.contains(&r.as_str()))
                .ok_or_else(|| {
                    invalid(format!(
                        "roles[].value must be one of {}.",
                        ROLE_VALUES.join(", ")
                    ))
                })?;
            input.role = Some(role);
        }
        other => {
            return Err(ScimFail::bad(
                "invalidSyntax",
                format!("The attribute {other} cannot be set."),
            ))
        }
    }
    Ok(())
}

fn profile_id(c: &mut DbConn, name: &str) -> ScimResult<i64> {
    let all = coffer_store::users::profiles(c)?;
    all.iter()
        .find(|p| p.name.eq_ignore_ascii_case(name))
        .map(|p| p.id)
        .ok_or_else(|| {
            invalid(format!(
                "userType must name a profile: {}.",
                all.iter()
                    .map(|p| p.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })
}

fn check_password(ctx: &Ctx, password: &str) -> ScimResult<String> {
    accounts::check_policy(ctx, password).map_err(|e| match e {
        Error::Api(e) => invalid(e.message.into_owned()),
        internal => ScimFail::from(internal),
    })?;
    Ok(accounts::hash_password(password)?)
}

/// Refuses a userName or email another user has (409 `uniqueness`).
fn check_unique(c: &mut DbConn, id: &str, user_name: &str, email: &str) -> ScimResult<()> {
    if coffer_store::users::by_user_name(c, user_name)?.is_some_and(|u| u.id != id) {
        return Err(ScimFail::new(
            409,
            Some("uniqueness"),
            "Another user has this userName.",
        ));
    }
    if coffer_store::users::by_email(c, email)?.is_some_and(|u| u.id != id) {
        return Err(ScimFail::new(
            409,
            Some("uniqueness"),
            "Another user has this email.",
        ));
    }
    Ok(())
}

/// An external distribution list cannot be an account's userName or email (403, the
/// interface's `ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST`).
fn refuse_distribution_lists(c: &mut DbConn, user_name: &str, email: &str) -> ScimResult<()> {
    crate::identity::external_dls::refuse_as_account(c, email, "emails")?;
    crate::identity::external_dls::refuse_as_account(c, user_name, "userName")?;
    Ok(())
}

fn unique_violation(e: coffer_store::StoreError) -> ScimFail {
    if e.is_unique_violation() {
        ScimFail::new(
            409,
            Some("uniqueness"),
            "Another user has this userName or email.",
        )
    } else {
        e.into()
    }
}

/// Runs `f` in a write transaction; a refusal rolls it back.
fn write<T>(ctx: &Ctx, f: impl FnOnce(&mut DbConn) -> ScimResult<T>) -> ScimResult<T> {
    ctx.db.write(f)
}

fn profile_name(c: &mut DbConn, id: i64) -> ScimResult<String> {
    Ok(coffer_store::users::profile(c, id)?
        .map(|p| p.name)
        .unwrap_or_default())
}

/// `POST /Users`.
pub fn create(ctx: &Ctx, token: &ScimToken, body: &Value) -> ScimResult<(User, Value)> {
    let input = read_input(body, true)?;
    let user_name = input
        .user_name
        .clone()
        .or_else(|| input.email.clone())
        .ok_or_else(|| invalid("userName is required."))?;
    let email = match &input.email {
        Some(e) => e.clone(),
        None => Email::parse(&user_name)
            .map_err(|_| invalid("emails is required when userName is not an email address."))?
            .into_string(),
    };
    let password_hash = input
        .password
        .as_deref()
        .map(|p| check_password(ctx, p))
        .transpose()?;
    let base = ctx.config.base_url.clone();
    write(ctx, |c| {
        let profile_id = profile_id(c, input.user_type.as_deref().unwrap_or("Standard"))?;
        let user = User {
            force_password_change: input.user_must_change.unwrap_or(false),
            active: input.active.unwrap_or(true),
            mobile_number: input.mobile.clone().flatten(),
            user_name: Some(user_name.clone()),
            external_id: input.external_id.clone().flatten(),
            preferred_language: input.preferred_language.clone().flatten(),
            email_primary: input.email_primary,
            mobile_primary: input.mobile_primary,
            ..accounts::new_user_row(
                &email,
                input.display_name.as_deref().unwrap_or_default(),
                password_hash,
                input.role.unwrap_or(Role::User),
                profile_id,
                now(),
            )
        };
        check_unique(c, &user.id, &user_name, &email)?;
        refuse_distribution_lists(c, &user_name, &email)?;
        coffer_store::users::insert(c, &user).map_err(unique_violation)?;
        if input.notify {
            // The welcome message goes to the mail outbox (sent over SMTP when a relay is
            // configured); it holds no password.
            coffer_store::users::queue_mail(
                c,
                Some(&user.id),
                &user.email,
                &format!("Your {} account", ctx.config.service_name),
                &format!(
                    "An account has been created for you.\n\nSign in at {base}/ with {}.\n",
                    user.email
                ),
                &ctx.config.message_domain(),
                user.created_at,
            )?;
        }
        events::record(
            c,
            "user.user.create",
            None,
            json!({"id": user.id, "email": user.email, "role": user.role,
                   "source": "scim", "scimToken": token.id, "notify": input.notify}),
        )?;
        let profile = profile_name(c, user.profile_id)?;
        let r = resource(&user, &profile, &base);
        Ok((user, r))
    })
}

/// System administrators are out of SCIM's reach (403): an identity provider manages ordinary
/// users and delegated administrators, never the accounts that run the server.
fn forbidden() -> ScimFail {
    ScimFail::new(
        403,
        None,
        "SCIM does not manage system administrators; use cofferd or the REST interface.",
    )
}

fn live_user(c: &mut DbConn, id: &str) -> ScimResult<User> {
    let user = coffer_store::users::by_id(c, id)?
        .filter(|u| !u.deleted)
        .ok_or_else(ScimFail::not_found)?;
    if user.role == Role::SystemAdmin.as_str() {
        return Err(forbidden());
    }
    Ok(user)
}

/// `GET /Users/{id}`.
pub fn get(ctx: &Ctx, id: &str) -> ScimResult<(User, Value)> {
    let base = ctx.config.base_url.clone();
    let mut conn = ctx.db.reader()?;
    let user = live_user(&mut conn, id)?;
    let profile = profile_name(&mut conn, user.profile_id)?;
    let r = resource(&user, &profile, &base);
    Ok((user, r))
}

/// Applies a checked replacement to a user; `replace` clears optional attributes the body
/// leaves out (PUT), else only the given ones change.
fn update(
    ctx: &Ctx,
    token: &ScimToken,
    id: &str,
    if_match: Option<&str>,
    make_input: impl FnOnce(&User, &Value) -> ScimResult<Input>,
) -> ScimResult<(User, Value)> {
    let base = ctx.config.base_url.clone();
    // Read and check first (the password hash is slow), then write if nothing moved since.
    let (current, current_json) = get(ctx, id)?;
    if !if_match_ok(if_match, &current) {
        return Err(stale());
    }
    let input = make_input(&current, &current_json)?;
    let password_hash = input
        .password
        .as_deref()
        .map(|p| check_password(ctx, p))
        .transpose()?;
    write(ctx, |c| {
        let user = live_user(c, id)?;
        if user.version != current.version {
            return Err(raced());
        }
        let user_name = input
            .user_name
            .clone()
            .or_else(|| user.user_name.clone())
            .unwrap_or_else(|| user.email.clone());
        let email = input.email.clone().unwrap_or_else(|| user.email.clone());
        check_unique(c, &user.id, &user_name, &email)?;
        // An address listed after the account was made does not lock the account; taking one
        // on is refused.
        if email != user.email {
            crate::identity::external_dls::refuse_as_account(c, &email, "emails")?;
        }
        if user_name != user.user_name.as_deref().unwrap_or(&user.email) {
            crate::identity::external_dls::refuse_as_account(c, &user_name, "userName")?;
        }
        let profile_id = match &input.user_type {
            Some(t) => profile_id(c, t)?,
            None => user.profile_id,
        };
        let mobile = input.mobile.clone().flatten();
        let fields = coffer_store::users::ScimFields {
            user_name: Some(user_name),
            external_id: input.external_id.clone().flatten(),
            email,
            name: input.display_name.clone().unwrap_or_default(),
            profile_id,
            preferred_language: input.preferred_language.clone().flatten(),
            active: input.active.unwrap_or(user.active),
            mobile_verified: user.mobile_verified && mobile == user.mobile_number,
            email_primary: if input.email.is_some() {
                input.email_primary
            } else {
                user.email_primary
            },
            mobile_primary: mobile.as_ref().and(input.mobile_primary),
            mobile_number: mobile,
            role: input.role.unwrap_or(Role::User).as_str().to_string(),
        };
        let t = now();
        if coffer_store::users::scim_update(c, &user.id, user.version, &fields, t)
            .map_err(unique_violation)?
            == 0
        {
            return Err(raced());
        }
        let deactivated = user.active && !fields.active;
        if let Some(hash) = &password_hash {
            coffer_store::users::set_password_hash(c, &user.id, Some(hash))?;
        }
        if deactivated || password_hash.is_some() {
            // A deactivated account, or one whose password was reset, keeps no session.
            coffer_store::tokens::revoke_user(c, &user.id)?;
            coffer_store::web_sessions::delete_for_user(c, &user.id, None)?;
        }
        events::record(
            c,
            "user.user.update",
            None,
            json!({"id": user.id, "userId": user.id, "source": "scim", "scimToken": token.id,
                   "active": fields.active, "password": password_hash.is_some()}),
        )?;
        let updated = live_user(c, id)?;
        let profile = profile_name(c, updated.profile_id)?;
        let r = resource(&updated, &profile, &base);
        Ok((updated, r))
    })
}

/// `PUT /Users/{id}`: a replacement. Optional attributes left out are cleared; required ones
/// (`userName`, `emails`, `userType`, `active`) keep their value; the password changes only
/// when given.
pub fn replace(
    ctx: &Ctx,
    token: &ScimToken,
    id: &str,
    if_match: Option<&str>,
    body: &Value,
) -> ScimResult<(User, Value)> {
    update(ctx, token, id, if_match, |_, _| read_input(body, false))
}

/// `PATCH /Users/{id}`: the operations are applied to the user's representation, and the
/// result is checked as a replacement would be.
pub fn patch(
    ctx: &Ctx,
    token: &ScimToken,
    id: &str,
    if_match: Option<&str>,
    body: &Value,
) -> ScimResult<(User, Value)> {
    update(ctx, token, id, if_match, |_, current| {
        let patched = coffer_domain::scim_patch::apply(current, body)
            .map_err(|e| ScimFail::bad(e.scim_type, e.detail))?;
        read_input(&patched, false)
    })
}

/// `DELETE /Users/{id}`: the account is deleted as an administrator's delete does.
pub fn delete(
    ctx: &Ctx,
    id: &str,
    if_match: Option<&str>,
    opts: &crate::identity::users::DeleteOptions,
) -> ScimResult<()> {
    write(ctx, |c| {
        let user = live_user(c, id)?;
        if !if_match_ok(if_match, &user) {
            return Err(stale());
        }
        if let Some(to) = &opts.retain_to_user {
            let receiver = coffer_store::users::by_id(c, to)?;
            if receiver.is_none_or(|u| u.deleted) || to == id {
                return Err(invalid("retainToUser must name another user."));
            }
        }
        crate::identity::users::delete_one(c, &user.id, None, opts, now())?;
        Ok(())
    })
}

/// A checked listing request.
pub struct ListQuery {
    pub filter: Option<UserFilter>,
    pub sort: SortKey,
    pub descending: bool,
    /// 1-based.
    pub start_index: i64,
    pub count: i64,
    pub projection: coffer_domain::scim_discovery::Projection,
}

/// The raw parameters of a listing (query string or `SearchRequest`).
#[derive(Debug, Default, Clone)]
pub struct ListParams {
    pub filter: Option<String>,
    pub sort_by: Option<String>,
    pub sort_order: Option<String>,
    pub start_index: Option<String>,
    pub count: Option<String>,
    pub attributes: Option<String>,
    pub excluded_attributes: Option<String>,
}

impl ListParams {
    /// Reads a `SearchRequest` body (RFC 7644 §3.4.3).
    pub fn from_search(body: &Value) -> ScimResult<ListParams> {
        let obj = body
            .as_object()
            .ok_or_else(|| ScimFail::bad("invalidSyntax", "The body must be a JSON object."))?;
        let mut p = ListParams::default();
        for (k, v) in obj {
            let scalar = || -> ScimResult<Option<String>> {
                Ok(match v {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    Value::Number(n) => Some(n.to_string()),
                    _ => return Err(invalid(format!("{k} must be a string or number."))),
                })
            };
            let list = || -> ScimResult<Option<String>> {
                Ok(match v {
                    Value::Null => None,
                    Value::String(s) => Some(s.clone()),
                    Value::Array(a) => Some(
                        a.iter()
                            .map(|x| {
                                x.as_str()
                                    .map(str::to_string)
                                    .ok_or_else(|| invalid(format!("{k} must list strings.")))
                            })
                            .collect::<ScimResult<Vec<_>>>()?
                            .join(","),
                    ),
                    _ => return Err(invalid(format!("{k} must be an array of strings."))),
                })
            };
            match k.to_ascii_lowercase().as_str() {
                "schemas" => {}
                "filter" => p.filter = scalar()?,
                "sortby" => p.sort_by = scalar()?,
                "sortorder" => p.sort_order = scalar()?,
                "startindex" => p.start_index = scalar()?,
                "count" => p.count = scalar()?,
                "attributes" => p.attributes = list()?,
                "excludedattributes" => p.excluded_attributes = list()?,
                _ => {
                    return Err(ScimFail::bad(
                        "invalidSyntax",
                        format!("The search parameter {k} is not known."),
                    ))
                }
            }
        }
        Ok(p)
    }

    /// Checks the parameters.
    pub fn check(&self) -> ScimResult<ListQuery> {
        let filter = match self.filter.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(f) => {
                let parsed = coffer_domain::scim_filter::parse(f)
                    .map_err(|e| ScimFail::bad("invalidFilter", e.detail))?;
                Some(
                    coffer_store::scim_users::translate(&parsed)
                        .map_err(|e| ScimFail::bad("invalidFilter", e))?,
                )
            }
        };
        let sort = match self.sort_by.as_deref() {
            None | Some("") => SortKey::Created,
            Some(s) => SortKey::parse(s).map_err(invalid)?,
        };
        let descending = match self.sort_order.as_deref() {
            None | Some("") => false,
            Some(o) if o.eq_ignore_ascii_case("ascending") => false,
            Some(o) if o.eq_ignore_ascii_case("descending") => true,
            Some(_) => return Err(invalid("sortOrder must be ascending or descending.")),
        };
        let number = |raw: &Option<String>, name: &str| -> ScimResult<Option<i64>> {
            raw.as_deref()
                .map(|s| {
                    s.trim()
                        .parse::<i64>()
                        .map_err(|_| invalid(format!("{name} must be an integer.")))
                })
                .transpose()
        };
        // RFC 7644 §3.4.2.4: a startIndex below 1 is 1, a negative count is 0.
        let start_index = number(&self.start_index, "startIndex")?.unwrap_or(1).max(1);
        let count = number(&self.count, "count")?
            .unwrap_or(DEFAULT_COUNT)
            .max(0);
        if count > MAX_COUNT {
            return Err(invalid(format!("count must be at most {MAX_COUNT}.")));
        }
        let projection = coffer_domain::scim_discovery::parse_projection(
            self.attributes.as_deref(),
            self.excluded_attributes.as_deref(),
        )
        .map_err(invalid)?;
        Ok(ListQuery {
            filter,
            sort,
            descending,
            start_index,
            count,
            projection,
        })
    }
}

/// How many users the listing's filter matches.
pub fn total(ctx: &Ctx, q: &ListQuery) -> ScimResult<i64> {
    Ok(ctx.with_conn(|c| Ok(coffer_store::scim_users::count(c, q.filter.as_ref())?))?)
}

/// The next chunk of a listing, projected: at most `limit` resources after `after` (or from
/// the listing's start index), and the cursor to go on from.
pub fn chunk(
    ctx: &Ctx,
    q: &ListQuery,
    after: Option<&Cursor>,
    limit: i64,
) -> ScimResult<(Vec<Value>, Option<Cursor>)> {
    let base = &ctx.config.base_url;
    let (rows, next) = ctx.with_conn(|c| {
        Ok(coffer_store::scim_users::chunk(
            c,
            q.filter.as_ref(),
            q.sort,
            q.descending,
            after,
            q.start_index - 1,
            limit,
        )?)
    })?;
    let items = rows
        .iter()
        .map(|(u, profile)| q.projection.project(&resource(u, profile, base)))
        .collect();
    Ok((items, next))
}
