//! `cofferd storage check`: the blob store against the database.

use crate::{Ctx, Result};
use coffer_errors::Error;
use std::collections::HashSet;

/// What a check found.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// Where the content is.
    pub store: String,
    /// Blobs in the store.
    pub stored: usize,
    /// Blobs in the store no version refers to (freed by `--repair`).
    pub unreferenced: Vec<String>,
    /// Blobs versions refer to that the store lacks (content lost: restore from a backup).
    pub missing: Vec<String>,
    /// How many unreferenced blobs were deleted.
    pub repaired: usize,
    /// Owners whose counted usage differs from their versions (`--repair` recounts them).
    pub usage_drift: Vec<UsageDrift>,
}

/// An owner whose counted usage (what the quota reads) differs from the sum of their versions.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UsageDrift {
    pub owner_id: String,
    pub counted: i64,
    pub actual: i64,
}

pub async fn check(ctx: &Ctx, repair: bool) -> Result<Report> {
    let keys = ctx
        .storage
        .list_keys()
        .await
        .map_err(|e| Error::internal_in("storage", e))?;
    let stored: HashSet<String> = keys.iter().map(|k| k.to_string()).collect();
    let referenced: HashSet<String> = ctx
        .blocking(|ctx| ctx.with_conn(|c| Ok(coffer_store::content::referenced_blob_ids(c)?)))
        .await?
        .into_iter()
        .collect();
    let mut unreferenced: Vec<String> = stored.difference(&referenced).cloned().collect();
    let mut missing: Vec<String> = referenced.difference(&stored).cloned().collect();
    unreferenced.sort();
    missing.sort();
    let mut repaired = 0;
    if repair {
        for id in &unreferenced {
            let i = id.clone();
            let storage = ctx.storage.clone();
            // Row and bytes go in one transaction, as the blob sweep does (`super::blobs`). Bytes
            // without a row get a placeholder row first, so that an upload committing the same
            // content meanwhile meets the lock (the placeholder goes again in this transaction).
            let deleted = ctx
                .write_owned(move |c| {
                    if coffer_store::content::is_referenced(c, &i)? {
                        return Ok(false);
                    }
                    coffer_store::content::unreferenced_blob(c, &i, 0, "", crate::now())?;
                    super::blobs::delete_unreferenced(c, &storage, &i)
                })
                .await?;
            if deleted {
                repaired += 1;
            }
        }
    }
    let drift = ctx
        .blocking(|ctx| ctx.with_conn(|c| Ok(coffer_store::content::account_drift(c)?)))
        .await?;
    if repair && !drift.is_empty() {
        let fixes = drift.clone();
        ctx.write_owned(move |c| {
            // Recounted in the writing transaction: what changed since the read counts too.
            for (owner, _, _) in &fixes {
                let actual = coffer_store::content::usage_recount(c, owner)?;
                coffer_store::content::set_usage(c, owner, actual)?;
            }
            Ok(())
        })
        .await?;
    }
    Ok(Report {
        usage_drift: drift
            .into_iter()
            .map(|(owner_id, counted, actual)| UsageDrift {
                owner_id,
                counted,
                actual,
            })
            .collect(),
        store: ctx.storage.describe(),
        stored: stored.len(),
        unreferenced,
        missing,
        repaired,
    })
}
