//! Rows of the schema, as read and written by the query modules.

use crate::schema::*;
use diesel::prelude::*;

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = profiles)]
pub struct Profile {
    pub id: i64,
    pub name: String,
    pub sftp_enabled: bool,
    pub collaboration_enabled: bool,
    pub mail_enabled: bool,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = users)]
pub struct User {
    pub id: String,
    pub email: String,
    pub name: String,
    pub password_hash: Option<String>,
    pub role: String,
    pub profile_id: i64,
    pub active: bool,
    pub deleted: bool,
    pub internal: bool,
    pub force_password_change: bool,
    pub mobile_number: Option<String>,
    pub mobile_verified: bool,
    pub language_id: Option<i64>,
    pub location_id: Option<i64>,
    pub basedir_id: String,
    pub mydir_id: String,
    pub syncdir_id: String,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
    /// The TOTP secret (base32), set at enrolment; two-factor sign-in needs `totp_enabled`.
    pub totp_secret: Option<String>,
    pub totp_enabled: bool,
    /// The last TOTP step used, so that a code is never accepted twice.
    pub totp_last_step: Option<i64>,
    /// The SCIM `userName`: the email unless an identity provider names the account otherwise.
    pub user_name: Option<String>,
    /// The identity provider's own id for the account (SCIM `externalId`).
    pub external_id: Option<String>,
    /// A language tag (SCIM `preferredLanguage`).
    pub preferred_language: Option<String>,
    /// The SCIM `primary` flag of the email as the identity provider set it (None: true).
    pub email_primary: Option<bool>,
    /// The SCIM `primary` flag of the mobile number (None: true).
    pub mobile_primary: Option<bool>,
    /// The email a deleted account had (its `email` then holds a placeholder).
    pub former_email: Option<String>,
}

impl User {
    /// Whether the account may sign in and its tokens may be used.
    pub fn is_usable(&self) -> bool {
        self.active && !self.deleted
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = clients)]
#[diesel(treat_none_as_null = true)]
pub struct Client {
    pub id: String,
    pub secret_hash: String,
    pub name: String,
    pub description: String,
    pub redirect_uri: String,
    pub scope: String,
    pub flag: i32,
    pub flow: i32,
    pub kind: i32,
    pub access_token_lifetime: i32,
    pub refresh_token_lifetime: i32,
    pub signature_key: Option<String>,
    pub jwt_public_key: Option<String>,
    pub touch_id: bool,
    pub min_version: i32,
    pub ask_pin: i32,
    pub pin_timeout: i32,
    pub max_pin_attempts: i32,
    pub builtin: bool,
    pub created_at: i64,
    pub updated_at: i64,
}

/// What a request's authentication needs of the client its token was issued to: read with the
/// token on every API call, so only these columns (the whole row is twenty-one).
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = clients)]
pub struct TokenClient {
    pub id: String,
    pub redirect_uri: String,
    pub flag: i32,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = devices)]
pub struct Device {
    pub id: i64,
    pub client_id: String,
    pub user_id: String,
    pub install_tag_id: String,
    pub install_name: String,
    pub wipe_flag: i32,
    pub mobile_key_store: Option<String>,
    pub registration_token: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = devices)]
pub struct NewDevice {
    pub client_id: String,
    pub user_id: String,
    pub install_tag_id: String,
    pub install_name: String,
    pub wipe_flag: i32,
    pub mobile_key_store: Option<String>,
    pub registration_token: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = locations)]
pub struct Location {
    pub id: i64,
    pub name: String,
    pub dns: String,
    pub tenant_id: i64,
    pub created_at: i64,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = locations)]
pub struct NewLocation {
    pub name: String,
    pub dns: String,
    pub tenant_id: i64,
    pub created_at: i64,
}

/// An absent field is inserted as NULL (the column has no other default), not left to the
/// column's default: with defaults diesel writes the insert's SQL anew for each combination of
/// absent fields on every call, and on PostgreSQL (whose `DEFAULT` keyword it will not keep
/// prepared) prepares it on every insert. As NULLs the insert is one statement, prepared once.
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = events, treat_none_as_default_value = false)]
pub struct NewEvent {
    pub id: String,
    pub subject: String,
    pub actor_id: Option<String>,
    pub data: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = events)]
pub struct Event {
    pub seq: i64,
    pub id: String,
    pub subject: String,
    pub actor_id: Option<String>,
    pub data: String,
    pub created_at: i64,
    pub dispatched: bool,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = authorization_codes)]
pub struct AuthorizationCode {
    pub code_hash: String,
    pub client_id: String,
    pub user_id: String,
    pub redirect_uri: String,
    pub scope: String,
    pub code_challenge: Option<String>,
    pub family_id: String,
    pub expires_at: i64,
    pub used_at: Option<i64>,
    pub created_at: i64,
}

/// The family of a chain of tokens: one sign-in and every rotation of its refresh token. Who
/// the tokens were issued to and whether they are revoked is kept here, once.
/// Absent fields are inserted as NULL (see [`NewEvent`]).
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = token_families, treat_none_as_default_value = false)]
pub struct TokenFamily {
    pub id: String,
    pub user_id: String,
    pub client_id: String,
    pub device_id: Option<i64>,
    pub revoked: bool,
    pub created_at: i64,
    /// No token of the family outlives this, a rotation's included; `None`: the client's
    /// lifetimes alone decide.
    pub ends_at: Option<i64>,
}

/// An access token as stored: its key and lifetime; the rest is its family's.
/// Absent fields are inserted as NULL (see [`NewEvent`]).
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = access_tokens, treat_none_as_default_value = false)]
pub struct AccessTokenRow {
    pub token_hash: String,
    pub family_id: String,
    pub scope: String,
    pub expires_at: Option<i64>,
    pub created_at: i64,
}

/// A refresh token as stored: its key, lifetime and use; the rest is its family's.
/// Absent fields are inserted as NULL (see [`NewEvent`]).
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = refresh_tokens, treat_none_as_default_value = false)]
pub struct RefreshTokenRow {
    pub token_hash: String,
    pub family_id: String,
    pub scope: String,
    pub expires_at: Option<i64>,
    pub used_at: Option<i64>,
    pub created_at: i64,
}

/// An access token with its family's owner and state.
#[derive(Debug, Clone)]
pub struct AccessToken {
    pub token_hash: String,
    pub family_id: String,
    pub client_id: String,
    pub user_id: String,
    pub scope: String,
    pub device_id: Option<i64>,
    pub expires_at: Option<i64>,
    pub revoked: bool,
    pub created_at: i64,
}

impl From<(AccessTokenRow, TokenFamily)> for AccessToken {
    fn from((t, f): (AccessTokenRow, TokenFamily)) -> AccessToken {
        AccessToken {
            token_hash: t.token_hash,
            family_id: t.family_id,
            client_id: f.client_id,
            user_id: f.user_id,
            scope: t.scope,
            device_id: f.device_id,
            expires_at: t.expires_at,
            revoked: f.revoked,
            created_at: t.created_at,
        }
    }
}

/// A refresh token with its family's owner and state.
#[derive(Debug, Clone)]
pub struct RefreshToken {
    pub token_hash: String,
    pub family_id: String,
    pub client_id: String,
    pub user_id: String,
    pub scope: String,
    pub device_id: Option<i64>,
    pub expires_at: Option<i64>,
    pub used_at: Option<i64>,
    pub revoked: bool,
    pub created_at: i64,
    /// The family's end ([`TokenFamily::ends_at`]).
    pub family_ends_at: Option<i64>,
}

impl From<(RefreshTokenRow, TokenFamily)> for RefreshToken {
    fn from((t, f): (RefreshTokenRow, TokenFamily)) -> RefreshToken {
        RefreshToken {
            token_hash: t.token_hash,
            family_id: t.family_id,
            client_id: f.client_id,
            user_id: f.user_id,
            scope: t.scope,
            device_id: f.device_id,
            expires_at: t.expires_at,
            used_at: t.used_at,
            revoked: f.revoked,
            created_at: t.created_at,
            family_ends_at: f.ends_at,
        }
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = authorize_requests)]
pub struct AuthorizeRequest {
    pub ticket_hash: String,
    pub client_id: String,
    pub user_id: String,
    pub redirect_uri: String,
    pub scope: String,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub mobile: bool,
    pub expires_at: i64,
    /// `consent`, or `tfa` for the two-factor step that comes before it.
    pub kind: String,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = scim_tokens)]
pub struct ScimToken {
    pub id: String,
    pub name: String,
    pub token_hash: String,
    pub revoked: bool,
    pub created_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = webhooks)]
#[diesel(treat_none_as_null = true)]
pub struct Webhook {
    pub id: String,
    pub owner_id: String,
    pub url: String,
    pub token: Option<String>,
    pub secret: String,
    pub enabled: bool,
    /// A JSON array of subject patterns.
    pub subscriptions: String,
    pub status: String,
    pub description: String,
    pub version: i64,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_deliveries)]
pub struct Delivery {
    /// Also the `webhook-id` header: the same on every attempt.
    pub id: String,
    pub webhook_id: String,
    pub event_id: String,
    pub subject: String,
    /// The JSON body, fixed when the delivery is made.
    pub payload: String,
    /// `pending`, `delivered` or `failed`.
    pub state: String,
    pub attempts: i32,
    /// Unix milliseconds.
    pub next_attempt_at: i64,
    pub lease_until: Option<i64>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = webhook_attempts)]
pub struct Attempt {
    pub id: i64,
    pub delivery_id: String,
    pub attempt: i32,
    pub status_code: Option<i32>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub created_at: i64,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = webhook_attempts)]
pub struct NewAttempt {
    pub delivery_id: String,
    pub attempt: i32,
    pub status_code: Option<i32>,
    pub duration_ms: i64,
    pub error: Option<String>,
    pub created_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = web_sessions)]
pub struct WebSession {
    pub id_hash: String,
    pub user_id: String,
    pub csrf_hash: String,
    /// `active`, or `password_change` while a forced password change is due.
    pub state: String,
    pub created_at: i64,
    pub expires_at: i64,
}

/// A folder (`kind` `d`) or a file (`f`).
#[derive(Debug, Clone, Queryable, Selectable, Insertable, QueryableByName)]
#[diesel(table_name = objects)]
pub struct Object {
    pub id: String,
    pub kind: String,
    pub parent_id: Option<String>,
    pub owner_id: String,
    /// `base`, `sync` or `my` for a user's system folders.
    pub system: Option<String>,
    pub name: String,
    pub name_folded: String,
    pub description: String,
    pub created_at: i64,
    pub modified_at: i64,
    pub creator_id: String,
    pub modifier_id: String,
    pub expire_at: Option<i64>,
    pub deleted_at: Option<i64>,
    pub trashed_with: Option<String>,
    pub perm_deleted: bool,
    pub secure: bool,
    pub syncable: bool,
    pub file_lifetime: i64,
    pub current_version_id: Option<String>,
    pub size: i64,
    pub mime: Option<String>,
    pub client_created_at: Option<i64>,
    pub client_modified_at: Option<i64>,
}

impl Object {
    pub fn is_folder(&self) -> bool {
        self.kind == "d"
    }
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = file_versions)]
pub struct FileVersion {
    pub id: String,
    pub file_id: String,
    pub number: i64,
    pub blob_id: String,
    pub name: String,
    pub size: i64,
    pub mime: String,
    pub creator_id: String,
    pub created_at: i64,
    pub client_created_at: Option<i64>,
    pub client_modified_at: Option<i64>,
    /// `allowed`, `scanning` or `disallowed`.
    pub av_status: String,
    pub av_signature: Option<String>,
    pub preview_status: String,
    pub preview_blob_id: Option<String>,
    pub deleted: bool,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = blobs)]
pub struct Blob {
    pub id: String,
    pub size: i64,
    pub md5: String,
    pub refs: i64,
    pub created_at: i64,
    pub unreferenced_at: Option<i64>,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = object_members)]
pub struct Member {
    pub object_id: String,
    pub user_id: String,
    pub role_id: i64,
    pub shared_by: String,
    pub notify_file_added: bool,
    pub created_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = uploads)]
pub struct Upload {
    pub id: i64,
    pub user_id: String,
    pub folder_id: Option<String>,
    pub file_id: Option<String>,
    pub filename: String,
    pub staging: String,
    pub total_size: Option<i64>,
    pub total_chunks: Option<i64>,
    pub uploaded_chunks: i64,
    pub uploaded_size: i64,
    pub client_created_at: Option<i64>,
    pub client_modified_at: Option<i64>,
    pub disable_auto_version: bool,
    pub tracking_id: Option<String>,
    pub result_file_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: i64,
    /// The draft the uploaded file attaches to.
    pub email_id: Option<String>,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = uploads)]
pub struct NewUpload {
    pub user_id: String,
    pub folder_id: Option<String>,
    pub file_id: Option<String>,
    pub filename: String,
    pub staging: String,
    pub total_size: Option<i64>,
    pub total_chunks: Option<i64>,
    pub client_created_at: Option<i64>,
    pub client_modified_at: Option<i64>,
    pub disable_auto_version: bool,
    pub tracking_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
    pub expires_at: i64,
    pub email_id: Option<String>,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = comments)]
pub struct Comment {
    pub id: i64,
    pub object_id: String,
    pub parent_id: Option<i64>,
    pub user_id: String,
    pub contents: String,
    pub created_at: i64,
    pub modified_at: i64,
    pub deleted: bool,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = comments)]
pub struct NewComment {
    pub object_id: String,
    pub parent_id: Option<i64>,
    pub user_id: String,
    pub contents: String,
    pub created_at: i64,
    pub modified_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = jobs)]
pub struct Job {
    pub id: i64,
    pub kind: String,
    pub payload: String,
    pub state: String,
    pub attempts: i64,
    pub max_attempts: i64,
    pub run_at: i64,
    pub lease_until: Option<i64>,
    pub locked_by: Option<String>,
    pub last_error: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = contacts)]
pub struct Contact {
    pub id: i64,
    pub user_id: String,
    pub name: String,
    pub name_folded: String,
    pub created_at: i64,
    pub modified_at: i64,
    pub last_contact_at: Option<i64>,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = contacts)]
pub struct NewContact {
    pub user_id: String,
    pub name: String,
    pub name_folded: String,
    pub created_at: i64,
    pub modified_at: i64,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = contact_items)]
pub struct ContactItem {
    pub contact_id: i64,
    pub user_id: String,
    pub position: i64,
    pub email: String,
}

#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = external_dls)]
pub struct ExternalDl {
    pub email: String,
    pub created_by: Option<String>,
    pub created_at: i64,
}

/// A user account converted into a shared mailbox (its id is the user's).
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = shared_mailboxes)]
pub struct SharedMailbox {
    pub user_id: String,
    pub created_at: i64,
    pub modified_at: i64,
}

/// One member of a shared mailbox, and whether the member has it active.
#[derive(Debug, Clone, Queryable, Selectable, Insertable, PartialEq, Eq)]
#[diesel(table_name = shared_mailbox_members)]
pub struct SharedMailboxMember {
    pub mailbox_id: String,
    pub member_id: String,
    pub active: bool,
    pub modified_at: i64,
}

/// A user's favorite folder or file.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = favorites)]
pub struct Favorite {
    pub id: i64,
    pub user_id: String,
    pub object_id: String,
    pub created_at: i64,
}

/// A user's subscription to a folder's notifications (flags 0 or 1).
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = folder_notifications)]
pub struct FolderNotification {
    pub user_id: String,
    pub object_id: String,
    pub file_added: i64,
    pub comment_added: i64,
    pub created_at: i64,
    pub modified_at: i64,
}

/// Something a subscriber has yet to be told about a folder: `kind` `file` or `comment`, the
/// file it concerns, who did it, and `detail` (JSON: the file's name, a comment's text).
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = notification_items)]
pub struct NotificationItem {
    pub id: i64,
    pub user_id: String,
    pub folder_id: String,
    pub kind: String,
    pub object_id: String,
    pub actor_id: Option<String>,
    pub detail: String,
    pub created_at: i64,
}

/// A request-file link: one recipient's way to send files to the requestor (see the migration
/// `request_files` for the columns' meaning).
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = request_files)]
pub struct RequestFile {
    pub id: i64,
    pub ref_hash: String,
    pub email_id: String,
    pub position: i32,
    pub kind: String,
    pub requestor_id: String,
    pub actor_id: String,
    pub folder_id: Option<String>,
    pub shared_mailbox_id: Option<String>,
    pub recipient: String,
    pub recipient_user_id: Option<String>,
    pub file_limit: i64,
    pub require_auth: bool,
    pub action_id: i64,
    pub expire_at: i64,
    pub withdrawn_at: Option<i64>,
    pub reply_email_id: Option<String>,
    pub created_at: i64,
}

#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = request_files)]
pub struct NewRequestFile {
    pub ref_hash: String,
    pub email_id: String,
    pub position: i32,
    pub kind: String,
    pub requestor_id: String,
    pub actor_id: String,
    pub folder_id: Option<String>,
    pub shared_mailbox_id: Option<String>,
    pub recipient: String,
    pub recipient_user_id: Option<String>,
    pub file_limit: i64,
    pub require_auth: bool,
    pub action_id: i64,
    pub expire_at: i64,
    pub created_at: i64,
}

/// One upload through a request-file link.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = request_file_uploads)]
pub struct RequestFileUpload {
    pub id: i64,
    pub request_file_id: i64,
    pub file_id: String,
    pub version_id: String,
    pub name: String,
    pub created_at: i64,
}

/// A user's SSH public key; a deleted one is kept for the administrator's list.
#[derive(Debug, Clone, Queryable, Selectable)]
#[diesel(table_name = ssh_keys)]
pub struct SshKey {
    pub id: i64,
    pub user_id: String,
    pub name: String,
    pub public_key: String,
    pub fingerprint: String,
    pub active: bool,
    pub admin_active: bool,
    pub deleted: bool,
    pub created_at: i64,
    pub deleted_at: Option<i64>,
}
