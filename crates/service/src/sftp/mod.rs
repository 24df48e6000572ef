//! What the SFTP front-end (`coffer-sftp`) asks of the services: who signs in (by key or by
//! password, with the SFTP gate of `identity::ssh_keys`), the user's view of their content as
//! one tree of names, and each file operation mapped onto the content core's use cases, so
//! that permissions, versions, quota, scanning and events are those of the REST interface.
//!
//! The view: a virtual root holding "My Folder" (the user's own tree) and each folder shared
//! with them at its top-most shared level, by name (a name taken twice gets ` (2)`, ` (3)`, …
//! in name order). Below the root, a path names live children by their case-folded names, as
//! REST does. The root itself is read-only. Nothing here knows SSH.

use crate::content::{self, files, folders, uploads};
use crate::identity::{accounts, ssh_keys};
use crate::platform::throttle;
use crate::{Ctx, Result};
use coffer_domain::content::{self as rules, Access, Action};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{Object, User};
use coffer_store::DbConn;

/// The name of the user's own tree in the root of the view.
pub const MY_FOLDER: &str = "My Folder";

/// Where a path leads.
#[derive(Debug, Clone)]
pub enum Node {
    /// The virtual root.
    Root,
    /// A folder or file, with the user's access to it.
    Object(Box<Object>, Access),
}

/// One name in a listing.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub folder: bool,
    pub size: u64,
    pub modified: i64,
    /// Whether the user may change what is inside (a folder) or replace it (a file).
    pub writable: bool,
}

impl Entry {
    fn of(name: &str, o: &Object, a: Access) -> Entry {
        let writable = if o.is_folder() {
            rules::allows(a, Action::Upload)
        } else {
            rules::allows(a, Action::Upload) && rules::allows(a, Action::Download)
        };
        Entry {
            name: name.to_string(),
            folder: o.is_folder(),
            size: o.size.max(0) as u64,
            modified: o.modified_at,
            writable,
        }
    }

    /// The root's own entry.
    pub fn root() -> Entry {
        Entry {
            name: "/".into(),
            folder: true,
            size: 0,
            modified: 0,
            writable: false,
        }
    }
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

fn denied(why: &str) -> Error {
    ApiError::new(ErrorCode::AccessUser)
        .with_message(format!("Insufficient access permissions ({why})."))
        .into()
}

/// The account a key signs in, or `None` (see [`ssh_keys::sign_in`]).
pub fn sign_in_by_key(ctx: &Ctx, email: &str, fingerprint: &str) -> Result<Option<User>> {
    ssh_keys::sign_in(ctx, email, fingerprint)
}

/// The account a password signs in, or `None`: the web sign-in's check with its throttle (per
/// account and per client address; a locked account or address is refused, a wrong password
/// counts and is answered slowly). An account with a second factor never signs in with its
/// password alone, and the SFTP gate must be open for it.
pub fn sign_in_by_password(
    ctx: &Ctx,
    email: &str,
    password: &str,
    client_ip: Option<&str>,
) -> Result<Option<User>> {
    let user = match accounts::sign_in(ctx, email, password, client_ip)? {
        accounts::SignIn::Ok(u) => *u,
        accounts::SignIn::Wrong | accounts::SignIn::Locked(_) => return Ok(None),
    };
    if crate::identity::tfa::method(ctx, &user)?.is_some() {
        return Ok(None);
    }
    ctx.with_conn(|c| match ssh_keys::sftp_gate(c, &user) {
        Ok(()) => Ok(Some(user)),
        Err(Error::Api(_)) => Ok(None),
        Err(e) => Err(e),
    })
}

/// Counts a refused key (one that is not registered, or not for this account) against the
/// same counters as a wrong password; answers the slow-down.
pub fn key_refused(ctx: &Ctx, email: &str, client_ip: Option<&str>) -> Result<std::time::Duration> {
    throttle::failed(ctx, &throttle::keys(Some(email), client_ip))
}

/// Whether the account or address is locked by the throttle now.
pub fn locked_out(ctx: &Ctx, email: &str, client_ip: Option<&str>) -> Result<bool> {
    Ok(throttle::locked(ctx, &throttle::keys(Some(email), client_ip))?.is_some())
}

/// Whether the account may still use SFTP: active, not deleted, and through the gate. Asked at
/// every open, so a session ends its reach as soon as the account or the gate closes.
pub fn still_allowed(ctx: &Ctx, user_id: &str) -> Result<bool> {
    ctx.with_conn(|c| allowed_in(c, user_id))
}

fn allowed_in(c: &mut DbConn, user_id: &str) -> Result<bool> {
    let Some(u) = coffer_store::users::by_id(c, user_id)? else {
        return Ok(false);
    };
    if !u.active || u.deleted {
        return Ok(false);
    }
    match ssh_keys::sftp_gate(c, &u) {
        Ok(()) => Ok(true),
        Err(Error::Api(_)) => Ok(false),
        Err(e) => Err(e),
    }
}

/// The root's entries: "My Folder" and the top-most folders shared with the user, each with
/// the object it names.
fn roots(c: &mut DbConn, user_id: &str) -> Result<Vec<(String, Object, Access)>> {
    let user = coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?;
    let mut out = Vec::new();
    if let Some(my) = coffer_store::content::object(c, &user.syncdir_id)? {
        out.push((MY_FOLDER.to_string(), my, Access::Owner));
    }
    let mut shared = Vec::new();
    for (m, o) in coffer_store::content::memberships(c, user_id)? {
        if o.owner_id == user_id || !o.is_folder() || o.deleted_at.is_some() || o.perm_deleted {
            continue;
        }
        let above = match &o.parent_id {
            Some(p) => coffer_store::content::nearest_membership(c, p, user_id)?,
            None => None,
        };
        if above.is_none() {
            shared.push((o, Access::Role(m.role_id)));
        }
    }
    shared.sort_by(|a, b| {
        a.0.name_folded
            .cmp(&b.0.name_folded)
            .then(a.0.id.cmp(&b.0.id))
    });
    for (o, a) in shared {
        let mut name = o.name.clone();
        let mut n = 1;
        while out
            .iter()
            .any(|(taken, _, _)| rules::fold_name(taken) == rules::fold_name(&name))
        {
            n += 1;
            name = format!("{} ({n})", o.name);
        }
        out.push((name, o, a));
    }
    Ok(out)
}

/// The user's own tree when `folded` is the case-folded "My Folder": [`roots`] always gives it
/// that name (a shared folder of the same name is the one renamed), so a path into it needs
/// none of the shares looked at. `None` for any other name, or when the user has no tree.
fn my_folder(c: &mut DbConn, user_id: &str, folded: &str) -> Result<Option<Object>> {
    if folded != rules::fold_name(MY_FOLDER) {
        return Ok(None);
    }
    let user = coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?;
    Ok(coffer_store::content::object(c, &user.syncdir_id)?)
}

/// Follows `path` (names below the root, already cleaned of `.` and `..`) to what it names.
fn walk(c: &mut DbConn, user_id: &str, path: &[String]) -> Result<Node> {
    let Some((first, rest)) = path.split_first() else {
        return Ok(Node::Root);
    };
    let folded = rules::fold_name(first);
    let top = match my_folder(c, user_id, &folded)? {
        Some(my) => my,
        None => {
            roots(c, user_id)?
                .into_iter()
                .find(|(n, _, _)| rules::fold_name(n) == folded)
                .ok_or_else(not_found)?
                .1
        }
    };
    let mut cur = top;
    for name in rest {
        if !cur.is_folder() {
            return Err(not_found());
        }
        cur = coffer_store::content::live_child(c, &cur.id, &rules::fold_name(name))?
            .ok_or_else(not_found)?;
    }
    let (o, a) = content::require(c, user_id, &cur.id, Action::List)?;
    content::live(&o).map_err(|_| not_found())?;
    Ok(Node::Object(Box::new(o), a))
}

/// What `path` names, as the user may see it; 404 when nothing they see has that path.
pub fn resolve(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<Node> {
    ctx.read(|c| walk(c, user_id, path))
}

/// The entry of what `path` names (its last name; `/` for the root).
pub fn stat(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<Entry> {
    match resolve(ctx, user_id, path)? {
        Node::Root => Ok(Entry::root()),
        Node::Object(o, a) => {
            let name = path.last().cloned().unwrap_or_default();
            Ok(Entry::of(&name, &o, a))
        }
    }
}

/// The entries of a folder (or of the root), folders first, by name.
pub fn list(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<Vec<Entry>> {
    ctx.read(|c| match walk(c, user_id, path)? {
        Node::Root => Ok(roots(c, user_id)?
            .iter()
            .map(|(n, o, a)| Entry::of(n, o, *a))
            .collect()),
        Node::Object(o, _) if !o.is_folder() => Err(ApiError::new(ErrorCode::InvalidParameter)
            .with_message("Invalid parameter (not a folder).")
            .into()),
        Node::Object(o, a) => {
            let q = coffer_store::content::ChildQuery {
                order: ("name".into(), false),
                offset: 0,
                limit: i64::MAX / 2,
                hide_system: vec!["my".into()],
                files_of: (a == Access::Role(content::UPLOADER)).then(|| user_id.to_string()),
                ..Default::default()
            };
            let page = coffer_store::content::children(c, &o.id, &q)?;
            Ok(page
                .items
                .iter()
                .map(|child| Entry::of(&child.name, child, a))
                .collect())
        }
    })
}

/// The folder a new name goes into, and the name: the parent must be a folder below the root.
fn parent_folder(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<(Object, String)> {
    let Some((name, parent)) = path.split_last() else {
        return Err(denied("the root is read-only"));
    };
    match resolve(ctx, user_id, parent)? {
        Node::Root => Err(denied("the root is read-only")),
        Node::Object(o, _) if o.is_folder() => Ok((*o, name.clone())),
        Node::Object(..) => Err(not_found()),
    }
}

/// `mkdir`: a folder, as `POST /rest/folders/{id}/folders` makes it.
pub fn mkdir(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<()> {
    let (parent, name) = parent_folder(ctx, user_id, path)?;
    let input = folders::FolderInput {
        name: Some(name),
        ..Default::default()
    };
    folders::create(ctx, user_id, &parent.id, &input)?;
    Ok(())
}

/// The object (not the root) a path names.
fn object(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<Object> {
    match resolve(ctx, user_id, path)? {
        Node::Root => Err(denied("the root cannot change")),
        Node::Object(o, _) => Ok(*o),
    }
}

/// `rmdir`: an empty folder to the trash, as `DELETE /rest/folders/{id}` does; a top-level
/// entry of the root cannot go, and a folder with content is refused.
pub fn rmdir(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<()> {
    if path.len() < 2 {
        return Err(denied("a folder of the root cannot be removed"));
    }
    let o = object(ctx, user_id, path)?;
    if !o.is_folder() {
        return Err(not_found());
    }
    let (dirs, files) = ctx.with_conn(|c| Ok(coffer_store::content::child_counts(c, &o.id)?))?;
    if dirs + files > 0 {
        return Err(ApiError::new(ErrorCode::InvalidParameter)
            .with_message("Invalid parameter (the folder is not empty).")
            .into());
    }
    folders::delete(ctx, user_id, &o.id)
}

/// `rm`: a file to the trash, as `DELETE /rest/files/{id}` does.
pub fn remove(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<()> {
    let o = object(ctx, user_id, path)?;
    if o.is_folder() {
        return Err(not_found());
    }
    files::delete(ctx, user_id, &o.id)
}

/// `rename`: a move into another folder and/or a new name, with the rules of the REST move
/// and rename; the new path must not exist.
pub fn rename(ctx: &Ctx, user_id: &str, from: &[String], to: &[String]) -> Result<()> {
    if from.len() < 2 {
        return Err(denied("a folder of the root cannot be renamed"));
    }
    let o = object(ctx, user_id, from)?;
    let (dest, name) = parent_folder(ctx, user_id, to)?;
    if resolve(ctx, user_id, to).is_ok() {
        return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
    }
    rules::validate_name(&name)?;
    if o.parent_id.as_deref() != Some(dest.id.as_str()) {
        if o.is_folder() {
            folders::move_to(ctx, user_id, &o.id, &dest.id)?;
        } else {
            files::move_files(ctx, user_id, std::slice::from_ref(&o.id), &dest.id)?;
        }
    }
    if name != o.name {
        if o.is_folder() {
            let input = folders::FolderInput {
                name: Some(name),
                ..Default::default()
            };
            folders::update(ctx, user_id, &o.id, &input)?;
        } else {
            files::update(ctx, user_id, &o.id, Some(&name), None)?;
        }
    }
    Ok(())
}

/// Decides a download of the file `path` names (permission, scanning), as
/// `GET /rest/files/{id}/content` does.
pub fn download(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<files::Download> {
    let o = object(ctx, user_id, path)?;
    if o.is_folder() {
        return Err(not_found());
    }
    files::download(ctx, user_id, &o.id, None)
}

/// A file about to be written: where it goes, whether the path names something already, and
/// the room its owner has.
#[derive(Debug, Clone)]
pub struct Put {
    /// A new file in the folder, or a new version of the file of that name.
    pub target: files::Target,
    /// Whether the path names something the user sees now.
    pub exists: bool,
    /// The most bytes the put may take: the owner's quota left, at most the largest upload.
    pub room: i64,
    /// The largest upload (setting `maxUploadSize`), to tell the two limits apart.
    pub max_upload_size: i64,
}

/// Decides an open to write at `path` in one read: whether SFTP is still allowed (`None` when
/// not, see [`still_allowed`]), the folder the path leads into (followed once), the name,
/// whether it exists, the permission, and the room, all before any byte (the quota again with
/// the size, when [`commit`] makes the file).
pub fn open_put(ctx: &Ctx, user_id: &str, path: &[String]) -> Result<Option<Put>> {
    ctx.read(|c| {
        if !allowed_in(c, user_id)? {
            return Ok(None);
        }
        put_in(c, user_id, path).map(Some)
    })
}

fn put_in(c: &mut DbConn, user_id: &str, path: &[String]) -> Result<Put> {
    let Some((name, parent)) = path.split_last() else {
        return Err(denied("the root is read-only"));
    };
    let folder = match walk(c, user_id, parent)? {
        Node::Root => return Err(denied("the root is read-only")),
        Node::Object(o, _) if o.is_folder() => o,
        Node::Object(..) => return Err(not_found()),
    };
    let exists = match coffer_store::content::live_child(c, &folder.id, &rules::fold_name(name))? {
        // Only what the user may see counts as there; a failure to tell is a failure.
        Some(o) => match content::require(c, user_id, &o.id, Action::List) {
            Ok(_) => true,
            Err(Error::Api(_)) => false,
            Err(e) => return Err(e),
        },
        None => false,
    };
    let target = files::Target::Folder {
        folder_id: folder.id,
        name: name.clone(),
        disable_auto_version: false,
    };
    let (room, limits) = files::check_target(c, user_id, &target, None)?;
    Ok(Put {
        target,
        exists,
        room,
        max_upload_size: limits.max_upload_size,
    })
}

/// Streams a file's bytes into the blob store within the room [`open_put`] found (quota and the
/// largest upload), fingerprinting them as they pass; [`commit`] makes the file or version of
/// them. Bytes that no file takes are released with [`uploads::release_unused`].
pub async fn store<S>(ctx: &Ctx, put: &Put, body: S) -> Result<files::Stored>
where
    S: futures_util::Stream<Item = std::result::Result<bytes::Bytes, std::io::Error>>
        + Send
        + Unpin
        + 'static,
{
    use futures_util::StreamExt;
    let body = body.map(|r| r.map_err(uploads::BodyError));
    stored(
        put,
        ctx.storage
            .put_stream(body, Some(put.room.max(0) as u64))
            .await,
    )
}

/// [`store`] for a whole file already in memory (one that ended before a batch of writes was
/// full): the same room, the blob stored in one call.
pub async fn store_bytes(ctx: &Ctx, put: &Put, bytes: bytes::Bytes) -> Result<files::Stored> {
    if bytes.len() as u64 > put.room.max(0) as u64 {
        return stored(put, Err(coffer_storage::StorageError::TooLarge));
    }
    stored(put, ctx.storage.put_bytes(bytes).await)
}

/// The stored bytes of a put, or the refusal a failed store answers.
fn stored(
    put: &Put,
    outcome: std::result::Result<coffer_storage::PutOutcome, coffer_storage::StorageError>,
) -> Result<files::Stored> {
    match outcome {
        Ok(blob) => Ok(files::Stored {
            blob: blob.key.to_string(),
            size: blob.size as i64,
            md5: blob.md5.clone(),
            client_created: None,
            client_modified: None,
        }),
        Err(coffer_storage::StorageError::TooLarge) if put.room >= put.max_upload_size => {
            Err(ApiError::new(ErrorCode::LicenseMaxUploadSize).into())
        }
        Err(coffer_storage::StorageError::TooLarge) => {
            Err(ApiError::new(ErrorCode::SystemNoStorageAvailable).into())
        }
        Err(e) => Err(content::storage_error(e)),
    }
}

/// A whole file already in memory (one that ended before a batch of writes was full) stored
/// and committed: [`store_bytes`] then [`commit`]. Where the blob store keeps such bytes in one
/// call (local storage, a few bytes), the store, the commit's write transaction and, when the
/// commit is refused, the release of the bytes run in one blocking call: one hand-off between
/// threads for the close of a small put instead of three (the store's, the writer's, the
/// release's). The bytes are durable before the commit, the commit before the answer.
pub async fn store_and_commit(
    ctx: &Ctx,
    user_id: &str,
    put: &Put,
    bytes: bytes::Bytes,
) -> Result<()> {
    let fits = bytes.len() as u64 <= put.room.max(0) as u64;
    if !fits || !ctx.storage.stores_small_here(bytes.len()) {
        let stored = store_bytes(ctx, put, bytes).await?;
        let r = commit(ctx, user_id, put.target.clone(), stored.clone()).await;
        if r.is_err() {
            uploads::release_unused(ctx, &stored).await;
        }
        return r;
    }
    let (user, put) = (user_id.to_string(), put.clone());
    ctx.blocking(move |ctx| {
        let outcome = ctx
            .storage
            .put_small_here(&bytes)
            .ok_or_else(|| Error::internal("the blob store no longer stores small puts here"))?;
        let stored = stored(&put, outcome)?;
        let r = ctx.write(|c| files::commit(c, ctx, &user, &put.target, &stored).map(|_| ()));
        if r.is_err() {
            uploads::release_unused_here(ctx, &stored);
        }
        r
    })
    .await
}

/// Makes the file or the new version of stored bytes ([`files::commit`]: permission, name and
/// quota checked again, the version, its jobs and its event), in the writer's transaction.
/// Nothing is read back: an SFTP client is answered a status, not the file.
pub async fn commit(
    ctx: &Ctx,
    user_id: &str,
    target: files::Target,
    stored: files::Stored,
) -> Result<()> {
    let (user, ctx2) = (user_id.to_string(), ctx.clone());
    ctx.write_owned(move |c| files::commit(c, &ctx2, &user, &target, &stored).map(|_| ()))
        .await
}

/// The host key's algorithm: Ed25519, which every current SSH client takes.
pub const HOST_KEY_ALGORITHM: &str = "ssh-ed25519";

/// The server's host key (OpenSSH private-key text): the stored one, or a new Ed25519 key made
/// and stored by the first node to start; every node reads the one that was stored first.
pub fn host_key(ctx: &Ctx) -> Result<String> {
    if let Some(k) =
        ctx.with_conn(|c| Ok(coffer_store::ssh_keys::host_key(c, HOST_KEY_ALGORITHM)?))?
    {
        return Ok(k);
    }
    let (private, _) = ssh_keys::new_pair("coffer-sftp-host", None)?;
    ctx.write(|c| {
        coffer_store::ssh_keys::put_host_key_once(c, HOST_KEY_ALGORITHM, &private, crate::now())?;
        coffer_store::ssh_keys::host_key(c, HOST_KEY_ALGORITHM)?
            .ok_or_else(|| Error::internal("the host key vanished"))
    })
}

/// The bytes of a download from `offset` to its end, as a stream of pieces.
pub async fn read_from(
    ctx: &Ctx,
    d: &files::Download,
    offset: u64,
) -> Result<futures_util::stream::BoxStream<'static, Result<bytes::Bytes>>> {
    use futures_util::StreamExt;
    let end = (d.size.max(1) as u64) - 1;
    let read = files::read(ctx, d, Some((offset, end))).await?;
    Ok(read
        .stream
        .map(|r| r.map_err(content::storage_error))
        .boxed())
}

/// A key signed in: the account's throttle counter is cleared, as after a web sign-in.
pub fn signed_in(ctx: &Ctx, email: &str) -> Result<()> {
    throttle::succeeded(ctx, email)
}
