//! System settings and the password policy; read by every node from the database.

use crate::platform::events;
use crate::platform::views::SystemSettingsView;
use crate::{now, Ctx, Result};
use coffer_domain::password::PasswordPolicy;
use coffer_errors::Error;
use coffer_store::models::User;

/// The settings an operator may change with `cofferd settings set`, and how each value parses.
pub const KEYS: &[(&str, &str)] = &[
    ("passwordPolicy", "JSON object {enabled, minLength, minNumeric, minLower, minUpper, minSpecial, allowBrowserAutofill}"),
    ("languageId", "integer"),
    ("locationId", "integer (a location id) or null"),
    ("storageQuota", "integer, bytes"),
    ("maxUploadSize", "integer, bytes: the largest file accepted (default 2 GiB)"),
    ("uploadChunkMax", "integer, bytes: the largest upload chunk (default 64 MiB)"),
    ("uploadTimeout", "integer, seconds an idle upload session lives (default 86400)"),
    ("trashRetentionDays", "integer, days the trash keeps what was deleted (default 30)"),
    ("sftpEnabled", "true or false: SFTP for the user role"),
    ("scimProvisioning", "true or false: whether SCIM tokens may be used (false pauses provisioning)"),
    ("sharedMailboxMaxActive", "integer, 0 or more: how many shared mailboxes one member may have active at once (default 10)"),
    ("notificationDigestSeconds", "integer, 0 or more: seconds folder notifications are gathered into one mail (default 300; 0: at once)"),
    ("requestFileEnabled", "true or false: whether users may ask for files through request-file links (default true)"),
    ("requestFileDefaultCount", "integer, 1 or more: files a request-file link takes when the request names no count (default 10)"),
    ("requestFileMaxCount", "integer, 1 or more: the most files a request-file link may take (default 100)"),
    ("requestFileDefaultExpireDays", "integer, 0 or more: days a request-file link works when the request names no expiry (default 14; 0: until the end of today)"),
    ("requestFileExcludedExtensions", "comma-separated extensions request-file links refuse, e.g. `exe,bat` (default none)"),
    ("dliEnabled", "true or false: the DLI licence, for the /rest/dli reads and exports (default false)"),
    ("auditRetentionDays", "integer, 0 or more: days the activity log keeps its records, expired by whole signed segments (default 0: kept for ever)"),
];

/// The defaults of the integer request-file settings (the request-file area reads them).
pub const REQUEST_FILE_DEFAULTS: &[(&str, i64)] = &[
    ("requestFileDefaultCount", 10),
    ("requestFileMaxCount", 100),
    ("requestFileDefaultExpireDays", 14),
];

/// The default of `sharedMailboxMaxActive`.
pub const SHARED_MAILBOX_MAX_ACTIVE: i64 = 10;

/// The default of `notificationDigestSeconds` (the notifications area reads the setting).
pub const NOTIFICATION_DIGEST_SECONDS: i64 = 300;

/// How many shared mailboxes one member may have active at once (`sharedMailboxMaxActive`).
pub fn shared_mailbox_max_active(c: &mut coffer_store::DbConn) -> Result<i64> {
    let raw = coffer_store::settings::get(c, "sharedMailboxMaxActive")?;
    Ok(raw
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(SHARED_MAILBOX_MAX_ACTIVE))
}

/// Whether SCIM provisioning is on (the default); an operator pauses it with
/// `cofferd settings set scimProvisioning false`.
pub fn scim_provisioning(c: &mut coffer_store::DbConn) -> Result<bool> {
    let raw = coffer_store::settings::get(c, "scimProvisioning")?;
    Ok(raw.as_deref() != Some("false"))
}

pub fn password_policy(ctx: &Ctx) -> Result<PasswordPolicy> {
    let raw = ctx.with_conn(|c| Ok(coffer_store::settings::get(c, "passwordPolicy")?))?;
    Ok(match raw {
        Some(s) => serde_json::from_str(&s).map_err(Error::internal)?,
        None => PasswordPolicy::default(),
    })
}

fn int_setting(ctx: &Ctx, key: &str) -> Result<Option<i64>> {
    let raw = ctx.with_conn(|c| Ok(coffer_store::settings::get(c, key)?))?;
    Ok(raw.and_then(|s| s.parse::<i64>().ok()))
}

pub fn system_settings(ctx: &Ctx, user: &User) -> Result<SystemSettingsView> {
    Ok(SystemSettingsView {
        language_id: int_setting(ctx, "languageId")?.unwrap_or(1),
        location_id: int_setting(ctx, "locationId")?,
        storage_used: ctx.with_conn(|c| Ok(coffer_store::content::usage(c, &user.id)?))?,
        storage_quota: ctx.with_conn(|c| crate::content::setting(c, "storageQuota"))?,
        mobile_number: user.mobile_number.clone(),
        mobile_number_verified: user.mobile_verified,
    })
}

/// Reads one setting as the operator sees it.
pub fn get(ctx: &Ctx, key: &str) -> Result<String> {
    check_key(key)?;
    let raw = ctx.with_conn(|c| Ok(coffer_store::settings::get(c, key)?))?;
    Ok(match (key, raw) {
        (_, Some(v)) => v,
        ("passwordPolicy", None) => {
            serde_json::to_string(&PasswordPolicy::default()).map_err(Error::internal)?
        }
        ("languageId", None) => "1".into(),
        (k, None) if crate::content::DEFAULTS.iter().any(|(d, _)| *d == k) => ctx
            .with_conn(|c| crate::content::setting(c, k))?
            .to_string(),
        ("sftpEnabled" | "scimProvisioning", None) => "true".into(),
        ("dliEnabled", None) => "false".into(),
        ("auditRetentionDays", None) => "0".into(),
        ("sharedMailboxMaxActive", None) => SHARED_MAILBOX_MAX_ACTIVE.to_string(),
        ("notificationDigestSeconds", None) => NOTIFICATION_DIGEST_SECONDS.to_string(),
        ("requestFileEnabled", None) => "true".into(),
        ("requestFileExcludedExtensions", None) => String::new(),
        (k, None) if REQUEST_FILE_DEFAULTS.iter().any(|(d, _)| *d == k) => REQUEST_FILE_DEFAULTS
            .iter()
            .find(|(d, _)| *d == k)
            .map_or(0, |(_, v)| *v)
            .to_string(),
        (_, None) => "null".into(),
    })
}

fn check_key(key: &str) -> Result<()> {
    if KEYS.iter().any(|(k, _)| *k == key) {
        Ok(())
    } else {
        let known: Vec<&str> = KEYS.iter().map(|(k, _)| *k).collect();
        Err(
            coffer_errors::ApiError::field(coffer_errors::ErrorCode::InvalidParameter, "key")
                .with_message(format!(
                    "Unknown setting `{key}`; known: {}.",
                    known.join(", ")
                ))
                .into(),
        )
    }
}

/// Changes one setting after checking its value; records `settings.system.update`.
pub fn set(ctx: &Ctx, key: &str, value: &str, actor: Option<&str>) -> Result<()> {
    check_key(key)?;
    let bad = |why: &str| {
        Error::from(
            coffer_errors::ApiError::field(coffer_errors::ErrorCode::InputInvalidFormat, key)
                .with_message(format!("Invalid value for `{key}`: {why}.")),
        )
    };
    let stored = match key {
        "passwordPolicy" => {
            let p: PasswordPolicy = serde_json::from_str(value).map_err(|e| bad(&e.to_string()))?;
            serde_json::to_string(&p).map_err(Error::internal)?
        }
        "languageId" | "storageQuota" => value
            .parse::<i64>()
            .map_err(|_| bad("an integer"))?
            .to_string(),
        "maxUploadSize" | "uploadChunkMax" | "uploadTimeout" | "trashRetentionDays" => value
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 1)
            .ok_or_else(|| bad("a positive integer"))?
            .to_string(),
        "sharedMailboxMaxActive" | "notificationDigestSeconds" | "auditRetentionDays" => value
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 0)
            .ok_or_else(|| bad("an integer, 0 or more"))?
            .to_string(),
        "locationId" if value == "null" => value.to_string(),
        "locationId" => {
            let id = value
                .parse::<i64>()
                .map_err(|_| bad("an integer or null"))?;
            ctx.with_conn(|c| Ok(coffer_store::locations::by_id(c, id)?))?
                .ok_or_else(|| bad("no such location"))?;
            id.to_string()
        }
        "requestFileDefaultCount" | "requestFileMaxCount" => value
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 1)
            .ok_or_else(|| bad("a positive integer"))?
            .to_string(),
        "requestFileDefaultExpireDays" => value
            .parse::<i64>()
            .ok()
            .filter(|v| (0..=3650).contains(v))
            .ok_or_else(|| bad("an integer from 0 to 3650"))?
            .to_string(),
        "requestFileExcludedExtensions" => {
            if value.len() > 4000 || !coffer_domain::input::is_clean(value, false) {
                return Err(bad("a comma-separated list of extensions"));
            }
            coffer_domain::request_file::parse_extensions(value).join(",")
        }
        "sftpEnabled" | "scimProvisioning" | "requestFileEnabled" | "dliEnabled" => value
            .parse::<bool>()
            .map_err(|_| bad("true or false"))?
            .to_string(),
        _ => return Err(bad("unknown")),
    };
    ctx.write(|c| {
        coffer_store::settings::put(c, key, &stored, now())?;
        events::record(
            c,
            "settings.system.update",
            actor,
            serde_json::json!({"key": key}),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_get() {
        let (_d, ctx) = crate::test_support::ctx();
        assert_eq!(password_policy(&ctx).unwrap(), PasswordPolicy::default());
        set(&ctx, "passwordPolicy", r#"{"enabled":true,"minLength":12,"minNumeric":0,"minLower":0,"minUpper":0,"minSpecial":0,"allowBrowserAutofill":false}"#, None).unwrap();
        assert_eq!(password_policy(&ctx).unwrap().min_length, 12);
        assert!(set(&ctx, "passwordPolicy", "{}", None).is_err());
        assert!(set(&ctx, "languageId", "x", None).is_err());
        assert!(set(&ctx, "nope", "1", None).is_err());
        assert!(set(&ctx, "locationId", "99", None).is_err());
        set(&ctx, "storageQuota", "42", None).unwrap();
        assert_eq!(get(&ctx, "sharedMailboxMaxActive").unwrap(), "10");
        assert!(set(&ctx, "sharedMailboxMaxActive", "-1", None).is_err());
        set(&ctx, "sharedMailboxMaxActive", "3", None).unwrap();
        let max = ctx.with_conn(shared_mailbox_max_active).unwrap();
        assert_eq!(max, 3);
        assert_eq!(get(&ctx, "storageQuota").unwrap(), "42");
    }
}
