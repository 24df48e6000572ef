//! Who is calling: bearer-token authentication of `/rest` calls and the scope check, and the
//! permissions a caller proves by their role.
//!
//! A permission is a type built only by the check of the role ([`SystemAdmin::check`], …), so
//! a service function that takes one cannot run for anyone else, whichever way it is called: the
//! HTTP extractors make them, and handlers pass them on.

use crate::{now, Ctx, Result};
use coffer_domain::client::flag;
use coffer_domain::{Role, Scope};
use coffer_errors::{ApiError, ErrorCode};
use coffer_store::models::User;

/// An authenticated caller: the user a token acts for, through which client, with what scope.
#[derive(Debug, Clone)]
pub struct Caller {
    pub user: User,
    pub role: Role,
    pub client_id: String,
    pub client_redirect_uri: String,
    pub scope: Scope,
    pub family_id: String,
    pub device_id: Option<i64>,
    pub token_hash: String,
}

impl Caller {
    pub fn user_id(&self) -> &str {
        &self.user.id
    }

    pub fn is_admin(&self) -> bool {
        self.role.is_admin()
    }

    pub fn is_system_admin(&self) -> bool {
        self.role == Role::SystemAdmin
    }

    /// System and helpdesk administrators manage user accounts.
    pub fn is_user_admin(&self) -> bool {
        matches!(self.role, Role::SystemAdmin | Role::HelpdeskAdmin)
    }

    /// System or application administrators manage the client registry.
    pub fn is_app_admin(&self) -> bool {
        matches!(self.role, Role::SystemAdmin | Role::ApplicationAdmin)
    }

    /// Whether the caller's account is internal (the organisation's own, as opposed to an
    /// outside recipient's).
    pub fn is_internal(&self) -> bool {
        self.user.internal
    }

    /// Whether the caller may act on what belongs to user `owner`: their own, or any user's as
    /// an administrator.
    pub fn owns_or_administers(&self, owner: &str) -> bool {
        owner == self.user.id || self.is_admin()
    }

    /// Whether the caller may withdraw a sent email: its sender (`is_sender`, the caller's own
    /// mailbox or a shared one they act for), or a system administrator, who answers for what
    /// the organisation sent.
    pub fn may_withdraw(&self, is_sender: bool) -> bool {
        is_sender || self.is_system_admin()
    }

    /// Whether the caller, an administrator, may act on an account of `target`'s role: a system
    /// administrator on every account, the other administrators on plain users' only.
    pub fn may_manage(&self, target: Role) -> bool {
        self.role == Role::SystemAdmin || target == Role::User
    }
}

/// Declares a permission: a caller wrapped only by `check`, when `$role` holds.
macro_rules! permission {
    ($(#[$doc:meta])* $name:ident, $role:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name(Caller);

        impl $name {
            /// The permission, if the caller has it.
            pub fn check(caller: Caller) -> Option<$name> {
                caller.$role().then(|| $name(caller))
            }
        }

        impl std::ops::Deref for $name {
            type Target = Caller;

            fn deref(&self) -> &Caller {
                &self.0
            }
        }
    };
}

permission!(
    /// A system administrator.
    SystemAdmin, is_system_admin
);
permission!(
    /// A system or helpdesk administrator: user accounts and the external distribution lists.
    AccountAdmin, is_user_admin
);
permission!(
    /// A system or application administrator: the client registry.
    AppAdmin, is_app_admin
);
permission!(
    /// Any administrator (system, application or helpdesk): shared mailboxes.
    AnyAdmin, is_admin
);
permission!(
    /// A caller whose account is internal: the shared mailboxes they belong to.
    InternalCaller, is_internal
);

fn unauthorized() -> ApiError {
    ApiError::new(ErrorCode::AuthUnauthorized)
}

/// Authenticates a bearer token for `method path`. Missing, unknown, expired or revoked tokens,
/// tokens of deleted or inactive users and of disabled clients answer 401; a call outside the
/// token's scope answers 403 `ERR_ACCESS_USER`.
pub fn authenticate(ctx: &Ctx, token: &str, method: &str, path: &str) -> Result<Caller> {
    if token.is_empty() || token.len() > 512 {
        return Err(unauthorized().into());
    }
    let hash = coffer_oauth::secrets::hash_token(token);
    let found = ctx.with_conn(|c| Ok(coffer_store::tokens::access_with_owner(c, &hash)?))?;
    let (tok, user, client) = found.ok_or_else(unauthorized)?;
    let t = now();
    if tok.revoked
        || tok.expires_at.is_some_and(|e| t >= e)
        || !user.is_usable()
        || client.flag & flag::DISABLED != 0
    {
        return Err(unauthorized().into());
    }
    let scope = Scope::parse(&tok.scope).map_err(|_| unauthorized())?;
    if !scope.allows(method, path) {
        return Err(ApiError::new(ErrorCode::AccessUser)
            .with_message(
                "Insufficient access permissions (the call is outside the token's scope).",
            )
            .into());
    }
    let role = user.role.parse::<Role>().map_err(crate::Error::internal)?;
    Ok(Caller {
        role,
        client_id: client.id,
        client_redirect_uri: client.redirect_uri,
        scope,
        family_id: tok.family_id,
        device_id: tok.device_id,
        token_hash: hash,
        user,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(role: Role, internal: bool) -> Caller {
        let mut c = crate::test_support::caller(role);
        c.user.internal = internal;
        c
    }

    const ROLES: [Role; 4] = [
        Role::User,
        Role::SystemAdmin,
        Role::ApplicationAdmin,
        Role::HelpdeskAdmin,
    ];

    #[test]
    fn each_permission_is_made_for_its_roles_only() {
        use Role::{ApplicationAdmin, HelpdeskAdmin};
        for role in ROLES {
            let c = || caller(role, false);
            assert_eq!(
                SystemAdmin::check(c()).is_some(),
                role == Role::SystemAdmin,
                "{role:?}"
            );
            assert_eq!(
                AccountAdmin::check(c()).is_some(),
                matches!(role, Role::SystemAdmin | HelpdeskAdmin),
                "{role:?}"
            );
            assert_eq!(
                AppAdmin::check(c()).is_some(),
                matches!(role, Role::SystemAdmin | ApplicationAdmin),
                "{role:?}"
            );
            assert_eq!(
                AnyAdmin::check(c()).is_some(),
                role != Role::User,
                "{role:?}"
            );
            assert!(InternalCaller::check(c()).is_none(), "{role:?}");
            assert!(
                InternalCaller::check(caller(role, true)).is_some(),
                "{role:?}"
            );
        }
        // A permission reads as its caller.
        let admin = AccountAdmin::check(caller(Role::HelpdeskAdmin, false)).unwrap();
        assert_eq!(admin.user_id(), admin.user.id);
    }

    #[test]
    fn owners_and_administrators_act_on_what_is_theirs_to_manage() {
        let user = caller(Role::User, false);
        assert!(user.owns_or_administers(&user.user.id.clone()));
        assert!(!user.owns_or_administers("someone-else"));
        for role in [
            Role::SystemAdmin,
            Role::ApplicationAdmin,
            Role::HelpdeskAdmin,
        ] {
            assert!(
                caller(role, false).owns_or_administers("someone-else"),
                "{role:?}"
            );
        }
        for role in ROLES {
            let c = caller(role, false);
            assert!(c.may_withdraw(true), "{role:?}");
            assert_eq!(c.may_withdraw(false), role == Role::SystemAdmin, "{role:?}");
        }
        for target in ROLES {
            assert!(
                caller(Role::SystemAdmin, false).may_manage(target),
                "{target:?}"
            );
            for role in [Role::ApplicationAdmin, Role::HelpdeskAdmin] {
                assert_eq!(
                    caller(role, false).may_manage(target),
                    target == Role::User,
                    "{role:?} on {target:?}"
                );
            }
        }
    }
}
