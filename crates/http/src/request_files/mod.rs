//! Request-file links (docs/request-files.md): the recipient's page (`page`).

pub mod page;
