//! User accounts and their profiles.

use crate::models::{Profile, User};
use crate::schema::{profiles, roles, users};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

pub fn insert(conn: &mut DbConn, user: &User) -> StoreResult<()> {
    let folded = user.user_name.as_deref().map(fold_user_name);
    db_run!(conn => diesel::insert_into(users::table)
        .values((user, users::user_name_folded.eq(&folded)))
        .execute(conn))?;
    // Every account has its three system folders, whichever path made it.
    crate::content::insert_system_folders(
        conn,
        &user.id,
        &user.basedir_id,
        &user.syncdir_id,
        &user.mydir_id,
        user.created_at,
    )
}

/// A userName as compared without regard to case: Unicode lowercase, folded here rather than by
/// the database (SQLite's `lower()` folds ASCII letters only).
pub fn fold_user_name(name: &str) -> String {
    name.to_lowercase()
}

/// Sets `user_name_folded` where it differs from [`fold_user_name`], after the migration that
/// filled it with the database's `lower()`. A name whose fold another account holds already (two
/// names differing only in the case of non-ASCII letters, which SQLite let coexist) keeps the
/// database's fold and is logged. Returns how many were refolded.
pub fn refold_user_names(conn: &mut DbConn) -> StoreResult<usize> {
    let rows: Vec<(String, String, Option<String>)> = db_run!(conn => users::table
        .filter(users::user_name.is_not_null())
        .select((users::id, users::user_name.assume_not_null(), users::user_name_folded))
        .load(conn))?;
    let mut taken: std::collections::HashSet<String> =
        rows.iter().filter_map(|(_, _, f)| f.clone()).collect();
    let mut refolded = 0;
    for (id, name, folded) in rows {
        let want = fold_user_name(&name);
        if folded.as_deref() == Some(want.as_str()) {
            continue;
        }
        if !taken.insert(want.clone()) {
            log::warn!(
                "user {id}: userName folds like another account's; kept as the database folds it"
            );
            continue;
        }
        db_run!(conn => diesel::update(users::table.find(&id))
            .set(users::user_name_folded.eq(&want))
            .execute(conn))?;
        refolded += 1;
    }
    Ok(refolded)
}

pub fn by_id(conn: &mut DbConn, id: &str) -> StoreResult<Option<User>> {
    Ok(db_run!(conn => users::table.find(id).select(User::as_select()).first(conn).optional())?)
}

pub fn by_email(conn: &mut DbConn, email: &str) -> StoreResult<Option<User>> {
    Ok(db_run!(conn => users::table
        .filter(users::email.eq(email))
        .select(User::as_select())
        .first(conn)
        .optional())?)
}

/// The user with this address, and whether the account is a shared mailbox, in one query (the
/// subject of a JWT or signature grant, read on the writer for every such grant).
pub fn by_email_with_mailbox(conn: &mut DbConn, email: &str) -> StoreResult<Option<(User, bool)>> {
    use crate::schema::shared_mailboxes;
    let row: Option<(User, Option<String>)> = db_run!(conn => users::table
        .left_join(shared_mailboxes::table)
        .filter(users::email.eq(email))
        .select((User::as_select(), shared_mailboxes::user_id.nullable()))
        .first(conn)
        .optional())?;
    Ok(row.map(|(user, mailbox)| (user, mailbox.is_some())))
}

pub fn count(conn: &mut DbConn) -> StoreResult<i64> {
    Ok(db_run!(conn => users::table.count().get_result(conn))?)
}

pub fn profile(conn: &mut DbConn, id: i64) -> StoreResult<Option<Profile>> {
    Ok(
        db_run!(conn => profiles::table.find(id).select(Profile::as_select()).first(conn).optional())?,
    )
}

pub fn profile_by_name(conn: &mut DbConn, name: &str) -> StoreResult<Option<Profile>> {
    Ok(db_run!(conn => profiles::table
        .filter(profiles::name.eq(name))
        .select(Profile::as_select())
        .first(conn)
        .optional())?)
}

/// Whether the system role allows SFTP.
pub fn role_sftp_enabled(conn: &mut DbConn, role: &str) -> StoreResult<bool> {
    Ok(db_run!(conn => roles::table.find(role).select(roles::sftp_enabled).first::<bool>(conn).optional())?
        .unwrap_or(false))
}

pub fn set_password(conn: &mut DbConn, id: &str, hash: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set((users::password_hash.eq(hash), users::updated_at.eq(now), users::version.eq(users::version + 1)))
        .execute(conn))?)
}

pub fn set_name(conn: &mut DbConn, id: &str, name: &str, now: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set((users::name.eq(name), users::updated_at.eq(now), users::version.eq(users::version + 1)))
        .execute(conn))?)
}

/// Marks an account deleted: it can no longer sign in, and its tokens stop working. It gives up
/// its email (kept as `former_email`; `email` becomes `<id>@deleted.invalid`) and its
/// `userName`, so that a new account may take them.
pub fn mark_deleted(conn: &mut DbConn, id: &str, now: i64) -> StoreResult<usize> {
    let placeholder = format!("{id}@deleted.invalid");
    Ok(
        db_run!(conn => diesel::update(users::table.find(id).filter(users::deleted.eq(false)))
        .set((
            users::deleted.eq(true),
            users::active.eq(false),
            users::former_email.eq(users::email.nullable()),
            users::email.eq(&placeholder),
            users::user_name.eq(None::<String>),
            users::user_name_folded.eq(None::<String>),
            users::updated_at.eq(now),
            users::version.eq(users::version + 1),
        ))
        .execute(conn))?,
    )
}

pub fn set_mobile_number(
    conn: &mut DbConn,
    id: &str,
    number: &str,
    now: i64,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set((users::mobile_number.eq(number), users::mobile_verified.eq(false), users::updated_at.eq(now)))
        .execute(conn))?)
}

/// Active users whose email or name contains `needle` (case-insensitive), by email.
pub fn search(conn: &mut DbConn, needle: &str, limit: i64) -> StoreResult<Vec<User>> {
    let pattern = format!("%{}%", crate::like_escape(&needle.to_lowercase()));
    Ok(db_run!(conn => users::table
        .filter(users::deleted.eq(false))
        .filter(users::active.eq(true))
        .filter(
            crate::filter::lower(users::email).like(&pattern).escape('\\')
                .or(crate::filter::lower(users::name).like(&pattern).escape('\\')),
        )
        .order(users::email.asc())
        .limit(limit)
        .select(User::as_select())
        .load(conn))?)
}

/// Records a text message (the recording SMS sender).
pub fn record_sms(
    conn: &mut DbConn,
    user_id: Option<&str>,
    to: &str,
    body: &str,
    now: i64,
) -> StoreResult<()> {
    use crate::schema::sms_messages;
    db_run!(conn => diesel::insert_into(sms_messages::table)
        .values((
            sms_messages::id.eq(uuid::Uuid::new_v4().to_string()),
            sms_messages::user_id.eq(user_id),
            sms_messages::to_number.eq(to),
            sms_messages::body.eq(body),
            sms_messages::created_at.eq(now),
        ))
        .execute(conn))?;
    Ok(())
}

/// Puts an email message that carries no expiring link or code in the outbox, `queued` and due
/// at once (a message with one goes through [`crate::mail::queue`] with its `expires_at`): the
/// SMTP sender (coffer-delivery's `mail`) sends it when a relay is configured, else an external
/// relay reads it. Its Message-ID, fixed here so that every attempt sends the same one, is
/// `<id@message_domain>`.
pub fn queue_mail(
    conn: &mut DbConn,
    user_id: Option<&str>,
    to: &str,
    subject: &str,
    body: &str,
    message_domain: &str,
    now: i64,
) -> StoreResult<String> {
    crate::mail::queue(
        conn,
        &crate::mail::NewMessage {
            email_id: None,
            user_id,
            to,
            subject,
            body,
            expires_at: None,
        },
        message_domain,
        now,
    )
}

pub fn clear_force_password_change(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set(users::force_password_change.eq(false))
        .execute(conn))?)
}

/// Sets (or clears) the TOTP secret and whether two-factor sign-in is on.
pub fn set_totp(
    conn: &mut DbConn,
    id: &str,
    secret: Option<&str>,
    enabled: bool,
    now: i64,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set((
            users::totp_secret.eq(secret),
            users::totp_enabled.eq(enabled),
            users::totp_last_step.eq(None::<i64>),
            users::updated_at.eq(now),
        ))
        .execute(conn))?)
}

/// Records the TOTP step just used, only if it is later than the last one (0 otherwise: a
/// concurrent use of the same code).
pub fn use_totp_step(conn: &mut DbConn, id: &str, step: i64) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table
            .find(id)
            .filter(users::totp_last_step.is_null().or(users::totp_last_step.lt(step))))
        .set(users::totp_last_step.eq(step))
        .execute(conn))?)
}

/// Remembers a browser that passed two-factor sign-in.
pub fn remember_device(
    conn: &mut DbConn,
    token_hash: &str,
    user_id: &str,
    expires_at: i64,
) -> StoreResult<()> {
    use crate::schema::remembered_devices as r;
    db_run!(conn => diesel::insert_into(r::table)
        .values((r::token_hash.eq(token_hash), r::user_id.eq(user_id), r::expires_at.eq(expires_at)))
        .execute(conn))?;
    Ok(())
}

/// Whether a remembered-browser token is valid for the user.
pub fn remembered(
    conn: &mut DbConn,
    token_hash: &str,
    user_id: &str,
    now: i64,
) -> StoreResult<bool> {
    use crate::schema::remembered_devices as r;
    let n: i64 = db_run!(conn => r::table
        .filter(r::token_hash.eq(token_hash))
        .filter(r::user_id.eq(user_id))
        .filter(r::expires_at.gt(now))
        .count()
        .get_result(conn))?;
    Ok(n > 0)
}

/// Turns two-factor sign-in on for the secret already set up; the step of the confirming code
/// stays used.
pub fn enable_totp(conn: &mut DbConn, id: &str, now: i64) -> StoreResult<usize> {
    Ok(
        db_run!(conn => diesel::update(users::table.find(id).filter(users::totp_secret.is_not_null()))
        .set((users::totp_enabled.eq(true), users::updated_at.eq(now)))
        .execute(conn))?,
    )
}

/// The user with this userName, without regard to case ([`fold_user_name`]).
pub fn by_user_name(conn: &mut DbConn, name: &str) -> StoreResult<Option<User>> {
    Ok(db_run!(conn => users::table
        .filter(users::user_name_folded.eq(fold_user_name(name)))
        .select(User::as_select())
        .first(conn)
        .optional())?)
}

/// The attributes a SCIM identity provider manages.
#[derive(Debug, Clone, AsChangeset)]
#[diesel(table_name = users)]
#[diesel(treat_none_as_null = true)]
pub struct ScimFields {
    pub user_name: Option<String>,
    pub external_id: Option<String>,
    pub email: String,
    pub name: String,
    pub profile_id: i64,
    pub preferred_language: Option<String>,
    pub active: bool,
    pub mobile_number: Option<String>,
    pub mobile_verified: bool,
    pub email_primary: Option<bool>,
    pub mobile_primary: Option<bool>,
    pub role: String,
}

/// Writes SCIM-managed attributes if the user is still at `version`; 0 when another change
/// came first (or the user is gone).
pub fn scim_update(
    conn: &mut DbConn,
    id: &str,
    version: i64,
    fields: &ScimFields,
    now: i64,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table
            .find(id)
            .filter(users::version.eq(version))
            .filter(users::deleted.eq(false)))
        .set((
            fields,
            users::user_name_folded.eq(fields.user_name.as_deref().map(fold_user_name)),
            users::updated_at.eq(now),
            users::version.eq(version + 1),
        ))
        .execute(conn))?)
}

/// Sets or clears the password hash (a cleared one allows no password sign-in).
pub fn set_password_hash(conn: &mut DbConn, id: &str, hash: Option<&str>) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set(users::password_hash.eq(hash))
        .execute(conn))?)
}

/// Whether the user must change the password at the next sign-in.
pub fn set_force_password_change(conn: &mut DbConn, id: &str, on: bool) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table.find(id))
        .set(users::force_password_change.eq(on))
        .execute(conn))?)
}

/// Every profile, by id.
pub fn profiles(conn: &mut DbConn) -> StoreResult<Vec<Profile>> {
    Ok(
        db_run!(conn => profiles::table.order(profiles::id.asc()).select(Profile::as_select()).load(conn))?,
    )
}

/// The account list of the administrators' `GET /rest/admin/users`: filters `email`
/// (`eq`, `contains`), `name` (`eq`, `contains`), `active`, `deleted` (deleted accounts are left out
/// unless `deleted` is given), `userTypeId`; ordered by `email`,
/// `name` or `created`, then by id.
/// `created` bounds the creation time: from (inclusive), until (exclusive).
pub fn list(
    conn: &mut DbConn,
    q: &coffer_domain::list::ListQuery,
    created: (Option<i64>, Option<i64>),
) -> StoreResult<crate::filter::Page<User>> {
    use coffer_domain::list::{Op, Value};
    let mut email_eq: Vec<String> = Vec::new();
    let mut email_like: Vec<String> = Vec::new();
    let mut name_eq: Vec<String> = Vec::new();
    let mut name_like: Vec<String> = Vec::new();
    let mut active: Option<bool> = None;
    let mut deleted = false;
    let mut profile: Option<i64> = None;
    let mut internal: Option<bool> = None;
    let mut collaboration: Option<bool> = None;
    let mut nothing = false;
    let mut suspended: Option<bool> = None;
    for f in &q.filters {
        match (f.field, f.op, f.value()) {
            ("email", Op::Eq, Value::Text(v)) => email_eq.push(v.to_lowercase()),
            ("email", Op::Contains, Value::Text(v)) => {
                email_like.push(format!("%{}%", crate::like_escape(&v.to_lowercase())))
            }
            ("name", Op::Eq, Value::Text(v)) => name_eq.push(v.clone()),
            ("name", Op::Contains, Value::Text(v)) => {
                name_like.push(format!("%{}%", crate::like_escape(&v.to_lowercase())))
            }
            ("active", _, Value::Bool(b)) => active = Some(*b),
            ("suspended", _, Value::Bool(b)) => suspended = Some(*b),
            // Every account's address is known when it is made: all are verified.
            ("verified", _, Value::Bool(false)) => nothing = true,
            // A recipient account is one outside the organisation.
            ("isRecipient", _, Value::Bool(b)) => internal = Some(!*b),
            ("allowsCollaboration", _, Value::Bool(b)) => collaboration = Some(*b),
            ("deleted", _, Value::Bool(b)) => deleted = *b,
            ("userTypeId", _, Value::Int(i)) => profile = Some(*i),
            _ => {}
        }
    }
    // Suspended is an account switched off and not deleted.
    if let Some(s) = suspended {
        if active == Some(s) || (s && deleted) {
            nothing = true;
        }
        active = Some(!s);
    }
    db_run!(conn => {
        let build = || {
            let mut b = users::table.into_boxed().filter(users::deleted.eq(deleted));
            for v in &email_eq {
                b = b.filter(users::email.eq(v.clone()));
            }
            for p in &email_like {
                b = b.filter(crate::filter::lower(users::email).like(p.clone()).escape('\\'));
            }
            for v in &name_eq {
                b = b.filter(users::name.eq(v.clone()));
            }
            for p in &name_like {
                b = b.filter(crate::filter::lower(users::name).like(p.clone()).escape('\\'));
            }
            if let Some(a) = active {
                b = b.filter(users::active.eq(a));
            }
            if let Some(p) = profile {
                b = b.filter(users::profile_id.eq(p));
            }
            if let Some(i) = internal {
                b = b.filter(users::internal.eq(i));
            }
            if let Some(on) = collaboration {
                b = b.filter(users::profile_id.eq_any(
                    profiles::table
                        .filter(profiles::collaboration_enabled.eq(on))
                        .select(profiles::id),
                ));
            }
            if let Some(t) = created.0 {
                b = b.filter(users::created_at.ge(t));
            }
            if let Some(t) = created.1 {
                b = b.filter(users::created_at.lt(t));
            }
            if nothing {
                // A condition no account meets (ids are never NULL).
                b = b.filter(users::id.is_null());
            }
            b
        };
        let total: i64 = build().count().get_result(conn)?;
        let mut b = build();
        match q.order.0 {
            "name" => crate::order_by!(b, q.order.1, users::name),
            "created" => crate::order_by!(b, q.order.1, users::created_at),
            _ => crate::order_by!(b, q.order.1, users::email),
        }
        let items = b
            .then_order_by(users::id.asc())
            .offset(q.offset)
            .limit(q.limit)
            .select(User::as_select())
            .load(conn)?;
        Ok(crate::filter::Page { items, total })
    })
}

/// What an administrator changes on an account (`PUT /rest/admin/users/{id}`); `None` keeps
/// the stored value.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = users)]
pub struct AdminChanges {
    pub name: Option<String>,
    pub active: Option<bool>,
    pub role: Option<String>,
    pub profile_id: Option<i64>,
    pub password_hash: Option<String>,
}

/// Writes an administrator's changes if the account is still at `version` and not deleted; 0
/// when another change came first.
pub fn admin_update(
    conn: &mut DbConn,
    id: &str,
    version: i64,
    changes: &AdminChanges,
    now: i64,
) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(users::table
            .find(id)
            .filter(users::version.eq(version))
            .filter(users::deleted.eq(false)))
        .set((
            changes,
            users::updated_at.eq(now),
            users::version.eq(version + 1),
        ))
        .execute(conn))?)
}

/// A user's own settings beyond `users`: `(signature, mobile_key_store)`, empty when never set.
pub fn settings(conn: &mut DbConn, id: &str) -> StoreResult<(String, String)> {
    use crate::schema::user_settings as s;
    Ok(db_run!(conn => s::table
        .find(id)
        .select((s::signature, s::mobile_key_store))
        .first::<(String, String)>(conn)
        .optional())?
    .unwrap_or_default())
}

/// Stores a user's settings: language and location on the account, signature and mobile key
/// store in `user_settings`.
pub fn set_settings(
    conn: &mut DbConn,
    id: &str,
    language_id: Option<i64>,
    location_id: Option<i64>,
    signature: &str,
    mobile_key_store: &str,
    now: i64,
) -> StoreResult<()> {
    use crate::schema::user_settings as s;
    db_run!(conn => diesel::update(users::table.find(id))
        .set((users::language_id.eq(language_id), users::location_id.eq(location_id), users::updated_at.eq(now)))
        .execute(conn))?;
    let n = db_run!(conn => diesel::update(s::table.find(id))
        .set((s::signature.eq(signature), s::mobile_key_store.eq(mobile_key_store), s::updated_at.eq(now)))
        .execute(conn))?;
    if n == 0 {
        db_run!(conn => diesel::insert_into(s::table)
            .values((s::user_id.eq(id), s::signature.eq(signature), s::mobile_key_store.eq(mobile_key_store), s::updated_at.eq(now)))
            .execute(conn))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An account stored with `user_name_folded` as the SQL migration fills it (`lower()`).
    fn stored(conn: &mut DbConn, user_name: &str) -> String {
        let quoted = format!("'{user_name}'");
        let lowered = format!("lower({quoted})");
        crate::test_support::insert_user(
            conn,
            &[("user_name", &quoted), ("user_name_folded", &lowered)],
        )
    }

    fn folded(conn: &mut DbConn, id: &str) -> Option<String> {
        db_run!(conn => users::table.find(id).select(users::user_name_folded).first(conn)).unwrap()
    }

    #[test]
    fn refolding_folds_every_letter_and_leaves_a_clash_as_it_was() {
        let (_dir, mut conn) = crate::test_support::sqlite();
        let zoe = stored(&mut conn, "ZOË");
        let plain = stored(&mut conn, "Anna");
        let lower = stored(&mut conn, "ünal@example.com");
        let upper = stored(&mut conn, "Ünal@Example.com");
        // SQLite's lower() left the non-ASCII capitals.
        assert_eq!(folded(&mut conn, &zoe).as_deref(), Some("zoË"));

        assert_eq!(refold_user_names(&mut conn).unwrap(), 1);
        assert_eq!(folded(&mut conn, &zoe).as_deref(), Some("zoë"));
        assert_eq!(folded(&mut conn, &plain).as_deref(), Some("anna"));
        assert_eq!(
            folded(&mut conn, &lower).as_deref(),
            Some("ünal@example.com")
        );
        // Its fold belongs to another account already: kept as the database folded it.
        assert_eq!(
            folded(&mut conn, &upper).as_deref(),
            Some("Ünal@example.com")
        );
        assert_eq!(refold_user_names(&mut conn).unwrap(), 0);
    }
}
