//! The platform area's endpoints: storage locations (`locations`) and webhook subscriptions
//! (`webhooks`).

pub mod locations;
pub mod webhooks;
