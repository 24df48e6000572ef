//! Locations: the server sites of a deployment. Everyone reads them; system administrators
//! write them.

use crate::platform::auth::SystemAdmin;
use crate::platform::events;
use crate::platform::views::{Listed, LocationView};
use crate::{now, Ctx, Result};
use coffer_domain::list::ListQuery;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::NewLocation;

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

/// A DNS domain: labels of letters, digits and hyphens, not starting or ending with a hyphen.
pub fn valid_domain(d: &str) -> bool {
    let d = d.strip_suffix('.').unwrap_or(d);
    !d.is_empty()
        && d.len() <= 253
        && d.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

pub fn create(ctx: &Ctx, admin: &SystemAdmin, name: &str, domain: &str) -> Result<LocationView> {
    let actor = admin.user_id();
    let name = name.trim();
    if name.len() > 255 || name.chars().any(char::is_control) {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, "name").into());
    }
    if !valid_domain(domain) {
        return Err(ApiError::field(ErrorCode::InputInvalidFormat, "domain").into());
    }
    let loc = ctx.write(|c| {
        if coffer_store::locations::by_name(c, name)?.is_some() {
            return Err(ApiError::field(ErrorCode::EntityExists, "name").into());
        }
        let id = coffer_store::locations::insert(
            c,
            &NewLocation {
                name: name.to_string(),
                dns: domain.to_ascii_lowercase(),
                tenant_id: 1,
                created_at: now(),
            },
        )
        .map_err(|e| {
            if e.is_unique_violation() {
                Error::from(ApiError::field(ErrorCode::EntityExists, "name"))
            } else {
                e.into()
            }
        })?;
        events::record(
            c,
            "location.location.create",
            Some(actor),
            serde_json::json!({"id": id, "name": name}),
        )?;
        coffer_store::locations::by_id(c, id)?.ok_or_else(not_found)
    })?;
    Ok(LocationView::from(&loc))
}

pub fn get(ctx: &Ctx, id: i64) -> Result<LocationView> {
    let l = ctx
        .with_conn(|c| Ok(coffer_store::locations::by_id(c, id)?))?
        .ok_or_else(not_found)?;
    Ok(LocationView::from(&l))
}

pub fn list(ctx: &Ctx, q: &ListQuery) -> Result<Listed<LocationView>> {
    let page = ctx.with_conn(|c| Ok(coffer_store::locations::list(c, q)?))?;
    Ok(Listed {
        items: page.items.iter().map(LocationView::from).collect(),
        total: page.total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// Deletes a location. The system's default location (setting `locationId`) cannot be deleted:
/// 403 `ERR_ACCESS_USER`.
pub fn delete(ctx: &Ctx, admin: &SystemAdmin, id: i64) -> Result<()> {
    let actor = admin.user_id();
    ctx.write(|c| {
        coffer_store::locations::by_id(c, id)?.ok_or_else(not_found)?;
        if coffer_store::settings::get(c, "locationId")?.and_then(|v| v.parse::<i64>().ok())
            == Some(id)
        {
            return Err(ApiError::new(ErrorCode::AccessUser)
                .with_message(
                    "Insufficient access permissions (the default location cannot be deleted).",
                )
                .into());
        }
        coffer_store::locations::delete(c, id)?;
        events::record(
            c,
            "location.location.delete",
            Some(actor),
            serde_json::json!({"id": id}),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domains() {
        for ok in ["eu.example.com", "a", "x-1.example.org."] {
            assert!(valid_domain(ok), "{ok}");
        }
        for bad in [
            "",
            "-a.com",
            "a-.com",
            "a..com",
            "a b.com",
            "ex_ample.com",
            &"a".repeat(64),
        ] {
            assert!(!valid_domain(bad), "{bad}");
        }
    }
}
