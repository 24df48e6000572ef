//! A form's submission (`POST {base}/forms/{id}`): the values checked, the files of the POST
//! stored, and the email delivered into the owner's inbox, either the submission started on the
//! form's page ([`super::drafts`]), with the files uploaded onto it, or a new email.

use super::{fields_of, new_email, usable, MAX_FILES};
use crate::content::files::{self, Stored, Target};
use crate::platform::auth::Caller;
use crate::platform::events;
use crate::{now, Ctx, Error, Result};
use coffer_domain::web_form as rules;
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::emails::{self as mail_store};
use coffer_store::web_forms::WebForm;
use coffer_store::DbConn;
use serde_json::{json, Value};
use std::collections::HashMap;

/// A file sent with a submission.
#[derive(Debug, Clone)]
pub struct SubmittedFile {
    pub name: String,
    pub bytes: bytes::Bytes,
}

/// A submission started on the form's page ([`super::drafts`]), whose files came
/// through the public upload: the draft's email id and the page's reference.
#[derive(Debug, Clone)]
pub struct DraftRef {
    pub email_id: String,
    pub reference: String,
}

/// `POST {base}/forms/{id}`: checks the values (422 `ERR_INPUT_REQUIRED` for a mandatory field
/// left empty, before anything is stored), stores the files sent with the POST in the owner's
/// mail-attachment folder (each within `maxUploadSize` and the owner's quota), and delivers the
/// email into the owner's inbox: the started submission `draft` (with the files uploaded onto
/// it) when there is one, else a new email. Returns the email's id.
pub async fn submit(
    ctx: &Ctx,
    id: &str,
    who: Option<Caller>,
    client_ip: Option<String>,
    values: HashMap<String, String>,
    uploaded: Vec<SubmittedFile>,
    draft: Option<DraftRef>,
) -> Result<String> {
    let form_id = id.to_string();
    let who2 = who.clone();
    let checked = ctx
        .blocking(move |ctx| {
            let f = usable(ctx, &form_id, who2.as_ref(), client_ip.as_deref())?;
            let answers = rules::check_submission(&fields_of(&f)?, &values)?;
            let max = ctx.read(|c| Ok(crate::content::limits(c)?.max_upload_size))?;
            Ok((f, answers, max))
        })
        .await?;
    let (form, answers, max_size) = checked;
    if uploaded.len() > MAX_FILES {
        return Err(ApiError::field(ErrorCode::InputExceedsMaxValue, "files")
            .with_message(format!("At most {MAX_FILES} files per submission."))
            .into());
    }
    let mut names = Vec::with_capacity(uploaded.len());
    for u in &uploaded {
        coffer_domain::content::validate_name_as(&u.name, "files")?;
        if u.bytes.len() as i64 > max_size {
            return Err(ApiError::field(ErrorCode::LicenseMaxUploadSize, "files").into());
        }
        names.push(u.name.clone());
    }
    let mut stored = Vec::with_capacity(uploaded.len());
    for u in uploaded {
        let put = ctx
            .storage
            .put_bytes(u.bytes)
            .await
            .map_err(crate::content::storage_error)?;
        stored.push(Stored {
            blob: put.key.to_string(),
            size: put.size as i64,
            md5: put.md5,
            client_created: None,
            client_modified: None,
        });
    }
    let ctx2 = ctx.clone();
    let kept = stored.clone();
    let r = ctx
        .write_owned(move |c| {
            deliver(
                c,
                &ctx2,
                &form,
                who.as_ref(),
                draft.as_ref(),
                &answers,
                &names,
                &stored,
            )
        })
        .await;
    if r.is_err() {
        for s in &kept {
            crate::content::uploads::release_unused(ctx, s).await;
        }
    }
    r
}

/// The email of a submission, in the caller's write transaction.
#[allow(clippy::too_many_arguments)]
fn deliver(
    c: &mut DbConn,
    ctx: &Ctx,
    form: &WebForm,
    who: Option<&Caller>,
    draft: Option<&DraftRef>,
    answers: &[(String, String)],
    names: &[String],
    stored: &[Stored],
) -> Result<String> {
    let t = now();
    let owner = coffer_store::users::by_id(c, &form.owner_id)?
        .ok_or_else(|| Error::internal("a web form without its owner"))?;
    let sender = who.map_or(owner.id.clone(), |w| w.user_id().to_string());
    let mut fields = serde_json::Map::new();
    for (label, value) in answers {
        fields.insert(label.clone(), Value::String(value.clone()));
    }
    let body: String = answers.iter().map(|(l, v)| format!("{l}: {v}\n")).collect();
    let started = match draft {
        Some(d) => Some(super::drafts::claim(
            c,
            &form.id,
            who,
            &d.email_id,
            &d.reference,
        )?),
        None => None,
    };
    let mut email = match &started {
        Some(e) => e.clone(),
        None => new_email(form, &sender, t),
    };
    email.status = "sent".into();
    email.body = body;
    email.web_form_fields = Some(Value::Object(fields).to_string());
    email.modified_at = t;
    email.sent_at = Some(t);
    let attached = match &started {
        Some(_) => {
            mail_store::update(c, &email)?;
            mail_store::attachments(c, &email.id)?.len()
        }
        None => {
            mail_store::insert(c, &email)?;
            0
        }
    };
    if attached + names.len() > MAX_FILES {
        return Err(ApiError::field(ErrorCode::InputExceedsMaxValue, "files")
            .with_message(format!("At most {MAX_FILES} files per submission."))
            .into());
    }
    // The files, in the owner's folder for mail attachments.
    for (name, s) in names.iter().zip(stored) {
        let name = crate::content::free_name(c, &owner.mydir_id, name, true)?;
        let target = Target::Folder {
            folder_id: owner.mydir_id.clone(),
            name,
            disable_auto_version: true,
        };
        let file = files::commit(c, ctx, &owner.id, &target, s)?;
        crate::mail::attach(c, &email, &file, t)?;
    }
    crate::mail::deliver_to_owner(c, &email, &owner, &sender, t)?;
    let actor = who.map(|w| w.user_id().to_string());
    events::record(
        c,
        "webform.submission.create",
        actor.as_deref(),
        json!({"id": form.id, "emailId": email.id, "ownerId": owner.id, "attachments": attached + stored.len()}),
    )?;
    events::record(
        c,
        "mail.email.send",
        Some(&sender),
        json!({"id": email.id, "senderId": email.sender_id, "status": "sent", "recipients": 1, "attachments": attached + stored.len(), "webFormId": form.id}),
    )?;
    Ok(email.id)
}
