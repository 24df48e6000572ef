//! `cofferd backup DIR` and `cofferd restore DIR`: their options and output; the work is
//! `coffer_service::content::backup`.

use crate::api;
use crate::config::{Settings, StorageArg};
use anyhow::Result;
use clap::Args;
use coffer_service::content::backup as service;
use coffer_service::Ctx;
use std::path::PathBuf;

#[derive(Args)]
pub struct BackupArgs {
    /// A new or empty directory to write the backup to.
    pub dir: PathBuf,
    #[command(flatten)]
    pub storage: StorageArg,
}

#[derive(Args)]
pub struct RestoreArgs {
    /// The directory a `cofferd backup` wrote.
    pub dir: PathBuf,
    #[command(flatten)]
    pub storage: StorageArg,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

/// Prints the manifest of the backup made: what it holds.
pub fn backup(ctx: &Ctx, args: &BackupArgs) -> Result<()> {
    let m = runtime()?
        .block_on(service::backup(ctx, &args.dir))
        .map_err(api)?;
    println!("{}", serde_json::to_string_pretty(&m)?);
    Ok(())
}

/// Restores without opening the target first: opening would migrate it and seed the system's
/// records, and the target must stay untouched when the restore refuses it.
pub fn restore(settings: &Settings, args: &RestoreArgs) -> Result<()> {
    let m = runtime()?
        .block_on(service::restore(
            &settings.database_url,
            &settings.storage_url,
            &args.dir,
        ))
        .map_err(api)?;
    println!("{}", serde_json::to_string_pretty(&m)?);
    Ok(())
}
