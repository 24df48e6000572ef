//! The platform under every area: who calls (`auth`), the event outbox (`events`), the records
//! areas share (`views`), brute-force and rate throttling (`throttle`), text messages (`sms`),
//! the directory lookup (`directory`), storage locations (`locations`) and webhook
//! subscriptions (`webhooks`). Nothing here imports another area.

pub mod auth;
pub mod directory;
pub mod events;
pub mod locations;
pub mod sms;
pub mod throttle;
pub mod views;
pub mod webhooks;
