//! `/rest/mail`: secure mail (docs/mail.md). Handlers read the query and body and call
//! `coffer_service::mail`, which decides who may see and change what.

pub mod contacts;
pub mod pages;
pub mod shared_mailboxes;

use crate::content::parse_date;
use crate::content::transfer::{initiate_input, serve_as, Served};
use crate::plumbing::body::Body;
use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, CallerOrRef, QueryPairs};
use crate::plumbing::respond::{listing, Envelope};
use crate::plumbing::schema::{SendFileBody, WithdrawBody};
use crate::plumbing::state::{blocking, AppState};
use actix_web::web::{self, Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use coffer_domain::list::{self, Dir, FieldSpec, Kind, ListQuery, ListSpec, Op};
use coffer_domain::mail::SendRequest;
use coffer_errors::{ApiError, ErrorCode};
use coffer_service::mail::{self as svc, BulkResult};
use coffer_service::mail::{Bucket, MailQuery};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/mail/actions/sendFile").route(web::post().to(send)))
        .service(web::resource("/mail/actions/counters").route(web::get().to(counters)))
        .service(web::resource("/mail/actions/read").route(web::patch().to(read)))
        .service(web::resource("/mail/actions/unread").route(web::patch().to(unread)))
        .service(web::resource("/mail/actions/trash").route(web::patch().to(trash)))
        .service(web::resource("/mail/actions/withdraw").route(web::post().to(withdraw)))
        .service(web::resource("/mail").route(web::get().to(list)))
        .service(
            web::resource("/mail/{id}")
                .route(web::get().to(get))
                .route(web::delete().to(delete)),
        )
        .service(web::resource("/mail/{id}/actions/sendFile").route(web::put().to(send_draft)))
        .service(
            web::resource("/mail/{id}/actions/initiateUpload")
                .route(web::post().to(initiate_upload)),
        )
        .service(
            web::resource("/mail/{id}/actions/withdrawFiles").route(web::post().to(withdraw_files)),
        )
        .service(web::resource("/mail/{id}/recipients").route(web::get().to(recipients)))
        .service(web::resource("/mail/{id}/attachments").route(web::get().to(attachments)))
        .service(
            web::resource("/mail/{email_id}/attachments/{id}/content")
                .route(web::get().to(attachment_content)),
        );
}

const TEXT_EQ_IN: &[Op] = &[Op::Eq, Op::In];
const DATES: &[Op] = &[Op::Eq, Op::Gt, Op::Gte, Op::Lt, Op::Lte];

pub const LIST: ListSpec = ListSpec {
    filters: &[
        FieldSpec {
            name: "senderId",
            kind: Kind::Text,
            ops: TEXT_EQ_IN,
        },
        FieldSpec {
            name: "emailPackageId",
            kind: Kind::Text,
            ops: TEXT_EQ_IN,
        },
        FieldSpec {
            name: "templateId",
            kind: Kind::Int,
            ops: TEXT_EQ_IN,
        },
        FieldSpec {
            name: "isRecipient",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "read",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "deleted",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "isPreview",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "isUserSent",
            kind: Kind::Bool,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "date",
            kind: Kind::Text,
            ops: DATES,
        },
        FieldSpec {
            name: "modified_date",
            kind: Kind::Text,
            ops: DATES,
        },
        FieldSpec {
            name: "status",
            kind: Kind::Text,
            ops: TEXT_EQ_IN,
        },
        FieldSpec {
            name: "bucket",
            kind: Kind::Text,
            ops: &[Op::Eq],
        },
        FieldSpec {
            name: "webFormId",
            kind: Kind::Text,
            ops: &[Op::Eq],
        },
    ],
    order_fields: &["id", "date", "status"],
    default_order: ("date", Dir::Desc),
    default_limit: 100,
    max_limit: 1000,
    with_fields: &["recipients"],
    extra_params: &[
        "sharedMailboxId",
        "returnCustomWebForm",
        "customWebFormOnly",
        "trackingOnly",
        "approvalRequestOnly",
    ],
    bulk: false,
};

const STATUSES: &[&str] = &[
    "sent",
    "draft",
    "queued",
    "error",
    "self_send",
    "pending_review",
    "denied",
];

fn invalid_filter(detail: &str) -> RestError {
    RestError(
        ApiError::new(ErrorCode::RequestInvalidFilter)
            .with_message(format!("The filter is invalid: {detail}.")),
    )
}

/// Turns the list query into what the store selects.
pub(crate) fn mail_query(q: &ListQuery) -> Result<MailQuery, RestError> {
    let mut m = MailQuery {
        bucket: None,
        with_trashed: false,
        read: None,
        statuses: Vec::new(),
        sender_ids: Vec::new(),
        ids: Vec::new(),
        is_recipient: None,
        web_form_id: None,
        date_low: None,
        date_high: None,
        modified_low: None,
        modified_high: None,
        order: q.order,
        offset: q.offset,
        limit: q.limit,
    };
    let texts = |f: &list::Filter| -> Vec<String> {
        f.values
            .iter()
            .filter_map(|v| v.as_text().map(str::to_string))
            .collect()
    };
    let mut nothing = false;
    for f in &q.filters {
        let b = matches!(f.value(), list::Value::Bool(true));
        match f.field {
            "senderId" => m.sender_ids.extend(texts(f)),
            "emailPackageId" => m.ids.extend(texts(f)),
            // Coffer has no mail templates: no email has one.
            "templateId" => nothing = true,
            "isRecipient" => m.is_recipient = Some(b),
            "read" => m.read = Some(b),
            "deleted" if b => m.bucket = Some(Bucket::Trash),
            "deleted" => {}
            // No email is a view-only preview; every listed one is shown as `isUserSent` by role.
            "isPreview" if b => nothing = true,
            "isPreview" => {}
            "isUserSent" => m.is_recipient = Some(!b),
            "status" => {
                for s in texts(f) {
                    if !STATUSES.contains(&s.as_str()) {
                        return Err(invalid_filter(&format!("status: `{s}` is not a status")));
                    }
                    m.statuses.push(s);
                }
            }
            "bucket" => {
                let v = f.value().as_text().unwrap_or_default();
                m.bucket = Some(Bucket::parse(v).ok_or_else(|| {
                    invalid_filter("bucket: inbox, draft, outgoing, sent or trash")
                })?);
            }
            "webFormId" => m.web_form_id = f.value().as_text().map(str::to_string),
            "date" | "modified_date" => {
                let v = f.value().as_text().unwrap_or_default();
                let t = parse_date(f.field, v)?;
                let (low, high) = match f.op {
                    Op::Gt => (Some((t, false)), None),
                    Op::Gte => (Some((t, true)), None),
                    Op::Lt => (None, Some((t, false))),
                    Op::Lte => (None, Some((t, true))),
                    // A bare date is that whole day (or that second, for a time).
                    _ if v.len() == 10 => (Some((t, true)), Some((t + 86_400, false))),
                    _ => (Some((t, true)), Some((t, true))),
                };
                let (l, h) = if f.field == "date" {
                    (&mut m.date_low, &mut m.date_high)
                } else {
                    (&mut m.modified_low, &mut m.modified_high)
                };
                if low.is_some() {
                    *l = low;
                }
                if high.is_some() {
                    *h = high;
                }
            }
            _ => {}
        }
    }
    if nothing {
        // A condition no email meets.
        m.ids = vec![String::new()];
    }
    Ok(m)
}

#[utoipa::path(get, path = "/rest/mail", tag = "mail", responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::mail::MailView>, description = "One mailbox's mail (default order `date:desc`)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_ACCESS_USER`: not an active member of the shared mailbox"), (status = 422, description = "`ERR_INPUT_INVALID_DATE`")), security(("bearer" = [])))]
pub async fn list(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &LIST)?;
    let m = mail_query(&q)?;
    let shared = q.extra("sharedMailboxId").map(str::to_string);
    let with = q.with.iter().any(|w| w == "recipients");
    let l = blocking(&st, move |ctx| {
        svc::list(ctx, c.user_id(), shared.as_deref(), &m, with)
    })
    .await?;
    Ok(listing(Envelope::Metadata, &l))
}

pub const ONE: ListSpec = ListSpec {
    with_fields: &["recipients"],
    extra_params: &["print_flag"],
    ..ListSpec::PLAIN
};

#[utoipa::path(get, path = "/rest/mail/{id}", tag = "mail", params(("id" = String, Path, description = "An email id"), ("ref" = Option<String>, Query, description = "Without a bearer token: the reference of an outside recipient's link, for `no_auth` mail (a capability read; 404 for any other reference, 429 after too many failures from the address)")), responses((status = 200, body = coffer_service::mail::MailView, description = "The email as the caller's mailbox shows it"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: no such email in a mailbox of the caller's")), security(("bearer" = []), ()))]
pub async fn get(
    reader: CallerOrRef,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&without_ref(&reader, q), &ONE)?;
    let with = q.with.iter().any(|w| w == "recipients");
    let id = id.into_inner();
    let v = match reader {
        CallerOrRef::Caller(c) => {
            blocking(&st, move |ctx| svc::get(ctx, c.user_id(), &id, with)).await?
        }
        CallerOrRef::Reference {
            reference,
            client_ip,
        } => {
            blocking(&st, move |ctx| {
                svc::access::get_by_reference(ctx, &id, &reference, client_ip.as_deref())
            })
            .await?
        }
    };
    Ok(HttpResponse::Ok().json(v))
}

/// The query without the `ref` a capability read carries (it is not a list parameter).
/// A caller with a token who also sends `ref` is read as the caller; the reference is ignored.
fn without_ref(_reader: &CallerOrRef, mut q: Vec<(String, String)>) -> Vec<(String, String)> {
    q.retain(|(k, _)| k != "ref");
    q
}

pub const SEND: ListSpec = ListSpec {
    with_fields: &["recipients"],
    ..ListSpec::PLAIN
};

/// A `sendFile` body as the use case reads it. An address or file id that is not a string
/// answers 422 `ERR_INVALID_PARAMETER` naming the item, as a bad address does.
fn send_request(body: Result<SendFileBody, RestError>) -> Result<SendRequest, RestError> {
    let body = body.map_err(|RestError(e)| match e.field.as_deref() {
        Some(f)
            if e.code == ErrorCode::InputInvalidFormat
                && ["to[", "cc[", "bcc[", "files["]
                    .iter()
                    .any(|list| f.starts_with(list)) =>
        {
            let field = f.to_string();
            RestError(
                ApiError::field(ErrorCode::InvalidParameter, field.clone())
                    .with_message(format!("The parameter is invalid ({field}: a string).")),
            )
        }
        _ => RestError(e),
    })?;
    let texts = |list: Option<Vec<crate::plumbing::schema::EmailText>>| -> Vec<String> {
        list.unwrap_or_default().into_iter().map(|e| e.0).collect()
    };
    Ok(SendRequest {
        to: texts(body.to),
        cc: texts(body.cc),
        bcc: texts(body.bcc),
        files: body
            .files
            .unwrap_or_default()
            .into_iter()
            .map(|f| f.0)
            .collect(),
        acl: body.acl,
        expire: body.expire,
        draft: body.draft,
        secure_body: body.secure_body,
        self_copy: body.self_copy,
        include_fingerprint: body.include_fingerprint,
        uploading: body.uploading,
        kind: body.kind,
        parent_email_id: body.parent_email_id,
        subject: body.subject,
        body: body.body,
        shared_mailbox_id: body.shared_mailbox_id,
    })
}

#[utoipa::path(post, path = "/rest/mail/actions/sendFile", tag = "mail", request_body(content = SendFileBody), responses((status = 201, body = coffer_service::mail::MailView, description = "The email: a draft (`draft: true`), or sent (`sent`, `self_send`) or on its way to outside recipients (`queued`)"), (status = 403, description = "`ERR_ACCESS_USER`, `ERR_ENTITY_DELETED`, `ERR_ENTITY_IS_SECURE_FOLDER` (a file in a secure folder), `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`, `ERR_INPUT_EMAIL_WITH_NO_RECIPIENTS_NOT_ALLOWED`, `ERR_INPUT_SECURE_BODY_WITH_NO_AUTH_NOT_ALLOWED`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`: a file or the parent email"), (status = 422, description = "`ERR_INVALID_PARAMETER`, `ERR_INPUT_EXCEEDS_MAX_VALUE`, `ERR_INPUT_PAST_DATE`, `ERR_INPUT_INVALID_DATE`, `ERR_INPUT_HTML_TAGS_INVALID`, `ERR_INPUT_NOT_IN_LIST`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_NOT_ARRAY`, `ERR_INPUT_NOT_BOOLEAN`, `ERR_INPUT_NOT_STRING`")), security(("bearer" = [])))]
pub async fn send(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<SendFileBody>,
) -> Result<HttpResponse, RestError> {
    let body = send_request(body)?;
    list::parse(&q, &SEND)?;
    let input = coffer_domain::mail::parse_send(body, coffer_service::now())?;
    let v = blocking(&st, move |ctx| svc::send(ctx, c.user_id(), None, &input)).await?;
    let location = format!("{}/rest/mail/{}", st.base_url(), v.id);
    Ok(crate::plumbing::respond::created(
        actix_web::http::StatusCode::CREATED,
        location,
        &v,
    ))
}

#[utoipa::path(put, path = "/rest/mail/{id}/actions/sendFile", tag = "mail", params(("id" = String, Path, description = "A draft of the caller's")), request_body(content = SendFileBody), responses((status = 200, body = coffer_service::mail::MailView, description = "The draft, changed, or sent"), (status = 403, description = "`ERR_ACCESS_NOT_SENDER`, `ERR_ENTITY_EMAIL_NOT_DRAFT`, and as for sending"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "As for sending")), security(("bearer" = [])))]
pub async fn send_draft(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<SendFileBody>,
) -> Result<HttpResponse, RestError> {
    let body = send_request(body)?;
    list::parse(&q, &SEND)?;
    let input = coffer_domain::mail::parse_send(body, coffer_service::now())?;
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        svc::send(ctx, c.user_id(), Some(&id), &input)
    })
    .await?;
    Ok(HttpResponse::Ok().json(v))
}

#[utoipa::path(delete, path = "/rest/mail/{id}", tag = "mail", params(("id" = String, Path, description = "A draft of the caller's")), responses((status = 204, description = "The draft is gone"), (status = 403, description = "`ERR_ACCESS_NOT_SENDER`, `ERR_ENTITY_EMAIL_IS_SENT` (sent mail goes to the trash instead)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn delete(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
) -> Result<HttpResponse, RestError> {
    let id = id.into_inner();
    blocking(&st, move |ctx| svc::delete(ctx, c.user_id(), &id)).await?;
    Ok(HttpResponse::NoContent().finish())
}

#[utoipa::path(post, path = "/rest/mail/{id}/actions/initiateUpload", tag = "mail", params(("id" = String, Path, description = "A draft of the caller's")), request_body(content = crate::plumbing::schema::InitiateUploadBody), responses((status = 201, body = coffer_service::content::views::UploadView, description = "The upload session; its file attaches to the draft when the last chunk arrives"), (status = 403, description = "`ERR_ACCESS_NOT_SENDER`, `ERR_ENTITY_EMAIL_NOT_DRAFT`, `ERR_ACCESS_USER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 409, description = "`ERR_ENTITY_EXISTS`: a folder has the name"), (status = 413, description = "`ERR_SYSTEM_NO_STORAGE_AVAILABLE`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_INVALID_FORMAT`, `ERR_INPUT_MIN_VALUE`, `ERR_INPUT_INVALID_DATE`, `ERR_LICENSE_MAX_UPLOAD_SIZE`")), security(("bearer" = [])))]
pub async fn initiate_upload(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    Body(body): Body<crate::plumbing::schema::InitiateUploadBody>,
) -> Result<HttpResponse, RestError> {
    let input = initiate_input(body?)?;
    if input.filename.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "filename").into());
    }
    let id = id.into_inner();
    let v = blocking(&st, move |ctx| {
        coffer_service::mail::initiate_upload(ctx, c.user_id(), &id, &input)
    })
    .await?;
    Ok(HttpResponse::Created().json(v))
}

pub const RECIPIENTS: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "type",
        kind: Kind::Int,
        ops: &[Op::Eq, Op::In],
    }],
    order_fields: &["id", "type"],
    default_order: ("id", Dir::Asc),
    default_limit: 1000,
    max_limit: 1000,
    with_fields: &[],
    extra_params: &[],
    bulk: false,
};

#[utoipa::path(get, path = "/rest/mail/{id}/recipients", tag = "mail", params(("id" = String, Path, description = "An email id")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::mail::RecipientView>, description = "The recipients in the order given (bcc only for the sender)"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = [])))]
pub async fn recipients(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &RECIPIENTS)?;
    let kinds: Vec<i64> = q
        .filters
        .iter()
        .flat_map(|f| f.values.iter().filter_map(list::Value::as_int))
        .collect();
    let id = id.into_inner();
    let mut all = blocking(&st, move |ctx| svc::recipients(ctx, c.user_id(), &id)).await?;
    all.retain(|r| kinds.is_empty() || kinds.contains(&(r.kind as i64)));
    if q.order.0 == "type" {
        all.sort_by_key(|r| r.kind);
    }
    if q.order.1 == Dir::Desc {
        all.reverse();
    }
    let total = all.len() as i64;
    let items = all
        .into_iter()
        .skip(q.offset.max(0) as usize)
        .take(q.limit.max(0) as usize)
        .collect();
    Ok(listing(
        Envelope::Metadata,
        &coffer_service::platform::views::Listed {
            items,
            total,
            offset: q.offset,
            limit: q.limit,
        },
    ))
}

pub const ATTACHMENTS: ListSpec = ListSpec {
    default_limit: 100,
    max_limit: 1000,
    ..ListSpec::PLAIN
};

#[utoipa::path(get, path = "/rest/mail/{id}/attachments", tag = "mail", params(("id" = String, Path, description = "An email id"), ("ref" = Option<String>, Query, description = "Without a bearer token: the reference of an outside recipient's link, for `no_auth` mail (a capability read; 404 for any other reference, 429 after too many failures from the address)")), responses((status = 200, body = crate::plumbing::schema::WithMetadata<coffer_service::mail::AttachmentView>, description = "The email's files"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`")), security(("bearer" = []), ()))]
pub async fn attachments(
    reader: CallerOrRef,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&without_ref(&reader, q), &ATTACHMENTS)?;
    let id = id.into_inner();
    let l = match reader {
        CallerOrRef::Caller(c) => {
            blocking(&st, move |ctx| {
                svc::attachments(ctx, c.user_id(), &id, q.offset, q.limit)
            })
            .await?
        }
        CallerOrRef::Reference {
            reference,
            client_ip,
        } => {
            blocking(&st, move |ctx| {
                svc::access::attachments_by_reference(
                    ctx,
                    &id,
                    &reference,
                    client_ip.as_deref(),
                    q.offset,
                    q.limit,
                )
            })
            .await?
        }
    };
    Ok(listing(Envelope::Metadata, &l))
}

#[utoipa::path(get, path = "/rest/mail/{email_id}/attachments/{id}/content", tag = "mail", params(("email_id" = String, Path, description = "An email id"), ("id" = String, Path, description = "An attachment id"), ("ref" = Option<String>, Query, description = "Without a bearer token: the reference of an outside recipient's link, for `no_auth` mail (a capability read; 404 for any other reference, 429 after too many failures from the address)"), ("Range" = Option<String>, Header, description = "One byte range")), responses((status = 200, description = "The attachment's content (`Content-Disposition: attachment`)", content_type = "*/*"), (status = 206, description = "The range asked for", content_type = "*/*"), (status = 304, description = "Not modified"), (status = 403, description = "`ERR_ACCESS_USER` (expired or withdrawn), `ERR_ENTITY_IS_DELETED_ATTACHMENT`, `ERR_ENTITY_NOT_SCANNED`, `ERR_ENTITY_VIRUS_FOUND`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 416, description = "`ERR_INVALID_PARAMETER`")), security(("bearer" = []), ()))]
pub async fn attachment_content(
    reader: CallerOrRef,
    st: Data<AppState>,
    req: HttpRequest,
    path: Path<(String, String)>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&without_ref(&reader, q), &ListSpec::PLAIN)?;
    let (email_id, id) = path.into_inner();
    let e2 = email_id.clone();
    match reader {
        CallerOrRef::Caller(c) => {
            let user = c.user_id().to_string();
            let d = blocking(&st, move |ctx| {
                svc::attachment_download(ctx, &user, &e2, &id)
            })
            .await?;
            let served = Served::Mail {
                actor: Some(c.user_id()),
                recipient: None,
                email_id: &email_id,
            };
            serve_as(&st, &req, served, d, false).await
        }
        CallerOrRef::Reference {
            reference,
            client_ip,
        } => {
            let (d, recipient) = blocking(&st, move |ctx| {
                svc::access::attachment_download_by_reference(
                    ctx,
                    &e2,
                    &id,
                    &reference,
                    client_ip.as_deref(),
                )
            })
            .await?;
            let served = Served::Mail {
                actor: None,
                recipient: Some(&recipient),
                email_id: &email_id,
            };
            serve_as(&st, &req, served, d, false).await
        }
    }
}

pub const COUNTERS: ListSpec = ListSpec {
    extra_params: &["returnCustomWebForm"],
    ..ListSpec::PLAIN
};

#[utoipa::path(get, path = "/rest/mail/actions/counters", tag = "mail", responses((status = 200, body = coffer_service::mail::MailCounters, description = "The caller's mailbox in numbers")), security(("bearer" = [])))]
pub async fn counters(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    list::parse(&q, &COUNTERS)?;
    let v = blocking(&st, move |ctx| svc::counters(ctx, c.user_id())).await?;
    Ok(HttpResponse::Ok().json(v))
}

/// A bulk call: `emailId:in` (required) and `partialSuccess`.
pub const BULK: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "emailId",
        kind: Kind::Text,
        ops: &[Op::In],
    }],
    extra_params: &["partialSuccess"],
    ..ListSpec::PLAIN
};

/// The ids of a bulk call (`emailId:in`, required) and `partialSuccess`.
fn bulk_ids(q: &[(String, String)]) -> Result<(Vec<String>, bool), RestError> {
    let q = list::parse(q, &BULK)?;
    let mut ids: Vec<String> = q
        .filters
        .iter()
        .flat_map(|f| {
            f.values
                .iter()
                .filter_map(|v| v.as_text().map(str::to_string))
        })
        .collect();
    ids.dedup();
    if ids.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "emailId:in").into());
    }
    if ids.len() > 1000 {
        return Err(ApiError::field(ErrorCode::InputExceedsMaxValue, "emailId:in").into());
    }
    let partial = match q.extra("partialSuccess") {
        Some(v) => list::parse_bool("partialSuccess", v)?,
        None => false,
    };
    Ok((ids, partial))
}

/// 200 without a body when every id succeeded, else 207 with what failed.
fn bulk_answer(r: &BulkResult) -> HttpResponse {
    if r.errors.is_empty() {
        HttpResponse::Ok().finish()
    } else {
        HttpResponse::build(actix_web::http::StatusCode::MULTI_STATUS).json(r)
    }
}

#[utoipa::path(patch, path = "/rest/mail/actions/read", tag = "mail", params(("partialSuccess" = Option<bool>, Query, description = "Change what can be changed and answer 207 with the rest")), responses((status = 200, description = "Marked read (no body)"), (status = 207, body = coffer_service::mail::BulkResult, description = "Some ids failed"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND` (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_EXCEEDS_MAX_VALUE`")), security(("bearer" = [])))]
pub async fn read(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (ids, partial) = bulk_ids(&q)?;
    let r = blocking(&st, move |ctx| {
        svc::mark(ctx, c.user_id(), &ids, true, partial)
    })
    .await?;
    Ok(bulk_answer(&r))
}

#[utoipa::path(patch, path = "/rest/mail/actions/unread", tag = "mail", params(("partialSuccess" = Option<bool>, Query, description = "Change what can be changed and answer 207 with the rest")), responses((status = 200, description = "Marked unread (no body)"), (status = 207, body = coffer_service::mail::BulkResult, description = "Some ids failed"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND` (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_EXCEEDS_MAX_VALUE`")), security(("bearer" = [])))]
pub async fn unread(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (ids, partial) = bulk_ids(&q)?;
    let r = blocking(&st, move |ctx| {
        svc::mark(ctx, c.user_id(), &ids, false, partial)
    })
    .await?;
    Ok(bulk_answer(&r))
}

#[utoipa::path(patch, path = "/rest/mail/actions/trash", tag = "mail", params(("partialSuccess" = Option<bool>, Query, description = "Change what can be changed and answer 207 with the rest")), responses((status = 200, description = "In the caller's trash (no body)"), (status = 207, body = coffer_service::mail::BulkResult, description = "Some ids failed"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_ENTITY_EMAIL_IS_NOT_COMPLETED`: still being sent; `ERR_ENTITY_DELETED`: in the trash already (`failedIds`)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND` (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_EXCEEDS_MAX_VALUE`")), security(("bearer" = [])))]
pub async fn trash(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let (ids, partial) = bulk_ids(&q)?;
    let r = blocking(&st, move |ctx| svc::trash(ctx, c.user_id(), &ids, partial)).await?;
    Ok(bulk_answer(&r))
}

/// The most emails or files one withdrawal names.
const MAX_WITHDRAW: usize = 1000;

/// The ids of a withdrawal, each once: at least one, at most [`MAX_WITHDRAW`] (422 otherwise).
fn withdraw_ids(body: WithdrawBody) -> Result<Vec<String>, RestError> {
    let mut ids: Vec<String> = Vec::with_capacity(body.ids.len());
    for id in body.ids {
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    if ids.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "ids").into());
    }
    if ids.len() > MAX_WITHDRAW {
        return Err(ApiError::field(ErrorCode::InputExceedsMaxValue, "ids").into());
    }
    Ok(ids)
}

#[utoipa::path(post, path = "/rest/mail/actions/withdraw", tag = "mail", request_body(content = WithdrawBody), responses((status = 200, description = "Every email is withdrawn (no body); withdrawing a withdrawn email succeeds"), (status = 207, body = coffer_service::mail::BulkResult, description = "Some ids failed; the others are withdrawn"), (status = 403, description = "`ERR_ACCESS_NOT_SENDER`: the caller only received it; `ERR_ENTITY_EMAIL_IS_NOT_COMPLETED`: a draft (`failedIds`)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND` (`failedIds`)"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_NOT_ARRAY`, `ERR_INPUT_NOT_STRING`, `ERR_INPUT_EXCEEDS_MAX_VALUE`")), security(("bearer" = [])))]
pub async fn withdraw(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
    Body(body): Body<WithdrawBody>,
) -> Result<HttpResponse, RestError> {
    let body = body?;
    list::parse(&q, &ListSpec::PLAIN)?;
    let ids = withdraw_ids(body)?;
    let r = blocking(&st, move |ctx| svc::withdraw(ctx, &c, &ids)).await?;
    Ok(bulk_answer(&r))
}

/// `POST /rest/mail/{id}/actions/withdrawFiles`: `id:in` (required) and `sharedMailboxId`.
pub const WITHDRAW_FILES: ListSpec = ListSpec {
    filters: &[FieldSpec {
        name: "id",
        kind: Kind::Text,
        ops: &[Op::In],
    }],
    extra_params: &["sharedMailboxId"],
    ..ListSpec::PLAIN
};

#[utoipa::path(post, path = "/rest/mail/{id}/actions/withdrawFiles", tag = "mail", params(("id" = String, Path, description = "An email the caller sent"), ("sharedMailboxId" = Option<String>, Query, description = "Act for this shared mailbox")), responses((status = 204, description = "The attachments `id:in` names are withdrawn; withdrawn ones stay so"), (status = 400, description = "`ERR_REQUEST_INVALID_FILTER`"), (status = 403, description = "`ERR_ACCESS_NOT_SENDER`, `ERR_ENTITY_EMAIL_IS_NOT_COMPLETED` (a draft), `ERR_ACCESS_USER` (not a member of the shared mailbox)"), (status = 404, description = "`ERR_ENTITY_NOT_FOUND`"), (status = 422, description = "`ERR_INPUT_REQUIRED`, `ERR_INPUT_EXCEEDS_MAX_VALUE`, `ERR_INVALID_PARAMETER`: not an attachment of the email (`failedIds`)")), security(("bearer" = [])))]
pub async fn withdraw_files(
    Caller(c): Caller,
    st: Data<AppState>,
    id: Path<String>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = list::parse(&q, &WITHDRAW_FILES)?;
    let mut ids: Vec<String> = Vec::new();
    for v in q.filters.iter().flat_map(|f| f.values.iter()) {
        if let Some(v) = v.as_text() {
            if !ids.iter().any(|x| x == v) {
                ids.push(v.to_string());
            }
        }
    }
    if ids.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "id:in").into());
    }
    if ids.len() > MAX_WITHDRAW {
        return Err(ApiError::field(ErrorCode::InputExceedsMaxValue, "id:in").into());
    }
    let shared = q.extra("sharedMailboxId").map(str::to_string);
    let id = id.into_inner();
    blocking(&st, move |ctx| {
        svc::withdraw_files(ctx, &c, shared.as_deref(), &id, &ids)
    })
    .await?;
    Ok(HttpResponse::NoContent().finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plumbing::body::parse;
    use serde_json::{json, Value};

    const NOW: i64 = 1_790_000_000; // 2026-09-21

    fn code(v: Value) -> ErrorCode {
        send_request(parse::<SendFileBody>(v).map_err(RestError))
            .and_then(|r| Ok(coffer_domain::mail::parse_send(r, NOW)?))
            .map(|_| ())
            .unwrap_err()
            .0
            .code
    }

    #[test]
    fn refuses_bad_input_with_the_catalogue_codes() {
        assert_eq!(code(json!({"to": ["nope"]})), ErrorCode::InvalidParameter);
        assert_eq!(code(json!({"to": [5]})), ErrorCode::InvalidParameter);
        assert_eq!(code(json!({"files": [true]})), ErrorCode::InvalidParameter);
        assert_eq!(code(json!({"to": "a@x.io"})), ErrorCode::InputNotArray);
        assert_eq!(code(json!({"acl": "public"})), ErrorCode::InputNotInList);
        assert_eq!(code(json!({"acl": 1})), ErrorCode::InputNotString);
        assert_eq!(
            code(json!({"expire": "2020-01-01"})),
            ErrorCode::InputPastDate
        );
        assert_eq!(
            code(json!({"expire": "tomorrow"})),
            ErrorCode::InputInvalidDate
        );
        assert_eq!(
            code(json!({"expire": "2026-13-01"})),
            ErrorCode::InputInvalidDate
        );
        assert_eq!(
            code(json!({"subject": "x".repeat(999)})),
            ErrorCode::InputExceedsMaxValue
        );
        assert_eq!(
            code(json!({"subject": "two\nlines"})),
            ErrorCode::InputInvalidFormat
        );
        assert_eq!(code(json!({"draft": "yes"})), ErrorCode::InputNotBoolean);
        let many: Vec<String> = (0..501).map(|i| format!("u{i}@x.io")).collect();
        assert_eq!(code(json!({"to": many})), ErrorCode::InputExceedsMaxValue);
        assert_eq!(code(json!({"type": "spam"})), ErrorCode::InputNotInList);
        assert_eq!(
            code(json!({"attachments": []})),
            ErrorCode::InputAttributeForbidden
        );
        assert_eq!(code(json!([])), ErrorCode::RequestInvalidJson);
    }

    #[test]
    fn a_body_may_span_lines() {
        let r = send_request(
            parse::<SendFileBody>(
                json!({"to": ["a@x.io"], "body": "Hello\nAnn", "webFormFields": {"a": 1}}),
            )
            .map_err(RestError),
        )
        .map_err(|e| e.0.code)
        .unwrap();
        assert_eq!(r.to, ["a@x.io"]);
        assert_eq!(r.body.as_deref(), Some("Hello\nAnn"));
    }
}
