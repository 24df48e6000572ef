//! Opaque secrets: generating tokens and codes, and the hash under which tokens, codes and
//! client secrets are stored (the plain value is never stored).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// 32 random bytes from the operating system as URL-safe base64 without padding (43 chars).
pub fn new_token() -> String {
    let mut bytes = [0u8; 32];
    OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// SHA-256 of the token as lowercase hex. Tokens carry 256 random bits, so a fast unsalted hash
/// is enough: it makes a leaked table useless without making lookups by hash impossible.
pub fn hash_token(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Whether `hash_token(presented) == stored_hash`, compared in constant time.
pub fn verify_token(presented: &str, stored_hash: &str) -> bool {
    hash_token(presented)
        .as_bytes()
        .ct_eq(stored_hash.as_bytes())
        .into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn tokens_are_43_url_safe_chars_and_distinct() {
        let mut seen = HashSet::new();
        for _ in 0..100 {
            let t = new_token();
            assert_eq!(t.len(), 43, "{t}");
            assert!(
                t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{t}"
            );
            assert!(seen.insert(t));
        }
    }

    #[test]
    fn hash_is_lowercase_sha256_hex() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(hash_token("").len(), 64);
    }

    #[test]
    fn verifies_against_the_stored_hash() {
        let t = new_token();
        let stored = hash_token(&t);
        assert!(verify_token(&t, &stored));
        assert!(!verify_token(&new_token(), &stored));
        assert!(!verify_token(&t, &stored.to_uppercase()));
        assert!(!verify_token(&t, &stored[..63]));
        assert!(!verify_token(&t, ""));
        // The stored value is a hash, never the token itself.
        assert!(!verify_token(&t, &t));
    }
}
