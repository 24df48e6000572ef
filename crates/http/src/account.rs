//! `/rest/users/me` and `/rest/settings`.

use crate::error::RestError;
use crate::extract::{Caller, QueryPairs};
use crate::state::{blocking, AppState};
use actix_web::web::{self, Data};
use actix_web::HttpResponse;
use coffer_domain::list::{self, ListSpec};
use coffer_service::views::{CurrentUser, Link, SystemSettingsView};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/users/me").route(web::get().to(me)))
        .service(web::resource("/settings/passwordPolicy").route(web::get().to(password_policy)))
        .service(web::resource("/settings/system").route(web::get().to(system)));
}

#[utoipa::path(get, path = "/rest/users/me", tag = "users", responses((status = 200, body = CurrentUser), (status = 401)), security(("bearer" = [])))]
pub async fn me(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &ListSpec::PLAIN)?;
    let mut u = coffer_service::accounts::current_user(&st.ctx, &c.user)?;
    if q.links() {
        u.links = Some(vec![Link::new(
            "self",
            format!("{}/rest/users/me", st.base_url()),
        )]);
    }
    Ok(HttpResponse::Ok().json(u))
}

#[utoipa::path(get, path = "/rest/settings/passwordPolicy", tag = "settings", responses((status = 200, description = "`{enabled, minLength, minNumeric, minLower, minUpper, minSpecial, allowBrowserAutofill}`")), security(("bearer" = [])))]
pub async fn password_policy(
    Caller(_c): Caller,
    st: Data<AppState>,
) -> Result<HttpResponse, RestError> {
    let p = blocking(&st, coffer_service::settings::password_policy).await?;
    Ok(HttpResponse::Ok().json(p))
}

#[utoipa::path(get, path = "/rest/settings/system", tag = "settings", responses((status = 200, body = SystemSettingsView)), security(("bearer" = [])))]
pub async fn system(Caller(c): Caller, st: Data<AppState>) -> Result<HttpResponse, RestError> {
    let s = blocking(&st, move |ctx| {
        coffer_service::settings::system_settings(ctx, &c.user)
    })
    .await?;
    Ok(HttpResponse::Ok().json(s))
}
