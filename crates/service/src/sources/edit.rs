//! External editing of one source file (`GET /rest/sources/{id}/externalEdit`): a short-lived
//! refresh token for the caller and the caller's client whose scope reaches only that file's
//! download (`GET /rest/sources/{id}/content`) and its upload back
//! (`POST /rest/sources/actions/files/{id}`), so that an editor program can fetch the file and
//! write it back without holding the caller's own, wider tokens.

use crate::platform::auth::Caller;
use crate::platform::events;
use crate::{rfc3339, Ctx, Result};
use coffer_domain::Scope;
use coffer_errors::{ApiError, Error, ErrorCode};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

/// How long an external-edit token lives, in seconds: it and everything exchanged for it
/// expire this long after it was made (a rotation never extends it).
pub const LIFETIME: i64 = 300;

/// A refresh token for an external editor (`RefreshToken`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefreshTokenView {
    /// Exchanged at the token endpoint (`grant_type=refresh_token`, by the caller's client).
    pub refresh_token: String,
    /// The two calls it reaches: `GET/sources/<id>/content POST/sources/actions/files/<id>`.
    pub scope: String,
    /// When it (and every token exchanged for it) expires.
    #[schema(format = DateTime)]
    pub expire: String,
    pub user_id: String,
}

/// The scope confined to the download and the upload back of the source file `id`.
pub fn scope_for(id: &str) -> std::result::Result<Scope, String> {
    Scope::parse(&format!(
        "GET/sources/{id}/content POST/sources/actions/files/{id}"
    ))
}

fn refused(message: &'static str) -> Error {
    ApiError::new(ErrorCode::AccessUser)
        .with_message(message)
        .into()
}

/// The token for the file `id`, if the caller may read it and write it back: a file of one of
/// the caller's sources (else 404 as a download answers), a source that takes writes (a
/// read-only operator directory: 403 `ERR_ACCESS_USER`), not held locked by another user (403
/// `ERR_ENTITY_LOCKED`). The caller's own token must reach both calls (else 403
/// `ERR_ACCESS_USER`, as a call outside its scope), and the caller's client must use refresh
/// tokens (else 403 `ERR_ACCESS_USER`).
pub fn external_edit(ctx: &Ctx, caller: &Caller, id: &str) -> Result<RefreshTokenView> {
    let user_id = caller.user_id();
    let (s, path) = super::resolve(ctx, user_id, id)?;
    let conn = super::connect(ctx, &s)?;
    let e = conn.stat(&path).map_err(|e| super::remote(ctx, &s, e))?;
    if e.is_dir {
        return Err(ApiError::new(ErrorCode::EntityNotFound).into());
    }
    if let super::Named::Dir(d) = &s {
        if !d.writable {
            return Err(refused("The source takes no writes."));
        }
    }
    super::transfer::held(ctx, user_id, &s, &path)?;
    let source_id = s.id();
    let id = super::content_id(&source_id, path.as_str());
    let scope = scope_for(&id).map_err(Error::internal)?;
    if !caller.scope.covers(&scope) {
        return Err(refused(
            "Insufficient access permissions (the call is outside the token's scope).",
        ));
    }
    let issued = ctx.write(|c| {
        let Some((token, expire)) = crate::oauth::issue_confined_refresh(
            c,
            &caller.client_id,
            user_id,
            &scope,
            caller.device_id,
            LIFETIME,
        )?
        else {
            return Ok(None);
        };
        events::record(
            c,
            "source.file.edit",
            Some(user_id),
            json!({"sourceId": source_id, "id": id, "clientId": caller.client_id, "expire": expire}),
        )?;
        Ok(Some((token, expire)))
    })?;
    let (refresh_token, expire) =
        issued.ok_or_else(|| refused("The client may not use refresh tokens."))?;
    Ok(RefreshTokenView {
        refresh_token,
        scope: scope.to_string(),
        expire: rfc3339(expire),
        user_id: user_id.to_string(),
    })
}
