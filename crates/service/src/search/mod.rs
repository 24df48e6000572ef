//! Search over what each caller may see: folder and file names, descriptions and paths, the
//! text inside files, and mail (`GET /rest/search`, `GET /rest/query`; `docs/search.md`).
//!
//! `params` reads the two endpoints' query parameters into one [`Query`]; `find` answers it;
//! `index` keeps the full-text index (the `search-extract` job, reindexing, the status). What a
//! caller may find is the content core's rule (`content::permits`): by name what they may list,
//! by text what they may preview. `find::rule` turns it into the role sets the store writes into
//! the one statement that finds folders and files. Mail is the caller's own mailbox, or with
//! `sharedMailboxId` one shared mailbox they are an active member of.

pub mod find;
pub mod index;
pub mod params;

use serde::Serialize;
use std::collections::BTreeMap;
use utoipa::ToSchema;

/// How a text parameter compares: equal to, containing, or starting with (case folded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextOp {
    Eq,
    Contains,
    StartsWith,
}

/// A text criterion: the folded text and how it compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextMatch {
    pub op: TextOp,
    pub folded: String,
}

impl TextMatch {
    /// Whether a folded value matches.
    pub fn hits(&self, folded: &str) -> bool {
        match self.op {
            TextOp::Eq => folded == self.folded,
            TextOp::Contains => folded.contains(&self.folded),
            TextOp::StartsWith => folded.starts_with(&self.folded),
        }
    }
}

/// Bounds on an integer value (Unix seconds for dates, bytes for sizes): `(value, inclusive)`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Range {
    pub low: Option<(i64, bool)>,
    pub high: Option<(i64, bool)>,
}

impl Range {
    pub fn is_set(&self) -> bool {
        self.low.is_some() || self.high.is_some()
    }

    pub fn holds(&self, v: i64) -> bool {
        let low = match self.low {
            Some((b, true)) => v >= b,
            Some((b, false)) => v > b,
            None => true,
        };
        let high = match self.high {
            Some((b, true)) => v <= b,
            Some((b, false)) => v < b,
            None => true,
        };
        low && high
    }
}

/// The `file_type` groups, each a set of extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileGroup {
    Documents,
    Spreadsheets,
    Presentations,
    Images,
    Pdf,
    Multimedia,
    Text,
}

impl FileGroup {
    pub fn parse(s: &str) -> Option<FileGroup> {
        Some(match s {
            "Documents" => FileGroup::Documents,
            "Spreadsheets" => FileGroup::Spreadsheets,
            "Presentations" => FileGroup::Presentations,
            "Images" => FileGroup::Images,
            "PDF" => FileGroup::Pdf,
            "Multimedia" => FileGroup::Multimedia,
            "Text" => FileGroup::Text,
            _ => return None,
        })
    }

    /// The extensions of the group (lower case, without the dot).
    pub fn extensions(self) -> &'static [&'static str] {
        match self {
            FileGroup::Documents => &[
                "doc", "docx", "odt", "rtf", "pages", "wpd", "docm", "dot", "dotx",
            ],
            FileGroup::Spreadsheets => &["xls", "xlsx", "xlsm", "ods", "csv", "numbers", "tsv"],
            FileGroup::Presentations => &["ppt", "pptx", "pptm", "odp", "key", "pps", "ppsx"],
            FileGroup::Images => &[
                "jpg", "jpeg", "png", "gif", "bmp", "tif", "tiff", "webp", "svg", "heic", "ico",
            ],
            FileGroup::Pdf => &["pdf"],
            FileGroup::Multimedia => &[
                "mp3", "wav", "ogg", "flac", "aac", "m4a", "mp4", "mov", "avi", "mkv", "webm",
                "wmv", "m4v", "mpg", "mpeg",
            ],
            FileGroup::Text => &[
                "txt", "text", "md", "log", "ini", "cfg", "json", "xml", "yaml", "yml",
            ],
        }
    }
}

/// Which mail box a mail criterion names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bucket {
    Inbox,
    Draft,
    Sent,
}

impl Bucket {
    /// The stored bucket.
    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Inbox => "inbox",
            Bucket::Draft => "draft",
            Bucket::Sent => "sent",
        }
    }
}

/// The order of results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    Score,
    Name,
    Created,
    Modified,
}

/// The largest `limit`.
pub const MAX_LIMIT: i64 = 1000;
/// The `limit` when none is given.
pub const DEFAULT_LIMIT: i64 = 100;

/// One search, from either endpoint.
#[derive(Debug, Clone)]
pub struct Query {
    /// Words to find: in names (and paths and descriptions on `/rest/search`), in file text
    /// when `include_content`, in mail subjects and bodies.
    pub text: Option<TextMatch>,
    /// Search file text as well as names (`includeContent`; `/rest/search` always does).
    pub include_content: bool,
    /// Names only (`nameOnly`).
    pub name_only: bool,
    pub file_name: Option<String>,
    pub folder_name: Option<String>,
    pub file_content: Option<String>,
    pub description: Option<TextMatch>,
    pub files: bool,
    pub folders: bool,
    pub mail: bool,
    /// Only under this folder (`objectId`).
    pub under: Option<String>,
    pub created: Range,
    pub modified: Range,
    pub size: Range,
    pub locked: Range,
    /// The creator's email address (`user`).
    pub creator_email: Option<String>,
    /// Extensions (lower case, no dot) from `file_type`/`fileType` groups and `extensions`;
    /// empty means any.
    pub extensions: Vec<String>,
    /// Only what others shared with the caller (`searchFilter=shared`, `fls_only`, `flsOnly`).
    pub shared_only: bool,
    /// A shared mailbox the caller is an active member of, searched instead of their own.
    pub shared_mailbox: Option<String>,
    pub buckets: Vec<Bucket>,
    pub subject: Option<String>,
    pub sender_id: Option<String>,
    pub recipient_id: Option<String>,
    pub tracking_id: Option<String>,
    /// A path (`path`, exact) or part of one (`path:contains`); the other criteria then do
    /// not apply.
    pub path: Option<TextMatch>,
    pub order: Order,
    pub descending: bool,
    pub offset: i64,
    pub limit: i64,
    pub spell_check: bool,
}

impl Default for Query {
    fn default() -> Query {
        Query {
            text: None,
            include_content: true,
            name_only: false,
            file_name: None,
            folder_name: None,
            file_content: None,
            description: None,
            files: true,
            folders: true,
            mail: true,
            under: None,
            created: Range::default(),
            modified: Range::default(),
            size: Range::default(),
            locked: Range::default(),
            creator_email: None,
            extensions: Vec::new(),
            shared_only: false,
            shared_mailbox: None,
            buckets: Vec::new(),
            subject: None,
            sender_id: None,
            recipient_id: None,
            tracking_id: None,
            path: None,
            order: Order::Name,
            descending: false,
            offset: 0,
            limit: DEFAULT_LIMIT,
            spell_check: false,
        }
    }
}

/// What a search found: one page of each kind and how many of each match in all, the
/// highlighted passages of files found by their text, and spelling suggestions.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub files: Vec<crate::content::views::FileView>,
    pub folders: Vec<crate::content::views::FolderView>,
    pub emails: Vec<crate::mail::MailView>,
    pub total_files: i64,
    pub total_folders: i64,
    pub total_emails: i64,
    /// File id → a passage of its text with the matched words in `<em>`.
    pub highlights: BTreeMap<String, String>,
    pub file_suggestions: Vec<String>,
    pub email_suggestions: Vec<String>,
}

/// `metadata` of `GET /rest/search` (`SearchMetadata`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchMetadata {
    pub total: i64,
    pub total_files_count: i64,
    pub total_folders_count: i64,
    pub total_emails_count: i64,
    /// As the interface's `metadata{files, folders, emails}`.
    pub files: i64,
    pub folders: i64,
    pub emails: i64,
}

/// The answer of `GET /rest/search` (`Search`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchView {
    /// A fresh id for this search (not stored).
    pub id: String,
    /// Whether file text is searched (always: the full-text index is built in).
    pub full_text_search: bool,
    pub files: Vec<crate::content::views::FileView>,
    pub folders: Vec<crate::content::views::FolderView>,
    pub emails: Vec<crate::mail::MailView>,
    pub metadata: SearchMetadata,
}

impl SearchView {
    pub fn of(f: Found) -> SearchView {
        SearchView {
            id: uuid::Uuid::now_v7().to_string(),
            full_text_search: true,
            metadata: SearchMetadata {
                total: f.total_files + f.total_folders + f.total_emails,
                total_files_count: f.total_files,
                total_folders_count: f.total_folders,
                total_emails_count: f.total_emails,
                files: f.total_files,
                folders: f.total_folders,
                emails: f.total_emails,
            },
            files: f.files,
            folders: f.folders,
            emails: f.emails,
        }
    }
}

/// The answer of `GET /rest/query` (`SearchResult`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueryView {
    pub folders: Vec<crate::content::views::FolderView>,
    pub files: Vec<crate::content::views::FileView>,
    pub emails: Vec<crate::mail::MailView>,
    pub total_files: i64,
    pub total_folders: i64,
    pub total_emails: i64,
    /// Corrections of the query's words from the caller's own mail.
    pub email_suggestions: Vec<String>,
    /// Corrections of the query's words from the names and text the caller may see.
    pub file_suggestions: Vec<String>,
    /// File id → a short passage of the file's text, the matched words in `<em>…</em>` (the
    /// rest HTML-escaped).
    #[schema(value_type = Object)]
    pub file_highlightings: BTreeMap<String, String>,
    /// Whether file text is searched (always: the full-text index is built in).
    pub full_text_search: bool,
}

impl QueryView {
    pub fn of(f: Found) -> QueryView {
        QueryView {
            folders: f.folders,
            files: f.files,
            emails: f.emails,
            total_files: f.total_files,
            total_folders: f.total_folders,
            total_emails: f.total_emails,
            email_suggestions: f.email_suggestions,
            file_suggestions: f.file_suggestions,
            file_highlightings: f.highlights,
            full_text_search: true,
        }
    }
}

/// The words of a text as the index holds them: runs of letters and digits, lower-cased, with
/// diacritics kept (the index folds those itself). Everything else, the operators of either
/// full-text grammar included, separates words. At most 16 words are kept.
pub fn terms(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        let w: String = w.chars().flat_map(char::to_lowercase).collect();
        if !out.contains(&w) {
            out.push(w);
        }
        if out.len() == 16 {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operators_quotes_and_sql_are_only_separators() {
        assert_eq!(
            terms("alpha NEAR(beta) \"x\" * ("),
            ["alpha", "near", "beta", "x"]
        );
        assert_eq!(
            terms("'; DROP TABLE objects; --"),
            ["drop", "table", "objects"]
        );
        assert_eq!(terms("Résumé"), ["résumé"]);
        assert!(terms("*** ( ) \" ^ : -").is_empty());
    }

    #[test]
    fn ranges_bound_both_ways() {
        let r = Range {
            low: Some((10, false)),
            high: Some((20, true)),
        };
        assert!(!r.holds(10));
        assert!(r.holds(11));
        assert!(r.holds(20));
        assert!(!r.holds(21));
        assert!(Range::default().holds(i64::MIN));
    }
}
