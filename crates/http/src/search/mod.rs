//! Search: `GET /rest/search` and `GET /rest/query`. The parameters are read by
//! `coffer_service::search::params`, the search runs in `coffer_service::search::find`.

use crate::plumbing::error::RestError;
use crate::plumbing::extract::{Caller, QueryPairs};
use crate::plumbing::state::{blocking, AppState};
use actix_web::web::{self, Data};
use actix_web::HttpResponse;
use coffer_service::search::{find, params, QueryView, SearchView};

pub fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/search").route(web::get().to(search)))
        .service(web::resource("/query").route(web::get().to(query)));
}

#[utoipa::path(get, path = "/rest/search", tag = "search", params(
    ("objectId" = Option<String>, Query, description = "Only under this folder", max_length = 1024),
    ("content" = Option<String>, Query, description = "A name equal to this (with or without its extension), or file text holding every word", max_length = 1024),
    ("content:contains" = Option<String>, Query, description = "A name or description containing this, or file text holding every word", max_length = 1024),
    ("content:startswith" = Option<String>, Query, description = "A name or description starting with this, or file text holding every word (the last one as a prefix)", max_length = 1024),
    ("description" = Option<String>, Query, description = "A description equal to this", max_length = 1024),
    ("description:contains" = Option<String>, Query, description = "A description containing this", max_length = 1024),
    ("description:startswith" = Option<String>, Query, description = "A description starting with this", max_length = 1024),
    ("user" = Option<String>, Query, description = "The creator's email address", max_length = 1024),
    ("modified" = Option<String>, Query, description = "Modified on this day (`YYYY-MM-DD`, UTC) or at this RFC 3339 time; also `modified:gt`, `:gte`, `:lt`, `:lte`", max_length = 64),
    ("modified:gt" = Option<String>, Query, max_length = 64), ("modified:gte" = Option<String>, Query, max_length = 64), ("modified:lt" = Option<String>, Query, max_length = 64), ("modified:lte" = Option<String>, Query, max_length = 64),
    ("created" = Option<String>, Query, description = "Created on this day (`YYYY-MM-DD`, UTC) or at this RFC 3339 time; also `created:gt`, `:gte`, `:lt`, `:lte`", max_length = 64),
    ("created:gt" = Option<String>, Query, max_length = 64), ("created:gte" = Option<String>, Query, max_length = 64), ("created:lt" = Option<String>, Query, max_length = 64), ("created:lte" = Option<String>, Query, max_length = 64),
    ("locked" = Option<i64>, Query, description = "Lock state, 0 unlocked (Coffer has no file locks: every file is 0); also `locked:gt`, `:gte`, `:lt`, `:lte`"),
    ("locked:gt" = Option<i64>, Query), ("locked:gte" = Option<i64>, Query), ("locked:lt" = Option<i64>, Query), ("locked:lte" = Option<i64>, Query),
    ("filesize" = Option<i64>, Query, description = "Size in bytes; also `filesize:gt`, `:gte`, `:lt`, `:lte`"),
    ("filesize:gt" = Option<i64>, Query), ("filesize:gte" = Option<i64>, Query), ("filesize:lt" = Option<i64>, Query), ("filesize:lte" = Option<i64>, Query),
    ("file_type" = Option<String>, Query, description = "Comma-separated groups: Documents, Spreadsheets, Presentations, Images, PDF, Multimedia, Text", pattern = "^(Documents|Spreadsheets|Presentations|Images|PDF|Multimedia|Text)(,(Documents|Spreadsheets|Presentations|Images|PDF|Multimedia|Text))*$"),
    ("email_type" = Option<String>, Query, description = "Comma-separated boxes: Inbox, Draft, Sent", pattern = "^(Inbox|Draft|Sent)(,(Inbox|Draft|Sent))*$"),
    ("tracking_id" = Option<String>, Query, description = "Files uploaded with this tracking id (also `tracking_id:eq`)", max_length = 64),
    ("tracking_id:eq" = Option<String>, Query, max_length = 64),
    ("path" = Option<String>, Query, description = "The path of a folder or file as its record shows it (`My Folder/Reports`); the other criteria then do not apply", max_length = 1024),
    ("path:contains" = Option<String>, Query, description = "Part of a path; the other criteria then do not apply", max_length = 1024),
    ("searchType" = Option<String>, Query, description = "Comma-separated kinds: `f` files, `d` folders, `m` mail (`e` too), `k` sources (none yet); default all", pattern = "^[fdmek](,[fdmek])*$"),
    ("searchFilter" = Option<String>, Query, description = "`shared`: only what others shared with the caller", pattern = "^(all|shared)$"),
    ("fls_only" = Option<bool>, Query, description = "Only what others shared with the caller"),
    ("sharedMailboxId" = Option<String>, Query, description = "Search this shared mailbox's mail (the caller must be an active member) instead of the caller's", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"),
    ("orderBy" = Option<String>, Query, description = "`name`, `created`, `modified` or `score` (relevance), with `:asc` or `:desc`; default `score:desc` with text, else `name:asc`", pattern = "^(name|created|modified|score)(:(asc|desc))?$"),
    ("offset" = Option<i64>, Query, description = "Items of each kind to skip", minimum = 0),
    ("limit" = Option<i64>, Query, description = "Items of each kind, at most 1000 (default 100)", minimum = 1, maximum = 1000),
    ("with" = Option<String>, Query, description = "Accepted for compatibility; the records are always whole", max_length = 1024),
), responses(
    (status = 200, body = SearchView, description = "What the caller may see that matches, by kind, with the counts"),
    (status = 403, description = "`ERR_ACCESS_USER`: not an active member of the shared mailbox"),
    (status = 422, description = "`ERR_INVALID_PARAMETER`: an unknown parameter, kind, group or order, a range that is not a date or a number, a `limit` beyond 1000; `ERR_INPUT_INVALID_FORMAT`: a value with a control character"),
), security(("bearer" = [])))]
pub async fn search(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = params::search(&q)?;
    let found = blocking(&st, move |ctx| find::search(ctx, &c, &q)).await?;
    Ok(HttpResponse::Ok().json(SearchView::of(found)))
}

#[utoipa::path(get, path = "/rest/query", tag = "search", params(
    ("includeContent" = bool, Query, description = "Search file text as well as names"),
    ("searchType" = String, Query, description = "Comma-separated kinds: `f` files, `d` folders, `e` mail (`m` too)", pattern = "^[fdmek](,[fdmek])*$"),
    ("query" = Option<String>, Query, description = "Words to find: in names, in file text (with `includeContent`), in mail subjects and bodies", max_length = 1024),
    ("objectId" = Option<String>, Query, description = "Only under this folder", max_length = 1024),
    ("created" = Option<String>, Query, description = "Created on this day (`YYYY-MM-DD`, UTC) or at this RFC 3339 time; also `created:gt`, `:gte`, `:lt`, `:lte`", max_length = 64),
    ("created:gt" = Option<String>, Query, max_length = 64), ("created:gte" = Option<String>, Query, max_length = 64), ("created:lt" = Option<String>, Query, max_length = 64), ("created:lte" = Option<String>, Query, max_length = 64),
    ("modified" = Option<String>, Query, description = "Modified on this day or at this time; also `modified:gt`, `:gte`, `:lt`, `:lte`", max_length = 64),
    ("modified:gt" = Option<String>, Query, max_length = 64), ("modified:gte" = Option<String>, Query, max_length = 64), ("modified:lt" = Option<String>, Query, max_length = 64), ("modified:lte" = Option<String>, Query, max_length = 64),
    ("fileSize" = Option<i64>, Query, description = "Size in bytes; also `fileSize:gt`, `:gte`, `:lt`, `:lte`"),
    ("fileSize:gt" = Option<i64>, Query), ("fileSize:gte" = Option<i64>, Query), ("fileSize:lt" = Option<i64>, Query), ("fileSize:lte" = Option<i64>, Query),
    ("user" = Option<String>, Query, description = "The creator's email address", max_length = 1024),
    ("fileType" = Option<String>, Query, description = "Comma-separated groups: Documents, Spreadsheets, Presentations, Images, PDF, Multimedia, Text", pattern = "^(Documents|Spreadsheets|Presentations|Images|PDF|Multimedia|Text)(,(Documents|Spreadsheets|Presentations|Images|PDF|Multimedia|Text))*$"),
    ("flsOnly" = Option<bool>, Query, description = "Only what others shared with the caller"),
    ("sharedMailboxId" = Option<String>, Query, description = "Search this shared mailbox's mail (the caller must be an active member) instead of the caller's", pattern = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"),
    ("orderBy" = Option<String>, Query, description = "`score` (relevance; the default with words), `name` (the default without), `created`, `modified`", pattern = "^(score|name|created|modified)$"),
    ("orderType" = Option<String>, Query, description = "`asc` or `desc` (default `desc` for `score`, else `asc`)", pattern = "^(asc|desc)$"),
    ("nameOnly" = Option<bool>, Query, description = "Names only: no file text, no mail bodies"),
    ("subject" = Option<String>, Query, description = "Mail whose subject contains this", max_length = 998),
    ("senderId" = Option<String>, Query, description = "Mail from this user id", max_length = 1024),
    ("recipientId" = Option<String>, Query, description = "Mail to this user id", max_length = 1024),
    ("fileName" = Option<String>, Query, description = "Files whose name contains this", max_length = 255),
    ("folderName" = Option<String>, Query, description = "Folders whose name contains this", max_length = 255),
    ("fileContent" = Option<String>, Query, description = "Files whose text holds every word", max_length = 1024),
    ("spellCheck" = Option<bool>, Query, description = "Suggest corrections of the words from the caller's own names and mail subjects"),
    ("bucket" = Option<String>, Query, description = "`inbox` or `sent` mail only", pattern = "^(inbox|sent)$"),
    ("path" = Option<String>, Query, description = "The path of a folder or file as its record shows it; the other criteria then do not apply", max_length = 1024),
    ("tracking_id" = Option<String>, Query, description = "Files uploaded with this tracking id", max_length = 64),
    ("extensions" = Option<String>, Query, description = "Comma-separated extensions, with or without the dot (`pdf,.docx`)", pattern = "^\\.?[A-Za-z0-9_-]{1,32}(,\\.?[A-Za-z0-9_-]{1,32})*$"),
    ("offset" = Option<i64>, Query, description = "Items of each kind to skip", minimum = 0),
    ("limit" = Option<i64>, Query, description = "Items of each kind, at most 1000 (default 100)", minimum = 1, maximum = 1000),
), responses(
    (status = 200, body = QueryView, description = "What the caller may see that matches, by kind, with the counts, passages of file text and suggestions"),
    (status = 403, description = "`ERR_PROFILE_COLLABORATION_DISABLED`: the caller's profile has no collaboration; `ERR_ACCESS_USER`: not an active member of the shared mailbox"),
    (status = 422, description = "`ERR_INVALID_PARAMETER`: `includeContent` or `searchType` missing, an unknown parameter, kind, group or order, a range that is not a date or a number, a `limit` beyond 1000; `ERR_INPUT_INVALID_FORMAT`: a value with a control character"),
), security(("bearer" = [])))]
pub async fn query(
    Caller(c): Caller,
    st: Data<AppState>,
    QueryPairs(q): QueryPairs,
) -> Result<HttpResponse, RestError> {
    let q = params::query(&q)?;
    let found = blocking(&st, move |ctx| find::query(ctx, &c, &q)).await?;
    Ok(HttpResponse::Ok().json(QueryView::of(found)))
}
