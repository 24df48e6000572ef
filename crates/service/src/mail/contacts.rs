//! Contacts: each user's address book. A contact belongs to the user who made it; only they
//! read or change it (403 `ERR_ACCESS_USER` for anyone else, administrators included).

use crate::platform::events;
use crate::platform::views::{Link, Listed};
use crate::{now, rfc3339, Ctx, Result};
use coffer_domain::contact::ContactInput;
use coffer_domain::list::ListQuery;
use coffer_errors::{ApiError, Error, ErrorCode};
use coffer_store::models::{Contact, NewContact};
use coffer_store::DbConn;
use serde::Serialize;
use std::collections::HashMap;
use utoipa::ToSchema;

/// One address of a contact (the reference's `ContactItem`).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ContactItemView {
    pub email: String,
    /// The address is one of the organisation's external distribution lists.
    pub is_distribution_list: bool,
    /// Coffer keeps no profile pictures: always empty.
    pub profile_icon: String,
}

/// A contact record: the interface's flat fields (`email`, `isDistributionList`,
/// `profileIcon`, those of the first address) and the reference's `items`.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContactView {
    pub id: i64,
    pub user_id: String,
    pub name: String,
    pub created: String,
    pub modified: String,
    /// When mail or a file request last went to one of the addresses; absent until then.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_contact_date: Option<String>,
    /// The first address.
    pub email: String,
    /// True when the contact stands for several people: it has more than one address, or its
    /// address is an external distribution list.
    pub is_distribution_list: bool,
    pub profile_icon: String,
    pub items: Vec<ContactItemView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
}

fn not_found() -> Error {
    ApiError::new(ErrorCode::EntityNotFound).into()
}

fn exists() -> Error {
    ApiError::field(ErrorCode::EntityExists, "name")
        .with_message("The entity exists (name: the user has a contact with this name).")
        .into()
}

fn unique(e: coffer_store::StoreError) -> Error {
    if e.is_unique_violation() {
        exists()
    } else {
        e.into()
    }
}

/// The caller's contact `id`: 404 when there is none, 403 `ERR_ACCESS_USER` when it is
/// another user's.
fn owned(c: &mut DbConn, user_id: &str, id: i64) -> Result<Contact> {
    let contact = coffer_store::contacts::by_id(c, id)?.ok_or_else(not_found)?;
    if contact.user_id != user_id {
        return Err(ApiError::new(ErrorCode::AccessUser)
            .with_message("Insufficient access permissions (the contact is another user's).")
            .into());
    }
    Ok(contact)
}

/// The records of `contacts`, with their addresses and which of those are distribution lists.
fn views(c: &mut DbConn, contacts: &[Contact]) -> Result<Vec<ContactView>> {
    let ids: Vec<i64> = contacts.iter().map(|k| k.id).collect();
    let mut items: HashMap<i64, Vec<ContactItemView>> = HashMap::new();
    for (item, listed) in coffer_store::contacts::items_of(c, &ids)? {
        items
            .entry(item.contact_id)
            .or_default()
            .push(ContactItemView {
                email: item.email,
                is_distribution_list: listed,
                profile_icon: String::new(),
            });
    }
    Ok(contacts
        .iter()
        .map(|k| {
            let items = items.remove(&k.id).unwrap_or_default();
            let first = items.first();
            ContactView {
                id: k.id,
                user_id: k.user_id.clone(),
                name: k.name.clone(),
                created: rfc3339(k.created_at),
                modified: rfc3339(k.modified_at),
                last_contact_date: k.last_contact_at.map(rfc3339),
                email: first.map(|i| i.email.clone()).unwrap_or_default(),
                is_distribution_list: items.len() > 1
                    || first.is_some_and(|i| i.is_distribution_list),
                profile_icon: String::new(),
                items,
                links: None,
            }
        })
        .collect())
}

fn view(c: &mut DbConn, contact: &Contact) -> Result<ContactView> {
    views(c, std::slice::from_ref(contact))?
        .pop()
        .ok_or_else(not_found)
}

/// `POST /rest/contacts`: a new contact of the caller. A name the caller has already (without
/// regard to case) is 409 `ERR_ENTITY_EXISTS`.
pub fn create(ctx: &Ctx, user_id: &str, input: &ContactInput) -> Result<ContactView> {
    ctx.write(|c| {
        if coffer_store::contacts::by_name(c, user_id, &input.name_folded)?.is_some() {
            return Err(exists());
        }
        let t = now();
        let id = coffer_store::contacts::insert(
            c,
            &NewContact {
                user_id: user_id.to_string(),
                name: input.name.clone(),
                name_folded: input.name_folded.clone(),
                created_at: t,
                modified_at: t,
            },
        )
        .map_err(unique)?;
        coffer_store::contacts::set_items(c, id, user_id, &input.emails)?;
        events::record(
            c,
            "contact.contact.create",
            Some(user_id),
            serde_json::json!({"id": id, "userId": user_id}),
        )?;
        let contact = coffer_store::contacts::by_id(c, id)?.ok_or_else(not_found)?;
        view(c, &contact)
    })
}

/// `GET /rest/contacts/{id}`.
pub fn get(ctx: &Ctx, user_id: &str, id: i64) -> Result<ContactView> {
    ctx.read(|c| {
        let contact = owned(c, user_id, id)?;
        view(c, &contact)
    })
}

/// `GET /rest/contacts`: the caller's contacts.
pub fn list(ctx: &Ctx, user_id: &str, q: &ListQuery) -> Result<Listed<ContactView>> {
    ctx.read(|c| {
        let page = coffer_store::contacts::list(c, user_id, q)?;
        Ok(Listed {
            items: views(c, &page.items)?,
            total: page.total,
            offset: q.offset,
            limit: q.limit,
        })
    })
}

/// `PUT /rest/contacts/{id}`: replaces the name and the addresses. The last-contact time
/// stays; mail sent later to a new address moves it on.
pub fn update(ctx: &Ctx, user_id: &str, id: i64, input: &ContactInput) -> Result<()> {
    ctx.write(|c| {
        owned(c, user_id, id)?;
        if coffer_store::contacts::by_name(c, user_id, &input.name_folded)?
            .is_some_and(|other| other.id != id)
        {
            return Err(exists());
        }
        coffer_store::contacts::rename(c, id, &input.name, &input.name_folded, now())
            .map_err(unique)?;
        coffer_store::contacts::set_items(c, id, user_id, &input.emails)?;
        events::record(
            c,
            "contact.contact.update",
            Some(user_id),
            serde_json::json!({"id": id, "userId": user_id}),
        )
    })
}

/// `DELETE /rest/contacts/{id}`.
pub fn delete(ctx: &Ctx, user_id: &str, id: i64) -> Result<()> {
    ctx.write(|c| {
        owned(c, user_id, id)?;
        coffer_store::contacts::delete(c, id)?;
        events::record(
            c,
            "contact.contact.delete",
            Some(user_id),
            serde_json::json!({"id": id, "userId": user_id}),
        )
    })
}

/// Records that `user_id` sent mail or a file request to `emails` at `at` (Unix seconds):
/// every contact of theirs with one of those addresses gets `lastContactDate` = `at`, unless it
/// has a later one. Call it inside the transaction of the sending; returns how many contacts
/// changed. Records `contact.contact.touch` when any did.
pub fn touch_in(c: &mut DbConn, user_id: &str, emails: &[String], at: i64) -> Result<usize> {
    let emails: Vec<String> = emails
        .iter()
        .map(|e| e.trim().to_ascii_lowercase())
        .collect();
    let ids = coffer_store::contacts::touch(c, user_id, &emails, at)?;
    if !ids.is_empty() {
        events::record(
            c,
            "contact.contact.touch",
            Some(user_id),
            serde_json::json!({"ids": ids, "userId": user_id, "lastContactDate": rfc3339(at)}),
        )?;
    }
    Ok(ids.len())
}

/// [`touch_in`] in a transaction of its own.
pub fn touch_contacts(ctx: &Ctx, user_id: &str, emails: &[String], at: i64) -> Result<usize> {
    ctx.write(|c| touch_in(c, user_id, emails, at))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::accounts::{create_user, NewUser};
    use coffer_domain::list::{parse, ListSpec};
    use coffer_domain::Role;

    fn user(ctx: &Ctx, email: &str) -> String {
        create_user(
            ctx,
            NewUser {
                email: email.into(),
                name: email.into(),
                password: None,
                role: Role::User,
                profile: None,
            },
            None,
        )
        .unwrap()
        .0
        .id
    }

    fn input(name: &str, emails: &[&str]) -> ContactInput {
        coffer_domain::contact::parse_contact(name, emails, false).unwrap()
    }

    fn events(ctx: &Ctx, subject: &str) -> usize {
        ctx.with_conn(|c| Ok(coffer_store::events::after(c, 0, 1000)?))
            .unwrap()
            .into_iter()
            .filter(|e| e.subject == subject)
            .count()
    }

    #[test]
    fn touch_contacts_moves_last_contact_date_forward_and_records_it() {
        let (_d, ctx) = crate::test_support::ctx();
        let ann = user(&ctx, "ann@example.com");
        let bob = user(&ctx, "bob@example.com");
        let team = create(&ctx, &ann, &input("Team", &["a@x.io", "b@x.io"])).unwrap();
        let solo = create(&ctx, &ann, &input("Solo", &["c@x.io"])).unwrap();
        let bobs = create(&ctx, &bob, &input("Team", &["a@x.io"])).unwrap();
        assert_eq!(team.last_contact_date, None);
        assert!(team.is_distribution_list && !solo.is_distribution_list);

        let n = touch_contacts(
            &ctx,
            &ann,
            &[" B@X.io ".into(), "z@x.io".into()],
            1_800_000_000,
        )
        .unwrap();
        assert_eq!(n, 1);
        let at = |id| get(&ctx, &ann, id).unwrap().last_contact_date;
        assert_eq!(at(team.id).as_deref(), Some("2027-01-15T08:00:00Z"));
        assert_eq!(at(solo.id), None);
        assert_eq!(get(&ctx, &bob, bobs.id).unwrap().last_contact_date, None);
        assert_eq!(events(&ctx, "contact.contact.touch"), 1);
        // Nothing older, and nothing for addresses no contact has, changes or records anything.
        assert_eq!(
            touch_contacts(&ctx, &ann, &["a@x.io".into()], 1).unwrap(),
            0
        );
        assert_eq!(
            touch_contacts(&ctx, &ann, &["q@x.io".into()], 2_000_000_000).unwrap(),
            0
        );
        assert_eq!(events(&ctx, "contact.contact.touch"), 1);
        // Ordered by the last contact, the contacted one comes last ascending.
        let q = parse(
            &[("orderBy".into(), "lastContactDate:asc".into())],
            &ListSpec {
                order_fields: &["lastContactDate"],
                ..ListSpec::PLAIN
            },
        )
        .unwrap();
        let names: Vec<String> = list(&ctx, &ann, &q)
            .unwrap()
            .items
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["Solo", "Team"]);
    }

    #[test]
    fn only_the_owner_reaches_a_contact() {
        let (_d, ctx) = crate::test_support::ctx();
        let ann = user(&ctx, "ann@example.com");
        let bob = user(&ctx, "bob@example.com");
        let k = create(&ctx, &ann, &input("K", &["k@x.io"])).unwrap();
        for e in [
            get(&ctx, &bob, k.id).unwrap_err(),
            update(&ctx, &bob, k.id, &input("L", &["l@x.io"])).unwrap_err(),
            delete(&ctx, &bob, k.id).unwrap_err(),
        ] {
            assert_eq!(e.to_api().code, ErrorCode::AccessUser);
        }
        assert_eq!(
            get(&ctx, &ann, k.id + 100).unwrap_err().to_api().code,
            ErrorCode::EntityNotFound
        );
        assert_eq!(
            create(&ctx, &ann, &input("k", &["m@x.io"]))
                .unwrap_err()
                .to_api()
                .code,
            ErrorCode::EntityExists
        );
        // Bob may use the same name.
        create(&ctx, &bob, &input("K", &["k@x.io"])).unwrap();
    }
}
