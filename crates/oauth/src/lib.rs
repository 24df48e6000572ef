//! The OAuth 2.0 flows of Coffer as pure functions: authorize-request checks, authorization
//! codes, PKCE, refresh-token rotation, JWT assertions, the signature flow and whom these
//! impersonation flows act for, the password grant, scope resolution and token lifetimes; TOTP
//! and the QR code that enrols it.
//!
//! Nothing here does I/O: the service loads the records, passes them in with the current time
//! (`now`, Unix seconds), and acts on the decision (issue, refuse, or revoke on replay).

pub mod authorize;
pub mod client_auth;
pub mod code;
pub mod impersonation;
pub mod jwt;
pub mod password_grant;
pub mod pkce;
pub mod qr;
pub mod refresh;
pub mod scope;
pub mod secrets;
pub mod signature;
pub mod token;
pub mod totp;

#[cfg(test)]
mod testutil;

use coffer_domain::Scope;
use std::fmt;

/// What the flows need to know of a client (the service builds it from the stored record).
#[derive(Clone)]
pub struct ClientInfo {
    pub id: String,
    pub redirect_uri: String,
    pub scope: Scope,
    /// `coffer_domain::client::flag` bits.
    pub flag: i32,
    /// `coffer_domain::client::flow` bits.
    pub flow: i32,
    /// The HMAC key of the signature flow.
    pub signature_key: Option<String>,
    /// The PEM RSA public key that verifies the client's JWT assertions.
    pub jwt_public_key: Option<String>,
    pub access_token_lifetime_hours: i32,
    pub refresh_token_lifetime_hours: i32,
}

impl ClientInfo {
    /// Whether the client may use the grant of this `flow` bit.
    pub fn has_flow(&self, bit: i32) -> bool {
        self.flow & bit == bit
    }

    /// Whether the client carries this `flag` bit.
    pub fn has_flag(&self, bit: i32) -> bool {
        self.flag & bit == bit
    }
}

// Written by hand so that the signature key never reaches a log line.
impl fmt::Debug for ClientInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientInfo")
            .field("id", &self.id)
            .field("redirect_uri", &self.redirect_uri)
            .field("scope", &self.scope.to_string())
            .field("flag", &self.flag)
            .field("flow", &self.flow)
            .field(
                "signature_key",
                &self.signature_key.as_ref().map(|_| "<redacted>"),
            )
            .field("jwt_public_key", &self.jwt_public_key.is_some())
            .field(
                "access_token_lifetime_hours",
                &self.access_token_lifetime_hours,
            )
            .field(
                "refresh_token_lifetime_hours",
                &self.refresh_token_lifetime_hours,
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::testutil::client;
    use coffer_domain::client::{flag, flow};

    #[test]
    fn flags_and_flows() {
        let mut c = client();
        c.flag = flag::NO_CONSENT | flag::HIDDEN;
        c.flow = flow::AUTH_CODE | flow::REFRESH_TOKEN;
        assert!(c.has_flag(flag::NO_CONSENT));
        assert!(c.has_flag(flag::HIDDEN));
        assert!(!c.has_flag(flag::DISABLED));
        assert!(!c.has_flag(flag::NO_EXPIRY_TOKEN));
        assert!(c.has_flow(flow::AUTH_CODE));
        assert!(c.has_flow(flow::REFRESH_TOKEN));
        assert!(!c.has_flow(flow::JWT_BEARER));
        assert!(!c.has_flow(flow::PASSWORD));
    }

    #[test]
    fn debug_hides_the_signature_key() {
        let mut c = client();
        c.signature_key = Some("very-secret-key".into());
        let text = format!("{c:?}");
        assert!(!text.contains("very-secret-key"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
    }
}
