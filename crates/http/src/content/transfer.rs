//! Bytes in and out: one-shot uploads, the chunk protocol, new versions, downloads with ranges,
//! previews, and the version list. Bodies stream between the socket and the blob store; only
//! JSON bodies (with their 1 MiB cap) and base64 chunks are read whole.

use crate::content::{parse_date, ONE, VERSIONS};
use crate::plumbing::body::Body as Json;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{read_body, Caller, CallerOrRef, QueryPairs};
use crate::plumbing::respond::{listing, Envelope};
use crate::plumbing::schema::InitiateUploadBody;
use crate::plumbing::state::{blocking, AppState};
use actix_web::http::header;
use actix_web::web::{self, Bytes, Data, Path, Payload};
use actix_web::{HttpRequest, HttpResponse};
use coffer_domain::content::{self as rules, ChunkMeta, Compression, RangeOutcome};
use coffer_domain::input::Fields;
use coffer_domain::list::{self, Dir, ListSpec};
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::content::files::{self, Stored, Target};
use coffer_service::content::uploads::{self, Body, BodyError, ChunkOutcome, InitiateInput};
use futures_util::{StreamExt, TryStreamExt};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/folders/{id}/actions/initiateUpload")
            .route(web::post().to(initiate_in_folder)),
    )
    .service(
        web::resource("/files/{id}/actions/initiateUpload").route(web::post().to(initiate_version)),
    )
    .service(web::resource("/folders/{id}/actions/file").route(web::post().to(upload_file)))
    .service(
        web::resource("/files/{id}/versions")
            .route(web::get().to(versions))
            .route(web::post().to(new_version)),
    )
    .service(web::resource("/files/{id}/content").route(web::get().to(content)))
    .service(
        web::resource("/files/{id}/versions/{version}/content")
            .route(web::get().to(version_content)),
    )
    .service(web::resource("/files/{id}/preview").route(web::get().to(preview)))
    .service(web::resource("/files/{id}/preview/content").route(web::get().to(preview_content)))
    .service(web::resource("/uploads").route(web::get().to(list_uploads)))
    .service(web::resource("/uploads/config").route(web::get().to(upload_config)))
    .service(
        web::resource("/uploads/{id}")
            .route(web::get().to(get_upload))
            .route(web::post().to(chunk))
            .route(web::delete().to(delete_upload)),
    );
}

/// `/{host_name}/rest/uploads/{id}`: the chunk endpoint as the reference spells it.
pub fn host_routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/uploads/{id}").route(web::post().to(chunk_on_host)));
}

/// Upload session ids are integers; anything else is an unknown session.
fn upload_id(raw: &str) -> Result<i64, RestError> {
    crate::plumbing::extract::int_id(raw)
}

pub const UPLOADS: ListSpec = ListSpec {
    filters: &[],
    order_fields: &["id"],
    default_order: ("id", Dir::Asc),
    default_limit: 100,
    max_limit: 10_000,
    with_fields: &[],
    extra_params: &["locate_id"],
    bulk: false,
};

pub(crate) fn initiate_input(body: InitiateUploadBody) -> Result<InitiateInput, RestError> {
    let date = |name: &str, v: Option<String>| -> Result<Option<i64>, RestError> {
        match v {
            Some(v) if !v.is_empty() => Ok(Some(parse_date(name, &v)?)),
            _ => Ok(None),
        }
    };
    Ok(InitiateInput {
        filename: body.filename.unwrap_or_default(),
        total_size: body.total_size,
        total_chunks: body.total_chunks,
        client_created: date("clientCreated", body.client_created)?,
        client_modified: date("clientModified", body.client_modified)?,
        tracking_id: body.tracking_id,
    })
}

#[utoipa::path(post, path = "/rest/folders/{id}/actions/initiateUpload", tag = "uploads", params(("id" = String, Path, description = "The folder to upload into")), request_body(content = InitiateUploadBody), responses((status = 201, body = coffer_service::content::views::UploadView, description = "The upload session; send the chunks to its `uploadUrl`"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_IS_BASE_DIR`, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: a folder has the name"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`: `totalSize` exceeds the quota"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_MIN_VALUE`, `ERR_INPUT_INVALID_DATE`, `ERR_LICENSE_MAX_UPLOAD_SIZE`")), security(("bearer" = [])))]
pub async fn initiate_in_folder(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    Json(body): Json<InitiateUploadBody>,
) -> Result<HttpResponse, RestError> {
    let input = initiate_input(body?)?;
    if input.filename.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "filename").into());
    }
    let user = c.user.id.clone();
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        uploads::initiate(ctx, &user, Some(&id), None, &input)
    })
    .await?;
    Ok(HttpResponse::Created().json(v))
}

#[utoipa::path(post, path = "/rest/files/{id}/actions/initiateUpload", tag = "uploads", params(("id" = String, Path, description = "The file to add a version to")), request_body(content = InitiateUploadBody), responses((status = 201, body = coffer_service::content::views::UploadView, description = "The upload session of the new version (`filename` is required and checked; the version keeps the file's name)"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_MIN_VALUE`, `ERR_INPUT_INVALID_DATE`, `ERR_LICENSE_MAX_UPLOAD_SIZE`")), security(("bearer" = [])))]
pub async fn initiate_version(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    Json(body): Json<InitiateUploadBody>,
) -> Result<HttpResponse, RestError> {
    let input = initiate_input(body?)?;
    // Required as for a new file; the version keeps the file's name.
    if input.filename.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "filename").into());
    }
    let user = c.user.id.clone();
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        uploads::initiate(ctx, &user, None, Some(&id), &input)
    })
    .await?;
    Ok(HttpResponse::Created().json(v))
}

#[utoipa::path(get, path = "/rest/uploads", tag = "uploads", params(("locate_id" = Option<String>, Query, description = "Accepted and ignored")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::UploadView>, description = "The caller's unfinished upload sessions")), security(("bearer" = [])))]
pub async fn list_uploads(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &UPLOADS)?;
    let user = c.user.id.clone();
    let (offset, limit) = (q.offset, q.limit);
    Ok(listing(
        Envelope::Metadata,
        &blocking(&st, move |ctx| uploads::list(ctx, &user, offset, limit)).await?,
    ))
}

#[utoipa::path(get, path = "/rest/uploads/config", tag = "uploads", responses((status = 200, body = coffer_service::content::views::UploadConfig, description = "The upload limits")), security(("bearer" = [])))]
pub async fn upload_config(
    Caller(_c): Caller,
    st: Data<AppState>,
) -> Result<HttpResponse, RestError> {
    Ok(HttpResponse::Ok().json(blocking(&st, uploads::config).await?))
}

#[utoipa::path(get, path = "/rest/uploads/{id}", tag = "uploads", params(("id" = i64, Path, description = "An upload session id", minimum = 1)), responses((status = 200, body = coffer_service::content::views::UploadView, description = "The session"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such session of the caller's, or it expired")), security(("bearer" = [])))]
pub async fn get_upload(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ONE)?;
    let id = upload_id(&id)?;
    let user = c.user.id.clone();
    Ok(HttpResponse::Ok().json(blocking(&st, move |ctx| uploads::get(ctx, &user, id)).await?))
}

#[utoipa::path(delete, path = "/rest/uploads/{id}", tag = "uploads", params(("id" = i64, Path, description = "An upload session id", minimum = 1)), responses((status = 204, description = "The session and what it staged are gone"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete_upload(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = upload_id(&id)?;
    uploads::delete(&st.ctx, &c.user.id, id).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// A multipart or JSON body's field errors as the body readers answer them.
fn multipart_error(e: actix_multipart::MultipartError) -> BodyError {
    if let actix_multipart::MultipartError::Payload(p) = &e {
        if crate::plumbing::middleware::is_body_timeout(p) {
            return BodyError(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "body timeout",
            ));
        }
    }
    BodyError(std::io::Error::other(e.to_string()))
}

pub(crate) fn rest_multipart_error(e: actix_multipart::MultipartError) -> RestError {
    let b = multipart_error(e);
    if b.0.kind() == std::io::ErrorKind::TimedOut {
        return RestError(ApiError::new(ErrorCode::RequestTimeout));
    }
    RestError(
        ApiError::new(ErrorCode::RequestInvalidJson)
            .with_message("The request body is not valid multipart/form-data."),
    )
}

pub(crate) fn is_multipart(req: &HttpRequest) -> bool {
    crate::plumbing::extract::content_type(req)
        .is_some_and(|ct| ct.starts_with("multipart/form-data"))
}

/// A small multipart text field (at most 1 KiB).
pub(crate) async fn text_field(field: &mut actix_multipart::Field) -> Result<String, RestError> {
    let mut buf = Vec::new();
    while let Some(chunk) = field.next().await {
        let chunk = chunk.map_err(rest_multipart_error)?;
        if buf.len() + chunk.len() > 1024 {
            return Err(ApiError::new(ErrorCode::InvalidParameter)
                .with_message("A form field is too long.")
                .into());
        }
        buf.extend_from_slice(&chunk);
    }
    let s = String::from_utf8(buf)
        .map_err(|_| RestError(ApiError::new(ErrorCode::InputInvalidFormat)))?;
    if !coffer_domain::input::is_clean(&s, false) {
        return Err(coffer_domain::input::unclean(field.name().unwrap_or("field")).into());
    }
    Ok(s.trim().to_string())
}

fn int_field(name: &str, v: &str) -> Result<u64, RestError> {
    v.parse::<u64>()
        .map_err(|_| RestError(ApiError::field(ErrorCode::InputNotInteger, name)))
}

fn bool_field(name: &str, v: &str) -> Result<bool, RestError> {
    Ok(list::parse_bool(name, v)?)
}

/// A field's bytes as a body stream for the store.
pub(crate) fn field_body(field: actix_multipart::Field) -> Body {
    Box::pin(field.map_err(multipart_error))
}

fn bytes_body(b: Bytes) -> Body {
    Box::pin(futures_util::stream::iter([Ok::<_, BodyError>(b)]))
}

/// The chunk's fields as they were sent (before they are complete).
#[derive(Default)]
struct ChunkFields {
    mode: Option<String>,
    compression_size: Option<u64>,
    original_size: Option<u64>,
    index: Option<u32>,
    last_chunk: bool,
}

impl ChunkFields {
    fn meta(&self) -> Result<ChunkMeta, RestError> {
        let mode = self.mode.as_deref().ok_or_else(|| {
            RestError(ApiError::field(ErrorCode::InputRequired, "compressionMode"))
        })?;
        let compression = Compression::parse(mode)?;
        let original = self
            .original_size
            .ok_or_else(|| RestError(ApiError::field(ErrorCode::InputRequired, "originalSize")))?;
        let compressed = self.compression_size.ok_or_else(|| {
            RestError(ApiError::field(ErrorCode::InputRequired, "compressionSize"))
        })?;
        Ok(ChunkMeta {
            index: self.index,
            last_chunk: self.last_chunk,
            compression,
            compression_size: compressed,
            original_size: original,
        })
    }

    fn set(&mut self, name: &str, v: &str) -> Result<(), RestError> {
        match name {
            "compressionMode" => self.mode = Some(v.to_string()),
            "compressionSize" => self.compression_size = Some(int_field(name, v)?),
            "originalSize" => self.original_size = Some(int_field(name, v)?),
            "index" => {
                let i = int_field(name, v)?;
                self.index = Some(u32::try_from(i).map_err(|_| {
                    RestError(ApiError::field(ErrorCode::InvalidParameter, "index"))
                })?)
            }
            "lastChunk" => self.last_chunk = bool_field(name, v)?,
            _ => {}
        }
        Ok(())
    }
}

#[utoipa::path(post, path = "/rest/uploads/{id}", tag = "uploads", params(("id" = i64, Path, description = "An upload session id", minimum = 1), ("ref" = Option<String>, Query, description = "Without a bearer token: the reference of the web-form submission the session was opened for by `POST /rest/public/mail/{id}/actions/initiateUpload` (404 for any other reference, 429 after too many failures from the address)")), request_body(content = crate::plumbing::schema::ChunkBody, content_type = "multipart/form-data"), responses((status = 200, body = coffer_service::content::views::UploadView, description = "The chunk was taken (or was a repeat of the last one); for a public upload (`ref`) also the last chunk, with the session `finished`"), (status = 201, body = coffer_service::content::views::FileView, description = "The last chunk completed the file"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such session of the caller's"), (status = 408, description = "`ERR_REQUEST_TIMEOUT`"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_IN_LIST` (compressionMode), `ERR_INVALID_PARAMETER` (index, sizes, content)"), (status = 429, description = "`ERR_REQUEST_RATE_LIMITED`: with `ref`, too many wrong references from this address"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the content was freed while it was stored; send it again")), security(("bearer" = []), ()))]
pub async fn chunk(
    who: CallerOrRef,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    payload: Payload,
) -> Result<HttpResponse, RestError> {
    let id = upload_id(&id)?;
    take_chunk(who, st, req, id, payload).await
}

/// The chunk endpoint under `/{host_name}/rest`: any node takes any chunk, so the host name is
/// not checked.
pub async fn chunk_on_host(
    who: CallerOrRef,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    payload: Payload,
) -> Result<HttpResponse, RestError> {
    let id = upload_id(&path.1)?;
    take_chunk(who, st, req, id, payload).await
}

/// Whose session a chunk is for: the caller's, or, with a submission's reference, the form
/// owner's (the reference is checked against the session).
async fn chunk_sender(
    st: &Data<AppState>,
    req: &HttpRequest,
    who: CallerOrRef,
    id: i64,
) -> Result<(String, bool), RestError> {
    // A session opened through a request-file link: the link decides who may send its chunks
    // (and, like a web-form submission's, its last chunk answers with the session).
    let visitor = coffer_service::request_files::Visitor {
        reference: serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
            .ok()
            .and_then(|q| q.into_iter().find(|(k, _)| k == "ref").map(|(_, v)| v))
            .unwrap_or_default(),
        user: match &who {
            CallerOrRef::Caller(c) => Some((c.user.id.clone(), c.user.email.clone())),
            CallerOrRef::Reference { .. } => None,
        },
        session: req
            .cookie(coffer_service::request_files::SESSION_COOKIE)
            .map(|c| c.value().to_string()),
        client_ip: st.client_ip(req),
    };
    if let Some(user) = blocking(st, move |ctx| {
        coffer_service::request_files::recipient::chunk_user(ctx, id, &visitor)
    })
    .await?
    {
        return Ok((user, true));
    }
    match who {
        CallerOrRef::Caller(c) => Ok((c.user.id.clone(), false)),
        CallerOrRef::Reference {
            reference,
            client_ip,
        } => {
            let user = blocking(st, move |ctx| {
                coffer_service::web_forms::drafts::chunk_user(
                    ctx,
                    id,
                    &reference,
                    client_ip.as_deref(),
                )
            })
            .await?;
            Ok((user, true))
        }
    }
}

async fn take_chunk(
    who: CallerOrRef,
    st: Data<AppState>,
    req: HttpRequest,
    id: i64,
    payload: Payload,
) -> Result<HttpResponse, RestError> {
    let (user, public) = chunk_sender(&st, &req, who, id).await?;
    match receive_chunk(&st, req, &user, id, payload).await? {
        ChunkOutcome::Progress(u) => Ok(HttpResponse::Ok().json(u)),
        // The holder of a submission's reference is not shown the file (it is the form
        // owner's): the last chunk answers 200 with the session, finished.
        ChunkOutcome::Done(_) if public => {
            let session = blocking(&st, move |ctx| uploads::get(ctx, &user, id)).await?;
            Ok(HttpResponse::Ok().json(session))
        }
        ChunkOutcome::Done(f) => Ok(HttpResponse::Created().json(f)),
    }
}

/// Reads a chunk (multipart with the bytes in `content`, or JSON with them in base64) and gives
/// it to session `id` of `user`.
async fn receive_chunk(
    st: &Data<AppState>,
    req: HttpRequest,
    user: &str,
    id: i64,
    payload: Payload,
) -> Result<ChunkOutcome, RestError> {
    if !is_multipart(&req) {
        // JSON with the content in base64, read whole (within the chunk limit).
        let config = blocking(st, uploads::config).await?;
        let limit = (config.upload_chunk_max as usize).saturating_mul(4) / 3 + 64 * 1024;
        let mut payload = payload.into_inner();
        let raw = read_body(&mut payload, limit).await?;
        let body: serde_json::Value = serde_json::from_slice(&raw)
            .map_err(|e| RestError(crate::plumbing::body::malformed(&e)))?;
        let f = Fields::of(&body)?;
        let mut fields = ChunkFields::default();
        for name in [
            "compressionMode",
            "compressionSize",
            "originalSize",
            "index",
            "lastChunk",
        ] {
            if let Some(v) = body.get(name).filter(|v| !v.is_null()) {
                let text = match v {
                    serde_json::Value::String(s) => s.clone(),
                    serde_json::Value::Number(n) => n.to_string(),
                    serde_json::Value::Bool(b) => b.to_string(),
                    _ => return Err(ApiError::field(ErrorCode::InputInvalidFormat, name).into()),
                };
                fields.set(name, &text)?;
            }
        }
        let content = f.req_str("content")?;
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(content.trim())
            .map_err(|_| RestError(ApiError::field(ErrorCode::InvalidParameter, "content")))?;
        let meta = fields.meta()?;
        return Ok(
            uploads::put_chunk(&st.ctx, user, id, meta, bytes_body(Bytes::from(bytes))).await?,
        );
    }
    let mut mp = actix_multipart::Multipart::new(req.headers(), payload.into_inner());
    let mut fields = ChunkFields::default();
    let mut buffered: Option<Bytes> = None;
    while let Some(field) = mp.next().await {
        let mut field = field.map_err(rest_multipart_error)?;
        let name = field.name().unwrap_or("").to_string();
        if name == "content" {
            // The usual order: the sizes first, then the bytes, which stream to the store.
            if let Ok(meta) = fields.meta() {
                return Ok(uploads::put_chunk(&st.ctx, user, id, meta, field_body(field)).await?);
            }
            // The bytes came first: keep them (within the chunk limit) until the sizes arrive.
            let config = blocking(st, uploads::config).await?;
            let mut buf = web::BytesMut::new();
            while let Some(piece) = field.next().await {
                let piece = piece.map_err(rest_multipart_error)?;
                if buf.len() + piece.len() > config.upload_chunk_max as usize {
                    return Err(ApiError::field(ErrorCode::InvalidParameter, "originalSize").into());
                }
                buf.extend_from_slice(&piece);
            }
            buffered = Some(buf.freeze());
        } else {
            let v = text_field(&mut field).await?;
            fields.set(&name, &v)?;
        }
    }
    let meta = fields.meta()?;
    let bytes =
        buffered.ok_or_else(|| RestError(ApiError::field(ErrorCode::InputRequired, "content")))?;
    Ok(uploads::put_chunk(&st.ctx, user, id, meta, bytes_body(bytes)).await?)
}

/// Reads a one-shot multipart upload: streams the `body` field to the store, then reads the
/// other fields, then commits. Returns the file.
async fn one_shot(
    c: &coffer_service::platform::auth::Caller,
    st: &Data<AppState>,
    req: &HttpRequest,
    payload: Payload,
    target: Target,
) -> Result<coffer_service::content::views::FileView, RestError> {
    if !is_multipart(req) {
        return Err(ApiError::new(ErrorCode::RequestInvalidJson)
            .with_message("The upload must be sent as multipart/form-data with the file in `body`.")
            .into());
    }
    let length = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<i64>().ok());
    let mut mp = actix_multipart::Multipart::new(req.headers(), payload.into_inner());
    let mut target = target;
    let mut stored: Option<Stored> = None;
    let mut client_created = None;
    let mut client_modified = None;
    let mut disable_auto_version = false;
    let user = c.user.id.clone();
    let result: Result<(), RestError> = async {
        while let Some(field) = mp.next().await {
            let mut field = field.map_err(rest_multipart_error)?;
            let name = field.name().unwrap_or("").to_string();
            match name.as_str() {
                "body" | "content" | "file" if stored.is_none() => {
                    if let Target::Folder {
                        name: file_name, ..
                    } = &mut target
                    {
                        if file_name.is_empty() {
                            let from_part = field
                                .content_disposition()
                                .and_then(|cd| cd.get_filename().map(str::to_string))
                                .unwrap_or_default();
                            // Only the last path segment a browser may send.
                            let base = from_part
                                .rsplit(['/', '\\'])
                                .next()
                                .unwrap_or_default()
                                .to_string();
                            *file_name = base;
                        }
                    }
                    // The request's length bounds the file: refuse a too large one before
                    // storing anything (a multipart envelope adds little).
                    let hint = length.map(|l| (l - 64 * 1024).max(0));
                    stored = Some(
                        uploads::store_body(&st.ctx, &user, &target, hint, field_body(field))
                            .await?,
                    );
                }
                "clientCreated" => {
                    let v = text_field(&mut field).await?;
                    client_created = Some(parse_date("clientCreated", &v)?);
                }
                "clientModified" => {
                    let v = text_field(&mut field).await?;
                    client_modified = Some(parse_date("clientModified", &v)?);
                }
                "disableAutoVersion" => {
                    let v = text_field(&mut field).await?;
                    disable_auto_version = bool_field("disableAutoVersion", &v)?;
                }
                _ => {
                    text_field(&mut field).await?;
                }
            }
        }
        Ok(())
    }
    .await;
    if let Err(e) = result {
        if let Some(s) = &stored {
            uploads::release_unused(&st.ctx, s).await;
        }
        return Err(e);
    }
    let mut stored =
        stored.ok_or_else(|| RestError(ApiError::field(ErrorCode::InputRequired, "body")))?;
    stored.client_created = client_created;
    stored.client_modified = client_modified;
    if let Target::Folder {
        disable_auto_version: d,
        ..
    } = &mut target
    {
        *d = disable_auto_version;
    }
    match files::commit_owned(&st.ctx, &user, target, stored.clone()).await {
        Ok(v) => Ok(v),
        Err(e) => {
            uploads::release_unused(&st.ctx, &stored).await;
            Err(e.into())
        }
    }
}

#[utoipa::path(post, path = "/rest/folders/{id}/actions/file", tag = "uploads", params(("id" = String, Path, description = "The folder to upload into")), request_body(content = crate::plumbing::schema::FileUploadBody, content_type = "multipart/form-data"), responses((status = 200, body = coffer_service::content::views::FileView, description = "The file (a new version when the name exists)"), (status = 400, description = "`ERR_REQUEST_INVALID_JSON`: not multipart"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_IS_BASE_DIR`, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 408, description = "`ERR_REQUEST_TIMEOUT`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: `disableAutoVersion` and the name exists"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_INVALID_DATE`, `ERR_LICENSE_MAX_UPLOAD_SIZE`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the content was freed while it was stored; send it again")), security(("bearer" = [])))]
pub async fn upload_file(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    payload: Payload,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ONE)?;
    let target = Target::Folder {
        folder_id: id.into_inner(),
        name: String::new(),
        disable_auto_version: false,
    };
    Ok(HttpResponse::Ok().json(one_shot(&c, &st, &req, payload, target).await?))
}

#[utoipa::path(post, path = "/rest/files/{id}/versions", tag = "files", params(("id" = String, Path, description = "A file id")), request_body(content = crate::plumbing::schema::FileUploadBody, content_type = "multipart/form-data"), responses((status = 200, body = coffer_service::content::views::FileView, description = "The file with its new current version"), (status = 400, description = "`ERR_REQUEST_INVALID_JSON`: not multipart"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 408, description = "`ERR_REQUEST_TIMEOUT`"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_LICENSE_MAX_UPLOAD_SIZE`"), (status = 503, description = "`ERR_SERVICE_UNAVAILABLE`: the content was freed while it was stored; send it again")), security(("bearer" = [])))]
pub async fn new_version(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    payload: Payload,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ONE)?;
    let target = Target::File {
        file_id: id.into_inner(),
    };
    Ok(HttpResponse::Ok().json(one_shot(&c, &st, &req, payload, target).await?))
}

#[utoipa::path(get, path = "/rest/files/{id}/versions", tag = "files", params(("id" = String, Path, description = "A file id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::content::views::VersionView>, description = "The versions, newest first unless asked otherwise"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn versions(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &VERSIONS)?;
    let newest = q.order.1 == Dir::Desc;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let (offset, limit) = (q.offset, q.limit);
    Ok(listing(
        Envelope::Metadata,
        &blocking(&st, move |ctx| {
            files::versions(ctx, &user, &id, newest, offset, limit)
        })
        .await?,
    ))
}

/// `?inline=true` asks to display the content rather than save it; granted only for types that
/// cannot run script (`coffer_domain::content::serve_inline`).
pub const CONTENT: ListSpec = ListSpec {
    extra_params: &["inline"],
    ..ListSpec::PLAIN
};

#[utoipa::path(get, path = "/rest/files/{id}/content", tag = "files", params(("id" = String, Path, description = "A file id"), ("inline" = Option<bool>, Query, description = "Show in place rather than save: granted only for images, PDF, audio and video"), ("Range" = Option<String>, Header, description = "One byte range (`bytes=a-b`, `a-`, `-n`)"), ("If-None-Match" = Option<String>, Header, description = "An `ETag` already held")), responses((status = 200, description = "The content (`Content-Disposition: attachment`)", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 416, description = "`ERR_INVALID_PARAMETER`: the range lies outside the content")), security(("bearer" = [])))]
pub async fn content(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &CONTENT)?;
    let inline = match q.extra("inline") {
        Some(v) => list::parse_bool("inline", v)?,
        None => false,
    };
    let user = c.user.id.clone();
    let id = id.into_inner();
    let d = blocking(&st, move |ctx| files::download(ctx, &user, &id, None)).await?;
    serve(&st, &req, &c.user.id, d, inline).await
}

#[utoipa::path(get, path = "/rest/files/{id}/versions/{version}/content", tag = "files", params(("id" = String, Path, description = "A file id"), ("version" = String, Path, description = "A version id"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The version's content", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 416, description = "`ERR_INVALID_PARAMETER`")), security(("bearer" = [])))]
pub async fn version_content(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let (id, version) = path.into_inner();
    let user = c.user.id.clone();
    let d = blocking(&st, move |ctx| {
        files::download(ctx, &user, &id, Some(&version))
    })
    .await?;
    serve(&st, &req, &c.user.id, d, false).await
}

/// Streams a download, or a preview (`files::Download::preview`, its ETag from the preview
/// blob): `ETag`, `If-None-Match`, one `Range`, a safe `Content-Disposition`, the stored type,
/// never sniffed and never run as a page.
async fn serve(
    st: &AppState,
    req: &HttpRequest,
    user_id: &str,
    d: files::Download,
    inline: bool,
) -> Result<HttpResponse, RestError> {
    serve_as(st, req, Served::File(user_id), d, inline).await
}

/// Which event a served download records.
pub(crate) enum Served<'a> {
    /// A file of the content tree, by this user (`filesystem.file.download`).
    File(&'a str),
    /// A file served through a request-file link (`requestfile.file.download`).
    RequestFile { link_id: i64 },
    /// An email's attachment, by this user or by an outside recipient
    /// (`mail.attachment.download`).
    Mail {
        actor: Option<&'a str>,
        /// The outside recipient's address, when it is one who downloads.
        recipient: Option<&'a str>,
        email_id: &'a str,
    },
    /// Content whose read the service recorded itself (a DLI export).
    Recorded,
}

/// As [`serve`], recording the download as `served` says.
pub(crate) async fn serve_as(
    st: &AppState,
    req: &HttpRequest,
    served: Served<'_>,
    d: files::Download,
    inline: bool,
) -> Result<HttpResponse, RestError> {
    let inline = inline && rules::serve_inline(&d.mime);
    serve_shown(st, req, served, d, inline).await
}

/// As [`serve_as`], shown in place when `inline` whatever the type: for a rendition the caller
/// made safe to show (a text as `text/plain`, which `nosniff` keeps from being read as
/// anything else).
pub(crate) async fn serve_shown(
    st: &AppState,
    req: &HttpRequest,
    served: Served<'_>,
    d: files::Download,
    inline: bool,
) -> Result<HttpResponse, RestError> {
    let etag = rules::etag(&d.blob, &d.version_id);
    let if_none = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok());
    if rules::if_none_match_hits(if_none, &etag) {
        return Ok(HttpResponse::NotModified()
            .insert_header((header::ETAG, etag))
            .finish());
    }
    let size = d.size.max(0) as u64;
    let range = req
        .headers()
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok());
    let outcome = rules::parse_range(range, size);
    let (status, span) = match outcome {
        RangeOutcome::Full => (actix_web::http::StatusCode::OK, None),
        RangeOutcome::Partial { start, end } => (
            actix_web::http::StatusCode::PARTIAL_CONTENT,
            Some((start, end)),
        ),
        RangeOutcome::Unsatisfiable => {
            let mut e = ApiError::field(ErrorCode::InvalidParameter, "Range")
                .with_message("The range lies outside the content.");
            e.status = 416;
            let mut res = crate::plumbing::error::rest_error(&e);
            res.headers_mut().insert(
                header::CONTENT_RANGE,
                header::HeaderValue::from_str(&format!("bytes */{size}"))
                    .unwrap_or(header::HeaderValue::from_static("bytes */0")),
            );
            return Ok(res);
        }
    };
    let read = if size == 0 {
        None
    } else {
        Some(files::read(&st.ctx, &d, span).await?)
    };
    match served {
        _ if d.preview => {}
        Served::File(user_id) => {
            files::record_download(&st.ctx, user_id, &d, span.is_some()).await?;
        }
        Served::RequestFile { link_id } => {
            coffer_service::request_files::record_download(&st.ctx, link_id, &d).await?;
        }
        Served::Mail {
            actor,
            recipient,
            email_id,
        } => {
            coffer_service::mail::record_download(&st.ctx, actor, recipient, email_id, &d).await?;
        }
        Served::Recorded => {}
    }
    let mut res = HttpResponse::build(status);
    res.insert_header((header::ETAG, etag))
        .insert_header((header::ACCEPT_RANGES, "bytes"))
        .insert_header((
            header::CONTENT_DISPOSITION,
            rules::content_disposition(&d.name, inline),
        ))
        .insert_header(("Content-Security-Policy", "sandbox; default-src 'none'"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header((header::CACHE_CONTROL, "private, no-cache"))
        .content_type(if inline {
            d.mime.as_str()
        } else if d.mime.starts_with("text/html")
            || d.mime.contains("xml")
            || d.mime.contains("javascript")
        {
            "application/octet-stream"
        } else {
            d.mime.as_str()
        });
    let length = match span {
        Some((a, b)) => {
            res.insert_header((header::CONTENT_RANGE, format!("bytes {a}-{b}/{size}")));
            b - a + 1
        }
        None => size,
    };
    match read {
        None => Ok(res.body(Bytes::new())),
        Some(read) => {
            let stream = read
                .stream
                .map_err(|e| -> Box<dyn std::error::Error> { Box::new(e) });
            Ok(res
                .no_chunking(length)
                .streaming(crate::plumbing::respond::SliceStream::new(stream)))
        }
    }
}

#[utoipa::path(get, path = "/rest/files/{id}/preview", tag = "files", params(("id" = String, Path, description = "A file id")), responses((status = 200, body = coffer_service::content::views::PreviewView, description = "The preview's state and where to read it"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn preview(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let user = c.user.id.clone();
    let id = id.into_inner();
    let p = blocking(&st, move |ctx| files::preview(ctx, &user, &id)).await?;
    Ok(HttpResponse::Ok().json(p))
}

#[utoipa::path(get, path = "/rest/files/{id}/preview/content", tag = "files", params(("id" = String, Path, description = "A file id"), ("Range" = Option<String>, Header, description = "One byte range (`bytes=a-b`, `a-`, `-n`)"), ("If-None-Match" = Option<String>, Header, description = "An `ETag` already held")), responses((status = 200, description = "The preview of the current version, shown in place (`Content-Disposition: inline`): a PNG thumbnail of an image (its longer side at most 256 pixels), or a PDF made by the server's converter", content(("image/png"), ("application/pdf"))), (status = 206, description = "The range asked for", content(("image/png"), ("application/pdf"))), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such file, or no preview was made for it (see `GET /rest/files/{id}/preview`)"), (status = 416, description = "`ERR_INVALID_PARAMETER`: the range lies outside the content")), security(("bearer" = [])))]
pub async fn preview_content(
    Caller(c): Caller,
    st: Data<AppState>,
    req: HttpRequest,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &ListSpec::PLAIN)?;
    let user = c.user.id.clone();
    let id = id.into_inner();
    let d = blocking(&st, move |ctx| files::preview_content(ctx, &user, &id)).await?;
    serve(&st, &req, &c.user.id, d, true).await
}
