//! The activity reads: a user's activities, and a user's activities on one file or in one
//! folder (`ActivityAdmin`), from the activity log.

use crate::platform::auth::SystemAdmin;
use crate::platform::views::Listed;
use crate::{now, rfc3339, Ctx, Result};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::audit::{self as store, Activity};
use serde::Serialize;
use utoipa::ToSchema;

/// One activity (`ActivityAdmin`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityView {
    /// The record's sequence number in the activity log.
    pub id: i64,
    /// When it happened (RFC 3339).
    pub created: String,
    /// The event's subject, e.g. `filesystem.file.download`.
    pub event: String,
    /// The object and what happened to it.
    pub message: String,
    /// One of `folder_changes`, `file_changes`, `user_preferences`, `mail`, `tasks`,
    /// `comments`, `kitepoint`, `admin`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The id of the user who acted; empty for the system and operator commands.
    pub user: String,
    /// 1, or 0 for a refused action.
    pub successful: i64,
    /// The object: its id, name and kind (`file`, `folder`, `mail`, `user`, …), those known.
    pub object: Vec<String>,
    /// The acting user's id (none for the system).
    pub direct_user: Vec<String>,
    /// The other users the activity concerns.
    pub in_direct_users: Vec<String>,
    /// The event's data, as one JSON text.
    pub data: Vec<String>,
    /// Not given for the administrator's reads.
    pub permissions: Vec<String>,
    /// The id of the request that made it (the `X-Request-Id` of its response).
    pub transaction_id: Option<String>,
}

impl ActivityView {
    pub fn of(a: &Activity) -> ActivityView {
        let object: Vec<String> = [&a.object_id, &a.object_name, &a.object_kind]
            .into_iter()
            .flatten()
            .cloned()
            .collect();
        ActivityView {
            id: a.seq,
            created: rfc3339(a.created_at),
            event: a.event.clone(),
            message: a.message.clone(),
            kind: a.kind.clone(),
            user: a.actor_id.clone().unwrap_or_default(),
            successful: i64::from(a.successful),
            object,
            direct_user: a.actor_id.iter().cloned().collect(),
            in_direct_users: serde_json::from_str(&a.users).unwrap_or_default(),
            data: vec![a.data.clone()],
            permissions: Vec::new(),
            transaction_id: a.transaction_id.clone(),
        }
    }
}

/// What the activities are of.
#[derive(Debug, Clone)]
pub enum Scope {
    /// Everything concerning the user.
    User,
    /// The user's activities on this file.
    File(String),
    /// The user's activities on this folder and what it holds.
    Folder(String),
}

/// The query of an activity read, checked by the HTTP layer.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Days back from now (`noDayBack`).
    pub days_back: Option<i64>,
    /// Unix times: `startDate` (from its midnight) and `endDate` (through its end).
    pub start: Option<i64>,
    pub end: Option<i64>,
    /// `filter=my`: only what the user did.
    pub mine: bool,
    pub search: Option<String>,
    /// The types asked for (`type`); none: all.
    pub kinds: Option<Vec<String>>,
    pub transaction_id: Option<String>,
    pub by_name: bool,
    pub descending: bool,
    pub offset: i64,
    pub limit: i64,
}

/// The activities of `user_id` in `scope`; the user, file or folder may be deleted (404
/// `ERR_ENTITY_NOT_FOUND` when there is none). Records the read.
pub fn list(
    ctx: &Ctx,
    admin: &SystemAdmin,
    user_id: &str,
    scope: &Scope,
    q: &Query,
) -> Result<Listed<ActivityView>> {
    let not_found = || ApiError::new(ErrorCode::EntityNotFound);
    ctx.write(|c| {
        coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?;
        let (kind, id, what) = match scope {
            Scope::User => ("user", user_id, "activities of a user"),
            Scope::File(f) => {
                super::object(c, f, false)?;
                ("file", f.as_str(), "activities on a file")
            }
            Scope::Folder(f) => {
                super::object(c, f, true)?;
                ("folder", f.as_str(), "activities in a folder")
            }
        };
        super::record_read(c, admin, what, kind, id)
    })?;
    let mut since = q.start;
    if let Some(d) = q.days_back {
        let t = now() - d.saturating_mul(86_400);
        since = Some(since.map_or(t, |s| s.max(t)));
    }
    let sq = store::ActivityQuery {
        user_id: user_id.to_string(),
        actor_only: q.mine,
        object_id: match scope {
            Scope::User => None,
            Scope::File(f) | Scope::Folder(f) => Some(f.clone()),
        },
        in_parent: matches!(scope, Scope::Folder(_)),
        since,
        until: q.end,
        kinds: q.kinds.clone(),
        search: q.search.as_ref().map(|s| s.to_lowercase()),
        transaction_id: q.transaction_id.clone(),
        by_name: q.by_name,
        descending: q.descending,
        offset: q.offset,
        limit: q.limit,
    };
    let (rows, total) = ctx.read(|c| Ok(store::query(c, &sq)?))?;
    Ok(Listed {
        items: rows.iter().map(ActivityView::of).collect(),
        total,
        offset: q.offset,
        limit: q.limit,
    })
}
