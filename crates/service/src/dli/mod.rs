//! DLI (`docs/dli.md`): the investigation reads of `/rest/dli` for system administrators, behind
//! the licence stand-in `dliEnabled`: a user's, a file's or a folder's activities (`activities`),
//! the metadata, content and previews of files and folders, deleted ones too (`objects`), a
//! user's mail and an email's recipients and attachments (`mail`), and exports of a user's
//! activities, files or emails made by a job (`exports`). Every read is itself an activity
//! record (type `admin`); a refused one is recorded as unsuccessful. The area also runs the
//! activity log's upkeep job (`upkeep`: checkpoints and retention), which needs the job worker
//! of the content core that the log itself sits below.
//!
//! This module holds what those files share: admission (licence, then role) and the record of a
//! read.

pub mod activities;
pub mod exports;
pub mod mail;
pub mod objects;
pub mod upkeep;

use crate::platform::auth::{Caller, SystemAdmin};
use crate::{Ctx, Result};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::DbConn;
use serde_json::json;

/// Whether the DLI licence stand-in is on (`cofferd settings set dliEnabled true`).
pub fn licensed(c: &mut DbConn) -> Result<bool> {
    Ok(coffer_store::settings::get(c, "dliEnabled")?.as_deref() == Some("true"))
}

/// Admits a caller to a DLI operation (`what`, e.g. `GET /rest/dli/users/{id}/activities`): 403
/// `ERR_LICENSE_DLI` first while unlicensed, then 403 `ERR_ACCESS_USER` for anyone but a system
/// administrator. A refusal is recorded as an unsuccessful `dli.access` activity.
pub fn admit(ctx: &Ctx, caller: Caller, what: &str) -> Result<SystemAdmin> {
    let refuse = |code: ErrorCode, actor: &str| -> Result<SystemAdmin> {
        let data = json!({"operation": what, "reason": code.as_str()});
        crate::audit::record::refused(ctx, "dli.access.read", Some(actor), &data)?;
        Err(ApiError::new(code).into())
    };
    if !ctx.with_conn(licensed)? {
        return refuse(ErrorCode::LicenseDli, caller.user_id());
    }
    let id = caller.user_id().to_string();
    match SystemAdmin::check(caller) {
        Some(admin) => Ok(admin),
        None => refuse(ErrorCode::AccessUser, &id),
    }
}

/// Records a DLI read by `admin` about `(kind, id)` in the caller's transaction.
pub fn record_read(
    c: &mut DbConn,
    admin: &SystemAdmin,
    what: &str,
    kind: &str,
    id: &str,
) -> Result<()> {
    let data = json!({"operation": what, "objectKind": kind, "objectId": id});
    crate::audit::record::append(
        c,
        &format!("dli.{kind}.read"),
        Some(admin.user_id()),
        &data,
        true,
    )
}

/// Records a DLI read of a list of `kind` (no one object) by `admin`.
pub fn record_list(c: &mut DbConn, admin: &SystemAdmin, what: &str, kind: &str) -> Result<()> {
    let data = json!({"operation": what, "objectKind": kind});
    crate::audit::record::append(
        c,
        &format!("dli.{kind}.read"),
        Some(admin.user_id()),
        &data,
        true,
    )
}

/// A file (`folder` false) or folder by id, in the trash too; 404 `ERR_ENTITY_NOT_FOUND` when
/// there is none of that kind (or it was purged).
pub fn object(c: &mut DbConn, id: &str, folder: bool) -> Result<coffer_store::models::Object> {
    let not_found = || crate::Error::from(ApiError::new(ErrorCode::EntityNotFound));
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(not_found());
    }
    coffer_store::content::object(c, id)?
        .filter(|o| o.is_folder() == folder && o.system.as_deref() != Some("base"))
        .ok_or_else(not_found)
}
