//! The error catalogue of Coffer: every error code with its HTTP status and message, and the
//! envelopes in which errors leave the server (REST, webhook, OAuth, legacy, SCIM).
//!
//! Which type to use where:
//! - [`ApiError`] is a client's fault or a refusal: it carries a catalogue [`ErrorCode`] and is
//!   rendered into the REST envelope. Services return it inside [`Error::Api`].
//! - [`Error::Internal`] is the server's fault. Its cause is kept as a value ([`InternalError`]:
//!   the error with its `source()` chain, plus what the server was doing) and logged, never sent:
//!   the response is a generic 500.
//! - [`OAuthError`] is the RFC 6749 error of the token and authorization endpoints.
//!
//! This crate has no I/O and no framework dependency, so the catalogue can be reused by any tool.

use serde::Serialize;
use std::borrow::Cow;
use std::fmt;

macro_rules! catalogue {
    ($( $variant:ident => ($code:literal, $status:literal, $message:literal), )*) => {
        /// A code of the error catalogue (interface §7.2, the content core's codes, plus the few
        /// Coffer adds, marked below).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode { $( $variant, )* }

        impl ErrorCode {
            /// Every code, in catalogue order.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];

            /// The wire form, e.g. `ERR_ACCESS_USER`.
            pub const fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $code, )* }
            }

            /// The HTTP status this code answers with by default.
            pub const fn status(self) -> u16 {
                match self { $( ErrorCode::$variant => $status, )* }
            }

            /// The default human-readable message.
            pub const fn message(self) -> &'static str {
                match self { $( ErrorCode::$variant => $message, )* }
            }
        }
    };
}

catalogue! {
    // 403 on `GET /rest/files/{id}` in the reference description.
    AuthInvalidCsrf => ("ERR_AUTH_INVALID_CSRF", 401, "Invalid CSRF authentication."),
    AuthUnauthorized => ("ERR_AUTH_UNAUTHORIZED", 401, "Unauthorized."),
    AuthRequestFile => ("ERR_AUTH_REQUEST_FILE", 401, "The request requires authorization."),
    // 401 on some lists (the folder lists among them).
    AccessUser => ("ERR_ACCESS_USER", 403, "Insufficient access permissions."),
    AccessDenied => ("ERR_ACCESS_DENIED", 403, "Access denied."),
    AccessSystemAdmin => ("ERR_ACCESS_SYSTEM_ADMIN", 403, "The user is not a system administrator."),
    AccessAdmin => ("ERR_ACCESS_ADMIN", 403, "Administrator access is required."),
    AdminRoleRankRestricted => ("ERR_ADMIN_ROLE_RANK_RESTRICTED", 403, "The administrator role rank does not allow this operation."),
    NotInternalDomain => ("ERR_NOT_INTERNAL_DOMAIN", 403, "Email is not in an internal domain."),
    ProfileSftpDisabled => ("ERR_PROFILE_SFTP_DISABLED", 403, "SFTP is not enabled for the profile."),
    SystemRoleSftpDisabled => ("ERR_SYSTEM_ROLE_SFTP_DISABLED", 403, "The SFTP role is not enabled on the server."),
    ProfileCollaborationDisabled => ("ERR_PROFILE_COLLABORATION_DISABLED", 403, "The profile has no collaboration access."),
    LicenseDli => ("ERR_LICENSE_DLI", 403, "The DLI feature is not licensed."),
    LicenseMaxUsersCountReached => ("ERR_LICENSE_MAX_USERS_COUNT_REACHED", 403, "The licensed user count has been reached."),
    EntityDeleted => ("ERR_ENTITY_DELETED", 403, "The entity is deleted."),
    EntityDlpLocked => ("ERR_ENTITY_DLP_LOCKED", 403, "The file is quarantined."),
    EntityNotScanned => ("ERR_ENTITY_NOT_SCANNED", 403, "The file is still being scanned."),
    EntityVirusFound => ("ERR_ENTITY_VIRUS_FOUND", 403, "The file is infected."),
    EntityIsSecureFolder => ("ERR_ENTITY_IS_SECURE_FOLDER", 403, "The folder is restricted."),
    EntityRequestFileExpired => ("ERR_ENTITY_REQUEST_FILE_EXPIRED", 403, "The request file link has expired."),
    EntityUserHasInsufficientPermissions => ("ERR_ENTITY_USER_HAS_INSUFFICIENT_PERMISSIONS", 403, "The target user lacks permissions."),
    InputEmailIsDistributionList => ("ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST", 403, "A distribution list cannot register."),
    UserHasNoUserType => ("ERR_USER_HAS_NO_USER_TYPE", 403, "The user has no profile."),
    UserTypeNoAccess => ("ERR_USER_TYPE_NO_ACCESS", 403, "The user's profile has no access."),
    AuthEcUpdateToken => ("ERR_AUTH_EC_UPDATE_TOKEN", 403, "The source token must be updated or received."),
    SiteSearch => ("ERR_SITE_SEARCH", 403, "The site search call failed."),
    // 422 on `PUT /rest/files/{id}` (a rename onto an existing name).
    EntityExists => ("ERR_ENTITY_EXISTS", 409, "The entity exists."),
    EntityNotFound => ("ERR_ENTITY_NOT_FOUND", 404, "The entity was not found."),
    // Also listed under 422 by `initiateUpload`; 413 is what the quota check answers.
    SystemNoStorageAvailable => ("ERR_SYSTEM_NO_STORAGE_AVAILABLE", 413, "No storage is available."),
    RequestInvalidFilter => ("ERR_REQUEST_INVALID_FILTER", 400, "The filter is invalid."),
    RequestInvalidJson => ("ERR_REQUEST_INVALID_JSON", 400, "The request body is not valid JSON."),
    InputRequired => ("ERR_INPUT_REQUIRED", 422, "The field is required."),
    InputNotInteger => ("ERR_INPUT_NOT_INTEGER", 422, "The field must be an integer."),
    InputNotBoolean => ("ERR_INPUT_NOT_BOOLEAN", 422, "The field must be a boolean."),
    InputNotString => ("ERR_INPUT_NOT_STRING", 422, "The field must be a string."),
    InputNotArray => ("ERR_INPUT_NOT_ARRAY", 422, "The field must be an array."),
    InputNotInList => ("ERR_INPUT_NOT_IN_LIST", 422, "The value is not in the allowed list."),
    InputMinValue => ("ERR_INPUT_MIN_VALUE", 422, "The value is below the minimum."),
    InputInvalidDate => ("ERR_INPUT_INVALID_DATE", 422, "The date is invalid."),
    InputDateNotBefore => ("ERR_INPUT_DATE_NOT_BEFORE", 422, "The date is not before the date it must precede."),
    InputDateNotAfter => ("ERR_INPUT_DATE_NOT_AFTER", 422, "The date is not after the date it must follow."),
    InputInvalidFormat => ("ERR_INPUT_INVALID_FORMAT", 422, "The value has an invalid format."),
    InputInvalidEmail => ("ERR_INPUT_INVALID_EMAIL", 422, "The value is not a valid email address."),
    InvalidParameter => ("ERR_INVALID_PARAMETER", 422, "The parameter is invalid."),
    InputAttributeForbidden => ("ERR_INPUT_ATTRIBUTE_FORBIDDEN", 422, "The attribute is forbidden."),
    InputHyperlink => ("ERR_INPUT_HYPERLINK", 422, "A hyperlink's domain differs from its anchor text."),
    InputPasswordComplexityError => ("ERR_INPUT_PASSWORD_COMPLEXITY_ERROR", 422, "The password does not meet the password policy."),
    SshPublicKeyExists => ("ERR_SSH_PUBLIC_KEY_EXISTS", 422, "An SSH key with the same name exists."),
    MaxActivedSharedMailbox => ("ERR_MAX_ACTIVED_SHAREDMAILBOX", 422, "The maximum number of activated shared mailboxes has been reached."),
    // Converting an account into a shared mailbox (`POST /rest/admin/sharedMailboxes`).
    CannotRetainDataToTheSameUser => ("ERR_CANNOT_RETAIN_DATA_TO_THE_SAME_USER", 422, "The data cannot be retained to the account being converted."),
    CannotRetainDataToUnverifiedUser => ("ERR_CANNOT_RETAIN_DATA_TO_UNVERIFIED_USER", 422, "The data cannot be retained to an inactive or unverified account."),
    UserIsNotInternalDlOrInternalAccount => ("ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT", 422, "The user is not an active internal account."),
    RequestApiVersionMissing => ("ERR_REQUEST_API_VERSION_MISSING", 400, "The API version is missing."),
    RequestVersionNotSupported => ("ERR_REQUEST_VERSION_NOT_SUPPORTED", 400, "The specified API version is not supported by server."),
    RequestNotFound => ("ERR_REQUEST_NOT_FOUND", 404, "The requested endpoint was not found."),
    // The content core (folders, files, versions, uploads, members, comments): the codes the
    // reference description gives its content endpoints. Where a code answers with two statuses
    // on different endpoints, the default is the status of the endpoints that use it most, and
    // the service overrides it (`ApiError::with_status`) on the others, as noted per line.
    AccessDliAdmin => ("ERR_ACCESS_DLI_ADMIN", 403, "The user is not a DLI administrator."),
    SystemTenantSuspended => ("ERR_SYSTEM_TENANT_SUSPENDED", 403, "Access to the service is suspended; contact your administrator."),
    ClientObject => ("ERR_CLIENT_OBJECT", 403, "The operation is not allowed on an object managed by a client application."),
    ProfileSalesforceObjectDisabled => ("ERR_PROFILE_SALESFORCE_OBJECT_DISABLED", 403, "The profile does not allow sharing objects linked to CRM records."),
    ProfileSalesforceObjectRoleDisallowed => ("ERR_PROFILE_SALESFORCE_OBJECT_ROLE_DISALLOWED", 403, "The profile does not allow this role on objects linked to CRM records."),
    EntityIsBaseDir => ("ERR_ENTITY_IS_BASE_DIR", 403, "The operation is not allowed on the root folder."),
    EntityIsSyncDir => ("ERR_ENTITY_IS_SYNC_DIR", 403, "The operation is not allowed on My Folder."),
    EntityIsMyDir => ("ERR_ENTITY_IS_MY_DIR", 403, "The operation is not allowed on the system folder."),
    EntityIsNotUpdatable => ("ERR_ENTITY_IS_NOT_UPDATABLE", 403, "The folder cannot be changed."),
    EntityContainsLockedFiles => ("ERR_ENTITY_CONTAINS_LOCKED_FILES", 403, "The folder contains locked files."),
    // 403 on delete, one-shot upload and new versions; 422 on `PUT /rest/files/{id}`.
    EntityLocked => ("ERR_ENTITY_LOCKED", 403, "The file is locked."),
    // The five restriction codes: 403 on uploads, new versions and moves; 422 on
    // `PUT /rest/files/{id}` (a rename to a restricted name).
    EntityRestrictedExtension => ("ERR_ENTITY_RESTRICTED_EXTENSION", 403, "The file extension is not allowed."),
    EntityRestrictedExtensionCustom => ("ERR_ENTITY_RESTRICTED_EXTENSION_CUSTOM", 403, "The file extension is on the custom list of extensions that are not allowed."),
    EntityRestrictedType => ("ERR_ENTITY_RESTRICTED_TYPE", 403, "The file type is not allowed."),
    EntityRestrictedTypeCustom => ("ERR_ENTITY_RESTRICTED_TYPE_CUSTOM", 403, "The file type is on the custom list of types that are not allowed."),
    EntityRestrictedTypeGroup => ("ERR_ENTITY_RESTRICTED_TYPE_GROUP", 403, "The file belongs to a group of types that is not allowed."),
    EntityCopiedFromEc => ("ERR_ENTITY_COPIED_FROM_EC", 403, "The operation is not allowed on a file copied from an external source."),
    EntityEcToEc => ("ERR_ENTITY_EC_TO_EC", 403, "A file of an external source cannot be copied or moved to an external source."),
    EntityRequestFileUploadLimitReached => ("ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED", 403, "The upload limit of the request file link has been reached."),
    EntityRequestFileNoFileUploaded => ("ERR_ENTITY_REQUEST_FILE_NO_FILE_UPLOADED", 403, "No file has been uploaded through the request file link."),
    SystemRequestFileDisabled => ("ERR_SYSTEM_REQUEST_FILE_DISABLED", 403, "File requests are turned off on this server."),
    EntityIsOwner => ("ERR_ENTITY_IS_OWNER", 403, "The user is the owner of the entity."),
    InputIsOwner => ("ERR_INPUT_IS_OWNER", 403, "The owner cannot be changed or removed as a member."),
    EntityInheritedMemberNotModifiable => ("ERR_ENTITY_INHERITED_MEMBER_NOT_MODIFIABLE", 403, "An inherited member cannot be changed here; change it on the folder it is inherited from."),
    EntityRoleIsAssigned => ("ERR_ENTITY_ROLE_IS_ASSIGNED", 409, "The member already has this role."),
    // 409 when adding members; 403 when removing one (`DELETE /rest/folders/{id}/members/{member_user_id}`).
    EntityParentFolderMemberExists => ("ERR_ENTITY_PARENT_FOLDER_MEMBER_EXISTS", 409, "The user is a member of a parent folder."),
    // Deleting a remote file of an external source that a user holds locked.
    FileIsInUseByOtherUser => ("ERR_FILE_IS_IN_USE_BY_OTHER_USER", 422, "The file is locked by another user."),
    FileIsInUseByCurrentUser => ("ERR_FILE_IS_IN_USE_BY_CURRENT_USER", 422, "The file is locked by you; unlock it or delete it with forceDelete."),
    CannotMoveFolderToSelf => ("ERR_CANNOT_MOVE_FOLDER_TO_SELF", 422, "A folder cannot be moved into itself."),
    CannotMoveToChild => ("ERR_CANNOT_MOVE_TO_CHILD", 422, "A folder cannot be moved into one of its subfolders."),
    InputMaxValue => ("ERR_INPUT_MAX_VALUE", 422, "The value is above the maximum."),
    InputHtmlTagsInvalid => ("ERR_INPUT_HTML_TAGS_INVALID", 422, "The text contains HTML tags that are not allowed."),
    LicenseMaxUploadSize => ("ERR_LICENSE_MAX_UPLOAD_SIZE", 422, "The upload is larger than the maximum upload size."),
    LicenseExpired => ("ERR_LICENSE_EXPIRED", 422, "The license has expired."),
    SystemNoAvailableStorageHosts => ("ERR_SYSTEM_NO_AVAILABLE_STORAGE_HOSTS", 422, "No storage host is available."),
    // Mail: the codes the reference description gives the mail endpoints.
    AccessNotSender => ("ERR_ACCESS_NOT_SENDER", 403, "Only the sender may do this."),
    EntityEmailNotDraft => ("ERR_ENTITY_EMAIL_NOT_DRAFT", 403, "The email is not a draft."),
    EntityEmailIsSent => ("ERR_ENTITY_EMAIL_IS_SENT", 403, "The email has been sent."),
    EntityEmailIsNotCompleted => ("ERR_ENTITY_EMAIL_IS_NOT_COMPLETED", 403, "The email is still being sent."),
    EntityIsDeletedAttachment => ("ERR_ENTITY_IS_DELETED_ATTACHMENT", 403, "The attachment has been deleted."),
    InputEmailWithNoRecipientsNotAllowed => ("ERR_INPUT_EMAIL_WITH_NO_RECIPIENTS_NOT_ALLOWED", 403, "An email needs at least one recipient."),
    InputSecureBodyWithNoAuthNotAllowed => ("ERR_INPUT_SECURE_BODY_WITH_NO_AUTH_NOT_ALLOWED", 403, "A secure body needs an access level that asks for sign-in."),
    InputExceedsMaxValue => ("ERR_INPUT_EXCEEDS_MAX_VALUE", 422, "The value exceeds the maximum."),
    InputPastDate => ("ERR_INPUT_PAST_DATE", 422, "The date is in the past."),
    // Coffer's own codes, for conditions the interface gives no code for.
    RequestMethodNotAllowed => ("ERR_REQUEST_METHOD_NOT_ALLOWED", 405, "The method is not allowed for this endpoint."),
    RequestTooLarge => ("ERR_REQUEST_TOO_LARGE", 413, "The request body is too large."),
    RequestTimeout => ("ERR_REQUEST_TIMEOUT", 408, "The request body did not arrive in time."),
    RequestRateLimited => ("ERR_REQUEST_RATE_LIMITED", 429, "Too many requests; retry later."),
    RequestBlockedByWaf => ("ERR_REQUEST_BLOCKED_BY_WAF", 490, "Request blocked by WAF"),
    InternalServerError => ("ERR_INTERNAL_SERVER_ERROR", 500, "Internal server error."),
    ServiceUnavailable => ("ERR_SERVICE_UNAVAILABLE", 503, "The service is temporarily unavailable."),
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error answered to the client: a catalogue code plus the details the envelope may carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub code: ErrorCode,
    /// The HTTP status; the code's default unless the interface gives another for one call.
    pub status: u16,
    pub message: Cow<'static, str>,
    /// The input field at fault.
    pub field: Option<String>,
    /// The ids that failed in a partial bulk operation.
    pub failed_ids: Option<Vec<String>>,
    /// Where the client should go next (for `ERR_ACCESS_DENIED`).
    pub redirect_url: Option<String>,
    /// Answer in the legacy `{message}` envelope (API versions 1 to 4).
    pub legacy: bool,
    /// Seconds to send as `Retry-After` (a throttled request).
    pub retry_after: Option<i64>,
}

impl ApiError {
    pub fn new(code: ErrorCode) -> Self {
        ApiError {
            code,
            status: code.status(),
            message: Cow::Borrowed(code.message()),
            field: None,
            failed_ids: None,
            redirect_url: None,
            legacy: false,
            retry_after: None,
        }
    }

    /// A field error: the code's message, naming the field.
    pub fn field(code: ErrorCode, field: impl Into<String>) -> Self {
        let field = field.into();
        let mut e = ApiError::new(code);
        e.message = Cow::Owned(format!("{} ({field})", code.message()));
        e.field = Some(field);
        e
    }

    pub fn with_message(mut self, message: impl Into<Cow<'static, str>>) -> Self {
        self.message = message.into();
        self
    }

    pub fn with_status(mut self, status: u16) -> Self {
        self.status = status;
        self
    }

    pub fn with_failed_ids(mut self, ids: Vec<String>) -> Self {
        self.failed_ids = Some(ids);
        self
    }

    pub fn with_redirect_url(mut self, url: impl Into<String>) -> Self {
        self.redirect_url = Some(url.into());
        self
    }

    pub fn with_retry_after(mut self, secs: i64) -> Self {
        self.retry_after = Some(secs);
        self
    }

    pub fn legacy(mut self) -> Self {
        self.legacy = true;
        self
    }

    /// The REST envelope: `{errors: [{code, message, field?, redirectUrl?}], failedIds?}`, or
    /// `{message}` for the legacy versions.
    pub fn body(&self) -> serde_json::Value {
        if self.legacy {
            return serde_json::json!({ "message": self.message });
        }
        let mut item = serde_json::Map::new();
        item.insert("code".into(), self.code.as_str().into());
        item.insert("message".into(), self.message.as_ref().into());
        if let Some(f) = &self.field {
            item.insert("field".into(), f.as_str().into());
        }
        if let Some(u) = &self.redirect_url {
            item.insert("redirectUrl".into(), u.as_str().into());
        }
        let mut body = serde_json::Map::new();
        body.insert("errors".into(), serde_json::Value::Array(vec![item.into()]));
        if let Some(ids) = &self.failed_ids {
            body.insert("failedIds".into(), ids.clone().into());
        }
        body.into()
    }
}

impl From<ErrorCode> for ApiError {
    fn from(code: ErrorCode) -> Self {
        ApiError::new(code)
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl std::error::Error for ApiError {}

/// The cause of an internal failure, kept as a value: the error that caused it (with its own
/// `source()` chain) and, optionally, what the server was doing, as static text.
///
/// As a [`std::error::Error`] it is the head of the chain: its text is the context when there is
/// one (then [`source`](std::error::Error::source) is the cause), else the cause's own text (then
/// `source` continues with the cause's source), so walking the chain names each link once.
/// [`InternalError::chain`] walks it; [`InternalError::report`] writes it on one line for a log.
pub struct InternalError {
    context: Option<&'static str>,
    cause: Box<dyn std::error::Error + Send + Sync>,
}

impl InternalError {
    /// A failure with its cause. A `String` or `&str` is accepted as a cause too (it becomes an
    /// error whose text it is), so `Error::internal(format!(..))` keeps working.
    pub fn new(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        InternalError {
            context: None,
            cause: cause.into(),
        }
    }

    /// A failure while doing `context` (e.g. "reading a blob"), caused by `cause`.
    pub fn with_context(
        context: &'static str,
        cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        InternalError {
            context: Some(context),
            cause: cause.into(),
        }
    }

    /// What the server was doing, when the maker said.
    pub fn context(&self) -> Option<&'static str> {
        self.context
    }

    /// The error that caused the failure.
    pub fn cause(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.cause
    }

    /// The chain from this error down: the context (if any), the cause, and each `source()`.
    pub fn chain(&self) -> impl Iterator<Item = &(dyn std::error::Error + 'static)> {
        let head: &(dyn std::error::Error + 'static) = self;
        std::iter::successors(Some(head), |e| e.source())
    }

    /// The chain on one line, links joined by `": "`. A link whose text already ends with the
    /// text of its source (a wrapper that prints its source, as `#[error("db: {0}")]` does) does
    /// not repeat it.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let mut previous = String::new();
        for link in self.chain() {
            let text = link.to_string();
            if !previous.is_empty() && previous.ends_with(&text) {
                continue;
            }
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
            previous = text;
        }
        out
    }
}

impl fmt::Display for InternalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.context {
            Some(context) => f.write_str(context),
            None => self.cause.fmt(f),
        }
    }
}

impl fmt::Debug for InternalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InternalError")
            .field("context", &self.context)
            .field("cause", &self.cause)
            .finish()
    }
}

impl std::error::Error for InternalError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self.context {
            Some(_) => Some(&*self.cause),
            None => self.cause.source(),
        }
    }
}

/// The error type of services: a client-facing refusal, or an internal failure whose cause is
/// logged and never answered.
///
/// The text of [`Error::Internal`] is the whole chain of its cause (see
/// [`InternalError::report`]), so a log line that prints an `Error` loses nothing; for the same
/// reason `Error` reports no `source()` of its own: take the [`InternalError`] to walk the chain.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Api(ApiError),
    #[error("internal error: {}", .0.report())]
    Internal(InternalError),
}

impl Error {
    /// An internal failure caused by `cause`: an error value (kept, with its `source()` chain),
    /// or a text.
    pub fn internal(cause: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Error::Internal(InternalError::new(cause))
    }

    /// An internal failure while doing `context` (static text, e.g. "writing a blob"), caused by
    /// `cause`.
    pub fn internal_in(
        context: &'static str,
        cause: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        Error::Internal(InternalError::with_context(context, cause))
    }

    /// The client-facing error; an internal failure becomes the generic 500.
    pub fn to_api(&self) -> ApiError {
        match self {
            Error::Api(e) => e.clone(),
            Error::Internal(_) => ApiError::new(ErrorCode::InternalServerError),
        }
    }
}

impl From<InternalError> for Error {
    fn from(e: InternalError) -> Self {
        Error::Internal(e)
    }
}

impl From<ApiError> for Error {
    fn from(e: ApiError) -> Self {
        Error::Api(e)
    }
}

impl From<ErrorCode> for Error {
    fn from(c: ErrorCode) -> Self {
        Error::Api(ApiError::new(c))
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// RFC 6749 §5.2 and §4.1.2.1 error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OAuthErrorCode {
    InvalidRequest,
    InvalidClient,
    InvalidGrant,
    UnauthorizedClient,
    UnsupportedGrantType,
    UnsupportedResponseType,
    InvalidScope,
    AccessDenied,
    ServerError,
    TemporarilyUnavailable,
}

impl OAuthErrorCode {
    pub const fn as_str(self) -> &'static str {
        match self {
            OAuthErrorCode::InvalidRequest => "invalid_request",
            OAuthErrorCode::InvalidClient => "invalid_client",
            OAuthErrorCode::InvalidGrant => "invalid_grant",
            OAuthErrorCode::UnauthorizedClient => "unauthorized_client",
            OAuthErrorCode::UnsupportedGrantType => "unsupported_grant_type",
            OAuthErrorCode::UnsupportedResponseType => "unsupported_response_type",
            OAuthErrorCode::InvalidScope => "invalid_scope",
            OAuthErrorCode::AccessDenied => "access_denied",
            OAuthErrorCode::ServerError => "server_error",
            OAuthErrorCode::TemporarilyUnavailable => "temporarily_unavailable",
        }
    }
}

/// An OAuth error: `{error, error_description}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OAuthError {
    pub error: OAuthErrorCode,
    pub error_description: Cow<'static, str>,
    /// Set when the request was refused for too many failures: answered 429 with
    /// `Retry-After` (seconds).
    #[serde(skip)]
    pub retry_after: Option<i64>,
}

impl OAuthError {
    pub fn new(error: OAuthErrorCode, description: impl Into<Cow<'static, str>>) -> Self {
        OAuthError {
            error,
            error_description: description.into(),
            retry_after: None,
        }
    }
    pub fn invalid_request(d: impl Into<Cow<'static, str>>) -> Self {
        Self::new(OAuthErrorCode::InvalidRequest, d)
    }
    pub fn invalid_client(d: impl Into<Cow<'static, str>>) -> Self {
        Self::new(OAuthErrorCode::InvalidClient, d)
    }
    pub fn invalid_grant(d: impl Into<Cow<'static, str>>) -> Self {
        Self::new(OAuthErrorCode::InvalidGrant, d)
    }
    pub fn unauthorized_client(d: impl Into<Cow<'static, str>>) -> Self {
        Self::new(OAuthErrorCode::UnauthorizedClient, d)
    }
    pub fn invalid_scope(d: impl Into<Cow<'static, str>>) -> Self {
        Self::new(OAuthErrorCode::InvalidScope, d)
    }
    /// Too many failed attempts: try again after `secs` seconds.
    pub fn throttled(secs: i64) -> Self {
        let mut e = Self::new(
            OAuthErrorCode::TemporarilyUnavailable,
            format!("Too many failed attempts; try again in {secs} seconds."),
        );
        e.retry_after = Some(secs);
        e
    }

    pub fn server_error() -> Self {
        Self::new(
            OAuthErrorCode::ServerError,
            "The server could not complete the request.",
        )
    }
}

impl fmt::Display for OAuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.error.as_str(), self.error_description)
    }
}

/// The webhook-management error envelope: `{code, message: "[Status Text] detail"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebhookError {
    pub code: u16,
    pub message: String,
}

impl WebhookError {
    pub fn new(status: u16, detail: &str) -> Self {
        WebhookError {
            code: status,
            message: format!("[{}] {detail}", status_text(status)),
        }
    }
}

/// A SCIM error (RFC 7644 §3.12): `status` is a string.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScimError {
    pub schemas: [&'static str; 1],
    pub status: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scim_type: Option<&'static str>,
    pub detail: String,
}

impl ScimError {
    pub const SCHEMA: &'static str = "urn:ietf:params:scim:api:messages:2.0:Error";
    pub fn new(status: u16, scim_type: Option<&'static str>, detail: impl Into<String>) -> Self {
        ScimError {
            schemas: [Self::SCHEMA],
            status: status.to_string(),
            scim_type,
            detail: detail.into(),
        }
    }
}

/// The reason phrase of an HTTP status, including the firewall's 490.
pub fn status_text(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        412 => "Precondition Failed",
        413 => "Payload Too Large",
        415 => "Unsupported Media Type",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        490 => "Request blocked by WAF",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for c in ErrorCode::ALL {
            assert!(seen.insert(c.as_str()), "duplicate {c}");
            assert!(c.as_str().starts_with("ERR_"));
            assert!(c.message().ends_with('.') || c.status() == 490, "{c}");
            assert!((400..600).contains(&c.status()));
        }
    }

    #[test]
    fn catalogue_statuses_follow_the_interface() {
        let expect = [
            ("ERR_AUTH_INVALID_CSRF", 401),
            ("ERR_AUTH_UNAUTHORIZED", 401),
            ("ERR_AUTH_REQUEST_FILE", 401),
            ("ERR_ACCESS_USER", 403),
            ("ERR_ACCESS_DENIED", 403),
            ("ERR_ACCESS_SYSTEM_ADMIN", 403),
            ("ERR_ENTITY_EXISTS", 409),
            ("ERR_ENTITY_NOT_FOUND", 404),
            ("ERR_SYSTEM_NO_STORAGE_AVAILABLE", 413),
            ("ERR_REQUEST_INVALID_FILTER", 400),
            ("ERR_REQUEST_INVALID_JSON", 400),
            ("ERR_INPUT_REQUIRED", 422),
            ("ERR_INPUT_PASSWORD_COMPLEXITY_ERROR", 422),
            ("ERR_INPUT_INVALID_EMAIL", 422),
            ("ERR_SSH_PUBLIC_KEY_EXISTS", 422),
            ("ERR_MAX_ACTIVED_SHAREDMAILBOX", 422),
            ("ERR_CANNOT_RETAIN_DATA_TO_THE_SAME_USER", 422),
            ("ERR_CANNOT_RETAIN_DATA_TO_UNVERIFIED_USER", 422),
            ("ERR_USER_IS_NOT_INTERNAL_DL_OR_INTERNAL_ACCOUNT", 422),
            ("ERR_REQUEST_API_VERSION_MISSING", 400),
            ("ERR_REQUEST_VERSION_NOT_SUPPORTED", 400),
            ("ERR_REQUEST_NOT_FOUND", 404),
        ];
        for (code, status) in expect {
            let c = ErrorCode::ALL.iter().find(|c| c.as_str() == code).unwrap();
            assert_eq!(c.status(), status, "{code}");
        }
    }

    #[test]
    fn content_core_codes_and_statuses() {
        // Every code the content endpoints list (reference tables, mail aside), with the
        // default status; the comments in the catalogue name the endpoints that override it.
        let expect = [
            ("ERR_ACCESS_DLI_ADMIN", 403),
            ("ERR_SYSTEM_TENANT_SUSPENDED", 403),
            ("ERR_CLIENT_OBJECT", 403),
            ("ERR_PROFILE_SALESFORCE_OBJECT_DISABLED", 403),
            ("ERR_PROFILE_SALESFORCE_OBJECT_ROLE_DISALLOWED", 403),
            ("ERR_ENTITY_IS_BASE_DIR", 403),
            ("ERR_ENTITY_IS_SYNC_DIR", 403),
            ("ERR_ENTITY_IS_MY_DIR", 403),
            ("ERR_ENTITY_IS_NOT_UPDATABLE", 403),
            ("ERR_ENTITY_CONTAINS_LOCKED_FILES", 403),
            ("ERR_ENTITY_LOCKED", 403),
            ("ERR_ENTITY_RESTRICTED_EXTENSION", 403),
            ("ERR_ENTITY_RESTRICTED_EXTENSION_CUSTOM", 403),
            ("ERR_ENTITY_RESTRICTED_TYPE", 403),
            ("ERR_ENTITY_RESTRICTED_TYPE_CUSTOM", 403),
            ("ERR_ENTITY_RESTRICTED_TYPE_GROUP", 403),
            ("ERR_ENTITY_COPIED_FROM_EC", 403),
            ("ERR_ENTITY_EC_TO_EC", 403),
            ("ERR_ENTITY_REQUEST_FILE_UPLOAD_LIMIT_REACHED", 403),
            ("ERR_ENTITY_REQUEST_FILE_NO_FILE_UPLOADED", 403),
            ("ERR_SYSTEM_REQUEST_FILE_DISABLED", 403),
            ("ERR_ENTITY_IS_OWNER", 403),
            ("ERR_INPUT_IS_OWNER", 403),
            ("ERR_ENTITY_INHERITED_MEMBER_NOT_MODIFIABLE", 403),
            ("ERR_ENTITY_ROLE_IS_ASSIGNED", 409),
            ("ERR_ENTITY_PARENT_FOLDER_MEMBER_EXISTS", 409),
            ("ERR_CANNOT_MOVE_FOLDER_TO_SELF", 422),
            ("ERR_CANNOT_MOVE_TO_CHILD", 422),
            ("ERR_INPUT_MAX_VALUE", 422),
            ("ERR_INPUT_HTML_TAGS_INVALID", 422),
            ("ERR_LICENSE_MAX_UPLOAD_SIZE", 422),
            ("ERR_LICENSE_EXPIRED", 422),
            ("ERR_SYSTEM_NO_AVAILABLE_STORAGE_HOSTS", 422),
            // Already in the catalogue, listed by the content endpoints as well.
            ("ERR_ACCESS_DENIED", 403),
            ("ERR_ENTITY_DELETED", 403),
            ("ERR_ENTITY_DLP_LOCKED", 403),
            ("ERR_ENTITY_NOT_SCANNED", 403),
            ("ERR_ENTITY_VIRUS_FOUND", 403),
            ("ERR_ENTITY_IS_SECURE_FOLDER", 403),
            ("ERR_ENTITY_USER_HAS_INSUFFICIENT_PERMISSIONS", 403),
            ("ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST", 403),
            ("ERR_LICENSE_MAX_USERS_COUNT_REACHED", 403),
            ("ERR_PROFILE_COLLABORATION_DISABLED", 403),
            ("ERR_USER_HAS_NO_USER_TYPE", 403),
            ("ERR_USER_TYPE_NO_ACCESS", 403),
            ("ERR_INPUT_INVALID_DATE", 422),
            ("ERR_INPUT_INVALID_FORMAT", 422),
            ("ERR_INPUT_MIN_VALUE", 422),
            ("ERR_INPUT_NOT_IN_LIST", 422),
            ("ERR_INVALID_PARAMETER", 422),
        ];
        for (code, status) in expect {
            let c = ErrorCode::ALL
                .iter()
                .find(|c| c.as_str() == code)
                .unwrap_or_else(|| panic!("{code} is missing"));
            assert_eq!(c.status(), status, "{code}");
        }
        // A per-endpoint status is an override of the default, not a second code.
        let e = ApiError::new(ErrorCode::EntityLocked).with_status(422);
        assert_eq!((e.code.as_str(), e.status), ("ERR_ENTITY_LOCKED", 422));
    }

    #[test]
    fn rest_envelope_carries_field_and_redirect() {
        let e = ApiError::field(ErrorCode::InputRequired, "name");
        let b = e.body();
        assert_eq!(b["errors"][0]["code"], "ERR_INPUT_REQUIRED");
        assert_eq!(b["errors"][0]["field"], "name");
        let d = ApiError::new(ErrorCode::AccessDenied)
            .with_redirect_url("/login")
            .body();
        assert_eq!(d["errors"][0]["redirectUrl"], "/login");
        let p = ApiError::new(ErrorCode::AccessUser)
            .with_failed_ids(vec!["1".into()])
            .body();
        assert_eq!(p["failedIds"][0], "1");
    }

    #[test]
    fn legacy_envelope_is_message_only() {
        let b = ApiError::new(ErrorCode::RequestVersionNotSupported)
            .legacy()
            .body();
        assert_eq!(
            b,
            serde_json::json!({"message": "The specified API version is not supported by server."})
        );
    }

    #[test]
    fn internal_errors_never_leak_text() {
        let e = Error::internal("database is locked at /secret/path");
        let api = e.to_api();
        assert_eq!(api.status, 500);
        assert!(!api.body().to_string().contains("secret"));
        let e = Error::internal_in("reading a blob", io_error());
        assert_eq!(e.to_api(), ApiError::new(ErrorCode::InternalServerError));
    }

    /// An error with a source of its own, as a database or storage error has.
    #[derive(Debug)]
    struct Wrapper(&'static str, std::io::Error);

    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.1)
        }
    }

    fn io_error() -> Wrapper {
        Wrapper(
            "opening the blob",
            std::io::Error::new(std::io::ErrorKind::PermissionDenied, "permission denied"),
        )
    }

    fn texts(e: &InternalError) -> Vec<String> {
        e.chain().map(|l| l.to_string()).collect()
    }

    #[test]
    fn internal_error_keeps_its_cause_as_a_value() {
        let e = InternalError::with_context("reading a blob", io_error());
        assert_eq!(e.context(), Some("reading a blob"));
        // The cause is the value made, not its text: its type and its own source survive.
        let cause = e
            .cause()
            .downcast_ref::<Wrapper>()
            .expect("the cause's type");
        assert_eq!(cause.1.kind(), std::io::ErrorKind::PermissionDenied);
        assert_eq!(
            texts(&e),
            ["reading a blob", "opening the blob", "permission denied"]
        );
        assert_eq!(
            e.report(),
            "reading a blob: opening the blob: permission denied"
        );
        let io = e
            .chain()
            .find_map(|l| l.downcast_ref::<std::io::Error>())
            .expect("the innermost source");
        assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn internal_error_without_context_starts_at_its_cause() {
        let e = InternalError::new(io_error());
        assert_eq!(e.context(), None);
        assert_eq!(texts(&e), ["opening the blob", "permission denied"]);
        // A text is a cause too, with nothing below it.
        let e = InternalError::new(format!("the user {} vanished", 7));
        assert_eq!(texts(&e), ["the user 7 vanished"]);
        assert!(std::error::Error::source(&e).is_none());
        let e = InternalError::with_context("signing in", "no first-party web client");
        assert_eq!(e.report(), "signing in: no first-party web client");
    }

    #[test]
    fn service_error_text_carries_the_whole_chain() {
        let e = Error::internal_in("reading a blob", io_error());
        assert_eq!(
            e.to_string(),
            "internal error: reading a blob: opening the blob: permission denied"
        );
        let Error::Internal(inner) = &e else {
            panic!("internal")
        };
        assert_eq!(inner.chain().count(), 3);
        // A wrapper whose text already prints its source does not repeat it in the report.
        #[derive(Debug)]
        struct Db(std::io::Error);
        impl fmt::Display for Db {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "database: {}", self.0)
            }
        }
        impl std::error::Error for Db {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let db = Db(std::io::Error::other("disk I/O error"));
        assert_eq!(
            InternalError::with_context("saving", db).report(),
            "saving: database: disk I/O error"
        );
        // From an InternalError, and a refusal kept as the cause of an internal failure.
        let e: Error = InternalError::new(ApiError::new(ErrorCode::EntityNotFound)).into();
        assert_eq!(e.to_api().status, 500);
        assert!(e.to_string().contains("ERR_ENTITY_NOT_FOUND"), "{e}");
    }

    #[test]
    fn webhook_and_oauth_envelopes() {
        let w = WebhookError::new(400, "webhook.url must be provided");
        assert_eq!(w.message, "[Bad Request] webhook.url must be provided");
        let o = serde_json::to_value(OAuthError::invalid_grant("code used")).unwrap();
        assert_eq!(o["error"], "invalid_grant");
        assert_eq!(o["error_description"], "code used");
        let s = serde_json::to_value(ScimError::new(409, Some("uniqueness"), "taken")).unwrap();
        assert_eq!(s["status"], "409");
        assert_eq!(s["scimType"], "uniqueness");
    }
}
