//! Answers a [`Query`]: the folders and files the caller reaches (from the store, with the role
//! that reaches each), judged one by one with the content core's rule — found by name what
//! the caller may list, by text what they may preview — then the full-text index asked only
//! about those; the caller's mail likewise. Counts, passages and suggestions are made from
//! what passed, so nothing the caller cannot open shows in any of them.

use super::{terms, Bucket, Found, Order, Query, TextMatch, TextOp};
use crate::content::{self, files, folders};
use crate::platform::auth::Caller;
use crate::{Ctx, Result};
use coffer_domain::content::{Access, Action};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::search::{self as store, DocKind, Reachable, MARK_END, MARK_START};
use coffer_store::DbConn;
use std::collections::{HashMap, HashSet};

/// `GET /rest/search`.
pub fn search(ctx: &Ctx, caller: &Caller, q: &Query) -> Result<Found> {
    ctx.read(|c| run(c, ctx, caller.user_id(), q))
}

/// `GET /rest/query`: as [`search`], for a caller whose profile allows collaboration (403
/// `ERR_PROFILE_COLLABORATION_DISABLED` otherwise).
pub fn query(ctx: &Ctx, caller: &Caller, q: &Query) -> Result<Found> {
    ctx.read(|c| {
        let allowed = coffer_store::users::profile(c, caller.user.profile_id)?
            .is_some_and(|p| p.collaboration_enabled);
        if !allowed {
            return Err(ApiError::new(ErrorCode::ProfileCollaborationDisabled).into());
        }
        run(c, ctx, caller.user_id(), q)
    })
}

/// One object that passed the criteria, with how well it matched.
struct Candidate<'a> {
    r: &'a Reachable,
    access: Access,
    score: f64,
    by_text: bool,
}

fn access_of(r: &Reachable) -> Access {
    match r.role_id {
        None => Access::Owner,
        Some(role) => Access::Role(role),
    }
}

/// The reach indexed by id, to walk up from any object.
struct Tree<'a> {
    by_id: HashMap<&'a str, &'a Reachable>,
}

impl<'a> Tree<'a> {
    fn new(rows: &'a [Reachable]) -> Tree<'a> {
        Tree {
            by_id: rows.iter().map(|r| (r.id.as_str(), r)).collect(),
        }
    }

    /// The object and its ancestors the caller reaches, nearest first, up to the top of their
    /// reach (their own root is left out).
    fn chain(&self, r: &'a Reachable) -> Vec<&'a Reachable> {
        let mut out = Vec::new();
        let mut cur = Some(r);
        while let Some(o) = cur {
            if o.system.as_deref() == Some("base") || out.len() > 4096 {
                break;
            }
            out.push(o);
            if o.top == 1 {
                break;
            }
            cur = o
                .parent_id
                .as_deref()
                .and_then(|p| self.by_id.get(p).copied());
        }
        out
    }

    /// The path as the caller sees it: the names from the top of their reach down to the
    /// object, joined by `/` (as the records' `path`), folded.
    fn path(&self, r: &'a Reachable) -> String {
        let names: Vec<&str> = self
            .chain(r)
            .iter()
            .rev()
            .map(|o| o.name_folded.as_str())
            .collect();
        names.join("/")
    }

    fn is_under(&self, r: &'a Reachable, folder: &str) -> bool {
        self.chain(r).iter().skip(1).any(|o| o.id == folder)
    }
}

fn extension(name: &str) -> Option<String> {
    let (stem, ext) = name.rsplit_once('.')?;
    (!stem.is_empty()).then(|| ext.to_lowercase())
}

/// A relevance in (0, 1) from a backend's score, so that any name hit (2 and more) ranks
/// above every hit by text alone.
fn squash(s: f64) -> f64 {
    let s = s.max(0.0);
    s / (1.0 + s)
}

fn run(c: &mut DbConn, ctx: &Ctx, user_id: &str, q: &Query) -> Result<Found> {
    let mut found = Found::default();
    let words: Vec<String> = q
        .text
        .as_ref()
        .map(|t| terms(&t.folded))
        .unwrap_or_default();
    if q.files || q.folders {
        objects(c, ctx, user_id, q, &words, &mut found)?;
    }
    if q.mail {
        mail(c, user_id, q, &words, &mut found)?;
    } else if let Some(m) = &q.shared_mailbox {
        // The mailbox is still checked, so the answer does not depend on the types asked.
        crate::mail::mailbox(c, user_id, Some(m))?;
    }
    Ok(found)
}

fn objects(
    c: &mut DbConn,
    ctx: &Ctx,
    user_id: &str,
    q: &Query,
    words: &[String],
    found: &mut Found,
) -> Result<()> {
    let rows = store::reachable(c, user_id)?;
    let tree = Tree::new(&rows);
    let creator = match &q.creator_email {
        Some(e) => Some(
            coffer_store::users::by_email(c, e)?
                .map(|u| u.id)
                .unwrap_or_default(),
        ),
        None => None,
    };
    let tracked: Option<HashSet<String>> = match &q.tracking_id {
        Some(t) => Some(store::tracked_files(c, t)?.into_iter().collect()),
        None => None,
    };
    let under = q.under.as_deref().filter(|u| tree.by_id.contains_key(u));
    if q.under.is_some() && under.is_none() {
        // A folder the caller does not reach holds nothing they may find.
        return Ok(());
    }
    // Everything the criteria other than text keep, that the caller may list.
    let mut listed: Vec<Candidate> = Vec::new();
    for r in &rows {
        if r.system.as_deref() == Some("base") {
            continue;
        }
        let folder = r.kind == "d";
        if (folder && !q.folders) || (!folder && !q.files) {
            continue;
        }
        let access = access_of(r);
        if !content::permits(user_id, access, folder, &r.creator_id, Action::List) {
            continue;
        }
        if q.shared_only && r.role_id.is_none() {
            continue;
        }
        if let Some(u) = under {
            if !tree.is_under(r, u) {
                continue;
            }
        }
        if let Some(p) = &q.path {
            // A path overrides the other criteria.
            if !p.hits(&tree.path(r)) {
                continue;
            }
        } else if !keeps(q, r, folder, creator.as_deref(), tracked.as_ref()) {
            continue;
        }
        listed.push(Candidate {
            r,
            access,
            score: 0.0,
            by_text: false,
        });
    }
    let mut kept = if q.path.is_some() {
        listed
    } else {
        by_text(c, user_id, q, words, listed)?
    };
    sort(&mut kept, q.order, q.descending);
    let (fs, ds): (Vec<Candidate>, Vec<Candidate>) =
        kept.into_iter().partition(|k| k.r.kind == "f");
    found.total_files = fs.len() as i64;
    found.total_folders = ds.len() as i64;
    let content_words = content_terms(q, words);
    for k in page(&fs, q) {
        let Some(o) = coffer_store::content::object(c, &k.r.id)? else {
            continue;
        };
        found
            .files
            .push(files::view(c, ctx, user_id, &o, k.access)?);
        if k.by_text {
            if let Some(s) = store::snippet(c, DocKind::File, &o.id, &content_words)? {
                found.highlights.insert(o.id.clone(), marked(&s));
            }
        }
    }
    for k in page(&ds, q) {
        let Some(o) = coffer_store::content::object(c, &k.r.id)? else {
            continue;
        };
        found
            .folders
            .push(folders::view(c, ctx, user_id, &o, k.access)?);
    }
    if q.spell_check && !words.is_empty() {
        let vocabulary: HashSet<String> = rows
            .iter()
            .filter(|r| {
                content::permits(
                    user_id,
                    access_of(r),
                    r.kind == "d",
                    &r.creator_id,
                    Action::List,
                )
            })
            .flat_map(|r| terms(&r.name_folded))
            .collect();
        found.file_suggestions = suggest(words, &vocabulary).into_iter().collect();
    }
    Ok(())
}

/// The words searched in file text: those of `fileContent`, else of the query.
fn content_terms(q: &Query, words: &[String]) -> Vec<String> {
    match &q.file_content {
        Some(t) => terms(t),
        None => words.to_vec(),
    }
}

/// The criteria other than text and path.
fn keeps(
    q: &Query,
    r: &Reachable,
    folder: bool,
    creator: Option<&str>,
    tracked: Option<&HashSet<String>>,
) -> bool {
    if !q.created.holds(r.created_at) || !q.modified.holds(r.modified_at) {
        return false;
    }
    if let Some(c) = creator {
        if r.creator_id != c {
            return false;
        }
    }
    if let Some(d) = &q.description {
        if !d.hits(&coffer_domain::content::fold_name(&r.description)) {
            return false;
        }
    }
    if let Some(n) = &q.folder_name {
        if !folder || !r.name_folded.contains(n.as_str()) {
            return false;
        }
    }
    if folder {
        // Criteria only files have leave folders out when given.
        return !(q.size.is_set()
            || q.locked.is_set()
            || !q.extensions.is_empty()
            || tracked.is_some()
            || q.file_name.is_some()
            || q.file_content.is_some());
    }
    if let Some(n) = &q.file_name {
        if !r.name_folded.contains(n.as_str()) {
            return false;
        }
    }
    if q.folder_name.is_some() {
        return false;
    }
    // Coffer has no file locks: every file counts as unlocked (0).
    if !q.size.holds(r.size) || !q.locked.holds(0) {
        return false;
    }
    if !q.extensions.is_empty() {
        match extension(&r.name) {
            Some(e) if q.extensions.contains(&e) => {}
            _ => return false,
        }
    }
    if let Some(t) = tracked {
        if !t.contains(&r.id) {
            return false;
        }
    }
    true
}

/// Keeps what the text criteria find: a name (or, on `/rest/search`, a description) that
/// matches, or a file whose text holds every word and that the caller may preview. Without
/// text criteria everything listed is kept.
fn by_text<'a>(
    c: &mut DbConn,
    user_id: &str,
    q: &Query,
    words: &[String],
    listed: Vec<Candidate<'a>>,
) -> Result<Vec<Candidate<'a>>> {
    let content_words = content_terms(q, words);
    let text_search = q.include_content && !q.name_only && !content_words.is_empty();
    let mut scores: HashMap<String, f64> = HashMap::new();
    if text_search {
        let among: Vec<String> = listed
            .iter()
            .filter(|k| {
                k.r.kind == "f"
                    && content::permits(user_id, k.access, false, &k.r.creator_id, Action::Preview)
            })
            .map(|k| k.r.id.clone())
            .collect();
        if !among.is_empty() {
            for h in store::matches(c, DocKind::File, &content_words, Some(&among))? {
                scores.insert(h.ref_id, h.score);
            }
        }
    }
    let mut out = Vec::new();
    for mut k in listed {
        let content_hit = scores.get(&k.r.id).copied();
        if q.file_content.is_some() && content_hit.is_none() {
            continue;
        }
        let name_hit = match &q.text {
            Some(t) => name_hits(t, k.r),
            None => q.file_content.is_none(),
        };
        let text_given = q.text.is_some() || q.file_content.is_some();
        if text_given && !name_hit && content_hit.is_none() {
            continue;
        }
        k.by_text = content_hit.is_some();
        k.score = match (name_hit && q.text.is_some(), content_hit) {
            (true, s) => 2.0 + s.map_or(0.0, squash) + exactness(q.text.as_ref(), k.r),
            (false, Some(s)) => squash(s),
            (false, None) => 0.0,
        };
        out.push(k);
    }
    Ok(out)
}

/// Whether the name (or its description) answers the text criterion. Equality also takes the
/// name without its extension.
fn name_hits(t: &TextMatch, r: &Reachable) -> bool {
    if t.hits(&r.name_folded) {
        return true;
    }
    if t.op == TextOp::Eq {
        if let Some((stem, _)) = r.name_folded.rsplit_once('.') {
            if stem == t.folded {
                return true;
            }
        }
    }
    t.op != TextOp::Eq
        && !r.description.is_empty()
        && t.hits(&coffer_domain::content::fold_name(&r.description))
}

/// A bonus for a name that is the text, or starts with it.
fn exactness(t: Option<&TextMatch>, r: &Reachable) -> f64 {
    match t {
        Some(t) if r.name_folded == t.folded => 2.0,
        Some(t) if r.name_folded.starts_with(&t.folded) => 1.0,
        _ => 0.0,
    }
}

fn sort(v: &mut [Candidate], order: Order, descending: bool) {
    v.sort_by(|a, b| {
        let by = match order {
            Order::Score => a
                .score
                .partial_cmp(&b.score)
                .unwrap_or(std::cmp::Ordering::Equal),
            Order::Name => a.r.name_folded.cmp(&b.r.name_folded),
            Order::Created => a.r.created_at.cmp(&b.r.created_at),
            Order::Modified => a.r.modified_at.cmp(&b.r.modified_at),
        };
        let by = if descending { by.reverse() } else { by };
        by.then_with(|| a.r.name_folded.cmp(&b.r.name_folded))
            .then_with(|| a.r.id.cmp(&b.r.id))
    });
}

fn page<'a, T>(v: &'a [T], q: &Query) -> &'a [T] {
    let start = (q.offset.max(0) as usize).min(v.len());
    let end = start.saturating_add(q.limit.max(0) as usize).min(v.len());
    &v[start..end]
}

/// A passage with its marks as HTML: the text escaped, the matched words in `<em>`.
fn marked(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for ch in s.chars() {
        match ch {
            MARK_START => out.push_str("<em>"),
            MARK_END => out.push_str("</em>"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}

/// The query again with each word the vocabulary lacks replaced by its nearest word there
/// (at most two edits away); nothing when no word changes.
fn suggest(words: &[String], vocabulary: &HashSet<String>) -> Option<String> {
    let mut changed = false;
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        if vocabulary.contains(w) || w.chars().count() < 3 {
            out.push(w.clone());
            continue;
        }
        let best = vocabulary
            .iter()
            .filter_map(|v| {
                let d = distance(w, v);
                (d <= 2).then_some((d, v))
            })
            .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        match best {
            Some((_, v)) => {
                changed = true;
                out.push(v.clone());
            }
            None => out.push(w.clone()),
        }
    }
    changed.then(|| out.join(" "))
}

/// The Levenshtein distance, giving up (answering 3) past 2 edits.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > 2 {
        return 3;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        if cur.iter().min().copied().unwrap_or(0) > 2 {
            return 3;
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The caller's mail (or the shared mailbox's they name) that answers the criteria.
fn mail(
    c: &mut DbConn,
    user_id: &str,
    q: &Query,
    words: &[String],
    found: &mut Found,
) -> Result<()> {
    let mailbox = crate::mail::mailbox(c, user_id, q.shared_mailbox.as_deref())?;
    if q.path.is_some()
        || q.file_name.is_some()
        || q.folder_name.is_some()
        || q.file_content.is_some()
    {
        // Criteria of files and folders find no mail.
        return Ok(());
    }
    let rows = store::mail_of(c, std::slice::from_ref(&mailbox))?;
    let mut seen = HashSet::new();
    let mut rows: Vec<_> = rows
        .into_iter()
        .filter(|m| seen.insert(m.email_id.clone()))
        .collect();
    let buckets: Vec<&str> = q.buckets.iter().map(|b: &Bucket| b.as_str()).collect();
    let recipients: Option<HashSet<String>> = match &q.recipient_id {
        Some(r) => {
            let ids: Vec<String> = rows.iter().map(|m| m.email_id.clone()).collect();
            Some(
                store::recipient_users(c, &ids)?
                    .into_iter()
                    .filter(|(_, u)| u == r)
                    .map(|(e, _)| e)
                    .collect(),
            )
        }
        None => None,
    };
    rows.retain(|m| {
        (buckets.is_empty() || buckets.contains(&m.bucket.as_str()))
            && q.created.holds(m.created_at)
            && q.modified.holds(m.modified_at)
            && q.sender_id.as_ref().is_none_or(|s| &m.sender_id == s)
            && recipients.as_ref().is_none_or(|r| r.contains(&m.email_id))
            && q.subject
                .as_ref()
                .is_none_or(|s| coffer_domain::content::fold_name(&m.subject).contains(s.as_str()))
    });
    let mut scores: HashMap<String, f64> = HashMap::new();
    if !words.is_empty() && !q.name_only && !rows.is_empty() {
        let among: Vec<String> = rows.iter().map(|m| m.email_id.clone()).collect();
        for h in store::matches(c, DocKind::Mail, words, Some(&among))? {
            scores.insert(h.ref_id, h.score);
        }
    }
    let mut kept: Vec<(f64, &store::MailRow)> = Vec::new();
    for m in &rows {
        let score = match &q.text {
            Some(t) => {
                let subject = t.hits(&coffer_domain::content::fold_name(&m.subject));
                let body = scores.get(&m.email_id).copied();
                if !subject && body.is_none() {
                    continue;
                }
                f64::from(u8::from(subject)) * 2.0 + body.map_or(0.0, squash)
            }
            None => 0.0,
        };
        kept.push((score, m));
    }
    kept.sort_by(|a, b| {
        let by = match q.order {
            Order::Score => a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal),
            Order::Name => coffer_domain::content::fold_name(&a.1.subject)
                .cmp(&coffer_domain::content::fold_name(&b.1.subject)),
            Order::Created => a.1.created_at.cmp(&b.1.created_at),
            Order::Modified => a.1.modified_at.cmp(&b.1.modified_at),
        };
        let by = if q.descending { by.reverse() } else { by };
        by.then_with(|| a.1.email_id.cmp(&b.1.email_id))
    });
    found.total_emails = kept.len() as i64;
    let ids: Vec<String> = page(&kept, q)
        .iter()
        .map(|(_, m)| m.email_id.clone())
        .collect();
    found.emails = crate::mail::views_in(c, &mailbox, &ids)?;
    if q.spell_check && !words.is_empty() {
        let vocabulary: HashSet<String> = rows.iter().flat_map(|m| terms(&m.subject)).collect();
        found.email_suggestions = suggest(words, &vocabulary).into_iter().collect();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passages_are_escaped_and_marked() {
        let s = format!("a <b> & {MARK_START}word{MARK_END} \u{7}");
        assert_eq!(marked(&s), "a &lt;b&gt; &amp; <em>word</em> ");
    }

    #[test]
    fn suggestions_take_the_nearest_known_word() {
        let v: HashSet<String> = ["invoice", "budget", "report"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(suggest(&["invoise".into()], &v).as_deref(), Some("invoice"));
        assert_eq!(suggest(&["budget".into()], &v), None);
        assert_eq!(suggest(&["zzzzzz".into()], &v), None);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("abc", "abd"), 1);
    }

    #[test]
    fn any_name_hit_ranks_above_any_text_hit() {
        assert!(squash(1e9) < 1.0);
        assert!(squash(-5.0) >= 0.0);
    }
}
