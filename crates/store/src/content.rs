//! Folders, files, versions, blobs, members, upload sessions and comments.
//!
//! Tree queries (ancestors, subtrees) are recursive CTEs, written once: SQLite numbers `$n`
//! parameters in the order they first appear, as PostgreSQL numbers them, so the same text binds
//! on both backends.

use crate::among::among;
use crate::filter::Page;
use crate::models::{Blob, Comment, FileVersion, Member, NewComment, NewUpload, Object, Upload};
use crate::schema::{blobs, comments, file_versions, object_members, objects, uploads, users};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

/// The three system folders of a new account, under the ids its record carries.
pub fn insert_system_folders(
    conn: &mut DbConn,
    user_id: &str,
    basedir: &str,
    syncdir: &str,
    mydir: &str,
    t: i64,
) -> StoreResult<()> {
    let folder = |id: &str, parent: Option<&str>, system: &str, name: &str| Object {
        id: id.to_string(),
        kind: "d".into(),
        parent_id: parent.map(str::to_string),
        owner_id: user_id.to_string(),
        system: Some(system.to_string()),
        name: name.to_string(),
        name_folded: name.to_lowercase(),
        description: String::new(),
        created_at: t,
        modified_at: t,
        creator_id: user_id.to_string(),
        modifier_id: user_id.to_string(),
        expire_at: None,
        deleted_at: None,
        trashed_with: None,
        perm_deleted: false,
        secure: false,
        syncable: system == "sync",
        file_lifetime: 0,
        current_version_id: None,
        size: 0,
        mime: None,
        client_created_at: None,
        client_modified_at: None,
    };
    let rows = [
        folder(basedir, None, "base", ""),
        folder(syncdir, Some(basedir), "sync", "My Folder"),
        folder(mydir, Some(basedir), "my", "My Files"),
    ];
    db_run!(conn => diesel::insert_into(objects::table).values(&rows[..]).execute(conn))?;
    Ok(())
}

pub fn insert_object(conn: &mut DbConn, o: &Object) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(objects::table).values(o).execute(conn))?;
    Ok(())
}

pub fn object(conn: &mut DbConn, id: &str) -> StoreResult<Option<Object>> {
    Ok(db_run!(conn => objects::table
        .find(id)
        .filter(objects::perm_deleted.eq(false))
        .select(Object::as_select())
        .first(conn)
        .optional())?)
}

/// The object not in the trash named `folded` (case-folded) in `parent`.
pub fn live_child(conn: &mut DbConn, parent: &str, folded: &str) -> StoreResult<Option<Object>> {
    Ok(db_run!(conn => objects::table
        .filter(objects::parent_id.eq(parent))
        .filter(objects::name_folded.eq(folded))
        .filter(objects::deleted_at.is_null())
        .select(Object::as_select())
        .first(conn)
        .optional())?)
}

/// What a listing of a folder's children asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ChildQuery {
    /// `d` or `f`; both when absent.
    pub kind: Option<String>,
    /// Objects in the trash instead of live ones.
    pub deleted: bool,
    /// Case-insensitive part of the name.
    pub name_contains: Option<String>,
    /// Exact name.
    pub name_eq: Option<String>,
    /// `name`, `created`, `modified` or `size`, and descending.
    pub order: (String, bool),
    pub offset: i64,
    pub limit: i64,
    /// Hide system folders (the hidden mail folder under the root).
    pub hide_system: Vec<String>,
    /// Only files this user created (folders are all listed): an Uploader's view.
    pub files_of: Option<String>,
    /// What the records carry beyond the default fields (`with=`): `pathIds`,
    /// `currentUserRole` (the store ignores it; the service renders it).
    pub with: Vec<String>,
}

/// The children of a folder, folders before files, in the order asked.
pub fn children(conn: &mut DbConn, parent: &str, q: &ChildQuery) -> StoreResult<Page<Object>> {
    macro_rules! filtered {
        () => {{
            let mut b = objects::table
                .filter(objects::parent_id.eq(parent.to_string()))
                .filter(objects::perm_deleted.eq(false))
                .into_boxed();
            b = if q.deleted {
                b.filter(objects::deleted_at.is_not_null())
            } else {
                b.filter(objects::deleted_at.is_null())
            };
            if let Some(k) = &q.kind {
                b = b.filter(objects::kind.eq(k.clone()));
            }
            if let Some(n) = &q.name_contains {
                b = b.filter(
                    objects::name_folded
                        .like(format!("%{}%", crate::like_escape(&n.to_lowercase())))
                        .escape('\\'),
                );
            }
            if let Some(n) = &q.name_eq {
                b = b.filter(objects::name.eq(n.clone()));
            }
            if let Some(u) = &q.files_of {
                b = b.filter(objects::kind.eq("d").or(objects::creator_id.eq(u.clone())));
            }
            if !q.hide_system.is_empty() {
                b = b.filter(
                    objects::system
                        .is_null()
                        .or(objects::system.ne_all(q.hide_system.clone())),
                );
            }
            b
        }};
    }
    db_run!(conn => {
        let total: i64 = filtered!().count().get_result(conn)?;
        let mut b = filtered!().order_by(objects::kind.asc());
        let desc = q.order.1;
        b = match (q.order.0.as_str(), desc) {
            ("created", false) => b.then_order_by(objects::created_at.asc()),
            ("created", true) => b.then_order_by(objects::created_at.desc()),
            ("modified", false) => b.then_order_by(objects::modified_at.asc()),
            ("modified", true) => b.then_order_by(objects::modified_at.desc()),
            ("size", false) => b.then_order_by(objects::size.asc()),
            ("size", true) => b.then_order_by(objects::size.desc()),
            (_, true) => b.then_order_by(objects::name_folded.desc()),
            (_, false) => b.then_order_by(objects::name_folded.asc()),
        };
        let items = b
            .then_order_by(objects::id.asc())
            .offset(q.offset)
            .limit(q.limit)
            .select(Object::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}

/// Counts of the live folders and files directly in a folder.
pub fn child_counts(conn: &mut DbConn, parent: &str) -> StoreResult<(i64, i64)> {
    let rows: Vec<(String, i64)> = db_run!(conn => objects::table
        .filter(objects::parent_id.eq(parent))
        .filter(objects::deleted_at.is_null())
        .filter(objects::system.is_null())
        .group_by(objects::kind)
        .select((objects::kind, diesel::dsl::count_star()))
        .load(conn))?;
    let get = |k: &str| rows.iter().find(|(kind, _)| kind == k).map_or(0, |r| r.1);
    Ok((get("d"), get("f")))
}

#[derive(Debug, Clone, QueryableByName)]
pub struct Ancestor {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub parent_id: Option<String>,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub system: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub deleted_at: Option<i64>,
    #[diesel(sql_type = BigInt)]
    pub depth: i64,
}

/// The object and its ancestors, nearest first (the object itself at depth 0). Bounded at 4096
/// levels so that no stored cycle can loop. The few walked rows come first (`CROSS JOIN`, which
/// SQLite takes as the join order): otherwise SQLite scanned every object and probed the walk,
/// 60 ms per call at 100,000 objects instead of well under one, and every file a search or a
/// listing renders asks for its path.
pub fn ancestors(conn: &mut DbConn, id: &str) -> StoreResult<Vec<Ancestor>> {
    let sql = "WITH RECURSIVE up(id, depth) AS ( \
                 SELECT id, CAST(0 AS BIGINT) FROM objects WHERE id = $1 \
                 UNION ALL \
                 SELECT o.parent_id, up.depth + 1 FROM objects o JOIN up ON o.id = up.id \
                 WHERE o.parent_id IS NOT NULL AND up.depth < 4096) \
               SELECT o.id, o.parent_id, o.name, o.system, o.deleted_at, up.depth \
               FROM up CROSS JOIN objects o WHERE o.id = up.id ORDER BY up.depth";
    Ok(db_run!(conn => crate::fixed::sql(sql)
        .bind::<Text, _>(id)
        .load::<Ancestor>(conn))?)
}

/// The ancestors of each of `ids` (as [`ancestors`], nearest first), in one statement: a page of
/// search hits or a listing asks for all its paths at once. Keyed by the id asked for; an id
/// that names no object has no entry.
pub fn ancestors_of_each(
    conn: &mut DbConn,
    ids: &[String],
) -> StoreResult<std::collections::HashMap<String, Vec<Ancestor>>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        start: String,
        #[diesel(embed)]
        a: Ancestor,
    }
    // The same walk as `ancestors`, from every id at once; the ids are one bound value (a JSON
    // array on SQLite, an array on PostgreSQL), so the statement stays prepared. Only the
    // condition that reads them differs between the backends.
    macro_rules! walk_from {
        ($seed:literal) => {
            concat!(
                "WITH RECURSIVE up(start, id, depth) AS ( \
                   SELECT o.id, o.id, CAST(0 AS BIGINT) FROM objects o WHERE ",
                $seed,
                " UNION ALL \
                   SELECT up.start, o.parent_id, up.depth + 1 FROM objects o JOIN up ON o.id = up.id \
                   WHERE o.parent_id IS NOT NULL AND up.depth < 4096) \
                 SELECT up.start, o.id, o.parent_id, o.name, o.system, o.deleted_at, up.depth \
                 FROM up CROSS JOIN objects o WHERE o.id = up.id ORDER BY up.start, up.depth"
            )
        };
    }
    let rows: Vec<Row> = match conn {
        DbConn::Sqlite(c) => {
            crate::fixed::sql(walk_from!("o.id IN (SELECT value FROM json_each($1))"))
                .bind::<Text, _>(crate::among::json_array(ids))
                .load(c)?
        }
        DbConn::Pg(c) => crate::fixed::sql(walk_from!("o.id = ANY($1)"))
            .bind::<diesel::sql_types::Array<Text>, _>(ids)
            .load(c)?,
    };
    let mut out: std::collections::HashMap<String, Vec<Ancestor>> =
        std::collections::HashMap::new();
    for r in rows {
        out.entry(r.start).or_default().push(r.a);
    }
    Ok(out)
}

/// Of `ids`, the objects where `user_id` is a member.
pub fn memberships_among(
    conn: &mut DbConn,
    user_id: &str,
    ids: &[String],
) -> StoreResult<std::collections::HashSet<String>> {
    let found: Vec<String> = db_run!(conn => object_members::table
        .filter(object_members::user_id.eq(user_id))
        .filter(among(object_members::object_id, ids))
        .select(object_members::object_id)
        .load(conn))?;
    Ok(found.into_iter().collect())
}

/// The role the user holds on the nearest of the object's ancestors (itself included) where they
/// are a member, with the id of that folder.
pub fn nearest_membership(
    conn: &mut DbConn,
    id: &str,
    user_id: &str,
) -> StoreResult<Option<(i64, String)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        role_id: i64,
        #[diesel(sql_type = Text)]
        object_id: String,
    }
    let sql = "WITH RECURSIVE up(id, depth) AS ( \
                 SELECT id, CAST(0 AS BIGINT) FROM objects WHERE id = $1 \
                 UNION ALL \
                 SELECT o.parent_id, up.depth + 1 FROM objects o JOIN up ON o.id = up.id \
                 WHERE o.parent_id IS NOT NULL AND up.depth < 4096) \
               SELECT m.role_id, m.object_id FROM up \
               JOIN object_members m ON m.object_id = up.id AND m.user_id = $2 \
               ORDER BY up.depth LIMIT 1";
    let row: Option<Row> = db_run!(conn => crate::fixed::sql(sql)
        .bind::<Text, _>(id)
        .bind::<Text, _>(user_id)
        .get_result::<Row>(conn)
        .optional())?;
    Ok(row.map(|r| (r.role_id, r.object_id)))
}

/// The ids of the object and everything under it (live or in the trash, not purged). The walk
/// steps from the walked rows to their children (`CROSS JOIN`, which SQLite takes as the join
/// order): otherwise SQLite built a throwaway index over every object at each step, 30 s for one
/// folder at 100,000 objects.
pub fn subtree_ids(conn: &mut DbConn, id: &str) -> StoreResult<Vec<String>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let sql = "WITH RECURSIVE down(id, depth) AS ( \
                 SELECT id, CAST(0 AS BIGINT) FROM objects WHERE id = $1 \
                 UNION ALL \
                 SELECT o.id, down.depth + 1 FROM down CROSS JOIN objects o \
                 WHERE o.parent_id = down.id AND down.depth < 4096 AND o.perm_deleted = FALSE) \
               SELECT id FROM down";
    let rows: Vec<Row> =
        db_run!(conn => crate::fixed::sql(sql).bind::<Text, _>(id).load::<Row>(conn))?;
    Ok(rows.into_iter().map(|r| r.id).collect())
}

/// Puts the live part of a subtree into the trash, marked as trashed with its root.
pub fn trash(conn: &mut DbConn, ids: &[String], root: &str, t: i64) -> StoreResult<usize> {
    let mut n = 0;
    for part in ids.chunks(500) {
        n += db_run!(conn => diesel::update(objects::table
            .filter(objects::id.eq_any(part))
            .filter(objects::deleted_at.is_null()))
            .set((objects::deleted_at.eq(t), objects::trashed_with.eq(root)))
            .execute(conn))?;
    }
    Ok(n)
}

/// Brings back what the deletion of `root` put into the trash.
pub fn recover(conn: &mut DbConn, root: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(objects::table
        .filter(objects::trashed_with.eq(root))
        .filter(objects::perm_deleted.eq(false)))
        .set((objects::deleted_at.eq(None::<i64>), objects::trashed_with.eq(None::<String>)))
        .execute(conn))?)
}

/// What an update of an object sets.
#[derive(Debug, Clone)]
pub struct ObjectUpdate<'a> {
    pub name: &'a str,
    /// The name as compared (`coffer_domain::content::fold_name`).
    pub folded: &'a str,
    pub description: &'a str,
    pub expire_at: Option<i64>,
    pub modifier: &'a str,
}

/// Renames, describes or dates an object.
pub fn update_object(conn: &mut DbConn, id: &str, u: &ObjectUpdate, t: i64) -> StoreResult<()> {
    db_run!(conn => diesel::update(objects::table.find(id))
        .set((
            objects::name.eq(u.name),
            objects::name_folded.eq(u.folded),
            objects::description.eq(u.description),
            objects::expire_at.eq(u.expire_at),
            objects::modifier_id.eq(u.modifier),
            objects::modified_at.eq(t),
        ))
        .execute(conn))?;
    Ok(())
}

pub fn move_object(
    conn: &mut DbConn,
    id: &str,
    parent: &str,
    name: &str,
    folded: &str,
    modifier: &str,
    t: i64,
) -> StoreResult<()> {
    db_run!(conn => diesel::update(objects::table.find(id))
        .set((
            objects::parent_id.eq(parent),
            objects::name.eq(name),
            objects::name_folded.eq(folded),
            objects::modifier_id.eq(modifier),
            objects::modified_at.eq(t),
        ))
        .execute(conn))?;
    Ok(())
}

/// Sets the owner of a whole subtree (a folder moved into another owner's tree).
pub fn set_owner(conn: &mut DbConn, ids: &[String], owner: &str) -> StoreResult<()> {
    for part in ids.chunks(500) {
        db_run!(conn => diesel::update(objects::table.filter(objects::id.eq_any(part)))
            .set(objects::owner_id.eq(owner))
            .execute(conn))?;
    }
    Ok(())
}

/// Makes `version` the file's current one.
pub fn set_current_version(
    conn: &mut DbConn,
    file_id: &str,
    v: &FileVersion,
    modifier: &str,
    t: i64,
) -> StoreResult<()> {
    db_run!(conn => diesel::update(objects::table.find(file_id))
        .set((
            objects::current_version_id.eq(&v.id),
            objects::size.eq(v.size),
            objects::mime.eq(&v.mime),
            objects::client_created_at.eq(v.client_created_at),
            objects::client_modified_at.eq(v.client_modified_at),
            objects::modifier_id.eq(modifier),
            objects::modified_at.eq(t),
        ))
        .execute(conn))?;
    Ok(())
}

pub fn touch(conn: &mut DbConn, id: &str, t: i64) -> StoreResult<()> {
    db_run!(conn => diesel::update(objects::table.find(id))
        .set(objects::modified_at.eq(t))
        .execute(conn))?;
    Ok(())
}

/// Bytes held by the files an account owns (every version, in the trash too, until purged).
/// The bytes an owner's live versions hold, as the `content_accounts` triggers keep it.
pub fn usage(conn: &mut DbConn, owner: &str) -> StoreResult<i64> {
    Ok(account(conn, owner)?.0)
}

/// An owner's `(used, generation)` from `content_accounts` (`(0, 0)` for someone who never held
/// content): the bytes their live versions hold, and the number that every change in their
/// trees moves on.
pub fn account(conn: &mut DbConn, owner: &str) -> StoreResult<(i64, i64)> {
    // Through the query builder rather than `sql_query`: a listing reads this on every request
    // (its cache key), and diesel keeps a prepared statement only for a built query.
    use accounts::content_accounts as a;
    let row: Option<(i64, i64)> = db_run!(conn => a::table
        .find(owner)
        .select((a::used, a::generation))
        .first(conn)
        .optional())?;
    Ok(row.unwrap_or((0, 0)))
}

/// `content_accounts`, which only triggers write (so it is not in `schema`, whose tables the
/// code writes): read here by key.
mod accounts {
    diesel::table! {
        content_accounts (owner_id) {
            owner_id -> Text,
            used -> BigInt,
            generation -> BigInt,
        }
    }
}

/// The bytes an owner's live versions hold, summed over them (what `content_accounts.used`
/// must equal; `cofferd storage check` compares the two).
pub fn usage_recount(conn: &mut DbConn, owner: &str) -> StoreResult<i64> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        used: i64,
    }
    let sql = "SELECT CAST(COALESCE(SUM(v.size), 0) AS BIGINT) AS used FROM file_versions v \
               JOIN objects o ON o.id = v.file_id \
               WHERE o.owner_id = $1 AND o.perm_deleted = FALSE AND v.deleted = FALSE";
    let row: Row =
        db_run!(conn => crate::fixed::sql(sql).bind::<Text, _>(owner).get_result::<Row>(conn))?;
    Ok(row.used)
}

/// Owners whose `content_accounts.used` differs from the sum over their live versions, as
/// `(owner, counted, actual)`.
pub fn account_drift(conn: &mut DbConn) -> StoreResult<Vec<(String, i64, i64)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        owner_id: String,
        #[diesel(sql_type = BigInt)]
        used: i64,
        #[diesel(sql_type = BigInt)]
        actual: i64,
    }
    let sql = "SELECT a.owner_id, a.used, r.actual FROM content_accounts a \
               JOIN (SELECT o.owner_id AS owner_id, CAST(COALESCE(SUM(CASE WHEN \
                     o.perm_deleted = FALSE AND v.deleted = FALSE THEN v.size END), 0) AS BIGINT) \
                     AS actual \
                     FROM objects o LEFT JOIN file_versions v ON v.file_id = o.id \
                     GROUP BY o.owner_id) r ON r.owner_id = a.owner_id \
               WHERE a.used <> r.actual ORDER BY a.owner_id";
    let rows: Vec<Row> = db_run!(conn => crate::fixed::sql(sql).load::<Row>(conn))?;
    Ok(rows
        .into_iter()
        .map(|r| (r.owner_id, r.used, r.actual))
        .collect())
}

/// Sets an owner's counted usage (the repair of [`account_drift`]).
pub fn set_usage(conn: &mut DbConn, owner: &str, used: i64) -> StoreResult<()> {
    db_run!(conn => crate::fixed::sql(
        "UPDATE content_accounts SET used = $1, generation = generation + 1 WHERE owner_id = $2",
    )
    .bind::<BigInt, _>(used)
    .bind::<Text, _>(owner)
    .execute(conn))?;
    Ok(())
}

// Versions.

pub fn insert_version(conn: &mut DbConn, v: &FileVersion) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(file_versions::table).values(v).execute(conn))?;
    Ok(())
}

pub fn version(conn: &mut DbConn, id: &str) -> StoreResult<Option<FileVersion>> {
    Ok(db_run!(conn => file_versions::table
        .find(id)
        .select(FileVersion::as_select())
        .first(conn)
        .optional())?)
}

/// A file's versions, newest first or as asked.
pub fn versions(
    conn: &mut DbConn,
    file_id: &str,
    newest_first: bool,
    offset: i64,
    limit: i64,
) -> StoreResult<Page<FileVersion>> {
    db_run!(conn => {
        let total: i64 = file_versions::table
            .filter(file_versions::file_id.eq(file_id))
            .filter(file_versions::deleted.eq(false))
            .count()
            .get_result(conn)?;
        let b = file_versions::table
            .filter(file_versions::file_id.eq(file_id))
            .filter(file_versions::deleted.eq(false))
            .into_boxed();
        let b = if newest_first {
            b.order_by(file_versions::number.desc())
        } else {
            b.order_by(file_versions::number.asc())
        };
        let items = b.offset(offset).limit(limit).select(FileVersion::as_select()).load(conn)?;
        Ok(Page { items, total })
    })
}

pub fn last_version_number(conn: &mut DbConn, file_id: &str) -> StoreResult<i64> {
    let n: Option<i64> = db_run!(conn => file_versions::table
        .filter(file_versions::file_id.eq(file_id))
        .select(diesel::dsl::max(file_versions::number))
        .first(conn))?;
    Ok(n.unwrap_or(0))
}

pub fn set_av_status(
    conn: &mut DbConn,
    version_id: &str,
    status: &str,
    signature: Option<&str>,
) -> StoreResult<()> {
    db_run!(conn => diesel::update(file_versions::table.find(version_id))
        .set((file_versions::av_status.eq(status), file_versions::av_signature.eq(signature)))
        .execute(conn))?;
    Ok(())
}

pub fn set_preview(
    conn: &mut DbConn,
    version_id: &str,
    status: &str,
    blob: Option<&str>,
) -> StoreResult<()> {
    db_run!(conn => diesel::update(file_versions::table.find(version_id))
        .set((file_versions::preview_status.eq(status), file_versions::preview_blob_id.eq(blob)))
        .execute(conn))?;
    Ok(())
}

/// Records `status` as the preview decision of a version still waiting for one (`pending`),
/// leaving its preview blob as it is: for a version that went before its preview was decided.
pub fn settle_pending_preview(
    conn: &mut DbConn,
    version_id: &str,
    status: &str,
) -> StoreResult<()> {
    db_run!(conn => diesel::update(
        file_versions::table
            .find(version_id)
            .filter(file_versions::preview_status.eq("pending")),
    )
    .set(file_versions::preview_status.eq(status))
    .execute(conn))?;
    Ok(())
}

// Blobs.

/// Records one more reference to a blob, creating its row on the first. One statement (an
/// upsert), so that it holds the row (PostgreSQL: its row lock, or the key's entry in the unique
/// index; SQLite: the one writer) until the transaction ends: the blob sweep cannot take the row
/// meanwhile ([`forget_blob`]), and two first references to new content do not collide. Returns
/// the references counted after it (1: the row was new, or counted by nothing before).
pub fn reference_blob(
    conn: &mut DbConn,
    id: &str,
    size: i64,
    md5: &str,
    t: i64,
) -> StoreResult<i64> {
    Ok(db_run!(conn => diesel::insert_into(blobs::table)
        .values(&Blob {
            id: id.to_string(),
            size,
            md5: md5.to_string(),
            refs: 1,
            created_at: t,
            unreferenced_at: None,
        })
        .on_conflict(blobs::id)
        .do_update()
        .set((blobs::refs.eq(blobs::refs + 1), blobs::unreferenced_at.eq(None::<i64>)))
        .returning(blobs::refs)
        .get_result::<i64>(conn))?)
}

/// Drops one reference to a blob; at none it becomes a candidate for the storage sweep.
pub fn release_blob(conn: &mut DbConn, id: &str, t: i64) -> StoreResult<()> {
    db_run!(conn => diesel::update(blobs::table.find(id).filter(blobs::refs.gt(0)))
        .set(blobs::refs.eq(blobs::refs - 1))
        .execute(conn))?;
    db_run!(conn => diesel::update(blobs::table.find(id).filter(blobs::refs.le(0)))
        .set(blobs::unreferenced_at.eq(t))
        .execute(conn))?;
    Ok(())
}

pub fn blob(conn: &mut DbConn, id: &str) -> StoreResult<Option<Blob>> {
    Ok(db_run!(conn => blobs::table.find(id).select(Blob::as_select()).first(conn).optional())?)
}

/// Blobs no one has referred to since before `before`.
pub fn unreferenced_blobs(conn: &mut DbConn, before: i64, limit: i64) -> StoreResult<Vec<String>> {
    Ok(db_run!(conn => blobs::table
        .filter(blobs::unreferenced_at.le(before))
        .filter(blobs::refs.le(0))
        .select(blobs::id)
        .limit(limit)
        .load(conn))?)
}

/// Takes a blob nothing counts a reference to for deletion: forgets the rows of purged versions
/// that still name it (their content is gone for good), locks the blob's row and deletes it.
/// Answers false, leaving the row, when the blob is counted again or has no row. The caller
/// deletes the bytes before its transaction ends, while the row is still locked, so that a
/// concurrent [`reference_blob`] either comes first (and this finds the blob counted) or waits
/// and then finds no row (and checks the bytes itself).
pub fn forget_blob(conn: &mut DbConn, id: &str) -> StoreResult<bool> {
    // Purged versions first: their owners' rows (usage, touched by triggers) are taken before
    // the blob row, the order an upload's commit takes them in, so the two never deadlock.
    // Forgetting them is right whether or not the blob goes: they are never served again.
    db_run!(conn => diesel::delete(
        file_versions::table
            .filter(file_versions::blob_id.eq(id))
            .filter(file_versions::deleted.eq(true)))
        .execute(conn))?;
    db_run!(conn => diesel::update(
        file_versions::table
            .filter(file_versions::preview_blob_id.eq(id))
            .filter(file_versions::deleted.eq(true)))
        .set(file_versions::preview_blob_id.eq(None::<String>))
        .execute(conn))?;
    // A no-op update is the lock: PostgreSQL re-reads `refs` once a concurrent holder is done.
    let locked = db_run!(conn => diesel::update(blobs::table.find(id).filter(blobs::refs.le(0)))
        .set(blobs::refs.eq(blobs::refs))
        .execute(conn))?;
    if locked == 0 {
        return Ok(false);
    }
    db_run!(conn => diesel::delete(blobs::table.find(id)).execute(conn))?;
    Ok(true)
}

pub fn all_blob_ids(conn: &mut DbConn) -> StoreResult<Vec<String>> {
    Ok(db_run!(conn => blobs::table.select(blobs::id).load(conn))?)
}

// Members.

pub fn members(conn: &mut DbConn, object_id: &str) -> StoreResult<Vec<(Member, String)>> {
    Ok(db_run!(conn => object_members::table
        .inner_join(users::table.on(users::id.eq(object_members::user_id)))
        .filter(object_members::object_id.eq(object_id))
        .order_by(object_members::created_at.asc())
        .select((Member::as_select(), users::email))
        .load(conn))?)
}

pub fn member(conn: &mut DbConn, object_id: &str, user_id: &str) -> StoreResult<Option<Member>> {
    Ok(db_run!(conn => object_members::table
        .find((object_id, user_id))
        .select(Member::as_select())
        .first(conn)
        .optional())?)
}

/// Adds a member, or changes their role when they are one.
pub fn put_member(conn: &mut DbConn, m: &Member) -> StoreResult<()> {
    let n = db_run!(conn => diesel::update(object_members::table.find((&m.object_id, &m.user_id)))
        .set(object_members::role_id.eq(m.role_id))
        .execute(conn))?;
    if n == 0 {
        db_run!(conn => diesel::insert_into(object_members::table).values(m).execute(conn))?;
    }
    Ok(())
}

pub fn delete_member(conn: &mut DbConn, object_id: &str, user_id: &str) -> StoreResult<usize> {
    Ok(
        db_run!(conn => diesel::delete(object_members::table.find((object_id, user_id)))
        .execute(conn))?,
    )
}

/// The objects a user is a member of (live ones).
pub fn memberships(conn: &mut DbConn, user_id: &str) -> StoreResult<Vec<(Member, Object)>> {
    Ok(db_run!(conn => object_members::table
        .inner_join(objects::table)
        .filter(object_members::user_id.eq(user_id))
        .filter(objects::deleted_at.is_null())
        .filter(objects::perm_deleted.eq(false))
        .select((Member::as_select(), Object::as_select()))
        .load(conn))?)
}

/// The number of members of an object.
pub fn member_count(conn: &mut DbConn, object_id: &str) -> StoreResult<i64> {
    Ok(db_run!(conn => object_members::table
        .filter(object_members::object_id.eq(object_id))
        .count()
        .get_result(conn))?)
}

// Upload sessions.

pub fn insert_upload(conn: &mut DbConn, u: &NewUpload) -> StoreResult<i64> {
    Ok(db_run!(conn => diesel::insert_into(uploads::table)
        .values(u)
        .returning(uploads::id)
        .get_result(conn))?)
}

pub fn upload(conn: &mut DbConn, id: i64) -> StoreResult<Option<Upload>> {
    Ok(db_run!(conn => uploads::table
        .find(id)
        .select(Upload::as_select())
        .first(conn)
        .optional())?)
}

/// A user's unfinished upload sessions, in the order they were opened.
pub fn uploads_of(
    conn: &mut DbConn,
    user_id: &str,
    offset: i64,
    limit: i64,
) -> StoreResult<Page<Upload>> {
    db_run!(conn => {
        let total: i64 = uploads::table
            .filter(uploads::user_id.eq(user_id))
            .filter(uploads::result_file_id.is_null())
            .count()
            .get_result(conn)?;
        let items = uploads::table
            .filter(uploads::user_id.eq(user_id))
            .filter(uploads::result_file_id.is_null())
            .order_by(uploads::id.asc())
            .offset(offset)
            .limit(limit)
            .select(Upload::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}

/// Records an accepted chunk, only if the session is still where the caller saw it (another
/// node may have taken the same chunk meanwhile). True when recorded.
pub fn advance_upload(
    conn: &mut DbConn,
    id: i64,
    seen_chunks: i64,
    size: i64,
    t: i64,
    expires_at: i64,
) -> StoreResult<bool> {
    Ok(db_run!(conn => diesel::update(uploads::table
        .find(id)
        .filter(uploads::uploaded_chunks.eq(seen_chunks))
        .filter(uploads::result_file_id.is_null()))
        .set((
            uploads::uploaded_chunks.eq(seen_chunks + 1),
            uploads::uploaded_size.eq(uploads::uploaded_size + size),
            uploads::updated_at.eq(t),
            uploads::expires_at.eq(expires_at),
        ))
        .execute(conn))?
        == 1)
}

/// Records the file a session made; `false` when the session is gone (swept, deleted, or its
/// submission claimed) or already finished, so that the caller's transaction makes no file.
pub fn finish_upload(conn: &mut DbConn, id: i64, file_id: &str, t: i64) -> StoreResult<bool> {
    Ok(db_run!(conn => diesel::update(uploads::table.find(id))
        .filter(uploads::result_file_id.is_null())
        .set((uploads::result_file_id.eq(file_id), uploads::updated_at.eq(t)))
        .execute(conn))?
        > 0)
}

pub fn delete_upload(conn: &mut DbConn, id: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(uploads::table.find(id)).execute(conn))?)
}

/// The upload sessions opened onto a draft email.
pub fn uploads_of_email(conn: &mut DbConn, email_id: &str) -> StoreResult<Vec<Upload>> {
    Ok(db_run!(conn => uploads::table
        .filter(uploads::email_id.eq(email_id))
        .select(Upload::as_select())
        .load(conn))?)
}

/// Sessions that expired before `t` (unfinished ones, and finished ones kept for retries).
pub fn expired_uploads(conn: &mut DbConn, t: i64, limit: i64) -> StoreResult<Vec<Upload>> {
    Ok(db_run!(conn => uploads::table
        .filter(uploads::expires_at.lt(t))
        .order_by(uploads::expires_at.asc())
        .limit(limit)
        .select(Upload::as_select())
        .load(conn))?)
}

pub fn upload_by_staging(conn: &mut DbConn, staging: &str) -> StoreResult<Option<Upload>> {
    Ok(db_run!(conn => uploads::table
        .filter(uploads::staging.eq(staging))
        .select(Upload::as_select())
        .first(conn)
        .optional())?)
}

// Comments.

pub fn insert_comment(conn: &mut DbConn, c: &NewComment) -> StoreResult<i64> {
    Ok(db_run!(conn => diesel::insert_into(comments::table)
        .values(c)
        .returning(comments::id)
        .get_result(conn))?)
}

pub fn comment(conn: &mut DbConn, id: i64) -> StoreResult<Option<Comment>> {
    Ok(db_run!(conn => comments::table
        .find(id)
        .select(Comment::as_select())
        .first(conn)
        .optional())?)
}

pub fn comments_of(
    conn: &mut DbConn,
    object_id: &str,
    newest_first: bool,
    offset: i64,
    limit: i64,
) -> StoreResult<Page<Comment>> {
    db_run!(conn => {
        let total: i64 = comments::table
            .filter(comments::object_id.eq(object_id))
            .filter(comments::deleted.eq(false))
            .count()
            .get_result(conn)?;
        let b = comments::table
            .filter(comments::object_id.eq(object_id))
            .filter(comments::deleted.eq(false))
            .into_boxed();
        let b = if newest_first {
            b.order_by(comments::id.desc())
        } else {
            b.order_by(comments::id.asc())
        };
        let items = b.offset(offset).limit(limit).select(Comment::as_select()).load(conn)?;
        Ok(Page { items, total })
    })
}

/// Of the given objects, those that have members.
pub fn shared_among(
    conn: &mut DbConn,
    ids: &[String],
) -> StoreResult<std::collections::HashSet<String>> {
    let found: Vec<String> = db_run!(conn => object_members::table
        .filter(among(object_members::object_id, ids))
        .select(object_members::object_id)
        .distinct()
        .load(conn))?;
    Ok(found.into_iter().collect())
}

/// The given versions with the MD5 of their content.
pub fn versions_with_md5(
    conn: &mut DbConn,
    ids: &[String],
) -> StoreResult<std::collections::HashMap<String, (FileVersion, String)>> {
    let rows: Vec<(FileVersion, String)> = db_run!(conn => file_versions::table
        .inner_join(blobs::table.on(blobs::id.eq(file_versions::blob_id)))
        .filter(among(file_versions::id, ids))
        .select((FileVersion::as_select(), blobs::md5))
        .load(conn))?;
    Ok(rows
        .into_iter()
        .map(|(v, m)| (v.id.clone(), (v, m)))
        .collect())
}

/// The number of (not deleted) versions of each of the given files.
pub fn version_counts(
    conn: &mut DbConn,
    ids: &[String],
) -> StoreResult<std::collections::HashMap<String, i64>> {
    let rows: Vec<(String, i64)> = db_run!(conn => file_versions::table
        .filter(among(file_versions::file_id, ids))
        .filter(file_versions::deleted.eq(false))
        .group_by(file_versions::file_id)
        .select((file_versions::file_id, diesel::dsl::count_star()))
        .load(conn))?;
    Ok(rows.into_iter().collect())
}

/// Live objects of a subtree (the root included), parents before children, for a copy. Walked
/// rows first, as in [`subtree_ids`] (20 s for one folder at 100,000 objects otherwise).
pub fn live_subtree(conn: &mut DbConn, id: &str) -> StoreResult<Vec<Object>> {
    let sql = "WITH RECURSIVE down(id, depth) AS ( \
                 SELECT id, CAST(0 AS BIGINT) FROM objects WHERE id = $1 \
                 UNION ALL \
                 SELECT o.id, down.depth + 1 FROM down CROSS JOIN objects o \
                 WHERE o.parent_id = down.id AND down.depth < 4096 AND o.deleted_at IS NULL \
                   AND o.perm_deleted = FALSE) \
               SELECT o.* FROM down CROSS JOIN objects o WHERE o.id = down.id ORDER BY down.depth";
    Ok(db_run!(conn => crate::fixed::sql(sql).bind::<Text, _>(id).load::<Object>(conn))?)
}

/// Permanently deletes up to `limit` objects trashed before `before`: their versions are
/// marked deleted and their blobs (content and preview) released. Returns how many objects were purged.
pub fn purge_trash(conn: &mut DbConn, before: i64, t: i64, limit: i64) -> StoreResult<usize> {
    let ids: Vec<String> = db_run!(conn => objects::table
        .filter(objects::deleted_at.lt(before))
        .filter(objects::perm_deleted.eq(false))
        .select(objects::id)
        .limit(limit)
        .load(conn))?;
    purge_objects(conn, &ids, t)?;
    Ok(ids.len())
}

/// Permanently deletes the objects `ids` (files, not folders with children): their versions are
/// marked deleted and their blobs (content and preview) released.
pub fn purge_objects(conn: &mut DbConn, ids: &[String], t: i64) -> StoreResult<()> {
    let mut released = Vec::new();
    for part in ids.chunks(500) {
        let versions: Vec<(String, String, Option<String>)> = db_run!(conn => file_versions::table
            .filter(file_versions::file_id.eq_any(part))
            .filter(file_versions::deleted.eq(false))
            .select((file_versions::id, file_versions::blob_id, file_versions::preview_blob_id))
            .load(conn))?;
        for (vid, blob, preview) in versions {
            db_run!(conn => diesel::update(file_versions::table.find(&vid))
                .set(file_versions::deleted.eq(true))
                .execute(conn))?;
            released.push(blob);
            released.extend(preview);
        }
        db_run!(conn => diesel::update(objects::table.filter(objects::id.eq_any(part)))
            .set(objects::perm_deleted.eq(true))
            .execute(conn))?;
    }
    // Blob rows last, in key order: an upload's commit takes its owner's rows (objects,
    // versions, usage) before the blob row, so taking the blob rows after every owner's rows
    // leaves no cycle for PostgreSQL to break as a deadlock.
    released.sort();
    for blob in &released {
        release_blob(conn, blob, t)?;
    }
    Ok(())
}

/// The live objects a user shared with someone.
pub fn shared_by(conn: &mut DbConn, user_id: &str) -> StoreResult<Vec<Object>> {
    Ok(db_run!(conn => object_members::table
        .inner_join(objects::table)
        .filter(object_members::shared_by.eq(user_id))
        .filter(objects::deleted_at.is_null())
        .filter(objects::perm_deleted.eq(false))
        .select(Object::as_select())
        .distinct()
        .load(conn))?)
}

/// Records a blob no one refers to (stored bytes whose request failed), for the sweep; a blob
/// that has a row keeps it as it is.
pub fn unreferenced_blob(
    conn: &mut DbConn,
    id: &str,
    size: i64,
    md5: &str,
    t: i64,
) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(blobs::table)
        .values(&Blob {
            id: id.to_string(),
            size,
            md5: md5.to_string(),
            refs: 0,
            created_at: t,
            unreferenced_at: Some(t),
        })
        .on_conflict_do_nothing()
        .execute(conn))?;
    Ok(())
}

/// The blobs some version (deleted or not, until purged) refers to.
pub fn referenced_blob_ids(conn: &mut DbConn) -> StoreResult<Vec<String>> {
    let mut ids: Vec<String> = db_run!(conn => file_versions::table
        .filter(file_versions::deleted.eq(false))
        .select(file_versions::blob_id)
        .distinct()
        .load(conn))?;
    let previews: Vec<Option<String>> = db_run!(conn => file_versions::table
        .filter(file_versions::deleted.eq(false))
        .filter(file_versions::preview_blob_id.is_not_null())
        .select(file_versions::preview_blob_id)
        .distinct()
        .load(conn))?;
    ids.extend(previews.into_iter().flatten());
    let counted: Vec<String> = db_run!(conn => blobs::table
        .filter(blobs::refs.gt(0))
        .select(blobs::id)
        .load(conn))?;
    ids.extend(counted);
    ids.sort();
    ids.dedup();
    Ok(ids)
}

/// Whether a blob is referred to (by its count or by a version).
pub fn is_referenced(conn: &mut DbConn, id: &str) -> StoreResult<bool> {
    let counted: bool = db_run!(conn => diesel::select(diesel::dsl::exists(
        blobs::table.find(id).filter(blobs::refs.gt(0))))
        .get_result(conn))?;
    if counted {
        return Ok(true);
    }
    Ok(db_run!(conn => diesel::select(diesel::dsl::exists(
        file_versions::table
            .filter(file_versions::blob_id.eq(id))
            .filter(file_versions::deleted.eq(false))))
        .get_result(conn))?)
}
