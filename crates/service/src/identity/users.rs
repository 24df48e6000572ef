//! Account operations on the current user and user deletion (interface §4.10).

use crate::identity::accounts;
use crate::identity::settings;
use crate::platform::auth::Caller;
use crate::platform::events;
use crate::platform::views::CurrentUser;
use crate::{now, Ctx, Result};
use coffer_domain::Role;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::User;
use coffer_store::DbConn;

/// `PUT /rest/users/me`: a new name, and a new password that needs the previous one and passes
/// the policy. A new password ends every other session of the user.
pub fn update_me(
    ctx: &Ctx,
    caller: &Caller,
    name: Option<String>,
    password: Option<String>,
    previous: Option<String>,
    client_ip: Option<&str>,
) -> Result<CurrentUser> {
    if let Some(n) = &name {
        if n.trim().is_empty() || n.len() > 255 || n.chars().any(char::is_control) {
            return Err(ApiError::field(ErrorCode::InputInvalidFormat, "name").into());
        }
    }
    let new_hash = match &password {
        None => None,
        Some(pw) => {
            let prev = previous
                .as_deref()
                .ok_or_else(|| ApiError::field(ErrorCode::InputRequired, "previousPassword"))?;
            Some(accounts::check_new_password(
                ctx,
                &caller.user,
                prev,
                pw,
                client_ip,
            )?)
        }
    };
    if name.is_none() && new_hash.is_none() {
        return Err(ApiError::field(ErrorCode::InputRequired, "name").into());
    }
    let user = ctx.write(|c| {
        let t = now();
        if let Some(n) = &name {
            coffer_store::users::set_name(c, &caller.user.id, n.trim(), t)?;
            events::record(c, "user.user.update", Some(&caller.user.id), serde_json::json!({"id": caller.user.id, "userId": caller.user.id}))?;
        }
        if let Some(h) = &new_hash {
            coffer_store::users::set_password(c, &caller.user.id, h, t)?;
            let ended = coffer_store::tokens::revoke_user_except_family(c, &caller.user.id, &caller.family_id)?;
            let keep = caller.family_id.strip_prefix(crate::identity::sessions::SESSION_FAMILY_PREFIX);
            coffer_store::web_sessions::delete_for_user(c, &caller.user.id, keep)?;
            events::record(
                c,
                "user.password.change",
                Some(&caller.user.id),
                serde_json::json!({"id": caller.user.id, "userId": caller.user.id, "sessionsEnded": ended}),
            )?;
        }
        coffer_store::users::by_id(c, &caller.user.id)?.ok_or_else(|| Error::internal("the user vanished"))
    })?;
    accounts::current_user(ctx, &user)
}

/// The delete options of `DELETE /rest/users` and `DELETE /rest/admin/users/{id}`.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    pub remote_wipe: bool,
    pub delete_unshared_data: bool,
    pub retain_data: bool,
    pub retain_permission_to_shared_data: bool,
    pub withdraw_file_links: bool,
    pub withdraw_request_files: bool,
    pub retain_to_user: Option<String>,
    pub retain_to_advanced_form_user: Option<String>,
}

impl DeleteOptions {
    /// `deleteUnsharedData` and `retainData` are opposites: exactly one is true (the default
    /// is to delete). Retaining data needs the user who receives it.
    pub fn check(
        delete_unshared: Option<bool>,
        retain: Option<bool>,
        mut opts: DeleteOptions,
    ) -> std::result::Result<DeleteOptions, ApiError> {
        let retain = retain.unwrap_or(false);
        let delete = delete_unshared.unwrap_or(!retain);
        if delete == retain {
            return Err(if retain {
                ApiError::field(ErrorCode::InputAttributeForbidden, "deleteUnsharedData")
                    .with_message("The attribute is forbidden (deleteUnsharedData cannot be true when retainData is true).")
            } else {
                ApiError::field(ErrorCode::InputRequired, "deleteUnsharedData")
                    .with_message("The field is required (deleteUnsharedData must be true when retainData is false).")
            });
        }
        if retain && opts.retain_to_user.is_none() {
            return Err(ApiError::field(ErrorCode::InputRequired, "retainToUser"));
        }
        if !retain && (opts.retain_to_user.is_some() || opts.retain_permission_to_shared_data) {
            let field = if opts.retain_to_user.is_some() {
                "retainToUser"
            } else {
                "retainPermissionToSharedData"
            };
            return Err(
                ApiError::field(ErrorCode::InputAttributeForbidden, field).with_message(format!(
                    "The attribute is forbidden ({field} applies only when retainData is true)."
                )),
            );
        }
        opts.delete_unshared_data = delete;
        opts.retain_data = retain;
        Ok(opts)
    }
}

/// Why one user cannot be deleted by this caller (`None`: the operator).
fn refuse(
    c: &mut DbConn,
    caller: Option<&Caller>,
    id: &str,
    retain_to: Option<&str>,
) -> Result<Option<(User, ErrorCode)>> {
    let Some(user) = coffer_store::users::by_id(c, id)? else {
        return Ok(Some((placeholder(id), ErrorCode::EntityNotFound)));
    };
    if user.deleted {
        return Ok(Some((user, ErrorCode::EntityDeleted)));
    }
    let target = user.role.parse::<Role>().unwrap_or(Role::User);
    let outranks = caller.is_some_and(|c| c.role == Role::HelpdeskAdmin && target != Role::User);
    let oneself = caller.is_some_and(|c| c.user.id == user.id);
    if oneself || outranks || retain_to == Some(id) {
        return Ok(Some((user, ErrorCode::AccessUser)));
    }
    Ok(None)
}

fn placeholder(id: &str) -> User {
    User {
        id: id.to_string(),
        email: String::new(),
        name: String::new(),
        password_hash: None,
        role: String::new(),
        profile_id: 0,
        active: false,
        deleted: false,
        internal: false,
        force_password_change: false,
        mobile_number: None,
        mobile_verified: false,
        language_id: None,
        location_id: None,
        basedir_id: String::new(),
        mydir_id: String::new(),
        syncdir_id: String::new(),
        version: 0,
        created_at: 0,
        updated_at: 0,
        totp_secret: None,
        totp_enabled: false,
        totp_last_step: None,
        user_name: None,
        external_id: None,
        preferred_language: None,
        email_primary: None,
        mobile_primary: None,
        former_email: None,
    }
}

/// The outcome of a bulk delete.
#[derive(Debug, Clone)]
pub struct Deleted {
    pub deleted: Vec<(String, String)>,
    pub failed: Vec<String>,
}

/// Marks users deleted (they cannot sign in; their tokens stop at once; `remoteWipe` asks their
/// devices to wipe). Without `partial_success` the whole call fails if one id does.
pub fn delete(
    ctx: &Ctx,
    caller: &Caller,
    ids: &[String],
    opts: &DeleteOptions,
    partial_success: bool,
) -> Result<Deleted> {
    if !caller.is_user_admin() {
        return Err(ApiError::new(ErrorCode::AccessUser).into());
    }
    delete_as(ctx, Some(caller), ids, opts, partial_success)
}

/// `cofferd user delete`: the same deletion for the operator at the server's console, who may
/// delete any account (there is no calling account to protect or to outrank). All or nothing.
pub fn delete_by_operator(ctx: &Ctx, ids: &[String], opts: &DeleteOptions) -> Result<Deleted> {
    delete_as(ctx, None, ids, opts, false)
}

/// An account by its id or, failing that, its email address (deleted accounts too).
pub fn by_id_or_email(ctx: &Ctx, key: &str) -> Result<User> {
    let key = key.trim();
    ctx.with_conn(|c| {
        Ok(match coffer_store::users::by_id(c, key)? {
            Some(u) => Some(u),
            None => coffer_store::users::by_email(c, &key.to_lowercase())?,
        })
    })?
    .ok_or_else(|| ApiError::new(ErrorCode::EntityNotFound).into())
}

/// The deletion for `caller`, or for the operator when `None`.
fn delete_as(
    ctx: &Ctx,
    caller: Option<&Caller>,
    ids: &[String],
    opts: &DeleteOptions,
    partial_success: bool,
) -> Result<Deleted> {
    let actor = caller.map(|c| c.user.id.as_str());
    ctx.write(|c| {
        if let Some(to) = &opts.retain_to_user {
            let receiver = coffer_store::users::by_id(c, to)?;
            if receiver.is_none_or(|u| u.deleted) || ids.contains(to) {
                return Err(ApiError::field(ErrorCode::InvalidParameter, "retainToUser").into());
            }
        }
        let mut failed = Vec::new();
        let mut first_error = None;
        let mut targets = Vec::new();
        for id in ids {
            match refuse(c, caller, id, opts.retain_to_user.as_deref())? {
                Some((_, code)) => {
                    failed.push(id.clone());
                    first_error.get_or_insert(code);
                }
                None => targets.push(id.clone()),
            }
        }
        if let Some(code) = first_error.filter(|_| !partial_success) {
            return Err(ApiError::new(code).with_failed_ids(failed).into());
        }
        let t = now();
        let mut deleted = Vec::new();
        for id in targets {
            let Some(user) = coffer_store::users::by_id(c, &id)? else {
                continue;
            };
            delete_one(c, &id, actor, opts, t)?;
            deleted.push((user.id, user.email));
        }
        Ok(Deleted { deleted, failed })
    })
}

/// Deletes one account inside the caller's transaction: it can no longer sign in, its tokens
/// and sessions end, `remoteWipe` asks its devices to wipe, and `withdrawRequestFiles` ends the
/// request-file links it made.
pub fn delete_one(
    c: &mut DbConn,
    id: &str,
    actor: Option<&str>,
    opts: &DeleteOptions,
    t: i64,
) -> Result<()> {
    coffer_store::users::mark_deleted(c, id, t)?;
    coffer_store::tokens::revoke_user(c, id)?;
    coffer_store::web_sessions::delete_for_user(c, id, None)?;
    if opts.remote_wipe {
        coffer_store::devices::request_wipe_for_user(c, id, t)?;
    }
    if opts.withdraw_request_files {
        // Ended as their maker's withdrawal ends them: they answer as withdrawn, and the mail
        // that carries them and was not sent yet never is. Without the option they work until
        // their own last day (the files they bring still land in the account's folders).
        for link in coffer_store::request_files::live_of_user(c, id, t)? {
            coffer_store::request_files::withdraw(c, link.id, t)?;
            events::record(
                c,
                "requestfile.link.delete",
                actor,
                serde_json::json!({"id": link.id, "requestorId": link.requestor_id, "recipient": link.recipient, "userDeleted": id}),
            )?;
        }
    }
    events::record(
        c,
        "user.user.delete",
        actor,
        serde_json::json!({"id": id, "userId": id, "options": opts}),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(
        delete: Option<bool>,
        retain: Option<bool>,
        to: Option<&str>,
    ) -> std::result::Result<DeleteOptions, ApiError> {
        DeleteOptions::check(
            delete,
            retain,
            DeleteOptions {
                retain_to_user: to.map(str::to_string),
                ..Default::default()
            },
        )
    }

    #[test]
    fn delete_and_retain_are_opposites() {
        let d = check(None, None, None).unwrap();
        assert!(d.delete_unshared_data && !d.retain_data);
        assert!(check(Some(true), Some(false), None).is_ok());
        assert!(check(Some(false), Some(true), Some("u")).is_ok());
        assert!(check(None, Some(true), Some("u")).unwrap().retain_data);
        assert_eq!(
            check(Some(true), Some(true), Some("u")).unwrap_err().code,
            ErrorCode::InputAttributeForbidden
        );
        assert_eq!(
            check(Some(false), Some(false), None).unwrap_err().code,
            ErrorCode::InputRequired
        );
        assert_eq!(
            check(Some(false), None, None).unwrap_err().code,
            ErrorCode::InputRequired
        );
        assert_eq!(
            check(None, Some(true), None).unwrap_err().field.as_deref(),
            Some("retainToUser")
        );
        assert_eq!(
            check(None, None, Some("u")).unwrap_err().code,
            ErrorCode::InputAttributeForbidden
        );
    }
}

/// The quota record (`GET /rest/users/me/quota`), as the reference names its fields.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct Quota {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_quota_allowed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_quota_used: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder_quota_allowed: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folder_quota_used: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sys_folders: Option<SysFolders>,
}

#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct SysFolders {
    pub current_num_sys_folders: i64,
    pub max_num_sys_folders: i64,
    pub per_folder_quota_options: Vec<i64>,
    pub per_folder_default_quota: i64,
}

use crate::content::GIB;

/// The send quota needs mail access, the folder quota collaboration access; `which` selects one
/// (`send` or `folder`). A quota the user's profile does not give answers 404.
pub fn quota(ctx: &Ctx, caller: &Caller, which: Option<&str>) -> Result<Quota> {
    let (send, folder) = match which {
        None => (true, true),
        Some("send") => (true, false),
        Some("folder") => (false, true),
        Some(_) => return Err(ApiError::field(ErrorCode::InputNotInList, "filter").into()),
    };
    let profile = ctx
        .with_conn(|c| Ok(coffer_store::users::profile(c, caller.user.profile_id)?))?
        .ok_or_else(|| Error::from(ApiError::new(ErrorCode::EntityNotFound)))?;
    let send = send && profile.mail_enabled;
    let folder = folder && profile.collaboration_enabled;
    if !send && !folder {
        return Err(ApiError::new(ErrorCode::EntityNotFound)
            .with_message("The entity was not found (the user's profile gives no such quota).")
            .into());
    }
    let (allowed, used) = ctx.with_conn(|c| crate::content::quota(c, &caller.user.id))?;
    Ok(Quota {
        send_quota_allowed: send.then_some(allowed),
        // Mail is not sent from Coffer's own storage yet: nothing counts against the send quota.
        send_quota_used: send.then_some(0),
        folder_quota_allowed: folder.then_some(allowed),
        folder_quota_used: folder.then_some(used),
        sys_folders: folder.then(|| SysFolders {
            current_num_sys_folders: 0,
            max_num_sys_folders: 10,
            per_folder_quota_options: vec![GIB, 5 * GIB, 10 * GIB],
            per_folder_default_quota: GIB,
        }),
    })
}

/// `PUT /rest/users/me/mobileNumber`: needs the current password (counted like a sign-in,
/// [`accounts::reauthenticate`]). `test_only` sends a test message (within the test-message
/// limits per user and per number) and saves nothing; otherwise the number is saved
/// (unverified) and the user settings are answered. While the number receives SMS two-factor
/// codes it cannot be changed.
pub fn set_mobile_number(
    ctx: &Ctx,
    caller: &Caller,
    sender: &dyn crate::platform::sms::SmsSender,
    password: &str,
    number: &str,
    test_only: bool,
    client_ip: Option<&str>,
) -> Result<Option<crate::platform::views::SystemSettingsView>> {
    let number = crate::platform::sms::normalise_number(number)
        .ok_or_else(|| ApiError::field(ErrorCode::InputInvalidFormat, "mobileNumber"))?;
    accounts::reauthenticate(ctx, &caller.user, password, "password", client_ip)?;
    if !test_only && crate::identity::tfa::sms_enabled(ctx, &caller.user)? {
        return Err(ApiError::field(ErrorCode::InputAttributeForbidden, "mobileNumber")
            .with_message("The attribute is forbidden (the number receives two-factor codes; turn SMS two-factor sign-in off first).")
            .into());
    }
    if test_only {
        ctx.write(|c| {
            crate::platform::throttle::spend_sms(
                c,
                &ctx.config.sms_limits,
                crate::platform::throttle::SmsKind::Test,
                &caller.user.id,
                &number,
                now(),
            )
        })?;
        sender.send(
            ctx,
            Some(&caller.user.id),
            &number,
            &format!("{}: this is a test message.", ctx.config.service_name),
        )?;
        return Ok(None);
    }
    let user = ctx.write(|c| {
        coffer_store::users::set_mobile_number(c, &caller.user.id, &number, now())?;
        events::record(c, "user.user.update", Some(&caller.user.id), serde_json::json!({"id": caller.user.id, "userId": caller.user.id, "mobileNumber": true}))?;
        coffer_store::users::by_id(c, &caller.user.id)?.ok_or_else(|| Error::internal("the user vanished"))
    })?;
    Ok(Some(settings::system_settings(ctx, &user)?))
}
