//! Devices and their remote-wipe flag (0 not set → 1 set → 2 notified → 3 completed).
//! A user sees and changes their own devices; administrators see every device.

use crate::platform::auth::Caller;
use crate::platform::events;
use crate::platform::views::{DeviceView, Listed};
use crate::{now, Ctx, Result};
use coffer_domain::list::ListQuery;
use coffer_domain::WipeFlag;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{Device, NewDevice};
use coffer_store::DbConn;

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

fn forbidden() -> Error {
    ApiError::new(ErrorCode::AccessUser).into()
}

/// Loads a device the caller may see: their own, or any for an administrator.
fn visible(c: &mut DbConn, caller: &Caller, id: i64) -> Result<Device> {
    let d = coffer_store::devices::by_id(c, id)?.ok_or_else(not_found)?;
    if !caller.owns_or_administers(&d.user_id) {
        return Err(forbidden());
    }
    Ok(d)
}

#[derive(Debug, Clone, Default)]
pub struct DeviceInput {
    pub client_id: Option<String>,
    pub user_id: Option<String>,
    pub install_tag_id: Option<String>,
    pub install_name: Option<String>,
    pub mobile_key_store: Option<String>,
}

fn check_len(field: &str, v: &str, max: usize) -> Result<()> {
    if v.len() > max || v.chars().any(char::is_control) {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, field).into());
    }
    Ok(())
}

pub fn create(ctx: &Ctx, caller: &Caller, input: DeviceInput) -> Result<DeviceView> {
    let tag = input
        .install_tag_id
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ApiError::field(ErrorCode::InputRequired, "installTagId"))?;
    check_len("installTagId", &tag, 255)?;
    let name = input
        .install_name
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| tag.clone());
    check_len("installName", &name, 255)?;
    if let Some(k) = &input.mobile_key_store {
        check_len("mobileKeyStore", k, 8192)?;
    }
    let user_id = input.user_id.unwrap_or_else(|| caller.user.id.clone());
    if !caller.owns_or_administers(&user_id) {
        return Err(forbidden());
    }
    let client_id = input.client_id.unwrap_or_else(|| caller.client_id.clone());
    // A user registers devices of the client they call through; only administrators name
    // another client, so a user cannot probe which client ids exist.
    if client_id != caller.client_id && !caller.is_admin() {
        return Err(forbidden());
    }
    let device = ctx.write(|c| {
        if coffer_store::users::by_id(c, &user_id)?.is_none_or(|u| u.deleted) {
            return Err(ApiError::field(ErrorCode::InvalidParameter, "userId").into());
        }
        if coffer_store::clients::by_id(c, &client_id)?.is_none() {
            return Err(ApiError::field(ErrorCode::InvalidParameter, "clientId").into());
        }
        if coffer_store::devices::find(c, &user_id, &client_id, &tag)?.is_some() {
            return Err(ApiError::new(ErrorCode::EntityExists).into());
        }
        let id = insert(
            c,
            &user_id,
            &client_id,
            &tag,
            &name,
            input.mobile_key_store.clone(),
        )?;
        events::record(
            c,
            "device.device.create",
            Some(&caller.user.id),
            serde_json::json!({"id": id, "userId": user_id, "clientId": client_id}),
        )?;
        coffer_store::devices::by_id(c, id)?.ok_or_else(not_found)
    })?;
    Ok(DeviceView::from(&device))
}

fn insert(
    c: &mut DbConn,
    user_id: &str,
    client_id: &str,
    tag: &str,
    name: &str,
    key: Option<String>,
) -> Result<i64> {
    let t = now();
    coffer_store::devices::insert(
        c,
        &NewDevice {
            client_id: client_id.to_string(),
            user_id: user_id.to_string(),
            install_tag_id: tag.to_string(),
            install_name: name.to_string(),
            wipe_flag: WipeFlag::NotSet.as_i32(),
            mobile_key_store: key,
            registration_token: None,
            created_at: t,
            updated_at: t,
        },
    )
    .map_err(|e| {
        if e.is_unique_violation() {
            Error::from(ApiError::new(ErrorCode::EntityExists))
        } else {
            e.into()
        }
    })
}

/// Registers (or reuses) the device of a user and client named at token time by
/// `install_tag_id` / `install_name`. Runs inside the token transaction.
pub fn register_for_token(
    c: &mut DbConn,
    user_id: &str,
    client_id: &str,
    tag: &str,
    name: Option<&str>,
) -> Result<i64> {
    if let Some(d) = coffer_store::devices::find(c, user_id, client_id, tag)? {
        if let Some(n) = name.filter(|n| *n != d.install_name) {
            coffer_store::devices::rename(c, d.id, n, now())?;
        }
        return Ok(d.id);
    }
    let t = now();
    let (id, created) = coffer_store::devices::insert_or_get(
        c,
        &NewDevice {
            client_id: client_id.to_string(),
            user_id: user_id.to_string(),
            install_tag_id: tag.to_string(),
            install_name: name.unwrap_or(tag).to_string(),
            wipe_flag: WipeFlag::NotSet.as_i32(),
            mobile_key_store: None,
            registration_token: None,
            created_at: t,
            updated_at: t,
        },
    )?;
    if created {
        events::record(
            c,
            "device.device.create",
            Some(user_id),
            serde_json::json!({"id": id, "userId": user_id, "clientId": client_id}),
        )?;
    }
    Ok(id)
}

pub fn get(ctx: &Ctx, caller: &Caller, id: i64) -> Result<DeviceView> {
    ctx.with_conn(|c| visible(c, caller, id))
        .map(|d| DeviceView::from(&d))
}

/// Lists devices: every device for an administrator, the caller's own otherwise.
pub fn list(ctx: &Ctx, caller: &Caller, q: &ListQuery) -> Result<Listed<DeviceView>> {
    let owner = if caller.is_admin() {
        None
    } else {
        Some(caller.user.id.as_str())
    };
    let page = ctx.with_conn(|c| Ok(coffer_store::devices::list(c, q, owner)?))?;
    Ok(Listed {
        items: page.items.iter().map(DeviceView::from).collect(),
        total: page.total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// The devices of one user: the user themself or an administrator.
pub fn list_for_user(
    ctx: &Ctx,
    caller: &Caller,
    user_id: &str,
    q: &ListQuery,
) -> Result<Listed<DeviceView>> {
    if !caller.owns_or_administers(user_id) {
        return Err(forbidden());
    }
    if ctx
        .with_conn(|c| Ok(coffer_store::users::by_id(c, user_id)?))?
        .is_none()
    {
        return Err(not_found());
    }
    let page = ctx.with_conn(|c| Ok(coffer_store::devices::list(c, q, Some(user_id))?))?;
    Ok(Listed {
        items: page.items.iter().map(DeviceView::from).collect(),
        total: page.total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// Updates the key store or messaging token of the caller's own device.
pub fn update(
    ctx: &Ctx,
    caller: &Caller,
    id: i64,
    key: Option<String>,
    registration_token: Option<String>,
) -> Result<DeviceView> {
    if key.is_none() && registration_token.is_none() {
        return Err(ApiError::field(ErrorCode::InputRequired, "mobileKeyStore").into());
    }
    if let Some(k) = &key {
        check_len("mobileKeyStore", k, 8192)?;
    }
    if let Some(t) = &registration_token {
        check_len("registrationToken", t, 4096)?;
    }
    let d = ctx.write(|c| {
        let d = coffer_store::devices::by_id(c, id)?.ok_or_else(not_found)?;
        if d.user_id != caller.user.id {
            return Err(forbidden());
        }
        coffer_store::devices::update_keys(
            c,
            id,
            key.as_deref(),
            registration_token.as_deref(),
            now(),
        )?;
        events::record(
            c,
            "device.device.update",
            Some(&caller.user.id),
            serde_json::json!({"id": id}),
        )?;
        coffer_store::devices::by_id(c, id)?.ok_or_else(not_found)
    })?;
    Ok(DeviceView::from(&d))
}

/// Deletes a device (the owner or an administrator) and revokes the tokens issued for it.
pub fn delete(ctx: &Ctx, caller: &Caller, id: i64) -> Result<()> {
    ctx.write(|c| {
        let d = visible(c, caller, id)?;
        coffer_store::tokens::revoke_device(c, d.id)?;
        coffer_store::devices::delete(c, d.id)?;
        events::record(
            c,
            "device.device.delete",
            Some(&caller.user.id),
            serde_json::json!({"id": id, "userId": d.user_id}),
        )
    })
}

/// An administrator requests a remote wipe (0 → 1).
pub fn request_wipe(ctx: &Ctx, caller: &Caller, id: i64) -> Result<DeviceView> {
    if !caller.is_admin() {
        return Err(forbidden());
    }
    let d = ctx.write(|c| {
        let d = coffer_store::devices::by_id(c, id)?.ok_or_else(not_found)?;
        let next = WipeFlag::from_i32(d.wipe_flag)
            .unwrap_or(WipeFlag::NotSet)
            .request();
        if next.as_i32() != d.wipe_flag {
            coffer_store::devices::set_wipe_flag(c, id, next.as_i32(), now())?;
            events::record(
                c,
                "device.wipe.request",
                Some(&caller.user.id),
                serde_json::json!({"id": id, "userId": d.user_id}),
            )?;
        }
        coffer_store::devices::by_id(c, id)?.ok_or_else(not_found)
    })?;
    Ok(DeviceView::from(&d))
}

/// The device reads its wipe flag by install tag and gets the flag as it was; a pending request
/// (1) is answered as 1 and becomes notified (2). The device is the caller's with that tag,
/// preferring the one of the caller's client.
pub fn read_wipe_flag(ctx: &Ctx, caller: &Caller, install_tag_id: &str) -> Result<i32> {
    ctx.write(|c| {
        let mine = coffer_store::devices::by_install_tag(c, install_tag_id, Some(&caller.user.id))?;
        let d = mine
            .iter()
            .find(|d| d.client_id == caller.client_id)
            .or_else(|| mine.first())
            .cloned()
            .ok_or_else(not_found)?;
        let flag = WipeFlag::from_i32(d.wipe_flag).unwrap_or(WipeFlag::NotSet);
        let next = flag.on_read();
        if next != flag {
            coffer_store::devices::set_wipe_flag(c, d.id, next.as_i32(), now())?;
            events::record(
                c,
                "device.wipe.notify",
                Some(&caller.user.id),
                serde_json::json!({"id": d.id}),
            )?;
        }
        Ok(flag.as_i32())
    })
}

/// The current device (the one the token was issued for) reports the wipe done (→ 3).
pub fn complete_wipe(ctx: &Ctx, caller: &Caller) -> Result<()> {
    let id = caller.device_id.ok_or_else(|| {
        ApiError::new(ErrorCode::EntityNotFound)
            .with_message("The entity was not found (the token has no device).")
    })?;
    ctx.write(|c| {
        let d = coffer_store::devices::by_id(c, id)?.ok_or_else(not_found)?;
        let next = WipeFlag::from_i32(d.wipe_flag)
            .unwrap_or(WipeFlag::NotSet)
            .complete();
        coffer_store::devices::set_wipe_flag(c, id, next.as_i32(), now())?;
        events::record(
            c,
            "device.wipe.complete",
            Some(&caller.user.id),
            serde_json::json!({"id": id}),
        )
    })
}

/// Signs the current session out: every token of the caller's token family stops working.
/// Returns where the client should send the user next.
pub fn logout(ctx: &Ctx, caller: &Caller) -> Result<String> {
    ctx.write(|c| {
        coffer_store::tokens::revoke_family(c, &caller.family_id)?;
        if let Some(session) = caller
            .family_id
            .strip_prefix(crate::identity::sessions::SESSION_FAMILY_PREFIX)
        {
            coffer_store::web_sessions::delete(c, session)?;
        }
        events::record(
            c,
            "user.session.logout",
            Some(&caller.user.id),
            serde_json::json!({"clientId": caller.client_id}),
        )
    })?;
    Ok(coffer_oauth::authorize::append_query(
        &format!("{}/oauth/authorize", ctx.config.base_url),
        &[
            ("client_id", &caller.client_id),
            ("response_type", "code"),
            ("redirect_uri", &caller.client_redirect_uri),
        ],
    ))
}
