//! What a successful token request answers: the grant being used, token lifetimes, whether a
//! refresh token comes along, and the JSON response (RFC 6749 §5.1).

use crate::{jwt, signature, ClientInfo};
use coffer_domain::client::{flag, flow, DEFAULT_REFRESH_TOKEN_LIFETIME_HOURS};
use coffer_errors::{OAuthError, OAuthErrorCode};
use serde::Serialize;

/// `expires_in` of a token that does not expire: ten years, in seconds (the field is required,
/// and clients treat a large value as "never").
pub const NO_EXPIRY_EXPIRES_IN: i64 = 10 * 365 * 24 * 3600;

/// The body of a successful token response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub expires_in: i64,
    /// Always `bearer`.
    pub token_type: &'static str,
    pub scope: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
}

impl TokenResponse {
    /// A bearer response; `access_expires_at` as returned by [`access_expiry`].
    pub fn new(
        access_token: String,
        access_expires_at: Option<i64>,
        now: i64,
        scope: String,
        refresh_token: Option<String>,
    ) -> TokenResponse {
        TokenResponse {
            access_token,
            expires_in: expires_in(access_expires_at, now),
            token_type: "bearer",
            scope,
            refresh_token,
        }
    }
}

/// The grant of a token request.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Grant {
    AuthorizationCode,
    /// `grant_type=authorization_code` with a signature-flow code (interface §5.4).
    Signature,
    RefreshToken,
    JwtBearer,
    Password,
}

/// Access-token expiry: `now + hours * 3600` (hours ≤ 0 count as 1), or `None` for a client
/// with NO_EXPIRY_TOKEN.
pub fn access_expiry(client: &ClientInfo, now: i64) -> Option<i64> {
    if client.has_flag(flag::NO_EXPIRY_TOKEN) {
        return None;
    }
    let hours = if client.access_token_lifetime_hours <= 0 {
        1
    } else {
        client.access_token_lifetime_hours
    };
    Some(now.saturating_add(i64::from(hours) * 3600))
}

/// Refresh-token expiry: `now + hours * 3600` (hours ≤ 0 fall back to the default lifetime,
/// never to "forever"), or `None` for a client with NO_EXPIRY_TOKEN, whose grants are meant to
/// last.
pub fn refresh_expiry(client: &ClientInfo, now: i64) -> Option<i64> {
    if client.has_flag(flag::NO_EXPIRY_TOKEN) {
        return None;
    }
    let hours = match client.refresh_token_lifetime_hours {
        h if h <= 0 => DEFAULT_REFRESH_TOKEN_LIFETIME_HOURS,
        h => h,
    };
    Some(now.saturating_add(i64::from(hours) * 3600))
}

/// The `expires_in` of a token expiring at `expires_at` (`None`: ten years).
pub fn expires_in(expires_at: Option<i64>, now: i64) -> i64 {
    match expires_at {
        Some(at) => at.saturating_sub(now).max(0),
        None => NO_EXPIRY_EXPIRES_IN,
    }
}

/// Whether a refresh token is issued: the client has the REFRESH_TOKEN flow and the grant is
/// not the JWT bearer grant (whose client makes a new assertion each time, interface §5.3).
pub fn issues_refresh(client: &ClientInfo, grant: Grant) -> bool {
    client.has_flow(flow::REFRESH_TOKEN) && grant != Grant::JwtBearer
}

/// Parses `grant_type`. `authorization_code` with a signature-flow code is [`Grant::Signature`].
/// Missing is `invalid_request`; anything else `unsupported_grant_type`.
pub fn parse_grant(grant_type: Option<&str>, code: Option<&str>) -> Result<Grant, OAuthError> {
    match grant_type.filter(|g| !g.is_empty()) {
        None => Err(OAuthError::invalid_request("grant_type is required.")),
        Some("authorization_code") if code.is_some_and(signature::is_signature_code) => {
            Ok(Grant::Signature)
        }
        Some("authorization_code") => Ok(Grant::AuthorizationCode),
        Some("refresh_token") => Ok(Grant::RefreshToken),
        Some("password") => Ok(Grant::Password),
        Some(jwt::GRANT_TYPE) => Ok(Grant::JwtBearer),
        Some(other) => Err(OAuthError::new(
            OAuthErrorCode::UnsupportedGrantType,
            format!("grant_type `{other}` is not supported."),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{client, client_without_flow};
    use coffer_errors::OAuthErrorCode::{InvalidRequest, UnsupportedGrantType};

    const NOW: i64 = 1_700_000_000;

    #[test]
    fn access_lifetimes() {
        // (hours, flag, expiry)
        let cases = [
            (1, 0, Some(NOW + 3600)),
            (24, 0, Some(NOW + 86_400)),
            (0, 0, Some(NOW + 3600)),
            (-5, 0, Some(NOW + 3600)),
            (24, flag::NO_EXPIRY_TOKEN, None),
            (24, flag::NO_EXPIRY_TOKEN | flag::NO_CONSENT, None),
            (i32::MAX, 0, Some(NOW + i64::from(i32::MAX) * 3600)),
        ];
        for (hours, f, expect) in cases {
            let c = ClientInfo {
                access_token_lifetime_hours: hours,
                flag: f,
                ..client()
            };
            assert_eq!(access_expiry(&c, NOW), expect, "{hours} {f}");
        }
    }

    #[test]
    fn refresh_lifetimes() {
        let default = NOW + i64::from(DEFAULT_REFRESH_TOKEN_LIFETIME_HOURS) * 3600;
        let cases = [
            (336, 0, Some(NOW + 336 * 3600)),
            (1, 0, Some(NOW + 3600)),
            (0, 0, Some(default)),
            (-1, 0, Some(default)),
            (336, flag::NO_EXPIRY_TOKEN, None),
        ];
        for (hours, f, expect) in cases {
            let c = ClientInfo {
                refresh_token_lifetime_hours: hours,
                flag: f,
                ..client()
            };
            assert_eq!(refresh_expiry(&c, NOW), expect, "{hours} {f}");
        }
    }

    #[test]
    fn expires_in_values() {
        assert_eq!(expires_in(Some(NOW + 3600), NOW), 3600);
        assert_eq!(expires_in(Some(NOW), NOW), 0);
        assert_eq!(expires_in(Some(NOW - 5), NOW), 0);
        assert_eq!(expires_in(None, NOW), 315_360_000);
    }

    #[test]
    fn refresh_issuance() {
        let with = client();
        let without = client_without_flow(flow::REFRESH_TOKEN);
        for g in [
            Grant::AuthorizationCode,
            Grant::Signature,
            Grant::RefreshToken,
            Grant::Password,
        ] {
            assert!(issues_refresh(&with, g), "{g:?}");
            assert!(!issues_refresh(&without, g), "{g:?}");
        }
        assert!(!issues_refresh(&with, Grant::JwtBearer));
        assert!(!issues_refresh(&without, Grant::JwtBearer));
    }

    #[test]
    fn parses_grants() {
        let sig_code = signature::make_code("c", "u@x.io", "k", NOW, 1);
        type Case<'a> = (
            Option<&'a str>,
            Option<&'a str>,
            Result<Grant, OAuthErrorCode>,
        );
        let cases: Vec<Case<'_>> = vec![
            (
                Some("authorization_code"),
                Some("abc"),
                Ok(Grant::AuthorizationCode),
            ),
            (
                Some("authorization_code"),
                None,
                Ok(Grant::AuthorizationCode),
            ),
            (
                Some("authorization_code"),
                Some(&sig_code),
                Ok(Grant::Signature),
            ),
            (Some("refresh_token"), None, Ok(Grant::RefreshToken)),
            (
                Some("refresh_token"),
                Some(&sig_code),
                Ok(Grant::RefreshToken),
            ),
            (Some("password"), None, Ok(Grant::Password)),
            (Some(jwt::GRANT_TYPE), None, Ok(Grant::JwtBearer)),
            (None, Some("abc"), Err(InvalidRequest)),
            (Some(""), None, Err(InvalidRequest)),
            (Some("client_credentials"), None, Err(UnsupportedGrantType)),
            (Some("implicit"), None, Err(UnsupportedGrantType)),
            (Some("Authorization_Code"), None, Err(UnsupportedGrantType)),
            (
                Some("urn:ietf:params:oauth:grant-type:saml2-bearer"),
                None,
                Err(UnsupportedGrantType),
            ),
        ];
        for (g, code, expect) in cases {
            assert_eq!(
                parse_grant(g, code).map_err(|e| e.error),
                expect,
                "{g:?} {code:?}"
            );
        }
    }

    #[test]
    fn response_json() {
        let r = TokenResponse::new(
            "at".into(),
            Some(NOW + 3600),
            NOW,
            "files/*".into(),
            Some("rt".into()),
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({
                "access_token": "at", "expires_in": 3600, "token_type": "bearer",
                "scope": "files/*", "refresh_token": "rt"
            })
        );
        let r = TokenResponse::new("at".into(), None, NOW, "*".into(), None);
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["expires_in"], NO_EXPIRY_EXPIRES_IN);
        assert!(v.get("refresh_token").is_none(), "{v}");
    }
}
