//! The metadata reads of files and folders for an investigation: a file or folder as its owner
//! sees it, its path, a file's versions and content, whether in the trash or not.

use crate::content::files::{self, Download};
use crate::content::views::{FileView, FolderView, PathItem, VersionView};
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
