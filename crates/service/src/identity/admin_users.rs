//! The administrators' account endpoints (`/rest/admin/users*`) and a user's own settings
//! (`/rest/users/{id}/settings`). `docs/accounts.md` gives the rules.
//!
//! Who may call: user administrators (system and helpdesk administrators): the administrators'
//! functions take an [`AccountAdmin`], which only the role check makes. A helpdesk administrator manages plain users only:
//! creating, changing or removing the second factor of an administrator, or giving anyone an
//! administrator role, answers 403 `ERR_ADMIN_ROLE_RANK_RESTRICTED`. No administrator
//! deactivates their own account or changes their own role (403 `ERR_ACCESS_USER`), so the last
//! system administrator cannot lock everyone out by mistake.

use crate::identity::accounts;
use crate::platform::auth::{AccountAdmin, Caller};
use crate::platform::events;
use crate::platform::views::{Link, Listed, MetadataItem};
use crate::{now, Ctx, Result};
use coffer_domain::list::ListQuery;
use coffer_domain::{Email, Role};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::User;
use coffer_store::DbConn;
use serde::Serialize;
use utoipa::ToSchema;

/// At most this many ids in one `deleteTotpSecret` call.
pub const MAX_IDS: usize = 100;

/// The user record of the administrators' calls.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminUserView {
    pub id: String,
    pub basedir_id: String,
    /// The creation date, `YYYY-MM-DD`.
    pub created: String,
    pub email: String,
    pub mydir_id: String,
    pub name: String,
    pub syncdir_id: String,
    pub user_type_id: i64,
    pub internal: bool,
    pub profile_icon: String,
    #[serde(rename = "extDL")]
    pub ext_dl: bool,
    pub metadata: Vec<MetadataItem>,
    /// 0 for a plain user, else the id of the administrator role (see `adminRoles`).
    pub admin_role_id: i32,
    /// Whether the account may sign in (not deactivated and not deleted).
    pub active: bool,
    /// Coffer has one switch for both: `suspended` and `deactivated` read the same.
    pub suspended: bool,
    pub deactivated: bool,
    pub deleted: bool,
    /// Accounts made by an administrator, the operator or SCIM count as verified.
    pub verified: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

impl AdminUserView {
    pub fn from_user(u: &User) -> AdminUserView {
        let role = u.role.parse::<Role>().unwrap_or(Role::User);
        AdminUserView {
            id: u.id.clone(),
            basedir_id: u.basedir_id.clone(),
            created: crate::rfc3339(u.created_at)
                .get(..10)
                .unwrap_or_default()
                .to_string(),
            email: u.email.clone(),
            mydir_id: u.mydir_id.clone(),
            name: u.name.clone(),
            syncdir_id: u.syncdir_id.clone(),
            user_type_id: u.profile_id,
            internal: u.internal,
            profile_icon: String::new(),
            ext_dl: false,
            metadata: Vec::new(),
            admin_role_id: role.admin_role_id(),
            active: u.is_usable(),
            suspended: !u.active && !u.deleted,
            deactivated: !u.active && !u.deleted,
            deleted: u.deleted,
            verified: true,
            links: None,
        }
    }
}

/// An administrator role held by a user.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct AdminRoleView {
    pub id: i32,
    pub name: String,
}

/// The administrator role with this `adminRoleId` (0: a plain user).
pub fn role_by_admin_id(id: i64) -> Option<Role> {
    Role::ALL
        .into_iter()
        .find(|r| i64::from(r.admin_role_id()) == id)
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::User => "User",
        Role::SystemAdmin => "System Admin",
        Role::ApplicationAdmin => "Application Admin",
        Role::HelpdeskAdmin => "Helpdesk Admin",
    }
}

fn role_of(u: &User) -> Role {
    u.role.parse::<Role>().unwrap_or(Role::User)
}

fn rank_restricted(what: &str) -> Error {
    ApiError::new(ErrorCode::AdminRoleRankRestricted)
        .with_message(format!(
            "The administrator role rank does not allow this operation ({what})."
        ))
        .into()
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// Checks a display name: trimmed, 1 to 255 bytes.
pub fn check_name(name: &str) -> Result<String> {
    let n = name.trim();
    if n.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "name").into());
    }
    if n.len() > 255 {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, "name")
            .with_message("The value has an invalid format (name: at most 255 bytes).")
            .into());
    }
    Ok(n.to_string())
}

fn check_profile(c: &mut DbConn, id: i64) -> Result<i64> {
    coffer_store::users::profile(c, id)?
        .map(|p| p.id)
        .ok_or_else(|| ApiError::field(ErrorCode::InvalidParameter, "userTypeId").into())
}

/// `GET /rest/admin/users`.
pub fn list(
    ctx: &Ctx,
    _: &AccountAdmin,
    q: &ListQuery,
    created: (Option<i64>, Option<i64>),
) -> Result<Listed<AdminUserView>> {
    let page = ctx.with_conn(|c| Ok(coffer_store::users::list(c, q, created)?))?;
    Ok(Listed {
        items: page.items.iter().map(AdminUserView::from_user).collect(),
        total: page.total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// `cofferd user list`: every account that is not deleted, for the operator at the server's
/// console.
pub fn list_for_operator(ctx: &Ctx) -> Result<Vec<AdminUserView>> {
    let q = coffer_domain::list::parse(
        &[("limit".into(), "10000".into())],
        &coffer_domain::list::ListSpec::PLAIN,
    )?;
    let mut all = Vec::new();
    loop {
        let q = ListQuery {
            offset: all.len() as i64,
            ..q.clone()
        };
        let page = ctx.with_conn(|c| Ok(coffer_store::users::list(c, &q, (None, None))?))?;
        let done = page.items.is_empty() || all.len() + page.items.len() >= page.total as usize;
        all.extend(page.items.iter().map(AdminUserView::from_user));
        if done {
            return Ok(all);
        }
    }
}

/// `GET /rest/admin/users/{id}`: deleted accounts too (`deleted: true`).
pub fn get(ctx: &Ctx, _: &AccountAdmin, id: &str) -> Result<AdminUserView> {
    let u = ctx
        .with_conn(|c| Ok(coffer_store::users::by_id(c, id)?))?
        .ok_or_else(not_found)?;
    Ok(AdminUserView::from_user(&u))
}

/// What `POST /rest/admin/users` gives.
#[derive(Debug, Clone, Default)]
pub struct CreateInput {
    pub email: String,
    pub name: Option<String>,
    pub password: Option<String>,
    pub user_type_id: Option<i64>,
    pub admin_role_id: Option<i64>,
    pub send_notification: bool,
}

/// `POST /rest/admin/users`: a new account through [`accounts::insert_user`] (its system
/// folders, the distribution-list and duplicate checks, `user.user.create`). Without a password
/// the account cannot sign in with one until an administrator sets it.
pub fn create(ctx: &Ctx, caller: &AccountAdmin, input: CreateInput) -> Result<AdminUserView> {
    let email = Email::parse(&input.email)
        .map_err(|m| ApiError::field(ErrorCode::InputInvalidFormat, "email").with_message(m))?;
    let name = match &input.name {
        Some(n) => check_name(n)?,
        None => email
            .as_str()
            .split('@')
            .next()
            .unwrap_or_default()
            .to_string(),
    };
    let role = match input.admin_role_id {
        None => Role::User,
        Some(id) => role_by_admin_id(id)
            .ok_or_else(|| ApiError::field(ErrorCode::InputNotInList, "adminRoleId"))?,
    };
    if !caller.may_manage(role) {
        return Err(rank_restricted(
            "only a system administrator gives an administrator role",
        ));
    }
    let hash = match &input.password {
        Some(pw) => {
            accounts::check_policy(ctx, pw)?;
            Some(accounts::hash_password(pw)?)
        }
        None => None,
    };
    let user = ctx.write(|c| {
        let profile = match input.user_type_id {
            Some(id) => Some(check_profile(c, id)?.to_string()),
            None => None,
        };
        let user = accounts::insert_user(
            c,
            &email,
            &name,
            hash.clone(),
            role,
            profile.as_deref(),
            Some(&caller.user.id),
        )?;
        if input.send_notification {
            // No mail is sent from here: the event says it was asked for, for a mail
            // integration to act on (as SCIM's `notify`).
            events::record(
                c,
                "user.user.notify",
                Some(&caller.user.id),
                serde_json::json!({"id": user.id, "userId": user.id, "email": user.email}),
            )?;
        }
        Ok(user)
    })?;
    Ok(AdminUserView::from_user(&user))
}

/// What `PUT /rest/admin/users/{id}` changes; `None` keeps the stored value.
#[derive(Debug, Clone, Default)]
pub struct UpdateInput {
    pub name: Option<String>,
    pub password: Option<String>,
    /// `deactivated`, or `suspended` (the same switch).
    pub deactivated: Option<bool>,
    pub user_type_id: Option<i64>,
    pub admin_role_id: Option<i64>,
}

/// `PUT /rest/admin/users/{id}`. Deactivating an account, or setting its password, ends its
/// sessions and tokens. Records `user.user.update` (and `user.password.change` for a password).
pub fn update(
    ctx: &Ctx,
    caller: &AccountAdmin,
    id: &str,
    input: UpdateInput,
) -> Result<AdminUserView> {
    let name = input.name.as_deref().map(check_name).transpose()?;
    let new_role = match input.admin_role_id {
        None => None,
        Some(r) => Some(
            role_by_admin_id(r)
                .ok_or_else(|| ApiError::field(ErrorCode::InputNotInList, "adminRoleId"))?,
        ),
    };
    let hash = match &input.password {
        Some(pw) => {
            accounts::check_policy(ctx, pw)?;
            Some(accounts::hash_password(pw)?)
        }
        None => None,
    };
    let user = ctx.write(|c| {
        let u = coffer_store::users::by_id(c, id)?.ok_or_else(not_found)?;
        if u.deleted {
            return Err(ApiError::new(ErrorCode::EntityDeleted).into());
        }
        let current = role_of(&u);
        if !caller.may_manage(current) {
            return Err(rank_restricted("a helpdesk administrator manages plain users only"));
        }
        if let Some(r) = new_role {
            if r != current && !caller.may_manage(r) {
                return Err(rank_restricted(
                    "only a system administrator gives an administrator role",
                ));
            }
        }
        let own = u.id == caller.user.id;
        let role_change = new_role.filter(|r| *r != current);
        let deactivate = input.deactivated == Some(true) && u.active;
        if own && (role_change.is_some() || deactivate) {
            return Err(ApiError::new(ErrorCode::AccessUser)
                .with_message("Insufficient access permissions (an administrator cannot deactivate their own account or change their own role).")
                .into());
        }
        let profile_id = match input.user_type_id {
            Some(p) => Some(check_profile(c, p)?),
            None => None,
        };
        let changes = coffer_store::users::AdminChanges {
            name: name.clone(),
            active: input.deactivated.map(|d| !d),
            role: role_change.map(|r| r.as_str().to_string()),
            profile_id,
            password_hash: hash.clone(),
        };
        let t = now();
        let nothing = changes.name.is_none()
            && changes.active.is_none()
            && changes.role.is_none()
            && changes.profile_id.is_none()
            && changes.password_hash.is_none();
        if nothing {
            return Ok(u);
        }
        if coffer_store::users::admin_update(c, id, u.version, &changes, t)? == 0 {
            return Err(ApiError::new(ErrorCode::EntityExists)
                .with_message("The entity exists (the account changed meanwhile; read it again).")
                .into());
        }
        let mut sessions_ended = 0;
        if deactivate || hash.is_some() {
            sessions_ended = end_sessions(c, caller, id)?;
        }
        events::record(
            c,
            "user.user.update",
            Some(&caller.user.id),
            serde_json::json!({
                "id": id,
                "userId": id,
                "name": changes.name.is_some(),
                "active": changes.active,
                "role": changes.role,
                "userTypeId": changes.profile_id,
                "password": hash.is_some(),
                "sessionsEnded": sessions_ended,
            }),
        )?;
        if hash.is_some() {
            events::record(
                c,
                "user.password.change",
                Some(&caller.user.id),
                serde_json::json!({"id": id, "userId": id, "sessionsEnded": sessions_ended, "byAdmin": true}),
            )?;
        }
        coffer_store::users::by_id(c, id)?.ok_or_else(|| Error::internal("the user vanished"))
    })?;
    Ok(AdminUserView::from_user(&user))
}

/// Ends a user's sessions and tokens; on the caller's own account, all but the one making the
/// call (as `PUT /rest/users/me` does). Returns how many token families ended.
fn end_sessions(c: &mut DbConn, caller: &Caller, id: &str) -> Result<usize> {
    if id == caller.user.id {
        let ended = coffer_store::tokens::revoke_user_except_family(c, id, &caller.family_id)?;
        let keep = caller
            .family_id
            .strip_prefix(crate::identity::sessions::SESSION_FAMILY_PREFIX);
        coffer_store::web_sessions::delete_for_user(c, id, keep)?;
        return Ok(ended);
    }
    let ended = coffer_store::tokens::revoke_user(c, id)?;
    coffer_store::web_sessions::delete_for_user(c, id, None)?;
    Ok(ended)
}

/// `GET /rest/admin/users/{id}/adminRoles`: the administrator roles the account holds (none
/// for a plain user).
pub fn admin_roles(ctx: &Ctx, _: &AccountAdmin, id: &str) -> Result<Vec<AdminRoleView>> {
    let u = ctx
        .with_conn(|c| Ok(coffer_store::users::by_id(c, id)?))?
        .ok_or_else(not_found)?;
    let role = role_of(&u);
    Ok(if role.is_admin() {
        vec![AdminRoleView {
            id: role.admin_role_id(),
            name: role_name(role).to_string(),
        }]
    } else {
        Vec::new()
    })
}

/// `GET /rest/admin/users/{id}/devices`.
pub fn devices(
    ctx: &Ctx,
    caller: &AccountAdmin,
    id: &str,
    q: &ListQuery,
) -> Result<Listed<crate::platform::views::DeviceView>> {
    crate::identity::devices::list_for_user(ctx, caller, id, q)
}

/// `POST /rest/admin/users/actions/deleteTotpSecret {ids}`: forgets each account's TOTP secret
/// and turns TOTP sign-in off, so that the user enrols again; the user's sessions and tokens
/// end (they passed with the secret being removed). All or nothing: an unknown id answers 404,
/// a deleted account 403 `ERR_ENTITY_DELETED`, an administrator's account for a helpdesk
/// administrator 403 `ERR_ADMIN_ROLE_RANK_RESTRICTED`, and nothing is changed.
pub fn delete_totp_secrets(ctx: &Ctx, caller: &AccountAdmin, ids: &[String]) -> Result<()> {
    if ids.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "ids").into());
    }
    if ids.len() > MAX_IDS {
        return Err(ApiError::field(ErrorCode::InvalidParameter, "ids")
            .with_message(format!(
                "The parameter is invalid (ids: at most {MAX_IDS})."
            ))
            .into());
    }
    ctx.write(|c| {
        let mut users = Vec::new();
        for id in ids {
            let u = coffer_store::users::by_id(c, id)?.ok_or_else(|| {
                Error::from(
                    ApiError::new(ErrorCode::EntityNotFound).with_failed_ids(vec![id.clone()]),
                )
            })?;
            if u.deleted {
                return Err(ApiError::new(ErrorCode::EntityDeleted)
                    .with_failed_ids(vec![id.clone()])
                    .into());
            }
            if !caller.may_manage(role_of(&u)) {
                return Err(rank_restricted(
                    "a helpdesk administrator manages plain users only",
                ));
            }
            if !users.iter().any(|x: &User| x.id == u.id) {
                users.push(u);
            }
        }
        let t = now();
        for u in users {
            coffer_store::users::set_totp(c, &u.id, None, false, t)?;
            let ended = end_sessions(c, caller, &u.id)?;
            events::record(
                c,
                "user.tfa.delete",
                Some(&caller.user.id),
                serde_json::json!({
                    "userId": u.id,
                    "type": "totp",
                    "hadSecret": u.totp_secret.is_some(),
                    "sessionsEnded": ended,
                }),
            )?;
        }
        Ok(())
    })
}

/// A user's settings (`GET/PUT /rest/users/{id}/settings`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserSettingsView {
    /// The user's language, else the system's.
    pub language_id: i64,
    /// The user's default location; left out when none is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location_id: Option<i64>,
    pub signature: String,
    pub storage_used: i64,
    pub storage_quota: i64,
    pub mobile_key_store: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mobile_number: Option<String>,
    pub mobile_number_verified: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

/// Only the user's own settings: another id, known or not, answers 403 `ERR_ACCESS_USER`.
fn own(caller: &Caller, id: &str) -> Result<()> {
    if id == caller.user.id {
        Ok(())
    } else {
        Err(ApiError::new(ErrorCode::AccessUser)
            .with_message("Insufficient access permissions (a user reads and changes their own settings only).")
            .into())
    }
}

fn settings_view(ctx: &Ctx, user: &User) -> Result<UserSettingsView> {
    let system = crate::identity::settings::system_settings(ctx, user)?;
    let (signature, mobile_key_store) =
        ctx.with_conn(|c| Ok(coffer_store::users::settings(c, &user.id)?))?;
    Ok(UserSettingsView {
        language_id: user.language_id.unwrap_or(system.language_id),
        location_id: user.location_id,
        signature,
        storage_used: system.storage_used,
        storage_quota: system.storage_quota,
        mobile_key_store,
        mobile_number: user.mobile_number.clone(),
        mobile_number_verified: user.mobile_verified,
        links: None,
    })
}

/// `GET /rest/users/{id}/settings`.
pub fn settings(ctx: &Ctx, caller: &Caller, id: &str) -> Result<UserSettingsView> {
    own(caller, id)?;
    settings_view(ctx, &caller.user)
}

/// The largest signature, in bytes.
pub const MAX_SIGNATURE: usize = 10_000;
/// The largest mobile key store, in bytes (as on devices).
pub const MAX_KEY_STORE: usize = 8192;

/// What `PUT /rest/users/{id}/settings` changes; `None` keeps the stored value.
#[derive(Debug, Clone, Default)]
pub struct SettingsInput {
    pub language_id: Option<i64>,
    pub location_id: Option<i64>,
    pub signature: Option<String>,
    pub mobile_key_store: Option<String>,
}

/// `PUT /rest/users/{id}/settings`: `languageId` (1 or more), `locationId` (a known location),
/// `signature` (at most 10,000 bytes, may span lines), `mobileKeyStore` (at most 8192 bytes).
/// Records `user.settings.update` naming the fields changed.
pub fn update_settings(
    ctx: &Ctx,
    caller: &Caller,
    id: &str,
    input: SettingsInput,
) -> Result<UserSettingsView> {
    own(caller, id)?;
    if input
        .language_id
        .is_some_and(|l| !(1..=i64::from(i32::MAX)).contains(&l))
    {
        return Err(ApiError::field(ErrorCode::InputMinValue, "languageId").into());
    }
    if input
        .signature
        .as_ref()
        .is_some_and(|s| s.len() > MAX_SIGNATURE)
    {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, "signature")
            .with_message(format!(
                "The value has an invalid format (signature: at most {MAX_SIGNATURE} bytes)."
            ))
            .into());
    }
    if input
        .mobile_key_store
        .as_ref()
        .is_some_and(|s| s.len() > MAX_KEY_STORE)
    {
        return Err(
            ApiError::field(ErrorCode::InputInvalidFormat, "mobileKeyStore")
                .with_message(format!(
                "The value has an invalid format (mobileKeyStore: at most {MAX_KEY_STORE} bytes)."
            ))
                .into(),
        );
    }
    let user = ctx.write(|c| {
        if let Some(l) = input.location_id {
            if l < 1 || coffer_store::locations::by_id(c, l)?.is_none() {
                return Err(ApiError::field(ErrorCode::InvalidParameter, "locationId").into());
            }
        }
        let u = coffer_store::users::by_id(c, id)?.ok_or_else(not_found)?;
        let (signature, key_store) = coffer_store::users::settings(c, id)?;
        let mut changed = Vec::new();
        if input.language_id.is_some() && input.language_id != u.language_id {
            changed.push("languageId");
        }
        if input.location_id.is_some() && input.location_id != u.location_id {
            changed.push("locationId");
        }
        if input.signature.as_ref().is_some_and(|s| *s != signature) {
            changed.push("signature");
        }
        if input
            .mobile_key_store
            .as_ref()
            .is_some_and(|s| *s != key_store)
        {
            changed.push("mobileKeyStore");
        }
        if !changed.is_empty() {
            coffer_store::users::set_settings(
                c,
                id,
                input.language_id.or(u.language_id),
                input.location_id.or(u.location_id),
                input.signature.as_deref().unwrap_or(&signature),
                input.mobile_key_store.as_deref().unwrap_or(&key_store),
                now(),
            )?;
            events::record(
                c,
                "user.settings.update",
                Some(&caller.user.id),
                serde_json::json!({"userId": id, "fields": changed}),
            )?;
        }
        coffer_store::users::by_id(c, id)?.ok_or_else(|| Error::internal("the user vanished"))
    })?;
    settings_view(ctx, &user)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_role_ids_map_to_roles() {
        assert_eq!(role_by_admin_id(0), Some(Role::User));
        assert_eq!(role_by_admin_id(1), Some(Role::SystemAdmin));
        assert_eq!(role_by_admin_id(3), Some(Role::HelpdeskAdmin));
        assert_eq!(role_by_admin_id(4), None);
        assert_eq!(role_by_admin_id(-1), None);
    }

    #[test]
    fn names_are_trimmed_and_bounded() {
        assert_eq!(check_name("  Ann ").unwrap(), "Ann");
        assert!(check_name("   ").is_err());
        assert!(check_name(&"x".repeat(256)).is_err());
    }
}
