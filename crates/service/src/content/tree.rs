//! Moves and copies in the content tree, shared by files and folders: where an object may go
//! ([`check_destination`]), moving its row and, across owners, its subtree ([`move_object`]),
//! and the first version of a copy ([`copy_current_version`]).

use super::{live, require_folder};
use crate::{now, Result};
use coffer_domain::content::{Access, Action};
use coffer_errors::ApiError;
use coffer_errors::ErrorCode;
use coffer_store::models::{FileVersion, Object};
use coffer_store::DbConn;

/// Checks that `dest` may receive `o` (a move): a live folder the caller may add to, not the
/// hidden mail folder, not `o` itself nor under it.
pub(super) fn check_destination(
    c: &mut DbConn,
    user_id: &str,
    o: &Object,
    dest_id: &str,
) -> Result<(Object, Access)> {
    let action = if o.is_folder() {
        Action::CreateFolder
    } else {
        Action::Upload
    };
    let (dest, da) = require_folder(c, user_id, dest_id, action)?;
    live(&dest)?;
    if dest.system.as_deref() == Some("my") {
        return Err(ApiError::new(ErrorCode::EntityIsMyDir).into());
    }
    if !o.is_folder() && dest.system.as_deref() == Some("base") {
        return Err(ApiError::new(ErrorCode::EntityIsBaseDir).into());
    }
    if o.is_folder() {
        if dest.id == o.id {
            return Err(
                ApiError::field(ErrorCode::CannotMoveFolderToSelf, "destinationFolderId").into(),
            );
        }
        let chain = coffer_store::content::ancestors(c, &dest.id)?;
        if chain.iter().any(|a| a.id == o.id) {
            return Err(
                ApiError::field(ErrorCode::CannotMoveToChild, "destinationFolderId").into(),
            );
        }
    }
    Ok((dest, da))
}

/// Moves an object row under `dest`, keeping its name (409 when taken), changing the owner of
/// its subtree when `dest` is in another owner's tree (within that owner's quota).
pub(super) fn move_object(c: &mut DbConn, user_id: &str, o: &Object, dest: &Object) -> Result<()> {
    if coffer_store::content::live_child(c, &dest.id, &o.name_folded)?.is_some() {
        return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
    }
    if dest.owner_id != o.owner_id {
        let ids = coffer_store::content::subtree_ids(c, &o.id)?;
        let bytes = subtree_bytes(c, &o.id)?;
        let (allowed, used) = super::quota(c, &dest.owner_id)?;
        if used + bytes > allowed {
            return Err(ApiError::new(ErrorCode::SystemNoStorageAvailable).into());
        }
        coffer_store::content::set_owner(c, &ids, &dest.owner_id)?;
    }
    let t = now();
    coffer_store::content::move_object(c, &o.id, &dest.id, &o.name, &o.name_folded, user_id, t)
        .map_err(super::name_conflict)?;
    coffer_store::content::touch(c, &dest.id, t)?;
    Ok(())
}

fn subtree_bytes(c: &mut DbConn, id: &str) -> Result<i64> {
    let objs = coffer_store::content::live_subtree(c, id)?;
    Ok(objs.iter().filter(|o| !o.is_folder()).map(|o| o.size).sum())
}

/// Gives `copy` a first version holding the current content of `src`.
pub(super) fn copy_current_version(
    c: &mut DbConn,
    src: &Object,
    copy: &Object,
    user_id: &str,
    t: i64,
) -> Result<()> {
    let Some(vid) = &src.current_version_id else {
        return Ok(());
    };
    let v = coffer_store::content::version(c, vid)?.ok_or_else(super::not_found)?;
    let nv = FileVersion {
        id: uuid::Uuid::new_v4().to_string(),
        file_id: copy.id.clone(),
        number: 1,
        name: copy.name.clone(),
        creator_id: user_id.to_string(),
        created_at: t,
        ..v
    };
    let blob = coffer_store::content::blob(c, &nv.blob_id)?.ok_or_else(super::not_found)?;
    coffer_store::content::reference_blob(c, &blob.id, blob.size, &blob.md5, t)?;
    // The copy shares the preview too; one not made yet is made for the copy as well.
    let mut nv = nv;
    let shared_preview = match &nv.preview_blob_id {
        Some(p) => coffer_store::content::blob(c, p)?,
        None => None,
    };
    match shared_preview {
        Some(p) => {
            coffer_store::content::reference_blob(c, &p.id, p.size, &p.md5, t)?;
        }
        None if nv.preview_blob_id.is_some() || nv.preview_status == "pending" => {
            nv.preview_blob_id = None;
            nv.preview_status = "pending".into();
        }
        None => {}
    }
    coffer_store::content::insert_version(c, &nv)?;
    coffer_store::content::set_current_version(c, &copy.id, &nv, user_id, t)?;
    if nv.preview_status == "pending" {
        super::jobs::enqueue(c, super::jobs::PREVIEW, &nv.id, t)?;
    }
    // A copy of content still being scanned is scanned too (the original's verdict is its own).
    if nv.av_status == "scanning" {
        super::jobs::enqueue(c, super::jobs::SCAN, &nv.id, t)?;
    }
    Ok(())
}
