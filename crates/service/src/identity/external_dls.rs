//! External distribution lists: the organisation's list of addresses that are mailing lists
//! outside Coffer. User administrators (system and helpdesk administrators) keep the list;
//! every user reads it and checks addresses against it. Such an address cannot become an
//! account (403 `ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST`), and contacts show it as a list.

use crate::platform::auth::AccountAdmin;
use crate::platform::events;
use crate::platform::views::Listed;
use crate::Ctx;
use crate::{now, Result};
use coffer_domain::list::ListQuery;
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::DbConn;
use serde::Serialize;
use utoipa::ToSchema;

/// A listed address (the reference's `ExternalDL`).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct ExternalDlView {
    pub email: String,
}

/// Whether an address is a distribution list (the reference's `UserDistributionList`).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DistributionListCheck {
    pub email: String,
    pub is_dl: bool,
}

fn views(emails: Vec<String>) -> Vec<ExternalDlView> {
    emails
        .into_iter()
        .map(|email| ExternalDlView { email })
        .collect()
}

/// `GET /rest/externalDL`: the listed addresses, those containing `search` when given.
pub fn list(ctx: &Ctx, search: Option<&str>, q: &ListQuery) -> Result<Listed<ExternalDlView>> {
    let search = search.map(str::trim).filter(|s| !s.is_empty());
    let page = ctx.read(|c| Ok(coffer_store::external_dls::list(c, search, q)?))?;
    Ok(Listed {
        items: views(page.items),
        total: page.total,
        offset: q.offset,
        limit: q.limit,
    })
}

/// `POST /rest/externalDL`: lists the addresses (checked and lower-cased by
/// `coffer_domain::contact::parse_email_list`). Adding a listed one again changes nothing;
/// answers every address asked for, all listed now. Records `externaldl.email.create` with the
/// addresses it added, when it added any.
pub fn add(ctx: &Ctx, admin: &AccountAdmin, emails: &[String]) -> Result<Vec<ExternalDlView>> {
    let actor = admin.user_id();
    ctx.write(|c| {
        let added = coffer_store::external_dls::add(c, emails, Some(actor), now())?;
        if !added.is_empty() {
            events::record(
                c,
                "externaldl.email.create",
                Some(actor),
                serde_json::json!({ "emails": added }),
            )?;
        }
        Ok(())
    })?;
    Ok(views(emails.to_vec()))
}

/// `DELETE /rest/externalDL`: takes the addresses off the list; answers those it took off
/// (addresses that were not listed are left out). Records `externaldl.email.delete` when it
/// removed any.
pub fn remove(ctx: &Ctx, admin: &AccountAdmin, emails: &[String]) -> Result<Vec<ExternalDlView>> {
    let actor = admin.user_id();
    let removed = ctx.write(|c| {
        let removed = coffer_store::external_dls::remove(c, emails)?;
        if !removed.is_empty() {
            events::record(
                c,
                "externaldl.email.delete",
                Some(actor),
                serde_json::json!({ "emails": removed }),
            )?;
        }
        Ok(removed)
    })?;
    Ok(views(removed))
}

/// `GET /rest/users/actions/getDistributionList`: for each address asked about (trimmed and
/// lower-cased, once each, in the order given), whether it is a distribution list. Text that is
/// not an address is simply not one.
pub fn check(ctx: &Ctx, emails: &[String]) -> Result<Vec<DistributionListCheck>> {
    let mut asked: Vec<String> = Vec::with_capacity(emails.len());
    for e in emails {
        let e = e.trim().to_ascii_lowercase();
        if !asked.contains(&e) {
            asked.push(e);
        }
    }
    let listed = ctx.with_conn(|c| Ok(coffer_store::external_dls::listed(c, &asked)?))?;
    Ok(asked
        .into_iter()
        .map(|email| DistributionListCheck {
            is_dl: listed.contains(&email),
            email,
        })
        .collect())
}

/// Refuses an address that is an external distribution list as an account's email (403
/// `ERR_INPUT_EMAIL_IS_DISTRIBUTION_LIST` naming `field`). Call it inside the transaction that
/// creates the account or changes its email.
pub fn refuse_as_account(c: &mut DbConn, email: &str, field: &str) -> Result<()> {
    if coffer_store::external_dls::contains(c, &email.to_ascii_lowercase())? {
        return Err(
            ApiError::field(ErrorCode::InputEmailIsDistributionList, field)
                .with_message(format!(
                "A distribution list cannot register ({email} is an external distribution list)."
            ))
                .into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::accounts::{create_user, NewUser};
    use coffer_domain::Role;

    fn new_user(email: &str) -> NewUser {
        NewUser {
            email: email.into(),
            name: "List".into(),
            password: None,
            role: Role::User,
            profile: None,
        }
    }

    #[test]
    fn a_listed_address_cannot_become_an_account() {
        let (_d, ctx) = crate::test_support::ctx();
        let admin = AccountAdmin::check(crate::test_support::caller(Role::HelpdeskAdmin)).unwrap();
        let added = add(&ctx, &admin, &["team@partner.example".into()]).unwrap();
        assert_eq!(added[0].email, "team@partner.example");
        let users = |ctx: &Ctx| {
            ctx.with_conn(|c| Ok(coffer_store::users::count(c)?))
                .unwrap()
        };
        let before = users(&ctx);
        let e = create_user(&ctx, new_user("Team@Partner.example"), None)
            .unwrap_err()
            .to_api();
        assert_eq!(
            (e.code, e.status, e.field.as_deref()),
            (ErrorCode::InputEmailIsDistributionList, 403, Some("email"))
        );
        assert_eq!(users(&ctx), before);
        // Taken off the list, the address may register.
        assert_eq!(
            remove(
                &ctx,
                &admin,
                &["team@partner.example".into(), "x@y.io".into()]
            )
            .unwrap(),
            [ExternalDlView {
                email: "team@partner.example".into()
            }]
        );
        create_user(&ctx, new_user("team@partner.example"), None).unwrap();
        assert_eq!(
            check(
                &ctx,
                &["A@x.io".into(), "a@x.io".into(), "not an address".into()]
            )
            .unwrap(),
            [
                DistributionListCheck {
                    email: "a@x.io".into(),
                    is_dl: false
                },
                DistributionListCheck {
                    email: "not an address".into(),
                    is_dl: false
                }
            ]
        );
    }
}
