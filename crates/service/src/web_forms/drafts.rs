//! Submissions in progress (docs/web-forms.md): the files of a web-form submission go through
//! the public upload before the form itself is sent, so that a large file travels in chunks and
//! never whole in memory.
//!
//! The form's page starts a submission ([`start`]): a draft email of the form (sender the
//! signed-in submitter, else the owner) with no mailbox entry, so that it is in no one's mail,
//! and a reference that only the page holds (its SHA-256 is stored). The reference is the
//! capability of `POST /rest/public/mail/{id}/actions/initiateUpload` and of the chunks of the
//! sessions it opens ([`initiate_upload`], [`chunk_user`]): no bearer token, the version header
//! as for any `/rest` call, a wrong or expired reference answers 404 like an unknown email and
//! counts against the client address (429 once it is locked). The files are stored in the
//! owner's folder for mail attachments and attach to the draft as they complete. Sending the
//! form ([`super::submit`]) turns the draft into the submission and ends the reference; a draft
//! never sent is swept after [`LIFETIME`] with its files ([`sweep`], the periodic job [`SWEEP`]).

use crate::content::jobs::Kind;
use crate::content::uploads::{self, InitiateInput};
use crate::content::views::UploadView;
use crate::platform::auth::Caller;
use crate::web_forms::{self, not_found, MAX_FILES};
use crate::{now, Ctx, Error, Result};
use coffer_errors::{ApiError, ErrorCode};
use coffer_oauth::secrets::{hash_token, new_token};
use coffer_store::emails::{self as mail_store, Email};
use coffer_store::web_forms::{self as store, Draft, WebForm};
use coffer_store::DbConn;

/// The job that sweeps submissions never sent ([`sweep`]).
pub const SWEEP: &str = "sweep-web-form-drafts";

/// The job kinds of web forms, registered where the worker starts.
pub const JOBS: &[Kind] = &[Kind {
    name: SWEEP,
    period: Some(600),
    run: |ctx, _| Box::pin(async move { sweep(ctx).await.map(drop) }),
}];

/// How long a submission may take from its start to the form's POST (seconds).
pub const LIFETIME: i64 = 2 * 3600;
/// Submissions one client address may start in [`START_WINDOW`].
pub const STARTS_PER_ADDRESS: i32 = 30;
/// The window of [`STARTS_PER_ADDRESS`] (seconds).
pub const START_WINDOW: i64 = 3600;
/// The largest chunk the page sends (a smaller `uploadChunkMax` wins).
pub const PAGE_CHUNK: i64 = 8 * 1024 * 1024;

/// A started submission, as the page needs it.
#[derive(Debug, Clone)]
pub struct Started {
    pub email_id: String,
    /// The capability; shown once, stored only hashed.
    pub reference: String,
    pub expires_at: i64,
    /// The chunk size the page uses.
    pub chunk_size: i64,
    /// The largest file (`maxUploadSize`).
    pub max_file_size: i64,
}

/// Starts a submission of form `form_id` for `who` (or an anonymous person at `client_ip`),
/// under the form's access rules; at most [`STARTS_PER_ADDRESS`] per address in an hour (429
/// with `Retry-After`).
pub fn start(
    ctx: &Ctx,
    form_id: &str,
    who: Option<&Caller>,
    client_ip: Option<&str>,
) -> Result<Started> {
    let form = web_forms::usable(ctx, form_id, who, client_ip)?;
    let reference = new_token();
    let t = now();
    let (email_id, limits) = ctx.write(|c| {
        if let Some(ip) = client_ip.filter(|i| !i.is_empty()) {
            let key = format!("webform-draft-ip:{ip}");
            if let Some(first) =
                coffer_store::throttle::spend(c, &key, STARTS_PER_ADDRESS, START_WINDOW, t)?
            {
                return Err(ApiError::new(ErrorCode::RequestRateLimited)
                    .with_message(format!(
                        "Too many requests (at most {STARTS_PER_ADDRESS} form submissions from this client in {} minutes).",
                        START_WINDOW / 60
                    ))
                    .with_retry_after((first + START_WINDOW - t).max(1))
                    .into());
            }
        }
        let sender = who.map_or(form.owner_id.as_str(), |w| w.user_id());
        let email = web_forms::new_email(&form, sender, t);
        mail_store::insert(c, &email)?;
        store::insert_draft(
            c,
            &Draft {
                email_id: email.id.clone(),
                form_id: form.id.clone(),
                ref_hash: hash_token(&reference),
                submitter_id: who.map(|w| w.user_id().to_string()),
                created_at: t,
                expires_at: t + LIFETIME,
            },
        )?;
        Ok((email.id, crate::content::limits(c)?))
    })?;
    Ok(Started {
        email_id,
        reference,
        expires_at: t + LIFETIME,
        chunk_size: limits.upload_chunk_max.min(PAGE_CHUNK),
        max_file_size: limits.max_upload_size,
    })
}

/// The live draft `reference` opens, if it is the one of email `email_id`.
fn lookup(c: &mut DbConn, email_id: &str, reference: &str) -> Result<Option<Draft>> {
    if reference.is_empty() {
        return Ok(None);
    }
    Ok(store::draft_by_ref(c, &hash_token(reference))?
        .filter(|d| d.email_id == email_id && d.expires_at >= now()))
}

/// The draft a reference opens; anything else is 404, counted against the address.
fn by_reference(
    ctx: &Ctx,
    email_id: &str,
    reference: &str,
    client_ip: Option<&str>,
) -> Result<Draft> {
    web_forms::check_address(ctx, client_ip)?;
    match ctx.read(|c| lookup(c, email_id, reference))? {
        Some(d) => Ok(d),
        None => {
            web_forms::unknown_from(ctx, client_ip)?;
            Err(not_found())
        }
    }
}

/// The form of a draft while it still takes submissions (active, its owner not deleted).
fn open_form(c: &mut DbConn, d: &Draft) -> Result<WebForm> {
    let f = store::by_id(c, &d.form_id)?.ok_or_else(not_found)?;
    if !f.active {
        return Err(web_forms::access_user("the web form is disabled"));
    }
    web_forms::owner_live(c, &f)?;
    Ok(f)
}

/// `POST /rest/public/mail/{id}/actions/initiateUpload?ref=…`: opens a chunked upload onto the
/// submission's draft. `filename` and `totalSize` are required; at most [`MAX_FILES`] files per
/// submission (finished and open sessions count); the file goes to the form owner's folder for
/// mail attachments, within `maxUploadSize` and the owner's quota.
pub fn initiate_upload(
    ctx: &Ctx,
    email_id: &str,
    reference: &str,
    client_ip: Option<&str>,
    input: &InitiateInput,
) -> Result<UploadView> {
    let d = by_reference(ctx, email_id, reference, client_ip)?;
    if input.filename.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "filename").into());
    }
    if input.total_size.is_none() {
        return Err(ApiError::field(ErrorCode::InputRequired, "totalSize").into());
    }
    let (owner, folder) = ctx.read(|c| {
        let f = open_form(c, &d)?;
        let files = mail_store::attachments(c, &d.email_id)?.len() as i64
            + mail_store::open_uploads(c, &d.email_id)?;
        if files >= MAX_FILES as i64 {
            return Err(ApiError::field(ErrorCode::InputExceedsMaxValue, "files")
                .with_message(format!("At most {MAX_FILES} files per submission."))
                .into());
        }
        let owner = coffer_store::users::by_id(c, &f.owner_id)?.ok_or_else(not_found)?;
        Ok((owner.id, owner.mydir_id))
    })?;
    uploads::initiate_onto(ctx, &owner, &folder, &d.email_id, input)
}

/// Whose session upload `id` is, when `reference` opens the submission it was opened for: the
/// chunks of a public upload carry the reference instead of a bearer token. Anything else is
/// 404, counted against the address.
pub fn chunk_user(
    ctx: &Ctx,
    upload_id: i64,
    reference: &str,
    client_ip: Option<&str>,
) -> Result<String> {
    let upload = ctx.read(|c| Ok(coffer_store::content::upload(c, upload_id)?))?;
    // An unknown session, or one of no submission, is checked as a reference of no email, so
    // that it fails and counts like a wrong reference.
    let email = upload
        .as_ref()
        .and_then(|u| u.email_id.clone())
        .unwrap_or_default();
    by_reference(ctx, &email, reference, client_ip)?;
    upload.map(|u| u.user_id).ok_or_else(not_found)
}

/// The submission a form's POST names, in its write transaction: checks the reference (it must
/// be of this form and this submitter) and ends it, and ends the uploads still open on it (their
/// chunks answer 404 from now on). A reference that is wrong, expired or already used is 422
/// `ERR_INVALID_PARAMETER` (`submission`), so that the page asks for the files again.
pub(crate) fn claim(
    c: &mut DbConn,
    form_id: &str,
    who: Option<&Caller>,
    email_id: &str,
    reference: &str,
) -> Result<Email> {
    let gone = || -> Error {
        ApiError::field(ErrorCode::InvalidParameter, "submission")
            .with_message("The files were not kept (the submission expired); choose them again.")
            .into()
    };
    let d = lookup(c, email_id, reference)?.ok_or_else(gone)?;
    if d.form_id != form_id || d.submitter_id.as_deref() != who.map(|w| w.user_id()) {
        return Err(gone());
    }
    // Only one POST can claim it.
    if store::delete_draft(c, &d.email_id)? == 0 {
        return Err(gone());
    }
    for u in coffer_store::content::uploads_of_email(c, &d.email_id)? {
        if u.result_file_id.is_none() {
            coffer_store::content::delete_upload(c, u.id)?;
        }
    }
    mail_store::by_id(c, &d.email_id)?
        .filter(|e| e.status == "draft")
        .ok_or_else(gone)
}

/// Removes submissions never sent, past their lifetime: the draft email, the files uploaded onto
/// it (for good: no one ever saw them), and its upload sessions with their staging.
pub async fn sweep(ctx: &Ctx) -> Result<usize> {
    let (count, staging) = ctx
        .write_owned(|c| {
            let t = now();
            let drafts = store::expired_drafts(c, t, 200)?;
            let mut staging = Vec::new();
            for d in &drafts {
                let attachments = mail_store::attachments(c, &d.email_id)?;
                let files: Vec<String> = attachments.iter().map(|a| a.file_id.clone()).collect();
                for a in &attachments {
                    coffer_store::content::release_blob(c, &a.blob_id, t)?;
                }
                coffer_store::content::purge_objects(c, &files, t)?;
                for u in coffer_store::content::uploads_of_email(c, &d.email_id)? {
                    coffer_store::content::delete_upload(c, u.id)?;
                    staging.push(u.staging);
                }
                // The draft row goes with its email.
                mail_store::delete(c, &d.email_id)?;
            }
            Ok((drafts.len(), staging))
        })
        .await?;
    for s in staging {
        ctx.storage
            .discard_staged(&s)
            .await
            .map_err(|e| Error::internal_in("storage", e))?;
    }
    if count > 0 {
        log::info!("web forms: removed {count} submissions never sent");
    }
    Ok(count)
}
