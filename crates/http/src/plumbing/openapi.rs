//! `GET /openapi.json`: the OpenAPI 3.1 description of every implemented endpoint, generated
//! from the handlers' annotations.

use crate::plumbing::operations;
use actix_web::HttpResponse;
use coffer_domain::list::{Kind, ListSpec, Op};
use coffer_errors::{ErrorCode, OAuthErrorCode};
use serde_json::{json, Value};
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
    info(title = "Coffer"),
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
        crate::identity::account::me,
        crate::identity::account::update_me,
        crate::identity::account::delete_users,
        crate::identity::account::delete_user,
        crate::identity::admin_users::list,
        crate::identity::admin_users::create,
        crate::identity::admin_users::get,
        crate::identity::admin_users::update,
        crate::identity::admin_users::devices,
        crate::identity::admin_users::admin_roles,
        crate::identity::admin_users::delete_totp_secret,
        crate::identity::admin_users::settings,
        crate::identity::admin_users::update_settings,
        crate::identity::account::quota,
        crate::identity::account::mobile_number,
        crate::identity::account::ldap_search,
        crate::identity::account::login,
        crate::identity::account::request_password_reset,
        crate::identity::account::reset_password,
        crate::identity::reset_page::show,
        crate::identity::reset_page::submit,
        crate::identity::account::alive_token,
        crate::identity::account::forced_password_change,
        crate::identity::account::tfa_config,
        crate::identity::account::tfa_setup,
        crate::identity::account::tfa_verify,
        crate::identity::account::tfa_reset,
        crate::identity::account::tfa_setup_sms,
        crate::identity::account::tfa_verify_sms,
        crate::identity::account::tfa_reset_sms,
        crate::identity::account::tfa_challenge,
        crate::identity::account::tfa_auth,
        crate::identity::account::password_policy,
        crate::identity::account::system,
        crate::identity::devices::list,
        crate::identity::devices::create,
        crate::identity::devices::get,
        crate::identity::devices::update,
        crate::identity::devices::delete,
        crate::identity::devices::wipe_status,
        crate::identity::devices::complete_wipe,
        crate::identity::devices::request_wipe,
        crate::identity::devices::logout,
        crate::identity::devices::user_devices,
        crate::identity::clients::list,
        crate::identity::clients::create,
        crate::identity::clients::me,
        crate::identity::clients::get,
        crate::identity::clients::update,
        crate::identity::clients::delete,
        crate::identity::clients::scopes,
        crate::platform::locations::list,
        crate::platform::locations::create,
        crate::platform::locations::get,
        crate::platform::locations::delete,
        crate::mail::contacts::list,
        crate::mail::contacts::create,
        crate::mail::contacts::get,
        crate::mail::contacts::update,
        crate::mail::contacts::delete,
        crate::mail::list,
        crate::mail::get,
        crate::mail::send,
        crate::mail::send_draft,
        crate::mail::delete,
        crate::mail::initiate_upload,
        crate::mail::recipients,
        crate::mail::attachments,
        crate::mail::attachment_content,
        crate::mail::counters,
        crate::mail::shared_mailboxes::counters,
        crate::mail::read,
        crate::mail::unread,
        crate::mail::trash,
        crate::mail::withdraw,
        crate::mail::withdraw_files,
        crate::mail::shared_mailboxes::list,
        crate::mail::shared_mailboxes::set_status,
        crate::mail::shared_mailboxes::settings,
        crate::web_forms::list,
        crate::web_forms::get,
        crate::web_forms::mailbox_forms,
        crate::web_forms::show,
        crate::web_forms::submit,
        crate::web_forms::start,
        crate::web_forms::public_initiate,
        crate::request_files::page::show,
        crate::mail::shared_mailboxes::admin_list,
        crate::mail::shared_mailboxes::convert,
        crate::mail::shared_mailboxes::dissolve,
        crate::mail::shared_mailboxes::replace_members,
        crate::identity::external_dl::list,
        crate::identity::external_dl::add,
        crate::identity::external_dl::remove,
        crate::identity::external_dl::check,
        crate::identity::ssh_keys::list,
        crate::identity::ssh_keys::create,
        crate::identity::ssh_keys::generate,
        crate::identity::ssh_keys::delete,
        crate::identity::ssh_keys::admin_list,
        crate::identity::ssh_keys::admin_create,
        crate::identity::ssh_keys::admin_generate,
        crate::content::top,
        crate::content::shared,
        crate::content::get_folder,
        crate::sources::types,
        crate::sources::source_type,
        crate::sources::list,
        crate::sources::create,
        crate::sources::get,
        crate::sources::delete,
        crate::sources::auth_info,
        crate::sources::set_auth,
        crate::sources::auth_status,
        crate::sources::site_search,
        crate::sources::cloud_auth,
        crate::sources::pin,
        crate::sources::unpin,
        crate::sources::children,
        crate::sources::folders,
        crate::sources::files,
        crate::sources::file,
        crate::sources::folder,
        crate::sources::delete_file,
        crate::sources::delete_folder,
        crate::sources::preview,
        crate::sources::content,
        crate::sources::external_edit,
        crate::sources::lock,
        crate::sources::unlock,
        crate::sources::initiate_download,
        crate::sources::transfer_status,
        crate::sources::download_by_transaction,
        crate::sources::upload,
        crate::sources::replace,
        crate::sources::return_file,
        crate::favorites::list,
        crate::favorites::add,
        crate::favorites::remove,
        crate::favorites::mark_folders,
        crate::favorites::unmark_folders,
        crate::notifications::set,
        crate::notifications::list,
        crate::notifications::remove,
        crate::request_files::from_folder,
        crate::request_files::from_mail,
        crate::request_files::get,
        crate::request_files::withdraw,
        crate::request_files::preview,
        crate::request_files::sources,
        crate::request_files::source,
        crate::request_files::source_content,
        crate::request_files::source_view,
        crate::request_files::uploads_list,
        crate::request_files::upload,
        crate::request_files::delete_upload,
        crate::request_files::upload_content,
        crate::request_files::reply,
        crate::request_files::initiate_upload,
        crate::request_files::upload_file,
        crate::request_files::comment,
        crate::request_files::send_code,
        crate::request_files::verify_code,
        crate::search::search,
        crate::search::query,
        crate::dli::user_activities,
        crate::dli::file_activities,
        crate::dli::folder_activities,
        crate::dli::file,
        crate::dli::folder,
        crate::dli::file_path,
        crate::dli::versions,
        crate::dli::version,
        crate::dli::content,
        crate::dli::version_content,
        crate::dli::preview,
        crate::dli::preview_content,
        crate::dli::user_mail,
        crate::dli::mail_recipients,
        crate::dli::mail_attachments,
        crate::dli::export_list,
        crate::dli::export_create,
        crate::dli::export_get,
        crate::dli::export_delete,
        crate::dli::export_content,
        crate::content::create_folder,
        crate::content::subfolders,
        crate::content::children,
        crate::content::folder_files,
        crate::content::update_folder,
        crate::content::delete_folder,
        crate::content::recover_folder,
        crate::content::move_folder,
        crate::content::copy_folder,
        crate::content::tree,
        crate::content::members,
        crate::content::add_members,
        crate::content::remove_member,
        crate::content::roles,
        crate::content::get_file,
        crate::content::update_file,
        crate::content::delete_file,
        crate::content::recover_file,
        crate::content::file_path,
        crate::content::get_version,
        crate::content::move_files,
        crate::content::copy_files,
        crate::content::comments,
        crate::content::add_comment,
        crate::content::transfer::initiate_in_folder,
        crate::content::transfer::initiate_version,
        crate::content::transfer::list_uploads,
        crate::content::transfer::upload_config,
        crate::content::transfer::get_upload,
        crate::content::transfer::delete_upload,
        crate::content::transfer::chunk,
        crate::content::transfer::upload_file,
        crate::content::transfer::new_version,
        crate::content::transfer::versions,
        crate::content::transfer::content,
        crate::content::transfer::version_content,
        crate::content::transfer::preview,
        crate::content::transfer::preview_content,
        crate::platform::webhooks::list,
        crate::platform::webhooks::create,
        crate::platform::webhooks::get,
        crate::platform::webhooks::replace,
        crate::platform::webhooks::patch,
        crate::platform::webhooks::delete,
        crate::platform::webhooks::deliveries,
        crate::platform::webhooks::redeliver,
        crate::platform::webhooks::ping,
        crate::identity::scim::list,
        crate::identity::scim::search,
        crate::identity::scim::create,
        crate::identity::scim::get,
        crate::identity::scim::replace,
        crate::identity::scim::patch,
        crate::identity::scim::delete,
        crate::identity::scim::service_provider_config,
        crate::identity::scim::schemas,
        crate::identity::scim::schema,
        crate::identity::scim::resource_types,
        crate::identity::scim::resource_type,
    ),
    components(schemas(
        crate::plumbing::schema::RestErrors,
        crate::plumbing::schema::RestErrorItem,
        crate::plumbing::schema::RestBadRequest,
        crate::plumbing::schema::LegacyError,
        crate::plumbing::schema::OAuthErrorBody,
        crate::plumbing::schema::WebhookErrorBody,
        crate::plumbing::schema::ScimErrorBody,
        coffer_service::platform::views::CurrentUser,
        coffer_service::identity::admin_users::AdminUserView,
        coffer_service::identity::admin_users::AdminRoleView,
        coffer_service::identity::admin_users::UserSettingsView,
        coffer_service::platform::views::ClientView,
        coffer_service::platform::views::DeviceView,
        coffer_service::platform::views::LocationView,
        coffer_service::mail::contacts::ContactView,
        coffer_service::mail::contacts::ContactItemView,
        coffer_service::mail::MailView,
        coffer_service::mail::PersonView,
        coffer_service::mail::RecipientView,
        coffer_service::mail::AttachmentView,
        coffer_service::mail::MailCounters,
        coffer_service::mail::MailIdCounters,
        coffer_service::mail::MailCountersList,
        coffer_service::mail::BulkResult,
        coffer_service::mail::BulkError,
        coffer_service::mail::shared_mailboxes::SharedMailboxView,
        coffer_service::mail::shared_mailboxes::UserBasicView,
        coffer_service::mail::shared_mailboxes::SharedMailboxSettingView,
        coffer_service::mail::shared_mailboxes::SendOptionView,
        coffer_service::identity::external_dls::ExternalDlView,
        coffer_service::identity::external_dls::DistributionListCheck,
        coffer_service::platform::views::SystemSettingsView,
        coffer_service::platform::views::Link,
        coffer_service::platform::views::MetadataItem,
        coffer_service::platform::webhooks::WebhookView,
        coffer_service::platform::webhooks::DeliveryView,
        coffer_service::platform::webhooks::AttemptView,
        coffer_service::content::views::FolderView,
        coffer_service::content::views::FileView,
        coffer_service::content::views::VersionView,
        coffer_service::content::views::UploadView,
        coffer_service::content::views::UploadConfig,
        coffer_service::content::views::CommentView,
        coffer_service::content::views::MemberView,
        coffer_service::content::views::RoleView,
        coffer_service::content::views::PathItem,
        coffer_service::content::views::PreviewView,
        coffer_service::content::views::Fingerprint,
        coffer_service::content::sharing::AddMembers,
        coffer_service::sources::manage::SourceTypeView,
        coffer_service::sources::manage::SourceView,
        coffer_service::sources::manage::EcmAuthView,
        coffer_service::sources::browse::SourceContentView,
        coffer_service::sources::browse::PreviewView,
        coffer_service::sources::transfer::TransferView,
        coffer_service::sources::edit::RefreshTokenView,
        crate::sources::SiteSearchView,
        crate::sources::SiteView,
        crate::plumbing::schema::SourceBody,
        crate::plumbing::schema::SourceLoginBody,
        crate::plumbing::schema::CloudAuthBody,
        crate::plumbing::schema::PinsBody,
        coffer_service::favorites::FavoriteView,
        coffer_service::favorites::Creator,
        coffer_service::notifications::NotificationView,
        coffer_service::request_files::RequestFileView,
        coffer_service::request_files::UserBasic,
        coffer_service::request_files::RequestMailView,
        coffer_service::request_files::RequestFileConfig,
        coffer_service::request_files::RequestFileSourceView,
        coffer_service::request_files::PermissionView,
        coffer_service::request_files::RequestFileUploadView,
        crate::request_files::FolderRequestBody,
        crate::request_files::MailRequestBody,
        crate::request_files::ReplyBody,
        crate::request_files::VerifyCodeBody,
        crate::request_files::CodeSentView,
        crate::request_files::CodeSessionView,
        coffer_service::search::SearchView,
        coffer_service::search::SearchMetadata,
        coffer_service::search::QueryView,
        coffer_service::dli::activities::ActivityView,
        coffer_service::dli::exports::ExportView,
        crate::dli::ExportBody,
        coffer_service::identity::ssh_keys::SshKeyView,
        coffer_service::identity::ssh_keys::GeneratedKey,
    )),
    modifiers(&BearerAuth),
)]
pub struct ApiDoc;

/// What the document says that depends on the server serving it.
pub struct Site<'a> {
    /// The brand of the version header (`COFFER_VERSION_BRAND`): the header is `X-<brand>-Version`.
    pub version_brand: &'a str,
    /// The base URL clients reach the server at (`COFFER_BASE_URL`), the document's `servers`.
    pub base_url: &'a str,
}

/// The document as JSON, for the default brand and base URL.
pub fn document() -> String {
    document_for(&Site {
        version_brand: "Coffer",
        base_url: "http://localhost:8080",
    })
}

/// The document as JSON for one server: its version header and its base URL.
pub fn document_for(site: &Site) -> String {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_default();
    let version_header = format!("X-{}-Version", site.version_brand);
    doc["info"]["description"] = format!(
        "Coffer's REST and OAuth 2.0 interface. Every `/rest` call needs `{version_header}: 28` \
         (or `apiVersion=28`) and a bearer token."
    )
    .into();
    doc["servers"] = json!([{
        "url": site.base_url.trim_end_matches('/'),
        "description": "This server (its configured base URL)",
    }]);
    conventions(&mut doc, &version_header, site.version_brand);
    refine(&mut doc);
    clean_text(&mut doc);
    describe(&mut doc);
    doc.to_string()
}

pub async fn serve(st: actix_web::web::Data<crate::AppState>) -> HttpResponse {
    // One document per brand and base URL (servers in one process, as in the tests, may be
    // configured differently); each is built once.
    type Docs = std::collections::HashMap<(String, String), std::sync::Arc<str>>;
    static DOCS: std::sync::OnceLock<std::sync::Mutex<Docs>> = std::sync::OnceLock::new();
    let config = &st.ctx.config;
    let key = (config.version_brand.clone(), config.base_url.clone());
    let doc = {
        let mut docs = DOCS
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        docs.entry(key)
            .or_insert_with_key(|(brand, base)| {
                document_for(&Site {
                    version_brand: brand,
                    base_url: base,
                })
                .into()
            })
            .clone()
    };
    HttpResponse::Ok()
        .content_type("application/json")
        .body(doc.to_string())
}

/// The operations' words ([`operations::TEXTS`]) and, on every error response, the codes its
/// answer can carry (`x-error-codes`), listed in its description as well, where a reader of the
/// interactive reference sees them. The codes of a REST or OAuth envelope are those its
/// description names in backquotes, those [`operations::CODES`] adds, those a status has alone
/// in the catalogue, and those the conventions answer with ([`conventional_codes`]); a SCIM
/// error's are the `scimType` values its description names. A refusal of an HTML page
/// ([`PAGES`]) is the page, and carries no code.
fn describe(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let area = Area::of(path);
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in item.iter_mut() {
            if let Some((_, _, summary, description)) = operations::TEXTS
                .iter()
                .find(|(m, p, _, _)| m == method && p == path)
            {
                op["summary"] = (*summary).into();
                op["description"] = (*description).into();
            }
            let has_body = op.get("requestBody").is_some();
            let secured = op.get("security").is_some();
            let reads_list = LISTS.iter().any(|(m, p, _)| m == method && p == path);
            let Some(responses) = op.get_mut("responses").and_then(Value::as_object_mut) else {
                continue;
            };
            for (status, r) in responses.iter_mut() {
                let Ok(code) = status.parse::<u16>() else {
                    continue;
                };
                if code < 400 {
                    continue;
                }
                let text = r["description"].as_str().unwrap_or_default().to_string();
                let mut codes: Vec<String> = Vec::new();
                let mut add = |c: &str| {
                    if !codes.iter().any(|k| k == c) {
                        codes.push(c.to_string());
                    }
                };
                let envelope = r
                    .pointer("/content")
                    .and_then(Value::as_object)
                    .and_then(|c| c.values().next())
                    .and_then(|m| m.pointer("/schema/$ref"))
                    .and_then(Value::as_str)
                    .and_then(|r| r.rsplit('/').next())
                    .unwrap_or_default()
                    .to_string();
                let page = PAGES.iter().any(|(m, p)| m == method && p == path);
                if page && !matches!(code, 408 | 413 | 490) {
                    // A page's refusal is the page itself, with the reason in words.
                    r["content"] = json!({"text/html": {"schema": {"type": "string"}}});
                    continue;
                }
                match envelope.as_str() {
                    "RestErrors" | "RestBadRequest" => {
                        named_codes(&text).iter().for_each(|c| add(c));
                        for (_, _, _, extra) in operations::CODES
                            .iter()
                            .filter(|(m, p, s, _)| m == method && p == path && *s == code)
                        {
                            extra.iter().for_each(|c| add(c.as_str()));
                        }
                        for c in conventional_codes(area, code, secured, has_body, reads_list) {
                            add(c);
                        }
                        if let [only] = ErrorCode::ALL
                            .iter()
                            .filter(|c| c.status() == code)
                            .collect::<Vec<_>>()
                            .as_slice()
                        {
                            add(only.as_str());
                        }
                    }
                    "OAuthErrorBody" => {
                        for c in oauth_codes(path, code) {
                            add(c.as_str());
                        }
                    }
                    "ScimErrorBody" => {
                        scim_types(&text).iter().for_each(|c| add(c));
                        if code == 400 {
                            add("invalidSyntax");
                        }
                    }
                    _ => {}
                }
                if codes.is_empty() {
                    continue;
                }
                let listed = codes.iter().all(|c| text.contains(&format!("`{c}`")));
                if !listed {
                    let list: Vec<String> = codes.iter().map(|c| format!("`{c}`")).collect();
                    let joined = if text.is_empty() {
                        format!("Codes: {}", list.join(", "))
                    } else {
                        format!("{text}. Codes: {}", list.join(", "))
                    };
                    r["description"] = joined.into();
                }
                r["x-error-codes"] = json!(codes);
            }
        }
    }
}

/// The HTML pages: their refusals are pages too (an error page, or the form again with the
/// reason), except those of the layers every request passes (408, 413, 490).
const PAGES: &[(&str, &str)] = &[
    ("get", "/oauth/authorize"),
    ("post", "/oauth/authorize"),
    ("post", "/oauth/tfa"),
    ("post", "/oauth/password"),
    ("post", "/oauth/consent"),
    ("get", "/oauth_callback.php"),
    ("get", "/passwordReset"),
    ("post", "/passwordReset"),
    ("get", "/forms/{id}"),
    ("post", "/forms/{id}"),
];

/// The catalogue codes a description names in backquotes (`` `ERR_…` ``).
fn named_codes(text: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    for part in text.split('`').skip(1).step_by(2) {
        if let Some(c) = ErrorCode::ALL.iter().find(|c| c.as_str() == part) {
            out.push(c.as_str());
        }
    }
    out
}

/// The `scimType` values a SCIM error's description names in backquotes.
fn scim_types(text: &str) -> Vec<&str> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| !w.is_empty() && w.chars().all(|c| c.is_ascii_alphabetic()))
        .collect()
}

/// The codes what holds for a whole area answers with (see [`conventions`]).
fn conventional_codes(
    area: Area,
    status: u16,
    secured: bool,
    has_body: bool,
    reads_list: bool,
) -> Vec<&'static str> {
    let mut out: Vec<ErrorCode> = Vec::new();
    match status {
        400 if area == Area::Rest => {
            out.extend([
                ErrorCode::RequestApiVersionMissing,
                ErrorCode::RequestVersionNotSupported,
            ]);
            if has_body {
                out.push(ErrorCode::RequestInvalidJson);
            }
            if reads_list {
                out.push(ErrorCode::RequestInvalidFilter);
            }
        }
        401 if secured => out.push(ErrorCode::AuthUnauthorized),
        408 => out.push(ErrorCode::RequestTimeout),
        413 if has_body => out.push(ErrorCode::RequestTooLarge),
        422 if reads_list => out.extend([
            ErrorCode::InputNotBoolean,
            ErrorCode::InputNotInteger,
            ErrorCode::InputInvalidFormat,
        ]),
        490 => out.push(ErrorCode::RequestBlockedByWaf),
        _ => {}
    }
    out.into_iter().map(ErrorCode::as_str).collect()
}

/// The `error` values of the OAuth endpoints.
fn oauth_codes(path: &str, status: u16) -> Vec<OAuthErrorCode> {
    use OAuthErrorCode::*;
    match (path, status) {
        ("/oauth/token", 400) => vec![
            InvalidRequest,
            InvalidClient,
            InvalidGrant,
            UnauthorizedClient,
            UnsupportedGrantType,
            InvalidScope,
        ],
        (_, 400) => vec![InvalidRequest, InvalidClient],
        (_, 429 | 503) => vec![TemporarilyUnavailable],
        _ => Vec::new(),
    }
}

/// The areas of the interface, each with its own error envelope.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Area {
    /// `/rest/...`: version header, REST envelope.
    Rest,
    /// `/rest/scim/...`: SCIM token, SCIM errors.
    Scim,
    /// `/webhooks...`: webhook envelope.
    Webhooks,
    /// `/oauth/token`, `/oauth/revoke`, `/oauth/introspect`: OAuth errors.
    OAuthApi,
    /// The HTML pages of the authorization flow, the metadata, the operational endpoints.
    Other,
}

impl Area {
    fn of(path: &str) -> Area {
        if path.starts_with("/rest/scim") {
            Area::Scim
        } else if path.starts_with("/rest/") {
            Area::Rest
        } else if path.starts_with("/webhooks") {
            Area::Webhooks
        } else if matches!(path, "/oauth/token" | "/oauth/revoke" | "/oauth/introspect") {
            Area::OAuthApi
        } else {
            Area::Other
        }
    }

    /// The media type and schema of this area's errors.
    fn error(self) -> (&'static str, &'static str) {
        match self {
            Area::Rest | Area::Other => ("application/json", "RestErrors"),
            Area::Scim => ("application/scim+json", "ScimErrorBody"),
            Area::Webhooks => ("application/json", "WebhookErrorBody"),
            Area::OAuthApi => ("application/json", "OAuthErrorBody"),
        }
    }
}

/// The operations that read the list grammar (`coffer_domain::list`), with the grammar each
/// reads; their query parameters are generated from it, so the document says exactly what the
/// parser takes.
const LISTS: &[(&str, &str, &ListSpec)] = &[
    ("get", "/rest/users/me", &ListSpec::PLAIN),
    (
        "delete",
        "/rest/users",
        &crate::identity::account::DELETE_SPEC,
    ),
    (
        "get",
        "/rest/users/me/quota",
        &crate::identity::account::QUOTA_SPEC,
    ),
    (
        "get",
        "/rest/users/ldapSearch",
        &crate::identity::account::LDAP_SPEC,
    ),
    ("get", "/rest/clients", &crate::identity::clients::LIST),
    ("post", "/rest/clients", &ListSpec::PLAIN),
    ("get", "/rest/clients/me", &ListSpec::PLAIN),
    ("get", "/rest/clients/{id}", &ListSpec::PLAIN),
    ("get", "/rest/clients/{id}/scopes", &ListSpec::PLAIN),
    ("get", "/rest/devices", &crate::identity::devices::LIST),
    (
        "get",
        "/rest/users/{id}/devices",
        &crate::identity::devices::LIST,
    ),
    (
        "get",
        "/rest/admin/users",
        &crate::identity::admin_users::LIST,
    ),
    ("post", "/rest/admin/users", &ListSpec::PLAIN),
    ("get", "/rest/admin/users/{id}", &ListSpec::PLAIN),
    ("put", "/rest/admin/users/{id}", &ListSpec::PLAIN),
    (
        "get",
        "/rest/admin/users/{id}/devices",
        &crate::identity::devices::LIST,
    ),
    ("get", "/rest/admin/users/{id}/adminRoles", &ListSpec::PLAIN),
    ("get", "/rest/users/{id}/settings", &ListSpec::PLAIN),
    ("put", "/rest/users/{id}/settings", &ListSpec::PLAIN),
    ("post", "/rest/devices", &ListSpec::PLAIN),
    ("get", "/rest/userSshPublicKeys", &ListSpec::PLAIN),
    ("post", "/rest/userSshPublicKeys/create", &ListSpec::PLAIN),
    ("post", "/rest/userSshPublicKeys/generate", &ListSpec::PLAIN),
    ("delete", "/rest/userSshPublicKeys/{id}", &ListSpec::PLAIN),
    (
        "get",
        "/rest/admin/users/{id}/userSshPublicKeys",
        &ListSpec::PLAIN,
    ),
    (
        "post",
        "/rest/admin/users/{id}/userSshPublicKeys/create",
        &ListSpec::PLAIN,
    ),
    (
        "post",
        "/rest/admin/users/{id}/userSshPublicKeys/generate",
        &ListSpec::PLAIN,
    ),
    ("get", "/rest/devices/{id}", &ListSpec::PLAIN),
    ("get", "/rest/locations", &crate::platform::locations::LIST),
    ("post", "/rest/locations", &ListSpec::PLAIN),
    ("get", "/rest/locations/{id}", &ListSpec::PLAIN),
    ("get", "/rest/contacts", &crate::mail::contacts::LIST),
    ("post", "/rest/contacts", &ListSpec::PLAIN),
    ("get", "/rest/contacts/{id}", &ListSpec::PLAIN),
    (
        "get",
        "/rest/sharedMailboxes",
        &crate::mail::shared_mailboxes::LIST,
    ),
    (
        "get",
        "/rest/admin/sharedMailboxes",
        &crate::mail::shared_mailboxes::LIST,
    ),
    (
        "delete",
        "/rest/admin/sharedMailboxes",
        &crate::mail::shared_mailboxes::DELETE,
    ),
    (
        "get",
        "/rest/externalDL",
        &crate::identity::external_dl::LIST,
    ),
    ("get", "/rest/webForms", &crate::web_forms::LIST),
    ("get", "/rest/webForms/{id}", &crate::web_forms::ONE),
    (
        "get",
        "/rest/sharedMailboxes/{id}/webForms",
        &crate::web_forms::ONE,
    ),
    ("get", "/rest/mail", &crate::mail::LIST),
    ("get", "/rest/mail/{id}", &crate::mail::ONE),
    ("post", "/rest/mail/actions/sendFile", &crate::mail::SEND),
    (
        "put",
        "/rest/mail/{id}/actions/sendFile",
        &crate::mail::SEND,
    ),
    (
        "get",
        "/rest/mail/{id}/recipients",
        &crate::mail::RECIPIENTS,
    ),
    (
        "get",
        "/rest/mail/{id}/attachments",
        &crate::mail::ATTACHMENTS,
    ),
    (
        "get",
        "/rest/mail/{email_id}/attachments/{id}/content",
        &ListSpec::PLAIN,
    ),
    ("get", "/rest/mail/actions/counters", &crate::mail::COUNTERS),
    (
        "get",
        "/rest/sharedMailboxes/mail/actions/counters",
        &crate::mail::shared_mailboxes::COUNTERS,
    ),
    ("patch", "/rest/mail/actions/read", &crate::mail::BULK),
    ("patch", "/rest/mail/actions/unread", &crate::mail::BULK),
    ("patch", "/rest/mail/actions/trash", &crate::mail::BULK),
    ("post", "/rest/mail/actions/withdraw", &ListSpec::PLAIN),
    (
        "post",
        "/rest/mail/{id}/actions/withdrawFiles",
        &crate::mail::WITHDRAW_FILES,
    ),
    ("get", "/rest/folders/top", &crate::content::CHILDREN),
    ("get", "/rest/folders/shared", &crate::content::SHARED),
    ("get", "/rest/folders/{id}", &crate::content::ONE),
    ("post", "/rest/folders/{id}/folders", &crate::content::ONE),
    (
        "get",
        "/rest/folders/{id}/folders",
        &crate::content::CHILDREN,
    ),
    (
        "get",
        "/rest/folders/{id}/children",
        &crate::content::CHILDREN,
    ),
    ("get", "/rest/folders/{id}/files", &crate::content::CHILDREN),
    ("put", "/rest/folders/{id}", &crate::content::ONE),
    (
        "patch",
        "/rest/folders/{id}/actions/recover",
        &crate::content::ONE,
    ),
    (
        "post",
        "/rest/folders/{id}/actions/move",
        &crate::content::ONE,
    ),
    (
        "post",
        "/rest/folders/{id}/actions/copy",
        &crate::content::ONE,
    ),
    (
        "get",
        "/rest/folders/{id}/members",
        &crate::content::MEMBER_LIST,
    ),
    (
        "post",
        "/rest/folders/{id}/members",
        &crate::content::ADD_MEMBERS,
    ),
    (
        "delete",
        "/rest/folders/{id}/members/{member}",
        &crate::content::MEMBERS,
    ),
    ("get", "/rest/roles", &crate::content::ROLES),
    ("get", "/rest/files/{id}", &crate::content::FILE),
    ("put", "/rest/files/{id}", &crate::content::ONE),
    (
        "patch",
        "/rest/files/{id}/actions/recover",
        &crate::content::ONE,
    ),
    (
        "post",
        "/rest/files/actions/move",
        &crate::content::BULK_OPTIONAL,
    ),
    (
        "post",
        "/rest/files/actions/copy",
        &crate::content::BULK_OPTIONAL,
    ),
    (
        "get",
        "/rest/files/{id}/comments",
        &crate::content::COMMENTS,
    ),
    ("post", "/rest/files/{id}/comments", &crate::content::ONE),
    (
        "get",
        "/rest/files/{id}/versions",
        &crate::content::VERSIONS,
    ),
    ("post", "/rest/files/{id}/versions", &crate::content::ONE),
    (
        "post",
        "/rest/folders/{id}/actions/file",
        &crate::content::ONE,
    ),
    (
        "get",
        "/rest/files/{id}/content",
        &crate::content::transfer::CONTENT,
    ),
    (
        "get",
        "/rest/files/{id}/versions/{version}/content",
        &ListSpec::PLAIN,
    ),
    ("get", "/rest/files/{id}/preview/content", &ListSpec::PLAIN),
    ("get", "/rest/uploads", &crate::content::transfer::UPLOADS),
    ("get", "/rest/uploads/{id}", &crate::content::ONE),
    ("get", "/rest/folders/{id}/tree", &crate::content::TREE),
    ("get", "/rest/sourceTypes", &crate::sources::TYPES),
    ("get", "/rest/sourceTypes/{id}", &ListSpec::PLAIN),
    ("get", "/rest/sources", &crate::sources::SOURCES),
    ("post", "/rest/sources", &ListSpec::PLAIN),
    ("get", "/rest/sources/{id}", &ListSpec::PLAIN),
    ("delete", "/rest/sources/{id}", &ListSpec::PLAIN),
    ("get", "/rest/sources/{id}/auth", &ListSpec::PLAIN),
    ("post", "/rest/sources/{id}/auth", &ListSpec::PLAIN),
    ("get", "/rest/sources/{id}/authStatus", &ListSpec::PLAIN),
    (
        "get",
        "/rest/sources/{id}/query",
        &crate::sources::SITE_QUERY,
    ),
    ("post", "/rest/sources/auth", &ListSpec::PLAIN),
    ("post", "/rest/users/me/pins", &ListSpec::PLAIN),
    ("delete", "/rest/users/me/pins", &ListSpec::PLAIN),
    (
        "get",
        "/rest/sources/{id}/children",
        &crate::sources::CHILDREN,
    ),
    ("get", "/rest/sources/{id}/folders", &crate::sources::BROWSE),
    ("get", "/rest/sources/{id}/files", &crate::sources::BROWSE),
    ("get", "/rest/sources/files/{id}", &crate::sources::ONE),
    ("get", "/rest/sources/folders/{id}", &crate::sources::ONE),
    (
        "delete",
        "/rest/sources/files/{id}",
        &crate::sources::DELETE_FILE,
    ),
    ("delete", "/rest/sources/folders/{id}", &ListSpec::PLAIN),
    ("get", "/rest/sources/{id}/preview", &ListSpec::PLAIN),
    (
        "get",
        "/rest/sources/{id}/content",
        &crate::sources::CONTENT,
    ),
    (
        "get",
        "/rest/sources/{id}/externalEdit",
        &crate::sources::EXTERNAL_EDIT,
    ),
    ("patch", "/rest/sources/actions/lock", &crate::sources::BULK),
    (
        "patch",
        "/rest/sources/actions/unlock",
        &crate::sources::BULK,
    ),
    (
        "post",
        "/rest/sources/{id}/actions/initiateDownload",
        &ListSpec::PLAIN,
    ),
    (
        "get",
        "/rest/sources/files/actions/transferStatus",
        &crate::sources::TRANSFER_STATUS,
    ),
    (
        "get",
        "/rest/sources/actions/downloadByTransaction",
        &crate::sources::BY_TRANSACTION,
    ),
    ("post", "/rest/sources/{id}/actions/file", &ListSpec::PLAIN),
    ("post", "/rest/sources/actions/files/{id}", &ListSpec::PLAIN),
    ("patch", "/rest/files/{id}/actions/return", &ListSpec::PLAIN),
    ("get", "/rest/favorites", &crate::favorites::LIST),
    ("post", "/rest/favorites", &ListSpec::PLAIN),
    ("delete", "/rest/favorites/{id}", &ListSpec::PLAIN),
    (
        "post",
        "/rest/folders/actions/favorite",
        &crate::favorites::BULK,
    ),
    (
        "delete",
        "/rest/folders/actions/favorite",
        &crate::favorites::BULK,
    ),
    (
        "put",
        "/rest/folders/{id}/actions/setNotifications",
        &crate::notifications::SET,
    ),
    ("get", "/rest/notifications", &crate::notifications::LIST),
    (
        "delete",
        "/rest/notifications/{object_id}",
        &ListSpec::PLAIN,
    ),
    (
        "post",
        "/rest/folders/{id}/actions/requestFile",
        &ListSpec::PLAIN,
    ),
    ("post", "/rest/mail/actions/requestFile", &ListSpec::PLAIN),
    ("get", "/rest/requestFile/{ref}", &crate::request_files::GET),
    ("delete", "/rest/requestFile/{ref}", &ListSpec::PLAIN),
    (
        "get",
        "/rest/requestFile/{ref}/preview/{object_id}",
        &ListSpec::PLAIN,
    ),
    (
        "get",
        "/rest/requestFile/{ref}/sources",
        &crate::request_files::PAGED,
    ),
    (
        "get",
        "/rest/requestFile/{ref}/sources/{object_id}",
        &crate::request_files::ONE,
    ),
    (
        "get",
        "/rest/requestFile/{ref}/sources/{object_id}/content",
        &crate::request_files::CONTENT,
    ),
    (
        "get",
        "/rest/requestFile/{ref}/uploads",
        &crate::request_files::PAGED,
    ),
    (
        "get",
        "/rest/requestFile/{ref}/uploads/{object_id}",
        &crate::request_files::ONE,
    ),
    (
        "delete",
        "/rest/requestFile/{ref}/uploads/{object_id}",
        &ListSpec::PLAIN,
    ),
    (
        "get",
        "/rest/requestFile/{ref}/uploads/{object_id}/content",
        &ListSpec::PLAIN,
    ),
    ("post", "/rest/requestFile/{ref}/reply", &ListSpec::PLAIN),
    (
        "post",
        "/rest/requestFile/{ref}/actions/initiateUpload",
        &ListSpec::PLAIN,
    ),
    (
        "post",
        "/rest/requestFile/{ref}/actions/file",
        &crate::request_files::ONE,
    ),
    (
        "post",
        "/rest/requestFile/{ref}/comment/{object_id}",
        &crate::request_files::ONE,
    ),
    (
        "post",
        "/rest/requestFile/{ref}/actions/sendCode",
        &ListSpec::PLAIN,
    ),
    (
        "post",
        "/rest/requestFile/{ref}/actions/verifyCode",
        &ListSpec::PLAIN,
    ),
    (
        "get",
        "/rest/dli/users/{id}/activities",
        &crate::dli::ACTIVITIES,
    ),
    (
        "get",
        "/rest/dli/files/{fileId}/users/{userId}/activities",
        &crate::dli::ACTIVITIES,
    ),
    (
        "get",
        "/rest/dli/folders/{folderId}/users/{userId}/activities",
        &crate::dli::ACTIVITIES,
    ),
    ("get", "/rest/dli/files/{id}", &ListSpec::PLAIN),
    ("get", "/rest/dli/folders/{id}", &ListSpec::PLAIN),
    ("get", "/rest/dli/files/{id}/path", &ListSpec::PLAIN),
    (
        "get",
        "/rest/dli/files/{id}/versions",
        &crate::dli::VERSIONS,
    ),
    (
        "get",
        "/rest/dli/files/{id}/versions/{version_id}",
        &ListSpec::PLAIN,
    ),
    ("get", "/rest/dli/files/{id}/content", &ListSpec::PLAIN),
    (
        "get",
        "/rest/dli/files/{id}/versions/{version_id}/content",
        &ListSpec::PLAIN,
    ),
    ("get", "/rest/dli/files/{id}/preview", &ListSpec::PLAIN),
    (
        "get",
        "/rest/dli/files/{id}/preview/content",
        &ListSpec::PLAIN,
    ),
    ("get", "/rest/dli/users/{id}/mail", &crate::dli::MAIL),
    (
        "get",
        "/rest/dli/mail/{id}/recipients",
        &crate::dli::RECIPIENTS,
    ),
    (
        "get",
        "/rest/dli/mail/{id}/attachments",
        &crate::mail::ATTACHMENTS,
    ),
    ("get", "/rest/dli/exports", &crate::dli::EXPORTS),
    ("post", "/rest/dli/exports/users/{id}", &ListSpec::PLAIN),
    ("get", "/rest/dli/exports/{id}", &ListSpec::PLAIN),
    ("delete", "/rest/dli/exports/{id}", &ListSpec::PLAIN),
    ("get", "/rest/dli/exports/{id}/content", &ListSpec::PLAIN),
];

/// A value of an `:in` filter or `id:in`: a comma-separated list (optionally in parentheses)
/// with at least one item that is not blank.
const EMPTY_LIST: &str = "^\\s*(\\([,\\s]*\\)|[,\\s]*)\\s*$";

fn query(name: &str, required: bool, schema: Value, description: &str) -> Value {
    let mut p = json!({"name": name, "in": "query", "required": required, "schema": schema});
    if !description.is_empty() {
        p["description"] = description.into();
    }
    p
}

/// The query parameters a list grammar reads.
fn list_params(spec: &ListSpec, creates: bool) -> Vec<Value> {
    let mut out = Vec::new();
    let boolean = json!({"type": "string", "enum": ["true", "false", "1", "0"]});
    for f in spec.filters {
        for op in f.ops {
            let suffix = match op {
                Op::Eq => "",
                Op::Contains => ":contains",
                Op::StartsWith => ":startswith",
                Op::In => ":in",
                Op::Gt => ":gt",
                Op::Gte => ":gte",
                Op::Lt => ":lt",
                Op::Lte => ":lte",
            };
            let one = match f.kind {
                Kind::Text => json!({"type": "string", "maxLength": 1024}),
                Kind::Int => json!({"type": "integer", "format": "int64"}),
                Kind::Bool => boolean.clone(),
            };
            let schema = if *op == Op::In && f.kind == Kind::Int {
                json!({"type": "string", "pattern": "^-?[0-9]{1,18}(,-?[0-9]{1,18}){0,999}$",
                       "description": "Comma-separated integers, 1 to 1000"})
            } else if *op == Op::In {
                json!({"type": "string", "not": {"pattern": EMPTY_LIST},
                       "description": "Comma-separated values, 1 to 1000"})
            } else {
                one
            };
            out.push(query(&format!("{}{suffix}", f.name), false, schema, ""));
        }
    }
    if !spec.order_fields.is_empty() {
        let orders: Vec<String> = spec
            .order_fields
            .iter()
            .flat_map(|f| [f.to_string(), format!("{f}:asc"), format!("{f}:desc")])
            .collect();
        out.push(query(
            "orderBy",
            false,
            json!({"type": "string", "enum": orders}),
            &format!(
                "Default `{}:{}`",
                spec.default_order.0,
                match spec.default_order.1 {
                    coffer_domain::list::Dir::Asc => "asc",
                    coffer_domain::list::Dir::Desc => "desc",
                }
            ),
        ));
        out.push(query(
            "offset",
            false,
            json!({"type": "integer", "format": "int64", "minimum": 0}),
            "Items to skip",
        ));
        out.push(query(
            "limit",
            false,
            json!({"type": "integer", "format": "int64", "minimum": 1, "maximum": spec.max_limit}),
            &format!("Default {}", spec.default_limit),
        ));
    }
    out.push(query(
        "mode",
        false,
        json!({"type": "string", "enum": ["full", "full_with_links", "full_no_links", "compact"]}),
        "`full_with_links` adds HATEOAS links",
    ));
    if creates {
        out.push(query(
            "returnEntity",
            false,
            boolean.clone(),
            "Answer the whole new entity",
        ));
    }
    if spec.bulk {
        out.push(query(
            "id:in",
            true,
            json!({"type": "string", "not": {"pattern": EMPTY_LIST}}),
            "Comma-separated ids, 1 to 1000",
        ));
        out.push(query(
            "partialSuccess",
            false,
            boolean,
            "Go on with the valid ids when some fail",
        ));
    }
    out
}

/// `get /rest/users/{id}/devices` → `getRestUsersIdDevices`.
fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_string();
    for word in path.split(|c: char| !c.is_ascii_alphanumeric()) {
        let mut chars = word.chars();
        if let Some(first) = chars.next() {
            id.push(first.to_ascii_uppercase());
            id.extend(chars);
        }
    }
    id
}

fn schema_ref(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

/// Adds `status` with the area's error body unless the operation declares it already; a
/// declared error status without a body gets the area's error body.
fn error_response(op: &mut Value, area: Area, status: &str, description: &str) {
    let responses = &mut op["responses"];
    if responses.get(status).is_none() {
        responses[status] = json!({ "description": description });
    }
    let (media, schema) = if status == "490" || status == "408" {
        ("application/json", "RestErrors")
    } else if status == "400" && area == Area::Rest {
        ("application/json", "RestBadRequest")
    } else {
        area.error()
    };
    let r = &mut responses[status];
    if r.get("content").is_none() {
        r["content"] = json!({ media: { "schema": schema_ref(schema) } });
    }
}

/// What the derived schemas cannot say: rules that tie fields together, and optional bodies.
/// The states a mail list filters on, one or a comma-separated list.
const MAIL_STATUSES: &[&str] = &[
    "sent",
    "draft",
    "queued",
    "error",
    "self_send",
    "pending_review",
    "denied",
];
const MAIL_STATUS_LIST: &str = "^(sent|draft|queued|error|self_send|pending_review|denied)(,(sent|draft|queued|error|self_send|pending_review|denied)){0,999}$";

/// Changes the query parameter `name` of `method path`, when the document has it.
fn set_param(doc: &mut Value, path: &str, method: &str, name: &str, f: impl FnOnce(&mut Value)) {
    let pointer = format!("/paths/{}/{method}/parameters", path.replace('/', "~1"));
    if let Some(p) = doc
        .pointer_mut(&pointer)
        .and_then(Value::as_array_mut)
        .and_then(|ps| ps.iter_mut().find(|p| p["name"] == name))
    {
        f(p);
    }
}

fn refine(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    // A password change needs the previous password; a call changes the name, the password,
    // or both.
    schemas["UpdateMeBody"]["anyOf"] = json!([
        {"required": ["name"], "properties": {"name": {"type": "string"}}},
        {"required": ["password", "previousPassword"],
         "properties": {"password": {"type": "string"}, "previousPassword": {"type": "string"}}},
    ]);
    // A device update changes the key store, the registration token, or both.
    schemas["DeviceUpdateBody"]["anyOf"] = json!([
        {"required": ["mobileKeyStore"], "properties": {"mobileKeyStore": {"type": "string"}}},
        {"required": ["registrationToken"], "properties": {"registrationToken": {"type": "string"}}},
    ]);
    // `deleteUnsharedData` and `retainData` are opposites; retaining names the receiver.
    schemas["DeleteOptionsBody"]["oneOf"] = json!([
        {"title": "delete the unshared data", "properties": {
            "retainData": {"enum": [false, null]},
            "deleteUnsharedData": {"enum": [true, null]},
            "retainToUser": {"type": "null"},
            "retainPermissionToSharedData": {"enum": [false, null]}}},
        {"title": "retain the data", "required": ["retainData", "retainToUser"], "properties": {
            "retainData": {"const": true},
            "deleteUnsharedData": {"enum": [false, null]},
            "retainToUser": {"type": "string"}}},
    ]);
    // The addresses of the external distribution lists (a `Vec<String>` field has no item
    // format).
    schemas["EmailsBody"]["properties"]["emails"]["items"] =
        json!({"type": "string", "format": "email", "maxLength": 254});
    // Mail: the fixed sets and formats of a `sendFile` body.
    let send = &mut doc["components"]["schemas"]["SendFileBody"]["properties"];
    send["acl"] = json!({"type": "string", "enum": ["verify_recipient", "no_auth", "otp", "internal", "anyone_auth", "email_otp"]});
    send["type"] = json!({"type": "string", "enum": ["original", "forward", "reply", "resend"]});
    send["expire"] = json!({"type": "string", "format": "date"});
    for f in ["to", "cc", "bcc", "returnReceipts", "trackingAccess"] {
        send[f]["items"] = json!({"type": "string", "format": "email", "maxLength": 254});
    }
    // Mail: the values of the filters that are dates or fixed sets, and the ids of a bulk call
    // (required).
    let mail_params: &[(&str, &str, &str, Value)] = &[
        (
            "/rest/mail",
            "get",
            "status",
            json!({"type": "string", "enum": MAIL_STATUSES}),
        ),
        (
            "/rest/mail",
            "get",
            "status:in",
            json!({"type": "string", "pattern": MAIL_STATUS_LIST}),
        ),
        (
            "/rest/mail",
            "get",
            "bucket",
            json!({"type": "string", "enum": ["inbox", "draft", "outgoing", "sent", "trash"]}),
        ),
    ];
    for (path, method, name, schema) in mail_params {
        set_param(doc, path, method, name, |p| p["schema"] = schema.clone());
    }
    for f in ["date", "modified_date"] {
        for suffix in ["", ":gt", ":gte", ":lt", ":lte"] {
            set_param(doc, "/rest/mail", "get", &format!("{f}{suffix}"), |p| {
                p["schema"] = json!({"type": "string", "format": "date"});
            });
        }
    }
    set_param(doc, "/rest/admin/sharedMailboxes", "delete", "id:in", |p| {
        p["schema"] = json!({"type": "string", "not": {"pattern": EMPTY_LIST}});
    });
    // Search takes a day or an RFC 3339 time; the document states the day, as for /rest/mail.
    for path in ["/rest/search", "/rest/query"] {
        for f in ["created", "modified"] {
            for suffix in ["", ":gt", ":gte", ":lt", ":lte"] {
                set_param(doc, path, "get", &format!("{f}{suffix}"), |p| {
                    p["schema"] = json!({"type": "string", "format": "date"});
                });
            }
        }
    }
    for suffix in ["", ":gt", ":gte", ":lt", ":lte"] {
        set_param(
            doc,
            "/rest/admin/users",
            "get",
            &format!("created{suffix}"),
            |p| {
                p["schema"] = json!({"type": "string", "format": "date"});
            },
        );
    }
    set_param(
        doc,
        "/rest/mail/{id}/actions/withdrawFiles",
        "post",
        "id:in",
        |p| p["required"] = true.into(),
    );
    for action in ["read", "unread", "trash"] {
        set_param(
            doc,
            &format!("/rest/mail/actions/{action}"),
            "patch",
            "emailId:in",
            |p| p["required"] = true.into(),
        );
    }
    // The addresses to check: a comma-separated list with at least one item.
    if let Some(p) = doc
        .pointer_mut("/paths/~1rest~1users~1actions~1getDistributionList/get/parameters")
        .and_then(Value::as_array_mut)
        .and_then(|ps| ps.iter_mut().find(|p| p["name"] == "email:in"))
    {
        p["schema"] = json!({"type": "string", "not": {"pattern": EMPTY_LIST}});
    }
    let schemas = &mut doc["components"]["schemas"];
    schemas["ScimUserBody"]["properties"]["schemas"]["contains"] =
        json!({"const": coffer_domain::scim_schema::USER_SCHEMA});
    // A search names only the SearchRequest's parameters; its `schemas` is not read.
    schemas["ScimSearchBody"]["additionalProperties"] = json!(false);
    schemas["ScimSearchBody"]["properties"]["schemas"] =
        json!({"description": "The SearchRequest URN; not read"});
    // An optional body is absent, not `null`.
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for op in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|i| i.values_mut())
    {
        let Some(content) = op
            .pointer_mut("/requestBody/content")
            .and_then(Value::as_object_mut)
        else {
            continue;
        };
        for media in content.values_mut() {
            let one_of = media["schema"]["oneOf"].as_array().cloned();
            if let Some(alternatives) = one_of {
                let not_null: Vec<Value> = alternatives
                    .into_iter()
                    .filter(|a| a["type"] != "null")
                    .collect();
                if let [only] = not_null.as_slice() {
                    media["schema"] = only.clone();
                }
            }
        }
    }
}

/// Request text carries no control characters (`coffer_domain::input::is_clean`): every string
/// of a request body (at any depth, through the components it names) and every string parameter
/// gets a pattern that says so, unless it has a pattern, a format or a fixed set of values of its
/// own. Only a client's `description` and `jwtPublicKey` may hold line breaks and tabs.
fn clean_text(doc: &mut Value) {
    const MULTI_LINE: &str = "^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]*$";
    let mut names = std::collections::BTreeSet::new();
    let mut pending: Vec<Value> = Vec::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for op in paths
            .values()
            .filter_map(Value::as_object)
            .flat_map(|i| i.values())
        {
            if let Some(body) = op.get("requestBody") {
                pending.push(body.clone());
            }
        }
    }
    while let Some(v) = pending.pop() {
        for name in refs(&v) {
            if names.insert(name.clone()) {
                pending.push(doc["components"]["schemas"][&name].clone());
            }
        }
    }
    for name in &names {
        let schema = &mut doc["components"]["schemas"][name];
        clean_strings(schema);
        if name == "ClientBody" {
            for field in ["description", "jwtPublicKey"] {
                if let Some(f) = schema.pointer_mut(&format!("/properties/{field}")) {
                    f["pattern"] = MULTI_LINE.into();
                }
            }
        }
    }
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        // Pages show what they are given (escaped); the API refuses control characters.
        let page = path == "/oauth_callback.php";
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            if let Some(content) = op
                .pointer_mut("/requestBody/content")
                .and_then(Value::as_object_mut)
            {
                content
                    .values_mut()
                    .for_each(|m| clean_strings(&mut m["schema"]));
            }
            let params = op.get_mut("parameters").and_then(Value::as_array_mut);
            for p in params.into_iter().flatten().filter(|_| !page) {
                if p["in"] != "header" {
                    clean_strings(&mut p["schema"]);
                }
            }
        }
    }
}

/// The component names a schema refers to.
fn refs(v: &Value) -> Vec<String> {
    match v {
        Value::Object(o) => o
            .iter()
            .flat_map(|(k, v)| match (k.as_str(), v) {
                ("$ref", Value::String(r)) => r
                    .strip_prefix("#/components/schemas/")
                    .map(|n| vec![n.to_string()])
                    .unwrap_or_default(),
                _ => refs(v),
            })
            .collect(),
        Value::Array(a) => a.iter().flat_map(refs).collect(),
        _ => Vec::new(),
    }
}

fn clean_strings(v: &mut Value) {
    match v {
        Value::Object(o) => {
            let is_string = match o.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
                _ => false,
            };
            let free = !["format", "enum", "const"]
                .iter()
                .any(|k| o.contains_key(*k));
            if is_string && free && o.contains_key("not") {
                // A pattern beside `not` is lost by some generators: the control characters
                // join what the `not` excludes instead.
                if let Some(Value::Object(not)) = o.get_mut("not") {
                    if let Some(p) = not.remove("pattern") {
                        let control = "[\\x00-\\x1f\\x7f-\\x9f]";
                        not.insert(
                            "anyOf".into(),
                            json!([{"pattern": p}, {"pattern": control}]),
                        );
                    }
                }
            } else if is_string && free {
                match o.get("pattern").and_then(Value::as_str) {
                    None => {
                        o.insert("pattern".into(), crate::plumbing::schema::NO_CONTROL.into());
                    }
                    Some(p) if p == crate::plumbing::schema::NON_BLANK => {
                        o.insert("pattern".into(), crate::plumbing::schema::TEXT.into());
                    }
                    Some(_) => {}
                }
            }
            o.values_mut().for_each(clean_strings);
        }
        Value::Array(a) => a.iter_mut().for_each(clean_strings),
        _ => {}
    }
}

/// What holds for every operation of an area, written once: the version header, the list
/// grammar's parameters, and the error statuses with their envelopes.
fn conventions(doc: &mut Value, version_header: &str, brand: &str) {
    let version_text = format!(
        "The API version, 28 (the query parameter `apiVersion=28` works as well). This server's \
         brand is `{brand}`, so its header is `{version_header}`; the brand is set with \
         `COFFER_VERSION_BRAND`, and a client written for the vendor's interface needs the \
         vendor's name there. Without it 400 `ERR_REQUEST_API_VERSION_MISSING`; another version \
         400 `ERR_REQUEST_VERSION_NOT_SUPPORTED` (versions 1 to 4 in the legacy `{{message}}` form)."
    );
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let area = Area::of(path);
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in item.iter_mut() {
            // Handlers in different modules share names (`get`, `list`): the operation id is the
            // method and the path, unique by construction.
            op["operationId"] = operation_id(method, path).into();
            let secured = op.get("security").is_some();
            let has_body = op.get("requestBody").is_some();
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            let mut params: Vec<Value> = params;
            let mut reads_list = false;
            if area == Area::Rest {
                params.insert(
                    0,
                    json!({
                        "name": version_header, "in": "header", "required": true,
                        "description": version_text,
                        "schema": {"type": "string", "enum": ["28"]},
                    }),
                );
                if let Some((_, _, spec)) = LISTS.iter().find(|(m, p, _)| m == method && p == path)
                {
                    reads_list = true;
                    let creates = method == "post";
                    for p in list_params(spec, creates) {
                        let declared = params
                            .iter()
                            .any(|q| q["name"] == p["name"] && q["in"] == "query");
                        if !declared {
                            params.push(p);
                        }
                    }
                }
            }
            if !params.is_empty() {
                op["parameters"] = Value::Array(params);
            }
            let statuses: Vec<String> = op["responses"]
                .as_object()
                .map(|r| r.keys().cloned().collect())
                .unwrap_or_default();
            for s in statuses.iter().filter(|s| s.as_str() >= "400") {
                error_response(op, area, s, "");
            }
            match area {
                Area::Rest => {
                    error_response(op, area, "400", "The version header is missing or names another version; the body is not JSON; a filter is malformed");
                    if reads_list {
                        error_response(op, area, "422", "A query parameter has a wrong value");
                    }
                }
                Area::Scim => error_response(op, area, "400", "A malformed request"),
                Area::Webhooks => error_response(op, area, "400", "A malformed request"),
                Area::OAuthApi => error_response(op, area, "400", "`{error, error_description}`"),
                Area::Other => {}
            }
            if secured {
                error_response(op, area, "401", "No valid bearer token");
                if area == Area::Scim {
                    error_response(op, area, "403", "SCIM provisioning is paused");
                }
            }
            if has_body && area != Area::OAuthApi {
                error_response(op, area, "413", "The body is larger than 1 MiB");
            }
            if has_body {
                error_response(op, area, "408", "The body did not arrive in time");
            }
            error_response(op, area, "490", "Request blocked by WAF");
        }
    }
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
            "/rest/contacts",
            "/rest/contacts/{id}",
            "/rest/externalDL",
            "/rest/users/actions/getDistributionList",
            "/rest/sharedMailboxes",
            "/rest/admin/sharedMailboxes/{id}",
        ] {
            assert!(v["paths"].get(p).is_some(), "{p}");
        }
    }

    fn operations(v: &Value) -> Vec<(String, String, Value)> {
        let mut out = Vec::new();
        for (path, item) in v["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                out.push((method.clone(), path.clone(), op.clone()));
            }
        }
        out
    }

    #[test]
    fn every_operation_has_words_and_every_entry_an_operation() {
        let v: Value = serde_json::from_str(&document()).unwrap();
        let ops = operations(&v);
        for (method, path, _) in &ops {
            let entries = operations::TEXTS
                .iter()
                .filter(|(m, p, _, _)| m == method && p == path)
                .count();
            assert_eq!(entries, 1, "{method} {path}: {entries} entries in TEXTS");
        }
        for (m, p, summary, description) in operations::TEXTS {
            assert!(
                ops.iter().any(|(om, op, _)| om == m && op == p),
                "TEXTS names {m} {p}, which the document does not have"
            );
            assert!(!summary.is_empty() && !description.is_empty(), "{m} {p}");
            assert!(!summary.ends_with('.'), "{m} {p}: a summary is a title");
        }
        for (m, p, status, _) in operations::CODES {
            let op = ops
                .iter()
                .find(|(om, op, _)| om == m && op == p)
                .unwrap_or_else(|| panic!("CODES names {m} {p}, which the document does not have"));
            assert!(
                op.2["responses"].get(status.to_string()).is_some(),
                "CODES: {m} {p} documents no {status}"
            );
        }
    }

    #[test]
    fn every_code_a_response_names_is_in_the_catalogue() {
        let v: Value = serde_json::from_str(&document()).unwrap();
        for (method, path, op) in operations(&v) {
            for (status, r) in op["responses"].as_object().unwrap() {
                let text = r["description"].as_str().unwrap_or_default();
                for word in text.split('`').skip(1).step_by(2) {
                    if word.starts_with("ERR_") {
                        assert!(
                            ErrorCode::ALL.iter().any(|c| c.as_str() == word),
                            "{method} {path} {status}: {word} is not a catalogue code"
                        );
                    }
                }
                let Some(codes) = r.get("x-error-codes") else {
                    continue;
                };
                for c in codes.as_array().unwrap() {
                    let c = c.as_str().unwrap();
                    let known = ErrorCode::ALL.iter().any(|k| k.as_str() == c)
                        || (path.starts_with("/oauth/")
                            && oauth_codes(&path, 400)
                                .iter()
                                .chain(&[OAuthErrorCode::TemporarilyUnavailable])
                                .any(|k| k.as_str() == c))
                        || path.starts_with("/rest/scim");
                    assert!(
                        known,
                        "{method} {path} {status}: {c} is no code of its envelope"
                    );
                }
            }
        }
    }

    #[test]
    fn servers_and_the_version_header_come_from_the_site() {
        let v: Value = serde_json::from_str(&document_for(&Site {
            version_brand: "Acme",
            base_url: "https://files.example.com/",
        }))
        .unwrap();
        assert_eq!(v["servers"][0]["url"], "https://files.example.com");
        let header = v["paths"]["/rest/users/me"]["get"]["parameters"][0].clone();
        assert_eq!(header["name"], "X-Acme-Version");
        let text = header["description"].as_str().unwrap();
        assert!(
            text.contains("`Acme`") && text.contains("COFFER_VERSION_BRAND"),
            "{text}"
        );
        let about = v["info"]["description"].as_str().unwrap();
        assert!(about.contains("`X-Acme-Version: 28`"), "{about}");
    }
}
