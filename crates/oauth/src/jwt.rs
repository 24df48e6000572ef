//! The JWT bearer grant (RFC 7523, interface §5.3): verifying a client's RS256 assertion and
//! its claims. Whether the `jti` was seen before and whether `sub` is an active user are the
//! service's checks; everything that needs no storage is here.

use crate::ClientInfo;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use coffer_domain::client::flow;
use coffer_errors::OAuthError;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Public};
use openssl::sign::Verifier;
use serde_json::{Map, Value};

/// The `grant_type` of this grant.
pub const GRANT_TYPE: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

/// How far `iat` may lie in the future (clock skew between the client and Coffer).
pub const MAX_CLOCK_SKEW_SECS: i64 = 60;
/// The longest an assertion may live (`exp - iat`).
pub const MAX_LIFETIME_SECS: i64 = 300;
/// The longest accepted `jti`, in characters.
pub const MAX_JTI_CHARS: usize = 255;

/// Whether `pem` is an RSA public key (SPKI `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY`) of at least
/// 2048 bits; checked when a client registers its key, so a bad key fails there and not at the
/// first assertion.
pub fn valid_public_key(pem: &str) -> bool {
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::pkcs8::DecodePublicKey;
    use rsa::traits::PublicKeyParts;
    let pem = pem.trim();
    if pem.len() > 16 * 1024 || pem.contains("PRIVATE KEY") {
        return false;
    }
    rsa::RsaPublicKey::from_public_key_pem(pem)
        .or_else(|_| rsa::RsaPublicKey::from_pkcs1_pem(pem))
        .is_ok_and(|k| k.size() * 8 >= 2048)
}

/// The claims of a verified assertion that the service still needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AssertionClaims {
    /// The email of the user to act for.
    pub sub: String,
    /// To refuse a second use of the same assertion until `exp`.
    pub jti: String,
    pub exp: i64,
    pub iat: i64,
}

/// A client's registered RSA public key, parsed once and reusable for many assertions: the
/// key keeps its modulus's Montgomery constants after the first verification, which a key
/// parsed per assertion computes again every time (as much work as the verification itself).
#[derive(Debug, Clone)]
pub struct JwtKey(PKey<Public>);

impl JwtKey {
    /// Parses a registered PEM (SPKI `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY`); a private key
    /// or anything else is the client's registration at fault (`invalid_client`).
    pub fn parse(pem: &str) -> Result<JwtKey, OAuthError> {
        rsa_public_key(pem).map(JwtKey)
    }
}

/// An assertion whose header says RS256 and whose signature `key` verified; its claims are
/// not checked yet ([`accept_verified`]).
#[derive(Debug, Clone)]
pub struct SignedAssertion {
    claims: Map<String, Value>,
}

/// Checks the header and the signature of `assertion` with `key`: the CPU-heavy part of the
/// grant, which needs no client record beyond the key.
pub fn verify_signature(key: &JwtKey, assertion: &str) -> Result<SignedAssertion, OAuthError> {
    let (header, payload, signature) = split(assertion)?;
    check_header(header)?;
    verify_parts(key, assertion, header, payload, signature)
}

fn verify_parts(
    key: &JwtKey,
    assertion: &str,
    header: &str,
    payload: &str,
    signature: &str,
) -> Result<SignedAssertion, OAuthError> {
    // The signature covers the header and payload as sent (RFC 7515 §5.2).
    let signed = &assertion[..header.len() + 1 + payload.len()];
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| OAuthError::invalid_grant("The assertion is malformed."))?;
    if !key.verifies(signed.as_bytes(), &signature) {
        return Err(OAuthError::invalid_grant(
            "The assertion signature is invalid.",
        ));
    }
    let claims = URL_SAFE_NO_PAD
        .decode(payload)
        .ok()
        .and_then(|p| serde_json::from_slice::<Map<String, Value>>(&p).ok())
        .ok_or_else(|| OAuthError::invalid_grant("The assertion is malformed."))?;
    Ok(SignedAssertion { claims })
}

/// Verifies `assertion` for `client` at the token endpoint `audience`.
///
/// Order: the client's JWT_BEARER flow and registered key (`unauthorized_client`); the header,
/// which must say RS256 before any key is used, so `none`, HS256 signed with the public key
/// (algorithm confusion) and every other algorithm are refused (`invalid_grant`); the
/// registered PEM (`invalid_client`, the client's registration is at fault); the signature;
/// then the claims, each failure an `invalid_grant` naming the claim. The claim rules are
/// checked here, without leeway.
pub fn verify_assertion(
    client: &ClientInfo,
    assertion: &str,
    audience: &str,
    now: i64,
) -> Result<AssertionClaims, OAuthError> {
    let pem = registered_key(client)?;
    let (header, payload, signature) = split(assertion)?;
    check_header(header)?;
    let key = JwtKey::parse(pem)?;
    let signed = verify_parts(&key, assertion, header, payload, signature)?;
    check_claims(&signed.claims, client, audience, now)
}

/// The rest of [`verify_assertion`] for an assertion verified beforehand with the key `pem`:
/// the client's flow, that `pem` is still the client's registered key (else `None`: verify
/// again with the registered one), and the claims.
pub fn accept_verified(
    client: &ClientInfo,
    pem: &str,
    signed: &SignedAssertion,
    audience: &str,
    now: i64,
) -> Option<Result<AssertionClaims, OAuthError>> {
    match registered_key(client) {
        Ok(registered) if registered == pem => {
            Some(check_claims(&signed.claims, client, audience, now))
        }
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    }
}

/// The client's JWT_BEARER flow and its registered PEM.
fn registered_key(client: &ClientInfo) -> Result<&str, OAuthError> {
    if !client.has_flow(flow::JWT_BEARER) {
        return Err(OAuthError::unauthorized_client(
            "The client may not use the JWT bearer grant.",
        ));
    }
    client
        .jwt_public_key
        .as_deref()
        .filter(|k| !k.trim().is_empty())
        .ok_or_else(|| {
            OAuthError::unauthorized_client("No public key is registered for the client.")
        })
}

fn malformed() -> OAuthError {
    OAuthError::invalid_grant("The assertion is not a well-formed JWT.")
}

/// The three parts of a compact JWS: header, payload, signature.
fn split(assertion: &str) -> Result<(&str, &str, &str), OAuthError> {
    let mut parts = assertion.split('.');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(h), Some(p), Some(s), None) => Ok((h, p, s)),
        _ => Err(malformed()),
    }
}

/// Reads the header without trusting anything else: only `{"alg":"RS256", …}` goes on.
fn check_header(header: &str) -> Result<(), OAuthError> {
    let header = URL_SAFE_NO_PAD.decode(header).map_err(|_| malformed())?;
    let header: Map<String, Value> = serde_json::from_slice(&header).map_err(|_| malformed())?;
    match header.get("alg").and_then(Value::as_str) {
        Some("RS256") => Ok(()),
        Some(alg) => Err(OAuthError::invalid_grant(format!(
            "The assertion algorithm `{alg}` is not accepted; only RS256 is."
        ))),
        None => Err(malformed()),
    }
}

/// The client's registered key (SPKI `PUBLIC KEY` or PKCS#1 `RSA PUBLIC KEY` PEM), ready for
/// OpenSSL to verify with. Private keys are refused: a public key is all Coffer needs. The `rsa`
/// crate reads both PEM forms; OpenSSL's assembly-backed arithmetic verifies, and its key keeps
/// the modulus's Montgomery constants from one verification to the next.
fn rsa_public_key(pem: &str) -> Result<PKey<Public>, OAuthError> {
    use rsa::pkcs1::DecodeRsaPublicKey;
    use rsa::pkcs8::{DecodePublicKey, EncodePublicKey};
    let bad = || {
        OAuthError::invalid_client("The client's registered public key is not a valid RSA PEM key.")
    };
    let pem = pem.trim();
    if pem.contains("PRIVATE KEY") {
        return Err(bad());
    }
    let key = rsa::RsaPublicKey::from_public_key_pem(pem)
        .or_else(|_| rsa::RsaPublicKey::from_pkcs1_pem(pem))
        .map_err(|_| bad())?;
    let der = key.to_public_key_der().map_err(|_| bad())?;
    PKey::public_key_from_der(der.as_bytes()).map_err(|_| bad())
}

impl JwtKey {
    /// Whether `signature` is this key's RS256 (RSASSA-PKCS1-v1_5 with SHA-256) signature of
    /// `message`. Keys outside 2,048–8,192 bits verify nothing, whatever they signed.
    fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        let bits = self.0.bits();
        if !(2048..=8192).contains(&bits) {
            return false;
        }
        Verifier::new(MessageDigest::sha256(), &self.0)
            .and_then(|mut v| v.verify_oneshot(signature, message))
            .unwrap_or(false)
    }
}

fn check_claims(
    claims: &Map<String, Value>,
    client: &ClientInfo,
    audience: &str,
    now: i64,
) -> Result<AssertionClaims, OAuthError> {
    let grant = |d: &'static str| OAuthError::invalid_grant(d);
    let string = |name: &str| claims.get(name).and_then(Value::as_str);

    if string("iss") != Some(client.id.as_str()) {
        return Err(grant("The assertion `iss` claim must be the client id."));
    }
    let aud_ok = match claims.get("aud") {
        Some(Value::String(a)) => a == audience,
        Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(audience)),
        _ => false,
    };
    if !aud_ok {
        return Err(grant(
            "The assertion `aud` claim must be the token endpoint URL.",
        ));
    }
    let exp = numeric_date(claims.get("exp"))
        .ok_or_else(|| grant("The assertion `exp` claim is required and must be a number."))?;
    let iat = numeric_date(claims.get("iat"))
        .ok_or_else(|| grant("The assertion `iat` claim is required and must be a number."))?;
    if exp <= now {
        return Err(grant("The assertion has expired (`exp`)."));
    }
    if iat > now.saturating_add(MAX_CLOCK_SKEW_SECS) {
        return Err(grant("The assertion `iat` claim lies in the future."));
    }
    if exp <= iat {
        return Err(grant("The assertion `exp` claim must be after `iat`."));
    }
    if exp - iat > MAX_LIFETIME_SECS {
        return Err(grant(
            "The assertion `exp` claim may be at most 300 seconds after `iat`.",
        ));
    }
    // Not required, but an assertion that says it is not yet valid must not be used (RFC 7519).
    if let Some(nbf) = claims.get("nbf") {
        match numeric_date(Some(nbf)) {
            Some(nbf) if nbf <= now.saturating_add(MAX_CLOCK_SKEW_SECS) => {}
            _ => return Err(grant("The assertion is not valid yet (`nbf`).")),
        }
    }
    let jti = string("jti").unwrap_or_default();
    if jti.is_empty() || jti.chars().count() > MAX_JTI_CHARS {
        return Err(grant(
            "The assertion `jti` claim is required and may have at most 255 characters.",
        ));
    }
    let sub = string("sub").unwrap_or_default();
    if sub.is_empty() {
        return Err(grant("The assertion `sub` claim is required."));
    }
    Ok(AssertionClaims {
        sub: sub.to_owned(),
        jti: jti.to_owned(),
        exp,
        iat,
    })
}

/// A JWT NumericDate: seconds, possibly with a fraction (dropped).
fn numeric_date(v: Option<&Value>) -> Option<i64> {
    let n = v?.as_number()?;
    n.as_i64().or_else(|| {
        let f = n.as_f64()?;
        (f.is_finite() && f.abs() < 1e15).then(|| f.floor() as i64)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{client, client_without_flow, CLIENT_ID};
    use coffer_errors::OAuthErrorCode::{self, InvalidClient, InvalidGrant, UnauthorizedClient};
    use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
    use rsa::pkcs1::EncodeRsaPublicKey;
    use rsa::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    use serde_json::json;
    use std::sync::OnceLock;

    const NOW: i64 = 1_700_000_000;
    const AUD: &str = "https://coffer.example.com/oauth/token";

    struct Keys {
        private_pem: String,
        public_pem: String,
        public_pkcs1_pem: String,
    }

    /// One RSA key per test binary: generating it is slow.
    fn keys() -> &'static Keys {
        static KEYS: OnceLock<Keys> = OnceLock::new();
        KEYS.get_or_init(|| {
            let key = rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 2048).unwrap();
            let public = key.to_public_key();
            Keys {
                private_pem: key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string(),
                public_pem: public.to_public_key_pem(LineEnding::LF).unwrap(),
                public_pkcs1_pem: public.to_pkcs1_pem(LineEnding::LF).unwrap(),
            }
        })
    }

    fn jwt_client() -> ClientInfo {
        ClientInfo {
            jwt_public_key: Some(keys().public_pem.clone()),
            ..client()
        }
    }

    fn claims() -> Value {
        json!({
            "iss": CLIENT_ID,
            "sub": "ann@example.com",
            "aud": AUD,
            "iat": NOW,
            "exp": NOW + 300,
            "jti": "jti-1",
        })
    }

    fn sign(claims: &Value) -> String {
        let key = EncodingKey::from_rsa_pem(keys().private_pem.as_bytes()).unwrap();
        encode(&Header::new(Algorithm::RS256), claims, &key).unwrap()
    }

    fn with(edit: impl FnOnce(&mut Map<String, Value>)) -> Value {
        let mut c = claims();
        edit(c.as_object_mut().unwrap());
        c
    }

    fn code(r: Result<AssertionClaims, OAuthError>) -> OAuthErrorCode {
        r.expect_err("should be refused").error
    }

    #[test]
    fn registered_keys_are_checked() {
        let k = keys();
        assert!(valid_public_key(&k.public_pem));
        assert!(valid_public_key(&k.public_pkcs1_pem));
        assert!(!valid_public_key(
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----"
        ));
        assert!(!valid_public_key("not a key"));
        assert!(!valid_public_key(&k.private_pem));
    }

    #[test]
    fn accepts_a_valid_assertion() {
        let got = verify_assertion(&jwt_client(), &sign(&claims()), AUD, NOW).unwrap();
        assert_eq!(
            got,
            AssertionClaims {
                sub: "ann@example.com".into(),
                jti: "jti-1".into(),
                exp: NOW + 300,
                iat: NOW
            }
        );
        // A PKCS#1 public key works as well.
        let c = ClientInfo {
            jwt_public_key: Some(keys().public_pkcs1_pem.clone()),
            ..client()
        };
        assert!(verify_assertion(&c, &sign(&claims()), AUD, NOW).is_ok());
    }

    #[test]
    fn client_must_be_allowed_and_keyed() {
        let token = sign(&claims());
        let no_flow = ClientInfo {
            jwt_public_key: Some(keys().public_pem.clone()),
            ..client_without_flow(flow::JWT_BEARER)
        };
        assert_eq!(
            code(verify_assertion(&no_flow, &token, AUD, NOW)),
            UnauthorizedClient
        );
        assert_eq!(
            code(verify_assertion(&client(), &token, AUD, NOW)),
            UnauthorizedClient
        );
        let blank = ClientInfo {
            jwt_public_key: Some("  ".into()),
            ..client()
        };
        assert_eq!(
            code(verify_assertion(&blank, &token, AUD, NOW)),
            UnauthorizedClient
        );
        // The flow is checked before anything in the assertion.
        assert_eq!(
            code(verify_assertion(&no_flow, "garbage", AUD, NOW)),
            UnauthorizedClient
        );
    }

    #[test]
    fn bad_registered_key_is_invalid_client() {
        let token = sign(&claims());
        let bad_keys = [
            "not a pem".to_owned(),
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n".to_owned(),
            keys().private_pem.clone(),
        ];
        for pem in bad_keys {
            let c = ClientInfo {
                jwt_public_key: Some(pem.clone()),
                ..client()
            };
            assert_eq!(
                code(verify_assertion(&c, &token, AUD, NOW)),
                InvalidClient,
                "{pem}"
            );
        }
    }

    #[test]
    fn refuses_other_algorithms() {
        let k = keys();
        // Algorithm confusion: HS256 keyed with the (public) PEM the server holds.
        let hs = encode(
            &Header::new(Algorithm::HS256),
            &claims(),
            &EncodingKey::from_secret(k.public_pem.as_bytes()),
        )
        .unwrap();
        let rs512 = encode(
            &Header::new(Algorithm::RS512),
            &claims(),
            &EncodingKey::from_rsa_pem(k.private_pem.as_bytes()).unwrap(),
        )
        .unwrap();
        let ps256 = encode(
            &Header::new(Algorithm::PS256),
            &claims(),
            &EncodingKey::from_rsa_pem(k.private_pem.as_bytes()).unwrap(),
        )
        .unwrap();
        let body = URL_SAFE_NO_PAD.encode(claims().to_string());
        let none = format!(
            "{}.{body}.",
            URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#)
        );
        let none_upper = format!("{}.{body}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"NONE"}"#));
        let no_alg = format!("{}.{body}.sig", URL_SAFE_NO_PAD.encode(r#"{"typ":"JWT"}"#));
        for token in [hs, rs512, ps256, none, none_upper, no_alg] {
            let e = verify_assertion(&jwt_client(), &token, AUD, NOW).unwrap_err();
            assert_eq!(e.error, InvalidGrant, "{token}");
        }
        // A bad header is refused even when the registered key is unusable: it is looked at first.
        let bad_key = ClientInfo {
            jwt_public_key: Some("junk".into()),
            ..client()
        };
        let none = format!("{}.{body}.", URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#));
        assert_eq!(
            code(verify_assertion(&bad_key, &none, AUD, NOW)),
            InvalidGrant
        );
    }

    #[test]
    fn refuses_bad_signatures_and_malformed_tokens() {
        let token = sign(&claims());
        let (head, rest) = token.split_once('.').unwrap();
        let (_, sig) = rest.split_once('.').unwrap();
        // Claims swapped under the original signature.
        let forged_body = URL_SAFE_NO_PAD.encode(
            with(|c| {
                c.insert("sub".into(), json!("root@example.com"));
            })
            .to_string(),
        );
        let forged = format!("{head}.{forged_body}.{sig}");
        // Signed by another key.
        let other = rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 1024).unwrap();
        let other_pem = other.to_pkcs8_pem(LineEnding::LF).unwrap();
        let foreign = encode(
            &Header::new(Algorithm::RS256),
            &claims(),
            &EncodingKey::from_rsa_pem(other_pem.as_bytes()).unwrap(),
        )
        .unwrap();
        // Properly signed payloads that are not a claims object.
        let signed = |payload: &str| {
            let message = format!("{head}.{}", URL_SAFE_NO_PAD.encode(payload));
            let key = EncodingKey::from_rsa_pem(keys().private_pem.as_bytes()).unwrap();
            let sig =
                jsonwebtoken::crypto::sign(message.as_bytes(), &key, Algorithm::RS256).unwrap();
            format!("{message}.{sig}")
        };
        let body = rest.split_once('.').unwrap().0;
        // (token, part of the description)
        let cases = [
            (forged, "signature is invalid"),
            (foreign, "signature is invalid"),
            (signed("nope"), "malformed"),
            (signed("[1, 2]"), "malformed"),
            (
                format!("{head}.{}.{sig}", URL_SAFE_NO_PAD.encode("nope")),
                "signature is invalid",
            ),
            (format!("{head}.{body}.!!!"), "malformed"),
            (format!("{head}.{rest}.extra"), "well-formed"),
            (format!("{head}.{body}"), "well-formed"),
            (String::new(), "well-formed"),
            ("a.b.c".into(), "well-formed"),
            (
                format!("{}.{rest}", URL_SAFE_NO_PAD.encode("not json")),
                "well-formed",
            ),
        ];
        for (token, why) in cases {
            let e = verify_assertion(&jwt_client(), &token, AUD, NOW).unwrap_err();
            assert_eq!(e.error, InvalidGrant, "{token}");
            assert!(e.error_description.contains(why), "{token}: {e}");
        }
    }

    #[test]
    fn claim_rules() {
        type Edit = fn(&mut Map<String, Value>);
        // (edit, now, accepted, claim named in the description)
        let cases: Vec<(Edit, i64, bool, &str)> = vec![
            (|_| {}, NOW, true, ""),
            (
                |c| {
                    c.remove("iss");
                },
                NOW,
                false,
                "iss",
            ),
            (
                |c| {
                    c.insert("iss".into(), json!("client-2"));
                },
                NOW,
                false,
                "iss",
            ),
            (
                |c| {
                    c.insert("iss".into(), json!([CLIENT_ID]));
                },
                NOW,
                false,
                "iss",
            ),
            (
                |c| {
                    c.remove("aud");
                },
                NOW,
                false,
                "aud",
            ),
            (
                |c| {
                    c.insert("aud".into(), json!("https://other/oauth/token"));
                },
                NOW,
                false,
                "aud",
            ),
            (
                |c| {
                    c.insert("aud".into(), json!(["x", AUD]));
                },
                NOW,
                true,
                "",
            ),
            (
                |c| {
                    c.insert("aud".into(), json!(["x", "y"]));
                },
                NOW,
                false,
                "aud",
            ),
            (
                |c| {
                    c.insert("aud".into(), json!([]));
                },
                NOW,
                false,
                "aud",
            ),
            (
                |c| {
                    c.insert("aud".into(), json!(format!("{AUD}/")));
                },
                NOW,
                false,
                "aud",
            ),
            // exp: valid while now < exp.
            (|_| {}, NOW + 299, true, ""),
            (|_| {}, NOW + 300, false, "exp"),
            (|_| {}, NOW + 301, false, "exp"),
            (
                |c| {
                    c.remove("exp");
                },
                NOW,
                false,
                "exp",
            ),
            (
                |c| {
                    c.insert("exp".into(), json!("1700000300"));
                },
                NOW,
                false,
                "exp",
            ),
            (
                |c| {
                    c.insert("exp".into(), json!(NOW as f64 + 300.5));
                },
                NOW,
                true,
                "",
            ),
            // iat: at most 60 s ahead.
            (
                |c| {
                    c.remove("iat");
                },
                NOW,
                false,
                "iat",
            ),
            (
                |c| {
                    c.insert("iat".into(), json!(null));
                },
                NOW,
                false,
                "iat",
            ),
            (
                |c| {
                    c.insert("iat".into(), json!(NOW + 60));
                    c.insert("exp".into(), json!(NOW + 120));
                },
                NOW,
                true,
                "",
            ),
            (
                |c| {
                    c.insert("iat".into(), json!(NOW + 61));
                    c.insert("exp".into(), json!(NOW + 120));
                },
                NOW,
                false,
                "iat",
            ),
            // Lifetime: exp - iat in 1..=300.
            (
                |c| {
                    c.insert("iat".into(), json!(NOW - 1));
                },
                NOW,
                false,
                "exp",
            ),
            (
                |c| {
                    c.insert("iat".into(), json!(NOW - 10));
                    c.insert("exp".into(), json!(NOW + 290));
                },
                NOW,
                true,
                "",
            ),
            (
                |c| {
                    c.insert("iat".into(), json!(NOW + 10));
                    c.insert("exp".into(), json!(NOW + 10));
                },
                NOW,
                false,
                "exp",
            ),
            (
                |c| {
                    c.insert("iat".into(), json!(NOW + 20));
                    c.insert("exp".into(), json!(NOW + 10));
                },
                NOW,
                false,
                "exp",
            ),
            // nbf, when present.
            (
                |c| {
                    c.insert("nbf".into(), json!(NOW + 60));
                },
                NOW,
                true,
                "",
            ),
            (
                |c| {
                    c.insert("nbf".into(), json!(NOW + 61));
                },
                NOW,
                false,
                "nbf",
            ),
            (
                |c| {
                    c.insert("nbf".into(), json!("soon"));
                },
                NOW,
                false,
                "nbf",
            ),
            // jti.
            (
                |c| {
                    c.remove("jti");
                },
                NOW,
                false,
                "jti",
            ),
            (
                |c| {
                    c.insert("jti".into(), json!(""));
                },
                NOW,
                false,
                "jti",
            ),
            (
                |c| {
                    c.insert("jti".into(), json!(42));
                },
                NOW,
                false,
                "jti",
            ),
            (
                |c| {
                    c.insert("jti".into(), json!("é".repeat(255)));
                },
                NOW,
                true,
                "",
            ),
            (
                |c| {
                    c.insert("jti".into(), json!("j".repeat(256)));
                },
                NOW,
                false,
                "jti",
            ),
            // sub.
            (
                |c| {
                    c.remove("sub");
                },
                NOW,
                false,
                "sub",
            ),
            (
                |c| {
                    c.insert("sub".into(), json!(""));
                },
                NOW,
                false,
                "sub",
            ),
            (
                |c| {
                    c.insert("sub".into(), json!(7));
                },
                NOW,
                false,
                "sub",
            ),
        ];
        for (i, (edit, now, accepted, claim)) in cases.into_iter().enumerate() {
            let token = sign(&with(edit));
            match verify_assertion(&jwt_client(), &token, AUD, now) {
                Ok(_) => assert!(accepted, "case {i} accepted"),
                Err(e) => {
                    assert!(!accepted, "case {i} refused: {e}");
                    assert_eq!(e.error, InvalidGrant, "case {i}");
                    assert!(
                        e.error_description.contains(&format!("`{claim}`")),
                        "case {i}: {e}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_key_under_2048_bits_verifies_nothing_even_what_it_signed() {
        // Registration refuses such a key; a key stored before that rule still signs nothing.
        let short = rsa::RsaPrivateKey::new(&mut rand::thread_rng(), 1024).unwrap();
        let private = short.to_pkcs8_pem(LineEnding::LF).unwrap();
        let public = short
            .to_public_key()
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        assert!(!valid_public_key(&public));
        let token = encode(
            &Header::new(Algorithm::RS256),
            &claims(),
            &EncodingKey::from_rsa_pem(private.as_bytes()).unwrap(),
        )
        .unwrap();
        let client = ClientInfo {
            jwt_public_key: Some(public.clone()),
            ..client()
        };
        let e = verify_assertion(&client, &token, AUD, NOW).unwrap_err();
        assert_eq!(e.error, InvalidGrant);
        assert!(e.error_description.contains("signature"), "{e}");
        let key = JwtKey::parse(&public).unwrap();
        assert_eq!(
            verify_signature(&key, &token).unwrap_err().error,
            InvalidGrant
        );
        // The same key verifies its signatures many times over (its constants kept).
        let key = JwtKey::parse(&keys().public_pem).unwrap();
        let token = sign(&claims());
        for _ in 0..3 {
            assert!(verify_signature(&key, &token).is_ok());
        }
    }

    #[test]
    fn a_signature_verified_beforehand_counts_only_with_the_registered_key() {
        let key = JwtKey::parse(&keys().public_pem).unwrap();
        let token = sign(&claims());
        let signed = verify_signature(&key, &token).unwrap();
        let pem = keys().public_pem.as_str();
        // The registered key: the same claims as the one-step check.
        assert_eq!(
            accept_verified(&jwt_client(), pem, &signed, AUD, NOW),
            Some(verify_assertion(&jwt_client(), &token, AUD, NOW))
        );
        // The client's key changed since: verify again.
        let rotated = ClientInfo {
            jwt_public_key: Some(keys().public_pkcs1_pem.clone()),
            ..jwt_client()
        };
        assert_eq!(accept_verified(&rotated, pem, &signed, AUD, NOW), None);
        // The flow was taken away: refused whatever the key.
        let e = accept_verified(
            &client_without_flow(flow::JWT_BEARER),
            pem,
            &signed,
            AUD,
            NOW,
        )
        .unwrap()
        .unwrap_err();
        assert_eq!(e.error, UnauthorizedClient);
        // Claims are still checked.
        let late = accept_verified(&jwt_client(), pem, &signed, AUD, NOW + 301)
            .unwrap()
            .unwrap_err();
        assert!(late.error_description.contains("`exp`"), "{late}");
        // A bad signature never gets this far.
        let (head, rest) = token.split_once('.').unwrap();
        let body = rest.split_once('.').unwrap().0;
        let forged = format!("{head}.{body}.{}", URL_SAFE_NO_PAD.encode([0u8; 256]));
        assert_eq!(
            verify_signature(&key, &forged).unwrap_err().error,
            InvalidGrant
        );
    }
}
