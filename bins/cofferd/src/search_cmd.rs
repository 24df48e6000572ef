//! `cofferd search`: the full-text index as the operator sees it. `search status` reports the
//! files waiting for extraction, indexed, without text and failed (with the reasons) and the
//! index's size; `search reindex` rebuilds the index from what is stored (a running server's
//! job worker, or the next `cofferd serve`, extracts the queued files).

use anyhow::Result;
use coffer_service::search::index;

#[derive(clap::Subcommand)]
pub enum SearchCommand {
    /// Report the index: files pending extraction, indexed, skipped (no text) and failed (with
    /// their reasons, at most 100), the bytes of text held and the index's size; prints JSON.
    Status,
    /// Rebuild the index: every email indexed again and every file's current version queued
    /// for extraction, failed ones included; prints `{queued}`.
    Reindex,
}

pub fn run(ctx: &coffer_service::Ctx, command: SearchCommand) -> Result<()> {
    match command {
        SearchCommand::Status => {
            let s = index::status(ctx).map_err(crate::api)?;
            println!("{}", serde_json::to_string_pretty(&s)?);
        }
        SearchCommand::Reindex => {
            let n = index::reindex(ctx).map_err(crate::api)?;
            println!("{}", serde_json::json!({"queued": n}));
        }
    }
    Ok(())
}
