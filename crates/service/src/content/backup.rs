//! `cofferd backup DIR` and `cofferd restore DIR`: a consistent copy of a running installation
//! (database and file content), and putting one back into an empty one.
//!
//! A backup directory holds `manifest.json` (format, backend, schema version, counts), the
//! database (`coffer.db` for SQLite; `database/<table>.jsonl` for PostgreSQL, one JSON object
//! per row), `blobs.txt` (the content the database refers to, one key per line) and that
//! content under `storage/` (a local blob store, whatever store the installation uses).
//!
//! The race with the blob sweep. The database copy is one snapshot
//! (`coffer_store::backup`); its references are read from that same snapshot, then the blobs
//! are copied. Content is addressed by its hash and never changes, but the sweep may delete a
//! blob that the snapshot still counted and the live database no longer does. Such a blob is
//! missing when its turn comes: the backup then takes a new snapshot and copies what is still
//! missing (what was copied stays), until a snapshot's blobs are all there. The sweep only frees
//! content nothing refers to any more, so each round has less to miss; after
//! [`ATTEMPTS`] rounds the backup gives up and says so.

use crate::{now, Ctx, Result};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_storage::{BlobKey, BlobStore, StorageError};
use coffer_store::{Backend, DatabaseUrl, DbConn};
use std::collections::hash_map::Entry;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

/// The backup format this build writes and reads.
const FORMAT: u32 = 1;
const MANIFEST: &str = "manifest.json";
const SQLITE_FILE: &str = "coffer.db";
const PG_DIR: &str = "database";
const BLOBS_FILE: &str = "blobs.txt";
const STORE_DIR: &str = "storage";
/// Snapshots taken at most before a backup gives up on blobs that keep being swept.
pub const ATTEMPTS: u32 = 5;

/// What a backup holds (its `manifest.json`), printed by both commands.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format: u32,
    /// `sqlite` or `postgres`: a backup restores into a database of the same kind.
    pub backend: String,
    /// When the snapshot was taken (Unix seconds).
    pub created_at: i64,
    /// The applied migrations, by version: the schema the rows fit.
    pub migrations: Vec<String>,
    /// PostgreSQL: each table with its number of rows.
    #[serde(default)]
    pub tables: Vec<(String, usize)>,
    /// The blobs the database refers to, all of them in the backup.
    pub blobs: usize,
    /// Snapshots it took (more than one when the sweep freed content meanwhile).
    pub attempts: u32,
}

fn refused(message: String) -> Error {
    ApiError::new(ErrorCode::InvalidParameter)
        .with_message(message)
        .into()
}

fn io(what: &Path, e: std::io::Error) -> Error {
    Error::internal_in("backup", format!("{}: {e}", what.display()))
}

fn backend_name(b: Backend) -> &'static str {
    match b {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    }
}

/// Whether `dir` is missing or holds nothing.
fn is_empty_dir(dir: &Path) -> Result<bool> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => Ok(entries.next().is_none()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(true),
        Err(e) => Err(io(dir, e)),
    }
}

/// Takes a consistent backup of the running installation into `dir`, which must be missing or
/// empty. The server may go on serving and writing meanwhile.
pub async fn backup(ctx: &Ctx, dir: &Path) -> Result<Manifest> {
    if !is_empty_dir(dir)? {
        return Err(refused(format!(
            "{} is not empty: a backup goes into a new or empty directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let copy = BlobStore::open(&dir.join(STORE_DIR).display().to_string())
        .map_err(|e| Error::internal_in("backup storage", e))?;
    let backend = ctx.db.backend();
    let partial = dir.join(".database.partial");
    for attempt in 1..=ATTEMPTS {
        remove(&partial)?;
        let (at, p) = (now(), partial.clone());
        let (migrations, tables, keys) = ctx
            .blocking(move |ctx| ctx.with_conn(|c| snapshot(c, &p)))
            .await?;
        let mut missing = 0;
        for key in &keys {
            if !copy_blob(&ctx.storage, &copy, key).await? {
                missing += 1;
            }
        }
        if missing > 0 {
            log::warn!(
                "backup: {missing} blobs of snapshot {attempt} were freed meanwhile; taking a new snapshot"
            );
            continue;
        }
        let final_db = dir.join(match backend {
            Backend::Sqlite => SQLITE_FILE,
            Backend::Postgres => PG_DIR,
        });
        std::fs::rename(&partial, &final_db).map_err(|e| io(&final_db, e))?;
        let list: String = keys.iter().map(|k| format!("{k}\n")).collect();
        write_synced(&dir.join(BLOBS_FILE), list.as_bytes())?;
        let manifest = Manifest {
            format: FORMAT,
            backend: backend_name(backend).into(),
            created_at: at,
            migrations,
            tables,
            blobs: keys.len(),
            attempts: attempt,
        };
        let text = serde_json::to_vec_pretty(&manifest).map_err(Error::internal)?;
        // The manifest comes last: a directory without one is an unfinished backup.
        write_synced(&dir.join(MANIFEST), &text)?;
        return Ok(manifest);
    }
    Err(refused(format!(
        "the content kept changing: after {ATTEMPTS} snapshots some blobs were still freed before they were copied; run the backup again"
    )))
}

type Snapshot = (Vec<String>, Vec<(String, usize)>, Vec<BlobKey>);

/// The database copy at `into` and, from the same snapshot, its migrations, tables and blobs.
fn snapshot(c: &mut DbConn, into: &Path) -> Result<Snapshot> {
    let keys = |ids: Vec<String>| -> Result<Vec<BlobKey>> {
        ids.iter()
            .map(|id| BlobKey::parse(id).map_err(|e| Error::internal_in("blob id", e)))
            .collect()
    };
    match c.backend() {
        Backend::Sqlite => {
            let path = into.display().to_string();
            coffer_store::backup::sqlite_copy_to(c, &path)?;
            // The copy is the snapshot: its own references are the ones to copy.
            let mut copy = coffer_store::establish(&DatabaseUrl::new(format!("sqlite://{path}")))?;
            let migrations = coffer_store::backup::migration_versions(&mut copy)?;
            let ids = coffer_store::content::referenced_blob_ids(&mut copy)?;
            Ok((migrations, Vec::new(), keys(ids)?))
        }
        Backend::Postgres => {
            std::fs::create_dir_all(into).map_err(|e| io(into, e))?;
            coffer_store::backup::pg_snapshot(c, |c| {
                let migrations = coffer_store::backup::migration_versions(c)?;
                let ids = coffer_store::content::referenced_blob_ids(c)?;
                let mut files: std::collections::HashMap<
                    String,
                    std::io::BufWriter<std::fs::File>,
                > = Default::default();
                let tables = coffer_store::backup::pg_export(c, |table, row| {
                    let w = match files.entry(table.to_string()) {
                        Entry::Occupied(e) => e.into_mut(),
                        Entry::Vacant(e) => {
                            let f = std::fs::File::create(into.join(format!("{table}.jsonl")))?;
                            e.insert(std::io::BufWriter::new(f))
                        }
                    };
                    w.write_all(row.as_bytes())?;
                    w.write_all(b"\n")
                })?;
                for (table, w) in files {
                    let f = w
                        .into_inner()
                        .map_err(|e| io(&into.join(&table), e.into_error()))?;
                    f.sync_all().map_err(|e| io(&into.join(&table), e))?;
                }
                Ok((migrations, tables, keys(ids)?))
            })
        }
    }
}

/// Copies one blob from `from` into `to` unless `to` has it; `false` when `from` lacks it.
/// The copy is checked against its key (the hash of the content).
async fn copy_blob(from: &BlobStore, to: &BlobStore, key: &BlobKey) -> Result<bool> {
    let storage = |e: StorageError| Error::internal_in("storage", e);
    if to.exists(key).await.map_err(storage)? {
        return Ok(true);
    }
    let read = match from.get(key, None).await {
        Ok(r) => r,
        Err(StorageError::NotFound) => return Ok(false),
        Err(e) => return Err(storage(e)),
    };
    let put = to.put_stream(read.stream, None).await.map_err(storage)?;
    if &put.key != key {
        to.delete(&put.key).await.map_err(storage)?;
        return Err(Error::internal_in(
            "storage",
            format!("blob {key} does not hold the content its name says"),
        ));
    }
    Ok(true)
}

fn remove(path: &Path) -> Result<()> {
    let r = if path.is_dir() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    match r {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io(path, e)),
        _ => Ok(()),
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = std::fs::File::create(path).map_err(|e| io(path, e))?;
    f.write_all(bytes).map_err(|e| io(path, e))?;
    f.sync_all().map_err(|e| io(path, e))
}

/// Reads the manifest of the backup in `dir`.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST);
    let text = std::fs::read(&path).map_err(|_| {
        refused(format!(
            "{} is not a finished Coffer backup (no {MANIFEST})",
            dir.display()
        ))
    })?;
    let m: Manifest = serde_json::from_slice(&text)
        .map_err(|e| refused(format!("{} is not readable: {e}", path.display())))?;
    if m.format != FORMAT {
        return Err(refused(format!(
            "the backup has format {}; this cofferd reads format {FORMAT}",
            m.format
        )));
    }
    Ok(m)
}

/// Puts the backup in `dir` into the database `url` and the blob store `storage_url`. Both must
/// be empty: the database never used (SQLite: no file; PostgreSQL: no tables), the store
/// holding no blob but the backup's own (so a restore that stopped while copying can be run
/// again). Anything else is refused before a thing is changed.
pub async fn restore(url: &DatabaseUrl, storage_url: &str, dir: &Path) -> Result<Manifest> {
    let manifest = read_manifest(dir)?;
    let backend = url.backend();
    if manifest.backend != backend_name(backend) {
        return Err(refused(format!(
            "the backup is of a {} database and the target is {}: restore into the same kind",
            manifest.backend,
            backend_name(backend)
        )));
    }
    let known = coffer_store::migrate::known_versions(backend)?;
    if let Some(v) = manifest.migrations.iter().find(|v| !known.contains(v)) {
        return Err(refused(format!(
            "the backup's schema has migration {v}, unknown to this cofferd: restore it with a cofferd at least as new as the one that made it"
        )));
    }
    if backend == Backend::Postgres && manifest.migrations != known {
        return Err(refused(
            "the backup's schema is older than this cofferd's: restore it with the cofferd that made it, then upgrade".into(),
        ));
    }
    // The database first: refusing there touches nothing, not even the store's directory.
    let mut pg = None;
    match backend {
        Backend::Sqlite => {
            let path = Path::new(url.sqlite_path());
            if std::fs::metadata(path).is_ok_and(|m| m.len() > 0) {
                return Err(refused(format!(
                    "the database {} exists: restore needs an empty data directory (or an unused database)",
                    path.display()
                )));
            }
        }
        Backend::Postgres => {
            let mut c = coffer_store::establish(url)?;
            if !coffer_store::backup::pg_is_empty(&mut c)? {
                return Err(refused(format!(
                    "the database {url} has tables: restore needs a new, empty database"
                )));
            }
            pg = Some(c);
        }
    }
    let keys = read_keys(&dir.join(BLOBS_FILE))?;
    let target = BlobStore::open(storage_url).map_err(|e| Error::internal_in("storage", e))?;
    let present = target
        .list_keys()
        .await
        .map_err(|e| Error::internal_in("storage", e))?;
    let wanted: std::collections::HashSet<&BlobKey> = keys.iter().collect();
    if present.iter().any(|k| !wanted.contains(k)) {
        return Err(refused(format!(
            "the blob store {} holds content: restore needs an empty one",
            target.describe()
        )));
    }
    let source = BlobStore::open(&dir.join(STORE_DIR).display().to_string())
        .map_err(|e| Error::internal_in("backup storage", e))?;
    for key in &keys {
        if !copy_blob(&source, &target, key).await? {
            return Err(refused(format!(
                "the backup lacks blob {key}: it is incomplete"
            )));
        }
    }
    match pg {
        None => restore_sqlite(dir, Path::new(url.sqlite_path()))?,
        Some(mut c) => {
            coffer_store::migrate::run(&mut c)?;
            let order = coffer_store::backup::pg_insert_order(&mut c)?;
            let data = dir.join(PG_DIR);
            coffer_store::backup::pg_import(&mut c, &order, |table, insert| {
                let path = data.join(format!("{table}.jsonl"));
                let file = match std::fs::File::open(&path) {
                    Ok(f) => f,
                    // A table the backup has no rows for.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                    Err(e) => {
                        return Err(coffer_store::StoreError::Connection(format!(
                            "{}: {e}",
                            path.display()
                        )))
                    }
                };
                let mut batch = Vec::new();
                for line in std::io::BufReader::new(file).lines() {
                    let line = line.map_err(|e| {
                        coffer_store::StoreError::Connection(format!("{}: {e}", path.display()))
                    })?;
                    batch.push(line);
                    if batch.len() == coffer_store::backup::import_batch() {
                        insert(&batch)?;
                        batch.clear();
                    }
                }
                if !batch.is_empty() {
                    insert(&batch)?;
                }
                Ok(())
            })?;
        }
    }
    Ok(manifest)
}

fn read_keys(path: &Path) -> Result<Vec<BlobKey>> {
    let text = std::fs::read_to_string(path).map_err(|e| io(path, e))?;
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            BlobKey::parse(l)
                .map_err(|_| refused(format!("{} names a blob wrongly: {l:?}", path.display())))
        })
        .collect()
}

/// Puts the SQLite copy in place: written beside the target under another name, then renamed,
/// so the target is whole or absent.
fn restore_sqlite(dir: &Path, target: &Path) -> Result<()> {
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    let mut tmp = PathBuf::from(target);
    tmp.set_extension("restoring");
    std::fs::copy(dir.join(SQLITE_FILE), &tmp).map_err(|e| io(&tmp, e))?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(|e| io(&tmp, e))?;
    std::fs::rename(&tmp, target).map_err(|e| io(target, e))
}
