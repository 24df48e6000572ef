//! The schemas of the OpenAPI document that are not a service's record: request bodies, the
//! error envelopes of every area, and the list envelopes. One place for all of them, so that
//! `#[utoipa::path]` annotations name them and `openapi.rs` adds the shared ones to every
//! operation. A JSON request body implements [`Input`] and is the type its handler reads
//! (`plumbing::body::Body`): the document and what the server accepts are one type. The
//! envelopes exist for the document only.
#![allow(dead_code)]

use crate::plumbing::body::Input;
use coffer_service::platform::views::{Link, SystemSettingsView};
use serde::Deserialize;
use utoipa::ToSchema;

/// A string with a character that is not white space (blank counts as missing).
pub const NON_BLANK: &str =
    "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]";
/// A text without control characters.
pub const NO_CONTROL: &str = "^[^\\x00-\\x1f\\x7f-\\x9f]*$";
/// A text with a character that is not white space and without control characters.
pub const TEXT: &str = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$";

// ---------------------------------------------------------------------------------------------
// Error envelopes

/// One error of the REST envelope.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestErrorItem {
    /// A code of the error catalogue, e.g. `ERR_ACCESS_USER`.
    #[schema(pattern = "^ERR_[A-Z0-9_]+$")]
    code: String,
    message: String,
    /// The input field at fault.
    #[schema(nullable = false)]
    field: Option<String>,
    /// Where to go next (`ERR_ACCESS_DENIED`).
    #[schema(nullable = false)]
    redirect_url: Option<String>,
}

/// The REST error envelope (interface §7.1).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RestErrors {
    #[schema(min_items = 1)]
    errors: Vec<RestErrorItem>,
    /// The ids that failed in a bulk operation.
    #[schema(nullable = false)]
    failed_ids: Option<Vec<String>>,
}

/// The legacy error of API versions 1 to 4: `{message}` alone.
#[derive(ToSchema)]
pub struct LegacyError {
    message: String,
}

/// A 400 of a `/rest` call: the REST envelope, or for API versions 1 to 4 the legacy form.
#[derive(ToSchema)]
#[serde(untagged)]
pub enum RestBadRequest {
    Envelope(RestErrors),
    Legacy(LegacyError),
}

/// The OAuth error (RFC 6749 §5.2).
#[derive(ToSchema)]
pub struct OAuthErrorBody {
    #[schema(value_type = String, pattern = "^(invalid_request|invalid_client|invalid_grant|unauthorized_client|unsupported_grant_type|unsupported_response_type|invalid_scope|access_denied|server_error|temporarily_unavailable)$")]
    error: String,
    error_description: String,
}

/// The webhook error envelope: `code` is the HTTP status, `message` `[Status Text] detail`.
#[derive(ToSchema)]
pub struct WebhookErrorBody {
    code: u16,
    #[schema(pattern = "^\\[[^\\]]+\\] ")]
    message: String,
}

/// A SCIM error (RFC 7644 §3.12).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimErrorBody {
    schemas: Vec<String>,
    /// The HTTP status, as a string.
    #[schema(pattern = "^[0-9]{3}$")]
    status: String,
    #[schema(nullable = false)]
    scim_type: Option<String>,
    detail: String,
}

// ---------------------------------------------------------------------------------------------
// List envelopes

/// The devices and clients envelope.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Paged<T> {
    data: Vec<T>,
    #[schema(minimum = 0)]
    total: i64,
    #[schema(minimum = 1)]
    page: i64,
    #[schema(minimum = 1)]
    page_size: i64,
}

/// `{total, limit, offset}` of the usual envelope.
#[derive(ToSchema)]
pub struct ListMetadata {
    #[schema(minimum = 0)]
    total: i64,
    #[schema(minimum = 1)]
    limit: i64,
    #[schema(minimum = 0)]
    offset: i64,
}

/// The usual list envelope.
#[derive(ToSchema)]
pub struct WithMetadata<T> {
    data: Vec<T>,
    metadata: ListMetadata,
}

/// The webhook list envelope.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Items<T> {
    items: Vec<T>,
    #[schema(minimum = 0)]
    total_items: i64,
}

/// `{data: [...]}` without paging.
#[derive(ToSchema)]
pub struct DataOf<T> {
    data: Vec<T>,
}

// ---------------------------------------------------------------------------------------------
// Users and settings

/// `PUT /rest/users/me`: at least one of `name` and `password`; a new password needs the
/// current one in `previousPassword`, meets the password policy, and ends the user's other
/// sessions.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateMeBody {
    /// 1 to 255 bytes, not blank, no control characters.
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub name: Option<String>,
    pub password: Option<String>,
    pub previous_password: Option<String>,
}

impl Input for UpdateMeBody {}

/// The delete options of `DELETE /rest/users` and `DELETE /rest/admin/users/{id}`.
/// `deleteUnsharedData` and `retainData` are opposites: give one, or both with opposite values.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteOptionsBody {
    pub remote_wipe: Option<bool>,
    pub delete_unshared_data: Option<bool>,
    pub retain_data: Option<bool>,
    pub retain_permission_to_shared_data: Option<bool>,
    pub withdraw_file_links: Option<bool>,
    /// End the request-file links the user made (as their withdrawal does; mail carrying them
    /// not sent yet never is). Default false: they work until their own last day.
    pub withdraw_request_files: Option<bool>,
    /// The user (id) who receives the retained data.
    pub retain_to_user: Option<String>,
    pub retain_to_advanced_form_user: Option<String>,
}

impl Input for DeleteOptionsBody {}

/// One deleted user.
#[derive(ToSchema)]
pub struct DeletedUser {
    id: String,
    email: String,
    deleted: bool,
}

/// The users a delete marked deleted; with `partialSuccess`, the ids that failed.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeletedUsers {
    data: Vec<DeletedUser>,
    #[schema(nullable = false)]
    failed_ids: Option<Vec<String>>,
}

/// `PUT /rest/users/me/mobileNumber`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MobileNumberBody {
    /// The current password.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub password: String,
    /// A phone number: digits, optionally a leading `+`, spaces, dots, dashes and parentheses.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub mobile_number: String,
    /// Send a test message and save nothing.
    pub test_only: Option<bool>,
}

impl Input for MobileNumberBody {}

/// A directory match.
#[derive(ToSchema)]
pub struct DirectoryMatch {
    email: String,
    name: String,
}

/// `GET /rest/users/ldapSearch`.
#[derive(ToSchema)]
pub struct DirectoryMatches {
    matches: Vec<DirectoryMatch>,
}

/// `POST /rest/users/requestPasswordReset`.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestPasswordResetBody {
    /// The account's email address.
    #[schema(format = Email, max_length = 254)]
    pub email: String,
}

impl Input for RequestPasswordResetBody {}

/// `POST /rest/users/resetPassword`.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetPasswordBody {
    /// The reset link from the mail (or the token it carries).
    pub link: String,
    /// The new password; it must pass the password policy.
    pub password: String,
}

impl Input for ResetPasswordBody {}

/// `POST /rest/users/actions/login`.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoginBody {
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub username: String,
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub password: String,
    /// Where to go after signing in (a path on this server).
    pub referral: Option<String>,
}

impl Input for LoginBody {}

/// A signed-in session's next step.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginResponse {
    /// Always true.
    success: bool,
    redirect_url: String,
}

/// `POST /rest/users/me/forcedPasswordChange`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForcedPasswordChangeBody {
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub password: String,
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub previous_password: String,
    pub referral: Option<String>,
}

impl Input for ForcedPasswordChangeBody {}

/// `{redirectUrl}`: where the sign-in goes next.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthRedirectResponse {
    redirect_url: String,
}

/// `{}`: done.
#[derive(ToSchema)]
pub struct Empty {}

/// The two-factor configuration of the current user.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TfaConfig {
    enabled: bool,
    /// `totp`, `sms`, or null when off.
    #[schema(value_type = Option<String>, pattern = "^(totp|sms)$")]
    r#type: Option<String>,
    pending_setup: bool,
    /// With a method on: `TOTP` or `SMSOTP`.
    #[schema(nullable = false, pattern = "^(TOTP|SMSOTP)$")]
    module: Option<String>,
    #[schema(nullable = false)]
    passcode_label: Option<String>,
    #[schema(nullable = false)]
    passcode_description: Option<String>,
    #[schema(nullable = false)]
    rechallenge_label: Option<String>,
    #[schema(nullable = false)]
    challenge_should_send_password: Option<bool>,
    #[schema(nullable = false)]
    challenge_wait_message: Option<String>,
    #[schema(nullable = false)]
    rechallenge_message: Option<String>,
    #[schema(nullable = false)]
    remember_device_enabled: Option<bool>,
    #[schema(nullable = false)]
    passcode_mask: Option<bool>,
    /// SMSOTP: the number, masked.
    #[schema(nullable = false)]
    mobile_number: Option<String>,
    #[schema(nullable = false)]
    allow_number_change: Option<bool>,
}

/// A new TOTP secret, pending until a code confirms it: the account name, the issuer, the
/// base32 secret and the QR code image of the `otpauth://` URI (older servers answer `uri`
/// instead of the account name, issuer and image).
#[derive(ToSchema)]
pub struct TotpSetupResponse {
    /// The user's email.
    username: String,
    /// The server's brand.
    issuer: String,
    #[schema(pattern = "^[A-Z2-7]+=*$")]
    secret: String,
    /// The QR code of the `otpauth://totp/…` URI: `data:image/png;base64,…`.
    #[schema(pattern = "^data:image/png;base64,")]
    image: String,
}

/// `POST /rest/users/me/tfa/resetTotpSecret`: the current password, and a code of the new
/// secret to confirm it.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TotpResetBody {
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub password: String,
    #[schema(nullable = false, pattern = "^\\s*[0-9]{6}\\s*$")]
    pub otp: Option<String>,
}

impl Input for TotpResetBody {}

/// `{password}`: the current password.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasswordBody {
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub password: String,
}

impl Input for PasswordBody {}

/// `{otp}`: a TOTP or SMS code.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtpBody {
    /// Six digits.
    #[schema(pattern = "^\\s*[0-9]{6}\\s*$")]
    pub otp: String,
}

impl Input for OtpBody {}

/// `{otp, referral?}`: a TOTP code, and where to go after signing in.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtpReferralBody {
    /// Six digits.
    #[schema(pattern = "^\\s*[0-9]{6}\\s*$")]
    pub otp: String,
    pub referral: Option<String>,
}

impl Input for OtpReferralBody {}

/// Whether two-factor sign-in is on (and by which method).
#[derive(ToSchema)]
pub struct TfaState {
    enabled: bool,
    #[schema(nullable = false, pattern = "^(totp|sms)$")]
    r#type: Option<String>,
}

/// The outcome of a TOTP reset: a new pending secret (as `setupTotpSecret`), or `{code: 1}`
/// when a code confirmed it.
#[derive(ToSchema)]
pub struct TotpResetResponse {
    #[schema(nullable = false)]
    username: Option<String>,
    #[schema(nullable = false)]
    issuer: Option<String>,
    #[schema(nullable = false)]
    secret: Option<String>,
    #[schema(nullable = false)]
    image: Option<String>,
    #[schema(nullable = false, minimum = 1, maximum = 1)]
    code: Option<i64>,
}

/// An SMS code was sent.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SmsChallenge {
    challenge_msg: String,
    /// The number it went to, masked.
    mobile_number: String,
}

/// `{referral?}`.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChallengeBody {
    pub referral: Option<String>,
}

impl Input for ChallengeBody {}

/// `{otp, referral?, rememberDevice?}`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TfaAuthBody {
    /// The six-digit code of the user's method (TOTP or SMS); not read when the user has no
    /// second step.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub otp: String,
    pub referral: Option<String>,
    pub remember_device: Option<bool>,
}

impl Input for TfaAuthBody {}

/// A two-factor step: `challengeMsg` (another round) or `redirectUrl` (accepted), never both.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TfaStep {
    #[schema(nullable = false)]
    challenge_msg: Option<String>,
    #[schema(nullable = false)]
    redirect_url: Option<String>,
}

/// The password policy.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordPolicyView {
    enabled: bool,
    #[schema(minimum = 0)]
    min_length: u32,
    #[schema(minimum = 0)]
    min_numeric: u32,
    #[schema(minimum = 0)]
    min_lower: u32,
    #[schema(minimum = 0)]
    min_upper: u32,
    #[schema(minimum = 0)]
    min_special: u32,
    allow_browser_autofill: bool,
}

/// The user settings after a mobile-number change.
pub type UserSettings = SystemSettingsView;

// ---------------------------------------------------------------------------------------------
// Devices, clients, locations

/// `POST /rest/devices`. `installTagId` is required; `userId` and `clientId` other than the
/// caller's own need an administrator.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceCreateBody {
    pub client_id: Option<String>,
    pub user_id: Option<String>,
    /// At most 255 bytes, not blank, no control characters.
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub install_tag_id: String,
    /// At most 255 bytes, no control characters; blank means the install tag.
    #[schema(max_length = 255, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub install_name: Option<String>,
    /// At most 8192 bytes, no control characters.
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub mobile_key_store: Option<String>,
    pub add_links: Option<bool>,
}

impl Input for DeviceCreateBody {}

/// `PUT /rest/devices/{id}`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceUpdateBody {
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub mobile_key_store: Option<String>,
    #[schema(max_length = 4096, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub registration_token: Option<String>,
    pub add_links: Option<bool>,
}

impl Input for DeviceUpdateBody {}

/// `{status}`: the wipe flag (0 not set, 1 set, 2 device notified, 3 wipe completed).
#[derive(ToSchema)]
pub struct WipeStatus {
    #[schema(minimum = 0, maximum = 3)]
    status: i32,
}

/// `{redirectUri}`: where to go after logging out.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogoutResponse {
    redirect_uri: String,
}

/// `POST /rest/clients` and `PUT /rest/clients/{id}`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientBody {
    /// At most 255 bytes, not blank.
    #[schema(
        max_length = 255,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub name: String,
    /// At most 2000 bytes, not blank.
    #[schema(
        max_length = 2000,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub description: String,
    /// An absolute URI without a fragment or credentials, at most 2000 bytes.
    #[schema(
        max_length = 2000,
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub redirect_uri: String,
    /// Space-separated items: `*`, `entity/action` or `METHOD/entity/action`, each part of
    /// letters, digits, `_`, `.`, `-`, or `*` alone.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub scope: String,
    /// 8 to 512 bytes.
    #[schema(min_length = 8, max_length = 512)]
    pub signature_key: Option<String>,
    /// An RSA public key in PEM, for the JWT assertion flow.
    pub jwt_public_key: Option<String>,
    /// Hours.
    #[schema(minimum = 1, maximum = 2147483647)]
    pub access_token_lifetime: Option<i32>,
    /// Hours.
    #[schema(minimum = 1, maximum = 2147483647)]
    pub refresh_token_lifetime: Option<i32>,
    /// Flow bits: 1 authorization code, 2 client credentials, 4 signature, 8 refresh token,
    /// 16 password, 32 JWT assertion.
    #[schema(minimum = 0, maximum = 63)]
    pub flow: Option<i32>,
    /// Flag bits: 1 no consent, 2 disabled, 4 hidden, 8 tokens without expiry.
    #[schema(minimum = 0, maximum = 15)]
    pub flag: Option<i32>,
    pub add_links: Option<bool>,
}

impl Input for ClientBody {
    const MULTILINE: &'static [&'static str] = &["description", "jwtPublicKey"];
}

/// `POST /rest/locations`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocationBody {
    /// At most 255 bytes (trimmed), not blank, no control characters.
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub name: String,
    /// A DNS domain: labels of letters, digits and `-` (not at either end), at most 63 bytes
    /// each, 253 in all, an optional final dot.
    #[schema(
        max_length = 253,
        pattern = "^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\\.?$"
    )]
    pub domain: String,
    pub add_links: Option<bool>,
}

impl Input for LocationBody {}

/// A new location: `{id, name, dns}`, the whole record with `returnEntity=true`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LocationCreated {
    id: i64,
    name: String,
    dns: String,
    #[schema(nullable = false)]
    tenant_id: Option<i64>,
    #[schema(nullable = false)]
    links: Option<Vec<Link>>,
}

// ---------------------------------------------------------------------------------------------
// Contacts and external distribution lists

/// `POST /rest/contacts` and `PUT /rest/contacts/{id}`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContactBody {
    /// At most 255 bytes once trimmed, not blank, no control characters; unique among the
    /// caller's contacts without regard to case.
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub name: String,
    /// 1 to 100 addresses; repeats count once.
    #[schema(min_items = 1, max_items = 100)]
    pub items: Vec<ContactEmail>,
    pub add_links: Option<bool>,
}

/// One address of a contact.
#[derive(ToSchema, Deserialize)]
pub struct ContactEmail {
    #[schema(format = Email, max_length = 254)]
    pub email: String,
}

/// `POST` and `DELETE /rest/externalDL`: 1 to 1000 email addresses, each at most 254 bytes.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmailsBody {
    #[schema(min_items = 1, max_items = 1000)]
    pub emails: Vec<EmailText>,
}

impl Input for ContactBody {}

impl Input for EmailsBody {}

/// An email address as sent (checked by the use case, which names the item it refuses).
#[derive(ToSchema, Deserialize)]
#[schema(value_type = String, format = Email)]
pub struct EmailText(pub String);

impl AsRef<str> for EmailText {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

// ---------------------------------------------------------------------------------------------
// Shared mailboxes

/// `POST /rest/admin/sharedMailboxes`: the account to convert and its members (user ids, 1 to
/// 1000; each an active internal account), with the delete options as for `DELETE /rest/users`
/// (`deleteUnsharedData` and `retainData` are opposites). The account's data stays with the
/// mailbox whatever they say; `remoteWipe` asks its devices to wipe.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SharedMailboxPostBody {
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub user_id: String,
    #[schema(min_items = 1, max_items = 1000)]
    pub member_ids: Vec<String>,
    pub remote_wipe: Option<bool>,
    pub delete_unshared_data: Option<bool>,
    pub retain_data: Option<bool>,
    /// The user (id) who would receive retained data: another active account.
    pub retain_to_user: Option<String>,
    pub retain_permission_to_shared_data: Option<bool>,
    /// An alternate user (id) for retained data: another active account.
    pub retain_to_advanced_form_user: Option<String>,
}

/// `PATCH /rest/admin/sharedMailboxes/{id}`: the new member set (user ids, 1 to 1000).
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SharedMailboxPatchBody {
    #[schema(min_items = 1, max_items = 1000)]
    pub member_ids: Vec<String>,
}

/// `PATCH /rest/sharedMailboxes`: 1 to 1000 changes of the caller's own flags.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SharedMailboxStatusBody {
    #[schema(min_items = 1, max_items = 1000)]
    pub data: Vec<SharedMailboxStatusItem>,
}

/// One change: the mailbox (its id) and whether the caller has it active.
#[derive(ToSchema, Deserialize)]
pub struct SharedMailboxStatusItem {
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub id: String,
    pub active: bool,
}

impl Input for SharedMailboxPostBody {}

impl Input for SharedMailboxPatchBody {}

impl Input for SharedMailboxStatusBody {}

// ---------------------------------------------------------------------------------------------
// Webhooks

/// A webhook create (PUT: the same; PATCH: every field optional).
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookBody {
    /// An absolute http(s) URL with a host, without credentials or a fragment, at most 2048
    /// bytes, without spaces or control characters.
    #[schema(max_length = 2048)]
    url: String,
    /// Not blank, at most 1024 bytes.
    #[schema(max_length = 1024)]
    secret: String,
    /// Subject patterns: dot-separated tokens of letters, digits, `_`, `-`, or `*` alone, and a
    /// final `>`; 1 to 100, and no two may overlap.
    #[schema(min_items = 1, max_items = 100)]
    subscriptions: Vec<String>,
    /// Sent to the receiver; not blank, at most 1024 bytes, no control characters.
    #[schema(max_length = 1024)]
    token: Option<String>,
    enabled: Option<bool>,
}

/// A webhook's partial update: any of the create fields.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookPatchBody {
    #[schema(max_length = 2048)]
    url: Option<String>,
    #[schema(max_length = 1024)]
    secret: Option<String>,
    #[schema(min_items = 1, max_items = 100)]
    subscriptions: Option<Vec<String>>,
    #[schema(max_length = 1024)]
    token: Option<String>,
    enabled: Option<bool>,
}

/// `{id}` of a delivery.
#[derive(ToSchema)]
pub struct DeliveryId {
    id: String,
}

// ---------------------------------------------------------------------------------------------
// OAuth

/// A token response (RFC 6749 §5.1).
#[derive(ToSchema)]
pub struct TokenResponseBody {
    access_token: String,
    /// Seconds.
    expires_in: i64,
    /// Always `bearer`.
    token_type: String,
    scope: String,
    #[schema(nullable = false)]
    refresh_token: Option<String>,
}

/// A token introspection (RFC 7662): `{active: false}`, or the token's details.
#[derive(ToSchema)]
pub struct IntrospectionBody {
    active: bool,
    #[schema(nullable = false)]
    token_type: Option<String>,
    #[schema(nullable = false)]
    scope: Option<String>,
    #[schema(nullable = false)]
    client_id: Option<String>,
    #[schema(nullable = false)]
    username: Option<String>,
    #[schema(nullable = false)]
    sub: Option<String>,
    #[schema(nullable = false)]
    iat: Option<i64>,
    exp: Option<i64>,
}

/// The authorization server metadata (RFC 8414).
#[derive(ToSchema)]
pub struct ServerMetadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    revocation_endpoint: String,
    introspection_endpoint: String,
    response_types_supported: Vec<String>,
    response_modes_supported: Vec<String>,
    grant_types_supported: Vec<String>,
    token_endpoint_auth_methods_supported: Vec<String>,
    revocation_endpoint_auth_methods_supported: Vec<String>,
    introspection_endpoint_auth_methods_supported: Vec<String>,
    code_challenge_methods_supported: Vec<String>,
    service_documentation: String,
}

// ---------------------------------------------------------------------------------------------
// Operations

/// `{status}` of `/health` and `/ready`.
#[derive(ToSchema)]
pub struct Status {
    #[schema(pattern = "^(ok|unavailable)$")]
    status: String,
}

// ---------------------------------------------------------------------------------------------
// SCIM (RFC 7643, RFC 7644)

/// A SCIM user as answered (projected by `attributes` / `excludedAttributes`).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimUser {
    schemas: Vec<String>,
    /// The user id.
    id: String,
    #[schema(nullable = false)]
    user_name: Option<String>,
    #[schema(nullable = false)]
    display_name: Option<String>,
    #[schema(nullable = false)]
    active: Option<bool>,
    #[schema(nullable = false, value_type = Object)]
    meta: Option<serde_json::Value>,
}

/// A SCIM list (RFC 7644 §3.4.2).
#[derive(ToSchema)]
pub struct ScimListResponse {
    schemas: Vec<String>,
    #[serde(rename = "totalResults")]
    #[schema(minimum = 0)]
    total_results: i64,
    #[serde(rename = "startIndex")]
    #[schema(minimum = 1)]
    start_index: i64,
    #[serde(rename = "itemsPerPage")]
    #[schema(minimum = 0)]
    items_per_page: i64,
    #[serde(rename = "Resources")]
    #[schema(value_type = Vec<Object>)]
    resources: Vec<serde_json::Value>,
}

/// A SCIM user to create or replace: `schemas` with the core User URN, `userName` (an email, or
/// `emails` with a primary one), and optionally `displayName` (no `<` or `>`), `userType`
/// (letters, digits, `_`, `-`), `phoneNumbers`, `roles` (at most one), `password`, `active`,
/// `preferredLanguage`, `externalId`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimUserBody {
    schemas: Vec<String>,
    user_name: String,
    display_name: Option<String>,
    user_type: Option<String>,
    #[schema(value_type = Option<Vec<Object>>)]
    emails: Option<Vec<serde_json::Value>>,
    #[schema(value_type = Option<Vec<Object>>)]
    phone_numbers: Option<Vec<serde_json::Value>>,
    #[schema(value_type = Option<Vec<Object>>)]
    roles: Option<Vec<serde_json::Value>>,
    password: Option<String>,
    active: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    notify: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    user_must_change: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    #[schema(value_type = Option<Object>)]
    user_type_demotion_options: Option<serde_json::Value>,
}

/// One PATCH operation.
#[derive(ToSchema)]
pub struct ScimPatchOperation {
    /// `add`, `remove` or `replace`.
    op: String,
    path: Option<String>,
    #[schema(value_type = Option<Object>)]
    value: Option<serde_json::Value>,
}

/// A SCIM PatchOp.
#[derive(ToSchema)]
pub struct ScimPatchBody {
    schemas: Vec<String>,
    #[serde(rename = "Operations")]
    operations: Vec<ScimPatchOperation>,
}

/// A SCIM SearchRequest (RFC 7644 §3.4.3).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScimSearchBody {
    schemas: Option<Vec<String>>,
    filter: Option<String>,
    attributes: Option<Vec<String>>,
    excluded_attributes: Option<Vec<String>>,
    sort_by: Option<String>,
    sort_order: Option<String>,
    start_index: Option<i64>,
    count: Option<i64>,
}

/// A SCIM discovery document (ServiceProviderConfig, Schema, ResourceType).
#[derive(ToSchema)]
pub struct ScimDocument {
    schemas: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// OAuth forms (application/x-www-form-urlencoded)

/// A token request: the grant's parameters, and the client's credentials here or in HTTP
/// Basic authentication.
#[derive(ToSchema)]
pub struct TokenForm {
    /// `authorization_code`, `refresh_token`, `password` or
    /// `urn:ietf:params:oauth:grant-type:jwt-bearer`.
    grant_type: String,
    client_id: Option<String>,
    client_secret: Option<String>,
    code: Option<String>,
    redirect_uri: Option<String>,
    code_verifier: Option<String>,
    refresh_token: Option<String>,
    username: Option<String>,
    password: Option<String>,
    assertion: Option<String>,
    scope: Option<String>,
    install_tag_id: Option<String>,
    install_name: Option<String>,
}

/// A revocation (RFC 7009) or introspection (RFC 7662) request.
#[derive(ToSchema)]
pub struct TokenOfClientForm {
    token: String,
    token_type_hint: Option<String>,
    client_id: Option<String>,
    client_secret: Option<String>,
}

/// The form of the password-reset page: the link's `token`, the new `password`, and `csrf` (the
/// value of the form's cookie).
#[derive(ToSchema)]
pub struct ResetPasswordForm {
    token: String,
    password: String,
    csrf: String,
}

/// The sign-in form of the authorization page: the authorization parameters, `email`,
/// `password`, and `csrf` (the value of the form's cookie).
#[derive(ToSchema)]
pub struct SignInForm {
    client_id: String,
    redirect_uri: Option<String>,
    response_type: String,
    scope: Option<String>,
    state: Option<String>,
    code_challenge: Option<String>,
    code_challenge_method: Option<String>,
    m: Option<String>,
    email: String,
    password: String,
    csrf: String,
}

/// The two-factor step of the authorization page.
#[derive(ToSchema)]
pub struct SecondFactorForm {
    ticket: String,
    csrf: String,
    code: Option<String>,
    /// `1`: send a new SMS code.
    resend: Option<String>,
}

/// The password-change step of the authorization page.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PasswordStepForm {
    ticket: String,
    csrf: String,
    previous_password: String,
    password: String,
}

/// The consent step of the authorization page.
#[derive(ToSchema)]
pub struct ConsentForm {
    ticket: String,
    csrf: String,
    /// `allow` or `deny`.
    #[schema(pattern = "^(allow|deny)$")]
    decision: String,
}

// ---------------------------------------------------------------------------------------------
// Content: folders, files, uploads, members, comments. Names follow the rules of
// `coffer_domain::content::validate_name` (stated in prose: at most 255 bytes, no `/`, `\`,
// control or bidirectional-override characters, not `.` or `..`, no whitespace at either end, no
// final dot); a name that breaks them answers 422.

/// `POST /rest/folders/{id}/folders`, `PUT /rest/folders/{id}`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FolderBody {
    /// The folder's name (required to create).
    pub name: Option<String>,
    /// Free text, several lines allowed.
    pub description: Option<String>,
    /// A date (`YYYY-MM-DD` or RFC 3339); empty clears it.
    pub expire: Option<String>,
    pub syncable: Option<bool>,
    pub secure: Option<bool>,
    pub file_lifetime: Option<i64>,
    /// On create: pick `name (n)` when the name is taken instead of answering 409.
    pub rename: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub client_id: Option<String>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub inheritance_enabled: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub is_folder_upload: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub quota: Option<i64>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub use_folder_quota: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub vendor_doc_id: Option<String>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub vendor_doc_name: Option<String>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub apply_file_lifetime_to_files: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub apply_file_lifetime_to_nested: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub break_inheritance: Option<bool>,
}

/// `POST /rest/folders/{id}/actions/move|copy`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DestinationBody {
    /// The folder to move or copy into.
    pub destination_folder_id: String,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub add_version: Option<bool>,
}

/// `POST /rest/files/actions/move|copy`: the files as `ids` here or as `id:in`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FilesDestinationBody {
    pub ids: Option<Vec<String>>,
    pub destination_folder_id: String,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub new_file_name: Option<String>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub replace: Option<bool>,
}

/// `PUT /rest/files/{id}`.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileUpdateBody {
    pub name: Option<String>,
    /// A date (`YYYY-MM-DD` or RFC 3339); empty clears it.
    pub expire: Option<String>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub replace: Option<bool>,
}

/// `POST /rest/folders/{id}/members`: users by id or email, one role.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MembersBody {
    pub user_ids: Option<Vec<String>>,
    pub emails: Option<Vec<String>>,
    /// A role of `GET /rest/roles` of the object's type.
    pub role_id: i64,
    pub notify: Option<bool>,
    pub notify_file_added: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub ldap_group_ids: Option<Vec<i64>>,
}

/// `POST /rest/files/{id}/comments`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CommentBody {
    /// 1 to 10,000 characters; lines allowed.
    pub contents: String,
    /// The comment this one answers (0 or absent: none).
    pub parent_id: Option<i64>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub add_links: Option<bool>,
}

impl Input for FolderBody {
    const MULTILINE: &'static [&'static str] = &["description"];
}

impl Input for DestinationBody {}

impl Input for FilesDestinationBody {}

impl Input for FileUpdateBody {}

impl Input for MembersBody {}

impl Input for CommentBody {
    const MULTILINE: &'static [&'static str] = &["contents"];
}

/// `initiateUpload`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InitiateUploadBody {
    /// The file's name (required for a folder; a new version keeps the file's name).
    pub filename: Option<String>,
    /// Bytes in all: checked against the quota and the largest file before any chunk.
    pub total_size: Option<i64>,
    /// Chunks in all, at least 1.
    pub total_chunks: Option<i64>,
    pub client_created: Option<String>,
    pub client_modified: Option<String>,
    #[serde(rename = "tracking_id")]
    pub tracking_id: Option<String>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub proximate_host: Option<String>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub resume: Option<bool>,
}

impl Input for InitiateUploadBody {}

/// A chunk: multipart fields (or JSON with `content` in base64).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChunkBody {
    /// `NORMAL`, `GZIP` or `ZLIB`.
    compression_mode: String,
    /// Bytes as sent.
    compression_size: i64,
    /// Bytes once decompressed.
    original_size: i64,
    /// The chunk's number, from 1 (default: the next one).
    index: Option<i64>,
    /// 1 on the last chunk.
    last_chunk: Option<i64>,
    #[schema(format = Binary, content_media_type = "application/octet-stream")]
    content: String,
}

/// A one-shot upload or a new version: the file in `body`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileUploadBody {
    #[schema(format = Binary, content_media_type = "application/octet-stream")]
    body: String,
    client_created: Option<String>,
    client_modified: Option<String>,
    disable_auto_version: Option<bool>,
}

// ---------------------------------------------------------------------------------------------
// External sources

/// `POST /rest/sources`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceBody {
    /// Unique among the caller's sources (without regard to case); 1 to 255 characters.
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub name: String,
    pub description: Option<String>,
    /// The WebDAV collection's http(s) URL; unique among the caller's sources.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub source_url: String,
    /// `1` (WebDAV); server directories are the operator's.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub source_type_id: String,
    /// With `password`: checked against the server, then stored encrypted; never returned.
    pub username: Option<String>,
    pub password: Option<String>,
    /// Accepted; a WebDAV source's repository is its URL.
    pub repository: Option<String>,
    pub add_links: Option<bool>,
}

impl Input for SourceBody {}

/// `POST /rest/sources/{id}/auth`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SourceLoginBody {
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub login: String,
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub password: String,
}

impl Input for SourceLoginBody {}

/// `POST /rest/sources/auth`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CloudAuthBody {
    pub client: Option<String>,
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub code: String,
    /// The anti-forgery state of the sign-in this completes.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    pub state: String,
    pub session_state: Option<String>,
}

impl Input for CloudAuthBody {}

/// `POST` and `DELETE /rest/users/me/pins`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinsBody {
    /// Source ids.
    pub ids: Vec<String>,
    /// `source`.
    #[schema(
        pattern = "[^\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000]"
    )]
    #[serde(rename = "type")]
    pub kind: String,
}

impl Input for PinsBody {}

/// `POST /rest/sources/{id}/actions/file` and `POST /rest/sources/actions/files/{id}`: the file
/// in `body`.
#[derive(ToSchema)]
pub struct SourceUploadBody {
    #[schema(format = Binary, content_media_type = "application/octet-stream")]
    body: String,
}

// ---------------------------------------------------------------------------------------------

/// `GET /rest/files/{id}/path`, `/rest/folders/{id}/path`.
#[derive(ToSchema)]
pub struct PathBody {
    data: Vec<coffer_service::content::views::PathItem>,
}

// ---------------------------------------------------------------------------------------------
// Account administration and user settings

/// `POST /rest/admin/users`. Only `email` is required; without `password` the account cannot
/// sign in with a password until an administrator sets one.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdminUserCreateBody {
    /// Not an account's already, nor an external distribution list.
    #[schema(format = Email, max_length = 254)]
    pub email: String,
    /// 1 to 255 bytes once trimmed, no control characters; none: the email's local part.
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub name: Option<String>,
    /// Must pass the password policy.
    #[schema(pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub password: Option<String>,
    /// A profile id (`GET /rest/admin/profiles`); none: the default profile. Another number
    /// answers `ERR_INVALID_PARAMETER`.
    pub user_type_id: Option<i64>,
    /// 0 (plain user, the default), 1 system, 2 application or 3 helpdesk administrator; only a
    /// system administrator gives an administrator role. Another number answers
    /// `ERR_INPUT_NOT_IN_LIST`.
    #[schema(schema_with = admin_role)]
    pub admin_role_id: Option<i64>,
    /// Only `true` is accepted: accounts an administrator makes are verified.
    pub verified: Option<bool>,
    /// Records `user.user.notify` for a mail integration to act on.
    pub send_notification: Option<bool>,
    pub add_links: Option<bool>,
}

/// `PUT /rest/admin/users/{id}`: every field optional; none keeps the stored value.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdminUserUpdateBody {
    #[schema(
        max_length = 255,
        pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*[^\\x00-\\x20\\x7f-\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\x00-\\x1f\\x7f-\\x9f]*$"
    )]
    pub name: Option<String>,
    /// A new password (passes the policy); ends the user's sessions.
    #[schema(pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub password: Option<String>,
    /// Deactivate (true) or activate (false); deactivating ends the user's sessions.
    pub deactivated: Option<bool>,
    /// The same switch as `deactivated`; both given must agree.
    pub suspended: Option<bool>,
    /// Only `true` is accepted.
    pub verified: Option<bool>,
    /// A profile id (`GET /rest/admin/profiles`); another number answers
    /// `ERR_INVALID_PARAMETER`.
    pub user_type_id: Option<i64>,
    /// As for creating an account.
    #[schema(schema_with = admin_role)]
    pub admin_role_id: Option<i64>,
    pub add_links: Option<bool>,
}

impl Input for AdminUserCreateBody {}

impl Input for AdminUserUpdateBody {}

/// An administrator role: 0 (plain user), 1 system, 2 application or 3 helpdesk administrator.
fn admin_role() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Integer)
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Int64,
        )))
        .enum_values(Some([0, 1, 2, 3]))
        .build()
}

/// The administrator roles of one account.
#[derive(ToSchema)]
pub struct AdminRoles {
    data: Vec<coffer_service::identity::admin_users::AdminRoleView>,
}

/// `POST /rest/admin/users/actions/deleteTotpSecret`: 1 to 100 user ids.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IdsBody {
    #[schema(min_items = 1, max_items = 100)]
    pub ids: Vec<String>,
}

/// `PUT /rest/users/{id}/settings`: every field optional; none keeps the stored value.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserSettingsBody {
    #[schema(minimum = 1, maximum = 2147483647)]
    pub language_id: Option<i64>,
    /// A location id (`GET /rest/locations`); another number answers `ERR_INVALID_PARAMETER`.
    pub location_id: Option<i64>,
    /// The mail signature: at most 10,000 bytes; line breaks and tabs allowed, no other
    /// control characters.
    #[schema(
        max_length = 10000,
        pattern = "^[^\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f]*$"
    )]
    pub signature: Option<String>,
    /// At most 8192 bytes, no control characters.
    #[schema(max_length = 8192, pattern = "^[^\\x00-\\x1f\\x7f-\\x9f]*$")]
    pub mobile_key_store: Option<String>,
    pub add_links: Option<bool>,
}

impl Input for IdsBody {}

impl Input for UserSettingsBody {
    const MULTILINE: &'static [&'static str] = &["signature"];
}

/// A withdrawal of sent emails.
#[derive(ToSchema, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WithdrawBody {
    /// The emails to withdraw (1 to 1000).
    #[schema(min_items = 1, max_items = 1000)]
    pub ids: Vec<String>,
}

impl Input for WithdrawBody {}

/// `sendFile`: a new email, or the changes to a draft.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendFileBody {
    /// Addresses; with `cc` and `bcc` at most 500 in all, each counted once.
    pub to: Option<Vec<EmailText>>,
    pub cc: Option<Vec<EmailText>>,
    pub bcc: Option<Vec<EmailText>>,
    /// Ids of files the caller may download; their current versions are attached.
    #[schema(max_items = 100)]
    pub files: Option<Vec<IdText>>,
    /// `verify_recipient` (the default; `otp` and `email_otp` mean the same), `no_auth`,
    /// `internal` or `anyone_auth`.
    pub acl: Option<String>,
    /// `YYYY-MM-DD`: the links work until the end of that day (UTC); not in the past.
    pub expire: Option<String>,
    /// Keep it as a draft.
    pub draft: Option<bool>,
    /// Files still uploading: keep it as a draft.
    pub uploading: Option<bool>,
    /// Leave the body out of the message outside recipients receive.
    pub secure_body: Option<bool>,
    /// A copy in the sender's own inbox.
    pub self_copy: Option<bool>,
    /// The files' SHA3-256 in the message outside recipients receive.
    pub include_fingerprint: Option<bool>,
    /// An email the caller sees (a reply or a forward).
    pub parent_email_id: Option<String>,
    /// `original`, `forward`, `reply` or `resend`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// At most 1,000,000 bytes; formatting tags only (`b`, `i`, `u`, `p`, `br`, lists, headings,
    /// links to http, https or mailto addresses).
    pub body: Option<String>,
    #[schema(max_length = 998)]
    pub subject: Option<String>,
    /// Send as this shared mailbox (the caller must be an active member).
    pub shared_mailbox_id: Option<String>,
    pub preview: Option<bool>,
    pub watermark: Option<String>,
    pub is_self_return_receipt: Option<bool>,
    pub return_receipts: Option<Vec<String>>,
    pub tracking_access: Option<Vec<String>>,
    pub notify_expired: Option<bool>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    pub web_form_id: Option<String>,
    /// Accepted for the reference's clients; Coffer does not act on it.
    #[schema(value_type = Option<Object>)]
    pub web_form_fields: Option<serde_json::Value>,
}

impl Input for SendFileBody {
    const MULTILINE: &'static [&'static str] = &["body"];
}

/// An id as sent (looked up by the use case, which names the item it refuses).
#[derive(ToSchema, Deserialize)]
#[schema(value_type = String)]
pub struct IdText(pub String);

/// The body a web form's page posts (multipart): `csrf` (the value of the form's cookie), one
/// part per field named by the field's `id`, and any number of `files`; or, for files sent
/// through the public upload, the started submission's `submission` and `submissionRef`.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebFormSubmission {
    csrf: String,
    #[schema(value_type = Vec<String>, format = Binary)]
    files: Vec<String>,
    /// The email id of a submission started with `POST /forms/{id}/submissions`.
    submission: Option<String>,
    /// Its reference.
    submission_ref: Option<String>,
}

/// A web-form submission started by the form's page, whose files go through the public upload.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartedSubmission {
    /// The draft email the files attach to (`{id}` of the public upload).
    email_id: String,
    /// The capability of the public upload and its chunks (`?ref=`), until the form is sent or
    /// the submission expires.
    #[serde(rename = "ref")]
    reference: String,
    /// When the submission expires (two hours after its start).
    expire: String,
    /// `rest/public/mail/{id}/actions/initiateUpload`.
    initiate_uri: String,
    /// The chunk size to use (bytes).
    chunk_size: i64,
    /// The largest file (`maxUploadSize`).
    max_file_size: i64,
    /// The most files per submission.
    max_files: i64,
}

/// `POST /rest/favorites`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FavoriteBody {
    /// The folder's or file's id (a UUID); not blank. A number is taken as its decimal text
    /// (and so finds nothing), as ids were integers in older versions of the interface.
    #[schema(schema_with = id_text_or_number)]
    pub object_id: IdOrNumber,
    pub add_links: Option<bool>,
}

impl Input for FavoriteBody {}

/// An id sent as text, or as a number by a client of an older version of the interface.
#[derive(Deserialize)]
#[serde(untagged)]
pub enum IdOrNumber {
    Text(String),
    Number(serde_json::Number),
}

impl IdOrNumber {
    /// The id as text: a number as its decimal text.
    pub fn into_text(self) -> String {
        match self {
            IdOrNumber::Text(s) => s,
            IdOrNumber::Number(n) => n.to_string(),
        }
    }
}

/// A non-blank string, or a number.
fn id_text_or_number() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            utoipa::openapi::schema::Type::String,
            utoipa::openapi::schema::Type::Number,
        ]))
        .pattern(Some(NON_BLANK))
        .build()
}

/// The favorites a bulk mark made; with `partialSuccess`, the ids that failed.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FavoritesMarked {
    data: Vec<coffer_service::favorites::FavoriteView>,
    metadata: ListMetadata,
    #[schema(nullable = false)]
    failed_ids: Option<Vec<String>>,
}

/// The ids a bulk call with `partialSuccess` could not act on.
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FailedIds {
    failed_ids: Vec<String>,
}

/// `PUT /rest/folders/{id}/actions/setNotifications`.
#[derive(ToSchema, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotificationBody {
    /// 1: tell when a file or a new version arrives; 0: do not. Absent: unchanged (0 when new).
    #[schema(schema_with = zero_or_one)]
    pub file_added: Option<i64>,
    /// 1: tell when a comment is added to a file in the folder; 0: do not.
    #[schema(schema_with = zero_or_one)]
    pub comment_added: Option<i64>,
    pub add_links: Option<bool>,
}

impl Input for NotificationBody {}

/// A flag sent as an integer: 0 or 1 (another integer answers `ERR_INPUT_NOT_IN_LIST`); `null`
/// is the same as leaving it out, as for every body field.
fn zero_or_one() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            utoipa::openapi::schema::Type::Integer,
            utoipa::openapi::schema::Type::Null,
        ]))
        .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
            utoipa::openapi::KnownFormat::Int64,
        )))
        .enum_values(Some([
            serde_json::json!(0),
            serde_json::json!(1),
            serde_json::Value::Null,
        ]))
        .build()
}
