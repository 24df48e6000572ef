//! Signed checkpoints and retention. A checkpoint is the hash at a sequence number, signed with
//! an Ed25519 key kept in a file outside the database: whoever rewrites the log wholesale (every
//! hash recomputed, the chain head too) cannot sign a matching checkpoint. Retention removes
//! whole segments, up to the newest checkpoint older than the retention period, and the kept
//! chain starts from that checkpoint's hash.

use crate::{now, Ctx, Error, Result};
use coffer_store::audit::{self as store, Checkpoint};
use ring::signature::{Ed25519KeyPair, KeyPair};
use std::path::Path;

/// The signing key of the checkpoints.
pub struct Signer {
    pair: Ed25519KeyPair,
}

impl Signer {
    /// Reads the key file (base64 PKCS#8), making a new key there when the file does not exist
    /// (readable by its owner only).
    pub fn open(path: &Path) -> Result<Signer> {
        use base64::Engine;
        let b64 = base64::engine::general_purpose::STANDARD;
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let doc = Ed25519KeyPair::generate_pkcs8(&ring::rand::SystemRandom::new())
                    .map_err(|_| Error::internal_in("making the audit key", "no randomness"))?;
                let text = b64.encode(doc.as_ref());
                write_private(path, &text)
                    .map_err(|e| Error::internal_in("writing the audit key file", e))?;
                text
            }
            Err(e) => return Err(Error::internal_in("reading the audit key file", e)),
        };
        let der = b64
            .decode(text.trim())
            .map_err(|e| Error::internal_in("reading the audit key file", e))?;
        let pair = Ed25519KeyPair::from_pkcs8(&der)
            .map_err(|_| Error::internal_in("reading the audit key file", "not an Ed25519 key"))?;
        Ok(Signer { pair })
    }

    /// The public key, hex.
    pub fn public_key(&self) -> String {
        hex::encode(self.pair.public_key().as_ref())
    }

    fn sign(&self, seq: i64, hash: &str) -> String {
        hex::encode(
            self.pair
                .sign(&super::checkpoint_message(seq, hash))
                .as_ref(),
        )
    }
}

fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

/// Signs the chain head as a checkpoint, unless it is signed already or the log is empty.
pub fn checkpoint(ctx: &Ctx, signer: &Signer) -> Result<Option<Checkpoint>> {
    ctx.write(|conn| {
        let start = store::chain(conn)?;
        let head = store::head(conn)?;
        if head.seq < start.first_seq {
            return Ok(None);
        }
        if store::checkpoints(conn)?
            .last()
            .is_some_and(|c| c.seq >= head.seq)
        {
            return Ok(None);
        }
        let c = Checkpoint {
            seq: head.seq,
            signature: signer.sign(head.seq, &head.hash),
            hash: head.hash,
            created_at: now(),
            public_key: signer.public_key(),
        };
        store::insert_checkpoint(conn, &c)?;
        Ok(Some(c))
    })
}

/// Removes the records older than `days` days, whole segments up to the newest checkpoint
/// before then (nothing when there is none). Returns how many records went.
pub fn expire(ctx: &Ctx, days: i64) -> Result<usize> {
    let cutoff = now() - days.saturating_mul(86_400);
    ctx.write(|conn| match store::last_checkpoint_before(conn, cutoff)? {
        Some(c) => Ok(store::expire_through(conn, &c)?),
        None => Ok(0),
    })
}
