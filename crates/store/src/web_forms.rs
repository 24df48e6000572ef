//! Web forms: the forms an operator defines, with their fields and allowed profiles as JSON.
//! Plain queries; the rules live in `coffer_service::web_forms`.

use crate::schema::{web_form_drafts, web_forms};
use crate::{db_run, DbConn, StoreResult};
use diesel::prelude::*;

/// A web form.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = web_forms)]
pub struct WebForm {
    pub id: String,
    pub name: String,
    pub name_folded: String,
    pub description: String,
    /// Whose inbox its submissions reach: a user, or a shared mailbox's user.
    pub owner_id: String,
    pub active: bool,
    pub auth_required: bool,
    pub embedded: bool,
    pub standalone: bool,
    /// A JSON array of field definitions.
    pub fields: String,
    /// A JSON array of profile ids (empty: every profile).
    pub profiles: String,
    pub created_at: i64,
    pub modified_at: i64,
}

pub fn insert(conn: &mut DbConn, f: &WebForm) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(web_forms::table).values(f).execute(conn))?;
    Ok(())
}

/// Replaces every field of a form but its id and creation time.
pub fn update(conn: &mut DbConn, f: &WebForm) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::update(web_forms::table.find(&f.id))
        .set((
            web_forms::name.eq(&f.name),
            web_forms::name_folded.eq(&f.name_folded),
            web_forms::description.eq(&f.description),
            web_forms::owner_id.eq(&f.owner_id),
            web_forms::active.eq(f.active),
            web_forms::auth_required.eq(f.auth_required),
            web_forms::embedded.eq(f.embedded),
            web_forms::standalone.eq(f.standalone),
            web_forms::fields.eq(&f.fields),
            web_forms::profiles.eq(&f.profiles),
            web_forms::modified_at.eq(f.modified_at),
        ))
        .execute(conn))?)
}

pub fn delete(conn: &mut DbConn, id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(web_forms::table.find(id)).execute(conn))?)
}

pub fn by_id(conn: &mut DbConn, id: &str) -> StoreResult<Option<WebForm>> {
    Ok(db_run!(conn => web_forms::table
        .find(id)
        .select(WebForm::as_select())
        .first(conn)
        .optional())?)
}

/// Every form, by name then id.
pub fn all(conn: &mut DbConn) -> StoreResult<Vec<WebForm>> {
    Ok(db_run!(conn => web_forms::table
        .order((web_forms::name_folded.asc(), web_forms::id.asc()))
        .select(WebForm::as_select())
        .load(conn))?)
}

/// The active forms, by name then id (the caller narrows them by profile).
pub fn active(conn: &mut DbConn) -> StoreResult<Vec<WebForm>> {
    Ok(db_run!(conn => web_forms::table
        .filter(web_forms::active.eq(true))
        .order((web_forms::name_folded.asc(), web_forms::id.asc()))
        .select(WebForm::as_select())
        .load(conn))?)
}

/// The forms `owner_id` owns, by name then id.
pub fn owned_by(conn: &mut DbConn, owner_id: &str) -> StoreResult<Vec<WebForm>> {
    Ok(db_run!(conn => web_forms::table
        .filter(web_forms::owner_id.eq(owner_id))
        .order((web_forms::name_folded.asc(), web_forms::id.asc()))
        .select(WebForm::as_select())
        .load(conn))?)
}

/// A submission in progress: a draft email that files are uploaded onto before the form is sent.
#[derive(Debug, Clone, Queryable, Selectable, Insertable)]
#[diesel(table_name = web_form_drafts)]
pub struct Draft {
    pub email_id: String,
    pub form_id: String,
    /// The SHA-256 of the reference the page holds.
    pub ref_hash: String,
    /// The signed-in submitter, or `None` for an anonymous one.
    pub submitter_id: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
}

pub fn insert_draft(conn: &mut DbConn, d: &Draft) -> StoreResult<()> {
    db_run!(conn => diesel::insert_into(web_form_drafts::table).values(d).execute(conn))?;
    Ok(())
}

/// The draft a reference's hash names.
pub fn draft_by_ref(conn: &mut DbConn, ref_hash: &str) -> StoreResult<Option<Draft>> {
    Ok(db_run!(conn => web_form_drafts::table
        .filter(web_form_drafts::ref_hash.eq(ref_hash))
        .select(Draft::as_select())
        .first(conn)
        .optional())?)
}

pub fn delete_draft(conn: &mut DbConn, email_id: &str) -> StoreResult<usize> {
    Ok(db_run!(conn => diesel::delete(web_form_drafts::table.find(email_id)).execute(conn))?)
}

/// Up to `limit` drafts that expired before `t`.
pub fn expired_drafts(conn: &mut DbConn, t: i64, limit: i64) -> StoreResult<Vec<Draft>> {
    Ok(db_run!(conn => web_form_drafts::table
        .filter(web_form_drafts::expires_at.lt(t))
        .order(web_form_drafts::expires_at.asc())
        .limit(limit)
        .select(Draft::as_select())
        .load(conn))?)
}
