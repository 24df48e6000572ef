//! The resource-owner password grant (interface §5.5, deprecated): what can be checked before
//! the service verifies the user's credentials.

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{client, client_without_flow};
    use coffer_errors::OAuthErrorCode::{self, InvalidRequest, UnauthorizedClient};

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
