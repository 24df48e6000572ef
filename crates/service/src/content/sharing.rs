//! Sharing and conversation: folder members with their roles, the roles themselves, folders
//! shared with the caller, and comments on files.

use super::views::{CommentView, MemberView, RoleView};
use super::{live, not_system, require, require_file};
use crate::platform::events;
use crate::platform::views::Listed;
use crate::{now, Ctx, Result};
use coffer_domain::content::{self as rules, Action, ObjectKind};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{Member, NewComment};
use serde_json::{json, Value};

/// `GET /rest/roles`, optionally of one kind (`d` or `f`).
/// `order`: `id`, `name` or `rank` and whether descending; without one, as the catalogue lists
/// them (folder roles, then file roles, each by rank).
pub fn roles(kind: Option<&str>, order: Option<(&str, bool)>) -> Vec<RoleView> {
    let mut out: Vec<RoleView> = rules::ROLES
        .iter()
        .filter(|r| match kind {
            Some("d") => r.kind == ObjectKind::Folder,
            Some("f") => r.kind == ObjectKind::File,
            _ => true,
        })
        .map(RoleView::of)
        .collect();
    if let Some((field, desc)) = order {
        out.sort_by(|a, b| {
            let o = match field {
                "name" => a.name.cmp(&b.name),
                "rank" => a.rank.cmp(&b.rank),
                _ => a.id.cmp(&b.id),
            };
            if desc {
                o.reverse()
            } else {
                o
            }
        });
    }
    out
}

/// How a folder's member list is narrowed and ordered (`GET /rest/folders/{id}/members`).
#[derive(Debug, Clone, Default)]
pub struct MemberQuery {
    /// Only members holding one of these roles.
    pub role_ids: Option<Vec<i64>>,
    /// `userId`, `roleId`, `rank` or `email`, and whether descending; without one, direct
    /// members first, then inherited ones, nearest first.
    pub order: Option<(String, bool)>,
}

/// The members of a folder: the direct ones, and those inherited from the folders above
/// (`inheritRoleId` set), nearest first; the owner is not a member.
pub fn members(ctx: &Ctx, user_id: &str, id: &str, q: &MemberQuery) -> Result<Vec<MemberView>> {
    ctx.read(|c| {
        let (o, _) = require(c, user_id, id, Action::List)?;
        let chain = coffer_store::content::ancestors(c, &o.id)?;
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for a in &chain {
            for (m, email) in coffer_store::content::members(c, &a.id)? {
                if !seen.insert(m.user_id.clone()) {
                    continue;
                }
                let Some(def) = rules::role(m.role_id) else {
                    continue;
                };
                out.push(MemberView {
                    object_id: o.id.clone(),
                    role_id: m.role_id,
                    user_id: m.user_id.clone(),
                    email,
                    rank: def.rank,
                    created: crate::rfc3339(m.created_at),
                    role: RoleView::of(def),
                    inherit_role_id: (a.id != o.id).then_some(m.role_id),
                });
            }
        }
        if let Some(roles) = &q.role_ids {
            out.retain(|m| roles.contains(&m.role_id));
        }
        if let Some((field, desc)) = &q.order {
            // A stable sort: members equal on the field keep the nearest-first order.
            out.sort_by(|a, b| {
                let o = match field.as_str() {
                    "userId" => a.user_id.cmp(&b.user_id),
                    "roleId" => a.role_id.cmp(&b.role_id),
                    "rank" => a.rank.cmp(&b.rank),
                    _ => a.email.to_lowercase().cmp(&b.email.to_lowercase()),
                };
                if *desc {
                    o.reverse()
                } else {
                    o
                }
            });
        }
        Ok(out)
    })
}

/// The result of adding members: who was added, and who failed with which error.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddMembers {
    pub success_ids: Vec<String>,
    pub errors: Vec<Value>,
    pub data: Vec<MemberView>,
}

/// Who to add to a folder, with which role.
#[derive(Debug, Clone, Default)]
pub struct NewMembers {
    pub user_ids: Vec<String>,
    pub emails: Vec<String>,
    pub role_id: i64,
    pub update_if_exists: bool,
    pub notify_file_added: bool,
    /// `partialSuccess=false`: the first who fails fails the call and nobody is added.
    pub all_or_nothing: bool,
}

/// Adds users (by id or email) to a folder with a role; an existing member's role changes when
/// `update_if_exists`, else they fail with 409 `ERR_ENTITY_EXISTS`. Who fails is reported beside
/// who was added, unless `all_or_nothing`: then the first failure answers (`failedIds`) and the
/// transaction adds nobody.
pub fn add_members(ctx: &Ctx, user_id: &str, id: &str, input: &NewMembers) -> Result<AddMembers> {
    let NewMembers {
        user_ids,
        emails,
        role_id,
        update_if_exists,
        notify_file_added,
        all_or_nothing,
    } = input;
    let (role_id, update_if_exists, notify_file_added, all_or_nothing) = (
        *role_id,
        *update_if_exists,
        *notify_file_added,
        *all_or_nothing,
    );
    let def = rules::role(role_id)
        .ok_or_else(|| Error::from(ApiError::field(ErrorCode::InputNotInList, "roleId")))?;
    ctx.write(|c| {
        let (o, _) = require(c, user_id, id, Action::ManageMembers)?;
        live(&o)?;
        not_system(&o)?;
        let wanted = if o.is_folder() {
            ObjectKind::Folder
        } else {
            ObjectKind::File
        };
        if def.kind != wanted {
            return Err(ApiError::field(ErrorCode::InputNotInList, "roleId").into());
        }
        let mut targets = Vec::new();
        for uid in user_ids {
            targets.push((uid.clone(), coffer_store::users::by_id(c, uid)?));
        }
        for email in emails {
            targets.push((
                email.clone(),
                coffer_store::users::by_email(c, &email.to_lowercase())?,
            ));
        }
        let mut result = AddMembers {
            success_ids: Vec::new(),
            errors: Vec::new(),
            data: Vec::new(),
        };
        let t = now();
        for (asked, user) in targets {
            let refusal = match &user {
                Some(u) if !u.is_usable() => Some(ErrorCode::EntityNotFound),
                None => Some(ErrorCode::EntityNotFound),
                Some(u) if u.id == o.owner_id => Some(ErrorCode::EntityIsOwner),
                Some(u)
                    if !update_if_exists
                        && coffer_store::content::member(c, &o.id, &u.id)?.is_some() =>
                {
                    Some(ErrorCode::EntityExists)
                }
                Some(_) => None,
            };
            if let Some(code) = refusal {
                if all_or_nothing {
                    return Err(ApiError::new(code).with_failed_ids(vec![asked]).into());
                }
                result
                    .errors
                    .push(json!({"id": asked, "code": code.as_str(), "message": code.message()}));
                continue;
            }
            let Some(user) = user else { continue };
            coffer_store::content::put_member(
                c,
                &Member {
                    object_id: o.id.clone(),
                    user_id: user.id.clone(),
                    role_id,
                    shared_by: user_id.to_string(),
                    notify_file_added,
                    created_at: t,
                },
            )?;
            events::record(
                c,
                "filesystem.member.create",
                Some(user_id),
                json!({"id": o.id, "userId": user.id, "roleId": role_id, "ownerId": o.owner_id}),
            )?;
            result.success_ids.push(user.id.clone());
            result.data.push(MemberView {
                object_id: o.id.clone(),
                role_id,
                user_id: user.id.clone(),
                email: user.email.clone(),
                rank: def.rank,
                created: crate::rfc3339(t),
                role: RoleView::of(def),
                inherit_role_id: None,
            });
        }
        Ok(result)
    })
}

/// Removes a direct member of a folder. An inherited membership is removed where it was given
/// (403 `ERR_ENTITY_INHERITED_MEMBER_NOT_MODIFIABLE` here). A member may leave on their own.
pub fn remove_member(ctx: &Ctx, user_id: &str, id: &str, member_id: &str) -> Result<()> {
    ctx.write(|c| {
        let action = if member_id == user_id {
            Action::List
        } else {
            Action::ManageMembers
        };
        let (o, _) = require(c, user_id, id, action)?;
        if member_id == o.owner_id {
            return Err(ApiError::new(ErrorCode::InputIsOwner).into());
        }
        if coffer_store::content::delete_member(c, &o.id, member_id)? == 0 {
            if coffer_store::content::nearest_membership(c, &o.id, member_id)?.is_some() {
                return Err(ApiError::new(ErrorCode::EntityInheritedMemberNotModifiable).into());
            }
            return Err(super::not_found());
        }
        events::record(
            c,
            "filesystem.member.delete",
            Some(user_id),
            json!({"id": o.id, "userId": member_id, "ownerId": o.owner_id}),
        )
    })
}

/// What `GET /rest/folders/shared` asks for.
#[derive(Debug, Clone, Default)]
pub struct SharedQuery {
    /// The folders the caller shared with others instead of those shared with the caller.
    pub by_me: bool,
    /// The exact name (case-insensitively).
    pub name_eq: Option<String>,
    /// A part of the name (case-insensitively).
    pub name_contains: Option<String>,
    pub offset: i64,
    pub limit: i64,
    pub with: Vec<String>,
}

/// Folders shared with the caller (`sharedByMe`: those the caller shared with others).
pub fn shared_folders(
    ctx: &Ctx,
    user_id: &str,
    q: &SharedQuery,
) -> Result<Listed<Box<serde_json::value::RawValue>>> {
    let SharedQuery {
        by_me,
        name_eq,
        name_contains,
        offset,
        limit,
        with,
    } = q;
    let (by_me, offset, limit) = (*by_me, *offset, *limit);
    // Names compare as the folder keys them: case-insensitively.
    let name_eq = name_eq.as_deref().map(coffer_domain::content::fold_name);
    let name_contains = name_contains
        .as_deref()
        .map(coffer_domain::content::fold_name);
    ctx.read(|c| {
        let mut rows: Vec<(Option<i64>, coffer_store::models::Object)> = Vec::new();
        if by_me {
            for o in coffer_store::content::shared_by(c, user_id)? {
                if o.is_folder() && !rows.iter().any(|(_, r)| r.id == o.id) {
                    rows.push((None, o));
                }
            }
        } else {
            for (m, o) in coffer_store::content::memberships(c, user_id)? {
                if o.is_folder() && o.owner_id != user_id {
                    rows.push((Some(m.role_id), o));
                }
            }
        }
        rows.retain(|(_, o)| {
            name_eq.as_ref().is_none_or(|n| &o.name_folded == n)
                && name_contains
                    .as_ref()
                    .is_none_or(|n| o.name_folded.contains(n.as_str()))
        });
        rows.sort_by(|a, b| a.1.name_folded.cmp(&b.1.name_folded));
        let total = rows.len() as i64;
        let mut items = Vec::new();
        for (role, o) in rows
            .into_iter()
            .skip(offset.max(0) as usize)
            .take(limit.max(0) as usize)
        {
            let access = match role {
                Some(r) => rules::Access::Role(r),
                None => rules::Access::Owner,
            };
            items.extend(super::folders::render(
                c,
                ctx,
                user_id,
                std::slice::from_ref(&o),
                &[],
                Some(access),
                with,
            )?);
        }
        Ok(Listed {
            items,
            total,
            offset,
            limit,
        })
    })
}

/// The longest comment accepted, in characters.
pub const MAX_COMMENT: usize = 10_000;

pub fn add_comment(
    ctx: &Ctx,
    user_id: &str,
    file_id: &str,
    contents: &str,
    parent_id: Option<i64>,
) -> Result<CommentView> {
    let contents = contents.trim();
    if contents.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "contents").into());
    }
    if contents.chars().count() > MAX_COMMENT {
        return Err(ApiError::field(ErrorCode::InputMaxValue, "contents").into());
    }
    if !coffer_domain::input::is_clean(contents, true) {
        return Err(coffer_domain::input::unclean("contents").into());
    }
    ctx.write(|c| {
        let (o, _) = require_file(c, user_id, file_id, Action::Comment)?;
        live(&o)?;
        if let Some(p) = parent_id.filter(|p| *p != 0) {
            coffer_store::content::comment(c, p)?
                .filter(|pc| pc.object_id == o.id && !pc.deleted)
                .ok_or_else(|| {
                    Error::from(ApiError::field(ErrorCode::InvalidParameter, "parentId"))
                })?;
        }
        let t = now();
        let id = coffer_store::content::insert_comment(
            c,
            &NewComment {
                object_id: o.id.clone(),
                parent_id: parent_id.filter(|p| *p != 0),
                user_id: user_id.to_string(),
                contents: contents.to_string(),
                created_at: t,
                modified_at: t,
            },
        )?;
        events::record(
            c,
            "comment.comment.create",
            Some(user_id),
            json!({"id": id, "objectId": o.id, "ownerId": o.owner_id}),
        )?;
        let cm = coffer_store::content::comment(c, id)?.ok_or_else(super::not_found)?;
        Ok(CommentView::of(&cm, o.parent_id.as_deref().unwrap_or("")))
    })
}

pub fn comments(
    ctx: &Ctx,
    user_id: &str,
    file_id: &str,
    newest_first: bool,
    offset: i64,
    limit: i64,
) -> Result<Listed<CommentView>> {
    ctx.read(|c| {
        let (o, _) = require_file(c, user_id, file_id, Action::ReadComments)?;
        let page = coffer_store::content::comments_of(c, &o.id, newest_first, offset, limit)?;
        let folder = o.parent_id.clone().unwrap_or_default();
        Ok(Listed {
            items: page
                .items
                .iter()
                .map(|cm| CommentView::of(cm, &folder))
                .collect(),
            total: page.total,
            offset,
            limit,
        })
    })
}

/// Quota of a folder-owning account, for `GET /rest/users/me/quota`.
pub fn folder_usage(ctx: &Ctx, user_id: &str) -> Result<i64> {
    ctx.with_conn(|c| Ok(coffer_store::content::usage(c, user_id)?))
}
