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

/// Length of the time-ordered prefix of [`new_ordered_token`]: 12 hex digits of Unix
/// milliseconds and 8 random hex digits.
const ORDER_PREFIX: usize = 20;

/// A token that sorts by issue time: `<20 hex digits: milliseconds, random>.<new_token()>`. Its
/// storage key ([`hash_token`]) starts with the same prefix, so tokens issued one after another
/// land side by side in the key's b-tree (and in every index that ends with the key) instead of
/// at random places: a batch of inserts writes a few pages, not a few pages each. The prefix is
/// not secret (it tells when the token was issued); the 256 random bits after it are.
pub fn new_ordered_token() -> String {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0);
    format!(
        "{:012x}{:08x}.{}",
        millis & 0xffff_ffff_ffff,
        OsRng.next_u32(),
        new_token()
    )
}

/// The time-ordered prefix of a token made by [`new_ordered_token`].
fn order_prefix(token: &str) -> Option<&str> {
    let prefix = token.get(..ORDER_PREFIX)?;
    let ordered = token.as_bytes().get(ORDER_PREFIX) == Some(&b'.')
        && prefix
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    ordered.then_some(prefix)
}

/// The key under which a token is stored: SHA-256 of the token as lowercase hex, after the
/// token's time-ordered prefix when it has one. Tokens carry 256 random bits, so a fast unsalted
/// hash is enough: it makes a leaked table useless without making lookups by hash impossible.
pub fn hash_token(token: &str) -> String {
    let digest = hex::encode(Sha256::digest(token.as_bytes()));
    match order_prefix(token) {
        Some(prefix) => format!("{prefix}.{digest}"),
        None => digest,
    }
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
    fn ordered_tokens_sort_by_issue_time_and_keep_their_order_in_the_key() {
        let a = new_ordered_token();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_ordered_token();
        assert!(a < b, "{a} {b}");
        assert_eq!(a.len(), 20 + 1 + 43);
        let (ka, kb) = (hash_token(&a), hash_token(&b));
        assert!(ka < kb);
        assert!(ka.starts_with(&a[..21]));
        // The key is the prefix and the hash of the whole token: it holds no secret.
        assert_eq!(&ka[21..], hex::encode(Sha256::digest(a.as_bytes())));
        assert!(!ka.contains(&a[21..]));
        assert!(verify_token(&a, &ka));
        assert!(!verify_token(&b, &ka));
        // A token that only looks ordered in part is hashed whole.
        assert_eq!(hash_token("0123456789abcdefXXXX.x").len(), 64);
        assert_eq!(hash_token("0123456789abcdef0123x").len(), 64);
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
