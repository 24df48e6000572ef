//! The S3-compatible backend (`object_store`'s S3 client).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder, AmazonS3ConfigKey};
use object_store::path::Path;
use object_store::{
    ClientOptions, GetOptions, GetRange, MultipartUpload, ObjectMeta, ObjectStore, ObjectStoreExt,
    PutPayload, PutPayloadMut,
};
use sha3::{Digest, Sha3_256};
use tokio::task::JoinSet;

use crate::error::backend;
use crate::hash::{Fingerprinter, Fingerprints, Intake, StagedHash, Stamp};
use crate::{chunk_name, resolve_range, BlobKey, BlobRead, PutOutcome, StorageError, READ_CHUNK};

/// Parts of a multipart upload start at this size (S3's minimum is 5 MiB)...
const PART_SIZE: usize = 8 * 1024 * 1024;
/// ...and double every this many parts, so that the 10,000 parts S3 allows reach 5 TiB while
/// ordinary files keep small buffers.
const PARTS_PER_SIZE: usize = 1000;
/// Parts uploading at once for one object (each holds its buffer).
const PARTS_IN_FLIGHT: usize = 2;
/// The largest object a single server-side copy may produce (S3's CopyObject limit); larger
/// objects are copied by streaming them through.
const COPY_LIMIT: u64 = 5 * 1024 * 1024 * 1024;

pub(crate) struct S3 {
    store: Arc<AmazonS3>,
    bucket: String,
    /// Without leading or trailing slash; empty for the bucket's root.
    prefix: String,
}

fn bool_param(name: &str, value: &str) -> Result<bool, StorageError> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(StorageError::InvalidUrl(format!(
            "parameter {name} must be true or false"
        ))),
    }
}

impl S3 {
    /// `rest` is the URL after `s3://`.
    pub fn open(rest: &str) -> Result<S3, StorageError> {
        let url = url::Url::parse(&format!("s3://{rest}"))
            .map_err(|e| StorageError::InvalidUrl(format!("s3 URL: {e}")))?;
        let bucket = url.host_str().unwrap_or_default().to_owned();
        if bucket.is_empty() || !url.username().is_empty() || url.password().is_some() {
            return Err(StorageError::InvalidUrl(
                "s3 URL needs s3://bucket[/prefix] (credentials go in parameters)".into(),
            ));
        }
        if url.port().is_some() {
            return Err(StorageError::InvalidUrl(
                "s3 URL: the endpoint goes in the endpoint parameter, not in the bucket".into(),
            ));
        }
        let segments: Vec<&str> = url.path().split('/').filter(|s| !s.is_empty()).collect();
        for segment in &segments {
            let ok = *segment != "."
                && *segment != ".."
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
            if !ok {
                return Err(StorageError::InvalidUrl(
                    "s3 prefix segments are [A-Za-z0-9._-]+ (and not . or ..)".into(),
                ));
            }
        }
        let prefix = segments.join("/");

        // Downloads stream for as long as the client takes: no overall request timeout, but a
        // stalled connection still fails.
        let options = ClientOptions::new()
            .with_timeout_disabled()
            .with_connect_timeout(Duration::from_secs(10))
            .with_read_timeout(Duration::from_secs(300));
        let mut builder = AmazonS3Builder::new().with_client_options(options);
        for (key, value) in std::env::vars() {
            if key.starts_with("AWS_") {
                if let Ok(config_key) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                    builder = builder.with_config(config_key, value);
                }
            }
        }
        builder = builder
            .with_bucket_name(&bucket)
            .with_virtual_hosted_style_request(false);
        for (name, value) in url.query_pairs() {
            let value = value.into_owned();
            builder = match name.as_ref() {
                "endpoint" => builder.with_endpoint(value),
                "region" => builder.with_region(value),
                "allow_http" => builder.with_allow_http(bool_param("allow_http", &value)?),
                "virtual_hosted_style" => builder
                    .with_virtual_hosted_style_request(bool_param("virtual_hosted_style", &value)?),
                "access_key_id" => builder.with_access_key_id(value),
                "secret_access_key" => builder.with_secret_access_key(value),
                "session_token" => builder.with_token(value),
                other => {
                    return Err(StorageError::InvalidUrl(format!(
                        "unknown s3 parameter {other:?}"
                    )))
                }
            };
        }
        // The HTTP client's TLS uses the process-wide rustls provider; Coffer builds rustls
        // with ring alone, so install that one (a no-op when one is installed already).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let store = builder
            .build()
            .map_err(|e| StorageError::InvalidUrl(format!("s3: {e}")))?;
        Ok(S3 {
            store: Arc::new(store),
            bucket,
            prefix,
        })
    }

    pub fn describe(&self) -> String {
        if self.prefix.is_empty() {
            format!("s3://{}", self.bucket)
        } else {
            format!("s3://{}/{}", self.bucket, self.prefix)
        }
    }

    /// `rest` (a path relative to the store's root) under the prefix.
    fn path(&self, rest: &str) -> Path {
        if self.prefix.is_empty() {
            Path::from(rest)
        } else {
            Path::from(format!("{}/{}", self.prefix, rest))
        }
    }

    fn staging_path(&self, upload: &str) -> Path {
        self.path(&format!("staging/{upload}"))
    }

    fn writer(&self, path: Path) -> ObjectWriter {
        ObjectWriter::new(self.store.clone(), path)
    }

    fn temp_path(&self) -> Path {
        self.path(&format!("tmp/{}", uuid::Uuid::new_v4().simple()))
    }

    /// Writes everything the intake yields to `path`, hashing into `hasher` when given.
    async fn write_object<S, E>(
        &self,
        path: Path,
        intake: &mut Intake<S>,
        mut hasher: Option<&mut Fingerprinter>,
    ) -> Result<(u64, Option<String>), StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let mut writer = self.writer(path);
        let mut written = 0u64;
        let filled: Result<(), StorageError> = async {
            while let Some(piece) = intake.next().await? {
                if let Some(h) = hasher.as_mut() {
                    h.update(&piece);
                }
                written += piece.len() as u64;
                writer.write(piece).await?;
            }
            Ok(())
        }
        .await;
        if let Err(e) = filled {
            writer.abort().await;
            return Err(e);
        }
        let e_tag = writer.finish().await?;
        Ok((written, e_tag))
    }

    /// Names the fully written object `temp` after its content and removes `temp`.
    async fn promote(
        &self,
        temp: &Path,
        fingerprints: Fingerprints,
    ) -> Result<PutOutcome, StorageError> {
        let dst = self.path(&fingerprints.key.relative_path());
        let result = async {
            if self.head(&dst).await?.is_some() {
                return Ok(false);
            }
            if fingerprints.size <= COPY_LIMIT {
                self.store.copy(temp, &dst).await.map_err(backend)?;
            } else {
                let mut writer = self.writer(dst.clone());
                let mut stream = self.read(temp, None).await?;
                let copied: Result<(), StorageError> = async {
                    while let Some(piece) = stream.next().await {
                        writer.write(piece?).await?;
                    }
                    Ok(())
                }
                .await;
                if let Err(e) = copied {
                    writer.abort().await;
                    return Err(e);
                }
                writer.finish().await?;
            }
            Ok(true)
        }
        .await;
        self.remove(temp).await;
        result.map(|created| fingerprints.outcome(created))
    }

    async fn head(&self, path: &Path) -> Result<Option<ObjectMeta>, StorageError> {
        match self.store.head(path).await {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(backend(e)),
        }
    }

    /// The object's bytes (a range of them when given) as a stream.
    async fn read(
        &self,
        path: &Path,
        range: Option<std::ops::Range<u64>>,
    ) -> Result<futures_util::stream::BoxStream<'static, Result<Bytes, StorageError>>, StorageError>
    {
        let options = GetOptions::new().with_range(range.map(GetRange::Bounded));
        let result = self.store.get_opts(path, options).await.map_err(backend)?;
        Ok(bounded(result.into_stream().map_err(backend)).boxed())
    }

    /// Best effort: a leftover is only wasted space under `tmp/` or `staging/`.
    async fn remove(&self, path: &Path) {
        if let Err(e) = self.store.delete(path).await {
            if !matches!(e, object_store::Error::NotFound { .. }) {
                log::warn!("storage: could not remove {path}: {e}");
            }
        }
    }

    async fn list(&self, under: &Path) -> Result<Vec<ObjectMeta>, StorageError> {
        self.store
            .list(Some(under))
            .try_collect()
            .await
            .map_err(backend)
    }

    pub async fn put_stream<S, E>(&self, intake: &mut Intake<S>) -> Result<PutOutcome, StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let temp = self.temp_path();
        let mut hasher = Fingerprinter::new();
        self.write_object(temp.clone(), intake, Some(&mut hasher))
            .await?;
        self.promote(&temp, hasher.finish_here()?).await
    }

    pub async fn get(
        &self,
        key: &BlobKey,
        range: Option<(u64, u64)>,
    ) -> Result<BlobRead, StorageError> {
        let path = self.path(&key.relative_path());
        match range {
            None => {
                let result = self
                    .store
                    .get_opts(&path, GetOptions::new())
                    .await
                    .map_err(backend)?;
                let size = result.meta.size;
                Ok(BlobRead {
                    size,
                    stream: bounded(result.into_stream().map_err(backend)).boxed(),
                })
            }
            Some(_) => {
                let meta = self.head(&path).await?.ok_or(StorageError::NotFound)?;
                let (start, len) = resolve_range(range, meta.size)?;
                let stream = self.read(&path, Some(start..start + len)).await?;
                Ok(BlobRead {
                    size: meta.size,
                    stream,
                })
            }
        }
    }

    pub async fn exists(&self, key: &BlobKey) -> Result<bool, StorageError> {
        Ok(self.head(&self.path(&key.relative_path())).await?.is_some())
    }

    pub async fn delete(&self, key: &BlobKey) -> Result<(), StorageError> {
        match self.store.delete(&self.path(&key.relative_path())).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(backend(e)),
        }
    }

    pub async fn list_keys(&self) -> Result<Vec<BlobKey>, StorageError> {
        let objects = self.list(&self.path("blobs")).await?;
        Ok(objects
            .iter()
            .filter_map(|meta| {
                let key = BlobKey::parse(meta.location.filename()?).ok()?;
                (meta.location == self.path(&key.relative_path())).then_some(key)
            })
            .collect())
    }

    pub async fn stage_chunk<S, E>(
        &self,
        upload: &str,
        index: u32,
        intake: &mut Intake<S>,
        hasher: Option<&mut Fingerprinter>,
    ) -> Result<(u64, Stamp), StorageError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: Into<StorageError>,
    {
        let path = self.staging_path(upload).join(chunk_name(index).as_str());
        let (written, e_tag) = self.write_object(path, intake, hasher).await?;
        Ok((written, object_stamp(written, e_tag.as_deref())))
    }

    /// The staged chunks of an upload by index.
    async fn staged_chunks(&self, upload: &str) -> Result<BTreeMap<u32, ObjectMeta>, StorageError> {
        let objects = self.list(&self.staging_path(upload)).await?;
        Ok(objects
            .into_iter()
            .filter_map(|meta| {
                let index = meta.location.filename()?.parse::<u32>().ok()?;
                Some((index, meta))
            })
            .collect())
    }

    pub async fn commit_staged(
        &self,
        upload: &str,
        chunks: u32,
        cached: Option<StagedHash>,
    ) -> Result<(PutOutcome, bool), StorageError> {
        let staged = self.staged_chunks(upload).await?;
        let mut parts = Vec::new();
        for index in 1..=chunks {
            let meta = staged
                .get(&index)
                .ok_or(StorageError::MissingChunk(index))?;
            parts.push(meta);
        }
        let stamps: Vec<Stamp> = parts
            .iter()
            .map(|m| object_stamp(m.size, m.e_tag.as_deref()))
            .collect();
        let known = cached
            .filter(|c| c.next == chunks + 1 && c.stamps == stamps)
            .and_then(|c| c.state.finish());

        let mut outcome = None;
        if let Some(fingerprints) = known {
            outcome = self.commit_known(&parts, fingerprints).await?;
        }
        let fast = outcome.is_some();
        let outcome = match outcome {
            Some(outcome) => outcome,
            None => {
                // Hash the staged bytes once while concatenating them under tmp/.
                let temp = self.temp_path();
                let mut hasher = Fingerprinter::new();
                let mut writer = self.writer(temp.clone());
                let filled: Result<(), StorageError> = async {
                    for meta in &parts {
                        let mut stream = self.read(&meta.location, None).await?;
                        while let Some(piece) = stream.next().await {
                            let piece = piece?;
                            hasher.update(&piece);
                            writer.write(piece).await?;
                        }
                    }
                    Ok(())
                }
                .await;
                if let Err(e) = filled {
                    writer.abort().await;
                    return Err(e);
                }
                writer.finish().await?;
                self.promote(&temp, hasher.finish_here()?).await?
            }
        };
        self.discard_staged(upload).await?;
        Ok((outcome, fast))
    }

    /// The commit when the running hash covers the staged chunks: the key is known, so the
    /// chunks stream once straight into the blob, their sha3 checked as they pass before the
    /// object is completed. `None` when they turn out not to be what was hashed.
    async fn commit_known(
        &self,
        parts: &[&ObjectMeta],
        fingerprints: Fingerprints,
    ) -> Result<Option<PutOutcome>, StorageError> {
        let dst = self.path(&fingerprints.key.relative_path());
        if self.head(&dst).await?.is_some() {
            return Ok(Some(fingerprints.outcome(false)));
        }
        let mut writer = self.writer(dst);
        let mut check = Sha3_256::new();
        let filled: Result<(), StorageError> = async {
            for meta in parts {
                let mut stream = self.read(&meta.location, None).await?;
                while let Some(piece) = stream.next().await {
                    let piece = piece?;
                    check.update(&piece);
                    writer.write(piece).await?;
                }
            }
            Ok(())
        }
        .await;
        if let Err(e) = filled {
            writer.abort().await;
            return Err(e);
        }
        if hex::encode(check.finalize()) != fingerprints.sha3_256 {
            log::warn!("storage: staged chunks changed after they were hashed; hashing again");
            writer.abort().await;
            return Ok(None);
        }
        writer.finish().await?;
        Ok(Some(fingerprints.outcome(true)))
    }

    pub async fn discard_staged(&self, upload: &str) -> Result<(), StorageError> {
        let objects = self.list(&self.staging_path(upload)).await?;
        if objects.is_empty() {
            return Ok(());
        }
        let locations = futures_util::stream::iter(objects.into_iter().map(|m| Ok(m.location)));
        let results: Vec<_> = self.store.delete_stream(locations.boxed()).collect().await;
        for result in results {
            match result {
                Ok(_) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(backend(e)),
            }
        }
        Ok(())
    }

    pub async fn sweep_temporaries(&self, before: SystemTime) -> Result<usize, StorageError> {
        let objects = self.list(&self.path("tmp")).await?;
        let mut removed = 0;
        for meta in objects {
            let millis = meta.last_modified.timestamp_millis();
            let at = SystemTime::UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64);
            if at >= before {
                continue;
            }
            match self.store.delete(&meta.location).await {
                Ok(()) => removed += 1,
                Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(backend(e)),
            }
        }
        Ok(removed)
    }

    pub async fn list_staged(&self) -> Result<Vec<(String, SystemTime)>, StorageError> {
        let staging = self.path("staging");
        let objects = self.list(&staging).await?;
        let mut latest: BTreeMap<String, SystemTime> = BTreeMap::new();
        for meta in objects {
            let Some(mut rest) = meta.location.prefix_match(&staging) else {
                continue;
            };
            let Some(upload) = rest.next() else { continue };
            let upload = upload.as_ref().to_owned();
            if crate::validate_upload(&upload).is_err() {
                continue;
            }
            let millis = meta.last_modified.timestamp_millis();
            let at = SystemTime::UNIX_EPOCH + Duration::from_millis(millis.max(0) as u64);
            let entry = latest.entry(upload).or_insert(at);
            *entry = (*entry).max(at);
        }
        Ok(latest.into_iter().collect())
    }
}

/// See [`Stamp`]: an object's size and ETag (quotes removed, as listings and uploads quote
/// differently). Content-derived, which is why the fast commit also checks the sha3.
fn object_stamp(size: u64, e_tag: Option<&str>) -> Stamp {
    format!("{size}:{}", e_tag.unwrap_or("-").trim_matches('"'))
}

/// Writes one object from pieces: a single PUT when it ends within the first part, else a
/// multipart upload with at most [`PARTS_IN_FLIGHT`] parts uploading. Dropping it before
/// `finish` aborts the multipart upload (in the background).
struct ObjectWriter {
    store: Arc<AmazonS3>,
    path: Path,
    buffer: PutPayloadMut,
    buffered: usize,
    upload: Option<Box<dyn MultipartUpload>>,
    parts: usize,
    in_flight: JoinSet<Result<(), object_store::Error>>,
}

impl ObjectWriter {
    fn new(store: Arc<AmazonS3>, path: Path) -> Self {
        ObjectWriter {
            store,
            path,
            buffer: PutPayloadMut::new(),
            buffered: 0,
            upload: None,
            parts: 0,
            in_flight: JoinSet::new(),
        }
    }

    fn part_size(&self) -> usize {
        PART_SIZE << (self.parts / PARTS_PER_SIZE).min(10)
    }

    async fn write(&mut self, mut bytes: Bytes) -> Result<(), StorageError> {
        while !bytes.is_empty() {
            let room = self.part_size() - self.buffered;
            if bytes.len() < room {
                self.buffered += bytes.len();
                self.buffer.push(bytes);
                return Ok(());
            }
            self.buffer.push(bytes.split_to(room));
            self.buffered += room;
            self.send_part().await?;
        }
        Ok(())
    }

    async fn send_part(&mut self) -> Result<(), StorageError> {
        if self.upload.is_none() {
            let upload = self
                .store
                .put_multipart(&self.path)
                .await
                .map_err(backend)?;
            self.upload = Some(upload);
        }
        while self.in_flight.len() >= PARTS_IN_FLIGHT {
            self.join_one().await?;
        }
        let payload: PutPayload = std::mem::take(&mut self.buffer).into();
        self.buffered = 0;
        self.parts += 1;
        let part = self
            .upload
            .as_mut()
            .expect("started above")
            .put_part(payload);
        self.in_flight.spawn(part);
        Ok(())
    }

    async fn join_one(&mut self) -> Result<(), StorageError> {
        match self.in_flight.join_next().await {
            None => Ok(()),
            Some(Ok(result)) => result.map_err(backend),
            Some(Err(join)) => Err(StorageError::Backend(format!("part upload task: {join}"))),
        }
    }

    /// Completes the object; returns its ETag. On failure the upload is aborted.
    async fn finish(mut self) -> Result<Option<String>, StorageError> {
        if self.upload.is_none() {
            let payload: PutPayload = std::mem::take(&mut self.buffer).into();
            let result = self.store.put(&self.path, payload).await.map_err(backend)?;
            return Ok(result.e_tag);
        }
        let completed: Result<Option<String>, StorageError> = async {
            if self.buffered > 0 {
                self.send_part().await?;
            }
            while !self.in_flight.is_empty() {
                self.join_one().await?;
            }
            let upload = self.upload.as_mut().expect("started");
            let result = upload.complete().await.map_err(backend)?;
            Ok(result.e_tag)
        }
        .await;
        match completed {
            Ok(e_tag) => {
                self.upload = None;
                Ok(e_tag)
            }
            Err(e) => {
                self.abort().await;
                Err(e)
            }
        }
    }

    /// Stops the parts in flight and aborts the multipart upload (best effort).
    async fn abort(mut self) {
        self.in_flight.shutdown().await;
        if let Some(mut upload) = self.upload.take() {
            if let Err(e) = upload.abort().await {
                log::warn!("storage: could not abort the upload of {}: {e}", self.path);
            }
        }
    }
}

impl Drop for ObjectWriter {
    fn drop(&mut self) {
        if let Some(mut upload) = self.upload.take() {
            self.in_flight.abort_all();
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let _ = upload.abort().await;
                });
            }
        }
    }
}

/// The pieces of an S3 read cut to at most [`READ_CHUNK`] bytes, as local reads are: the HTTP
/// client hands on whatever its buffers held (now and then more than `READ_CHUNK`). The cuts
/// share the piece's memory.
fn bounded<S>(pieces: S) -> impl Stream<Item = Result<Bytes, StorageError>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, StorageError>> + Send + 'static,
{
    pieces.flat_map(|piece| {
        let cuts: Vec<Result<Bytes, StorageError>> = match piece {
            Ok(mut b) => {
                let mut out = Vec::with_capacity(b.len().div_ceil(READ_CHUNK).max(1));
                while b.len() > READ_CHUNK {
                    out.push(Ok(b.split_to(READ_CHUNK)));
                }
                out.push(Ok(b));
                out
            }
            Err(e) => vec![Err(e)],
        };
        futures_util::stream::iter(cuts)
    })
}
