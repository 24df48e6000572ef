//! Coffer's domain: entity enums with their states, validated newtypes, the list-query grammar
//! and the pure rules that do not need I/O.

pub mod client;
pub mod contact;
pub mod content;
pub mod email;
pub mod input;
pub mod ldap;
pub mod list;
pub mod mail;
pub mod net;
pub mod password;
pub mod request_file;
pub mod role;
pub mod scim_discovery;
pub mod scim_filter;
pub mod scim_patch;
pub mod scim_schema;
pub mod scope;
pub mod subject;
pub mod web_form;
pub mod wipe;

pub use email::Email;
pub use role::Role;
pub use scope::Scope;
pub use subject::{Subject, SubjectPattern};
pub use wipe::WipeFlag;
