//! `/rest/users/me` and `/rest/settings`.

use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, QueryPairs};
use crate::plumbing::schema;
use crate::plumbing::state::{blocking, AppState};
use actix_web::web::{self, Data};
use actix_web::HttpResponse;
use coffer_domain::list::{self, ListSpec};
use coffer_service::identity::users::DeleteOptions;
use coffer_service::platform::views::{CurrentUser, Link, SystemSettingsView};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/users/me")
            .route(web::get().to(me))
            .route(web::put().to(update_me)),
    )
    .service(web::resource("/users").route(web::delete().to(delete_users)))
    .service(web::resource("/users/me/quota").route(web::get().to(quota)))
    .service(web::resource("/users/me/mobileNumber").route(web::put().to(mobile_number)))
    .service(web::resource("/users/ldapSearch").route(web::get().to(ldap_search)))
    .service(web::resource("/users/actions/login").route(web::post().to(login)))
    .service(web::resource("/users/aliveToken").route(web::put().to(alive_token)))
    .service(
        web::resource("/users/requestPasswordReset").route(web::post().to(request_password_reset)),
    )
    .service(web::resource("/users/resetPassword").route(web::post().to(reset_password)))
    .service(
        web::resource("/users/me/forcedPasswordChange")
            .route(web::post().to(forced_password_change)),
    )
    .service(web::resource("/users/me/tfa/config").route(web::get().to(tfa_config)))
    .service(web::resource("/users/me/tfa/setupTotpSecret").route(web::get().to(tfa_setup)))
    .service(web::resource("/users/me/tfa/verifyTotpSecret").route(web::post().to(tfa_verify)))
    .service(web::resource("/users/me/tfa/resetTotpSecret").route(web::post().to(tfa_reset)))
    .service(web::resource("/users/me/tfa/setupSms").route(web::post().to(tfa_setup_sms)))
    .service(web::resource("/users/me/tfa/verifySms").route(web::post().to(tfa_verify_sms)))
    .service(web::resource("/users/me/tfa/resetSms").route(web::post().to(tfa_reset_sms)))
    .service(web::resource("/users/me/tfa/challenge").route(web::post().to(tfa_challenge)))
    .service(web::resource("/users/me/tfa/auth").route(web::post().to(tfa_auth)))
    .service(
        web::resource("/admin/users/{id}")
            .route(web::get().to(crate::identity::admin_users::get))
            .route(web::put().to(crate::identity::admin_users::update))
            .route(web::delete().to(delete_user)),
    )
    .service(web::resource("/settings/passwordPolicy").route(web::get().to(password_policy)))
    .service(web::resource("/settings/system").route(web::get().to(system)));
}

#[utoipa::path(get, path = "/rest/users/me", tag = "users", responses((status = 200, body = CurrentUser, description = "The current user")), security(("bearer" = [])))]
pub async fn me(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let mut u = coffer_service::identity::accounts::current_user(&st.ctx, &c.user)?;
    if q.links() {
        u.links = Some(vec![Link::new(
            "self",
            format!("{}/rest/users/me", st.base_url()),
        )]);
    }
    Ok(HttpResponse::Ok().json(u))
}

#[utoipa::path(get, path = "/rest/settings/passwordPolicy", tag = "settings", responses((status = 200, body = crate::plumbing::schema::PasswordPolicyView, description = "The password policy")), security(("bearer" = [])))]
pub async fn password_policy(
    Caller(_c): Caller,
    st: Data<AppState>,
) -> Result<HttpResponse, RestError> {
    let p = blocking(&st, coffer_service::identity::settings::password_policy).await?;
    Ok(HttpResponse::Ok().json(p))
}

#[utoipa::path(get, path = "/rest/settings/system", tag = "settings", responses((status = 200, body = SystemSettingsView, description = "The system settings; `locationId` is left out when the user has none")), security(("bearer" = [])))]
pub async fn system(Caller(c): Caller, st: Data<AppState>) -> Result<HttpResponse, RestError> {
    let s = blocking(&st, move |ctx| {
        coffer_service::identity::settings::system_settings(ctx, &c.user)
    })
    .await?;
    Ok(HttpResponse::Ok().json(s))
}

#[utoipa::path(put, path = "/rest/users/me", tag = "users", request_body(content = crate::plumbing::schema::UpdateMeBody, description = "`name`, or `password` with `previousPassword`, or both; a new password ends the user's other sessions"), responses((status = 200, body = CurrentUser, description = "The updated user"), (status = 422, description = "`ERR_INPUT_INVALID_FORMAT` (name), `ERR_INPUT_REQUIRED`, `ERR_INVALID_PARAMETER` (the previous password does not match), `ERR_INPUT_PASSWORD_COMPLEXITY_ERROR`"), (status = 429, description = "Too many wrong previous passwords (`Retry-After`)")), security(("bearer" = [])))]
pub async fn update_me(
    req: actix_web::HttpRequest,
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::UpdateMeBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (name, password, previous) = (body.name, body.password, body.previous_password);
    let ip = st.client_ip(&req);
    let u = blocking(&st, move |ctx| {
        coffer_service::identity::users::update_me(ctx, &c, name, password, previous, ip.as_deref())
    })
    .await?;
    Ok(HttpResponse::Ok().json(u))
}

/// The delete options of a body (none: the defaults).
fn delete_options(b: schema::DeleteOptionsBody) -> Result<DeleteOptions, RestError> {
    let opts = DeleteOptions {
        remote_wipe: b.remote_wipe.unwrap_or(false),
        retain_permission_to_shared_data: b.retain_permission_to_shared_data.unwrap_or(false),
        withdraw_file_links: b.withdraw_file_links.unwrap_or(false),
        withdraw_request_files: b.withdraw_request_files.unwrap_or(false),
        retain_to_user: b.retain_to_user,
        retain_to_advanced_form_user: b.retain_to_advanced_form_user,
        ..Default::default()
    };
    Ok(DeleteOptions::check(
        b.delete_unshared_data,
        b.retain_data,
        opts,
    )?)
}

pub(crate) const DELETE_SPEC: ListSpec = ListSpec {
    bulk: true,
    ..ListSpec::PLAIN
};

fn deleted_body(d: &coffer_service::identity::users::Deleted) -> serde_json::Value {
    let data: Vec<serde_json::Value> = d
        .deleted
        .iter()
        .map(|(id, email)| serde_json::json!({"id": id, "email": email, "deleted": true}))
        .collect();
    let mut body = serde_json::json!({ "data": data });
    if !d.failed.is_empty() {
        body["failedIds"] = serde_json::json!(d.failed);
    }
    body
}

#[utoipa::path(delete, path = "/rest/users", tag = "users", request_body(content = Option<crate::plumbing::schema::DeleteOptionsBody>, description = "The delete options; none: delete the unshared data"), responses((status = 200, body = crate::plumbing::schema::DeletedUsers, description = "The users marked deleted; with `partialSuccess`, `failedIds`"), (status = 403, description = "`ERR_ACCESS_USER`: not a user administrator, the caller's own account, or an administrator a helpdesk administrator may not delete (`failedIds`)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: an unknown id (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_BOOLEAN`, `ERR_INPUT_NOT_STRING`, `ERR_INPUT_ATTRIBUTE_FORBIDDEN`, `ERR_INVALID_PARAMETER` (retainToUser)")), security(("bearer" = [])))]
pub async fn delete_users(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<schema::DeleteOptionsBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let q = list::parse(&q, &DELETE_SPEC)?;
    let opts = delete_options(body)?;
    let ids = q.id_in.clone().ok_or_else(|| {
        RestError(coffer_errors::ApiError::field(
            coffer_errors::ErrorCode::InputRequired,
            "id:in",
        ))
    })?;
    let partial = q.partial_success;
    let d = blocking(&st, move |ctx| {
        coffer_service::identity::users::delete(ctx, &c, &ids, &opts, partial)
    })
    .await?;
    Ok(HttpResponse::Ok().json(deleted_body(&d)))
}

#[utoipa::path(delete, path = "/rest/admin/users/{id}", tag = "users", params(("id" = String, Path, description = "A user id")), request_body(content = Option<crate::plumbing::schema::DeleteOptionsBody>, description = "The delete options, as for DELETE /rest/users"), responses((status = 204, description = "The user is marked deleted"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "The delete options are invalid")), security(("bearer" = [])))]
pub async fn delete_user(
    Caller(c): Caller,
    st: Data<AppState>,
    id: web::Path<String>,
    Body(body): Body<schema::DeleteOptionsBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let opts = delete_options(body)?;
    let ids = vec![id.into_inner()];
    blocking(&st, move |ctx| {
        coffer_service::identity::users::delete(ctx, &c, &ids, &opts, false)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

pub(crate) const QUOTA_SPEC: ListSpec = ListSpec {
    extra_params: &["filter"],
    ..ListSpec::PLAIN
};

#[utoipa::path(get, path = "/rest/users/me/quota", tag = "users", params(("filter" = Option<String>, Query, description = "`send` or `folder`; none: both", pattern = "^(send|folder)$")), responses((status = 200, body = coffer_service::identity::users::Quota, description = "The quota"), (status = 404, description = "The profile gives no such quota")), security(("bearer" = [])))]
pub async fn quota(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &QUOTA_SPEC)?;
    let which = q.extra("filter").map(str::to_string);
    let v = blocking(&st, move |ctx| {
        coffer_service::identity::users::quota(ctx, &c, which.as_deref())
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(put, path = "/rest/users/me/mobileNumber", tag = "users", request_body(content = crate::plumbing::schema::MobileNumberBody), responses((status = 200, body = crate::plumbing::schema::UserSettings, description = "The user settings; with `testOnly` a test message was sent and the body is empty"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_INVALID_FORMAT` (mobileNumber), `ERR_INVALID_PARAMETER` (the password does not match), `ERR_INPUT_ATTRIBUTE_FORBIDDEN` (the number receives two-factor codes)"), (status = 429, description = "Too many wrong passwords, or too many test messages to this user or number (`Retry-After`)"), (status = 503, description = "The SMS gateway failed")), security(("bearer" = [])))]
pub async fn mobile_number(
    req: actix_web::HttpRequest,
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::MobileNumberBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (password, number) = (body.password, body.mobile_number);
    let test_only = body.test_only.unwrap_or(false);
    let ip = st.client_ip(&req);
    let v = blocking(&st, move |ctx| {
        coffer_service::identity::users::set_mobile_number(
            ctx,
            &c,
            &*coffer_service::platform::sms::configured(ctx),
            &password,
            &number,
            test_only,
            ip.as_deref(),
        )
    })
    .await?;
    Ok(match v {
        Some(settings) => HttpResponse::Ok().json(settings),
        None => HttpResponse::Ok().finish(),
    })
}

pub(crate) const LDAP_SPEC: ListSpec = ListSpec {
    extra_params: &["value"],
    ..ListSpec::PLAIN
};

#[utoipa::path(get, path = "/rest/users/ldapSearch", tag = "users", params(("value" = String, Query, description = "Part of an email or a name, at most 256 characters", max_length = 256, pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]")), responses((status = 200, body = crate::plumbing::schema::DirectoryMatches, description = "The matches"), (status = 503, description = "The directory server failed")), security(("bearer" = [])))]
pub async fn ldap_search(
    Caller(_c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LDAP_SPEC)?;
    let value = q.extra("value").unwrap_or_default().to_string();
    let matches = blocking(&st, move |ctx| {
        coffer_service::platform::directory::search(ctx, &value)
    })
    .await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "matches": matches })))
}

#[utoipa::path(post, path = "/rest/users/actions/login", tag = "users", request_body(content = crate::plumbing::schema::LoginBody), responses((status = 200, body = crate::plumbing::schema::LoginResponse, description = "Signed in, with the session cookie and the `XSRF-TOKEN` cookie"), (status = 401, description = "`ERR_AUTH_UNAUTHORIZED`: wrong credentials"), (status = 422, description = "`ERR_INPUT_REQUIRED`"), (status = 429, description = "Too many failed sign-ins (`Retry-After`)")))]
pub async fn login(
    req: actix_web::HttpRequest,
    st: Data<AppState>,
    Body(body): Body<schema::LoginBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (username, password, referral) = (body.username, body.password, body.referral);
    let ip = st.client_ip(&req);
    let remember = req.cookie(REMEMBER_COOKIE).map(|c| c.value().to_string());
    let l = blocking(&st, move |ctx| {
        coffer_service::identity::sessions::login(
            ctx,
            &username,
            &password,
            referral.as_deref(),
            ip.as_deref(),
            remember.as_deref(),
        )
    })
    .await?;
    let secure = st.secure_cookies;
    let session =
        actix_web::cookie::Cookie::build(crate::plumbing::extract::SESSION_COOKIE, l.session_token)
            .path("/")
            .http_only(true)
            .secure(secure)
            .same_site(actix_web::cookie::SameSite::Lax)
            .finish();
    // Readable by the page, which echoes it in X-XSRF-TOKEN.
    let csrf =
        actix_web::cookie::Cookie::build(crate::plumbing::extract::CSRF_COOKIE, l.csrf_token)
            .path("/")
            .secure(secure)
            .same_site(actix_web::cookie::SameSite::Strict)
            .finish();
    Ok(HttpResponse::Ok()
        .cookie(session)
        .cookie(csrf)
        .json(serde_json::json!({"success": true, "redirectUrl": l.redirect_url})))
}

#[utoipa::path(put, path = "/rest/users/aliveToken", tag = "users", responses((status = 200, body = crate::plumbing::schema::Empty, description = "The session goes on for another full period")), security(("bearer" = [])))]
pub async fn alive_token(Caller(c): Caller, st: Data<AppState>) -> Result<HttpResponse, RestError> {
    blocking(&st, move |ctx| {
        coffer_service::identity::sessions::keep_alive(ctx, &c)
    })
    .await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({})))
}

#[utoipa::path(post, path = "/rest/users/me/forcedPasswordChange", tag = "users", request_body(content = crate::plumbing::schema::ForcedPasswordChangeBody), responses((status = 200, body = crate::plumbing::schema::AuthRedirectResponse, description = "Changed; where the sign-in goes next"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INVALID_PARAMETER` (the previous password does not match), `ERR_INPUT_PASSWORD_COMPLEXITY_ERROR`"), (status = 429, description = "Too many wrong previous passwords (`Retry-After`)")), security(("bearer" = [])))]
pub async fn forced_password_change(
    req: actix_web::HttpRequest,
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::ForcedPasswordChangeBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (password, previous) = (body.password, body.previous_password);
    let referral = body.referral;
    let ip = st.client_ip(&req);
    let next = blocking(&st, move |ctx| {
        coffer_service::identity::sessions::forced_password_change(
            ctx,
            &c,
            &password,
            &previous,
            referral.as_deref(),
            ip.as_deref(),
        )
    })
    .await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({ "redirectUrl": next })))
}

#[utoipa::path(post, path = "/rest/users/requestPasswordReset", tag = "users", request_body(content = crate::plumbing::schema::RequestPasswordResetBody), responses((status = 204, description = "Taken. When a usable account has this address, it is mailed a single-use reset link (valid one hour by default) that replaces any earlier one; the answer is the same for every well-formed address, known or not"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_STRING`, `ERR_INPUT_INVALID_EMAIL`"), (status = 429, description = "Too many reset requests for this address or from this client (`Retry-After`)")))]
pub async fn request_password_reset(
    req: actix_web::HttpRequest,
    st: Data<AppState>,
    Body(body): Body<schema::RequestPasswordResetBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let email = body.email;
    let ip = st.client_ip(&req);
    blocking(&st, move |ctx| {
        coffer_service::identity::password_reset::request(ctx, &email, ip.as_deref())
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(post, path = "/rest/users/resetPassword", tag = "users", request_body(content = crate::plumbing::schema::ResetPasswordBody), responses((status = 204, description = "The password is set, the link used up, and every session and token of the user ended"), (status = 403, description = "`ERR_ACCESS_USER`: the link is unknown, expired or used (one answer for all)"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_STRING`, `ERR_INPUT_PASSWORD_COMPLEXITY_ERROR` (the link stays usable)")))]
pub async fn reset_password(
    st: Data<AppState>,
    Body(body): Body<schema::ResetPasswordBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (link, password) = (body.link, body.password);
    blocking(&st, move |ctx| {
        coffer_service::identity::password_reset::reset(ctx, &link, &password)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

/// The cookie of a browser that passed two-factor sign-in with `rememberDevice`.
pub const REMEMBER_COOKIE: &str = "coffer_tfa_remember";

#[utoipa::path(get, path = "/rest/users/me/tfa/config", tag = "users", responses((status = 200, body = crate::plumbing::schema::TfaConfig, description = "`{enabled, type, pendingSetup}`, and with a method on the module description")), security(("bearer" = [])))]
pub async fn tfa_config(Caller(c): Caller, st: Data<AppState>) -> Result<HttpResponse, RestError> {
    let v = blocking(&st, move |ctx| {
        coffer_service::identity::tfa::sign_in::config(ctx, &c)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(post, path = "/rest/users/me/tfa/setupSms", tag = "users", responses((status = 200, body = crate::plumbing::schema::SmsChallenge, description = "An enrolment code was sent to the saved mobile number"), (status = 404, description = "No mobile number is set"), (status = 409, description = "Two-factor sign-in is on"), (status = 429, description = "A code was sent less than 30 seconds ago, or the user or the number had as many codes as the window allows (`Retry-After`)"), (status = 503, description = "The SMS gateway failed")), security(("bearer" = [])))]
pub async fn tfa_setup_sms(
    Caller(c): Caller,
    st: Data<AppState>,
) -> Result<HttpResponse, RestError> {
    let v = blocking(&st, move |ctx| {
        coffer_service::identity::tfa::sms::setup(ctx, &c)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(post, path = "/rest/users/me/tfa/verifySms", tag = "users", request_body(content = crate::plumbing::schema::OtpBody, description = "The enrolment code"), responses((status = 200, body = crate::plumbing::schema::TfaState, description = "The number is verified and SMS two-factor sign-in is on"), (status = 404, description = "No enrolment code is pending"), (status = 409, description = "Two-factor sign-in is on"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INVALID_PARAMETER` (a wrong or expired code)"), (status = 429, description = "Too many wrong codes (`Retry-After`)")), security(("bearer" = [])))]
pub async fn tfa_verify_sms(
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::OtpBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let otp = body.otp;
    let v = blocking(&st, move |ctx| {
        coffer_service::identity::tfa::sms::verify_setup(ctx, &c, &otp)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(post, path = "/rest/users/me/tfa/resetSms", tag = "users", request_body(content = crate::plumbing::schema::PasswordBody), responses((status = 200, body = crate::plumbing::schema::TfaState, description = "SMS two-factor sign-in is off"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INVALID_PARAMETER` (the password does not match)"), (status = 429, description = "Too many wrong passwords for the account or address (`Retry-After`)")), security(("bearer" = [])))]
pub async fn tfa_reset_sms(
    req: actix_web::HttpRequest,
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::PasswordBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let password = body.password;
    let ip = st.client_ip(&req);
    blocking(&st, move |ctx| {
        coffer_service::identity::tfa::sms::reset(ctx, &c, &password, ip.as_deref())
    })
    .await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({"enabled": false})))
}

#[utoipa::path(get, path = "/rest/users/me/tfa/setupTotpSecret", tag = "users", responses((status = 200, body = crate::plumbing::schema::TotpSetupResponse, description = "A new TOTP secret, pending until verified"), (status = 409, description = "Two-factor sign-in is on; reset it first")), security(("bearer" = [])))]
pub async fn tfa_setup(Caller(c): Caller, st: Data<AppState>) -> Result<HttpResponse, RestError> {
    let v = blocking(&st, move |ctx| {
        coffer_service::identity::tfa::totp::setup(ctx, &c)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(post, path = "/rest/users/me/tfa/verifyTotpSecret", tag = "users", request_body(content = crate::plumbing::schema::OtpReferralBody), responses((status = 200, body = crate::plumbing::schema::AuthRedirectResponse, description = "TOTP two-factor sign-in is on; `redirectUrl` is the referral when it stays on this server, else the base URL"), (status = 404, description = "No secret is pending"), (status = 409, description = "Two-factor sign-in is on"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INVALID_PARAMETER` (a wrong code)"), (status = 429, description = "Too many wrong codes (`Retry-After`)")), security(("bearer" = [])))]
pub async fn tfa_verify(
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::OtpReferralBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (otp, referral) = (body.otp, body.referral);
    let v = blocking(&st, move |ctx| {
        coffer_service::identity::tfa::totp::verify_setup(ctx, &c, &otp, referral.as_deref())
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(post, path = "/rest/users/me/tfa/resetTotpSecret", tag = "users", request_body(content = crate::plumbing::schema::TotpResetBody), responses((status = 200, body = crate::plumbing::schema::TotpResetResponse, description = "Without `otp`: TOTP sign-in is off and a new secret is pending; with `otp`: `{code: 1}`, TOTP sign-in is on again"), (status = 409, description = "SMS two-factor sign-in is on; with `otp`, TOTP sign-in is on already"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INVALID_PARAMETER` (the password or the code does not match)"), (status = 429, description = "Too many wrong passwords for the account or address (`Retry-After`)")), security(("bearer" = [])))]
pub async fn tfa_reset(
    req: actix_web::HttpRequest,
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::TotpResetBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (password, otp) = (body.password, body.otp);
    let ip = st.client_ip(&req);
    let r = blocking(&st, move |ctx| {
        coffer_service::identity::tfa::totp::reset(
            ctx,
            &c,
            &password,
            otp.as_deref(),
            ip.as_deref(),
        )
    })
    .await?;
    Ok(match r {
        coffer_service::identity::tfa::totp::Reset::Setup(v) => HttpResponse::Ok().json(v),
        coffer_service::identity::tfa::totp::Reset::Confirmed => {
            HttpResponse::Ok().json(serde_json::json!({"code": 1}))
        }
    })
}

fn step_response(
    st: &AppState,
    step: coffer_service::identity::tfa::sign_in::Step,
) -> HttpResponse {
    match step {
        coffer_service::identity::tfa::sign_in::Step::Challenge(msg) => {
            HttpResponse::Ok().json(serde_json::json!({ "challengeMsg": msg }))
        }
        coffer_service::identity::tfa::sign_in::Step::Next {
            redirect_url,
            remember_token,
        } => {
            let mut r = HttpResponse::Ok();
            if let Some(t) = remember_token {
                r.cookie(
                    actix_web::cookie::Cookie::build(REMEMBER_COOKIE, t)
                        .path("/rest/users/actions/login")
                        .http_only(true)
                        .secure(st.secure_cookies)
                        .same_site(actix_web::cookie::SameSite::Strict)
                        .max_age(actix_web::cookie::time::Duration::seconds(
                            st.ctx.config.tfa_remember_secs,
                        ))
                        .finish(),
                );
            }
            r.json(serde_json::json!({ "redirectUrl": redirect_url }))
        }
    }
}

#[utoipa::path(post, path = "/rest/users/me/tfa/challenge", tag = "users", request_body(content = Option<crate::plumbing::schema::ChallengeBody>), responses((status = 200, body = crate::plumbing::schema::TfaStep, description = "`{challengeMsg}` or `{redirectUrl}`, never both; for an SMS user a new code is sent"), (status = 422, description = "`ERR_INPUT_NOT_STRING` (referral)"), (status = 429, description = "An SMS code was sent less than 30 seconds ago, or the user or the number had as many codes as the window allows (`Retry-After`)"), (status = 503, description = "The SMS gateway failed")), security(("bearer" = [])))]
pub async fn tfa_challenge(
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::ChallengeBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let referral = body.referral;
    let step = blocking(&st, move |ctx| {
        coffer_service::identity::tfa::sign_in::challenge(ctx, &c, referral.as_deref())
    })
    .await?;
    Ok(step_response(&st, step))
}

#[utoipa::path(post, path = "/rest/users/me/tfa/auth", tag = "users", request_body(content = crate::plumbing::schema::TfaAuthBody), responses((status = 200, body = crate::plumbing::schema::TfaStep, description = "`{redirectUrl}` when accepted, `{challengeMsg}` for another round, never both"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INVALID_PARAMETER` (a wrong code)"), (status = 429, description = "Too many failed sign-ins (`Retry-After`)")), security(("bearer" = [])))]
pub async fn tfa_auth(
    req: actix_web::HttpRequest,
    Caller(c): Caller,
    st: Data<AppState>,
    Body(body): Body<schema::TfaAuthBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    let (otp, referral) = (body.otp, body.referral);
    let remember = body.remember_device.unwrap_or(false);
    let ip = st.client_ip(&req);
    let step = blocking(&st, move |ctx| {
        coffer_service::identity::tfa::sign_in::auth(
            ctx,
            &c,
            &otp,
            referral.as_deref(),
            remember,
            ip.as_deref(),
        )
    })
    .await?;
    Ok(step_response(&st, step))
}
