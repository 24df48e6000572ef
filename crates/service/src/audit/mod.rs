//! The activity log (`docs/audit.md`): every recorded event, and every refused action of
//! interest, as an activity record with the DLI fields, appended to one hash chain per
//! deployment in the transaction of the change (`record`); walking the chain
//! (`verify`); signed checkpoints and retention (`checkpoint`).
//!
//! This module holds what those files share: the eight activity types, the record hash, and the
//! transaction id (the id of the request a record is made in) carried from the HTTP layer to the
//! blocking thread that writes.
//!
//! The area sits below `platform`: `platform::events::record` appends through it, so every
//! event becomes a record in one place.

pub mod checkpoint;
pub mod record;
pub mod verify;

use coffer_store::audit::Activity;
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::sync::Arc;

/// The eight activity types, as the DLI reads name them.
pub const KINDS: [&str; 8] = [
    "folder_changes",
    "file_changes",
    "user_preferences",
    "mail",
    "tasks",
    "comments",
    "kitepoint",
    "admin",
];

/// The hash before the first record of a deployment.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// A record's hash: hex SHA-256 over its predecessor's hash and each field, every field
/// length-prefixed (an absent one marked apart from an empty one), so no two different records
/// encode alike.
pub fn hash(prev: &str, r: &Activity) -> String {
    let mut h = Sha256::new();
    fn put(h: &mut Sha256, v: Option<&str>) {
        match v {
            Some(s) => {
                h.update((s.len() as u64).to_be_bytes());
                h.update(s.as_bytes());
            }
            None => h.update(u64::MAX.to_be_bytes()),
        }
    }
    put(&mut h, Some(prev));
    h.update(r.seq.to_be_bytes());
    h.update(r.created_at.to_be_bytes());
    put(&mut h, Some(&r.event));
    put(&mut h, Some(&r.kind));
    put(&mut h, r.actor_id.as_deref());
    put(&mut h, r.object_id.as_deref());
    put(&mut h, r.object_kind.as_deref());
    put(&mut h, r.object_name.as_deref());
    put(&mut h, r.parent_id.as_deref());
    put(&mut h, Some(&r.message));
    h.update([u8::from(r.successful)]);
    put(&mut h, r.transaction_id.as_deref());
    put(&mut h, Some(&r.users));
    put(&mut h, Some(&r.data));
    hex::encode(h.finalize())
}

/// What a checkpoint's signature signs: the sequence number and the hash there.
pub fn checkpoint_message(seq: i64, hash: &str) -> Vec<u8> {
    format!("coffer-audit-checkpoint\n{seq}\n{hash}").into_bytes()
}

/// Whether `signature` (hex) is the Ed25519 signature of checkpoint `(seq, hash)` by the public
/// key `key` (hex).
pub fn checkpoint_signature_valid(key: &str, seq: i64, hash: &str, signature: &str) -> bool {
    let (Ok(key), Ok(sig)) = (hex::decode(key), hex::decode(signature)) else {
        return false;
    };
    ring::signature::UnparsedPublicKey::new(&ring::signature::ED25519, key)
        .verify(&checkpoint_message(seq, hash), &sig)
        .is_ok()
}

tokio::task_local! {
    /// The id of the request handled by this task (set by the HTTP layer).
    static REQUEST: Arc<str>;
}

thread_local! {
    /// The id of the request a blocking call on this thread serves (see [`carry`]).
    static ON_THREAD: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// Runs `f` as the handling of request `id`: records made for it carry `id` as their
/// `transactionId`.
pub async fn in_request<F: std::future::Future>(id: String, f: F) -> F::Output {
    REQUEST.scope(Arc::from(id), f).await
}

/// The id of the request being served here: the task's, or the one carried to this thread.
pub fn transaction() -> Option<Arc<str>> {
    REQUEST
        .try_with(Arc::clone)
        .ok()
        .or_else(|| ON_THREAD.with(|t| t.borrow().clone()))
}

/// Runs `f` on this thread as part of request `id` (a blocking call or a queued write made for
/// the request runs on another thread than the request's task).
pub fn carry<T>(id: Option<Arc<str>>, f: impl FnOnce() -> T) -> T {
    let before = ON_THREAD.with(|t| t.replace(id));
    struct Restore(Option<Option<Arc<str>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let v = self.0.take().flatten();
            ON_THREAD.with(|t| *t.borrow_mut() = v);
        }
    }
    let _restore = Restore(Some(before));
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec() -> Activity {
        Activity {
            seq: 1,
            created_at: 10,
            event: "filesystem.folder.create".into(),
            kind: "folder_changes".into(),
            actor_id: Some("u".into()),
            object_id: Some("o".into()),
            object_kind: Some("folder".into()),
            object_name: Some("n".into()),
            parent_id: None,
            message: "m".into(),
            successful: true,
            transaction_id: None,
            users: "[]".into(),
            data: "{}".into(),
            prev_hash: GENESIS.into(),
            hash: String::new(),
        }
    }

    #[test]
    fn every_field_and_the_predecessor_change_the_hash() {
        let base = hash(GENESIS, &rec());
        assert_eq!(base.len(), 64);
        assert_ne!(base, hash(&"1".repeat(64), &rec()));
        let mut r = rec();
        r.parent_id = Some(String::new());
        assert_ne!(base, hash(GENESIS, &r), "absent and empty differ");
        let mut r = rec();
        r.successful = false;
        assert_ne!(base, hash(GENESIS, &r));
        let mut r = rec();
        r.seq = 2;
        assert_ne!(base, hash(GENESIS, &r));
        // Moving text between neighbouring fields changes the hash (length prefixes).
        let mut r = rec();
        r.object_id = Some("of".into());
        r.object_kind = Some("older".into());
        assert_ne!(base, hash(GENESIS, &r));
    }

    #[test]
    fn carry_sets_and_restores_the_thread_s_transaction() {
        assert!(transaction().is_none());
        carry(Some(Arc::from("abc")), || {
            assert_eq!(transaction().as_deref(), Some("abc"));
            carry(None, || assert!(transaction().is_none()));
            assert_eq!(transaction().as_deref(), Some("abc"));
        });
        assert!(transaction().is_none());
    }
}
