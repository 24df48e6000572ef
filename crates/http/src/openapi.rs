//! `GET /openapi.json`: the OpenAPI 3.1 description of every implemented endpoint, generated
//! from the handlers' annotations.

use actix_web::HttpResponse;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, api: &mut utoipa::openapi::OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
        components.add_security_scheme(
            "scim",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("A SCIM token made with `cofferd scim-token create`"))
                    .build(),
            ),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Coffer", description = "Coffer's REST and OAuth 2.0 interface. Every `/rest` call needs `X-Coffer-Version: 28` (or `apiVersion=28`) and a bearer token."),
    paths(
        crate::home,
        crate::health,
        crate::ready,
        crate::oauth::authorize,
        crate::oauth::sign_in,
        crate::oauth::consent,
        crate::oauth::second_factor,
        crate::oauth::password_step,
        crate::oauth::token,
        crate::oauth::revoke,
        crate::oauth::introspect,
        crate::oauth::metadata,
        crate::oauth::callback,
        crate::account::me,
        crate::account::update_me,
        crate::account::delete_users,
        crate::account::delete_user,
        crate::account::quota,
        crate::account::mobile_number,
        crate::account::ldap_search,
        crate::account::login,
        crate::account::alive_token,
        crate::account::forced_password_change,
        crate::account::tfa_config,
        crate::account::tfa_setup,
        crate::account::tfa_verify,
        crate::account::tfa_reset,
        crate::account::tfa_setup_sms,
        crate::account::tfa_verify_sms,
        crate::account::tfa_reset_sms,
        crate::account::tfa_challenge,
        crate::account::tfa_auth,
        crate::account::password_policy,
        crate::account::system,
        crate::devices::list,
        crate::devices::create,
        crate::devices::get,
        crate::devices::update,
        crate::devices::delete,
        crate::devices::wipe_status,
        crate::devices::complete_wipe,
        crate::devices::request_wipe,
        crate::devices::logout,
        crate::devices::user_devices,
        crate::clients::list,
        crate::clients::create,
        crate::clients::me,
        crate::clients::get,
        crate::clients::update,
        crate::clients::delete,
        crate::clients::scopes,
        crate::locations::list,
        crate::locations::create,
        crate::locations::get,
        crate::locations::delete,
        crate::webhooks::list,
        crate::webhooks::create,
        crate::webhooks::get,
        crate::webhooks::replace,
        crate::webhooks::patch,
        crate::webhooks::delete,
        crate::webhooks::deliveries,
        crate::webhooks::redeliver,
        crate::webhooks::ping,
        crate::scim::list,
        crate::scim::search,
        crate::scim::create,
        crate::scim::get,
        crate::scim::replace,
        crate::scim::patch,
        crate::scim::delete,
        crate::scim::service_provider_config,
        crate::scim::schemas,
        crate::scim::schema,
        crate::scim::resource_types,
        crate::scim::resource_type,
    ),
    components(schemas(
        coffer_service::views::CurrentUser,
        coffer_service::views::ClientView,
        coffer_service::views::DeviceView,
        coffer_service::views::LocationView,
        coffer_service::views::SystemSettingsView,
        coffer_service::views::Link,
        coffer_service::views::MetadataItem,
        coffer_service::webhooks::WebhookView,
        coffer_service::webhooks::DeliveryView,
        coffer_service::webhooks::AttemptView,
    )),
    modifiers(&BearerAuth),
)]
pub struct ApiDoc;

/// The document as JSON.
pub fn document() -> String {
    ApiDoc::openapi()
        .to_json()
        .unwrap_or_else(|_| "{}".to_string())
}

pub async fn serve() -> HttpResponse {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HttpResponse::Ok()
        .content_type("application/json")
        .body(DOC.get_or_init(document).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_is_openapi_3_1_with_every_area() {
        let v: serde_json::Value = serde_json::from_str(&document()).unwrap();
        assert!(v["openapi"].as_str().unwrap().starts_with("3.1"));
        for p in [
            "/rest/devices",
            "/rest/clients/{id}",
            "/rest/locations/{id}",
            "/oauth/token",
            "/rest/users/me",
            "/rest/settings/system",
            "/rest/scim/Users",
            "/rest/scim/Users/{id}",
            "/rest/scim/Schemas",
        ] {
            assert!(v["paths"].get(p).is_some(), "{p}");
        }
    }
}
