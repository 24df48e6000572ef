//! The recipient's side of a request-file link (`/rest/requestFile/{ref}/…`): reading the link,
//! the files offered with it, sending files (chunked or in one request), what arrived, comments,
//! downloads and the reply. Every operation first admits the visitor ([`super::admit`]), then
//! checks the link's state in its own transaction.
//!
//! What arrived through a link (its `uploads`) is shown and deleted only on links that asked
//! for sign-in (`requireAuth`): without it the reference alone would let anyone who learned it
//! see and remove what others sent.

use super::{
    admit, check_open, denied, file_of, fresh, plan, view, PermissionView, RequestFileSourceView,
    RequestFileUploadView, RequestFileView, Role, Visitor, TARGET_PREFIX,
};
use crate::content::files::{Download, Stored, Target};
use crate::content::uploads::InitiateInput;
use crate::content::views::{CommentView, FileView, PreviewView, UploadView};
use crate::platform::events;
use crate::platform::views::Listed;
use crate::{now, rfc3339, Ctx, Result};
use coffer_domain::content::Access;
use coffer_domain::request_file as rules;
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::models::{NewComment, Object, RequestFile};
use coffer_store::DbConn;
use serde_json::json;

/// `GET /rest/requestFile/{ref}`: the link, also once exhausted; `read` records the view
/// (`requestfile.link.view`).
pub fn get(ctx: &Ctx, v: &Visitor, read: bool) -> Result<RequestFileView> {
    let (link, role) = admit(ctx, v)?;
    let out = ctx.read(|c| {
        let link = fresh(c, link.id)?;
        check_open(c, &link, now())?;
        view(c, ctx, &link, Some(&v.reference))
    })?;
    if read && role == Role::Recipient {
        ctx.write(|c| {
            events::record(
                c,
                "requestfile.link.view",
                link.recipient_user_id.as_deref(),
                json!({"id": link.id, "requestorId": link.requestor_id, "recipient": link.recipient}),
            )
        })?;
    }
    Ok(out)
}

/// The link, open, in a read.
fn open_link(ctx: &Ctx, v: &Visitor) -> Result<(RequestFile, Role)> {
    let (link, role) = admit(ctx, v)?;
    let link = ctx.read(|c| {
        let link = fresh(c, link.id)?;
        check_open(c, &link, now())?;
        Ok(link)
    })?;
    Ok((link, role))
}

/// What arrived through a link is for links that asked for sign-in only.
fn uploads_shown(link: &RequestFile) -> Result<()> {
    if !link.require_auth {
        return Err(denied(
            "uploads are listed only on links that ask for sign-in",
        ));
    }
    Ok(())
}

/// `GET /rest/requestFile/{ref}/sources`: the files offered, those still there, with what the
/// recipient may do with each.
pub fn sources(
    ctx: &Ctx,
    v: &Visitor,
    offset: i64,
    limit: i64,
) -> Result<Listed<RequestFileSourceView>> {
    let (link, _) = open_link(ctx, v)?;
    ctx.read(|c| {
        let mut all = Vec::new();
        for id in coffer_store::request_files::sources(c, link.id)? {
            let Ok(o) = file_of(c, &link, &id, false) else {
                continue;
            };
            let clean = match &o.current_version_id {
                Some(vid) => coffer_store::content::version(c, vid)?
                    .is_some_and(|v| v.av_status == "allowed"),
                None => false,
            };
            all.push(RequestFileSourceView {
                file_id: o.id,
                request_file_id: link.id,
                action_id: link.action_id,
                permissions: vec![
                    PermissionView {
                        name: "view".into(),
                        enabled: true,
                    },
                    PermissionView {
                        name: "download".into(),
                        enabled: link.action_id == rules::ACTION_DOWNLOAD && clean,
                    },
                ],
            });
        }
        let total = all.len() as i64;
        let items = all
            .into_iter()
            .skip(offset.max(0) as usize)
            .take(limit.max(0) as usize)
            .collect();
        Ok(Listed {
            items,
            total,
            offset,
            limit,
        })
    })
}

/// A file as the recipient sees it: the requestor's record of it, named `name`, without where
/// it lives among the requestor's folders.
fn file_view(
    c: &mut DbConn,
    ctx: &Ctx,
    link: &RequestFile,
    o: &Object,
    name: &str,
) -> Result<FileView> {
    let mut f = crate::content::files::view(c, ctx, &link.requestor_id, o, Access::Owner)?;
    f.name = name.to_string();
    f.path = String::new();
    f.path_ids = None;
    f.current_user_role = None;
    f.is_favorite = false;
    f.links = None;
    Ok(f)
}

/// `GET /rest/requestFile/{ref}/sources/{object_id}`.
pub fn source(ctx: &Ctx, v: &Visitor, object_id: &str) -> Result<FileView> {
    let (link, _) = open_link(ctx, v)?;
    ctx.read(|c| {
        let o = file_of(c, &link, object_id, false)?;
        file_view(c, ctx, &link, &o, &o.name.clone())
    })
}

/// What the view of an offered file (`…/sources/{object_id}/view`) serves: never the file to
/// save, always something a browser shows in place without running anything of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rendition {
    /// The file itself, a type browsers show safely (images, PDF, audio, video).
    Native,
    /// A text file's text, as `text/plain` (whatever type it was stored as), so that nothing in
    /// it is rendered or run.
    Text,
    /// The preview made from the file (a PNG thumbnail or a PDF from the converter).
    Made,
}

/// The type the text of a file is shown as.
pub const TEXT_VIEW_MIME: &str = "text/plain; charset=utf-8";

/// Whether a file of type `mime` is shown as its text: any `text/*`, the structured text
/// formats commonly sent as files, and SVG and XHTML (markup that could run script if it were
/// rendered, so only its source is shown).
fn shown_as_text(mime: &str) -> bool {
    let base = mime
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    base.starts_with("text/")
        || matches!(
            base.as_str(),
            "application/json"
                | "application/xml"
                | "application/yaml"
                | "application/x-yaml"
                | "image/svg+xml"
                | "application/xhtml+xml"
        )
}

/// How an offered file is viewed, if it can be: from its stored type, else its made preview
/// once ready. `None`: no view (the page says "no preview").
fn rendition_of(
    ctx: &Ctx,
    link: &RequestFile,
    object_id: &str,
) -> Result<(Download, Option<Rendition>)> {
    let d = ctx.read(|c| {
        let o = file_of(c, link, object_id, false)?;
        super::download_of(c, &o, &o.name.clone())
    })?;
    if coffer_domain::content::serve_inline(&d.mime) {
        return Ok((d, Some(Rendition::Native)));
    }
    if shown_as_text(&d.mime) {
        return Ok((d, Some(Rendition::Text)));
    }
    let made = crate::content::files::preview(ctx, &link.requestor_id, object_id)?;
    let ready = made.status == "preview" && !made.native;
    Ok((d, ready.then_some(Rendition::Made)))
}

/// `GET /rest/requestFile/{ref}/preview/{object_id}`: the preview of an offered file, with the
/// address that shows it through the link when it can be viewed: the file's content in place
/// for a type browsers show safely, else the link's view of it (its text, or the preview made
/// from it).
pub fn preview(ctx: &Ctx, v: &Visitor, object_id: &str) -> Result<PreviewView> {
    let (link, _) = open_link(ctx, v)?;
    let (d, rendition) = rendition_of(ctx, &link, object_id)?;
    let mut p = crate::content::files::preview(ctx, &link.requestor_id, object_id)?;
    let base = format!(
        "{}/rest/requestFile/{}/sources/{}",
        ctx.config.base_url, v.reference, object_id
    );
    let shown = match rendition {
        // The file is its own preview, whatever was made of it: the content route serves it in
        // place, so the link never answers 403.
        Some(Rendition::Native) => {
            p.status = "preview".into();
            p.kind = Some("native".into());
            p.mime = Some(d.mime);
            p.native = true;
            Some(format!("{base}/content?inline=true"))
        }
        Some(Rendition::Text) => {
            p.status = "preview".into();
            p.kind = Some("text".into());
            p.mime = Some(TEXT_VIEW_MIME.into());
            p.native = false;
            Some(format!("{base}/view"))
        }
        Some(Rendition::Made) => Some(format!("{base}/view")),
        None => None,
    };
    p.link = shown.clone();
    p.view_url = shown.clone();
    p.content_url = shown;
    p.pdf = None;
    Ok(p)
}

/// `GET /rest/requestFile/{ref}/sources/{object_id}/view`: an offered file as the recipient
/// views it in place, on any link (a view-only one included): the rendition and what it is.
/// A file with no view: 404 `ERR_ENTITY_NOT_FOUND`.
pub fn source_view(ctx: &Ctx, v: &Visitor, object_id: &str) -> Result<(Download, Rendition, i64)> {
    let (link, _) = open_link(ctx, v)?;
    let (d, rendition) = rendition_of(ctx, &link, object_id)?;
    match rendition {
        Some(Rendition::Made) => {
            let made = crate::content::files::preview_content(ctx, &link.requestor_id, object_id)?;
            Ok((made, Rendition::Made, link.id))
        }
        Some(r) => Ok((d, r, link.id)),
        None => Err(ApiError::new(ErrorCode::EntityNotFound)
            .with_message("The file has no view: it is not an image, a PDF or text, and no preview was made of it.")
            .into()),
    }
}

/// `GET /rest/requestFile/{ref}/sources/{object_id}/content`: an offered file's content, for a
/// link that allows downloads (`actionId` 2); a view-only link serves it only shown in place
/// (`inline`) and only for the types shown that way (the preview of such a file is itself).
pub fn source_download(
    ctx: &Ctx,
    v: &Visitor,
    object_id: &str,
    inline: bool,
) -> Result<(Download, i64)> {
    let (link, _) = open_link(ctx, v)?;
    let d = ctx.read(|c| {
        let o = file_of(c, &link, object_id, false)?;
        super::download_of(c, &o, &o.name.clone())
    })?;
    let in_place = inline && coffer_domain::content::serve_inline(&d.mime);
    if link.action_id != rules::ACTION_DOWNLOAD && !in_place {
        return Err(denied("the link lets the files be viewed, not downloaded"));
    }
    Ok((d, link.id))
}

/// `GET /rest/requestFile/{ref}/uploads`: what arrived through the link, oldest first.
pub fn uploads(
    ctx: &Ctx,
    v: &Visitor,
    offset: i64,
    limit: i64,
) -> Result<Listed<RequestFileUploadView>> {
    let (link, _) = admit(ctx, v)?;
    uploads_shown(&link)?;
    ctx.read(|c| {
        let link = fresh(c, link.id)?;
        check_open(c, &link, now())?;
        let all = coffer_store::request_files::uploads(c, link.id)?;
        let total = all.len() as i64;
        let items = all
            .into_iter()
            .skip(offset.max(0) as usize)
            .take(limit.max(0) as usize)
            .map(|u| RequestFileUploadView {
                file_id: u.file_id,
                request_file_id: u.request_file_id,
                name: u.name,
                created: rfc3339(u.created_at),
            })
            .collect();
        Ok(Listed {
            items,
            total,
            offset,
            limit,
        })
    })
}

/// The name the recipient gave a file that arrived through the link (its latest upload).
fn given(c: &mut DbConn, link: &RequestFile, file_id: &str) -> Result<String> {
    Ok(coffer_store::request_files::uploads(c, link.id)?
        .into_iter()
        .rev()
        .find(|u| u.file_id == file_id)
        .map(|u| u.name)
        .unwrap_or_default())
}

/// `GET /rest/requestFile/{ref}/uploads/{object_id}`: a file that arrived, by the name the
/// recipient gave it.
pub fn upload(ctx: &Ctx, v: &Visitor, object_id: &str) -> Result<FileView> {
    let (link, _) = admit(ctx, v)?;
    uploads_shown(&link)?;
    ctx.read(|c| {
        let link = fresh(c, link.id)?;
        check_open(c, &link, now())?;
        let o = file_of(c, &link, object_id, true)?;
        let name = given(c, &link, &o.id)?;
        file_view(c, ctx, &link, &o, &name)
    })
}

/// `GET /rest/requestFile/{ref}/uploads/{object_id}/content`.
pub fn upload_download(ctx: &Ctx, v: &Visitor, object_id: &str) -> Result<(Download, i64)> {
    let (link, _) = admit(ctx, v)?;
    uploads_shown(&link)?;
    let d = ctx.read(|c| {
        let link = fresh(c, link.id)?;
        check_open(c, &link, now())?;
        let o = file_of(c, &link, object_id, true)?;
        let name = given(c, &link, &o.id)?;
        super::download_of(c, &o, &name)
    })?;
    Ok((d, link.id))
}

/// `DELETE /rest/requestFile/{ref}/uploads/{object_id}`: takes back a file that arrived: it goes
/// to the requestor's trash and the link takes one more (an exhausted link is active again).
pub fn delete_upload(ctx: &Ctx, v: &Visitor, object_id: &str) -> Result<()> {
    let (link, _) = admit(ctx, v)?;
    uploads_shown(&link)?;
    ctx.read(|c| {
        let link = fresh(c, link.id)?;
        check_open(c, &link, now())?;
        file_of(c, &link, object_id, true).map(drop)
    })?;
    // The file goes the way any deletion of it goes (locks and all), as the requestor's.
    crate::content::files::delete(ctx, &link.requestor_id, object_id)?;
    ctx.write(|c| {
        coffer_store::request_files::delete_uploads_of(c, link.id, object_id)?;
        events::record(
            c,
            "requestfile.file.delete",
            link.recipient_user_id.as_deref(),
            json!({"id": link.id, "fileId": object_id, "requestorId": link.requestor_id, "recipient": link.recipient}),
        )
    })
}

/// `POST /rest/requestFile/{ref}/actions/initiateUpload`: opens a chunked upload into the link's
/// destination, as the requestor's (their folder and quota). Its `uploadUrl` carries the
/// reference, since the chunks come without a bearer token.
pub fn initiate_upload(ctx: &Ctx, v: &Visitor, input: &InitiateInput) -> Result<UploadView> {
    let (link, _) = admit(ctx, v)?;
    let target = ctx.read(|c| {
        let link = fresh(c, link.id)?;
        plan(c, &link, &input.filename, now())
    })?;
    let Target::Folder {
        folder_id, name, ..
    } = target
    else {
        return Err(super::not_found());
    };
    let mut input = input.clone();
    input.filename = name;
    let mut u = crate::content::uploads::initiate_onto(
        ctx,
        &link.requestor_id,
        &folder_id,
        &format!("{TARGET_PREFIX}{}", link.id),
        &input,
    )?;
    u.upload_url = format!("{}?ref={}", u.upload_url, v.reference);
    Ok(u)
}

/// Whose session a chunk of upload `upload_id` goes to, when the session was opened through a
/// link (`None`: it was not; the chunk is someone else's to decide). The visitor must be one
/// the link admits, and the link must still take a file.
pub fn chunk_user(ctx: &Ctx, upload_id: i64, v: &Visitor) -> Result<Option<String>> {
    let upload = ctx.read(|c| Ok(coffer_store::content::upload(c, upload_id)?))?;
    let Some(link_id) = upload
        .as_ref()
        .and_then(|u| u.email_id.as_deref())
        .and_then(|t| t.strip_prefix(TARGET_PREFIX))
        .and_then(|id| id.parse::<i64>().ok())
    else {
        return Ok(None);
    };
    let (link, _) = admit(ctx, v)?;
    if link.id != link_id {
        return Err(super::not_found());
    }
    ctx.read(|c| {
        let link = fresh(c, link.id)?;
        super::check_takes_file(c, &link, now())
    })?;
    Ok(upload.map(|u| u.user_id))
}

/// The first step of `POST /rest/requestFile/{ref}/actions/file`: admits the visitor and checks
/// the name before any byte is stored; answers whose the bytes are and where they go.
pub fn prepare_file(ctx: &Ctx, v: &Visitor, filename: &str) -> Result<(RequestFile, Target)> {
    let (link, _) = admit(ctx, v)?;
    let target = ctx.read(|c| {
        let link = fresh(c, link.id)?;
        plan(c, &link, filename, now())
    })?;
    Ok((link, target))
}

/// The last step: turns the stored bytes into the file (a new version when the recipient sent
/// that name before) and records it against the link, in one transaction.
pub async fn finish_file(
    ctx: &Ctx,
    link: &RequestFile,
    target: Target,
    stored: Stored,
) -> Result<FileView> {
    let id = link.id;
    let ctx2 = ctx.clone();
    ctx.write_owned(move |c| {
        let link = fresh(c, id)?;
        let file = super::commit_upload(c, &ctx2, &link, &target, &stored)?;
        let name = rules::given_name(&file.name, &link.recipient);
        file_view(c, &ctx2, &link, &file, &name)
    })
    .await
}

/// `POST /rest/requestFile/{ref}/comment/{object_id}`: a comment on an offered file or on one
/// that arrived, by the recipient's account, or (an outside recipient has none) by the
/// requestor's with the recipient's address before the text.
pub fn comment(
    ctx: &Ctx,
    v: &Visitor,
    object_id: &str,
    contents: &str,
    parent_id: Option<i64>,
) -> Result<CommentView> {
    let contents = contents.trim();
    if contents.is_empty() {
        return Err(ApiError::field(ErrorCode::InputRequired, "contents").into());
    }
    if contents.chars().count() > crate::content::sharing::MAX_COMMENT {
        return Err(ApiError::field(ErrorCode::InputMaxValue, "contents").into());
    }
    if !coffer_domain::input::is_clean(contents, true) {
        return Err(coffer_domain::input::unclean("contents").into());
    }
    let (link, _) = admit(ctx, v)?;
    ctx.write(|c| {
        let t = now();
        let link = fresh(c, link.id)?;
        check_open(c, &link, t)?;
        let o = match file_of(c, &link, object_id, false) {
            Ok(o) => o,
            Err(_) if link.require_auth => file_of(c, &link, object_id, true)?,
            Err(e) => return Err(e),
        };
        if let Some(p) = parent_id.filter(|p| *p != 0) {
            coffer_store::content::comment(c, p)?
                .filter(|pc| pc.object_id == o.id && !pc.deleted)
                .ok_or_else(|| {
                    crate::Error::from(ApiError::field(ErrorCode::InvalidParameter, "parentId"))
                })?;
        }
        let (author, text) = match &link.recipient_user_id {
            Some(u) => (u.clone(), contents.to_string()),
            None => (
                link.requestor_id.clone(),
                format!("{}: {contents}", link.recipient),
            ),
        };
        let id = coffer_store::content::insert_comment(
            c,
            &NewComment {
                object_id: o.id.clone(),
                parent_id: parent_id.filter(|p| *p != 0),
                user_id: author,
                contents: text,
                created_at: t,
                modified_at: t,
            },
        )?;
        events::record(
            c,
            "comment.comment.create",
            link.recipient_user_id.as_deref(),
            json!({"id": id, "objectId": o.id, "ownerId": o.owner_id, "requestFileId": link.id}),
        )?;
        let cm = coffer_store::content::comment(c, id)?.ok_or_else(super::not_found)?;
        Ok(CommentView::of(&cm, o.parent_id.as_deref().unwrap_or("")))
    })
}

/// `POST /rest/requestFile/{ref}/reply`: tells the requestor the files are there, with an
/// optional message; a link to an inbox sends its files with it and takes no more. Before any
/// file arrived: 403 `ERR_ENTITY_REQUEST_FILE_NO_FILE_UPLOADED`.
pub fn reply(ctx: &Ctx, v: &Visitor, body: Option<&str>) -> Result<String> {
    if let Some(b) = body {
        if b.len() > 1_000_000 {
            return Err(rules::invalid("body", "at most 1,000,000 bytes").into());
        }
        coffer_domain::mail::check_hyperlinks(b, "body")?;
    }
    let (link, _) = admit(ctx, v)?;
    ctx.write(|c| {
        let t = now();
        let link = fresh(c, link.id)?;
        check_open(c, &link, t)?;
        super::deliver(c, &link, body, t)
    })
}
