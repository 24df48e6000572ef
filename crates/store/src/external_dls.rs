//! The organisation's external distribution lists (lower-cased addresses).

use crate::filter::{Binary, Page};
use crate::models::ExternalDl;
use crate::schema::external_dls;
use crate::{db_run, order_by, DbConn, StoreResult};
use coffer_domain::list::ListQuery;
use diesel::prelude::*;

/// Adds the addresses not listed yet; returns those it added, in the order given.
pub fn add(
    conn: &mut DbConn,
    emails: &[String],
    by: Option<&str>,
    now: i64,
) -> StoreResult<Vec<String>> {
    let mut added = Vec::new();
    for e in emails {
        let row = ExternalDl {
            email: e.clone(),
            created_by: by.map(str::to_string),
            created_at: now,
        };
        let n = db_run!(conn => diesel::insert_into(external_dls::table)
            .values(&row)
            .on_conflict(external_dls::email)
            .do_nothing()
            .execute(conn))?;
        if n == 1 {
            added.push(e.clone());
        }
    }
    Ok(added)
}

/// Removes the listed ones of `emails`; returns those it removed, in the order given.
pub fn remove(conn: &mut DbConn, emails: &[String]) -> StoreResult<Vec<String>> {
    let mut removed = Vec::new();
    for e in emails {
        let n = db_run!(conn => diesel::delete(external_dls::table.find(e)).execute(conn))?;
        if n == 1 {
            removed.push(e.clone());
        }
    }
    Ok(removed)
}

/// Which of `emails` are listed.
pub fn listed(conn: &mut DbConn, emails: &[String]) -> StoreResult<Vec<String>> {
    if emails.is_empty() {
        return Ok(Vec::new());
    }
    Ok(db_run!(conn => external_dls::table
        .filter(external_dls::email.eq_any(emails))
        .select(external_dls::email)
        .load(conn))?)
}

pub fn contains(conn: &mut DbConn, email: &str) -> StoreResult<bool> {
    Ok(!listed(conn, &[email.to_string()])?.is_empty())
}

/// The listed addresses, those containing `search` (lower-cased) when given, by address.
pub fn list(conn: &mut DbConn, search: Option<&str>, q: &ListQuery) -> StoreResult<Page<String>> {
    let pattern = search.map(|s| format!("%{}%", crate::like_escape(&s.to_ascii_lowercase())));
    db_run!(conn => {
        let build = || {
            let mut b = external_dls::table.into_boxed();
            if let Some(p) = &pattern {
                b = b.filter(external_dls::email.like(p.clone()).escape('\\'));
            }
            b
        };
        let total: i64 = build().count().get_result(conn)?;
        let mut b = build();
        order_by!(b, q.order.1, Binary(external_dls::email));
        let items = b
            .offset(q.offset)
            .limit(q.limit)
            .select(external_dls::email)
            .load(conn)?;
        Ok(Page { items, total })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use coffer_domain::list::{parse, Dir, ListSpec};

    #[test]
    fn add_and_remove_report_what_changed() {
        let (_d, mut conn) = crate::test_support::sqlite();
        let s = |v: &[&str]| v.iter().map(|e| e.to_string()).collect::<Vec<_>>();
        assert_eq!(
            add(&mut conn, &s(&["b@x.io", "a@x.io"]), Some("u"), 1).unwrap(),
            s(&["b@x.io", "a@x.io"])
        );
        assert_eq!(
            add(&mut conn, &s(&["a@x.io", "c_d@x.io"]), None, 2).unwrap(),
            s(&["c_d@x.io"])
        );
        assert_eq!(
            listed(&mut conn, &s(&["a@x.io", "z@x.io"])).unwrap(),
            s(&["a@x.io"])
        );
        assert!(contains(&mut conn, "b@x.io").unwrap());
        let spec = ListSpec {
            order_fields: &["email"],
            default_order: ("email", Dir::Asc),
            ..ListSpec::PLAIN
        };
        let q = parse(&[], &spec).unwrap();
        let all = list(&mut conn, None, &q).unwrap();
        assert_eq!(
            (all.items, all.total),
            (s(&["a@x.io", "b@x.io", "c_d@x.io"]), 3)
        );
        assert_eq!(
            list(&mut conn, Some("C_"), &q).unwrap().items,
            s(&["c_d@x.io"])
        );
        assert_eq!(list(&mut conn, Some("%"), &q).unwrap().total, 0);
        assert_eq!(
            remove(&mut conn, &s(&["a@x.io", "z@x.io"])).unwrap(),
            s(&["a@x.io"])
        );
        assert!(!contains(&mut conn, "a@x.io").unwrap());
    }
}
