//! The sources themselves: their types (`/rest/sourceTypes`), a user's sources and the
//! operator's directories (`/rest/sources`), their credentials (`/rest/sources/{id}/auth`,
//! `authStatus`), the site search no source of Coffer's offers (`/rest/sources/{id}/query`), pins (`/rest/users/me/pins`), and the re-sealing of every stored credential
//! under a new key (`cofferd secrets rotate`).

use super::{Login, Named, SecretKey, TYPE_DIRECTORY, TYPE_WEBDAV};
use crate::platform::events;
use crate::platform::views::Link;
use crate::{now, rfc3339, Ctx, Result};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_sources::Credentials;
use coffer_store::sources::Source;
use serde::Serialize;
use serde_json::json;
use std::collections::HashMap;
use utoipa::ToSchema;

/// A source type (`SourceType`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceTypeView {
    pub id: i64,
    pub name: String,
    /// Whether users add sources of this type themselves (WebDAV); server directories are the
    /// operator's.
    pub user_can_set: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

/// The source types Coffer connects to.
pub fn types() -> Vec<SourceTypeView> {
    vec![
        SourceTypeView {
            id: TYPE_WEBDAV,
            name: "WebDAV".into(),
            user_can_set: true,
            links: None,
        },
        SourceTypeView {
            id: TYPE_DIRECTORY,
            name: "Server directory".into(),
            user_can_set: false,
            links: None,
        },
    ]
}

/// One source type; an unknown id answers 404.
pub fn source_type(id: &str) -> Result<SourceTypeView> {
    types()
        .into_iter()
        .find(|t| t.id.to_string() == id)
        .ok_or_else(|| ApiError::new(ErrorCode::EntityNotFound).into())
}

/// A source as its user sees it (`Source`). Credentials are never part of it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceView {
    pub id: String,
    pub name: String,
    pub description: String,
    /// The WebDAV server's address; an operator directory shows none (its place on the server
    /// is the operator's business).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_url: Option<String>,
    pub source_type_id: i64,
    /// True for a source the user added, false for an operator directory.
    pub source_by_user: bool,
    pub pinned: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

fn view(s: &Named, pins: &HashMap<String, i64>) -> SourceView {
    let id = s.id();
    let pinned = pins.get(&id).copied();
    let (name, description, url, by_user) = match s {
        Named::User(s) => (
            s.name.clone(),
            s.description.clone(),
            Some(s.url.clone()),
            true,
        ),
        Named::Dir(d) => (d.name.clone(), String::new(), None, false),
    };
    SourceView {
        id,
        name,
        description,
        source_url: url,
        source_type_id: s.type_id(),
        source_by_user: by_user,
        pinned: pinned.is_some(),
        pinned_time: pinned.map(rfc3339),
        links: None,
    }
}

fn pins(c: &mut coffer_store::DbConn, user_id: &str) -> Result<HashMap<String, i64>> {
    Ok(coffer_store::sources::pins_of(c, user_id)?
        .into_iter()
        .collect())
}

/// `GET /rest/sources`: the operator's directories, then the caller's own sources, oldest
/// first; `query` keeps those whose name contains it (without regard to case).
pub fn list(ctx: &Ctx, user_id: &str, query: Option<&str>) -> Result<Vec<SourceView>> {
    ctx.read(|c| {
        let pins = pins(c, user_id)?;
        let mut all: Vec<Named> = ctx
            .config
            .sources
            .dirs
            .iter()
            .cloned()
            .map(Named::Dir)
            .collect();
        all.extend(
            coffer_store::sources::of_owner(c, user_id)?
                .into_iter()
                .map(Named::User),
        );
        let q = query.map(coffer_domain::content::fold_name);
        Ok(all
            .iter()
            .map(|s| view(s, &pins))
            .filter(|v| {
                q.as_deref()
                    .is_none_or(|q| coffer_domain::content::fold_name(&v.name).contains(q))
            })
            .collect())
    })
}

/// `GET /rest/sources/{id}`.
pub fn get(ctx: &Ctx, user_id: &str, id: &str) -> Result<SourceView> {
    ctx.read(|c| {
        let s = super::source(c, ctx, user_id, id)?;
        Ok(view(&s, &pins(c, user_id)?))
    })
}

/// What `POST /rest/sources` gives.
#[derive(Debug, Clone)]
pub struct NewSource {
    pub name: String,
    pub description: String,
    pub url: String,
    pub type_id: String,
    pub login: Option<Login>,
}

fn invalid(field: &str, message: &'static str) -> Error {
    ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(message)
        .into()
}

/// `POST /rest/sources`: adds a WebDAV source for the caller. The address must be an http(s)
/// URL the address guard lets through; a name (without regard to case) or an address the caller
/// has already answers 422 `ERR_INVALID_PARAMETER`. The server is asked first: credentials given
/// that it refuses answer 403 `ERR_AUTH_EC_UPDATE_TOKEN` and nothing is stored; a server that
/// wants credentials when none were given makes a source that needs them. Credentials are
/// stored sealed.
pub fn create(ctx: &Ctx, user_id: &str, n: NewSource) -> Result<SourceView> {
    let name = n.name.trim().to_string();
    if name.chars().count() > 255 {
        return Err(invalid("name", "The name is longer than 255 characters."));
    }
    if n.description.chars().count() > 1000 {
        return Err(invalid(
            "description",
            "The description is longer than 1000 characters.",
        ));
    }
    match n.type_id.trim().parse::<i64>() {
        Ok(TYPE_WEBDAV) => {}
        Ok(TYPE_DIRECTORY) => {
            return Err(invalid(
                "sourceTypeId",
                "Server directories are set up by the operator.",
            ))
        }
        _ => return Err(invalid("sourceTypeId", "No such source type.")),
    }
    let url = normalized_url(&n.url)?;
    let folded = coffer_domain::content::fold_name(&name);
    let clash = |c: &mut coffer_store::DbConn| -> Result<()> {
        if let Some(s) = coffer_store::sources::clash(c, user_id, &folded, &url)? {
            let field = if s.name_folded == folded {
                "name"
            } else {
                "sourceUrl"
            };
            return Err(invalid(
                field,
                "The caller has a source with this name or URL already.",
            ));
        }
        Ok(())
    };
    ctx.read(|c| clash(c))?;
    // The guard and the credentials are checked before anything is stored, and outside the
    // transaction: the remote may be slow.
    let credentials = match &n.login {
        Some(l) => Credentials::Basic {
            login: l.login.clone(),
            password: l.password.clone(),
        },
        None => Credentials::None,
    };
    // The first connection also puts the address through the guard (where the name resolves
    // now). A server that wants credentials none were given for is stored as needing them.
    let connector = super::webdav(ctx, &url, credentials)?;
    let needs_auth = match connector.check() {
        Ok(()) => false,
        Err(coffer_sources::SourceError::NeedsAuth) if n.login.is_none() => true,
        Err(e) => return Err(super::remote_failure(e)),
    };
    let id = uuid::Uuid::new_v4().to_string();
    let sealed = match &n.login {
        Some(l) => Some(super::seal(&super::secret_key(ctx)?, &id, l)?),
        None => None,
    };
    let row = Source {
        id: id.clone(),
        owner_id: user_id.to_string(),
        name,
        name_folded: folded.clone(),
        description: n.description,
        url: url.clone(),
        type_id: TYPE_WEBDAV,
        credentials: sealed,
        needs_auth,
        created_at: now(),
    };
    ctx.write(|c| {
        clash(c)?;
        coffer_store::sources::insert(c, &row)?;
        events::record(
            c,
            "source.source.create",
            Some(user_id),
            json!({"id": row.id, "name": row.name, "sourceTypeId": row.type_id}),
        )?;
        Ok(view(&Named::User(row.clone()), &HashMap::new()))
    })
}

/// The address as stored: an http(s) URL without user information or fragment, with a path
/// that ends in `/` (a collection).
fn normalized_url(raw: &str) -> Result<String> {
    let mut u = url::Url::parse(raw.trim()).map_err(|_| super::bad_url())?;
    if !matches!(u.scheme(), "http" | "https") || u.host_str().is_none() {
        return Err(super::bad_url());
    }
    if !u.username().is_empty() || u.password().is_some() {
        return Err(invalid(
            "sourceUrl",
            "Give the login and password as fields, not in the URL.",
        ));
    }
    u.set_fragment(None);
    if !u.path().ends_with('/') {
        let p = format!("{}/", u.path());
        u.set_path(&p);
    }
    Ok(u.to_string())
}

/// The caller's own source; an operator directory answers 403 `ERR_ACCESS_USER`.
fn own(ctx: &Ctx, user_id: &str, id: &str) -> Result<Source> {
    match ctx.read(|c| super::source(c, ctx, user_id, id))? {
        Named::User(s) => Ok(s),
        Named::Dir(_) => Err(ApiError::new(ErrorCode::AccessUser).into()),
    }
}

/// `DELETE /rest/sources/{id}`: the caller's own source, with its pins and locks; an operator
/// directory answers 403 `ERR_ACCESS_USER`.
pub fn delete(ctx: &Ctx, user_id: &str, id: &str) -> Result<()> {
    let s = own(ctx, user_id, id)?;
    ctx.write(|c| {
        coffer_store::sources::delete(c, &s.id)?;
        events::record(
            c,
            "source.source.delete",
            Some(user_id),
            json!({"id": s.id, "name": s.name}),
        )
    })
}

/// `POST /rest/sources/{id}/auth`: checks a login and password against the source and stores
/// them sealed; refused by the remote: 403 `ERR_AUTH_EC_UPDATE_TOKEN`, nothing changed.
pub fn set_login(ctx: &Ctx, user_id: &str, id: &str, login: Login) -> Result<()> {
    let s = own(ctx, user_id, id)?;
    let connector = super::webdav(
        ctx,
        &s.url,
        Credentials::Basic {
            login: login.login.clone(),
            password: login.password.clone(),
        },
    )?;
    connector.check().map_err(super::remote_failure)?;
    let sealed = super::seal(&super::secret_key(ctx)?, &s.id, &login)?;
    ctx.write(|c| {
        coffer_store::sources::set_credentials(c, &s.id, Some(&sealed))?;
        events::record(c, "source.source.auth", Some(user_id), json!({"id": s.id}))
    })
}

/// How a source authenticates (`EcmAuth`): a cloud source would name where to sign in;
/// WebDAV and server directories have neither field.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EcmAuthView {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
}

/// `GET /rest/sources/{id}/auth`: the caller's own source only (403 `ERR_ACCESS_USER` for an
/// operator directory).
pub fn auth_info(ctx: &Ctx, user_id: &str, id: &str) -> Result<EcmAuthView> {
    own(ctx, user_id, id)?;
    Ok(EcmAuthView::default())
}

/// `GET /rest/sources/{id}/authStatus`: asks the remote whether the stored credentials still
/// work; refused: 403 `ERR_AUTH_EC_UPDATE_TOKEN` (and the source is marked so).
pub fn auth_status(ctx: &Ctx, user_id: &str, id: &str) -> Result<()> {
    let s = ctx.read(|c| super::source(c, ctx, user_id, id))?;
    let connector = super::connect(ctx, &s)?;
    connector.check().map_err(|e| super::remote(ctx, &s, e))
}

/// `GET /rest/sources/{id}/query`: a search of the sites of a document-management source.
/// Neither kind of source Coffer connects to (a WebDAV server, a server directory) has sites,
/// so a source the caller may use answers 403 `ERR_SITE_SEARCH`; one whose server refused the
/// stored credentials answers 403 `ERR_AUTH_EC_UPDATE_TOKEN` first, as every call on such a
/// source does, from the stored mark and without asking the server.
pub fn site_search(ctx: &Ctx, user_id: &str, id: &str) -> Result<std::convert::Infallible> {
    let s = ctx.read(|c| super::source(c, ctx, user_id, id))?;
    if let Named::User(src) = &s {
        if src.needs_auth {
            return Err(ApiError::new(ErrorCode::AuthEcUpdateToken).into());
        }
    }
    Err(ApiError::new(ErrorCode::SiteSearch)
        .with_message("This source has no sites to search.")
        .into())
}

/// `POST /rest/sources/auth`: the end of a cloud provider's sign-in. Coffer has no cloud
/// provider configured, so no sign-in is ever pending and every `state` is unknown.
pub fn complete_cloud_auth(_ctx: &Ctx, _user_id: &str, _state: &str) -> Result<()> {
    Err(invalid(
        "state",
        "No sign-in to an external source is pending with this state.",
    ))
}

/// `POST` and `DELETE /rest/users/me/pins`: pins or unpins sources the caller sees. Every id
/// must be one (else 422 `ERR_INVALID_PARAMETER`, nothing changed); pinning a pinned source
/// keeps its time, unpinning one that is not pinned is no change.
pub fn set_pins(ctx: &Ctx, user_id: &str, kind: &str, ids: &[String], on: bool) -> Result<()> {
    if kind != "source" {
        return Err(invalid("type", "Only sources are pinned: type is source."));
    }
    if ids.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "ids").into());
    }
    ctx.write(|c| {
        let mut named = Vec::with_capacity(ids.len());
        for id in ids {
            match super::source(c, ctx, user_id, id) {
                Ok(s) => named.push(s.id()),
                Err(Error::Api(_)) => {
                    return Err(invalid("ids", "Not a source the caller sees."));
                }
                Err(e) => return Err(e),
            }
        }
        let t = now();
        for id in &named {
            if on {
                coffer_store::sources::pin(c, user_id, id, t)?;
            } else {
                coffer_store::sources::unpin(c, user_id, id)?;
            }
        }
        Ok(())
    })
}

/// `cofferd secrets rotate`: re-seals every stored credential from `old` to `new` in one
/// transaction; one that does not open with `old` fails the whole rotation, nothing changed.
/// Answers how many were re-sealed.
pub fn rotate(ctx: &Ctx, old: &SecretKey, new: &SecretKey) -> Result<usize> {
    ctx.write(|c| {
        let all = coffer_store::sources::with_credentials(c)?;
        for s in &all {
            let Some(sealed) = &s.credentials else {
                continue;
            };
            let login = super::unseal(old, &s.id, sealed)?;
            coffer_store::sources::reseal(c, &s.id, &super::seal(new, &s.id, &login)?)?;
        }
        Ok(all.len())
    })
}
