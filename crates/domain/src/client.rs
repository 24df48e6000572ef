//! OAuth client attributes: the `flag`, `flow` and `type` numbers of a client record.

/// Client `flag` bits.
pub mod flag {
    /// The consent page is skipped.
    pub const NO_CONSENT: i32 = 1;
    /// The client cannot obtain tokens.
    pub const DISABLED: i32 = 2;
    /// The client is left out of lists.
    pub const HIDDEN: i32 = 4;
    /// Access tokens of this client do not expire.
    pub const NO_EXPIRY_TOKEN: i32 = 8;
    pub const ALL: i32 = NO_CONSENT | DISABLED | HIDDEN | NO_EXPIRY_TOKEN;
}

/// Client `flow` bits: which grants the client may use.
pub mod flow {
    pub const AUTH_CODE: i32 = 1;
    pub const CLIENT_CREDENTIAL: i32 = 2;
    pub const SIGNATURE: i32 = 4;
    pub const REFRESH_TOKEN: i32 = 8;
    pub const PASSWORD: i32 = 16;
    pub const JWT_BEARER: i32 = 32;
    pub const ALL: i32 =
        AUTH_CODE | CLIENT_CREDENTIAL | SIGNATURE | REFRESH_TOKEN | PASSWORD | JWT_BEARER;

    /// Parses the operator's comma-separated flow names (`authorization_code,refresh_token`).
    pub fn parse_list(list: &str) -> Result<i32, String> {
        let mut bits = 0;
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            bits |= match name {
                "authorization_code" => AUTH_CODE,
                "client_credentials" => CLIENT_CREDENTIAL,
                "signature" => SIGNATURE,
                "refresh_token" => REFRESH_TOKEN,
                "password" => PASSWORD,
                "jwt_bearer" => JWT_BEARER,
                other => return Err(format!("unknown flow `{other}`")),
            };
        }
        Ok(bits)
    }
}

/// Client `type` numbers.
pub mod kind {
    pub const CUSTOM: i32 = 0;
    pub const FIRST_PARTY_WEB: i32 = 1;
    pub const MOBILE: i32 = 2;
    pub const SYNC: i32 = 8;
    pub const IMPORTED: i32 = 32;
}

/// Default token lifetimes, in hours.
pub const DEFAULT_ACCESS_TOKEN_LIFETIME_HOURS: i32 = 1;
pub const DEFAULT_REFRESH_TOKEN_LIFETIME_HOURS: i32 = 336;

/// The largest scope a client may register, in bytes and in items: the scope is copied into
/// every token row of the client.
pub const MAX_SCOPE_BYTES: usize = 4096;
pub const MAX_SCOPE_ITEMS: usize = 100;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_flow_lists() {
        assert_eq!(flow::parse_list("authorization_code,refresh_token"), Ok(9));
        assert_eq!(flow::parse_list(" password , jwt_bearer "), Ok(48));
        assert_eq!(flow::parse_list(""), Ok(0));
        assert!(flow::parse_list("implicit").is_err());
    }
}
