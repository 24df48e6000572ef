//! The signature flow (interface §5.4, deprecated): parsing and verifying the HMAC-signed
//! authorization code a trusted app builds itself to act for a user. Single use is the
//! service's check, on [`SignatureCode::replay_key`]; the code's syntax, signature and one-hour
//! validity are checked here.
//!
//! The ids may be spelled in standard or URL-safe base64, padded or not (and a `+` may arrive as
//! a space): every spelling decodes to the same text, and the replay key is derived from the
//! decoded parts, so one code is used once however it is spelled.
//!
//! `auth_code = base64(client_id)|@@|base64(user_id)|@@|timestamp|@@|nonce|@@|signature`, where
//! `signature` is the lowercase hex HMAC-SHA1, keyed by the client's signature key, of
//! `client_id|@@|user_id|@@|timestamp|@@|nonce`.

use crate::ClientInfo;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::{alphabet, Engine};
use coffer_domain::client::flow;
use coffer_errors::OAuthError;
use hmac::{Hmac, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The separator of the code's and the base string's fields.
pub const SEPARATOR: &str = "|@@|";
/// How long a code is valid after its timestamp.
pub const VALIDITY_SECS: i64 = 3600;
/// How far a timestamp may lie in the future (clock skew).
pub const MAX_FUTURE_SECS: i64 = 300;
/// Timestamps above this are milliseconds (in seconds it is the year 5138).
pub const MILLIS_THRESHOLD: i64 = 100_000_000_000;
pub const MAX_NONCE: u32 = 999_999;

const STANDARD_ANY_PAD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);
const URL_SAFE_ANY_PAD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// True when the code has the signature-flow shape (contains `|@@|`).
pub fn is_signature_code(code: &str) -> bool {
    code.contains(SEPARATOR)
}

/// A verified signature code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureCode {
    /// The user to act for, as written in the code.
    pub user_email: String,
    /// Unix seconds (a millisecond timestamp is converted).
    pub timestamp: i64,
    pub nonce: u32,
    /// What the code means, whatever its spelling: the lowercase hex SHA-256 of the decoded
    /// client id, user id, timestamp (as written), nonce and signature bytes. The service
    /// records it to refuse the code a second time.
    pub replay_key: String,
}

/// Verifies a signature-flow `code` for `client` at `now`.
///
/// Order: the client's SIGNATURE flow and key (`unauthorized_client`); the code's syntax
/// (`invalid_request`); the client id in the code (`invalid_grant`); the signature, compared
/// in constant time, then the validity window (`invalid_grant`).
pub fn verify(client: &ClientInfo, code: &str, now: i64) -> Result<SignatureCode, OAuthError> {
    if !client.has_flow(flow::SIGNATURE) {
        return Err(OAuthError::unauthorized_client(
            "The client may not use the signature flow.",
        ));
    }
    let Some(key) = client.signature_key.as_deref().filter(|k| !k.is_empty()) else {
        return Err(OAuthError::unauthorized_client(
            "No signature key is registered for the client.",
        ));
    };
    let parsed = parse(code)?;
    if parsed.client_id != client.id {
        return Err(OAuthError::invalid_grant(
            "The code was made for another client.",
        ));
    }
    let expected = sign(
        key,
        &parsed.client_id,
        &parsed.user_id,
        parsed.timestamp_text,
        parsed.nonce_text,
    );
    if !bool::from(expected.as_bytes().ct_eq(parsed.signature_text.as_bytes())) {
        return Err(OAuthError::invalid_grant("The code signature is invalid."));
    }
    let timestamp = if parsed.timestamp > MILLIS_THRESHOLD {
        parsed.timestamp / 1000
    } else {
        parsed.timestamp
    };
    if now.saturating_sub(timestamp) > VALIDITY_SECS {
        return Err(OAuthError::invalid_grant("The code has expired."));
    }
    if timestamp.saturating_sub(now) > MAX_FUTURE_SECS {
        return Err(OAuthError::invalid_grant(
            "The code timestamp lies in the future.",
        ));
    }
    let replay_key = replay_key(&parsed);
    Ok(SignatureCode {
        user_email: parsed.user_id,
        timestamp,
        nonce: parsed.nonce,
        replay_key,
    })
}

/// The replay key of a parsed code: SHA-256 over its decoded parts, each text
/// length-prefixed so that no two different codes share an encoding.
fn replay_key(p: &Parsed<'_>) -> String {
    let mut h = Sha256::new();
    h.update(b"coffer-signature-code\0");
    for text in [&p.client_id, &p.user_id] {
        h.update((text.len() as u64).to_be_bytes());
        h.update(text.as_bytes());
    }
    h.update(p.timestamp.to_be_bytes());
    h.update(p.nonce.to_be_bytes());
    h.update(p.signature);
    hex::encode(h.finalize())
}

/// Builds a code (for tests and tools). The ids are encoded as padded standard base64.
pub fn make_code(
    client_id: &str,
    user_email: &str,
    key: &str,
    timestamp: i64,
    nonce: u32,
) -> String {
    let (ts, nonce) = (timestamp.to_string(), nonce.to_string());
    let signature = sign(key, client_id, user_email, &ts, &nonce);
    [
        STANDARD.encode(client_id),
        STANDARD.encode(user_email),
        ts,
        nonce,
        signature,
    ]
    .join(SEPARATOR)
}

/// The lowercase hex HMAC-SHA1 of the base string.
fn sign(key: &str, client_id: &str, user_id: &str, timestamp: &str, nonce: &str) -> String {
    let base = [client_id, user_id, timestamp, nonce].join(SEPARATOR);
    let mut mac =
        Hmac::<Sha1>::new_from_slice(key.as_bytes()).expect("HMAC accepts keys of any length");
    mac.update(base.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// The fields of a syntactically valid code.
struct Parsed<'a> {
    client_id: String,
    user_id: String,
    /// As written: the base string uses the text, not the number.
    timestamp_text: &'a str,
    timestamp: i64,
    nonce_text: &'a str,
    nonce: u32,
    /// As written: checked to be 40 lowercase hex digits.
    signature_text: &'a str,
    /// The 20 bytes the hex spells.
    signature: [u8; 20],
}

fn parse(code: &str) -> Result<Parsed<'_>, OAuthError> {
    let parts: Vec<&str> = code.split(SEPARATOR).collect();
    let [client_b64, user_b64, timestamp_text, nonce_text, signature_text] = parts[..] else {
        return Err(OAuthError::invalid_request(
            "The code must have five `|@@|`-separated fields.",
        ));
    };
    let client_id = decode_b64(client_b64)
        .ok_or_else(|| OAuthError::invalid_request("The code's client id is not base64 text."))?;
    let user_id = decode_b64(user_b64)
        .ok_or_else(|| OAuthError::invalid_request("The code's user id is not base64 text."))?;
    if client_id.is_empty() || user_id.is_empty() {
        return Err(OAuthError::invalid_request(
            "The code's client id and user id must not be empty.",
        ));
    }
    let timestamp = digits(timestamp_text, 16)
        .and_then(|t| t.parse::<i64>().ok())
        .ok_or_else(|| {
            OAuthError::invalid_request(
                "The code's timestamp must be Unix seconds or milliseconds.",
            )
        })?;
    let nonce = digits(nonce_text, 6)
        .and_then(|n| n.parse::<u32>().ok())
        .filter(|n| (1..=MAX_NONCE).contains(n))
        .ok_or_else(|| {
            OAuthError::invalid_request("The code's nonce must be an integer from 1 to 999999.")
        })?;
    let mut signature = [0u8; 20];
    let lowercase_hex = signature_text
        .bytes()
        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    if !lowercase_hex || hex::decode_to_slice(signature_text, &mut signature).is_err() {
        return Err(OAuthError::invalid_request(
            "The code's signature must be 40 lowercase hex digits.",
        ));
    }
    Ok(Parsed {
        client_id,
        user_id,
        timestamp_text,
        timestamp,
        nonce_text,
        nonce,
        signature_text,
        signature,
    })
}

/// Standard or URL-safe base64, padded or not, holding UTF-8 text.
fn decode_b64(s: &str) -> Option<String> {
    // An unencoded code in a form body turns `+` into a space; a space is never base64.
    let s = s.replace(' ', "+");
    let bytes = STANDARD_ANY_PAD
        .decode(&s)
        .or_else(|_| URL_SAFE_ANY_PAD.decode(&s))
        .ok()?;
    String::from_utf8(bytes).ok()
}

/// `s` when it is 1 to `max` ASCII digits (no sign, no spaces).
fn digits(s: &str, max: usize) -> Option<&str> {
    (!s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::{client, client_without_flow, CLIENT_ID};
    use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
    use coffer_errors::OAuthErrorCode::{self, InvalidGrant, InvalidRequest, UnauthorizedClient};

    const NOW: i64 = 1_700_000_000;
    const KEY: &str = "sig-key";
    const USER: &str = "ann@example.com";

    fn code_at(ts: i64) -> String {
        make_code(CLIENT_ID, USER, KEY, ts, 4242)
    }

    fn err(code: &str, now: i64) -> OAuthErrorCode {
        verify(&client(), code, now).expect_err(code).error
    }

    /// A code with the given fields and a correct signature over them.
    fn raw(
        client_b64: &str,
        user_b64: &str,
        ts: &str,
        nonce: &str,
        cid: &str,
        user: &str,
    ) -> String {
        let sig = sign(KEY, cid, user, ts, nonce);
        [client_b64, user_b64, ts, nonce, &sig].join(SEPARATOR)
    }

    #[test]
    fn known_vector() {
        // HMAC-SHA1("sig-key", "client-1|@@|ann@example.com|@@|1700000000|@@|4242"), computed
        // independently (`printf %s … | openssl dgst -sha1 -hmac sig-key`).
        let code = code_at(NOW);
        let parts: Vec<&str> = code.split(SEPARATOR).collect();
        assert_eq!(parts[0], "Y2xpZW50LTE=");
        assert_eq!(parts[1], "YW5uQGV4YW1wbGUuY29t");
        assert_eq!(parts[2], "1700000000");
        assert_eq!(parts[3], "4242");
        assert_eq!(parts[4], "6e1ae9bbc033c1061a564430912ba51ba8d042dc");
    }

    #[test]
    fn shape() {
        assert!(is_signature_code(&code_at(NOW)));
        assert!(is_signature_code("a|@@|b"));
        assert!(!is_signature_code("SplxlOBeZQQYbYS6WxSbIA"));
        assert!(!is_signature_code("a|@|b"));
    }

    #[test]
    fn verifies_and_normalises() {
        let ok = verify(&client(), &code_at(NOW), NOW).unwrap();
        assert_eq!(
            (ok.user_email.as_str(), ok.timestamp, ok.nonce),
            (USER, NOW, 4242)
        );
        assert_eq!(ok.replay_key.len(), 64);
        // Milliseconds: the base string keeps them as written, the result is in seconds.
        let ms = verify(&client(), &code_at(NOW * 1000 + 999), NOW).unwrap();
        assert_eq!(ms.timestamp, NOW);
        // Other base64 spellings of the ids.
        let variants = [
            (
                STANDARD_NO_PAD.encode(CLIENT_ID),
                STANDARD_NO_PAD.encode(USER),
            ),
            (
                URL_SAFE_NO_PAD.encode(CLIENT_ID),
                URL_SAFE_NO_PAD.encode(USER),
            ),
        ];
        for (c, u) in variants {
            let code = raw(&c, &u, "1700000000", "4242", CLIENT_ID, USER);
            assert!(verify(&client(), &code, NOW).is_ok(), "{code}");
        }
        // `+` that became a space in an unencoded form body.
        let user = "ann~>>?@example.com";
        assert_eq!(STANDARD.encode(user), "YW5ufj4+P0BleGFtcGxlLmNvbQ==");
        let spaced = STANDARD.encode(user).replace('+', " ");
        let code = raw(
            &STANDARD.encode(CLIENT_ID),
            &spaced,
            "1700000000",
            "1",
            CLIENT_ID,
            user,
        );
        assert_eq!(verify(&client(), &code, NOW).unwrap().user_email, user);
        // The URL-safe alphabet (`_` for `/`).
        let user = "ö?>@example.com";
        assert_eq!(URL_SAFE_NO_PAD.encode(user), "w7Y_PkBleGFtcGxlLmNvbQ");
        let code = raw(
            &STANDARD.encode(CLIENT_ID),
            &URL_SAFE_NO_PAD.encode(user),
            "1700000000",
            "1",
            CLIENT_ID,
            user,
        );
        assert_eq!(verify(&client(), &code, NOW).unwrap().user_email, user);
        // Nonce bounds.
        for nonce in [1, 999_999] {
            let code = make_code(CLIENT_ID, USER, KEY, NOW, nonce);
            assert_eq!(verify(&client(), &code, NOW).unwrap().nonce, nonce);
        }
    }

    /// The code with its two id fields spelled `client_b64` and `user_b64`.
    fn respelled(code: &str, client_b64: &str, user_b64: &str) -> String {
        let mut parts: Vec<&str> = code.split(SEPARATOR).collect();
        parts[0] = client_b64;
        parts[1] = user_b64;
        parts.join(SEPARATOR)
    }

    fn key_of(code: &str) -> String {
        verify(&client(), code, NOW).expect(code).replay_key
    }

    #[test]
    fn replay_key_is_the_same_for_every_spelling() {
        // `client-1` pads with one `=`; this user's id pads with `==` and has both `+` and `/`.
        let user = "ab~cd?e@example.com";
        assert_eq!(STANDARD.encode(user), "YWJ+Y2Q/ZUBleGFtcGxlLmNvbQ==");
        let code = make_code(CLIENT_ID, user, KEY, NOW, 4242);
        let key = key_of(&code);
        /// How a field is spelled.
        type Spell = fn(&str) -> String;
        let spellings: [(&str, Spell); 5] = [
            ("padding stripped", |s| STANDARD_NO_PAD.encode(s)),
            ("URL-safe alphabet", |s| URL_SAFE.encode(s)),
            ("URL-safe without padding", |s| URL_SAFE_NO_PAD.encode(s)),
            ("`+` as a space", |s| STANDARD.encode(s).replace('+', " ")),
            ("standard again", |s| STANDARD.encode(s)),
        ];
        for (what, spell) in spellings {
            let other = respelled(&code, &spell(CLIENT_ID), &spell(user));
            assert_eq!(key_of(&other), key, "{what}: {other}");
        }
        // Mixed: one field in each spelling.
        let mixed = respelled(
            &code,
            &STANDARD.encode(CLIENT_ID),
            &URL_SAFE_NO_PAD.encode(user),
        );
        assert_eq!(key_of(&mixed), key);
        // Different spellings really are different texts.
        assert_ne!(
            respelled(
                &code,
                &URL_SAFE_NO_PAD.encode(CLIENT_ID),
                &URL_SAFE_NO_PAD.encode(user)
            ),
            code
        );
    }

    #[test]
    fn replay_key_changes_with_what_the_code_means() {
        let key = key_of(&code_at(NOW));
        let others = [
            make_code(CLIENT_ID, USER, KEY, NOW, 4243),
            make_code(CLIENT_ID, USER, KEY, NOW - 1, 4242),
            make_code(CLIENT_ID, USER, KEY, NOW * 1000, 4242),
            make_code(CLIENT_ID, "bob@example.com", KEY, NOW, 4242),
            // The same instant written with a leading zero is another base string, hence
            // another signature: a key holder made it, it is not a replay.
            raw(
                &STANDARD.encode(CLIENT_ID),
                &STANDARD.encode(USER),
                "01700000000",
                "4242",
                CLIENT_ID,
                USER,
            ),
        ];
        for other in others {
            assert_ne!(key_of(&other), key, "{other}");
        }
        // Another client with the same key and fields.
        let c2 = ClientInfo {
            id: "client-2".into(),
            ..client()
        };
        let other_client = make_code("client-2", USER, KEY, NOW, 4242);
        assert_ne!(verify(&c2, &other_client, NOW).unwrap().replay_key, key);
        // Another key signs the same fields: other signature bytes.
        let c3 = ClientInfo {
            signature_key: Some("another-key".into()),
            ..client()
        };
        let other_key = make_code(CLIENT_ID, USER, "another-key", NOW, 4242);
        assert_ne!(verify(&c3, &other_key, NOW).unwrap().replay_key, key);
        // The key is a function of the code: verifying twice gives the same key.
        assert_eq!(key_of(&code_at(NOW)), key);
    }

    #[test]
    fn validity_window_boundaries() {
        // (timestamp, now, accepted)
        let cases = [
            (NOW, NOW + VALIDITY_SECS, true),
            (NOW, NOW + VALIDITY_SECS + 1, false),
            (NOW, NOW - MAX_FUTURE_SECS, true),
            (NOW, NOW - MAX_FUTURE_SECS - 1, false),
            (NOW * 1000, NOW + VALIDITY_SECS, true),
            (NOW * 1000, NOW + VALIDITY_SECS + 1, false),
            (NOW * 1000, NOW - MAX_FUTURE_SECS - 1, false),
            (0, NOW, false),
            (MILLIS_THRESHOLD, NOW, false),
        ];
        for (ts, now, accepted) in cases {
            match verify(&client(), &code_at(ts), now) {
                Ok(_) => assert!(accepted, "{ts} at {now}"),
                Err(e) => {
                    assert!(!accepted, "{ts} at {now}: {e}");
                    assert_eq!(e.error, InvalidGrant);
                }
            }
        }
    }

    #[test]
    fn client_must_be_allowed_and_keyed() {
        let code = code_at(NOW);
        let no_flow = client_without_flow(flow::SIGNATURE);
        assert_eq!(
            verify(&no_flow, &code, NOW).unwrap_err().error,
            UnauthorizedClient
        );
        for key in [None, Some(String::new())] {
            let c = ClientInfo {
                signature_key: key,
                ..client()
            };
            assert_eq!(
                verify(&c, &code, NOW).unwrap_err().error,
                UnauthorizedClient
            );
        }
        // Checked before the syntax.
        assert_eq!(
            verify(&no_flow, "junk|@@|", NOW).unwrap_err().error,
            UnauthorizedClient
        );
    }

    #[test]
    fn parse_errors_are_invalid_request() {
        let c64 = STANDARD.encode(CLIENT_ID);
        let u64 = STANDARD.encode(USER);
        let good = code_at(NOW);
        let sig = good.rsplit(SEPARATOR).next().unwrap().to_owned();
        let with_sig = |s: &str| [c64.as_str(), &u64, "1700000000", "4242", s].join(SEPARATOR);
        let cases = [
            "a|@@|b".to_owned(),
            format!("{good}|@@|extra"),
            [c64.as_str(), &u64, "1700000000", "4242"].join(SEPARATOR),
            raw("!!!", &u64, "1700000000", "4242", CLIENT_ID, USER),
            raw(&c64, "@@@", "1700000000", "4242", CLIENT_ID, USER),
            raw(
                &STANDARD.encode([0xffu8, 0xfe]),
                &u64,
                "1700000000",
                "4242",
                CLIENT_ID,
                USER,
            ),
            raw("", &u64, "1700000000", "4242", "", USER),
            raw(&c64, "", "1700000000", "4242", CLIENT_ID, ""),
            raw(&c64, &u64, "", "4242", CLIENT_ID, USER),
            raw(&c64, &u64, "-1700000000", "4242", CLIENT_ID, USER),
            raw(&c64, &u64, "+1700000000", "4242", CLIENT_ID, USER),
            raw(&c64, &u64, "1700000000.5", "4242", CLIENT_ID, USER),
            raw(&c64, &u64, " 1700000000", "4242", CLIENT_ID, USER),
            raw(&c64, &u64, "99999999999999999", "4242", CLIENT_ID, USER),
            raw(&c64, &u64, "1700000000", "0", CLIENT_ID, USER),
            raw(&c64, &u64, "1700000000", "1000000", CLIENT_ID, USER),
            raw(&c64, &u64, "1700000000", "-5", CLIENT_ID, USER),
            raw(&c64, &u64, "1700000000", "", CLIENT_ID, USER),
            raw(&c64, &u64, "1700000000", "12a", CLIENT_ID, USER),
            with_sig(&sig.to_uppercase()),
            with_sig(&sig[..39]),
            with_sig(&format!("{sig}0")),
            with_sig(&format!("{}g", &sig[..39])),
            with_sig(""),
        ];
        for code in cases {
            assert_eq!(err(&code, NOW), InvalidRequest, "{code}");
        }
    }

    #[test]
    fn wrong_client_key_or_fields_are_invalid_grant() {
        let other_client = make_code("client-2", USER, KEY, NOW, 4242);
        let other_key = make_code(CLIENT_ID, USER, "other-key", NOW, 4242);
        let good = code_at(NOW);
        let mut parts: Vec<String> = good.split(SEPARATOR).map(str::to_owned).collect();
        // Another user under the original signature.
        parts[1] = STANDARD.encode("root@example.com");
        let other_user = parts.join(SEPARATOR);
        // Another nonce under the original signature.
        let mut parts: Vec<String> = good.split(SEPARATOR).map(str::to_owned).collect();
        parts[3] = "4243".into();
        let other_nonce = parts.join(SEPARATOR);
        // The same instant written differently changes the base string.
        let mut parts: Vec<String> = good.split(SEPARATOR).map(str::to_owned).collect();
        parts[2] = "01700000000".into();
        let other_ts_text = parts.join(SEPARATOR);
        for code in [
            other_client,
            other_key,
            other_user,
            other_nonce,
            other_ts_text,
        ] {
            assert_eq!(err(&code, NOW), InvalidGrant, "{code}");
        }
    }
}
