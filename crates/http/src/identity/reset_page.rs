//! The page a password-reset link opens (`GET /passwordReset?token=…`): a form for the new
//! password that posts back to `/passwordReset` and resets through the same use case as
//! `POST /rest/users/resetPassword`. CSRF as on the sign-in pages: a random value in an
//! HTTP-only, `SameSite=Strict` cookie that the form must echo.

use crate::oauth::{page_form, param};
use crate::plumbing::error::RestError;
use crate::plumbing::pages;
use crate::plumbing::state::{blocking, AppState};
use actix_web::cookie::{Cookie, SameSite};
use actix_web::http::StatusCode;
use actix_web::web::{self, Data};
use actix_web::{HttpRequest, HttpResponse};
use coffer_errors::{Error, ErrorCode};
use coffer_service::identity::password_reset::RESET_PAGE_PATH;

const CSRF_COOKIE: &str = "coffer_reset_csrf";

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(RESET_PAGE_PATH)
            .route(web::get().to(show))
            .route(web::post().to(submit)),
    );
}

fn csrf_cookie(st: &AppState, value: &str) -> Cookie<'static> {
    pages::csrf_cookie(
        CSRF_COOKIE,
        value,
        RESET_PAGE_PATH,
        st.secure_cookies,
        SameSite::Strict,
    )
}

fn csrf_ok(req: &HttpRequest, form_value: &str) -> bool {
    pages::csrf_matches(req, CSRF_COOKIE, Some(form_value))
}

#[utoipa::path(get, path = "/passwordReset", tag = "users", params(("token" = Option<String>, Query, description = "The token of the reset link")), responses((status = 200, body = String, content_type = "text/html", description = "The form for a new password"), (status = 400, body = String, content_type = "text/html", description = "A token with control characters (no link carries one): an error page")))]
pub async fn show(req: HttpRequest, st: Data<AppState>) -> HttpResponse {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    let token = param(&pairs, "token").unwrap_or_default();
    if !coffer_domain::input::is_clean(&token, false) {
        return pages::error(
            StatusCode::BAD_REQUEST,
            "This link is not a password-reset link.",
        );
    }
    let csrf = coffer_oauth::secrets::new_token();
    let mut page = pages::password_reset(&token, &csrf, None, StatusCode::OK);
    let _ = page.add_cookie(&csrf_cookie(&st, &csrf));
    page
}

#[utoipa::path(post, path = "/passwordReset", tag = "users", request_body(content = crate::plumbing::schema::ResetPasswordForm, content_type = "application/x-www-form-urlencoded"), responses((status = 200, body = String, content_type = "text/html", description = "The password is set; every session and token of the user ended"), (status = 400, body = String, content_type = "text/html", description = "A malformed or expired form (CSRF): an error page"), (status = 403, body = String, content_type = "text/html", description = "The link is unknown, expired or used"), (status = 422, body = String, content_type = "text/html", description = "The password breaks the policy: the form again; the link stays usable")))]
pub async fn submit(
    req: HttpRequest,
    st: Data<AppState>,
    mut payload: web::Payload,
) -> Result<HttpResponse, RestError> {
    let pairs = match page_form(&mut payload).await? {
        Ok(p) => p,
        Err(page) => return Ok(page),
    };
    let csrf = param(&pairs, "csrf").unwrap_or_default();
    if !csrf_ok(&req, &csrf) {
        return Ok(pages::error_titled(
            StatusCode::BAD_REQUEST,
            "Password reset",
            "This form has expired. Open the link from the mail again.",
        ));
    }
    let token = param(&pairs, "token").unwrap_or_default();
    let password = param(&pairs, "password").unwrap_or_default();
    let t = token.clone();
    match blocking(&st, move |ctx| {
        coffer_service::identity::password_reset::reset(ctx, &t, &password)
    })
    .await
    {
        Ok(()) => Ok(pages::password_reset_done()),
        Err(e) => {
            let api = e.0;
            if api.code == ErrorCode::InputPasswordComplexityError {
                return Ok(pages::password_reset(
                    &token,
                    &csrf,
                    Some(&api.message),
                    StatusCode::UNPROCESSABLE_ENTITY,
                ));
            }
            if api.code == ErrorCode::AccessUser {
                return Ok(pages::error_titled(
                    StatusCode::FORBIDDEN,
                    "Password reset",
                    "This link is invalid, has expired or was used already. Ask for a new one.",
                ));
            }
            Err(RestError::from(Error::Api(api)))
        }
    }
}
