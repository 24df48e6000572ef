//! Walking the chain (`cofferd audit verify`): every kept record in sequence order, each
//! checked against its predecessor and its own content, then the signed checkpoints. The first
//! problem is reported by sequence number.
//!
//! The chain head is the last record: no separate head row is kept, because whoever can write
//! the database could rewrite such a row as easily as remove the records after it. That the
//! tail is complete is what the signed checkpoints prove: a checkpoint naming a record beyond
//! the last one shows the tail cut.

use crate::{Ctx, Result};
use coffer_store::audit as store;
use std::collections::HashMap;

/// Records read per query.
const CHUNK: i64 = 20_000;

/// What is wrong with the log, at the first place it goes wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// The record's content (or its hash) is not what was appended.
    Changed(i64),
    /// The record is missing (a gap, or the tail cut before a checkpoint).
    Removed(i64),
    /// A record that was never appended: numbered before the chain starts, or added after the
    /// last record without linking to it or hashing to its own hash.
    Inserted(i64),
    /// A checkpoint whose signature the key does not verify.
    Checkpoint(i64),
}

impl Problem {
    /// The sequence number the problem is at.
    pub fn seq(&self) -> i64 {
        match self {
            Problem::Changed(s) | Problem::Removed(s) | Problem::Inserted(s) => *s,
            Problem::Checkpoint(s) => *s,
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::Changed(s) => write!(f, "record {s} was changed"),
            Problem::Removed(s) => write!(f, "record {s} was removed"),
            Problem::Inserted(s) => write!(f, "record {s} was inserted"),
            Problem::Checkpoint(s) => {
                write!(f, "the checkpoint at record {s} is not validly signed")
            }
        }
    }
}

/// The outcome of a walk.
#[derive(Debug, Clone)]
pub struct Report {
    /// Records checked.
    pub records: u64,
    /// The first and last sequence number of the kept chain.
    pub first: i64,
    pub last: i64,
    /// Checkpoints whose signature and hash were checked.
    pub checkpoints: u64,
    pub problem: Option<Problem>,
}

/// Walks the whole kept chain. `key` is the trusted public key (hex Ed25519) the checkpoints
/// must verify with; without one, each checkpoint's own key is taken, which proves only that
/// the checkpoints were not edited, not who made them.
pub fn verify(ctx: &Ctx, key: Option<&str>) -> Result<Report> {
    let chain = ctx.with_conn(|c| Ok(store::chain(c)?))?;
    let checkpoints = ctx.with_conn(|c| Ok(store::checkpoints(c)?))?;
    let mut wanted: HashMap<i64, Option<String>> =
        checkpoints.iter().map(|c| (c.seq, None)).collect();
    if let Some(w) = wanted.get_mut(&(chain.first_seq - 1)) {
        *w = Some(chain.first_prev.clone());
    }
    let mut report = Report {
        records: 0,
        first: chain.first_seq,
        last: chain.first_seq - 1,
        checkpoints: 0,
        problem: None,
    };
    let mut expected = chain.first_seq;
    let mut prev = chain.first_prev.clone();
    let mut after = i64::MIN;
    'walk: loop {
        let rows = ctx.with_conn(|c| Ok(store::after(c, after, CHUNK)?))?;
        let Some(last) = rows.last() else { break };
        after = last.seq;
        for (i, r) in rows.iter().enumerate() {
            let problem = if r.seq < expected {
                Some(Problem::Inserted(r.seq))
            } else if r.seq > expected {
                Some(Problem::Removed(expected))
            } else if r.prev_hash != prev {
                if super::hash(&r.prev_hash, r) == r.hash {
                    // The predecessor was rewritten (its content and hash) after this record
                    // was appended.
                    Some(Problem::Changed(if r.seq > chain.first_seq {
                        r.seq - 1
                    } else {
                        r.seq
                    }))
                } else if i + 1 == rows.len()
                    && ctx
                        .with_conn(|c| Ok(store::after(c, r.seq, 1)?))?
                        .is_empty()
                {
                    // Neither linked nor hashing to its hash, after the last record: added by
                    // hand.
                    Some(Problem::Inserted(r.seq))
                } else {
                    // Its link to the predecessor was edited.
                    Some(Problem::Changed(r.seq))
                }
            } else if super::hash(&r.prev_hash, r) != r.hash {
                Some(Problem::Changed(r.seq))
            } else {
                None
            };
            if problem.is_some() {
                report.problem = problem;
                break 'walk;
            }
            if let Some(w) = wanted.get_mut(&r.seq) {
                *w = Some(r.hash.clone());
            }
            prev.clone_from(&r.hash);
            report.records += 1;
            report.last = r.seq;
            expected += 1;
        }
    }
    if report.problem.is_some() {
        return Ok(report);
    }
    for c in &checkpoints {
        if c.seq < chain.first_seq - 1 {
            // Kept from before an expiry that did not finish; its record is gone.
            continue;
        }
        let trusted = key.unwrap_or(&c.public_key);
        if !super::checkpoint_signature_valid(trusted, c.seq, &c.hash, &c.signature) {
            report.problem = Some(Problem::Checkpoint(c.seq));
            return Ok(report);
        }
        match wanted.get(&c.seq).cloned().flatten() {
            Some(h) if h == c.hash => report.checkpoints += 1,
            Some(_) => {
                report.problem = Some(Problem::Changed(c.seq));
                return Ok(report);
            }
            // The checkpoint names a record beyond the last one: the tail was cut.
            None => {
                report.problem = Some(Problem::Removed(report.last + 1));
                return Ok(report);
            }
        }
    }
    Ok(report)
}
