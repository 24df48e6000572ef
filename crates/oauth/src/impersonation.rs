//! Whom the impersonation flows act for. The signature flow (§5.4) and the JWT bearer grant
//! (§5.3) let a client holding a key act for a user without that user taking part. A leaked
//! client key must not yield the whole server, so these flows never act for a system
//! administrator, whoever registered the client; they may act for any other user.

use coffer_domain::client::flow;
use coffer_domain::Role;
use coffer_errors::OAuthError;

/// The flows that act for a user without the user: giving a client one of them, or a key for
/// one, is a system administrator's decision.
pub const FLOWS: i32 = flow::SIGNATURE | flow::JWT_BEARER;

/// Whether an impersonation flow may act for a user of `role`: `invalid_grant` for a system
/// administrator (the error both flows give for a user they cannot act for).
pub fn check_subject(role: Role) -> Result<(), OAuthError> {
    if role == Role::SystemAdmin {
        return Err(OAuthError::invalid_grant(
            "An impersonation flow cannot act for a system administrator.",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use coffer_errors::OAuthErrorCode;

    #[test]
    fn never_for_a_system_administrator() {
        for role in Role::ALL {
            let r = check_subject(role);
            if role == Role::SystemAdmin {
                assert_eq!(r.unwrap_err().error, OAuthErrorCode::InvalidGrant);
            } else {
                assert!(r.is_ok(), "{role:?}");
            }
        }
    }

    #[test]
    fn the_impersonation_flows() {
        assert_eq!(FLOWS, flow::SIGNATURE | flow::JWT_BEARER);
        for other in [
            flow::AUTH_CODE,
            flow::CLIENT_CREDENTIAL,
            flow::REFRESH_TOKEN,
            flow::PASSWORD,
        ] {
            assert_eq!(FLOWS & other, 0);
        }
    }
}
