//! The registry of OAuth clients. Built-in clients change only their two lifetimes and are
//! never deleted; a client keeps its id and secret whatever else changes. A signature key, a
//! JWT key and the flows that use them let a client act for users without them: only a system
//! administrator or the operator sets those up.

use crate::platform::auth::{AppAdmin, Caller};
use crate::platform::events;
use crate::platform::views::{ClientView, Listed};
use crate::{now, Ctx, Result};
use coffer_domain::client::{
    flag, flow, kind, DEFAULT_ACCESS_TOKEN_LIFETIME_HOURS, DEFAULT_REFRESH_TOKEN_LIFETIME_HOURS,
    MAX_SCOPE_BYTES, MAX_SCOPE_ITEMS,
};
use coffer_domain::list::ListQuery;
use coffer_domain::Scope;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::Client;
use coffer_store::DbConn;
use rand::distributions::{Alphanumeric, DistString};

/// The fields of a create or update.
#[derive(Debug, Clone, Default)]
pub struct ClientInput {
    pub name: String,
    pub description: String,
    pub redirect_uri: String,
    pub scope: String,
    pub signature_key: Option<String>,
    pub jwt_public_key: Option<String>,
    pub access_token_lifetime: Option<i32>,
    pub refresh_token_lifetime: Option<i32>,
    pub flow: Option<i32>,
    pub flag: Option<i32>,
}

/// Who changes the registry.
#[derive(Debug, Clone, Copy)]
pub enum Registrar<'a> {
    /// The operator, through `cofferd client create`: may set up every flow.
    Operator,
    /// An administrator through `/rest/clients`.
    Admin(&'a AppAdmin),
}

impl Registrar<'_> {
    /// The user recorded as the actor of the change's event.
    fn actor(&self) -> Option<&str> {
        match self {
            Registrar::Operator => None,
            Registrar::Admin(c) => Some(c.user_id()),
        }
    }

    /// Only the operator and system administrators register signature or JWT keys and give a
    /// client an impersonation flow.
    fn may_set_up_impersonation(&self) -> bool {
        match self {
            Registrar::Operator => true,
            Registrar::Admin(c) => c.is_system_admin(),
        }
    }
}

/// The flow bits a client has after `input` is applied to a client with `before`: the
/// explicit `flow`, else `before` with the flow of each key given.
fn flow_after(input: &ClientInput, before: i32) -> i32 {
    if let Some(f) = input.flow {
        return f;
    }
    let mut bits = before;
    if input.signature_key.is_some() {
        bits |= flow::SIGNATURE;
    }
    if input.jwt_public_key.is_some() {
        bits |= flow::JWT_BEARER;
    }
    bits
}

/// Refuses (403 `ERR_ACCESS_SYSTEM_ADMIN`) a registrar other than a system administrator or
/// the operator who registers or changes a signature key or a JWT key, or gives the client the
/// signature or JWT flow. `current` is the stored client of an update. Sending back the JWT
/// public key the client already has changes nothing and passes; a signature key is a secret
/// the API never shows, so any `signatureKey` is a change.
fn check_impersonation(
    by: Registrar<'_>,
    input: &ClientInput,
    current: Option<&Client>,
) -> Result<()> {
    if by.may_set_up_impersonation() {
        return Ok(());
    }
    let before = current.map_or(0, |c| c.flow);
    let default = current.map_or(flow::AUTH_CODE | flow::REFRESH_TOKEN, |c| c.flow);
    let gained = flow_after(input, default) & !before & coffer_oauth::impersonation::FLOWS;
    let new_jwt_key = input
        .jwt_public_key
        .as_deref()
        .is_some_and(|k| current.and_then(|c| c.jwt_public_key.as_deref()) != Some(k));
    if input.signature_key.is_some() || new_jwt_key || gained != 0 {
        return Err(ApiError::new(ErrorCode::AccessSystemAdmin)
            .with_message(
                "The user is not a system administrator (only a system administrator registers \
                 a signature key or a JWT key, or gives a client the signature or JWT flow).",
            )
            .into());
    }
    Ok(())
}

fn invalid(field: &str, why: &str) -> Error {
    ApiError::field(ErrorCode::InputInvalidFormat, field)
        .with_message(format!("The value has an invalid format ({field}: {why})."))
        .into()
}

/// Checks the values of an input; returns the canonical scope.
fn validate(input: &ClientInput) -> Result<String> {
    if input.name.len() > 255 {
        return Err(invalid("name", "at most 255 characters"));
    }
    if input.description.len() > 2000 {
        return Err(invalid("description", "at most 2000 characters"));
    }
    validate_redirect_uri(&input.redirect_uri)?;
    if input.scope.len() > MAX_SCOPE_BYTES
        || input.scope.split_ascii_whitespace().count() > MAX_SCOPE_ITEMS
    {
        return Err(invalid("scope", "at most 4096 bytes and 100 items"));
    }
    let scope = Scope::parse(&input.scope).map_err(|e| invalid("scope", &e))?;
    if scope.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "scope").into());
    }
    if let Some(k) = &input.signature_key {
        if k.len() < 8 || k.len() > 512 {
            return Err(invalid("signatureKey", "8 to 512 characters"));
        }
    }
    if let Some(pem) = &input.jwt_public_key {
        if !coffer_oauth::jwt::valid_public_key(pem) {
            return Err(invalid("jwtPublicKey", "an RSA public key in PEM"));
        }
    }
    if input.flow.is_some_and(|f| f & !flow::ALL != 0) {
        return Err(invalid("flow", "unknown flow bits"));
    }
    if input.flag.is_some_and(|f| f & !flag::ALL != 0) {
        return Err(invalid("flag", "unknown flag bits"));
    }
    Ok(scope.to_string())
}

/// A redirect URI is an absolute URI without a fragment (RFC 6749 §3.1.2).
pub fn validate_redirect_uri(uri: &str) -> Result<()> {
    let ok = uri.len() <= 2000
        && !uri.chars().any(|c| c.is_control() || c.is_whitespace())
        && url::Url::parse(uri).is_ok_and(|u| {
            u.fragment().is_none() && !u.cannot_be_a_base() && u.username().is_empty()
        });
    if ok {
        Ok(())
    } else {
        Err(invalid("redirectUri", "an absolute URI without a fragment"))
    }
}

fn new_client_id() -> String {
    Alphanumeric
        .sample_string(&mut rand::rngs::OsRng, 24)
        .to_lowercase()
}

/// Creates a custom client; returns its record with the secret, shown this once.
pub fn create(ctx: &Ctx, input: ClientInput, by: Registrar<'_>) -> Result<ClientView> {
    let scope = validate(&input)?;
    check_impersonation(by, &input, None)?;
    let actor = by.actor();
    let secret = coffer_oauth::secrets::new_token();
    let t = now();
    let bits = flow_after(&input, flow::AUTH_CODE | flow::REFRESH_TOKEN);
    let client = Client {
        id: new_client_id(),
        secret_hash: coffer_oauth::secrets::hash_token(&secret),
        name: input.name.trim().to_string(),
        description: input.description,
        redirect_uri: input.redirect_uri,
        scope,
        flag: input.flag.unwrap_or(0),
        flow: bits,
        kind: kind::CUSTOM,
        access_token_lifetime: input
            .access_token_lifetime
            .unwrap_or(DEFAULT_ACCESS_TOKEN_LIFETIME_HOURS),
        refresh_token_lifetime: input
            .refresh_token_lifetime
            .unwrap_or(DEFAULT_REFRESH_TOKEN_LIFETIME_HOURS),
        signature_key: input.signature_key,
        jwt_public_key: input.jwt_public_key,
        touch_id: false,
        min_version: 0,
        ask_pin: 0,
        pin_timeout: 0,
        max_pin_attempts: 0,
        builtin: false,
        created_at: t,
        updated_at: t,
    };
    ctx.write(|c| {
        if coffer_store::clients::by_name(c, &client.name)?.is_some() {
            return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
        }
        coffer_store::clients::insert(c, &client).map_err(|e| {
            if e.is_unique_violation() {
                Error::from(ApiError::field(ErrorCode::EntityExists, "name"))
            } else {
                e.into()
            }
        })?;
        events::record(
            c,
            "oauth.client.create",
            actor,
            serde_json::json!({"id": client.id, "name": client.name}),
        )
    })?;
    let mut view = ClientView::from_client(&client);
    view.client_secret = Some(secret);
    Ok(view)
}

/// The first-party web client, made when the database is brought up to date
/// (`accounts::ensure_system_records`).
pub fn insert_builtin_web_client(
    c: &mut DbConn,
    secret: &str,
    redirect_uri: &str,
    actor: Option<&str>,
) -> Result<Client> {
    let t = now();
    let client = Client {
        id: new_client_id(),
        secret_hash: coffer_oauth::secrets::hash_token(secret),
        name: "Coffer Web".into(),
        description: "The first-party web client".into(),
        redirect_uri: redirect_uri.to_string(),
        scope: "*".into(),
        flag: flag::NO_CONSENT,
        flow: flow::AUTH_CODE | flow::REFRESH_TOKEN | flow::PASSWORD,
        kind: kind::FIRST_PARTY_WEB,
        access_token_lifetime: DEFAULT_ACCESS_TOKEN_LIFETIME_HOURS,
        refresh_token_lifetime: DEFAULT_REFRESH_TOKEN_LIFETIME_HOURS,
        signature_key: None,
        jwt_public_key: None,
        touch_id: false,
        min_version: 0,
        ask_pin: 0,
        pin_timeout: 0,
        max_pin_attempts: 0,
        builtin: true,
        created_at: t,
        updated_at: t,
    };
    coffer_store::clients::insert(c, &client)?;
    events::record(
        c,
        "oauth.client.create",
        actor,
        serde_json::json!({"id": client.id, "name": client.name}),
    )?;
    Ok(client)
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// A client of the registry.
pub fn get(ctx: &Ctx, _: &AppAdmin, id: &str) -> Result<ClientView> {
    view(ctx, id)
}

fn view(ctx: &Ctx, id: &str) -> Result<ClientView> {
    let c = ctx
        .with_conn(|c| Ok(coffer_store::clients::by_id(c, id)?))?
        .ok_or_else(not_found)?;
    Ok(ClientView::from_client(&c))
}

/// The client the caller's token was issued to.
pub fn me(ctx: &Ctx, caller: &Caller) -> Result<ClientView> {
    view(ctx, &caller.client_id)
}

/// The client registry.
pub fn list(ctx: &Ctx, _: &AppAdmin, q: &ListQuery) -> Result<Listed<ClientView>> {
    let page = ctx.with_conn(|c| Ok(coffer_store::clients::list(c, q)?))?;
    Ok(Listed {
        items: page.items.iter().map(ClientView::from_client).collect(),
        total: page.total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// `cofferd client list`: the whole registry (hidden clients left out, as in the API), for
/// the operator at the server's console.
pub fn list_for_operator(ctx: &Ctx) -> Result<Vec<ClientView>> {
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
        let page = ctx.with_conn(|c| Ok(coffer_store::clients::list(c, &q)?))?;
        let done = page.items.is_empty() || all.len() + page.items.len() >= page.total as usize;
        all.extend(page.items.iter().map(ClientView::from_client));
        if done {
            return Ok(all);
        }
    }
}

/// The scope items of a client; a non-administrator may read only its own client's.
pub fn scopes(ctx: &Ctx, caller: &Caller, id: &str) -> Result<Vec<String>> {
    if !caller.is_app_admin() && caller.client_id != id {
        return Err(ApiError::new(ErrorCode::AccessUser).into());
    }
    let c = ctx
        .with_conn(|c| Ok(coffer_store::clients::by_id(c, id)?))?
        .ok_or_else(not_found)?;
    let scope = Scope::parse(&c.scope).map_err(Error::internal)?;
    Ok(scope.items().iter().map(|i| i.to_string()).collect())
}

/// Updates a client. A built-in client takes only the two lifetimes: any other change answers
/// 403 `ERR_ACCESS_USER`.
pub fn update(ctx: &Ctx, id: &str, input: ClientInput, by: Registrar<'_>) -> Result<ClientView> {
    let scope = validate(&input)?;
    let actor = by.actor();
    let updated = ctx.write(|c| {
        let mut client = coffer_store::clients::by_id(c, id)?.ok_or_else(not_found)?;
        check_impersonation(by, &input, Some(&client))?;
        let access = input.access_token_lifetime.unwrap_or(client.access_token_lifetime);
        let refresh = input.refresh_token_lifetime.unwrap_or(client.refresh_token_lifetime);
        if client.builtin {
            let same = input.name.trim() == client.name
                && input.description == client.description
                && input.redirect_uri == client.redirect_uri
                && scope == client.scope
                && input.signature_key.is_none()
                && input.jwt_public_key.is_none()
                && input.flow.is_none_or(|f| f == client.flow)
                && input.flag.is_none_or(|f| f == client.flag);
            if !same {
                return Err(ApiError::new(ErrorCode::AccessUser)
                    .with_message("Insufficient access permissions (a built-in client changes only its token lifetimes).")
                    .into());
            }
        } else {
            let name = input.name.trim().to_string();
            if name != client.name && coffer_store::clients::by_name(c, &name)?.is_some() {
                return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
            }
            client.name = name;
            client.description = input.description.clone();
            client.redirect_uri = input.redirect_uri.clone();
            client.scope = scope.clone();
            client.flow = flow_after(&input, client.flow);
            if let Some(k) = &input.signature_key {
                client.signature_key = Some(k.clone());
            }
            if let Some(k) = &input.jwt_public_key {
                client.jwt_public_key = Some(k.clone());
            }
            if let Some(f) = input.flag {
                client.flag = f;
            }
        }
        client.access_token_lifetime = access;
        client.refresh_token_lifetime = refresh;
        client.updated_at = now();
        coffer_store::clients::update(c, &client).map_err(|e| {
            if e.is_unique_violation() {
                Error::from(ApiError::field(ErrorCode::EntityExists, "name"))
            } else {
                e.into()
            }
        })?;
        events::record(c, "oauth.client.update", actor, serde_json::json!({"id": client.id}))?;
        Ok(client)
    })?;
    Ok(ClientView::from_client(&updated))
}

/// Deletes a custom client with every token and device it holds.
pub fn delete(ctx: &Ctx, admin: &AppAdmin, id: &str) -> Result<()> {
    delete_as(ctx, Some(admin.user_id()), id)
}

/// `cofferd client delete`: the same deletion by the operator at the server's console.
pub fn delete_by_operator(ctx: &Ctx, id: &str) -> Result<()> {
    delete_as(ctx, None, id)
}

fn delete_as(ctx: &Ctx, actor: Option<&str>, id: &str) -> Result<()> {
    ctx.write(|c| {
        let client = coffer_store::clients::by_id(c, id)?.ok_or_else(not_found)?;
        if client.builtin {
            return Err(ApiError::new(ErrorCode::AccessUser)
                .with_message(
                    "Insufficient access permissions (a built-in client cannot be deleted).",
                )
                .into());
        }
        coffer_store::clients::delete(c, id)?;
        events::record(
            c,
            "oauth.client.delete",
            actor,
            serde_json::json!({"id": id}),
        )
    })
}
