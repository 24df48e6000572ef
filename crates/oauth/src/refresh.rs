//! Refresh tokens at the token endpoint: whether a stored refresh token may be rotated, the
//! scope the new tokens get, and the reuse signal. Every use rotates the token; presenting a
//! rotated (used) token again means it leaked, and the service revokes its whole family.

use crate::ClientInfo;
use coffer_domain::client::flow;
use coffer_domain::Scope;
use coffer_errors::OAuthError;

/// A stored refresh token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefreshRecord {
    pub client_id: String,
    pub user_id: String,
    pub scope: String,
    /// The chain of rotations this token belongs to.
    pub family_id: String,
    /// `None`: never expires; otherwise valid while `now < expires_at`.
    pub expires_at: Option<i64>,
    /// Already rotated.
    pub used: bool,
    pub revoked: bool,
}

/// Why a refresh token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefreshRejection {
    /// Reuse of a rotated token: the service must revoke the family.
    Replayed(OAuthError),
    Invalid(OAuthError),
}

impl RefreshRejection {
    /// The error to answer.
    pub fn error(&self) -> &OAuthError {
        match self {
            RefreshRejection::Replayed(e) | RefreshRejection::Invalid(e) => e,
        }
    }

    pub fn into_error(self) -> OAuthError {
        match self {
            RefreshRejection::Replayed(e) | RefreshRejection::Invalid(e) => e,
        }
    }
}

/// Whether `client` may rotate `record` (`None`: no such token); returns the granted scope.
///
/// In order: the client's REFRESH_TOKEN flow (`unauthorized_client`); an unknown token; another
/// client's token (refused without revoking: that client cannot prove the family leaked); a
/// revoked token (its family is already dead); a used token ([`RefreshRejection::Replayed`],
/// also when expired); expiry; then the requested scope, which may only narrow the token's
/// (`invalid_scope`). A blank request keeps the token's scope.
pub fn check(
    client: &ClientInfo,
    record: Option<&RefreshRecord>,
    requested_scope: Option<&str>,
    now: i64,
) -> Result<Scope, RefreshRejection> {
    use RefreshRejection::{Invalid, Replayed};
    let grant = |d: &'static str| Invalid(OAuthError::invalid_grant(d));

    if !client.has_flow(flow::REFRESH_TOKEN) {
        return Err(Invalid(OAuthError::unauthorized_client(
            "The client may not use refresh tokens.",
        )));
    }
    let Some(record) = record else {
        return Err(grant("The refresh token is invalid."));
    };
    if record.client_id != client.id {
        return Err(grant("The refresh token was issued to another client."));
    }
    if record.revoked {
        return Err(grant("The refresh token was revoked."));
    }
    if record.used {
        return Err(Replayed(OAuthError::invalid_grant(
            "The refresh token was already used.",
        )));
    }
    if record.expires_at.is_some_and(|exp| now >= exp) {
        return Err(grant("The refresh token has expired."));
    }
    // The stored scope was valid when it was written; failing to read it is the server's fault.
    let granted = Scope::parse(&record.scope).map_err(|_| Invalid(OAuthError::server_error()))?;
    crate::scope::resolve_requested(requested_scope, &granted).map_err(Invalid)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{client, client_without_flow, CLIENT_ID};
    use coffer_errors::OAuthErrorCode::{
        self, InvalidGrant, InvalidScope, ServerError, UnauthorizedClient,
    };

    const NOW: i64 = 1_700_000_000;

    fn record() -> RefreshRecord {
        RefreshRecord {
            client_id: CLIENT_ID.into(),
            user_id: "u1".into(),
            scope: "files/* GET/users/*".into(),
            family_id: "f1".into(),
            expires_at: Some(NOW + 3600),
            used: false,
            revoked: false,
        }
    }

    #[derive(Debug, PartialEq)]
    enum Out {
        Ok(String),
        Invalid(OAuthErrorCode),
        Replayed(OAuthErrorCode),
    }

    fn ok(s: &str) -> Out {
        Out::Ok(s.to_owned())
    }

    fn run(c: &ClientInfo, r: Option<&RefreshRecord>, scope: Option<&str>, now: i64) -> Out {
        match check(c, r, scope, now) {
            Ok(s) => Out::Ok(s.to_string()),
            Err(RefreshRejection::Invalid(e)) => Out::Invalid(e.error),
            Err(RefreshRejection::Replayed(e)) => Out::Replayed(e.error),
        }
    }

    #[test]
    fn every_branch() {
        let c = client();
        let other = ClientInfo {
            id: "client-2".into(),
            ..client()
        };
        let r = record();
        let used = RefreshRecord {
            used: true,
            ..record()
        };
        let used_expired = RefreshRecord {
            used: true,
            expires_at: Some(NOW - 10),
            ..record()
        };
        let revoked = RefreshRecord {
            revoked: true,
            ..record()
        };
        let revoked_used = RefreshRecord {
            revoked: true,
            used: true,
            ..record()
        };
        let forever = RefreshRecord {
            expires_at: None,
            ..record()
        };
        let corrupt = RefreshRecord {
            scope: "GET/users".into(),
            ..record()
        };
        let exp = NOW + 3600;
        type Case<'a> = (
            &'a ClientInfo,
            Option<&'a RefreshRecord>,
            Option<&'a str>,
            i64,
            Out,
        );
        let cases: Vec<Case<'_>> = vec![
            (&c, Some(&r), None, NOW, ok("files/* GET/users/*")),
            (&c, Some(&r), Some(""), NOW, ok("files/* GET/users/*")),
            (&c, Some(&r), Some("files/*"), NOW, ok("files/*")),
            (&c, Some(&r), Some("GET/users/me"), NOW, ok("GET/users/me")),
            (
                &c,
                Some(&r),
                Some("folders/*"),
                NOW,
                Out::Invalid(InvalidScope),
            ),
            (
                &c,
                Some(&r),
                Some("users/*"),
                NOW,
                Out::Invalid(InvalidScope),
            ),
            (
                &c,
                Some(&r),
                Some("GET/users"),
                NOW,
                Out::Invalid(InvalidScope),
            ),
            (&c, None, None, NOW, Out::Invalid(InvalidGrant)),
            (&other, Some(&r), None, NOW, Out::Invalid(InvalidGrant)),
            (&other, Some(&used), None, NOW, Out::Invalid(InvalidGrant)),
            (&c, Some(&revoked), None, NOW, Out::Invalid(InvalidGrant)),
            (
                &c,
                Some(&revoked_used),
                None,
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            (&c, Some(&used), None, NOW, Out::Replayed(InvalidGrant)),
            (
                &c,
                Some(&used_expired),
                None,
                NOW,
                Out::Replayed(InvalidGrant),
            ),
            (
                &c,
                Some(&used),
                Some("admin/*"),
                NOW,
                Out::Replayed(InvalidGrant),
            ),
            // Expiry at the boundary second.
            (&c, Some(&r), None, exp - 1, ok("files/* GET/users/*")),
            (&c, Some(&r), None, exp, Out::Invalid(InvalidGrant)),
            (&c, Some(&r), None, exp + 1, Out::Invalid(InvalidGrant)),
            (
                &c,
                Some(&forever),
                None,
                i64::MAX,
                ok("files/* GET/users/*"),
            ),
            (&c, Some(&corrupt), None, NOW, Out::Invalid(ServerError)),
        ];
        for (i, (c, r, scope, now, expect)) in cases.into_iter().enumerate() {
            assert_eq!(run(c, r, scope, now), expect, "case {i}: {scope:?} {now}");
        }
    }

    #[test]
    fn flow_is_checked_first() {
        let c = client_without_flow(flow::REFRESH_TOKEN);
        let used = RefreshRecord {
            used: true,
            ..record()
        };
        for r in [None, Some(&used), Some(&record())] {
            assert_eq!(run(&c, r, None, NOW), Out::Invalid(UnauthorizedClient));
        }
    }

    #[test]
    fn rejection_exposes_its_error() {
        let used = RefreshRecord {
            used: true,
            ..record()
        };
        let r = check(&client(), Some(&used), None, NOW).unwrap_err();
        assert_eq!(r.error().error, InvalidGrant);
        assert_eq!(r.into_error().error, InvalidGrant);
    }
}
