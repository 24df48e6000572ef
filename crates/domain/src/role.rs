//! System roles of a user account.

use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    User,
    SystemAdmin,
    ApplicationAdmin,
    HelpdeskAdmin,
}

impl Role {
    pub const ALL: [Role; 4] = [
        Role::User,
        Role::SystemAdmin,
        Role::ApplicationAdmin,
        Role::HelpdeskAdmin,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::SystemAdmin => "system-admin",
            Role::ApplicationAdmin => "application-admin",
            Role::HelpdeskAdmin => "helpdesk-admin",
        }
    }

    /// The `adminRoleId` of the current-user record (0 for a plain user).
    pub const fn admin_role_id(self) -> i32 {
        match self {
            Role::User => 0,
            Role::SystemAdmin => 1,
            Role::ApplicationAdmin => 2,
            Role::HelpdeskAdmin => 3,
        }
    }

    /// Any of the administrator roles.
    pub const fn is_admin(self) -> bool {
        !matches!(self, Role::User)
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Role::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown role `{s}` (user, system-admin, application-admin, helpdesk-admin)"
                )
            })
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        for r in Role::ALL {
            assert_eq!(r.as_str().parse::<Role>(), Ok(r));
        }
        assert!("root".parse::<Role>().is_err());
        assert!(!Role::User.is_admin());
        assert!(Role::HelpdeskAdmin.is_admin());
    }
}
