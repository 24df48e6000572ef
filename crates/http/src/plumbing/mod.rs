//! What every area's handlers share and no area owns: error rendering (`error`), typed JSON
//! bodies (`body`), the extractors that authenticate and authorize (`extract`), the layers every request passes
//! (`middleware`, `waf`), the envelopes and links (`respond`), the OpenAPI document (`openapi`,
//! `schema`, the operations' words in `operations`) and its interactive reference (`docs`), the
//! HTML pages (`pages`), the shared state (`state`) and HTTPS (`tls`).

pub mod body;
pub mod docs;
pub mod error;
pub mod extract;
pub mod middleware;
pub mod openapi;
pub mod operations;
pub mod pages;
pub mod respond;
pub mod schema;
pub mod state;
pub mod tls;
pub mod waf;
