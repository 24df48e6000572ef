//! The directory behind `GET /rest/users/ldapSearch`: an LDAP server when one is configured,
//! the local users otherwise. LDAP input is escaped per RFC 4515 (`coffer_domain::ldap`).

use crate::{Ctx, Result};
use coffer_errors::{ApiError, Error, ErrorCode};
use std::time::Duration;

/// How to reach and read the LDAP directory.
#[derive(Clone)]
pub struct LdapConfig {
    /// `ldap://host:389` or `ldaps://host:636`.
    pub url: String,
    pub bind_dn: Option<String>,
    pub bind_password: Option<String>,
    pub base_dn: String,
    /// The attribute holding the email (`mail`).
    pub mail_attribute: String,
    /// The attribute holding the display name (`cn`).
    pub name_attribute: String,
    pub timeout: Duration,
}

impl std::fmt::Debug for LdapConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The bind password never shows in logs.
        f.debug_struct("LdapConfig")
            .field("url", &self.url)
            .field("bind_dn", &self.bind_dn)
            .field("base_dn", &self.base_dn)
            .field("mail_attribute", &self.mail_attribute)
            .field("name_attribute", &self.name_attribute)
            .finish_non_exhaustive()
    }
}

/// At most this many matches are answered.
pub const MAX_MATCHES: usize = 50;

/// Searches the directory: entries whose email or name contains `value`, as `(email, name)`.
pub fn ldap_search(cfg: &LdapConfig, value: &str) -> Result<Vec<(String, String)>> {
    let unavailable = |what: &str, e: &dyn std::fmt::Display| {
        log::warn!("LDAP {what} at {}: {e}", cfg.url);
        Error::from(
            ApiError::new(ErrorCode::ServiceUnavailable)
                .with_message("The directory is not available."),
        )
    };
    let settings = ldap3::LdapConnSettings::new().set_conn_timeout(cfg.timeout);
    let mut conn = ldap3::LdapConn::with_settings(settings, &cfg.url)
        .map_err(|e| unavailable("connection", &e))?;
    conn.with_timeout(cfg.timeout);
    if let (Some(dn), Some(pw)) = (&cfg.bind_dn, &cfg.bind_password) {
        conn.simple_bind(dn, pw)
            .and_then(|r| r.success())
            .map_err(|e| unavailable("bind", &e))?;
    }
    let filter =
        coffer_domain::ldap::contains_any(&[&cfg.mail_attribute, &cfg.name_attribute], value);
    let attrs = vec![cfg.mail_attribute.as_str(), cfg.name_attribute.as_str()];
    let (entries, _) = conn
        .search(&cfg.base_dn, ldap3::Scope::Subtree, &filter, attrs)
        .and_then(|r| r.success())
        .map_err(|e| unavailable("search", &e))?;
    let _ = conn.unbind();
    let mut out: Vec<(String, String)> = entries
        .into_iter()
        .map(ldap3::SearchEntry::construct)
        .filter_map(|e| {
            let first = |a: &str| {
                e.attrs
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(a))
                    .and_then(|(_, v)| v.first().cloned())
            };
            let mail = first(&cfg.mail_attribute)?;
            let name = first(&cfg.name_attribute).unwrap_or_else(|| mail.clone());
            Some((mail.to_ascii_lowercase(), name))
        })
        .collect();
    out.sort();
    out.truncate(MAX_MATCHES);
    Ok(out)
}

/// The directory search of `GET /rest/users/ldapSearch`.
pub fn search(ctx: &Ctx, value: &str) -> Result<Vec<serde_json::Value>> {
    let value = value.trim();
    if value.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "value").into());
    }
    if value.chars().count() > 256 {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, "value").into());
    }
    let found: Vec<(String, String)> = match &ctx.config.ldap {
        Some(cfg) => ldap_search(cfg, value)?,
        None => ctx
            .with_conn(|c| Ok(coffer_store::users::search(c, value, MAX_MATCHES as i64)?))?
            .into_iter()
            .map(|u| (u.email, u.name))
            .collect(),
    };
    Ok(found
        .into_iter()
        .map(|(email, name)| serde_json::json!({"email": email, "name": name}))
        .collect())
}
