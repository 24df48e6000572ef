//! The activity log's upkeep, a periodic job (`audit-checkpoint`, hourly): signs the chain head
//! as a checkpoint with the audit key file (when one is configured), then removes the segments
//! older than `auditRetentionDays` (0, the default: kept for ever). Expiry goes by whole signed
//! segments, so without a key file nothing expires.

use crate::audit::checkpoint;
use crate::content::jobs::Kind;
use crate::{Ctx, Result};

/// The job kind name.
pub const CHECKPOINT: &str = "audit-checkpoint";

/// The job kinds of the activity log.
pub const JOBS: &[Kind] = &[Kind {
    name: CHECKPOINT,
    period: Some(3600),
    run: |ctx, _| Box::pin(seal(ctx)),
}];

/// Signs a checkpoint and applies the retention setting.
pub async fn seal(ctx: &Ctx) -> Result<()> {
    ctx.blocking(|ctx| {
        let Some(path) = &ctx.config.audit_key_file else {
            return Ok(());
        };
        let signer = checkpoint::Signer::open(path)?;
        checkpoint::checkpoint(ctx, &signer)?;
        let days = ctx.with_conn(|c| crate::content::int_setting(c, "auditRetentionDays", 0))?;
        if days > 0 {
            let n = checkpoint::expire(ctx, days)?;
            if n > 0 {
                log::info!("activity log: {n} records older than {days} days expired");
            }
        }
        Ok(())
    })
    .await
}
