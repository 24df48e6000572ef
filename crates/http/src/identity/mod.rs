//! The identity area's endpoints: the current user and settings (`account`), account
//! administration (`admin_users`, `scim`), OAuth clients (`clients`), devices (`devices`),
//! external distribution lists (`external_dl`), SSH public keys (`ssh_keys`) and the password-reset
//! page (`reset_page`).

pub mod account;
pub mod admin_users;
pub mod clients;
pub mod devices;
pub mod external_dl;
pub mod reset_page;
pub mod scim;
pub mod ssh_keys;
