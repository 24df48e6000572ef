//! The mail reads of an investigation: a user's mail as their mailbox shows it (the trash
//! too), and any email's recipients (bcc too) and attachments, through the mail area's views.

use crate::mail::{AttachmentView, MailQuery, MailView, RecipientView};
use crate::platform::auth::SystemAdmin;
use crate::platform::views::Listed;
use crate::{Ctx, Result};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::DbConn;
use std::collections::HashMap;

fn not_found() -> crate::Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// An email by id, whoever's it is; 404 `ERR_ENTITY_NOT_FOUND` when there is none.
fn email(c: &mut DbConn, id: &str) -> Result<coffer_store::emails::Email> {
    if uuid::Uuid::parse_str(id).is_err() {
        return Err(not_found());
    }
    coffer_store::emails::by_id(c, id)?.ok_or_else(not_found)
}

/// `GET /rest/dli/users/{id}/mail`: a page of the user's mailbox (a deleted user's too) as
/// `q` selects it. Records the read.
pub fn of_user(
    ctx: &Ctx,
    admin: &SystemAdmin,
    user_id: &str,
    q: &MailQuery,
    with_recipients: bool,
) -> Result<Listed<MailView>> {
    ctx.write(|c| {
        coffer_store::users::by_id(c, user_id)?.ok_or_else(not_found)?;
        super::record_read(c, admin, "mail of a user", "user", user_id)?;
        crate::mail::page_of(c, user_id, q, with_recipients)
    })
}

/// `GET /rest/dli/mail/{id}/recipients`: every recipient of the email in the order given, bcc
/// ones too. Records the read.
pub fn recipients(ctx: &Ctx, admin: &SystemAdmin, id: &str) -> Result<Vec<RecipientView>> {
    ctx.write(|c| {
        let e = email(c, id)?;
        super::record_read(c, admin, "recipients of an email", "mail", id)?;
        let list = coffer_store::emails::recipients(c, &e.id)?;
        crate::mail::recipient_views(c, &mut HashMap::new(), list, true)
    })
}

/// `GET /rest/dli/mail/{id}/attachments`: a page of the email's attachments, withdrawn ones
/// too. Records the read.
pub fn attachments(
    ctx: &Ctx,
    admin: &SystemAdmin,
    id: &str,
    offset: i64,
    limit: i64,
) -> Result<Listed<AttachmentView>> {
    ctx.write(|c| {
        let e = email(c, id)?;
        super::record_read(c, admin, "attachments of an email", "mail", id)?;
        crate::mail::attachment_page(c, &e.id, offset, limit)
    })
}
