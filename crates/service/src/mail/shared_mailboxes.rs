//! Shared mailboxes: user accounts an administrator converts into a mailbox that several
//! internal users (its members) work with. The account can no longer sign in; its data stays
//! and becomes the mailbox's. Each member turns the mailbox on or off for themselves (`active`),
//! within the setting `sharedMailboxMaxActive`; only an active member reaches it
//! ([`require_active_member`], which the mail core calls when mail is sent from or read in a
//! mailbox). See `docs/shared-mailboxes.md`.

use crate::identity::users::DeleteOptions;
use crate::platform::auth::{AnyAdmin, Caller, InternalCaller};
use crate::platform::events;
use crate::platform::views::Listed;
use crate::{now, Ctx, Result};
use coffer_domain::list::ListQuery;
use coffer_domain::Role;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{SharedMailbox, SharedMailboxMember, User};
use coffer_store::DbConn;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use utoipa::ToSchema;

/// The most members one call may name.
pub const MAX_MEMBERS: usize = 1000;

/// A user as a mailbox record shows it (the mailbox account and each member).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct UserBasicView {
    pub id: String,
    pub email: String,
    pub name: String,
    /// Coffer keeps no profile pictures: always empty.
    pub profile_icon: String,
}

impl UserBasicView {
    fn of(u: &User) -> UserBasicView {
        UserBasicView {
            id: u.id.clone(),
            email: u.email.clone(),
            name: u.name.clone(),
            profile_icon: String::new(),
        }
    }
}

/// A shared mailbox record. `id` is the mailbox account's user id. `active`: for a member, the
/// member's own flag; in the administrators' list, whether any member has it active.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SharedMailboxView {
    pub id: String,
    pub active: bool,
    pub user: UserBasicView,
    pub members: Vec<UserBasicView>,
}

/// The send options of [`SharedMailboxSettingView`].
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct SendOptionView {
    #[serde(rename = "linkExpiry")]
    pub link_expiry: bool,
    /// 1: the sender chooses the access level of what is sent; 0: it is always `aclDefault`.
    #[serde(rename = "ACL")]
    pub acl: i64,
}

/// The mail policy that applies when mail is sent from a mailbox (`GET
/// /rest/sharedMailboxes/{id}/settings`). `docs/shared-mailboxes.md` says where each value
/// comes from.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SharedMailboxSettingView {
    pub file_filter_exclusion_groups: Vec<String>,
    pub send_option_enabled: SendOptionView,
    #[serde(rename = "ACL")]
    pub acl: Vec<String>,
    pub max_link_expiration: i64,
    pub return_receipt_default: bool,
    pub zip_limit: i64,
    pub send_file_limit: i64,
    pub self_copy: String,
    pub default_link_expiry: i64,
    pub acl_default: String,
    pub file_filter_custom_file_types: Vec<String>,
    pub watermark_enabled: bool,
    pub return_receipt: String,
    pub mail_expiration_notification: String,
    pub include_fingerprint_default: bool,
    pub include_fingerprint: String,
    pub secure_message_body: String,
    pub self_copy_default: bool,
    pub allowed_file_extensions: Vec<String>,
    pub excluded_file_extensions: Vec<String>,
    pub secure_message_body_default: bool,
    pub watermark_preview: String,
    pub send_external: bool,
    /// The default web form of the mailbox; left out while it has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_form: Option<String>,
    /// Left out: Coffer has no default country code for phone numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_country_code: Option<String>,
}

/// `POST /rest/admin/sharedMailboxes`: the account to convert, its members, and the delete
/// options (checked as for `DELETE /rest/users`; see [`convert`]).
#[derive(Debug, Clone)]
pub struct ConvertInput {
    pub user_id: String,
    pub member_ids: Vec<String>,
    pub options: DeleteOptions,
}

/// One change of `PATCH /rest/sharedMailboxes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusChange {
    pub id: String,
    pub active: bool,
}

fn access_user(why: &str) -> Error {
    ApiError::new(ErrorCode::AccessUser)
        .with_message(format!("Insufficient access permissions ({why})."))
        .into()
}

fn not_found(id: &str) -> Error {
    ApiError::new(ErrorCode::EntityNotFound)
        .with_message(format!(
            "The entity was not found (no shared mailbox {id})."
        ))
        .into()
}

fn role_of(u: &User) -> Role {
    u.role.parse::<Role>().unwrap_or(Role::User)
}

/// 403 `ERR_ACCESS_USER` unless `user_id` is an active member of `mailbox_id` (the mail core
/// calls this inside its transaction before sending from or reading a mailbox).
pub fn require_active_member(c: &mut DbConn, mailbox_id: &str, user_id: &str) -> Result<()> {
    match coffer_store::shared_mailboxes::membership(c, mailbox_id, user_id)? {
        Some(m) if m.active => Ok(()),
        Some(_) => Err(access_user("the shared mailbox is not active for the user")),
        None => Err(access_user(
            "the user is not a member of the shared mailbox",
        )),
    }
}

/// The ids of the mailboxes `user_id` has active, in id order.
pub fn active_mailboxes(c: &mut DbConn, user_id: &str) -> Result<Vec<String>> {
    Ok(coffer_store::shared_mailboxes::active_mailboxes(
        c, user_id,
    )?)
}

/// The records of `mailboxes` (with the `active` flag to show), members in id order.
fn views(c: &mut DbConn, mailboxes: &[(String, bool)]) -> Result<Vec<SharedMailboxView>> {
    let ids: Vec<String> = mailboxes.iter().map(|(id, _)| id.clone()).collect();
    let members = coffer_store::shared_mailboxes::members_of(c, &ids)?;
    let mut user_ids: Vec<String> = ids.clone();
    user_ids.extend(members.iter().map(|m| m.member_id.clone()));
    user_ids.sort_unstable();
    user_ids.dedup();
    let mut users: HashMap<String, UserBasicView> = HashMap::new();
    for id in &user_ids {
        if let Some(u) = coffer_store::users::by_id(c, id)? {
            users.insert(u.id.clone(), UserBasicView::of(&u));
        }
    }
    let mut by_mailbox: HashMap<&str, Vec<UserBasicView>> = HashMap::new();
    for m in &members {
        if let Some(u) = users.get(&m.member_id) {
            by_mailbox
                .entry(m.mailbox_id.as_str())
                .or_default()
                .push(u.clone());
        }
    }
    mailboxes
        .iter()
        .map(|(id, active)| {
            let user = users
                .get(id)
                .cloned()
                .ok_or_else(|| Error::internal("a shared mailbox without its account"))?;
            Ok(SharedMailboxView {
                id: id.clone(),
                active: *active,
                user,
                members: by_mailbox.remove(id.as_str()).unwrap_or_default(),
            })
        })
        .collect()
}

fn member_page(c: &mut DbConn, user_id: &str, q: &ListQuery) -> Result<Listed<SharedMailboxView>> {
    let page = coffer_store::shared_mailboxes::list_for_member(c, user_id, q)?;
    let rows: Vec<(String, bool)> = page
        .items
        .iter()
        .map(|m: &SharedMailboxMember| (m.mailbox_id.clone(), m.active))
        .collect();
    Ok(Listed {
        items: views(c, &rows)?,
        total: page.total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// `GET /rest/sharedMailboxes`: the mailboxes the caller is a member of, each with the
/// caller's own `active` flag.
pub fn list(
    ctx: &Ctx,
    caller: &InternalCaller,
    q: &ListQuery,
) -> Result<Listed<SharedMailboxView>> {
    ctx.read(|c| member_page(c, caller.user_id(), q))
}

/// `PATCH /rest/sharedMailboxes`: turns mailboxes on or off for the caller, all or nothing.
/// Every id must be a mailbox the caller is a member of (else 403 `ERR_ACCESS_USER`, naming
/// them in `failedIds`); deactivations count before activations, so one call can swap one
/// mailbox for another at the limit; more than `sharedMailboxMaxActive` active afterwards is
/// 422 `ERR_MAX_ACTIVED_SHAREDMAILBOX`. Answers the caller's list as `first` asks.
pub fn set_status(
    ctx: &Ctx,
    caller: &InternalCaller,
    changes: &[StatusChange],
    first: &ListQuery,
) -> Result<Listed<SharedMailboxView>> {
    let user_id = caller.user_id();
    ctx.write(|c| {
        let mine: HashMap<String, bool> = coffer_store::shared_mailboxes::memberships(c, user_id)?
            .into_iter()
            .map(|m| (m.mailbox_id, m.active))
            .collect();
        let strangers: Vec<String> = changes
            .iter()
            .filter(|ch| !mine.contains_key(&ch.id))
            .map(|ch| ch.id.clone())
            .collect();
        if !strangers.is_empty() {
            return Err(ApiError::new(ErrorCode::AccessUser)
                .with_message("Insufficient access permissions (the user is not a member of every shared mailbox named).")
                .with_failed_ids(strangers)
                .into());
        }
        let mut after = mine.clone();
        for ch in changes.iter().filter(|ch| !ch.active) {
            after.insert(ch.id.clone(), false);
        }
        for ch in changes.iter().filter(|ch| ch.active) {
            after.insert(ch.id.clone(), true);
        }
        let active = after.values().filter(|a| **a).count() as i64;
        let max = crate::identity::settings::shared_mailbox_max_active(c)?;
        // Only turning a mailbox on can pass the limit (it may have been lowered since).
        let activates = changes.iter().any(|ch| ch.active && !mine[&ch.id]);
        if active > max && activates {
            return Err(ApiError::new(ErrorCode::MaxActivedSharedMailbox)
                .with_message(format!(
                    "The maximum number of activated shared mailboxes has been reached (at most {max} at once)."
                ))
                .into());
        }
        let t = now();
        let mut changed: Vec<serde_json::Value> = Vec::new();
        let mut ids: Vec<&String> = after.keys().collect();
        ids.sort_unstable();
        for id in ids {
            let (was, is) = (mine[id], after[id]);
            if was != is {
                coffer_store::shared_mailboxes::set_active(c, id, user_id, is, t)?;
                changed.push(serde_json::json!({"id": id, "active": is}));
            }
        }
        if !changed.is_empty() {
            events::record(
                c,
                "sharedmailbox.member.update",
                Some(user_id),
                serde_json::json!({"userId": user_id, "mailboxes": changed}),
            )?;
        }
        member_page(c, user_id, first)
    })
}

/// Coffer's mail policy for mail sent from a mailbox, from the mailbox account's profile and
/// Coffer's fixed defaults (Coffer has no per-profile mail policy yet).
fn policy(c: &mut DbConn, mailbox: &User) -> Result<SharedMailboxSettingView> {
    let profile = coffer_store::users::profile(c, mailbox.profile_id)?;
    Ok(SharedMailboxSettingView {
        file_filter_exclusion_groups: Vec::new(),
        send_option_enabled: SendOptionView {
            link_expiry: true,
            acl: 1,
        },
        acl: ACL_LEVELS.iter().map(|s| s.to_string()).collect(),
        max_link_expiration: MAX_LINK_EXPIRATION_DAYS,
        return_receipt_default: false,
        zip_limit: ZIP_LIMIT,
        send_file_limit: SEND_FILE_LIMIT,
        self_copy: OPTIONAL.into(),
        default_link_expiry: DEFAULT_LINK_EXPIRY_DAYS,
        acl_default: ACL_LEVELS[0].into(),
        file_filter_custom_file_types: Vec::new(),
        watermark_enabled: false,
        return_receipt: OPTIONAL.into(),
        mail_expiration_notification: OPTIONAL.into(),
        include_fingerprint_default: false,
        include_fingerprint: OPTIONAL.into(),
        secure_message_body: OPTIONAL.into(),
        self_copy_default: false,
        allowed_file_extensions: Vec::new(),
        excluded_file_extensions: Vec::new(),
        secure_message_body_default: false,
        watermark_preview: String::new(),
        send_external: profile.is_some_and(|p| p.mail_enabled),
        default_form: None,
        default_country_code: None,
    })
}

/// The access levels a sender may give what they send, the default first (the values of the
/// `acl` field of sending mail).
pub const ACL_LEVELS: [&str; 6] = [
    "verify_recipient",
    "no_auth",
    "otp",
    "internal",
    "anyone_auth",
    "email_otp",
];
/// A policy the sender decides on per message (the default given beside it).
pub const OPTIONAL: &str = "optional";
pub const DEFAULT_LINK_EXPIRY_DAYS: i64 = 14;
pub const MAX_LINK_EXPIRATION_DAYS: i64 = 365;
pub const ZIP_LIMIT: i64 = 1000;
pub const SEND_FILE_LIMIT: i64 = 100;

/// `GET /rest/sharedMailboxes/{id}/settings`: the mail policy of a mailbox the caller has
/// active (else 403 `ERR_ACCESS_USER`).
pub fn mailbox_settings(
    ctx: &Ctx,
    caller: &InternalCaller,
    id: &str,
) -> Result<SharedMailboxSettingView> {
    ctx.read(|c| {
        require_active_member(c, id, caller.user_id())?;
        let mailbox = coffer_store::users::by_id(c, id)?
            .ok_or_else(|| Error::internal("a shared mailbox without its account"))?;
        policy(c, &mailbox)
    })
}

/// `GET /rest/admin/sharedMailboxes`: every mailbox; `active` when any member has it active.
pub fn admin_list(ctx: &Ctx, _: &AnyAdmin, q: &ListQuery) -> Result<Listed<SharedMailboxView>> {
    ctx.read(|c| {
        let page = coffer_store::shared_mailboxes::list_all(c, q)?;
        let rows: Vec<(String, bool)> = page
            .items
            .iter()
            .map(|(m, on): &(SharedMailbox, bool)| (m.user_id.clone(), *on))
            .collect();
        Ok(Listed {
            items: views(c, &rows)?,
            total: page.total,
            offset: q.offset,
            limit: q.limit,
        })
    })
}

fn admin_view(c: &mut DbConn, id: &str) -> Result<SharedMailboxView> {
    let on = coffer_store::shared_mailboxes::members_of(c, &[id.to_string()])?
        .iter()
        .any(|m| m.active);
    views(c, &[(id.to_string(), on)])?
        .pop()
        .ok_or_else(|| not_found(id))
}

/// The member set named in a request: at least one, at most [`MAX_MEMBERS`], each an active
/// internal account that is not a mailbox (and not `mailbox_id`); else 422
/// `ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT` naming the ids at fault in `failedIds`.
/// Repeated ids count once.
fn check_members(c: &mut DbConn, mailbox_id: &str, ids: &[String]) -> Result<Vec<String>> {
    if ids.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "memberIds")
            .with_message("The field is required (memberIds: at least one member).")
            .into());
    }
    let mut seen = HashSet::new();
    let ids: Vec<String> = ids
        .iter()
        .filter(|id| seen.insert(id.as_str()))
        .cloned()
        .collect();
    if ids.len() > MAX_MEMBERS {
        return Err(ApiError::field(ErrorCode::InvalidParameter, "memberIds")
            .with_message(format!(
                "The parameter is invalid (memberIds: at most {MAX_MEMBERS} members)."
            ))
            .into());
    }
    let mut bad = Vec::new();
    for id in &ids {
        let ok = id != mailbox_id
            && coffer_store::users::by_id(c, id)?.is_some_and(|u| u.is_usable() && u.internal)
            && !coffer_store::shared_mailboxes::is_shared_mailbox(c, id)?;
        if !ok {
            bad.push(id.clone());
        }
    }
    if !bad.is_empty() {
        return Err(
            ApiError::field(ErrorCode::UserIsNotInternalDlOrInternalAccount, "memberIds")
                .with_failed_ids(bad)
                .into(),
        );
    }
    Ok(ids)
}

/// The account receiving retained data (`retainToUser`) or the alternate one
/// (`retainToAdvancedFormUser`): another active account that is not a mailbox.
fn check_heir(c: &mut DbConn, target: &str, field: &str, id: &str) -> Result<()> {
    if id == target {
        return Err(ApiError::field(ErrorCode::CannotRetainDataToTheSameUser, field).into());
    }
    let usable = coffer_store::users::by_id(c, id)?.is_some_and(|u| u.is_usable())
        && !coffer_store::shared_mailboxes::is_shared_mailbox(c, id)?;
    if !usable {
        return Err(ApiError::field(ErrorCode::CannotRetainDataToUnverifiedUser, field).into());
    }
    Ok(())
}

/// The account an administrator acts on as a mailbox: a helpdesk or application administrator
/// acts on plain users' accounts only (else 403 `ERR_ADMIN_ROLE_RANK_RESTRICTED`).
fn check_rank(caller: &Caller, target: &User) -> Result<()> {
    if caller.may_manage(role_of(target)) {
        Ok(())
    } else {
        Err(ApiError::new(ErrorCode::AdminRoleRankRestricted)
            .with_message("The administrator role rank does not allow this operation (only a system administrator acts on an administrator's account).")
            .into())
    }
}

/// `POST /rest/admin/sharedMailboxes`: converts an account into a shared mailbox with
/// `member_ids` as its (inactive) members.
///
/// The account must exist and be active (else 422 `ERR_INVALID_PARAMETER` on `userId`), be
/// internal (403 `ERR_NOT_INTERNAL_DOMAIN`), not be the caller's (403 `ERR_ACCESS_USER`), not
/// outrank the caller (403 `ERR_ADMIN_ROLE_RANK_RESTRICTED`) and not be a mailbox already (409
/// `ERR_ENTITY_EXISTS`). The delete options were checked as for `DELETE /rest/users`; an heir
/// that is the account itself is 422 `ERR_CANNOT_RETAIN_DATA_TO_THE_SAME_USER`, one that is not
/// an active account 422 `ERR_CANNOT_RETAIN_DATA_TO_UNVERIFIED_USER`. The account's data stays
/// with it (it becomes the mailbox's), so the options are recorded in the event and otherwise
/// do nothing, except `remoteWipe`.
///
/// Effect: the password is cleared, every token family and browser session of the account
/// ends, `remoteWipe` asks its devices to wipe, and it leaves any mailbox it was a member of.
pub fn convert(ctx: &Ctx, caller: &AnyAdmin, input: &ConvertInput) -> Result<SharedMailboxView> {
    let target = input.user_id.as_str();
    ctx.write(|c| {
        let user = coffer_store::users::by_id(c, target)?
            .filter(User::is_usable)
            .ok_or_else(|| {
                Error::from(
                    ApiError::field(ErrorCode::InvalidParameter, "userId").with_message(
                        "The parameter is invalid (userId: no active account has this id).",
                    ),
                )
            })?;
        if user.id == caller.user_id() {
            return Err(access_user(
                "an administrator cannot convert their own account",
            ));
        }
        if !user.internal {
            return Err(ApiError::field(ErrorCode::NotInternalDomain, "userId").into());
        }
        check_rank(caller, &user)?;
        if coffer_store::shared_mailboxes::is_shared_mailbox(c, target)? {
            return Err(ApiError::field(ErrorCode::EntityExists, "userId")
                .with_message("The entity exists (the account is a shared mailbox already).")
                .into());
        }
        if let Some(heir) = &input.options.retain_to_user {
            check_heir(c, target, "retainToUser", heir)?;
        }
        if let Some(alt) = &input.options.retain_to_advanced_form_user {
            check_heir(c, target, "retainToAdvancedFormUser", alt)?;
        }
        let members = check_members(c, target, &input.member_ids)?;
        let t = now();
        coffer_store::users::set_password_hash(c, target, None)?;
        let families = coffer_store::tokens::revoke_user(c, target)?;
        let sessions = coffer_store::web_sessions::delete_for_user(c, target, None)?;
        let wiped = if input.options.remote_wipe {
            coffer_store::devices::request_wipe_for_user(c, target, t)?
        } else {
            0
        };
        let left = coffer_store::shared_mailboxes::remove_member_everywhere(c, target)?;
        coffer_store::shared_mailboxes::create(c, target, &members, t)?;
        events::record(
            c,
            "sharedmailbox.mailbox.create",
            Some(caller.user_id()),
            serde_json::json!({
                "id": target,
                "userId": target,
                "memberIds": members,
                "options": input.options,
                "sessionsEnded": families + sessions,
                "devicesToWipe": wiped,
                "mailboxesLeft": left,
            }),
        )?;
        admin_view(c, target)
    })
}

/// The mailbox `id` an administrator acts on: 404 when there is none, rank as [`convert`].
fn admin_target(c: &mut DbConn, caller: &Caller, id: &str) -> Result<()> {
    if !coffer_store::shared_mailboxes::is_shared_mailbox(c, id)? {
        return Err(not_found(id));
    }
    let user = coffer_store::users::by_id(c, id)?.ok_or_else(|| not_found(id))?;
    check_rank(caller, &user)
}

/// `PATCH /rest/admin/sharedMailboxes/{id}`: replaces the member set (rules as [`convert`]).
/// Members kept keep their flag; new ones start inactive; removed ones lose access at once.
pub fn replace_members(
    ctx: &Ctx,
    caller: &AnyAdmin,
    id: &str,
    member_ids: &[String],
) -> Result<SharedMailboxView> {
    ctx.write(|c| {
        admin_target(c, caller, id)?;
        let members = check_members(c, id, member_ids)?;
        let (added, removed) =
            coffer_store::shared_mailboxes::replace_members(c, id, &members, now())?;
        events::record(
            c,
            "sharedmailbox.mailbox.update",
            Some(caller.user_id()),
            serde_json::json!({"id": id, "userId": id, "added": added, "removed": removed}),
        )?;
        admin_view(c, id)
    })
}

/// `DELETE /rest/admin/sharedMailboxes?id:in=…`: dissolves mailboxes, all or nothing (an id
/// that names no mailbox is 404 `ERR_ENTITY_NOT_FOUND` with `failedIds`). Each account is a
/// normal account again, still without a password: it signs in once an administrator sets
/// one (or through a flow that needs none).
pub fn dissolve(ctx: &Ctx, caller: &AnyAdmin, ids: &[String]) -> Result<()> {
    ctx.write(|c| {
        let mut missing = Vec::new();
        for id in ids {
            if !coffer_store::shared_mailboxes::is_shared_mailbox(c, id)? {
                missing.push(id.clone());
            }
        }
        if !missing.is_empty() {
            return Err(ApiError::new(ErrorCode::EntityNotFound)
                .with_message("The entity was not found (an id names no shared mailbox).")
                .with_failed_ids(missing)
                .into());
        }
        let mut seen = HashSet::new();
        for id in ids.iter().filter(|id| seen.insert(id.as_str())) {
            admin_target(c, caller, id)?;
            let members: Vec<String> =
                coffer_store::shared_mailboxes::members_of(c, std::slice::from_ref(id))?
                    .into_iter()
                    .map(|m| m.member_id)
                    .collect();
            coffer_store::shared_mailboxes::delete(c, id)?;
            events::record(
                c,
                "sharedmailbox.mailbox.delete",
                Some(caller.user_id()),
                serde_json::json!({"id": id, "userId": id, "memberIds": members}),
            )?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::accounts::{create_user, NewUser};

    fn user(ctx: &Ctx, email: &str) -> String {
        create_user(
            ctx,
            NewUser {
                email: email.into(),
                name: email.into(),
                password: None,
                role: Role::User,
                profile: None,
            },
            None,
        )
        .unwrap()
        .0
        .id
    }

    #[test]
    fn only_an_active_member_passes_and_active_mailboxes_lists_them() {
        let (_d, ctx) = crate::test_support::ctx();
        let (mb, ann, bob) = (
            user(&ctx, "box@example.com"),
            user(&ctx, "ann@example.com"),
            user(&ctx, "bob@example.com"),
        );
        ctx.write(|c| {
            Ok(coffer_store::shared_mailboxes::create(
                c,
                &mb,
                std::slice::from_ref(&ann),
                1,
            )?)
        })
        .unwrap();
        let check = |who: &str| {
            ctx.read(|c| require_active_member(c, &mb, who))
                .map_err(|e| e.to_api().code)
        };
        assert_eq!(check(&ann), Err(ErrorCode::AccessUser));
        assert_eq!(check(&bob), Err(ErrorCode::AccessUser));
        ctx.write(|c| {
            Ok(coffer_store::shared_mailboxes::set_active(
                c, &mb, &ann, true, 2,
            )?)
        })
        .unwrap();
        assert_eq!(check(&ann), Ok(()));
        assert_eq!(
            ctx.read(|c| active_mailboxes(c, &ann)).unwrap(),
            vec![mb.clone()]
        );
        assert!(ctx.read(|c| active_mailboxes(c, &bob)).unwrap().is_empty());
    }
}
