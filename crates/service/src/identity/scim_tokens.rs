//! SCIM bearer tokens, made by the operator (`cofferd scim-token create`) and stored hashed.

use crate::platform::events;
use crate::{now, Ctx, Result};
use coffer_store::models::ScimToken;

/// Creates a token; returns `(id, token)`. The token is shown only here.
pub fn create(ctx: &Ctx, name: &str) -> Result<(String, String)> {
    let token = coffer_oauth::secrets::new_token();
    let id = uuid::Uuid::new_v4().to_string();
    let row = ScimToken {
        id: id.clone(),
        name: name.to_string(),
        token_hash: coffer_oauth::secrets::hash_token(&token),
        revoked: false,
        created_at: now(),
    };
    ctx.write(|c| {
        coffer_store::scim_tokens::insert(c, &row)?;
        events::record(
            c,
            "scim.token.create",
            None,
            serde_json::json!({"id": row.id, "name": row.name}),
        )
    })?;
    Ok((id, token))
}

/// A SCIM token as listed: never the token itself.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TokenView {
    pub id: String,
    pub name: String,
    pub revoked: bool,
    pub created: String,
}

pub fn list(ctx: &Ctx) -> Result<Vec<TokenView>> {
    let rows = ctx.with_conn(|c| Ok(coffer_store::scim_tokens::list(c)?))?;
    Ok(rows
        .into_iter()
        .map(|t| TokenView {
            id: t.id,
            name: t.name,
            revoked: t.revoked,
            created: crate::rfc3339(t.created_at),
        })
        .collect())
}

/// Revokes a token: SCIM calls with it answer 401 from now on.
pub fn revoke(ctx: &Ctx, id: &str) -> Result<()> {
    ctx.write(|c| {
        if coffer_store::scim_tokens::revoke(c, id)? == 0 {
            return Err(
                coffer_errors::ApiError::new(coffer_errors::ErrorCode::EntityNotFound).into(),
            );
        }
        events::record(c, "scim.token.revoke", None, serde_json::json!({"id": id}))
    })
}
