//! A 64 MiB upload and download through each backend with memory staying flat: the content is
//! generated as it streams and never held whole, and the process's peak resident memory must
//! grow by far less than the content's size. (Its own test binary, so that no other test's
//! memory counts.)

mod common;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use coffer_storage::{StorageError, READ_CHUNK};
use common::{backends, note};
use futures_util::StreamExt;
use md5::Md5;
use sha3::{Digest, Sha3_256};

const SIZE: usize = 64 * 1024 * 1024;
const PIECE: usize = 256 * 1024;
/// Peak memory may grow by at most this much while 64 MiB pass through (S3 buffers up to three
/// 8 MiB parts).
const GROWTH_LIMIT: u64 = 40 * 1024 * 1024;

/// A kibibyte figure from /proc/self/status.
fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the peak resident set size to the current one (Linux); false when not possible.
fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// `SIZE` bytes of generated content as a stream of `PIECE`-sized pieces, hashing what it
/// yields into `expected` so that the content never exists whole.
fn generated(
    expected: Arc<Mutex<(Md5, Sha3_256)>>,
) -> impl futures_util::Stream<Item = Result<Bytes, StorageError>> + Unpin {
    let state = 0x2545_F491_4F6C_DD1Du64;
    Box::pin(futures_util::stream::unfold(
        (0usize, state),
        move |(sent, mut state)| {
            let expected = expected.clone();
            async move {
                if sent == SIZE {
                    return None;
                }
                let mut piece = Vec::with_capacity(PIECE);
                while piece.len() < PIECE {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    piece.extend_from_slice(&state.to_le_bytes());
                }
                {
                    let mut hashers = expected.lock().unwrap();
                    hashers.0.update(&piece);
                    hashers.1.update(&piece);
                }
                Some((Ok(Bytes::from(piece)), (sent + PIECE, state)))
            }
        },
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_mib_stream_with_flat_memory() {
    for b in backends("large") {
        let expected = Arc::new(Mutex::new((Md5::new(), Sha3_256::new())));
        let measured = reset_peak();
        let before = status_kib("VmRSS:").unwrap_or(0);
        let started = std::time::Instant::now();

        let out = b
            .store
            .put_stream(generated(expected.clone()), Some(SIZE as u64))
            .await
            .unwrap();
        let put_took = started.elapsed();
        let (md5, sha3) = {
            let hashers = expected.lock().unwrap();
            (
                hex::encode(hashers.0.clone().finalize()),
                hex::encode(hashers.1.clone().finalize()),
            )
        };
        assert_eq!(out.size, SIZE as u64, "{}", b.name);
        assert_eq!(
            (out.md5.as_str(), out.sha3_256.as_str()),
            (md5.as_str(), sha3.as_str())
        );
        assert!(out.created);

        // Read it back, hashing as the pieces pass.
        let read = b.store.get(&out.key, None).await.unwrap();
        assert_eq!(read.size, SIZE as u64);
        let mut stream = read.stream;
        let mut check = Sha3_256::new();
        let (mut total, mut largest) = (0usize, 0usize);
        while let Some(piece) = stream.next().await {
            let piece = piece.unwrap();
            total += piece.len();
            largest = largest.max(piece.len());
            check.update(&piece);
        }
        assert_eq!(total, SIZE);
        assert_eq!(hex::encode(check.finalize()), sha3, "{}", b.name);
        if b.name == "local" {
            assert!(largest <= READ_CHUNK, "local pieces are bounded: {largest}");
        }

        let peak = status_kib("VmHWM:").unwrap_or(0);
        let growth = peak.saturating_sub(before) * 1024;
        note(&format!(
            "large/{}: 64 MiB put in {:.1?}, put+get in {:.1?}; peak RSS grew by {} KiB{}",
            b.name,
            put_took,
            started.elapsed(),
            growth / 1024,
            if measured {
                ""
            } else {
                " (peak not resettable: not checked)"
            }
        ));
        if measured {
            assert!(
                growth < GROWTH_LIMIT,
                "{}: peak memory grew by {growth} bytes for a 64 MiB stream",
                b.name
            );
        }
        assert_eq!(b.temporaries().await, 0, "{}", b.name);
    }
}
