//! SCIM bearer tokens, made by the operator (`cofferd scim-token create`) and stored hashed.

use crate::{events, now, Ctx, Result};
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
