//! The records clients read: field names exactly as the interface gives them (devices and
//! clients in snake_case, the rest in camelCase).

use coffer_domain::Role;
use coffer_store::models::{Client, Device, Location, User};
use serde::Serialize;
use utoipa::ToSchema;

/// How a registered signature key reads back. A client record sent back unchanged carries it
/// as `signatureKey`, which then means "keep the key" (`http::clients`).
pub const MASKED_SIGNATURE_KEY: &str = "********";

/// A HATEOAS link.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct Link {
    pub rel: String,
    pub href: String,
}

impl Link {
    pub fn new(rel: &str, href: String) -> Link {
        Link {
            rel: rel.to_string(),
            href,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MetadataItem {
    pub name: String,
    pub value: String,
}

/// A new TOTP secret to enrol (`GET /rest/users/me/tfa/setupTotpSecret`,
/// `POST /rest/users/me/tfa/resetTotpSecret`): the reference's `TotpSetupResponse`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TotpSetup {
    /// The account the authenticator app shows: the user's email.
    pub username: String,
    /// The issuer in the URI: the server's brand.
    pub issuer: String,
    /// The base32 secret, for typing in.
    pub secret: String,
    /// The QR code of the `otpauth://totp/…` URI, as `data:image/png;base64,…`.
    pub image: String,
}

/// Where a step of the sign-in flow goes next (the reference's `AuthRedirectResponse`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthRedirect {
    pub redirect_url: String,
}

/// The current-user record (`GET /rest/users/me`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrentUser {
    pub id: String,
    pub basedir_id: String,
    pub created: String,
    pub email: String,
    pub syncdir_id: String,
    pub name: String,
    pub mydir_id: String,
    pub user_type_id: i64,
    pub internal: bool,
    pub profile_icon: String,
    #[serde(rename = "extDL")]
    pub ext_dl: bool,
    pub metadata: Vec<MetadataItem>,
    pub admin_role_id: i32,
    pub service_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

impl CurrentUser {
    pub fn from_user(u: &User, role: Role, service_name: &str) -> CurrentUser {
        CurrentUser {
            id: u.id.clone(),
            basedir_id: u.basedir_id.clone(),
            created: crate::rfc3339(u.created_at)
                .get(..10)
                .unwrap_or_default()
                .to_string(),
            email: u.email.clone(),
            syncdir_id: u.syncdir_id.clone(),
            name: u.name.clone(),
            mydir_id: u.mydir_id.clone(),
            user_type_id: u.profile_id,
            internal: u.internal,
            profile_icon: String::new(),
            ext_dl: false,
            metadata: Vec::new(),
            admin_role_id: role.admin_role_id(),
            service_name: service_name.to_string(),
            links: None,
        }
    }
}

/// An OAuth client record (snake_case): every field of the reference's client record that
/// Coffer can fill (`docs/api.md` lists the others). `client_secret` appears only in the create
/// response; a field with no value (`signature_key` when none is registered) is left out, never
/// `null`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ClientView {
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    pub name: String,
    pub description: String,
    pub redirect_uri: String,
    pub scope: String,
    pub flag: i32,
    pub flow: i32,
    #[serde(rename = "type")]
    pub kind: i32,
    pub access_token_lifetime: i32,
    pub refresh_token_lifetime: i32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature_key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jwt_public_key: Option<String>,
    pub touch_id: bool,
    pub min_version: i32,
    pub ask_pin: i32,
    pub pin_timeout: i32,
    pub max_pin_attempts: i32,
    /// Apps on a device the client may call out to: Coffer keeps no such list, so none.
    pub white_list: String,
    /// Coffer puts no clipboard restriction on a client's app.
    pub clipboard_enabled: bool,
    /// Coffer distributes no client updates.
    pub auto_update: bool,
    pub builtin: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

impl ClientView {
    pub fn from_client(c: &Client) -> ClientView {
        ClientView {
            id: c.id.clone(),
            client_secret: None,
            name: c.name.clone(),
            description: c.description.clone(),
            redirect_uri: c.redirect_uri.clone(),
            scope: c.scope.clone(),
            flag: c.flag,
            flow: c.flow,
            kind: c.kind,
            access_token_lifetime: c.access_token_lifetime,
            refresh_token_lifetime: c.refresh_token_lifetime,
            // The signature key is a shared secret: it is never read back.
            signature_key: c
                .signature_key
                .as_ref()
                .map(|_| MASKED_SIGNATURE_KEY.to_string()),
            jwt_public_key: c.jwt_public_key.clone(),
            touch_id: c.touch_id,
            min_version: c.min_version,
            ask_pin: c.ask_pin,
            pin_timeout: c.pin_timeout,
            max_pin_attempts: c.max_pin_attempts,
            white_list: String::new(),
            clipboard_enabled: true,
            auto_update: false,
            builtin: c.builtin,
            links: None,
        }
    }
}

/// A device record (snake_case).
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct DeviceView {
    pub id: i64,
    pub client_id: String,
    pub user_id: String,
    pub install_tag_id: String,
    pub install_name: String,
    pub wipe_flag: i32,
    pub mobile_key_store: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

impl From<&Device> for DeviceView {
    fn from(d: &Device) -> Self {
        DeviceView {
            id: d.id,
            client_id: d.client_id.clone(),
            user_id: d.user_id.clone(),
            install_tag_id: d.install_tag_id.clone(),
            install_name: d.install_name.clone(),
            wipe_flag: d.wipe_flag,
            mobile_key_store: d.mobile_key_store.clone(),
            links: None,
        }
    }
}

/// A location record.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocationView {
    pub id: i64,
    pub name: String,
    pub dns: String,
    pub tenant_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

impl From<&Location> for LocationView {
    fn from(l: &Location) -> Self {
        LocationView {
            id: l.id,
            name: l.name.clone(),
            dns: l.dns.clone(),
            tenant_id: l.tenant_id,
            links: None,
        }
    }
}

/// System settings (`GET /rest/settings/system`), also the user settings answered by
/// `PUT /rest/users/me/mobileNumber`. A setting with no value (no default location, no mobile
/// number) is left out, never `null`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SystemSettingsView {
    pub language_id: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location_id: Option<i64>,
    /// Bytes the user's folders hold (the quota's `folder_quota_used`).
    pub storage_used: i64,
    pub storage_quota: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mobile_number: Option<String>,
    pub mobile_number_verified: bool,
}

/// A page of records with its total.
#[derive(Debug, Clone)]
pub struct Listed<T> {
    pub items: Vec<T>,
    pub total: i64,
    pub offset: i64,
    pub limit: i64,
}
