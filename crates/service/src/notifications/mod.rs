//! Folder notifications: who asked to be told when files or comments arrive in a folder
//! (`PUT /rest/folders/{id}/actions/setNotifications`, `GET /rest/notifications`,
//! `DELETE /rest/notifications/{object_id}`). Telling them is [`deliver`]: a scan of the event
//! outbox gathers what happened in subscribed folders, and a digest per subscriber and folder
//! sends it as one mail through the outbox.
//!
//! A subscription is to a folder the subscriber sees, by the content core's rules
//! (`content::require`); one out of reach answers 404 as a folder that does not exist. A
//! subscriber who loses sight of the folder keeps the row (it shows again, and mail starts
//! again, when they see it again) but is told nothing while they do not.

pub mod deliver;

use crate::content;
use crate::platform::auth::Caller;
use crate::platform::events;
use crate::platform::views::{Link, Listed};
use crate::{now, Ctx, Result};
use coffer_domain::content::Action;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{FolderNotification, Object};
use coffer_store::DbConn;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

/// A subscription (`UserNotification`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationView {
    /// The folder.
    pub object_id: String,
    /// The subscriber.
    pub user_id: String,
    /// 1: tell when a file or a new version arrives; 0: do not.
    pub file_added: i64,
    /// 1: tell when a comment is added to a file in the folder; 0: do not.
    pub comment_added: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

impl NotificationView {
    fn of(n: &FolderNotification) -> NotificationView {
        NotificationView {
            object_id: n.object_id.clone(),
            user_id: n.user_id.clone(),
            file_added: n.file_added,
            comment_added: n.comment_added,
            links: None,
        }
    }
}

/// The flags of `setNotifications`; one not given keeps its value (0 on a new subscription).
#[derive(Debug, Clone, Copy, Default)]
pub struct Flags {
    pub file_added: Option<i64>,
    pub comment_added: Option<i64>,
}

/// Which subscriptions `GET /rest/notifications` lists.
#[derive(Debug, Clone, Default)]
pub struct NotificationQuery {
    pub user_ids: Option<Vec<String>>,
    pub object_ids: Option<Vec<String>>,
    pub file_added: Option<bool>,
    pub comment_added: Option<bool>,
    /// `userId`, `objectId`, `fileAdded` or `commentAdded`.
    pub order: String,
    pub descending: bool,
    pub offset: i64,
    pub limit: i64,
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// A folder the user sees now and that is not in the trash.
pub(crate) fn visible_folder(c: &mut DbConn, user_id: &str, id: &str) -> Result<Option<Object>> {
    match content::require_folder(c, user_id, id, Action::List) {
        Ok((o, _)) if o.deleted_at.is_none() && !o.perm_deleted => Ok(Some(o)),
        Ok(_) | Err(Error::Api(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

fn record(c: &mut DbConn, subject: &str, n: &FolderNotification) -> Result<()> {
    events::record(
        c,
        subject,
        Some(&n.user_id),
        json!({"objectId": n.object_id, "userId": n.user_id,
               "fileAdded": n.file_added, "commentAdded": n.comment_added}),
    )
}

/// Writes the caller's subscription to one folder; true when it is new.
fn put(
    c: &mut DbConn,
    user_id: &str,
    folder: &str,
    flags: Flags,
    t: i64,
) -> Result<(FolderNotification, bool)> {
    let old = coffer_store::notifications::get(c, user_id, folder)?;
    let n = FolderNotification {
        user_id: user_id.to_string(),
        object_id: folder.to_string(),
        file_added: flags
            .file_added
            .or(old.as_ref().map(|o| o.file_added))
            .unwrap_or(0),
        comment_added: flags
            .comment_added
            .or(old.as_ref().map(|o| o.comment_added))
            .unwrap_or(0),
        created_at: old.as_ref().map_or(t, |o| o.created_at),
        modified_at: t,
    };
    let created = coffer_store::notifications::put(c, &n)?;
    let subject = if created {
        "notification.subscription.create"
    } else {
        "notification.subscription.update"
    };
    record(c, subject, &n)?;
    Ok((n, created))
}

/// `PUT /rest/folders/{id}/actions/setNotifications`: the caller's subscription to a folder they
/// see, and with `include_nested` the same flags on every current sub-folder they see (folders
/// made later are not subscribed). Answers the folder's subscription and whether it is new.
pub fn set(
    ctx: &Ctx,
    user_id: &str,
    folder_id: &str,
    flags: Flags,
    include_nested: bool,
) -> Result<(NotificationView, bool)> {
    ctx.write(|c| {
        let (o, _) = content::require_folder(c, user_id, folder_id, Action::List)?;
        content::live(&o)?;
        content::not_system(&o).or_else(|e| {
            // "My Folder" may be subscribed to; the root and the hidden system folder not.
            if o.system.as_deref() == Some("sync") {
                Ok(())
            } else {
                Err(e)
            }
        })?;
        let t = now();
        let (n, created) = put(c, user_id, &o.id, flags, t)?;
        if include_nested {
            for sub in coffer_store::content::live_subtree(c, &o.id)? {
                if sub.id == o.id || !sub.is_folder() {
                    continue;
                }
                if visible_folder(c, user_id, &sub.id)?.is_some() {
                    put(c, user_id, &sub.id, flags, t)?;
                }
            }
        }
        Ok((NotificationView::of(&n), created))
    })
}

/// `GET /rest/notifications`: the caller's subscriptions to folders they see; an administrator
/// may ask for other users' (`userId`), which are listed whatever the folders.
pub fn list(ctx: &Ctx, caller: &Caller, q: &NotificationQuery) -> Result<Listed<NotificationView>> {
    let me = caller.user_id().to_string();
    let users = q.user_ids.clone().unwrap_or_else(|| vec![me.clone()]);
    if users.iter().any(|u| *u != me) && !caller.is_admin() {
        return Err(ApiError::field(ErrorCode::AccessUser, "userId").into());
    }
    ctx.read(|c| {
        let mut rows = Vec::new();
        for n in coffer_store::notifications::of_users(c, Some(&users))? {
            if q.object_ids
                .as_ref()
                .is_some_and(|o| !o.contains(&n.object_id))
            {
                continue;
            }
            if q.file_added.is_some_and(|f| f != (n.file_added == 1)) {
                continue;
            }
            if q.comment_added.is_some_and(|f| f != (n.comment_added == 1)) {
                continue;
            }
            if n.user_id == me && visible_folder(c, &me, &n.object_id)?.is_none() {
                continue;
            }
            rows.push(n);
        }
        rows.sort_by(|a, b| {
            let by = match q.order.as_str() {
                "userId" => a.user_id.cmp(&b.user_id),
                "fileAdded" => a.file_added.cmp(&b.file_added),
                "commentAdded" => a.comment_added.cmp(&b.comment_added),
                _ => a.object_id.cmp(&b.object_id),
            };
            let by = if q.descending { by.reverse() } else { by };
            by.then_with(|| (&a.user_id, &a.object_id).cmp(&(&b.user_id, &b.object_id)))
        });
        let total = rows.len() as i64;
        let items = rows
            .iter()
            .skip(q.offset.max(0) as usize)
            .take(q.limit.max(0) as usize)
            .map(NotificationView::of)
            .collect();
        Ok(Listed {
            items,
            total,
            offset: q.offset,
            limit: q.limit,
        })
    })
}

/// `DELETE /rest/notifications/{object_id}`: ends the caller's subscription to a folder they
/// see; none there answers 404.
pub fn remove(ctx: &Ctx, user_id: &str, folder_id: &str) -> Result<()> {
    ctx.write(|c| {
        let (o, _) = content::require_folder(c, user_id, folder_id, Action::List)?;
        let n = coffer_store::notifications::get(c, user_id, &o.id)?.ok_or_else(not_found)?;
        coffer_store::notifications::delete(c, user_id, &o.id)?;
        record(c, "notification.subscription.delete", &n)
    })
}
