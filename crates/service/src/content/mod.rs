//! The content core: folders, files, versions, uploads, downloads, members and comments.
//!
//! Who may do what is decided here, in [`require`], for every area that acts on content (the
//! REST handlers, mail, the SFTP front-end): the caller's access to an object is ownership of
//! its tree, or the role of their nearest membership up the tree (`coffer_domain::content`
//! holds the role table). An object outside the caller's reach answers 404, exactly as an object
//! that does not exist; a known object the caller lacks a permission on answers 403.

pub mod backup;
pub(crate) mod blobs;
pub mod check;
pub mod files;
pub mod folders;
pub mod jobs;
pub mod listings;
pub mod sharing;
mod tree;
pub mod uploads;
pub mod views;

pub use coffer_storage::BlobRead;
pub use coffer_store::content::ChildQuery;

use crate::{now, Result};
use coffer_domain::content::{self as rules, Access, Action};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_storage::StorageError;
use coffer_store::models::Object;
use coffer_store::DbConn;
use std::collections::HashSet;

/// How a request body that timed out is told apart among aborted writes (answered 408).
const TIMED_OUT: &str = "timed out";

/// A storage failure: a full store or a refused size are the client's to hear, the rest is
/// logged and answered 500.
pub(crate) fn storage_error(e: StorageError) -> Error {
    match e {
        StorageError::TooLarge => ApiError::new(ErrorCode::SystemNoStorageAvailable).into(),
        StorageError::NotFound => not_found(),
        StorageError::Aborted(why) if why.starts_with(TIMED_OUT) => {
            ApiError::new(ErrorCode::RequestTimeout).into()
        }
        StorageError::Aborted(_) => ApiError::new(ErrorCode::RequestInvalidJson)
            .with_message("The request body could not be read.")
            .into(),
        other => Error::internal_in("storage", other),
    }
}

/// What the content services need to know of the deployment.
#[derive(Debug, Clone)]
pub struct Limits {
    /// The largest file accepted (setting `maxUploadSize`).
    pub max_upload_size: i64,
    /// The largest chunk accepted (`uploadChunkMax`).
    pub upload_chunk_max: i64,
    /// Seconds an idle upload session lives (`uploadTimeout`).
    pub upload_timeout: i64,
}

pub const GIB: i64 = 1024 * 1024 * 1024;

/// The folder role that may add files and see only its own (`coffer_domain::content::ROLES`).
pub const UPLOADER: i64 = 5;

/// Reads an integer setting with its default.
pub fn int_setting(c: &mut DbConn, key: &str, default: i64) -> Result<i64> {
    Ok(coffer_store::settings::get(c, key)?
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(default))
}

/// The content settings with their defaults (`cofferd settings get` shows these too).
pub const DEFAULTS: &[(&str, i64)] = &[
    ("storageQuota", 10 * GIB),
    ("maxUploadSize", 2 * GIB),
    ("uploadChunkMax", 64 * 1024 * 1024),
    ("uploadTimeout", 86_400),
    ("trashRetentionDays", 30),
];

/// A content setting, or its default from [`DEFAULTS`].
pub fn setting(c: &mut DbConn, key: &str) -> Result<i64> {
    let default = DEFAULTS
        .iter()
        .find(|(k, _)| *k == key)
        .map_or(0, |(_, v)| *v);
    int_setting(c, key, default)
}

pub fn limits(c: &mut DbConn) -> Result<Limits> {
    Ok(Limits {
        max_upload_size: setting(c, "maxUploadSize")?,
        upload_chunk_max: setting(c, "uploadChunkMax")?,
        upload_timeout: setting(c, "uploadTimeout")?,
    })
}

/// The bytes an account may hold (`storageQuota`) and holds.
pub fn quota(c: &mut DbConn, owner: &str) -> Result<(i64, i64)> {
    let allowed = setting(c, "storageQuota")?;
    let used = coffer_store::content::usage(c, owner)?;
    Ok((allowed, used))
}

pub(crate) fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

pub(crate) fn denied() -> Error {
    ApiError::new(ErrorCode::AccessUser).into()
}

/// The caller's access to an object, or none.
pub fn access(c: &mut DbConn, user_id: &str, o: &Object) -> Result<Option<Access>> {
    if o.owner_id == user_id {
        return Ok(Some(Access::Owner));
    }
    if o.system.is_some() {
        return Ok(None);
    }
    Ok(
        coffer_store::content::nearest_membership(c, &o.id, user_id)?
            .map(|(role, _)| Access::Role(role)),
    )
}

/// An object the caller may see, with their access; 404 when it does not exist or is out of
/// their reach, 403 `ERR_ACCESS_USER` when their role does not allow `action`.
pub fn require(
    c: &mut DbConn,
    user_id: &str,
    id: &str,
    action: Action,
) -> Result<(Object, Access)> {
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(not_found());
    }
    let o = coffer_store::content::object(c, id)?.ok_or_else(not_found)?;
    let a = access(c, user_id, &o)?.ok_or_else(not_found)?;
    if hidden(user_id, a, o.is_folder(), &o.creator_id) {
        return Err(not_found());
    }
    if !rules::allows(a, action) {
        return Err(denied());
    }
    Ok((o, a))
}

/// Whether an object the user reaches with `a` is hidden from them all the same: an Uploader
/// sees only the files it uploaded itself.
fn hidden(user_id: &str, a: Access, is_folder: bool, creator_id: &str) -> bool {
    a == Access::Role(UPLOADER) && !is_folder && creator_id != user_id
}

/// Whether a user who reaches an object with `a` may do `action` on it: the rule [`require`]
/// applies to one object, for callers that judge many at once (search).
pub fn permits(
    user_id: &str,
    a: Access,
    is_folder: bool,
    creator_id: &str,
    action: Action,
) -> bool {
    !hidden(user_id, a, is_folder, creator_id) && rules::allows(a, action)
}

/// As [`require`], for a folder (a file id answers 404).
pub fn require_folder(
    c: &mut DbConn,
    user_id: &str,
    id: &str,
    action: Action,
) -> Result<(Object, Access)> {
    require_kind(c, user_id, id, action, true)
}

/// As [`require`], for a file (a folder id answers 404).
pub fn require_file(
    c: &mut DbConn,
    user_id: &str,
    id: &str,
    action: Action,
) -> Result<(Object, Access)> {
    require_kind(c, user_id, id, action, false)
}

fn require_kind(
    c: &mut DbConn,
    user_id: &str,
    id: &str,
    action: Action,
    folder: bool,
) -> Result<(Object, Access)> {
    let (o, a) = require(c, user_id, id, action)?;
    if o.is_folder() != folder {
        return Err(not_found());
    }
    Ok((o, a))
}

/// Refuses a change to an object in the trash: 403 `ERR_ENTITY_DELETED`.
pub fn live(o: &Object) -> Result<()> {
    if o.deleted_at.is_some() {
        return Err(ApiError::new(ErrorCode::EntityDeleted).into());
    }
    Ok(())
}

/// Refuses a change to a system folder with its own code.
pub fn not_system(o: &Object) -> Result<()> {
    let code = match o.system.as_deref() {
        Some("base") => ErrorCode::EntityIsBaseDir,
        Some("sync") => ErrorCode::EntityIsSyncDir,
        Some("my") => ErrorCode::EntityIsMyDir,
        _ => return Ok(()),
    };
    Err(ApiError::new(code).into())
}

/// Refuses an object that is in a secure folder, or is one (403 `ERR_ENTITY_IS_SECURE_FOLDER`):
/// a folder marked `secure` keeps what it holds from leaving by links and mail.
pub fn not_secure(c: &mut DbConn, o: &Object) -> Result<()> {
    let mut secure = o.secure;
    if !secure {
        for a in coffer_store::content::ancestors(c, &o.id)?.iter().skip(1) {
            if a.system.is_some() {
                break;
            }
            if coffer_store::content::object(c, &a.id)?.is_some_and(|f| f.secure) {
                secure = true;
                break;
            }
        }
    }
    if secure {
        return Err(ApiError::new(ErrorCode::EntityIsSecureFolder).into());
    }
    Ok(())
}

/// A free name in `parent`: the name itself, or with ` (n)` added when `rename` and it is taken;
/// 409 `ERR_ENTITY_EXISTS` when taken and not `rename`.
pub fn free_name(c: &mut DbConn, parent: &str, name: &str, rename: bool) -> Result<String> {
    let taken = |c: &mut DbConn, n: &str| -> Result<bool> {
        Ok(coffer_store::content::live_child(c, parent, &rules::fold_name(n))?.is_some())
    };
    if !taken(c, name)? {
        return Ok(name.to_string());
    }
    if !rename {
        return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
    }
    for n in 1..1000 {
        let candidate = rules::numbered_name(name, n);
        if !taken(c, &candidate)? {
            return Ok(candidate);
        }
    }
    Err(ApiError::field(ErrorCode::EntityExists, "name").into())
}

/// A new object row under `parent`, owned by the parent's owner (the owner of a tree holds all
/// of it, and is charged for its files).
pub fn new_object(parent: &Object, kind: &str, name: &str, actor: &str) -> Object {
    let t = now();
    Object {
        id: uuid::Uuid::new_v4().to_string(),
        kind: kind.to_string(),
        parent_id: Some(parent.id.clone()),
        owner_id: parent.owner_id.clone(),
        system: None,
        name: name.to_string(),
        name_folded: rules::fold_name(name),
        description: String::new(),
        created_at: t,
        modified_at: t,
        creator_id: actor.to_string(),
        modifier_id: actor.to_string(),
        expire_at: None,
        deleted_at: None,
        trashed_with: None,
        perm_deleted: false,
        secure: false,
        syncable: false,
        file_lifetime: 0,
        current_version_id: None,
        size: 0,
        mime: None,
        client_created_at: None,
        client_modified_at: None,
    }
}

/// Maps a unique-name violation to 409 `ERR_ENTITY_EXISTS`.
pub(crate) fn name_conflict(e: coffer_store::StoreError) -> Error {
    if e.is_unique_violation() {
        ApiError::field(ErrorCode::EntityExists, "name").into()
    } else {
        e.into()
    }
}

/// The path of an object from the caller's point of view: the names from the top-most folder
/// they reach down to the object (their own root is not named).
pub fn path_of(c: &mut DbConn, user_id: &str, o: &Object) -> Result<(Vec<(String, String)>, bool)> {
    let path = paths_of(c, user_id, std::slice::from_ref(o))?
        .pop()
        .unwrap_or_default();
    Ok((path, o.owner_id == user_id))
}

/// The paths of `objects` (as [`path_of`], without whether each is the caller's own), in order,
/// with two statements for all of them: the ancestors of their folders (each folder walked once,
/// however many of the objects it holds), and the caller's memberships among those.
pub(crate) fn paths_of(
    c: &mut DbConn,
    user_id: &str,
    objects: &[Object],
) -> Result<Vec<Vec<(String, String)>>> {
    let mut parents: Vec<String> = objects.iter().filter_map(|o| o.parent_id.clone()).collect();
    parents.sort_unstable();
    parents.dedup();
    let chains = coffer_store::content::ancestors_of_each(c, &parents)?;
    let none = Vec::new();
    let chain_of = |o: &Object| match &o.parent_id {
        Some(p) => chains.get(p).unwrap_or(&none),
        None => &none,
    };
    let mut theirs: Vec<String> = Vec::new();
    for o in objects.iter().filter(|o| o.owner_id != user_id) {
        theirs.push(o.id.clone());
        theirs.extend(chain_of(o).iter().map(|a| a.id.clone()));
    }
    theirs.sort_unstable();
    theirs.dedup();
    let memberships = if theirs.is_empty() {
        HashSet::new()
    } else {
        coffer_store::content::memberships_among(c, user_id, &theirs)?
    };
    Ok(objects
        .iter()
        .map(|o| {
            let steps = std::iter::once((o.id.as_str(), o.name.as_str(), o.system.as_deref()))
                .chain(
                    chain_of(o)
                        .iter()
                        .map(|a| (a.id.as_str(), a.name.as_str(), a.system.as_deref())),
                );
            walk_path(steps, o.owner_id == user_id, &memberships)
        })
        .collect())
}

/// The path along `steps` (an object and its ancestors, nearest first, as id, name and system
/// kind): up to the owner's root (not named), or for another's object up to the nearest folder
/// the caller is a member of (`memberships`).
fn walk_path<'a>(
    steps: impl Iterator<Item = (&'a str, &'a str, Option<&'a str>)>,
    own: bool,
    memberships: &HashSet<String>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (id, name, system) in steps {
        if system == Some("base") {
            break;
        }
        out.push((id.to_owned(), name.to_owned()));
        // A member sees the tree from the folder they were given.
        if !own && memberships.contains(id) {
            break;
        }
    }
    out.reverse();
    out
}
