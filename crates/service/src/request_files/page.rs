//! What the recipient's page (`{base}/requestFile/{ref}`) needs of the deployment before its
//! script asks anything of the link: the size it splits files at and the largest file taken.

use crate::{Ctx, Result};

/// The largest chunk the page's script sends (a smaller `uploadChunkMax` wins): large enough
/// for few requests, small enough that a failed chunk costs little to send again.
pub const PAGE_CHUNK: i64 = 8 * 1024 * 1024;

/// The sizes the page works with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    /// The size the script splits files at.
    pub chunk_size: i64,
    /// The largest file (`maxUploadSize`).
    pub max_file_size: i64,
}

/// The page's sizes from the content settings.
pub fn limits(ctx: &Ctx) -> Result<PageLimits> {
    let l = ctx.read(crate::content::limits)?;
    Ok(PageLimits {
        chunk_size: l.upload_chunk_max.clamp(1, PAGE_CHUNK),
        max_file_size: l.max_upload_size,
    })
}
