//! The blob store against real engines: a local directory always, an S3 API server when
//! `COFFER_TEST_S3_URL` is set. Every case runs on every backend.

mod common;

use std::time::{Duration, SystemTime};

use bytes::Bytes;
use coffer_storage::{BlobKey, BlobStore, StorageError, READ_CHUNK};
use common::{backends, expected, filler, pieces, read_all};
use futures_util::StreamExt;

const EMPTY_MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";
const EMPTY_SHA3: &str = "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a";
const ABC_MD5: &str = "900150983cd24fb0d6963f7d28e17f72";
const ABC_SHA3: &str = "3a985da74fe225b2045c172d6bd390bd855f086e3e9d525b46bfe24511431532";

#[tokio::test]
async fn fingerprints_of_known_content() {
    for b in backends("fingerprints") {
        let empty = b.store.put_bytes(Bytes::new()).await.unwrap();
        assert_eq!(empty.md5, EMPTY_MD5, "{}", b.name);
        assert_eq!(empty.sha3_256, EMPTY_SHA3, "{}", b.name);
        assert_eq!(empty.key.as_str(), EMPTY_SHA3);
        assert_eq!(empty.size, 0);
        assert!(empty.created);

        let abc = b
            .store
            .put_stream(pieces(b"abc", 1), Some(3))
            .await
            .unwrap();
        assert_eq!(abc.md5, ABC_MD5, "{}", b.name);
        assert_eq!(abc.sha3_256, ABC_SHA3, "{}", b.name);
        assert_eq!(abc.key.to_string(), ABC_SHA3);
        assert_eq!(abc.size, 3);

        assert!(b.store.exists(&abc.key).await.unwrap());
        assert_eq!(
            read_all(&b.store, &abc.key, None).await.unwrap(),
            (3, b"abc".to_vec())
        );
        assert_eq!(
            read_all(&b.store, &empty.key, None).await.unwrap(),
            (0, Vec::new())
        );

        let mut keys = b.store.list_keys().await.unwrap();
        keys.sort();
        let mut want = vec![abc.key.clone(), empty.key.clone()];
        want.sort();
        assert_eq!(keys, want, "{}", b.name);
        assert_eq!(b.temporaries().await, 0, "{}", b.name);
    }
}

#[tokio::test]
async fn identical_content_is_stored_once() {
    for b in backends("dedup") {
        let data = filler(300_000, 1);
        let first = b.store.put_bytes(Bytes::from(data.clone())).await.unwrap();
        assert!(first.created, "{}", b.name);
        let second = b
            .store
            .put_stream(pieces(&data, 7_777), None)
            .await
            .unwrap();
        assert!(!second.created, "{}", b.name);
        assert_eq!(second.key, first.key);
        assert_eq!(second.md5, first.md5);
        assert_eq!(second.size, first.size);
        assert_eq!(b.store.list_keys().await.unwrap(), vec![first.key.clone()]);
        assert_eq!(
            b.temporaries().await,
            0,
            "{}: the dropped copy is gone",
            b.name
        );
        let want = expected(&data);
        assert_eq!(
            (first.md5, first.sha3_256, first.size),
            (want.md5, want.sha3, want.size)
        );
    }
}

#[tokio::test]
async fn limit_refusal_leaves_nothing() {
    for b in backends("limit") {
        let data = filler(100_000, 2);
        let err = b
            .store
            .put_stream(pieces(&data, 4096), Some(99_999))
            .await
            .unwrap_err();
        assert_eq!(err, StorageError::TooLarge, "{}", b.name);
        // Past one S3 part (8 MiB) the refusal aborts a multipart upload instead.
        let big = filler(9 * 1024 * 1024, 3);
        let err = b
            .store
            .put_stream(pieces(&big, 1 << 20), Some(8 * 1024 * 1024 + 1))
            .await
            .unwrap_err();
        assert_eq!(err, StorageError::TooLarge, "{}", b.name);
        let err = b
            .store
            .stage_chunk("limited", 1, pieces(&data, 4096), Some(10))
            .await
            .unwrap_err();
        assert_eq!(err, StorageError::TooLarge, "{}", b.name);
        assert!(b.store.list_keys().await.unwrap().is_empty(), "{}", b.name);
        assert!(
            b.store.list_staged().await.unwrap().is_empty(),
            "{}",
            b.name
        );
        assert_eq!(b.temporaries().await, 0, "{}", b.name);

        // Exactly the limit is fine.
        let ok = b
            .store
            .put_stream(pieces(&data, 4096), Some(100_000))
            .await
            .unwrap();
        assert_eq!(ok.size, 100_000);
    }
}

#[tokio::test]
async fn a_failing_input_stream_leaves_nothing() {
    for b in backends("failing-input") {
        let stream = futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"some bytes")),
            Err(std::io::Error::other("client went away")),
        ]);
        let err = b.store.put_stream(stream, None).await.unwrap_err();
        assert!(
            matches!(err, StorageError::Io(ref m) if m.contains("client went away")),
            "{err}"
        );
        let stream = futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"some bytes")),
            Err(StorageError::Aborted("reset".into())),
        ]);
        let err = b
            .store
            .stage_chunk("broken", 1, stream, None)
            .await
            .unwrap_err();
        assert_eq!(err, StorageError::Aborted("reset".into()));
        assert!(b.store.list_keys().await.unwrap().is_empty(), "{}", b.name);
        assert!(
            b.store.list_staged().await.unwrap().is_empty(),
            "{}",
            b.name
        );
        assert_eq!(b.temporaries().await, 0, "{}", b.name);
    }
}

#[tokio::test]
async fn byte_ranges() {
    for b in backends("ranges") {
        let data = filler(3 * READ_CHUNK + 1234, 4);
        let len = data.len() as u64;
        let put = b.store.put_bytes(Bytes::from(data.clone())).await.unwrap();
        let key = &put.key;
        let cases = [
            (0, 0),
            (len - 1, len - 1),
            (1000, 2 * READ_CHUNK as u64 + 17),
            (0, len - 1),
        ];
        for (start, end) in cases {
            let (size, bytes) = read_all(&b.store, key, Some((start, end))).await.unwrap();
            assert_eq!(size, len, "{}: size is the whole blob's", b.name);
            assert_eq!(
                bytes,
                &data[start as usize..=end as usize],
                "{} {start}-{end}",
                b.name
            );
        }
        let (size, bytes) = read_all(&b.store, key, None).await.unwrap();
        assert_eq!((size, bytes.len()), (len, data.len()));
        assert!(bytes == data);

        // Pieces are bounded.
        let read = b.store.get(key, None).await.unwrap();
        let sizes: Vec<usize> = read.stream.map(|p| p.unwrap().len()).collect().await;
        assert!(
            sizes.iter().all(|&s| s <= READ_CHUNK),
            "{}: {sizes:?}",
            b.name
        );
        assert_eq!(sizes.iter().sum::<usize>(), data.len());

        for bad in [(0, len), (len, len), (5, 4), (len + 10, len + 20)] {
            let err = b.store.get(key, Some(bad)).await.unwrap_err();
            assert_eq!(err, StorageError::InvalidRange, "{} {bad:?}", b.name);
        }
        let empty = b.store.put_bytes(Bytes::new()).await.unwrap();
        assert_eq!(
            b.store.get(&empty.key, Some((0, 0))).await.unwrap_err(),
            StorageError::InvalidRange
        );
        let missing = BlobKey::parse(&"0".repeat(64)).unwrap();
        assert_eq!(
            b.store.get(&missing, None).await.unwrap_err(),
            StorageError::NotFound
        );
        assert_eq!(
            b.store.get(&missing, Some((0, 0))).await.unwrap_err(),
            StorageError::NotFound
        );
    }
}

#[tokio::test]
async fn delete_is_idempotent() {
    for b in backends("delete") {
        let put = b
            .store
            .put_bytes(Bytes::from_static(b"to be deleted"))
            .await
            .unwrap();
        assert!(b.store.exists(&put.key).await.unwrap());
        b.store.delete(&put.key).await.unwrap();
        assert!(!b.store.exists(&put.key).await.unwrap(), "{}", b.name);
        b.store.delete(&put.key).await.unwrap();
        b.store
            .delete(&BlobKey::parse(&"f".repeat(64)).unwrap())
            .await
            .unwrap();
        assert_eq!(
            b.store.get(&put.key, None).await.unwrap_err(),
            StorageError::NotFound
        );
        assert!(b.store.list_keys().await.unwrap().is_empty());
        // Storing it again creates it again.
        let again = b
            .store
            .put_bytes(Bytes::from_static(b"to be deleted"))
            .await
            .unwrap();
        assert!(again.created);
    }
}

/// Chunk sizes that cross S3 part boundaries and the local read size.
fn three_chunks(seed: u64) -> Vec<Vec<u8>> {
    vec![
        filler(300_001, seed),
        filler(9 * 1024 * 1024 + 3, seed + 1),
        filler(5, seed + 2),
    ]
}

async fn stage_all(store: &BlobStore, upload: &str, chunks: &[Vec<u8>]) {
    for (i, chunk) in chunks.iter().enumerate() {
        let stored = store
            .stage_chunk(
                upload,
                i as u32 + 1,
                pieces(chunk, 64 * 1024),
                Some(16 << 20),
            )
            .await
            .unwrap();
        assert_eq!(stored, chunk.len() as u64);
    }
}

#[tokio::test]
async fn staged_upload_committed_by_one_store() {
    for b in backends("staged-one") {
        let chunks = three_chunks(10);
        let whole = chunks.concat();
        let want = expected(&whole);
        stage_all(&b.store, "upload-1", &chunks).await;
        let staged = b.store.list_staged().await.unwrap();
        assert_eq!(staged.len(), 1);
        assert_eq!(staged[0].0, "upload-1");

        let out = b.store.commit_staged("upload-1", 3).await.unwrap();
        assert_eq!(
            (out.size, &out.md5, &out.sha3_256),
            (want.size, &want.md5, &want.sha3)
        );
        assert!(out.created);
        assert!(
            b.store.list_staged().await.unwrap().is_empty(),
            "{}",
            b.name
        );
        assert_eq!(b.temporaries().await, 0, "{}", b.name);
        let (_, back) = read_all(&b.store, &out.key, None).await.unwrap();
        assert!(back == whole, "{}", b.name);

        // One chunk, and none at all.
        b.store
            .stage_chunk("single", 1, pieces(b"abc", 2), None)
            .await
            .unwrap();
        let one = b.store.commit_staged("single", 1).await.unwrap();
        assert_eq!(
            (one.md5.as_str(), one.sha3_256.as_str()),
            (ABC_MD5, ABC_SHA3)
        );
        let none = b.store.commit_staged("nothing", 0).await.unwrap();
        assert_eq!(
            (none.md5.as_str(), none.sha3_256.as_str()),
            (EMPTY_MD5, EMPTY_SHA3)
        );
    }
}

#[tokio::test]
async fn staged_upload_across_two_nodes() {
    for b in backends("staged-two") {
        let node_a = b.store.clone();
        let node_b = b.other_node();
        let chunks = three_chunks(20);
        let want = expected(&chunks.concat());

        // A takes every chunk, B (no running hash) commits.
        stage_all(&node_a, "u-ab", &chunks).await;
        let first = node_b.commit_staged("u-ab", 3).await.unwrap();
        assert!(first.created);

        // Chunks alternate between the nodes; A commits.
        node_a
            .stage_chunk("u-mixed", 1, pieces(&chunks[0], 1000), None)
            .await
            .unwrap();
        node_b
            .stage_chunk("u-mixed", 2, pieces(&chunks[1], 1 << 20), None)
            .await
            .unwrap();
        node_a
            .stage_chunk("u-mixed", 3, pieces(&chunks[2], 1), None)
            .await
            .unwrap();
        let second = node_a.commit_staged("u-mixed", 3).await.unwrap();

        // Everything on A.
        stage_all(&node_a, "u-a", &chunks).await;
        let third = node_a.commit_staged("u-a", 3).await.unwrap();

        for out in [&first, &second, &third] {
            assert_eq!(
                (out.size, &out.md5, &out.sha3_256),
                (want.size, &want.md5, &want.sha3)
            );
        }
        assert!(!second.created && !third.created, "{}: stored once", b.name);
        assert_eq!(node_b.list_keys().await.unwrap(), vec![first.key.clone()]);
        assert!(node_b.list_staged().await.unwrap().is_empty());
    }
}

#[tokio::test]
async fn repeated_chunks_are_idempotent() {
    for b in backends("repeated") {
        let chunks = three_chunks(30);
        let want = expected(&chunks.concat());

        // The same chunk twice in a row, and an earlier chunk again later.
        b.store
            .stage_chunk("rep", 1, pieces(&chunks[0], 4096), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("rep", 2, pieces(&chunks[1], 1 << 20), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("rep", 2, pieces(&chunks[1], 1 << 20), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("rep", 3, pieces(&chunks[2], 4096), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("rep", 1, pieces(&chunks[0], 4096), None)
            .await
            .unwrap();
        let out = b.store.commit_staged("rep", 3).await.unwrap();
        assert_eq!(
            (out.size, &out.md5, &out.sha3_256),
            (want.size, &want.md5, &want.sha3)
        );

        // A repeated chunk with other content replaces the first one.
        let other = filler(1000, 99);
        b.store
            .stage_chunk("repl", 1, pieces(&chunks[0], 4096), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("repl", 2, pieces(&other, 100), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("repl", 2, pieces(&chunks[1], 1 << 20), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("repl", 3, pieces(&chunks[2], 4096), None)
            .await
            .unwrap();
        let out = b.store.commit_staged("repl", 3).await.unwrap();
        assert_eq!(
            (out.size, &out.md5, &out.sha3_256),
            (want.size, &want.md5, &want.sha3)
        );
        assert!(!out.created);

        // A chunk in the middle replaced by one of another length keeps the chunks after it.
        stage_all(&b.store, "middle", &chunks).await;
        let shorter = filler(777, 5);
        b.store
            .stage_chunk("middle", 2, pieces(&shorter, 100), None)
            .await
            .unwrap();
        let out = b.store.commit_staged("middle", 3).await.unwrap();
        let mixed = expected(&[chunks[0].clone(), shorter, chunks[2].clone()].concat());
        assert_eq!(
            (out.size, &out.md5, &out.sha3_256),
            (mixed.size, &mixed.md5, &mixed.sha3),
            "{}",
            b.name
        );
    }
}

#[tokio::test]
async fn discard_and_list_staged() {
    for b in backends("discard") {
        let before = SystemTime::now() - Duration::from_secs(60);
        b.store
            .stage_chunk("keep", 1, pieces(b"kept", 2), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("drop", 1, pieces(b"one", 2), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("drop", 2, pieces(b"two", 2), None)
            .await
            .unwrap();
        let after = SystemTime::now() + Duration::from_secs(60);

        let mut staged = b.store.list_staged().await.unwrap();
        staged.sort();
        let ids: Vec<&str> = staged.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(ids, ["drop", "keep"], "{}", b.name);
        for (id, at) in &staged {
            assert!(*at > before && *at < after, "{}: {id} at {at:?}", b.name);
        }

        b.store.discard_staged("drop").await.unwrap();
        b.store.discard_staged("drop").await.unwrap();
        b.store.discard_staged("never-staged").await.unwrap();
        let staged = b.store.list_staged().await.unwrap();
        assert_eq!(staged.len(), 1);
        assert_eq!(staged[0].0, "keep");
        assert_eq!(
            b.store.commit_staged("drop", 2).await.unwrap_err(),
            StorageError::MissingChunk(1)
        );
        assert!(b.store.list_keys().await.unwrap().is_empty(), "{}", b.name);
    }
}

#[tokio::test]
async fn bad_names_and_missing_chunks() {
    for b in backends("names") {
        for bad in ["", "a/b", "..", "x y", &"z".repeat(65)] {
            let err = b
                .store
                .stage_chunk(bad, 1, pieces(b"x", 1), None)
                .await
                .unwrap_err();
            assert_eq!(err, StorageError::InvalidName, "{bad:?}");
            assert_eq!(
                b.store.commit_staged(bad, 1).await.unwrap_err(),
                StorageError::InvalidName
            );
            assert_eq!(
                b.store.discard_staged(bad).await.unwrap_err(),
                StorageError::InvalidName
            );
        }
        let err = b
            .store
            .stage_chunk("ok", 0, pieces(b"x", 1), None)
            .await
            .unwrap_err();
        assert_eq!(err, StorageError::InvalidName);

        b.store
            .stage_chunk("gap", 1, pieces(b"one", 1), None)
            .await
            .unwrap();
        b.store
            .stage_chunk("gap", 3, pieces(b"three", 1), None)
            .await
            .unwrap();
        assert_eq!(
            b.store.commit_staged("gap", 3).await.unwrap_err(),
            StorageError::MissingChunk(2)
        );
        // An absurd count is only a missing chunk (nothing is sized by it).
        assert_eq!(
            b.store.commit_staged("gap", u32::MAX).await.unwrap_err(),
            StorageError::MissingChunk(2)
        );
        // The staging stays: the missing chunk can still come.
        b.store
            .stage_chunk("gap", 2, pieces(b"two", 1), None)
            .await
            .unwrap();
        let out = b.store.commit_staged("gap", 3).await.unwrap();
        assert_eq!(out.sha3_256, expected(b"onetwothree").sha3);
    }
}

/// The futures are `Send` (given a `Send` input stream), so callers may spawn them.
#[test]
fn futures_are_send() {
    fn assert_send<T: Send>(_: T) {}
    let store = BlobStore::open(tempfile::tempdir().unwrap().path().to_str().unwrap()).unwrap();
    let key = BlobKey::parse(&"0".repeat(64)).unwrap();
    assert_send(store.put_stream(pieces(b"x", 1), None));
    assert_send(store.put_bytes(Bytes::new()));
    assert_send(store.get(&key, None));
    assert_send(store.stage_chunk("u", 1, pieces(b"x", 1), None));
    assert_send(store.commit_staged("u", 1));
    assert_send(store.list_staged());
    fn assert_sync<T: Send + Sync + Clone>(_: &T) {}
    assert_sync(&store);
}

/// Temporaries that stopped changing (a write that never finished) are swept; a fresh one stays.
#[tokio::test]
async fn abandoned_temporaries_are_swept() {
    for b in backends("temporaries") {
        if let Some(dir) = &b.dir {
            let tmp = dir.path().join("content").join("tmp");
            let old = tmp.join("old-leftover");
            std::fs::write(&old, b"partial").unwrap();
            let f = std::fs::File::options().write(true).open(&old).unwrap();
            f.set_modified(SystemTime::now() - Duration::from_secs(3 * 86_400))
                .unwrap();
            std::fs::write(tmp.join("fresh"), b"in progress").unwrap();
            assert_eq!(
                b.store
                    .sweep_temporaries(Duration::from_secs(86_400))
                    .await
                    .unwrap(),
                1
            );
            assert!(!old.exists());
            assert_eq!(b.temporaries().await, 1, "the fresh one stays");
            std::fs::remove_file(tmp.join("fresh")).unwrap();
        }
        // Nothing older than now is left after a sweep with no age; stored blobs are untouched.
        let kept = b
            .store
            .put_bytes(Bytes::from_static(b"kept"))
            .await
            .unwrap();
        b.store.sweep_temporaries(Duration::ZERO).await.unwrap();
        assert_eq!(b.temporaries().await, 0, "{}", b.name);
        assert!(b.store.exists(&kept.key).await.unwrap(), "{}", b.name);
    }
}
