//! SSH public keys: `/rest/userSshPublicKeys*` (the caller's own) and
//! `/rest/admin/users/{id}/userSshPublicKeys*` (an administrator for an account).

use crate::plumbing::body::{Body, Input};
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{int_id, Caller, KeyAdmin, QueryPairs};
use crate::plumbing::respond::{created, listing, Envelope};
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data, Path};
use actix_web::HttpResponse;
use coffer_domain::list::{self, ListSpec};
use coffer_service::identity::ssh_keys::{self as svc, GeneratedKey, SshKeyView};
use serde::Deserialize;
use utoipa::ToSchema;

/// `POST /rest/userSshPublicKeys/create` and the administrator's create.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SshKeyBody {
    /// The key's name, unique among the account's keys; at most 50 characters.
    #[schema(
        max_length = 50,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub name: String,
    /// One OpenSSH public-key line: `ssh-ed25519`, `ecdsa-sha2-nistp256/384/521` or `ssh-rsa`
    /// of at least 2048 bits.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub public_key: String,
}

impl Input for SshKeyBody {}

/// `POST /rest/userSshPublicKeys/generate` and the administrator's generate.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SshKeyGenerateBody {
    /// The key's name, unique among the account's keys; at most 50 characters.
    #[schema(
        max_length = 50,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub name: String,
    /// Encrypts the generated private key (bcrypt-pbkdf, AES-256-CTR); without it the private
    /// key is answered unencrypted.
    pub passphrase: Option<String>,
}

impl Input for SshKeyGenerateBody {}

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/userSshPublicKeys").route(web::get().to(list)))
        .service(web::resource("/userSshPublicKeys/create").route(web::post().to(create)))
        .service(web::resource("/userSshPublicKeys/generate").route(web::post().to(generate)))
        .service(web::resource("/userSshPublicKeys/{id}").route(web::delete().to(delete)))
        .service(
            web::resource("/admin/users/{id}/userSshPublicKeys").route(web::get().to(admin_list)),
        )
        .service(
            web::resource("/admin/users/{id}/userSshPublicKeys/create")
                .route(web::post().to(admin_create)),
        )
        .service(
            web::resource("/admin/users/{id}/userSshPublicKeys/generate")
                .route(web::post().to(admin_generate)),
        );
}

fn location(st: &AppState, k: &SshKeyView) -> String {
    format!("{}/rest/userSshPublicKeys/{}", st.base_url(), k.id)
}

#[utoipa::path(get, path = "/rest/userSshPublicKeys", tag = "users", responses((status = 200, body = crate::plumbing::schema::WithMetadata<SshKeyView>, description = "The caller's live keys, oldest first"), (status = 403, description = "`ERR_SYSTEM_ROLE_SFTP_DISABLED`, `ERR_PROFILE_SFTP_DISABLED`")), security(("bearer" = [])))]
pub async fn list(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let (offset, limit) = (q.offset, q.limit);
    let l = blocking(&st, move |ctx| svc::list(ctx, &c, offset, limit)).await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(post, path = "/rest/userSshPublicKeys/create", tag = "users", request_body(content = SshKeyBody), responses((status = 201, body = SshKeyView, description = "The registered key, with `Location`"), (status = 403, description = "`ERR_SYSTEM_ROLE_SFTP_DISABLED`, `ERR_PROFILE_SFTP_DISABLED`"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: a name over 50 characters, a key that is not one OpenSSH line of an accepted type and size, or a key registered already; `ERR_SSH_PUBLIC_KEY_EXISTS`: a key of this name exists")), security(("bearer" = [])))]
pub async fn create(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<SshKeyBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let k = blocking(&st, move |ctx| {
        svc::create(ctx, &c, &body.name, &body.public_key)
    })
    .await?;
    Ok(created(StatusCode::CREATED, location(&st, &k), &k))
}

#[utoipa::path(post, path = "/rest/userSshPublicKeys/generate", tag = "users", request_body(content = SshKeyGenerateBody), responses((status = 201, body = GeneratedKey, description = "The new pair (the private key is not kept), with `Location` of the registered key"), (status = 403, description = "`ERR_SYSTEM_ROLE_SFTP_DISABLED`, `ERR_PROFILE_SFTP_DISABLED`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_STRING`; `ERR_INVALID_PARAMETER`: a name over 50 characters; `ERR_SSH_PUBLIC_KEY_EXISTS`: a key of this name exists"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: too many generated keys (`Retry-After`)")), security(("bearer" = [])))]
pub async fn generate(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<SshKeyGenerateBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let g = blocking(&st, move |ctx| {
        svc::generate(ctx, &c, &body.name, body.passphrase.as_deref())
    })
    .await?;
    Ok(generated(&st, g))
}

fn generated(st: &AppState, g: GeneratedKey) -> HttpResponse {
    match &g.key {
        Some(k) => created(StatusCode::CREATED, location(st, k), &g),
        None => HttpResponse::Created().json(&g),
    }
}

#[utoipa::path(delete, path = "/rest/userSshPublicKeys/{id}", tag = "users", params(("id" = i64, Path, description = "A key id", minimum = 1)), responses((status = 204, description = "Deleted; the key signs in nowhere from now on"), (status = 403, description = "`ERR_ACCESS_USER`: another account's key; `ERR_ENTITY_DELETED`: deleted already; `ERR_SYSTEM_ROLE_SFTP_DISABLED`, `ERR_PROFILE_SFTP_DISABLED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = int_id(&id)?;
    blocking(&st, move |ctx| svc::delete(ctx, &c, id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(get, path = "/rest/admin/users/{id}/userSshPublicKeys", tag = "users", params(("id" = String, Path, description = "A user id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<SshKeyView>, description = "Every key of the account, deleted ones too (`deleted`), oldest first"), (status = 403, description = "`ERR_ACCESS_USER`: the caller is no system or helpdesk administrator; `ERR_ADMIN_ROLE_RANK_RESTRICTED`: an administrator's account for a helpdesk administrator; `ERR_ENTITY_DELETED`: a deleted account; `ERR_SYSTEM_ROLE_SFTP_DISABLED`, `ERR_PROFILE_SFTP_DISABLED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn admin_list(
    KeyAdmin(c): KeyAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let (offset, limit) = (q.offset, q.limit);
    let id = id.into_inner();
    let l = blocking(&st, move |ctx| svc::admin_list(ctx, &c, &id, offset, limit)).await?;
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(post, path = "/rest/admin/users/{id}/userSshPublicKeys/create", tag = "users", params(("id" = String, Path, description = "A user id")), request_body(content = SshKeyBody), responses((status = 201, body = SshKeyView, description = "The registered key, with `Location`"), (status = 403, description = "`ERR_ACCESS_USER`: the caller is no system or helpdesk administrator; `ERR_ADMIN_ROLE_RANK_RESTRICTED`: an administrator's account for a helpdesk administrator; `ERR_ENTITY_DELETED`: a deleted account; `ERR_SYSTEM_ROLE_SFTP_DISABLED`, `ERR_PROFILE_SFTP_DISABLED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_REQUIRED`; `ERR_INVALID_PARAMETER`: a name over 50 characters, a key that is not one OpenSSH line of an accepted type and size, or a key registered already; `ERR_SSH_PUBLIC_KEY_EXISTS`: a key of this name exists")), security(("bearer" = [])))]
pub async fn admin_create(
    KeyAdmin(c): KeyAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<SshKeyBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let k = blocking(&st, move |ctx| {
        svc::admin_create(ctx, &c, &id, &body.name, &body.public_key)
    })
    .await?;
    Ok(created(StatusCode::CREATED, location(&st, &k), &k))
}

#[utoipa::path(post, path = "/rest/admin/users/{id}/userSshPublicKeys/generate", tag = "users", params(("id" = String, Path, description = "A user id")), request_body(content = SshKeyGenerateBody), responses((status = 201, body = GeneratedKey, description = "The new pair (the private key is not kept), with `Location` of the registered key"), (status = 403, description = "`ERR_ACCESS_USER`: the caller is no system or helpdesk administrator; `ERR_ADMIN_ROLE_RANK_RESTRICTED`: an administrator's account for a helpdesk administrator; `ERR_ENTITY_DELETED`: a deleted account; `ERR_SYSTEM_ROLE_SFTP_DISABLED`, `ERR_PROFILE_SFTP_DISABLED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_STRING`; `ERR_INVALID_PARAMETER`: a name over 50 characters; `ERR_SSH_PUBLIC_KEY_EXISTS`: a key of this name exists"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: too many generated keys (`Retry-After`)")), security(("bearer" = [])))]
pub async fn admin_generate(
    KeyAdmin(c): KeyAdmin,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<SshKeyGenerateBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let id = id.into_inner();
    let g = blocking(&st, move |ctx| {
        svc::admin_generate(ctx, &c, &id, &body.name, body.passphrase.as_deref())
    })
    .await?;
    Ok(generated(&st, g))
}
