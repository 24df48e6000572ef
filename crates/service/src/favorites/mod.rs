//! Favorites: the folders and files a user marks (`/rest/favorites`, the bulk
//! `/rest/folders/actions/favorite`), and the records that show them.
//!
//! A favorite names an object by its id. The object's permissions stay the content core's
//! (`content::require`): a favorite of an object the user can no longer see (it is in the trash,
//! or it is no longer shared with them) stays stored and is left out of every read, and it
//! shows again when the object does; a permanently deleted object takes its favorites with it
//! (a trigger of migration 000040). An object out of the caller's reach answers 404 exactly as
//! one that does not exist.

use crate::content::{self, files, folders};
use crate::platform::events;
use crate::platform::views::{Link, Listed};
use crate::{now, Ctx, Result};
use coffer_domain::content::Action;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{Favorite, Object};
use coffer_store::DbConn;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

/// The user who made a favorite (`UserBasicInfo`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Creator {
    pub id: String,
    pub name: String,
    pub email: String,
    /// Coffer keeps no profile pictures: always empty.
    pub profile_icon: String,
}

/// A favorite (`Favorite`; in lists `FavoriteOpenAPI2`, with its object).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FavoriteView {
    pub id: i64,
    /// The folder or file.
    pub object_id: String,
    /// The user whose favorite it is.
    pub user_id: String,
    /// With `with=creator`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creator: Option<Creator>,
    /// The folder or file record as the user sees it: always in lists, on single records with
    /// `with=object`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub object: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

/// What a record carries beyond its ids.
#[derive(Debug, Clone, Copy, Default)]
pub struct Detail {
    pub object: bool,
    pub creator: bool,
}

/// The order of a list: the object's name, creation or modification time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    Name,
    #[default]
    Created,
    Modified,
}

/// `GET /rest/favorites`: which favorites, in which order.
#[derive(Debug, Clone, Default)]
pub struct FavoriteQuery {
    /// Only favorites whose object is in one of these folders (`parentId`, `parentId:in`).
    pub parent_ids: Option<Vec<String>>,
    pub order: Order,
    pub descending: bool,
    pub offset: i64,
    pub limit: i64,
    pub creator: bool,
}

/// What a bulk change came to: the favorites it made (none when removing) and the ids that
/// failed (only with `partialSuccess`; without it the first failure fails the call).
#[derive(Debug, Clone, Default)]
pub struct Bulk {
    pub done: Vec<FavoriteView>,
    pub failed: Vec<String>,
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// The object of a favorite if the user may see it now, with the content core's rules.
fn visible(c: &mut DbConn, user_id: &str, object_id: &str) -> Result<Option<Object>> {
    match content::require(c, user_id, object_id, Action::List) {
        Ok((o, _)) if o.deleted_at.is_none() && !o.perm_deleted => Ok(Some(o)),
        Ok(_) | Err(Error::Api(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn render(
    c: &mut DbConn,
    ctx: &Ctx,
    f: &Favorite,
    o: Option<&Object>,
    detail: Detail,
) -> Result<FavoriteView> {
    let object = match o.filter(|_| detail.object) {
        Some(o) => {
            let (o, a) = content::require(c, &f.user_id, &o.id, Action::List)?;
            let v = if o.is_folder() {
                serde_json::to_value(folders::view(c, ctx, &f.user_id, &o, a)?)
            } else {
                serde_json::to_value(files::view(c, ctx, &f.user_id, &o, a)?)
            };
            Some(v.map_err(Error::internal)?)
        }
        None => None,
    };
    let creator = if detail.creator {
        coffer_store::users::by_id(c, &f.user_id)?.map(|u| Creator {
            id: u.id,
            name: u.name,
            email: u.email,
            profile_icon: String::new(),
        })
    } else {
        None
    };
    Ok(FavoriteView {
        id: f.id,
        object_id: f.object_id.clone(),
        user_id: f.user_id.clone(),
        creator,
        object,
        links: None,
    })
}

/// Why an object cannot become the user's favorite: out of reach or unknown (404), in the trash
/// (403 `ERR_ENTITY_DELETED`), the hidden root or system folder (403), or one already (409).
fn check_new(c: &mut DbConn, user_id: &str, id: &str, folders_only: bool) -> Result<Object> {
    let (o, _) = content::require(c, user_id, id, Action::List)?;
    if folders_only && !o.is_folder() {
        return Err(ApiError::field(ErrorCode::InvalidParameter, "id:in")
            .with_message(
                "Only folders are marked here; a file is marked with POST /rest/favorites.",
            )
            .into());
    }
    content::live(&o)?;
    if matches!(o.system.as_deref(), Some("base" | "my")) {
        content::not_system(&o)?;
    }
    if coffer_store::favorites::of(c, user_id, &o.id)?.is_some() {
        return Err(ApiError::field(ErrorCode::EntityExists, "objectId").into());
    }
    Ok(o)
}

fn add_one(c: &mut DbConn, user_id: &str, o: &Object) -> Result<Favorite> {
    let f = coffer_store::favorites::insert(c, user_id, &o.id, now())?
        .ok_or_else(|| ApiError::field(ErrorCode::EntityExists, "objectId"))?;
    events::record(
        c,
        "favorite.favorite.create",
        Some(user_id),
        json!({"id": f.id, "objectId": f.object_id, "userId": f.user_id}),
    )?;
    Ok(f)
}

fn remove_one(c: &mut DbConn, f: &Favorite) -> Result<()> {
    coffer_store::favorites::delete(c, f.id)?;
    events::record(
        c,
        "favorite.favorite.delete",
        Some(&f.user_id),
        json!({"id": f.id, "objectId": f.object_id, "userId": f.user_id}),
    )?;
    Ok(())
}

/// `POST /rest/favorites`: marks a folder or file the caller sees.
pub fn add(ctx: &Ctx, user_id: &str, object_id: &str, detail: Detail) -> Result<FavoriteView> {
    ctx.write(|c| {
        let o = check_new(c, user_id, object_id, false)?;
        let f = add_one(c, user_id, &o)?;
        render(c, ctx, &f, Some(&o), detail)
    })
}

/// `DELETE /rest/favorites/{id}`: the caller's own favorite only; another's answers 404 as if it
/// did not exist.
pub fn remove(ctx: &Ctx, user_id: &str, id: i64) -> Result<()> {
    ctx.write(|c| {
        let f = coffer_store::favorites::by_id(c, id)?
            .filter(|f| f.user_id == user_id)
            .ok_or_else(not_found)?;
        remove_one(c, &f)
    })
}

/// Runs `each` for every id; collects the ids that fail. Without `partial` the first failure
/// fails the call, naming every id that would have failed, and nothing is changed.
fn bulk<T>(
    c: &mut DbConn,
    ids: &[String],
    partial: bool,
    mut check: impl FnMut(&mut DbConn, &str) -> Result<T>,
) -> Result<(Vec<T>, Vec<String>)> {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    let mut first: Option<ApiError> = None;
    for id in ids {
        match check(c, id) {
            Ok(t) => ok.push(t),
            Err(Error::Api(a)) => {
                failed.push(id.clone());
                first.get_or_insert(a);
            }
            Err(e) => return Err(e),
        }
    }
    match first {
        Some(a) if !partial => Err(a.with_failed_ids(failed).into()),
        _ => Ok((ok, failed)),
    }
}

fn unique(ids: &[String]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    ids.iter().filter(|i| seen.insert(*i)).cloned().collect()
}

/// `POST /rest/folders/actions/favorite`: marks many folders.
pub fn mark_folders(ctx: &Ctx, user_id: &str, ids: &[String], partial: bool) -> Result<Bulk> {
    let ids = unique(ids);
    ctx.write(|c| {
        let (objects, failed) = bulk(c, &ids, partial, |c, id| check_new(c, user_id, id, true))?;
        let mut done = Vec::with_capacity(objects.len());
        for o in &objects {
            let f = add_one(c, user_id, o)?;
            done.push(render(c, ctx, &f, Some(o), Detail::default())?);
        }
        Ok(Bulk { done, failed })
    })
}

/// `DELETE /rest/folders/actions/favorite`: unmarks many folders; a folder the caller does not
/// see, or that is not their favorite, answers 404.
pub fn unmark_folders(ctx: &Ctx, user_id: &str, ids: &[String], partial: bool) -> Result<Bulk> {
    let ids = unique(ids);
    ctx.write(|c| {
        let (favorites, failed) = bulk(c, &ids, partial, |c, id| {
            let (o, _) = content::require_folder(c, user_id, id, Action::List)?;
            coffer_store::favorites::of(c, user_id, &o.id)?.ok_or_else(not_found)
        })?;
        for f in &favorites {
            remove_one(c, f)?;
        }
        Ok(Bulk {
            done: Vec::new(),
            failed,
        })
    })
}

/// `GET /rest/favorites`: the caller's favorites whose objects they see now, each with its
/// object.
pub fn list(ctx: &Ctx, user_id: &str, q: &FavoriteQuery) -> Result<Listed<FavoriteView>> {
    ctx.read(|c| {
        let mut rows = Vec::new();
        for (f, o) in coffer_store::favorites::live_of(c, user_id)? {
            if let Some(parents) = &q.parent_ids {
                if !o.parent_id.as_ref().is_some_and(|p| parents.contains(p)) {
                    continue;
                }
            }
            if let Some(o) = visible(c, user_id, &o.id)? {
                rows.push((f, o));
            }
        }
        rows.sort_by(|(fa, a), (fb, b)| {
            let by = match q.order {
                Order::Name => a.name_folded.cmp(&b.name_folded),
                Order::Created => a.created_at.cmp(&b.created_at),
                Order::Modified => a.modified_at.cmp(&b.modified_at),
            };
            let by = if q.descending { by.reverse() } else { by };
            by.then(fa.id.cmp(&fb.id))
        });
        let total = rows.len() as i64;
        let detail = Detail {
            object: true,
            creator: q.creator,
        };
        let mut items = Vec::new();
        for (f, o) in rows
            .iter()
            .skip(q.offset.max(0) as usize)
            .take(q.limit.max(0) as usize)
        {
            items.push(render(c, ctx, f, Some(o), detail)?);
        }
        Ok(Listed {
            items,
            total,
            offset: q.offset,
            limit: q.limit,
        })
    })
}
