//! Who is calling: bearer-token authentication of `/rest` calls and the scope check.

use crate::{now, Ctx, Result};
use coffer_domain::client::flag;
use coffer_domain::{Role, Scope};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::models::User;

/// An authenticated caller: the user a token acts for, through which client, with what scope.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user: User,
    pub role: Role,
    pub client_id: String,
    pub client_redirect_uri: String,
    pub scope: Scope,
    pub family_id: String,
    pub device_id: Option<i64>,
    pub token_hash: String,
}

impl Caller {
    pub fn user_id(&self) -> &str {
        &self.user.id
    }

    pub fn is_admin(&self) -> bool {
        self.role.is_admin()
    }

    pub fn is_system_admin(&self) -> bool {
        self.role == Role::SystemAdmin
    }

    /// System and helpdesk administrators manage user accounts.
    pub fn is_user_admin(&self) -> bool {
        matches!(self.role, Role::SystemAdmin | Role::HelpdeskAdmin)
    }

    /// System or application administrators manage the client registry.
    pub fn is_app_admin(&self) -> bool {
        matches!(self.role, Role::SystemAdmin | Role::ApplicationAdmin)
    }

    /// Whether the caller's account is internal (the organisation's own, as opposed to an
    /// outside recipient's).
    pub fn is_internal(&self) -> bool {
        self.user.internal
    }
}

fn unauthorized() -> ApiError {
    ApiError::new(ErrorCode::AuthUnauthorized)
}

/// Authenticates a bearer token for `method path`. Missing, unknown, expired or revoked tokens,
/// tokens of deleted or inactive users and of disabled clients answer 401; a call outside the
/// token's scope answers 403 `ERR_ACCESS_USER`.
pub fn authenticate(ctx: &Ctx, token: &str, method: &str, path: &str) -> Result<Caller> {
    if token.is_empty() || token.len() > 512 {
        return Err(unauthorized().into());
    }
    let hash = coffer_oauth::secrets::hash_token(token);
    let found = ctx.with_conn(|c| Ok(coffer_store::tokens::access_with_owner(c, &hash)?))?;
    let (tok, user, client) = found.ok_or_else(unauthorized)?;
    let t = now();
    if tok.revoked
        || tok.expires_at.is_some_and(|e| t >= e)
        || !user.is_usable()
        || client.flag & flag::DISABLED != 0
    {
        return Err(unauthorized().into());
    }
    let scope = Scope::parse(&tok.scope).map_err(|_| unauthorized())?;
    if !scope.allows(method, path) {
        return Err(ApiError::new(ErrorCode::AccessUser)
            .with_message(
                "Insufficient access permissions (the call is outside the token's scope).",
            )
            .into());
    }
    let role = user.role.parse::<Role>().map_err(crate::Error::internal)?;
    Ok(Caller {
        role,
        client_id: client.id,
        client_redirect_uri: client.redirect_uri,
        scope,
        family_id: tok.family_id,
        device_id: tok.device_id,
        token_hash: hash,
        user,
    })
}
