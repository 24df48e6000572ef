//! The folders and files of a source, read live through its connector (no copy is kept):
//! listings with the list grammar's filters, order and paging applied to the remote listing
//! (`/rest/sources/{id}/children`, `folders`, `files`), one folder or file, its content with a
//! byte range, its preview state, deleting remote files and folders, and Coffer's locks on remote
//! files (`/rest/sources/actions/lock`, `unlock`).

use super::{content_id, Named};
use crate::platform::events;
use crate::platform::views::{Link, Listed};
use crate::{now, rfc3339, Ctx, Result};
use coffer_domain::content::RangeOutcome;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_sources::{Connector, Entry, RemotePath};
use coffer_store::sources::SourceLock;
use serde::Serialize;
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::io::Read as _;
use utoipa::ToSchema;

/// A folder or file of a source (`SourceContent`; `SourceFile` and `SourceFolder` add the
/// fields of their kind).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceContentView {
    /// Opaque: the source's id for its root, else `base64url(sourceId ":" path)`.
    pub id: String,
    pub name: String,
    /// The folder it is in; empty for the root of a source.
    pub parent_id: String,
    /// `d` folder, `f` file.
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub modified: Option<String>,
    /// Always `available`: what the remote lists is there.
    pub status: String,
    /// Always false: a source's trash is not shown.
    pub deleted: bool,
    /// The path inside the source, from `/`.
    pub path: String,
    /// No WOPI application serves source files.
    pub wopiapp: bool,
    /// With `with=rootId`: the source's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root_id: Option<String>,
    /// With `with=pathIds`: the ids from the root to this item, comma-separated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path_ids: Option<String>,
    /// With `with=sourceTypeId`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_type_id: Option<String>,
    /// With `with=parent`: the folder it is in (not for the root).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub parent: Option<Box<SourceContentView>>,
    /// Files: whether a user holds Coffer's lock on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked: Option<bool>,
    /// Files: the address of the user holding the lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locked_user_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// Files: `allowed` (a source's files are scanned when they are transferred into Coffer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub av_status: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dlp_status: Option<String>,
    /// Folders: always false (source folders cannot be favorites).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_favorite: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

/// The `with` fields a caller asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct With {
    pub root_id: bool,
    pub path_ids: bool,
    pub source_type_id: bool,
    pub parent: bool,
}

/// Which entries a listing shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Which {
    #[default]
    All,
    Folders,
    Files,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Order {
    Id,
    #[default]
    Name,
    Created,
    Modified,
    Size,
}

/// A text filter on names or descriptions.
#[derive(Debug, Clone)]
pub enum Text {
    Eq(String),
    Contains(String),
}

impl Text {
    fn matches(&self, v: &str) -> bool {
        let v = coffer_domain::content::fold_name(v);
        match self {
            Text::Eq(t) => v == coffer_domain::content::fold_name(t),
            Text::Contains(t) => v.contains(&coffer_domain::content::fold_name(t)),
        }
    }
}

/// A listing's filters, order and page.
#[derive(Debug, Clone, Default)]
pub struct Browse {
    pub which: Which,
    pub names: Vec<Text>,
    /// Source entries carry no description: only an empty value matches.
    pub descriptions: Vec<Text>,
    /// Unix seconds: from (inclusive), until (exclusive).
    pub created: (Option<i64>, Option<i64>),
    pub modified: (Option<i64>, Option<i64>),
    /// `deleted=true` lists nothing (the remote shows no trash).
    pub deleted: Option<bool>,
    /// `type=d` or `type=f` (children only).
    pub kind: Option<char>,
    pub order: Order,
    pub descending: bool,
    pub offset: i64,
    pub limit: i64,
    pub with: With,
}

fn secs(t: Option<time::OffsetDateTime>) -> Option<i64> {
    t.map(|t| t.unix_timestamp())
}

/// When an entry was made: the remote's creation time, else (a file system that keeps none) its
/// modification time.
fn created_of(e: &Entry) -> Option<i64> {
    secs(e.created.or(e.modified))
}

fn within(t: Option<i64>, (from, until): (Option<i64>, Option<i64>)) -> bool {
    if from.is_none() && until.is_none() {
        return true;
    }
    let Some(t) = t else {
        return false;
    };
    from.is_none_or(|f| t >= f) && until.is_none_or(|u| t < u)
}

impl Browse {
    fn keeps(&self, e: &Entry) -> bool {
        let kind_ok = match (self.which, self.kind) {
            (Which::Folders, _) | (_, Some('d')) if !e.is_dir => false,
            (Which::Files, _) | (_, Some('f')) if e.is_dir => false,
            _ => true,
        };
        kind_ok
            && self.deleted != Some(true)
            && self.names.iter().all(|t| t.matches(&e.name))
            && self.descriptions.iter().all(|t| t.matches(""))
            && within(created_of(e), self.created)
            && within(secs(e.modified), self.modified)
    }
}

/// The parent path of a non-root path ("" for a top-level entry).
fn parent_of(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(p, _)| p)
}

/// The ids from the root to `path`, comma-separated.
fn path_ids(source_id: &str, path: &str) -> String {
    let mut ids = vec![source_id.to_string()];
    let mut at = String::new();
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        if !at.is_empty() {
            at.push('/');
        }
        at.push_str(seg);
        ids.push(content_id(source_id, &at));
    }
    ids.join(",")
}

/// The lock holders' addresses by user id.
fn holders(ctx: &Ctx, locks: &[SourceLock]) -> Result<HashMap<String, String>> {
    let mut out = HashMap::new();
    if locks.is_empty() {
        return Ok(out);
    }
    ctx.read(|c| {
        for l in locks {
            if !out.contains_key(&l.user_id) {
                if let Some(u) = coffer_store::users::by_id(c, &l.user_id)? {
                    out.insert(l.user_id.clone(), u.email);
                }
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// Renders entries of one source, with their locks.
fn render(ctx: &Ctx, s: &Named, entries: &[Entry], with: With) -> Result<Vec<SourceContentView>> {
    let source_id = s.id();
    let paths: Vec<String> = entries
        .iter()
        .filter(|e| !e.is_dir)
        .map(|e| e.path.as_str().to_string())
        .collect();
    // The files of a listing's page share their folder: its locks are one query of a text
    // the connection keeps prepared, where naming each path would be a new statement for
    // every page (and one for each 500 paths).
    let dir = paths.first().map(|p| parent_of(p));
    let locks = match dir {
        None => Vec::new(),
        Some(dir) if paths.len() > 1 && paths.iter().all(|p| parent_of(p) == dir) => {
            let shown: HashSet<&str> = paths.iter().map(String::as_str).collect();
            let mut locks =
                ctx.read(|c| Ok(coffer_store::sources::locks_in(c, &source_id, dir)?))?;
            locks.retain(|l| shown.contains(l.path.as_str()));
            locks
        }
        Some(_) => ctx.read(|c| Ok(coffer_store::sources::locks_among(c, &source_id, &paths)?))?,
    };
    let who = holders(ctx, &locks)?;
    let by_path: HashMap<&str, &SourceLock> = locks.iter().map(|l| (l.path.as_str(), l)).collect();
    // The entries of a listing share their folder: its id is encoded once.
    let mut folder: Option<(&str, String)> = None;
    Ok(entries
        .iter()
        .map(|e| {
            let path = e.path.as_str();
            let lock = by_path.get(path);
            let parent = parent_of(path);
            let parent_id = match &folder {
                _ if path.is_empty() => String::new(),
                Some((p, id)) if *p == parent => id.clone(),
                _ => {
                    let id = content_id(&source_id, parent);
                    folder = Some((parent, id.clone()));
                    id
                }
            };
            item(
                s,
                &source_id,
                e,
                parent_id,
                lock.and_then(|l| who.get(&l.user_id)),
                lock.is_some(),
                with,
            )
        })
        .collect())
}

/// The id of the folder holding the entry at `path` (empty for the root).
fn parent_id(source_id: &str, path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        content_id(source_id, parent_of(path))
    }
}

fn item(
    s: &Named,
    source_id: &str,
    e: &Entry,
    parent_id: String,
    holder: Option<&String>,
    locked: bool,
    with: With,
) -> SourceContentView {
    let path = e.path.as_str();
    let is_root = path.is_empty();
    let name = if is_root {
        match s {
            Named::User(u) => u.name.clone(),
            Named::Dir(d) => d.name.clone(),
        }
    } else {
        e.name.clone()
    };
    let file = !e.is_dir;
    SourceContentView {
        id: content_id(source_id, path),
        name,
        parent_id,
        kind: if file { "f" } else { "d" }.into(),
        created: created_of(e).map(rfc3339),
        modified: secs(e.modified).map(rfc3339),
        status: "available".into(),
        deleted: false,
        path: ["/", path].concat(),
        wopiapp: false,
        root_id: with.root_id.then(|| source_id.to_string()),
        path_ids: with.path_ids.then(|| path_ids(source_id, path)),
        source_type_id: with.source_type_id.then(|| s.type_id().to_string()),
        parent: None,
        locked: file.then_some(locked),
        locked_user_name: holder.cloned().filter(|_| file),
        size: if file {
            Some(e.size.unwrap_or(0).min(i64::MAX as u64) as i64)
        } else {
            None
        },
        mime: if file {
            Some(
                e.mime
                    .clone()
                    .unwrap_or_else(|| coffer_domain::content::guess_mime(&e.name).to_string()),
            )
        } else {
            None
        },
        av_status: file.then(|| "allowed".to_string()),
        dlp_status: file.then(|| "allowed".to_string()),
        is_favorite: (!file).then_some(false),
        links: None,
    }
}

/// The record of the folder `path` is in, for `with=parent`.
fn parent_view(
    ctx: &Ctx,
    s: &Named,
    conn: &dyn Connector,
    path: &str,
) -> Result<Option<Box<SourceContentView>>> {
    if path.is_empty() {
        return Ok(None);
    }
    let parent = RemotePath::parse(parent_of(path))
        .map_err(|_| Error::internal("the parent of a remote path is refused"))?;
    let e = stat(ctx, s, conn, &parent)?;
    let source_id = s.id();
    Ok(Some(Box::new(item(
        s,
        &source_id,
        &e,
        parent_id(&source_id, e.path.as_str()),
        None,
        false,
        With::default(),
    ))))
}

/// The entry at `path`: the root is always a folder.
fn stat(ctx: &Ctx, s: &Named, conn: &dyn Connector, path: &RemotePath) -> Result<Entry> {
    conn.stat(path).map_err(|e| super::remote(ctx, s, e))
}

/// Orders entries by `order` (then by name, ascending, whatever the direction). By name, each
/// name is folded once (`sort_by_cached_key`), not twice in every comparison: a fold
/// normalises and allocates.
fn order(entries: &mut [Entry], order: Order, descending: bool) {
    use coffer_domain::content::fold_name;
    use std::cmp::Reverse;
    match order {
        Order::Id | Order::Name if descending => {
            entries.sort_by_cached_key(|e| (Reverse(fold_name(&e.name)), e.name.clone()))
        }
        Order::Id | Order::Name => {
            entries.sort_by_cached_key(|e| (fold_name(&e.name), e.name.clone()))
        }
        _ => entries.sort_by(|a, b| {
            let by = match order {
                Order::Created => created_of(a).cmp(&created_of(b)),
                Order::Modified => secs(a.modified).cmp(&secs(b.modified)),
                Order::Size => a.size.cmp(&b.size),
                // Ordered above.
                Order::Id | Order::Name => std::cmp::Ordering::Equal,
            };
            let by = if descending { by.reverse() } else { by };
            by.then_with(|| a.name.cmp(&b.name))
        }),
    }
}

/// `GET /rest/sources/{id}/children`, `folders`, `files`: the entries directly inside the
/// folder `id` names (a source's id is its root), filtered, ordered and paged in memory.
pub fn list(ctx: &Ctx, user_id: &str, id: &str, q: &Browse) -> Result<Listed<SourceContentView>> {
    let (s, dir) = super::resolve(ctx, user_id, id)?;
    let conn = super::connect(ctx, &s)?;
    let mut entries = conn.list(&dir).map_err(|e| super::remote(ctx, &s, e))?;
    entries.retain(|e| q.keeps(e));
    order(&mut entries, q.order, q.descending);
    let total = entries.len() as i64;
    let page: Vec<Entry> = entries
        .into_iter()
        .skip(q.offset.max(0) as usize)
        .take(q.limit.max(0) as usize)
        .collect();
    let mut items = render(ctx, &s, &page, q.with)?;
    if q.with.parent {
        let folder = stat(ctx, &s, conn.as_ref(), &dir)?;
        let source_id = s.id();
        let p = Some(Box::new(item(
            &s,
            &source_id,
            &folder,
            parent_id(&source_id, folder.path.as_str()),
            None,
            false,
            With::default(),
        )));
        for v in &mut items {
            v.parent = p.clone();
        }
    }
    Ok(Listed {
        items,
        total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// `GET /rest/sources/files/{id}` (`folder` false) and `GET /rest/sources/folders/{id}`
/// (`folder` true): one entry; an entry of the other kind answers 404.
pub fn get(
    ctx: &Ctx,
    user_id: &str,
    id: &str,
    folder: bool,
    with: With,
) -> Result<SourceContentView> {
    let (s, path) = super::resolve(ctx, user_id, id)?;
    let conn = super::connect(ctx, &s)?;
    let e = stat(ctx, &s, conn.as_ref(), &path)?;
    if e.is_dir != folder {
        return Err(ApiError::new(ErrorCode::EntityNotFound).into());
    }
    let mut v = render(ctx, &s, std::slice::from_ref(&e), with)?
        .pop()
        .ok_or_else(|| Error::internal("an entry rendered to nothing"))?;
    if with.parent {
        v.parent = parent_view(ctx, &s, conn.as_ref(), path.as_str())?;
    }
    Ok(v)
}

/// A file's content as it is read from the source.
pub struct Content {
    pub name: String,
    pub mime: String,
    /// The file's whole size.
    pub size: u64,
    /// The bytes served (inclusive), when a range was asked for.
    pub span: Option<(u64, u64)>,
    pub body: Box<dyn std::io::Read + Send>,
}

/// What a content request comes to.
pub enum Opened {
    Content(Content),
    /// The range lies outside the file (416); the file's size.
    Unsatisfiable(u64),
}

/// `GET /rest/sources/{id}/content`: a file's bytes, streamed from the source, with one byte
/// range (`Range` as the content download takes it).
pub fn open(ctx: &Ctx, user_id: &str, id: &str, range: Option<&str>) -> Result<Opened> {
    let (s, path) = super::resolve(ctx, user_id, id)?;
    let conn = super::connect(ctx, &s)?;
    let e = stat(ctx, &s, conn.as_ref(), &path)?;
    if e.is_dir {
        return Err(ApiError::new(ErrorCode::EntityNotFound).into());
    }
    let size = e.size.unwrap_or(0);
    let span = match coffer_domain::content::parse_range(range, size) {
        RangeOutcome::Full => None,
        RangeOutcome::Partial { start, end } => Some((start, end)),
        RangeOutcome::Unsatisfiable => return Ok(Opened::Unsatisfiable(size)),
    };
    let mime = e
        .mime
        .clone()
        .unwrap_or_else(|| coffer_domain::content::guess_mime(&e.name).to_string());
    let body: Box<dyn std::io::Read + Send> = if size == 0 {
        Box::new(std::io::empty())
    } else {
        let d = conn
            .read(&path, span.map(|(a, b)| (a, Some(b))))
            .map_err(|e| super::remote(ctx, &s, e))?;
        match (span, d.range) {
            // The remote served the whole file where a range was asked for: skip to it here.
            (Some((a, b)), None) => {
                let mut body = d.body;
                std::io::copy(&mut (&mut body).take(a), &mut std::io::sink())
                    .map_err(|e| Error::internal_in("skipping to a range of a source file", e))?;
                Box::new(std::io::Read::take(body, b - a + 1))
            }
            // Never more than the size announced, whatever the remote sends.
            (Some((a, b)), Some(_)) => Box::new(std::io::Read::take(d.body, b - a + 1)),
            (None, _) => Box::new(std::io::Read::take(d.body, size)),
        }
    };
    Ok(Opened::Content(Content {
        name: e.name,
        mime,
        size,
        span,
        body,
    }))
}

/// A source file's preview state (`SourcePreviewStatus`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewView {
    /// `ready` (shown in place from `link`), `failed` (no preview for this type) or
    /// `not_supported_empty` (an empty file).
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// `GET /rest/sources/{id}/preview`: images, PDF, audio, video and plain text are shown in place
/// from their content; other types have no preview.
pub fn preview(ctx: &Ctx, user_id: &str, id: &str) -> Result<PreviewView> {
    let (s, path) = super::resolve(ctx, user_id, id)?;
    let conn = super::connect(ctx, &s)?;
    let e = stat(ctx, &s, conn.as_ref(), &path)?;
    if e.is_dir {
        return Err(ApiError::new(ErrorCode::AccessUser).into());
    }
    if e.size.unwrap_or(0) == 0 {
        return Ok(PreviewView {
            status: "not_supported_empty".into(),
            mime: None,
            link: None,
        });
    }
    let mime = e
        .mime
        .clone()
        .unwrap_or_else(|| coffer_domain::content::guess_mime(&e.name).to_string());
    if coffer_domain::content::serve_inline(&mime) || mime.starts_with("text/plain") {
        let link = format!(
            "{}/rest/sources/{}/content?inline=true",
            ctx.config.base_url,
            content_id(&s.id(), path.as_str())
        );
        Ok(PreviewView {
            status: "ready".into(),
            mime: Some(mime),
            link: Some(link),
        })
    } else {
        Ok(PreviewView {
            status: "failed".into(),
            mime: None,
            link: None,
        })
    }
}

/// `DELETE /rest/sources/files/{id}`: deletes a remote file. A file another user holds locked
/// answers 422 `ERR_FILE_IS_IN_USE_BY_OTHER_USER`; one the caller holds,
/// `ERR_FILE_IS_IN_USE_BY_CURRENT_USER` unless `force` (their lock goes with the file).
pub fn delete_file(ctx: &Ctx, user_id: &str, id: &str, force: bool) -> Result<()> {
    let (s, path) = super::resolve(ctx, user_id, id)?;
    let conn = super::connect(ctx, &s)?;
    let e = stat(ctx, &s, conn.as_ref(), &path)?;
    if e.is_dir {
        return Err(ApiError::new(ErrorCode::EntityNotFound).into());
    }
    let source_id = s.id();
    let lock = ctx.read(|c| {
        Ok(coffer_store::sources::lock_of(
            c,
            &source_id,
            path.as_str(),
        )?)
    })?;
    let deleted = match lock {
        Some(l) if l.user_id != user_id => {
            return Err(ApiError::new(ErrorCode::FileIsInUseByOtherUser).into())
        }
        Some(_) if !force => return Err(ApiError::new(ErrorCode::FileIsInUseByCurrentUser).into()),
        // The caller's remote lock goes with the file: the delete names its token, so nobody
        // can take the file between an unlock and the delete.
        Some(SourceLock {
            remote_token: Some(token),
            ..
        }) => conn.delete_locked(&path, &token),
        _ => conn.delete(&path),
    };
    deleted.map_err(|e| super::remote(ctx, &s, e))?;
    forget(ctx, user_id, &s, &path, "source.file.delete")
}

/// Drops Coffer's locks on what was deleted and records the event.
fn forget(ctx: &Ctx, user_id: &str, s: &Named, path: &RemotePath, subject: &str) -> Result<()> {
    let source_id = s.id();
    ctx.write(|c| {
        coffer_store::sources::delete_locks_under(c, &source_id, path.as_str())?;
        events::record(
            c,
            subject,
            Some(user_id),
            json!({"sourceId": source_id, "id": content_id(&source_id, path.as_str()), "path": format!("/{}", path.as_str())}),
        )
    })
}

/// `DELETE /rest/sources/folders/{id}`: deletes a remote folder with what it holds. The root of
/// a source answers 403 `ERR_ACCESS_USER`; a folder holding a file a user has locked, 403
/// `ERR_ENTITY_CONTAINS_LOCKED_FILES`.
pub fn delete_folder(ctx: &Ctx, user_id: &str, id: &str) -> Result<()> {
    let (s, path) = super::resolve(ctx, user_id, id)?;
    if path.as_str().is_empty() {
        return Err(ApiError::new(ErrorCode::AccessUser)
            .with_message("The root of a source is not deleted; delete the source instead.")
            .into());
    }
    let conn = super::connect(ctx, &s)?;
    let e = stat(ctx, &s, conn.as_ref(), &path)?;
    if !e.is_dir {
        return Err(ApiError::new(ErrorCode::EntityNotFound).into());
    }
    let source_id = s.id();
    let prefix = format!("{}/", path.as_str());
    let held = ctx.read(|c| Ok(coffer_store::sources::locks_under(c, &source_id, &prefix)?))?;
    if held > 0 {
        return Err(ApiError::new(ErrorCode::EntityContainsLockedFiles).into());
    }
    conn.delete(&path).map_err(|e| super::remote(ctx, &s, e))?;
    forget(ctx, user_id, &s, &path, "source.folder.delete")
}

/// What a bulk lock or unlock came to: the ids that failed (only with `partialSuccess`; without
/// it the first failure fails the call and nothing is changed).
#[derive(Debug, Clone, Default)]
pub struct Bulk {
    pub failed: Vec<String>,
}

/// A file to lock or unlock, checked.
struct Target {
    id: String,
    source: Named,
    path: RemotePath,
    lock: Option<SourceLock>,
    conn: Box<dyn Connector>,
}

/// Checks every id: a file of a source the caller sees. Without `partial` the first failure
/// fails the call with every failing id.
fn targets(
    ctx: &Ctx,
    user_id: &str,
    ids: &[String],
    partial: bool,
    check: impl Fn(&Target) -> Result<()>,
) -> Result<(Vec<Target>, Vec<String>)> {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    let mut first: Option<ApiError> = None;
    let mut seen = std::collections::HashSet::new();
    for id in ids.iter().filter(|i| seen.insert(i.as_str())) {
        let one = (|| -> Result<Target> {
            let (source, path) = super::resolve(ctx, user_id, id)?;
            let conn = super::connect(ctx, &source)?;
            let e = stat(ctx, &source, conn.as_ref(), &path)?;
            if e.is_dir {
                return Err(ApiError::field(ErrorCode::InvalidParameter, "id:in")
                    .with_message("Only files are locked.")
                    .into());
            }
            let sid = source.id();
            let lock = ctx.read(|c| Ok(coffer_store::sources::lock_of(c, &sid, path.as_str())?))?;
            let t = Target {
                id: id.clone(),
                source,
                path,
                lock,
                conn,
            };
            check(&t)?;
            Ok(t)
        })();
        match one {
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

/// `PATCH /rest/sources/actions/lock`: takes Coffer's lock on each file (and the remote's own
/// lock where the server offers one). A file another user holds fails (403
/// `ERR_ENTITY_LOCKED`); one the caller holds already stays locked.
pub fn lock(ctx: &Ctx, user_id: &str, ids: &[String], partial: bool) -> Result<Bulk> {
    let (targets, mut failed) = targets(ctx, user_id, ids, partial, |t| match &t.lock {
        Some(l) if l.user_id != user_id => Err(ApiError::new(ErrorCode::EntityLocked).into()),
        _ => Ok(()),
    })?;
    let owner = ctx
        .read(|c| Ok(coffer_store::users::by_id(c, user_id)?))?
        .map(|u| u.email)
        .unwrap_or_else(|| user_id.to_string());
    let mut taken: Vec<(String, RemotePath, Option<String>, &dyn Connector)> = Vec::new();
    let mut refusal: Option<Error> = None;
    for t in targets.iter().filter(|t| t.lock.is_none()) {
        let conn = &t.conn;
        let token = match conn.lock(&t.path, &owner) {
            Ok(token) => token,
            Err(coffer_sources::SourceError::Unsupported) => None,
            Err(e) => {
                let err = super::remote(ctx, &t.source, e);
                if partial && matches!(err, Error::Api(_)) {
                    failed.push(t.id.clone());
                    continue;
                }
                refusal = Some(err);
                break;
            }
        };
        let sid = t.source.id();
        let stored = ctx.write(|c| {
            Ok(coffer_store::sources::insert_lock(
                c,
                &sid,
                t.path.as_str(),
                user_id,
                token.as_deref(),
                now(),
            )?)
        });
        match stored {
            Ok(true) => taken.push((sid, t.path.clone(), token, conn.as_ref())),
            Ok(false) => {
                // Another request took it in between.
                if let Some(tok) = &token {
                    let _ = conn.unlock(&t.path, tok);
                }
                if partial {
                    failed.push(t.id.clone());
                } else {
                    refusal = Some(ApiError::new(ErrorCode::EntityLocked).into());
                    break;
                }
            }
            Err(e) => {
                refusal = Some(e);
                break;
            }
        }
    }
    if let Some(err) = refusal {
        // All or nothing: give back what this call took.
        for (sid, path, token, conn) in taken {
            if let Some(tok) = &token {
                let _ = conn.unlock(&path, tok);
            }
            ctx.write(|c| {
                if let Some(l) = coffer_store::sources::lock_of(c, &sid, path.as_str())? {
                    coffer_store::sources::delete_lock(c, l.id)?;
                }
                Ok(())
            })?;
        }
        return Err(err);
    }
    if !taken.is_empty() {
        ctx.write(|c| {
            for (sid, path, _, _) in &taken {
                events::record(
                    c,
                    "source.file.lock",
                    Some(user_id),
                    json!({"sourceId": sid, "id": content_id(sid, path.as_str())}),
                )?;
            }
            Ok(())
        })?;
    }
    Ok(Bulk { failed })
}

/// `PATCH /rest/sources/actions/unlock`: gives back the caller's locks. A file another user
/// holds fails (403 `ERR_ACCESS_USER`); one nobody holds is no change.
pub fn unlock(ctx: &Ctx, user_id: &str, ids: &[String], partial: bool) -> Result<Bulk> {
    let (targets, failed) = targets(ctx, user_id, ids, partial, |t| match &t.lock {
        Some(l) if l.user_id != user_id => Err(ApiError::new(ErrorCode::AccessUser)
            .with_message("The file is locked by another user.")
            .into()),
        _ => Ok(()),
    })?;
    for t in &targets {
        if let Some(l) = &t.lock {
            release(ctx, t.conn.as_ref(), user_id, l, &t.path, &t.id)?;
        }
    }
    Ok(Bulk { failed })
}

/// Gives back lock `l` on the remote file at `path` (content id `id`), held by `user_id`: the
/// server's lock first (best effort: a remote lock that expired or went away is no reason to
/// keep Coffer's), then Coffer's record, with its event.
pub(super) fn release(
    ctx: &Ctx,
    conn: &dyn Connector,
    user_id: &str,
    l: &SourceLock,
    path: &RemotePath,
    id: &str,
) -> Result<()> {
    if let Some(token) = &l.remote_token {
        if let Err(e) = conn.unlock(path, token) {
            log::info!("a remote lock could not be released: {e:?}");
        }
    }
    ctx.write(|c| {
        coffer_store::sources::delete_lock(c, l.id)?;
        events::record(
            c,
            "source.file.unlock",
            Some(user_id),
            json!({"sourceId": l.source_id, "id": id}),
        )
    })
}
