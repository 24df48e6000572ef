//! The OAuth 2.0 use cases: the authorization request, sign-in and consent, the token grants,
//! revocation (RFC 7009) and introspection (RFC 7662). The decisions are the pure functions of
//! `coffer_oauth`; this module loads what they need, and stores what they decide.

use crate::identity::devices;
use crate::platform::events;
use crate::{now, Ctx, Result};
use coffer_domain::{Role, Scope};
use coffer_errors::{Error, OAuthError};
use coffer_oauth::authorize::{AuthorizeParams, Rejection, ValidAuthorize};
use coffer_oauth::code::{CodeRecord, CodeRejection};
use coffer_oauth::refresh::{RefreshRecord, RefreshRejection};
use coffer_oauth::secrets::{hash_token, new_token};
use coffer_oauth::token::{Grant, TokenResponse};
use coffer_oauth::ClientInfo;
use coffer_store::models::{
    AccessTokenRow, AuthorizationCode, AuthorizeRequest, Client, RefreshTokenRow, TokenFamily, User,
};
use coffer_store::DbConn;
use std::sync::Arc;

/// Parsed JWT keys by client id, so that the JWT grant verifies an assertion's signature on the
/// calling thread and then needs a single queued write (see [`token`]). An entry is only a
/// guess: the write re-reads the client and goes on only if the key it verified with is still
/// the registered PEM, so a changed or removed key is never trusted, on any node.
#[derive(Default)]
pub struct JwtKeys(std::sync::Mutex<std::collections::HashMap<String, Arc<CachedJwtKey>>>);

/// A registered PEM and its parsed key.
pub struct CachedJwtKey {
    pem: String,
    key: coffer_oauth::jwt::JwtKey,
}

/// Entries kept before the cache starts over (a deployment has few JWT clients).
const JWT_KEYS_MAX: usize = 1024;

impl JwtKeys {
    fn get(&self, client_id: &str) -> Option<Arc<CachedJwtKey>> {
        self.0.lock().ok()?.get(client_id).cloned()
    }

    fn remember(&self, client: &ClientInfo) {
        let Some(pem) = client.jwt_public_key.as_deref() else {
            return;
        };
        if self.get(&client.id).is_some_and(|k| k.pem == pem) {
            return;
        }
        let Ok(key) = coffer_oauth::jwt::JwtKey::parse(pem) else {
            return;
        };
        if let Ok(mut map) = self.0.lock() {
            if map.len() >= JWT_KEYS_MAX {
                map.clear();
            }
            let pem = pem.to_string();
            map.insert(client.id.clone(), Arc::new(CachedJwtKey { pem, key }));
        }
    }
}

/// Consent tickets live as long as an authorization code.
const TICKET_LIFETIME_SECS: i64 = 600;

/// The pure flows' view of a stored client.
pub fn client_info(c: &Client) -> ClientInfo {
    ClientInfo {
        id: c.id.clone(),
        redirect_uri: c.redirect_uri.clone(),
        scope: Scope::parse(&c.scope).unwrap_or_default(),
        flag: c.flag,
        flow: c.flow,
        signature_key: c.signature_key.clone(),
        jwt_public_key: c.jwt_public_key.clone(),
        access_token_lifetime_hours: c.access_token_lifetime,
        refresh_token_lifetime_hours: c.refresh_token_lifetime,
    }
}

fn load_client(ctx: &Ctx, id: &str) -> Result<Option<Client>> {
    ctx.with_conn(|c| client_by_id(c, id))
}

fn client_by_id(c: &mut DbConn, id: &str) -> Result<Option<Client>> {
    if id.is_empty() || id.len() > 128 {
        return Ok(None);
    }
    Ok(coffer_store::clients::by_id(c, id)?)
}

/// Checks an authorization request. `Err(Rejection)` is what the browser gets instead.
pub fn check_authorize(
    ctx: &Ctx,
    params: &AuthorizeParams,
) -> Result<std::result::Result<(ValidAuthorize, String), Rejection>> {
    let client = match params.client_id.as_deref() {
        Some(id) => load_client(ctx, id)?,
        None => None,
    };
    let info = client.as_ref().map(client_info);
    Ok(
        coffer_oauth::authorize::check(params, info.as_ref()).map(|v| {
            let name = client.map(|c| c.name).unwrap_or_default();
            (v, name)
        }),
    )
}

/// The two-factor page of the authorization flow.
pub struct SecondFactorPage {
    /// The one-time ticket of the page's forms.
    pub ticket: String,
    /// What to enter.
    pub prompt: String,
    /// A refused code.
    pub error: Option<String>,
    /// A code that could not be sent now.
    pub notice: Option<String>,
    /// The method sends codes: the page offers to send a new one.
    pub resend: bool,
}

/// What follows a successful sign-in on the authorization page.
pub enum AfterSignIn {
    /// Show the two-factor page.
    SecondFactor(SecondFactorPage),
    /// Show the password-change page (a change is due) for this one-time ticket.
    PasswordChange { ticket: String },
    /// Redirect the browser here (a code, or an error).
    Redirect(String),
    /// Show the consent page for this one-time ticket.
    Consent { ticket: String },
}

/// Issues an authorization code for a signed-in user and returns the redirect carrying it.
fn issue_code(c: &mut DbConn, v: &ValidAuthorize, user_id: &str) -> Result<String> {
    let code = new_token();
    let t = now();
    coffer_store::grants::insert_code(
        c,
        &AuthorizationCode {
            code_hash: hash_token(&code),
            client_id: v.client_id.clone(),
            user_id: user_id.to_string(),
            redirect_uri: v.redirect_uri.clone(),
            scope: v.scope.to_string(),
            code_challenge: v.code_challenge.clone(),
            family_id: uuid::Uuid::now_v7().to_string(),
            expires_at: t + coffer_oauth::code::CODE_LIFETIME_SECS,
            used_at: None,
            created_at: t,
        },
    )?;
    Ok(coffer_oauth::authorize::success_location(
        &v.redirect_uri,
        &code,
        v.state.as_deref(),
    ))
}

/// The user signed in on the authorization page: issue a code at once for clients that skip
/// consent, else hand out a consent ticket.
pub fn after_sign_in(ctx: &Ctx, v: &ValidAuthorize, user: &User) -> Result<AfterSignIn> {
    if let Some(m) = crate::identity::tfa::method(ctx, user)? {
        // An SMS user gets a code as the page is shown.
        let notice = match m {
            crate::identity::tfa::Method::Sms => send_sign_in_code(ctx, user)?,
            crate::identity::tfa::Method::Totp => None,
        };
        return Ok(AfterSignIn::SecondFactor(second_factor_page(
            ctx, v, user, m, None, notice,
        )?));
    }
    continue_sign_in(ctx, v, user)
}

/// A new two-factor ticket and its page.
fn second_factor_page(
    ctx: &Ctx,
    v: &ValidAuthorize,
    user: &User,
    m: crate::identity::tfa::Method,
    error: Option<String>,
    notice: Option<String>,
) -> Result<SecondFactorPage> {
    let ticket = new_token();
    ctx.write(|c| {
        Ok(coffer_store::grants::insert_authorize_request(
            c,
            &ticket_row(&ticket, v, &user.id, "tfa"),
        )?)
    })?;
    let (prompt, resend) = match m {
        crate::identity::tfa::Method::Totp => {
            (crate::identity::tfa::totp::TOTP_PROMPT.to_string(), false)
        }
        crate::identity::tfa::Method::Sms => (
            crate::identity::tfa::sms::prompt(user.mobile_number.as_deref().unwrap_or_default()),
            true,
        ),
    };
    Ok(SecondFactorPage {
        ticket,
        prompt,
        error,
        notice,
        resend,
    })
}

/// Sends an SMS user a sign-in code; what to tell them when none could be sent now.
fn send_sign_in_code(ctx: &Ctx, user: &User) -> Result<Option<String>> {
    let number = user.mobile_number.as_deref().unwrap_or_default();
    match crate::identity::tfa::sms::send_code(
        ctx,
        user,
        number,
        crate::identity::tfa::sms::Purpose::SignIn,
    ) {
        Ok(()) => Ok(None),
        Err(Error::Api(e)) if e.code == coffer_errors::ErrorCode::RequestRateLimited => {
            let wait = e
                .retry_after
                .unwrap_or(crate::identity::tfa::sms::RESEND_SECS);
            Ok(Some(if wait <= crate::identity::tfa::sms::RESEND_SECS {
                format!("A code was requested a moment ago: enter it when it arrives, or ask for a new one in {wait} seconds.")
            } else {
                format!(
                    "Too many codes were requested: enter the last one, or ask for a new one in {} minutes.",
                    (wait + 59) / 60
                )
            }))
        }
        Err(Error::Api(_)) => Ok(Some(
            "The code could not be sent. Try again later.".to_string(),
        )),
        Err(e) => Err(e),
    }
}

fn ticket_row(ticket: &str, v: &ValidAuthorize, user_id: &str, kind: &str) -> AuthorizeRequest {
    AuthorizeRequest {
        ticket_hash: hash_token(ticket),
        client_id: v.client_id.clone(),
        user_id: user_id.to_string(),
        redirect_uri: v.redirect_uri.clone(),
        scope: v.scope.to_string(),
        state: v.state.clone(),
        code_challenge: v.code_challenge.clone(),
        mobile: v.mobile,
        expires_at: now() + TICKET_LIFETIME_SECS,
        kind: kind.to_string(),
    }
}

fn valid_from_ticket(r: &AuthorizeRequest) -> Result<ValidAuthorize> {
    Ok(ValidAuthorize {
        client_id: r.client_id.clone(),
        redirect_uri: r.redirect_uri.clone(),
        scope: Scope::parse(&r.scope).map_err(Error::internal)?,
        state: r.state.clone(),
        code_challenge: r.code_challenge.clone(),
        needs_consent: false,
        mobile: r.mobile,
    })
}

/// The outcome of the two-factor page.
pub enum SecondFactor {
    /// The ticket is unknown, used or expired.
    Expired,
    /// A wrong code, or a new code sent: ask again with this page (a new ticket).
    Again {
        page: SecondFactorPage,
        mobile: bool,
    },
    /// Go on: a redirect, or the consent page for this client and scope.
    Done {
        next: AfterSignIn,
        client_name: String,
        scope: String,
        mobile: bool,
    },
}

/// The user answered the two-factor page of the authorization flow: a code, or (`resend`) the
/// request for a new SMS code.
pub fn second_factor(
    ctx: &Ctx,
    ticket: &str,
    otp: &str,
    resend: bool,
    client_ip: Option<&str>,
) -> Result<SecondFactor> {
    let Some((r, user)) = take_step(ctx, ticket, "tfa")? else {
        return Ok(SecondFactor::Expired);
    };
    let keys = crate::platform::throttle::second_factor_keys(&user.email, &user.id, client_ip);
    if crate::platform::throttle::locked(ctx, &keys)?.is_some() {
        return Ok(SecondFactor::Expired);
    }
    // Two-factor sign-in was turned off meanwhile: start again.
    let Some(m) = crate::identity::tfa::method(ctx, &user)? else {
        return Ok(SecondFactor::Expired);
    };
    let mut v = valid_from_ticket(&r)?;
    if resend {
        let notice = match m {
            crate::identity::tfa::Method::Sms => send_sign_in_code(ctx, &user)?,
            crate::identity::tfa::Method::Totp => None,
        };
        return Ok(SecondFactor::Again {
            page: second_factor_page(ctx, &v, &user, m, None, notice)?,
            mobile: r.mobile,
        });
    }
    let refused = match crate::identity::tfa::sign_in::check_second_step(ctx, &user, m, otp) {
        Ok(refused) => refused,
        Err(Error::Api(_)) => Some("The code is not valid.".to_string()),
        Err(e) => return Err(e),
    };
    if let Some(error) = refused {
        std::thread::sleep(crate::platform::throttle::failed(ctx, &keys)?);
        return Ok(SecondFactor::Again {
            page: second_factor_page(ctx, &v, &user, m, Some(error), None)?,
            mobile: r.mobile,
        });
    }
    crate::platform::throttle::second_factor_succeeded(ctx, &user.id)?;
    let (next, client_name) = step_done(ctx, &mut v, &r, &user)?;
    Ok(SecondFactor::Done {
        next,
        client_name,
        scope: r.scope,
        mobile: r.mobile,
    })
}

/// The outcome of the password-change page.
pub enum PasswordStep {
    Expired,
    /// Refused (the previous password or the policy): ask again with this new ticket. Too many
    /// wrong passwords: refused for `retry_after` seconds.
    Again {
        ticket: String,
        mobile: bool,
        error: String,
        retry_after: Option<i64>,
    },
    /// Go on: a redirect, or the consent page for this client and scope.
    Done {
        next: AfterSignIn,
        client_name: String,
        scope: String,
        mobile: bool,
    },
}

/// The user answered the password-change page of the authorization flow: the change is made as
/// for `POST /rest/users/me/forcedPasswordChange` (every other session and token ends), then the
/// flow goes on.
pub fn password_step(
    ctx: &Ctx,
    ticket: &str,
    previous: &str,
    new: &str,
    client_ip: Option<&str>,
) -> Result<PasswordStep> {
    let Some((r, user)) = take_step(ctx, ticket, "password")? else {
        return Ok(PasswordStep::Expired);
    };
    let mut v = valid_from_ticket(&r)?;
    let hash =
        match crate::identity::accounts::check_new_password(ctx, &user, previous, new, client_ip) {
            Ok(h) => h,
            Err(Error::Api(e)) => {
                let again = new_token();
                ctx.write(|c| {
                    Ok(coffer_store::grants::insert_authorize_request(
                        c,
                        &ticket_row(&again, &v, &user.id, "password"),
                    )?)
                })?;
                return Ok(PasswordStep::Again {
                    ticket: again,
                    mobile: r.mobile,
                    retry_after: e.retry_after,
                    error: e.message.into_owned(),
                });
            }
            Err(e) => return Err(e),
        };
    let user = ctx.write(|c| {
        let t = now();
        coffer_store::users::set_password(c, &user.id, &hash, t)?;
        coffer_store::users::clear_force_password_change(c, &user.id)?;
        coffer_store::tokens::revoke_user(c, &user.id)?;
        coffer_store::web_sessions::delete_for_user(c, &user.id, None)?;
        events::record(
            c,
            "user.password.change",
            Some(&user.id),
            serde_json::json!({"id": user.id, "userId": user.id, "forced": true}),
        )?;
        coffer_store::users::by_id(c, &user.id)?.ok_or_else(|| Error::internal("the user vanished"))
    })?;
    let (next, client_name) = step_done(ctx, &mut v, &r, &user)?;
    Ok(PasswordStep::Done {
        next,
        client_name,
        scope: r.scope,
        mobile: r.mobile,
    })
}

/// Takes the ticket of a sign-in step of kind `kind` (single use): the request and its user,
/// or `None` when the ticket is unknown, of another kind, expired, or the user may no longer
/// sign in.
fn take_step(ctx: &Ctx, ticket: &str, kind: &str) -> Result<Option<(AuthorizeRequest, User)>> {
    let taken = ctx.write(|c| {
        Ok(coffer_store::grants::take_authorize_request(
            c,
            &hash_token(ticket),
        )?)
    })?;
    let Some(r) = taken.filter(|r| r.kind == kind && r.expires_at > now()) else {
        return Ok(None);
    };
    let user = ctx
        .with_conn(|c| Ok(coffer_store::users::by_id(c, &r.user_id)?))?
        .filter(User::is_usable);
    Ok(user.map(|u| (r, u)))
}

/// A sign-in step is passed: the client's consent setting decides what comes next, as after a
/// sign-in without further steps. Answers the next step and the client's name.
fn step_done(
    ctx: &Ctx,
    v: &mut ValidAuthorize,
    r: &AuthorizeRequest,
    user: &User,
) -> Result<(AfterSignIn, String)> {
    let client = ctx.with_conn(|c| Ok(coffer_store::clients::by_id(c, &r.client_id)?))?;
    v.needs_consent = client
        .as_ref()
        .is_some_and(|c| c.flag & coffer_domain::client::flag::NO_CONSENT == 0);
    let next = continue_sign_in(ctx, v, user)?;
    Ok((next, client.map(|c| c.name).unwrap_or_default()))
}

/// After the credentials (and the second factor): a code at once for clients that skip consent,
/// else a consent ticket.
fn continue_sign_in(ctx: &Ctx, v: &ValidAuthorize, user: &User) -> Result<AfterSignIn> {
    if user.force_password_change {
        let ticket = new_token();
        ctx.write(|c| {
            Ok(coffer_store::grants::insert_authorize_request(
                c,
                &ticket_row(&ticket, v, &user.id, "password"),
            )?)
        })?;
        return Ok(AfterSignIn::PasswordChange { ticket });
    }
    ctx.write(|c| {
        events::record(
            c,
            "user.login",
            Some(&user.id),
            serde_json::json!({"clientId": v.client_id, "method": "authorize"}),
        )?;
        if !v.needs_consent {
            return Ok(AfterSignIn::Redirect(issue_code(c, v, &user.id)?));
        }
        let ticket = new_token();
        coffer_store::grants::insert_authorize_request(
            c,
            &ticket_row(&ticket, v, &user.id, "consent"),
        )?;
        Ok(AfterSignIn::Consent { ticket })
    })
}

/// The user answered the consent page. `None` when the ticket is unknown, used or expired.
pub fn consent(ctx: &Ctx, ticket: &str, allow: bool) -> Result<Option<String>> {
    ctx.write(|c| {
        let Some(r) = coffer_store::grants::take_authorize_request(c, &hash_token(ticket))? else {
            return Ok(None);
        };
        // A two-factor ticket never stands for consent.
        if r.expires_at <= now() || r.kind != "consent" {
            return Ok(None);
        }
        let v = ValidAuthorize {
            client_id: r.client_id.clone(),
            redirect_uri: r.redirect_uri.clone(),
            scope: Scope::parse(&r.scope).map_err(Error::internal)?,
            state: r.state.clone(),
            code_challenge: r.code_challenge.clone(),
            needs_consent: false,
            mobile: r.mobile,
        };
        if allow {
            events::record(
                c,
                "oauth.consent.grant",
                Some(&r.user_id),
                serde_json::json!({"clientId": r.client_id}),
            )?;
            Ok(Some(issue_code(c, &v, &r.user_id)?))
        } else {
            events::record(
                c,
                "oauth.consent.deny",
                Some(&r.user_id),
                serde_json::json!({"clientId": r.client_id}),
            )?;
            let err = OAuthError::new(
                coffer_errors::OAuthErrorCode::AccessDenied,
                "The user denied the request.",
            );
            Ok(Some(coffer_oauth::authorize::error_location(
                &r.redirect_uri,
                &err,
                r.state.as_deref(),
            )))
        }
    })
}

/// The parameters of a token request, as posted.
#[derive(Debug, Default, Clone)]
pub struct TokenInput {
    pub grant_type: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub authorization: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub scope: Option<String>,
    pub assertion: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub install_tag_id: Option<String>,
    pub install_name: Option<String>,
    /// The client's address, for throttling failed sign-ins.
    pub client_ip: Option<String>,
}

impl TokenInput {
    /// Builds the input from form pairs. A parameter given twice is refused (RFC 6749 §3.2).
    pub fn from_pairs(
        pairs: &[(String, String)],
        authorization: Option<String>,
    ) -> std::result::Result<TokenInput, OAuthError> {
        let mut t = TokenInput {
            authorization,
            ..Default::default()
        };
        for (k, v) in pairs {
            let slot = match k.as_str() {
                "grant_type" => &mut t.grant_type,
                "client_id" => &mut t.client_id,
                "client_secret" => &mut t.client_secret,
                "code" => &mut t.code,
                "redirect_uri" => &mut t.redirect_uri,
                "code_verifier" => &mut t.code_verifier,
                "refresh_token" => &mut t.refresh_token,
                "scope" => &mut t.scope,
                "assertion" => &mut t.assertion,
                "username" => &mut t.username,
                "password" => &mut t.password,
                "install_tag_id" => &mut t.install_tag_id,
                "install_name" => &mut t.install_name,
                _ => continue,
            };
            if slot.is_some() {
                return Err(OAuthError::invalid_request(format!(
                    "The parameter `{k}` was given more than once."
                )));
            }
            if v.len() > 16 * 1024 {
                return Err(OAuthError::invalid_request(format!(
                    "The parameter `{k}` is too long."
                )));
            }
            *slot = Some(v.clone()).filter(|s| !s.is_empty());
        }
        Ok(t)
    }
}

/// A token-endpoint outcome: tokens, or an OAuth error for the client.
pub type TokenResult = std::result::Result<TokenResponse, OAuthError>;

/// Everything needed to mint a token set.
struct Mint<'a> {
    client: &'a ClientInfo,
    user_id: &'a str,
    scope: &'a Scope,
    family_id: String,
    device_id: Option<i64>,
    grant: Grant,
    /// The family's end ([`TokenFamily::ends_at`]): no token minted outlives it.
    ends_at: Option<i64>,
}

/// An expiry no later than the family's end (`None` on either side: the other decides).
fn capped(expiry: Option<i64>, ends_at: Option<i64>) -> Option<i64> {
    match (expiry, ends_at) {
        (Some(e), Some(end)) => Some(e.min(end)),
        (e, None) => e,
        (None, end) => end,
    }
}

fn mint(c: &mut DbConn, m: Mint<'_>) -> Result<TokenResponse> {
    let t = now();
    if m.grant != Grant::RefreshToken {
        // A new sign-in: its tokens, and every rotation of its refresh token, form a family.
        coffer_store::tokens::start_family(
            c,
            &TokenFamily {
                id: m.family_id.clone(),
                user_id: m.user_id.to_string(),
                client_id: m.client.id.clone(),
                device_id: m.device_id,
                revoked: false,
                created_at: t,
                ends_at: m.ends_at,
            },
        )?;
    }
    let access = coffer_oauth::secrets::new_ordered_token();
    let access_expiry = capped(coffer_oauth::token::access_expiry(m.client, t), m.ends_at);
    coffer_store::tokens::insert_access(
        c,
        &AccessTokenRow {
            token_hash: hash_token(&access),
            family_id: m.family_id.clone(),
            scope: m.scope.to_string(),
            expires_at: access_expiry,
            created_at: t,
        },
    )?;
    let refresh = if coffer_oauth::token::issues_refresh(m.client, m.grant) {
        let r = coffer_oauth::secrets::new_ordered_token();
        coffer_store::tokens::insert_refresh(
            c,
            &RefreshTokenRow {
                token_hash: hash_token(&r),
                family_id: m.family_id,
                scope: m.scope.to_string(),
                expires_at: capped(coffer_oauth::token::refresh_expiry(m.client, t), m.ends_at),
                used_at: None,
                created_at: t,
            },
        )?;
        Some(r)
    } else {
        None
    };
    Ok(TokenResponse {
        access_token: access,
        expires_in: access_expiry
            .map(|e| e - t)
            .unwrap_or(coffer_oauth::token::NO_EXPIRY_EXPIRES_IN),
        token_type: "bearer",
        scope: m.scope.to_string(),
        refresh_token: refresh,
    })
}

/// A refresh token confined to `scope`, alone (no access token comes with it), in a family
/// of its own that ends `lifetime` seconds from now: exchanging it, and every rotation after,
/// gives tokens that expire by then. For `user_id` and the client `client_id` (the caller's),
/// on the caller's device. `None` when that client may not use refresh tokens (or is gone or
/// disabled): a token it could never exchange is not made. Returns the token and its expiry.
pub fn issue_confined_refresh(
    c: &mut DbConn,
    client_id: &str,
    user_id: &str,
    scope: &Scope,
    device_id: Option<i64>,
    lifetime: i64,
) -> Result<Option<(String, i64)>> {
    let Some(client) = client_by_id(c, client_id)? else {
        return Ok(None);
    };
    if client.flag & coffer_domain::client::flag::DISABLED != 0
        || client.flow & coffer_domain::client::flow::REFRESH_TOKEN == 0
    {
        return Ok(None);
    }
    let t = now();
    let ends_at = t.saturating_add(lifetime);
    let family_id = uuid::Uuid::now_v7().to_string();
    coffer_store::tokens::start_family(
        c,
        &TokenFamily {
            id: family_id.clone(),
            user_id: user_id.to_string(),
            client_id: client.id.clone(),
            device_id,
            revoked: false,
            created_at: t,
            ends_at: Some(ends_at),
        },
    )?;
    let token = coffer_oauth::secrets::new_ordered_token();
    coffer_store::tokens::insert_refresh(
        c,
        &RefreshTokenRow {
            token_hash: hash_token(&token),
            family_id,
            scope: scope.to_string(),
            expires_at: Some(ends_at),
            used_at: None,
            created_at: t,
        },
    )?;
    Ok(Some((token, ends_at)))
}

fn device_for(
    c: &mut DbConn,
    input: &TokenInput,
    user_id: &str,
    client_id: &str,
) -> Result<Option<i64>> {
    match input.install_tag_id.as_deref() {
        Some(tag) if tag.len() <= 255 && !tag.chars().any(char::is_control) => {
            let name = input
                .install_name
                .as_deref()
                .filter(|n| n.len() <= 255 && !n.chars().any(char::is_control));
            Ok(Some(devices::register_for_token(
                c, user_id, client_id, tag, name,
            )?))
        }
        _ => Ok(None),
    }
}

/// The account a signature or JWT grant acts for: active, not deleted, and not a shared
/// mailbox (a mailbox never signs in).
fn usable_user_by_email(c: &mut DbConn, email: &str) -> Result<Option<User>> {
    let email = email.trim().to_ascii_lowercase();
    Ok(coffer_store::users::by_email_with_mailbox(c, &email)?
        .filter(|(user, mailbox)| user.is_usable() && !mailbox)
        .map(|(user, _)| user))
}

/// Whether the signature flow or the JWT grant may act for `user` (never for a system
/// administrator, see `coffer_oauth::impersonation`).
fn may_impersonate(user: &User) -> Result<std::result::Result<(), OAuthError>> {
    let role = user.role.parse::<Role>().map_err(Error::internal)?;
    Ok(coffer_oauth::impersonation::check_subject(role))
}

/// What every grant checks before touching the database: the grant type and the client's
/// credentials as presented.
fn token_request(
    input: &TokenInput,
) -> std::result::Result<(Grant, String, Option<String>), OAuthError> {
    let grant =
        coffer_oauth::token::parse_grant(input.grant_type.as_deref(), input.code.as_deref())?;
    let (client_id, secret) = coffer_oauth::client_auth::extract(
        input.client_id.as_deref(),
        input.client_secret.as_deref(),
        input.authorization.as_deref(),
    )?;
    Ok((grant, client_id, secret))
}

/// The client of a token request, authenticated. The JWT grant authenticates the client by the
/// assertion's signature alone (§5.3 posts no secret); a secret that is posted anyway must
/// still be right.
fn token_client(
    stored: Option<&Client>,
    grant: Grant,
    secret: Option<&str>,
) -> std::result::Result<ClientInfo, OAuthError> {
    let info = stored.map(client_info);
    if grant != Grant::JwtBearer || secret.is_some() {
        coffer_oauth::client_auth::authenticate(
            info.as_ref(),
            stored.map(|c| c.secret_hash.as_str()),
            secret,
        )?;
    }
    let Some(client) = info else {
        return Err(OAuthError::invalid_client("Client authentication failed."));
    };
    if client.has_flag(coffer_domain::client::flag::DISABLED) {
        return Err(OAuthError::unauthorized_client("The client is disabled."));
    }
    Ok(client)
}

/// The token endpoint, for the asynchronous HTTP layer. The refresh grant, a client's most
/// frequent call, is one queued write (see [`Ctx::write_owned`]): the client is read and the
/// token rotated on the writer without a blocking thread in between. So is the JWT grant of a
/// client whose key is known ([`JwtKeys`]): the signature is checked here, the rest in the
/// write. The other grants run on a blocking thread.
pub async fn token(ctx: &Ctx, input: TokenInput) -> Result<TokenResult> {
    let (grant, client_id, secret) = match token_request(&input) {
        Ok(v) => v,
        Err(e) => return Ok(Err(e)),
    };
    if grant == Grant::JwtBearer && secret.is_none() {
        if let Some(r) = jwt_grant_known_key(ctx, &client_id, &input).await {
            return r;
        }
    }
    if grant == Grant::RefreshToken {
        return finish(
            ctx.write_owned(move |c| {
                let stored = client_by_id(c, &client_id)?;
                match token_client(stored.as_ref(), grant, secret.as_deref()) {
                    Ok(client) => refresh_grant(c, &client, &input),
                    Err(e) => Ok(Tx::Refused(e)),
                }
            })
            .await,
        );
    }
    ctx.blocking(move |ctx| {
        let stored = load_client(ctx, &client_id)?;
        let client = match token_client(stored.as_ref(), grant, secret.as_deref()) {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        if grant == Grant::JwtBearer {
            ctx.jwt_keys.remember(&client);
        }
        match grant {
            Grant::AuthorizationCode => code_grant(ctx, &client, &input),
            Grant::Signature => signature_grant(ctx, &client, &input),
            Grant::JwtBearer => jwt_grant(ctx, &client, &input),
            Grant::Password => password_grant(ctx, &client, &input),
            // Queued above; answered the same way here for completeness.
            Grant::RefreshToken => finish(ctx.write(|c| refresh_grant(c, &client, &input))),
        }
    })
    .await
}

/// A decision made inside a transaction that must commit even though the client gets an error
/// (e.g. revoking a family after a replay).
enum Tx {
    Issued(TokenResponse),
    Refused(OAuthError),
}

fn finish(r: Result<Tx>) -> Result<TokenResult> {
    r.map(|tx| match tx {
        Tx::Issued(t) => Ok(t),
        Tx::Refused(e) => Err(e),
    })
}

fn code_grant(ctx: &Ctx, client: &ClientInfo, input: &TokenInput) -> Result<TokenResult> {
    let Some(code) = input.code.as_deref() else {
        return Ok(Err(OAuthError::invalid_request(
            "The parameter `code` is required.",
        )));
    };
    let hash = hash_token(code);
    finish(ctx.write(|c| {
        let stored = coffer_store::grants::code_for_update(c, &hash)?;
        let record = stored.as_ref().map(|s| CodeRecord {
            client_id: s.client_id.clone(),
            redirect_uri: s.redirect_uri.clone(),
            scope: s.scope.clone(),
            user_id: s.user_id.clone(),
            expires_at: s.expires_at,
            used: s.used_at.is_some(),
            code_challenge: s.code_challenge.clone(),
        });
        let t = now();
        match coffer_oauth::code::check(
            client,
            record.as_ref(),
            input.redirect_uri.as_deref(),
            input.code_verifier.as_deref(),
            t,
        ) {
            Ok(()) => {}
            Err(CodeRejection::Invalid(e)) => return Ok(Tx::Refused(e)),
            Err(CodeRejection::Replayed(e)) => {
                if let Some(s) = &stored {
                    revoke_family(c, &s.family_id, &s.user_id, "code_replay")?;
                }
                return Ok(Tx::Refused(e));
            }
        }
        let Some(s) = stored else {
            return Ok(Tx::Refused(OAuthError::invalid_grant(
                "The code is not valid.",
            )));
        };
        if coffer_store::grants::mark_code_used(c, &hash, t)? == 0 {
            revoke_family(c, &s.family_id, &s.user_id, "code_replay")?;
            return Ok(Tx::Refused(OAuthError::invalid_grant(
                "The code was used before.",
            )));
        }
        let Some(user) = coffer_store::users::by_id(c, &s.user_id)?.filter(User::is_usable) else {
            return Ok(Tx::Refused(OAuthError::invalid_grant(
                "The user cannot sign in.",
            )));
        };
        let scope = Scope::parse(&s.scope).map_err(Error::internal)?;
        let device_id = device_for(c, input, &user.id, &client.id)?;
        let issued = mint(
            c,
            Mint {
                client,
                user_id: &user.id,
                scope: &scope,
                family_id: s.family_id.clone(),
                device_id,
                grant: Grant::AuthorizationCode,
                ends_at: None,
            },
        )?;
        Ok(Tx::Issued(issued))
    }))
}

/// A new sign-in by a grant (signature, JWT assertion, password): registers the device named on
/// the request, records `user.login`, and issues tokens of a new family.
fn start_session(
    c: &mut DbConn,
    client: &ClientInfo,
    input: &TokenInput,
    user_id: &str,
    scope: &Scope,
    grant: Grant,
    method: &str,
) -> Result<Tx> {
    let device_id = device_for(c, input, user_id, &client.id)?;
    events::record(
        c,
        "user.login",
        Some(user_id),
        serde_json::json!({"clientId": client.id, "method": method}),
    )?;
    let issued = mint(
        c,
        Mint {
            client,
            user_id,
            scope,
            family_id: uuid::Uuid::now_v7().to_string(),
            device_id,
            grant,
            ends_at: None,
        },
    )?;
    Ok(Tx::Issued(issued))
}

fn revoke_family(c: &mut DbConn, family_id: &str, user_id: &str, reason: &str) -> Result<()> {
    coffer_store::tokens::revoke_family(c, family_id)?;
    events::record(
        c,
        "oauth.token.revoke",
        Some(user_id),
        serde_json::json!({"familyId": family_id, "reason": reason}),
    )
}

fn signature_grant(ctx: &Ctx, client: &ClientInfo, input: &TokenInput) -> Result<TokenResult> {
    let code = input.code.as_deref().unwrap_or_default();
    let t = now();
    let sig = match coffer_oauth::signature::verify(client, code, t) {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    if let Some(r) = input.redirect_uri.as_deref() {
        if !coffer_oauth::authorize::redirect_uri_allowed(&client.redirect_uri, r) {
            return Ok(Err(OAuthError::invalid_grant(
                "The redirect URI does not match the registration.",
            )));
        }
    }
    let scope = match coffer_oauth::scope::resolve_requested(input.scope.as_deref(), &client.scope)
    {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    finish(ctx.write(|c| {
        let Some(user) = usable_user_by_email(c, &sig.user_email)? else {
            return Ok(Tx::Refused(OAuthError::invalid_grant(
                "The user credentials are not valid.",
            )));
        };
        if let Err(e) = may_impersonate(&user)? {
            return Ok(Tx::Refused(e));
        }
        // The code is single use, keyed on what it means rather than how it is spelled; it
        // can matter until it expires an hour after its timestamp.
        if !coffer_store::grants::record_signature_code(
            c,
            &sig.replay_key,
            sig.timestamp + 3600 + 300,
        )? {
            return Ok(Tx::Refused(OAuthError::invalid_grant(
                "The code was used before.",
            )));
        }
        start_session(
            c,
            client,
            input,
            &user.id,
            &scope,
            Grant::Signature,
            "signature",
        )
    }))
}

/// The refresh grant, inside the write transaction: rotation, and a replay revokes the family.
fn refresh_grant(c: &mut DbConn, client: &ClientInfo, input: &TokenInput) -> Result<Tx> {
    let Some(token) = input.refresh_token.as_deref() else {
        return Ok(Tx::Refused(OAuthError::invalid_request(
            "The parameter `refresh_token` is required.",
        )));
    };
    let hash = hash_token(token);
    let stored = coffer_store::tokens::refresh_for_update(c, &hash)?;
    let record = stored.as_ref().map(|s| RefreshRecord {
        client_id: s.client_id.clone(),
        user_id: s.user_id.clone(),
        scope: s.scope.clone(),
        family_id: s.family_id.clone(),
        expires_at: s.expires_at,
        used: s.used_at.is_some(),
        revoked: s.revoked,
    });
    let t = now();
    let scope =
        match coffer_oauth::refresh::check(client, record.as_ref(), input.scope.as_deref(), t) {
            Ok(s) => s,
            Err(RefreshRejection::Invalid(e)) => return Ok(Tx::Refused(e)),
            Err(RefreshRejection::Replayed(e)) => {
                if let Some(s) = &stored {
                    revoke_family(c, &s.family_id, &s.user_id, "refresh_replay")?;
                }
                return Ok(Tx::Refused(e));
            }
        };
    let Some(s) = stored else {
        return Ok(Tx::Refused(OAuthError::invalid_grant(
            "The refresh token is not valid.",
        )));
    };
    if coffer_store::tokens::mark_refresh_used(c, &hash, t)? == 0 {
        revoke_family(c, &s.family_id, &s.user_id, "refresh_replay")?;
        return Ok(Tx::Refused(OAuthError::invalid_grant(
            "The refresh token was used before.",
        )));
    }
    if coffer_store::users::by_id(c, &s.user_id)?
        .filter(User::is_usable)
        .is_none()
    {
        return Ok(Tx::Refused(OAuthError::invalid_grant(
            "The user cannot sign in.",
        )));
    }
    let issued = mint(
        c,
        Mint {
            client,
            user_id: &s.user_id,
            scope: &scope,
            family_id: s.family_id.clone(),
            device_id: s.device_id,
            grant: Grant::RefreshToken,
            ends_at: s.family_ends_at,
        },
    )?;
    Ok(Tx::Issued(issued))
}

fn jwt_grant(ctx: &Ctx, client: &ClientInfo, input: &TokenInput) -> Result<TokenResult> {
    let Some(assertion) = input.assertion.as_deref() else {
        return Ok(Err(OAuthError::invalid_request(
            "The parameter `assertion` is required.",
        )));
    };
    let t = now();
    let claims = match coffer_oauth::jwt::verify_assertion(
        client,
        assertion,
        &ctx.config.token_endpoint(),
        t,
    ) {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let scope = match coffer_oauth::scope::resolve_requested(input.scope.as_deref(), &client.scope)
    {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    finish(ctx.write(|c| jwt_session(c, client, input, &claims, &scope)))
}

/// The JWT grant with a key verified before ([`JwtKeys`]): the signature off the writer, then
/// one queued write that re-reads the client. `None` when the fast path does not apply (no
/// known key, a signature the known key refuses, or a key changed since): the caller takes
/// the full path, which gives every refusal its usual answer.
async fn jwt_grant_known_key(
    ctx: &Ctx,
    client_id: &str,
    input: &TokenInput,
) -> Option<Result<TokenResult>> {
    let known = ctx.jwt_keys.get(client_id)?;
    let signed =
        coffer_oauth::jwt::verify_signature(&known.key, input.assertion.as_deref()?).ok()?;
    let audience = ctx.config.token_endpoint();
    let client_id = client_id.to_string();
    let input = input.clone();
    let outcome = ctx
        .write_owned(move |c| {
            let stored = client_by_id(c, &client_id)?;
            let client = match token_client(stored.as_ref(), Grant::JwtBearer, None) {
                Ok(client) => client,
                Err(e) => return Ok(Some(Tx::Refused(e))),
            };
            let checked =
                coffer_oauth::jwt::accept_verified(&client, &known.pem, &signed, &audience, now());
            let claims = match checked {
                None => return Ok(None),
                Some(Err(e)) => return Ok(Some(Tx::Refused(e))),
                Some(Ok(claims)) => claims,
            };
            let scope =
                match coffer_oauth::scope::resolve_requested(input.scope.as_deref(), &client.scope)
                {
                    Ok(s) => s,
                    Err(e) => return Ok(Some(Tx::Refused(e))),
                };
            jwt_session(c, &client, &input, &claims, &scope).map(Some)
        })
        .await;
    match outcome {
        Ok(None) => None,
        Ok(Some(tx)) => Some(finish(Ok(tx))),
        Err(e) => Some(Err(e)),
    }
}

/// The JWT grant's write: the subject, the single use of the assertion, the session.
fn jwt_session(
    c: &mut DbConn,
    client: &ClientInfo,
    input: &TokenInput,
    claims: &coffer_oauth::jwt::AssertionClaims,
    scope: &Scope,
) -> Result<Tx> {
    let Some(user) = usable_user_by_email(c, &claims.sub)? else {
        return Ok(Tx::Refused(OAuthError::invalid_grant(
            "The subject is not an active user.",
        )));
    };
    if let Err(e) = may_impersonate(&user)? {
        return Ok(Tx::Refused(e));
    }
    if !coffer_store::grants::record_assertion(c, &client.id, &claims.jti, claims.exp)? {
        return Ok(Tx::Refused(OAuthError::invalid_grant(
            "The assertion's jti was used before.",
        )));
    }
    start_session(
        c,
        client,
        input,
        &user.id,
        scope,
        Grant::JwtBearer,
        "jwt_bearer",
    )
}

fn password_grant(ctx: &Ctx, client: &ClientInfo, input: &TokenInput) -> Result<TokenResult> {
    if let Err(e) = coffer_oauth::password_grant::check(
        client,
        input.username.as_deref(),
        input.password.as_deref(),
    ) {
        return Ok(Err(e));
    }
    let scope = match coffer_oauth::scope::resolve_requested(input.scope.as_deref(), &client.scope)
    {
        Ok(s) => s,
        Err(e) => return Ok(Err(e)),
    };
    let user = match crate::identity::accounts::sign_in(
        ctx,
        input.username.as_deref().unwrap_or_default(),
        input.password.as_deref().unwrap_or_default(),
        input.client_ip.as_deref(),
    )? {
        crate::identity::accounts::SignIn::Ok(user) => user,
        crate::identity::accounts::SignIn::Wrong => {
            return Ok(Err(OAuthError::invalid_grant(
                "The user credentials are not valid.",
            )))
        }
        crate::identity::accounts::SignIn::Locked(wait) => {
            return Ok(Err(OAuthError::throttled(wait)))
        }
    };
    // The steps the sign-in page would take next cannot be taken here: refuse, issue nothing.
    let steps = coffer_oauth::password_grant::PendingSteps {
        second_factor: crate::identity::tfa::method(ctx, &user)?.is_some(),
        password_change_due: user.force_password_change,
    };
    if let Err(e) = coffer_oauth::password_grant::check_user(steps) {
        return Ok(Err(e));
    }
    finish(ctx.write(|c| {
        start_session(
            c,
            client,
            input,
            &user.id,
            &scope,
            Grant::Password,
            "password",
        )
    }))
}

/// Authenticates a client for revocation and introspection (secret required).
fn authenticate_client(
    ctx: &Ctx,
    input: &TokenInput,
) -> Result<std::result::Result<ClientInfo, OAuthError>> {
    let (client_id, secret) = match coffer_oauth::client_auth::extract(
        input.client_id.as_deref(),
        input.client_secret.as_deref(),
        input.authorization.as_deref(),
    ) {
        Ok(v) => v,
        Err(e) => return Ok(Err(e)),
    };
    let stored = load_client(ctx, &client_id)?;
    let info = stored.as_ref().map(client_info);
    if let Err(e) = coffer_oauth::client_auth::authenticate(
        info.as_ref(),
        stored.as_ref().map(|c| c.secret_hash.as_str()),
        secret.as_deref(),
    ) {
        return Ok(Err(e));
    }
    Ok(info.ok_or_else(|| OAuthError::invalid_client("Client authentication failed.")))
}

/// RFC 7009: revokes a token of the calling client. A refresh token takes its whole family
/// with it. Unknown tokens and other clients' tokens are answered the same (success).
pub fn revoke(
    ctx: &Ctx,
    input: &TokenInput,
    token: Option<&str>,
) -> Result<std::result::Result<(), OAuthError>> {
    let client = match authenticate_client(ctx, input)? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let Some(token) = token else {
        return Ok(Err(OAuthError::invalid_request(
            "The parameter `token` is required.",
        )));
    };
    let hash = hash_token(token);
    ctx.write(|c| {
        if let Some(r) = coffer_store::tokens::refresh_by_hash(c, &hash)? {
            if r.client_id == client.id {
                revoke_family(c, &r.family_id, &r.user_id, "revocation")?;
            }
        } else if let Some(a) = coffer_store::tokens::access_by_hash(c, &hash)? {
            if a.client_id == client.id && !a.revoked {
                coffer_store::tokens::revoke_family(c, &a.family_id)?;
                events::record(
                    c,
                    "oauth.token.revoke",
                    Some(&a.user_id),
                    serde_json::json!({"familyId": a.family_id, "reason": "revocation"}),
                )?;
            }
        }
        Ok(())
    })?;
    Ok(Ok(()))
}

/// RFC 7662: describes a token issued to the calling client; anything else is inactive.
pub fn introspect(
    ctx: &Ctx,
    input: &TokenInput,
    token: Option<&str>,
) -> Result<std::result::Result<serde_json::Value, OAuthError>> {
    let client = match authenticate_client(ctx, input)? {
        Ok(c) => c,
        Err(e) => return Ok(Err(e)),
    };
    let Some(token) = token else {
        return Ok(Err(OAuthError::invalid_request(
            "The parameter `token` is required.",
        )));
    };
    let hash = hash_token(token);
    let t = now();
    let inactive = serde_json::json!({"active": false});
    let answer = ctx.read(|c| {
        if let Some((a, user, _)) = coffer_store::tokens::access_with_owner(c, &hash)? {
            if a.client_id != client.id || a.revoked || a.expires_at.is_some_and(|e| t >= e) || !user.is_usable() {
                return Ok(inactive.clone());
            }
            return Ok(serde_json::json!({
                "active": true, "token_type": "access_token", "scope": a.scope, "client_id": a.client_id,
                "username": user.email, "sub": user.id, "iat": a.created_at, "exp": a.expires_at,
            }));
        }
        if let Some(r) = coffer_store::tokens::refresh_by_hash(c, &hash)? {
            let user = coffer_store::users::by_id(c, &r.user_id)?;
            let live = r.client_id == client.id
                && !r.revoked
                && r.used_at.is_none()
                && r.expires_at.is_none_or(|e| t < e)
                && user.as_ref().is_some_and(User::is_usable);
            if live {
                let email = user.map(|u| u.email).unwrap_or_default();
                return Ok(serde_json::json!({
                    "active": true, "token_type": "refresh_token", "scope": r.scope, "client_id": r.client_id,
                    "username": email, "sub": r.user_id, "iat": r.created_at, "exp": r.expires_at,
                }));
            }
        }
        Ok(inactive.clone())
    })?;
    Ok(Ok(answer))
}

/// RFC 8414 authorization-server metadata.
pub fn metadata(ctx: &Ctx) -> serde_json::Value {
    let b = &ctx.config.base_url;
    serde_json::json!({
        "issuer": b,
        "authorization_endpoint": format!("{b}/oauth/authorize"),
        "token_endpoint": format!("{b}/oauth/token"),
        "revocation_endpoint": format!("{b}/oauth/revoke"),
        "introspection_endpoint": format!("{b}/oauth/introspect"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", "password", coffer_oauth::jwt::GRANT_TYPE],
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "revocation_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "introspection_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
        "code_challenge_methods_supported": ["S256"],
        "service_documentation": format!("{b}/openapi.json"),
    })
}
