//! Search: what a user may reach among folders and files (with the role that reaches it), the
//! full-text index of file text and mail (SQLite FTS5 or PostgreSQL `tsvector` with a GIN
//! index, behind the same functions), and the extraction state of each file's text.
//!
//! The index is fed by triggers (migration 000070): a new file version marks its file pending
//! and queues a `search-extract` job; mail is indexed as it is written. Queries take terms that
//! the service has already reduced to letters and digits, so no user text ever reaches the
//! full-text grammar of either backend.

use crate::{db_run, Backend, DbConn, StoreResult};
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Double, Nullable, Text};

/// What each role lets a caller find, as three sets of role ids: the roles that may list an
/// object (find it by name, description and path), those that may preview a file (find it by
/// its text), and those that see only the files the caller created themselves. The service
/// derives the sets from the content core's rule (`content::permits`), so the rule is decided in
/// one place; the store only writes it into SQL. The owner may do everything; a role in no set
/// finds nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rule {
    pub list: Vec<i64>,
    pub preview: Vec<i64>,
    pub own_files_only: Vec<i64>,
}

/// How a folded text criterion compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    Eq,
    Contains,
    StartsWith,
}

/// A folded text and how it compares.
#[derive(Debug, Clone, Copy)]
pub struct Match<'a> {
    pub op: Compare,
    pub folded: &'a str,
}

/// Bounds on an integer column: `(value, inclusive)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Bounds {
    pub low: Option<(i64, bool)>,
    pub high: Option<(i64, bool)>,
}

/// The order of the folders and files found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortBy {
    Score,
    Name,
    Created,
    Modified,
}

/// A search over folders and files: the criteria the service has read and checked.
#[derive(Debug, Clone)]
pub struct ObjectSearch<'a> {
    pub files: bool,
    pub folders: bool,
    /// Only what others shared with the caller.
    pub shared_only: bool,
    /// Only at any depth under this folder (which the caller must reach).
    pub under: Option<&'a str>,
    /// The path as the caller sees it (the folded names from the top of their reach down,
    /// joined by `/`); when given, the criteria below do not apply.
    pub path: Option<Match<'a>>,
    pub created: Bounds,
    pub modified: Bounds,
    pub size: Bounds,
    pub creator_id: Option<&'a str>,
    pub description: Option<Match<'a>>,
    /// A part of a file's folded name.
    pub file_name: Option<&'a str>,
    /// A part of a folder's folded name.
    pub folder_name: Option<&'a str>,
    /// Lower-case extensions without the dot; empty means any.
    pub extensions: &'a [String],
    pub tracking_id: Option<&'a str>,
    /// Words for the name: a name that matches (or, unless equality is asked, a description
    /// that does) finds the object and ranks it above any hit by text alone.
    pub text: Option<Match<'a>>,
    /// Terms searched in the text of files the caller may preview (letters and digits only);
    /// empty searches no text.
    pub content_terms: &'a [String],
    /// Only files whose text holds the terms (`fileContent`).
    pub content_required: bool,
    pub order: SortBy,
    pub descending: bool,
    pub offset: i64,
    pub limit: i64,
}

/// One folder or file found: its id, the role of the nearest membership that reaches it
/// (`None` for the caller's own), and whether its text matched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectHit {
    pub id: String,
    pub role_id: Option<i64>,
    pub by_text: bool,
}

/// One page of files and one of folders, in order, with how many of each match in all.
#[derive(Debug, Clone, Default)]
pub struct ObjectPage {
    pub files: Vec<ObjectHit>,
    pub folders: Vec<ObjectHit>,
    pub total_files: i64,
    pub total_folders: i64,
}

use crate::fixed::Value as Arg;

/// A statement being written, with its values. Placeholders are numbered (`$N`), so a value may
/// be named again anywhere in the text; every value is bound, so that the text is the
/// statement's shape and is kept prepared ([`crate::fixed::built`]).
struct Sql {
    backend: Backend,
    args: Vec<Arg>,
}

impl Sql {
    fn new(backend: Backend) -> Sql {
        Sql {
            backend,
            args: Vec::new(),
        }
    }

    fn slot(&self) -> String {
        format!("${}", self.args.len())
    }

    fn text(&mut self, v: &str) -> String {
        self.args.push(Arg::Text(v.to_string()));
        self.slot()
    }

    fn int(&mut self, v: i64) -> String {
        self.args.push(Arg::Int(v));
        self.slot()
    }

    /// `hay` holds `needle`.
    fn contains(&self, hay: &str, needle: &str) -> String {
        match self.backend {
            Backend::Sqlite => format!("instr({hay}, {needle}) > 0"),
            Backend::Postgres => format!("strpos({hay}, {needle}) > 0"),
        }
    }

    fn compare(&self, value: &str, m: Compare, p: &str) -> String {
        match m {
            Compare::Eq => format!("{value} = {p}"),
            Compare::Contains => self.contains(value, p),
            Compare::StartsWith => format!("substr({value}, 1, length({p})) = {p}"),
        }
    }

    fn bounds(&mut self, col: &str, b: Bounds, out: &mut Vec<String>) {
        if let Some((v, inclusive)) = b.low {
            let p = self.int(v);
            out.push(format!("{col} {} {p}", if inclusive { ">=" } else { ">" }));
        }
        if let Some((v, inclusive)) = b.high {
            let p = self.int(v);
            out.push(format!("{col} {} {p}", if inclusive { "<=" } else { "<" }));
        }
    }

    /// The key an object's row is found again by within one statement: SQLite's `rowid` (an
    /// integer seek in the table itself), PostgreSQL's primary key. Looking the reach's objects
    /// up again by their text ids cost an index probe and then the row for each, which was
    /// most of a reach-first search; the rowid is in every index the walks read, so carrying
    /// it costs nothing.
    fn row_key(&self, o: &str) -> String {
        row_key(self.backend, o)
    }

    /// Names in the order Rust compares strings (bytes), on either backend.
    fn bytewise(&self, col: &str) -> String {
        match self.backend {
            Backend::Sqlite => col.to_string(),
            Backend::Postgres => format!("{col} COLLATE \"C\""),
        }
    }

    fn load<T>(self, conn: &mut DbConn, sql: &str) -> StoreResult<Vec<T>>
    where
        T: QueryableByName<diesel::sqlite::Sqlite> + QueryableByName<diesel::pg::Pg> + 'static,
    {
        Ok(db_run!(conn => crate::fixed::built(sql, &self.args).load::<T>(conn))?)
    }
}

/// [`Sql::row_key`] for a backend.
fn row_key(backend: Backend, o: &str) -> String {
    match backend {
        Backend::Sqlite => format!("{o}.rowid"),
        Backend::Postgres => format!("{o}.id"),
    }
}

/// `col IN (ids)`, or false for no ids. The ids are the service's role ids, never user input.
fn among_roles(col: &str, ids: &[i64]) -> String {
    if ids.is_empty() {
        return "FALSE".into();
    }
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    format!("{col} IN ({})", list.join(", "))
}

/// What a live object that can be reached through a share is: not in the trash, not purged,
/// no system folder.
fn shareable(o: &str) -> String {
    format!("{o}.deleted_at IS NULL AND {o}.perm_deleted = FALSE AND {o}.system IS NULL")
}

/// The common table expressions `grants` and `folders`: the objects other users shared with
/// `user` (a placeholder), and every live folder at and under them down to the next object
/// shared with them again (whose own role then applies: the nearest membership decides, as
/// `content::nearest_membership` does for one object), with the role that reaches it. System
/// folders of other users are never reached; trashing marks a whole subtree, so a trashed
/// folder's descendants are left out with it.
///
/// Only folders are walked: a file has nothing under it, so the files reached through a share
/// are the live files, not themselves shared again, whose parent is one of `folders` (see
/// [`shared_files`]). A caller's shares hold far fewer folders than files, and the walk was
/// most of a search's cost when it stepped into every file (two to three times this one).
/// Both are computed once (`MATERIALIZED`), and every step names the walked rows first (`CROSS
/// JOIN`, which SQLite takes as the join order), so it looks children up by `parent_id`. Each
/// folder carries its row key ([`Sql::row_key`]) as `rk`.
/// Without that, SQLite's planner inlined the walk into the full-text hits' `IN` list and built
/// a throwaway index over all objects at every step: a search over 100,000 files took 17 s
/// instead of 50 ms.
fn shared_folders(backend: Backend, user: &str) -> String {
    format!(
        "grants(id, rk, role_id) AS MATERIALIZED ( \
           SELECT m.object_id, {rk}, m.role_id FROM object_members m \
           JOIN objects o ON o.id = m.object_id \
           WHERE m.user_id = {user} AND o.owner_id <> {user} AND {live_o}), \
         folders(id, rk, role_id, depth) AS MATERIALIZED ( \
           SELECT g.id, g.rk, g.role_id, CAST(0 AS BIGINT) FROM grants g \
           UNION ALL \
           SELECT o.id, {rk}, folders.role_id, folders.depth + 1 \
           FROM folders CROSS JOIN objects o \
           WHERE o.parent_id = folders.id AND o.kind = 'd' AND folders.depth < 4096 AND {live_o} \
             AND o.id NOT IN (SELECT id FROM grants))",
        live_o = shareable("o"),
        rk = row_key(backend, "o"),
    )
}

/// The condition that the file `o` is reached through the share folder `f` of
/// [`shared_folders`]: it lies in it, is live and is not itself shared with the caller again.
/// `kind_last`: the kind is written so that it is tested only once `f` is found, for a statement
/// that looks `o` up by id before it knows whether its parent is a share folder.
fn shared_files(o: &str, f: &str, kind_last: bool) -> String {
    let kind = if kind_last {
        format!("(CASE WHEN {f}.id IS NULL THEN NULL ELSE {o}.kind END) = 'f'")
    } else {
        format!("{o}.kind = 'f'")
    };
    format!(
        "{o}.parent_id = {f}.id AND {kind} AND {live} AND {o}.id NOT IN (SELECT id FROM grants)",
        live = shareable(o),
    )
}

/// The caller's own objects among `o`: every live object they own but their root.
fn own(o: &str, user: &str) -> String {
    format!(
        "{o}.owner_id = {user} AND {o}.deleted_at IS NULL AND {o}.perm_deleted = FALSE \
         AND ({o}.system IS NULL OR {o}.system <> 'base')"
    )
}

/// The common table expression `reach` (with those it needs): every live (not trashed, not
/// purged) folder and file `user` (a placeholder) reaches, with the role of the nearest
/// membership on the way down (NULL for their own) and, when `paths`, the path as they see it.
///
/// Their own objects are every object they own but their root; the others' are everything at
/// and under an object another user shared with them, as [`shared_folders`] states. An own
/// object under a share is listed twice. With `paths` the walk goes down every object, carrying
/// the path (the same rule, written as one walk); without, it goes down the folders only. Each
/// object carries its row key ([`Sql::row_key`]) as `rk`, by which the search reads it again.
/// On SQLite, without `paths`, both the caller's own objects and the files in the shared
/// folders are read from indexes that hold every column tested here (`objects_owner` and
/// `objects_parent`, widened by migration 000180), not from the table's rows.
fn reach_sql(backend: Backend, user: &str, paths: bool) -> String {
    let rk = row_key(backend, "o");
    if !paths {
        return format!(
            "{folders}, \
             reach(id, rk, role_id, path) AS MATERIALIZED ( \
               SELECT o.id, {rk}, CAST(NULL AS BIGINT), CAST('' AS TEXT) FROM objects o WHERE {own} \
               UNION ALL SELECT id, rk, role_id, CAST('' AS TEXT) FROM folders \
               UNION ALL SELECT o.id, {rk}, f.role_id, CAST('' AS TEXT) \
               FROM folders f CROSS JOIN objects o WHERE {files})",
            folders = shared_folders(backend, user),
            own = own("o", user),
            files = shared_files("o", "f", false),
        );
    }
    format!(
        "grants(id, role_id) AS ( \
           SELECT m.object_id, m.role_id FROM object_members m \
           JOIN objects o ON o.id = m.object_id \
           WHERE m.user_id = {user} AND o.owner_id <> {user} AND o.system IS NULL \
             AND o.deleted_at IS NULL AND o.perm_deleted = FALSE), \
         down(id, rk, role_id, path, depth) AS ( \
           SELECT g.id, {rk}, g.role_id, CAST(o.name_folded AS TEXT), CAST(0 AS BIGINT) \
           FROM grants g JOIN objects o ON o.id = g.id \
           UNION ALL \
           SELECT o.id, {rk}, down.role_id, down.path || '/' || o.name_folded, down.depth + 1 \
           FROM down CROSS JOIN objects o \
           WHERE o.parent_id = down.id AND down.depth < 4096 AND o.deleted_at IS NULL AND o.perm_deleted = FALSE \
             AND o.system IS NULL AND NOT EXISTS (SELECT 1 FROM grants g WHERE g.id = o.id)), \
         own(id, rk, path, depth) AS ( \
           SELECT o.id, {rk}, CAST(o.name_folded AS TEXT), CAST(0 AS BIGINT) \
           FROM objects b JOIN objects o ON o.parent_id = b.id \
           WHERE b.owner_id = {user} AND b.system = 'base' \
             AND o.deleted_at IS NULL AND o.perm_deleted = FALSE \
           UNION ALL \
           SELECT o.id, {rk}, own.path || '/' || o.name_folded, own.depth + 1 \
           FROM own CROSS JOIN objects o \
           WHERE o.parent_id = own.id AND own.depth < 4096 AND o.deleted_at IS NULL AND o.perm_deleted = FALSE), \
         reach(id, rk, role_id, path) AS MATERIALIZED ( \
           SELECT id, rk, CAST(NULL AS BIGINT), path FROM own \
           UNION ALL SELECT id, rk, role_id, path FROM down)"
    )
}

/// The common table expressions `cands` and `reach` (with those it needs): the same `reach` as
/// [`reach_sql`] decides (without paths), but only for the objects `cands` (a statement of ids)
/// names, so that the cost follows the number of candidates and the caller's shared folders,
/// not the number of files the caller reaches. A candidate is the caller's own as
/// [`reach_sql`] says; it is reached through a share when it is one of [`shared_folders`] (a
/// shared object or a folder under one), or a file in one of them that [`shared_files`] takes.
///
/// In that last part the file's kind is asked only of a candidate whose parent is one of the
/// folders ([`shared_files`] with `kind_last`). The last expression is named `name` (`reach`,
/// unless the reach is completed from elsewhere, as [`reached_rows`] does).
fn reach_of_candidates(backend: Backend, user: &str, cands: &str, name: &str) -> String {
    format!(
        "cands(id) AS MATERIALIZED ({cands}), \
         {folders}, \
         {name}(id, rk, role_id, path) AS MATERIALIZED ( \
           SELECT o.id, {rk}, CAST(NULL AS BIGINT), CAST('' AS TEXT) \
           FROM cands c CROSS JOIN objects o WHERE o.id = c.id AND {own} \
           UNION ALL SELECT f.id, f.rk, f.role_id, CAST('' AS TEXT) FROM folders f \
           WHERE f.id IN (SELECT id FROM cands) \
           UNION ALL SELECT o.id, {rk}, f.role_id, CAST('' AS TEXT) \
           FROM cands c CROSS JOIN objects o CROSS JOIN folders f \
           WHERE o.id = c.id AND {files})",
        rk = row_key(backend, "o"),
        folders = shared_folders(backend, user),
        own = own("o", user),
        files = shared_files("o", "f", true),
    )
}

/// The smallest string above every string that starts with `prefix` (in the order of code
/// points, which is the bytewise order of UTF-8), or `None` when there is none: with `prefix`
/// itself it bounds an index range that holds exactly the strings with that start.
fn after_prefix(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = (u32::from(last) + 1..=u32::from(char::MAX)).find_map(char::from_u32) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// Whether the caller may list the object `o` reached as `r` (the rule's SQL).
fn listable(rule: &Rule, user: &str) -> String {
    format!(
        "(r.role_id IS NULL OR ({} AND NOT ({} AND o.kind = 'f' AND o.creator_id <> {user})))",
        among_roles("r.role_id", &rule.list),
        among_roles("r.role_id", &rule.own_files_only),
    )
}

/// Whether the caller may preview the object `o` reached as `r` (the rule's SQL).
fn previewable(rule: &Rule, user: &str) -> String {
    format!(
        "(r.role_id IS NULL OR ({} AND NOT ({} AND o.kind = 'f' AND o.creator_id <> {user})))",
        among_roles("r.role_id", &rule.preview),
        among_roles("r.role_id", &rule.own_files_only),
    )
}

/// Whether the caller may list and preview the file of the hit `h` of [`reached_rows`], from
/// the hit's role and its document's creator alone (the rule's SQL, as [`listable`] and
/// [`previewable`] together decide it for a file).
fn hit_permitted(rule: &Rule, user: &str) -> String {
    format!(
        "(h.role_id IS NULL OR ({} AND {} AND NOT ({} AND h.creator_id <> {user})))",
        among_roles("h.role_id", &rule.list),
        among_roles("h.role_id", &rule.preview),
        among_roles("h.role_id", &rule.own_files_only),
    )
}

/// The ids of the folders and files that may meet `s`, when an index finds them: every object
/// found must then be among them, so the caller's reach is decided for those alone
/// ([`reach_of_candidates`]). A name that is or starts with the words (a range of the index
/// on folded names; the name without its extension starts with them too), a description that
/// starts with them (only objects with a description), and the full-text hits `fts` (the
/// backend's query, when text is searched); `under`, the folder searched in, so that whether
/// the caller reaches it is decided the same way. `None` when a criterion that must hold has no
/// index (a part of a name, a path, ranges alone): the reach is then walked down whole.
///
/// `apart`: the text and the parts of names are searched apart, their reach decided from the
/// rows of their indexes ([`reached_rows`]), so only the other candidates are named, and a
/// search by text alone (`fileContent`) names none but `under`.
/// `scoped`: the expression `scope` exists ([`scope_cte`]), so a range of names is read for
/// the owners of the caller's ranges only.
fn candidates(
    b: &mut Sql,
    s: &ObjectSearch<'_>,
    fts: Option<&str>,
    under: Option<&str>,
    apart: bool,
    scoped: bool,
) -> Option<String> {
    if s.path.is_some() {
        return None;
    }
    let mut parts = Vec::new();
    match s.text {
        // A part of a name: the names themselves are found apart, by the rows of the trigram
        // index ([`reached_rows`], which every such search takes); here the objects whose
        // description holds it (only objects that have one).
        Some(t) if by_name_parts(b.backend, s) => {
            let v = b.text(t.folded);
            parts.push(format!(
                "SELECT id FROM objects WHERE description <> '' AND {}",
                b.compare("coffer_fold(description)", t.op, &v)
            ));
        }
        Some(t) if t.op != Compare::Contains => {
            let v = b.text(t.folded);
            let name = b.bytewise("name_folded");
            let mut range = format!("{name} >= {v}");
            if let Some(end) = after_prefix(t.folded) {
                let end = b.text(&end);
                range.push_str(&format!(" AND {name} < {end}"));
            }
            // Only the owners whose objects the caller may reach (those of the caller's
            // ranges): the owner is read from the index with the name (migration 000190), and
            // `+` keeps SQLite from reading every object of those owners instead. A common
            // four-letter start is the name of 1,356 of the benchmark's 100,000 objects, 33 of
            // them reached by one caller: deciding the reach of each was most of a search.
            if scoped {
                range.push_str(&format!(
                    " AND +owner_id IN (SELECT o.user_id FROM scope s \
                     CROSS JOIN search_owners o ON o.slot = s.lo / {SLOT_WIDTH})"
                ));
            }
            parts.push(format!("SELECT id FROM objects WHERE {range}"));
            if t.op == Compare::StartsWith {
                parts.push(format!(
                    "SELECT id FROM objects WHERE description <> '' AND {}",
                    b.compare("coffer_fold(description)", t.op, &v)
                ));
            }
        }
        // Only the text finds (`fileContent`): without a text search nothing does.
        None if s.content_required && (fts.is_some() || apart) => {}
        _ => return None,
    }
    if let Some(q) = fts {
        parts.push(match b.backend {
            Backend::Sqlite => format!(
                "SELECT d.ref_id FROM {SCOPED_HITS} WHERE {} AND d.kind = 'f'",
                scoped_match(q)
            ),
            Backend::Postgres => format!(
                "SELECT ref_id FROM search_docs WHERE tsv @@ to_tsquery('simple', {q}) AND kind = 'f'"
            ),
        });
    }
    if let Some(u) = under {
        parts.push(format!("SELECT CAST({u} AS TEXT)"));
    }
    if parts.is_empty() {
        return Some("SELECT CAST(NULL AS TEXT) WHERE 1 = 0".into());
    }
    Some(parts.join(" UNION "))
}

/// The common table expressions `named`, `hits` and `reach` of a search on SQLite whose text
/// and parts of names are decided by the rows of their indexes (migrations 000190 and 000200),
/// given `others`, the reach of the other candidates ([`reach_of_candidates`]) with the
/// `grants` and `folders` it walked.
///
/// A row's number tells its object's owner (migration 000170), and the row itself the object's
/// parent, kind, system role and whether it is live, so the rule of [`reach_sql`] is decided
/// from the rows the index answers, read in the order of their numbers: the caller's own live
/// object but their root (a number in their own range), an object that is one of `folders`
/// (shared with the caller, or a live folder under a share: the role is that folder's), or a
/// live file, not itself shared with them again, whose parent is one of `folders`. Deciding it
/// from the rows spares reading the caller's whole reach, or each hit's object, before the
/// hits are known: a common start of a word is held by thousands of documents in a caller's
/// ranges.
///
/// `names`: the trigram index's query for a part of a name; its reached names join `others` as
/// `named`. `text`: the full-text query; `hits` are the reached documents that hold it, with
/// the role that reaches each (NULL for the caller's own), the score, and the file's folded
/// name and creator (migration 000210). `reach` is `named` and `hits`, each object once.
fn reached_rows(user: &str, names: Option<&str>, text: Option<&str>) -> String {
    let own = |row: &str| {
        format!("{row}.id / {SLOT_WIDTH} = (SELECT slot FROM search_owners WHERE user_id = {user})")
    };
    let mut ctes = Vec::new();
    ctes.push(match names {
        Some(q) => format!(
            "nhits(id, role_id) AS MATERIALIZED ( \
               SELECT n.object_id, \
                      CASE WHEN {own} THEN CAST(NULL AS BIGINT) \
                           ELSE COALESCE((SELECT f.role_id FROM folders f WHERE f.id = n.object_id), \
                                         (SELECT f.role_id FROM folders f WHERE f.id = n.parent_id)) END \
               FROM scope s CROSS JOIN search_names \
               CROSS JOIN search_names_docs n ON n.id = search_names.rowid \
               WHERE search_names MATCH {q} AND search_names.rowid BETWEEN s.lo AND s.hi \
                 AND (({own} AND n.live AND (n.system IS NULL OR n.system <> 'base')) \
                      OR n.object_id IN (SELECT id FROM folders) \
                      OR (n.kind = 'f' AND n.live AND n.system IS NULL \
                          AND n.parent_id IN (SELECT id FROM folders) \
                          AND n.object_id NOT IN (SELECT id FROM grants)))), \
             named(id, rk, role_id, path) AS MATERIALIZED ( \
               SELECT id, rk, role_id, path FROM others WHERE id NOT IN (SELECT id FROM nhits) \
               UNION ALL SELECT id, CAST(NULL AS BIGINT), role_id, CAST('' AS TEXT) FROM nhits)",
            own = own("n"),
        ),
        None => "named(id, rk, role_id, path) AS (SELECT id, rk, role_id, path FROM others)".into(),
    });
    ctes.push(match text {
        Some(q) => format!(
            "hits(ref_id, role_id, s, name_folded, creator_id) AS MATERIALIZED ( \
               SELECT d.ref_id, \
                      CASE WHEN {own} THEN CAST(NULL AS BIGINT) \
                           ELSE COALESCE((SELECT g.role_id FROM grants g WHERE g.id = d.ref_id), \
                                         (SELECT f.role_id FROM folders f WHERE f.id = d.parent_id)) END, \
                      coffer_rank(search_fts, 4.0, 1.0), d.name_folded, d.creator_id \
               FROM {SCOPED_HITS} \
               WHERE {m} AND d.kind = 'f' AND d.live \
                 AND ({own} OR d.ref_id IN (SELECT id FROM grants) \
                      OR (d.parent_id IN (SELECT id FROM folders) \
                          AND d.ref_id NOT IN (SELECT id FROM grants))))",
            own = own("d"),
            m = scoped_match(q),
        ),
        None => "hits(ref_id, role_id, s, name_folded, creator_id) AS (SELECT CAST(NULL AS TEXT), \
                 CAST(NULL AS BIGINT), CAST(NULL AS DOUBLE PRECISION), CAST(NULL AS TEXT), \
                 CAST(NULL AS TEXT) WHERE 1 = 0)"
            .into(),
    });
    ctes.push(
        "reach(id, rk, role_id, path) AS MATERIALIZED ( \
           SELECT id, rk, role_id, path FROM named WHERE id NOT IN (SELECT ref_id FROM hits) \
           UNION ALL SELECT ref_id, CAST(NULL AS BIGINT), role_id, CAST('' AS TEXT) FROM hits)"
            .into(),
    );
    ctes.join(", ")
}

/// How many documents the full-text index may answer before a search takes the caller's reach
/// first rather than the candidates ([`candidates`]). Side by side on the benchmark's database
/// (100,000 files, a reach of 3,000 objects), the two plans cost the same at about 3,600 hits;
/// a four-letter prefix finds from 850 to 46,000 documents there, and at 46,000 the candidates
/// took three times as long as the reach.
const MANY_HITS: i64 = 3000;

/// The width of one owner's range of document numbers on SQLite (migration 000170): a file's
/// document is numbered `slot * SLOT_WIDTH + n`, its owner's slot in `search_owners`; mail is
/// numbered below `SLOT_WIDTH` (slot 0).
pub const SLOT_WIDTH: i64 = 1 << 32;

/// The slots (SQLite) whose documents a search by `user_id` may need: the caller's own, and
/// those of the owners of every object shared with them. A file belongs to the owner of the
/// tree it lies in (a new object takes its parent's owner, a folder moved into another
/// owner's tree takes that owner with everything under it), so every file the caller reaches
/// has its document in one of these ranges. The ranges only spare work: what the caller finds
/// is still decided by their reach and the rule. As the JSON array [`scope_cte`] reads (`[]` on
/// PostgreSQL, which numbers no ranges), made once per search.
fn scope_slots(conn: &mut DbConn, user_id: &str) -> StoreResult<String> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        slot: i64,
    }
    let DbConn::Sqlite(c) = conn else {
        return Ok("[]".into());
    };
    let rows: Vec<Row> = crate::fixed::sql(
        "SELECT slot FROM search_owners WHERE user_id = $1 OR user_id IN ( \
           SELECT o.owner_id FROM object_members m CROSS JOIN objects o ON o.id = m.object_id \
           WHERE m.user_id = $1) ORDER BY slot",
    )
    .bind::<Text, _>(user_id)
    .load(c)?;
    let slots: Vec<i64> = rows.into_iter().map(|r| r.slot).collect();
    Ok(crate::among::json_array(&slots))
}

/// The common table expression `scope(lo, hi)`: the ranges of document numbers of the slots
/// in the JSON array bound as `slots` (see [`scope_slots`]), each joined before the index so
/// that FTS5 is asked for the words within one range at a time. Bound rather than written
/// into the text, so that the statement's text is the same for every caller.
fn scope_cte(slots: &str) -> String {
    format!(
        "scope(lo, hi) AS (SELECT value * {w}, value * {w} + {w} - 1 FROM json_each({slots}))",
        w = SLOT_WIDTH
    )
}

/// The full-text hits among files on SQLite, within the caller's ranges (`scope`), as `s`
/// (the ranges), `search_fts` and `d` (the hit's document row), for a `FROM` clause.
const SCOPED_HITS: &str =
    "scope s CROSS JOIN search_fts CROSS JOIN search_docs d ON d.id = search_fts.rowid";

/// The condition that pairs with [`SCOPED_HITS`]: the words `q`, within the range.
fn scoped_match(q: &str) -> String {
    format!("search_fts MATCH {q} AND search_fts.rowid BETWEEN s.lo AND s.hi")
}

/// The query of the trigram index of names (SQLite) for a part of a name: one phrase, taken
/// literally (a `"` doubled), whatever characters it holds.
fn name_phrase(part: &str) -> String {
    format!("\"{}\"", part.replace('"', "\"\""))
}

/// Whether a part of a name can be looked up in the trigram index of names (SQLite, migration
/// 000170): three characters or more (a trigram index finds nothing shorter).
fn by_name_parts(backend: Backend, s: &ObjectSearch<'_>) -> bool {
    backend == Backend::Sqlite
        && s.path.is_none()
        && matches!(s.text, Some(t) if t.op == Compare::Contains && t.folded.chars().count() >= 3)
}

/// Whether the full-text query `q` (the backend's syntax) is held by at least `n` documents of
/// any kind (on SQLite: files within `slots`' ranges): counted by the index alone and never
/// past `n`, so that it costs less than either plan it chooses between.
fn at_least_held(conn: &mut DbConn, q: &str, n: i64, slots: &str) -> StoreResult<bool> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let sql = match conn.backend() {
        Backend::Sqlite => format!(
            "WITH {} SELECT COUNT(*) AS n FROM (SELECT 1 FROM scope s CROSS JOIN search_fts \
             WHERE {} LIMIT $2)",
            scope_cte("$3"),
            scoped_match("$1"),
        ),
        Backend::Postgres => "SELECT COUNT(*) AS n FROM (SELECT 1 FROM search_docs \
             WHERE tsv @@ to_tsquery('simple', $1) LIMIT $2) x"
            .into(),
    };
    // `$3` (the ranges) is named on SQLite only; a value bound and never named is no error.
    let args = [
        Arg::Text(q.to_owned()),
        Arg::Int(n),
        Arg::Text(slots.to_owned()),
    ];
    let rows: Vec<Row> = db_run!(conn => crate::fixed::built(&sql, &args).load(conn))?;
    Ok(rows.first().is_some_and(|r| r.n >= n))
}

/// The folders and files `user_id` may find with `s`, one page of each, in one statement: the
/// caller's reach, the rule, the criteria, the full-text hits, the order and the pages are all
/// decided by the database, so nothing but the page leaves it. When an index finds every
/// object that can match ([`candidates`]) and the full-text hits are fewer than
/// [`MANY_HITS`], the reach is decided for those alone; otherwise the whole reach is walked
/// down (both decide the same reach by the same rule). Either way the objects are joined from the reach outwards
/// (`CROSS JOIN`: SQLite otherwise scanned every object to probe the reach) and the matches are
/// computed once for the pages and the totals (`MATERIALIZED`).
pub fn find_objects(
    conn: &mut DbConn,
    user_id: &str,
    rule: &Rule,
    s: &ObjectSearch<'_>,
) -> StoreResult<ObjectPage> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        id: String,
        #[diesel(sql_type = Text)]
        kind: String,
        #[diesel(sql_type = Nullable<BigInt>)]
        role_id: Option<i64>,
        #[diesel(sql_type = BigInt)]
        by_text: i64,
        #[diesel(sql_type = BigInt)]
        total: i64,
        #[diesel(sql_type = BigInt)]
        rn: i64,
    }
    let mut page = ObjectPage::default();
    if !s.files && !s.folders {
        return Ok(page);
    }
    let backend = conn.backend();
    let mut b = Sql::new(backend);
    let user = b.text(user_id);
    let under = s.under.map(|u| b.text(u));
    let terms = clean_terms(s.content_terms);
    let text_search = s.path.is_none() && !terms.is_empty();
    let fts_text = text_search.then(|| fts_query(backend, &terms));
    // Where the hits' reach is not decided from their documents (PostgreSQL; SQLite when the
    // other candidates have no index), candidates first costs a lookup per full-text hit, the
    // reach first the caller's reach: past MANY_HITS documents the reach is the cheaper walk.
    // On SQLite the index is read within the ranges of the owners whose files the caller may
    // reach (migration 000170), not over the whole server.
    let name_parts = by_name_parts(backend, s);
    let scoped = backend == Backend::Sqlite
        && (fts_text.is_some() || name_parts || s.text.is_some_and(|t| t.op != Compare::Contains));
    let slots = if scoped {
        scope_slots(conn, user_id)?
    } else {
        String::new()
    };
    let fts = fts_text.as_deref().map(|q| b.text(q));
    // On SQLite the text and the parts of names decide which of their hits the caller reaches
    // from the rows of their indexes ([`reached_rows`]), and the reach of the other candidates
    // is decided for those alone, when an index finds them.
    let others = if backend == Backend::Sqlite && (fts.is_some() || name_parts) {
        candidates(&mut b, s, None, under.as_deref(), true, scoped)
    } else {
        None
    };
    let mut ctes = Vec::new();
    if scoped {
        let p = b.text(&slots);
        ctes.push(scope_cte(&p));
    }
    // The objects of the reach are read again by their row key, or by id where the rows of
    // the indexes completed it (they carry no row key).
    let by_id = others.is_some();
    if let Some(others) = others {
        let names = match s.text {
            Some(t) if name_parts => Some(b.text(&name_phrase(t.folded))),
            _ => None,
        };
        ctes.push(reach_of_candidates(backend, &user, &others, "others"));
        ctes.push(reached_rows(&user, names.as_deref(), fts.as_deref()));
    } else {
        let many = match &fts_text {
            Some(q) => at_least_held(conn, q, MANY_HITS, &slots)?,
            None => false,
        };
        let cands = if many {
            None
        } else {
            candidates(&mut b, s, fts.as_deref(), under.as_deref(), false, scoped)
        };
        let reach_first = cands.is_none();
        ctes.push(match cands {
            Some(cands) => reach_of_candidates(backend, &user, &cands, "reach"),
            None => reach_sql(backend, &user, s.path.is_some()),
        });
        ctes.push(match &fts {
            // When the reach holds fewer objects than the index answers documents (decided
            // from the candidates, or past MANY_HITS), the reach's own documents are looked
            // up (by `search_docs_ref`) and each hit is kept when its rowid is one of them
            // (`+rowid`, so that the list is not handed to the index as a lookup): an integer
            // compare per hit instead of reading its document row and comparing its text id
            // with the reach. Side by side that took a quarter to a third off the statement,
            // both for a prefix held by 850 documents and for one held by 46,000.
            Some(q) if backend == Backend::Sqlite && (many || !reach_first) => format!(
                "rdocs(doc) AS MATERIALIZED ( \
                   SELECT d.id FROM reach r CROSS JOIN search_docs d \
                   WHERE d.kind = 'f' AND d.ref_id = r.id), \
                 hits(ref_id, s) AS ( \
                   SELECT d.ref_id, coffer_rank(search_fts, 4.0, 1.0) FROM {SCOPED_HITS} \
                   WHERE {m} AND +search_fts.rowid IN (SELECT doc FROM rdocs))",
                m = scoped_match(q),
            ),
            // `coffer_rank` (bm25, larger for better matches; crate `coffer-sqlite-rank`) is
            // computed only for files in the caller's reach. CROSS JOIN keeps the index's own
            // lookup outermost: the planner would otherwise walk every file's document and ask
            // the index about each.
            Some(q) if backend == Backend::Sqlite => format!(
                "hits(ref_id, s) AS ( \
                   SELECT d.ref_id, coffer_rank(search_fts, 4.0, 1.0) FROM {SCOPED_HITS} \
                   WHERE {m} AND d.kind = 'f' AND d.ref_id IN (SELECT id FROM reach))",
                m = scoped_match(q),
            ),
            Some(q) => format!(
                "hits(ref_id, s) AS ( \
                   SELECT ref_id, CAST(ts_rank(tsv, to_tsquery('simple', {q})) AS DOUBLE PRECISION) \
                   FROM search_docs WHERE tsv @@ to_tsquery('simple', {q}) AND kind = 'f' \
                     AND ref_id IN (SELECT id FROM reach))"
            ),
            None => "hits(ref_id, s) AS (SELECT CAST(NULL AS TEXT), CAST(NULL AS DOUBLE PRECISION) \
                     WHERE 1 = 0)"
                .into(),
        });
    }
    let mut wh = vec![listable(rule, &user)];
    // The conditions on a hit found by its text alone, when those are ranked and counted from
    // the hits' rows (`light`, below).
    let mut hit_wh = vec![hit_permitted(rule, &user)];
    match (s.files, s.folders) {
        (true, false) => wh.push("o.kind = 'f'".into()),
        (false, true) => wh.push("o.kind = 'd'".into()),
        _ => {}
    }
    if s.shared_only {
        wh.push("r.role_id IS NOT NULL".into());
        hit_wh.push("h.role_id IS NOT NULL".into());
    }
    if let Some(u) = &under {
        ctes.push(format!(
            "sub(id, depth) AS ( \
               SELECT id, CAST(0 AS BIGINT) FROM objects WHERE parent_id = {u} \
               UNION ALL \
               SELECT o.id, sub.depth + 1 FROM sub CROSS JOIN objects o \
               WHERE o.parent_id = sub.id AND sub.depth < 4096)"
        ));
        // A folder out of the caller's reach holds nothing they may find.
        let within = |id: &str| {
            format!(
                "{id} IN (SELECT id FROM sub) \
                 AND (EXISTS (SELECT 1 FROM reach x WHERE x.id = {u}) \
                      OR EXISTS (SELECT 1 FROM objects x WHERE x.id = {u} AND x.owner_id = {user} \
                                 AND x.system = 'base'))"
            )
        };
        wh.push(within("o.id"));
        hit_wh.push(within("h.ref_id"));
    }
    let squash = "(CASE WHEN h.s > 0 THEN h.s / (1.0 + h.s) ELSE 0.0 END)";
    let mut score = squash.to_string();
    let mut record: Vec<String> = Vec::new();
    if let Some(p) = s.path {
        // A path overrides the other criteria.
        let v = b.text(p.folded);
        wh.push(b.compare("r.path", p.op, &v));
    } else {
        // The criteria that read the object's record (`light`, below, needs none of them).
        b.bounds("o.created_at", s.created, &mut record);
        b.bounds("o.modified_at", s.modified, &mut record);
        b.bounds("o.size", s.size, &mut record);
        if let Some(c) = s.creator_id {
            let v = b.text(c);
            record.push(format!("o.creator_id = {v}"));
        }
        if let Some(d) = s.description {
            let v = b.text(d.folded);
            record.push(b.compare("coffer_fold(o.description)", d.op, &v));
        }
        for n in [s.file_name, s.folder_name].into_iter().flatten() {
            let v = b.text(n);
            record.push(b.contains("o.name_folded", &v));
        }
        if !s.extensions.is_empty() {
            let mut any = Vec::new();
            for e in s.extensions {
                let v = b.text(e);
                any.push(format!(
                    "(length(o.name_folded) > length({v}) + 1 AND \
                      substr(o.name_folded, length(o.name_folded) - length({v})) = '.' || {v})"
                ));
            }
            record.push(format!("({})", any.join(" OR ")));
        }
        if let Some(t) = s.tracking_id {
            let v = b.text(t);
            record.push(format!(
                "o.id IN (SELECT result_file_id FROM uploads WHERE tracking_id = {v} \
                 AND result_file_id IS NOT NULL)"
            ));
        }
        if s.content_required {
            wh.push("h.ref_id IS NOT NULL".into());
        }
        match s.text {
            Some(t) => {
                let v = b.text(t.folded);
                let name = b.compare("o.name_folded", t.op, &v);
                let hit = match t.op {
                    // Equality also takes the name without its extension.
                    Compare::Eq => format!(
                        "({name} OR (substr(o.name_folded, 1, length({v}) + 1) = {v} || '.' \
                          AND substr(o.name_folded, length({v}) + 2) NOT LIKE '%.%'))"
                    ),
                    op => format!(
                        "({name} OR (o.description <> '' AND {}))",
                        b.compare("coffer_fold(o.description)", op, &v)
                    ),
                };
                // A name that is the words, or starts with them, ranks first.
                let exact = format!(
                    "(CASE WHEN o.name_folded = {v} THEN 2.0 \
                      WHEN substr(o.name_folded, 1, length({v})) = {v} THEN 1.0 ELSE 0.0 END)"
                );
                score =
                    format!("(CASE WHEN {hit} THEN 2.0 + {squash} + {exact} ELSE {squash} END)");
                wh.push(format!("({hit} OR h.ref_id IS NOT NULL)"));
            }
            // Without words for the name, only the text (`fileContent`) can find.
            None if s.content_required => {}
            None => {}
        }
    }
    let key = match s.order {
        SortBy::Score => "score".to_string(),
        SortBy::Name => b.bytewise("name_folded"),
        SortBy::Created => "created_at".into(),
        SortBy::Modified => "modified_at".into(),
    };
    let dir = if s.descending { "DESC" } else { "ASC" };
    let tie = b.bytewise("name_folded");
    let first = b.int(s.offset.max(0));
    let last = b.int(s.offset.max(0).saturating_add(s.limit.max(0)));
    // A hit of [`reached_rows`] that is not also found by its name (every object a name or a
    // description finds is among `named`, so such a hit's name does not match) needs nothing of
    // its file's record when no other criterion asks for it and the order is by score or
    // name: it is ranked and counted from its row (migration 000210), and only the page's
    // files are read. Otherwise every reached object is joined to its record.
    let light = by_id
        && fts.is_some()
        && s.files
        && record.is_empty()
        && matches!(s.order, SortBy::Score | SortBy::Name);
    wh.extend(record);
    let (source, by_text_alone) = if light {
        (
            "named",
            format!(
                " UNION ALL \
                 SELECT h.ref_id AS id, 'f' AS kind, h.role_id AS role_id, \
                        h.name_folded AS name_folded, CAST(0 AS BIGINT) AS created_at, \
                        CAST(0 AS BIGINT) AS modified_at, CAST(1 AS BIGINT) AS by_text, \
                        CAST({squash} AS DOUBLE PRECISION) AS score \
                 FROM hits h WHERE h.ref_id NOT IN (SELECT id FROM named) AND {}",
                hit_wh.join(" AND ")
            ),
        )
    } else {
        ("reach", String::new())
    };
    let sql = format!(
        "WITH RECURSIVE {ctes}, \
         cand AS MATERIALIZED ( \
           SELECT o.id AS id, o.kind AS kind, r.role_id AS role_id, o.name_folded AS name_folded, \
                  o.created_at AS created_at, o.modified_at AS modified_at, \
                  CAST(CASE WHEN h.ref_id IS NULL THEN 0 ELSE 1 END AS BIGINT) AS by_text, \
                  CAST({score} AS DOUBLE PRECISION) AS score \
           FROM {source} r CROSS JOIN objects o \
           LEFT JOIN hits h ON h.ref_id = o.id AND o.kind = 'f' AND {preview} \
           WHERE {join} AND {wh}{by_text_alone}) \
         SELECT id, kind, role_id, by_text, CAST(0 AS BIGINT) AS total, rn FROM ( \
           SELECT id, kind, role_id, by_text, \
                  ROW_NUMBER() OVER (PARTITION BY kind ORDER BY {key} {dir}, {tie}, id) AS rn \
           FROM cand) p \
         WHERE rn > {first} AND rn <= {last} \
         UNION ALL \
         SELECT '' AS id, kind, CAST(NULL AS BIGINT) AS role_id, CAST(0 AS BIGINT) AS by_text, \
                CAST(COUNT(*) AS BIGINT) AS total, CAST(0 AS BIGINT) AS rn \
         FROM cand GROUP BY kind",
        ctes = ctes.join(", "),
        preview = previewable(rule, &user),
        join = if by_id {
            "o.id = r.id".to_string()
        } else {
            format!("{} = r.rk", b.row_key("o"))
        },
        wh = wh.join(" AND "),
    );
    let mut rows: Vec<Row> = b.load(conn, &sql)?;
    rows.sort_by_key(|r| r.rn);
    for r in rows {
        let file = r.kind == "f";
        if r.id.is_empty() {
            if file {
                page.total_files = r.total;
            } else {
                page.total_folders = r.total;
            }
            continue;
        }
        let hit = ObjectHit {
            id: r.id,
            role_id: r.role_id,
            by_text: r.by_text != 0,
        };
        if file {
            page.files.push(hit);
        } else {
            page.folders.push(hit);
        }
    }
    Ok(page)
}

/// The folded names of every folder and file `user_id` may list: the vocabulary of spelling
/// suggestions, so that none comes from an object the caller cannot open.
pub fn listable_names(conn: &mut DbConn, user_id: &str, rule: &Rule) -> StoreResult<Vec<String>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        name_folded: String,
    }
    let mut b = Sql::new(conn.backend());
    let user = b.text(user_id);
    let sql = format!(
        "WITH RECURSIVE {} \
         SELECT DISTINCT o.name_folded AS name_folded FROM reach r CROSS JOIN objects o \
         WHERE {} = r.rk AND {}",
        reach_sql(b.backend, &user, false),
        b.row_key("o"),
        listable(rule, &user),
    );
    Ok(b.load::<Row>(conn, &sql)?
        .into_iter()
        .map(|r| r.name_folded)
        .collect())
}

diesel::define_sql_function! {
    /// A name's fold (`coffer_domain::content::fold_name`): NFC, lower case, NFC. A function of
    /// each connection on SQLite (see [`register_sqlite_functions`]); on PostgreSQL the
    /// migration that added it defines it in SQL.
    fn coffer_fold(x: Text) -> Text;
}

/// Adds the functions search statements call to a SQLite connection.
pub fn register_sqlite_functions(
    conn: &mut diesel::sqlite::SqliteConnection,
) -> diesel::QueryResult<()> {
    coffer_fold_utils::register_impl(conn, |x: String| coffer_domain::content::fold_name(&x))
}

/// A document kind of the index: a file's text or an email.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocKind {
    File,
    Mail,
}

impl DocKind {
    fn as_str(self) -> &'static str {
        match self {
            DocKind::File => "f",
            DocKind::Mail => "m",
        }
    }
}

/// One hit of the full-text index: the file's or email's id and its relevance (larger is more
/// relevant; comparable within one query only).
#[derive(Debug, Clone, QueryableByName)]
pub struct Hit {
    #[diesel(sql_type = Text)]
    pub ref_id: String,
    #[diesel(sql_type = Double)]
    pub score: f64,
}

/// The full-text query of each backend for `terms` (letters and digits only, lower-cased,
/// never empty): every term must occur; the last one may be the start of a word.
fn fts_query(backend: Backend, terms: &[String]) -> String {
    let n = terms.len();
    match backend {
        Backend::Sqlite => terms
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i + 1 == n {
                    format!("\"{t}\"*")
                } else {
                    format!("\"{t}\"")
                }
            })
            .collect::<Vec<_>>()
            .join(" "),
        Backend::Postgres => terms
            .iter()
            .enumerate()
            .map(|(i, t)| {
                if i + 1 == n {
                    format!("'{t}':*")
                } else {
                    format!("'{t}'")
                }
            })
            .collect::<Vec<_>>()
            .join(" & "),
    }
}

/// Keeps only what the full-text grammars cannot misread: letters and digits. The service
/// splits a query into such terms already; this guards the store's own contract.
fn clean_terms(terms: &[String]) -> Vec<String> {
    terms
        .iter()
        .map(|t| {
            t.chars()
                .filter(|c| c.is_alphanumeric())
                .flat_map(char::to_lowercase)
                .collect::<String>()
        })
        .filter(|t| !t.is_empty())
        .collect()
}

/// The documents of `kind` that hold every term, with their relevance. `among`, when given,
/// keeps only those ids (the objects or mail the caller reaches); the match is exact either
/// way, the filter only spares work.
pub fn matches(
    conn: &mut DbConn,
    kind: DocKind,
    terms: &[String],
    among: Option<&[String]>,
) -> StoreResult<Vec<Hit>> {
    let terms = clean_terms(terms);
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let q = fts_query(conn.backend(), &terms);
    let among_json = among.map(|ids| serde_json::to_string(ids).unwrap_or_else(|_| "[]".into()));
    match conn {
        DbConn::Sqlite(c) => {
            // `coffer_rank`: bm25, larger for better matches (crate `coffer-sqlite-rank`).
            let sql = match among_json {
                Some(_) => {
                    "SELECT d.ref_id AS ref_id, coffer_rank(search_fts, 4.0, 1.0) AS score \
                     FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid \
                     WHERE search_fts MATCH $1 AND d.kind = $2 \
                       AND d.ref_id IN (SELECT value FROM json_each($3))"
                }
                None => {
                    "SELECT d.ref_id AS ref_id, coffer_rank(search_fts, 4.0, 1.0) AS score \
                     FROM search_fts JOIN search_docs d ON d.id = search_fts.rowid \
                     WHERE search_fts MATCH $1 AND d.kind = $2 AND $3 = ''"
                }
            };
            Ok(crate::fixed::sql(sql)
                .bind::<Text, _>(&q)
                .bind::<Text, _>(kind.as_str())
                .bind::<Text, _>(among_json.unwrap_or_default())
                .load::<Hit>(c)?)
        }
        DbConn::Pg(c) => {
            let sql = match among_json {
                Some(_) => {
                    "SELECT ref_id, CAST(ts_rank(tsv, to_tsquery('simple', $1)) AS DOUBLE PRECISION) AS score \
                     FROM search_docs WHERE tsv @@ to_tsquery('simple', $1) AND kind = $2 \
                       AND ref_id IN (SELECT jsonb_array_elements_text(CAST($3 AS jsonb)))"
                }
                None => {
                    "SELECT ref_id, CAST(ts_rank(tsv, to_tsquery('simple', $1)) AS DOUBLE PRECISION) AS score \
                     FROM search_docs WHERE tsv @@ to_tsquery('simple', $1) AND kind = $2 AND $3 = ''"
                }
            };
            Ok(crate::fixed::sql(sql)
                .bind::<Text, _>(&q)
                .bind::<Text, _>(kind.as_str())
                .bind::<Text, _>(among_json.unwrap_or_default())
                .load::<Hit>(c)?)
        }
    }
}

/// The start of a highlighted passage (never in stored text: extraction drops control
/// characters, and the service escapes the rest before marking).
pub const MARK_START: char = '\u{2}';
/// The end of a highlighted passage.
pub const MARK_END: char = '\u{3}';

/// Short passages of documents' text around the terms, the matched words between
/// [`MARK_START`] and [`MARK_END`], for many documents of one kind in one statement: each
/// document among `ref_ids` whose text holds the terms, with its passage.
///
/// On SQLite the index is asked once per range of document numbers the page's documents lie in
/// (an owner's, migration 000170), and each document it answers is kept when its rowid is
/// one of the page's (`+rowid`: the unary plus keeps the page's rowids from reaching the index
/// as a lookup). Asking the index about each document alone restarted the query for every
/// document, and a query whose last term is a prefix (`"stou"*`) merges the lists of every
/// word with that start each time: 25 passages of a four-letter prefix held by 46,000
/// documents took 230 ms of CPU that way, 15 ms in one pass.
pub fn snippets(
    conn: &mut DbConn,
    kind: DocKind,
    ref_ids: &[String],
    terms: &[String],
) -> StoreResult<std::collections::HashMap<String, String>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = Text)]
        ref_id: String,
        #[diesel(sql_type = Text)]
        s: String,
    }
    let terms = clean_terms(terms);
    if terms.is_empty() || ref_ids.is_empty() {
        return Ok(Default::default());
    }
    let q = fts_query(conn.backend(), &terms);
    let ids = serde_json::to_string(ref_ids).unwrap_or_else(|_| "[]".into());
    // SQLite numbers `$N` parameters by their first appearance: `?N` names them explicitly.
    let rows: Vec<Row> = match conn {
        DbConn::Sqlite(c) => diesel::sql_query(format!(
            "WITH docs(id) AS MATERIALIZED (SELECT id FROM search_docs \
               WHERE kind = ?2 AND ref_id IN (SELECT value FROM json_each(?3))), \
             scope(lo, hi) AS MATERIALIZED (SELECT DISTINCT id / {w} * {w}, id / {w} * {w} + {w} - 1 \
               FROM docs) \
             SELECT d.ref_id AS ref_id, snippet(search_fts, 1, char(2), char(3), '…', 16) AS s \
             FROM {SCOPED_HITS} WHERE {m} AND +search_fts.rowid IN (SELECT id FROM docs)",
            w = SLOT_WIDTH,
            m = scoped_match("?1"),
        ))
        .bind::<Text, _>(&q)
        .bind::<Text, _>(kind.as_str())
        .bind::<Text, _>(&ids)
        .load::<Row>(c)?,
        DbConn::Pg(c) => diesel::sql_query(
            "SELECT ref_id, ts_headline('simple', body, to_tsquery('simple', $1), \
               'StartSel=' || chr(2) || ', StopSel=' || chr(3) || ', MaxWords=16, MinWords=6, MaxFragments=1, FragmentDelimiter=…') AS s \
             FROM search_docs WHERE kind = $2 \
               AND ref_id IN (SELECT jsonb_array_elements_text(CAST($3 AS jsonb))) \
               AND tsv @@ to_tsquery('simple', $1)",
        )
        .bind::<Text, _>(&q)
        .bind::<Text, _>(kind.as_str())
        .bind::<Text, _>(&ids)
        .load::<Row>(c)?,
    };
    Ok(rows.into_iter().map(|r| (r.ref_id, r.s)).collect())
}

/// The folders and files (not purged) with these ids, in no particular order: a page that
/// [`find_objects`] found, read in one statement.
pub fn objects_of(conn: &mut DbConn, ids: &[String]) -> StoreResult<Vec<crate::models::Object>> {
    use crate::schema::objects;
    Ok(db_run!(conn => objects::table
        .filter(crate::among::among(objects::id, ids))
        .filter(objects::perm_deleted.eq(false))
        .select(crate::models::Object::as_select())
        .load(conn))?)
}

/// Puts a file's text into the index in place of any earlier text, and records the version
/// indexed. Returns false (and indexes nothing) when the file has moved on to another version
/// meanwhile: that version's own job indexes it.
pub fn put_file_text(
    conn: &mut DbConn,
    file_id: &str,
    version_id: &str,
    text: &str,
    t: i64,
) -> StoreResult<bool> {
    if !version_is_pending(conn, file_id, version_id)? {
        return Ok(false);
    }
    match conn {
        DbConn::Sqlite(c) => {
            crate::fixed::sql(
                "DELETE FROM search_fts WHERE rowid = \
                 (SELECT id FROM search_docs WHERE kind = 'f' AND ref_id = $1)",
            )
            .bind::<Text, _>(file_id)
            .execute(c)?;
            // A new document is numbered next in its file's owner's range (migration 000170);
            // a file indexed before keeps its number (the owner trigger moves it when the
            // owner changes).
            crate::fixed::sql(
                "INSERT OR IGNORE INTO search_owners (user_id) SELECT owner_id FROM objects WHERE id = $1",
            )
            .bind::<Text, _>(file_id)
            .execute(c)?;
            diesel::sql_query(format!(
                "INSERT INTO search_docs (id, kind, ref_id) \
                 SELECT (SELECT COALESCE( \
                           (SELECT MAX(x.id) + 1 FROM search_docs x \
                            WHERE x.id >= s.slot * {w} AND x.id < (s.slot + 1) * {w}), \
                           s.slot * {w} + 1) \
                         FROM search_owners s WHERE s.user_id = o.owner_id), 'f', o.id \
                 FROM objects o WHERE o.id = $1 \
                 ON CONFLICT (kind, ref_id) DO NOTHING",
                w = SLOT_WIDTH
            ))
            .bind::<Text, _>(file_id)
            .execute(c)?;
            crate::fixed::sql(
                "INSERT INTO search_fts (rowid, title, body) \
                 SELECT id, '', $1 FROM search_docs WHERE kind = 'f' AND ref_id = $2",
            )
            .bind::<Text, _>(text)
            .bind::<Text, _>(file_id)
            .execute(c)?;
        }
        DbConn::Pg(c) => {
            crate::fixed::sql(
                "INSERT INTO search_docs (kind, ref_id, title, body, tsv) \
                 VALUES ('f', $1, '', $2, search_tsv('', $2)) \
                 ON CONFLICT (kind, ref_id) DO UPDATE SET body = excluded.body, tsv = excluded.tsv",
            )
            .bind::<Text, _>(file_id)
            .bind::<Text, _>(text)
            .execute(c)?;
        }
    }
    set_state(conn, file_id, "indexed", None, text.len() as i64, t)?;
    Ok(true)
}

fn version_is_pending(conn: &mut DbConn, file_id: &str, version_id: &str) -> StoreResult<bool> {
    Ok(matches!(state(conn, file_id)?, Some(s) if s.version_id == version_id))
}

fn set_state(
    conn: &mut DbConn,
    file_id: &str,
    state: &str,
    error: Option<&str>,
    bytes: i64,
    t: i64,
) -> StoreResult<()> {
    db_run!(conn => crate::fixed::sql(
        "UPDATE search_texts SET state = $1, error = $2, text_bytes = $3, updated_at = $4, \
         attempts = attempts + 1 WHERE file_id = $5",
    )
    .bind::<Text, _>(state)
    .bind::<Nullable<Text>, _>(error)
    .bind::<BigInt, _>(bytes)
    .bind::<BigInt, _>(t)
    .bind::<Text, _>(file_id)
    .execute(conn))?;
    Ok(())
}

/// Records that a version's text could not be had (`failed`, with the reason) or that its type
/// holds none (`skipped`); the earlier text of the file leaves the index. Returns false when
/// the file has moved on to another version meanwhile.
pub fn record_without_text(
    conn: &mut DbConn,
    file_id: &str,
    version_id: &str,
    state: &str,
    error: Option<&str>,
    t: i64,
) -> StoreResult<bool> {
    if !version_is_pending(conn, file_id, version_id)? {
        return Ok(false);
    }
    remove_file_text(conn, file_id)?;
    set_state(conn, file_id, state, error, 0, t)?;
    Ok(true)
}

/// Records a file's pending version as `skipped` (no text) in the transaction that made it, and
/// withdraws the queued extraction its trigger added: the job could only record the same, and
/// running it would take a claim, a read and two write transactions. A job already claimed is
/// left to find the version no longer pending. False when the version is not the pending one.
pub fn skip_without_text_now(
    conn: &mut DbConn,
    file_id: &str,
    version_id: &str,
    why: &str,
    t: i64,
) -> StoreResult<bool> {
    if !record_without_text(conn, file_id, version_id, "skipped", Some(why), t)? {
        return Ok(false);
    }
    db_run!(conn => crate::fixed::sql(
        "DELETE FROM jobs WHERE kind = 'search-extract' AND payload = $1 AND state = 'queued'",
    )
    .bind::<Text, _>(file_id)
    .execute(conn))?;
    Ok(true)
}

fn remove_file_text(conn: &mut DbConn, file_id: &str) -> StoreResult<()> {
    if let DbConn::Sqlite(c) = conn {
        crate::fixed::sql(
            "DELETE FROM search_fts WHERE rowid = \
             (SELECT id FROM search_docs WHERE kind = 'f' AND ref_id = $1)",
        )
        .bind::<Text, _>(file_id)
        .execute(c)?;
    }
    db_run!(conn => crate::fixed::sql("DELETE FROM search_docs WHERE kind = 'f' AND ref_id = $1")
        .bind::<Text, _>(file_id)
        .execute(conn))?;
    Ok(())
}

/// A file's extraction state.
#[derive(Debug, Clone, QueryableByName)]
pub struct TextState {
    #[diesel(sql_type = Text)]
    pub file_id: String,
    #[diesel(sql_type = Text)]
    pub version_id: String,
    #[diesel(sql_type = Text)]
    pub state: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub error: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub attempts: i64,
    #[diesel(sql_type = BigInt)]
    pub text_bytes: i64,
}

pub fn state(conn: &mut DbConn, file_id: &str) -> StoreResult<Option<TextState>> {
    Ok(db_run!(conn => crate::fixed::sql(
        "SELECT file_id, version_id, state, error, attempts, text_bytes FROM search_texts \
         WHERE file_id = $1",
    )
    .bind::<Text, _>(file_id)
    .get_result::<TextState>(conn)
    .optional())?)
}

/// The files in a state, oldest change first, at most `limit`.
pub fn in_state(conn: &mut DbConn, state: &str, limit: i64) -> StoreResult<Vec<TextState>> {
    Ok(db_run!(conn => diesel::sql_query(
        "SELECT file_id, version_id, state, error, attempts, text_bytes FROM search_texts \
         WHERE state = $1 ORDER BY updated_at, file_id LIMIT $2",
    )
    .bind::<Text, _>(state)
    .bind::<BigInt, _>(limit)
    .load::<TextState>(conn))?)
}

/// How many files are in each extraction state, and the bytes of text indexed.
#[derive(Debug, Clone, QueryableByName)]
pub struct StateCount {
    #[diesel(sql_type = Text)]
    pub state: String,
    #[diesel(sql_type = BigInt)]
    pub files: i64,
    #[diesel(sql_type = BigInt)]
    pub text_bytes: i64,
}

pub fn counts(conn: &mut DbConn) -> StoreResult<Vec<StateCount>> {
    Ok(db_run!(conn => diesel::sql_query(
        "SELECT state, COUNT(*) AS files, CAST(COALESCE(SUM(text_bytes), 0) AS BIGINT) AS text_bytes \
         FROM search_texts GROUP BY state ORDER BY state",
    )
    .load::<StateCount>(conn))?)
}

/// The full-text tables of SQLite a merge step works on: the text of files and mail, and the
/// trigram index of names.
const FTS_TABLES: [&str; 2] = ["search_fts", "search_names"];

/// One step of merging each full-text table of SQLite into a single segment (FTS5's `merge`
/// command with a negative size: an `optimize` done in steps of about `pages` pages each).
/// Returns whether any table had work left. PostgreSQL's GIN index keeps itself: `false`.
///
/// FTS5 writes each batch of new documents as a segment of its own and merges segments only
/// when enough of the same size pile up, so an index fed file by file holds a dozen segments
/// or more, and every query opens each of them again for each range of document numbers it
/// reads: at 100,000 files a search by word spent a fifth of its time opening segments.
pub fn merge_step(conn: &mut DbConn, pages: i32) -> StoreResult<bool> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let DbConn::Sqlite(c) = conn else {
        return Ok(false);
    };
    let changes = |c: &mut diesel::SqliteConnection| -> StoreResult<i64> {
        let rows: Vec<Row> = crate::fixed::sql("SELECT total_changes() AS n").load(c)?;
        Ok(rows.first().map_or(0, |r| r.n))
    };
    let mut worked = false;
    for table in FTS_TABLES {
        let before = changes(c)?;
        diesel::sql_query(format!(
            "INSERT INTO {table} ({table}, rank) VALUES ('merge', $1)"
        ))
        .bind::<diesel::sql_types::Integer, _>(-pages.abs().max(1))
        .execute(c)?;
        // FTS5 counts each page it writes as a change: fewer than two means nothing was left.
        worked |= changes(c)? - before >= 2;
    }
    Ok(worked)
}

/// How many segments each full-text table of SQLite holds (empty on PostgreSQL).
pub fn segments(conn: &mut DbConn) -> StoreResult<Vec<(String, i64)>> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let DbConn::Sqlite(c) = conn else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for table in FTS_TABLES {
        let rows: Vec<Row> = diesel::sql_query(format!(
            "SELECT COUNT(DISTINCT segid) AS n FROM {table}_idx"
        ))
        .load(c)?;
        out.push((table.to_string(), rows.first().map_or(0, |r| r.n)));
    }
    Ok(out)
}

/// Marks every live file's current version pending again and queues its extraction, and
/// indexes every email anew: the whole index rebuilt from what is stored. Returns the files
/// queued.
pub fn reindex_all(conn: &mut DbConn, t: i64) -> StoreResult<usize> {
    let mail = match conn.backend() {
        Backend::Sqlite => {
            "DELETE FROM search_fts; DELETE FROM search_docs; \
             INSERT INTO search_docs (id, kind, ref_id) \
             SELECT ROW_NUMBER() OVER (ORDER BY id), 'm', id FROM emails; \
             INSERT INTO search_fts (rowid, title, body) SELECT d.id, e.subject, e.body \
             FROM search_docs d JOIN emails e ON e.id = d.ref_id WHERE d.kind = 'm';"
        }
        Backend::Postgres => {
            "DELETE FROM search_docs; \
             INSERT INTO search_docs (kind, ref_id, title, body, tsv) \
             SELECT 'm', id, subject, body, search_tsv(subject, body) FROM emails;"
        }
    };
    crate::batch_execute(conn, mail)?;
    db_run!(conn => diesel::sql_query(
        "DELETE FROM jobs WHERE kind = 'search-extract' AND state IN ('queued', 'failed', 'done')",
    )
    .execute(conn))?;
    db_run!(conn => diesel::sql_query("DELETE FROM search_texts").execute(conn))?;
    let n = db_run!(conn => diesel::sql_query(
        "INSERT INTO search_texts (file_id, version_id, state, error, attempts, text_bytes, updated_at) \
         SELECT o.id, o.current_version_id, 'pending', NULL, 0, 0, $1 FROM objects o \
         WHERE o.kind = 'f' AND o.current_version_id IS NOT NULL AND o.perm_deleted = FALSE",
    )
    .bind::<BigInt, _>(t)
    .execute(conn))?;
    db_run!(conn => diesel::sql_query(
        "INSERT INTO jobs (kind, payload, state, attempts, max_attempts, run_at, created_at, updated_at) \
         SELECT 'search-extract', file_id, 'queued', 0, 5, $1, $1, $1 FROM search_texts",
    )
    .bind::<BigInt, _>(t)
    .execute(conn))?;
    crate::wake::announce(conn, crate::wake::Work::Jobs)?;
    Ok(n)
}

/// The bytes the full-text index takes (SQLite: the FTS5 index's blocks; PostgreSQL: the
/// documents' table with its GIN index and TOAST), for `cofferd search status`.
pub fn index_bytes(conn: &mut DbConn) -> StoreResult<i64> {
    #[derive(QueryableByName)]
    struct Row {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let row: Option<Row> = match conn {
        // The FTS5 index proper: its b-tree blocks (the text itself is in `search_fts_content`).
        DbConn::Sqlite(c) => diesel::sql_query(
            "SELECT CAST(COALESCE(SUM(length(block)), 0) AS BIGINT) AS n FROM search_fts_data",
        )
        .get_result::<Row>(c)
        .optional()?,
        DbConn::Pg(c) => {
            diesel::sql_query("SELECT CAST(pg_total_relation_size('search_docs') AS BIGINT) AS n")
                .get_result::<Row>(c)
                .optional()?
        }
    };
    Ok(row.map_or(0, |r| r.n))
}

/// The caller's mail that matches: the ids of emails with an entry (not in the trash) in one
/// of `boxes`, with the entry's bucket, for the service to filter further.
#[derive(Debug, Clone, QueryableByName)]
pub struct MailRow {
    #[diesel(sql_type = Text)]
    pub email_id: String,
    #[diesel(sql_type = Text)]
    pub user_id: String,
    #[diesel(sql_type = Text)]
    pub bucket: String,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Text)]
    pub sender_id: String,
    #[diesel(sql_type = Text)]
    pub subject: String,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = BigInt)]
    pub modified_at: i64,
}

/// Every live mailbox entry of `boxes` with its email.
pub fn mail_of(conn: &mut DbConn, boxes: &[String]) -> StoreResult<Vec<MailRow>> {
    let json = serde_json::to_string(boxes).unwrap_or_else(|_| "[]".into());
    let sql = match conn.backend() {
        Backend::Sqlite => {
            "SELECT e.email_id, e.user_id, e.bucket, m.status, m.sender_id, m.subject, \
                    e.created_at, m.modified_at \
             FROM mailbox_entries e JOIN emails m ON m.id = e.email_id \
             WHERE e.trashed_at IS NULL AND e.user_id IN (SELECT value FROM json_each($1))"
        }
        Backend::Postgres => {
            "SELECT e.email_id, e.user_id, e.bucket, m.status, m.sender_id, m.subject, \
                    e.created_at, m.modified_at \
             FROM mailbox_entries e JOIN emails m ON m.id = e.email_id \
             WHERE e.trashed_at IS NULL \
               AND e.user_id IN (SELECT jsonb_array_elements_text(CAST($1 AS jsonb)))"
        }
    };
    Ok(db_run!(conn => crate::fixed::sql(sql)
        .bind::<Text, _>(&json)
        .load::<MailRow>(conn))?)
}

/// The user ids among an email's recipients, per email.
pub fn recipient_users(
    conn: &mut DbConn,
    email_ids: &[String],
) -> StoreResult<Vec<(String, String)>> {
    use crate::schema::email_recipients;
    Ok(db_run!(conn => email_recipients::table
        .filter(email_recipients::email_id.eq_any(email_ids))
        .filter(email_recipients::user_id.is_not_null())
        .select((email_recipients::email_id, email_recipients::user_id.assume_not_null()))
        .load::<(String, String)>(conn))?)
}

#[cfg(test)]
mod tests {
    use super::after_prefix;

    /// Every string that starts with the prefix lies in `[prefix, end)`, and no other does.
    #[test]
    fn a_prefix_range_holds_exactly_the_strings_with_that_start() {
        let end = after_prefix("abc").unwrap();
        assert_eq!(end, "abd");
        for inside in ["abc", "abc.txt", "abc\u{10FFFF}z", "abcz"] {
            assert!(inside >= "abc" && inside < end.as_str(), "{inside}");
        }
        for outside in ["abd", "abb\u{10FFFF}", "ab", "abda"] {
            assert!(!(outside >= "abc" && outside < end.as_str()), "{outside}");
        }
        // The next character skips the surrogates, which no string holds.
        assert_eq!(after_prefix("a\u{D7FF}").unwrap(), "a\u{E000}");
        // The last character has no next one: the one before it moves on.
        assert_eq!(after_prefix("a\u{10FFFF}").unwrap(), "b");
        assert_eq!(after_prefix("\u{10FFFF}"), None);
        assert_eq!(after_prefix("é").unwrap(), "ê");
    }
}

/// The statements of a search on SQLite's owner ranges (migration 000170), on a real database:
/// text and parts of names found within the caller's ranges and those of the owners who share
/// with them, never outside the reach, and a file's document following it to a new owner.
#[cfg(test)]
mod ranges {
    use super::*;
    use crate::test_support::{insert_user, sqlite};

    fn search<'a>(op: Compare, words: &'a str, terms: &'a [String]) -> ObjectSearch<'a> {
        ObjectSearch {
            files: true,
            folders: true,
            shared_only: false,
            under: None,
            path: None,
            created: Bounds::default(),
            modified: Bounds::default(),
            size: Bounds::default(),
            creator_id: None,
            description: None,
            file_name: None,
            folder_name: None,
            extensions: &[],
            tracking_id: None,
            text: Some(Match { op, folded: words }),
            content_terms: terms,
            content_required: false,
            order: SortBy::Score,
            descending: false,
            offset: 0,
            limit: 25,
        }
    }

    fn found(conn: &mut DbConn, user: &str, op: Compare, words: &str) -> Vec<String> {
        let rule = Rule {
            list: vec![1, 2, 3, 4, 5, 8, 9],
            preview: vec![1, 2, 3, 4, 8, 9],
            own_files_only: vec![5],
        };
        let terms = vec![words.to_string()];
        let page = find_objects(conn, user, &rule, &search(op, words, &terms)).unwrap();
        let mut ids: Vec<String> = page.files.into_iter().map(|h| h.id).collect();
        ids.sort();
        ids
    }

    fn object(
        conn: &mut DbConn,
        id: &str,
        kind: &str,
        parent: Option<&str>,
        owner: &str,
        name: &str,
    ) {
        let parent = parent.map_or("NULL".to_string(), |p| format!("'{p}'"));
        let system = if parent == "NULL" { "'base'" } else { "NULL" };
        crate::batch_execute(
            conn,
            &format!(
                "INSERT INTO objects (id, kind, parent_id, owner_id, system, name, name_folded, \
                 created_at, modified_at, creator_id, modifier_id) VALUES ('{id}', '{kind}', \
                 {parent}, '{owner}', {system}, '{name}', '{name}', 0, 0, '{owner}', '{owner}')"
            ),
        )
        .unwrap();
    }

    fn text(conn: &mut DbConn, file: &str, body: &str) {
        crate::batch_execute(
            conn,
            &format!(
                "INSERT INTO search_texts (file_id, version_id, state, attempts, text_bytes, \
                 updated_at) VALUES ('{file}', 'v-{file}', 'pending', 0, 0, 0) \
                 ON CONFLICT (file_id) DO UPDATE SET version_id = excluded.version_id, \
                 state = 'pending'"
            ),
        )
        .unwrap();
        assert!(put_file_text(conn, file, &format!("v-{file}"), body, 0).unwrap());
    }

    #[test]
    fn text_and_name_parts_are_found_within_the_owners_ranges_only_in_reach() {
        let (_dir, mut conn) = sqlite();
        let c = &mut conn;
        let ann = insert_user(c, &[]);
        let bob = insert_user(c, &[]);
        let cay = insert_user(c, &[]);
        object(c, "ra", "d", None, &ann, "ra");
        object(c, "team", "d", Some("ra"), &ann, "team");
        object(c, "rb", "d", None, &bob, "rb");
        object(c, "drafts", "d", Some("rb"), &bob, "drafts");
        object(c, "a1", "f", Some("team"), &ann, "alpha quokka.txt");
        object(c, "b1", "f", Some("drafts"), &bob, "zeta.txt");
        crate::batch_execute(
            c,
            &format!(
                "INSERT INTO object_members (object_id, user_id, role_id, shared_by, created_at) \
                 VALUES ('team', '{cay}', 4, '{ann}', 0)"
            ),
        )
        .unwrap();
        text(c, "a1", "quokka census");
        text(c, "b1", "quokka migration report");

        // Text, by a whole word and by its start; a part of a name.
        assert_eq!(found(c, &cay, Compare::Contains, "quokka"), ["a1"]);
        assert_eq!(found(c, &cay, Compare::StartsWith, "quok"), ["a1"]);
        assert_eq!(found(c, &cay, Compare::Contains, "okk"), ["a1"]);
        assert_eq!(
            found(c, &cay, Compare::Contains, "migration"),
            Vec::<String>::new()
        );
        assert_eq!(found(c, &bob, Compare::Contains, "quokka"), ["b1"]);
        assert_eq!(found(c, &bob, Compare::Contains, "eta.t"), ["b1"]);
        assert_eq!(
            found(c, &ann, Compare::Contains, "zeta"),
            Vec::<String>::new()
        );
        assert_eq!(found(c, &ann, Compare::StartsWith, "quok"), ["a1"]);

        // Bob's file moves into Ann's tree: its document and its name go to Ann's range.
        crate::batch_execute(
            c,
            &format!("UPDATE objects SET owner_id = '{ann}', parent_id = 'team' WHERE id = 'b1'"),
        )
        .unwrap();
        assert_eq!(found(c, &cay, Compare::Contains, "migration"), ["b1"]);
        assert_eq!(found(c, &cay, Compare::StartsWith, "migr"), ["b1"]);
        assert_eq!(found(c, &cay, Compare::Contains, "eta.t"), ["b1"]);
        assert_eq!(found(c, &cay, Compare::Contains, "quokka"), ["a1", "b1"]);
        assert_eq!(
            found(c, &bob, Compare::Contains, "quokka"),
            Vec::<String>::new()
        );
        // A rename is found by its new name only.
        crate::batch_execute(
            c,
            "UPDATE objects SET name_folded = 'omega.txt' WHERE id = 'b1'",
        )
        .unwrap();
        assert_eq!(
            found(c, &cay, Compare::Contains, "eta.t"),
            Vec::<String>::new()
        );
        assert_eq!(found(c, &cay, Compare::Contains, "omeg"), ["b1"]);
        // A member removed finds nothing more.
        crate::batch_execute(c, "DELETE FROM object_members WHERE object_id = 'team'").unwrap();
        assert_eq!(
            found(c, &cay, Compare::Contains, "quokka"),
            Vec::<String>::new()
        );
        assert_eq!(
            found(c, &cay, Compare::Contains, "omeg"),
            Vec::<String>::new()
        );
        // Passages come from the owner's range.
        let terms = vec!["migration".to_string()];
        let s = snippets(c, DocKind::File, &["b1".to_string()], &terms).unwrap();
        assert!(s["b1"].contains("migration"), "{s:?}");
    }

    /// A text search decides which hits the caller reaches from the hits' documents (migration
    /// 000190): each document follows its file to the trash and back, out of a shared folder,
    /// into purging, and the role that reaches a file (a share of the folder, of the file
    /// itself, an uploader's own files only) decides as the reach does.
    #[test]
    fn hits_are_reached_by_their_documents_as_the_files_move() {
        let (_dir, mut conn) = sqlite();
        let c = &mut conn;
        let ann = insert_user(c, &[]);
        let cay = insert_user(c, &[]);
        let dan = insert_user(c, &[]);
        let eve = insert_user(c, &[]);
        object(c, "ra", "d", None, &ann, "ra");
        object(c, "team", "d", Some("ra"), &ann, "team");
        object(c, "sub", "d", Some("team"), &ann, "sub");
        object(c, "a1", "f", Some("sub"), &ann, "a1.txt");
        object(c, "e1", "f", Some("team"), &ann, "e1.txt");
        crate::batch_execute(
            c,
            &format!("UPDATE objects SET creator_id = '{eve}' WHERE id = 'e1'"),
        )
        .unwrap();
        crate::batch_execute(
            c,
            &format!(
                "INSERT INTO object_members (object_id, user_id, role_id, shared_by, created_at) \
                 VALUES ('team', '{cay}', 4, '{ann}', 0), ('a1', '{dan}', 4, '{ann}', 0), \
                 ('team', '{eve}', 5, '{ann}', 0)"
            ),
        )
        .unwrap();
        text(c, "a1", "wombat census");
        text(c, "e1", "wombat burrow");
        let none = Vec::<String>::new();
        // A Viewer-like role (4) that previews, an Uploader-like one (5) that sees only the
        // files its holder created.
        let rule = Rule {
            list: vec![4, 5],
            preview: vec![4, 5],
            own_files_only: vec![5],
        };
        let terms = vec!["wombat".to_string()];
        let by_text = |c: &mut DbConn, user: &str| {
            let page =
                find_objects(c, user, &rule, &search(Compare::Contains, "wombat", &terms)).unwrap();
            let mut ids: Vec<String> = page.files.into_iter().map(|h| h.id).collect();
            ids.sort();
            ids
        };

        assert_eq!(by_text(c, &ann), ["a1", "e1"]);
        assert_eq!(by_text(c, &cay), ["a1", "e1"]);
        // A file shared alone is reached by its own share; an uploader finds only their own.
        assert_eq!(by_text(c, &dan), ["a1"]);
        assert_eq!(by_text(c, &eve), ["e1"]);
        let mut q = search(Compare::Contains, "wombat", &terms);
        q.content_required = true;
        q.text = None;
        let page = find_objects(c, &cay, &rule, &q).unwrap();
        let roles: Vec<(String, Option<i64>, bool)> = page
            .files
            .iter()
            .map(|h| (h.id.clone(), h.role_id, h.by_text))
            .collect();
        assert_eq!(page.total_files, 2);
        assert!(roles.contains(&("a1".into(), Some(4), true)), "{roles:?}");
        let page = find_objects(c, &ann, &rule, &q).unwrap();
        assert!(
            page.files.iter().all(|h| h.role_id.is_none()),
            "{:?}",
            page.files
        );

        // To the trash and back.
        crate::batch_execute(c, "UPDATE objects SET deleted_at = 5 WHERE id = 'a1'").unwrap();
        assert_eq!(by_text(c, &ann), ["e1"]);
        assert_eq!(by_text(c, &cay), ["e1"]);
        assert_eq!(by_text(c, &dan), none);
        crate::batch_execute(c, "UPDATE objects SET deleted_at = NULL WHERE id = 'a1'").unwrap();
        assert_eq!(by_text(c, &cay), ["a1", "e1"]);
        // Out of the shared folder: only its owner (and the share of the file itself) reach it.
        crate::batch_execute(c, "UPDATE objects SET parent_id = 'ra' WHERE id = 'a1'").unwrap();
        assert_eq!(by_text(c, &cay), ["e1"]);
        assert_eq!(by_text(c, &dan), ["a1"]);
        assert_eq!(by_text(c, &ann), ["a1", "e1"]);
        // A folder trashed takes what is under it out of reach through it.
        crate::batch_execute(c, "UPDATE objects SET parent_id = 'sub' WHERE id = 'a1'").unwrap();
        crate::batch_execute(c, "UPDATE objects SET deleted_at = 6 WHERE id = 'sub'").unwrap();
        assert_eq!(by_text(c, &cay), ["e1"]);
        crate::batch_execute(c, "UPDATE objects SET deleted_at = NULL WHERE id = 'sub'").unwrap();
        assert_eq!(by_text(c, &cay), ["a1", "e1"]);
        // Purged.
        crate::batch_execute(c, "UPDATE objects SET perm_deleted = TRUE WHERE id = 'e1'").unwrap();
        assert_eq!(by_text(c, &ann), ["a1"]);
        assert_eq!(by_text(c, &eve), none);
        // A rename reaches the document.
        crate::batch_execute(
            c,
            "UPDATE objects SET name_folded = 'zz.txt' WHERE id = 'a1'",
        )
        .unwrap();
        // The documents' columns are what the files say.
        #[derive(QueryableByName)]
        struct Doc {
            #[diesel(sql_type = Text)]
            ref_id: String,
            #[diesel(sql_type = Nullable<Text>)]
            parent_id: Option<String>,
            #[diesel(sql_type = BigInt)]
            live: i64,
            #[diesel(sql_type = Nullable<Text>)]
            name_folded: Option<String>,
            #[diesel(sql_type = Nullable<Text>)]
            creator_id: Option<String>,
        }
        let DbConn::Sqlite(s) = c else {
            panic!("a SQLite connection");
        };
        let docs: Vec<Doc> = diesel::sql_query(
            "SELECT ref_id, parent_id, CAST(live AS BIGINT) AS live, name_folded, creator_id \
             FROM search_docs WHERE kind = 'f' ORDER BY ref_id",
        )
        .load(s)
        .unwrap();
        type Row = (String, Option<String>, i64, Option<String>, Option<String>);
        let docs: Vec<Row> = docs
            .into_iter()
            .map(|d| (d.ref_id, d.parent_id, d.live, d.name_folded, d.creator_id))
            .collect();
        let row = |id: &str, parent: &str, live: i64, name: &str, creator: &str| -> Row {
            (
                id.into(),
                Some(parent.into()),
                live,
                Some(name.into()),
                Some(creator.into()),
            )
        };
        assert_eq!(
            docs,
            [
                row("a1", "sub", 1, "zz.txt", &ann),
                row("e1", "team", 0, "e1.txt", &eve)
            ]
        );
    }

    /// A search for a part of a name decides which names the caller reaches from the rows of
    /// the trigram index (migration 000200): each row follows its object to the trash and
    /// back, out of a shared folder and into purging, with the role of the nearest share.
    #[test]
    fn names_are_reached_by_their_rows_as_the_objects_move() {
        let (_dir, mut conn) = sqlite();
        let c = &mut conn;
        let ann = insert_user(c, &[]);
        let cay = insert_user(c, &[]);
        object(c, "ra", "d", None, &ann, "ra");
        object(c, "team", "d", Some("ra"), &ann, "team");
        object(c, "sub", "d", Some("team"), &ann, "numbat den");
        object(c, "a1", "f", Some("sub"), &ann, "numbat notes.txt");
        object(c, "a2", "f", Some("ra"), &ann, "numbat private.txt");
        crate::batch_execute(
            c,
            &format!(
                "INSERT INTO object_members (object_id, user_id, role_id, shared_by, created_at) \
                 VALUES ('team', '{cay}', 4, '{ann}', 0)"
            ),
        )
        .unwrap();
        let rule = Rule {
            list: vec![4],
            preview: vec![4],
            own_files_only: vec![],
        };
        let named = |c: &mut DbConn, user: &str| {
            let page =
                find_objects(c, user, &rule, &search(Compare::Contains, "umba", &[])).unwrap();
            let mut ids: Vec<(String, Option<i64>)> = page
                .files
                .into_iter()
                .chain(page.folders)
                .map(|h| (h.id, h.role_id))
                .collect();
            ids.sort();
            ids
        };
        let shared = |ids: &[&str]| -> Vec<(String, Option<i64>)> {
            ids.iter().map(|id| (id.to_string(), Some(4))).collect()
        };
        let own = |ids: &[&str]| -> Vec<(String, Option<i64>)> {
            ids.iter().map(|id| (id.to_string(), None)).collect()
        };
        assert_eq!(named(c, &cay), shared(&["a1", "sub"]));
        assert_eq!(named(c, &ann), own(&["a1", "a2", "sub"]));
        // To the trash and back.
        crate::batch_execute(
            c,
            "UPDATE objects SET deleted_at = 5 WHERE id IN ('sub', 'a1')",
        )
        .unwrap();
        assert_eq!(named(c, &cay), shared(&[]));
        assert_eq!(named(c, &ann), own(&["a2"]));
        crate::batch_execute(
            c,
            "UPDATE objects SET deleted_at = NULL WHERE id IN ('sub', 'a1')",
        )
        .unwrap();
        assert_eq!(named(c, &cay), shared(&["a1", "sub"]));
        // Out of the shared folder, and a private file moved into it.
        crate::batch_execute(c, "UPDATE objects SET parent_id = 'ra' WHERE id = 'a1'").unwrap();
        crate::batch_execute(c, "UPDATE objects SET parent_id = 'sub' WHERE id = 'a2'").unwrap();
        assert_eq!(named(c, &cay), shared(&["a2", "sub"]));
        // Purged.
        crate::batch_execute(c, "UPDATE objects SET perm_deleted = TRUE WHERE id = 'a2'").unwrap();
        assert_eq!(named(c, &cay), shared(&["sub"]));
        assert_eq!(named(c, &ann), own(&["a1", "sub"]));
        // A member removed finds nothing more.
        crate::batch_execute(c, "DELETE FROM object_members WHERE object_id = 'team'").unwrap();
        assert_eq!(named(c, &cay), shared(&[]));
    }

    /// The walk of a caller's reach (without paths) reads the caller's own objects and the
    /// files of the shared folders from the indexes of migration 000180 alone: SQLite's plan
    /// names each as a covering index, so no object's row is read to decide the reach.
    #[test]
    fn the_reach_is_walked_from_covering_indexes() {
        #[derive(QueryableByName)]
        struct Step {
            #[diesel(sql_type = Text)]
            detail: String,
        }
        let (_dir, mut conn) = sqlite();
        let DbConn::Sqlite(c) = &mut conn else {
            panic!("a SQLite connection");
        };
        let sql = format!(
            "EXPLAIN QUERY PLAN WITH RECURSIVE {} SELECT id, rk FROM reach",
            reach_sql(Backend::Sqlite, "$1", false)
        );
        let plan: Vec<String> = diesel::sql_query(sql)
            .bind::<Text, _>("someone")
            .load::<Step>(c)
            .unwrap()
            .into_iter()
            .map(|s| s.detail)
            .collect();
        for index in ["objects_owner", "objects_parent"] {
            let covering = format!("USING COVERING INDEX {index} ");
            assert!(
                plan.iter().any(|d| d.contains(&covering)),
                "{index} not read as a covering index: {plan:#?}"
            );
        }
        assert!(
            !plan.iter().any(|d| d.starts_with("SCAN o")),
            "a scan of objects: {plan:#?}"
        );
    }
}
