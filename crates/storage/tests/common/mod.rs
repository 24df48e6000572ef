//! The backends every test runs against: a local directory always, and an S3 API server when
//! `COFFER_TEST_S3_URL` names one (`scripts/s3-test-server.sh run -- cargo test -p
//! coffer-storage` starts one).

#![allow(dead_code)]

use std::io::Write;

use bytes::Bytes;
use coffer_storage::{BlobKey, BlobStore, StorageError};
use futures_util::{Stream, StreamExt, TryStreamExt};
use md5::Md5;
use sha3::{Digest, Sha3_256};

pub struct Backend {
    pub name: &'static str,
    /// The storage URL, to open more stores on the same content (more "nodes").
    pub url: String,
    pub store: BlobStore,
    /// The local directory (local backend only), kept alive for the test.
    pub dir: Option<tempfile::TempDir>,
}

impl Backend {
    /// Another store on the same content, as a second node would open it: no shared cache.
    pub fn other_node(&self) -> BlobStore {
        BlobStore::open(&self.url).expect("open a second store")
    }

    /// How many entries sit under `tmp/` (the local directory or the S3 prefix).
    pub async fn temporaries(&self) -> usize {
        match &self.dir {
            Some(dir) => std::fs::read_dir(dir.path().join("content").join("tmp"))
                .unwrap()
                .count(),
            None => s3_count(&self.url, "tmp").await,
        }
    }
}

/// Writes a line past the test harness's output capture, so that skipped cases are visible.
pub fn note(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The backends for one test; each S3 case gets its own prefix below the given URL's.
pub fn backends(test: &str) -> Vec<Backend> {
    let dir = tempfile::tempdir().expect("temporary directory");
    let local_url = dir.path().join("content").to_str().unwrap().to_owned();
    let mut out = vec![Backend {
        name: "local",
        store: BlobStore::open(&local_url).expect("open local store"),
        url: local_url,
        dir: Some(dir),
    }];
    match std::env::var("COFFER_TEST_S3_URL") {
        Ok(base) if !base.is_empty() => {
            let (path, query) = base.split_once('?').unwrap_or((&base, ""));
            let url = format!(
                "{}/{test}-{}?{query}",
                path.trim_end_matches('/'),
                uuid::Uuid::new_v4().simple()
            );
            out.push(Backend {
                name: "s3",
                store: BlobStore::open(&url).expect("open S3 store"),
                url,
                dir: None,
            });
        }
        _ => {
            static ONCE: std::sync::Once = std::sync::Once::new();
            ONCE.call_once(|| {
                note(
                    "note: COFFER_TEST_S3_URL not set: the S3 cases are skipped, the local ones \
                     run (scripts/s3-test-server.sh run -- cargo test -p coffer-storage runs both)",
                )
            });
        }
    }
    out
}

/// Counts the objects under `<prefix of url>/<sub>` with a client of its own.
async fn s3_count(url: &str, sub: &str) -> usize {
    use object_store::aws::AmazonS3Builder;
    use object_store::ObjectStore;
    let parsed = url::Url::parse(url).unwrap();
    let mut builder = AmazonS3Builder::from_env()
        .with_bucket_name(parsed.host_str().unwrap())
        .with_virtual_hosted_style_request(false);
    for (k, v) in parsed.query_pairs() {
        builder = match k.as_ref() {
            "endpoint" => builder.with_endpoint(v.into_owned()),
            "region" => builder.with_region(v.into_owned()),
            "allow_http" => builder.with_allow_http(v == "true"),
            "access_key_id" => builder.with_access_key_id(v.into_owned()),
            "secret_access_key" => builder.with_secret_access_key(v.into_owned()),
            _ => builder,
        };
    }
    let store = builder.build().unwrap();
    let prefix =
        object_store::path::Path::from(format!("{}/{sub}", parsed.path().trim_matches('/')));
    store
        .list(Some(&prefix))
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .len()
}

pub struct Expected {
    pub size: u64,
    pub md5: String,
    pub sha3: String,
}

pub fn expected(data: &[u8]) -> Expected {
    Expected {
        size: data.len() as u64,
        md5: hex::encode(Md5::digest(data)),
        sha3: hex::encode(Sha3_256::digest(data)),
    }
}

/// `data` as a stream of `piece`-sized pieces.
pub fn pieces(
    data: &[u8],
    piece: usize,
) -> impl Stream<Item = Result<Bytes, StorageError>> + Unpin {
    let chunks: Vec<Result<Bytes, StorageError>> = data
        .chunks(piece.max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    futures_util::stream::iter(chunks)
}

/// Deterministic filler bytes.
pub fn filler(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

/// Reads a blob (or a range of it) whole.
pub async fn read_all(
    store: &BlobStore,
    key: &BlobKey,
    range: Option<(u64, u64)>,
) -> Result<(u64, Vec<u8>), StorageError> {
    let read = store.get(key, range).await?;
    let size = read.size;
    let mut out = Vec::new();
    let mut stream = read.stream;
    while let Some(piece) = stream.next().await {
        out.extend_from_slice(&piece?);
    }
    Ok((size, out))
}
