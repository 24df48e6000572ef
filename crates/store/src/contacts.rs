//! A user's contacts and their addresses.

use crate::filter::{Binary, Page};
use crate::models::{Contact, ContactItem, NewContact};
use crate::schema::{contact_items, contacts, external_dls};
use crate::{db_run, order_by, DbConn, StoreResult};
use coffer_domain::list::{Dir, ListQuery, Op};
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, c: &NewContact) -> StoreResult<i64> {
    Ok(db_run!(conn => diesel::insert_into(contacts::table)
        .values(c)
        .returning(contacts::id)
        .get_result(conn))?)
}

pub fn by_id(conn: &mut DbConn, id: i64) -> StoreResult<Option<Contact>> {
    Ok(db_run!(conn => contacts::table
        .find(id)
        .select(Contact::as_select())
        .first(conn)
        .optional())?)
}

/// The owner's contact with this folded name.
pub fn by_name(
    conn: &mut DbConn,
    user_id: &str,
    name_folded: &str,
) -> StoreResult<Option<Contact>> {
    Ok(db_run!(conn => contacts::table
        .filter(contacts::user_id.eq(user_id))
        .filter(contacts::name_folded.eq(name_folded))
        .select(Contact::as_select())
        .first(conn)
        .optional())?)
}

pub fn rename(
    conn: &mut DbConn,
    id: i64,
    name: &str,
    name_folded: &str,
    now: i64,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(contacts::table.find(id))
        .set((
            contacts::name.eq(name),
            contacts::name_folded.eq(name_folded),
            contacts::modified_at.eq(now),
        ))
        .execute(conn))?)
}

pub fn delete(conn: &mut DbConn, id: i64) -> StoreResult<usize> {
    db_run!(conn => {
        diesel::delete(contact_items::table.filter(contact_items::contact_id.eq(id))).execute(conn)?;
        Ok(diesel::delete(contacts::table.find(id)).execute(conn)?)
    })
}

/// Replaces the addresses of a contact with `emails`, in that order.
pub fn set_items(
    conn: &mut DbConn,
    contact_id: i64,
    user_id: &str,
    emails: &[String],
) -> StoreResult<()> {
    let rows: Vec<ContactItem> = emails
        .iter()
        .enumerate()
        .map(|(i, e)| ContactItem {
            contact_id,
            user_id: user_id.to_string(),
            position: i as i64,
            email: e.clone(),
        })
        .collect();
    db_run!(conn => {
        diesel::delete(contact_items::table.filter(contact_items::contact_id.eq(contact_id)))
            .execute(conn)?;
        diesel::insert_into(contact_items::table).values(&rows).execute(conn)?;
        Ok(())
    })
}

/// The addresses of the given contacts, by contact and position, each with whether it is an
/// external distribution list.
pub fn items_of(conn: &mut DbConn, ids: &[i64]) -> StoreResult<Vec<(ContactItem, bool)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(db_run!(conn => contact_items::table
        .left_join(external_dls::table)
        .filter(contact_items::contact_id.eq_any(ids))
        .order((contact_items::contact_id.asc(), contact_items::position.asc()))
        .select((ContactItem::as_select(), external_dls::email.nullable().is_not_null()))
        .load(conn))?)
}

/// Lists the owner's contacts. Filters: `name` (exact), `name:contains` (without regard to
/// case: the value folded as names are, `coffer_domain::content::fold_name`, within the folded
/// name). Orders by `id`, `name` (folded, by code point on both backends) or
/// `lastContactDate`, where a contact never contacted counts as the oldest: first ascending,
/// last descending, on both backends.
pub fn list(conn: &mut DbConn, user_id: &str, q: &ListQuery) -> StoreResult<Page<Contact>> {
    let mut exact: Vec<String> = Vec::new();
    let mut contains: Vec<String> = Vec::new();
    for f in &q.filters {
        if let (Some(v), "name") = (f.value().as_text(), f.field) {
            match f.op {
                Op::Eq => exact.push(v.to_string()),
                Op::Contains => contains.push(format!(
                    "%{}%",
                    crate::like_escape(&coffer_domain::content::fold_name(v))
                )),
                _ => {}
            }
        }
    }
    db_run!(conn => {
        let build = || {
            let mut b = contacts::table
                .into_boxed()
                .filter(contacts::user_id.eq(user_id.to_string()));
            for v in &exact {
                b = b.filter(contacts::name.eq(v.clone()));
            }
            for p in &contains {
                b = b.filter(contacts::name_folded.like(p.clone()).escape('\\'));
            }
            b
        };
        let total: i64 = build().count().get_result(conn)?;
        let mut b = build();
        match q.order.0 {
            "name" => order_by!(b, q.order.1, Binary(contacts::name_folded)),
            "lastContactDate" => {
                b = match q.order.1 {
                    Dir::Asc => b
                        .then_order_by(contacts::last_contact_at.is_null().desc())
                        .then_order_by(contacts::last_contact_at.asc()),
                    Dir::Desc => b
                        .then_order_by(contacts::last_contact_at.is_null().asc())
                        .then_order_by(contacts::last_contact_at.desc()),
                };
            }
            _ => order_by!(b, q.order.1, contacts::id),
        }
        let items = b
            .then_order_by(contacts::id.asc())
            .offset(q.offset)
            .limit(q.limit)
            .select(Contact::as_select())
            .load(conn)?;
        Ok(Page { items, total })
    })
}

/// Sets the last-contact time of the owner's contacts with any of `emails` (lower-cased) to
/// `at`, where it is earlier or unset: a time never moves back. Returns the ids changed.
pub fn touch(
    conn: &mut DbConn,
    user_id: &str,
    emails: &[String],
    at: i64,
) -> StoreResult<Vec<i64>> {
    if emails.is_empty() {
        return Ok(Vec::new());
    }
    let mut changed: Vec<i64> = Vec::new();
    // In chunks, so that a message to very many recipients stays within SQLite's limit of
    // bound parameters.
    for chunk in emails.chunks(500) {
        let ids: Vec<i64> = db_run!(conn => {
            let ids: Vec<i64> = contacts::table
                .filter(contacts::user_id.eq(user_id))
                .filter(
                    contacts::id.eq_any(
                        contact_items::table
                            .filter(contact_items::user_id.eq(user_id))
                            .filter(contact_items::email.eq_any(chunk))
                            .select(contact_items::contact_id),
                    ),
                )
                .filter(contacts::last_contact_at.is_null().or(contacts::last_contact_at.lt(at)))
                .select(contacts::id)
                .load(conn)?;
            if !ids.is_empty() {
                diesel::update(contacts::table.filter(contacts::id.eq_any(&ids)))
                    .set(contacts::last_contact_at.eq(at))
                    .execute(conn)?;
            }
            ids
        });
        changed.extend(ids);
    }
    changed.sort_unstable();
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{insert_user, sqlite};
    use coffer_domain::list::{parse, FieldSpec, Kind, ListSpec};

    const SPEC: ListSpec = ListSpec {
        filters: &[FieldSpec {
            name: "name",
            kind: Kind::Text,
            ops: &[Op::Eq, Op::Contains],
        }],
        order_fields: &["id", "name", "lastContactDate"],
        default_order: ("name", Dir::Asc),
        ..ListSpec::PLAIN
    };

    fn contact(conn: &mut DbConn, user: &str, name: &str, emails: &[&str]) -> i64 {
        let id = insert(
            conn,
            &NewContact {
                user_id: user.into(),
                name: name.into(),
                name_folded: coffer_domain::content::fold_name(name),
                created_at: 1,
                modified_at: 1,
            },
        )
        .unwrap();
        let emails: Vec<String> = emails.iter().map(|e| e.to_string()).collect();
        set_items(conn, id, user, &emails).unwrap();
        id
    }

    fn names(conn: &mut DbConn, user: &str, query: &[(&str, &str)]) -> Vec<String> {
        let pairs: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let q = parse(&pairs, &SPEC).unwrap();
        list(conn, user, &q)
            .unwrap()
            .items
            .into_iter()
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn touch_sets_the_last_contact_of_the_owners_matching_contacts_and_never_moves_back() {
        let (_d, mut conn) = sqlite();
        let (ann, bob) = (insert_user(&mut conn, &[]), insert_user(&mut conn, &[]));
        let a = contact(&mut conn, &ann, "A", &["x@example.com", "y@example.com"]);
        let b = contact(&mut conn, &ann, "B", &["y@example.com"]);
        let c = contact(&mut conn, &ann, "C", &["z@example.com"]);
        let other = contact(&mut conn, &bob, "A", &["x@example.com"]);

        assert_eq!(
            touch(&mut conn, &ann, &["y@example.com".into()], 100).unwrap(),
            [a, b]
        );
        let at = |conn: &mut DbConn, id| by_id(conn, id).unwrap().unwrap().last_contact_at;
        assert_eq!(
            (at(&mut conn, a), at(&mut conn, b), at(&mut conn, c)),
            (Some(100), Some(100), None)
        );
        // Another owner's contact with the same address is not touched.
        assert_eq!(at(&mut conn, other), None);
        // An earlier time changes nothing; a later one moves on.
        assert!(touch(&mut conn, &ann, &["x@example.com".into()], 50)
            .unwrap()
            .is_empty());
        assert_eq!(
            touch(
                &mut conn,
                &ann,
                &["x@example.com".into(), "none@example.com".into()],
                200
            )
            .unwrap(),
            [a]
        );
        assert_eq!((at(&mut conn, a), at(&mut conn, b)), (Some(200), Some(100)));
        assert!(touch(&mut conn, &ann, &[], 300).unwrap().is_empty());

        // Never contacted is the oldest: first ascending, last descending.
        assert_eq!(
            names(&mut conn, &ann, &[("orderBy", "lastContactDate:asc")]),
            ["C", "B", "A"]
        );
        assert_eq!(
            names(&mut conn, &ann, &[("orderBy", "lastContactDate:desc")]),
            ["A", "B", "C"]
        );
    }

    #[test]
    fn list_filters_by_exact_name_and_by_folded_part() {
        let (_d, mut conn) = sqlite();
        let ann = insert_user(&mut conn, &[]);
        contact(&mut conn, &ann, "Émile Zola", &["e@example.com"]);
        contact(&mut conn, &ann, "emil_z", &["f@example.com"]);
        contact(&mut conn, &ann, "Bob", &["b@example.com"]);
        assert_eq!(names(&mut conn, &ann, &[]), ["Bob", "emil_z", "Émile Zola"]);
        assert_eq!(
            names(&mut conn, &ann, &[("name:contains", "ÉMIL")]),
            ["Émile Zola"]
        );
        // `_` and `%` are text, not wildcards.
        assert_eq!(
            names(&mut conn, &ann, &[("name:contains", "l_")]),
            ["emil_z"]
        );
        assert_eq!(
            names(&mut conn, &ann, &[("name", "bob")]),
            Vec::<String>::new()
        );
        assert_eq!(names(&mut conn, &ann, &[("name", "Bob")]), ["Bob"]);
        assert_eq!(
            names(&mut conn, &ann, &[("orderBy", "name:desc"), ("limit", "2")]),
            ["Émile Zola", "emil_z"]
        );
        let q = parse(&[], &SPEC).unwrap();
        assert_eq!(list(&mut conn, &ann, &q).unwrap().total, 3);
    }
}
