//! Shared mailboxes: the accounts converted into mailboxes, and their members with each
//! member's `active` flag.

use crate::filter::Page;
use crate::models::{SharedMailbox, SharedMailboxMember};
use crate::schema::{shared_mailbox_members as members, shared_mailboxes as mailboxes};
use crate::{db_run, order_by, DbConn, StoreResult};
use coffer_domain::list::{Dir, ListQuery, Op, Value};
use diesel::prelude::*;
use std::collections::HashSet;

/// Whether the account `user_id` is a shared mailbox (and so cannot sign in).
pub fn is_shared_mailbox(conn: &mut DbConn, user_id: &str) -> StoreResult<bool> {
    Ok(by_id(conn, user_id)?.is_some())
}

pub fn by_id(conn: &mut DbConn, user_id: &str) -> StoreResult<Option<SharedMailbox>> {
    Ok(db_run!(conn => mailboxes::table
        .find(user_id)
        .select(SharedMailbox::as_select())
        .first(conn)
        .optional())?)
}

/// Marks `user_id` a shared mailbox with `member_ids` as its members, all inactive.
pub fn create(
    conn: &mut DbConn,
    user_id: &str,
    member_ids: &[String],
    now: i64,
) -> StoreResult<()> {
    let row = SharedMailbox {
        user_id: user_id.to_string(),
        created_at: now,
        modified_at: now,
    };
    db_run!(conn => diesel::insert_into(mailboxes::table).values(&row).execute(conn))?;
    add_members(conn, user_id, member_ids, now)
}

fn add_members(
    conn: &mut DbConn,
    mailbox_id: &str,
    member_ids: &[String],
    now: i64,
) -> StoreResult<()> {
    let rows: Vec<SharedMailboxMember> = member_ids
        .iter()
        .map(|m| SharedMailboxMember {
            mailbox_id: mailbox_id.to_string(),
            member_id: m.clone(),
            active: false,
            modified_at: now,
        })
        .collect();
    // In chunks, within SQLite's limit of bound parameters.
    for chunk in rows.chunks(200) {
        db_run!(conn => diesel::insert_into(members::table).values(chunk).execute(conn))?;
    }
    Ok(())
}

/// Dissolves a mailbox: its row and its members go; the account stays.
pub fn delete(conn: &mut DbConn, user_id: &str) -> StoreResult<usize> {
    db_run!(conn => {
        diesel::delete(members::table.filter(members::mailbox_id.eq(user_id))).execute(conn)?;
        Ok(diesel::delete(mailboxes::table.find(user_id)).execute(conn)?)
    })
}

/// Replaces the members of a mailbox with `member_ids`: members kept keep their flag, new ones
/// start inactive, the others are removed. Returns `(added, removed)`.
pub fn replace_members(
    conn: &mut DbConn,
    mailbox_id: &str,
    member_ids: &[String],
    now: i64,
) -> StoreResult<(Vec<String>, Vec<String>)> {
    let current: Vec<String> = db_run!(conn => members::table
        .filter(members::mailbox_id.eq(mailbox_id))
        .select(members::member_id)
        .load(conn))?;
    let wanted: HashSet<&String> = member_ids.iter().collect();
    let had: HashSet<&String> = current.iter().collect();
    let removed: Vec<String> = current
        .iter()
        .filter(|m| !wanted.contains(m))
        .cloned()
        .collect();
    let added: Vec<String> = member_ids
        .iter()
        .filter(|m| !had.contains(m))
        .cloned()
        .collect();
    for chunk in removed.chunks(500) {
        db_run!(conn => diesel::delete(members::table
            .filter(members::mailbox_id.eq(mailbox_id))
            .filter(members::member_id.eq_any(chunk)))
        .execute(conn))?;
    }
    add_members(conn, mailbox_id, &added, now)?;
    db_run!(conn => diesel::update(mailboxes::table.find(mailbox_id))
        .set(mailboxes::modified_at.eq(now))
        .execute(conn))?;
    Ok((added, removed))
}

/// Takes `member_id` out of every mailbox (an account that becomes a mailbox itself); returns
/// the mailboxes it left.
pub fn remove_member_everywhere(conn: &mut DbConn, member_id: &str) -> StoreResult<Vec<String>> {
    db_run!(conn => {
        let ids: Vec<String> = members::table
            .filter(members::member_id.eq(member_id))
            .select(members::mailbox_id)
            .load(conn)?;
        diesel::delete(members::table.filter(members::member_id.eq(member_id))).execute(conn)?;
        Ok(ids)
    })
}

/// The members of the given mailboxes, by mailbox and member id.
pub fn members_of(
    conn: &mut DbConn,
    mailbox_ids: &[String],
) -> StoreResult<Vec<SharedMailboxMember>> {
    let mut out = Vec::new();
    for chunk in mailbox_ids.chunks(500) {
        let rows: Vec<SharedMailboxMember> = db_run!(conn => members::table
            .filter(members::mailbox_id.eq_any(chunk))
            .order((members::mailbox_id.asc(), members::member_id.asc()))
            .select(SharedMailboxMember::as_select())
            .load(conn))?;
        out.extend(rows);
    }
    Ok(out)
}

/// The membership of `member_id` in `mailbox_id`, if any.
pub fn membership(
    conn: &mut DbConn,
    mailbox_id: &str,
    member_id: &str,
) -> StoreResult<Option<SharedMailboxMember>> {
    Ok(db_run!(conn => members::table
        .find((mailbox_id, member_id))
        .select(SharedMailboxMember::as_select())
        .first(conn)
        .optional())?)
}

/// Every membership of `member_id`.
pub fn memberships(conn: &mut DbConn, member_id: &str) -> StoreResult<Vec<SharedMailboxMember>> {
    Ok(db_run!(conn => members::table
        .filter(members::member_id.eq(member_id))
        .order(members::mailbox_id.asc())
        .select(SharedMailboxMember::as_select())
        .load(conn))?)
}

/// Sets one member's flag; returns 1 when the membership exists.
pub fn set_active(
    conn: &mut DbConn,
    mailbox_id: &str,
    member_id: &str,
    active: bool,
    now: i64,
) -> StoreResult<usize> {
    Ok(
        db_run!(conn => diesel::update(members::table.find((mailbox_id, member_id)))
        .set((members::active.eq(active), members::modified_at.eq(now)))
        .execute(conn))?,
    )
}

/// The ids of the mailboxes `member_id` has active, in id order.
pub fn active_mailboxes(conn: &mut DbConn, member_id: &str) -> StoreResult<Vec<String>> {
    Ok(db_run!(conn => members::table
        .filter(members::member_id.eq(member_id))
        .filter(members::active.eq(true))
        .order(members::mailbox_id.asc())
        .select(members::mailbox_id)
        .load(conn))?)
}

/// The filters both lists read: `active` and `id` / `id:in` (mailbox ids).
fn filters(q: &ListQuery) -> (Option<bool>, Option<Vec<String>>) {
    let mut active = None;
    let mut ids: Option<Vec<String>> = None;
    for f in &q.filters {
        match (f.field, f.op) {
            ("active", Op::Eq) => {
                if let Value::Bool(b) = f.value() {
                    active = Some(*b);
                }
            }
            ("id", Op::Eq | Op::In) => {
                let these: Vec<String> = f
                    .values
                    .iter()
                    .filter_map(|v| v.as_text().map(str::to_string))
                    .collect();
                // Several id filters narrow each other.
                ids = Some(match ids {
                    None => these,
                    Some(prev) => prev.into_iter().filter(|i| these.contains(i)).collect(),
                });
            }
            _ => {}
        }
    }
    (active, ids)
}

/// The memberships of `member_id` as a page: filters `active` (the member's flag) and `id` /
/// `id:in`; orders by `modified` (when the membership or its flag last changed) or `active`,
/// then by mailbox id.
pub fn list_for_member(
    conn: &mut DbConn,
    member_id: &str,
    q: &ListQuery,
) -> StoreResult<Page<SharedMailboxMember>> {
    let (active, ids) = filters(q);
    db_run!(conn => {
        let build = || {
            let mut b = members::table
                .into_boxed()
                .filter(members::member_id.eq(member_id.to_string()));
            if let Some(a) = active {
                b = b.filter(members::active.eq(a));
            }
            if let Some(ids) = &ids {
                b = b.filter(members::mailbox_id.eq_any(ids.clone()));
            }
            b
        };
        let total: i64 = build().count().get_result(conn)?;
        let mut b = build();
        match q.order.0 {
            "active" => order_by!(b, q.order.1, members::active),
            _ => order_by!(b, q.order.1, members::modified_at),
        }
        let items = b
            .then_order_by(members::mailbox_id.asc())
            .offset(q.offset)
            .limit(q.limit)
            .select(SharedMailboxMember::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}

/// Every mailbox as a page, each with whether any member has it active: filters `active` and
/// `id` / `id:in`; orders by `modified` (the mailbox's last change) or `active`, then by id.
/// Mailboxes are few (an administrator converts each one), so the page is cut in memory.
pub fn list_all(conn: &mut DbConn, q: &ListQuery) -> StoreResult<Page<(SharedMailbox, bool)>> {
    let (active, ids) = filters(q);
    let (all, live): (Vec<SharedMailbox>, Vec<String>) = db_run!(conn => {
        let mut b = mailboxes::table.into_boxed();
        if let Some(ids) = &ids {
            b = b.filter(mailboxes::user_id.eq_any(ids.clone()));
        }
        let all: Vec<SharedMailbox> = b.select(SharedMailbox::as_select()).load(conn)?;
        let live: Vec<String> = members::table
            .filter(members::active.eq(true))
            .select(members::mailbox_id)
            .distinct()
            .load(conn)?;
        (all, live)
    });
    let live: HashSet<String> = live.into_iter().collect();
    let mut rows: Vec<(SharedMailbox, bool)> = all
        .into_iter()
        .map(|m| {
            let on = live.contains(&m.user_id);
            (m, on)
        })
        .filter(|(_, on)| active.is_none_or(|a| a == *on))
        .collect();
    rows.sort_by(|(a, a_on), (b, b_on)| {
        let key = match q.order.0 {
            "active" => a_on.cmp(b_on),
            _ => a.modified_at.cmp(&b.modified_at),
        };
        let key = match q.order.1 {
            Dir::Asc => key,
            Dir::Desc => key.reverse(),
        };
        key.then_with(|| a.user_id.cmp(&b.user_id))
    });
    let total = rows.len() as i64;
    let items = rows
        .into_iter()
        .skip(usize::try_from(q.offset).unwrap_or(usize::MAX))
        .take(usize::try_from(q.limit).unwrap_or(usize::MAX))
        .collect();
    Ok(Page { items, total })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{insert_user, sqlite};
    use coffer_domain::list::{parse, FieldSpec, Kind, ListSpec};

    const SPEC: ListSpec = ListSpec {
        filters: &[
            FieldSpec {
                name: "active",
                kind: Kind::Bool,
                ops: &[Op::Eq],
            },
            FieldSpec {
                name: "id",
                kind: Kind::Text,
                ops: &[Op::Eq, Op::In],
            },
        ],
        order_fields: &["modified", "active"],
        default_order: ("modified", Dir::Desc),
        ..ListSpec::PLAIN
    };

    fn query(pairs: &[(&str, &str)]) -> ListQuery {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        parse(&pairs, &SPEC).unwrap()
    }

    #[test]
    fn members_keep_their_flag_when_the_set_is_replaced_and_lists_filter_and_order() {
        let (_d, mut conn) = sqlite();
        let (m1, m2) = (insert_user(&mut conn, &[]), insert_user(&mut conn, &[]));
        let (ann, bob, cid) = (
            insert_user(&mut conn, &[]),
            insert_user(&mut conn, &[]),
            insert_user(&mut conn, &[]),
        );
        create(&mut conn, &m1, &[ann.clone(), bob.clone()], 10).unwrap();
        create(&mut conn, &m2, std::slice::from_ref(&ann), 20).unwrap();
        assert!(is_shared_mailbox(&mut conn, &m1).unwrap());
        assert!(!is_shared_mailbox(&mut conn, &ann).unwrap());
        assert!(active_mailboxes(&mut conn, &ann).unwrap().is_empty());

        assert_eq!(set_active(&mut conn, &m1, &ann, true, 30).unwrap(), 1);
        assert_eq!(set_active(&mut conn, &m1, &cid, true, 30).unwrap(), 0);
        assert_eq!(
            active_mailboxes(&mut conn, &ann).unwrap(),
            std::slice::from_ref(&m1)
        );

        // Ann keeps her flag, Bob goes, Cid comes in inactive.
        let (added, removed) =
            replace_members(&mut conn, &m1, &[ann.clone(), cid.clone()], 40).unwrap();
        assert_eq!((added, removed), (vec![cid.clone()], vec![bob.clone()]));
        assert!(membership(&mut conn, &m1, &ann).unwrap().unwrap().active);
        assert!(!membership(&mut conn, &m1, &cid).unwrap().unwrap().active);
        assert!(membership(&mut conn, &m1, &bob).unwrap().is_none());

        let ids = |p: Page<SharedMailboxMember>| -> Vec<String> {
            p.items.into_iter().map(|m| m.mailbox_id).collect()
        };
        assert_eq!(
            ids(list_for_member(&mut conn, &ann, &query(&[])).unwrap()),
            [m1.clone(), m2.clone()]
        );
        assert_eq!(
            ids(list_for_member(&mut conn, &ann, &query(&[("active", "false")])).unwrap()),
            std::slice::from_ref(&m2)
        );
        assert_eq!(
            ids(list_for_member(&mut conn, &ann, &query(&[("orderBy", "active:asc")])).unwrap()),
            [m2.clone(), m1.clone()]
        );
        let p = list_for_member(&mut conn, &ann, &query(&[("id:in", m2.as_str())])).unwrap();
        assert_eq!(p.total, 1);

        let all = list_all(&mut conn, &query(&[("orderBy", "active:desc")])).unwrap();
        let flags: Vec<(String, bool)> = all
            .items
            .into_iter()
            .map(|(m, on)| (m.user_id, on))
            .collect();
        assert_eq!(flags, [(m1.clone(), true), (m2.clone(), false)]);
        let p = list_all(
            &mut conn,
            &query(&[("active", "false"), ("id", m2.as_str())]),
        )
        .unwrap();
        assert_eq!(p.total, 1);

        assert_eq!(remove_member_everywhere(&mut conn, &ann).unwrap().len(), 2);
        assert_eq!(delete(&mut conn, &m1).unwrap(), 1);
        assert!(members_of(&mut conn, std::slice::from_ref(&m1))
            .unwrap()
            .is_empty());
        assert!(!is_shared_mailbox(&mut conn, &m1).unwrap());
    }
}
