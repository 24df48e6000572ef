//! Fixtures shared by the unit tests of this crate.

use crate::ClientInfo;
use coffer_domain::client::flow;
use coffer_domain::Scope;

pub const CLIENT_ID: &str = "client-1";
pub const REDIRECT: &str = "https://app.example.com/cb";

/// A client that may use every grant, with scope `folders/* files/* GET/users/*`.
pub fn client() -> ClientInfo {
    ClientInfo {
        id: CLIENT_ID.into(),
        redirect_uri: REDIRECT.into(),
        scope: Scope::parse("folders/* files/* GET/users/*").unwrap(),
        flag: 0,
        flow: flow::ALL,
        signature_key: Some("sig-key".into()),
        jwt_public_key: None,
        access_token_lifetime_hours: 1,
        refresh_token_lifetime_hours: 336,
    }
}

/// `client()` without the given flow bit.
pub fn client_without_flow(bit: i32) -> ClientInfo {
    let mut c = client();
    c.flow &= !bit;
    c
}
