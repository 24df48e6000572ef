//! The query parameters of `GET /rest/search` and `GET /rest/query`, read into one
//! [`Query`]. Every value is checked: an unknown parameter, type, group or order, a range
//! that is not a date or a number, a `limit` beyond the maximum answer 422
//! `ERR_INVALID_PARAMETER` naming the parameter; a control character in any value 422
//! `ERR_INPUT_INVALID_FORMAT`.

use super::{Bucket, FileGroup, Order, Query, Range, TextMatch, TextOp, MAX_LIMIT};
use crate::Result;
use coffer_domain::content::fold_name;
use coffer_errors::{ApiError, ErrorCode};

/// The longest text value taken.
const MAX_TEXT: usize = 1024;

fn invalid(field: &str, why: &str) -> ApiError {
    ApiError::field(ErrorCode::InvalidParameter, field)
        .with_message(format!("The parameter is invalid ({field}: {why})."))
}

fn text(field: &str, v: &str) -> std::result::Result<String, ApiError> {
    if v.chars().count() > MAX_TEXT {
        return Err(invalid(field, "at most 1024 characters"));
    }
    Ok(v.trim().to_string())
}

fn non_blank(field: &str, v: &str) -> std::result::Result<Option<String>, ApiError> {
    let t = text(field, v)?;
    Ok((!t.is_empty()).then_some(t))
}

fn text_match(
    field: &str,
    op: TextOp,
    v: &str,
) -> std::result::Result<Option<TextMatch>, ApiError> {
    Ok(non_blank(field, v)?.map(|t| TextMatch {
        op,
        folded: fold_name(&t),
    }))
}

fn boolean(field: &str, v: &str) -> std::result::Result<bool, ApiError> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(invalid(field, "true or false")),
    }
}

fn integer(field: &str, v: &str) -> std::result::Result<i64, ApiError> {
    v.trim()
        .parse::<i64>()
        .map_err(|_| invalid(field, "an integer"))
}

/// A date as clients send it: `YYYY-MM-DD` (the whole day, UTC) or an RFC 3339 time. Returns
/// the first second and the last second the value covers.
fn date(field: &str, v: &str) -> std::result::Result<(i64, i64), ApiError> {
    use time::format_description::well_known::Rfc3339;
    let v = v.trim();
    if let Ok(t) = time::OffsetDateTime::parse(v, &Rfc3339) {
        let s = t.unix_timestamp();
        return Ok((s, s));
    }
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(v, &fmt)
        .map(|d| {
            let s = d.midnight().assume_utc().unix_timestamp();
            (s, s + 86_399)
        })
        .map_err(|_| invalid(field, "a date, YYYY-MM-DD or RFC 3339"))
}

/// Applies one range operator to a range: `op` is "", "gt", "gte", "lt" or "lte"; `(first,
/// last)` the span the value covers (one point for numbers).
fn bound(range: &mut Range, op: &str, (first, last): (i64, i64)) {
    match op {
        "gt" => range.low = Some((last, false)),
        "gte" => range.low = Some((first, true)),
        "lt" => range.high = Some((first, false)),
        "lte" => range.high = Some((last, true)),
        _ => {
            range.low = Some((first, true));
            range.high = Some((last, true));
        }
    }
}

/// A comma-separated list, each item given (no blanks, no spaces around).
fn list(field: &str, v: &str) -> std::result::Result<Vec<String>, ApiError> {
    let items: Vec<String> = v.split(',').map(str::to_string).collect();
    if items.iter().any(String::is_empty) {
        return Err(invalid(field, "a comma-separated list without blanks"));
    }
    Ok(items)
}

/// An extension, with or without its dot: 1 to 32 letters, digits, `_` or `-` (ASCII).
fn extension(field: &str, v: &str) -> std::result::Result<String, ApiError> {
    let e = v.strip_prefix('.').unwrap_or(v);
    let ok = (1..=32).contains(&e.len())
        && e.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !ok {
        return Err(invalid(
            field,
            "extensions are 1 to 32 letters, digits, _ or -",
        ));
    }
    Ok(e.to_ascii_lowercase())
}

fn file_groups(field: &str, v: &str, q: &mut Query) -> std::result::Result<(), ApiError> {
    for g in list(field, v)? {
        let group = FileGroup::parse(&g).ok_or_else(|| {
            invalid(
                field,
                "Documents, Spreadsheets, Presentations, Images, PDF, Multimedia or Text",
            )
        })?;
        for e in group.extensions() {
            if !q.extensions.iter().any(|x| x == e) {
                q.extensions.push((*e).to_string());
            }
        }
    }
    Ok(())
}

/// The kinds of `searchType`: `f` files, `d` folders, `m` or `e` mail, `k` sources (none yet).
fn kinds(field: &str, v: &str, q: &mut Query) -> std::result::Result<(), ApiError> {
    let items = list(field, v)?;
    q.files = false;
    q.folders = false;
    q.mail = false;
    for k in items {
        match k.as_str() {
            "f" => q.files = true,
            "d" => q.folders = true,
            "m" | "e" => q.mail = true,
            // Sources have no search yet: asked alone, nothing is found.
            "k" => {}
            _ => return Err(invalid(field, "f, d, m, e or k")),
        }
    }
    Ok(())
}

fn mailbox_id(field: &str, v: &str) -> std::result::Result<String, ApiError> {
    let v = v.trim();
    uuid::Uuid::parse_str(v)
        .map(|u| u.to_string())
        .map_err(|_| invalid(field, "a shared mailbox's id"))
}

fn limits(q: &mut Query, field: &str, v: &str) -> std::result::Result<(), ApiError> {
    let n = integer(field, v)?;
    match field {
        "offset" if n < 0 => Err(invalid(field, "0 or more")),
        "offset" => {
            q.offset = n;
            Ok(())
        }
        _ if !(1..=MAX_LIMIT).contains(&n) => Err(invalid(field, "1 to 1000")),
        _ => {
            q.limit = n;
            Ok(())
        }
    }
}

/// Splits `name:op` into the name and the operator ("" when none).
fn split_op(key: &str) -> (&str, &str) {
    match key.split_once(':') {
        Some((n, op)) => (n, op),
        None => (key, ""),
    }
}

fn range_op(key: &str, op: &str) -> std::result::Result<(), ApiError> {
    match op {
        "" | "gt" | "gte" | "lt" | "lte" => Ok(()),
        _ => Err(invalid(key, "the operators are :gt, :gte, :lt and :lte")),
    }
}

/// The one rule for text (`input::is_clean`): no value with a control character goes further
/// (422 `ERR_INPUT_INVALID_FORMAT`, as every other query).
fn clean(pairs: &[(String, String)]) -> std::result::Result<(), ApiError> {
    for (key, v) in pairs {
        if !coffer_domain::input::is_clean(v, false) {
            return Err(coffer_domain::input::unclean(key));
        }
        let max = match key.as_str() {
            "subject" => 998,
            "fileName" | "folderName" => 255,
            "tracking_id" | "tracking_id:eq" => 64,
            _ => MAX_TEXT,
        };
        if v.chars().count() > max {
            return Err(invalid(key, "too long"));
        }
    }
    Ok(())
}

/// Parameters every `/rest` call may carry.
fn common(key: &str) -> bool {
    matches!(key, "apiVersion" | "mode" | "with")
}

/// `GET /rest/search`.
pub fn search(pairs: &[(String, String)]) -> Result<Query> {
    clean(pairs)?;
    let mut q = Query {
        order: Order::Name,
        ..Query::default()
    };
    let mut order_given = false;
    for (key, v) in pairs {
        let (name, op) = split_op(key);
        match name {
            "content" => {
                let op = match op {
                    "" => TextOp::Eq,
                    "contains" => TextOp::Contains,
                    "startswith" => TextOp::StartsWith,
                    _ => {
                        return Err(
                            invalid(key, "content, content:contains or content:startswith").into(),
                        )
                    }
                };
                q.text = text_match(key, op, v)?;
            }
            "description" => {
                let op = match op {
                    "" => TextOp::Eq,
                    "contains" => TextOp::Contains,
                    "startswith" => TextOp::StartsWith,
                    _ => return Err(invalid(key, "description, :contains or :startswith").into()),
                };
                q.description = text_match(key, op, v)?;
            }
            "objectId" if op.is_empty() => q.under = non_blank(key, v)?,
            "user" if op.is_empty() => {
                q.creator_email = non_blank(key, v)?.map(|e| e.to_lowercase())
            }
            "modified" | "created" => {
                range_op(key, op)?;
                let span = date(key, v)?;
                bound(
                    if name == "created" {
                        &mut q.created
                    } else {
                        &mut q.modified
                    },
                    op,
                    span,
                );
            }
            "filesize" | "locked" => {
                range_op(key, op)?;
                let n = integer(key, v)?;
                bound(
                    if name == "filesize" {
                        &mut q.size
                    } else {
                        &mut q.locked
                    },
                    op,
                    (n, n),
                );
            }
            "file_type" if op.is_empty() => file_groups(key, v, &mut q)?,
            "email_type" if op.is_empty() => {
                for t in list(key, v)? {
                    q.buckets.push(match t.as_str() {
                        "Inbox" => Bucket::Inbox,
                        "Draft" => Bucket::Draft,
                        "Sent" => Bucket::Sent,
                        _ => return Err(invalid(key, "Inbox, Draft or Sent").into()),
                    });
                }
            }
            "tracking_id" if op.is_empty() || op == "eq" => q.tracking_id = tracking(key, v)?,
            "path" if op.is_empty() => q.path = text_match(key, TextOp::Eq, v.trim_matches('/'))?,
            "path" if op == "contains" => q.path = text_match(key, TextOp::Contains, v)?,
            "searchType" if op.is_empty() => kinds(key, v, &mut q)?,
            "searchFilter" if op.is_empty() => match v.as_str() {
                "all" => {}
                "shared" => q.shared_only = true,
                _ => return Err(invalid(key, "all or shared").into()),
            },
            "fls_only" if op.is_empty() => q.shared_only |= boolean(key, v)?,
            "sharedMailboxId" if op.is_empty() => q.shared_mailbox = Some(mailbox_id(key, v)?),
            "orderBy" if !v.is_empty() => {
                let (field, dir) = match v.split_once(':') {
                    Some((f, d)) => (f, d),
                    None => (v.as_str(), "asc"),
                };
                q.order = order(key, field)?;
                q.descending = direction(key, dir)?;
                order_given = true;
            }
            "offset" | "limit" if op.is_empty() => limits(&mut q, key, v)?,
            _ if common(key) => {}
            _ => return Err(invalid(key, "not a parameter of this search").into()),
        }
    }
    if !order_given && q.text.is_some() {
        q.order = Order::Score;
        q.descending = true;
    }
    Ok(q)
}

fn order(key: &str, v: &str) -> std::result::Result<Order, ApiError> {
    Ok(match v {
        "score" => Order::Score,
        "name" => Order::Name,
        "created" => Order::Created,
        "modified" => Order::Modified,
        _ => return Err(invalid(key, "score, name, created or modified")),
    })
}

fn direction(key: &str, v: &str) -> std::result::Result<bool, ApiError> {
    match v {
        "asc" => Ok(false),
        "desc" => Ok(true),
        _ => Err(invalid(key, "asc or desc")),
    }
}

/// A tracking id; blank is none.
fn tracking(key: &str, v: &str) -> std::result::Result<Option<String>, ApiError> {
    non_blank(key, v)
}

/// `GET /rest/query`: `includeContent` and `searchType` are required.
pub fn query(pairs: &[(String, String)]) -> Result<Query> {
    clean(pairs)?;
    let mut q = Query::default();
    let mut include = None;
    let mut types = false;
    let mut order_given = None;
    let mut descending = None;
    for (key, v) in pairs {
        let (name, op) = split_op(key);
        match name {
            "includeContent" if op.is_empty() => include = Some(boolean(key, v)?),
            "searchType" if op.is_empty() => {
                kinds(key, v, &mut q)?;
                types = true;
            }
            "query" if op.is_empty() => q.text = text_match(key, TextOp::Contains, v)?,
            "objectId" if op.is_empty() => q.under = non_blank(key, v)?,
            "created" | "modified" => {
                range_op(key, op)?;
                let span = date(key, v)?;
                bound(
                    if name == "created" {
                        &mut q.created
                    } else {
                        &mut q.modified
                    },
                    op,
                    span,
                );
            }
            "fileSize" => {
                range_op(key, op)?;
                let n = integer(key, v)?;
                bound(&mut q.size, op, (n, n));
            }
            "user" if op.is_empty() => {
                q.creator_email = non_blank(key, v)?.map(|e| e.to_lowercase())
            }
            "fileType" if op.is_empty() => file_groups(key, v, &mut q)?,
            "flsOnly" if op.is_empty() => q.shared_only |= boolean(key, v)?,
            "sharedMailboxId" if op.is_empty() => q.shared_mailbox = Some(mailbox_id(key, v)?),
            "orderBy" if op.is_empty() => order_given = Some(order(key, v)?),
            "orderType" if op.is_empty() => descending = Some(direction(key, v)?),
            "nameOnly" if op.is_empty() => q.name_only = boolean(key, v)?,
            "subject" if op.is_empty() => q.subject = non_blank(key, v)?.map(|s| fold_name(&s)),
            "senderId" if op.is_empty() => q.sender_id = non_blank(key, v)?,
            "recipientId" if op.is_empty() => q.recipient_id = non_blank(key, v)?,
            "fileName" if op.is_empty() => q.file_name = non_blank(key, v)?.map(|s| fold_name(&s)),
            "folderName" if op.is_empty() => {
                q.folder_name = non_blank(key, v)?.map(|s| fold_name(&s))
            }
            "fileContent" if op.is_empty() => q.file_content = non_blank(key, v)?,
            "spellCheck" if op.is_empty() => q.spell_check = boolean(key, v)?,
            "bucket" if op.is_empty() => q.buckets.push(match v.as_str() {
                "inbox" => Bucket::Inbox,
                "sent" => Bucket::Sent,
                _ => return Err(invalid(key, "inbox or sent").into()),
            }),
            "path" if op.is_empty() => q.path = text_match(key, TextOp::Eq, v.trim_matches('/'))?,
            "path" if op == "contains" => q.path = text_match(key, TextOp::Contains, v)?,
            "tracking_id" if op.is_empty() => q.tracking_id = tracking(key, v)?,
            "extensions" if op.is_empty() => {
                for e in list(key, v)? {
                    let e = extension(key, &e)?;
                    if !q.extensions.contains(&e) {
                        q.extensions.push(e);
                    }
                }
            }
            "offset" | "limit" if op.is_empty() => limits(&mut q, key, v)?,
            _ if common(key) => {}
            _ => return Err(invalid(key, "not a parameter of this search").into()),
        }
    }
    q.include_content = include.ok_or_else(|| invalid("includeContent", "required"))?;
    if !types {
        return Err(invalid("searchType", "required").into());
    }
    let has_text = q.text.is_some() || q.file_content.is_some();
    q.order = order_given.unwrap_or(if has_text { Order::Score } else { Order::Name });
    q.descending = descending.unwrap_or(q.order == Order::Score);
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn code(r: Result<Query>) -> String {
        match r {
            Err(crate::Error::Api(a)) => a.code.as_str().to_string(),
            Err(e) => format!("{e:?}"),
            Ok(_) => "ok".into(),
        }
    }

    #[test]
    fn query_needs_include_content_and_search_type() {
        assert_eq!(
            code(query(&pairs(&[("searchType", "f")]))),
            "ERR_INVALID_PARAMETER"
        );
        assert_eq!(
            code(query(&pairs(&[("includeContent", "true")]))),
            "ERR_INVALID_PARAMETER"
        );
        let q = query(&pairs(&[
            ("includeContent", "true"),
            ("searchType", "f,e"),
            ("query", "x"),
        ]))
        .unwrap();
        assert!(q.files && q.mail && !q.folders);
        assert_eq!(q.order, Order::Score);
        assert!(q.descending);
    }

    #[test]
    fn bad_values_are_invalid_parameters() {
        for p in [
            ("searchType", "x"),
            ("orderBy", "size"),
            ("file_type", "Movies"),
            ("created:gt", "yesterday"),
            ("filesize:gte", "big"),
            ("limit", "1001"),
            ("limit", "0"),
            ("offset", "-1"),
            ("sharedMailboxId", "12"),
            ("created:after", "2024-01-01"),
            ("nonsense", "1"),
        ] {
            assert_eq!(code(search(&pairs(&[p]))), "ERR_INVALID_PARAMETER", "{p:?}");
        }
    }

    #[test]
    fn a_day_covers_the_whole_day() {
        let q = search(&pairs(&[("created", "2024-03-01")])).unwrap();
        let start = 1_709_251_200;
        assert!(q.created.holds(start));
        assert!(q.created.holds(start + 86_399));
        assert!(!q.created.holds(start + 86_400));
        let q = search(&pairs(&[("modified:gt", "2024-03-01")])).unwrap();
        assert!(!q.modified.holds(start + 86_399));
        assert!(q.modified.holds(start + 86_400));
    }

    #[test]
    fn groups_become_extensions() {
        let q = search(&pairs(&[("file_type", "PDF,Text")])).unwrap();
        assert!(q.extensions.contains(&"pdf".to_string()));
        assert!(q.extensions.contains(&"txt".to_string()));
        let q = query(&pairs(&[
            ("includeContent", "false"),
            ("searchType", "f"),
            ("extensions", ".PDF,docx"),
        ]))
        .unwrap();
        assert_eq!(q.extensions, ["pdf", "docx"]);
    }
}
