//! Folders: the top level, one folder, its children, create, rename, trash and recover, move,
//! copy, tree and path.

use super::tree;
use super::views::{file_view, folder_view, FolderView, PathItem};
use super::{live, new_object, not_system, path_of, require, require_folder};
use crate::platform::events;
use crate::platform::views::Listed;
use crate::{now, Ctx, Result};
use coffer_domain::content::{self as rules, Access, Action};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::content::ChildQuery;
use coffer_store::models::Object;
use coffer_store::DbConn;
use serde_json::json;
use serde_json::value::RawValue;
use std::sync::Arc;

/// Renders objects of one folder (whose path from the caller's view is `parent_path`) as
/// folder and file records, with few queries whatever their number.
pub(crate) fn render(
    c: &mut DbConn,
    ctx: &Ctx,
    user_id: &str,
    objects: &[Object],
    parent_path: &[(String, String)],
    access: Option<Access>,
    with: &[String],
) -> Result<Vec<Box<RawValue>>> {
    // Listings carry the reference's default fields; these two only when asked.
    let path_ids = with.iter().any(|w| w == "pathIds");
    let role = with.iter().any(|w| w == "currentUserRole");
    let ids: Vec<String> = objects.iter().map(|o| o.id.clone()).collect();
    let shared = coffer_store::content::shared_among(c, &ids)?;
    let favorites = coffer_store::favorites::among(c, user_id, &ids)?;
    let version_ids: Vec<String> = objects
        .iter()
        .filter_map(|o| o.current_version_id.clone())
        .collect();
    let versions = coffer_store::content::versions_with_md5(c, &version_ids)?;
    let file_ids: Vec<String> = objects
        .iter()
        .filter(|o| !o.is_folder())
        .map(|o| o.id.clone())
        .collect();
    let counts = coffer_store::content::version_counts(c, &file_ids)?;
    let mut out = Vec::with_capacity(objects.len());
    for o in objects {
        let mut path = parent_path.to_vec();
        path.push((o.id.clone(), o.name.clone()));
        // The caller's role on a child is the one inherited, unless they own it.
        let a = if o.owner_id == user_id {
            Some(Access::Owner)
        } else {
            access
        };
        let v = if o.is_folder() {
            let mut v = folder_view(o, a, &path, shared.contains(&o.id), &ctx.config.base_url);
            v.is_favorite = favorites.contains(&o.id);
            if !path_ids {
                v.path_ids = None;
            }
            if !role {
                v.current_user_role = None;
            }
            serde_json::value::to_raw_value(&v)
        } else {
            let cur = o.current_version_id.as_ref().and_then(|v| versions.get(v));
            let mut v = file_view(
                o,
                cur.map(|(v, _)| v),
                cur.map(|(_, m)| m.as_str()).unwrap_or(""),
                counts.get(&o.id).copied().unwrap_or(0),
                a,
                &path,
                shared.contains(&o.id),
                &ctx.config.base_url,
            );
            v.is_favorite = favorites.contains(&o.id);
            if !path_ids {
                v.path_ids = None;
            }
            if !role {
                v.current_user_role = None;
            }
            serde_json::value::to_raw_value(&v)
        };
        out.push(v.map_err(Error::internal)?);
    }
    Ok(out)
}

/// One folder as the caller sees it, with its counts.
pub(crate) fn view(
    c: &mut DbConn,
    ctx: &Ctx,
    user_id: &str,
    o: &Object,
    a: Access,
) -> Result<FolderView> {
    let (path, _) = path_of(c, user_id, o)?;
    let members = coffer_store::content::member_count(c, &o.id)?;
    let mut v = folder_view(o, Some(a), &path, members > 0, &ctx.config.base_url);
    v.is_favorite = coffer_store::favorites::of(c, user_id, &o.id)?.is_some();
    let (folders, files) = coffer_store::content::child_counts(c, &o.id)?;
    v.total_folders_count = Some(folders);
    v.total_files_count = Some(files);
    v.total_members_count = Some(members);
    Ok(v)
}

/// `GET /rest/folders/top`: the caller's own top-level folders ("My Folder" and those they made
/// beside it) and the top-most folders others shared with them.
pub fn top(ctx: &Ctx, user_id: &str, q: &ChildQuery) -> Result<Listed<Box<RawValue>>> {
    ctx.read(|c| {
        let user = coffer_store::users::by_id(c, user_id)?.ok_or_else(super::not_found)?;
        let mut q = q.clone();
        q.hide_system = vec!["my".into()];
        // Own folders first, then shared ones; the page is cut from both.
        let own_q = ChildQuery {
            kind: Some("d".into()),
            offset: 0,
            limit: i64::MAX / 2,
            ..q.clone()
        };
        let own = coffer_store::content::children(c, &user.basedir_id, &own_q)?.items;
        let mut shared = Vec::new();
        if !q.deleted {
            for (m, o) in coffer_store::content::memberships(c, user_id)? {
                if o.owner_id == user_id || !o.is_folder() {
                    continue;
                }
                // Top-most: no membership of the caller further up.
                let above = match &o.parent_id {
                    Some(p) => coffer_store::content::nearest_membership(c, p, user_id)?,
                    None => None,
                };
                if above.is_none() {
                    if let Some(n) = &q.name_contains {
                        if !o.name_folded.contains(&n.to_lowercase()) {
                            continue;
                        }
                    }
                    shared.push((m.role_id, o));
                }
            }
            shared.sort_by(|a, b| a.1.name_folded.cmp(&b.1.name_folded));
        }
        let total = (own.len() + shared.len()) as i64;
        let mut items = render(c, ctx, user_id, &own, &[], Some(Access::Owner), &q.with)?;
        for (role, o) in &shared {
            items.extend(render(
                c,
                ctx,
                user_id,
                std::slice::from_ref(o),
                &[],
                Some(Access::Role(*role)),
                &q.with,
            )?);
        }
        let items = items
            .into_iter()
            .skip(q.offset.max(0) as usize)
            .take(q.limit.max(0) as usize)
            .collect();
        Ok(Listed {
            items,
            total,
            offset: q.offset,
            limit: q.limit,
        })
    })
}

pub fn get(ctx: &Ctx, user_id: &str, id: &str) -> Result<FolderView> {
    ctx.read(|c| {
        let (o, a) = require_folder(c, user_id, id, Action::List)?;
        // A folder in the trash is seen in its parent's listing with `deleted=true`.
        live(&o)?;
        view(c, ctx, user_id, &o, a)
    })
}

/// What a new folder or a folder update carries.
#[derive(Debug, Clone, Default)]
pub struct FolderInput {
    pub name: Option<String>,
    pub description: Option<String>,
    /// Unix time; `Some(None)` clears it.
    pub expire: Option<Option<i64>>,
    pub syncable: Option<bool>,
    pub secure: Option<bool>,
    pub file_lifetime: Option<i64>,
    /// Pick a free name (`name (1)`) when the name is taken.
    pub rename: bool,
}

pub fn create(
    ctx: &Ctx,
    user_id: &str,
    parent_id: &str,
    input: &FolderInput,
) -> Result<FolderView> {
    let name = input
        .name
        .clone()
        .ok_or_else(|| Error::from(ApiError::field(ErrorCode::InputRequired, "name")))?;
    rules::validate_name(&name)?;
    ctx.write(|c| {
        let (parent, a) = require_folder(c, user_id, parent_id, Action::CreateFolder)?;
        live(&parent)?;
        if parent.system.as_deref() == Some("my") {
            return Err(ApiError::new(ErrorCode::EntityIsMyDir).into());
        }
        let name = super::free_name(c, &parent.id, &name, input.rename)?;
        let mut o = new_object(&parent, "d", &name, user_id);
        if let Some(d) = &input.description {
            o.description = d.clone();
        }
        if let Some(e) = input.expire {
            o.expire_at = e;
        }
        o.syncable = input.syncable.unwrap_or(false);
        o.secure = input.secure.unwrap_or(false);
        o.file_lifetime = input.file_lifetime.unwrap_or(0);
        coffer_store::content::insert_object(c, &o).map_err(super::name_conflict)?;
        coffer_store::content::touch(c, &parent.id, o.created_at)?;
        events::record(
            c,
            "filesystem.folder.create",
            Some(user_id),
            json!({"id": o.id, "parentId": parent.id, "name": o.name, "ownerId": o.owner_id}),
        )?;
        let a = if o.owner_id == user_id {
            Access::Owner
        } else {
            a
        };
        view(c, ctx, user_id, &o, a)
    })
}

/// The children of a folder, or only its files (`kind`), as the caller may see them.
/// Served from the node's [`ListingCache`](super::listings::ListingCache) while the owner's
/// content generation stays where it was when the page was rendered.
pub fn children(
    ctx: &Ctx,
    user_id: &str,
    id: &str,
    q: &ChildQuery,
) -> Result<Arc<super::listings::Page>> {
    ctx.read(|c| {
        let (o, a) = require_folder(c, user_id, id, Action::List)?;
        if o.deleted_at.is_some() && !q.deleted {
            return Err(ApiError::new(ErrorCode::EntityDeleted).into());
        }
        let mut q = q.clone();
        q.hide_system = vec!["my".into()];
        if a == Access::Role(super::UPLOADER) {
            q.files_of = Some(user_id.to_string());
        }
        // Read before rendering: a change racing the render moves it on, so what is stored
        // under it is never served.
        let (_, generation) = coffer_store::content::account(c, &o.owner_id)?;
        let key = super::listings::Key::new(&o.id, user_id, a, &q);
        if let Some(page) = ctx.listings.get(&key, generation) {
            return Ok(page);
        }
        let page = coffer_store::content::children(c, &o.id, &q)?;
        let (path, _) = path_of(c, user_id, &o)?;
        let parent_path: Vec<(String, String)> = if o.system.as_deref() == Some("base") {
            Vec::new()
        } else {
            path
        };
        let items = render(c, ctx, user_id, &page.items, &parent_path, Some(a), &q.with)?;
        let page = Arc::new(super::listings::Page::new(Listed {
            items,
            total: page.total,
            offset: q.offset,
            limit: q.limit,
        }));
        ctx.listings.put(key, generation, page.clone());
        Ok(page)
    })
}

pub fn update(ctx: &Ctx, user_id: &str, id: &str, input: &FolderInput) -> Result<FolderView> {
    if let Some(n) = &input.name {
        rules::validate_name(n)?;
    }
    ctx.write(|c| {
        let (o, a) = require_folder(c, user_id, id, Action::Rename)?;
        live(&o)?;
        not_system(&o)?;
        let name = input.name.clone().unwrap_or_else(|| o.name.clone());
        let folded = rules::fold_name(&name);
        if folded != o.name_folded {
            if let Some(p) = &o.parent_id {
                if coffer_store::content::live_child(c, p, &folded)?.is_some() {
                    return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
                }
            }
        }
        let description = input
            .description
            .clone()
            .unwrap_or_else(|| o.description.clone());
        let expire = input.expire.unwrap_or(o.expire_at);
        let t = now();
        let update = coffer_store::content::ObjectUpdate {
            name: &name,
            folded: &folded,
            description: &description,
            expire_at: expire,
            modifier: user_id,
        };
        coffer_store::content::update_object(c, &o.id, &update, t).map_err(super::name_conflict)?;
        events::record(
            c,
            "filesystem.folder.update",
            Some(user_id),
            json!({"id": o.id, "name": name, "previousName": o.name, "ownerId": o.owner_id}),
        )?;
        let o = coffer_store::content::object(c, &o.id)?.ok_or_else(super::not_found)?;
        view(c, ctx, user_id, &o, a)
    })
}

/// Moves a folder and everything in it to the trash.
pub fn delete(ctx: &Ctx, user_id: &str, id: &str) -> Result<()> {
    ctx.write(|c| {
        let (o, _) = require_folder(c, user_id, id, Action::Delete)?;
        not_system(&o)?;
        live(&o)?;
        let ids = coffer_store::content::subtree_ids(c, &o.id)?;
        let t = now();
        coffer_store::content::trash(c, &ids, &o.id, t)?;
        events::record(
            c,
            "filesystem.folder.delete",
            Some(user_id),
            json!({"id": o.id, "parentId": o.parent_id, "name": o.name, "objects": ids.len(), "ownerId": o.owner_id}),
        )
    })
}

/// Brings an object back from the trash with everything its deletion took. Its parent must be
/// live, and its name free there (409 otherwise).
pub fn recover(ctx: &Ctx, user_id: &str, id: &str) -> Result<()> {
    ctx.write(|c| {
        let (o, _) = require(c, user_id, id, Action::Recover)?;
        if o.deleted_at.is_none() {
            return Ok(());
        }
        if o.trashed_with.as_deref() != Some(o.id.as_str()) {
            // Taken with a folder above: recover that folder instead.
            return Err(ApiError::new(ErrorCode::EntityDeleted)
                .with_message("The entity was deleted with its folder; recover the folder.")
                .into());
        }
        if let Some(p) = &o.parent_id {
            let parent = coffer_store::content::object(c, p)?.ok_or_else(super::not_found)?;
            live(&parent)?;
            if coffer_store::content::live_child(c, p, &o.name_folded)?.is_some() {
                return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
            }
        }
        coffer_store::content::recover(c, &o.id).map_err(super::name_conflict)?;
        let subject = if o.is_folder() {
            "filesystem.folder.recover"
        } else {
            "filesystem.file.recover"
        };
        events::record(
            c,
            subject,
            Some(user_id),
            json!({"id": o.id, "name": o.name, "ownerId": o.owner_id}),
        )
    })
}

/// Moves a folder (and what it holds) into another folder. Into another owner's tree the folder
/// changes owner, and their quota must hold it (413).
pub fn move_to(ctx: &Ctx, user_id: &str, id: &str, dest_id: &str) -> Result<FolderView> {
    ctx.write(|c| {
        let (o, _) = require_folder(c, user_id, id, Action::MoveOut)?;
        live(&o)?;
        not_system(&o)?;
        let (dest, da) = tree::check_destination(c, user_id, &o, dest_id)?;
        tree::move_object(c, user_id, &o, &dest)?;
        events::record(
            c,
            "filesystem.folder.move",
            Some(user_id),
            json!({"id": o.id, "from": o.parent_id, "to": dest.id, "ownerId": dest.owner_id}),
        )?;
        let moved = coffer_store::content::object(c, &o.id)?.ok_or_else(super::not_found)?;
        let a = if moved.owner_id == user_id {
            Access::Owner
        } else {
            da
        };
        view(c, ctx, user_id, &moved, a)
    })
}

/// Copies a folder and its live content into another folder: new objects whose current versions
/// share the blobs of the originals (no bytes are copied). Charged to the destination's owner.
pub fn copy_to(ctx: &Ctx, user_id: &str, id: &str, dest_id: &str) -> Result<FolderView> {
    ctx.write(|c| {
        let (o, _) = require_folder(c, user_id, id, Action::Copy)?;
        live(&o)?;
        not_system(&o)?;
        let (dest, da) = tree::check_destination(c, user_id, &o, dest_id)?;
        let objs = coffer_store::content::live_subtree(c, &o.id)?;
        let bytes: i64 = objs.iter().filter(|x| !x.is_folder()).map(|x| x.size).sum();
        let (allowed, used) = super::quota(c, &dest.owner_id)?;
        if used + bytes > allowed {
            return Err(ApiError::new(ErrorCode::SystemNoStorageAvailable).into());
        }
        let name = super::free_name(c, &dest.id, &o.name, true)?;
        let mut ids: std::collections::HashMap<String, String> = std::collections::HashMap::new();
        let t = now();
        let mut root = None;
        for src in &objs {
            let parent_row = match src.parent_id.as_ref().and_then(|p| ids.get(p)) {
                Some(p) => coffer_store::content::object(c, p)?.ok_or_else(super::not_found)?,
                None => dest.clone(),
            };
            let n = if src.id == o.id {
                name.as_str()
            } else {
                src.name.as_str()
            };
            let mut copy = new_object(&parent_row, &src.kind, n, user_id);
            copy.description = src.description.clone();
            coffer_store::content::insert_object(c, &copy).map_err(super::name_conflict)?;
            if !src.is_folder() {
                tree::copy_current_version(c, src, &copy, user_id, t)?;
            }
            ids.insert(src.id.clone(), copy.id.clone());
            if src.id == o.id {
                root = Some(copy.id.clone());
            }
        }
        let root = root.ok_or_else(super::not_found)?;
        events::record(
            c,
            "filesystem.folder.copy",
            Some(user_id),
            json!({"id": root, "sourceId": o.id, "to": dest.id, "ownerId": dest.owner_id}),
        )?;
        let copied = coffer_store::content::object(c, &root)?.ok_or_else(super::not_found)?;
        let a = if copied.owner_id == user_id {
            Access::Owner
        } else {
            da
        };
        view(c, ctx, user_id, &copied, a)
    })
}

/// `GET /rest/folders/{id}/tree`: the folder's ancestor path as the caller sees it, from the
/// top-most folder they reach down to the folder itself ([`path_of`]: an owner's path starts
/// at "My Folder", a member's at the folder they were given). With `include_root`, an owner's
/// path starts one step higher, at the root of their tree (the never-listed base folder). The
/// root folder's own path is itself.
pub fn tree(ctx: &Ctx, user_id: &str, id: &str, include_root: bool) -> Result<Vec<PathItem>> {
    ctx.read(|c| {
        let (o, _) = require_folder(c, user_id, id, Action::List)?;
        let item = |(id, name): (String, String)| PathItem { id, name };
        if o.system.as_deref() == Some("base") {
            return Ok(vec![item((o.id, o.name))]);
        }
        let (path, own) = path_of(c, user_id, &o)?;
        let mut out = Vec::with_capacity(path.len() + 1);
        if include_root && own {
            let chain = coffer_store::content::ancestors(c, &o.id)?;
            if let Some(root) = chain
                .into_iter()
                .find(|a| a.system.as_deref() == Some("base"))
            {
                out.push(item((root.id, root.name)));
            }
        }
        out.extend(path.into_iter().map(item));
        Ok(out)
    })
}
