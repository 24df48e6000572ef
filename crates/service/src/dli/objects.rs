//! The metadata reads of files and folders for an investigation: a file or folder as its owner
//! sees it, its path, a file's versions, content and preview, whether in the trash or not.

use crate::content::files::{self, Download};
use crate::content::views::{FileView, FolderView, PathItem, PreviewView, VersionView};
use crate::platform::auth::SystemAdmin;
use crate::platform::views::Listed;
use crate::{Ctx, Result};
use coffer_domain::content::Access;
use coffer_errors::{ApiError, ErrorCode};

/// `GET /rest/dli/files/{id}`: the file as its owner sees it.
pub fn file(ctx: &Ctx, admin: &SystemAdmin, id: &str) -> Result<FileView> {
    ctx.write(|c| {
        let o = super::object(c, id, false)?;
        super::record_read(c, admin, "file metadata", "file", id)?;
        files::view(c, ctx, &o.owner_id, &o, Access::Owner)
    })
}

/// `GET /rest/dli/folders/{id}`: the folder as its owner sees it.
pub fn folder(ctx: &Ctx, admin: &SystemAdmin, id: &str) -> Result<FolderView> {
    ctx.write(|c| {
        let o = super::object(c, id, true)?;
        super::record_read(c, admin, "folder metadata", "folder", id)?;
        crate::content::folders::view(c, ctx, &o.owner_id, &o, Access::Owner)
    })
}

/// `GET /rest/dli/files/{id}/path`: the folders from the owner's top down to the file.
pub fn path(ctx: &Ctx, admin: &SystemAdmin, id: &str) -> Result<Vec<PathItem>> {
    ctx.write(|c| {
        let o = super::object(c, id, false)?;
        super::record_read(c, admin, "file path", "file", id)?;
        let (p, _) = crate::content::path_of(c, &o.owner_id, &o)?;
        Ok(p.into_iter()
            .map(|(id, name)| PathItem { id, name })
            .collect())
    })
}

/// `GET /rest/dli/files/{id}/versions`.
pub fn versions(
    ctx: &Ctx,
    admin: &SystemAdmin,
    id: &str,
    newest_first: bool,
    offset: i64,
    limit: i64,
) -> Result<Listed<VersionView>> {
    ctx.write(|c| {
        let o = super::object(c, id, false)?;
        super::record_read(c, admin, "file versions", "file", id)?;
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

fn version_of(
    c: &mut coffer_store::DbConn,
    file_id: &str,
    version_id: &str,
) -> Result<coffer_store::models::FileVersion> {
    coffer_store::content::version(c, version_id)?
        .filter(|v| v.file_id == file_id)
        .ok_or_else(|| ApiError::new(ErrorCode::EntityNotFound).into())
}

/// `GET /rest/dli/files/{id}/versions/{version_id}`.
pub fn version(ctx: &Ctx, admin: &SystemAdmin, id: &str, version_id: &str) -> Result<VersionView> {
    ctx.write(|c| {
        let o = super::object(c, id, false)?;
        let v = version_of(c, &o.id, version_id)?;
        super::record_read(c, admin, "file version", "file", id)?;
        let md5 = coffer_store::content::blob(c, &v.blob_id)?
            .map(|b| b.md5)
            .unwrap_or_default();
        Ok(VersionView::of(&v, &md5))
    })
}

/// `GET /rest/dli/files/{id}/content` and `…/versions/{version_id}/content`: what to stream.
/// Content found infected is not served (403 `ERR_ENTITY_VIRUS_FOUND`), nor content being
/// scanned; the refusal is recorded.
pub fn content(
    ctx: &Ctx,
    admin: &SystemAdmin,
    id: &str,
    version_id: Option<&str>,
) -> Result<Download> {
    let decided = ctx.write(|c| {
        let o = super::object(c, id, false)?;
        let vid = match version_id {
            Some(v) => v.to_string(),
            None => o
                .current_version_id
                .clone()
                .ok_or_else(|| crate::Error::from(ApiError::new(ErrorCode::EntityNotFound)))?,
        };
        let v = version_of(c, &o.id, &vid)?;
        let blob = coffer_store::content::blob(c, &v.blob_id)?
            .ok_or_else(|| crate::Error::from(ApiError::new(ErrorCode::EntityNotFound)))?;
        if files::scanned(&v).is_ok() {
            super::record_read(c, admin, "file content", "file", id)?;
        }
        Ok((o, v, blob))
    })?;
    let (o, v, blob) = decided;
    if let Err(e) = files::scanned(&v) {
        let data = serde_json::json!({"operation": "file content", "objectKind": "file",
            "objectId": id, "versionId": v.id});
        crate::audit::record::refused(ctx, "dli.file.read", Some(admin.user_id()), &data)?;
        return Err(e);
    }
    Ok(Download {
        file_id: o.id.clone(),
        version_id: v.id.clone(),
        name: if version_id.is_some() {
            v.name.clone()
        } else {
            o.name.clone()
        },
        mime: v.mime.clone(),
        size: blob.size,
        blob: blob.id,
        owner_id: o.owner_id.clone(),
        preview: false,
    })
}

/// The current version of a file (in the trash too) whose content may be shown: 403
/// `ERR_ENTITY_NOT_SCANNED` while it is scanned, `ERR_ENTITY_VIRUS_FOUND` when found infected.
fn shown_version(
    c: &mut coffer_store::DbConn,
    id: &str,
) -> Result<(
    coffer_store::models::Object,
    coffer_store::models::FileVersion,
)> {
    let o = super::object(c, id, false)?;
    let vid = o
        .current_version_id
        .clone()
        .ok_or_else(|| crate::Error::from(ApiError::new(ErrorCode::EntityNotFound)))?;
    let v = version_of(c, &o.id, &vid)?;
    files::scanned(&v)?;
    Ok((o, v))
}

/// `GET /rest/dli/files/{id}/preview`: the preview of the file's current version as the
/// content preview answers it, also for a file in the trash; its addresses are the DLI ones
/// (`…/preview/content` for a preview made from the file, `…/content` for the file itself).
pub fn preview(ctx: &Ctx, admin: &SystemAdmin, id: &str) -> Result<PreviewView> {
    ctx.write(|c| {
        let (o, v) = shown_version(c, id)?;
        super::record_read(c, admin, "file preview", "file", id)?;
        let base = format!("{}/rest/dli/files/{}", ctx.config.base_url, o.id);
        Ok(files::preview_view(
            &o,
            &v,
            format!("{base}/preview/content"),
            format!("{base}/content"),
        ))
    })
}

/// `GET /rest/dli/files/{id}/preview/content`: the preview made from the file's current
/// version, to serve in place; 404 when none was made.
pub fn preview_content(ctx: &Ctx, admin: &SystemAdmin, id: &str) -> Result<Download> {
    ctx.write(|c| {
        let (o, v) = shown_version(c, id)?;
        let d = files::preview_download(c, &o, &v)?;
        super::record_read(c, admin, "file preview content", "file", id)?;
        Ok(d)
    })
}
