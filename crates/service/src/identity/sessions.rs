//! Interactive sign-in (`POST /rest/users/actions/login`) and the web sessions it makes: an
//! HTTP-only session cookie and a CSRF token that every state-changing call must echo in
//! `X-XSRF-TOKEN`. Both tokens are stored only as hashes.

use crate::platform::auth::Caller;
use crate::platform::events;
use crate::{now, Ctx, Result};
use coffer_domain::net::safe_referral;
use coffer_domain::{Role, Scope};
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token, verify_token};
use coffer_store::models::WebSession;

/// The one call a session may make while its password change is due.
pub const FORCED_CHANGE_PATH: &str = "/rest/users/me/forcedPasswordChange";

/// The calls of the two-factor step.
pub const TFA_PATHS: [&str; 2] = ["/rest/users/me/tfa/challenge", "/rest/users/me/tfa/auth"];

/// Whether a session in `state` may make a call to `path`.
fn allowed_while(state: &str, path: &str) -> bool {
    match state {
        "active" => true,
        "password_change" => path == FORCED_CHANGE_PATH,
        "tfa" => TFA_PATHS.contains(&path),
        _ => false,
    }
}

/// How long a session lives without `PUT /rest/users/aliveToken`.
pub const SESSION_SECS: i64 = 8 * 3600;
/// The family of a session's caller, so that logout and password changes find the session.
pub const SESSION_FAMILY_PREFIX: &str = "session:";

/// A new session: the tokens for the cookies and where the browser goes next.
#[derive(Debug, Clone)]
pub struct Login {
    pub session_token: String,
    pub csrf_token: String,
    pub redirect_url: String,
}

/// Signs in with email and password (throttled like every sign-in).
pub fn login(
    ctx: &Ctx,
    username: &str,
    password: &str,
    referral: Option<&str>,
    client_ip: Option<&str>,
    remember_token: Option<&str>,
) -> Result<Login> {
    let user = match crate::identity::accounts::sign_in(ctx, username, password, client_ip)? {
        crate::identity::accounts::SignIn::Ok(u) => *u,
        crate::identity::accounts::SignIn::Wrong => {
            return Err(ApiError::new(ErrorCode::AuthUnauthorized)
                .with_message("Unauthorized (the email or password is incorrect).")
                .into())
        }
        crate::identity::accounts::SignIn::Locked(wait) => {
            return Err(ApiError::new(ErrorCode::RequestRateLimited)
                .with_retry_after(wait)
                .into());
        }
    };
    let session_token = new_token();
    let csrf_token = new_token();
    let two_factor = crate::identity::tfa::method(ctx, &user)?.is_some();
    let remembered = match remember_token {
        Some(t) if two_factor => ctx.with_conn(|c| {
            Ok(coffer_store::users::remembered(
                c,
                &hash_token(t),
                &user.id,
                now(),
            )?)
        })?,
        _ => false,
    };
    let state = if two_factor && !remembered {
        "tfa"
    } else if user.force_password_change {
        "password_change"
    } else {
        "active"
    };
    let t = now();
    ctx.write(|c| {
        coffer_store::web_sessions::insert(
            c,
            &WebSession {
                id_hash: hash_token(&session_token),
                user_id: user.id.clone(),
                csrf_hash: hash_token(&csrf_token),
                state: state.into(),
                created_at: t,
                expires_at: t + SESSION_SECS,
            },
        )?;
        events::record(
            c,
            "user.login",
            Some(&user.id),
            serde_json::json!({"method": "session", "userId": user.id}),
        )
    })?;
    let base = &ctx.config.base_url;
    let next = safe_referral(base, referral);
    let encoded: String = url::form_urlencoded::byte_serialize(next.as_bytes()).collect();
    let redirect_url = match state {
        "tfa" => format!("{base}/#/tfa?referral={encoded}"),
        "password_change" => format!("{base}/#/forcedPasswordChange?referral={encoded}"),
        _ => next,
    };
    Ok(Login {
        session_token,
        csrf_token,
        redirect_url,
    })
}

/// Methods that change state and therefore need the CSRF token.
fn changes_state(method: &str) -> bool {
    !matches!(method, "GET" | "HEAD" | "OPTIONS")
}

/// Authenticates a `/rest` call made with a session cookie. A state-changing call must carry the
/// CSRF token in the header, equal to the cookie's and to the session's.
pub fn authenticate(
    ctx: &Ctx,
    session_token: &str,
    csrf_header: Option<&str>,
    csrf_cookie: Option<&str>,
    method: &str,
    path: &str,
) -> Result<Caller> {
    let unauthorized = || Error::from(ApiError::new(ErrorCode::AuthUnauthorized));
    if session_token.is_empty() || session_token.len() > 512 {
        return Err(unauthorized());
    }
    let id_hash = hash_token(session_token);
    let (session, user) = ctx
        .with_conn(|c| Ok(coffer_store::web_sessions::with_user(c, &id_hash)?))?
        .ok_or_else(unauthorized)?;
    if session.expires_at <= now() || !user.is_usable() {
        return Err(unauthorized());
    }
    if changes_state(method) {
        let ok = match (csrf_header, csrf_cookie) {
            (Some(h), Some(c)) => h == c && verify_token(h, &session.csrf_hash),
            _ => false,
        };
        if !ok {
            return Err(ApiError::new(ErrorCode::AuthInvalidCsrf).into());
        }
    }
    // A session with a step still due (two-factor, a password change) may only take that step.
    if !allowed_while(&session.state, path) {
        if session.state == "tfa" {
            let base = &ctx.config.base_url;
            return Err(ApiError::new(ErrorCode::AccessDenied)
                .with_message("Access denied (the two-factor step is due).")
                .with_redirect_url(format!("{base}/#/tfa"))
                .into());
        }
        let base = &ctx.config.base_url;
        return Err(ApiError::new(ErrorCode::AccessDenied)
            .with_message("Access denied (a password change is due).")
            .with_redirect_url(format!("{base}/#/forcedPasswordChange"))
            .into());
    }
    let client_id = ctx
        .with_conn(|c| Ok(coffer_store::web_sessions::web_client_id(c)?))?
        .ok_or_else(|| Error::internal("no first-party web client"))?;
    let role = user.role.parse::<Role>().map_err(Error::internal)?;
    Ok(Caller {
        role,
        client_redirect_uri: format!("{}/", ctx.config.base_url),
        client_id,
        scope: Scope::everything(),
        family_id: format!("{SESSION_FAMILY_PREFIX}{id_hash}"),
        device_id: None,
        token_hash: id_hash,
        user,
    })
}

/// `POST /rest/users/me/forcedPasswordChange`: sets the new password (previous one and policy as
/// for any change), clears the flag, lets the session go on, and ends the user's other sessions
/// and tokens. Returns where to go next.
pub fn forced_password_change(
    ctx: &Ctx,
    caller: &Caller,
    password: &str,
    previous: &str,
    referral: Option<&str>,
    client_ip: Option<&str>,
) -> Result<String> {
    let hash = crate::identity::accounts::check_new_password(
        ctx,
        &caller.user,
        previous,
        password,
        client_ip,
    )?;
    ctx.write(|c| {
        coffer_store::users::set_password(c, &caller.user.id, &hash, now())?;
        coffer_store::users::clear_force_password_change(c, &caller.user.id)?;
        let keep = caller.family_id.strip_prefix(SESSION_FAMILY_PREFIX);
        if let Some(session) = keep {
            coffer_store::web_sessions::activate(c, session)?;
        }
        coffer_store::web_sessions::delete_for_user(c, &caller.user.id, keep)?;
        coffer_store::tokens::revoke_user_except_family(c, &caller.user.id, &caller.family_id)?;
        events::record(
            c,
            "user.password.change",
            Some(&caller.user.id),
            serde_json::json!({"id": caller.user.id, "userId": caller.user.id, "forced": true}),
        )
    })?;
    Ok(safe_referral(&ctx.config.base_url, referral))
}

/// `PUT /rest/users/aliveToken`: the session goes on for another full period.
pub fn keep_alive(ctx: &Ctx, caller: &Caller) -> Result<()> {
    let Some(id_hash) = caller.family_id.strip_prefix(SESSION_FAMILY_PREFIX) else {
        // A bearer token has its own lifetime; nothing to extend.
        return Ok(());
    };
    ctx.write(|c| {
        Ok(coffer_store::web_sessions::extend(c, id_hash, now() + SESSION_SECS).map(|_| ())?)
    })
}
