//! SMS two-factor sign-in: who chose it, and each user's current one-time code (stored only as a
//! salted hash; at most one per user, a new one replacing the previous).

use crate::schema::{sms_codes, sms_two_factor, users};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// Whether the user chose SMS two-factor sign-in.
pub fn is_enabled(conn: &mut DbConn, user_id: &str) -> StoreResult<bool> {
    let n: i64 = db_run!(conn => sms_two_factor::table
        .filter(sms_two_factor::user_id.eq(user_id))
        .count()
        .get_result(conn))?;
    Ok(n > 0)
}

pub fn enable(conn: &mut DbConn, user_id: &str, now: i64) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(sms_two_factor::table)
        .values((sms_two_factor::user_id.eq(user_id), sms_two_factor::enabled_at.eq(now)))
        .on_conflict_do_nothing()
        .execute(conn))?;
    Ok(())
}

/// Turns SMS two-factor sign-in off and forgets the user's code; returns whether it was on.
pub fn disable(conn: &mut DbConn, user_id: &str) -> StoreResult<bool> {
    let n = db_run!(conn => diesel::delete(sms_two_factor::table.find(user_id)).execute(conn))?;
    delete(conn, user_id)?;
    Ok(n > 0)
}

/// Marks the user's mobile number verified, if it is still `number`.
pub fn mark_number_verified(conn: &mut DbConn, user_id: &str, number: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table
            .find(user_id)
            .filter(users::mobile_number.eq(number)))
        .set(users::mobile_verified.eq(true))
        .execute(conn))?)
}

/// A code to store.
#[derive(Debug, Clone)]
pub struct NewCode<'a> {
    pub user_id: &'a str,
    pub purpose: &'a str,
    pub to_number: &'a str,
    pub code_salt: &'a str,
    pub code_hash: &'a str,
    pub sent_at: i64,
    pub expires_at: i64,
}

/// Stores a new code in place of the user's previous one, unless the previous one was sent after
/// `not_after` (too recently): then nothing changes and its sending time is returned.
pub fn replace(conn: &mut DbConn, code: &NewCode<'_>, not_after: i64) -> StoreResult<Option<i64>> {
    let values = (
        sms_codes::purpose.eq(code.purpose),
        sms_codes::to_number.eq(code.to_number),
        sms_codes::code_salt.eq(code.code_salt),
        sms_codes::code_hash.eq(Some(code.code_hash)),
        sms_codes::attempts.eq(0),
        sms_codes::sent_at.eq(code.sent_at),
        sms_codes::expires_at.eq(code.expires_at),
    );
    // The condition is checked by the update itself, so two concurrent sends cannot both pass.
    let n = db_run!(conn => diesel::update(sms_codes::table
            .find(code.user_id)
            .filter(sms_codes::sent_at.le(not_after)))
        .set(values)
        .execute(conn))?;
    if n == 1 {
        return Ok(None);
    }
    if let Some(sent) = sent_at(conn, code.user_id)? {
        return Ok(Some(sent));
    }
    let n = db_run!(conn => diesel::insert_into(sms_codes::table)
        .values((sms_codes::user_id.eq(code.user_id), values))
        .on_conflict_do_nothing()
        .execute(conn))?;
    if n == 1 {
        return Ok(None);
    }
    Ok(Some(sent_at(conn, code.user_id)?.unwrap_or(code.sent_at)))
}

fn sent_at(conn: &mut DbConn, user_id: &str) -> StoreResult<Option<i64>> {
    Ok(db_run!(conn => sms_codes::table
        .find(user_id)
        .select(sms_codes::sent_at)
        .first::<i64>(conn)
        .optional())?)
}

/// A live code, as one attempt sees it.
#[derive(Debug, Clone, Queryable)]
pub struct Attempt {
    pub to_number: String,
    pub code_salt: String,
    pub code_hash: Option<String>,
    /// The attempts made on this code, this one included.
    pub attempts: i32,
}

/// Counts an attempt on the user's live code for `purpose` (not used, not voided, not expired,
/// fewer than `max_attempts` attempts so far) and returns it; `None` when there is no live code.
/// Call inside a write transaction: the counting update holds the row until the attempt is
/// settled ([`void`]), so concurrent attempts are counted one after another.
pub fn attempt(
    conn: &mut DbConn,
    user_id: &str,
    purpose: &str,
    now: i64,
    max_attempts: i32,
) -> StoreResult<Option<Attempt>> {
    let n = db_run!(conn => diesel::update(sms_codes::table
            .find(user_id)
            .filter(sms_codes::purpose.eq(purpose))
            .filter(sms_codes::code_hash.is_not_null())
            .filter(sms_codes::expires_at.gt(now))
            .filter(sms_codes::attempts.lt(max_attempts)))
        .set(sms_codes::attempts.eq(sms_codes::attempts + 1))
        .execute(conn))?;
    if n == 0 {
        return Ok(None);
    }
    Ok(db_run!(conn => sms_codes::table
        .find(user_id)
        .select((sms_codes::to_number, sms_codes::code_salt, sms_codes::code_hash, sms_codes::attempts))
        .first::<Attempt>(conn)
        .optional())?)
}

/// Voids the user's code (used, or out of attempts); the sending time stays for the rate limit.
pub fn void(conn: &mut DbConn, user_id: &str) -> StoreResult<()> {
    db_run!(conn => diesel::update(sms_codes::table.find(user_id))
        .set(sms_codes::code_hash.eq(None::<String>))
        .execute(conn))?;
    Ok(())
}

/// Forgets the user's code and its sending time.
pub fn delete(conn: &mut DbConn, user_id: &str) -> StoreResult<()> {
    db_run!(conn => diesel::delete(sms_codes::table.find(user_id)).execute(conn))?;
    Ok(())
}

/// Whether the user has a live code for `purpose`.
pub fn pending(conn: &mut DbConn, user_id: &str, purpose: &str, now: i64) -> StoreResult<bool> {
    let n: i64 = db_run!(conn => sms_codes::table
        .filter(sms_codes::user_id.eq(user_id))
        .filter(sms_codes::purpose.eq(purpose))
        .filter(sms_codes::code_hash.is_not_null())
        .filter(sms_codes::expires_at.gt(now))
        .count()
        .get_result(conn))?;
    Ok(n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(conn: &mut DbConn) -> String {
        crate::test_support::insert_user(conn, &[("mobile_number", "'+4179'")])
    }

    fn code<'a>(id: &'a str, hash: &'a str, at: i64) -> NewCode<'a> {
        NewCode {
            user_id: id,
            purpose: "sign_in",
            to_number: "+4179",
            code_salt: "s",
            code_hash: hash,
            sent_at: at,
            expires_at: at + 300,
        }
    }

    #[test]
    fn codes_are_replaced_rate_limited_counted_and_voided() {
        let (_d, mut c) = crate::test_support::sqlite();
        let id = user(&mut c);
        assert_eq!(replace(&mut c, &code(&id, "h1", 100), 70).unwrap(), None);
        // Sent at 100: another send before 130 is refused.
        assert_eq!(
            replace(&mut c, &code(&id, "h2", 110), 80).unwrap(),
            Some(100)
        );
        assert!(pending(&mut c, &id, "sign_in", 110).unwrap());
        assert!(!pending(&mut c, &id, "enrol", 110).unwrap());
        for n in 1..=2 {
            let a = attempt(&mut c, &id, "sign_in", 120, 2).unwrap().unwrap();
            assert_eq!((a.attempts, a.code_hash.as_deref()), (n, Some("h1")));
        }
        assert!(attempt(&mut c, &id, "sign_in", 120, 2).unwrap().is_none());
        assert_eq!(replace(&mut c, &code(&id, "h3", 140), 110).unwrap(), None);
        assert!(attempt(&mut c, &id, "enrol", 150, 5).unwrap().is_none());
        assert!(
            attempt(&mut c, &id, "sign_in", 440, 5).unwrap().is_none(),
            "expired"
        );
        assert_eq!(
            attempt(&mut c, &id, "sign_in", 150, 5)
                .unwrap()
                .unwrap()
                .attempts,
            1
        );
        void(&mut c, &id).unwrap();
        assert!(attempt(&mut c, &id, "sign_in", 150, 5).unwrap().is_none());
        enable(&mut c, &id, 1).unwrap();
        assert!(is_enabled(&mut c, &id).unwrap());
        assert!(disable(&mut c, &id).unwrap());
        assert!(!is_enabled(&mut c, &id).unwrap());
    }
}
