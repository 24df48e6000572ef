//! Who acts, and how they prove it: accounts and their credentials (`accounts`,
//! `password_reset`), OAuth clients (`clients`), browser sessions (`sessions`), two-factor
//! sign-in (`tfa`), devices, the current user (`users`), account administration
//! (`admin_users`, SCIM provisioning in `scim` and `scim_tokens`), the external distribution
//! lists an account may not take (`external_dls`), the system settings (`settings`), and users'
//! SSH public keys with the SFTP gate (`ssh_keys`).
//! Builds on `platform` and reads the content core's quota; knows nothing of mail, web forms or
//! OAuth flows.

pub mod accounts;
pub mod admin_users;
pub mod clients;
pub mod devices;
pub mod external_dls;
pub mod password_reset;
pub mod scim;
pub mod scim_tokens;
pub mod sessions;
pub mod settings;
pub mod ssh_keys;
pub mod tfa;
pub mod users;
