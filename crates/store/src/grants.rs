//! One-time grants: authorization codes, consent tickets, and the replay records of JWT
//! assertions (`jti`) and signature-flow codes.

use crate::models::{AuthorizationCode, AuthorizeRequest};
use crate::schema::{
    authorization_codes, authorize_requests, used_assertions, used_signature_codes,
};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn insert_code(conn: &mut DbConn, c: &AuthorizationCode) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(authorization_codes::table).values(c).execute(conn))?;
    Ok(())
}

pub fn code_by_hash(conn: &mut DbConn, hash: &str) -> StoreResult<Option<AuthorizationCode>> {
    Ok(db_run!(conn => authorization_codes::table
        .find(hash)
        .select(AuthorizationCode::as_select())
        .first(conn)
        .optional())?)
}

/// A code, locked until the transaction ends on PostgreSQL (see
/// `tokens::refresh_for_update`): concurrent exchanges of one code run one after the other.
pub fn code_for_update(conn: &mut DbConn, hash: &str) -> StoreResult<Option<AuthorizationCode>> {
    Ok(match conn {
        DbConn::Pg(c) => authorization_codes::table
            .find(hash)
            .select(AuthorizationCode::as_select())
            .for_update()
            .first(c)
            .optional()?,
        DbConn::Sqlite(c) => authorization_codes::table
            .find(hash)
            .select(AuthorizationCode::as_select())
            .first(c)
            .optional()?,
    })
}

/// Marks a code used; 0 when it was used already (a concurrent replay).
pub fn mark_code_used(conn: &mut DbConn, hash: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(authorization_codes::table
            .filter(authorization_codes::code_hash.eq(hash))
            .filter(authorization_codes::used_at.is_null()))
        .set(authorization_codes::used_at.eq(now))
        .execute(conn))?)
}

/// Records the use of an assertion's `jti` by a client, kept until `expires_at` (the assertion's
/// `exp`); false when the client used that `jti` before and the record is still kept, whatever
/// the `exp` of either assertion (RFC 7523 §3 item 7). The key is `(client_id, jti)`, so the one
/// insert is the whole check, and concurrent uses of one `jti` conflict on it.
pub fn record_assertion(
    conn: &mut DbConn,
    client_id: &str,
    jti: &str,
    expires_at: i64,
) -> StoreResult<bool> {
    let n = db_run!(conn => diesel::insert_into(used_assertions::table)
        .values((
            used_assertions::client_id.eq(client_id),
            used_assertions::jti.eq(jti),
            used_assertions::expires_at.eq(expires_at),
        ))
        .on_conflict_do_nothing()
        .execute(conn))?;
    Ok(n == 1)
}

/// Records a signature-flow code by its replay key (a hash of what the code means, the same for
/// every spelling of it); false when it was used before.
pub fn record_signature_code(
    conn: &mut DbConn,
    replay_key: &str,
    expires_at: i64,
) -> StoreResult<bool> {
    let n = db_run!(conn => diesel::insert_into(used_signature_codes::table)
        .values((used_signature_codes::code_hash.eq(replay_key), used_signature_codes::expires_at.eq(expires_at)))
        .on_conflict_do_nothing()
        .execute(conn))?;
    Ok(n == 1)
}

pub fn insert_authorize_request(conn: &mut DbConn, r: &AuthorizeRequest) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(authorize_requests::table).values(r).execute(conn))?;
    Ok(())
}

/// Takes a ticket of the authorization page: returns it and deletes it, so it serves once.
pub fn take_authorize_request(
    conn: &mut DbConn,
    ticket_hash: &str,
) -> StoreResult<Option<AuthorizeRequest>> {
    db_run!(conn => {
        let r = authorize_requests::table
            .find(ticket_hash)
            .select(AuthorizeRequest::as_select())
            .first(conn)
            .optional()?;
        // Only the request whose delete removed the row may use the ticket: concurrent
        // answers on PostgreSQL can all read it, but only one deletes it.
        let taken = r.is_some() && diesel::delete(authorize_requests::table.find(ticket_hash)).execute(conn)? == 1;
        Ok(r.filter(|_| taken))
    })
}

/// Deletes replay records, codes and tickets that can no longer matter.
pub fn purge_expired(conn: &mut DbConn, before: i64) -> StoreResult<usize> {
    db_run!(conn => {
        let a = diesel::delete(used_assertions::table.filter(used_assertions::expires_at.lt(before))).execute(conn)?;
        let s = diesel::delete(used_signature_codes::table.filter(used_signature_codes::expires_at.lt(before))).execute(conn)?;
        let t = diesel::delete(authorize_requests::table.filter(authorize_requests::expires_at.lt(before))).execute(conn)?;
        // Codes are kept a day past expiry so that a late replay is still recognised.
        let c = diesel::delete(authorization_codes::table.filter(authorization_codes::expires_at.lt(before - 86_400))).execute(conn)?;
        Ok(a + s + t + c)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::sqlite;

    #[test]
    fn a_jti_is_used_once_per_client_whatever_its_expiry() {
        let (_dir, mut conn) = sqlite();
        assert!(record_assertion(&mut conn, "c1", "j", 1_000).unwrap());
        // A plain replay, and the same jti with a later or an earlier expiry: all refused.
        for exp in [1_000, 1_001, 5_000, 999] {
            assert!(
                !record_assertion(&mut conn, "c1", "j", exp).unwrap(),
                "exp {exp}"
            );
        }
        // Another client's jti space is its own; another jti is new.
        assert!(record_assertion(&mut conn, "c2", "j", 1_000).unwrap());
        assert!(record_assertion(&mut conn, "c1", "k", 1_000).unwrap());
        // The refusals changed nothing: the record still ends with the first assertion's exp,
        // and once purged after it the jti is free again.
        assert_eq!(purge_expired(&mut conn, 1_000).unwrap(), 0);
        assert_eq!(purge_expired(&mut conn, 1_001).unwrap(), 3);
        assert!(record_assertion(&mut conn, "c1", "j", 2_000).unwrap());
    }
}
