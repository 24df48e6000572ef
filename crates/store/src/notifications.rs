//! Folder notifications: subscriptions (`folder_notifications`), what a subscriber has yet to be
//! told (`notification_items`), and the scan's read marks on the event outbox.

use crate::models::{Event, FolderNotification, NotificationItem};
use crate::schema::{events, folder_notifications, notification_items};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// Writes a subscription; true when it is new.
pub fn put(conn: &mut DbConn, n: &FolderNotification) -> StoreResult<bool> {
    let updated = db_run!(conn => diesel::update(folder_notifications::table
        .find((&n.user_id, &n.object_id)))
        .set((
            folder_notifications::file_added.eq(n.file_added),
            folder_notifications::comment_added.eq(n.comment_added),
            folder_notifications::modified_at.eq(n.modified_at),
        ))
        .execute(conn))?;
    if updated == 1 {
        return Ok(false);
    }
    db_run!(conn => diesel::insert_into(folder_notifications::table).values(n).execute(conn))?;
    Ok(true)
}

pub fn get(
    conn: &mut DbConn,
    user_id: &str,
    object_id: &str,
) -> StoreResult<Option<FolderNotification>> {
    Ok(db_run!(conn => folder_notifications::table
        .find((user_id, object_id))
        .select(FolderNotification::as_select())
        .first(conn)
        .optional())?)
}

pub fn delete(conn: &mut DbConn, user_id: &str, object_id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(folder_notifications::table
        .find((user_id, object_id)))
        .execute(conn))?)
}

/// The subscriptions of the users `users` (all users when `None`), by user and folder.
pub fn of_users(
    conn: &mut DbConn,
    users: Option<&[String]>,
) -> StoreResult<Vec<FolderNotification>> {
    db_run!(conn => {
        let mut q = folder_notifications::table.into_boxed();
        if let Some(u) = users {
            q = q.filter(folder_notifications::user_id.eq_any(u));
        }
        Ok(q.order((folder_notifications::user_id.asc(), folder_notifications::object_id.asc()))
            .select(FolderNotification::as_select())
            .load(conn)?)
    })
}

/// The subscriptions to one folder.
pub fn of_folder(conn: &mut DbConn, object_id: &str) -> StoreResult<Vec<FolderNotification>> {
    Ok(db_run!(conn => folder_notifications::table
        .filter(folder_notifications::object_id.eq(object_id))
        .select(FolderNotification::as_select())
        .load(conn))?)
}

/// Events the notification scan has not read, oldest first.
pub fn unread_events(conn: &mut DbConn, limit: i64) -> StoreResult<Vec<Event>> {
    Ok(db_run!(conn => events::table
        .filter(events::notified.eq(false))
        .order(events::seq.asc())
        .limit(limit)
        .select(Event::as_select())
        .load(conn))?)
}

pub fn mark_read(conn: &mut DbConn, seqs: &[i64]) -> StoreResult<()> {
    if seqs.is_empty() {
        return Ok(());
    }
    db_run!(conn => diesel::update(events::table.filter(events::seq.eq_any(seqs)))
        .set(events::notified.eq(true))
        .execute(conn))?;
    Ok(())
}

pub fn add_item(conn: &mut DbConn, item: &NotificationItem) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(notification_items::table)
        .values((
            notification_items::user_id.eq(&item.user_id),
            notification_items::folder_id.eq(&item.folder_id),
            notification_items::kind.eq(&item.kind),
            notification_items::object_id.eq(&item.object_id),
            notification_items::actor_id.eq(&item.actor_id),
            notification_items::detail.eq(&item.detail),
            notification_items::created_at.eq(item.created_at),
        ))
        .execute(conn))?;
    Ok(())
}

/// Takes what a subscriber has yet to be told about a folder, oldest first.
pub fn take_items(
    conn: &mut DbConn,
    user_id: &str,
    folder_id: &str,
) -> StoreResult<Vec<NotificationItem>> {
    let items: Vec<NotificationItem> = db_run!(conn => notification_items::table
        .filter(notification_items::user_id.eq(user_id))
        .filter(notification_items::folder_id.eq(folder_id))
        .order(notification_items::id.asc())
        .select(NotificationItem::as_select())
        .load(conn))?;
    let ids: Vec<i64> = items.iter().map(|i| i.id).collect();
    for part in ids.chunks(500) {
        db_run!(conn => diesel::delete(notification_items::table
            .filter(notification_items::id.eq_any(part)))
            .execute(conn))?;
    }
    Ok(items)
}

/// Whether a job of `kind` with `payload` waits in the queue (not yet running: a running digest
/// may already have taken what it sends, so a new item needs a new one).
pub fn digest_queued(conn: &mut DbConn, kind: &str, payload: &str) -> StoreResult<bool> {
    use crate::schema::jobs;
    Ok(
        db_run!(conn => diesel::select(diesel::dsl::exists(jobs::table
        .filter(jobs::kind.eq(kind))
        .filter(jobs::payload.eq(payload))
        .filter(jobs::state.eq("queued"))))
        .get_result(conn))?,
    )
}
