//! Time-based one-time passwords for two-factor sign-in: TOTP (RFC 6238) over HOTP (RFC 4226),
//! with HMAC-SHA1, 30-second steps and 6 digits — the parameters every authenticator app
//! understands.
//!
//! Like the rest of the crate this is pure: the service passes in the current time (`unix_secs`)
//! and the step of the last accepted code, and stores the step that [`verify`] returns so that a
//! code can never be used twice.
//!
//! Secrets travel as RFC 4648 base32 (uppercase, no padding), which is what the `otpauth://` URI
//! of [`otpauth_uri`] and manual entry in authenticator apps expect.

use hmac::{Hmac, Mac};
use rand::rngs::OsRng;
use rand::RngCore;
use sha1::Sha1;
use std::fmt;
use subtle::ConstantTimeEq;

/// Length of a TOTP step in seconds.
pub const STEP_SECS: i64 = 30;
/// Number of digits of a TOTP code.
pub const DIGITS: u32 = 6;
/// Length of a generated secret in bytes (160 bits, the HMAC-SHA1 output size).
pub const SECRET_LEN: usize = 20;
/// Shortest secret accepted by [`TotpSecret::from_base32`] (128 bits, RFC 4226 §4 R6).
pub const MIN_SECRET_LEN: usize = 16;

/// A shared TOTP secret. `Debug` never prints the key.
#[derive(Clone)]
pub struct TotpSecret(Vec<u8>);

impl TotpSecret {
    /// A fresh secret of [`SECRET_LEN`] random bytes from the operating system.
    pub fn generate() -> TotpSecret {
        let mut bytes = vec![0u8; SECRET_LEN];
        OsRng.fill_bytes(&mut bytes);
        TotpSecret(bytes)
    }

    /// Parses base32 (case-insensitive, spaces and `=` padding ignored) and requires at least
    /// [`MIN_SECRET_LEN`] bytes. The error never contains the secret.
    pub fn from_base32(text: &str) -> Result<Self, String> {
        let bytes = base32_decode(text)?;
        if bytes.len() < MIN_SECRET_LEN {
            return Err(format!(
                "TOTP secret too short: {} bytes, at least {MIN_SECRET_LEN} required",
                bytes.len()
            ));
        }
        Ok(TotpSecret(bytes))
    }

    /// The secret as uppercase base32 without padding.
    pub fn to_base32(&self) -> String {
        base32_encode(&self.0)
    }
}

impl fmt::Debug for TotpSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TotpSecret(<redacted>)")
    }
}

/// Why [`verify`] refused a code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TotpError {
    /// Not exactly six ASCII digits.
    Malformed,
    /// Well-formed but matches none of the current step and its two neighbours.
    Invalid,
    /// Matches a step at or before the last accepted one.
    Replayed,
}

impl fmt::Display for TotpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TotpError::Malformed => "the code must be exactly 6 digits",
            TotpError::Invalid => "the code is not valid",
            TotpError::Replayed => "the code has already been used",
        })
    }
}

impl std::error::Error for TotpError {}

/// HOTP (RFC 4226 §5): HMAC-SHA1 of the big-endian counter, dynamic truncation to 31 bits, and
/// the last `digits` decimal digits of that number (all of it when `digits` ≥ 10).
pub fn hotp(key: &[u8], counter: u64, digits: u32) -> u32 {
    // HMAC accepts keys of any length, so this cannot fail.
    let mut mac = Hmac::<Sha1>::new_from_slice(key).expect("HMAC accepts keys of any length");
    mac.update(&counter.to_be_bytes());
    let hash = mac.finalize().into_bytes();
    let offset = usize::from(hash[hash.len() - 1] & 0x0f);
    let binary = u32::from_be_bytes([
        hash[offset] & 0x7f,
        hash[offset + 1],
        hash[offset + 2],
        hash[offset + 3],
    ]);
    match 10u32.checked_pow(digits) {
        Some(modulus) => binary % modulus,
        None => binary,
    }
}

/// The step that contains `unix_secs` (floor division, so negative times round down).
fn step_of(unix_secs: i64) -> i64 {
    unix_secs.div_euclid(STEP_SECS)
}

/// The zero-padded code of a step; `None` before the epoch, where TOTP is undefined.
fn code_for_step(secret: &TotpSecret, step: i64) -> Option<String> {
    let counter = u64::try_from(step).ok()?;
    Some(format!(
        "{:0width$}",
        hotp(&secret.0, counter, DIGITS),
        width = DIGITS as usize
    ))
}

/// The 6-digit, zero-padded code of the 30-second step containing `unix_secs`. Times before the
/// epoch give the code of step 0.
pub fn code_at(secret: &TotpSecret, unix_secs: i64) -> String {
    code_for_step(secret, step_of(unix_secs).max(0)).unwrap_or_default()
}

/// Checks `code` against the step containing `unix_secs` and the steps just before and after
/// (one step of clock skew either way), comparing in constant time.
///
/// `last_used_step` is the step of the last code accepted for this secret: a match at or before
/// it is refused as [`TotpError::Replayed`]. On success the matched step is returned; the caller
/// must store it as the new `last_used_step`.
///
/// The code must be exactly six ASCII digits; callers that accept input with spaces should strip
/// them first.
pub fn verify(
    secret: &TotpSecret,
    code: &str,
    unix_secs: i64,
    last_used_step: Option<i64>,
) -> Result<i64, TotpError> {
    if code.len() != DIGITS as usize || !code.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TotpError::Malformed);
    }
    let now = step_of(unix_secs);
    let mut accepted = None;
    let mut replayed = false;
    // All three candidates are always computed and compared, whatever matches.
    for step in [now - 1, now, now + 1] {
        let Some(expected) = code_for_step(secret, step) else {
            continue;
        };
        if bool::from(expected.as_bytes().ct_eq(code.as_bytes())) {
            if last_used_step.is_some_and(|last| step <= last) {
                replayed = true;
            } else {
                // Ascending order: the latest fresh match wins.
                accepted = Some(step);
            }
        }
    }
    match accepted {
        Some(step) => Ok(step),
        None if replayed => Err(TotpError::Replayed),
        None => Err(TotpError::Invalid),
    }
}

/// The `otpauth://totp/` key URI that authenticator apps read from a QR code:
/// `otpauth://totp/{issuer}:{account}?secret=…&issuer=…&algorithm=SHA1&digits=6&period=30`.
///
/// The issuer and account are percent-encoded outside the RFC 3986 unreserved set (a space
/// becomes `%20`, never `+`, and a colon inside either becomes `%3A`). An empty issuer gives
/// the label `{account}` and no `issuer` parameter.
pub fn otpauth_uri(secret: &TotpSecret, issuer: &str, account: &str) -> String {
    let secret = secret.to_base32();
    let account = percent_encode(account);
    let tail = format!("algorithm=SHA1&digits={DIGITS}&period={STEP_SECS}");
    if issuer.is_empty() {
        format!("otpauth://totp/{account}?secret={secret}&{tail}")
    } else {
        let issuer = percent_encode(issuer);
        format!("otpauth://totp/{issuer}:{account}?secret={secret}&issuer={issuer}&{tail}")
    }
}

/// Percent-encodes every UTF-8 byte outside the RFC 3986 unreserved set
/// (`A–Z a–z 0–9 - . _ ~`), with uppercase hex digits.
fn percent_encode(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    out
}

/// The RFC 4648 base32 alphabet.
const BASE32_ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32, uppercase, without padding.
fn base32_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity((data.len() * 8).div_ceil(5));
    let mut buffer: u32 = 0;
    let mut bits: u32 = 0;
    for &byte in data {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(
                BASE32_ALPHABET[((buffer >> bits) & 0x1f) as usize],
            ));
        }
        buffer &= (1 << bits) - 1;
    }
    if bits > 0 {
        out.push(char::from(
            BASE32_ALPHABET[((buffer << (5 - bits)) & 0x1f) as usize],
        ));
    }
    out
}

/// RFC 4648 base32, case-insensitive; ASCII whitespace anywhere and `=` padding at the end are
/// ignored. Errors never quote the input.
fn base32_decode(text: &str) -> Result<Vec<u8>, String> {
    let compact: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    let end = compact
        .iter()
        .rposition(|&b| b != b'=')
        .map_or(0, |i| i + 1);
    let symbols = &compact[..end];
    // 8 symbols carry 5 bytes; 1, 3 or 6 leftover symbols cannot end a whole byte.
    if matches!(symbols.len() % 8, 1 | 3 | 6) {
        return Err("invalid base32 length".to_string());
    }
    let mut out = Vec::with_capacity(symbols.len() * 5 / 8);
    let mut buffer: u32 = 0;
    let mut bits: u32 = 0;
    for (i, &symbol) in symbols.iter().enumerate() {
        let value = match symbol.to_ascii_uppercase() {
            c @ b'A'..=b'Z' => c - b'A',
            c @ b'2'..=b'7' => c - b'2' + 26,
            _ => return Err(format!("invalid base32 character at position {i}")),
        };
        buffer = (buffer << 5) | u32::from(value);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
        }
        buffer &= (1 << bits) - 1;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RFC_KEY: &[u8] = b"12345678901234567890";

    fn rfc_secret() -> TotpSecret {
        TotpSecret(RFC_KEY.to_vec())
    }

    #[test]
    fn hotp_matches_rfc_4226_appendix_d() {
        let expected = [
            755224, 287082, 359152, 969429, 338314, 254676, 287922, 162583, 399871, 520489,
        ];
        for (counter, want) in expected.into_iter().enumerate() {
            assert_eq!(hotp(RFC_KEY, counter as u64, 6), want, "counter {counter}");
        }
    }

    #[test]
    fn totp_matches_rfc_6238_appendix_b_sha1() {
        let vectors: [(i64, &str); 6] = [
            (59, "94287082"),
            (1111111109, "07081804"),
            (1111111111, "14050471"),
            (1234567890, "89005924"),
            (2000000000, "69279037"),
            (20000000000, "65353130"),
        ];
        let secret = rfc_secret();
        for (time, want) in vectors {
            let step = u64::try_from(step_of(time)).unwrap();
            assert_eq!(
                format!("{:08}", hotp(RFC_KEY, step, 8)),
                want,
                "time {time}"
            );
            // The 6-digit code is the last six digits of the 8-digit one.
            assert_eq!(code_at(&secret, time), want[2..], "time {time}");
        }
    }

    #[test]
    fn codes_are_zero_padded_to_six_digits() {
        // 07081804 → 081804: the leading zero must survive.
        assert_eq!(code_at(&rfc_secret(), 1111111109), "081804");
        let secret = TotpSecret::generate();
        for t in (0..200).map(|i| 1_700_000_000 + i * STEP_SECS) {
            let code = code_at(&secret, t);
            assert_eq!(code.len(), 6, "{code}");
            assert!(code.bytes().all(|b| b.is_ascii_digit()), "{code}");
        }
    }

    #[test]
    fn code_is_constant_within_a_step() {
        let secret = rfc_secret();
        assert_eq!(code_at(&secret, 30), code_at(&secret, 59));
        assert_ne!(code_at(&secret, 59), code_at(&secret, 60));
        assert_eq!(code_at(&secret, -5), code_at(&secret, 0));
    }

    #[test]
    fn hotp_digits_beyond_nine_keep_the_whole_value() {
        let full = hotp(RFC_KEY, 0, 10);
        assert!(full < 1 << 31);
        assert_eq!(full % 1_000_000, 755224);
        assert_eq!(hotp(RFC_KEY, 0, 32), full);
    }

    #[test]
    fn base32_rfc_4648_vectors_without_padding() {
        let vectors: [(&[u8], &str); 7] = [
            (b"", ""),
            (b"f", "MY"),
            (b"fo", "MZXQ"),
            (b"foo", "MZXW6"),
            (b"foob", "MZXW6YQ"),
            (b"fooba", "MZXW6YTB"),
            (b"foobar", "MZXW6YTBOI"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(base32_encode(plain), encoded);
            assert_eq!(base32_decode(encoded).unwrap(), plain, "{encoded}");
        }
    }

    #[test]
    fn base32_decoding_is_tolerant() {
        assert_eq!(base32_decode("MZXW6YQ=").unwrap(), b"foob");
        assert_eq!(base32_decode("MY======").unwrap(), b"f");
        assert_eq!(base32_decode("mzxw6ytboi").unwrap(), b"foobar");
        assert_eq!(base32_decode("mzxw 6ytb oi").unwrap(), b"foobar");
        assert_eq!(base32_decode(" MZXW\t6YTB\nOI== ").unwrap(), b"foobar");
    }

    #[test]
    fn base32_rejects_bad_input() {
        assert!(base32_decode("MZXW1").is_err(), "1 is not in the alphabet");
        assert!(base32_decode("MZXW8").is_err(), "8 is not in the alphabet");
        assert!(base32_decode("MZ=XW").is_err(), "padding only at the end");
        assert!(base32_decode("MZX").is_err(), "3 symbols cannot end a byte");
        assert!(base32_decode("M").is_err());
        assert!(base32_decode("MZXW6Y").is_err());
        // The error does not echo the input.
        let err = base32_decode("SECRET!!").unwrap_err();
        assert!(!err.contains("SECRET"), "{err}");
    }

    #[test]
    fn base32_round_trips() {
        for len in 0..=64 {
            let mut bytes = vec![0u8; len];
            OsRng.fill_bytes(&mut bytes);
            let encoded = base32_encode(&bytes);
            assert!(!encoded.contains('='), "{encoded}");
            assert_eq!(base32_decode(&encoded).unwrap(), bytes, "{encoded}");
            assert_eq!(
                base32_decode(&encoded.to_lowercase()).unwrap(),
                bytes,
                "{encoded}"
            );
        }
    }

    #[test]
    fn secrets_generate_parse_and_hide() {
        let secret = TotpSecret::generate();
        assert_eq!(secret.0.len(), SECRET_LEN);
        let encoded = secret.to_base32();
        assert_eq!(encoded.len(), 32);
        let parsed = TotpSecret::from_base32(&encoded).unwrap();
        assert_eq!(parsed.0, secret.0);
        assert_ne!(TotpSecret::generate().0, secret.0);

        let debug = format!("{secret:?}");
        assert!(!debug.contains(&encoded), "{debug}");
        assert!(!debug.contains(&hex::encode(&secret.0)), "{debug}");
        assert_eq!(debug, "TotpSecret(<redacted>)");
    }

    #[test]
    fn from_base32_requires_sixteen_bytes() {
        assert_eq!(
            TotpSecret::from_base32("GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ")
                .unwrap()
                .0,
            RFC_KEY
        );
        let sixteen = base32_encode(&[7u8; 16]);
        assert_eq!(TotpSecret::from_base32(&sixteen).unwrap().0, [7u8; 16]);
        let fifteen = base32_encode(&[7u8; 15]);
        assert!(TotpSecret::from_base32(&fifteen).is_err());
        assert!(TotpSecret::from_base32("").is_err());
        assert!(TotpSecret::from_base32("not base32 at all!").is_err());
        // Spaced, lowercase input as authenticator apps display it.
        assert_eq!(
            TotpSecret::from_base32("gezd gnbv gy3t qojq gezd gnbv gy3t qojq")
                .unwrap()
                .0,
            RFC_KEY
        );
    }

    #[test]
    fn verify_accepts_one_step_of_skew_either_way() {
        let secret = rfc_secret();
        let now = 1_700_000_015;
        let step = step_of(now);
        for delta in [-1, 0, 1] {
            let code = code_at(&secret, now + delta * STEP_SECS);
            assert_eq!(verify(&secret, &code, now, None), Ok(step + delta));
        }
        for delta in [-2, 2] {
            let code = code_at(&secret, now + delta * STEP_SECS);
            assert_eq!(
                verify(&secret, &code, now, None),
                Err(TotpError::Invalid),
                "delta {delta}"
            );
        }
        let other = TotpSecret::generate();
        assert_eq!(
            verify(&other, &code_at(&secret, now), now, None),
            Err(TotpError::Invalid)
        );
    }

    #[test]
    fn verify_refuses_replay() {
        let secret = rfc_secret();
        let now = 1_700_000_015;
        let code = code_at(&secret, now);
        let used = verify(&secret, &code, now, None).unwrap();
        assert_eq!(
            verify(&secret, &code, now, Some(used)),
            Err(TotpError::Replayed)
        );
        // Still refused in the next step, where the same code is within the skew window.
        assert_eq!(
            verify(&secret, &code, now + STEP_SECS, Some(used)),
            Err(TotpError::Replayed)
        );
        // An earlier step's code is refused once a later step was used.
        let previous = code_at(&secret, now - STEP_SECS);
        assert_eq!(
            verify(&secret, &previous, now, Some(used)),
            Err(TotpError::Replayed)
        );
        // The next step's code is still fresh.
        let next = code_at(&secret, now + STEP_SECS);
        assert_eq!(
            verify(&secret, &next, now + STEP_SECS, Some(used)),
            Ok(used + 1)
        );
        // A wrong code stays Invalid, not Replayed.
        let wrong = if code == "000000" { "000001" } else { "000000" };
        assert_eq!(
            verify(&secret, wrong, now, Some(used)),
            Err(TotpError::Invalid)
        );
    }

    #[test]
    fn verify_refuses_malformed_codes() {
        let secret = rfc_secret();
        let now = 59;
        assert_eq!(verify(&secret, "287082", now, None), Ok(1));
        for code in [
            "12345",
            "1234567",
            "12a456",
            "",
            " 287082",
            "287 082",
            "２８７０８２",
            "-28708",
        ] {
            assert_eq!(
                verify(&secret, code, now, None),
                Err(TotpError::Malformed),
                "{code:?}"
            );
        }
    }

    #[test]
    fn verify_near_the_epoch_skips_negative_steps() {
        let secret = rfc_secret();
        let code0 = code_at(&secret, 0);
        assert_eq!(verify(&secret, &code0, 10, None), Ok(0));
        assert_eq!(verify(&secret, &code0, 10, Some(-1)), Ok(0));
    }

    #[test]
    fn otpauth_uri_shape() {
        let secret = rfc_secret();
        assert_eq!(
            otpauth_uri(&secret, "Coffer", "alice@example.com"),
            "otpauth://totp/Coffer:alice%40example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\
             &issuer=Coffer&algorithm=SHA1&digits=6&period=30"
        );
        assert_eq!(
            otpauth_uri(&secret, "Acme Co: Vault", "Bob Smith"),
            "otpauth://totp/Acme%20Co%3A%20Vault:Bob%20Smith?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\
             &issuer=Acme%20Co%3A%20Vault&algorithm=SHA1&digits=6&period=30"
        );
        assert_eq!(
            otpauth_uri(&secret, "", "bob"),
            "otpauth://totp/bob?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ\
             &algorithm=SHA1&digits=6&period=30"
        );
        let uri = otpauth_uri(&secret, "Café & Co", "a+b/c?d");
        assert!(!uri.contains('+') && !uri.contains(' '), "{uri}");
        assert!(uri.starts_with("otpauth://totp/Caf%C3%A9%20%26%20Co:a%2Bb%2Fc%3Fd?"));
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            TotpError::Malformed.to_string(),
            "the code must be exactly 6 digits"
        );
        assert_eq!(TotpError::Invalid.to_string(), "the code is not valid");
        assert_eq!(
            TotpError::Replayed.to_string(),
            "the code has already been used"
        );
    }
}
