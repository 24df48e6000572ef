//! PKCE (RFC 7636): the syntax of challenges and verifiers, and the S256 check. The `plain`
//! method is refused elsewhere (see `authorize::check`), so only S256 exists here.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The only accepted `code_challenge_method`.
pub const METHOD_S256: &str = "S256";

/// RFC 7636 syntax: 43 to 128 characters of `[A-Za-z0-9-._~]`.
pub fn valid_challenge(s: &str) -> bool {
    (43..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// Verifiers have the same syntax as challenges.
pub fn valid_verifier(s: &str) -> bool {
    valid_challenge(s)
}

/// Whether `BASE64URL(SHA256(verifier)) == challenge`, compared in constant time.
pub fn verify_s256(verifier: &str, challenge: &str) -> bool {
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    computed.as_bytes().ct_eq(challenge.as_bytes()).into()
}

/// The S256 challenge of a verifier (for clients and tests).
pub fn challenge_s256(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc7636_appendix_b_example() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(valid_verifier(verifier));
        assert!(valid_challenge(challenge));
        assert!(verify_s256(verifier, challenge));
        assert_eq!(challenge_s256(verifier), challenge);
    }

    #[test]
    fn mismatch_is_refused() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(!verify_s256(
            "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXx",
            challenge
        ));
        // `plain` would compare the verifier itself: that must never pass.
        assert!(!verify_s256(verifier, verifier));
        assert!(!verify_s256(verifier, &challenge[..42]));
        assert!(!verify_s256(verifier, ""));
    }

    #[test]
    fn syntax() {
        let cases = [
            ("a".repeat(42), false),
            ("a".repeat(43), true),
            ("a".repeat(128), true),
            ("a".repeat(129), false),
            (format!("{}-._~", "A0".repeat(20)), true),
            (format!("{}+", "a".repeat(43)), false),
            (format!("{}/", "a".repeat(43)), false),
            (format!("{}=", "a".repeat(43)), false),
            (format!("{} ", "a".repeat(43)), false),
            (format!("{}é", "a".repeat(43)), false),
            (String::new(), false),
        ];
        for (s, ok) in cases {
            assert_eq!(valid_challenge(&s), ok, "{s}");
            assert_eq!(valid_verifier(&s), ok, "{s}");
        }
    }
}
