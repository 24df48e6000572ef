//! Signing a delivery the Standard Webhooks way (`webhook-id`, `webhook-timestamp`,
//! `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`) and with Coffer's own
//! `X-Coffer-Signature: sha256=<hex HMAC-SHA256 of the body>`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// The signing key of a webhook secret: the base64-decoded remainder of a `whsec_…` secret,
/// else the secret's bytes.
pub fn key(secret: &str) -> Vec<u8> {
    secret
        .strip_prefix("whsec_")
        .and_then(|rest| STANDARD.decode(rest).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec())
}

fn mac(key: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC takes keys of any length");
    for p in parts {
        m.update(p);
    }
    m.finalize().into_bytes().to_vec()
}

/// The `webhook-signature` header value.
pub fn standard(secret: &str, id: &str, timestamp: i64, body: &str) -> String {
    let sig = mac(
        &key(secret),
        &[
            id.as_bytes(),
            b".",
            timestamp.to_string().as_bytes(),
            b".",
            body.as_bytes(),
        ],
    );
    format!("v1,{}", STANDARD.encode(sig))
}

/// The `X-Coffer-Signature` header value.
pub fn coffer(secret: &str, body: &str) -> String {
    format!(
        "sha256={}",
        hex::encode(mac(&key(secret), &[body.as_bytes()]))
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_derivation() {
        assert_eq!(key("whsec_c2VjcmV0"), b"secret");
        assert_eq!(key("plain-secret"), b"plain-secret");
        // Not valid base64 after the prefix: the secret's own bytes.
        assert_eq!(key("whsec_!!!"), b"whsec_!!!");
    }

    #[test]
    fn standard_webhooks_example() {
        // The example of the Standard Webhooks specification.
        let sig = standard(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            1614265330,
            r#"{"test": 2432232314}"#,
        );
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn coffer_signature_is_hex_hmac_of_the_body() {
        let s = coffer("whsec_c2VjcmV0", "{}");
        assert!(s.starts_with("sha256="));
        assert_eq!(s.len(), "sha256=".len() + 64);
        assert_ne!(s, coffer("whsec_b3RoZXI=", "{}"));
    }
}
