//! User accounts: creation (operator CLI, first start), password hashing, credential checks and
//! the current-user record.

use crate::identity::settings;
use crate::platform::events;
use crate::platform::views::CurrentUser;
use crate::{now, Ctx, Result};
use argon2::password_hash::{
    rand_core::OsRng, PasswordHash, PasswordHasher, PasswordVerifier, SaltString,
};
use argon2::Argon2;
use coffer_domain::{Email, Role};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::User;
use coffer_store::DbConn;
use rand::Rng;

/// At most this many password hashes are computed at once (each takes 19 MiB and a core for
/// tens of milliseconds), so a burst of sign-ins cannot exhaust memory or starve other calls.
fn hashing_slots() -> &'static (std::sync::Mutex<usize>, std::sync::Condvar) {
    static SLOTS: std::sync::OnceLock<(std::sync::Mutex<usize>, std::sync::Condvar)> =
        std::sync::OnceLock::new();
    SLOTS.get_or_init(|| {
        let n = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(2);
        (std::sync::Mutex::new(n), std::sync::Condvar::new())
    })
}

/// Runs `f` in one of the hashing slots.
fn with_hashing_slot<T>(f: impl FnOnce() -> T) -> T {
    let (free, cv) = hashing_slots();
    {
        let mut n = free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while *n == 0 {
            n = cv
                .wait(n)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        *n -= 1;
    }
    let out = f();
    *free
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) += 1;
    cv.notify_one();
    out
}

/// Hashes a password with argon2id (the crate's default parameters, OWASP's minimum).
pub fn hash_password(password: &str) -> Result<String> {
    with_hashing_slot(|| hash_password_now(password))
}

fn hash_password_now(password: &str) -> Result<String> {
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|h| h.to_string())
        .map_err(Error::internal)
}

/// A stored hash to verify against when the account does not exist, so that a wrong email
/// costs as much time as a wrong password.
fn dummy_hash() -> &'static str {
    static DUMMY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DUMMY.get_or_init(|| hash_password("coffer-dummy-password").unwrap_or_default())
}

pub fn verify_password(password: &str, hash: Option<&str>) -> bool {
    let Some(hash) = hash else {
        let _ = verify_password(password, Some(dummy_hash()));
        return false;
    };
    match PasswordHash::new(hash) {
        Ok(parsed) => with_hashing_slot(|| {
            Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        }),
        Err(_) => false,
    }
}

/// Checks an email and password; `None` for an unknown, inactive or deleted account, a shared
/// mailbox or a wrong password (one answer for all, so accounts cannot be probed).
pub fn check_credentials(ctx: &Ctx, email: &str, password: &str) -> Result<Option<User>> {
    let email = Email::parse(email)
        .map(Email::into_string)
        .unwrap_or_else(|_| email.to_string());
    let user = ctx.with_conn(|c| Ok(coffer_store::users::by_email(c, &email)?))?;
    let ok = verify_password(
        password,
        user.as_ref().and_then(|u| u.password_hash.as_deref()),
    );
    let Some(user) = user.filter(|u| ok && u.is_usable()) else {
        return Ok(None);
    };
    // A shared mailbox never signs in, even if a password was set on it later.
    let mailbox = ctx.with_conn(|c| {
        Ok(coffer_store::shared_mailboxes::is_shared_mailbox(
            c, &user.id,
        )?)
    })?;
    Ok((!mailbox).then_some(user))
}

/// The outcome of a sign-in attempt.
pub enum SignIn {
    Ok(Box<User>),
    /// Wrong credentials (or an account that cannot sign in); the answer was slowed as needed.
    Wrong,
    /// Too many failures for the account or the address: refused for this many seconds.
    Locked(i64),
}

/// Checks credentials with brute-force throttling (see [`crate::platform::throttle`]).
pub fn sign_in(ctx: &Ctx, email: &str, password: &str, client_ip: Option<&str>) -> Result<SignIn> {
    let keys = crate::platform::throttle::keys(Some(email), client_ip);
    if let Some(wait) = crate::platform::throttle::locked(ctx, &keys)? {
        return Ok(SignIn::Locked(wait));
    }
    match check_credentials(ctx, email, password)? {
        Some(user) => {
            crate::platform::throttle::succeeded(ctx, email)?;
            Ok(SignIn::Ok(Box::new(user)))
        }
        None => {
            // A failed sign-in is of interest to the activity log: under the account's
            // activities when the address names one.
            let address = Email::parse(email)
                .map(Email::into_string)
                .unwrap_or_else(|_| email.to_string());
            let known = ctx.with_conn(|c| Ok(coffer_store::users::by_email(c, &address)?))?;
            let data = match known {
                Some(u) => serde_json::json!({"userId": u.id, "method": "password"}),
                None => serde_json::json!({"email": address, "method": "password"}),
            };
            crate::audit::record::refused(ctx, "user.login", None, &data)?;
            std::thread::sleep(crate::platform::throttle::failed(ctx, &keys)?);
            Ok(SignIn::Wrong)
        }
    }
}

/// Re-authentication of a signed-in user before a sensitive change: the current password,
/// given in the body field `field`, must match. It counts against the same per-account and
/// per-address limits as a sign-in (see [`crate::platform::throttle`]), so a stolen token or session is no
/// way to test passwords: a wrong one is answered slowly as the failures add up, and a locked
/// account or address is refused (429 with `Retry-After`) even with the right password.
pub fn reauthenticate(
    ctx: &Ctx,
    user: &User,
    password: &str,
    field: &'static str,
    client_ip: Option<&str>,
) -> Result<()> {
    let keys = crate::platform::throttle::keys(Some(&user.email), client_ip);
    if let Some(wait) = crate::platform::throttle::locked(ctx, &keys)? {
        return Err(ApiError::new(ErrorCode::RequestRateLimited)
            .with_message("Too many requests (too many wrong passwords; try again later).")
            .with_retry_after(wait)
            .into());
    }
    if verify_password(password, user.password_hash.as_deref()) {
        crate::platform::throttle::succeeded(ctx, &user.email)?;
        return Ok(());
    }
    std::thread::sleep(crate::platform::throttle::failed(ctx, &keys)?);
    Err(ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(format!(
            "The parameter is invalid ({field} does not match)."
        ))
        .into())
}

/// Checks a password change: the previous password must match ([`reauthenticate`], counted
/// like a sign-in) and the new one pass the policy. Returns the new password's hash.
pub fn check_new_password(
    ctx: &Ctx,
    user: &User,
    previous: &str,
    new: &str,
    client_ip: Option<&str>,
) -> Result<String> {
    reauthenticate(ctx, user, previous, "previousPassword", client_ip)?;
    check_policy(ctx, new)?;
    hash_password(new)
}

/// Checks a new password against the password policy: 422
/// `ERR_INPUT_PASSWORD_COMPLEXITY_ERROR` naming every rule it breaks.
pub fn check_policy(ctx: &Ctx, password: &str) -> Result<()> {
    settings::password_policy(ctx)?
        .check(password)
        .map_err(|broken| {
            ApiError::field(ErrorCode::InputPasswordComplexityError, "password")
                .with_message(format!(
                    "The password does not meet the password policy: {}.",
                    broken.join(", ")
                ))
                .into()
        })
}

/// A generated password that satisfies any reasonable policy: 20 characters with every class.
pub fn generate_password() -> String {
    const LOWER: &[u8] = b"abcdefghijkmnopqrstuvwxyz";
    const UPPER: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ";
    const DIGIT: &[u8] = b"23456789";
    const SPECIAL: &[u8] = b"-_.!#%+";
    let mut rng = rand::rngs::OsRng;
    let mut pick = |set: &[u8]| set[rng.gen_range(0..set.len())] as char;
    let mut s: Vec<char> = Vec::with_capacity(20);
    for set in [LOWER, UPPER, DIGIT, SPECIAL] {
        s.push(pick(set));
        s.push(pick(set));
    }
    let all: Vec<u8> = [LOWER, UPPER, DIGIT].concat();
    while s.len() < 20 {
        s.push(pick(&all));
    }
    use rand::seq::SliceRandom;
    s.shuffle(&mut rand::rngs::OsRng);
    s.into_iter().collect()
}

/// What the operator (or a later provisioning call) gives for a new account.
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: String,
    pub name: String,
    pub password: Option<String>,
    pub role: Role,
    pub profile: Option<String>,
}

/// Creates an account; returns it with its password (generated when none was given).
pub fn create_user(ctx: &Ctx, input: NewUser, actor: Option<&str>) -> Result<(User, String)> {
    let email = Email::parse(&input.email)
        .map_err(|m| ApiError::field(ErrorCode::InputInvalidFormat, "email").with_message(m))?;
    let name = input.name.trim().to_string();
    if name.is_empty() || name.len() > 255 {
        return Err(ApiError::field(ErrorCode::InputRequired, "name").into());
    }
    let password = input.password.unwrap_or_else(generate_password);
    check_policy(ctx, &password)?;
    let hash = hash_password(&password)?;
    let user = ctx.write(|c| {
        insert_user(
            c,
            &email,
            &name,
            Some(hash),
            input.role,
            input.profile.as_deref(),
            actor,
        )
    })?;
    Ok((user, password))
}

/// Inserts an account inside the caller's transaction.
pub fn insert_user(
    c: &mut DbConn,
    email: &Email,
    name: &str,
    password_hash: Option<String>,
    role: Role,
    profile: Option<&str>,
    actor: Option<&str>,
) -> Result<User> {
    crate::identity::external_dls::refuse_as_account(c, email.as_str(), "email")?;
    if coffer_store::users::by_email(c, email.as_str())?.is_some() {
        return Err(ApiError::field(ErrorCode::EntityExists, "email").into());
    }
    let profile_id = match profile {
        None => 1,
        Some(p) => match p.parse::<i64>() {
            Ok(id) => coffer_store::users::profile(c, id)?.map(|p| p.id),
            Err(_) => coffer_store::users::profile_by_name(c, p)?.map(|p| p.id),
        }
        .ok_or_else(|| ApiError::field(ErrorCode::InvalidParameter, "profile"))?,
    };
    let user = new_user_row(email.as_str(), name, password_hash, role, profile_id, now());
    coffer_store::users::insert(c, &user).map_err(|e| {
        if e.is_unique_violation() {
            Error::from(ApiError::field(ErrorCode::EntityExists, "email"))
        } else {
            e.into()
        }
    })?;
    events::record(
        c,
        "user.user.create",
        actor,
        serde_json::json!({"id": user.id, "email": user.email, "role": user.role}),
    )?;
    Ok(user)
}

/// A new account's row: active, with fresh folder ids, its email as `userName`, and nothing
/// else set.
pub fn new_user_row(
    email: &str,
    name: &str,
    password_hash: Option<String>,
    role: Role,
    profile_id: i64,
    t: i64,
) -> User {
    User {
        id: uuid::Uuid::new_v4().to_string(),
        email: email.to_string(),
        name: name.to_string(),
        password_hash,
        role: role.as_str().to_string(),
        profile_id,
        active: true,
        deleted: false,
        internal: true,
        force_password_change: false,
        mobile_number: None,
        mobile_verified: false,
        language_id: None,
        location_id: None,
        basedir_id: uuid::Uuid::new_v4().to_string(),
        mydir_id: uuid::Uuid::new_v4().to_string(),
        syncdir_id: uuid::Uuid::new_v4().to_string(),
        version: 1,
        created_at: t,
        updated_at: t,
        totp_secret: None,
        totp_enabled: false,
        totp_last_step: None,
        user_name: Some(email.to_string()),
        external_id: None,
        preferred_language: None,
        email_primary: None,
        mobile_primary: None,
        former_email: None,
    }
}

/// The current-user record.
pub fn current_user(ctx: &Ctx, user: &User) -> Result<CurrentUser> {
    let role = user.role.parse::<Role>().map_err(Error::internal)?;
    Ok(CurrentUser::from_user(user, role, &ctx.config.service_name))
}

/// The credentials made on the first start with an empty database.
#[derive(Debug, Clone)]
pub struct Bootstrap {
    pub admin_email: String,
    pub admin_password: String,
    pub client_id: String,
    pub client_secret: String,
    pub redirect_uri: String,
}

/// Makes the records the system itself relies on when they are missing, whichever command
/// brings the database up first (`serve`, `migrate`, `user create`, …): the first-party web
/// client, on whose behalf browser sessions call the API. Idempotent, and made once when
/// several processes start together.
pub fn ensure_system_records(ctx: &Ctx) -> Result<()> {
    if ctx
        .with_conn(|c| Ok(coffer_store::web_sessions::web_client_id(c)?))?
        .is_some()
    {
        return Ok(());
    }
    // No one is told this secret: the first start of `serve` on a database without accounts
    // replaces it with one it prints (`bootstrap`); an operator who provisions first registers
    // their own clients.
    let secret = coffer_oauth::secrets::new_token();
    let redirect_uri = format!("{}/oauth_callback.php", ctx.config.base_url);
    ctx.write(|c| {
        coffer_store::migrate::lock_setup(c)?;
        if coffer_store::web_sessions::web_client_id(c)?.is_none() {
            crate::identity::clients::insert_builtin_web_client(c, &secret, &redirect_uri, None)?;
        }
        Ok(())
    })
}

/// On the first start with an empty database, creates a system administrator and gives the
/// first-party web client a new secret, both printed once. Runs once per database, whatever the
/// number of nodes starting together; makes nothing when accounts were provisioned first.
pub fn bootstrap(ctx: &Ctx) -> Result<Option<Bootstrap>> {
    let admin_password = generate_password();
    let hash = hash_password(&admin_password)?;
    let secret = coffer_oauth::secrets::new_token();
    let redirect_uri = format!("{}/oauth_callback.php", ctx.config.base_url);
    ctx.write(|c| {
        if !coffer_store::settings::insert_if_absent(c, "bootstrapped", "true", now())? {
            return Ok(None);
        }
        if coffer_store::users::count(c)? > 0 {
            // The operator created accounts before the first start; make no administrator.
            return Ok(None);
        }
        let email = Email::parse("admin@coffer.local").map_err(Error::internal)?;
        let admin = insert_user(
            c,
            &email,
            "Administrator",
            Some(hash),
            Role::SystemAdmin,
            None,
            None,
        )?;
        coffer_store::migrate::lock_setup(c)?;
        let existing = match coffer_store::web_sessions::web_client_id(c)? {
            Some(id) => coffer_store::clients::by_id(c, &id)?,
            None => None,
        };
        let client = match existing {
            Some(mut client) => {
                client.secret_hash = coffer_oauth::secrets::hash_token(&secret);
                client.updated_at = now();
                coffer_store::clients::update(c, &client)?;
                client
            }
            None => crate::identity::clients::insert_builtin_web_client(
                c,
                &secret,
                &redirect_uri,
                Some(&admin.id),
            )?,
        };
        Ok(Some(Bootstrap {
            admin_email: admin.email,
            admin_password,
            client_id: client.id,
            client_secret: secret,
            redirect_uri: client.redirect_uri,
        }))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_passwords_pass_the_default_policy() {
        let p = coffer_domain::password::PasswordPolicy::default();
        for _ in 0..50 {
            let pw = generate_password();
            assert_eq!(pw.len(), 20);
            assert!(p.check(&pw).is_ok(), "{pw}");
        }
    }

    #[test]
    fn password_hashes_verify() {
        let h = hash_password("Secret-123").unwrap();
        assert!(h.starts_with("$argon2id$"));
        assert!(verify_password("Secret-123", Some(&h)));
        assert!(!verify_password("secret-123", Some(&h)));
        assert!(!verify_password("x", None));
        assert!(!verify_password("x", Some("not a hash")));
    }

    #[test]
    fn create_user_and_check_credentials() {
        let (_d, ctx) = crate::test_support::ctx();
        let (u, pw) = create_user(
            &ctx,
            NewUser {
                email: "Ann@Example.com".into(),
                name: "Ann".into(),
                password: None,
                role: Role::User,
                profile: None,
            },
            None,
        )
        .unwrap();
        assert_eq!(u.email, "ann@example.com");
        assert!(check_credentials(&ctx, "ANN@example.com", &pw)
            .unwrap()
            .is_some());
        assert!(check_credentials(&ctx, "ann@example.com", "wrong")
            .unwrap()
            .is_none());
        let dup = create_user(
            &ctx,
            NewUser {
                email: "ann@example.com".into(),
                name: "Ann".into(),
                password: None,
                role: Role::User,
                profile: None,
            },
            None,
        )
        .unwrap_err();
        assert_eq!(dup.to_api().code, ErrorCode::EntityExists);
        let weak = create_user(
            &ctx,
            NewUser {
                email: "bob@example.com".into(),
                name: "Bob".into(),
                password: Some("weak".into()),
                role: Role::User,
                profile: None,
            },
            None,
        )
        .unwrap_err();
        assert_eq!(weak.to_api().code, ErrorCode::InputPasswordComplexityError);
    }

    #[test]
    fn bootstrap_runs_once() {
        let (_d, ctx) = crate::test_support::ctx();
        let b = bootstrap(&ctx).unwrap().unwrap();
        assert!(check_credentials(&ctx, &b.admin_email, &b.admin_password)
            .unwrap()
            .is_some());
        assert!(bootstrap(&ctx).unwrap().is_none());
    }
}
