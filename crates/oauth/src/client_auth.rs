//! Client authentication at the token endpoint (RFC 6749 §2.3.1): reading the credentials from
//! the form or from HTTP Basic, and checking them against the stored client.

use crate::{secrets, ClientInfo};
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};
use coffer_domain::client::flag;
use coffer_errors::OAuthError;

/// One description for an unknown client and a wrong secret, so clients cannot be enumerated.
const AUTH_FAILED: &str = "Client authentication failed.";

/// Standard base64, padded or not: both occur in Basic headers in the wild.
const BASIC_B64: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The client credentials of a token request: `(client_id, secret)`.
///
/// `authorization` is the raw `Authorization` header. Basic credentials are form-urlencoded
/// before base64 (RFC 6749 §2.3.1), so they are decoded here. A request may use one method
/// only: a Basic header together with a form secret is `invalid_request`, as is a form
/// `client_id` that names another client than the header. A header that is not well-formed
/// Basic is `invalid_client`; no client id at all is `invalid_client` too (no authentication).
/// Empty form values count as absent.
pub fn extract(
    form_client_id: Option<&str>,
    form_secret: Option<&str>,
    authorization: Option<&str>,
) -> Result<(String, Option<String>), OAuthError> {
    let form_client_id = form_client_id.filter(|s| !s.is_empty());
    let form_secret = form_secret.filter(|s| !s.is_empty());
    let Some(header) = authorization.map(str::trim).filter(|h| !h.is_empty()) else {
        return match form_client_id {
            Some(id) => Ok((id.to_owned(), form_secret.map(str::to_owned))),
            None => Err(OAuthError::invalid_client("client_id is required.")),
        };
    };
    let (id, secret) = parse_basic(header)?;
    if form_secret.is_some() {
        return Err(OAuthError::invalid_request(
            "Use either HTTP Basic or client_secret in the body, not both.",
        ));
    }
    if form_client_id.is_some_and(|f| f != id) {
        return Err(OAuthError::invalid_request(
            "client_id in the body differs from the HTTP Basic client.",
        ));
    }
    Ok((id, Some(secret).filter(|s| !s.is_empty())))
}

fn parse_basic(header: &str) -> Result<(String, String), OAuthError> {
    let malformed =
        || OAuthError::invalid_client("The Authorization header is not valid HTTP Basic.");
    let (scheme, encoded) = header.split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return Err(OAuthError::invalid_client(
            "Only HTTP Basic client authentication is supported.",
        ));
    }
    let decoded = BASIC_B64.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    let id = form_decode(id).ok_or_else(malformed)?;
    let secret = form_decode(secret).ok_or_else(malformed)?;
    if id.is_empty() {
        return Err(malformed());
    }
    Ok((id, secret))
}

/// `application/x-www-form-urlencoded` decoding of one value: `+` is a space, `%XX` a byte.
/// `None` for a malformed escape or a result that is not UTF-8.
fn form_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// Checks a confidential client's secret against `stored_secret_hash` (`hash_token(secret)`).
///
/// An unknown client (`None`), a client without a stored secret, and a missing or wrong secret
/// all answer the same `invalid_client`. A disabled client is `invalid_client` as well; it is
/// named only to a caller who proved it knows the secret.
pub fn authenticate(
    client: Option<&ClientInfo>,
    stored_secret_hash: Option<&str>,
    presented_secret: Option<&str>,
) -> Result<(), OAuthError> {
    let presented = presented_secret.unwrap_or_default();
    let secret_ok = match (client, stored_secret_hash) {
        (Some(_), Some(stored)) if !presented.is_empty() => {
            secrets::verify_token(presented, stored)
        }
        _ => {
            // Hash anyway, so an unknown client costs the same time as a known one.
            let _ = secrets::verify_token(presented, "");
            false
        }
    };
    if !secret_ok {
        return Err(OAuthError::invalid_client(AUTH_FAILED));
    }
    if client.is_some_and(|c| c.has_flag(flag::DISABLED)) {
        return Err(OAuthError::invalid_client("The client is disabled."));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::client;
    use base64::engine::general_purpose::STANDARD;
    use coffer_errors::OAuthErrorCode::{self, InvalidClient, InvalidRequest};

    fn basic(raw: &str) -> String {
        format!("Basic {}", STANDARD.encode(raw))
    }

    type Expect = Result<(&'static str, Option<&'static str>), OAuthErrorCode>;

    #[test]
    fn extracts_credentials() {
        type Case<'a> = (Option<&'a str>, Option<&'a str>, Option<String>, Expect);
        let cases: Vec<Case<'_>> = vec![
            (Some("c1"), Some("s1"), None, Ok(("c1", Some("s1")))),
            (Some("c1"), None, None, Ok(("c1", None))),
            (Some("c1"), Some(""), None, Ok(("c1", None))),
            (None, None, None, Err(InvalidClient)),
            (Some(""), Some("s1"), None, Err(InvalidClient)),
            (None, None, Some(String::new()), Err(InvalidClient)),
            (None, None, Some(basic("c1:s1")), Ok(("c1", Some("s1")))),
            (None, None, Some(basic("c1:")), Ok(("c1", None))),
            (
                Some("c1"),
                None,
                Some(basic("c1:s1")),
                Ok(("c1", Some("s1"))),
            ),
            (
                Some("c1"),
                Some(""),
                Some(basic("c1:s1")),
                Ok(("c1", Some("s1"))),
            ),
            // Form-urlencoded inside Basic (RFC 6749 §2.3.1).
            (
                None,
                None,
                Some(basic("my%20client:p%3Ass+word%25")),
                Ok(("my client", Some("p:ss word%"))),
            ),
            // The first colon separates: an encoded secret may not contain one, but be lenient.
            (None, None, Some(basic("c1:a:b")), Ok(("c1", Some("a:b")))),
            (
                None,
                None,
                Some(format!("basic {}", STANDARD.encode("c1:s1"))),
                Ok(("c1", Some("s1"))),
            ),
            (
                None,
                None,
                Some(format!("BASIC  {} ", STANDARD.encode("c1:s1"))),
                Ok(("c1", Some("s1"))),
            ),
            // Unpadded base64 is accepted.
            (
                None,
                None,
                Some("Basic YzE6czE".into()),
                Ok(("c1", Some("s1"))),
            ),
            // Two methods at once.
            (None, Some("s1"), Some(basic("c1:s1")), Err(InvalidRequest)),
            (Some("c2"), None, Some(basic("c1:s1")), Err(InvalidRequest)),
            // Malformed Basic.
            (None, None, Some("Basic".into()), Err(InvalidClient)),
            (None, None, Some("Basic !!!".into()), Err(InvalidClient)),
            (None, None, Some(basic("no-colon")), Err(InvalidClient)),
            (None, None, Some(basic(":secret")), Err(InvalidClient)),
            (None, None, Some(basic("c1:bad%zz")), Err(InvalidClient)),
            (None, None, Some(basic("c1:bad%2")), Err(InvalidClient)),
            (None, None, Some(basic("c%ff:s")), Err(InvalidClient)),
            (
                None,
                None,
                Some(format!("Basic {}", STANDARD.encode([0xff, b':', b's']))),
                Err(InvalidClient),
            ),
            (
                Some("c1"),
                Some("s1"),
                Some("Bearer abc".into()),
                Err(InvalidClient),
            ),
        ];
        for (id, secret, header, expect) in cases {
            let got = extract(id, secret, header.as_deref());
            let got = got
                .as_ref()
                .map(|(i, s)| (i.as_str(), s.as_deref()))
                .map_err(|e| e.error);
            assert_eq!(got, expect, "{id:?} {secret:?} {header:?}");
        }
    }

    #[test]
    fn authenticates() {
        let c = client();
        let stored = secrets::hash_token("s3cret");
        let mut disabled = client();
        disabled.flag = flag::DISABLED;
        type Case<'a> = (
            Option<&'a ClientInfo>,
            Option<&'a str>,
            Option<&'a str>,
            Result<(), &'a str>,
        );
        let cases: Vec<Case<'_>> = vec![
            (Some(&c), Some(&stored), Some("s3cret"), Ok(())),
            (Some(&c), Some(&stored), Some("wrong"), Err(AUTH_FAILED)),
            (Some(&c), Some(&stored), Some(""), Err(AUTH_FAILED)),
            (Some(&c), Some(&stored), None, Err(AUTH_FAILED)),
            (Some(&c), None, Some("s3cret"), Err(AUTH_FAILED)),
            // The stored value is a hash: presenting the hash itself fails.
            (Some(&c), Some(&stored), Some(&stored), Err(AUTH_FAILED)),
            (None, Some(&stored), Some("s3cret"), Err(AUTH_FAILED)),
            (None, None, None, Err(AUTH_FAILED)),
            (
                Some(&disabled),
                Some(&stored),
                Some("s3cret"),
                Err("The client is disabled."),
            ),
            // A wrong secret does not learn that the client is disabled.
            (
                Some(&disabled),
                Some(&stored),
                Some("wrong"),
                Err(AUTH_FAILED),
            ),
        ];
        for (client, stored, presented, expect) in cases {
            let got = authenticate(client, stored, presented);
            match expect {
                Ok(()) => assert_eq!(got, Ok(()), "{presented:?}"),
                Err(desc) => {
                    let e = got.unwrap_err();
                    assert_eq!(e.error, InvalidClient, "{presented:?}");
                    assert_eq!(e.error_description, desc, "{presented:?}");
                }
            }
        }
    }
}
