//! Telling subscribers what arrived in their folders. A periodic scan ([`SCAN`]) reads the event
//! outbox: a file or a new version arriving in a folder (an upload, a copy or a move into it;
//! any later source of `filesystem.file.create` and `filesystem.version.create` alike) and a
//! comment added to a file there become items for every subscriber of the folder, but the one
//! who did it, who sees the folder and the file. The first item for a subscriber and folder
//! queues a digest ([`DIGEST`]) due `notificationDigestSeconds` later (default 300; 0: at the
//! next scan); the digest takes every item gathered by then and sends them as one mail through
//! the mail outbox. A subscriber who no longer sees the folder or a file is told nothing of it.

use super::visible_folder;
use crate::content::jobs::Kind;
use crate::{now, Ctx, Result};
use coffer_domain::content::Action;
use coffer_store::models::{Event, NotificationItem};
use coffer_store::DbConn;
use serde_json::Value;

/// The scan of the event outbox.
pub const SCAN: &str = "notification-scan";
/// One subscriber's digest of one folder (payload: `<user id> <folder id>`).
pub const DIGEST: &str = "notification-digest";
/// Seconds between scans.
pub const SCAN_PERIOD: i64 = 5;
/// The digest window when `notificationDigestSeconds` is not set.
pub const DEFAULT_DIGEST_SECONDS: i64 = 300;
/// Events read per transaction of the scan.
const BATCH: i64 = 500;
/// The most of a comment a mail quotes.
const QUOTE: usize = 500;

/// The job kinds of folder notifications, registered where the worker starts.
pub const JOBS: &[Kind] = &[
    Kind {
        name: SCAN,
        period: Some(SCAN_PERIOD),
        run: |ctx, _| Box::pin(async move { ctx.blocking(|ctx| scan(ctx).map(drop)).await }),
    },
    Kind {
        name: DIGEST,
        period: None,
        run: |ctx, payload| {
            let payload = payload.to_string();
            Box::pin(async move { ctx.blocking(move |ctx| digest(ctx, &payload)).await })
        },
    },
];

/// Reads the events not read yet and gathers what subscribers are to be told; returns the
/// number of items gathered.
pub fn scan(ctx: &Ctx) -> Result<usize> {
    let mut gathered = 0;
    loop {
        let (read, n) = ctx.write(|c| {
            let window = crate::content::int_setting(
                c,
                "notificationDigestSeconds",
                DEFAULT_DIGEST_SECONDS,
            )?
            .max(0);
            let events = coffer_store::notifications::unread_events(c, BATCH)?;
            let t = now();
            let mut n = 0;
            for ev in &events {
                n += gather(c, ev, window, t)?;
            }
            let seqs: Vec<i64> = events.iter().map(|e| e.seq).collect();
            coffer_store::notifications::mark_read(c, &seqs)?;
            Ok((events.len() as i64, n))
        })?;
        gathered += n;
        if read < BATCH {
            return Ok(gathered);
        }
    }
}

/// The items one event makes.
fn gather(c: &mut DbConn, ev: &Event, window: i64, t: i64) -> Result<usize> {
    let data: Value = serde_json::from_str(&ev.data).unwrap_or(Value::Null);
    let text = |k: &str| data[k].as_str().map(str::to_string);
    let (kind, file_id, comment) = match ev.subject.as_str() {
        "filesystem.file.create"
        | "filesystem.version.create"
        | "filesystem.file.copy"
        | "filesystem.file.move" => ("file", text("id"), None),
        "comment.comment.create" => ("comment", text("objectId"), data["id"].as_i64()),
        _ => return Ok(0),
    };
    let Some(file) = file_id.and_then(|id| coffer_store::content::object(c, &id).transpose())
    else {
        return Ok(0);
    };
    let file = file?;
    // The folder it arrived in: where it was made or moved or copied to (the file may have
    // moved on since), else where it is.
    let Some(folder) = text("parentId")
        .or_else(|| text("to"))
        .or_else(|| file.parent_id.clone())
    else {
        return Ok(0);
    };
    if file.deleted_at.is_some() || file.perm_deleted {
        return Ok(0);
    }
    let detail = match comment {
        Some(id) => match coffer_store::content::comment(c, id)? {
            Some(cm) => serde_json::json!({"name": file.name, "text": quote(&cm.contents)}),
            None => return Ok(0),
        },
        None => serde_json::json!({"name": file.name}),
    };
    let mut n = 0;
    for sub in coffer_store::notifications::of_folder(c, &folder)? {
        let wanted = match kind {
            "file" => sub.file_added == 1,
            _ => sub.comment_added == 1,
        };
        if !wanted || ev.actor_id.as_deref() == Some(sub.user_id.as_str()) {
            continue;
        }
        // Seen by the subscriber now: the folder, and the file (an Uploader sees only its own).
        if visible_folder(c, &sub.user_id, &folder)?.is_none()
            || crate::content::require(c, &sub.user_id, &file.id, Action::List).is_err()
        {
            continue;
        }
        coffer_store::notifications::add_item(
            c,
            &NotificationItem {
                id: 0,
                user_id: sub.user_id.clone(),
                folder_id: folder.clone(),
                kind: kind.to_string(),
                object_id: file.id.clone(),
                actor_id: ev.actor_id.clone(),
                detail: detail.to_string(),
                created_at: t,
            },
        )?;
        let payload = format!("{} {folder}", sub.user_id);
        if !coffer_store::notifications::digest_queued(c, DIGEST, &payload)? {
            coffer_store::jobs::enqueue(c, DIGEST, &payload, t + window, 5, t)?;
        }
        n += 1;
    }
    Ok(n)
}

fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Sends one subscriber what was gathered for one folder, as one mail; nothing when they no
/// longer see the folder (what was gathered is dropped) or nothing is left to tell.
pub fn digest(ctx: &Ctx, payload: &str) -> Result<()> {
    let Some((user_id, folder_id)) = payload.split_once(' ') else {
        return Ok(());
    };
    let base = ctx.config.base_url.clone();
    let domain = ctx.config.message_domain();
    ctx.write(|c| {
        let items = coffer_store::notifications::take_items(c, user_id, folder_id)?;
        let Some(user) = coffer_store::users::by_id(c, user_id)? else {
            return Ok(());
        };
        if items.is_empty() || user.deleted || !user.active {
            return Ok(());
        }
        let Some(folder) = visible_folder(c, user_id, folder_id)? else {
            return Ok(());
        };
        let mut files = Vec::new();
        let mut comments = Vec::new();
        for it in &items {
            if crate::content::require(c, user_id, &it.object_id, Action::List).is_err() {
                continue;
            }
            let d: Value = serde_json::from_str(&it.detail).unwrap_or(Value::Null);
            let name = d["name"].as_str().unwrap_or("").to_string();
            let who = match &it.actor_id {
                Some(a) => match coffer_store::users::by_id(c, a)? {
                    Some(u) if u.name.is_empty() => u.email,
                    Some(u) => format!("{} <{}>", u.name, u.email),
                    None => "someone".to_string(),
                },
                None => "Coffer".to_string(),
            };
            let link = format!("{base}/#/file/{}", it.object_id);
            if it.kind == "file" {
                files.push(format!("- {name}, by {who}\n  {link}"));
            } else {
                let said = d["text"].as_str().unwrap_or("");
                comments.push(format!("- on {name}, by {who}:\n  \"{said}\"\n  {link}"));
            }
        }
        if files.is_empty() && comments.is_empty() {
            return Ok(());
        }
        let (path, _) = crate::content::path_of(c, user_id, &folder)?;
        let place = path
            .iter()
            .map(|(_, n)| n.as_str())
            .collect::<Vec<_>>()
            .join("/");
        let count = |n: usize, one: &str, many: &str| match n {
            0 => None,
            1 => Some(format!("1 {one}")),
            n => Some(format!("{n} {many}")),
        };
        let summary = [
            count(files.len(), "file", "files"),
            count(comments.len(), "comment", "comments"),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ");
        let subject = format!("New in {}: {summary}", folder.name);
        let mut body = format!("Hello {},\n\nThere is something new in the folder {place}.\n", user.name);
        if !files.is_empty() {
            body.push_str(&format!("\nFiles added:\n{}\n", files.join("\n")));
        }
        if !comments.is_empty() {
            body.push_str(&format!("\nComments added:\n{}\n", comments.join("\n")));
        }
        body.push_str(&format!(
            "\nOpen the folder: {base}/#/folder/{folder_id}\n\nYou get this message because you asked to be told about this folder. To stop, turn its notifications off in Coffer.\n"
        ));
        coffer_store::mail::queue(
            c,
            &coffer_store::mail::NewMessage {
                email_id: None,
                user_id: Some(user_id),
                to: &user.email,
                subject: &subject,
                body: &body,
                // A digest carries no link or code that expires.
                expires_at: None,
            },
            &domain,
            now(),
        )?;
        Ok(())
    })
}
