//! Authorization codes at the token endpoint: whether a stored code may be exchanged, and the
//! replay signal. Codes live ten minutes and are single use; the service stores them hashed.

use crate::{pkce, ClientInfo};
use coffer_domain::client::flow;
use coffer_errors::OAuthError;

/// How long an authorization code is valid.
pub const CODE_LIFETIME_SECS: i64 = 600;

/// A stored authorization code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRecord {
    pub client_id: String,
    pub redirect_uri: String,
    pub scope: String,
    pub user_id: String,
    /// The code is valid while `now < expires_at`.
    pub expires_at: i64,
    pub used: bool,
    /// The S256 challenge given at authorization, if any.
    pub code_challenge: Option<String>,
}

/// Why a code is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeRejection {
    /// The code was used before: the service must revoke what it issued (RFC 6749 §4.1.2).
    Replayed(OAuthError),
    Invalid(OAuthError),
}

impl CodeRejection {
    /// The error to answer.
    pub fn error(&self) -> &OAuthError {
        match self {
            CodeRejection::Replayed(e) | CodeRejection::Invalid(e) => e,
        }
    }

    pub fn into_error(self) -> OAuthError {
        match self {
            CodeRejection::Replayed(e) | CodeRejection::Invalid(e) => e,
        }
    }
}

/// Whether `client` may exchange the code `record` (`None`: no such code).
///
/// In order: the client's AUTH_CODE flow (`unauthorized_client`); an unknown code; a used code
/// ([`CodeRejection::Replayed`], even when also expired or presented by another client, since
/// the code has leaked either way); expiry; the client; the redirect URI, which must be
/// repeated exactly; PKCE. A verifier without a stored challenge is refused, so an attacker
/// cannot pass off a code obtained without PKCE in a flow that uses it.
pub fn check(
    client: &ClientInfo,
    record: Option<&CodeRecord>,
    redirect_uri: Option<&str>,
    code_verifier: Option<&str>,
    now: i64,
) -> Result<(), CodeRejection> {
    use CodeRejection::{Invalid, Replayed};
    let grant = |d: &'static str| Invalid(OAuthError::invalid_grant(d));

    if !client.has_flow(flow::AUTH_CODE) {
        return Err(Invalid(OAuthError::unauthorized_client(
            "The client may not use the authorization code grant.",
        )));
    }
    let Some(record) = record else {
        return Err(grant("The authorization code is invalid."));
    };
    if record.used {
        return Err(Replayed(OAuthError::invalid_grant(
            "The authorization code was already used.",
        )));
    }
    if now >= record.expires_at {
        return Err(grant("The authorization code has expired."));
    }
    if record.client_id != client.id {
        return Err(grant(
            "The authorization code was issued to another client.",
        ));
    }
    match redirect_uri.filter(|s| !s.is_empty()) {
        None => {
            return Err(Invalid(OAuthError::invalid_request(
                "redirect_uri is required and must match the authorization request.",
            )))
        }
        Some(uri) if uri != record.redirect_uri => {
            return Err(grant(
                "redirect_uri does not match the authorization request.",
            ))
        }
        Some(_) => {}
    }
    let verifier = code_verifier.filter(|s| !s.is_empty());
    match (&record.code_challenge, verifier) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(grant(
            "code_verifier was given but the authorization used no PKCE.",
        )),
        (Some(_), None) => Err(grant("code_verifier is required.")),
        (Some(_), Some(v)) if !pkce::valid_verifier(v) => {
            Err(Invalid(OAuthError::invalid_request(
                "code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.",
            )))
        }
        (Some(challenge), Some(v)) if !pkce::verify_s256(v, challenge) => {
            Err(grant("code_verifier does not match the code_challenge."))
        }
        (Some(_), Some(_)) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pkce::challenge_s256;
    use crate::testutil::{client, client_without_flow, CLIENT_ID, REDIRECT};
    use coffer_errors::OAuthErrorCode::{self, InvalidGrant, InvalidRequest, UnauthorizedClient};

    const NOW: i64 = 1_700_000_000;
    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";

    fn record() -> CodeRecord {
        CodeRecord {
            client_id: CLIENT_ID.into(),
            redirect_uri: REDIRECT.into(),
            scope: "files/*".into(),
            user_id: "u1".into(),
            expires_at: NOW + CODE_LIFETIME_SECS,
            used: false,
            code_challenge: None,
        }
    }

    fn pkce_record() -> CodeRecord {
        CodeRecord {
            code_challenge: Some(challenge_s256(VERIFIER)),
            ..record()
        }
    }

    #[derive(Debug, PartialEq)]
    enum Out {
        Ok,
        Invalid(OAuthErrorCode),
        Replayed(OAuthErrorCode),
    }

    fn run(
        c: &ClientInfo,
        r: Option<&CodeRecord>,
        uri: Option<&str>,
        v: Option<&str>,
        now: i64,
    ) -> Out {
        match check(c, r, uri, v, now) {
            Ok(()) => Out::Ok,
            Err(CodeRejection::Invalid(e)) => Out::Invalid(e.error),
            Err(CodeRejection::Replayed(e)) => Out::Replayed(e.error),
        }
    }

    #[test]
    fn every_branch() {
        let c = client();
        let other = crate::ClientInfo {
            id: "client-2".into(),
            ..client()
        };
        let used = CodeRecord {
            used: true,
            ..record()
        };
        let used_expired = CodeRecord {
            used: true,
            expires_at: NOW - 1,
            ..record()
        };
        let (r, p) = (record(), pkce_record());
        let bad_v = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXx";
        let challenge = challenge_s256(VERIFIER);
        type Case<'a> = (
            &'a ClientInfo,
            Option<&'a CodeRecord>,
            Option<&'a str>,
            Option<&'a str>,
            i64,
            Out,
        );
        let cases: Vec<Case<'_>> = vec![
            (&c, Some(&r), Some(REDIRECT), None, NOW, Out::Ok),
            (
                &c,
                None,
                Some(REDIRECT),
                None,
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            // Expiry at the boundary second: valid while now < expires_at.
            (
                &c,
                Some(&r),
                Some(REDIRECT),
                None,
                NOW + CODE_LIFETIME_SECS - 1,
                Out::Ok,
            ),
            (
                &c,
                Some(&r),
                Some(REDIRECT),
                None,
                NOW + CODE_LIFETIME_SECS,
                Out::Invalid(InvalidGrant),
            ),
            (
                &c,
                Some(&r),
                Some(REDIRECT),
                None,
                NOW + CODE_LIFETIME_SECS + 1,
                Out::Invalid(InvalidGrant),
            ),
            // Replay, whatever else is wrong.
            (
                &c,
                Some(&used),
                Some(REDIRECT),
                None,
                NOW,
                Out::Replayed(InvalidGrant),
            ),
            (
                &c,
                Some(&used_expired),
                Some(REDIRECT),
                None,
                NOW,
                Out::Replayed(InvalidGrant),
            ),
            (
                &other,
                Some(&used),
                None,
                None,
                NOW,
                Out::Replayed(InvalidGrant),
            ),
            (
                &other,
                Some(&r),
                Some(REDIRECT),
                None,
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            (&c, Some(&r), None, None, NOW, Out::Invalid(InvalidRequest)),
            (
                &c,
                Some(&r),
                Some(""),
                None,
                NOW,
                Out::Invalid(InvalidRequest),
            ),
            (
                &c,
                Some(&r),
                Some("https://app.example.com/cb/x"),
                None,
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            (
                &c,
                Some(&r),
                Some("https://app.example.com/c"),
                None,
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            // PKCE.
            (&c, Some(&p), Some(REDIRECT), Some(VERIFIER), NOW, Out::Ok),
            (
                &c,
                Some(&p),
                Some(REDIRECT),
                None,
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            (
                &c,
                Some(&p),
                Some(REDIRECT),
                Some(""),
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            (
                &c,
                Some(&p),
                Some(REDIRECT),
                Some("short"),
                NOW,
                Out::Invalid(InvalidRequest),
            ),
            (
                &c,
                Some(&p),
                Some(REDIRECT),
                Some(bad_v),
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            // The challenge itself is not the verifier (no `plain`).
            (
                &c,
                Some(&p),
                Some(REDIRECT),
                Some(&challenge),
                NOW,
                Out::Invalid(InvalidGrant),
            ),
            (
                &c,
                Some(&r),
                Some(REDIRECT),
                Some(VERIFIER),
                NOW,
                Out::Invalid(InvalidGrant),
            ),
        ];
        for (i, (c, r, uri, v, now, expect)) in cases.into_iter().enumerate() {
            assert_eq!(
                run(c, r, uri, v, now),
                expect,
                "case {i}: {uri:?} {v:?} {now}"
            );
        }
    }

    #[test]
    fn flow_is_checked_first() {
        let c = client_without_flow(flow::AUTH_CODE);
        let used = CodeRecord {
            used: true,
            ..record()
        };
        for r in [None, Some(&used), Some(&record())] {
            assert_eq!(
                run(&c, r, Some(REDIRECT), None, NOW),
                Out::Invalid(UnauthorizedClient)
            );
        }
    }

    #[test]
    fn rejection_exposes_its_error() {
        let used = CodeRecord {
            used: true,
            ..record()
        };
        let r = check(&client(), Some(&used), Some(REDIRECT), None, NOW).unwrap_err();
        assert_eq!(r.error().error, InvalidGrant);
        assert_eq!(r.into_error().error, InvalidGrant);
    }
}
