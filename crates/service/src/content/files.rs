//! Files: one file, rename, trash, versions, downloads, move, copy, path, and the step every
//! upload ends with ([`commit`]): the stored bytes become a new file or a new version.

use super::tree;
use super::views::{file_view, FileView, VersionView};
use super::{live, new_object, path_of, paths_of, require_file, require_folder, Limits};
use crate::platform::events;
use crate::platform::views::Listed;
use crate::{now, Ctx, Result};
use coffer_domain::content::{self as rules, Access, Action};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{FileVersion, Object};
use coffer_store::DbConn;
use serde_json::json;

/// One file as the caller sees it.
pub(crate) fn view(
    c: &mut DbConn,
    ctx: &Ctx,
    user_id: &str,
    o: &Object,
    a: Access,
) -> Result<FileView> {
    let mut v = views(c, ctx, user_id, std::slice::from_ref(o), &[a])?;
    v.pop()
        .ok_or_else(|| Error::internal("no view of the file"))
}

/// Files as the caller sees them (`access[i]` is the caller's on `files[i]`), in order: the
/// versions, counts, shares and favorites of all of them read at once, so that a page of search
/// hits costs a few statements and a path each, not a handful of statements per file.
pub(crate) fn views(
    c: &mut DbConn,
    ctx: &Ctx,
    user_id: &str,
    files: &[Object],
    access: &[Access],
) -> Result<Vec<FileView>> {
    let ids: Vec<String> = files.iter().map(|o| o.id.clone()).collect();
    let vids: Vec<String> = files
        .iter()
        .filter_map(|o| o.current_version_id.clone())
        .collect();
    let versions = coffer_store::content::versions_with_md5(c, &vids)?;
    let counts = coffer_store::content::version_counts(c, &ids)?;
    let shared = coffer_store::content::shared_among(c, &ids)?;
    let favorites = coffer_store::favorites::among(c, user_id, &ids)?;
    let paths = paths_of(c, user_id, files)?;
    let mut out = Vec::with_capacity(files.len());
    for ((o, a), path) in files.iter().zip(access).zip(paths) {
        let cur = o.current_version_id.as_ref().and_then(|v| versions.get(v));
        let mut v = file_view(
            o,
            cur.map(|(v, _)| v),
            cur.map(|(_, m)| m.as_str()).unwrap_or(""),
            counts.get(&o.id).copied().unwrap_or(0),
            Some(*a),
            &path,
            shared.contains(&o.id),
            &ctx.config.base_url,
        );
        v.is_favorite = favorites.contains(&o.id);
        out.push(v);
    }
    Ok(out)
}

pub fn get(ctx: &Ctx, user_id: &str, id: &str) -> Result<FileView> {
    ctx.read(|c| {
        let (o, a) = require_file(c, user_id, id, Action::List)?;
        // A file in the trash is seen in its folder's listing with `deleted=true`.
        live(&o)?;
        view(c, ctx, user_id, &o, a)
    })
}

/// Renames a file or changes its expiry.
pub fn update(
    ctx: &Ctx,
    user_id: &str,
    id: &str,
    name: Option<&str>,
    expire: Option<Option<i64>>,
) -> Result<FileView> {
    if let Some(n) = name {
        rules::validate_name(n)?;
    }
    ctx.write(|c| {
        let (o, a) = require_file(c, user_id, id, Action::Rename)?;
        live(&o)?;
        let name = name.map(str::to_string).unwrap_or_else(|| o.name.clone());
        let folded = rules::fold_name(&name);
        if folded != o.name_folded {
            if let Some(p) = &o.parent_id {
                if coffer_store::content::live_child(c, p, &folded)?.is_some() {
                    return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
                }
            }
        }
        let expire = expire.unwrap_or(o.expire_at);
        let update = coffer_store::content::ObjectUpdate {
            name: &name,
            folded: &folded,
            description: &o.description,
            expire_at: expire,
            modifier: user_id,
        };
        coffer_store::content::update_object(c, &o.id, &update, now())
            .map_err(super::name_conflict)?;
        events::record(
            c,
            "filesystem.file.update",
            Some(user_id),
            json!({"id": o.id, "name": name, "previousName": o.name, "ownerId": o.owner_id}),
        )?;
        let o = coffer_store::content::object(c, &o.id)?.ok_or_else(super::not_found)?;
        view(c, ctx, user_id, &o, a)
    })
}

/// Moves a file to the trash.
pub fn delete(ctx: &Ctx, user_id: &str, id: &str) -> Result<()> {
    ctx.write(|c| {
        let (o, _) = require_file(c, user_id, id, Action::Delete)?;
        live(&o)?;
        coffer_store::content::trash(c, std::slice::from_ref(&o.id), &o.id, now())?;
        events::record(
            c,
            "filesystem.file.delete",
            Some(user_id),
            json!({"id": o.id, "parentId": o.parent_id, "name": o.name, "ownerId": o.owner_id}),
        )
    })
}

pub fn versions(
    ctx: &Ctx,
    user_id: &str,
    id: &str,
    newest_first: bool,
    offset: i64,
    limit: i64,
) -> Result<Listed<VersionView>> {
    ctx.read(|c| {
        let (o, _) = require_file(c, user_id, id, Action::List)?;
        let page = coffer_store::content::versions(c, &o.id, newest_first, offset, limit)?;
        let ids: Vec<String> = page.items.iter().map(|v| v.id.clone()).collect();
        let md5 = coffer_store::content::versions_with_md5(c, &ids)?;
        Ok(Listed {
            items: page
                .items
                .iter()
                .map(|v| VersionView::of(v, md5.get(&v.id).map(|(_, m)| m.as_str()).unwrap_or("")))
                .collect(),
            total: page.total,
            offset,
            limit,
        })
    })
}

fn version_of(c: &mut DbConn, file: &Object, version_id: &str) -> Result<FileVersion> {
    coffer_store::content::version(c, version_id)?
        .filter(|v| v.file_id == file.id && !v.deleted)
        .ok_or_else(super::not_found)
}

pub fn version(ctx: &Ctx, user_id: &str, id: &str, version_id: &str) -> Result<VersionView> {
    ctx.read(|c| {
        let (o, _) = require_file(c, user_id, id, Action::List)?;
        let v = version_of(c, &o, version_id)?;
        let md5 = coffer_store::content::blob(c, &v.blob_id)?
            .map(|b| b.md5)
            .unwrap_or_default();
        Ok(VersionView::of(&v, &md5))
    })
}

/// What a download serves.
#[derive(Debug, Clone)]
pub struct Download {
    pub file_id: String,
    pub version_id: String,
    pub name: String,
    pub mime: String,
    pub size: i64,
    /// The blob key (the content's SHA3-256).
    pub blob: String,
    /// The owner of the file's tree (for the download event).
    pub owner_id: String,
    /// A preview of the version (not its content): served in place, not recorded as a
    /// download.
    pub preview: bool,
}

/// Refuses content that is being scanned (403 `ERR_ENTITY_NOT_SCANNED`) or was found infected
/// (403 `ERR_ENTITY_VIRUS_FOUND`).
pub fn scanned(v: &FileVersion) -> Result<()> {
    match v.av_status.as_str() {
        "allowed" => Ok(()),
        "scanning" => Err(ApiError::new(ErrorCode::EntityNotScanned).into()),
        _ => Err(ApiError::new(ErrorCode::EntityVirusFound).into()),
    }
}

/// Decides a download of a file's current version, or of one of its versions.
pub fn download(ctx: &Ctx, user_id: &str, id: &str, version_id: Option<&str>) -> Result<Download> {
    let decided = decide_download(ctx, user_id, id, version_id);
    if let Err(Error::Api(e)) = &decided {
        if e.code == ErrorCode::EntityVirusFound {
            // A download refused for a virus is of interest to the activity log.
            let data = json!({"id": id, "versionId": version_id, "reason": "virus"});
            crate::audit::record::refused(ctx, "filesystem.file.download", Some(user_id), &data)?;
        }
    }
    decided
}

fn decide_download(
    ctx: &Ctx,
    user_id: &str,
    id: &str,
    version_id: Option<&str>,
) -> Result<Download> {
    ctx.read(|c| {
        let (o, _) = require_file(c, user_id, id, Action::Download)?;
        live(&o)?;
        let vid = match version_id {
            Some(v) => v.to_string(),
            None => o.current_version_id.clone().ok_or_else(super::not_found)?,
        };
        let v = version_of(c, &o, &vid)?;
        scanned(&v)?;
        Ok(Download {
            file_id: o.id.clone(),
            version_id: v.id.clone(),
            name: if version_id.is_some() {
                v.name.clone()
            } else {
                o.name.clone()
            },
            mime: v.mime.clone(),
            size: v.size,
            blob: v.blob_id.clone(),
            owner_id: o.owner_id.clone(),
            preview: false,
        })
    })
}

/// Opens a download's bytes, whole or the inclusive range `span`.
pub async fn read(ctx: &Ctx, d: &Download, span: Option<(u64, u64)>) -> Result<super::BlobRead> {
    let key =
        coffer_storage::BlobKey::parse(&d.blob).map_err(|e| Error::internal_in("blob key", e))?;
    ctx.storage
        .get(&key, span)
        .await
        .map_err(super::storage_error)
}

/// Records that a download was served (`filesystem.file.download`).
pub async fn record_download(ctx: &Ctx, user_id: &str, d: &Download, partial: bool) -> Result<()> {
    let actor = user_id.to_string();
    let data = json!({"id": d.file_id, "versionId": d.version_id, "partial": partial, "ownerId": d.owner_id});
    ctx.write_owned(move |c| events::record(c, "filesystem.file.download", Some(&actor), data))
        .await
}

/// Moves files into a folder; each must be movable, else nothing moves.
pub fn move_files(
    ctx: &Ctx,
    user_id: &str,
    ids: &[String],
    dest_id: &str,
) -> Result<Vec<FileView>> {
    ctx.write(|c| {
        let mut out = Vec::new();
        for id in ids {
            let (o, _) = require_file(c, user_id, id, Action::MoveOut)?;
            live(&o)?;
            let (dest, da) = tree::check_destination(c, user_id, &o, dest_id)?;
            tree::move_object(c, user_id, &o, &dest)?;
            events::record(
                c,
                "filesystem.file.move",
                Some(user_id),
                json!({"id": o.id, "from": o.parent_id, "to": dest.id, "ownerId": dest.owner_id}),
            )?;
            let moved = coffer_store::content::object(c, &o.id)?.ok_or_else(super::not_found)?;
            let a = if moved.owner_id == user_id {
                Access::Owner
            } else {
                da
            };
            out.push(view(c, ctx, user_id, &moved, a)?);
        }
        Ok(out)
    })
}

/// Copies files into a folder (their current versions, sharing the blobs).
pub fn copy_files(
    ctx: &Ctx,
    user_id: &str,
    ids: &[String],
    dest_id: &str,
) -> Result<Vec<FileView>> {
    ctx.write(|c| {
        let mut out = Vec::new();
        for id in ids {
            let (o, _) = require_file(c, user_id, id, Action::Copy)?;
            live(&o)?;
            let (dest, da) = tree::check_destination(c, user_id, &o, dest_id)?;
            let (allowed, used) = super::quota(c, &dest.owner_id)?;
            if used + o.size > allowed {
                return Err(ApiError::new(ErrorCode::SystemNoStorageAvailable).into());
            }
            let name = super::free_name(c, &dest.id, &o.name, true)?;
            let copy = new_object(&dest, "f", &name, user_id);
            coffer_store::content::insert_object(c, &copy).map_err(super::name_conflict)?;
            let t = now();
            tree::copy_current_version(c, &o, &copy, user_id, t)?;
            coffer_store::content::touch(c, &dest.id, t)?;
            events::record(
                c,
                "filesystem.file.copy",
                Some(user_id),
                json!({"id": copy.id, "sourceId": o.id, "to": dest.id, "ownerId": dest.owner_id}),
            )?;
            let copied =
                coffer_store::content::object(c, &copy.id)?.ok_or_else(super::not_found)?;
            let a = if copied.owner_id == user_id {
                Access::Owner
            } else {
                da
            };
            out.push(view(c, ctx, user_id, &copied, a)?);
        }
        Ok(out)
    })
}

/// What a finished upload brings: the stored blob and what the client said of the file.
#[derive(Debug, Clone)]
pub struct Stored {
    pub blob: String,
    pub size: i64,
    pub md5: String,
    pub client_created: Option<i64>,
    pub client_modified: Option<i64>,
}

/// Where stored bytes go.
#[derive(Debug, Clone)]
pub enum Target {
    /// A file of this name in this folder: a new file, or a new version of the file of that
    /// name (unless `disable_auto_version`, then 409).
    Folder {
        folder_id: String,
        name: String,
        disable_auto_version: bool,
    },
    /// A new version of this file.
    File { file_id: String },
}

/// Checks, before any byte is stored, that the caller may put `size` bytes (when known) at
/// `target`: the permission, a live folder that holds files, the name, `maxUploadSize` (422
/// `ERR_LICENSE_MAX_UPLOAD_SIZE`) and the owner's quota (413 `ERR_SYSTEM_NO_STORAGE_AVAILABLE`).
/// Returns how many bytes may still arrive.
pub fn check_target(
    c: &mut DbConn,
    user_id: &str,
    target: &Target,
    size: Option<i64>,
) -> Result<(i64, Limits)> {
    let owner = may_put(c, user_id, target)?;
    let limits = super::limits(c)?;
    let (allowed, used) = super::quota(c, &owner)?;
    let room = (allowed - used).max(0);
    if let Some(s) = size {
        if s > limits.max_upload_size {
            return Err(ApiError::field(ErrorCode::LicenseMaxUploadSize, "totalSize").into());
        }
        if s > room {
            return Err(ApiError::new(ErrorCode::SystemNoStorageAvailable).into());
        }
    }
    Ok((room.min(limits.max_upload_size), limits))
}

/// Whether the caller may put a file at `target` (permission, a live folder that holds files,
/// the name); answers the owner who pays for it.
fn may_put(c: &mut DbConn, user_id: &str, target: &Target) -> Result<String> {
    Ok(match target {
        Target::Folder {
            folder_id,
            name,
            disable_auto_version,
        } => {
            rules::validate_name(name)?;
            let (f, _) = require_folder(c, user_id, folder_id, Action::Upload)?;
            live(&f)?;
            if f.system.as_deref() == Some("base") {
                return Err(ApiError::new(ErrorCode::EntityIsBaseDir).into());
            }
            if let Some(existing) =
                coffer_store::content::live_child(c, &f.id, &rules::fold_name(name))?
            {
                if existing.is_folder() || *disable_auto_version {
                    return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
                }
            }
            f.owner_id
        }
        Target::File { file_id } => {
            let (o, _) = require_file(c, user_id, file_id, Action::Upload)?;
            live(&o)?;
            o.owner_id
        }
    })
}

/// Turns stored bytes into a file or a new version, atomically: readers see the old current
/// version or the new one. Re-checks the permission and the name, and the quota with the size
/// now known, since the bytes took
/// time to arrive. Returns the file.
pub fn commit(
    c: &mut DbConn,
    ctx: &Ctx,
    user_id: &str,
    target: &Target,
    stored: &Stored,
) -> Result<Object> {
    commit_by(c, ctx, user_id, Some(user_id), target, stored)
}

/// [`commit`] on behalf of someone else: `user_id` is the account whose permission and quota
/// take the file, `actor` the one the events name as having sent it (`None`: someone without an
/// account, such as the outside recipient of a request-file link).
pub fn commit_by(
    c: &mut DbConn,
    ctx: &Ctx,
    user_id: &str,
    actor: Option<&str>,
    target: &Target,
    stored: &Stored,
) -> Result<Object> {
    may_put(c, user_id, target)?;
    let t = now();
    let (file, created) = match target {
        Target::Folder {
            folder_id, name, ..
        } => {
            let folder =
                coffer_store::content::object(c, folder_id)?.ok_or_else(super::not_found)?;
            match coffer_store::content::live_child(c, folder_id, &rules::fold_name(name))? {
                Some(existing) => (existing, false),
                None => {
                    let o = new_object(&folder, "f", name, user_id);
                    coffer_store::content::insert_object(c, &o).map_err(super::name_conflict)?;
                    coffer_store::content::touch(c, folder_id, t)?;
                    (o, true)
                }
            }
        }
        Target::File { file_id } => (
            coffer_store::content::object(c, file_id)?.ok_or_else(super::not_found)?,
            false,
        ),
    };
    // Quota again, now that the size is known and other uploads may have landed.
    let (allowed, used) = super::quota(c, &file.owner_id)?;
    if used + stored.size > allowed {
        return Err(ApiError::new(ErrorCode::SystemNoStorageAvailable).into());
    }
    let number = coffer_store::content::last_version_number(c, &file.id)? + 1;
    let scanning = ctx.scanner.is_some();
    let mime = rules::guess_mime(&file.name);
    let preview_status = if super::jobs::may_have_preview(ctx, mime) {
        "pending"
    } else {
        "failed"
    };
    let v = FileVersion {
        id: uuid::Uuid::new_v4().to_string(),
        file_id: file.id.clone(),
        number,
        blob_id: stored.blob.clone(),
        name: file.name.clone(),
        size: stored.size,
        mime: mime.to_string(),
        creator_id: user_id.to_string(),
        created_at: t,
        client_created_at: stored.client_created,
        client_modified_at: stored.client_modified,
        av_status: if scanning { "scanning" } else { "allowed" }.into(),
        av_signature: None,
        preview_status: preview_status.into(),
        preview_blob_id: None,
        deleted: false,
    };
    super::blobs::reference_stored(c, &ctx.storage, &stored.blob, stored.size, &stored.md5, t)?;
    coffer_store::content::insert_version(c, &v)?;
    coffer_store::content::set_current_version(c, &file.id, &v, user_id, t)?;
    if scanning {
        super::jobs::enqueue(c, super::jobs::SCAN, &v.id, t)?;
    }
    // A type without text, with no scan that could still quarantine the version, is recorded
    // so now: the text extraction its trigger queued could only decide the same, and would wake
    // the worker for a claim, a read and two writes per uploaded file.
    let without_text = !scanning && coffer_extract::text_format(mime, &file.name).is_none();
    if without_text {
        coffer_store::search::skip_without_text_now(c, &file.id, &v.id, "a type without text", t)?;
    }
    if preview_status == "pending" {
        super::jobs::enqueue(c, super::jobs::PREVIEW, &v.id, t)?;
    } else if !without_text {
        // The version's text extraction was queued by a trigger, which cannot wake the worker.
        coffer_store::wake::announce(c, coffer_store::wake::Work::Jobs)?;
    }
    if created {
        events::record(
            c,
            "filesystem.file.create",
            actor,
            json!({"id": file.id, "parentId": file.parent_id, "name": file.name, "size": v.size, "versionId": v.id, "ownerId": file.owner_id}),
        )?;
    } else {
        events::record(
            c,
            "filesystem.version.create",
            actor,
            json!({"id": file.id, "versionId": v.id, "versionNumber": v.number, "size": v.size, "ownerId": file.owner_id}),
        )?;
    }
    coffer_store::content::object(c, &file.id)?.ok_or_else(|| Error::internal("file vanished"))
}

/// [`commit`] in its own write transaction, answered as the caller sees the file.
pub async fn commit_owned(
    ctx: &Ctx,
    user_id: &str,
    target: Target,
    stored: Stored,
) -> Result<FileView> {
    let user = user_id.to_string();
    let ctx2 = ctx.clone();
    let file = ctx
        .write_owned(move |c| commit(c, &ctx2, &user, &target, &stored))
        .await?;
    view_as(ctx, user_id, file.id).await
}

/// A file as the caller sees it, read on a blocking thread (after an upload changed it).
pub async fn view_as(ctx: &Ctx, user_id: &str, file_id: String) -> Result<FileView> {
    let user = user_id.to_string();
    ctx.blocking(move |ctx| {
        ctx.read(|c| {
            let o = coffer_store::content::object(c, &file_id)?.ok_or_else(super::not_found)?;
            let a = super::access(c, &user, &o)?.ok_or_else(super::not_found)?;
            view(c, ctx, &user, &o, a)
        })
    })
    .await
}

/// The preview of a file's current version: its state (the stored `pending`, `ready`,
/// `failed` answered as `processing`, `preview`, `failed`), and for a ready one the address
/// that shows it in place and what it is.
pub fn preview(ctx: &Ctx, user_id: &str, id: &str) -> Result<super::views::PreviewView> {
    ctx.read(|c| {
        let (o, _) = require_file(c, user_id, id, Action::Preview)?;
        live(&o)?;
        let vid = o.current_version_id.clone().ok_or_else(super::not_found)?;
        let v = version_of(c, &o, &vid)?;
        scanned(&v)?;
        let base = &ctx.config.base_url;
        Ok(preview_view(
            &o,
            &v,
            format!("{base}/rest/files/{}/preview/content", o.id),
            format!("{base}/rest/files/{}/content?inline=true", o.id),
        ))
    })
}

/// The preview of version `v` of file `o`: `made` is the address that serves a preview made
/// from it (a PNG thumbnail or a PDF), `native` the one that shows the file itself.
pub fn preview_view(
    o: &Object,
    v: &FileVersion,
    made: String,
    native: String,
) -> super::views::PreviewView {
    // (address, type, MIME) of a ready preview.
    let shown = match (v.preview_status.as_str(), &v.preview_blob_id) {
        ("ready", Some(_)) => {
            let (kind, mime) = if coffer_extract::is_thumbnailable(&v.mime) {
                ("image", "image/png")
            } else {
                ("pdf", "application/pdf")
            };
            Some((made, kind, mime.to_string()))
        }
        ("ready", None) => Some((native, "native", v.mime.clone())),
        _ => None,
    };
    let status = match v.preview_status.as_str() {
        "ready" => "preview",
        "failed" => "failed",
        _ => "processing",
    };
    let native = shown.as_ref().is_some_and(|(_, k, _)| *k == "native");
    let pdf = shown
        .as_ref()
        .filter(|(_, _, m)| m == "application/pdf")
        .map(|(l, _, _)| l.clone());
    super::views::PreviewView {
        file_id: o.id.clone(),
        version_id: v.id.clone(),
        status: status.into(),
        kind: shown.as_ref().map(|(_, k, _)| k.to_string()),
        mime: shown.as_ref().map(|(_, _, m)| m.clone()),
        native,
        link: shown.as_ref().map(|(l, _, _)| l.clone()),
        view_url: shown.as_ref().map(|(l, _, _)| l.clone()),
        pdf,
        content_url: shown.map(|(l, _, _)| l),
    }
}

/// Decides serving the preview made for a file's current version (a PNG thumbnail of an
/// image, or a PDF made by the converter); 404 when the version has none.
pub fn preview_content(ctx: &Ctx, user_id: &str, id: &str) -> Result<Download> {
    ctx.read(|c| {
        let (o, _) = require_file(c, user_id, id, Action::Preview)?;
        live(&o)?;
        let vid = o.current_version_id.clone().ok_or_else(super::not_found)?;
        let v = version_of(c, &o, &vid)?;
        scanned(&v)?;
        preview_download(c, &o, &v)
    })
}

/// The preview made for version `v` of file `o`, to serve; 404 when it has none.
pub fn preview_download(c: &mut DbConn, o: &Object, v: &FileVersion) -> Result<Download> {
    let blob_id = match (v.preview_status.as_str(), &v.preview_blob_id) {
        ("ready", Some(b)) => b.clone(),
        _ => return Err(super::not_found()),
    };
    let blob = coffer_store::content::blob(c, &blob_id)?.ok_or_else(super::not_found)?;
    let (mime, ext) = if coffer_extract::is_thumbnailable(&v.mime) {
        ("image/png", "png")
    } else {
        ("application/pdf", "pdf")
    };
    let stem = match o.name.rsplit_once('.') {
        Some((stem, _)) if !stem.is_empty() => stem,
        _ => o.name.as_str(),
    };
    Ok(Download {
        file_id: o.id.clone(),
        version_id: v.id.clone(),
        name: format!("{stem}.{ext}"),
        mime: mime.to_string(),
        size: blob.size,
        blob: blob.id,
        owner_id: o.owner_id.clone(),
        preview: true,
    })
}

/// The path of a file from the caller's top.
pub fn path(ctx: &Ctx, user_id: &str, id: &str) -> Result<Vec<super::views::PathItem>> {
    ctx.read(|c| {
        let (o, _) = require_file(c, user_id, id, Action::List)?;
        let (p, _) = path_of(c, user_id, &o)?;
        Ok(p.into_iter()
            .map(|(id, name)| super::views::PathItem { id, name })
            .collect())
    })
}
