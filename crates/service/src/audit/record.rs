//! Making activity records: the projection of an event (its subject, actor and data) onto the
//! DLI fields (type, object, message, the users it concerns), and the append behind the chain
//! head in the caller's transaction.

use crate::{now, Ctx, Result};
use coffer_store::audit::{self as store, Activity};
use coffer_store::DbConn;
use serde_json::Value;

/// Whether recording is on (see [`set_enabled`]).
static ENABLED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);

/// Turns the activity log off or on for the whole process. Only the benchmark turns it off, to
/// measure what recording costs; a server always records.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, std::sync::atomic::Ordering::Relaxed);
}

thread_local! {
    /// Recording paused on this thread (see [`without`]).
    static PAUSED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with recording off on this thread only: for writes to a database whose schema
/// predates the activity log (the upgrade test, which writes through the services between
/// migrations).
pub fn without<T>(f: impl FnOnce() -> T) -> T {
    let before = PAUSED.with(|p| p.replace(true));
    let out = f();
    PAUSED.with(|p| p.set(before));
    out
}

/// Appends the activity record of event `subject` (a change that succeeded, or with
/// `successful: false` a refused action) in the caller's transaction.
pub fn append(
    conn: &mut DbConn,
    subject: &str,
    actor: Option<&str>,
    data: &Value,
    successful: bool,
) -> Result<()> {
    if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) || PAUSED.with(|p| p.get()) {
        return Ok(());
    }
    append_serialized(conn, subject, actor, data, data.to_string(), successful)
}

/// [`append`] with the data already serialised as `data_text` (`data.to_string()`), as the
/// event recorded beside the record has it.
pub fn append_serialized(
    conn: &mut DbConn,
    subject: &str,
    actor: Option<&str>,
    data: &Value,
    data_text: String,
    successful: bool,
) -> Result<()> {
    if !ENABLED.load(std::sync::atomic::Ordering::Relaxed) || PAUSED.with(|p| p.get()) {
        return Ok(());
    }
    let (object_kind, object_id) = object_of(subject, data);
    let object_name = match (&object_kind, &object_id) {
        (Some(k), Some(id)) => match data.get("name").and_then(Value::as_str) {
            Some(n) if matches!(*k, "file" | "folder") => Some(n.to_string()),
            _ => store::name_of(conn, k, id)?,
        },
        _ => None,
    };
    let parent_id = ["parentId", "to"]
        .iter()
        .find_map(|f| data.get(*f).and_then(Value::as_str))
        .map(str::to_string);
    let mut users: Vec<(String, bool)> = Vec::new();
    if let Some(a) = actor {
        users.push((a.to_string(), true));
    }
    for f in ["userId", "ownerId", "senderId"] {
        if let Some(u) = data.get(f).and_then(Value::as_str) {
            if !users.iter().any(|(x, _)| x == u) {
                users.push((u.to_string(), false));
            }
        }
    }
    // The account an event is about concerns it; an administrator's DLI read of it does not
    // (the read is the administrator's activity, not the investigated user's).
    if object_kind == Some("user") && !subject.starts_with("dli.") {
        if let Some(u) = &object_id {
            if !users.iter().any(|(x, _)| x == u) {
                users.push((u.clone(), false));
            }
        }
    }
    let indirect: Vec<&str> = users
        .iter()
        .filter(|(_, d)| !d)
        .map(|(u, _)| u.as_str())
        .collect();
    let head = store::head_for_append(conn)?;
    let mut rec = Activity {
        seq: head.seq + 1,
        created_at: now(),
        event: subject.to_string(),
        kind: kind_of(subject, actor, data, object_id.as_deref()).to_string(),
        actor_id: actor.map(str::to_string),
        message: message(
            subject,
            object_kind,
            object_name.as_deref(),
            &object_id,
            successful,
        ),
        object_id,
        object_kind: object_kind.map(str::to_string),
        object_name,
        parent_id,
        successful,
        transaction_id: super::transaction().map(|t| t.to_string()),
        users: serde_json::to_string(&indirect).unwrap_or_else(|_| "[]".into()),
        data: data_text,
        prev_hash: head.hash,
        hash: String::new(),
    };
    rec.hash = super::hash(&rec.prev_hash, &rec);
    store::append(conn, &rec, &users)?;
    Ok(())
}

/// Records a refused action of interest (a failed sign-in, a download refused for a virus, a
/// DLI read without licence) in a transaction of its own: the refusal rolls back the request's.
pub fn refused(ctx: &Ctx, subject: &str, actor: Option<&str>, data: &Value) -> Result<()> {
    ctx.write(|conn| append(conn, subject, actor, data, false))
}

/// The activity type of an event, as the DLI reads filter by it.
fn kind_of(subject: &str, actor: Option<&str>, data: &Value, object: Option<&str>) -> &'static str {
    let mut parts = subject.splitn(3, '.');
    let area = parts.next().unwrap_or("");
    let entity = parts.next().unwrap_or("");
    let action = parts.next().unwrap_or("");
    match area {
        "filesystem" => match entity {
            "folder" | "member" => "folder_changes",
            "trash" => "folder_changes",
            _ => "file_changes",
        },
        "comment" => "comments",
        "mail" | "externaldl" | "contact" => "mail",
        "webform" if entity == "submission" => "mail",
        "sharedmailbox" if entity == "member" => "mail",
        "task" => "tasks",
        "source" => "kitepoint",
        "user" => {
            // Done to one's own account: a preference; to another's, or by the system (an
            // operator command): administration.
            let target = data
                .get("userId")
                .and_then(Value::as_str)
                .or(object)
                .or(actor);
            let own = actor.is_some() && actor == target && action != "create";
            if own || matches!(entity, "login" | "session") {
                "user_preferences"
            } else {
                "admin"
            }
        }
        "device" if entity == "wipe" && action == "request" => "admin",
        "device" | "webhook" | "favorite" | "notification" => "user_preferences",
        "oauth" if entity == "consent" || entity == "token" => "user_preferences",
        _ => "admin",
    }
}

/// What an event is about: the kind of object and its id.
fn object_of(subject: &str, data: &Value) -> (Option<&'static str>, Option<String>) {
    let s = |f: &str| data.get(f).and_then(Value::as_str).map(str::to_string);
    let mut parts = subject.splitn(3, '.');
    let area = parts.next().unwrap_or("");
    let entity = parts.next().unwrap_or("");
    match (area, entity) {
        ("filesystem", "folder" | "member") => (Some("folder"), s("id")),
        ("filesystem", "file") => (Some("file"), s("id")),
        ("filesystem", "version") => match s("fileId").or_else(|| s("id")) {
            Some(id) => (Some("file"), Some(id)),
            None => (Some("version"), s("versionId")),
        },
        ("comment", _) => (Some("file"), s("objectId")),
        ("mail", _) => (Some("mail"), s("id").or_else(|| s("emailId"))),
        ("user", "login" | "session" | "tfa" | "settings") => (Some("user"), s("userId")),
        ("user", _) => (Some("user"), s("userId").or_else(|| s("id"))),
        ("dli", _) => match s("objectKind") {
            Some(k) => (
                Some(match k.as_str() {
                    "file" => "file",
                    "folder" => "folder",
                    "mail" => "mail",
                    "export" => "export",
                    _ => "user",
                }),
                s("objectId"),
            ),
            None => (None, None),
        },
        (_, e) => {
            let kind: &'static str = match e {
                "client" => "client",
                "device" | "wipe" => "device",
                "location" => "location",
                "webhook" | "delivery" => "webhook",
                "contact" => "contact",
                "mailbox" => "sharedMailbox",
                "webform" | "submission" => "webForm",
                "token" => "token",
                _ => return (None, s("id")),
            };
            (Some(kind), s("id"))
        }
    }
}

/// The record's message: the object and what happened to it.
fn message(
    subject: &str,
    kind: Option<&str>,
    name: Option<&str>,
    id: &Option<String>,
    successful: bool,
) -> String {
    let action = subject.rsplit('.').next().unwrap_or(subject);
    let what = match action {
        "create" if subject == "filesystem.file.create" => "uploaded".to_string(),
        "create" if subject == "filesystem.version.create" => "uploaded as a new version".into(),
        "create" => "created".into(),
        "update" => "updated".into(),
        "delete" => "deleted".into(),
        "recover" => "recovered".into(),
        "move" => "moved".into(),
        "copy" => "copied".into(),
        "download" => "downloaded".into(),
        "send" | "sent" => "sent".into(),
        "read" => "read".into(),
        "login" => "signed in".into(),
        "logout" => "signed out".into(),
        "withdraw" => "withdrawn".into(),
        "purge" => "purged".into(),
        "quarantine" => "quarantined".into(),
        "scanned" => "scanned".into(),
        other => other.to_string(),
    };
    let object = match (kind, name, id) {
        (Some(k), Some(n), _) => format!("{} \"{n}\"", capital(k)),
        (Some(k), None, Some(id)) => format!("{} {id}", capital(k)),
        (Some(k), None, None) => capital(k),
        (None, _, _) => subject.to_string(),
    };
    if successful {
        format!("{object} {what}")
    } else {
        format!("{object} {what}: refused")
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn types_follow_the_subject_and_who_acted_on_whom() {
        let d = json!({});
        assert_eq!(
            kind_of("filesystem.folder.create", Some("a"), &d, None),
            "folder_changes"
        );
        assert_eq!(
            kind_of("filesystem.file.download", Some("a"), &d, None),
            "file_changes"
        );
        assert_eq!(
            kind_of("filesystem.version.create", Some("a"), &d, None),
            "file_changes"
        );
        assert_eq!(
            kind_of("comment.comment.create", Some("a"), &d, None),
            "comments"
        );
        assert_eq!(kind_of("mail.email.send", Some("a"), &d, None), "mail");
        assert_eq!(
            kind_of("user.login", Some("a"), &d, None),
            "user_preferences"
        );
        assert_eq!(
            kind_of("user.user.update", Some("a"), &json!({"userId": "a"}), None),
            "user_preferences"
        );
        assert_eq!(
            kind_of("user.user.update", Some("a"), &json!({"userId": "b"}), None),
            "admin"
        );
        assert_eq!(
            kind_of("user.user.create", None, &json!({"id": "b"}), Some("b")),
            "admin"
        );
        assert_eq!(kind_of("oauth.client.create", Some("a"), &d, None), "admin");
        assert_eq!(kind_of("dli.activities.read", Some("a"), &d, None), "admin");
        assert_eq!(kind_of("device.wipe.request", Some("a"), &d, None), "admin");
        assert_eq!(
            kind_of("webhook.webhook.create", Some("a"), &d, None),
            "user_preferences"
        );
        for s in ["task.task.create", "source.source.create"] {
            assert!(super::super::KINDS.contains(&kind_of(s, None, &d, None)));
        }
    }

    #[test]
    fn messages_name_the_object_and_the_action() {
        let id = Some("f1".to_string());
        assert_eq!(
            message(
                "filesystem.folder.create",
                Some("folder"),
                Some("Reports"),
                &id,
                true
            ),
            "Folder \"Reports\" created"
        );
        assert_eq!(
            message("filesystem.file.download", Some("file"), None, &id, false),
            "File f1 downloaded: refused"
        );
        assert_eq!(
            message("user.login", Some("user"), Some("a@x"), &None, true),
            "User \"a@x\" signed in"
        );
    }
}
