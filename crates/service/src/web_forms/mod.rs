//! Web forms (docs/web-forms.md): the forms an operator defines (`cofferd webform`), who may
//! read and use them, and a submission, which arrives as an email in the form owner's inbox
//! (a user's, or a shared mailbox's).
//!
//! Access: a disabled form answers 403 `ERR_ACCESS_USER` to everyone; a form without
//! `authRequired` is open to anyone holding its id (no bearer token; reads from an address are
//! throttled like the mail reads by reference); one with `authRequired` only to a signed-in
//! user whose profile is in `profiles` (empty: every profile). An unknown id is 404.
//!
//! A submission is an email: sender the signed-in submitter (who also finds it in their sent
//! mail), or for an anonymous submitter the owner itself (the `actor` is the owner, and what the
//! person entered, their address included, is only in `webFormFields`). Its one recipient is
//! the owner, with an inbox entry; `acl` is `internal`. Uploaded files are stored as files in
//! the owner's system folder for mail attachments and attached, as an upload onto a draft does.
//!
//! The area: this module (forms, their access and the operator commands), the submission
//! ([`submit`]) and submissions in progress ([`drafts`]). It builds on `mail`.

pub mod drafts;
pub mod submit;

use crate::platform::auth::Caller;
use crate::platform::events;
use crate::{now, rfc3339, Ctx, Error, Result};
use coffer_domain::list::{Dir, ListQuery, Op};
use coffer_domain::web_form::{self as rules, Field};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::emails::Email;
use coffer_store::web_forms::{self as store, WebForm};
use coffer_store::DbConn;
use serde::Serialize;
use serde_json::{json, Value};
use utoipa::ToSchema;

/// The path of a form's public page, under the base URL: `{base}/forms/{id}`.
pub const PAGE_PREFIX: &str = "/forms/";

/// A profile a form is open to (the reference's `WebFormProfile`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebFormProfileView {
    pub web_form_id: String,
    pub profile_id: i64,
}

/// A field of a form (the reference's `WebFormField`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebFormFieldView {
    pub id: String,
    /// Display order (ascending).
    pub sequence: i64,
    pub label: String,
    /// `text`, `textarea`, `select`, `checkbox`, `email` or `date`.
    #[serde(rename = "type")]
    pub kind: String,
    // A text the field does not have is left out, never `null`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub special_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placeholder: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_value: Option<String>,
    /// The options of a `select`, one per line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub option_values: Option<String>,
    pub mandatory: bool,
    pub editable: bool,
}

impl From<Field> for WebFormFieldView {
    fn from(f: Field) -> Self {
        WebFormFieldView {
            id: f.id,
            sequence: f.sequence,
            label: f.label,
            kind: f.kind,
            special_type: f.special_type,
            placeholder: f.placeholder,
            default_value: f.default_value,
            option_values: f.option_values,
            mandatory: f.mandatory,
            editable: f.editable,
        }
    }
}

/// A web form (the reference's `WebForm`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebFormView {
    pub id: String,
    /// RFC 3339.
    pub last_modified: String,
    pub name: String,
    pub description: String,
    /// The public page: `{base}/forms/{id}`.
    pub url: String,
    pub enabled: bool,
    pub auth_required: bool,
    /// Whether other sites may show the page in a frame.
    pub embedded: bool,
    pub standalone: bool,
    pub profiles: Vec<WebFormProfileView>,
    pub fields: Vec<WebFormFieldView>,
}

/// What the operator commands show besides the record: the owner's address.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperatorView {
    #[serde(flatten)]
    pub form: WebFormView,
    pub owner_id: String,
    pub owner_email: String,
}

pub(crate) fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

pub(crate) fn access_user(why: &str) -> Error {
    ApiError::new(ErrorCode::AccessUser)
        .with_message(format!("Access denied ({why})."))
        .into()
}

/// A stored form's fields (checked when saved).
pub fn fields_of(f: &WebForm) -> Result<Vec<Field>> {
    serde_json::from_str(&f.fields).map_err(|e| Error::internal_in("web form fields", e))
}

fn profiles_of(f: &WebForm) -> Result<Vec<i64>> {
    serde_json::from_str(&f.profiles).map_err(|e| Error::internal_in("web form profiles", e))
}

fn view(ctx: &Ctx, f: &WebForm) -> Result<WebFormView> {
    Ok(WebFormView {
        id: f.id.clone(),
        last_modified: rfc3339(f.modified_at),
        name: f.name.clone(),
        description: f.description.clone(),
        url: format!(
            "{}{PAGE_PREFIX}{}",
            ctx.config.base_url.trim_end_matches('/'),
            f.id
        ),
        enabled: f.active,
        auth_required: f.auth_required,
        embedded: f.embedded,
        standalone: f.standalone,
        profiles: profiles_of(f)?
            .into_iter()
            .map(|p| WebFormProfileView {
                web_form_id: f.id.clone(),
                profile_id: p,
            })
            .collect(),
        fields: fields_of(f)?.into_iter().map(Into::into).collect(),
    })
}

/// Whether a signed-in user of `profile_id` may use the form (profiles empty: everyone).
fn profile_allowed(f: &WebForm, profile_id: i64) -> Result<bool> {
    let p = profiles_of(f)?;
    Ok(p.is_empty() || p.contains(&profile_id))
}

/// The access rules: disabled → 403 for everyone; `authRequired` → a signed-in user whose
/// profile is allowed, else 403 (`ERR_AUTH_UNAUTHORIZED` with no one signed in, so that the
/// page can ask for a sign-in; `/rest` answers it as 403 `ERR_ACCESS_USER`).
pub fn may_use(f: &WebForm, who: Option<&Caller>) -> Result<()> {
    if !f.active {
        return Err(access_user("the web form is disabled"));
    }
    if f.auth_required {
        let Some(c) = who else {
            return Err(ApiError::new(ErrorCode::AuthUnauthorized)
                .with_message("The web form is for signed-in users.")
                .into());
        };
        if !profile_allowed(f, c.user.profile_id)? {
            return Err(access_user(
                "the web form is not open to the user's profile",
            ));
        }
    }
    Ok(())
}

// Reads.

/// `GET /rest/webForms`: the active forms the caller's profile may use. Filters `name` (exact,
/// case-insensitive) and `name:contains`; orders `name` and `last_modified`.
pub fn list(ctx: &Ctx, caller: &Caller, q: &ListQuery) -> Result<Vec<WebFormView>> {
    ctx.read(|c| {
        let mut forms = Vec::new();
        for f in store::active(c)? {
            if profile_allowed(&f, caller.user.profile_id)? {
                forms.push(f);
            }
        }
        for filter in q.filters.iter().filter(|f| f.field == "name") {
            let want = filter.value().as_text().unwrap_or_default().to_lowercase();
            forms.retain(|f| match filter.op {
                Op::Contains => f.name_folded.contains(&want),
                _ => f.name_folded == want,
            });
        }
        match q.order.0 {
            "last_modified" => forms.sort_by(|a, b| {
                a.modified_at
                    .cmp(&b.modified_at)
                    .then_with(|| a.id.cmp(&b.id))
            }),
            _ => forms.sort_by(|a, b| {
                a.name_folded
                    .cmp(&b.name_folded)
                    .then_with(|| a.id.cmp(&b.id))
            }),
        }
        if q.order.1 == Dir::Desc {
            forms.reverse();
        }
        forms.iter().map(|f| view(ctx, f)).collect()
    })
}

/// The address counters of the reads without a bearer token.
fn ip_keys(client_ip: Option<&str>) -> Vec<String> {
    client_ip
        .filter(|i| !i.is_empty())
        .map(|ip| vec![format!("webform-ip:{ip}")])
        .unwrap_or_default()
}

/// Refuses an address locked by too many unknown form ids (429 with `Retry-After`).
pub fn check_address(ctx: &Ctx, client_ip: Option<&str>) -> Result<()> {
    if let Some(wait) = crate::platform::throttle::locked(ctx, &ip_keys(client_ip))? {
        return Err(ApiError::new(ErrorCode::RequestRateLimited)
            .with_retry_after(wait.max(1))
            .into());
    }
    Ok(())
}

/// Counts an unknown form id against the address, and answers it slowly past a few.
pub(crate) fn unknown_from(ctx: &Ctx, client_ip: Option<&str>) -> Result<()> {
    let k = ip_keys(client_ip);
    if !k.is_empty() {
        std::thread::sleep(crate::platform::throttle::failed(ctx, &k)?);
    }
    Ok(())
}

/// A form by id for someone who may use it; without a caller, the address is throttled.
pub(crate) fn usable(
    ctx: &Ctx,
    id: &str,
    who: Option<&Caller>,
    client_ip: Option<&str>,
) -> Result<WebForm> {
    if who.is_none() {
        check_address(ctx, client_ip)?;
    }
    let f = ctx.read(|c| Ok(store::by_id(c, id)?))?;
    let Some(f) = f else {
        if who.is_none() {
            unknown_from(ctx, client_ip)?;
        }
        return Err(not_found());
    };
    may_use(&f, who)?;
    ctx.read(|c| owner_live(c, &f))?;
    Ok(f)
}

/// A deleted owner's form takes nothing more: it would fill an inbox no one reads (403).
pub(crate) fn owner_live(c: &mut DbConn, f: &WebForm) -> Result<()> {
    if coffer_store::users::by_id(c, &f.owner_id)?.is_none_or(|o| o.deleted) {
        return Err(access_user("the web form's owner no longer exists"));
    }
    Ok(())
}

/// `GET /rest/webForms/{id}`: with or without a bearer token, under the form's access rules.
pub fn get(
    ctx: &Ctx,
    id: &str,
    who: Option<&Caller>,
    client_ip: Option<&str>,
) -> Result<WebFormView> {
    match usable(ctx, id, who, client_ip) {
        Ok(f) => view(ctx, &f),
        Err(Error::Api(a)) if a.code == ErrorCode::AuthUnauthorized => {
            Err(access_user("the web form is for signed-in users"))
        }
        Err(e) => Err(e),
    }
}

/// `GET /rest/sharedMailboxes/{id}/webForms`: the forms the mailbox owns, for a member who has
/// it active.
pub fn mailbox_forms(ctx: &Ctx, caller: &Caller, mailbox_id: &str) -> Result<Vec<WebFormView>> {
    ctx.read(|c| {
        crate::mail::shared_mailboxes::require_active_member(c, mailbox_id, caller.user_id())?;
        store::owned_by(c, mailbox_id)?
            .iter()
            .map(|f| view(ctx, f))
            .collect()
    })
}

/// The form a public page shows, with its fields in display order.
#[derive(Debug, Clone)]
pub struct PageForm {
    pub id: String,
    pub name: String,
    pub description: String,
    pub embedded: bool,
    pub standalone: bool,
    pub fields: Vec<Field>,
}

/// `GET {base}/forms/{id}`: the form for its page, under the access rules (a disabled form and
/// an unknown id are refused; `ERR_AUTH_UNAUTHORIZED` when the form needs a sign-in).
pub fn page(
    ctx: &Ctx,
    id: &str,
    who: Option<&Caller>,
    client_ip: Option<&str>,
) -> Result<PageForm> {
    let f = usable(ctx, id, who, client_ip)?;
    Ok(PageForm {
        fields: fields_of(&f)?,
        id: f.id,
        name: f.name,
        description: f.description,
        embedded: f.embedded,
        standalone: f.standalone,
    })
}

/// Only whether the page of `id` may be framed by other sites (for an error page too).
pub fn embeddable(ctx: &Ctx, id: &str) -> bool {
    ctx.read(|c| Ok(store::by_id(c, id)?))
        .ok()
        .flatten()
        .is_some_and(|f| f.active && f.embedded)
}

// Submission.

/// The most files one submission may carry.
pub const MAX_FILES: usize = 20;

/// A submission of `form` by `sender` as a new draft email (in no one's mailbox yet).
pub(crate) fn new_email(form: &WebForm, sender: &str, t: i64) -> Email {
    Email {
        id: uuid::Uuid::new_v4().to_string(),
        sender_id: sender.to_string(),
        actor_id: sender.to_string(),
        status: "draft".into(),
        kind: "original".into(),
        subject: format!("Web form: {}", form.name),
        body: String::new(),
        acl: "internal".into(),
        secure_body: false,
        self_copy: false,
        include_fingerprint: false,
        expire_at: None,
        parent_email_id: None,
        web_form_id: Some(form.id.clone()),
        web_form_fields: None,
        error: None,
        created_at: t,
        modified_at: t,
        sent_at: None,
        withdrawn_at: None,
    }
}

// Operator commands.

/// What `cofferd webform create|update` sets; `None` keeps the current value on update.
#[derive(Debug, Clone, Default)]
pub struct FormInput {
    pub name: Option<String>,
    pub description: Option<String>,
    /// The owner's email address: a user's, or a shared mailbox's.
    pub owner: Option<String>,
    /// The field definitions (see [`rules::parse_fields`]).
    pub fields: Option<Value>,
    /// Profile names or ids; empty: every profile.
    pub profiles: Option<Vec<String>>,
    pub auth_required: Option<bool>,
    pub active: Option<bool>,
    pub embedded: Option<bool>,
    pub standalone: Option<bool>,
}

fn invalid(field: &str, message: String) -> Error {
    ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(message)
        .into()
}

fn operator_view(c: &mut DbConn, ctx: &Ctx, f: &WebForm) -> Result<OperatorView> {
    let owner = coffer_store::users::by_id(c, &f.owner_id)?;
    Ok(OperatorView {
        form: view(ctx, f)?,
        owner_id: f.owner_id.clone(),
        owner_email: owner.map(|o| o.email).unwrap_or_default(),
    })
}

/// Applies `input` to `f`, checking each value.
fn apply(c: &mut DbConn, f: &mut WebForm, input: &FormInput) -> Result<()> {
    if let Some(n) = &input.name {
        let n = n.trim();
        if n.is_empty() || n.chars().count() > 255 || !coffer_domain::input::is_clean(n, false) {
            return Err(invalid(
                "name",
                "The name must be 1 to 255 characters.".into(),
            ));
        }
        f.name = n.to_string();
        f.name_folded = n.to_lowercase();
    }
    if let Some(d) = &input.description {
        if d.chars().count() > 4000 || !coffer_domain::input::is_clean(d, true) {
            return Err(invalid(
                "description",
                "The description must be at most 4000 characters.".into(),
            ));
        }
        f.description = d.clone();
    }
    if let Some(o) = &input.owner {
        let u = coffer_store::users::by_email(c, o.trim())?
            .filter(|u| !u.deleted)
            .ok_or_else(|| invalid("owner", format!("No account has the address {o}.")))?;
        f.owner_id = u.id;
    }
    if let Some(v) = &input.fields {
        let fields = rules::parse_fields(v)?;
        f.fields = serde_json::to_string(&fields).map_err(Error::internal)?;
    }
    if let Some(ps) = &input.profiles {
        let mut ids: Vec<i64> = Vec::with_capacity(ps.len());
        for p in ps.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
            let found = match p.parse::<i64>() {
                Ok(id) => coffer_store::users::profile(c, id)?.map(|p| p.id),
                Err(_) => coffer_store::users::profile_by_name(c, p)?.map(|p| p.id),
            };
            let id = found.ok_or_else(|| invalid("profiles", format!("No profile {p}.")))?;
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
        f.profiles = serde_json::to_string(&ids).map_err(Error::internal)?;
    }
    if let Some(b) = input.auth_required {
        f.auth_required = b;
    }
    if let Some(b) = input.active {
        f.active = b;
    }
    if let Some(b) = input.embedded {
        f.embedded = b;
    }
    if let Some(b) = input.standalone {
        f.standalone = b;
    }
    Ok(())
}

/// `cofferd webform create`: needs `name`, `owner` and `fields`.
pub fn create(ctx: &Ctx, input: &FormInput) -> Result<OperatorView> {
    for (given, name) in [
        (input.name.is_some(), "name"),
        (input.owner.is_some(), "owner"),
        (input.fields.is_some(), "fields"),
    ] {
        if !given {
            return Err(ApiError::field(ErrorCode::InputRequired, name)
                .with_message(format!("The field is required ({name})."))
                .into());
        }
    }
    ctx.write(|c| {
        let t = now();
        let mut f = WebForm {
            id: uuid::Uuid::new_v4().to_string(),
            name: String::new(),
            name_folded: String::new(),
            description: String::new(),
            owner_id: String::new(),
            active: true,
            auth_required: false,
            embedded: false,
            standalone: true,
            fields: "[]".into(),
            profiles: "[]".into(),
            created_at: t,
            modified_at: t,
        };
        apply(c, &mut f, input)?;
        store::insert(c, &f)?;
        events::record(
            c,
            "webform.webform.create",
            None,
            json!({"id": f.id, "name": f.name, "ownerId": f.owner_id}),
        )?;
        operator_view(c, ctx, &f)
    })
}

/// `cofferd webform update ID`: changes what `input` names.
pub fn update(ctx: &Ctx, id: &str, input: &FormInput) -> Result<OperatorView> {
    ctx.write(|c| {
        let mut f = store::by_id(c, id)?.ok_or_else(not_found)?;
        apply(c, &mut f, input)?;
        f.modified_at = now();
        store::update(c, &f)?;
        events::record(
            c,
            "webform.webform.update",
            None,
            json!({"id": f.id, "name": f.name, "ownerId": f.owner_id, "enabled": f.active}),
        )?;
        operator_view(c, ctx, &f)
    })
}

/// `cofferd webform delete ID`: the form goes; the emails its submissions made stay.
pub fn delete(ctx: &Ctx, id: &str) -> Result<()> {
    ctx.write(|c| {
        if store::delete(c, id)? == 0 {
            return Err(not_found());
        }
        events::record(c, "webform.webform.delete", None, json!({"id": id}))
    })
}

/// `cofferd webform list`: every form, disabled ones too.
pub fn list_all(ctx: &Ctx) -> Result<Vec<OperatorView>> {
    ctx.read(|c| {
        store::all(c)?
            .iter()
            .map(|f| operator_view(c, ctx, f))
            .collect()
    })
}
