//! The resource-owner password grant (interface §5.5, deprecated): what can be checked before
//! the service verifies the user's credentials, and what the verified user must not still owe.
//!
//! The grant has no page on which a further sign-in step could be taken, so it issues tokens
//! only to a user for whom the password is the whole sign-in. Anyone else is sent to the
//! authorization page, which takes every step; otherwise this grant would be a door around the
//! second factor and the due password change.

use crate::ClientInfo;
use coffer_domain::client::flow;
use coffer_errors::OAuthError;

/// The client must have the PASSWORD flow (`unauthorized_client`); `username` and `password`
/// must be present and non-empty (`invalid_request`).
pub fn check(
    client: &ClientInfo,
    username: Option<&str>,
    password: Option<&str>,
) -> Result<(), OAuthError> {
    if !client.has_flow(flow::PASSWORD) {
        return Err(OAuthError::unauthorized_client(
            "The client may not use the password grant.",
        ));
    }
    if username.is_none_or(str::is_empty) {
        return Err(OAuthError::invalid_request("username is required."));
    }
    if password.is_none_or(str::is_empty) {
        return Err(OAuthError::invalid_request("password is required."));
    }
    Ok(())
}

/// The steps a user with the right password may still owe before a sign-in is complete.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PendingSteps {
    /// Two-factor sign-in (TOTP or SMS codes) is on.
    pub second_factor: bool,
    /// The user must change the password before doing anything else.
    pub password_change_due: bool,
}

/// After the password was verified: a user who owes a further step is refused with
/// `invalid_grant` and a description that says why, and gets no token.
pub fn check_user(steps: PendingSteps) -> Result<(), OAuthError> {
    if steps.second_factor {
        return Err(OAuthError::invalid_grant(
            "Two-factor sign-in is on for this user: the password grant cannot take the second \
             step. Sign in through the authorization page.",
        ));
    }
    if steps.password_change_due {
        return Err(OAuthError::invalid_grant(
            "The user must change the password first: the password grant cannot take that \
             step. Sign in through the authorization page.",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{client, client_without_flow};
    use coffer_errors::OAuthErrorCode::{self, InvalidGrant, InvalidRequest, UnauthorizedClient};

    #[test]
    fn only_a_user_who_owes_no_step_gets_tokens() {
        let none = PendingSteps::default();
        assert_eq!(check_user(none), Ok(()));
        let tfa = PendingSteps {
            second_factor: true,
            ..none
        };
        let due = PendingSteps {
            password_change_due: true,
            ..none
        };
        let both = PendingSteps {
            second_factor: true,
            password_change_due: true,
        };
        for (steps, says) in [
            (tfa, "Two-factor"),
            (due, "change the password"),
            (both, "Two-factor"),
        ] {
            let e = check_user(steps).unwrap_err();
            assert_eq!(e.error, InvalidGrant, "{steps:?}");
            assert!(
                e.error_description.contains(says),
                "{steps:?}: {}",
                e.error_description
            );
            assert!(e.error_description.contains("authorization page"));
        }
    }

    #[test]
    fn every_branch() {
        let c = client();
        let no_flow = client_without_flow(flow::PASSWORD);
        type Case<'a> = (
            &'a ClientInfo,
            Option<&'a str>,
            Option<&'a str>,
            Result<(), OAuthErrorCode>,
        );
        let cases: Vec<Case<'_>> = vec![
            (&c, Some("ann@example.com"), Some("pw"), Ok(())),
            (&c, None, Some("pw"), Err(InvalidRequest)),
            (&c, Some(""), Some("pw"), Err(InvalidRequest)),
            (&c, Some("ann@example.com"), None, Err(InvalidRequest)),
            (&c, Some("ann@example.com"), Some(""), Err(InvalidRequest)),
            (&c, None, None, Err(InvalidRequest)),
            (
                &no_flow,
                Some("ann@example.com"),
                Some("pw"),
                Err(UnauthorizedClient),
            ),
            (&no_flow, None, None, Err(UnauthorizedClient)),
        ];
        for (c, u, p, expect) in cases {
            assert_eq!(check(c, u, p).map_err(|e| e.error), expect, "{u:?} {p:?}");
        }
    }
}
