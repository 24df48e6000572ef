//! `cofferd mail`: the operator's view of outgoing mail. `mail outbox` lists the messages of
//! the outbox (never their bodies) as a table, or as JSON with `--json` for scripts.

use anyhow::Result;
use coffer_service::mail::outbox::{self, Entry};
use serde_json::json;

#[derive(clap::Subcommand)]
pub enum MailCommand {
    /// List outgoing mail, newest first: by default every message still queued or failed and
    /// every message of the last 24 hours (recipient, subject, state, attempts, times).
    Outbox {
        /// Only messages in this state, whatever their age: queued, sent, error or expired.
        #[arg(long)]
        state: Option<String>,
        /// Messages at most.
        #[arg(long, default_value_t = 100)]
        limit: i64,
        /// Print a JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(ctx: &coffer_service::Ctx, command: MailCommand) -> Result<()> {
    match command {
        MailCommand::Outbox { state, limit, json } => {
            let entries = outbox::list(ctx, state.as_deref(), limit).map_err(crate::api)?;
            if json {
                let all: Vec<_> = entries.iter().map(as_json).collect();
                println!("{}", serde_json::to_string_pretty(&all)?);
            } else {
                print!("{}", table(&entries));
            }
            Ok(())
        }
    }
}

fn time(t: Option<i64>) -> Option<String> {
    t.map(coffer_service::rfc3339)
}

fn as_json(e: &Entry) -> serde_json::Value {
    json!({
        "id": e.id,
        "to": e.to,
        "subject": e.subject,
        "state": e.state,
        "attempts": e.attempts,
        "created_at": coffer_service::rfc3339(e.created_at),
        "next_attempt_at": time(e.next_attempt_at),
        "sent_at": time(e.sent_at),
        "expires_at": time(e.expires_at),
        "last_error": e.last_error,
    })
}

/// Text that is safe on a terminal: subjects and errors come from users and relays, so a control
/// character (an escape sequence) never reaches it; long text is cut to `max` characters.
fn printable(s: &str, max: usize) -> String {
    let mut out: String = s
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(max)
        .collect();
    if s.chars().count() > max {
        out.pop();
        out.push('…');
    }
    out
}

/// What happens next or happened last: the next attempt, the sending, the expiry, the error.
fn detail(e: &Entry) -> String {
    let at = |t: Option<i64>| time(t).unwrap_or_default();
    match e.state.as_str() {
        "queued" => match e.expires_at {
            Some(x) => format!("next {}, expires {}", at(e.next_attempt_at), at(Some(x))),
            None => format!("next {}", at(e.next_attempt_at)),
        },
        "sent" => format!("sent {}", at(e.sent_at)),
        _ => printable(e.last_error.as_deref().unwrap_or_default(), 100),
    }
}

/// The listing as a table with a header, one message a line, columns as wide as their text.
fn table(entries: &[Entry]) -> String {
    if entries.is_empty() {
        return "No messages.\n".into();
    }
    let header = ["CREATED", "STATE", "ATTEMPTS", "TO", "SUBJECT", "DETAIL"].map(String::from);
    let rows: Vec<[String; 6]> = entries
        .iter()
        .map(|e| {
            [
                coffer_service::rfc3339(e.created_at),
                e.state.clone(),
                e.attempts.to_string(),
                printable(&e.to, 60),
                printable(&e.subject, 50),
                detail(e),
            ]
        })
        .collect();
    let mut widths = header.clone().map(|h| h.chars().count());
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(state: &str, subject: &str) -> Entry {
        Entry {
            id: "m1".into(),
            to: "grace@example.com".into(),
            subject: subject.into(),
            state: state.into(),
            attempts: 2,
            created_at: 1_800_000_000,
            next_attempt_at: Some(1_800_000_060),
            sent_at: None,
            expires_at: None,
            last_error: Some("550 no such user; not retried".into()),
        }
    }

    #[test]
    fn the_table_lines_up_and_never_passes_control_characters() {
        let text = table(&[
            entry("queued", "Hello"),
            entry("error", "Evil \u{1b}[2J subject"),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(lines[0].starts_with("CREATED"), "{text}");
        let col = lines[0].find("STATE").unwrap();
        assert_eq!(&lines[1][col..col + 6], "queued");
        assert_eq!(&lines[2][col..col + 5], "error");
        assert!(lines[1].contains("next 2027-01-15T08:01:00Z"), "{text}");
        assert!(lines[2].contains("550 no such user"), "{text}");
        assert!(!text.contains('\u{1b}'), "{text}");
        assert!(lines[2].contains("Evil ?[2J subject"), "{text}");
        assert_eq!(table(&[]), "No messages.\n");
    }

    #[test]
    fn long_text_is_cut() {
        assert_eq!(printable("abcdef", 4), "abc…");
        assert_eq!(printable("abcd", 4), "abcd");
    }
}
