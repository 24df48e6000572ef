//! Answers a [`Query`]. Folders and files: one statement of the store finds them, with the
//! caller's reach, the content core's rule (by name what the caller may list, by text what they
//! may preview; see [`rule`]), the criteria, the full-text hits, the order and the page all
//! decided by the database; the service then reads only the page. Mail: the caller's own
//! mailbox (or the shared one they name), filtered here. Counts, passages and suggestions are
//! made from what passed, so nothing the caller cannot open shows in any of them.

use super::{terms, Bucket, Found, Order, Query, Range, TextMatch, TextOp};
use crate::content::{self, files, folders};
use crate::platform::auth::Caller;
use crate::{Ctx, Result};
use coffer_domain::content::{Access, Action};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::models::Object;
use coffer_store::search::{self as store, DocKind, MARK_END, MARK_START};
use coffer_store::DbConn;
use std::collections::{HashMap, HashSet};

/// `GET /rest/search`.
pub fn search(ctx: &Ctx, caller: &Caller, q: &Query) -> Result<Found> {
    // Its answer has no passages: none is made.
    ctx.read(|c| run(c, ctx, caller.user_id(), q, false))
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
        run(c, ctx, caller.user_id(), q, true)
    })
}

/// What each role lets a caller find, derived from the content core's rule
/// ([`content::permits`]) for every role there is, so that search decides nothing of its own:
/// by name what the caller may list, by text what they may preview, and, where the rule hides
/// the files others created (an Uploader), only the caller's own.
pub fn rule(user_id: &str) -> store::Rule {
    // Any id other than the caller's, to ask the rule about a file someone else created.
    let other = format!("{user_id}-other");
    let mut r = store::Rule::default();
    for role in coffer_domain::content::ROLES {
        let a = Access::Role(role.id);
        if content::permits(user_id, a, true, user_id, Action::List) {
            r.list.push(role.id);
        }
        if content::permits(user_id, a, false, user_id, Action::Preview) {
            r.preview.push(role.id);
        }
        if content::permits(user_id, a, false, user_id, Action::List)
            && !content::permits(user_id, a, false, &other, Action::List)
        {
            r.own_files_only.push(role.id);
        }
    }
    r
}

fn access_of(role_id: Option<i64>) -> Access {
    match role_id {
        None => Access::Owner,
        Some(role) => Access::Role(role),
    }
}

fn compare(op: TextOp) -> store::Compare {
    match op {
        TextOp::Eq => store::Compare::Eq,
        TextOp::Contains => store::Compare::Contains,
        TextOp::StartsWith => store::Compare::StartsWith,
    }
}

fn matching(t: &TextMatch) -> store::Match<'_> {
    store::Match {
        op: compare(t.op),
        folded: &t.folded,
    }
}

fn bounds(r: Range) -> store::Bounds {
    store::Bounds {
        low: r.low,
        high: r.high,
    }
}

/// A relevance in (0, 1) from a backend's score, so that any name hit (2 and more) ranks
/// above every hit by text alone (mail here; the store computes the same in SQL for files).
fn squash(s: f64) -> f64 {
    let s = s.max(0.0);
    s / (1.0 + s)
}

/// `passages`: whether the answer shows passages of file text (`/rest/query`'s does,
/// `/rest/search`'s does not, and each costs a look into the index).
fn run(c: &mut DbConn, ctx: &Ctx, user_id: &str, q: &Query, passages: bool) -> Result<Found> {
    let mut found = Found::default();
    let words: Vec<String> = q
        .text
        .as_ref()
        .map(|t| terms(&t.folded))
        .unwrap_or_default();
    if q.files || q.folders {
        objects(c, ctx, user_id, q, &words, passages, &mut found)?;
    }
    if q.mail {
        mail(c, user_id, q, &words, &mut found)?;
    } else if let Some(m) = &q.shared_mailbox {
        // The mailbox is still checked, so the answer does not depend on the types asked.
        crate::mail::mailbox(c, user_id, Some(m))?;
    }
    Ok(found)
}

/// The folders and files: the store decides the reach, the rule, the criteria, the order and
/// the page in one statement; only the page is read further.
fn objects(
    c: &mut DbConn,
    ctx: &Ctx,
    user_id: &str,
    q: &Query,
    words: &[String],
    passages: bool,
    found: &mut Found,
) -> Result<()> {
    let creator = match &q.creator_email {
        Some(e) => Some(
            coffer_store::users::by_email(c, e)?
                .map(|u| u.id)
                .unwrap_or_default(),
        ),
        None => None,
    };
    let content_words = content_terms(q, words);
    let text_search = q.include_content && !q.name_only && !content_words.is_empty();
    // Criteria only files have leave folders out when given; a folder name leaves files out.
    // Coffer has no file locks: every file counts as unlocked (0).
    let (files, folders) = if q.path.is_some() {
        (q.files, q.folders)
    } else {
        (
            q.files && q.folder_name.is_none() && q.locked.holds(0),
            q.folders
                && !(q.size.is_set()
                    || q.locked.is_set()
                    || !q.extensions.is_empty()
                    || q.tracking_id.is_some()
                    || q.file_name.is_some()
                    || q.file_content.is_some()),
        )
    };
    let search = store::ObjectSearch {
        files,
        folders,
        shared_only: q.shared_only,
        under: q.under.as_deref(),
        path: q.path.as_ref().map(matching),
        created: bounds(q.created),
        modified: bounds(q.modified),
        size: bounds(q.size),
        creator_id: creator.as_deref(),
        description: q.description.as_ref().map(matching),
        file_name: q.file_name.as_deref(),
        folder_name: q.folder_name.as_deref(),
        extensions: &q.extensions,
        tracking_id: q.tracking_id.as_deref(),
        text: q.text.as_ref().map(matching),
        content_terms: if text_search {
            content_words.as_slice()
        } else {
            &[]
        },
        content_required: q.file_content.is_some(),
        order: match q.order {
            Order::Score => store::SortBy::Score,
            Order::Name => store::SortBy::Name,
            Order::Created => store::SortBy::Created,
            Order::Modified => store::SortBy::Modified,
        },
        descending: q.descending,
        offset: q.offset,
        limit: q.limit,
    };
    let rule = rule(user_id);
    let page = store::find_objects(c, user_id, &rule, &search)?;
    found.total_files = page.total_files;
    found.total_folders = page.total_folders;
    // The page is read and rendered with a few statements for all its objects (and a path
    // each), not a handful per object: at 25 hits that was most of a search's time.
    let ids: Vec<String> = page
        .files
        .iter()
        .chain(&page.folders)
        .map(|k| k.id.clone())
        .collect();
    let objects: HashMap<String, Object> = store::objects_of(c, &ids)?
        .into_iter()
        .map(|o| (o.id.clone(), o))
        .collect();
    let (hits, access): (Vec<Object>, Vec<Access>) = page
        .files
        .iter()
        .filter_map(|k| Some((objects.get(&k.id)?.clone(), access_of(k.role_id))))
        .unzip();
    found.files = files::views(c, ctx, user_id, &hits, &access)?;
    let by_text: Vec<String> = page
        .files
        .iter()
        .filter(|k| passages && k.by_text)
        .map(|k| k.id.clone())
        .collect();
    for (id, s) in store::snippets(c, DocKind::File, &by_text, &content_words)? {
        found.highlights.insert(id, marked(&s));
    }
    for k in &page.folders {
        let Some(o) = objects.get(&k.id) else {
            continue;
        };
        found
            .folders
            .push(folders::view(c, ctx, user_id, o, access_of(k.role_id))?);
    }
    if q.spell_check && !words.is_empty() {
        let vocabulary: HashSet<String> = store::listable_names(c, user_id, &rule)?
            .iter()
            .flat_map(|n| terms(n))
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
    fn the_stores_rule_is_the_content_cores() {
        // The store writes the rule as: the owner anything; a role what its sets say, but never
        // a file someone else created when the role sees only its own.
        let user = "u1";
        let r = rule(user);
        let held = |set: &[i64], id: i64| set.contains(&id);
        let mut ids: Vec<i64> = coffer_domain::content::ROLES.iter().map(|r| r.id).collect();
        ids.push(99);
        for id in ids {
            for folder in [true, false] {
                for creator in [user, "u2"] {
                    let hidden = held(&r.own_files_only, id) && !folder && creator != user;
                    for (action, set) in [(Action::List, &r.list), (Action::Preview, &r.preview)] {
                        assert_eq!(
                            held(set, id) && !hidden,
                            content::permits(user, Access::Role(id), folder, creator, action),
                            "role {id}, folder {folder}, creator {creator}, {action:?}"
                        );
                        assert!(content::permits(
                            user,
                            Access::Owner,
                            folder,
                            creator,
                            action
                        ));
                    }
                }
            }
        }
        assert!(
            !r.own_files_only.is_empty(),
            "an Uploader sees only its own files"
        );
    }

    #[test]
    fn any_name_hit_ranks_above_any_text_hit() {
        assert!(squash(1e9) < 1.0);
        assert!(squash(-5.0) >= 0.0);
    }
}
